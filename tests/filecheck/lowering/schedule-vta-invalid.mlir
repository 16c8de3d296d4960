// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p 'attach-target,schedule-vta' | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p 'schedule-vta{bias-mode=fast}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not qaccel-opt %s --split-input-file -p schedule-vta 2>&1 | filecheck %s --check-prefix=NOTARGET
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target,schedule-vta{bias-mode=store}' 2>&1 | filecheck %s --check-prefix=STORE

// Options and hand-written schedules that cannot be used: one line naming the pass, the
// function, the op and the layer, and why.

// MODE: qaccel-opt: error: schedule-vta: bias-mode must be one of alu, dma, gemm, store, got 'fast'
// STORE: qaccel-opt: error: schedule-vta: bias-mode=store needs a hardware config with store_requant ('vta-default' has none)
// NOTARGET: qaccel-opt: error: schedule-vta: the module has no accel.target: run attach-target{target=vta} first (vta-pipeline does)

// A tile of 64x64 output pixels needs 4096 accumulator rows; the buffer has 2048.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @too_large(%x: tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa>
  func.return %y : tensor<1x1x64x64x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 64 : i64, tile_w = 64 : i64, tile_co = 1 : i64, tile_ci = 1 : i64}} : tensor<1x1x64x64x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x64x64x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x64x64x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x64x64x1x16xi32> -> tensor<1x1x64x64x1x16x!qa>
  func.return %y : tensor<1x1x64x64x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: accel.conv2d_zp (conv 64x64x16 -> 64x64x16 k1x1 s1 p[0, 0, 0, 0]): tile 64x64 x 1 co x 1 ci blocks does not fit on chip

// -----

// A schedule made for another hardware configuration.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @other_config(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {config = "my-npu", tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64}} : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: accel.conv2d_zp (conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]): qaccel.schedule was made for hardware config 'my-npu', not 'vta-default'

// -----

// A tile size missing.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @missing_field(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 1 : i64, tile_co = 1 : i64, tile_ci = 1 : i64}} : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: accel.conv2d_zp (conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]): qaccel.schedule lacks tile_w

// -----

// A loop order that does not exist.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @bad_order(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "zigzag"}} : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: accel.conv2d_zp (conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]): qaccel.schedule.loop_order must be one of spatial, channel

// -----

// A field the scheduler does not know.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @unknown_field(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, unroll = 4 : i64}} : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: accel.conv2d_zp (conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]): qaccel.schedule has unknown fields unroll
