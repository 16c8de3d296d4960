// RUN: not qaccel-opt %s -p 'attach-target,partition-graph' 2>&1 | filecheck %s --check-prefix=CONVEX
// RUN: not qaccel-opt %S/Inputs/partition-mixed-index.mlir -p 'attach-target,partition-graph' 2>&1 | filecheck %s --check-prefix=MIXED
// RUN: not qaccel-opt %s -p 'annotate-target{target=nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not qaccel-opt %s -p 'partition-graph{target=nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not qaccel-opt %s -p 'attach-target,partition-graph{max-partitions=-1}' 2>&1 | filecheck %s --check-prefix=NEGATIVE
// RUN: not qaccel-opt %s -p 'attach-target,partition-graph{host-steps=always}' 2>&1 | filecheck %s --check-prefix=HOSTSTEPS
// Without target=NAME the passes take the module's #accel.target, and say when it has none:
// RUN: not qaccel-opt %s -p 'annotate-target' 2>&1 | filecheck %s --check-prefix=NOTARGET
// RUN: not qaccel-opt %s -p 'partition-graph' 2>&1 | filecheck %s --check-prefix=NOTARGET

// CONVEX: qaccel-opt: error: partition-graph: the ops of group 0 (first: q.relu %a) cannot form one partition: a path leaves the group and re-enters it through an op outside it
// MIXED: qaccel-opt: error: partition-graph: group 0 mixes partition indices 1 and 2 (q.relu %b)
// UNKNOWN: qaccel-opt: error: {{annotate-target|partition-graph}}: unknown target 'nope' (known: vta)
// NEGATIVE: qaccel-opt: error: partition-graph: max-partitions must not be negative, got -1
// HOSTSTEPS: qaccel-opt: error: partition-graph: host-steps must be one of cost, inside, cpu, got 'always'
// NOTARGET: qaccel-opt: error: {{annotate-target|partition-graph}}: the module has no accel.target: run attach-target{target=NAME} first (vta-pipeline does)

// A hand-annotated group that a foreign op splits: %a -> tanh -> %c, all but tanh in group 0.
func.func @not_convex(%x: tensor<1x16xi8>) -> tensor<1x16xi8> {
  %a = q.relu %x {qaccel.target = "vta", qaccel.group = 0 : i64, min = 0 : i32, max = 127 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  %t = tfl.tanh %a : (tensor<1x16xi8>) -> tensor<1x16xi8>
  %c = q.relu %t {qaccel.target = "vta", qaccel.group = 0 : i64, min = 0 : i32, max = 100 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  func.return %c : tensor<1x16xi8>
}
