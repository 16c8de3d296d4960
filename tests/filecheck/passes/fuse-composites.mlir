// RUN: qaccel-opt %s -p fuse-composites --split-input-file --verify-diagnostics --print-debuginfo | filecheck %s
// RUN: qaccel-opt %s -p 'fuse-composites{keep-unregistered=true}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=KEEP
// RUN: qaccel-opt %s -p 'fuse-composites{allow-inexact=true}' --split-input-file --verify-diagnostics --print-debuginfo | filecheck %s --check-prefix=INEXACT

// embedding_lookup, as ai-edge-torch writes it: (ids, table). The decomposition goes away.

!q = !quant.uniform<i8:f32, 0.02:3>

// CHECK-LABEL: func.func @odml_embedding_lookup
// CHECK-NEXT:    %table = tfl.const
// CHECK-NEXT:    %0 = tfl.embedding_lookup %ids, %table : (tensor<4xi32>, tensor<6x3x!quant.uniform<i8:f32, 0.02:3>>) -> tensor<4x3x!quant.uniform<i8:f32, 0.02:3>>
// CHECK-NEXT:    func.return %0
// CHECK-NOT:   tfl.stablehlo_composite
// CHECK-NOT:   @lookup_impl
func.func @odml_embedding_lookup(%ids: tensor<4xi32>) -> tensor<4x3x!q> {
  %table = tfl.const dense<7> : tensor<6x3xi8> -> tensor<6x3x!q>
  %0 = tfl.stablehlo_composite %ids, %table {name = "odml.embedding_lookup", decomposition = @lookup_impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xi32>, tensor<6x3x!q>) -> tensor<4x3x!q>
  func.return %0 : tensor<4x3x!q>
}
func.func private @lookup_impl(%ids: tensor<4xi32>, %table: tensor<6x3x!q>) -> tensor<4x3x!q> {
  %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<6x3x!q>, tensor<4xi32>) -> tensor<4x3x!q>
  func.return %0 : tensor<4x3x!q>
}

// -----

// embedding_lookup as a TensorFlow function, (table, ids): the body becomes the fused op,
// operands swapped to the fused op's (ids, table); callers are untouched.

// CHECK-LABEL: func.func @caller
// CHECK-NEXT:    func.call @EmbFprop(%embs, %ids)
func.func @caller(%embs: tensor<10x4xf32>, %ids: tensor<3xi32>) -> tensor<3x4xf32> {
  %0 = func.call @EmbFprop(%embs, %ids) : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func private @EmbFprop
// CHECK-SAME:    -> tensor<3x4xf32> attributes {qaccel.fused = "embedding_lookup"} {
// CHECK-NEXT:    %0 = tfl.embedding_lookup %ids, %embs : (tensor<3xi32>, tensor<10x4xf32>) -> tensor<3x4xf32> loc("EmbFprop"(unknown))
// CHECK-NEXT:    func.return %0 : tensor<3x4xf32>
// CHECK-NEXT:  }
func.func private @EmbFprop(%embs: tensor<10x4xf32>, %ids: tensor<3xi32>) -> tensor<3x4xf32> attributes {tf._implements = "embedding_lookup"} {
  %0 = tfl.gather %embs, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<10x4xf32>, tensor<3xi32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// Hybrid lookup: int8 table, float rows (GATHER + DEQUANTIZE round `scale * q` once, as the
// fused op does). A per-channel table has no such decomposition: fused only when allowed.

!t = !quant.uniform<i8:f32, 0.5:0>
!c = !quant.uniform<i8:f32:0, {0.5:0, 0.25:0, 0.125:0}>

// CHECK-LABEL: func.func @hybrid_lookup
// CHECK:         tfl.embedding_lookup %ids, %table : (tensor<2xi32>, tensor<3x4x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<2x4xf32>
// CHECK-LABEL: func.func @per_channel_hybrid_lookup
// CHECK-SAME:    attributes {qaccel.implements = "embedding_lookup"}
// INEXACT-LABEL: func.func @per_channel_hybrid_lookup
// INEXACT:         tfl.embedding_lookup %ids, %table : (tensor<2xi32>, tensor<3x4x!quant.uniform<i8:f32:0, {0.5:0, 0.25:0, 0.125:0}>>) -> tensor<2x4xf32>
func.func @hybrid_lookup(%ids: tensor<2xi32>, %table: tensor<3x4x!t>) -> tensor<2x4xf32> attributes {qaccel.implements = "embedding_lookup"} {
  %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<3x4x!t>, tensor<2xi32>) -> tensor<2x4x!t>
  %1 = tfl.dequantize %0 : (tensor<2x4x!t>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}
func.func @per_channel_hybrid_lookup(%ids: tensor<2xi32>, %table: tensor<3x4x!c>) -> tensor<2x4xf32> attributes {qaccel.implements = "embedding_lookup"} {
  %0 = tfl.dequantize %table : (tensor<3x4x!c>) -> tensor<3x4xf32>
  %1 = tfl.gather %0, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<3x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  func.return %1 : tensor<2x4xf32>
}

// -----

// hard_swish from an int8 decomposition (as ai-edge-torch names it). HARD_SWISH rounds once
// where the ADD/MUL/MUL chain rounds three times, so by default the composite is inlined
// (its output name moving to the last op); with allow-inexact=true it becomes one
// tfl.hard_swish named after the composite's output.

!x = !quant.uniform<i8:f32, 0.06:5>
!y = !quant.uniform<i8:f32, 0.035:-110>

// CHECK-LABEL: func.func @aten_hardswish
// CHECK:         tfl.add
// CHECK-NEXT:    tfl.mul
// CHECK-NEXT:    %{{.*}} = tfl.mul %x, {{.*}} loc("y")
// CHECK-NOT:   func.func
// INEXACT-LABEL: func.func @aten_hardswish
// INEXACT-NEXT:    %0 = tfl.hard_swish %x : (tensor<1x8x!quant.uniform<i8:f32, 0.06:5>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.035:-110>> loc("y")
// INEXACT-NEXT:    func.return %0
// INEXACT-NOT:   func.func
func.func @aten_hardswish(%x: tensor<1x8x!x>) -> tensor<1x8x!y> {
  %0 = tfl.stablehlo_composite %x {name = "aten.hardswish.default", decomposition = @hswish_impl, composite_attributes = {}, version = 0 : i32} : (tensor<1x8x!x>) -> tensor<1x8x!y> loc("y")
  func.return %0 : tensor<1x8x!y>
}
func.func private @hswish_impl(%x: tensor<1x8x!x>) -> tensor<1x8x!y> {
  %three = tfl.const dense<127> : tensor<1xi8> -> tensor<1x!quant.uniform<i8:f32, 0.023622047:0>>
  %sixth = tfl.const dense<127> : tensor<1xi8> -> tensor<1x!quant.uniform<i8:f32, 0.001312336:0>>
  %0 = tfl.add %x, %three {fused_activation_function = "RELU6", pot_scale_int16 = true} : (tensor<1x8x!x>, tensor<1x!quant.uniform<i8:f32, 0.023622047:0>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.023529412:-128>>
  %1 = tfl.mul %0, %sixth {fused_activation_function = "NONE"} : (tensor<1x8x!quant.uniform<i8:f32, 0.023529412:-128>>, tensor<1x!quant.uniform<i8:f32, 0.001312336:0>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.003921569:-128>>
  %2 = tfl.mul %x, %1 {fused_activation_function = "NONE"} : (tensor<1x8x!x>, tensor<1x8x!quant.uniform<i8:f32, 0.003921569:-128>>) -> tensor<1x8x!y>
  func.return %2 : tensor<1x8x!y>
}

// -----

// hard_swish as a float function (tf.api_implements): not provably exact, so left alone by
// default; with allow-inexact=true the fused op takes the location of what the body returned.

// CHECK-LABEL: func.func @float_hswish
// CHECK-SAME:    attributes {tf.api_implements = "hard_swish"}
// CHECK:         tfl.add
// INEXACT-LABEL: func.func @float_hswish
// INEXACT-SAME:    attributes {qaccel.fused = "hard_swish"}
// INEXACT-NEXT:    %0 = tfl.hard_swish %x : (tensor<5xf32>) -> tensor<5xf32> loc("hswish/out")
// INEXACT-NEXT:    func.return %0 : tensor<5xf32>
func.func @float_hswish(%x: tensor<5xf32>) -> tensor<5xf32> attributes {tf.api_implements = "hard_swish"} {
  %three = tfl.const dense<3.0> : tensor<1xf32> -> tensor<1xf32>
  %sixth = tfl.const dense<0.166666672> : tensor<1xf32> -> tensor<1xf32>
  %0 = tfl.add %x, %three {fused_activation_function = "RELU6", pot_scale_int16 = true} : (tensor<5xf32>, tensor<1xf32>) -> tensor<5xf32>
  %1 = tfl.mul %0, %sixth {fused_activation_function = "NONE"} : (tensor<5xf32>, tensor<1xf32>) -> tensor<5xf32>
  %2 = tfl.mul %x, %1 {fused_activation_function = "NONE"} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32> loc("hswish/out")
  func.return %2 : tensor<5xf32>
}

// -----

// conv2d_bias_relu with constant OHWI weights and a bias: one convolution with a fused RELU.

!x = !quant.uniform<i8:f32, 0.05:-3>
!w = !quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>
!b = !quant.uniform<i32:f32:0, {0.0005:0, 0.001:0}>
!y = !quant.uniform<i8:f32, 0.04:-20>

// CHECK-LABEL: func.func @conv_block
// CHECK-NEXT:    %w = tfl.const
// CHECK-NEXT:    %b = tfl.const
// CHECK-NEXT:    %0 = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32}
// CHECK-SAME:      -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.04:-20>>
// CHECK-NEXT:    func.return %0
func.func @conv_block(%x: tensor<1x4x4x3x!x>) -> tensor<1x4x4x2x!y> {
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!w>
  %b = tfl.const dense<[10, -10]> : tensor<2xi32> -> tensor<2x!b>
  %0 = tfl.stablehlo_composite %x, %w, %b {name = "conv2d_bias_relu", decomposition = @conv_impl, composite_attributes = {padding = "SAME", strides = [1 : i64, 1 : i64]}, version = 0 : i32} : (tensor<1x4x4x3x!x>, tensor<2x3x3x3x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!y>
  func.return %0 : tensor<1x4x4x2x!y>
}
func.func private @conv_impl(%x: tensor<1x4x4x3x!x>, %w: tensor<2x3x3x3x!w>, %b: tensor<2x!b>) -> tensor<1x4x4x2x!y> {
  %0 = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x3x!x>, tensor<2x3x3x3x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!y>
  %1 = tfl.relu %0 : (tensor<1x4x4x2x!y>) -> tensor<1x4x4x2x!y>
  func.return %1 : tensor<1x4x4x2x!y>
}

// -----

// conv2d_bias_relu with a constant TensorFlow-layout (HWIO) filter and no bias: the transpose
// to OHWI folds into a new constant (the old one is erased), and a zero bias of the
// converter's bias quantization (input scale x filter scales) is added.

!x = !quant.uniform<i8:f32, 0.05:-3>
!w = !quant.uniform<i8:f32:3, {0.01:0, 0.02:0}>
!y = !quant.uniform<i8:f32, 0.05:-60>

// CHECK-LABEL: func.func @conv_hwio_const
// CHECK-NEXT:    %0 = tfl.const dense<[{{\[\[\[}}1, 3], [5, 7]], {{\[\[}}9, 11], [13, 15]]], {{\[\[\[}}2, 4], [6, 8]], {{\[\[}}10, 12], [14, 16]]]]> : tensor<2x2x2x2xi8> -> tensor<2x2x2x2x!quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>> loc("w/filter_ohwi")
// CHECK-NEXT:    %1 = tfl.const dense<0> : tensor<2xi32> -> tensor<2x!quant.uniform<i32:f32:0, {0.0005:0, 0.001:0}>> loc("y/zero_bias")
// CHECK-NEXT:    %2 = tfl.conv_2d %x, %0, %1 {padding = "VALID", stride_w = 2 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32}
// CHECK-SAME:      loc("y")
// CHECK-NEXT:    func.return %2
func.func @conv_hwio_const(%x: tensor<1x3x5x2x!x>) -> tensor<1x2x2x2x!y> {
  %w = tfl.const dense<[[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[[9, 10], [11, 12]], [[13, 14], [15, 16]]]]> : tensor<2x2x2x2xi8> -> tensor<2x2x2x2x!w> loc("w")
  %0 = tfl.stablehlo_composite %x, %w {name = "conv2d_bias_relu", decomposition = @conv_impl, composite_attributes = {padding = "VALID", strides = [1 : i64, 2 : i64], activation = "RELU6", filter_layout = "HWIO"}, version = 0 : i32} : (tensor<1x3x5x2x!x>, tensor<2x2x2x2x!w>) -> tensor<1x2x2x2x!y> loc("y")
  func.return %0 : tensor<1x2x2x2x!y>
}
func.func private @conv_impl(%x: tensor<1x3x5x2x!x>, %w: tensor<2x2x2x2x!w>) -> tensor<1x2x2x2x!y> {
  %perm = tfl.const dense<[3, 0, 1, 2]> : tensor<4xi32> -> tensor<4xi32>
  %ohwi = tfl.transpose %w, %perm : (tensor<2x2x2x2x!w>, tensor<4xi32>) -> tensor<2x2x2x2x!quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>>
  %zero = tfl.const dense<0> : tensor<2xi32> -> tensor<2x!quant.uniform<i32:f32:0, {0.0005:0, 0.001:0}>>
  %0 = tfl.conv_2d %x, %ohwi, %zero {padding = "VALID", stride_w = 2 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x3x5x2x!x>, tensor<2x2x2x2x!quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>>, tensor<2x!quant.uniform<i32:f32:0, {0.0005:0, 0.001:0}>>) -> tensor<1x2x2x2x!y>
  %1 = tfl.relu6 %0 : (tensor<1x2x2x2x!y>) -> tensor<1x2x2x2x!y>
  func.return %1 : tensor<1x2x2x2x!y>
}

// -----

// conv2d_bias_relu as a function whose HWIO filter is an argument: the transpose stays a
// tfl.transpose (for a later constant folding). Attributes come from TensorFlow's
// NameAttrList form of tf._implements.

// CHECK-LABEL: func.func @conv_fn
// CHECK-SAME:    -> tensor<1x2x2x5xf32> attributes {qaccel.fused = "conv2d_bias_relu"} {
// CHECK-NEXT:    %0 = tfl.const dense<[3, 0, 1, 2]> : tensor<4xi32> -> tensor<4xi32> loc("y/filter_ohwi/perm")
// CHECK-NEXT:    %1 = tfl.transpose %w, %0 : (tensor<3x3x2x5xf32>, tensor<4xi32>) -> tensor<5x3x3x2xf32> loc("y/filter_ohwi")
// CHECK-NEXT:    %2 = tfl.const dense<0.000000e+00> : tensor<5xf32> -> tensor<5xf32> loc("y/zero_bias")
// CHECK-NEXT:    %3 = tfl.conv_2d %x, %1, %2 {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x2xf32>, tensor<5x3x3x2xf32>, tensor<5xf32>) -> tensor<1x2x2x5xf32> loc("y")
// CHECK-NEXT:    func.return %3
func.func @conv_fn(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x5xf32>) -> tensor<1x2x2x5xf32> attributes {tf._implements = "name: \"conv2d_bias_relu\" attr {key: \"padding\" value { s: \"VALID\" } } attr {key: \"filter_layout\" value { s: \"HWIO\" } }"} {
  %perm = tfl.const dense<[3, 0, 1, 2]> : tensor<4xi32> -> tensor<4xi32>
  %ohwi = tfl.transpose %w, %perm : (tensor<3x3x2x5xf32>, tensor<4xi32>) -> tensor<5x3x3x2xf32>
  %zero = tfl.const dense<0.0> : tensor<5xf32> -> tensor<5xf32>
  %0 = tfl.conv_2d %x, %ohwi, %zero {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x2xf32>, tensor<5x3x3x2xf32>, tensor<5xf32>) -> tensor<1x2x2x5xf32>
  %1 = tfl.relu %0 : (tensor<1x2x2x5xf32>) -> tensor<1x2x2x5xf32> loc("y")
  func.return %1 : tensor<1x2x2x5xf32>
}

// -----

// A conv2d_bias_relu whose decomposition rounds twice (the convolution's output has another
// quantization than the RELU's) is not what one fused convolution computes: inlined by
// default, fused only with allow-inexact=true.

!x = !quant.uniform<i8:f32, 0.05:-3>
!w = !quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>
!b = !quant.uniform<i32:f32:0, {0.0005:0, 0.001:0}>
!m = !quant.uniform<i8:f32, 0.03:-7>
!y = !quant.uniform<i8:f32, 0.04:-20>

// CHECK-LABEL: func.func @conv_two_roundings
// CHECK:         tfl.conv_2d {{.*}}fused_activation_function = "NONE"
// CHECK-NEXT:    tfl.relu
// INEXACT-LABEL: func.func @conv_two_roundings
// INEXACT:         tfl.conv_2d {{.*}}fused_activation_function = "RELU"
// INEXACT-NEXT:    func.return
func.func @conv_two_roundings(%x: tensor<1x4x4x3x!x>) -> tensor<1x4x4x2x!y> {
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!w>
  %b = tfl.const dense<[10, -10]> : tensor<2xi32> -> tensor<2x!b>
  %0 = tfl.stablehlo_composite %x, %w, %b {name = "conv2d_bias_relu", decomposition = @conv_impl, composite_attributes = {padding = "SAME"}, version = 0 : i32} : (tensor<1x4x4x3x!x>, tensor<2x3x3x3x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!y>
  func.return %0 : tensor<1x4x4x2x!y>
}
func.func private @conv_impl(%x: tensor<1x4x4x3x!x>, %w: tensor<2x3x3x3x!w>, %b: tensor<2x!b>) -> tensor<1x4x4x2x!y> {
  %0 = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x3x!x>, tensor<2x3x3x3x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!m>
  %1 = tfl.relu %0 : (tensor<1x4x4x2x!m>) -> tensor<1x4x4x2x!y>
  func.return %1 : tensor<1x4x4x2x!y>
}

// -----

// An unregistered composite is inlined from its decomposition, its output name moving to
// the op that now makes it; a registered composite inside it is fused first (exactly: its
// decomposition agrees with HARD_SWISH on all 256 inputs). With keep-unregistered=true the
// outer composite stays, its inner composite is still fused.

!q = !quant.uniform<i8:f32, 0.1:0>

// CHECK-LABEL: func.func @unregistered
// CHECK-NEXT:    %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : {{.*}} loc("sum")
// CHECK-NEXT:    %1 = tfl.hard_swish %0 : {{.*}} loc("out")
// CHECK-NEXT:    func.return %1
// CHECK-NOT:   func.func
// KEEP-LABEL:  func.func @unregistered
// KEEP-NEXT:     %0 = tfl.stablehlo_composite %x {name = "my.add_hswish", decomposition = @outer, composite_attributes = {alpha = 5.000000e-01 : f32}, version = 1 : i32}
// KEEP:        func.func private @outer
// KEEP-NEXT:     tfl.add
// KEEP-NEXT:     tfl.hard_swish
// KEEP-NOT:    @inner
func.func @unregistered(%x: tensor<8x!q>) -> tensor<8x!q> {
  %0 = tfl.stablehlo_composite %x {name = "my.add_hswish", decomposition = @outer, composite_attributes = {alpha = 0.5 : f32}, version = 1 : i32} : (tensor<8x!q>) -> tensor<8x!q> loc("out")
  func.return %0 : tensor<8x!q>
}
func.func private @outer(%x: tensor<8x!q>) -> tensor<8x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<8x!q>, tensor<8x!q>) -> tensor<8x!q> loc("sum")
  %1 = tfl.stablehlo_composite %0 {name = "hard_swish", decomposition = @inner, composite_attributes = {}, version = 0 : i32} : (tensor<8x!q>) -> tensor<8x!q> loc("hs")
  func.return %1 : tensor<8x!q>
}
func.func private @inner(%x: tensor<8x!q>) -> tensor<8x!q> {
  %0 = tfl.hard_swish %x : (tensor<8x!q>) -> tensor<8x!q>
  func.return %0 : tensor<8x!q>
}

// -----

// A decomposition that only forwards an operand, and one used twice: both inlined, the
// shared decomposition erased once unused. A public decomposition is kept.

!q = !quant.uniform<i8:f32, 0.1:0>

// CHECK-LABEL: func.func @forward_twice
// CHECK-NEXT:    func.return %x, %x
// CHECK-LABEL: func.func @public_impl
// CHECK-NOT:   func.func private @identity
func.func @forward_twice(%x: tensor<8x!q>) -> (tensor<8x!q>, tensor<8x!q>) {
  %0 = tfl.stablehlo_composite %x {name = "my.identity", decomposition = @identity, composite_attributes = {}, version = 0 : i32} : (tensor<8x!q>) -> tensor<8x!q>
  %1 = tfl.stablehlo_composite %x {name = "my.identity", decomposition = @public_impl, composite_attributes = {}, version = 0 : i32} : (tensor<8x!q>) -> tensor<8x!q>
  %2 = tfl.stablehlo_composite %1 {name = "my.identity", decomposition = @identity, composite_attributes = {}, version = 0 : i32} : (tensor<8x!q>) -> tensor<8x!q>
  func.return %0, %2 : tensor<8x!q>, tensor<8x!q>
}
func.func @public_impl(%x: tensor<8x!q>) -> tensor<8x!q> {
  func.return %x : tensor<8x!q>
}
func.func private @identity(%x: tensor<8x!q>) -> tensor<8x!q> {
  func.return %x : tensor<8x!q>
}

// -----

// A function implementing an interface nobody registered is left as it is.

// CHECK-LABEL: func.func @unknown_interface
// CHECK-SAME:    attributes {tf._implements = "keras_lstm_unknown"}
// CHECK-NEXT:    tfl.relu
func.func @unknown_interface(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tf._implements = "keras_lstm_unknown"} {
  %0 = tfl.relu %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// Invalid: signatures a registered fusion does not fit, and modules that cannot be fused.
// Each fails the pass with one line naming the function or composite.

func.func @lookup_float_ids(%ids: tensor<4xf32>, %table: tensor<6x3xf32>) -> tensor<4x3xf32> attributes {tf._implements = "embedding_lookup"} {
  %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<6x3xf32>, tensor<4xf32>) -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}
// CHECK: fuse-composites: func @lookup_float_ids implements 'embedding_lookup', which does not fit the fused op: no operand is a 1-D int32 tensor of ids (got tensor<4xf32>, tensor<6x3xf32>)

// -----

func.func @lookup_bad_shape(%ids: tensor<4xi32>, %table: tensor<6x3xf32>) -> tensor<4x2xf32> {
  %0 = tfl.stablehlo_composite %ids, %table {name = "odml.embedding_lookup", decomposition = @impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xi32>, tensor<6x3xf32>) -> tensor<4x2xf32> loc("rows")
  func.return %0 : tensor<4x2xf32>
}
func.func private @impl(%ids: tensor<4xi32>, %table: tensor<6x3xf32>) -> tensor<4x2xf32> {
  %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<6x3xf32>, tensor<4xi32>) -> tensor<4x2xf32>
  func.return %0 : tensor<4x2xf32>
}
// CHECK: fuse-composites: tfl.stablehlo_composite "rows" implements 'odml.embedding_lookup', which does not fit the fused op: the result shape [4, 2] is not [4, 3] (ids x row)

// -----

func.func @hswish_two_operands(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x, %x {name = "aten.hardswish.default", decomposition = @impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("h")
  func.return %0 : tensor<4xf32>
}
func.func private @impl(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  func.return %x : tensor<4xf32>
}
// CHECK: fuse-composites: tfl.stablehlo_composite "h" implements 'aten.hardswish.default', which does not fit the fused op: expected 1 operands, got 2

// -----

!q = !quant.uniform<i8:f32, 0.1:0>
func.func @hswish_mixed_types(%x: tensor<4x!q>) -> tensor<4xf32> attributes {qaccel.implements = "hard_swish"} {
  %0 = tfl.dequantize %x : (tensor<4x!q>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: fuse-composites: func @hswish_mixed_types implements 'hard_swish', which does not fit the fused op: needs float32 or per-tensor int8 operand and result, got !quant.uniform<i8:f32, 0.1:0> -> f32

// -----

// LiteRT's HARD_SWISH refuses an input scale this large for its output scale: an error when
// the fusion applies (allow-inexact=true); by default it does not, and the body stays.

!x = !quant.uniform<i8:f32, 100.0:0>
!y = !quant.uniform<i8:f32, 0.01:0>
func.func @hswish_refused(%x: tensor<4x!x>) -> tensor<4x!y> attributes {qaccel.implements = "hard_swish"} {
  %0 = tfl.quantize %x : (tensor<4x!x>) -> tensor<4x!y>
  func.return %0 : tensor<4x!y>
}
// CHECK-LABEL: func.func @hswish_refused
// CHECK-NEXT:    tfl.quantize
// INEXACT: fuse-composites: func @hswish_refused implements 'hard_swish', which does not fit the fused op: tfl.hard_swish "hswish_refused": HARD_SWISH: output multiplier exponent

// -----

func.func @conv_no_padding(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<1x2x2x3xf32> attributes {qaccel.implements = "conv2d_bias_relu"} {
  %0 = tfl.no_value
  %1 = tfl.conv_2d %x, %w, %0 {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x2xf32>, tensor<3x3x3x2xf32>, none) -> tensor<1x2x2x3xf32>
  func.return %1 : tensor<1x2x2x3xf32>
}
// CHECK: fuse-composites: func @conv_no_padding implements 'conv2d_bias_relu', which does not fit the fused op: padding must be "SAME" or "VALID", got None

// -----

func.func @conv_bad_output(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x3x2xf32>) -> tensor<1x4x4x3xf32> attributes {qaccel.implements = "conv2d_bias_relu", qaccel.implements_attributes = {padding = "VALID"}} {
  %0 = tfl.no_value
  %1 = tfl.conv_2d %x, %w, %0 {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x2xf32>, tensor<3x3x3x2xf32>, none) -> tensor<1x4x4x3xf32>
  func.return %1 : tensor<1x4x4x3xf32>
}
// CHECK: fuse-composites: func @conv_bad_output implements 'conv2d_bias_relu', which does not fit the fused op: the result shape [1, 4, 4, 3] is not the convolution's [1, 2, 2, 3]

// -----

!x = !quant.uniform<i8:f32, 0.05:-3>
!w = !quant.uniform<i8:f32:3, {0.01:0, 0.02:0}>
!y = !quant.uniform<i8:f32, 0.05:-60>
func.func @conv_filter_axis(%x: tensor<1x3x3x2x!x>, %w: tensor<2x1x1x2x!w>) -> tensor<1x3x3x2x!y> attributes {qaccel.implements = "conv2d_bias_relu", qaccel.implements_attributes = {padding = "SAME"}} {
  %0 = tfl.quantize %x : (tensor<1x3x3x2x!x>) -> tensor<1x3x3x2x!y>
  func.return %0 : tensor<1x3x3x2x!y>
}
// CHECK: fuse-composites: func @conv_filter_axis implements 'conv2d_bias_relu', which does not fit the fused op: the filter must be quantized per output channel (axis 0 of OHWI), not along axis 3

// -----

func.func @bad_implements(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tf._implements = 3 : i64} {
  func.return %x : tensor<4xf32>
}
// CHECK: fuse-composites: func @bad_implements: tf._implements must be a string, got 3 : i64

// -----

func.func @bad_signature_text(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tf._implements = "name: \"hard_swish\" attr {key: \"k\"}"} {
  func.return %x : tensor<4xf32>
}
// CHECK: fuse-composites: func @bad_signature_text: tf._implements: cannot read implements signature 'name: "hard_swish" attr {key: "k"}' at 'attr {key: "k"}'

// -----

func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "my.a", decomposition = @a, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @a(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "my.b", decomposition = @b, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @b(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "my.a", decomposition = @a, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// CHECK: fuse-composites: decompositions call themselves: @a -> @b -> @a

// -----

!q = !quant.uniform<i8:f32, 0.1:0>
func.func @inline_type_mismatch(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.stablehlo_composite %x {name = "my.op", decomposition = @impl, composite_attributes = {}, version = 0 : i32} : (tensor<4x!q>) -> tensor<4x!q> loc("z")
  func.return %0 : tensor<4x!q>
}
func.func private @impl(%x: tensor<4xi8>) -> tensor<4xi8> {
  func.return %x : tensor<4xi8>
}
// CHECK: fuse-composites: tfl.stablehlo_composite "z" ('my.op'): cannot inline @impl: it has type (tensor<4xi8>) -> (tensor<4xi8>), the composite (tensor<4x!quant.uniform<i8:f32, 0.1:0>>) -> (tensor<4x!quant.uniform<i8:f32, 0.1:0>>)
