// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers' | filecheck %s

// Element-wise layers with a per-channel operand broadcast over the map (the squeeze-excite
// multiply), values several trees share (a swish read by the squeeze-excite mean and
// multiply), and a widening two trees read. --verify-semantics runs the IR before and after
// every pass on the same inputs: the formed IR computes the same values.

// The [1, 4, 4, 16] x [1, 1, 1, 16] multiply: one "eltwise" layer; the per-channel operand
// (one row per channel block) is widened inside it.
// CHECK-LABEL: func.func @se_mul
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %y = vta.layer "eltwise" {
// CHECK-NEXT:      %[[X:.*]] = accel.widen %x
// CHECK-NEXT:      %[[XC:.*]] = accel.add %[[X]] by [3]
// CHECK-NEXT:      %[[S:.*]] = accel.widen %s : tensor<1x1x1x1x1x16x
// CHECK-NEXT:      %[[SC:.*]] = accel.add %[[S]] by [128]
// CHECK-NEXT:      %{{.*}} = accel.mul %[[XC]], %[[SC]] : tensor<1x1x4x4x1x16xi32>, tensor<1x1x1x1x1x16xi32>
// CHECK:           %y_1 = accel.narrow
// CHECK-NEXT:      vta.yield %y_1
!qx = !quant.uniform<i8:f32, 0.05:-3>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>
!qy = !quant.uniform<i8:f32, 0.02:-119>
func.func @se_mul(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qs>) -> tensor<1x4x4x16x!qy> {
  %y = func.call @vta_fn_0(%x, %s) : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qs>) -> tensor<1x4x4x16x!qy>
  func.return %y : tensor<1x4x4x16x!qy>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qs>) -> tensor<1x4x4x16x!qy> attributes {qaccel.target = "vta"} {
  %y = q.mul %x, %s {lhs_zero_point = -3 : i32, rhs_zero_point = -128 : i32, multiplier = 1374389535 : i32, shift = -7 : i32, output_zero_point = -119 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qs>) -> tensor<1x4x4x16x!qy>
  func.return %y : tensor<1x4x4x16x!qy>
}


// -----

// The product %t is int8 (clamped) and read by the mean and by the broadcast multiply:
// its layer stores it narrowed (a new accel.narrow) and yields the int32 value too, which
// the two other layers read back from DRAM.
// CHECK-LABEL: func.func @shared
// CHECK:       func.func private @vta_fn_0
// CHECK:         %[[N:.*]], %[[T:.*]] = vta.layer "eltwise" {
// CHECK:           %[[V:.*]] = accel.add %{{.*}} by [-118]
// CHECK-NEXT:      %[[NN:.*]] = accel.narrow %[[V]] : tensor<1x1x4x4x1x16xi32> -> tensor<1x1x4x4x1x16xi8>
// CHECK-NEXT:      vta.yield %[[NN]], %[[V]]
// CHECK:         %m = vta.layer "eltwise" {
// CHECK-NEXT:      accel.reduce_sum %[[T]] axes = [2, 3]
// CHECK:         %y = vta.layer "eltwise" {
// CHECK-NEXT:      %[[U:.*]] = accel.add %[[T]] by [118]
// CHECK-NEXT:      %[[S:.*]] = accel.widen %s
// CHECK-NEXT:      %[[SC:.*]] = accel.add %[[S]] by [3]
// CHECK-NEXT:      accel.mul %[[U]], %[[SC]]

!qx = !quant.uniform<i8:f32, 0.05:-3>
!qt = !quant.uniform<i8:f32, 0.03:-118>
!qm = !quant.uniform<i8:f32, 0.004:-95>
!qy = !quant.uniform<i8:f32, 0.02:-119>
func.func @shared(%x: tensor<1x4x4x16x!qx>, %g: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> (tensor<1x1x1x16x!qm>, tensor<1x4x4x16x!qy>) {
  %m, %y = func.call @vta_fn_0(%x, %g, %s) : (tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>, tensor<1x1x1x16x!qx>) -> (tensor<1x1x1x16x!qm>, tensor<1x4x4x16x!qy>)
  func.return %m, %y : tensor<1x1x1x16x!qm>, tensor<1x4x4x16x!qy>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qx>, %g: tensor<1x4x4x16x!qx>, %s: tensor<1x1x1x16x!qx>) -> (tensor<1x1x1x16x!qm>, tensor<1x4x4x16x!qy>) attributes {qaccel.target = "vta"} {
  %t = q.mul %x, %g {lhs_zero_point = -3 : i32, rhs_zero_point = -3 : i32, multiplier = 1431655765 : i32, shift = -6 : i32, output_zero_point = -118 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>) -> tensor<1x4x4x16x!qt>
  %m = q.mean %t {axes = array<i64: 1, 2>, num_elements = 16 : i32, input_zero_point = -118 : i32, multiplier = 1073741824 : i32, shift = -3 : i32, output_zero_point = -95 : i32} : (tensor<1x4x4x16x!qt>) -> tensor<1x1x1x16x!qm>
  %y = q.mul %t, %s {lhs_zero_point = -118 : i32, rhs_zero_point = -3 : i32, multiplier = 1374389535 : i32, shift = -6 : i32, output_zero_point = -119 : i32} : (tensor<1x4x4x16x!qt>, tensor<1x1x1x16x!qx>) -> tensor<1x4x4x16x!qy>
  func.return %m, %y : tensor<1x1x1x16x!qm>, tensor<1x4x4x16x!qy>
}

// -----

// %x is read by two products: each layer widens it itself.
// CHECK-LABEL: func.func @two_users
// CHECK:       func.func private @vta_fn_0
// CHECK:         %a = vta.layer "eltwise" {
// CHECK-NEXT:      accel.widen %x
// CHECK:         %b = vta.layer "eltwise" {
// CHECK-NEXT:      accel.widen %x

!qx = !quant.uniform<i8:f32, 0.05:-3>
!qt = !quant.uniform<i8:f32, 0.03:-118>
func.func @two_users(%x: tensor<1x4x4x16x!qx>, %g: tensor<1x4x4x16x!qx>, %h: tensor<1x4x4x16x!qx>) -> (tensor<1x4x4x16x!qt>, tensor<1x4x4x16x!qt>) {
  %a, %b = func.call @vta_fn_0(%x, %g, %h) : (tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>) -> (tensor<1x4x4x16x!qt>, tensor<1x4x4x16x!qt>)
  func.return %a, %b : tensor<1x4x4x16x!qt>, tensor<1x4x4x16x!qt>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qx>, %g: tensor<1x4x4x16x!qx>, %h: tensor<1x4x4x16x!qx>) -> (tensor<1x4x4x16x!qt>, tensor<1x4x4x16x!qt>) attributes {qaccel.target = "vta"} {
  %a = q.mul %x, %g {lhs_zero_point = 0 : i32, rhs_zero_point = -3 : i32, multiplier = 1431655765 : i32, shift = -6 : i32, output_zero_point = -118 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>) -> tensor<1x4x4x16x!qt>
  %b = q.mul %x, %h {lhs_zero_point = 0 : i32, rhs_zero_point = -3 : i32, multiplier = 1431655765 : i32, shift = -6 : i32, output_zero_point = -118 : i32} : (tensor<1x4x4x16x!qx>, tensor<1x4x4x16x!qx>) -> tensor<1x4x4x16x!qt>
  func.return %a, %b : tensor<1x4x4x16x!qt>, tensor<1x4x4x16x!qt>
}
