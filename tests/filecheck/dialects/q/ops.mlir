// RUN: qaccel-opt %s | qaccel-opt | filecheck %s
// Every q op survives a print-parse round trip.

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @all_ops
func.func @all_ops(%x: tensor<1x4x4x2x!q>, %w: tensor<2x1x1x2xi8>, %dw: tensor<1x1x1x2xi8>, %fw: tensor<3x32xi8>, %bias: tensor<2xi32>) -> tensor<1x4x4x2x!q> {
  // CHECK: q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32}
  %0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x2x!q>, tensor<2x1x1x2xi8>) -> tensor<1x4x4x2xi32>
  // CHECK: q.depthwise_conv2d {{.*}}depth_multiplier = 1 : i32
  %1 = q.depthwise_conv2d %x, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32, depth_multiplier = 1 : i32} : (tensor<1x4x4x2x!q>, tensor<1x1x1x2xi8>) -> tensor<1x4x4x2xi32>
  // CHECK: q.dense %x, %fw {input_zero_point = -1 : i32, filter_zero_point = 0 : i32}
  %2 = q.dense %x, %fw {input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x2x!q>, tensor<3x32xi8>) -> tensor<1x3xi32>
  // CHECK: q.bias_add %0, %bias
  %3 = q.bias_add %0, %bias : (tensor<1x4x4x2xi32>, tensor<2xi32>) -> tensor<1x4x4x2xi32>
  // CHECK: q.requantize %3 {multiplier = array<i32: 1073741824, 1073741824>, shift = array<i32: -3, -4>, input_zero_point = 0 : i32, output_zero_point = -1 : i32}
  %4 = q.requantize %3 {multiplier = array<i32: 1073741824, 1073741824>, shift = array<i32: -3, -4>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x2xi32>) -> tensor<1x4x4x2x!q>
  // CHECK: q.requantize %2 {scale = array<f64: 1.250000e-01>, input_zero_point = 0 : i32, output_zero_point = 0 : i32}
  %5 = q.requantize %2 {scale = array<f64: 0.125>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x3xi32>) -> tensor<1x3xi8>
  // CHECK: q.relu %4 {min = -1 : i32, max = 11 : i32}
  %6 = q.relu %4 {min = -1 : i32, max = 11 : i32} : (tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.add %6, %x {{.*}}left_shift = 20 : i32
  %7 = q.add %6, %x {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -20 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.sub
  %8 = q.sub %7, %x {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -20 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.mul %8, %x {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = 0 : i32, output_zero_point = -1 : i32}
  %9 = q.mul %8, %x {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.avg_pool2d %9 {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>}
  %10 = q.avg_pool2d %9 {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  // CHECK: q.max_pool2d
  %11 = q.max_pool2d %9 {filter = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.mean %11 {axes = array<i64: 1, 2>, num_elements = 16 : i32
  %12 = q.mean %11 {axes = array<i64: 1, 2>, num_elements = 16 : i32, input_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = -3 : i32, output_zero_point = -1 : i32} : (tensor<1x4x4x2x!q>) -> tensor<1x2x!q>
  // CHECK: q.pad %11 {padding = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, pad_value = -1 : i32}
  %13 = q.pad %11 {padding = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, pad_value = -1 : i32} : (tensor<1x4x4x2x!q>) -> tensor<1x6x6x2x!q>
  // CHECK: q.concat %11, %x {axis = 3 : i32}
  %14 = q.concat %11, %x {axis = 3 : i32} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x4x!q>
  // CHECK: q.lut %11 {table = array<i32: -1, -1, {{.*}}, 126, 127>}
  %15 = q.lut %11 {table = array<i32: -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127>} : (tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  // CHECK: q.reshape %11 : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x32x!quant.uniform<i8:f32, 0.5:-1>>
  %16 = q.reshape %11 : (tensor<1x4x4x2x!q>) -> tensor<1x32x!q>
  // CHECK: q.slice %11 {begin = array<i64: 0, 1, 1, 0>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x3x3x2x!quant.uniform<i8:f32, 0.5:-1>>
  %17 = q.slice %11 {begin = array<i64: 0, 1, 1, 0>} : (tensor<1x4x4x2x!q>) -> tensor<1x3x3x2x!q>
  %18 = q.reshape %11 : (tensor<1x4x4x2x!q>) -> tensor<1x2x4x4x!q>
  // CHECK: q.depth_to_space %18 {block_size = 2 : i32} : (tensor<1x2x4x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x4x8x1x!quant.uniform<i8:f32, 0.5:-1>>
  %19 = q.depth_to_space %18 {block_size = 2 : i32} : (tensor<1x2x4x4x!q>) -> tensor<1x4x8x1x!q>
  func.return %11 : tensor<1x4x4x2x!q>
}

// CHECK-LABEL: func.func @resizes
// CHECK-NEXT:    %n = q.resize_nearest_neighbor %x {align_corners = false, half_pixel_centers = true} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x8x8x2x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %b = q.resize_bilinear %x {align_corners = true, half_pixel_centers = false} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x3x7x2x!quant.uniform<i8:f32, 0.5:-1>>
func.func @resizes(%x: tensor<1x4x4x2x!q>) -> (tensor<1x8x8x2x!q>, tensor<1x3x7x2x!q>) {
  %n = q.resize_nearest_neighbor %x {align_corners = false, half_pixel_centers = true} : (tensor<1x4x4x2x!q>) -> tensor<1x8x8x2x!q>
  %b = q.resize_bilinear %x {align_corners = true, half_pixel_centers = false} : (tensor<1x4x4x2x!q>) -> tensor<1x3x7x2x!q>
  func.return %n, %b : tensor<1x8x8x2x!q>, tensor<1x3x7x2x!q>
}

// CHECK-LABEL: func.func @col2im
// CHECK-NEXT:    %s = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x3x18xi32>) -> tensor<1x4x4x2xi32>
func.func @col2im(%t: tensor<1x3x3x18xi32>) -> tensor<1x4x4x2xi32> {
  %s = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x3x18xi32>) -> tensor<1x4x4x2xi32>
  func.return %s : tensor<1x4x4x2xi32>
}

// CHECK-LABEL: func.func @squared_difference
// CHECK: q.squared_difference %x, %m {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = -3 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -128 : i32} : (tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-1>>, tensor<1x2x1x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-128>>
func.func @squared_difference(%x: tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-1>>, %m: tensor<1x2x1x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-128>> {
  %s = q.squared_difference %x, %m {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = -3 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -128 : i32} : (tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-1>>, tensor<1x2x1x!quant.uniform<i8:f32, 0.5:2>>) -> tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-128>>
  func.return %s : tensor<1x2x8x!quant.uniform<i8:f32, 0.5:-128>>
}
