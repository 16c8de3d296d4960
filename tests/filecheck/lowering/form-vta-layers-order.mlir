// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers' | filecheck %s

// form-vta-layers moves a GEMM layer that reads nothing computed since the GEMM layer before
// it up to run right after that layer, so the host steps between them join the next run of
// host steps (one program stop fewer); --verify-semantics checks the values are the same.

// The second convolution reads only the argument: it runs right after the first, and both
// transposes (host steps) run together after them.
// CHECK-LABEL: func.func @hoisted
// CHECK:       func.func private @vta_fn_0
// CHECK:         %a = vta.layer "conv"
// CHECK:         %b = vta.layer "conv"
// CHECK:         %t = accel.relayout %a
// CHECK-NEXT:    %u = accel.relayout %b
// CHECK-NEXT:    func.return %t, %u
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32, 0.1:0>
func.func @hoisted(%x: tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>) {
  %t, %u = func.call @vta_fn_0(%x) : (tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>)
  func.return %t, %u : tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>) attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16x!w>
  %v = tfl.const dense<-2> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16x!w>
  %pa = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %pa {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qo>
  %t = q.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x16x!qo>) -> tensor<1x4x4x16x!qo>
  %pb = q.conv2d %x, %v {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %pb {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qo>
  %u = q.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x16x!qo>) -> tensor<1x4x4x16x!qo>
  func.return %t, %u : tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>
}

// -----

// The second convolution reads the host step's result: it stays after it.
// CHECK-LABEL: func.func @depends
// CHECK:       func.func private @vta_fn_0
// CHECK:         %a = vta.layer "conv"
// CHECK:         %t = accel.relayout %a
// CHECK-NEXT:    {{.*}} = vta.layer "conv"
// CHECK:         %u = accel.relayout %b
// CHECK-NEXT:    func.return %u
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32, 0.1:0>
func.func @depends(%x: tensor<1x4x4x16x!qi>) -> tensor<1x4x4x16x!qo> {
  %u = func.call @vta_fn_0(%x) : (tensor<1x4x4x16x!qi>) -> tensor<1x4x4x16x!qo>
  func.return %u : tensor<1x4x4x16x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qi>) -> tensor<1x4x4x16x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16x!w>
  %pa = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %pa {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qi>
  %t = q.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x16x!qi>) -> tensor<1x4x4x16x!qi>
  %pb = q.conv2d %t, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %pb {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qo>
  %u = q.transpose %b {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x16x!qo>) -> tensor<1x4x4x16x!qo>
  func.return %u : tensor<1x4x4x16x!qo>
}

// -----

// The layer after the second convolution is a residual add (an element-wise layer, whose
// place on the ALU or the host is priced with its neighbours in the program): the
// convolution stays, and so does the add's neighbourhood.
// CHECK-LABEL: func.func @eltwise_after
// CHECK:       func.func private @vta_fn_0
// CHECK:         %a = vta.layer "conv"
// CHECK:         %t = accel.relayout %a
// CHECK-NEXT:    {{.*}} = vta.layer "conv"
// CHECK:         } : tensor<1x1x4x4x1x16xi32>
// CHECK-NEXT:    %s = vta.layer "eltwise"
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32, 0.1:0>
func.func @eltwise_after(%x: tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>) {
  %t, %s = func.call @vta_fn_0(%x) : (tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>)
  func.return %t, %s : tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x16x!qi>) -> (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>) attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16x!w>
  %pa = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %pa {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qo>
  %t = q.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x4x16x!qo>) -> tensor<1x4x4x16x!qo>
  %pb = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16x!qi>, tensor<16x1x1x16x!w>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %pb {multiplier = array<i32: 1073741824>, shift = array<i32: -3>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16x!qo>
  %s = q.add %b, %b {lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1701543333 : i32, output_shift = -18 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>) -> tensor<1x4x4x16x!qo>
  func.return %t, %s : tensor<1x4x4x16x!qo>, tensor<1x4x4x16x!qo>
}
