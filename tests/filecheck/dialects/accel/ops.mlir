// RUN: qaccel-opt %s --split-input-file | qaccel-opt --split-input-file | filecheck %s
// accel.pack / accel.unpack survive a print-parse round trip, in every layout we use.

!q = !quant.uniform<i8:f32, 0.5:-1>

// NHWC activations -> NCHW1n16c, channels padded with the zero point.
// CHECK-LABEL: func.func @activations_4d
// CHECK-NEXT:    %p = accel.pack %x padding_value(-1) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x8x8x20x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x8x8x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %y = accel.unpack %p outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x2x8x8x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x8x8x20x!quant.uniform<i8:f32, 0.5:-1>>
func.func @activations_4d(%x: tensor<1x8x8x20x!q>) -> tensor<1x8x8x20x!q> {
  %p = accel.pack %x padding_value(-1) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x8x8x20x!q> -> tensor<1x2x8x8x1x16x!q>
  %y = accel.unpack %p outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x2x8x8x1x16x!q> -> tensor<1x8x8x20x!q>
  func.return %y : tensor<1x8x8x20x!q>
}

// -----

// [N, C] -> [N, C/16, 1, 16]; outer_dims_perm is optional (the identity), and a padding value
// is not needed when the tiles divide the dimensions.
// CHECK-LABEL: func.func @activations_2d
// CHECK-NEXT:    %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<2x32xi32> -> tensor<2x2x1x16xi32>
// CHECK-NEXT:    %y = accel.unpack %p inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<2x2x1x16xi32> -> tensor<2x32xi32>
func.func @activations_2d(%x: tensor<2x32xi32>) -> tensor<2x32xi32> {
  %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<2x32xi32> -> tensor<2x2x1x16xi32>
  %y = accel.unpack %p inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<2x2x1x16xi32> -> tensor<2x32xi32>
  func.return %y : tensor<2x32xi32>
}

// -----

!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0}>

// OHWI weights -> OIHW16o16i (per-axis quantization keeps describing the unpacked axis 0).
// CHECK-LABEL: func.func @weights
// CHECK-NEXT:    %p = accel.pack %w padding_value(0) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [16, 16] : tensor<3x3x3x20x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0}>> -> tensor<1x2x3x3x16x16x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0}>>
// CHECK-NEXT:    %d = accel.pack %m padding_value(0) inner_dims_pos = [0, 1] inner_tiles = [16, 16] : tensor<10x64xi8> -> tensor<1x4x16x16xi8>
func.func @weights(%w: tensor<3x3x3x20x!w>, %m: tensor<10x64xi8>) -> (tensor<1x2x3x3x16x16x!w>, tensor<1x4x16x16xi8>) {
  %p = accel.pack %w padding_value(0) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [16, 16] : tensor<3x3x3x20x!w> -> tensor<1x2x3x3x16x16x!w>
  %d = accel.pack %m padding_value(0) inner_dims_pos = [0, 1] inner_tiles = [16, 16] : tensor<10x64xi8> -> tensor<1x4x16x16xi8>
  func.return %p, %d : tensor<1x2x3x3x16x16x!w>, tensor<1x4x16x16xi8>
}

// -----

// The generic form parses too.
// CHECK-LABEL: func.func @generic
// CHECK-NEXT:    accel.pack %x padding_value(3) inner_dims_pos = [1] inner_tiles = [4] : tensor<2x5xi8> -> tensor<2x2x4xi8>
func.func @generic(%x: tensor<2x5xi8>) -> tensor<2x2x4xi8> {
  %p = "accel.pack"(%x) <{inner_dims_pos = array<i64: 1>, inner_tiles = array<i64: 4>, padding_value = 3 : i32}> : (tensor<2x5xi8>) -> tensor<2x2x4xi8>
  func.return %p : tensor<2x2x4xi8>
}
