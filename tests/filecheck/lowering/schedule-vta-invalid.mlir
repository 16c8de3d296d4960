// RUN: qaccel-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics -p 'attach-target,schedule-vta' | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p 'schedule-vta{bias-mode=fast}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not qaccel-opt %s --split-input-file -p schedule-vta 2>&1 | filecheck %s --check-prefix=NOTARGET
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target,schedule-vta{bias-mode=store}' 2>&1 | filecheck %s --check-prefix=STORE

// Options and hand-written schedules that cannot be used: one line naming the pass, the
// function, the layer, and why; a schedule that is malformed in itself is rejected when the
// IR is read, naming the attribute and the field.

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
  %y = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 64, tile_w = 64, tile_co = 1, tile_ci = 1> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x64x64x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x64x64x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x64x64x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x64x64x1x16xi32> -> tensor<1x1x64x64x1x16x!qa>
    vta.yield %n : tensor<1x1x64x64x1x16x!qa>
  } : tensor<1x1x64x64x1x16x!qa>
  func.return %y : tensor<1x1x64x64x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "conv" (conv 64x64x16 -> 64x64x16 k1x1 s1 p[0, 0, 0, 0]): tile 64x64 x 1 co x 1 ci blocks does not fit on chip

// -----

// A schedule made for another hardware configuration.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @other_config(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "my-npu", tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "conv" (conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]): #vta.gemm_schedule was made for hardware config 'my-npu', not 'vta-default'

// -----

// A tile size missing.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @missing_field(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %y = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_co = 1, tile_ci = 1> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.gemm_schedule: a gemm schedule lacks tile_w

// -----

// A loop order that does not exist.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @bad_order(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %y = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = zigzag> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.gemm_schedule: loop_order must be one of spatial, channel, not 'zigzag'

// -----

// A field of another kind of schedule.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @other_kind_field(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %y = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1, rows = 4> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.gemm_schedule: unknown field 'rows' (fields: config, tile_h, tile_w, tile_co, tile_ci, loop_order, bias_mode, inp_slots, wgt_slots, acc_slots, estimated_cycles)

// -----

// Chunks of 2048 rows: two sets of temps do not fit in the 2048 accumulator rows.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @too_many_rows(%x: tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa>
  func.return %y : tensor<1x1x64x64x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x64x64x1x16x!qa>) -> tensor<1x1x64x64x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 2048> {
    %v = accel.widen %x : tensor<1x1x64x64x1x16x!qa> -> tensor<1x1x64x64x1x16xi32>
    %m = accel.round_multiply %v by [1073741824] : tensor<1x1x64x64x1x16xi32>
    %a = accel.max %m by [0] : tensor<1x1x64x64x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x64x64x1x16xi32> -> tensor<1x1x64x64x1x16x!qa>
    vta.yield %n : tensor<1x1x64x64x1x16x!qa>
  } : tensor<1x1x64x64x1x16x!qa>
  func.return %y : tensor<1x1x64x64x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "eltwise" (eltwise 4096 px x 16 ch, 1 input(s), 2 ALU ops (max rdmul)): vta_fn_0_eltwise0: chunks of 2048 rows do not fit (at most 1023)

// -----

// The output stage on a configuration without one.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @no_output_stage(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 64, output_stage = true> {
    %v = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %v by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %a = accel.max %m by [0] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "eltwise" ({{.*}}): vta_fn_0_eltwise0: the store module's output stage cannot run the layer's tail (no store_requant, or not a requantization)

// -----

// Parameter rows that are not the layer's.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @param_rows(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 64, param_rows = 5> {
    %v = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %v by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %a = accel.max %m by [0] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "eltwise" ({{.*}}): param_rows 5: the layer loads 1 parameter rows

// -----

// A batch of two images: the schedule is one image's loop nest, checked as for one image
// (the message names the batch).
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @batch_too_large(%x: tensor<2x1x64x64x1x16x!qa>) -> tensor<2x1x64x64x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<2x1x64x64x1x16x!qa>) -> tensor<2x1x64x64x1x16x!qa>
  func.return %y : tensor<2x1x64x64x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<2x1x64x64x1x16x!qa>) -> tensor<2x1x64x64x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %y = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 64, tile_w = 64, tile_co = 1, tile_ci = 1> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<2x1x64x64x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<2x1x64x64x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<2x1x64x64x1x16xi32>
    %n = accel.narrow %m : tensor<2x1x64x64x1x16xi32> -> tensor<2x1x64x64x1x16x!qa>
    vta.yield %n : tensor<2x1x64x64x1x16x!qa>
  } : tensor<2x1x64x64x1x16x!qa>
  func.return %y : tensor<2x1x64x64x1x16x!qa>
}
// CHECK: schedule-vta: @vta_fn_0: vta.layer "conv" (conv 2x64x64x16 -> 64x64x16 k1x1 s1 p[0, 0, 0, 0]): tile 64x64 x 1 co x 1 ci blocks does not fit on chip
