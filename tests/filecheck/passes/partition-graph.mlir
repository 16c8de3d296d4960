// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph' 2>/dev/null | filecheck %s
// Running it again changes nothing.
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph,partition-graph' 2>/dev/null | filecheck %s
// The summary is printed on request only (report=true, or explain=true):
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph' 2>&1 >/dev/null | filecheck %s --allow-empty --check-prefix=QUIET
// QUIET-NOT: selected
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{max-partitions=1}' 2>/dev/null | filecheck %s --check-prefix=MAX
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{max-partitions=1 report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=MAX-REPORT
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{min-ops=5 explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=MIN

// A diamond where merging every annotated group would create a cycle: %a -> tanh (CPU) -> add,
// and %a -> %b -> add. The add cannot join %a's partition, so it starts a second one; the
// first partition has two outputs.

// CHECK-LABEL: func.func @diamond
// CHECK-NOT:   tfl.const
// CHECK:       %[[A:.*]], %[[B:.*]] = func.call @vta_fn_0(%x) : (tensor<1x4x4x16xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>)
// CHECK-NEXT:  %[[T:.*]] = tfl.tanh %[[A]]
// CHECK-NEXT:  %[[C:.*]] = func.call @vta_fn_1(%[[T]], %[[B]]) : (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
// CHECK-NEXT:  func.return %[[C]]
// CHECK:       func.func private @vta_fn_0(%x: tensor<1x4x4x16xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) attributes {qaccel.target = "vta"} {
// CHECK-NEXT:    %[[W:.*]] = tfl.const
// CHECK-NEXT:    %[[A0:.*]] = q.conv2d %x, %[[W]] {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64
// CHECK-NEXT:    %[[A1:.*]] = q.requantize %[[A0]]
// CHECK-NEXT:    %[[B0:.*]] = q.conv2d %[[A1]], %[[W]]
// CHECK-NEXT:    %[[B1:.*]] = q.requantize %[[B0]]
// CHECK-NEXT:    func.return %[[A1]], %[[B1]]
// CHECK:       func.func private @vta_fn_1(%[[T:.*]]: tensor<1x4x4x16xi8>, %[[B:.*]]: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> attributes {qaccel.target = "vta"} {
// CHECK-NEXT:    %[[W:.*]] = tfl.const
// CHECK-NEXT:    %[[S:.*]] = q.add %[[T]], %[[B]]
// CHECK-NEXT:    %[[C0:.*]] = q.conv2d %[[S]], %[[W]]
// CHECK-NEXT:    %[[C1:.*]] = q.requantize %[[C0]]
// CHECK-NEXT:    func.return %[[C1]]
// REPORT: vta: selected 7 of 8 ops (100.0% of MACs) into 2 partitions
// REPORT-NEXT: vta: kept on CPU: tfl.tanh %t: no vta pattern for tfl.tanh (the accelerator runs q ops only)
// MAX-LABEL: func.func @diamond
// MAX-NEXT:    tfl.const
// MAX-NEXT:    %[[A:.*]], %[[B:.*]] = func.call @vta_fn_0(%x)
// MAX-NEXT:    tfl.tanh
// MAX-NEXT:    q.add
// MAX-NOT:     qaccel
// MAX:         q.conv2d
// MAX-NOT:     qaccel
// MAX:         func.return
// MAX-REPORT: vta: selected 4 of 8 ops (66.7% of MACs) into 1 partition
// MAX-REPORT-NEXT: vta: dropped a partition of 3 ops (33.3% of MACs) beyond max-partitions=1: q.add %s, q.conv2d %c0, q.requantize %c
// MIN: vta: selected 0 of 8 ops (0.0% of MACs) into 0 partitions
// MIN-NEXT: vta: kept on CPU: q.conv2d %a0: its partition of 4 ops is below min-ops=5
func.func @diamond(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %t = tfl.tanh %a : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %b0 = q.conv2d %a, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %b0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %s = q.add %t, %b {lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %c0 = q.conv2d %s, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %c = q.requantize %c0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  func.return %c : tensor<1x4x4x16xi8>
}

// -----

// Partition indices keep groups apart (annotated by hand here): %a and %c share index 1 and
// merge, %b has index 2 and gets its own partition although it is adjacent to %a.

// CHECK-LABEL: func.func @partition_indices
// CHECK:       %[[A:.*]], %[[C:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:  %[[B:.*]] = func.call @vta_fn_1(%[[A]])
// CHECK-NEXT:  func.return %[[B]], %[[C]]
// CHECK:       func.func private @vta_fn_0
// CHECK-SAME:    qaccel.target = "vta"
// CHECK-COUNT-2: qaccel.partition_index = 1 : i64
// CHECK-NOT:     qaccel.partition_index = 2
// CHECK:       func.func private @vta_fn_1
// CHECK-COUNT-2: qaccel.partition_index = 2 : i64
// REPORT: vta: selected 6 of 6 ops (100.0% of MACs) into 2 partitions
// MAX-REPORT: vta: selected 4 of 6 ops (66.7% of MACs) into 1 partition
// MAX-REPORT-NEXT: vta: dropped a partition of 2 ops (33.3% of MACs) beyond max-partitions=1: q.conv2d %b0, q.requantize %b
func.func @partition_indices(%x: tensor<1x4x4x16xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>) {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %a0 = q.conv2d %x, %w {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64, qaccel.partition_index = 1 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 0 : i64, qaccel.partition_index = 1 : i64, multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %b0 = q.conv2d %a, %w {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 1 : i64, qaccel.partition_index = 2 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %b0 {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 1 : i64, qaccel.partition_index = 2 : i64, multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %c0 = q.conv2d %a, %w {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 2 : i64, qaccel.partition_index = 1 : i64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %c = q.requantize %c0 {qaccel.target = "vta", qaccel.pattern = "conv2d", qaccel.group = 2 : i64, qaccel.partition_index = 1 : i64, multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  func.return %b, %c : tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>
}

// -----

// Independent regions (no path between them) share one partition. A region output used by
// the host and by the return is one result; a weight the host still uses stays in the host
// and is cloned into the function.

// CHECK-LABEL: func.func @independent
// CHECK-NEXT:  %[[W:.*]] = tfl.const
// CHECK-NEXT:  %[[SHAPE:.*]] = tfl.const
// CHECK-NEXT:  %[[A:.*]], %[[B:.*]] = func.call @vta_fn_0(%x, %y)
// CHECK-NEXT:  %[[T:.*]] = tfl.tanh %[[A]]
// CHECK-NEXT:  %[[R:.*]] = tfl.reshape %[[W]], %[[SHAPE]]
// CHECK-NEXT:  func.return %[[T]], %[[A]], %[[B]], %[[R]]
// CHECK:       func.func private @vta_fn_0(%x: tensor<1x4x4x16xi8>, %y: tensor<1x4x4x16xi8>)
// REPORT: vta: selected 4 of 6 ops (100.0% of MACs) into 1 partition
func.func @independent(%x: tensor<1x4x4x16xi8>, %y: tensor<1x4x4x16xi8>) -> (tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<256xi8>) {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %shape = tfl.const dense<256> : tensor<1xi32> -> tensor<1xi32>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %t = tfl.tanh %a : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %b0 = q.conv2d %y, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %b0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %r = tfl.reshape %w, %shape {new_shape = array<i32: 256>} : (tensor<16x1x1x16xi8>, tensor<1xi32>) -> tensor<256xi8>
  func.return %t, %a, %b, %r : tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<1x4x4x16xi8>, tensor<256xi8>
}

// -----

// A partition without GEMM work is not worth a launch: the clamp stays on the CPU, without
// annotations.

// CHECK-LABEL: func.func @no_gemm_work
// CHECK-NOT:   qaccel
// CHECK-NOT:   func.call
// CHECK:       q.relu %{{.*}} {min = 0 : i32, max = 100 : i32}
// REPORT: vta: selected 0 of 3 ops (0.0% of MACs) into 0 partitions
// REPORT-NEXT: vta: kept on CPU: tfl.tanh %t: no vta pattern for tfl.tanh (the accelerator runs q ops only)
// REPORT-NEXT: vta: kept on CPU: q.relu %r: its partition (q.relu %r) does no GEMM work (0 MACs): moving 512 bytes to the accelerator and back, with a pack and an unpack on the host, costs more than its ALU work saves
func.func @no_gemm_work(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %t = tfl.tanh %x : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %r = q.relu %t {min = 0 : i32, max = 100 : i32} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %u = tfl.tanh %r : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  func.return %u : tensor<1x4x4x16xi8>
}
