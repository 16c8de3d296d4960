// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers' | filecheck %s

// Broadcast operands form no layer where the ALU cannot repeat one row per channel block: the
// narrowing stays on the host and says why (`accel.host_reason`, in qaccel-compile's report).

// A global sum of a broadcast product: the sum's rows are summed per block, the per-channel
// operand would have to join before the sum.
// CHECK-LABEL: func.func @sum_of_broadcast
// CHECK:       func.func private @vta_fn_0
// CHECK-NOT:     vta.layer
// CHECK:         %m = accel.narrow %{{.*}} {accel.host_reason = "accel.add broadcasts (shape [1, 1, 1, 1, 1, 16])"}
!qx = !quant.uniform<i8:f32, 0.05:-3>
!qt = !quant.uniform<i8:f32, 0.03:-118>
!qm = !quant.uniform<i8:f32, 0.004:-95>
func.func @sum_of_broadcast(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> tensor<1x1x1x16x!qm> {
  %m = func.call @vta_fn_0(%x, %s) : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qx>) -> tensor<1x1x1x16x!qm>
  func.return %m : tensor<1x1x1x16x!qm>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> tensor<1x1x1x16x!qm> attributes {qaccel.target = "vta"} {
  %t = q.mul %x, %s {lhs_zero_point = -3 : i32, rhs_zero_point = -3 : i32, multiplier = 1431655765 : i32, shift = -6 : i32, output_zero_point = -118 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qx>) -> tensor<1x4x4x16x!qt>
  %m = q.mean %t {axes = array<i64: 1, 2>, num_elements = 16 : i32, input_zero_point = -118 : i32, multiplier = 1073741824 : i32, shift = -3 : i32, output_zero_point = -95 : i32} : (tensor<1x4x4x16x!qt>) -> tensor<1x1x1x16x!qm>
  func.return %m : tensor<1x1x1x16x!qm>
}


// -----

// A pool of a broadcast product: a pool's tree takes no broadcast operand.
// CHECK-LABEL: func.func @pool_of_broadcast
// CHECK:       func.func private @vta_fn_0
// CHECK-NOT:     vta.layer
// CHECK:         %p = accel.narrow %{{.*}} {accel.host_reason = "accel.max_pool2d has no ALU form"}

!qx = !quant.uniform<i8:f32, 0.05:-3>
!qt = !quant.uniform<i8:f32, 0.03:-118>
func.func @pool_of_broadcast(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> tensor<1x2x2x16x!qt> {
  %m = func.call @vta_fn_0(%x, %s) : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qx>) -> tensor<1x2x2x16x!qt>
  func.return %m : tensor<1x2x2x16x!qt>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> tensor<1x2x2x16x!qt> attributes {qaccel.target = "vta"} {
  %t = q.mul %x, %s {lhs_zero_point = -3 : i32, rhs_zero_point = -3 : i32, multiplier = 1431655765 : i32, shift = -6 : i32, output_zero_point = -118 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qx>) -> tensor<1x4x4x16x!qt>
  %p = q.max_pool2d %t {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x16x!qt>) -> tensor<1x2x2x16x!qt>
  func.return %p : tensor<1x2x2x16x!qt>
}

