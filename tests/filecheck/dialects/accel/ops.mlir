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

// -----

// The compute ops on packed tensors (B = 16): GEMM-core ops on int8, ALU ops on int32
// accumulators, the conversions between them, the host requantization and data movement.
!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x4x4x1x16xi32>
// CHECK-LABEL: func.func @compute
// CHECK-NEXT:    %acc = accel.conv2d_zp %x, %w pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] : tensor<1x1x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x1x3x3x16x16xi8> -> tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %pre = accel.conv2d_zp %x, %w pad_value(-1) strides = [2, 1] dilations = [1, 2] padding = [1, 0, 2, 2] groups = 1 bias = [5] : tensor<1x1x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x1x3x3x16x16xi8> -> tensor<1x2x2x4x1x16xi32>
// CHECK-NEXT:    %fc = accel.dense_zp %d, %dw bias = [1] : tensor<1x2x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x1x16xi32>
// CHECK-NEXT:    %b = accel.bias_add_zp %acc by [3] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %s = accel.shift_left %b by [1] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %m = accel.round_multiply %s by [1073741824] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %r = accel.round_rshift %m by [3] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %a = accel.add %r, %acc : tensor<1x2x4x4x1x16xi32>, tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %lo = accel.max %a by [-128] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %hi = accel.min %lo by [127] : tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %mul = accel.mul %hi, %row : tensor<1x2x4x4x1x16xi32>, tensor<1x2x1x1x1x16xi32>
// CHECK-NEXT:    %n = accel.narrow %hi : tensor<1x2x4x4x1x16xi32> -> tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %wide = accel.widen %n : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x4x4x1x16xi32>
// CHECK-NEXT:    %host = accel.host_requantize %fc scale = [0.0013913921871730327] zero_points(0, -1) clamp(-128, 127) : tensor<1x1x1x16xi32> -> tensor<1x1x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %mp = accel.max_pool2d %wide window = [2, 2] strides = [2, 2] : tensor<1x2x4x4x1x16xi32> -> tensor<1x2x2x2x1x16xi32>
// CHECK-NEXT:    %sp = accel.sum_pool2d %wide window = [3, 2] strides = [1, 2] : tensor<1x2x4x4x1x16xi32> -> tensor<1x2x2x2x1x16xi32>
// CHECK-NEXT:    %rs = accel.reduce_sum %wide axes = [2, 3] : tensor<1x2x4x4x1x16xi32> -> tensor<1x2x1x16xi32>
// CHECK-NEXT:    %kd = accel.reduce_sum %wide axes = [3] : tensor<1x2x4x4x1x16xi32> -> tensor<1x2x4x1x1x16xi32>
// CHECK-NEXT:    %p = accel.pad %n pad_value(-1) padding = [1, 0, 0, 2] : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x5x6x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %c = accel.concat %n, %n axis = 1 : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>, tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x4x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %hp = accel.host_pool2d %n "avg" window = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] clamp(-128, 127) : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %rs2 = accel.reshape %n : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x16x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %cr = accel.crop %n offsets = [1, 0] : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x3x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %cl = accel.concat_lanes %n, %n channels = [24, 20] : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>, tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x3x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %ds = accel.depth_to_space %n block_size = 2 channels = 8 pad_value = -1 : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x1x8x8x1x16x!quant.uniform<i8:f32, 0.5:-1>>
func.func @compute(%x: tensor<1x1x4x4x1x16x!q>, %w: tensor<2x1x3x3x16x16xi8>, %d: tensor<1x2x1x16xi8>, %dw: tensor<1x2x16x16xi8>, %row: tensor<1x2x1x1x1x16xi32>) -> tensor<1x2x4x4x1x16x!q> {
  %acc = accel.conv2d_zp %x, %w pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] : tensor<1x1x4x4x1x16x!q>, tensor<2x1x3x3x16x16xi8> -> !t
  %pre = accel.conv2d_zp %x, %w pad_value(-1) strides = [2, 1] dilations = [1, 2] padding = [1, 0, 2, 2] groups = 1 bias = [5] : tensor<1x1x4x4x1x16x!q>, tensor<2x1x3x3x16x16xi8> -> tensor<1x2x2x4x1x16xi32>
  %fc = accel.dense_zp %d, %dw bias = [1] : tensor<1x2x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x1x16xi32>
  %b = accel.bias_add_zp %acc by [3] : !t
  %s = accel.shift_left %b by [1] : !t
  %m = accel.round_multiply %s by [1073741824] : !t
  %r = accel.round_rshift %m by [3] : !t
  %a = accel.add %r, %acc : !t, !t
  %lo = accel.max %a by [-128] : !t
  %hi = accel.min %lo by [127] : !t
  %mul = accel.mul %hi, %row : !t, tensor<1x2x1x1x1x16xi32>
  %n = accel.narrow %hi : !t -> tensor<1x2x4x4x1x16x!q>
  %wide = accel.widen %n : tensor<1x2x4x4x1x16x!q> -> !t
  %host = accel.host_requantize %fc scale = [0.0013913921871730327] zero_points(0, -1) clamp(-128, 127) : tensor<1x1x1x16xi32> -> tensor<1x1x1x16x!q>
  %mp = accel.max_pool2d %wide window = [2, 2] strides = [2, 2] : !t -> tensor<1x2x2x2x1x16xi32>
  %sp = accel.sum_pool2d %wide window = [3, 2] strides = [1, 2] : !t -> tensor<1x2x2x2x1x16xi32>
  %rs = accel.reduce_sum %wide axes = [2, 3] : !t -> tensor<1x2x1x16xi32>
  %kd = accel.reduce_sum %wide axes = [3] : !t -> tensor<1x2x4x1x1x16xi32>
  %p = accel.pad %n pad_value(-1) padding = [1, 0, 0, 2] : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x5x6x1x16x!q>
  %c = accel.concat %n, %n axis = 1 : tensor<1x2x4x4x1x16x!q>, tensor<1x2x4x4x1x16x!q> -> tensor<1x4x4x4x1x16x!q>
  %hp = accel.host_pool2d %n "avg" window = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] clamp(-128, 127) : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x4x4x1x16x!q>
  %rs2 = accel.reshape %n : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x16x1x16x!q>
  %cr = accel.crop %n offsets = [1, 0] : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x3x4x1x16x!q>
  %cl = accel.concat_lanes %n, %n channels = [24, 20] : tensor<1x2x4x4x1x16x!q>, tensor<1x2x4x4x1x16x!q> -> tensor<1x3x4x4x1x16x!q>
  %ds = accel.depth_to_space %n block_size = 2 channels = 8 pad_value = -1 : tensor<1x2x4x4x1x16x!q> -> tensor<1x1x8x8x1x16x!q>
  func.return %n : tensor<1x2x4x4x1x16x!q>
}

// -----

// Per-lane values: one per channel lane (2 blocks of 4 here); the generic form parses too.
// CHECK-LABEL: func.func @per_lane
// CHECK-NEXT:    %m = accel.round_multiply %x by [1, 2, 3, 4, 5, 6, 7, 8] : tensor<1x2x1x4xi32>
// CHECK-NEXT:    %g = accel.max %m by [0] : tensor<1x2x1x4xi32>
func.func @per_lane(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %m = accel.round_multiply %x by [1, 2, 3, 4, 5, 6, 7, 8] : tensor<1x2x1x4xi32>
  %g = "accel.max"(%m) <{value = array<i32: 0>}> : (tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32>
  func.return %g : tensor<1x2x1x4xi32>
}

// -----

// FULLY_CONNECTED without keep_num_dims: the rows of a rank-3 input, flattened.
// CHECK-LABEL: func.func @dense_rows
// CHECK-NEXT:    %rows = accel.dense_zp %x, %w : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<3x1x1x16xi32>
// CHECK-NEXT:    %kept = accel.dense_zp %x, %w : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x3x1x16xi32>
func.func @dense_rows(%x: tensor<1x2x3x1x16xi8>, %w: tensor<1x2x16x16xi8>) -> (tensor<3x1x1x16xi32>, tensor<1x1x3x1x16xi32>) {
  %rows = accel.dense_zp %x, %w : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<3x1x1x16xi32>
  %kept = accel.dense_zp %x, %w : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x3x1x16xi32>
  func.return %rows, %kept : tensor<3x1x1x16xi32>, tensor<1x1x3x1x16xi32>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// A table lookup of packed int8 data (a host step of the program).
// CHECK-LABEL: func.func @lut
// CHECK-NEXT:    %y = accel.lut %x table = [-128, -127, {{.*}}, 126, 127] : tensor<1x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x4x4x1x16xi8>
func.func @lut(%x: tensor<1x2x4x4x1x16x!q>) -> tensor<1x2x4x4x1x16xi8> {
  %y = accel.lut %x table = [-128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127] : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x4x4x1x16xi8>
  func.return %y : tensor<1x2x4x4x1x16xi8>
}

// -----

// A reshape between two layouts in plain order (one channel block; nothing between batch and
// channels): the Flatten of a batch of two 4x4x16 maps, the same bytes.
// CHECK-LABEL: func.func @reshape_plain_order
// CHECK-NEXT:    %y = accel.reshape %x : tensor<2x1x4x4x1x16xi8> -> tensor<2x16x1x16xi8>
func.func @reshape_plain_order(%x: tensor<2x1x4x4x1x16xi8>) -> tensor<2x16x1x16xi8> {
  %y = accel.reshape %x : tensor<2x1x4x4x1x16xi8> -> tensor<2x16x1x16xi8>
  func.return %y : tensor<2x16x1x16xi8>
}

// -----

// Resizes on packed activations: H and W change, batch, channel blocks and lanes stay.
// CHECK-LABEL: func.func @resizes
// CHECK-NEXT:    %n = accel.resize_nearest_neighbor %x align_corners = false half_pixel_centers = true : tensor<2x2x4x4x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<2x2x8x8x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %b = accel.resize_bilinear %n align_corners = true half_pixel_centers = false : tensor<2x2x8x8x1x16x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<2x2x3x5x1x16x!quant.uniform<i8:f32, 0.5:-1>>
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @resizes(%x: tensor<2x2x4x4x1x16x!q>) -> tensor<2x2x3x5x1x16x!q> {
  %n = accel.resize_nearest_neighbor %x align_corners = false half_pixel_centers = true : tensor<2x2x4x4x1x16x!q> -> tensor<2x2x8x8x1x16x!q>
  %b = accel.resize_bilinear %n align_corners = true half_pixel_centers = false : tensor<2x2x8x8x1x16x!q> -> tensor<2x2x3x5x1x16x!q>
  func.return %b : tensor<2x2x3x5x1x16x!q>
}

// -----

// A transposed convolution's tap sum on packed int32 accumulators (9 taps x 11 channels = 7
// blocks into 1).
// CHECK-LABEL: func.func @col2im
// CHECK-NEXT:    %s = accel.col2im %t kernel = [3, 3] strides = [2, 2] padding = [0, 1] channels = 11 : tensor<1x7x8x8x1x16xi32> -> tensor<1x1x16x15x1x16xi32>
func.func @col2im(%t: tensor<1x7x8x8x1x16xi32>) -> tensor<1x1x16x15x1x16xi32> {
  %s = accel.col2im %t kernel = [3, 3] strides = [2, 2] padding = [0, 1] channels = 11 : tensor<1x7x8x8x1x16xi32> -> tensor<1x1x16x15x1x16xi32>
  func.return %s : tensor<1x1x16x15x1x16xi32>
}

// -----

// A layer norm's lane steps: each pixel's lanes summed into lane 0, lane 0 broadcast.
// CHECK-LABEL: func.func @lanes
// CHECK-NEXT:    %s = accel.lane_sum %x : tensor<1x2x16x1x16xi8> -> tensor<1x1x16x1x16xi32>
// CHECK-NEXT:    %b = accel.lane_broadcast %m : tensor<1x1x16x1x16xi8> -> tensor<1x2x16x1x16xi8>
func.func @lanes(%x: tensor<1x2x16x1x16xi8>, %m: tensor<1x1x16x1x16xi8>) -> (tensor<1x1x16x1x16xi32>, tensor<1x2x16x1x16xi8>) {
  %s = accel.lane_sum %x : tensor<1x2x16x1x16xi8> -> tensor<1x1x16x1x16xi32>
  %b = accel.lane_broadcast %m : tensor<1x1x16x1x16xi8> -> tensor<1x2x16x1x16xi8>
  func.return %s, %b : tensor<1x1x16x1x16xi32>, tensor<1x2x16x1x16xi8>
}

// -----

// A BATCH_MATMUL's GEMM-layer operands (batch index 1 of two): the lhs rows as a token image,
// the rhs as weight tiles, and the int32 zero-point correction.
// CHECK-LABEL: func.func @bmm_gemm_operands
// CHECK-NEXT:    %a = accel.bmm_operand %l {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<1x1x6x1x4xi8>
// CHECK-NEXT:    %w = accel.bmm_operand %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x1x4x4xi8>
// CHECK-NEXT:    %c = accel.bmm_zp_correction %l, %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, lhs_zero_point = -3 : i64, rhs_zero_point = 5 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>, tensor<2x1x6x1x4xi8>) -> tensor<1x2x6x1x4xi32>
func.func @bmm_gemm_operands(%l: tensor<2x1x6x1x4xi8>, %r: tensor<2x1x6x1x4xi8>) -> (tensor<1x1x6x1x4xi8>, tensor<2x1x4x4xi8>, tensor<1x2x6x1x4xi32>) {
  %a = accel.bmm_operand %l {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<1x1x6x1x4xi8>
  %w = accel.bmm_operand %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x1x4x4xi8>
  %c = accel.bmm_zp_correction %l, %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, lhs_zero_point = -3 : i64, rhs_zero_point = 5 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 1 : i64} : (tensor<2x1x6x1x4xi8>, tensor<2x1x6x1x4xi8>) -> tensor<1x2x6x1x4xi32>
  func.return %a, %w, %c : tensor<1x1x6x1x4xi8>, tensor<2x1x4x4xi8>, tensor<1x2x6x1x4xi32>
}

// An operand read through relayouts (lhs_view: the plain [2, 6, 3] reshaped to [2, 3, 6], then
// transposed by [0, 2, 1]): the gather reads the value the relayouts read.
// CHECK-LABEL: func.func @bmm_gemm_view
// CHECK-NEXT:    %a = accel.bmm_operand %l {{{.*}}index = 0 : i64, lhs_view = array<i64: 3, 2, 6, 3, 3, 2, 3, 6, 0, 2, 1>} : (tensor<2x1x6x1x4xi8>) -> tensor<1x1x6x1x4xi8>
func.func @bmm_gemm_view(%l: tensor<2x1x6x1x4xi8>) -> tensor<1x1x6x1x4xi8> {
  %a = accel.bmm_operand %l {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 0 : i64, lhs_view = array<i64: 3, 2, 6, 3, 3, 2, 3, 6, 0, 2, 1>} : (tensor<2x1x6x1x4xi8>) -> tensor<1x1x6x1x4xi8>
  func.return %a : tensor<1x1x6x1x4xi8>
}

// The same for every batch index at once (index -1): stacked on a leading dimension, and the
// product of the stacked token images by their own tiles.
// CHECK-LABEL: func.func @bmm_gemm_stacked
// CHECK-NEXT:    %a = accel.bmm_operand %l {{{.*}}index = -1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x1x6x1x4xi8>
// CHECK-NEXT:    %w = accel.bmm_operand %r {{{.*}}index = -1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x2x1x4x4xi8>
// CHECK-NEXT:    %p = accel.dense_zp %a, %w : tensor<2x1x6x1x4xi8>, tensor<2x2x1x4x4xi8> -> tensor<2x2x6x1x4xi32>
// CHECK-NEXT:    %c = accel.bmm_zp_correction %l, %r {{{.*}}index = -1 : i64} : (tensor<2x1x6x1x4xi8>, tensor<2x1x6x1x4xi8>) -> tensor<2x2x6x1x4xi32>
func.func @bmm_gemm_stacked(%l: tensor<2x1x6x1x4xi8>, %r: tensor<2x1x6x1x4xi8>) -> (tensor<2x2x6x1x4xi32>, tensor<2x2x6x1x4xi32>) {
  %a = accel.bmm_operand %l {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x1x6x1x4xi8>
  %w = accel.bmm_operand %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<2x1x6x1x4xi8>) -> tensor<2x2x1x4x4xi8>
  %p = accel.dense_zp %a, %w : tensor<2x1x6x1x4xi8>, tensor<2x2x1x4x4xi8> -> tensor<2x2x6x1x4xi32>
  %c = accel.bmm_zp_correction %l, %r {lhs_shape = array<i64: 2, 6, 3>, rhs_shape = array<i64: 2, 6, 3>, lhs_zero_point = -3 : i64, rhs_zero_point = 5 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<2x1x6x1x4xi8>, tensor<2x1x6x1x4xi8>) -> tensor<2x2x6x1x4xi32>
  func.return %p, %c : tensor<2x2x6x1x4xi32>, tensor<2x2x6x1x4xi32>
}
