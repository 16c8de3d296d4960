// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph' 2>/dev/null | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{host-steps=cpu}' 2>/dev/null | filecheck %s --check-prefix=ONCPU

// A layer norm's mean over the channels (a host step summing the lanes) and its squared
// difference with the mean broadcast over the channels (a host step gathering lane 0, the
// rest on the ALU) are decision points: between two convolutions they stay inside (on the
// CPU they would split the partition); with host-steps=cpu they run on the CPU.

// CHECK-LABEL: func.func @norm_between_layers
// CHECK-NEXT:    %[[Y:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       func.func private @vta_fn_0
// CHECK:         q.mean
// CHECK:         q.squared_difference
// EXPLAIN:      vta: selected 6 of 6 ops (100.0% of MACs) into 1 partition
// EXPLAIN-NEXT: vta: host step or CPU: q.mean %m, a channel sum (reduction) inside its partition: host step 677 cycles (host step 11, sync 666); CPU 7071 cycles (CPU op 334, pack 43, unpack 22, DRAM 12, launch 6660); chosen: host step
// EXPLAIN-NEXT: vta: host step or CPU: q.squared_difference %s, a lane broadcast (gather) inside its partition: host step 672 cycles (host step 6, sync 666); CPU 7076 cycles (CPU op 339, pack 22, unpack 43, DRAM 12, launch 6660); chosen: host step
// ONCPU-LABEL:   func.func @norm_between_layers
// ONCPU-NEXT:      %[[A:.*]] = func.call @vta_fn_0(%x)
// ONCPU-NEXT:      %[[M:.*]] = q.mean %[[A]]
// ONCPU-NEXT:      %[[S:.*]] = q.squared_difference %[[A]], %[[M]]
// ONCPU-NEXT:      %[[Y:.*]] = func.call @vta_fn_1(%[[S]])
// ONCPU-NEXT:      func.return %[[Y]]
!q = !quant.uniform<i8:f32, 0.5:-1>
!m = !quant.uniform<i8:f32, 0.0625:2>
!s = !quant.uniform<i8:f32, 2.0:-128>
func.func @norm_between_layers(%x: tensor<1x2x2x16x!q>) -> tensor<1x2x2x16x!q> {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x2x2x16x!q>, tensor<16x1x1x16xi8>) -> tensor<1x2x2x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x16xi32>) -> tensor<1x2x2x16x!q>
  %m = q.mean %a {axes = array<i64: 3>, num_elements = 16 : i32, input_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = 0 : i32, output_zero_point = 2 : i32} : (tensor<1x2x2x16x!q>) -> tensor<1x2x2x1x!m>
  %s = q.squared_difference %a, %m {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = -3 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -128 : i32} : (tensor<1x2x2x16x!q>, tensor<1x2x2x1x!m>) -> tensor<1x2x2x16x!s>
  %b0 = q.conv2d %s, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -128 : i32, filter_zero_point = 0 : i32} : (tensor<1x2x2x16x!s>, tensor<16x1x1x16xi8>) -> tensor<1x2x2x16xi32>
  %b = q.requantize %b0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x16xi32>) -> tensor<1x2x2x16x!q>
  func.return %b : tensor<1x2x2x16x!q>
}

// -----

// A mean over 24 channels (a block and a half of 16 lanes) would sum padding lanes: refused,
// so the partition splits around it.
!q = !quant.uniform<i8:f32, 0.5:-1>
!m = !quant.uniform<i8:f32, 0.0625:2>

// CHECK-LABEL: func.func @mean_over_partial_blocks
// CHECK-NEXT:    %[[A:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:    %[[M:.*]] = q.mean %[[A]]
// EXPLAIN: vta: kept on CPU: q.mean %m: pattern mean refused: mean over the channel axis of [1, 2, 2, 24]: the host step sums whole 16-lane blocks (24 channels) [reduce-axes]
func.func @mean_over_partial_blocks(%x: tensor<1x2x2x24x!q>) -> tensor<1x2x2x1x!m> {
  %w = tfl.const dense<1> : tensor<24x1x1x24xi8> -> tensor<24x1x1x24xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x2x2x24x!q>, tensor<24x1x1x24xi8>) -> tensor<1x2x2x24xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x24xi32>) -> tensor<1x2x2x24x!q>
  %m = q.mean %a {axes = array<i64: 3>, num_elements = 24 : i32, input_zero_point = -1 : i32, multiplier = 1431655765 : i32, shift = -1 : i32, output_zero_point = 2 : i32} : (tensor<1x2x2x24x!q>) -> tensor<1x2x2x1x!m>
  func.return %m : tensor<1x2x2x1x!m>
}
