// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph' 2>/dev/null | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{explain=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=EXPLAIN
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{host-steps=cpu}' 2>/dev/null | filecheck %s --check-prefix=ONCPU
// RUN: qaccel-opt %s --split-input-file -p 'attach-target,annotate-target,partition-graph{host-steps=inside explain=true}' 2>&1 | filecheck %s --check-prefix=INSIDE

// A q.lut is a host step of the accelerator program (a table lookup between two layers).
// Between two convolutions it stays inside: on the CPU it would split the partition (one
// more launch, its input unpacked and its output packed again).

// CHECK-LABEL: func.func @lut_between_layers
// CHECK-NEXT:    %[[Y:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       func.func private @vta_fn_0
// CHECK:         q.conv2d
// CHECK:         q.lut
// CHECK:         q.conv2d
// EXPLAIN:      vta: selected 5 of 5 ops (100.0% of MACs) into 1 partition
// EXPLAIN-NEXT: vta: host step or CPU: q.lut %t, a table lookup inside its partition: host step 752 cycles (host step 86, sync 666); CPU 7283 cycles (CPU op 419, pack 86, unpack 86, DRAM 32, launch 6660); chosen: host step
// ONCPU-LABEL:   func.func @lut_between_layers
// ONCPU-NEXT:      %[[A:.*]] = func.call @vta_fn_0(%x)
// ONCPU-NEXT:      %[[T:.*]] = q.lut %[[A]]
// ONCPU-NEXT:      %[[Y:.*]] = func.call @vta_fn_1(%[[T]])
// ONCPU-NEXT:      func.return %[[Y]]
// INSIDE:       vta: host step or CPU: q.lut %t, {{.*}} chosen: host step (host-steps option)
func.func @lut_between_layers(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %t = q.lut %a {table = array<i32: -64, -64, -63, -63, -62, -62, -61, -61, -60, -60, -59, -59, -58, -58, -57, -57, -56, -56, -55, -55, -54, -54, -53, -53, -52, -52, -51, -51, -50, -50, -49, -49, -48, -48, -47, -47, -46, -46, -45, -45, -44, -44, -43, -43, -42, -42, -41, -41, -40, -40, -39, -39, -38, -38, -37, -37, -36, -36, -35, -35, -34, -34, -33, -33, -32, -32, -31, -31, -30, -30, -29, -29, -28, -28, -27, -27, -26, -26, -25, -25, -24, -24, -23, -23, -22, -22, -21, -21, -20, -20, -19, -19, -18, -18, -17, -17, -16, -16, -15, -15, -14, -14, -13, -13, -12, -12, -11, -11, -10, -10, -9, -9, -8, -8, -7, -7, -6, -6, -5, -5, -4, -4, -3, -3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31, 32, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 47, 47, 48, 48, 49, 49, 50, 50, 51, 51, 52, 52, 53, 53, 54, 54, 55, 55, 56, 56, 57, 57, 58, 58, 59, 59, 60, 60, 61, 61, 62, 62, 63, 63>} : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8>
  %b0 = q.conv2d %t, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %b0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  func.return %b : tensor<1x4x4x16xi8>
}

// -----

// At the partition's edge no launch is at stake: the lookup over 4 channels does the work of
// 16 lanes in the packed layout, 4 on the CPU (plus one operator's dispatch), and the hop adds
// nothing (the partition's output is the lookup's input instead of its result, the same
// bytes). It runs on the CPU.

// CHECK-LABEL: func.func @lut_at_the_edge
// CHECK-NEXT:    %[[A:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:    %[[T:.*]] = q.lut %[[A]]
// CHECK-NOT:     qaccel
// CHECK-NEXT:    func.return %[[T]]
// CHECK:       func.func private @vta_fn_0
// CHECK-NOT:     q.lut
// CHECK:         func.return
// EXPLAIN:      vta: selected 2 of 3 ops (100.0% of MACs) into 1 partition
// EXPLAIN-NEXT: vta: kept on CPU: q.lut %t: the cost model prefers the CPU: 674 cycles with the hop, 1364 as a host step of its partition
// EXPLAIN-NEXT: vta: host step or CPU: q.lut %t, a table lookup at its partition's edge: host step 1364 cycles (host step 1364); CPU 674 cycles (CPU op 674, pack 0, unpack 0, DRAM 0, launch 0); chosen: CPU
// ONCPU-LABEL:   func.func @lut_at_the_edge
// ONCPU-NEXT:      func.call @vta_fn_
// ONCPU-NEXT:      q.lut
// INSIDE:       vta: selected 3 of 3 ops (100.0% of MACs) into 1 partition
// INSIDE:       vta: host step or CPU: q.lut %t, {{.*}} chosen: host step (host-steps option)
// INSIDE-LABEL: func.func @lut_at_the_edge
// INSIDE-NEXT:    %[[T:.*]] = func.call @vta_fn_0(%x)
// INSIDE-NEXT:    func.return %[[T]]
func.func @lut_at_the_edge(%x: tensor<1x16x16x16xi8>) -> tensor<1x16x16x4xi8> {
  %w = tfl.const dense<1> : tensor<4x1x1x16xi8> -> tensor<4x1x1x16xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x16x16x16xi8>, tensor<4x1x1x16xi8>) -> tensor<1x16x16x4xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x16x16x4xi32>) -> tensor<1x16x16x4xi8>
  %t = q.lut %a {table = array<i32: -64, -64, -63, -63, -62, -62, -61, -61, -60, -60, -59, -59, -58, -58, -57, -57, -56, -56, -55, -55, -54, -54, -53, -53, -52, -52, -51, -51, -50, -50, -49, -49, -48, -48, -47, -47, -46, -46, -45, -45, -44, -44, -43, -43, -42, -42, -41, -41, -40, -40, -39, -39, -38, -38, -37, -37, -36, -36, -35, -35, -34, -34, -33, -33, -32, -32, -31, -31, -30, -30, -29, -29, -28, -28, -27, -27, -26, -26, -25, -25, -24, -24, -23, -23, -22, -22, -21, -21, -20, -20, -19, -19, -18, -18, -17, -17, -16, -16, -15, -15, -14, -14, -13, -13, -12, -12, -11, -11, -10, -10, -9, -9, -8, -8, -7, -7, -6, -6, -5, -5, -4, -4, -3, -3, -2, -2, -1, -1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15, 16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23, 24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31, 32, 32, 33, 33, 34, 34, 35, 35, 36, 36, 37, 37, 38, 38, 39, 39, 40, 40, 41, 41, 42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 47, 47, 48, 48, 49, 49, 50, 50, 51, 51, 52, 52, 53, 53, 54, 54, 55, 55, 56, 56, 57, 57, 58, 58, 59, 59, 60, 60, 61, 61, 62, 62, 63, 63>} : (tensor<1x16x16x4xi8>) -> tensor<1x16x16x4xi8>
  func.return %t : tensor<1x16x16x4xi8>
}

// -----

// The resizes are host steps of the program too (a gather, an interpolation), priced as such:
// between two convolutions they stay inside; host-steps=cpu puts them between two partitions.
// CHECK-LABEL: func.func @resizes_between_layers
// CHECK-NEXT:    %[[Y:.*]] = func.call @vta_fn_0(%x)
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       func.func private @vta_fn_0
// CHECK:         q.resize_bilinear
// CHECK:         q.resize_nearest_neighbor
// EXPLAIN:      vta: selected 6 of 6 ops (100.0% of MACs) into 1 partition
// EXPLAIN-NEXT: vta: host step or CPU: q.resize_bilinear %b, an interpolation (bilinear resize) inside its partition: host step {{[0-9]+}} cycles (host step {{[0-9]+}}, sync 666); CPU {{[0-9]+}} cycles ({{.*}}launch 6660); chosen: host step
// EXPLAIN-NEXT: vta: host step or CPU: q.resize_nearest_neighbor %n, a gather (nearest-neighbour resize) inside its partition: host step {{[0-9]+}} cycles (host step {{[0-9]+}}, sync 666); CPU {{[0-9]+}} cycles ({{.*}}launch 6660); chosen: host step
// ONCPU-LABEL:   func.func @resizes_between_layers
// ONCPU-NEXT:      %[[A:.*]] = func.call @vta_fn_0(%x)
// ONCPU-NEXT:      %[[B:.*]] = q.resize_bilinear %[[A]]
// ONCPU-NEXT:      %[[N:.*]] = q.resize_nearest_neighbor %[[B]]
// ONCPU-NEXT:      %[[Y:.*]] = func.call @vta_fn_1(%[[N]])
// ONCPU-NEXT:      func.return %[[Y]]
// INSIDE:       vta: host step or CPU: q.resize_bilinear %b, {{.*}} chosen: host step (host-steps option)
func.func @resizes_between_layers(%x: tensor<1x4x4x16xi8>) -> tensor<1x16x16x16xi8> {
  %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %b = q.resize_bilinear %a {align_corners = false, half_pixel_centers = true} : (tensor<1x4x4x16xi8>) -> tensor<1x8x8x16xi8>
  %n = q.resize_nearest_neighbor %b {align_corners = false, half_pixel_centers = false} : (tensor<1x8x8x16xi8>) -> tensor<1x16x16x16xi8>
  %c0 = q.conv2d %n, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x16x16x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x16x16x16xi32>
  %c = q.requantize %c0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x16x16x16xi32>) -> tensor<1x16x16x16xi8>
  func.return %c : tensor<1x16x16x16xi8>
}
