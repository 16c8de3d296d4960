// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers' | filecheck %s
// Forming twice is forming once:
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,insert-pack-unpack,lower-q-to-accel,form-vta-layers,form-vta-layers' | filecheck %s

// form-vta-layers moves the ops of each accelerator layer into one `vta.layer` (its kind,
// its ops, `vta.yield` of what it stores). --verify-semantics runs the IR before and after
// the pass on the same inputs: the formed IR computes the same values.

// A 3x3 convolution with bias, per-channel requantization and relu: one "conv" layer, from
// the GEMM op to the narrowing. The filter and bias constants stay outside (read from above).
// CHECK-LABEL: func.func @conv
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %w_packed = tfl.const
// CHECK-NEXT:    %y = vta.layer "conv" {
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(-1)
// CHECK-NEXT:      %bias = accel.bias_add_zp %acc by [262, -38, 462, -238, 662, -438, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK-NEXT:      %[[M:.*]] = accel.round_multiply %bias
// CHECK-NEXT:      %[[S:.*]] = accel.round_rshift %[[M]]
// CHECK-NEXT:      %[[LO:.*]] = accel.max %[[S]] by [0]
// CHECK-NEXT:      %[[HI:.*]] = accel.min %[[LO]] by [124]
// CHECK-NEXT:      %[[ZP:.*]] = accel.add %[[HI]] by [3]
// CHECK-NEXT:      %[[Y:.*]] = accel.narrow %[[ZP]] : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:      vta.yield %[[Y]] : tensor<1x1x8x8x1x16x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    } : tensor<1x1x8x8x1x16x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    func.return %y
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

// A residual add with its requantization: one "eltwise" layer over the two int8 inputs
// (widened, rescaled, added, requantized, clamped, narrowed).
// CHECK-LABEL: func.func @add
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %s = vta.layer "eltwise" {
// CHECK-NEXT:      %[[X:.*]] = accel.widen %x
// CHECK-NEXT:      %[[X1:.*]] = accel.add %[[X]] by [34]
// CHECK-NEXT:      %[[X2:.*]] = accel.shift_left %[[X1]] by [20]
// CHECK-NEXT:      %[[X3:.*]] = accel.round_multiply %[[X2]] by [1073741824]
// CHECK-NEXT:      %[[Y:.*]] = accel.widen %y
// CHECK:           %[[Y4:.*]] = accel.round_rshift %{{.*}} by [1]
// CHECK-NEXT:      %[[SUM:.*]] = accel.add %[[X3]], %[[Y4]]
// CHECK:           %[[Z:.*]] = accel.narrow
// CHECK-NEXT:      vta.yield %[[Z]]
// CHECK-NEXT:    } : tensor<1x1x2x2x1x16x!quant.uniform<i8:f32, 0.75:-128>>
// CHECK-NEXT:    func.return %s
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

// A 2x2 max pool of an int8 tensor: one "pool" layer (widen, pool, narrow).
// CHECK-LABEL: func.func @pool
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %m = vta.layer "pool" {
// CHECK-NEXT:      %[[W:.*]] = accel.widen %x
// CHECK-NEXT:      %[[P:.*]] = accel.max_pool2d %[[W]] window = [2, 2] strides = [2, 2]
// CHECK-NEXT:      %[[N:.*]] = accel.narrow %[[P]]
// CHECK-NEXT:      vta.yield %[[N]]
// CHECK-NEXT:    } : tensor<1x1x2x2x1x16x!quant.uniform<i8:f32, 0.5:3>>
// CHECK-NEXT:    func.return %m
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

// A spatial MEAN with keep_dims ([1, 1, 1, C], packed [1, C/B, 1, 1, 1, B]): one "eltwise"
// layer, as without keep_dims (the squeeze-excite form; it used to stay on the host).
// CHECK-LABEL: func.func @mean_keep_dims
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %y = vta.layer "eltwise" {
// CHECK-NEXT:      %[[W:.*]] = accel.widen %x
// CHECK-NEXT:      %[[S:.*]] = accel.reduce_sum %[[W]] axes = [2, 3] : tensor<1x1x3x3x1x16xi32> -> tensor<1x1x1x1x1x16xi32>
// CHECK:           vta.yield
// CHECK-NEXT:    } : tensor<1x1x1x1x1x16x!quant.uniform<i8:f32, 0.25:-128>>
!q = !quant.uniform<i8:f32, 0.5:-128>
!o = !quant.uniform<i8:f32, 0.25:-128>
func.func @mean_keep_dims(%x: tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o>
  func.return %y : tensor<1x1x1x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o> attributes {qaccel.target = "vta"} {
  %y = q.mean %x {axes = array<i64: 1, 2>, num_elements = 9 : i32, input_zero_point = -128 : i32, multiplier = 1908874354 : i32, shift = -3 : i32, output_zero_point = -128 : i32} : (tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o>
  func.return %y : tensor<1x1x1x6x!o>
}

// -----

// A MEAN of a MEAN (keep_dims, then over the 1x1 map): one layer whose second sum, over one
// row, is no reduction (tests/test_vta_eltwise.py runs it: it once summed nothing).
// CHECK-LABEL: func.func @mean_of_mean
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %y = vta.layer "eltwise" {
// CHECK:           accel.reduce_sum %{{.*}} axes = [2, 3] : tensor<1x1x3x3x1x16xi32> -> tensor<1x1x1x1x1x16xi32>
// CHECK:           accel.reduce_sum %{{.*}} axes = [2, 3] : tensor<1x1x1x1x1x16xi32> -> tensor<1x1x1x1x1x16xi32>
// CHECK:           vta.yield
!q = !quant.uniform<i8:f32, 0.5:-128>
!o = !quant.uniform<i8:f32, 0.25:-128>
func.func @mean_of_mean(%x: tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o>
  func.return %y : tensor<1x1x1x6x!o>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!o> attributes {qaccel.target = "vta"} {
  %m = q.mean %x {axes = array<i64: 1, 2>, num_elements = 9 : i32, input_zero_point = -128 : i32, multiplier = 1908874354 : i32, shift = -3 : i32, output_zero_point = -128 : i32} : (tensor<1x3x3x6x!q>) -> tensor<1x1x1x6x!q>
  %y = q.mean %m {axes = array<i64: 1, 2>, num_elements = 1 : i32, input_zero_point = -128 : i32, multiplier = 1073741824 : i32, shift = 1 : i32, output_zero_point = -128 : i32} : (tensor<1x1x1x6x!q>) -> tensor<1x1x1x6x!o>
  func.return %y : tensor<1x1x1x6x!o>
}

// -----

// Accumulators that leave without a requantization form no layer: the op stays where it is
// and says why (it runs on the host; qaccel-compile reports the reason).
// CHECK-LABEL: func.func @not_a_layer
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %w = tfl.const
// CHECK-NEXT:    %acc = accel.conv2d_zp %x, %w {{.*}} {accel.host_reason = "the accumulators go to func.return, not a requantization"}
// CHECK-NEXT:    func.return %acc
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

// A batch of two images: the same "conv" layer as for one, on the packed batch
// [2, C/B, H, W, 1, B] (the accelerator runs it as an outer loop over the images).
// CHECK-LABEL: func.func @conv_batch
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %w_packed = tfl.const
// CHECK-NEXT:    %r = vta.layer "conv" {
// CHECK-NEXT:      %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) {{.*}} : tensor<2x1x6x6x1x16x!quant.uniform<i8:f32, 0.5:-1>>, {{.*}} -> tensor<2x1x6x6x1x16xi32>
// CHECK:           vta.yield %{{.*}} : tensor<2x1x6x6x1x16x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    } : tensor<2x1x6x6x1x16x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    func.return %r
!qi = !quant.uniform<i8:f32, 0.5:-1>
!qo = !quant.uniform<i8:f32, 0.25:3>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0, 0.3:0, 0.4:0}>
func.func @conv_batch(%x: tensor<2x6x6x4x!qi>) -> tensor<2x6x6x4x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<2x6x6x4x!qi>) -> tensor<2x6x6x4x!qo>
  func.return %y : tensor<2x6x6x4x!qo>
}
func.func private @vta_fn_0(%x: tensor<2x6x6x4x!qi>) -> tensor<2x6x6x4x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<3> : tensor<4x3x3x4xi8> -> tensor<4x3x3x4x!w>
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<2x6x6x4x!qi>, tensor<4x3x3x4x!w>) -> tensor<2x6x6x4xi32>
  %r = q.requantize %acc {multiplier = array<i32: 1073741824, 1288490189, 1503238554, 1717986918>, shift = array<i32: -3, -4, -5, -6>, input_zero_point = 0 : i32, output_zero_point = 3 : i32} : (tensor<2x6x6x4xi32>) -> tensor<2x6x6x4x!qo>
  func.return %r : tensor<2x6x6x4x!qo>
}

// -----

// A batch of two images through a max pool: one "pool" layer on the packed batch, as for one
// image.
// CHECK-LABEL: func.func @pool_batch
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %m = vta.layer "pool" {
// CHECK-NEXT:      %[[W:.*]] = accel.widen %x
// CHECK-NEXT:      %[[P:.*]] = accel.max_pool2d %[[W]] window = [2, 2] strides = [2, 2] : tensor<2x1x4x4x1x16xi32> -> tensor<2x1x2x2x1x16xi32>
// CHECK-NEXT:      %[[N:.*]] = accel.narrow %[[P]]
// CHECK-NEXT:      vta.yield %[[N]]
// CHECK-NEXT:    } : tensor<2x1x2x2x1x16x!quant.uniform<i8:f32, 0.5:3>>
// CHECK-NEXT:    func.return %m
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @pool_batch(%x: tensor<2x4x4x6x!q>) -> tensor<2x2x2x6x!q> {
  %m = func.call @vta_fn_0(%x) : (tensor<2x4x4x6x!q>) -> tensor<2x2x2x6x!q>
  func.return %m : tensor<2x2x2x6x!q>
}
func.func private @vta_fn_0(%x: tensor<2x4x4x6x!q>) -> tensor<2x2x2x6x!q> attributes {qaccel.target = "vta"} {
  %m = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<2x4x4x6x!q>) -> tensor<2x2x2x6x!q>
  func.return %m : tensor<2x2x2x6x!q>
}

// -----

// A residual add of a batch of three images: one "eltwise" layer on the packed batch.
// CHECK-LABEL: func.func @add_batch
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %s = vta.layer "eltwise" {
// CHECK:           accel.add %{{.*}}, %{{.*}} : tensor<3x1x2x2x1x16xi32>, tensor<3x1x2x2x1x16xi32>
// CHECK:         } : tensor<3x1x2x2x1x16x!quant.uniform<i8:f32, 0.75:-128>>
// CHECK-NEXT:    func.return %s
!a = !quant.uniform<i8:f32, 0.5:-34>
!b = !quant.uniform<i8:f32, 0.25:-2>
!o = !quant.uniform<i8:f32, 0.75:-128>
func.func @add_batch(%x: tensor<3x2x2x6x!a>, %y: tensor<3x2x2x6x!b>) -> tensor<3x2x2x6x!o> {
  %z = func.call @vta_fn_0(%x, %y) : (tensor<3x2x2x6x!a>, tensor<3x2x2x6x!b>) -> tensor<3x2x2x6x!o>
  func.return %z : tensor<3x2x2x6x!o>
}
func.func private @vta_fn_0(%x: tensor<3x2x2x6x!a>, %y: tensor<3x2x2x6x!b>) -> tensor<3x2x2x6x!o> attributes {qaccel.target = "vta"} {
  %s = q.add %x, %y {lhs_zero_point = -34 : i32, rhs_zero_point = -2 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1925241870 : i32, rhs_shift = -1 : i32, output_multiplier = 1701543333 : i32, output_shift = -18 : i32, output_zero_point = -128 : i32} : (tensor<3x2x2x6x!a>, tensor<3x2x2x6x!b>) -> tensor<3x2x2x6x!o>
  func.return %s : tensor<3x2x2x6x!o>
}

// -----

// Flatten of a batch of two 2x2 maps of one whole channel block: both layouts hold the plain
// tensor's bytes, so lower-q-to-accel makes it accel.reshape (nothing moves), a copy step
// between the layers.
// CHECK-LABEL: func.func @flatten_one_block
// CHECK:       func.func private @vta_fn_0
// CHECK:         %r = accel.reshape %x : tensor<2x1x2x2x1x16x{{.*}}> -> tensor<2x4x1x16x{{.*}}>
// CHECK-NEXT:    func.return %r
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @flatten_one_block(%x: tensor<2x2x2x16x!q>) -> tensor<2x64x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<2x2x2x16x!q>) -> tensor<2x64x!q>
  func.return %z : tensor<2x64x!q>
}
func.func private @vta_fn_0(%x: tensor<2x2x2x16x!q>) -> tensor<2x64x!q> attributes {qaccel.target = "vta"} {
  %r = q.reshape %x : (tensor<2x2x2x16x!q>) -> tensor<2x64x!q>
  func.return %r : tensor<2x64x!q>
}

// -----

// FULLY_CONNECTED over tokens [1, T, I] with keep_num_dims: the packed input [1, I/B, T, 1, B]
// holds the bytes of a row of T pixels, so the matrix product forms a "conv" layer (a 1x1
// convolution, T output pixels) whose int32 accumulators the host requantizes in double.
// CHECK-LABEL: func.func @tokens
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %w_packed = tfl.const
// CHECK-NEXT:    %bias = vta.layer "conv" {
// CHECK-NEXT:      %acc = accel.dense_zp %x, %w_packed : tensor<1x1x3x1x16x!quant.uniform<i8:f32, 0.5:-3>>, tensor<1x1x16x16xi8> -> tensor<1x1x3x1x16xi32>
// CHECK-NEXT:      %bias_1 = accel.bias_add_zp %acc by [73, -43, -39, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
// CHECK-NEXT:      vta.yield %bias_1 : tensor<1x1x3x1x16xi32>
// CHECK-NEXT:    } : tensor<1x1x3x1x16xi32>
// CHECK-NEXT:    %r = accel.host_requantize %bias
// CHECK-NEXT:    func.return %r
!qi = !quant.uniform<i8:f32, 0.5:-3>
!qo = !quant.uniform<i8:f32, 0.25:-10>
func.func @tokens(%x: tensor<1x3x6x!qi>) -> tensor<1x3x3x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x6x!qi>) -> tensor<1x3x3x!qo>
  func.return %y : tensor<1x3x3x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x3x6x!qi>) -> tensor<1x3x3x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6], [127, -128, 127, -128, 127, -128]]> : tensor<3x6xi8> -> tensor<3x6xi8>
  %b = tfl.const dense<[10, 20, -30]> : tensor<3xi32> -> tensor<3xi32>
  %acc = q.dense %x, %w {input_zero_point = -3 : i32, filter_zero_point = 0 : i32} : (tensor<1x3x6x!qi>, tensor<3x6xi8>) -> tensor<1x3x3xi32>
  %bias = q.bias_add %acc, %b : (tensor<1x3x3xi32>, tensor<3xi32>) -> tensor<1x3x3xi32>
  %r = q.requantize %bias {scale = array<f64: 0.5, 0.0625, 0.3333333333333333>, input_zero_point = 0 : i32, output_zero_point = -10 : i32} : (tensor<1x3x3xi32>) -> tensor<1x3x3x!qo>
  func.return %r : tensor<1x3x3x!qo>
}

// -----

// The same without keep_num_dims: the result [T, O] packs as rows ([T, O/B, 1, B]), not in
// the tokens' layout the input has, so no layer forms and the op says why.
// CHECK-LABEL: func.func @tokens_to_rows
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %w_packed = tfl.const
// CHECK-NEXT:    %acc = accel.dense_zp %x, %w_packed {accel.host_reason = "dense of tokens [1, 1, 3, 1, 16] to rows [3, 1, 1, 16] (the input in the tokens' layout, the output in the rows' layout)"}
!qi = !quant.uniform<i8:f32, 0.5:-3>
!qo = !quant.uniform<i8:f32, 0.25:-10>
func.func @tokens_to_rows(%x: tensor<1x3x6x!qi>) -> tensor<3x3x!qo> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x6x!qi>) -> tensor<3x3x!qo>
  func.return %y : tensor<3x3x!qo>
}
func.func private @vta_fn_0(%x: tensor<1x3x6x!qi>) -> tensor<3x3x!qo> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[1, 2, 3, 4, 5, 6], [-1, -2, -3, -4, -5, -6], [127, -128, 127, -128, 127, -128]]> : tensor<3x6xi8> -> tensor<3x6xi8>
  %b = tfl.const dense<[10, 20, -30]> : tensor<3xi32> -> tensor<3xi32>
  %acc = q.dense %x, %w {input_zero_point = -3 : i32, filter_zero_point = 0 : i32} : (tensor<1x3x6x!qi>, tensor<3x6xi8>) -> tensor<3x3xi32>
  %bias = q.bias_add %acc, %b : (tensor<3x3xi32>, tensor<3xi32>) -> tensor<3x3xi32>
  %r = q.requantize %bias {scale = array<f64: 0.5, 0.0625, 0.3333333333333333>, input_zero_point = 0 : i32, output_zero_point = -10 : i32} : (tensor<3x3xi32>) -> tensor<3x3x!qo>
  func.return %r : tensor<3x3x!qo>
}

// -----

// A transposed convolution's overlapping taps: the taps' 1x1 convolution forms a "conv" layer
// whose int32 accumulators (zero-point term folded) the accelerator stores; accel.col2im, the
// bias and the requantization stay host steps of the program.
// CHECK-LABEL: func.func @col2im
// CHECK:       func.func private @vta_fn_0
// CHECK:         %t_fused = vta.layer "conv" {
// CHECK-NEXT:      %t = accel.conv2d_zp %x, %w_packed
// CHECK-NEXT:      %t_fused_1 = accel.bias_add_zp %t
// CHECK-NEXT:      vta.yield %t_fused_1 : tensor<1x2x3x3x1x16xi32>
// CHECK-NEXT:    } : tensor<1x2x3x3x1x16xi32>
// CHECK-NEXT:    %s = accel.col2im %t_fused kernel = [3, 3] strides = [2, 2] padding = [1, 1] channels = 2 : tensor<1x2x3x3x1x16xi32> -> tensor<1x1x4x4x1x16xi32>
// CHECK-NEXT:    %a = accel.bias_add_zp %s
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

// -----

// A BATCH_MATMUL's product (weight tiles gathered at run time by accel.bmm_operand): a
// "conv" layer over the M tokens whose accumulators start from the zero-point correction
// (read from above, like the gathered operands) and whose tail is the requantization.
// CHECK-LABEL: func.func @bmm
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %[[A:.*]] = accel.bmm_operand %a {{{.*}}operand = 0 : i64
// CHECK-NEXT:    %[[W:.*]] = accel.bmm_operand %b {{{.*}}operand = 1 : i64
// CHECK-NEXT:    %[[C:.*]] = accel.bmm_zp_correction %a, %b
// CHECK-NEXT:    %y = vta.layer "conv" {
// CHECK-NEXT:      %[[P:.*]] = accel.dense_zp %[[A]], %[[W]] : {{.*}} -> tensor<1x1x5x1x16xi32>
// CHECK-NEXT:      %[[S:.*]] = accel.add %[[P]], %[[C]]
// CHECK-NEXT:      accel.round_multiply %[[S]] by [1771435189]
// CHECK-NEXT:      accel.round_rshift
// CHECK-NEXT:      accel.max
// CHECK-NEXT:      accel.min
// CHECK-NEXT:      accel.add
// CHECK-NEXT:      %[[Y:.*]] = accel.narrow
// CHECK-NEXT:      vta.yield %[[Y]]
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

// -----

// A BATCH_MATMUL over two batch indices: one "conv" layer whose images are the batch indices,
// each with its own weight tiles (accel.bmm_operand and the correction with index -1: every
// index stacked), so the program stops once for the gathers, not once per index.
// CHECK-LABEL: func.func @bmm_stacked
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %[[A:.*]] = accel.bmm_operand %a {{{.*}}operand = 0 : i64, {{.*}}index = -1 : i64} : {{.*}} -> tensor<2x1x5x1x16x
// CHECK-NEXT:    %[[W:.*]] = accel.bmm_operand %b {{{.*}}operand = 1 : i64, {{.*}}index = -1 : i64} : {{.*}} -> tensor<2x1x1x16x16x
// CHECK-NEXT:    %[[C:.*]] = accel.bmm_zp_correction %a, %b {{.*}} -> tensor<2x1x5x1x16xi32>
// CHECK-NEXT:    %y = vta.layer "conv" {
// CHECK-NEXT:      %[[P:.*]] = accel.dense_zp %[[A]], %[[W]] : {{.*}} -> tensor<2x1x5x1x16xi32>
// CHECK-NEXT:      %[[S:.*]] = accel.add %[[P]], %[[C]]
// CHECK:           %[[Y:.*]] = accel.narrow
// CHECK-NEXT:      vta.yield %[[Y]]
// CHECK-NEXT:    } : tensor<2x1x5x1x16x
// CHECK-NEXT:    func.return %y
!qa = !quant.uniform<i8:f32, 0.03:3>
!qo = !quant.uniform<i8:f32, 0.135:-4>
func.func @bmm_stacked(%a: tensor<2x5x7x!qa>, %b: tensor<2x7x3x!qa>) -> tensor<2x5x3x!qo> {
  %y = func.call @vta_fn_0(%a, %b) : (tensor<2x5x7x!qa>, tensor<2x7x3x!qa>) -> tensor<2x5x3x!qo>
  func.return %y : tensor<2x5x3x!qo>
}
func.func private @vta_fn_0(%a: tensor<2x5x7x!qa>, %b: tensor<2x7x3x!qa>) -> tensor<2x5x3x!qo> attributes {qaccel.target = "vta"} {
  %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = -128 : i32, rhs_zero_point = 3 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32} : (tensor<2x5x7x!qa>, tensor<2x7x3x!qa>) -> tensor<2x5x3x!qo>
  func.return %y : tensor<2x5x3x!qo>
}
