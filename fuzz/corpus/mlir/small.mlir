func.func @f(%a: tensor<1x2xi32>, %b: tensor<2xi32>) -> tensor<1x2xi32> {
  %1 = q.bias_add %a, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %1 : tensor<1x2xi32>
}
