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
