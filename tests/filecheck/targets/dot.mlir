// RUN: qaccel-opt %s -p 'attach-target,annotate-target,partition-graph,insert-pack-unpack' -t dot 2>/dev/null | filecheck %s
// RUN: qaccel-opt %s -p 'attach-target,annotate-target' -t dot | filecheck %s --check-prefix=GROUPS
// RUN: qaccel-opt %s -t dot | filecheck %s --check-prefix=PLAIN
// RUN: qaccel-opt %s -p 'attach-target,annotate-target,partition-graph{max-partitions=1}' -t dot 2>/dev/null | filecheck %s --check-prefix=MAX
// RUN: qaccel-opt %S/Inputs/dot-names.mlir -t dot | filecheck %s --check-prefix=NAMES

// Each partition is a coloured cluster holding its ops; pack/unpack are orange trapezoids;
// edges crossing a cluster border are data moving between CPU and accelerator.

// CHECK:      digraph "diamond" {
// CHECK:        in0 [label="input 0\n1x4x4x16 i8", shape=ellipse
// CHECK:        [[PACK:n[0-9]+]] [label="accel.pack\n1x1x4x4x1x16 i8", shape=trapezium, fillcolor="#ffd8a8"
// CHECK:        subgraph cluster_vta_fn_0 {
// CHECK-NEXT:     label="@vta_fn_0 on vta: 4 ops, 66.7% of MACs"; style="filled,rounded"; fillcolor="#dbe9f6"
// CHECK-NEXT:     [[UNPACK:n[0-9]+]] [label="accel.unpack\n1x4x4x16 i8", shape=invtrapezium
// CHECK-NEXT:     [[CONV:n[0-9]+]] [label="q.conv2d\n1x4x4x16 i32\n4.1k MACs"];
// CHECK:        }
// CHECK:        [[TANH:n[0-9]+]] [label="tfl.tanh\n1x1x4x4x1x16 i8\nCPU: no vta pattern for tfl.tanh\n(the accelerator runs q ops only)", tooltip="no vta pattern for tfl.tanh (the accelerator runs q ops only)", fillcolor="#fff0f0", color="#c92a2a"];
// CHECK:        subgraph cluster_vta_fn_1 {
// CHECK-NEXT:     label="@vta_fn_1 on vta: 3 ops, 33.3% of MACs"; style="filled,rounded"; fillcolor="#e3f1da"
// CHECK:        }
// CHECK:        out0 [label="output 0\n1x4x4x16 i8", shape=ellipse
// CHECK-DAG:    [[PACK]] -> [[UNPACK]] [label="1x1x4x4x1x16 i8"];
// CHECK-DAG:    [[UNPACK]] -> [[CONV]] [label="1x4x4x16 i8"];
// CHECK-DAG:    in0 -> [[PACK]] [label="1x4x4x16 i8"];
// CHECK:      }

// Before partitioning, annotated groups are dashed clusters.
// GROUPS:      subgraph cluster_group_0 {
// GROUPS-NEXT:   label="group 0: conv2d (vta)"; style="dashed,rounded"
// GROUPS-NEXT:   n0 [label="q.conv2d\n1x4x4x16 i32\n4.1k MACs"];
// GROUPS-NEXT:   n1 [label="q.requantize\n1x4x4x16 i8"];
// GROUPS-NEXT: }
// Ops left on the CPU say why (the reasons of --explain-partitioning), shaded red.
// GROUPS:      n2 [label="tfl.tanh\n1x4x4x16 i8\nCPU: no vta pattern for tfl.tanh\n(the accelerator runs q ops only)", tooltip="no vta pattern for tfl.tanh (the accelerator runs q ops only)", fillcolor="#fff0f0", color="#c92a2a"];
// GROUPS:      subgraph cluster_group_2 {
// GROUPS-NEXT:   label="group 2: add (vta)"

// A partition partition-graph dropped: its ops match a pattern but stay on the CPU.
// MAX:       subgraph cluster_vta_fn_0 {
// MAX:       [label="q.add\n1x4x4x16 i8\nCPU: vta pattern add matches it,\nbut partition-graph dropped its\npartition (min-ops, max-partitions\nor the region check)", tooltip="vta pattern add matches it, but partition-graph dropped its partition (min-ops, max-partitions or the region check)", fillcolor="#fff0f0"
// MAX:       [label="q.conv2d\n1x4x4x16 i32\n4.1k MACs\nCPU: vta pattern conv2d matches\nit, but partition-graph dropped

// Without a target nothing was decided: no reasons, no shading.
// PLAIN-NOT: cluster
// PLAIN-NOT: CPU:
// PLAIN:     n0 [label="q.conv2d\n1x4x4x16 i32\n4.1k MACs"];
// PLAIN:     in0 -> n0 [label="1x4x4x16 i8"];
// PLAIN:     n7 -> out0;

// Tensor names: the first part of a fused name, without the scope every name shares, cut at
// the end (the layer is at the start; `/Relu6`, `:0` are what layers have in common).
// NAMES:     n0 [label="tfl.tanh\nblock_12_expand_relu/Relu6\n1x4x4x16 i8"];
// NAMES:     n1 [label="tfl.tanh\nblock_13_expand_relu/Relu6\n1x4x4x16 i8"];
// NAMES:     n2 [label="tfl.tanh\nblock_13_project_with_a_lon…\n1x4x4x16 i8"];
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
