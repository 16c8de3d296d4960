// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers,schedule-vta' | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers,schedule-vta{bias-mode=dma}' | filecheck %s --check-prefix=DMA
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers,schedule-vta{recompute=true}' | filecheck %s --check-prefix=RECOMPUTE
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config=vta-store-requant},insert-pack-unpack,lower-q-to-accel,form-vta-layers,schedule-vta' | filecheck %s --check-prefix=RQ
// Scheduling twice is scheduling once:
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers,schedule-vta,schedule-vta' | filecheck %s

// schedule-vta gives every formed accelerator layer (`vta.layer`, form-vta-layers) an
// `#vta.<kind>_schedule`. A GEMM layer's is its loop nest: tile sizes (output rows and columns in
// pixels, output and input channels in blocks of 16), the order of the outer loops, the bias
// mode and the slots that double-buffer each on-chip buffer. An element-wise or pool layer's
// is the rows of a channel block it processes at a time, the parameter rows it loads first and
// whether the store module's output stage runs its requantizing tail.
// --verify-semantics checks that the attribute changes nothing the IR computes.

// A 3x3 convolution (8x8x6 -> 8x8x6, one channel block) with bias, per-channel
// requantization and relu: one layer. The search tiles 2 output rows at a time, 4 input
// frames in flight, and adds the bias with a one-cycle GEMM; forced to DMA the bias, it
// picks 4-row tiles.
// CHECK-LABEL: func.func @conv
// CHECK:       func.func private @vta_fn_0
// CHECK:         %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = gemm, inp_slots = 4, wgt_slots = 1, acc_slots = 2, estimated_cycles = {{[0-9]+}}> {
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] :
// CHECK-NEXT:      %bias = accel.bias_add_zp %acc
// DMA-LABEL:   func.func @conv
// DMA:           vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 4, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = dma, inp_slots = 2, wgt_slots = 1, acc_slots = 2, estimated_cycles = {{[0-9]+}}>
// With the store module's output stage the tail leaves the compute module: bias mode "store".
// RQ-LABEL:    func.func @conv
// RQ:            vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-store-requant", {{.*}}bias_mode = store
// RECOMPUTE-LABEL: func.func @conv
// RECOMPUTE:       vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, {{.*}}bias_mode = gemm
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0, 0.5:0, 0.6:0}>
func.func @conv(%x: tensor<1x8x8x6x!qi>) -> tensor<1x8x8x6x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x8x8x6x!qi>) -> tensor<1x8x8x6x!qo>
  func.return %y : tensor<1x8x8x6x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x8x8x6x!qi>) -> tensor<1x8x8x6x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<6x3x3x6xi8> -> tensor<6x3x3x6x!w>
  %b = tfl.const dense<[100, -200, 300, -400, 500, -600]> : tensor<6xi32> -> tensor<6xi32>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x6x!qi>, tensor<6x3x3x6x!w>) -> tensor<1x8x8x6xi32>
  %bias = q.bias_add %acc, %b : (tensor<1x8x8x6xi32>, tensor<6xi32>) -> tensor<1x8x8x6xi32>
  %r = q.requantize %bias {multiplier = array<i32: 1073741824, 1288490189, 1503238554, 1717986918, 1932735283, 2147483647>, shift = array<i32: -3, -4, -5, -6, -7, -8>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x8x8x6xi32>) -> tensor<1x8x8x6x!qo>
  %y = q.relu %r {min = 3 : i32, max = 127 : i32} : (tensor<1x8x8x6x!qo>) -> tensor<1x8x8x6x!qo>
  func.return %y : tensor<1x8x8x6x!qo>
}

// -----

// A residual add: all 4 rows of its one channel block in one chunk, its 2 per-tensor
// multipliers (too wide for an immediate) as parameter rows, the tail on the ALU; with the
// store module's output stage, the final requantization (rounding multiply, shift, clamp,
// zero point) moves into it, adding its 4 parameter rows.
// CHECK-LABEL: func.func @add
// CHECK:         %s = vta.layer "eltwise" schedule #vta.eltwise_schedule<config = "vta-default", rows = 4, param_rows = 3, output_stage = false, estimated_cycles = {{[0-9]+}}> {
// CHECK-NEXT:      accel.widen %x
// RQ-LABEL:    func.func @add
// RQ:            %s = vta.layer "eltwise" schedule #vta.eltwise_schedule<config = "vta-store-requant", rows = 4, param_rows = 7, output_stage = true, estimated_cycles = {{[0-9]+}}> {
!a = !quant.uniform<i8:f32, 0.5:-34>
!b = !quant.uniform<i8:f32, 0.25:-2>
!o = !quant.uniform<i8:f32, 0.75:-128>
func.func @add(%x: tensor<1x2x2x6x!a>, %y: tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o> {
  %z = func.call @vta_fn_0(%x, %y) : (tensor<1x2x2x6x!a>, tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o>
  func.return %z : tensor<1x2x2x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!a>, %y: tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o> attributes {qaccel.target = "vta"} {
  %s = q.add %x, %y {lhs_zero_point = -34 : i32, rhs_zero_point = -2 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1925241870 : i32, rhs_shift = -1 : i32, output_multiplier = 1701543333 : i32, output_shift = -18 : i32, output_zero_point = -128 : i32} : (tensor<1x2x2x6x!a>, tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o>
  func.return %s : tensor<1x2x2x6x!o>
}

// -----

// A 2x2 max pool: both output rows in one tile, no parameter rows.
// CHECK-LABEL: func.func @pool
// CHECK:         %m = vta.layer "pool" schedule #vta.pool_schedule<config = "vta-default", rows = 2, param_rows = 0, output_stage = false, estimated_cycles = {{[0-9]+}}> {
// CHECK-NEXT:      accel.widen %x
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @pool(%x: tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q> {
  %m = func.call @vta_fn_0(%x) : (tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q>
  func.return %m : tensor<1x2x2x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q> attributes {qaccel.target = "vta"} {
  %m = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q>
  func.return %m : tensor<1x2x2x6x!q>
}

// -----

// Schedules written by hand (one output row per tile, bias by the ALU; an element-wise
// layer in chunks of 16 rows) are checked and kept; `recompute=true` replaces them with the
// search's and the emitter's.
// CHECK-LABEL: func.func @hand_written
// CHECK:         vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu> {
// CHECK:         vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 16> {
// DMA-LABEL:   func.func @hand_written
// DMA:           schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu> {
// RECOMPUTE-LABEL: func.func @hand_written
// RECOMPUTE:       schedule #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu, inp_slots = 4,
// RECOMPUTE:       schedule #vta.eltwise_schedule<config = "vta-default", rows = 64, param_rows = 0, output_stage = false, estimated_cycles = {{[0-9]+}}> {
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @hand_written(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %c = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu> {
    %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
    %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 16> {
    %v = accel.widen %c : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %a = accel.max %v by [0] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}

// -----

// Accumulators that leave without a requantization do not form a layer: no schedule (the op
// runs on the host, and qaccel-compile says why).
// CHECK-LABEL: func.func @not_a_layer
// CHECK-NOT:     vta.layer
// CHECK:         accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {accel.host_reason = "{{.*}}"} : tensor
// CHECK-NOT:     vta.layer
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @not_a_layer(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16xi32> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16xi32>
  func.return %y : tensor<1x1x8x8x1x16xi32>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16xi32> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  func.return %acc : tensor<1x1x8x8x1x16xi32>
}

// -----

// The convolution above on a batch of two images: the same loop nest (one image's; the
// accelerator runs it once per image), estimated at twice one image's cycles.
// CHECK-LABEL: func.func @conv_batch
// CHECK:       func.func private @vta_fn_0
// CHECK:         %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = gemm, inp_slots = 4, wgt_slots = 1, acc_slots = 2, estimated_cycles = {{[0-9]+}}> {
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] : tensor<2x1x8x8x1x16x
// DMA-LABEL:   func.func @conv_batch
// DMA:           vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 4, tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = dma
// RQ-LABEL:    func.func @conv_batch
// RQ:            vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-store-requant", {{.*}}bias_mode = store
// RECOMPUTE-LABEL: func.func @conv_batch
// RECOMPUTE:       vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 2, tile_w = 8, {{.*}}bias_mode = gemm
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0, 0.5:0, 0.6:0}>
func.func @conv_batch(%x: tensor<2x8x8x6x!qi>) -> tensor<2x8x8x6x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<2x8x8x6x!qi>) -> tensor<2x8x8x6x!qo>
  func.return %y : tensor<2x8x8x6x!qo>
}
func.func private @vta_fn_0(%x: tensor<2x8x8x6x!qi>) -> tensor<2x8x8x6x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<6x3x3x6xi8> -> tensor<6x3x3x6x!w>
  %b = tfl.const dense<[100, -200, 300, -400, 500, -600]> : tensor<6xi32> -> tensor<6xi32>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<2x8x8x6x!qi>, tensor<6x3x3x6x!w>) -> tensor<2x8x8x6xi32>
  %bias = q.bias_add %acc, %b : (tensor<2x8x8x6xi32>, tensor<6xi32>) -> tensor<2x8x8x6xi32>
  %r = q.requantize %bias {multiplier = array<i32: 1073741824, 1288490189, 1503238554, 1717986918, 1932735283, 2147483647>, shift = array<i32: -3, -4, -5, -6, -7, -8>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<2x8x8x6xi32>) -> tensor<2x8x8x6x!qo>
  %y = q.relu %r {min = 3 : i32, max = 127 : i32} : (tensor<2x8x8x6x!qo>) -> tensor<2x8x8x6x!qo>
  func.return %y : tensor<2x8x8x6x!qo>
}

// -----

// A BATCH_MATMUL's product (weight tiles and accumulator start gathered at run time): a "conv"
// layer over its 5 tokens, scheduled as any GEMM layer; its accumulators start from the
// zero-point correction, so it has no bias to place: ALU mode (DMA asked for, not available),
// the store stage with vta-store-requant.
// CHECK-LABEL: func.func @bmm
// CHECK:         %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 1, tile_w = 5, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu,
// CHECK-NEXT:      accel.dense_zp
// CHECK-NEXT:      accel.add
// DMA-LABEL:   func.func @bmm
// DMA:           vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", {{.*}}bias_mode = alu,
// RQ-LABEL:    func.func @bmm
// RQ:            vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-store-requant", {{.*}}bias_mode = store
// RECOMPUTE-LABEL: func.func @bmm
// RECOMPUTE:       vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", {{.*}}bias_mode = alu,
!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>
func.func @bmm(%a: tensor<1x5x7x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<1x5x7x!qa>, tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo>
  func.return %y : tensor<1x5x3x!qo>
}
func.func private @vta_fn_0(%a: tensor<1x5x7x!qa>, %b: tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<1x5x7x!qa>, tensor<1x7x3x!qa>) -> tensor<1x5x3x!qo>
  func.return %y : tensor<1x5x3x!qo>
}
