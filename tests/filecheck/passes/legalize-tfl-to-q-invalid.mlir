// RUN: not qaccel-opt %s --split-input-file -p 'legalize-tfl-to-q{ops=conv_2d,gelu}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p legalize-tfl-to-q | filecheck %s

// An op kind the pass does not know is refused before anything is rewritten.
// OPTION: qaccel-opt: error: legalize-tfl-to-q: unknown op kind 'gelu' in ops (known: add, average_pool_2d, batch_matmul, concatenation, conv_2d, dense_tokens, depthwise_conv_2d, float_chain, fully_connected, max_pool_2d, maximum, mean, mean_reshape, minimum, mul, pad, padv2, reshape, resize_bilinear, resize_nearest_neighbor, softmax, squared_difference, strided_slice, sub, table, transpose, transpose_conv, transpose_conv_taps)
// CHECK-LABEL: func.func @f
func.func @f() {
  func.return
}

// -----

// A fused activation TFLite does not have: the input does not verify, nothing is legalized.
// CHECK: tfl.add: fused_activation_function = "SIGMOID" is not one of NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @add_bad_activation(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "SIGMOID", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %0 : tensor<4x!q>
}

// -----

// Operands whose shapes do not broadcast.
// CHECK: tfl.add: shapes [4] and [3] do not broadcast
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @add_shapes(%x: tensor<4x!q>, %y: tensor<3x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %y {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<3x!q>) -> tensor<4x!q>
  func.return %0 : tensor<4x!q>
}

// -----

// A resize already legalized with both coordinate flags (which LiteRT refuses) does not verify.
// CHECK: q.resize_bilinear: align_corners and half_pixel_centers cannot both be true
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @resize_both_flags(%x: tensor<1x2x2x1x!q>) -> tensor<1x4x4x1x!q> {
  %0 = q.resize_bilinear %x {align_corners = true, half_pixel_centers = true} : (tensor<1x2x2x1x!q>) -> tensor<1x4x4x1x!q>
  func.return %0 : tensor<1x4x4x1x!q>
}
