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

func.func @lut_short_table(%x: tensor<1x4xi8>) {
  %0 = q.lut %x {table = array<i32: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>} : (tensor<1x4xi8>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.lut: table needs 256 values, got 16

// -----

func.func @lut_value_out_of_range(%x: tensor<1x4xi8>) {
  %0 = q.lut %x {table = array<i32: -128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 200>} : (tensor<1x4xi8>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.lut: table values span [-128, 200], outside the result's [-128, 127]

// -----

func.func @lut_not_int8(%x: tensor<1x4xi32>) {
  %0 = q.lut %x {table = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<1x4xi32>) -> tensor<1x4xi8>
  func.return
}
// CHECK: q.lut: the input must be int8, got tensor<1x4xi32>

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

// -----

func.func @depth_to_space_channels(%a: tensor<1x2x2x6xi8>) {
  %0 = q.depth_to_space %a {block_size = 2 : i32} : (tensor<1x2x2x6xi8>) -> tensor<1x4x4x1xi8>
  func.return
}
// CHECK: q.depth_to_space: [1, 4, 4, 1] is not [1, 2, 2, 6] with 2x2 channel blocks moved into pixels

// -----

func.func @squared_difference_shift(%x: tensor<1x2x8xi8>) {
  %s = q.squared_difference %x, %x {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = 1 : i32, output_zero_point = 0 : i32} : (tensor<1x2x8xi8>, tensor<1x2x8xi8>) -> tensor<1x2x8xi8>
  func.return
}
// CHECK: q.squared_difference: output_shift must not be positive (multipliers below one), got 1

// -----

func.func @resize_channels(%a: tensor<1x2x2x6xi8>) {
  %0 = q.resize_nearest_neighbor %a {align_corners = false, half_pixel_centers = false} : (tensor<1x2x2x6xi8>) -> tensor<1x4x4x3xi8>
  func.return
}
// CHECK: q.resize_nearest_neighbor: [1, 4, 4, 3] is not [1, 2, 2, 6] resized in H and W

// -----

func.func @resize_types(%a: tensor<1x2x2x6xi8>) {
  %0 = q.resize_bilinear %a {align_corners = false, half_pixel_centers = false} : (tensor<1x2x2x6xi8>) -> tensor<1x4x4x6xi16>
  func.return
}
// CHECK: q.resize_bilinear: the input and result element types differ

// -----

func.func @resize_flags(%a: tensor<1x2x2x6xi8>) {
  %0 = q.resize_bilinear %a {align_corners = true, half_pixel_centers = true} : (tensor<1x2x2x6xi8>) -> tensor<1x4x4x6xi8>
  func.return
}
// CHECK: q.resize_bilinear: align_corners and half_pixel_centers cannot both be true

// -----

func.func @col2im_taps(%t: tensor<1x3x3x16xi32>) {
  %0 = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x3x16xi32>) -> tensor<1x4x4x2xi32>
  func.return
}
// CHECK: q.col2im: [1, 4, 4, 2] does not take the 3x3 taps of [1, 3, 3, 16]

// -----

func.func @col2im_int8(%t: tensor<1x3x3x18xi8>) {
  %0 = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x3x18xi8>) -> tensor<1x4x4x2xi32>
  func.return
}
// CHECK: q.col2im: input and result must be int32 accumulators

// -----

func.func @col2im_padding(%t: tensor<1x3x3x18xi32>) {
  %0 = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: -1, 1>} : (tensor<1x3x3x18xi32>) -> tensor<1x4x4x2xi32>
  func.return
}
// CHECK: q.col2im: padding must not be negative
