// RUN: qaccel-opt %s --split-input-file -p legalize-tfl-to-q | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'legalize-tfl-to-q{ops=add}' | filecheck %s --check-prefix=ONLY-ADD

!qx = !quant.uniform<i8:f32, 0.5:-1>
!qy = !quant.uniform<i8:f32, 0.25:-128>
!qw = !quant.uniform<i8:f32:0, {0.01:0, 0.02:0}>
!qb = !quant.uniform<i32:f32:0, {0.005:0, 0.01:0}>

// The method's example group. Multipliers come from float32 scales: 0.5 * 0.01f / 0.25.
// CHECK-LABEL: func.func @conv_relu6
// CHECK-NEXT:    %w = tfl.const
// CHECK-NEXT:    %b = tfl.const
// CHECK-NEXT:    %y = q.conv2d %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : ({{.*}}) -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %y_1 = q.bias_add %y, %b : {{.*}} -> tensor<1x2x2x2xi32>
// CHECK-NEXT:    %y_2 = q.requantize %y_1 {input_zero_point = 0 : i32, output_zero_point = -128 : i32, multiplier = array<i32: 1374389504, 1374389504>, shift = array<i32: -5, -4>}
// CHECK-NEXT:    %y_3 = q.relu %y_2 {min = -128 : i32, max = -104 : i32}
// CHECK-NEXT:    func.return %y_3
// ONLY-ADD-LABEL: func.func @conv_relu6
// ONLY-ADD:         tfl.conv_2d
func.func @conv_relu6(%x: tensor<1x4x4x3x!qx>) -> tensor<1x2x2x2x!qy> {
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!qw>
  %b = tfl.const dense<[10, -20]> : tensor<2xi32> -> tensor<2x!qb>
  %y = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 2 : i32, stride_h = 2 : i32, fused_activation_function = "RELU6", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32} : (tensor<1x4x4x3x!qx>, tensor<2x3x3x3x!qw>, tensor<2x!qb>) -> tensor<1x2x2x2x!qy>
  func.return %y : tensor<1x2x2x2x!qy>
}

// -----

!qx = !quant.uniform<i8:f32, 0.5:-1>
!qy = !quant.uniform<i8:f32, 0.25:-128>
!qd = !quant.uniform<i8:f32:3, {0.01:0, 0.01:0, 0.01:0}>
!qb = !quant.uniform<i32:f32:0, {0.005:0, 0.005:0, 0.005:0}>

// Per-channel scales that are all equal give a single multiplier; no q.relu without
// an activation; VALID padding with dilation is explicit zero padding.
// CHECK-LABEL: func.func @depthwise
// CHECK:         q.depthwise_conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32, depth_multiplier = 1 : i32}
// CHECK-NEXT:    q.bias_add
// CHECK-NEXT:    q.requantize {{.*}} {input_zero_point = 0 : i32, output_zero_point = -128 : i32, multiplier = array<i32: 1374389504>, shift = array<i32: -5>}
// CHECK-NOT:     q.relu
// CHECK:         func.return
func.func @depthwise(%x: tensor<1x5x5x3x!qx>) -> tensor<1x3x3x3x!qy> {
  %w = tfl.const dense<1> : tensor<1x2x2x3xi8> -> tensor<1x2x2x3x!qd>
  %b = tfl.const dense<1> : tensor<3xi32> -> tensor<3x!qb>
  %y = tfl.depthwise_conv_2d %x, %w, %b {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 2 : i32, dilation_h_factor = 2 : i32, depth_multiplier = 1 : i32} : (tensor<1x5x5x3x!qx>, tensor<1x2x2x3x!qd>, tensor<3x!qb>) -> tensor<1x3x3x3x!qy>
  func.return %y : tensor<1x3x3x3x!qy>
}

// -----

!qx = !quant.uniform<i8:f32, 0.5:3>
!qy = !quant.uniform<i8:f32, 0.25:0>
!qw = !quant.uniform<i8:f32, 0.125:0>

// FULLY_CONNECTED keeps the reference kernel's double-precision requantization (scale =
// 0.5 * 0.125 / 0.25); without a bias there is no q.bias_add; RELU clamps at the zero point.
// CHECK-LABEL: func.func @fully_connected
// CHECK:         %none = tfl.no_value
// CHECK-NEXT:    %y = q.dense %x, %w {input_zero_point = 3 : i32, filter_zero_point = 0 : i32} : ({{.*}}) -> tensor<2x4xi32>
// CHECK-NEXT:    %y_1 = q.requantize %y {input_zero_point = 0 : i32, output_zero_point = 0 : i32, scale = array<f64: 2.500000e-01>}
// CHECK-NEXT:    %y_2 = q.relu %y_1 {min = 0 : i32, max = 127 : i32}
func.func @fully_connected(%x: tensor<2x8x!qx>) -> tensor<2x4x!qy> {
  %w = tfl.const dense<3> : tensor<4x8xi8> -> tensor<4x8x!qw>
  %none = tfl.no_value
  %y = tfl.fully_connected %x, %w, %none {fused_activation_function = "RELU", weights_format = "DEFAULT", keep_num_dims = false, asymmetric_quantize_inputs = false} : (tensor<2x8x!qx>, tensor<4x8x!qw>, none) -> tensor<2x4x!qy>
  func.return %y : tensor<2x4x!qy>
}

// -----

!qa = !quant.uniform<i8:f32, 0.5:-1>
!qb = !quant.uniform<i8:f32, 0.25:2>
!qo = !quant.uniform<i8:f32, 1.0:-5>

// ADD/SUB: left shift 20, input multipliers s_i / (2 max s), output 2 max s / (2^20 s_out).
// CHECK-LABEL: func.func @add_sub_mul
// CHECK:         %0 = q.add %a, %b {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = -1 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = -5 : i32}
// CHECK-NEXT:    %1 = q.sub %a, %b {{.*}}output_zero_point = -5 : i32}
// CHECK-NEXT:    %2 = q.mul %a, %b {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, multiplier = 1073741824 : i32, shift = -2 : i32, output_zero_point = -5 : i32}
// CHECK-NEXT:    %3 = q.relu %2 {min = -5 : i32, max = 127 : i32}
// ONLY-ADD-LABEL: func.func @add_sub_mul
// ONLY-ADD:         q.add
// ONLY-ADD-NEXT:    tfl.sub
// ONLY-ADD-NEXT:    tfl.mul
func.func @add_sub_mul(%a: tensor<1x4x!qa>, %b: tensor<1x4x!qb>) -> (tensor<1x4x!qo>, tensor<1x4x!qo>, tensor<1x4x!qo>) {
  %0 = tfl.add %a, %b {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<1x4x!qa>, tensor<1x4x!qb>) -> tensor<1x4x!qo>
  %1 = tfl.sub %a, %b {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<1x4x!qa>, tensor<1x4x!qb>) -> tensor<1x4x!qo>
  %2 = tfl.mul %a, %b {fused_activation_function = "RELU"} : (tensor<1x4x!qa>, tensor<1x4x!qb>) -> tensor<1x4x!qo>
  func.return %0, %1, %2 : tensor<1x4x!qo>, tensor<1x4x!qo>, tensor<1x4x!qo>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!qm = !quant.uniform<i8:f32, 0.25:3>

// CHECK-LABEL: func.func @pool_mean_pad_concat
// CHECK:         %0 = q.avg_pool2d %x {filter = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>}
// CHECK-NEXT:    %1 = q.max_pool2d %0 {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>}
// MEAN over 16 elements: QuantizeMultiplier(0.5 / 0.25) = (2^30, 2), then k = 4: (2^34 / 16, -2).
// CHECK:         %2 = q.mean %x {axes = array<i64: 1, 2>, num_elements = 16 : i32, input_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = -2 : i32, output_zero_point = 3 : i32}
// CHECK:         %3 = q.pad %x {padding = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, pad_value = -1 : i32}
// CHECK:         %4 = q.pad %x {padding = array<i64: 0, 0, 1, 1, 0, 0, 0, 0>, pad_value = 9 : i32}
// CHECK-NEXT:    %5 = q.concat %x, %x {axis = 3 : i32}
func.func @pool_mean_pad_concat(%x: tensor<1x4x4x2x!q>) -> (tensor<1x2x2x2x!q>, tensor<1x2x!qm>, tensor<1x6x4x2x!q>, tensor<1x6x4x2x!q>, tensor<1x4x4x4x!q>) {
  %0 = tfl.average_pool_2d %x {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, filter_width = 3 : i32, filter_height = 3 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  %1 = tfl.max_pool_2d %0 {padding = "VALID", stride_w = 2 : i32, stride_h = 2 : i32, filter_width = 2 : i32, filter_height = 2 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  %axes = tfl.const dense<[1, 2]> : tensor<2xi32> -> tensor<2xi32>
  %2 = tfl.mean %x, %axes {keep_dims = false} : (tensor<1x4x4x2x!q>, tensor<2xi32>) -> tensor<1x2x!qm>
  %pads = tfl.const dense<[[0, 0], [1, 1], [0, 0], [0, 0]]> : tensor<4x2xi32> -> tensor<4x2xi32>
  %3 = tfl.pad %x, %pads : (tensor<1x4x4x2x!q>, tensor<4x2xi32>) -> tensor<1x6x4x2x!q>
  %nine = tfl.const dense<9> : tensor<i8> -> tensor<!q>
  %4 = tfl.padv2 %x, %pads, %nine : (tensor<1x4x4x2x!q>, tensor<4x2xi32>, tensor<!q>) -> tensor<1x6x4x2x!q>
  %5 = tfl.concatenation %x, %x {axis = -1 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x4x!q>
  func.return %1, %2, %3, %4, %5 : tensor<1x2x2x2x!q>, tensor<1x2x!qm>, tensor<1x6x4x2x!q>, tensor<1x6x4x2x!q>, tensor<1x4x4x4x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!q2 = !quant.uniform<i8:f32, 0.25:-1>

// What stays tfl: float ops, non-constant axes, and concatenation of inputs whose
// quantization differs from the output's (LiteRT's reference kernel refuses it).
// CHECK-LABEL: func.func @not_legalized
// CHECK:         tfl.add
// CHECK:         tfl.mean
// CHECK:         tfl.concatenation
// CHECK-NOT:     q.
func.func @not_legalized(%f: tensor<4xf32>, %x: tensor<1x4x!q>, %axes: tensor<1xi32>, %y: tensor<1x4x!q2>) -> (tensor<4xf32>, tensor<1x!q>, tensor<1x8x!q>) {
  %0 = tfl.add %f, %f {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = tfl.mean %x, %axes {keep_dims = false} : (tensor<1x4x!q>, tensor<1xi32>) -> tensor<1x!q>
  %2 = tfl.concatenation %x, %y {axis = 1 : i32, fused_activation_function = "NONE"} : (tensor<1x4x!q>, tensor<1x4x!q2>) -> tensor<1x8x!q>
  func.return %0, %1, %2 : tensor<4xf32>, tensor<1x!q>, tensor<1x8x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!c = !quant.uniform<i8:f32, 0.25:3>

// MAXIMUM / MINIMUM with a one-valued constant become a clamp: LiteRT compares stored values,
// so the constant's own quantization does not matter.
// CHECK-LABEL: func.func @maximum_minimum_clamp
// CHECK:         %0 = q.relu %x {min = 5 : i32, max = 127 : i32}
// CHECK:         %1 = q.relu %0 {min = -128 : i32, max = 5 : i32}
// CHECK-NOT:     tfl.maximum
// CHECK-NOT:     tfl.minimum
func.func @maximum_minimum_clamp(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  %c = tfl.const dense<5> : tensor<1x1xi8> -> tensor<1x1x!c>
  %0 = tfl.maximum %x, %c : (tensor<1x4x!q>, tensor<1x1x!c>) -> tensor<1x4x!q>
  %1 = tfl.minimum %c, %0 : (tensor<1x1x!c>, tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %1 : tensor<1x4x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!q2 = !quant.uniform<i8:f32, 0.25:-1>

// Not a clamp: two tensors, a constant of several values, a result quantized otherwise.
// CHECK-LABEL: func.func @maximum_minimum_not_clamp
// CHECK:         tfl.maximum %x, %y
// CHECK:         tfl.minimum %x, %c
// CHECK:         tfl.maximum %x, %five
// CHECK-NOT:     q.relu
func.func @maximum_minimum_not_clamp(%x: tensor<1x4x!q>, %y: tensor<1x4x!q>) -> (tensor<1x4x!q>, tensor<1x4x!q>, tensor<1x4x!q2>) {
  %c = tfl.const dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!q>
  %five = tfl.const dense<5> : tensor<i8> -> tensor<!q>
  %0 = tfl.maximum %x, %y : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  %1 = tfl.minimum %x, %c : (tensor<1x4x!q>, tensor<4x!q>) -> tensor<1x4x!q>
  %2 = tfl.maximum %x, %five : (tensor<1x4x!q>, tensor<!q>) -> tensor<1x4x!q2>
  func.return %0, %1, %2 : tensor<1x4x!q>, tensor<1x4x!q>, tensor<1x4x!q2>
}

// -----

!qa = !quant.uniform<i8:f32, 0.05:-3>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>
!qr = !quant.uniform<i8:f32, 0.025:-128>

// Element-wise int8 ops are their 256-entry tables, computed by the CPU kernels: LOGISTIC,
// HARD_SWISH and a RELU that rescales become q.lut; a RELU6 that keeps the quantization is a
// clamp (6 / 0.05 = 120 steps above the zero point -3).
// CHECK-LABEL: func.func @tables
// CHECK-NEXT:    %s = q.lut %x {table = array<i32: -128, -127, -127, {{.*}}, 127, 127>} : (tensor<1x2x2x4x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x2x2x4x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    %r = q.lut %x {table = array<i32: -128, {{.*}}, -128, -126, -124, {{.*}}, 124, 126, 127, 127, 127>}
// CHECK-NEXT:    %c = q.relu %x {min = -3 : i32, max = 117 : i32}
// CHECK-NEXT:    %h = q.lut %x {table = array<i32: -3, -3, {{.*}}, 126, 127>}
// CHECK-NEXT:    func.return %s, %r, %c, %h
// ONLY-ADD-LABEL: func.func @tables
// ONLY-ADD:         tfl.logistic
func.func @tables(%x: tensor<1x2x2x4x!qa>) -> (tensor<1x2x2x4x!qs>, tensor<1x2x2x4x!qr>, tensor<1x2x2x4x!qa>, tensor<1x2x2x4x!qa>) {
  %s = tfl.logistic %x : (tensor<1x2x2x4x!qa>) -> tensor<1x2x2x4x!qs>
  %r = tfl.relu %x : (tensor<1x2x2x4x!qa>) -> tensor<1x2x2x4x!qr>
  %c = tfl.relu6 %x : (tensor<1x2x2x4x!qa>) -> tensor<1x2x2x4x!qa>
  %h = tfl.hard_swish %x : (tensor<1x2x2x4x!qa>) -> tensor<1x2x2x4x!qa>
  func.return %s, %r, %c, %h : tensor<1x2x2x4x!qs>, tensor<1x2x2x4x!qr>, tensor<1x2x2x4x!qa>, tensor<1x2x2x4x!qa>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// Keras' Flatten: the shape computed at run time (SHAPE, STRIDED_SLICE, PACK) is fixed by the
// static types, so the reshape is q.reshape and the shape computation goes; a constant shape
// too. A float reshape stays tfl.
// CHECK-LABEL: func.func @reshape
// CHECK-NEXT:    %r = q.reshape %x : (tensor<1x1x1x8x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %k = q.reshape %x : (tensor<1x1x1x8x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<8x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %fs = tfl.const
// CHECK-NEXT:    %f2 = tfl.reshape %f, %fs
// CHECK-NEXT:    func.return %r, %k, %f2
func.func @reshape(%x: tensor<1x1x1x8x!q>, %f: tensor<2x4xf32>) -> (tensor<1x8x!q>, tensor<8x!q>, tensor<8xf32>) {
  %b = tfl.const dense<0> : tensor<1xi32> -> tensor<1xi32>
  %e = tfl.const dense<1> : tensor<1xi32> -> tensor<1xi32>
  %m = tfl.const dense<-1> : tensor<i32> -> tensor<i32>
  %s = tfl.shape %x {out_type = "INT32"} : (tensor<1x1x1x8x!q>) -> tensor<4xi32>
  %n = tfl.strided_slice %s, %b, %e, %e {begin_mask = 0 : i32, end_mask = 0 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 1 : i32, offset = false} : (tensor<4xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<i32>
  %p = tfl.pack %n, %m {values_count = 2 : i32, axis = 0 : i32} : (tensor<i32>, tensor<i32>) -> tensor<2xi32>
  %r = tfl.reshape %x, %p {new_shape = array<i32>} : (tensor<1x1x1x8x!q>, tensor<2xi32>) -> tensor<1x8x!q>
  %ks = tfl.const dense<8> : tensor<1xi32> -> tensor<1xi32>
  %k = tfl.reshape %x, %ks {new_shape = array<i32>} : (tensor<1x1x1x8x!q>, tensor<1xi32>) -> tensor<8x!q>
  %fs = tfl.const dense<8> : tensor<1xi32> -> tensor<1xi32>
  %f2 = tfl.reshape %f, %fs {new_shape = array<i32>} : (tensor<2x4xf32>, tensor<1xi32>) -> tensor<8xf32>
  func.return %r, %k, %f2 : tensor<1x8x!q>, tensor<8x!q>, tensor<8xf32>
}

// -----

!qz = !quant.uniform<i8:f32, 0.05:-128>
!qa = !quant.uniform<i8:f32, 0.05:-3>

// A RELU of a tensor that is never negative, with its quantization: the identity, removed. A
// float op and an SQRT whose kernel refuses negative inputs (reachable: zero point -3) stay.
// CHECK-LABEL: func.func @tables_kept
// CHECK-NEXT:    %f = tfl.logistic %y
// CHECK-NEXT:    %q = tfl.sqrt %x
// CHECK-NEXT:    func.return %z, %f, %q
func.func @tables_kept(%z: tensor<1x4x!qz>, %y: tensor<1x4xf32>, %x: tensor<1x4x!qa>) -> (tensor<1x4x!qz>, tensor<1x4xf32>, tensor<1x4x!qa>) {
  %r = tfl.relu %z : (tensor<1x4x!qz>) -> tensor<1x4x!qz>
  %f = tfl.logistic %y : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %q = tfl.sqrt %x : (tensor<1x4x!qa>) -> tensor<1x4x!qa>
  func.return %r, %f, %q : tensor<1x4x!qz>, tensor<1x4xf32>, tensor<1x4x!qa>
}

// -----

!q = !quant.uniform<i8:f32, 0.05:-3>
!qm = !quant.uniform<i8:f32, 0.01:5>

// The converter's squeeze-excite idiom: a global MEAN without kept dimensions, then RESHAPE to
// [1, 1, 1, C] through SHAPE -> STRIDED_SLICE -> PACK of the static shape. The mean keeps its
// dimensions instead; the reshape and the shape computation go.
// CHECK-LABEL: func.func @mean_reshape
// CHECK-NEXT:    %axes = tfl.const
// CHECK-NEXT:    %begin = tfl.const
// CHECK-NEXT:    %end = tfl.const
// CHECK-NEXT:    %one = tfl.const
// CHECK-NEXT:    %c = tfl.const
// CHECK-NEXT:    %r = q.mean %x {axes = array<i64: 1, 2>, {{.*}}} : (tensor<1x4x4x8x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x1x1x8x!quant.uniform<i8:f32, 0.01:5>>
// CHECK-NEXT:    func.return %r
// CHECK-NOT:     tfl.reshape
func.func @mean_reshape(%x: tensor<1x4x4x8x!q>) -> tensor<1x1x1x8x!qm> {
  %axes = tfl.const dense<[1, 2]> : tensor<2xi32> -> tensor<2xi32>
  %begin = tfl.const dense<0> : tensor<1xi32> -> tensor<1xi32>
  %end = tfl.const dense<1> : tensor<1xi32> -> tensor<1xi32>
  %one = tfl.const dense<1> : tensor<i32> -> tensor<i32>
  %c = tfl.const dense<8> : tensor<i32> -> tensor<i32>
  %m = tfl.mean %x, %axes {keep_dims = false} : (tensor<1x4x4x8x!q>, tensor<2xi32>) -> tensor<1x8x!qm>
  %s = tfl.shape %m {out_type = "INT32"} : (tensor<1x8x!qm>) -> tensor<2xi32>
  %n = tfl.strided_slice %s, %begin, %end, %end {begin_mask = 0 : i32, end_mask = 0 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 1 : i32, offset = false} : (tensor<2xi32>, tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<i32>
  %shape = tfl.pack %n, %one, %one, %c {values_count = 4 : i32, axis = 0 : i32} : (tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4xi32>
  %r = tfl.reshape %m, %shape {new_shape = array<i32>} : (tensor<1x8x!qm>, tensor<4xi32>) -> tensor<1x1x1x8x!qm>
  func.return %r : tensor<1x1x1x8x!qm>
}

// -----

!q = !quant.uniform<i8:f32, 0.05:-3>
!qm = !quant.uniform<i8:f32, 0.01:5>

// The mean's result is used elsewhere too, or the reshape is not to the kept dimensions: the
// mean keeps its result and each reshape is a reshape (q.reshape) of it.
// CHECK-LABEL: func.func @mean_reshape_kept
// CHECK:         %m = q.mean %x {{.*}} -> tensor<1x8x!quant.uniform<i8:f32, 0.01:5>>
// CHECK:         %r = q.reshape %m
// CHECK:         %t = q.reshape %m
func.func @mean_reshape_kept(%x: tensor<1x4x4x8x!q>) -> (tensor<1x1x1x8x!qm>, tensor<1x8x!qm>, tensor<1x2x4x!qm>) {
  %axes = tfl.const dense<[1, 2]> : tensor<2xi32> -> tensor<2xi32>
  %shape = tfl.const dense<[1, 1, 1, 8]> : tensor<4xi32> -> tensor<4xi32>
  %shape2 = tfl.const dense<[1, 2, 4]> : tensor<3xi32> -> tensor<3xi32>
  %m = tfl.mean %x, %axes {keep_dims = false} : (tensor<1x4x4x8x!q>, tensor<2xi32>) -> tensor<1x8x!qm>
  %r = tfl.reshape %m, %shape {new_shape = array<i32>} : (tensor<1x8x!qm>, tensor<4xi32>) -> tensor<1x1x1x8x!qm>
  %t = tfl.reshape %m, %shape2 {new_shape = array<i32>} : (tensor<1x8x!qm>, tensor<3xi32>) -> tensor<1x2x4x!qm>
  func.return %r, %m, %t : tensor<1x1x1x8x!qm>, tensor<1x8x!qm>, tensor<1x2x4x!qm>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// Keras' Cropping2D: a STRIDED_SLICE with constant bounds and unit strides is the box q.slice;
// strides of 2 (or a dropped axis) stay tfl.
// CHECK-LABEL: func.func @strided_slice
// CHECK:         %c = q.slice %x {begin = array<i64: 0, 1, 1, 0>} : (tensor<1x4x4x8x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x3x3x8x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:         %s = tfl.strided_slice %x
func.func @strided_slice(%x: tensor<1x4x4x8x!q>) -> (tensor<1x3x3x8x!q>, tensor<1x2x2x8x!q>) {
  %b = tfl.const dense<[0, 1, 1, 0]> : tensor<4xi32> -> tensor<4xi32>
  %e = tfl.const dense<0> : tensor<4xi32> -> tensor<4xi32>
  %one = tfl.const dense<1> : tensor<4xi32> -> tensor<4xi32>
  %two = tfl.const dense<[1, 2, 2, 1]> : tensor<4xi32> -> tensor<4xi32>
  %c = tfl.strided_slice %x, %b, %e, %one {begin_mask = 9 : i32, end_mask = 15 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 0 : i32, offset = false} : (tensor<1x4x4x8x!q>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<1x3x3x8x!q>
  %s = tfl.strided_slice %x, %b, %e, %two {begin_mask = 9 : i32, end_mask = 15 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 0 : i32, offset = false} : (tensor<1x4x4x8x!q>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) -> tensor<1x2x2x8x!q>
  func.return %c, %s : tensor<1x3x3x8x!q>, tensor<1x2x2x8x!q>
}

// -----

// Dense on tokens as the converter writes it: RESHAPE to rows, FULLY_CONNECTED without
// keep_num_dims, RESHAPE back to [1, T, O]. The q.dense group takes the tokens and gives
// [1, T, O]; both reshapes go (RELU at the zero point -128 clamps nothing).
// CHECK-LABEL: func.func @dense_tokens
// CHECK:         %none = tfl.no_value
// CHECK-NEXT:    %y = q.dense %x, %w {input_zero_point = 3 : i32, filter_zero_point = 0 : i32} : ({{.*}}) -> tensor<1x3x4xi32>
// CHECK-NEXT:    %t = q.requantize %y {{.*}} -> tensor<1x3x4x!quant.uniform<i8:f32, 0.25:-128>>
// CHECK-NEXT:    func.return %t
!qx = !quant.uniform<i8:f32, 0.5:3>
!qw = !quant.uniform<i8:f32, 0.125:0>
!qy = !quant.uniform<i8:f32, 0.25:-128>
func.func @dense_tokens(%x: tensor<1x3x8x!qx>) -> tensor<1x3x4x!qy> {
  %w = tfl.const dense<3> : tensor<4x8xi8> -> tensor<4x8x!qw>
  %none = tfl.no_value
  %rs = tfl.const dense<[3, 8]> : tensor<2xi32> -> tensor<2xi32>
  %ts = tfl.const dense<[1, 3, 4]> : tensor<3xi32> -> tensor<3xi32>
  %r = tfl.reshape %x, %rs {new_shape = array<i32>} : (tensor<1x3x8x!qx>, tensor<2xi32>) -> tensor<3x8x!qx>
  %y = tfl.fully_connected %r, %w, %none {fused_activation_function = "RELU", weights_format = "DEFAULT", keep_num_dims = false, asymmetric_quantize_inputs = false} : (tensor<3x8x!qx>, tensor<4x8x!qw>, none) -> tensor<3x4x!qy>
  %t = tfl.reshape %y, %ts {new_shape = array<i32>} : (tensor<3x4x!qy>, tensor<3xi32>) -> tensor<1x3x4x!qy>
  func.return %t : tensor<1x3x4x!qy>
}

// -----

// The rows also read elsewhere: the reshapes stay (q.reshape), the q.dense takes the rows.
// CHECK-LABEL: func.func @dense_rows_used_twice
// CHECK:         %r = q.reshape %x
// CHECK-NEXT:    %y = q.dense %r, %w
// CHECK:         %t = q.reshape %y_1
!qx = !quant.uniform<i8:f32, 0.5:3>
!qw = !quant.uniform<i8:f32, 0.125:0>
!qy = !quant.uniform<i8:f32, 0.25:-128>
func.func @dense_rows_used_twice(%x: tensor<1x3x8x!qx>) -> (tensor<1x3x4x!qy>, tensor<3x8x!qx>) {
  %w = tfl.const dense<3> : tensor<4x8xi8> -> tensor<4x8x!qw>
  %none = tfl.no_value
  %rs = tfl.const dense<[3, 8]> : tensor<2xi32> -> tensor<2xi32>
  %ts = tfl.const dense<[1, 3, 4]> : tensor<3xi32> -> tensor<3xi32>
  %r = tfl.reshape %x, %rs {new_shape = array<i32>} : (tensor<1x3x8x!qx>, tensor<2xi32>) -> tensor<3x8x!qx>
  %y = tfl.fully_connected %r, %w, %none {fused_activation_function = "RELU", weights_format = "DEFAULT", keep_num_dims = false, asymmetric_quantize_inputs = false} : (tensor<3x8x!qx>, tensor<4x8x!qw>, none) -> tensor<3x4x!qy>
  %t = tfl.reshape %y, %ts {new_shape = array<i32>} : (tensor<3x4x!qy>, tensor<3xi32>) -> tensor<1x3x4x!qy>
  func.return %t, %r : tensor<1x3x4x!qy>, tensor<3x8x!qx>
}

// -----

// TRANSPOSE_CONV whose kernel is its stride: a 1x1 q.conv2d over the 4 taps (8 = 2x2x2 channels,
// weights tap-major), the bias and per-channel requantization repeated per tap, the RELU, then
// q.depth_to_space moves each tap to its output pixel; the output_shape constant goes.
// CHECK-LABEL: func.func @transpose_conv
// CHECK:         %w_taps = tfl.const dense<{{\[}}[{{\[}}[1, 2, 3]]], [{{\[}}[-1, -2, -3]]], [{{\[}}[4, 5, 6]]], [{{\[}}[-4, -5, -6]]], [{{\[}}[7, 8, 9]]], [{{\[}}[-7, -8, -9]]], [{{\[}}[10, 11, 12]]], [{{\[}}[-10, -11, -12]]]]> : tensor<8x1x1x3xi8>
// CHECK-NEXT:    %y = q.conv2d %x, %w_taps {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : ({{.*}}) -> tensor<1x2x2x8xi32>
// CHECK-NEXT:    %b_taps = tfl.const dense<[100, -200, 100, -200, 100, -200, 100, -200]> : tensor<8xi32>
// CHECK-NEXT:    %y_1 = q.bias_add %y, %b_taps
// CHECK-NEXT:    %y_2 = q.requantize %y_1 {input_zero_point = 0 : i32, output_zero_point = 3 : i32, multiplier = array<i32: 1073741824, 1073741824, 1073741824, 1073741824, 1073741824, 1073741824, 1073741824, 1073741824>, shift = array<i32: 0, -1, 0, -1, 0, -1, 0, -1>}
// CHECK-NEXT:    %y_3 = q.relu %y_2 {min = 3 : i32, max = 127 : i32}
// CHECK-NEXT:    %y_4 = q.depth_to_space %y_3 {block_size = 2 : i32} : (tensor<1x2x2x8x!quant.uniform<i8:f32, 0.25:3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:3>>
// CHECK-NEXT:    func.return %y_4
!qx = !quant.uniform<i8:f32, 0.5:-1>
!qw = !quant.uniform<i8:f32:0, {0.25:0, 0.125:0}>
!qy = !quant.uniform<i8:f32, 0.25:3>
func.func @transpose_conv(%x: tensor<1x2x2x3x!qx>) -> tensor<1x4x4x2x!qy> {
  %s = tfl.const dense<[1, 4, 4, 2]> : tensor<4xi32> -> tensor<4xi32>
  %w = tfl.const dense<[[[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [10, 11, 12]]], [[[-1, -2, -3], [-4, -5, -6]], [[-7, -8, -9], [-10, -11, -12]]]]> : tensor<2x2x2x3xi8> -> tensor<2x2x2x3x!qw>
  %b = tfl.const dense<[100, -200]> : tensor<2xi32> -> tensor<2xi32>
  %y = tfl.transpose_conv %s, %w, %x, %b {padding = "VALID", stride_h = 2 : i32, stride_w = 2 : i32, fused_activation_function = "RELU", quantized_bias_type = "FLOAT32"} : (tensor<4xi32>, tensor<2x2x2x3x!qw>, tensor<1x2x2x3x!qx>, tensor<2xi32>) -> tensor<1x4x4x2x!qy>
  func.return %y : tensor<1x4x4x2x!qy>
}

// -----

// A kernel larger than the stride: taps overlap (an output sums several). The taps' 1x1
// q.conv2d (2 channels x 9 taps, no bias), q.col2im sums them into the output (SAME at 3x3,
// stride 2, output 4x4: nothing cropped), then the per-channel requantization.
// CHECK-LABEL: func.func @transpose_conv_overlapping
// CHECK:         %w_taps = tfl.const dense<1> : tensor<18x1x1x3xi8>
// CHECK-NEXT:    %y = q.conv2d %x, %w_taps {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : ({{.*}}) -> tensor<1x2x2x18xi32>
// CHECK-NEXT:    %y_1 = q.col2im %y {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0>} : (tensor<1x2x2x18xi32>) -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %y_2 = q.requantize %y_1 {input_zero_point = 0 : i32, output_zero_point = 3 : i32, multiplier = array<i32: 1073741824, 1073741824>, shift = array<i32: 0, -1>}
// CHECK-NEXT:    func.return %y_2
!qx = !quant.uniform<i8:f32, 0.5:-1>
!qw = !quant.uniform<i8:f32:0, {0.25:0, 0.125:0}>
!qy = !quant.uniform<i8:f32, 0.25:3>
func.func @transpose_conv_overlapping(%x: tensor<1x2x2x3x!qx>) -> tensor<1x4x4x2x!qy> {
  %s = tfl.const dense<[1, 4, 4, 2]> : tensor<4xi32> -> tensor<4xi32>
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!qw>
  %none = tfl.no_value
  %y = tfl.transpose_conv %s, %w, %x, %none {padding = "SAME", stride_h = 2 : i32, stride_w = 2 : i32, fused_activation_function = "NONE", quantized_bias_type = "FLOAT32"} : (tensor<4xi32>, tensor<2x3x3x3x!qw>, tensor<1x2x2x3x!qx>, none) -> tensor<1x4x4x2x!qy>
  func.return %y : tensor<1x4x4x2x!qy>
}

// -----

// RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR of one quantization: q ops with the same
// coordinate flags; the size constant goes.
// CHECK-LABEL: func.func @resizes
// CHECK-NEXT:    %n = q.resize_nearest_neighbor %x {align_corners = false, half_pixel_centers = true} : (tensor<1x2x3x5x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x4x6x5x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %b = q.resize_bilinear %x {align_corners = true, half_pixel_centers = false} : (tensor<1x2x3x5x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x3x7x5x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    func.return %n, %b
// ONLY-ADD-LABEL: func.func @resizes
// ONLY-ADD:         tfl.resize_nearest_neighbor
// ONLY-ADD:         tfl.resize_bilinear
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @resizes(%x: tensor<1x2x3x5x!q>) -> (tensor<1x4x6x5x!q>, tensor<1x3x7x5x!q>) {
  %s1 = tfl.const dense<[4, 6]> : tensor<2xi32> -> tensor<2xi32>
  %s2 = tfl.const dense<[3, 7]> : tensor<2xi32> -> tensor<2xi32>
  %n = tfl.resize_nearest_neighbor %x, %s1 {align_corners = false, half_pixel_centers = true} : (tensor<1x2x3x5x!q>, tensor<2xi32>) -> tensor<1x4x6x5x!q>
  %b = tfl.resize_bilinear %x, %s2 {align_corners = true, half_pixel_centers = false} : (tensor<1x2x3x5x!q>, tensor<2xi32>) -> tensor<1x3x7x5x!q>
  func.return %n, %b : tensor<1x4x6x5x!q>, tensor<1x3x7x5x!q>
}

// -----

// Left on the CPU: a resize that changes the quantization, one of float values, one whose
// size disagrees with its result, and a bilinear one with both coordinate flags (LiteRT's
// kernel refuses it at Prepare).
// CHECK-LABEL: func.func @resizes_left_alone
// CHECK:         tfl.resize_nearest_neighbor
// CHECK:         tfl.resize_bilinear
// CHECK:         tfl.resize_bilinear
// CHECK:         tfl.resize_bilinear
!q = !quant.uniform<i8:f32, 0.5:-1>
!r = !quant.uniform<i8:f32, 0.25:-1>
func.func @resizes_left_alone(%x: tensor<1x2x2x1x!q>, %f: tensor<1x2x2x1xf32>) -> (tensor<1x4x4x1x!r>, tensor<1x4x4x1xf32>, tensor<1x4x4x1x!q>, tensor<1x4x4x1x!q>) {
  %s = tfl.const dense<[4, 4]> : tensor<2xi32> -> tensor<2xi32>
  %s45 = tfl.const dense<[4, 5]> : tensor<2xi32> -> tensor<2xi32>
  %n = tfl.resize_nearest_neighbor %x, %s {align_corners = false, half_pixel_centers = false} : (tensor<1x2x2x1x!q>, tensor<2xi32>) -> tensor<1x4x4x1x!r>
  %b = tfl.resize_bilinear %f, %s {align_corners = false, half_pixel_centers = false} : (tensor<1x2x2x1xf32>, tensor<2xi32>) -> tensor<1x4x4x1xf32>
  %c = tfl.resize_bilinear %x, %s45 {align_corners = false, half_pixel_centers = false} : (tensor<1x2x2x1x!q>, tensor<2xi32>) -> tensor<1x4x4x1x!q>
  %d = tfl.resize_bilinear %x, %s {align_corners = true, half_pixel_centers = true} : (tensor<1x2x2x1x!q>, tensor<2xi32>) -> tensor<1x4x4x1x!q>
  func.return %n, %b, %c, %d : tensor<1x4x4x1x!r>, tensor<1x4x4x1xf32>, tensor<1x4x4x1x!q>, tensor<1x4x4x1x!q>
}

// -----

// A 4x4 kernel at stride 2 (SAME: the scatter's first row and column cropped, padding [1, 1]),
// with a bias (added once per output, after the sum) and a RELU; the output shape constant goes.
// CHECK-LABEL: func.func @transpose_conv_overlapping_bias
// CHECK:         %y = q.conv2d %x, %w_taps {{.*}} -> tensor<1x2x2x32xi32>
// CHECK-NEXT:    %y_1 = q.col2im %y {kernel = array<i64: 4, 4>, strides = array<i64: 2, 2>, padding = array<i64: 1, 1>} : (tensor<1x2x2x32xi32>) -> tensor<1x4x4x2xi32>
// CHECK-NEXT:    %y_2 = q.bias_add %y_1, %b
// CHECK-NEXT:    %y_3 = q.requantize %y_2
// CHECK-NEXT:    %y_4 = q.relu %y_3 {min = 3 : i32, max = 127 : i32}
// CHECK-NEXT:    func.return %y_4
// CHECK-NOT:     tfl.transpose_conv
!qx = !quant.uniform<i8:f32, 0.5:-1>
!qw = !quant.uniform<i8:f32:0, {0.25:0, 0.125:0}>
!qy = !quant.uniform<i8:f32, 0.25:3>
func.func @transpose_conv_overlapping_bias(%x: tensor<1x2x2x3x!qx>) -> tensor<1x4x4x2x!qy> {
  %s = tfl.const dense<[1, 4, 4, 2]> : tensor<4xi32> -> tensor<4xi32>
  %w = tfl.const dense<2> : tensor<2x4x4x3xi8> -> tensor<2x4x4x3x!qw>
  %b = tfl.const dense<[100, -200]> : tensor<2xi32> -> tensor<2xi32>
  %y = tfl.transpose_conv %s, %w, %x, %b {padding = "SAME", stride_h = 2 : i32, stride_w = 2 : i32, fused_activation_function = "RELU", quantized_bias_type = "FLOAT32"} : (tensor<4xi32>, tensor<2x4x4x3x!qw>, tensor<1x2x2x3x!qx>, tensor<2xi32>) -> tensor<1x4x4x2x!qy>
  func.return %y : tensor<1x4x4x2x!qy>
}
