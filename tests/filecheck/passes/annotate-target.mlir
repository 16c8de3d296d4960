// RUN: qaccel-opt %s --split-input-file -p 'annotate-target{target=vta}' 2>/dev/null | filecheck %s
// Idempotent: a second run changes nothing.
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,annotate-target' 2>/dev/null | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target{explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=WHY

// Each pattern of the vta target, then each check failing.

// CHECK-LABEL: func.func @conv_full
// CHECK:      q.conv2d {{.*}}qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.bias_add {{.*}}qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.requantize {{.*}}qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: tfl.tanh
// CHECK-NOT:  qaccel
// WHY: vta: kept on CPU: tfl.tanh %t: no vta pattern for tfl.tanh (the accelerator runs q ops only)
func.func @conv_full(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %w = tfl.const dense<1> : tensor<16x3x3x16xi8> -> tensor<16x3x3x16xi8>
  %b = tfl.const dense<7> : tensor<16xi32> -> tensor<16xi32>
  %a = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x3x3x16xi8>) -> tensor<1x4x4x16xi32>
  %s = q.bias_add %a, %b : (tensor<1x4x4x16xi32>, tensor<16xi32>) -> tensor<1x4x4x16xi32>
  %y = q.requantize %s {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = -128 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %r = q.relu %y {min = -128 : i32, max = 100 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %t = tfl.tanh %r : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  func.return %t : tensor<1x4x4x16xi8>
}

// -----

// Optional ops: no bias, no clamp; a 3-channel first layer is accepted (padded to 16 lanes).
// CHECK-LABEL: func.func @conv_minimal
// CHECK:      q.conv2d {{.*}}qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.requantize {{.*}}qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: func.return
func.func @conv_minimal(%x: tensor<1x8x8x3xi8>) -> tensor<1x4x4x16xi8> {
  %w = tfl.const dense<1> : tensor<16x3x3x3xi8> -> tensor<16x3x3x3xi8>
  %a = q.conv2d %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x3xi8>, tensor<16x3x3x3xi8>) -> tensor<1x4x4x16xi32>
  %y = q.requantize %a {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  func.return %y : tensor<1x4x4x16xi8>
}

// -----

// CHECK-LABEL: func.func @depthwise_and_dense
// CHECK:      q.depthwise_conv2d {{.*}}qaccel.pattern = "depthwise_conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.bias_add {{.*}}qaccel.pattern = "depthwise_conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: q.requantize {{.*}}qaccel.pattern = "depthwise_conv2d", qaccel.group = 0 : i64
// CHECK-NEXT: tfl.reshape
// CHECK-NEXT: q.dense {{.*}}qaccel.pattern = "dense", qaccel.group = 1 : i64
// CHECK-NEXT: q.bias_add {{.*}}qaccel.pattern = "dense", qaccel.group = 1 : i64
// CHECK-NEXT: q.requantize {{.*}}qaccel.pattern = "dense", qaccel.group = 1 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.pattern = "dense", qaccel.group = 1 : i64
func.func @depthwise_and_dense(%x: tensor<1x4x4x16xi8>) -> tensor<1x10xi8> {
  %dw = tfl.const dense<3> : tensor<1x3x3x16xi8> -> tensor<1x3x3x16xi8>
  %db = tfl.const dense<1> : tensor<16xi32> -> tensor<16xi32>
  %shape = tfl.const dense<[1, 256]> : tensor<2xi32> -> tensor<2xi32>
  %fw = tfl.const dense<2> : tensor<10x256xi8> -> tensor<10x256xi8>
  %fb = tfl.const dense<5> : tensor<10xi32> -> tensor<10xi32>
  %a = q.depthwise_conv2d %x, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32, depth_multiplier = 1 : i32} : (tensor<1x4x4x16xi8>, tensor<1x3x3x16xi8>) -> tensor<1x4x4x16xi32>
  %s = q.bias_add %a, %db : (tensor<1x4x4x16xi32>, tensor<16xi32>) -> tensor<1x4x4x16xi32>
  %y = q.requantize %s {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %f = tfl.reshape %y, %shape {new_shape = array<i32: 1, 256>} : (tensor<1x4x4x16xi8>, tensor<2xi32>) -> tensor<1x256xi8>
  %d = q.dense %f, %fw {input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x256xi8>, tensor<10x256xi8>) -> tensor<1x10xi32>
  %ds = q.bias_add %d, %fb : (tensor<1x10xi32>, tensor<10xi32>) -> tensor<1x10xi32>
  %dy = q.requantize %ds {scale = array<f64: 0.001>, input_zero_point = 0 : i32, output_zero_point = -128 : i32} : (tensor<1x10xi32>) -> tensor<1x10xi8>
  %dr = q.relu %dy {min = -128 : i32, max = 90 : i32} : (tensor<1x10xi8>) -> tensor<1x10xi8>
  func.return %dr : tensor<1x10xi8>
}

// -----

// Element-wise ops, pools, mean, pad and concatenation, each its own group.
// CHECK-LABEL: func.func @alu_ops
// CHECK:      q.add {{.*}}qaccel.pattern = "add", qaccel.group = 0 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.pattern = "add", qaccel.group = 0 : i64
// CHECK-NEXT: q.sub {{.*}}qaccel.pattern = "sub", qaccel.group = 1 : i64
// CHECK-NEXT: q.mul {{.*}}qaccel.pattern = "mul", qaccel.group = 2 : i64
// CHECK-NEXT: q.max_pool2d {{.*}}qaccel.pattern = "max_pool2d", qaccel.group = 3 : i64
// CHECK-NEXT: q.avg_pool2d {{.*}}qaccel.pattern = "avg_pool2d", qaccel.group = 4 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.pattern = "avg_pool2d", qaccel.group = 4 : i64
// CHECK-NEXT: q.pad {{.*}}qaccel.pattern = "pad", qaccel.group = 5 : i64
// CHECK-NEXT: q.concat {{.*}}qaccel.pattern = "concat", qaccel.group = 6 : i64
// CHECK-NEXT: q.mean {{.*}}qaccel.pattern = "mean", qaccel.group = 7 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.pattern = "relu", qaccel.group = 8 : i64
func.func @alu_ops(%x: tensor<1x4x4x16xi8>, %y: tensor<1x4x4x16xi8>) -> tensor<1x1x1x32xi8> {
  %c = tfl.const dense<3> : tensor<1x1x1x16xi8> -> tensor<1x1x1x16xi8>
  %a = q.add %x, %y {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %ar = q.relu %a {min = 0 : i32, max = 127 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %s = q.sub %ar, %y {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %m = q.mul %s, %c {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, multiplier = 1073741824 : i32, shift = -2 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x1x1x16xi8>) -> tensor<1x4x4x16xi8>
  %mp = q.max_pool2d %m {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x16xi8>) -> tensor<1x2x2x16xi8>
  %ap = q.avg_pool2d %mp {filter = array<i64: 2, 2>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x16xi8>) -> tensor<1x1x1x16xi8>
  %apr = q.relu %ap {min = -100 : i32, max = 127 : i32} : (tensor<1x1x1x16xi8>) -> tensor<1x1x1x16xi8>
  %p = q.pad %apr {padding = array<i64: 0, 0, 1, 1, 1, 1, 0, 0>, pad_value = 0 : i32} : (tensor<1x1x1x16xi8>) -> tensor<1x3x3x16xi8>
  %cat = q.concat %p, %p {axis = 3 : i32} : (tensor<1x3x3x16xi8>, tensor<1x3x3x16xi8>) -> tensor<1x3x3x32xi8>
  %mean = q.mean %cat {axes = array<i64: 1, 2>, num_elements = 9 : i32, input_zero_point = 0 : i32, multiplier = 1908874354 : i32, shift = -3 : i32, output_zero_point = 0 : i32} : (tensor<1x3x3x32xi8>) -> tensor<1x1x1x32xi8>
  %r = q.relu %mean {min = -5 : i32, max = 5 : i32} : (tensor<1x1x1x32xi8>) -> tensor<1x1x1x32xi8>
  func.return %r : tensor<1x1x1x32xi8>
}

// -----

// Ops that already carry a target are left alone; group ids continue after existing ones.
// CHECK-LABEL: func.func @pre_annotated
// CHECK:      q.relu {{.*}}qaccel.target = "npu", qaccel.group = 4 : i64
// CHECK-NEXT: q.relu {{.*}}qaccel.target = "vta", qaccel.pattern = "relu", qaccel.group = 5 : i64
func.func @pre_annotated(%x: tensor<1x16xi8>) -> tensor<1x16xi8> {
  %a = q.relu %x {qaccel.target = "npu", qaccel.group = 4 : i64, min = 0 : i32, max = 127 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  %b = q.relu %a {min = 0 : i32, max = 100 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  func.return %b : tensor<1x16xi8>
}
// WHY: vta: kept on CPU: q.relu %a: annotated for target npu

// -----

// Checks that fail, each with the values that fail it (nothing is annotated).
// CHECK-LABEL: func.func @refused_convs
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @refused_convs(%x: tensor<1x8x8x16xi8>, %h: tensor<1x8x8x16xi16>, %wx: tensor<16x1x1x16xi8>) -> (tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>) {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %wneg = tfl.const dense<-128> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %w3 = tfl.const dense<1> : tensor<16x3x3x16xi8> -> tensor<16x3x3x16xi8>
  %wbig = tfl.const dense<1> : tensor<16x33x33x16xi8> -> tensor<16x33x33x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_i16: pattern conv2d refused: input of q.conv2d is int16: the accelerator loads int8 only [int8]
  %c_i16 = q.conv2d %h, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi16>, tensor<16x1x1x16xi8>) -> tensor<1x8x8x16xi32>
  %y_i16 = q.requantize %c_i16 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_rt: pattern conv2d refused: filter of q.conv2d is computed at run time (argument 2 %wx): weights are packed into 16x16 tiles at compile time [constant-weights]
  %c_rt = q.conv2d %x, %wx {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x8x8x16xi32>
  %y_rt = q.requantize %c_rt {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_zp: pattern conv2d refused: filter zero point 5: weights minus zero point span [-133, -133], outside int8 (the GEMM core multiplies int8 weights; a non-zero point must fold into them) [filter-zero-point]
  %c_zp = q.conv2d %x, %wneg {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 5 : i32} : (tensor<1x8x8x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x8x8x16xi32>
  %y_zp = q.requantize %c_zp {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_pad: pattern conv2d refused: padding [16, 16, 0, 0] (top, bottom, left, right) exceeds the 15 rows/columns a LOAD can pad (4-bit pad fields) [padding]
  %c_pad = q.conv2d %x, %w {strides = array<i64: 5, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 16, 16, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x8x8x16xi32>
  %y_pad = q.requantize %c_pad {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_big: pattern conv2d refused: a 33x33 filter needs 1089 weight tiles (272.25 KiB) per 16x16 channel block; the weight buffer holds 1024 (256 KiB) [buffers]
  %c_big = q.conv2d %x, %wbig {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 12, 13, 12, 13>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<16x33x33x16xi8>) -> tensor<1x8x8x16xi32>
  %y_big = q.requantize %c_big {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_dil: pattern conv2d refused: the 3x3 window dilated by 30x30 spans 61x61 input pixels = 3721 input rows for one output pixel; the input buffer holds 2048 (32 KiB) [buffers]
  %c_dil = q.conv2d %x, %w3 {strides = array<i64: 1, 1>, dilations = array<i64: 30, 30>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<16x3x3x16xi8>) -> tensor<1x8x8x16xi32>
  %y_dil = q.requantize %c_dil {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>

  // WHY: vta: kept on CPU: q.conv2d %c_sh: pattern conv2d refused: requantize shift -40 is beyond the ALU's 31-bit shifts [requantize]
  %c_sh = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x8x8x16xi32>
  %y_sh = q.requantize %c_sh {multiplier = array<i32: 1073741824>, shift = array<i32: -40>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x16xi32>) -> tensor<1x8x8x16xi8>
  func.return %y_i16, %y_rt, %y_zp, %y_pad, %y_big, %y_dil, %y_sh : tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>, tensor<1x8x8x16xi8>
}

// -----

// CHECK-LABEL: func.func @refused_structure
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @refused_structure(%x: tensor<1x4x4x16xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi32>, tensor<1x4x4x16xi32>) {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %b = tfl.const dense<1> : tensor<16xi32> -> tensor<16xi32>
  // The int32 accumulators are also a function result: they would have to leave the accelerator.
  // WHY: vta: kept on CPU: q.conv2d %acc: pattern conv2d refused: the result of q.conv2d %acc is also used by func.return outside the group [single-use]
  %acc = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  // WHY: vta: kept on CPU: q.bias_add %lone: no vta pattern matches q.bias_add here (patterns with q.bias_add: conv2d, depthwise_conv2d, dense)
  %lone = q.bias_add %acc, %b : (tensor<1x4x4x16xi32>, tensor<16xi32>) -> tensor<1x4x4x16xi32>
  func.return %y, %acc, %lone : tensor<1x4x4x16xi8>, tensor<1x4x4x16xi32>, tensor<1x4x4x16xi32>
}

// -----

// CHECK-LABEL: func.func @refused_alu_ops
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @refused_alu_ops(%x: tensor<1x4x4x16xi8>, %row: tensor<1x4x1x16xi8>, %s: tensor<1x1x1x1xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<1x2x2x16xi8>, tensor<1x4x4x1xi8>, tensor<1x4x4x24xi8>, tensor<1x4x20x16xi8>) {
  // WHY: vta: kept on CPU: q.add %add: pattern add refused: q.add broadcasts [1, 4, 1, 16] against [1, 4, 4, 16]: the ALU repeats whole rows only (per-channel operands of the result's rank, or constants) [broadcast]
  %add = q.add %x, %row {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x4x1x16xi8>) -> tensor<1x4x4x16xi8>
  // A run-time scalar would have to be broadcast across the 16 lanes, which the ALU cannot do.
  // WHY: vta: kept on CPU: q.add %scalar_add: pattern add refused: q.add broadcasts [1, 1, 1, 1] against [1, 4, 4, 16]: the ALU repeats whole rows only (per-channel operands of the result's rank, or constants) [broadcast]
  %scalar_add = q.add %x, %s {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x1x1x1xi8>) -> tensor<1x4x4x16xi8>
  // A window that could lie entirely in the padding has no taps to pool.
  // WHY: vta: kept on CPU: q.max_pool2d %mp: pattern max_pool2d refused: q.max_pool2d padding [0, 2, 0, 2] with a 2x2 window: a window could lie entirely in the padding [pool-padding]
  %mp = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 2, 0, 2>} : (tensor<1x4x4x16xi8>) -> tensor<1x2x2x16xi8>
  // WHY: vta: kept on CPU: q.mean %mean: pattern mean refused: mean over axes [3] of a 4-D tensor: only H and W of NHWC (axes [1, 2]) reduce along accumulator rows; other axes would reduce across lanes [reduce-axes]
  %mean = q.mean %x {axes = array<i64: 3>, num_elements = 16 : i32, input_zero_point = 0 : i32, multiplier = 1073741824 : i32, shift = -3 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x1xi8>
  // WHY: vta: kept on CPU: q.pad %padc: pattern pad refused: pads the channel axis by 0+8: only H and W of NHWC can be padded by the DMA; batch or channel padding would move lanes [pad-axes]
  %padc = q.pad %x {padding = array<i64: 0, 0, 0, 0, 0, 0, 0, 8>, pad_value = 0 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x24xi8>
  // WHY: vta: kept on CPU: q.pad %padw: pattern pad refused: padding 16 exceeds the 15 rows/columns a LOAD can pad [pad-axes]
  %padw = q.pad %x {padding = array<i64: 0, 0, 0, 0, 16, 0, 0, 0>, pad_value = 0 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x20x16xi8>
  func.return %add, %scalar_add, %mp, %mean, %padc, %padw : tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<1x2x2x16xi8>, tensor<1x4x4x1xi8>, tensor<1x4x4x24xi8>, tensor<1x4x20x16xi8>
}

// -----

// A channel concatenation whose first input does not fill whole blocks (8 + 16 channels) is
// taken: its lanes move in a host step of the accelerator program, inside the partition.
// CHECK-LABEL: func.func @concat_lanes
// CHECK:       q.concat {{.*}}qaccel.pattern = "concat"
func.func @concat_lanes(%x8: tensor<1x4x4x8xi8>, %x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x24xi8> {
  %cat = q.concat %x8, %x {axis = 3 : i32} : (tensor<1x4x4x8xi8>, tensor<1x4x4x16xi8>) -> tensor<1x4x4x24xi8>
  func.return %cat : tensor<1x4x4x24xi8>
}

// -----

// Pools the ALU trees cannot compute bit-exactly (padded taps, a divisor that is not a power of
// two) are taken: an exact host step of the accelerator program, inside the partition.
// CHECK-LABEL: func.func @host_pools
// CHECK:       q.max_pool2d {{.*}}qaccel.pattern = "max_pool2d"
// CHECK:       q.avg_pool2d {{.*}}qaccel.pattern = "avg_pool2d"
func.func @host_pools(%x: tensor<1x4x4x16xi8>) -> (tensor<1x2x2x16xi8>, tensor<1x4x4x16xi8>) {
  %mp = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x16xi8>) -> tensor<1x2x2x16xi8>
  %ap = q.avg_pool2d %x {filter = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  func.return %mp, %ap : tensor<1x2x2x16xi8>, tensor<1x4x4x16xi8>
}

// -----

// A reshape keeping batch and channels (Flatten after a global pool) is the same packed bytes,
// and so is one between whole channel blocks in plain order (Flatten of a 16-channel map, of
// a batch of two here); one that folds pixels of several channel blocks into channels would
// move lanes.
// CHECK-LABEL: func.func @reshapes
// CHECK:       %v = q.reshape {{.*}}qaccel.pattern = "reshape"
// CHECK:       %p = q.reshape {{.*}}qaccel.pattern = "reshape"
// CHECK:       %l = q.reshape
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @reshapes(%x: tensor<1x1x1x16xi8>, %z: tensor<2x2x2x16xi8>, %y: tensor<1x2x2x32xi8>) -> (tensor<1x16xi8>, tensor<2x64xi8>, tensor<1x128xi8>) {
  %v = q.reshape %x : (tensor<1x1x1x16xi8>) -> tensor<1x16xi8>
  %p = q.reshape %z : (tensor<2x2x2x16xi8>) -> tensor<2x64xi8>
  // WHY: vta: kept on CPU: q.reshape %l: pattern reshape refused: reshapes [1, 2, 2, 32] to [1, 128]: only the dimensions between batch and channels may change, or both be whole channel blocks in plain order, or lanes would move [reshape-view]
  %l = q.reshape %y : (tensor<1x2x2x32xi8>) -> tensor<1x128xi8>
  func.return %v, %p, %l : tensor<1x16xi8>, tensor<2x64xi8>, tensor<1x128xi8>
}

// -----

// A spatial crop keeps batch, channel blocks and lanes; a channel slice would move lanes.
// CHECK-LABEL: func.func @slices
// CHECK:       %c = q.slice {{.*}}qaccel.pattern = "slice"
// CHECK:       %k = q.slice
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @slices(%x: tensor<1x4x4x16xi8>) -> (tensor<1x3x3x16xi8>, tensor<1x4x4x8xi8>) {
  %c = q.slice %x {begin = array<i64: 0, 1, 1, 0>} : (tensor<1x4x4x16xi8>) -> tensor<1x3x3x16xi8>
  // WHY: vta: kept on CPU: q.slice %k: pattern slice refused: slices [1, 4, 4, 8] at [0, 0, 0, 8] out of [1, 4, 4, 16]: only the dimensions between batch and channels can be cropped, or lanes would move [slice-axes]
  %k = q.slice %x {begin = array<i64: 0, 0, 0, 8>} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x8xi8>
  func.return %c, %k : tensor<1x3x3x16xi8>, tensor<1x4x4x8xi8>
}

// -----

// A run-time per-channel operand of lower rank would need a reshape before the ALU repeats it
// (a constant one is written as the row itself).
// CHECK-LABEL: func.func @refused_lower_rank_operand
// CHECK-NOT:   qaccel
// CHECK:       func.return
func.func @refused_lower_rank_operand(%x: tensor<1x4x4x16xi8>, %c: tensor<16xi8>) -> tensor<1x4x4x16xi8> {
  // WHY: vta: kept on CPU: q.mul %m: pattern mul refused: q.mul broadcasts [16] against [1, 4, 4, 16]: the ALU repeats whole rows only (per-channel operands of the result's rank, or constants) [broadcast]
  %m = q.mul %x, %c {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, multiplier = 1073741824 : i32, shift = -6 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16xi8>) -> tensor<1x4x4x16xi8>
  func.return %m : tensor<1x4x4x16xi8>
}

// -----

// An element-wise int8 table (q.lut) is accepted: a host step inside the accelerator function.
// CHECK-LABEL: func.func @lut
// CHECK:      q.lut {{.*}}qaccel.target = "vta", qaccel.pattern = "lut", qaccel.group = 0 : i64
// CHECK-NEXT: func.return
func.func @lut(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %y = q.lut %x {table = array<i32: -64, -64, -63, -63, -62, -62, -61, -61, -60, -60, -59, -59, -58, -58, -57, -57, -56, -56, -55, -55, -54, -54, -53, -53, -52, -52, -51, -51, -50, -50, -49, -49, -48, -48, -47, -47, -46, -46, -45, -45, -44, -44, -43, -43, -42, -42, -41, -41, -40, -40, -39, -39, -38, -38, -37, -37, -36, -36, -35, -35, -34, -34, -33, -33, -32, -32, -31, -31, -30, -30, -29, -29, -28, -28, -27, -27, -26, -26, -25, -25, -24, -24, -23, -23, -22, -22, -21, -21, -20, -20, -19, -19, -18, -18, -17, -17, -16, -16, -15, -15, -14, -14, -13, -13, -12, -12, -11, -11, -10, -10, -9, -9, -8, -8, -7, -7, -6, -6, -5, -5, -4, -4, -3, -3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31, 32, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 47, 47, 48, 48, 49, 49, 50, 50, 51, 51, 52, 52, 53, 53, 54, 54, 55, 55, 56, 56, 57, 57, 58, 58, 59, 59, 60, 60, 61, 61, 62, 62, 63, 63>} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  func.return %y : tensor<1x4x4x16xi8>
}
