// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @wrong_result_shape(%x: tensor<1x4x4x20xi8>) -> tensor<1x1x4x4x1x16xi8> {
  %p = accel.pack %x padding_value(0) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x4x4x20xi8> -> tensor<1x1x4x4x1x16xi8>
  func.return %p : tensor<1x1x4x4x1x16xi8>
}
// CHECK: accel.pack: packing [1, 4, 4, 20] gives [1, 2, 4, 4, 1, 16], not [1, 1, 4, 4, 1, 16]

// -----

func.func @not_a_permutation(%x: tensor<1x4x4x16xi8>) -> tensor<1x1x4x4x1x16xi8> {
  %p = accel.pack %x outer_dims_perm = [0, 3, 1, 1] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x4x4x16xi8> -> tensor<1x1x4x4x1x16xi8>
  func.return %p : tensor<1x1x4x4x1x16xi8>
}
// CHECK: accel.pack: outer_dims_perm [0, 3, 1, 1] is not a permutation of 4 dimensions

// -----

func.func @perm_rank(%x: tensor<4x16xi8>) -> tensor<4x1x1x16xi8> {
  %p = accel.pack %x outer_dims_perm = [0, 1, 2] inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<4x16xi8> -> tensor<4x1x1x16xi8>
  func.return %p : tensor<4x1x1x16xi8>
}
// CHECK: accel.pack: outer_dims_perm has 3 entries for a rank-2 tensor

// -----

func.func @tile_count(%x: tensor<4x16xi8>) -> tensor<4x1x16xi8> {
  %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [16] : tensor<4x16xi8> -> tensor<4x1x16xi8>
  func.return %p : tensor<4x1x16xi8>
}
// CHECK: accel.pack: 2 inner_dims_pos but 1 inner_tiles

// -----

func.func @repeated_dim(%x: tensor<4x16xi8>) -> tensor<4x1x16x16xi8> {
  %p = accel.pack %x inner_dims_pos = [1, 1] inner_tiles = [16, 16] : tensor<4x16xi8> -> tensor<4x1x16x16xi8>
  func.return %p : tensor<4x1x16x16xi8>
}
// CHECK: accel.pack: inner_dims_pos [1, 1] must be distinct dimensions below 2

// -----

func.func @zero_tile(%x: tensor<4x16xi8>) -> tensor<4x1x0xi8> {
  %p = accel.pack %x inner_dims_pos = [1] inner_tiles = [0] : tensor<4x16xi8> -> tensor<4x1x0xi8>
  func.return %p : tensor<4x1x0xi8>
}
// CHECK: accel.pack: inner_tiles [0] must be positive

// -----

func.func @needs_padding_value(%x: tensor<1x20xi8>) -> tensor<1x2x1x16xi8> {
  %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<1x20xi8> -> tensor<1x2x1x16xi8>
  func.return %p : tensor<1x2x1x16xi8>
}
// CHECK: accel.pack: needs a padding_value: a tiled dimension is not a multiple of its tile

// -----

func.func @padding_value_range(%x: tensor<1x20xi8>) -> tensor<1x2x1x16xi8> {
  %p = accel.pack %x padding_value(200) inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<1x20xi8> -> tensor<1x2x1x16xi8>
  func.return %p : tensor<1x2x1x16xi8>
}
// CHECK: accel.pack: padding_value 200 does not fit the storage type i8 [-128, 127]

// -----

func.func @element_type(%x: tensor<1x16xi8>) -> tensor<1x1x1x16xi32> {
  %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<1x16xi8> -> tensor<1x1x1x16xi32>
  func.return %p : tensor<1x1x1x16xi32>
}
// CHECK: accel.pack: element types differ (i8 and i32)

// -----

func.func @float(%x: tensor<1x16xf32>) -> tensor<1x1x1x16xf32> {
  %p = accel.pack %x inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<1x16xf32> -> tensor<1x1x1x16xf32>
  func.return %p : tensor<1x1x1x16xf32>
}
// CHECK: accel.pack: packs integer or quantized tensors, not f32

// -----

func.func @unpack_shape(%p: tensor<1x2x1x16xi8>) -> tensor<1x40xi8> {
  %x = accel.unpack %p inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<1x2x1x16xi8> -> tensor<1x40xi8>
  func.return %x : tensor<1x40xi8>
}
// CHECK: accel.unpack: packing [1, 40] gives [1, 3, 1, 16], not [1, 2, 1, 16]

// -----

func.func @dynamic(%p: tensor<?x2x1x16xi8>) -> tensor<?x20xi8> {
  %x = accel.unpack %p inner_dims_pos = [0, 1] inner_tiles = [1, 16] : tensor<?x2x1x16xi8> -> tensor<?x20xi8>
  func.return %x : tensor<?x20xi8>
}
// CHECK: accel.unpack: needs static shapes

// -----

// Compute ops.

func.func @lane_count(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %y = accel.round_multiply %x by [1, 2, 3] : tensor<1x2x1x4xi32>
  func.return %y : tensor<1x2x1x4xi32>
}
// CHECK: accel.round_multiply: multiplier has 3 values; needs 1 (per tensor) or 8 (per lane: 2 blocks of 4)

// -----

func.func @shift_range(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %y = accel.round_rshift %x by [32] : tensor<1x2x1x4xi32>
  func.return %y : tensor<1x2x1x4xi32>
}
// CHECK: accel.round_rshift: shift must be in [0, 31], got values in [32, 32]

// -----

func.func @left_shift_range(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %y = accel.shift_left %x by [-1] : tensor<1x2x1x4xi32>
  func.return %y : tensor<1x2x1x4xi32>
}
// CHECK: accel.shift_left: shift must be in [0, 31], got values in [-1, -1]

// -----

func.func @alu_on_int8(%x: tensor<1x2x1x4xi8>) -> tensor<1x2x1x4xi8> {
  %y = accel.add %x by [1] : tensor<1x2x1x4xi8>
  func.return %y : tensor<1x2x1x4xi8>
}
// CHECK: accel.add: lhs must hold 32-bit integers, got i8

// -----

func.func @not_packed(%x: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %y = accel.max %x by [1] : tensor<4x4xi32>
  func.return %y : tensor<4x4xi32>
}
// CHECK: accel.max: lhs must be a static packed activation [N, C/B, ..., 1, B], got [4, 4]

// -----

func.func @both_operands(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %y = accel.min %x, %x by [1] : tensor<1x2x1x4xi32>, tensor<1x2x1x4xi32>
  func.return %y : tensor<1x2x1x4xi32>
}
// CHECK: accel.min: needs either a tensor rhs or a constant (by)

// -----

func.func @broadcast_lanes(%x: tensor<1x2x2x2x1x4xi32>, %r: tensor<1x2x2x2x1x1xi32>) -> tensor<1x2x2x2x1x4xi32> {
  %y = accel.mul %x, %r : tensor<1x2x2x2x1x4xi32>, tensor<1x2x2x2x1x1xi32>
  func.return %y : tensor<1x2x2x2x1x4xi32>
}
// CHECK: accel.mul: rhs [1, 2, 2, 2, 1, 1] does not broadcast to lhs [1, 2, 2, 2, 1, 4] (same rank, each dimension equal or 1, whole blocks)

// -----

func.func @narrow_to_int32(%x: tensor<1x2x1x4xi32>) -> tensor<1x2x1x4xi32> {
  %y = accel.narrow %x : tensor<1x2x1x4xi32> -> tensor<1x2x1x4xi32>
  func.return %y : tensor<1x2x1x4xi32>
}
// CHECK: accel.narrow: the result must hold integers narrower than 32 bits, got i32

// -----

func.func @conv_shape(%x: tensor<1x1x4x4x1x4xi8>, %w: tensor<2x1x3x3x4x4xi8>) -> tensor<1x2x4x4x1x4xi32> {
  %y = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x4x4x1x4xi8>, tensor<2x1x3x3x4x4xi8> -> tensor<1x2x4x4x1x4xi32>
  func.return %y : tensor<1x2x4x4x1x4xi32>
}
// CHECK: accel.conv2d_zp: the result must be [1, 2, 2, 2, 1, 4], got [1, 2, 4, 4, 1, 4]

// -----

func.func @dense_rows(%x: tensor<1x2x3x1x16xi8>, %w: tensor<1x2x16x16xi8>) -> tensor<1x1x1x16xi32> {
  %y = accel.dense_zp %x, %w : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x1x16xi32>
  func.return %y : tensor<1x1x1x16xi32>
}
// CHECK: accel.dense_zp: the result must be [1, 1, 3, 1, 16] or, rows flattened, [3, 1, 1, 16], got [1, 1, 1, 16]

// -----

func.func @conv_groups(%x: tensor<1x2x4x4x1x4xi8>, %w: tensor<3x1x1x1x4x4xi8>) -> tensor<1x3x4x4x1x4xi32> {
  %y = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 : tensor<1x2x4x4x1x4xi8>, tensor<3x1x1x1x4x4xi8> -> tensor<1x3x4x4x1x4xi32>
  func.return %y : tensor<1x3x4x4x1x4xi32>
}
// CHECK: accel.conv2d_zp: 2 groups do not split 2 input blocks into groups of 1 and 3 output blocks evenly

// -----

func.func @conv_pad_value(%x: tensor<1x1x4x4x1x4xi8>, %w: tensor<1x1x1x1x4x4xi8>) -> tensor<1x1x4x4x1x4xi32> {
  %y = accel.conv2d_zp %x, %w pad_value(128) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x4x4x1x4xi8>, tensor<1x1x1x1x4x4xi8> -> tensor<1x1x4x4x1x4xi32>
  func.return %y : tensor<1x1x4x4x1x4xi32>
}
// CHECK: accel.conv2d_zp: pad_value 128 does not fit the input's storage [-128, 127]

// -----

func.func @dense_filter(%x: tensor<1x2x1x4xi8>, %w: tensor<1x1x4x4xi8>) -> tensor<1x1x1x4xi32> {
  %y = accel.dense_zp %x, %w : tensor<1x2x1x4xi8>, tensor<1x1x4x4xi8> -> tensor<1x1x1x4xi32>
  func.return %y : tensor<1x1x1x4xi32>
}
// CHECK: accel.dense_zp: the filter must be int8 [O/B, 2, 4, 4] tiles for this input, got tensor<1x1x4x4xi8>

// -----

func.func @host_clamp(%x: tensor<1x1x1x4xi32>) -> tensor<1x1x1x4xi8> {
  %y = accel.host_requantize %x scale = [0.5] zero_points(0, 0) clamp(10, -10) : tensor<1x1x1x4xi32> -> tensor<1x1x1x4xi8>
  func.return %y : tensor<1x1x1x4xi8>
}
// CHECK: accel.host_requantize: clamp [10, -10] must be ordered and within the result's storage [-128, 127]

// -----

func.func @pool_shape(%x: tensor<1x1x4x4x1x4xi32>) -> tensor<1x1x3x3x1x4xi32> {
  %y = accel.max_pool2d %x window = [2, 2] strides = [2, 2] : tensor<1x1x4x4x1x4xi32> -> tensor<1x1x3x3x1x4xi32>
  func.return %y : tensor<1x1x3x3x1x4xi32>
}
// CHECK: accel.max_pool2d: the result must be [1, 1, 2, 2, 1, 4], got [1, 1, 3, 3, 1, 4]

// -----

func.func @reduce_lanes(%x: tensor<1x1x4x4x1x4xi32>) -> tensor<1x1x4x4x1x1xi32> {
  %y = accel.reduce_sum %x axes = [5] : tensor<1x1x4x4x1x4xi32> -> tensor<1x1x4x4x1x1xi32>
  func.return %y : tensor<1x1x4x4x1x1xi32>
}
// CHECK: accel.reduce_sum: axes [5] must be distinct spatial dimensions in [2, 3] (lanes and blocks never mix)

// -----

func.func @pad_count(%x: tensor<1x1x4x4x1x4xi8>) -> tensor<1x1x5x4x1x4xi8> {
  %y = accel.pad %x pad_value(0) padding = [1, 0] : tensor<1x1x4x4x1x4xi8> -> tensor<1x1x5x4x1x4xi8>
  func.return %y : tensor<1x1x5x4x1x4xi8>
}
// CHECK: accel.pad: padding needs 4 non-negative values (before, after per spatial dimension), got [1, 0]

// -----

func.func @concat_inside_block(%x: tensor<1x1x4x4x1x4xi8>) -> tensor<1x1x4x4x1x8xi8> {
  %y = accel.concat %x, %x axis = 5 : tensor<1x1x4x4x1x4xi8>, tensor<1x1x4x4x1x4xi8> -> tensor<1x1x4x4x1x8xi8>
  func.return %y : tensor<1x1x4x4x1x8xi8>
}
// CHECK: accel.concat: axis 5 must be in [0, 3] (not inside a block)

// -----

func.func @lut_of_accumulators(%x: tensor<1x1x4x4x1x16xi32>) {
  %y = accel.lut %x table = [-128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127] : tensor<1x1x4x4x1x16xi32> -> tensor<1x1x4x4x1x16xi8>
  func.return
}
// CHECK: accel.lut: the input must hold 8-bit integers, got i32

// -----

func.func @lut_short_table(%x: tensor<1x1x4x4x1x16xi8>) {
  %y = accel.lut %x table = [1, 2, 3] : tensor<1x1x4x4x1x16xi8> -> tensor<1x1x4x4x1x16xi8>
  func.return
}
// CHECK: accel.lut: table needs 256 values, got 3

// -----

func.func @lut_shape_changes(%x: tensor<1x1x4x4x1x16xi8>) {
  %y = accel.lut %x table = [-128, -127, -126, -125, -124, -123, -122, -121, -120, -119, -118, -117, -116, -115, -114, -113, -112, -111, -110, -109, -108, -107, -106, -105, -104, -103, -102, -101, -100, -99, -98, -97, -96, -95, -94, -93, -92, -91, -90, -89, -88, -87, -86, -85, -84, -83, -82, -81, -80, -79, -78, -77, -76, -75, -74, -73, -72, -71, -70, -69, -68, -67, -66, -65, -64, -63, -62, -61, -60, -59, -58, -57, -56, -55, -54, -53, -52, -51, -50, -49, -48, -47, -46, -45, -44, -43, -42, -41, -40, -39, -38, -37, -36, -35, -34, -33, -32, -31, -30, -29, -28, -27, -26, -25, -24, -23, -22, -21, -20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10, -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124, 125, 126, 127] : tensor<1x1x4x4x1x16xi8> -> tensor<1x1x2x8x1x16xi8>
  func.return
}
// CHECK: accel.lut: {{.*}}

// -----

func.func @concat_lanes_count(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x3x4x4x1x4xi8> {
  %y = accel.concat_lanes %x, %x channels = [6] : tensor<1x2x4x4x1x4xi8>, tensor<1x2x4x4x1x4xi8> -> tensor<1x3x4x4x1x4xi8>
  func.return %y : tensor<1x3x4x4x1x4xi8>
}
// CHECK: accel.concat_lanes: needs one channel count per input (2 inputs, 1 counts)

// -----

func.func @concat_lanes_input_blocks(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x3x4x4x1x4xi8> {
  %y = accel.concat_lanes %x, %x channels = [3, 6] : tensor<1x2x4x4x1x4xi8>, tensor<1x2x4x4x1x4xi8> -> tensor<1x3x4x4x1x4xi8>
  func.return %y : tensor<1x3x4x4x1x4xi8>
}
// CHECK: accel.concat_lanes: input 0 has 2 channel blocks of 4, which cannot hold 3 channels

// -----

func.func @concat_lanes_result_blocks(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x4x4x4x1x4xi8> {
  %y = accel.concat_lanes %x, %x channels = [6, 6] : tensor<1x2x4x4x1x4xi8>, tensor<1x2x4x4x1x4xi8> -> tensor<1x4x4x4x1x4xi8>
  func.return %y : tensor<1x4x4x4x1x4xi8>
}
// CHECK: accel.concat_lanes: 12 channels need 3 blocks of 4, the result has 4

// -----

func.func @concat_lanes_spatial(%x: tensor<1x2x4x4x1x4xi8>, %z: tensor<1x2x4x2x1x4xi8>) -> tensor<1x3x4x4x1x4xi8> {
  %y = accel.concat_lanes %x, %z channels = [6, 6] : tensor<1x2x4x4x1x4xi8>, tensor<1x2x4x2x1x4xi8> -> tensor<1x3x4x4x1x4xi8>
  func.return %y : tensor<1x3x4x4x1x4xi8>
}
// CHECK: accel.concat_lanes: input 1 [1, 2, 4, 2, 1, 4] differs from the result [1, 3, 4, 4, 1, 4] outside the channel blocks

// -----

func.func @host_pool_kind(%x: tensor<1x1x4x4x1x4xi8>) -> tensor<1x1x2x2x1x4xi8> {
  %y = accel.host_pool2d %x "min" window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] clamp(-128, 127) : tensor<1x1x4x4x1x4xi8> -> tensor<1x1x2x2x1x4xi8>
  func.return %y : tensor<1x1x2x2x1x4xi8>
}
// CHECK: accel.host_pool2d: kind 'min' is not max or avg

// -----

func.func @host_pool_padding(%x: tensor<1x1x4x4x1x4xi8>) -> tensor<1x1x3x3x1x4xi8> {
  %y = accel.host_pool2d %x "avg" window = [2, 2] strides = [2, 2] padding = [2, 0, 0, 2] clamp(-128, 127) : tensor<1x1x4x4x1x4xi8> -> tensor<1x1x3x3x1x4xi8>
  func.return %y : tensor<1x1x3x3x1x4xi8>
}
// CHECK: accel.host_pool2d: padding needs 4 values (top, bottom, left, right), each smaller than the window (no window entirely in the padding), got [2, 0, 0, 2]

// -----

func.func @host_pool_shape(%x: tensor<1x1x4x4x1x4xi8>) -> tensor<1x1x4x4x1x4xi8> {
  %y = accel.host_pool2d %x "max" window = [3, 3] strides = [1, 1] padding = [0, 0, 0, 0] clamp(-128, 127) : tensor<1x1x4x4x1x4xi8> -> tensor<1x1x4x4x1x4xi8>
  func.return %y : tensor<1x1x4x4x1x4xi8>
}
// CHECK: accel.host_pool2d: the result must be [1, 1, 2, 2, 1, 4], got [1, 1, 4, 4, 1, 4]

// -----

func.func @host_pool_wide(%x: tensor<1x1x4x4x1x4xi32>) -> tensor<1x1x2x2x1x4xi32> {
  %y = accel.host_pool2d %x "max" window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] clamp(-128, 127) : tensor<1x1x4x4x1x4xi32> -> tensor<1x1x2x2x1x4xi32>
  func.return %y : tensor<1x1x2x2x1x4xi32>
}
// CHECK: accel.host_pool2d: the input must hold 8-bit integers, got i32

// -----

func.func @reshape_moves_lanes(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x1x8x4x1x4xi8> {
  %y = accel.reshape %x : tensor<1x2x4x4x1x4xi8> -> tensor<1x1x8x4x1x4xi8>
  func.return %y : tensor<1x1x8x4x1x4xi8>
}
// CHECK: accel.reshape: [1, 2, 4, 4, 1, 4] -> [1, 1, 8, 4, 1, 4] must keep the batch, the lanes and the number of elements, and the channel blocks unless both are in plain order (nothing moves)

// -----

// Both layouts in plain order, but the batch changes.
func.func @reshape_moves_batch(%x: tensor<2x1x4x4x1x16xi8>) -> tensor<1x32x1x16xi8> {
  %y = accel.reshape %x : tensor<2x1x4x4x1x16xi8> -> tensor<1x32x1x16xi8>
  func.return %y : tensor<1x32x1x16xi8>
}
// CHECK: accel.reshape: [2, 1, 4, 4, 1, 16] -> [1, 32, 1, 16] must keep the batch, the lanes and the number of elements, and the channel blocks unless both are in plain order (nothing moves)

// -----

func.func @crop_outside(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x2x3x3x1x4xi8> {
  %y = accel.crop %x offsets = [2, 0] : tensor<1x2x4x4x1x4xi8> -> tensor<1x2x3x3x1x4xi8>
  func.return %y : tensor<1x2x3x3x1x4xi8>
}
// CHECK: accel.crop: a [1, 2, 3, 3, 1, 4] box at spatial offsets [2, 0] does not lie inside [1, 2, 4, 4, 1, 4] with its batch, channel blocks and lanes

// -----

func.func @depth_to_space_blocks(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x2x8x8x1x4xi8> {
  %y = accel.depth_to_space %x block_size = 2 channels = 2 pad_value = 0 : tensor<1x2x4x4x1x4xi8> -> tensor<1x2x8x8x1x4xi8>
  func.return %y : tensor<1x2x8x8x1x4xi8>
}
// CHECK: accel.depth_to_space: [1, 2, 8, 8, 1, 4] is not [1, 2, 4, 4, 1, 4] with 2x2 blocks of 2 channels moved into pixels

// -----

func.func @lane_sum_blocks(%x: tensor<1x2x16x1x16xi8>) -> tensor<1x2x16x1x16xi32> {
  %y = accel.lane_sum %x : tensor<1x2x16x1x16xi8> -> tensor<1x2x16x1x16xi32>
  func.return %y : tensor<1x2x16x1x16xi32>
}
// CHECK: accel.lane_sum: the result must be [1, 1, 16, 1, 16], got [1, 2, 16, 1, 16]

// -----

func.func @lane_broadcast_blocks(%x: tensor<1x2x16x1x16xi8>) -> tensor<1x2x16x1x16xi8> {
  %y = accel.lane_broadcast %x : tensor<1x2x16x1x16xi8> -> tensor<1x2x16x1x16xi8>
  func.return %y : tensor<1x2x16x1x16xi8>
}
// CHECK: accel.lane_broadcast: [1, 2, 16, 1, 16] is not [1, 2, 16, 1, 16] (one channel block) with its lane 0 broadcast over the channel blocks

// -----

func.func @resize_blocks(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x1x8x8x1x4xi8> {
  %y = accel.resize_nearest_neighbor %x align_corners = false half_pixel_centers = false : tensor<1x2x4x4x1x4xi8> -> tensor<1x1x8x8x1x4xi8>
  func.return %y : tensor<1x1x8x8x1x4xi8>
}
// CHECK: accel.resize_nearest_neighbor: [1, 1, 8, 8, 1, 4] is not [1, 2, 4, 4, 1, 4] resized in H and W

// -----

func.func @resize_wide(%x: tensor<1x2x4x4x1x4xi32>) -> tensor<1x2x8x8x1x4xi32> {
  %y = accel.resize_bilinear %x align_corners = false half_pixel_centers = false : tensor<1x2x4x4x1x4xi32> -> tensor<1x2x8x8x1x4xi32>
  func.return %y : tensor<1x2x8x8x1x4xi32>
}
// CHECK: accel.resize_bilinear: the input must hold integers narrower than 32 bits, got i32

// -----

func.func @resize_flags(%x: tensor<1x2x4x4x1x4xi8>) -> tensor<1x2x8x8x1x4xi8> {
  %y = accel.resize_bilinear %x align_corners = true half_pixel_centers = true : tensor<1x2x4x4x1x4xi8> -> tensor<1x2x8x8x1x4xi8>
  func.return %y : tensor<1x2x8x8x1x4xi8>
}
// CHECK: accel.resize_bilinear: align_corners and half_pixel_centers cannot both be true

// -----

func.func @col2im_blocks(%t: tensor<1x6x8x8x1x16xi32>) -> tensor<1x1x16x16x1x16xi32> {
  %s = accel.col2im %t kernel = [3, 3] strides = [2, 2] padding = [0, 0] channels = 11 : tensor<1x6x8x8x1x16xi32> -> tensor<1x1x16x16x1x16xi32>
  func.return %s : tensor<1x1x16x16x1x16xi32>
}
// CHECK: accel.col2im: [1, 1, 16, 16, 1, 16] does not take the 3x3 taps of 11 channels of [1, 6, 8, 8, 1, 16]

// -----

func.func @col2im_int8(%t: tensor<1x7x8x8x1x16xi8>) -> tensor<1x1x16x16x1x16xi32> {
  %s = accel.col2im %t kernel = [3, 3] strides = [2, 2] padding = [0, 0] channels = 11 : tensor<1x7x8x8x1x16xi8> -> tensor<1x1x16x16x1x16xi32>
  func.return %s : tensor<1x1x16x16x1x16xi32>
}
// CHECK: accel.col2im: the input must hold 32-bit integers, got i8

// -----

func.func @col2im_strides(%t: tensor<1x7x8x8x1x16xi32>) -> tensor<1x1x16x16x1x16xi32> {
  %s = accel.col2im %t kernel = [3, 3] strides = [0, 2] padding = [0, 0] channels = 11 : tensor<1x7x8x8x1x16xi32> -> tensor<1x1x16x16x1x16xi32>
  func.return %s : tensor<1x1x16x16x1x16xi32>
}
// CHECK: accel.col2im: kernel, strides (positive) and padding (not negative) need 2 values each
