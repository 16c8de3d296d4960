// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,schedule-vta' | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,schedule-vta{bias-mode=dma}' | filecheck %s --check-prefix=DMA
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,schedule-vta{recompute=true}' | filecheck %s --check-prefix=RECOMPUTE
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config=vta-store-requant},insert-pack-unpack,lower-q-to-accel,schedule-vta' | filecheck %s --check-prefix=RQ
// Scheduling twice is scheduling once:
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,schedule-vta,schedule-vta' | filecheck %s

// schedule-vta attaches the loop nest of every accelerator layer to its GEMM op: tile sizes
// (output rows and columns in pixels, output and input channels in blocks of 16), the order of
// the outer loops, the bias mode and the slots that double-buffer each on-chip buffer.
// --verify-semantics checks that the attribute changes nothing the IR computes.

// A 3x3 convolution (8x8x6 -> 8x8x6, one channel block) with bias, per-channel
// requantization and relu: one layer. The search tiles 2 output rows at a time, 4 input
// frames in flight, and adds the bias with a one-cycle GEMM; forced to DMA the bias, it
// picks 4-row tiles.
// CHECK-LABEL: func.func @conv
// CHECK:       func.func private @vta_fn_0
// CHECK:         %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [1, 1, 1, 1] {qaccel.schedule = {config = "vta-default", tile_h = 2 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "gemm", inp_slots = 4 : i64, wgt_slots = 1 : i64, acc_slots = 2 : i64, estimated_cycles = {{[0-9]+}} : i64}}
// CHECK-NEXT:    %bias = accel.bias_add_zp %acc
// DMA-LABEL:   func.func @conv
// DMA:           accel.conv2d_zp {{.*}} {qaccel.schedule = {config = "vta-default", tile_h = 4 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "dma", inp_slots = 2 : i64, wgt_slots = 1 : i64, acc_slots = 2 : i64, estimated_cycles = {{[0-9]+}} : i64}}
// With the store module's output stage the tail leaves the compute module: bias mode "store".
// RQ-LABEL:    func.func @conv
// RQ:            accel.conv2d_zp {{.*}} {qaccel.schedule = {config = "vta-store-requant", {{.*}}bias_mode = "store"
// RECOMPUTE-LABEL: func.func @conv
// RECOMPUTE:       accel.conv2d_zp {{.*}} {qaccel.schedule = {config = "vta-default", tile_h = 2 : i64, tile_w = 8 : i64, {{.*}}bias_mode = "gemm"
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

// A schedule written by hand (one output row per tile, bias by the ALU) is checked and kept;
// `recompute=true` replaces it with the search's.
// CHECK-LABEL: func.func @hand_written
// CHECK:         accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "alu"}}
// DMA-LABEL:   func.func @hand_written
// DMA:           {qaccel.schedule = {tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "alu"}}
// RECOMPUTE-LABEL: func.func @hand_written
// RECOMPUTE:       {qaccel.schedule = {config = "vta-default", tile_h = 2 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "alu", inp_slots = 4 : i64,
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func @hand_written(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %acc = accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] {qaccel.schedule = {tile_h = 1 : i64, tile_w = 8 : i64, tile_co = 1 : i64, tile_ci = 1 : i64, loop_order = "spatial", bias_mode = "alu"}} : tensor<1x1x8x8x1x16x!qa>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x8x8x1x16xi32>
  %m = accel.round_multiply %acc by [1073741824] : tensor<1x1x8x8x1x16xi32>
  %y = accel.narrow %m : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}

// -----

// Accumulators that leave without a requantization do not form a layer: no schedule (the op
// runs on the host, and qaccel-compile says why).
// CHECK-LABEL: func.func @not_a_layer
// CHECK:         accel.conv2d_zp %x, %w pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor
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
