// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel' | filecheck %s --check-prefix=VTA

// The attention core in an accelerator function (B = 4: several blocks, padding lanes): a
// lane-moving reshape and a transpose become accel.relayout (a gather), q.softmax and
// q.batch_matmul their accel forms on packed values. --verify-semantics checks every case
// computes the same bits before and after.

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>

// CHECK-LABEL: func.func @attention
// CHECK:         func.func private @vta_fn_0(%q: tensor<1x2x6x1x4x{{.*}}>, %k: tensor<1x2x6x1x4x{{.*}}>) -> tensor<1x2x2x6x1x4x{{.*}}> attributes {qaccel.target = "vta", accel.packed} {
// CHECK-NEXT:      %qh = accel.relayout %q {in_shape = array<i64: 1, 6, 6>, shape = array<i64: 1, 6, 2, 3>, perm = array<i64: 0, 1, 2, 3>, pad_value = 3 : i64} : {{.*}} -> tensor<1x1x6x2x1x4x
// CHECK-NEXT:      %qt = accel.relayout %qh {in_shape = array<i64: 1, 6, 2, 3>, shape = array<i64: 1, 6, 2, 3>, perm = array<i64: 0, 2, 1, 3>, pad_value = 3 : i64} : {{.*}} -> tensor<1x1x2x6x1x4x
// CHECK:           %s = accel.batch_matmul %qt, %kt {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, pad_value = -4 : i64, adj_x = 0 : i64, adj_y = 1 : i64, lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, multiplier = 1771435189 : i64, shift = -7 : i64, output_zero_point = -4 : i64} : {{.*}} -> tensor<1x2x2x6x1x4x
// CHECK-NEXT:      %p = accel.softmax %s {channels = 6 : i64, multiplier = {{.*}}, left_shift = {{.*}}, diff_min = {{.*}}} : {{.*}} -> tensor<1x2x2x6x1x4x
// CHECK-NEXT:      func.return %p
// VTA-LABEL: func.func @attention
// VTA:           accel.relayout
// VTA:           accel.batch_matmul
// VTA:           accel.softmax
func.func @attention(%q: tensor<1x6x6x!qa>, %k: tensor<1x6x6x!qa>) -> tensor<1x2x6x6x!qs> {
  %y = func.call @vta_fn_0(%q, %k) : (tensor<1x6x6x!qa>, tensor<1x6x6x!qa>) -> tensor<1x2x6x6x!qs>
  func.return %y : tensor<1x2x6x6x!qs>
}
func.func private @vta_fn_0(%q: tensor<1x6x6x!qa>, %k: tensor<1x6x6x!qa>) -> tensor<1x2x6x6x!qs> attributes {qaccel.target = "vta"} {
  %qh = q.reshape %q : (tensor<1x6x6x!qa>) -> tensor<1x6x2x3x!qa>
  %qt = q.transpose %qh {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x3x!qa>) -> tensor<1x2x6x3x!qa>
  %kh = q.reshape %k : (tensor<1x6x6x!qa>) -> tensor<1x6x2x3x!qa>
  %kt = q.transpose %kh {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x6x2x3x!qa>) -> tensor<1x2x6x3x!qa>
  %s = q.batch_matmul %qt, %kt {adj_x = 0 : i32, adj_y = 1 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<1x2x6x3x!qa>, tensor<1x2x6x3x!qa>) -> tensor<1x2x6x6x!qo>
  %p = q.softmax %s {multiplier = 2061584256 : i32, left_shift = 21 : i32, diff_min = -992 : i32} : (tensor<1x2x6x6x!qo>) -> tensor<1x2x6x6x!qs>
  func.return %p : tensor<1x2x6x6x!qs>
}
