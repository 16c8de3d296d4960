// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @conv_result_not_int32(%x: tensor<1x4x4x2xi8>, %w: tensor<2x1x1x2xi8>) {
  %0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x2xi8>, tensor<2x1x1x2xi8>) -> tensor<1x4x4x2xi8>
  func.return
}
// CHECK: q.conv2d: the result must be int32 accumulators

// -----

func.func @zero_stride(%x: tensor<1x4x4x2xi8>, %w: tensor<2x1x1x2xi8>) {
  %0 = q.conv2d %x, %w {strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x2xi8>, tensor<2x1x1x2xi8>) -> tensor<1x4x4x2xi32>
  func.return
}
// CHECK: q.conv2d: strides must be positive, got [0, 1]

// -----

func.func @short_padding(%x: tensor<1x4x4x2xi8>) {
  %0 = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x4x4x2xi8>) -> tensor<1x2x2x2xi8>
  func.return
}
// CHECK: q.max_pool2d: padding needs 4 values, got 2

// -----

func.func @bias_shape(%acc: tensor<1x4xi32>, %b: tensor<3xi32>) {
  %0 = q.bias_add %acc, %b : (tensor<1x4xi32>, tensor<3xi32>) -> tensor<1x4xi32>
  func.return
}
// CHECK: q.bias_add: bias shape [3] does not match the 4 channels of the input

// -----

func.func @requantize_both_schemes(%acc: tensor<1x4xi32>) {
  %0 = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: 0>, scale = array<f64: 0.5>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4xi32>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.requantize: give either scale or multiplier+shift

// -----

func.func @requantize_channels(%acc: tensor<1x4xi32>) {
  %0 = q.requantize %acc {multiplier = array<i32: 1, 2, 3>, shift = array<i32: 0, 0, 0>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4xi32>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.requantize: multiplier has 3 values for 4 channels (need 1 or 4)

// -----

func.func @relu_range(%x: tensor<4xi8>) {
  %0 = q.relu %x {min = 5 : i32, max = 4 : i32} : (tensor<4xi8>) -> tensor<4xi8>
  func.return
}
// CHECK: q.relu: min 5 is above max 4

// -----

func.func @add_left_shift_out(%a: tensor<4xi8>) {
  %0 = q.add %a, %a {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = 1 : i32, output_zero_point = 0 : i32} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  func.return
}
// CHECK: q.add: output_shift must not be positive, got 1

// -----

func.func @requantize_shift_out_of_range(%acc: tensor<1x4xi32>) {
  %0 = q.requantize %acc {multiplier = array<i32: 1073741824, 1073741824, 1073741824, 1073741824>, shift = array<i32: 0, 100, 0, 0>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4xi32>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.requantize: shift 100 is outside [-62, 31], where TFLite's fixed-point rescaling is defined

// -----

func.func @mul_shift_out_of_range(%a: tensor<4xi8>) {
  %0 = q.mul %a, %a {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, multiplier = 1073741824 : i32, shift = -63 : i32, output_zero_point = 0 : i32} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  func.return
}
// CHECK: q.mul: shift -63 is outside [-62, 31]

// -----

func.func @add_input_shift_out_of_range(%a: tensor<4xi8>) {
  %0 = q.add %a, %a {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 40 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = 0 : i32, output_zero_point = 0 : i32} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  func.return
}
// CHECK: q.add: lhs_shift 40 is outside [-62, 31]

// -----

func.func @reshape_count(%a: tensor<1x4x4x2xi8>) {
  %0 = q.reshape %a : (tensor<1x4x4x2xi8>) -> tensor<1x30xi8>
  func.return
}
// CHECK: q.reshape: [1, 4, 4, 2] and [1, 30] must be static shapes of the same number of elements

// -----

func.func @reshape_element_type(%a: tensor<1x4x4x2xi8>) {
  %0 = q.reshape %a : (tensor<1x4x4x2xi8>) -> tensor<1x32xi32>
  func.return
}
// CHECK: q.reshape: the input and result element types differ

// -----

func.func @slice_outside(%a: tensor<1x4x4x2xi8>) {
  %0 = q.slice %a {begin = array<i64: 0, 2, 1, 0>} : (tensor<1x4x4x2xi8>) -> tensor<1x3x3x2xi8>
  func.return
}
// CHECK: q.slice: a [1, 3, 3, 2] box at [0, 2, 1, 0] does not lie inside [1, 4, 4, 2]
