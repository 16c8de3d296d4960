// RUN: not qaccel-opt %s --split-input-file 2>&1 | filecheck %s
// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=CFG
// Parsed IR must be in SSA form: a value is used after its definition, never by its own op;
// across the blocks of a control-flow region, only where its block dominates the use's.

func.func @self_use(%b: tensor<2xi32>) -> tensor<1x2xi32> {
  %4 = q.bias_add %4, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %4 : tensor<1x2xi32>
}
// CHECK: qaccel-opt: error: {{.*}}dominance-invalid.mlir: @self_use: op 0 (q.bias_add) uses its own result as operand 0

// -----

// A value defined in one branch does not dominate the other.
func.func @other_branch(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %x = arith.addi %a, %a : i32
  cf.br ^bb3(%x : i32)
^bb2:
  cf.br ^bb3(%x : i32)
^bb3(%r: i32):
  func.return %r : i32
}
// CFG: {{.*}}dominance-invalid.mlir: @other_branch: block 2 op 0 (cf.br): operand 0 (%x) is defined in block 1, which does not dominate block 2

// -----

// Nor the block where the branches meet.
func.func @merge(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %x = arith.addi %a, %a : i32
  cf.br ^bb3
^bb2:
  cf.br ^bb3
^bb3:
  func.return %x : i32
}
// CFG: {{.*}}dominance-invalid.mlir: @merge: block 3 op 0 (func.return): operand 0 (%x) is defined in block 1, which does not dominate block 3

// -----

// A block argument dominates its block and the blocks it dominates only.
func.func @block_argument(%c: i1, %a: i32) -> i32 {
  cf.cond_br %c, ^bb1(%a : i32), ^bb2
^bb1(%y: i32):
  func.return %y : i32
^bb2:
  func.return %y : i32
}
// CFG: {{.*}}dominance-invalid.mlir: @block_argument: block 2 op 0 (func.return): operand 0 (%y) is defined in block 1, which does not dominate block 2

// -----

// Within a block of a control-flow region, uses still follow definitions.
func.func @later_in_block(%c: i1, %a: i32) -> i32 {
  cf.br ^bb1
^bb1:
  %x = arith.addi %y, %a : i32
  %y = arith.addi %a, %a : i32
  func.return %x : i32
}
// CFG: {{.*}}dominance-invalid.mlir: @later_in_block: block 1 op 0 (arith.addi): operand 0 (%y) is used before its definition by block 1 op 1 (arith.addi)
