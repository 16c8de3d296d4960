// RUN: qaccel-opt %s | filecheck %s
// Values defined before their uses, in enclosing blocks and as block arguments, verify.

// CHECK-LABEL: func.func @ordered
func.func @ordered(%a: tensor<1x2xi32>, %b: tensor<2xi32>) -> tensor<1x2xi32> {
  // CHECK-NEXT: %0 = q.bias_add %a, %b
  %0 = q.bias_add %a, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  // CHECK-NEXT: %1 = q.bias_add %0, %b
  %1 = q.bias_add %0, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %1 : tensor<1x2xi32>
}

// Control flow: the entry dominates every block, a loop header its body, a block argument
// its block; a block no branch reaches is not checked (MLIR's rule).

// CHECK-LABEL: func.func @diamond_and_loop
func.func @diamond_and_loop(%c: i1, %a: i32) -> i32 {
  %e = arith.addi %a, %a : i32
  cf.cond_br %c, ^bb1, ^bb2(%e : i32)
^bb1:
  %x = arith.addi %e, %a : i32
  cf.br ^bb2(%x : i32)
^bb2(%m: i32):
  %h = arith.addi %m, %e : i32
  cf.cond_br %c, ^bb3, ^bb4
^bb3:
  %b = arith.addi %h, %m : i32
  cf.br ^bb2(%b : i32)
^bb4:
  func.return %h : i32
^bb5:
  %u = arith.addi %v, %x : i32
  %v = arith.addi %u, %a : i32
  cf.br ^bb4
}
// CHECK: ^bb4:
// CHECK-NEXT: func.return %h : i32
