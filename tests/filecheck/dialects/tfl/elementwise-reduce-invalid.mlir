// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @prelu_alpha_widens(%x: tensor<1x4x!q>, %a: tensor<3x1x!q>) -> tensor<3x4x!q> {
  %0 = tfl.prelu %x, %a : (tensor<1x4x!q>, tensor<3x1x!q>) -> tensor<3x4x!q>
  func.return %0 : tensor<3x4x!q>
}
// CHECK: tfl.prelu: alpha of shape [3, 1] broadcasts the input [1, 4] to [3, 4]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @reduce_max_shape(%x: tensor<2x3x!q>) -> tensor<3x!q> {
  %axis = tfl.const dense<1> : tensor<1xi32> -> tensor<1xi32>
  %0 = tfl.reduce_max %x, %axis {keep_dims = false} : (tensor<2x3x!q>, tensor<1xi32>) -> tensor<3x!q>
  func.return %0 : tensor<3x!q>
}
// CHECK: tfl.reduce_max: the result is declared with shape [3], but the inputs give [2]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @arg_max_axis(%x: tensor<2x3x!q>) -> tensor<2xi32> {
  %axis = tfl.const dense<2> : tensor<1xi32> -> tensor<1xi32>
  %0 = tfl.arg_max %x, %axis {output_type = "INT32"} : (tensor<2x3x!q>, tensor<1xi32>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
// CHECK: tfl.arg_max: axis [2] is not one axis of rank 2

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @arg_min_type(%x: tensor<2x3x!q>) -> tensor<2xi32> {
  %axis = tfl.const dense<1> : tensor<1xi32> -> tensor<1xi32>
  %0 = tfl.arg_min %x, %axis {output_type = "INT3"} : (tensor<2x3x!q>, tensor<1xi32>) -> tensor<2xi32>
  func.return %0 : tensor<2xi32>
}
// CHECK: tfl.arg_min: output_type = "INT3" is not one of FLOAT32,

// -----

func.func @squared_difference_shapes(%x: tensor<2x3xf32>, %y: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = tfl.squared_difference %x, %y : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}
// CHECK: tfl.squared_difference: shapes [2, 3] and [4] do not broadcast
