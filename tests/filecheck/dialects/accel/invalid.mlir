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
