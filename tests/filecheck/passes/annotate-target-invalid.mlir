// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p 'attach-target,annotate-target' | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p 'annotate-target{target=nope}' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not qaccel-opt %s --split-input-file -p 'annotate-target' 2>&1 | filecheck %s --check-prefix=NOTARGET

// The target comes from the module's #accel.target or the target= option, and must exist.
// UNKNOWN: qaccel-opt: error: annotate-target: unknown target 'nope' (known: vta)
// NOTARGET: qaccel-opt: error: annotate-target: the module has no accel.target: run attach-target{target=NAME} first (vta-pipeline does)

// Op groups are found within one block: a function of several blocks is refused.
// CHECK: @two_blocks: partitioning needs a function with a single block
func.func @two_blocks(%x: tensor<1x16xi8>) -> tensor<1x16xi8> {
  cf.br ^bb1
^bb1:
  func.return %x : tensor<1x16xi8>
}

// -----

// An annotation of the wrong type is rejected with the input (the registered discardable
// attributes are verified before the first pass).
// CHECK: q.relu: qaccel.group must be an i64 integer, got "zero"
func.func @bad_group(%x: tensor<1x16xi8>) -> tensor<1x16xi8> {
  %a = q.relu %x {qaccel.group = "zero", min = 0 : i32, max = 127 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  func.return %a : tensor<1x16xi8>
}
