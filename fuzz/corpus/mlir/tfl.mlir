// RUN: qaccel-opt %s --split-input-file | qaccel-opt --split-input-file | filecheck %s
// Every tfl op survives a print-parse round trip.

!q = !quant.uniform<i8:f32, 0.5:-1>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>
!b = !quant.uniform<i32:f32:0, {0.05:0, 0.1:0}>

// CHECK-LABEL: func.func @conv_family
func.func @conv_family(%x: tensor<1x4x4x2x!q>) -> (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>, tensor<1x2x!q>) {
  // CHECK: %w = tfl.const dense<1> : tensor<2x1x1x2xi8> -> tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>
  %w = tfl.const dense<1> : tensor<2x1x1x2xi8> -> tensor<2x1x1x2x!w>
  %dw = tfl.const dense<1> : tensor<1x1x1x2xi8> -> tensor<1x1x1x2x!quant.uniform<i8:f32:3, {0.1:0, 0.2:0}>>
  %fw = tfl.const dense<[[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]]> : tensor<2x32xi8> -> tensor<2x32x!w>
  %b = tfl.const dense<[3, -4]> : tensor<2xi32> -> tensor<2x!b>
  // CHECK: %none = tfl.no_value
  %none = tfl.no_value
  // CHECK: tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32, version = 3 : i32}
  %c = tfl.conv_2d %x, %w, %b {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "RELU6", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32, version = 3 : i32} : (tensor<1x4x4x2x!q>, tensor<2x1x1x2x!w>, tensor<2x!b>) -> tensor<1x4x4x2x!q>
  // CHECK: tfl.depthwise_conv_2d %x, %dw, %none {{.*}}depth_multiplier = 1 : i32
  %d = tfl.depthwise_conv_2d %x, %dw, %none {padding = "VALID", stride_w = 1 : i32, stride_h = 1 : i32, fused_activation_function = "NONE", dilation_w_factor = 1 : i32, dilation_h_factor = 1 : i32, depth_multiplier = 1 : i32} : (tensor<1x4x4x2x!q>, tensor<1x1x1x2x!quant.uniform<i8:f32:3, {0.1:0, 0.2:0}>>, none) -> tensor<1x4x4x2x!q>
  // CHECK: tfl.fully_connected {{.*}}weights_format = "DEFAULT", keep_num_dims = false
  %f = tfl.fully_connected %x, %fw, %b {fused_activation_function = "NONE", weights_format = "DEFAULT", keep_num_dims = false, asymmetric_quantize_inputs = false} : (tensor<1x4x4x2x!q>, tensor<2x32x!w>, tensor<2x!b>) -> tensor<1x2x!q>
  func.return %c, %d, %f : tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>, tensor<1x2x!q>
}

