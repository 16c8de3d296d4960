// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel{bias-placement=preload}' | filecheck %s --check-prefix=PRELOAD
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel{canonicalize=false}' | filecheck %s --check-prefix=RAW
// Running the pass twice is the same as running it once (nothing is left to lower):
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel,lower-q-to-accel' | filecheck %s
// With VTA's own block (16) every case still computes the same:
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel{bias-placement=preload}' | filecheck %s --check-prefix=VTA

// Each case is hand-written partitioned IR: a host function calling an accelerator function
// (qaccel.target). insert-pack-unpack packs it with B = 4 (small tensors, several blocks); then
// lower-q-to-accel rewrites its body. --verify-semantics runs every case before and after every
// pass on the same random inputs, so each CHECK below is also checked to compute the same bits.
// CHECK lines follow the canonicalized output; RAW shows the sequences before canonicalization.

// The conv group of the method: conv + bias + per-channel requantize + relu. With B = 4, six
// channels are two blocks, the last two lanes padding. The bias is fused with the zero-point
// term, qfused_bias = qbias - zp_in * Σw = qbias + Σw here, and the relu's range merges into the
// requantization's clamp (shift 1 of channel 5 is a left shift before the multiply).
// CHECK-LABEL: func.func @conv_group
// CHECK:         func.func private @vta_fn_0(%x: tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.25:3>> attributes {qaccel.target = "vta", accel.packed} {
// CHECK-NEXT:      %w_packed = tfl.const {{.*}} : tensor<2x2x1x1x4x4xi8> -> tensor<2x2x1x1x4x4x!quant.uniform<i8:f32:0, {{.*}}>>
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x2x1x1x4x4x{{.*}}> -> tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %bias = accel.bias_add_zp %acc by [97, -143, 303, -271, 375, -582, 0, 0] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %0 = accel.shift_left %bias by [0, 0, 0, 0, 0, 1, 0, 0] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %1 = accel.round_multiply %0 by [1073741824, 1288490189, 1503238554, 1717986918, 1932735283, 2147483647, 0, 0] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %2 = accel.round_rshift %1 by [3, 4, 5, 6, 7, 0, 0, 0] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %3 = accel.max %2 by [0] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %4 = accel.min %3 by [24] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %5 = accel.add %4 by [3] : tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %y = accel.narrow %5 : tensor<1x2x4x4x1x4xi32> -> tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:      func.return %y

// Variant (b): the fused bias is loaded into the accumulators before the GEMM.
// PRELOAD-LABEL: func.func @conv_group
// PRELOAD:         %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] bias = [97, -143, 303, -271, 375, -582, 0, 0] : {{.*}} -> tensor<1x2x4x4x1x4xi32>
// PRELOAD-NEXT:    %0 = accel.shift_left %acc by [0, 0, 0, 0, 0, 1, 0, 0]
// PRELOAD-NOT:     accel.bias_add_zp
// PRELOAD:         func.return

// Before canonicalization: the requantization's own clamp to int8 ([-128, 127] minus the
// zero point 3), the narrowing, then the relu widens again and clamps to [3, 27].
// RAW-LABEL: func.func @conv_group
// RAW:         %bias = accel.bias_add_zp %acc by [97, -143, 303, -271, 375, -582, 0, 0]
// RAW-NEXT:    %0 = accel.shift_left %bias by [0, 0, 0, 0, 0, 1, 0, 0]
// RAW-NEXT:    %1 = accel.round_multiply %0 by
// RAW-NEXT:    %2 = accel.round_rshift %1 by [3, 4, 5, 6, 7, 0, 0, 0]
// RAW-NEXT:    %3 = accel.max %2 by [-131]
// RAW-NEXT:    %4 = accel.min %3 by [124]
// RAW-NEXT:    %5 = accel.add %4 by [3]
// RAW-NEXT:    %r = accel.narrow %5 : tensor<1x2x4x4x1x4xi32> -> tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.25:3>>
// RAW-NEXT:    %6 = accel.widen %r : tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.25:3>> -> tensor<1x2x4x4x1x4xi32>
// RAW-NEXT:    %7 = accel.max %6 by [3]
// RAW-NEXT:    %8 = accel.min %7 by [27]
// RAW-NEXT:    %y = accel.narrow %8
// RAW-NEXT:    func.return %y

// VTA-LABEL: func.func @conv_group
// VTA:         accel.conv2d_zp %x, %w_packed pad_value(-1) {{.*}} bias = [97, -143, 303, -271, 375, -582, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] : tensor<1x1x4x4x1x16x{{.*}}>, tensor<1x1x1x1x16x16x{{.*}}> -> tensor<1x1x4x4x1x16xi32>
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0, 0.5:0, 0.6:0}>
func.func @conv_group(%x: tensor<1x4x4x6x!qi>) -> tensor<1x4x4x6x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x4x4x6x!qi>) -> tensor<1x4x4x6x!qo>
  func.return %y : tensor<1x4x4x6x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x6x!qi>) -> tensor<1x4x4x6x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[[[1, -2, 3, -4, 5, -6]]], [[[7, 8, 9, 10, 11, 12]]], [[[-13, 14, -15, 16, -17, 18]]], [[[19, 20, 21, 22, 23, 24]]], [[[-127, 127, -128, 0, 1, 2]]], [[[3, 3, 3, 3, 3, 3]]]]> : tensor<6x1x1x6xi8> -> tensor<6x1x1x6x!w>
  %b = tfl.const dense<[100, -200, 300, -400, 500, -600]> : tensor<6xi32> -> tensor<6xi32>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x6x!qi>, tensor<6x1x1x6x!w>) -> tensor<1x4x4x6xi32>
  %bias = q.bias_add %acc, %b : (tensor<1x4x4x6xi32>, tensor<6xi32>) -> tensor<1x4x4x6xi32>
  %r = q.requantize %bias {multiplier = array<i32: 1073741824, 1288490189, 1503238554, 1717986918, 1932735283, 2147483647>, shift = array<i32: -3, -4, -5, -6, -7, 1>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<1x4x4x6xi32>) -> tensor<1x4x4x6x!qo>
  %y = q.relu %r {min = 3 : i32, max = 27 : i32} : (tensor<1x4x4x6x!qo>) -> tensor<1x4x4x6x!qo>
  func.return %y : tensor<1x4x4x6x!qo>
}

// -----

// Per-tensor: one multiplier and shift (immediates), no bias operand (the fused bias is the
// zero-point term alone), padding 1 on top where the input zero point 5 is the pad value, and
// a positive shift: a left shift before the rounding multiply, no rounding shift at all.
// CHECK-LABEL: func.func @per_tensor
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %w_packed = tfl.const {{.*}} -> tensor<1x1x2x1x4x4xi8>
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(5) strides = [1, 1] dilations = [1, 1] padding = [1, 0, 0, 0] : {{.*}} -> tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %acc_fused = accel.bias_add_zp %acc by [-180, -500, 460, 140] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %0 = accel.shift_left %acc_fused by [1] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %1 = accel.round_multiply %0 by [1431655765] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %2 = accel.max %1 by [0] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %3 = accel.min %2 by [255] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %4 = accel.add %3 by [-128] : tensor<1x1x3x3x1x4xi32>
// CHECK-NEXT:      %y = accel.narrow %4
// CHECK-NEXT:      func.return %y

// PRELOAD-LABEL: func.func @per_tensor
// PRELOAD:         %acc = accel.conv2d_zp %x, %w_packed pad_value(5) {{.*}} bias = [-180, -500, 460, 140] :
// PRELOAD-NEXT:    %0 = accel.shift_left %acc by [1]

// The rounding shift by 0 is there before canonicalization.
// RAW-LABEL: func.func @per_tensor
// RAW:         %2 = accel.round_rshift %1 by [0]
!qi = !quant.uniform<i8:f32, 0.5:5>
!qo = !quant.uniform<i8:f32, 0.25:-128>
func.func @per_tensor(%x: tensor<1x3x3x4x!qi>) -> tensor<1x3x3x4x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x3x4x!qi>) -> tensor<1x3x3x4x!qo>
  func.return %y : tensor<1x3x3x4x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x4x!qi>) -> tensor<1x3x3x4x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<"0x0102030405060708090A0B0C0D0E0F10F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF00"> : tensor<4x2x1x4xi8> -> tensor<4x2x1x4xi8>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 0, 0, 0>, input_zero_point = 5 : i32, filter_zero_point = 0 : i32} : (tensor<1x3x3x4x!qi>, tensor<4x2x1x4xi8>) -> tensor<1x3x3x4xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1431655765>, shift = array<i32: 1>, input_zero_point = 0 : i32, output_zero_point = -128 : i32} : (tensor<1x3x3x4xi32>) -> tensor<1x3x3x4x!qo>
  func.return %y : tensor<1x3x3x4x!qo>
}

// -----

// Depthwise convolution (stride 2, dilation 2, padding): one group per channel block, diagonal
// 4x4 tiles, its filter packed here (insert-pack-unpack leaves depthwise filters alone).
// CHECK-LABEL: func.func @depthwise
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %w_tiles = tfl.const dense<"0x{{[0-9A-F]+}}"> : tensor<2x1x2x4x4x4xi8> -> tensor<2x1x2x4x4x4xi8>
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_tiles pad_value(2) strides = [2, 2] dilations = [2, 1] padding = [1, 0, 1, 1] groups = 2 : tensor<1x2x5x5x1x4x!quant.uniform<i8:f32, 0.5:2>>, tensor<2x1x2x4x4x4xi8> -> tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %bias = accel.bias_add_zp %acc by [49, 34, 19, 4, -11, -26, -297, 232]
// CHECK-NEXT:      %0 = accel.round_multiply %bias by [1500000000]
// CHECK-NEXT:      %1 = accel.round_rshift %0 by [6]
// CHECK-NEXT:      %2 = accel.max %1 by [-130]
// CHECK-NEXT:      %3 = accel.min %2 by [125]
// CHECK-NEXT:      %4 = accel.add %3 by [2]
// CHECK-NEXT:      %y = accel.narrow %4

// PRELOAD-LABEL: func.func @depthwise
// PRELOAD:         accel.conv2d_zp %x, %w_tiles pad_value(2) {{.*}} groups = 2 bias = [49, 34, 19, 4, -11, -26, -297, 232] :
!q = !quant.uniform<i8:f32, 0.5:2>
func.func @depthwise(%x: tensor<1x5x5x8x!q>) -> tensor<1x2x2x8x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x5x5x8x!q>) -> tensor<1x2x2x8x!q>
  func.return %y : tensor<1x2x2x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x5x5x8x!q>) -> tensor<1x2x2x8x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<"0x01020304050607F8090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFE7F80"> : tensor<1x2x4x8xi8> -> tensor<1x2x4x8xi8>
  %b = tfl.const dense<[1, 2, 3, 4, 5, 6, 7, 8]> : tensor<8xi32> -> tensor<8xi32>
  %acc = q.depthwise_conv2d %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 2, 1>, padding = array<i64: 1, 0, 1, 1>, input_zero_point = 2 : i32, filter_zero_point = 0 : i32, depth_multiplier = 1 : i32} : (tensor<1x5x5x8x!q>, tensor<1x2x4x8xi8>) -> tensor<1x2x2x8xi32>
  %bias = q.bias_add %acc, %b : (tensor<1x2x2x8xi32>, tensor<8xi32>) -> tensor<1x2x2x8xi32>
  %y = q.requantize %bias {multiplier = array<i32: 1500000000>, shift = array<i32: -6>, input_zero_point = 0 : i32, output_zero_point = 2 : i32} : (tensor<1x2x2x8xi32>) -> tensor<1x2x2x8x!q>
  func.return %y : tensor<1x2x2x8x!q>
}

// -----

// FULLY_CONNECTED: the double-precision requantization runs on the host, with the relu's clamp.
// CHECK-LABEL: func.func @fully_connected
// CHECK:         func.func private @vta_fn_0(%x: tensor<2x2x1x4x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x1x1x4x!quant.uniform<i8:f32, 0.25:-10>>
// CHECK-NEXT:      %w_packed = tfl.const {{.*}} : tensor<1x2x4x4xi8> -> tensor<1x2x4x4xi8>
// CHECK-NEXT:      %acc = accel.dense_zp %x, %w_packed : tensor<2x2x1x4x!quant.uniform<i8:f32, 0.5:-3>>, tensor<1x2x4x4xi8> -> tensor<2x1x1x4xi32>
// CHECK-NEXT:      %bias = accel.bias_add_zp %acc by [73, -43, -39, 0] : tensor<2x1x1x4xi32>
// CHECK-NEXT:      %r = accel.host_requantize %bias scale = [5.000000e-01, 6.250000e-02, 0.33333333333333331, 0.000000e+00] zero_points(0, -10) clamp(-10, 14) : tensor<2x1x1x4xi32> -> tensor<2x1x1x4x!quant.uniform<i8:f32, 0.25:-10>>
// CHECK-NEXT:      func.return %r

// PRELOAD-LABEL: func.func @fully_connected
// PRELOAD:         %acc = accel.dense_zp %x, %w_packed bias = [73, -43, -39, 0] :
// PRELOAD-NEXT:    %r = accel.host_requantize %acc scale = {{.*}} clamp(-10, 14)

// RAW-LABEL: func.func @fully_connected
// RAW:         %r = accel.host_requantize %bias scale = {{.*}} zero_points(0, -10) clamp(-128, 127)
// RAW-NEXT:    %0 = accel.widen %r
// RAW-NEXT:    %1 = accel.max %0 by [-10]
// RAW-NEXT:    %2 = accel.min %1 by [14]
// RAW-NEXT:    %y = accel.narrow %2
!qi = !quant.uniform<i8:f32, 0.5:-3>
!qo = !quant.uniform<i8:f32, 0.25:-10>
func.func @fully_connected(%x: tensor<2x6x!qi>) -> tensor<2x3x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<2x6x!qi>) -> tensor<2x3x!qo>
  func.return %y : tensor<2x3x!qo>
}
func.func private @vta_fn_0(%x: tensor<2x6x!qi>) -> tensor<2x3x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6], [127, -128, 127, -128, 127, -128]]> : tensor<3x6xi8> -> tensor<3x6xi8>
  %b = tfl.const dense<[10, 20, -30]> : tensor<3xi32> -> tensor<3xi32>
  %acc = q.dense %x, %w {input_zero_point = -3 : i32, filter_zero_point = 0 : i32} : (tensor<2x6x!qi>, tensor<3x6xi8>) -> tensor<2x3xi32>
  %bias = q.bias_add %acc, %b : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  %r = q.requantize %bias {scale = array<f64: 0.5, 0.0625, 0.3333333333333333>, input_zero_point = 0 : i32, output_zero_point = -10 : i32} : (tensor<2x3xi32>) -> tensor<2x3x!qo>
  %y = q.relu %r {min = -10 : i32, max = 14 : i32} : (tensor<2x3x!qo>) -> tensor<2x3x!qo>
  func.return %y : tensor<2x3x!qo>
}

// -----

// A non-zero filter zero point folds into the weights (w - 3 fits int8); a requantize input
// zero point folds into the bias.
// CHECK-LABEL: func.func @filter_zero_point
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %w_tiles = tfl.const dense<{{\[}}[{{\[}}[0, 1, 2, 3], [-103, -3, 97, 0], [0, 0, 0, 0], [0, 0, 0, 0]]]]> : tensor<1x1x4x4xi8>
// CHECK-NEXT:      %acc = accel.dense_zp %x, %w_tiles :
// CHECK-NEXT:      %acc_fused = accel.bias_add_zp %acc by [-7, -7, 0, 0]
// CHECK-NEXT:      %0 = accel.round_multiply %acc_fused by [1073741824]
// CHECK-NEXT:      %1 = accel.round_rshift %0 by [2]
!q = !quant.uniform<i8:f32, 0.5:0>
func.func @filter_zero_point(%x: tensor<1x4x!q>) -> tensor<1x2x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x4x!q>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x!q>) -> tensor<1x2x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[3, 4, 5, 6], [-100, 0, 100, 3]]> : tensor<2x4xi8> -> tensor<2x4xi8>
  %acc = q.dense %x, %w {input_zero_point = 0 : i32, filter_zero_point = 3 : i32} : (tensor<1x4x!q>, tensor<2x4xi8>) -> tensor<1x2xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 7 : i32, output_zero_point = 0 : i32} : (tensor<1x2xi32>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}

// -----

// q.add + q.relu (ResNet's join): each side centred, shifted left by 20 and rescaled, summed,
// rescaled to the output. The relu's lower bound is the output zero point: the clamp merges.
// CHECK-LABEL: func.func @add_relu
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %0 = accel.widen %x : tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-34>> -> tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %1 = accel.add %0 by [34] : tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %2 = accel.shift_left %1 by [20]
// CHECK-NEXT:      %3 = accel.round_multiply %2 by [1073741824]
// CHECK-NEXT:      %4 = accel.widen %y
// CHECK-NEXT:      %5 = accel.add %4 by [2]
// CHECK-NEXT:      %6 = accel.shift_left %5 by [20]
// CHECK-NEXT:      %7 = accel.round_multiply %6 by [1925241870]
// CHECK-NEXT:      %8 = accel.round_rshift %7 by [1]
// CHECK-NEXT:      %9 = accel.add %3, %8 : tensor<1x2x2x2x1x4xi32>, tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %10 = accel.round_multiply %9 by [1701543333]
// CHECK-NEXT:      %11 = accel.round_rshift %10 by [18]
// CHECK-NEXT:      %12 = accel.max %11 by [0]
// CHECK-NEXT:      %13 = accel.min %12 by [255]
// CHECK-NEXT:      %14 = accel.add %13 by [-128]
// CHECK-NEXT:      %z = accel.narrow %14
// CHECK-NEXT:      func.return %z

// Before canonicalization the relu (over the whole int8 range) is a clamp that cannot clip.
// RAW-LABEL: func.func @add_relu
// RAW:         %s = accel.narrow
// RAW-NEXT:    %[[W:.*]] = accel.widen %s
// RAW-NEXT:    %[[LO:.*]] = accel.max %[[W]] by [-128]
// RAW-NEXT:    %[[HI:.*]] = accel.min %[[LO]] by [127]
// RAW-NEXT:    %z = accel.narrow %[[HI]]
!a = !quant.uniform<i8:f32, 0.5:-34>
!b = !quant.uniform<i8:f32, 0.25:-2>
!o = !quant.uniform<i8:f32, 0.75:-128>
func.func @add_relu(%x: tensor<1x2x2x6x!a>, %y: tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o> {
  %z = func.call @vta_fn_0(%x, %y) : (tensor<1x2x2x6x!a>, tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o>
  func.return %z : tensor<1x2x2x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!a>, %y: tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o> attributes {qaccel.target = "vta"} {
  %s = q.add %x, %y {lhs_zero_point = -34 : i32, rhs_zero_point = -2 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1925241870 : i32, rhs_shift = -1 : i32, output_multiplier = 1701543333 : i32, output_shift = -18 : i32, output_zero_point = -128 : i32} : (tensor<1x2x2x6x!a>, tensor<1x2x2x6x!b>) -> tensor<1x2x2x6x!o>
  %z = q.relu %s {min = -128 : i32, max = 127 : i32} : (tensor<1x2x2x6x!o>) -> tensor<1x2x2x6x!o>
  func.return %z : tensor<1x2x2x6x!o>
}

// -----

// q.sub of a per-channel run-time tensor (broadcast over pixels: the ALU repeats its rows), and
// q.mul by a per-channel constant (centred at compile time: per-lane values).
// The subtraction's own saturation cannot clip here (the range analysis bounds the rescaled
// difference to [-69, 167] - zp), and the zero point it adds is the one the multiplication
// subtracts: both fold away.
// CHECK-LABEL: func.func @sub_mul
// CHECK:         func.func private @vta_fn_0(%x: tensor<1x2x2x2x1x4x{{.*}}>, %m: tensor<1x2x1x1x1x4x{{.*}}>)
// CHECK:           %[[M:.*]] = accel.round_rshift %{{.*}} by [3] : tensor<1x2x1x1x1x4xi32>
// CHECK-NEXT:      %[[NEG:.*]] = accel.mul %[[M]] by [-1] : tensor<1x2x1x1x1x4xi32>
// CHECK-NEXT:      %[[D:.*]] = accel.add %{{.*}}, %[[NEG]] : tensor<1x2x2x2x1x4xi32>, tensor<1x2x1x1x1x4xi32>
// CHECK-NEXT:      %[[R:.*]] = accel.round_multiply %[[D]] by [1727877243]
// CHECK-NEXT:      %[[S:.*]] = accel.round_rshift %[[R]] by [19]
// CHECK-NEXT:      %[[P:.*]] = accel.mul %[[S]] by [0, 28, 128, 178, 228, 255, 0, 0]
// CHECK-NEXT:      %[[Q:.*]] = accel.round_multiply %[[P]] by [1599309184]
// CHECK-NEXT:      %[[T:.*]] = accel.round_rshift %[[Q]] by [7]
// CHECK-NEXT:      %[[LO:.*]] = accel.max %[[T]] by [-79]
// CHECK-NEXT:      %[[HI:.*]] = accel.min %[[LO]] by [176]
// CHECK-NEXT:      %[[Z:.*]] = accel.add %[[HI]] by [-49]
// CHECK-NEXT:      %z = accel.narrow %[[Z]]
!a = !quant.uniform<i8:f32, 0.5:-71>
!m = !quant.uniform<i8:f32, 0.5:-63>
!o = !quant.uniform<i8:f32, 0.75:-49>
!c = !quant.uniform<i8:f32, 0.01:-128>
func.func @sub_mul(%x: tensor<1x2x2x6x!a>, %m: tensor<1x1x1x6x!m>) -> tensor<1x2x2x6x!o> {
  %z = func.call @vta_fn_0(%x, %m) : (tensor<1x2x2x6x!a>, tensor<1x1x1x6x!m>) -> tensor<1x2x2x6x!o>
  func.return %z : tensor<1x2x2x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!a>, %m: tensor<1x1x1x6x!m>) -> tensor<1x2x2x6x!o> attributes {qaccel.target = "vta"} {
  %c = tfl.const dense<[[[[-128, -100, 0, 50, 100, 127]]]]> : tensor<1x1x1x6xi8> -> tensor<1x1x1x6x!c>
  %d = q.sub %x, %m {lhs_zero_point = -71 : i32, rhs_zero_point = -63 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1291951331 : i32, rhs_shift = -3 : i32, output_multiplier = 1727877243 : i32, output_shift = -19 : i32, output_zero_point = -49 : i32} : (tensor<1x2x2x6x!a>, tensor<1x1x1x6x!m>) -> tensor<1x2x2x6x!o>
  %z = q.mul %d, %c {lhs_zero_point = -49 : i32, rhs_zero_point = -128 : i32, multiplier = 1599309184 : i32, shift = -7 : i32, output_zero_point = -49 : i32} : (tensor<1x2x2x6x!o>, tensor<1x1x1x6x!c>) -> tensor<1x2x2x6x!o>
  func.return %z : tensor<1x2x2x6x!o>
}

// -----

// Pools without padding: MAX over the window's rows; AVERAGE as a sum and a rounding shift by
// log2(taps) (TFLite's rounded division by 4 is RoundingDivideByPOT by 2).
// CHECK-LABEL: func.func @pools
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %0 = accel.widen %x : tensor<1x2x4x4x1x4x!quant.uniform<i8:f32, 0.5:3>> -> tensor<1x2x4x4x1x4xi32>
// CHECK-NEXT:      %1 = accel.max_pool2d %0 window = [2, 2] strides = [2, 2] : tensor<1x2x4x4x1x4xi32> -> tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %m = accel.narrow %1
// CHECK-NEXT:      %2 = accel.sum_pool2d %0 window = [2, 2] strides = [2, 2] : tensor<1x2x4x4x1x4xi32> -> tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:      %3 = accel.round_rshift %2 by [2]
// CHECK-NEXT:      %a = accel.narrow %3
// CHECK-NEXT:      func.return %m, %a
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @pools(%x: tensor<1x4x4x6x!q>) -> (tensor<1x2x2x6x!q>, tensor<1x2x2x6x!q>) {
  %m, %a = func.call @vta_fn_0(%x) : (tensor<1x4x4x6x!q>) -> (tensor<1x2x2x6x!q>, tensor<1x2x2x6x!q>)
  func.return %m, %a : tensor<1x2x2x6x!q>, tensor<1x2x2x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x6x!q>) -> (tensor<1x2x2x6x!q>, tensor<1x2x2x6x!q>) attributes {qaccel.target = "vta"} {
  %m = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q>
  %a = q.avg_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x6x!q>) -> tensor<1x2x2x6x!q>
  func.return %m, %a : tensor<1x2x2x6x!q>, tensor<1x2x2x6x!q>
}

// -----

// Spatial mean (keep_dims false: [1, C] packs as [1, C/B, 1, B]): a sum over H and W, the
// input zero point times the element count subtracted, then the requantization.
// The clamp cannot clip: the mean of int8 values stays in range.
// CHECK-LABEL: func.func @mean
// CHECK:         func.func private @vta_fn_0(%x: tensor<1x2x3x3x1x4x{{.*}}>) -> tensor<1x2x1x4x!quant.uniform<i8:f32, 0.25:-128>>
// CHECK-NEXT:      %0 = accel.widen %x
// CHECK-NEXT:      %1 = accel.reduce_sum %0 axes = [2, 3] : tensor<1x2x3x3x1x4xi32> -> tensor<1x2x1x4xi32>
// CHECK-NEXT:      %2 = accel.add %1 by [1152]
// CHECK-NEXT:      %3 = accel.round_multiply %2 by [1908874354]
// CHECK-NEXT:      %4 = accel.round_rshift %3 by [3]
// CHECK-NEXT:      %5 = accel.add %4 by [-128]
// CHECK-NEXT:      %y = accel.narrow %5
// CHECK-NEXT:      func.return %y
!q = !quant.uniform<i8:f32, 0.5:-128>
!o = !quant.uniform<i8:f32, 0.25:-128>
func.func @mean(%x: tensor<1x3x3x6x!q>) -> tensor<1x6x!o> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x3x6x!q>) -> tensor<1x6x!o>
  func.return %y : tensor<1x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x6x!q>) -> tensor<1x6x!o> attributes {qaccel.target = "vta"} {
  %y = q.mean %x {axes = array<i64: 1, 2>, num_elements = 9 : i32, input_zero_point = -128 : i32, multiplier = 1908874354 : i32, shift = -3 : i32, output_zero_point = -128 : i32} : (tensor<1x3x3x6x!q>) -> tensor<1x6x!o>
  func.return %y : tensor<1x6x!o>
}

// -----

// Spatial padding by the DMA, and a channel concatenation (the first input fills whole blocks,
// with B = 4 and with B = 16).
// CHECK-LABEL: func.func @pad_concat
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %p = accel.pad %x pad_value(-71) padding = [1, 1, 2, 0] : tensor<1x4x2x2x1x4x{{.*}}> -> tensor<1x4x4x4x1x4x{{.*}}>
// CHECK-NEXT:      %z = accel.concat %p, %y axis = 1 : tensor<1x4x4x4x1x4x{{.*}}>, tensor<1x1x4x4x1x4x{{.*}}> -> tensor<1x5x4x4x1x4x{{.*}}>
// CHECK-NEXT:      func.return %z
!q = !quant.uniform<i8:f32, 0.5:-71>
func.func @pad_concat(%x: tensor<1x2x2x16x!q>, %y: tensor<1x4x4x3x!q>) -> tensor<1x4x4x19x!q> {
  %z = func.call @vta_fn_0(%x, %y) : (tensor<1x2x2x16x!q>, tensor<1x4x4x3x!q>) -> tensor<1x4x4x19x!q>
  func.return %z : tensor<1x4x4x19x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x16x!q>, %y: tensor<1x4x4x3x!q>) -> tensor<1x4x4x19x!q> attributes {qaccel.target = "vta"} {
  %p = q.pad %x {padding = array<i64: 0, 0, 1, 1, 2, 0, 0, 0>, pad_value = -71 : i32} : (tensor<1x2x2x16x!q>) -> tensor<1x4x4x16x!q>
  %z = q.concat %p, %y {axis = 3 : i32} : (tensor<1x4x4x16x!q>, tensor<1x4x4x3x!q>) -> tensor<1x4x4x19x!q>
  func.return %z : tensor<1x4x4x19x!q>
}

// -----

// Channels that move between lanes (3 + 5 with B = 4; with B = 16 both inputs share a block):
// an accel.concat_lanes, a host step of the accelerator program.
// CHECK-LABEL: func.func @concat_lanes
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %z = accel.concat_lanes %x, %y channels = [3, 5] : tensor<1x1x2x2x1x4x{{.*}}>, tensor<1x2x2x2x1x4x{{.*}}> -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:      func.return %z
// VTA-LABEL:   func.func @concat_lanes
// VTA:           accel.concat_lanes %x, %y channels = [3, 5] : tensor<1x1x2x2x1x16x{{.*}}>, tensor<1x1x2x2x1x16x{{.*}}> -> tensor<1x1x2x2x1x16x{{.*}}>
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @concat_lanes(%x: tensor<1x2x2x3x!q>, %y: tensor<1x2x2x5x!q>) -> tensor<1x2x2x8x!q> {
  %z = func.call @vta_fn_0(%x, %y) : (tensor<1x2x2x3x!q>, tensor<1x2x2x5x!q>) -> tensor<1x2x2x8x!q>
  func.return %z : tensor<1x2x2x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x3x!q>, %y: tensor<1x2x2x5x!q>) -> tensor<1x2x2x8x!q> attributes {qaccel.target = "vta"} {
  %z = q.concat %x, %y {axis = 3 : i32} : (tensor<1x2x2x3x!q>, tensor<1x2x2x5x!q>) -> tensor<1x2x2x8x!q>
  func.return %z : tensor<1x2x2x8x!q>
}

// -----

// Pools the ALU trees cannot compute bit-exactly: a SAME 3x3 average at stride 1 (the divisor
// shrinks at the border) and a padded max pool are accel.host_pool2d, host steps of the program;
// unpadded averages over a power of two of taps stay on the ALU.
// CHECK-LABEL: func.func @host_pools
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %a = accel.host_pool2d %x "avg" window = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] clamp(-128, 127) : tensor<1x2x4x4x1x4x{{.*}}> -> tensor<1x2x4x4x1x4x{{.*}}>
// CHECK-NEXT:      %m = accel.host_pool2d %a "max" window = [2, 2] strides = [2, 2] padding = [0, 1, 0, 1] clamp(-128, 127) : tensor<1x2x4x4x1x4x{{.*}}> -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NOT:       accel.host_pool2d
// CHECK:           accel.sum_pool2d {{.*}} window = [1, 2]
// CHECK-NOT:       accel.host_pool2d
// CHECK:           func.return
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @host_pools(%x: tensor<1x4x4x8x!q>) -> tensor<1x1x1x8x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x4x4x8x!q>) -> tensor<1x1x1x8x!q>
  func.return %z : tensor<1x1x1x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x8x!q>) -> tensor<1x1x1x8x!q> attributes {qaccel.target = "vta"} {
  %a = q.avg_pool2d %x {filter = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x8x!q>) -> tensor<1x4x4x8x!q>
  %m = q.max_pool2d %a {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x8x!q>) -> tensor<1x2x2x8x!q>
  %s = q.avg_pool2d %m {filter = array<i64: 1, 2>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x8x!q>) -> tensor<1x2x1x8x!q>
  %t = q.avg_pool2d %s {filter = array<i64: 2, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x1x8x!q>) -> tensor<1x1x1x8x!q>
  func.return %t : tensor<1x1x1x8x!q>
}

// -----

// Flatten after a global pool keeps batch and channels: accel.reshape, the same packed bytes.
// CHECK-LABEL: func.func @flatten
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %r = accel.reshape %x : tensor<1x2x1x1x1x4x{{.*}}> -> tensor<1x2x1x4x{{.*}}>
// CHECK-NEXT:      func.return %r
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @flatten(%x: tensor<1x1x1x8x!q>) -> tensor<1x8x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x1x1x8x!q>) -> tensor<1x8x!q>
  func.return %z : tensor<1x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x1x1x8x!q>) -> tensor<1x8x!q> attributes {qaccel.target = "vta"} {
  %r = q.reshape %x : (tensor<1x1x1x8x!q>) -> tensor<1x8x!q>
  func.return %r : tensor<1x8x!q>
}

// -----

// Cropping2D keeps batch and channels: accel.crop of the spatial dimensions.
// CHECK-LABEL: func.func @crop
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %c = accel.crop %x offsets = [1, 0] : tensor<1x2x4x4x1x4x{{.*}}> -> tensor<1x2x3x3x1x4x{{.*}}>
// CHECK-NEXT:      func.return %c
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @crop(%x: tensor<1x4x4x8x!q>) -> tensor<1x3x3x8x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x4x4x8x!q>) -> tensor<1x3x3x8x!q>
  func.return %z : tensor<1x3x3x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x8x!q>) -> tensor<1x3x3x8x!q> attributes {qaccel.target = "vta"} {
  %c = q.slice %x {begin = array<i64: 0, 1, 0, 0>} : (tensor<1x4x4x8x!q>) -> tensor<1x3x3x8x!q>
  func.return %c : tensor<1x3x3x8x!q>
}

// -----

// A transpose convolution's scatter (or a DEPTH_TO_SPACE): accel.depth_to_space on packed
// tensors, 12 = 2x2x3 channels (3 blocks of 4) into 3 channels (1 block) at twice the size,
// padding lanes at the zero point.
// CHECK-LABEL: func.func @depth_to_space
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %d = accel.depth_to_space %x block_size = 2 channels = 3 pad_value = 3 : tensor<1x3x2x2x1x4x{{.*}}> -> tensor<1x1x4x4x1x4x{{.*}}>
// CHECK-NEXT:      func.return %d
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @depth_to_space(%x: tensor<1x2x2x12x!q>) -> tensor<1x4x4x3x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x2x2x12x!q>) -> tensor<1x4x4x3x!q>
  func.return %z : tensor<1x4x4x3x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x12x!q>) -> tensor<1x4x4x3x!q> attributes {qaccel.target = "vta"} {
  %d = q.depth_to_space %x {block_size = 2 : i32} : (tensor<1x2x2x12x!q>) -> tensor<1x4x4x3x!q>
  func.return %d : tensor<1x4x4x3x!q>
}

// -----

// A grouped convolution (2 groups of 8 channels) keeps its groups on blocks (B = 4: two blocks
// per group); a depthwise convolution with depth multiplier 2 whose blocks align with one
// input block per two output blocks.
// CHECK-LABEL: func.func @groups
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %w_tiles = tfl.const {{.*}} : tensor<2x2x1x1x4x4xi8> -> tensor<2x2x1x1x4x4xi8>
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_tiles pad_value(1) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 : tensor<1x4x3x3x1x4x{{.*}}>, tensor<2x2x1x1x4x4xi8> -> tensor<1x2x3x3x1x4xi32>
// CHECK-NEXT:      %acc_fused = accel.bias_add_zp %acc by [-36, 92, -164, 220, -292, 348, -420, 476]
// CHECK:           %dw_tiles = tfl.const dense<{{\[}}[{{\[}}[{{\[}}[1, 0, 0, 0], [2, 0, 0, 0], [0, 3, 0, 0], [0, 4, 0, 0]], {{.*}} : tensor<2x1x1x2x4x4xi8>
// CHECK-NEXT:      %dacc = accel.conv2d_zp %d, %dw_tiles pad_value(1) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 1] : tensor<1x1x3x3x1x4x{{.*}}>, tensor<2x1x1x2x4x4xi8> -> tensor<1x2x3x3x1x4xi32>
!q = !quant.uniform<i8:f32, 0.5:1>
func.func @groups(%x: tensor<1x3x3x16x!q>, %d: tensor<1x3x3x4x!q>) -> (tensor<1x3x3x8x!q>, tensor<1x3x3x8x!q>) {
  %y, %z = func.call @vta_fn_0(%x, %d) : (tensor<1x3x3x16x!q>, tensor<1x3x3x4x!q>) -> (tensor<1x3x3x8x!q>, tensor<1x3x3x8x!q>)
  func.return %y, %z : tensor<1x3x3x8x!q>, tensor<1x3x3x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x16x!q>, %d: tensor<1x3x3x4x!q>) -> (tensor<1x3x3x8x!q>, tensor<1x3x3x8x!q>) attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<"0x0102030405060708F1F2F3F4F5F6F7F81112131415161718E1E2E3E4E5E6E7E82122232425262728D1D2D3D4D5D6D7D83132333435363738C1C2C3C4C5C6C7C8"> : tensor<8x1x1x8xi8> -> tensor<8x1x1x8xi8>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 1 : i32, filter_zero_point = 0 : i32} : (tensor<1x3x3x16x!q>, tensor<8x1x1x8xi8>) -> tensor<1x3x3x8xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1200000000>, shift = array<i32: -7>, input_zero_point = 0 : i32, output_zero_point = 1 : i32} : (tensor<1x3x3x8xi32>) -> tensor<1x3x3x8x!q>
  %dw = tfl.const dense<"0x0102030405060708090A0B0C0D0E0F10"> : tensor<1x1x2x8xi8> -> tensor<1x1x2x8xi8>
  %dacc = q.depthwise_conv2d %d, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 1>, input_zero_point = 1 : i32, filter_zero_point = 0 : i32, depth_multiplier = 2 : i32} : (tensor<1x3x3x4x!q>, tensor<1x1x2x8xi8>) -> tensor<1x3x3x8xi32>
  %z = q.requantize %dacc {multiplier = array<i32: 1200000000>, shift = array<i32: -5>, input_zero_point = 0 : i32, output_zero_point = 1 : i32} : (tensor<1x3x3x8xi32>) -> tensor<1x3x3x8x!q>
  func.return %y, %z : tensor<1x3x3x8x!q>, tensor<1x3x3x8x!q>
}

// -----

// A clamp on its own (q.relu): widen, max, min, narrow. Host functions keep their q ops.
// CHECK-LABEL: func.func @relu_and_host
// CHECK-NEXT:      %h = q.relu %x {min = -100 : i32, max = 100 : i32}
// CHECK-NEXT:      %m = q.max_pool2d %h
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %0 = accel.widen %x
// CHECK-NEXT:      %1 = accel.max %0 by [-5]
// CHECK-NEXT:      %2 = accel.min %1 by [7]
// CHECK-NEXT:      %y = accel.narrow %2
// CHECK-NEXT:      func.return %y
!q = !quant.uniform<i8:f32, 0.5:-5>
func.func @relu_and_host(%x: tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q> {
  %h = q.relu %x {min = -100 : i32, max = 100 : i32} : (tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q>
  %m = q.max_pool2d %h {filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q>
  %y = func.call @vta_fn_0(%m) : (tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q>
  func.return %y : tensor<1x2x2x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q> attributes {qaccel.target = "vta"} {
  %y = q.relu %x {min = -5 : i32, max = 7 : i32} : (tensor<1x2x2x6x!q>) -> tensor<1x2x2x6x!q>
  func.return %y : tensor<1x2x2x6x!q>
}

// -----

// A table lookup (an element-wise int8 op, e.g. LOGISTIC) is `accel.lut` on the packed int8
// data: a host step of the program, the padding lanes looked up too.
// CHECK-LABEL: func.func @lut
// CHECK:         func.func private @vta_fn_0(%x: tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:      %y = accel.lut %x table = [-40, -39, -39, {{.*}}, 45, 45] : tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:      func.return %y

// RAW-LABEL: func.func @lut
// RAW:         accel.lut %x

// VTA-LABEL: func.func @lut
// VTA:         accel.lut %x table = {{.*}} : tensor<1x1x2x2x1x16x{{.*}}> -> tensor<1x1x2x2x1x16x{{.*}}>
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
func.func @lut(%x: tensor<1x2x2x6x!qi>) -> tensor<1x2x2x6x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x2x6x!qi>) -> tensor<1x2x2x6x!qo>
  func.return %y : tensor<1x2x2x6x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!qi>) -> tensor<1x2x2x6x!qo> attributes {qaccel.target = "vta"} {
  %y = q.lut %x {table = array<i32: -40, -39, -39, -39, -38, -38, -38, -37, -37, -37, -36, -36, -36, -35, -35, -35, -34, -34, -34, -33, -33, -33, -32, -32, -32, -31, -31, -31, -30, -30, -30, -29, -29, -29, -28, -28, -28, -27, -27, -27, -26, -26, -26, -25, -25, -25, -24, -24, -24, -23, -23, -23, -22, -22, -22, -21, -21, -21, -20, -20, -20, -19, -19, -19, -18, -18, -18, -17, -17, -17, -16, -16, -16, -15, -15, -15, -14, -14, -14, -13, -13, -13, -12, -12, -12, -11, -11, -11, -10, -10, -10, -9, -9, -9, -8, -8, -8, -7, -7, -7, -6, -6, -6, -5, -5, -5, -4, -4, -4, -3, -3, -3, -2, -2, -2, -1, -1, -1, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 10, 10, 10, 11, 11, 11, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18, 18, 18, 19, 19, 19, 20, 20, 20, 21, 21, 21, 22, 22, 22, 23, 23, 23, 24, 24, 24, 25, 25, 25, 26, 26, 26, 27, 27, 27, 28, 28, 28, 29, 29, 29, 30, 30, 30, 31, 31, 31, 32, 32, 32, 33, 33, 33, 34, 34, 34, 35, 35, 35, 36, 36, 36, 37, 37, 37, 38, 38, 38, 39, 39, 39, 40, 40, 40, 41, 41, 41, 42, 42, 42, 43, 43, 43, 44, 44, 44, 45, 45, 45>} : (tensor<1x2x2x6x!qi>) -> tensor<1x2x2x6x!qo>
  func.return %y : tensor<1x2x2x6x!qo>
}

// -----

// Resizes keep batch, channel blocks and lanes (6 channels: 2 blocks of 4, the padding lanes
// interpolated alike): accel.resize_nearest_neighbor (a gather step of the program) and
// accel.resize_bilinear (an interpolation step), a batch of 2 in one step each.
// CHECK-LABEL: func.func @resizes
// CHECK:         func.func private @vta_fn_0
// CHECK-NEXT:      %n = accel.resize_nearest_neighbor %x align_corners = true half_pixel_centers = false : tensor<2x2x3x2x1x4x{{.*}}> -> tensor<2x2x5x4x1x4x{{.*}}>
// CHECK-NEXT:      %b = accel.resize_bilinear %n align_corners = false half_pixel_centers = true : tensor<2x2x5x4x1x4x{{.*}}> -> tensor<2x2x7x3x1x4x{{.*}}>
// CHECK-NEXT:      func.return %b
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @resizes(%x: tensor<2x3x2x6x!q>) -> tensor<2x7x3x6x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<2x3x2x6x!q>) -> tensor<2x7x3x6x!q>
  func.return %z : tensor<2x7x3x6x!q>
}
func.func private @vta_fn_0(%x: tensor<2x3x2x6x!q>) -> tensor<2x7x3x6x!q> attributes {qaccel.target = "vta"} {
  %n = q.resize_nearest_neighbor %x {align_corners = true, half_pixel_centers = false} : (tensor<2x3x2x6x!q>) -> tensor<2x5x4x6x!q>
  %b = q.resize_bilinear %n {align_corners = false, half_pixel_centers = true} : (tensor<2x5x4x6x!q>) -> tensor<2x7x3x6x!q>
  func.return %b : tensor<2x7x3x6x!q>
}

// -----

// A transposed convolution's overlapping taps: the taps' 1x1 convolution keeps int32
// accumulators (18 = 9 taps x 2 channels: 5 blocks of 4), accel.col2im sums them into 1 block
// of 2 channels, then the bias and requantization (checked under --verify-semantics).
// CHECK-LABEL: func.func @col2im
// CHECK:         func.func private @vta_fn_0
// CHECK:           %s = accel.col2im %t{{.*}} kernel = [3, 3] strides = [2, 2] padding = [1, 1] channels = 2 : tensor<1x5x3x3x1x4xi32> -> tensor<1x1x4x4x1x4xi32>
// CHECK-NEXT:      %{{.*}} = accel.bias_add_zp %s by [5, -7, 0, 0]
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @col2im(%x: tensor<1x3x3x3x!q>) -> tensor<1x4x4x2x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x3x3x3x!q>) -> tensor<1x4x4x2x!q>
  func.return %z : tensor<1x4x4x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x3x!q>) -> tensor<1x4x4x2x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[[[1, -2, 3]]], [[[4, 5, -6]]], [[[7, 8, 9]]], [[[-1, 2, 3]]], [[[4, -5, 6]]], [[[7, 8, -9]]], [[[1, 2, 3]]], [[[-4, 5, 6]]], [[[7, -8, 9]]], [[[1, 2, -3]]], [[[4, 5, 6]]], [[[-7, 8, 9]]], [[[1, -2, 3]]], [[[4, 5, -6]]], [[[7, 8, 9]]], [[[-1, 2, 3]]], [[[4, -5, 6]]], [[[7, 8, -9]]]]> : tensor<18x1x1x3xi8> -> tensor<18x1x1x3xi8>
  %b = tfl.const dense<[5, -7]> : tensor<2xi32> -> tensor<2xi32>
  %t = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 3 : i32, filter_zero_point = 0 : i32} : (tensor<1x3x3x3x!q>, tensor<18x1x1x3xi8>) -> tensor<1x3x3x18xi32>
  %s = q.col2im %t {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x3x3x18xi32>) -> tensor<1x4x4x2xi32>
  %a = q.bias_add %s, %b : (tensor<1x4x4x2xi32>, tensor<2xi32>) -> tensor<1x4x4x2xi32>
  %y = q.requantize %a {input_zero_point = 0 : i32, output_zero_point = 3 : i32, multiplier = array<i32: 1073741824>, shift = array<i32: -3>} : (tensor<1x4x4x2xi32>) -> tensor<1x4x4x2x!q>
  func.return %y : tensor<1x4x4x2x!q>
}
