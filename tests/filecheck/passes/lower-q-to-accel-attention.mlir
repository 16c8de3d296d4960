// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel' | filecheck %s --check-prefix=VTA

// The attention core in an accelerator function (B = 4: several blocks, padding lanes): a
// lane-moving reshape and a transpose become accel.relayout (a gather), q.softmax its accel
// form on packed values, q.batch_matmul one GEMM (accel.dense_zp of gathered operands, the
// rhs as weight tiles; the gathers and the correction read through the head split's
// relayouts, lhs_view / rhs_view, which are then erased) over every batch index at once (index = -1: operands, correction and
// result stacked) with its zero-point correction and requantization, one GEMM per batch index
// when the stacked operands would pass 1 MiB, or, beyond 1024 in some dimension, the host
// step accel.batch_matmul. --verify-semantics checks every case
// computes the same bits before and after.

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>

// CHECK-LABEL: func.func @attention
// CHECK:         func.func private @vta_fn_0(%q: tensor<1x2x6x1x4x{{.*}}>, %k: tensor<1x2x6x1x4x{{.*}}>) -> tensor<1x2x2x6x1x4x{{.*}}> attributes {qaccel.target = "vta", accel.packed} {
// CHECK-NOT:       accel.relayout
// CHECK:           %[[A0:.*]] = accel.bmm_operand %q {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, lhs_view = array<i64: 3, 1, 6, 6, 4, 1, 6, 2, 3, 0, 1, 2, 3, 4, 1, 6, 2, 3, 0, 2, 1, 3>, rhs_view = array<i64: 3, 1, 6, 6, 4, 1, 6, 2, 3, 0, 1, 2, 3, 4, 1, 6, 2, 3, 0, 2, 1, 3>} : {{.*}} -> tensor<2x1x6x1x4x
// CHECK-NEXT:      %[[W0:.*]] = accel.bmm_operand %k {{.*}}operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, {{.*}} -> tensor<2x2x1x4x4x
// CHECK-NEXT:      %[[P0:.*]] = accel.dense_zp %[[A0]], %[[W0]] : {{.*}} -> tensor<2x2x6x1x4xi32>
// CHECK-NEXT:      %[[C0:.*]] = accel.bmm_zp_correction %q, %k {{{.*}}lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, lhs_view = {{.*}}, rhs_view = {{.*}}} : {{.*}} -> tensor<2x2x6x1x4xi32>
// CHECK-NEXT:      %[[S0:.*]] = accel.add %[[P0]], %[[C0]]
// CHECK-NEXT:      accel.round_multiply %[[S0]] by [1771435189]
// CHECK-NEXT:      accel.round_rshift {{.*}} by [7]
// CHECK-NEXT:      accel.max {{.*}} by [-124]
// CHECK-NEXT:      accel.min {{.*}} by [131]
// CHECK-NEXT:      accel.add {{.*}} by [-4]
// CHECK-NEXT:      %[[Y:.*]] = accel.narrow {{.*}} -> tensor<2x2x6x1x4x
// CHECK-NOT:       accel.concat
// CHECK-NEXT:      %s = accel.relayout %[[Y]] {in_shape = array<i64: 2, 6, 6>, shape = array<i64: 1, 2, 6, 6>, perm = array<i64: 0, 1, 2, 3>, pad_value = -4 : i64} : {{.*}} -> tensor<1x2x2x6x1x4x
// CHECK-NEXT:      %p = accel.softmax %s {channels = 6 : i64, multiplier = {{.*}}, left_shift = {{.*}}, diff_min = {{.*}}} : {{.*}} -> tensor<1x2x2x6x1x4x
// CHECK-NEXT:      func.return %p
// VTA-LABEL: func.func @attention
// VTA:           accel.dense_zp
// VTA:           accel.relayout
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

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>

// A rank-3 product with adj_x: one GEMM, no concatenation or relayout.
// CHECK-LABEL: func.func @adj_x
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %[[A:.*]] = accel.bmm_operand %a {{{.*}}operand = 0 : i64, adj_x = 1 : i64, adj_y = 0 : i64, index = 0 : i64} : {{.*}} -> tensor<1x2x5x1x4x
// CHECK-NEXT:      %[[W:.*]] = accel.bmm_operand %b {{{.*}}operand = 1 : i64, {{.*}}} : {{.*}} -> tensor<1x2x4x4x
// CHECK-NEXT:      accel.dense_zp %[[A]], %[[W]] : {{.*}} -> tensor<1x1x5x1x4xi32>
// CHECK:           %[[Y:.*]] = accel.narrow {{.*}} -> tensor<1x1x5x1x4x
// CHECK-NEXT:      func.return %[[Y]]
func.func @adj_x(%a: tensor<1x7x5x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<1x7x5x!qa>, tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo>
  func.return %y : tensor<1x5x3x!qo>
}
func.func private @vta_fn_0(%a: tensor<1x7x5x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 1 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<1x7x5x!qa>, tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo>
  func.return %y : tensor<1x5x3x!qo>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>

// Beyond 1024 rows the product stays the exact host step.
// CHECK-LABEL: func.func @many_rows
// CHECK:         accel.batch_matmul %a, %b {lhs_shape = array<i64: 1, 1025, 2>
// CHECK-NOT:     accel.dense_zp
func.func @many_rows(%a: tensor<1x1025x2x!qa>, %b: tensor<1x2x3x!qa>) -> tensor<1x1025x3x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<1x1025x2x!qa>, tensor<1x2x3x!qa>) -> tensor<1x1025x3x!qo>
  func.return %y : tensor<1x1025x3x!qo>
}
func.func private @vta_fn_0(%a: tensor<1x1025x2x!qa>, %b: tensor<1x2x3x!qa>) -> tensor<1x1025x3x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<1x1025x2x!qa>, tensor<1x2x3x!qa>) -> tensor<1x1025x3x!qo>
  func.return %y : tensor<1x1025x3x!qo>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>

// A broadcast rhs (batch 1 against 3): one GEMM over the three batch indices, each image
// with the same rhs gathered into its own tiles.
// CHECK-LABEL: func.func @broadcast_rhs
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %[[A:.*]] = accel.bmm_operand %a {{{.*}}operand = 0 : i64, {{.*}}index = -1 : i64} : {{.*}} -> tensor<3x2x5x1x4x
// CHECK-NEXT:      %[[W:.*]] = accel.bmm_operand %b {{{.*}}operand = 1 : i64, {{.*}}index = -1 : i64} : {{.*}} -> tensor<3x1x2x4x4x
// CHECK-NEXT:      accel.dense_zp %[[A]], %[[W]] : {{.*}} -> tensor<3x1x5x1x4xi32>
// CHECK-NEXT:      accel.bmm_zp_correction %a, %b {{{.*}}index = -1 : i64} : {{.*}} -> tensor<3x1x5x1x4xi32>
// CHECK:           %[[Y:.*]] = accel.narrow {{.*}} -> tensor<3x1x5x1x4x
// CHECK-NEXT:      func.return %[[Y]]
func.func @broadcast_rhs(%a: tensor<3x5x7x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<3x5x3x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<3x5x7x!qa>, tensor<1x7x3x!qa>) -> tensor<3x5x3x!qo>
  func.return %y : tensor<3x5x3x!qo>
}
func.func private @vta_fn_0(%a: tensor<3x5x7x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<3x5x3x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = -128 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<3x5x7x!qa>, tensor<1x7x3x!qa>) -> tensor<3x5x3x!qo>
  func.return %y : tensor<3x5x3x!qo>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>

// Stacked operands beyond 1 MiB: one GEMM per batch index, the results concatenated.
// CHECK-LABEL: func.func @large_batch
// CHECK:         func.func private @vta_fn_0
// CHECK:           accel.bmm_operand %a {{{.*}}operand = 0 : i64, {{.*}}index = 0 : i64} : {{.*}} -> tensor<1x75x300x1x4x
// CHECK:           %[[Y0:.*]] = accel.narrow {{.*}} -> tensor<1x75x300x1x4x
// CHECK:           accel.bmm_operand %a {{{.*}}operand = 0 : i64, {{.*}}index = 1 : i64} : {{.*}} -> tensor<1x75x300x1x4x
// CHECK:           %[[Y1:.*]] = accel.narrow {{.*}} -> tensor<1x75x300x1x4x
// CHECK-NEXT:      %[[Y:.*]] = accel.concat %[[Y0]], %[[Y1]] axis = 0 : {{.*}} -> tensor<2x75x300x1x4x
// CHECK-NEXT:      func.return %[[Y]]
func.func @large_batch(%a: tensor<2x300x300x!qa>, %b: tensor<2x300x300x!qa>) -> tensor<2x300x300x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<2x300x300x!qa>, tensor<2x300x300x!qa>) -> tensor<2x300x300x!qo>
  func.return %y : tensor<2x300x300x!qo>
}
func.func private @vta_fn_0(%a: tensor<2x300x300x!qa>, %b: tensor<2x300x300x!qa>) -> tensor<2x300x300x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<2x300x300x!qa>, tensor<2x300x300x!qa>) -> tensor<2x300x300x!qo>
  func.return %y : tensor<2x300x300x!qo>
}
