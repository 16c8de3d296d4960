// RUN: qaccel-opt %s --split-input-file | qaccel-opt --split-input-file | filecheck %s
// The element-wise, reduction and float-island tfl ops survive a print-parse round trip.

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @unary
func.func @unary(%x: tensor<2x4x!q>, %f: tensor<2x4xf32>) -> (tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!quant.uniform<i8:f32, 0.0625:127>>, tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK: tfl.neg %x : (tensor<2x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5:-1>>
  %0 = tfl.neg %x : (tensor<2x4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.rsqrt %{{.*}} :
  %1 = tfl.rsqrt %0 : (tensor<2x4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.gelu %{{.*}} {approximate = true}
  %2 = tfl.gelu %1 {approximate = true} : (tensor<2x4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.log_softmax %{{.*}} :
  %3 = tfl.log_softmax %2 : (tensor<2x4x!q>) -> tensor<2x4x!quant.uniform<i8:f32, 0.0625:127>>
  // CHECK: tfl.sqrt %f : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %4 = tfl.sqrt %f : (tensor<2x4xf32>) -> tensor<2x4xf32>
  // CHECK: tfl.neg %{{.*}} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  %5 = tfl.neg %4 : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!quant.uniform<i8:f32, 0.0625:127>>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @binary
func.func @binary(%x: tensor<2x4x!q>, %y: tensor<4x!q>, %f: tensor<2x4xf32>, %g: tensor<1x4xf32>) -> (tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %alpha = tfl.const dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!quant.uniform<i8:f32, 0.01:0>>
  // CHECK: tfl.prelu %x, %alpha : (tensor<2x4x!quant.uniform<i8:f32, 0.5:-1>>, tensor<4x!quant.uniform<i8:f32, 0.01:0>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5:-1>>
  %0 = tfl.prelu %x, %alpha : (tensor<2x4x!q>, tensor<4x!quant.uniform<i8:f32, 0.01:0>>) -> tensor<2x4x!q>
  // CHECK: tfl.squared_difference %x, %y :
  %1 = tfl.squared_difference %x, %y : (tensor<2x4x!q>, tensor<4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.maximum %x, %y :
  %2 = tfl.maximum %x, %y : (tensor<2x4x!q>, tensor<4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.minimum %y, %x :
  %3 = tfl.minimum %y, %x : (tensor<4x!q>, tensor<2x4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.div %x, %y {fused_activation_function = "RELU6"}
  %4 = tfl.div %x, %y {fused_activation_function = "RELU6"} : (tensor<2x4x!q>, tensor<4x!q>) -> tensor<2x4x!q>
  // CHECK: tfl.pow %f, %g : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %5 = tfl.pow %f, %g : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  // CHECK: tfl.div %f, %g {fused_activation_function = "NONE"}
  %6 = tfl.div %f, %g {fused_activation_function = "NONE"} : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4x!q>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @reductions
func.func @reductions(%x: tensor<2x3x4x!q>) -> (tensor<2x1x1x!q>, tensor<2x!q>, tensor<2x4xi32>, tensor<3x4xi64>) {
  %axes = tfl.const dense<[1, -1]> : tensor<2xi32> -> tensor<2xi32>
  %axis = tfl.const dense<1> : tensor<1xi32> -> tensor<1xi32>
  %first = tfl.const dense<0> : tensor<1xi64> -> tensor<1xi64>
  // CHECK: tfl.reduce_max %x, %axes {keep_dims = true}
  %0 = tfl.reduce_max %x, %axes {keep_dims = true} : (tensor<2x3x4x!q>, tensor<2xi32>) -> tensor<2x1x1x!q>
  // CHECK: tfl.reduce_min %x, %axes {keep_dims = false}
  %1 = tfl.reduce_min %x, %axes {keep_dims = false} : (tensor<2x3x4x!q>, tensor<2xi32>) -> tensor<2x!q>
  // CHECK: tfl.arg_max %x, %axis {output_type = "INT32"}
  %2 = tfl.arg_max %x, %axis {output_type = "INT32"} : (tensor<2x3x4x!q>, tensor<1xi32>) -> tensor<2x4xi32>
  // CHECK: tfl.arg_min %x, %first {output_type = "INT64"}
  %3 = tfl.arg_min %x, %first {output_type = "INT64"} : (tensor<2x3x4x!q>, tensor<1xi64>) -> tensor<3x4xi64>
  func.return %0, %1, %2, %3 : tensor<2x1x1x!q>, tensor<2x!q>, tensor<2x4xi32>, tensor<3x4xi64>
}
