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

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%x: tensor<1x4x!q>, %y: tensor<1x4x!q>) -> tensor<1x4x!q> {
  // CHECK: tfl.add %x, %y {fused_activation_function = "RELU", pot_scale_int16 = true}
  %0 = tfl.add %x, %y {fused_activation_function = "RELU", pot_scale_int16 = true} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.sub
  %1 = tfl.sub %0, %y {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.mul
  %2 = tfl.mul %1, %y {fused_activation_function = "NONE"} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.relu
  %3 = tfl.relu %2 : (tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.relu6
  %4 = tfl.relu6 %3 : (tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.leaky_relu %{{.*}} {alpha = 2.000000e-01 : f32}
  %5 = tfl.leaky_relu %4 {alpha = 0.2 : f32} : (tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.logistic
  %6 = tfl.logistic %5 : (tensor<1x4x!q>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
  // CHECK: tfl.tanh
  %7 = tfl.tanh %5 : (tensor<1x4x!q>) -> tensor<1x4x!quant.uniform<i8:f32, 0.0078125:0>>
  // CHECK: tfl.hard_swish
  %8 = tfl.hard_swish %5 : (tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.softmax %{{.*}} {beta = 1.000000e+00 : f32}
  %9 = tfl.softmax %8 {beta = 1.0 : f32} : (tensor<1x4x!q>) -> tensor<1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
  // CHECK: tfl.quantize
  %10 = tfl.quantize %8 : (tensor<1x4x!q>) -> tensor<1x4x!quant.uniform<i8:f32, 0.25:3>>
  // CHECK: tfl.dequantize
  %11 = tfl.dequantize %10 : (tensor<1x4x!quant.uniform<i8:f32, 0.25:3>>) -> tensor<1x4xf32>
  func.return %8 : tensor<1x4x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @pooling_and_reduction
func.func @pooling_and_reduction(%x: tensor<1x4x4x2x!q>) -> tensor<1x2x!q> {
  // CHECK: tfl.average_pool_2d %x {padding = "VALID", stride_w = 2 : i32, stride_h = 2 : i32, filter_width = 2 : i32, filter_height = 2 : i32, fused_activation_function = "NONE"}
  %0 = tfl.average_pool_2d %x {padding = "VALID", stride_w = 2 : i32, stride_h = 2 : i32, filter_width = 2 : i32, filter_height = 2 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  // CHECK: tfl.max_pool_2d
  %1 = tfl.max_pool_2d %0 {padding = "SAME", stride_w = 1 : i32, stride_h = 1 : i32, filter_width = 3 : i32, filter_height = 3 : i32, fused_activation_function = "NONE"} : (tensor<1x2x2x2x!q>) -> tensor<1x2x2x2x!q>
  %axes = tfl.const dense<[1, 2]> : tensor<2xi32> -> tensor<2xi32>
  // CHECK: tfl.mean %{{.*}}, %axes {keep_dims = false}
  %2 = tfl.mean %1, %axes {keep_dims = false} : (tensor<1x2x2x2x!q>, tensor<2xi32>) -> tensor<1x2x!q>
  // CHECK: tfl.sum %{{.*}}, %axes {keep_dims = true}
  %3 = tfl.sum %1, %axes {keep_dims = true} : (tensor<1x2x2x2x!q>, tensor<2xi32>) -> tensor<1x1x1x2x!q>
  func.return %2 : tensor<1x2x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @shapes
func.func @shapes(%x: tensor<1x2x3x!q>, %ids: tensor<2xi32>) -> tensor<6x!q> {
  %shape = tfl.const dense<6> : tensor<1xi32> -> tensor<1xi32>
  // CHECK: tfl.reshape %x, %shape {new_shape = array<i32: 6>}
  %0 = tfl.reshape %x, %shape {new_shape = array<i32: 6>} : (tensor<1x2x3x!q>, tensor<1xi32>) -> tensor<6x!q>
  // CHECK: tfl.reshape %x {new_shape = array<i32: 2, 3>}
  %1 = tfl.reshape %x {new_shape = array<i32: 2, 3>} : (tensor<1x2x3x!q>) -> tensor<2x3x!q>
  // CHECK: tfl.squeeze %x {squeeze_dims = array<i32: 0>}
  %2 = tfl.squeeze %x {squeeze_dims = array<i32: 0>} : (tensor<1x2x3x!q>) -> tensor<2x3x!q>
  // CHECK: tfl.concatenation %x, %x {axis = 2 : i32, fused_activation_function = "NONE"}
  %3 = tfl.concatenation %x, %x {axis = 2 : i32, fused_activation_function = "NONE"} : (tensor<1x2x3x!q>, tensor<1x2x3x!q>) -> tensor<1x2x6x!q>
  %pads = tfl.const dense<[[0, 0], [1, 1], [0, 0]]> : tensor<3x2xi32> -> tensor<3x2xi32>
  // CHECK: tfl.pad %x, %pads
  %4 = tfl.pad %x, %pads : (tensor<1x2x3x!q>, tensor<3x2xi32>) -> tensor<1x4x3x!q>
  %cv = tfl.const dense<5> : tensor<i8> -> tensor<!q>
  // CHECK: tfl.padv2 %x, %pads, %cv
  %5 = tfl.padv2 %x, %pads, %cv : (tensor<1x2x3x!q>, tensor<3x2xi32>, tensor<!q>) -> tensor<1x4x3x!q>
  %begin = tfl.const dense<0> : tensor<3xi32> -> tensor<3xi32>
  %end = tfl.const dense<[1, 2, 2]> : tensor<3xi32> -> tensor<3xi32>
  %strides = tfl.const dense<1> : tensor<3xi32> -> tensor<3xi32>
  // CHECK: tfl.strided_slice %x, %begin, %end, %strides {begin_mask = 0 : i32, end_mask = 0 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 1 : i32, offset = false}
  %6 = tfl.strided_slice %x, %begin, %end, %strides {begin_mask = 0 : i32, end_mask = 0 : i32, ellipsis_mask = 0 : i32, new_axis_mask = 0 : i32, shrink_axis_mask = 1 : i32, offset = false} : (tensor<1x2x3x!q>, tensor<3xi32>, tensor<3xi32>, tensor<3xi32>) -> tensor<2x2x!q>
  // CHECK: tfl.slice %x, %begin, %end
  %7 = tfl.slice %x, %begin, %end : (tensor<1x2x3x!q>, tensor<3xi32>, tensor<3xi32>) -> tensor<1x2x2x!q>
  // CHECK: tfl.shape %x {out_type = "INT32"}
  %8 = tfl.shape %x {out_type = "INT32"} : (tensor<1x2x3x!q>) -> tensor<3xi32>
  // CHECK: tfl.pack %x, %x {values_count = 2 : i32, axis = 0 : i32}
  %9 = tfl.pack %x, %x {values_count = 2 : i32, axis = 0 : i32} : (tensor<1x2x3x!q>, tensor<1x2x3x!q>) -> tensor<2x1x2x3x!q>
  %perm = tfl.const dense<[2, 1, 0]> : tensor<3xi32> -> tensor<3xi32>
  // CHECK: tfl.transpose %x, %perm
  %10 = tfl.transpose %x, %perm : (tensor<1x2x3x!q>, tensor<3xi32>) -> tensor<3x2x1x!q>
  // CHECK: tfl.gather %x, %ids {axis = 2 : i32, batch_dims = 0 : i32}
  %11 = tfl.gather %x, %ids {axis = 2 : i32, batch_dims = 0 : i32} : (tensor<1x2x3x!q>, tensor<2xi32>) -> tensor<1x2x2x!q>
  %table = tfl.const dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi8> -> tensor<3x2x!q>
  // CHECK: tfl.embedding_lookup %ids, %table
  %12 = tfl.embedding_lookup %ids, %table : (tensor<2xi32>, tensor<3x2x!q>) -> tensor<2x2x!q>
  func.return %0 : tensor<6x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @resize
func.func @resize(%x: tensor<1x2x2x1x!q>) -> tensor<1x4x4x1x!q> {
  %size = tfl.const dense<4> : tensor<2xi32> -> tensor<2xi32>
  // CHECK: tfl.resize_nearest_neighbor %x, %size {align_corners = false, half_pixel_centers = true}
  %0 = tfl.resize_nearest_neighbor %x, %size {align_corners = false, half_pixel_centers = true} : (tensor<1x2x2x1x!q>, tensor<2xi32>) -> tensor<1x4x4x1x!q>
  // CHECK: tfl.resize_bilinear %x, %size {align_corners = true, half_pixel_centers = false}
  %1 = tfl.resize_bilinear %x, %size {align_corners = true, half_pixel_centers = false} : (tensor<1x2x2x1x!q>, tensor<2xi32>) -> tensor<1x4x4x1x!q>
  func.return %1 : tensor<1x4x4x1x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!w = !quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>

// CHECK-LABEL: func.func @transpose_conv_and_batch_matmul
func.func @transpose_conv_and_batch_matmul(%x: tensor<1x2x2x3x!q>, %m: tensor<2x4x3x!q>) -> (tensor<1x4x4x2x!q>, tensor<2x4x4x!q>) {
  %shape = tfl.const dense<[1, 4, 4, 2]> : tensor<4xi32> -> tensor<4xi32>
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!w>
  %none = tfl.no_value
  // CHECK: tfl.transpose_conv %shape, %w, %x, %none {padding = "SAME", stride_w = 2 : i32, stride_h = 2 : i32, fused_activation_function = "RELU", quantized_bias_type = "FLOAT32", version = 4 : i32}
  %0 = tfl.transpose_conv %shape, %w, %x, %none {padding = "SAME", stride_w = 2 : i32, stride_h = 2 : i32, fused_activation_function = "RELU", quantized_bias_type = "FLOAT32", version = 4 : i32} : (tensor<4xi32>, tensor<2x3x3x3x!w>, tensor<1x2x2x3x!q>, none) -> tensor<1x4x4x2x!q>
  // CHECK: tfl.batch_matmul %m, %m {adj_x = false, adj_y = true, asymmetric_quantize_inputs = false}
  %1 = tfl.batch_matmul %m, %m {adj_x = false, adj_y = true, asymmetric_quantize_inputs = false} : (tensor<2x4x3x!q>, tensor<2x4x3x!q>) -> tensor<2x4x4x!q>
  func.return %0, %1 : tensor<1x4x4x2x!q>, tensor<2x4x4x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @tiling_and_blocks
func.func @tiling_and_blocks(%x: tensor<1x2x2x4x!q>) -> (tensor<2x2x4x4x!q>, tensor<3x1x2x2x4x!q>, tensor<1x2x2x1x4x!q>, tensor<1x4x4x1x!q>, tensor<1x1x1x16x!q>) {
  %m = tfl.const dense<[2, 1, 2, 1]> : tensor<4xi32> -> tensor<4xi32>
  %s = tfl.const dense<[3, 1, 2, 2, 4]> : tensor<5xi64> -> tensor<5xi64>
  %a = tfl.const dense<-2> : tensor<i32> -> tensor<i32>
  // CHECK: tfl.tile %x, %m : (tensor<1x2x2x4x!quant.uniform<i8:f32, 0.5:-1>>, tensor<4xi32>) -> tensor<2x2x4x4x!quant.uniform<i8:f32, 0.5:-1>>
  %0 = tfl.tile %x, %m : (tensor<1x2x2x4x!q>, tensor<4xi32>) -> tensor<2x2x4x4x!q>
  // CHECK: tfl.broadcast_to %x, %s {version = 2 : i32}
  %1 = tfl.broadcast_to %x, %s {version = 2 : i32} : (tensor<1x2x2x4x!q>, tensor<5xi64>) -> tensor<3x1x2x2x4x!q>
  // CHECK: tfl.expand_dims %x, %a
  %2 = tfl.expand_dims %x, %a : (tensor<1x2x2x4x!q>, tensor<i32>) -> tensor<1x2x2x1x4x!q>
  // CHECK: tfl.depth_to_space %x {block_size = 2 : i32}
  %3 = tfl.depth_to_space %x {block_size = 2 : i32} : (tensor<1x2x2x4x!q>) -> tensor<1x4x4x1x!q>
  // CHECK: tfl.space_to_depth %x {block_size = 2 : i32}
  %4 = tfl.space_to_depth %x {block_size = 2 : i32} : (tensor<1x2x2x4x!q>) -> tensor<1x1x1x16x!q>
  func.return %0, %1, %2, %3, %4 : tensor<2x2x4x4x!q>, tensor<3x1x2x2x4x!q>, tensor<1x2x2x1x4x!q>, tensor<1x4x4x1x!q>, tensor<1x1x1x16x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @multiple_outputs
func.func @multiple_outputs(%x: tensor<2x6x!q>) -> (tensor<2x3x!q>, tensor<2x1x!q>, tensor<6x!q>) {
  %axis = tfl.const dense<1> : tensor<i32> -> tensor<i32>
  %sizes = tfl.const dense<[1, -1, 2]> : tensor<3xi32> -> tensor<3xi32>
  // CHECK: %0, %1 = tfl.split %axis, %x {num_splits = 2 : i32} : (tensor<i32>, tensor<2x6x!quant.uniform<i8:f32, 0.5:-1>>) -> (tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>, tensor<2x3x!quant.uniform<i8:f32, 0.5:-1>>)
  %0, %1 = tfl.split %axis, %x {num_splits = 2 : i32} : (tensor<i32>, tensor<2x6x!q>) -> (tensor<2x3x!q>, tensor<2x3x!q>)
  // CHECK: %2, %3, %4 = tfl.split_v %x, %sizes, %axis {num_splits = 3 : i32}
  %2, %3, %4 = tfl.split_v %x, %sizes, %axis {num_splits = 3 : i32} : (tensor<2x6x!q>, tensor<3xi32>, tensor<i32>) -> (tensor<2x1x!q>, tensor<2x3x!q>, tensor<2x2x!q>)
  // CHECK: %5, %6 = tfl.unpack %x {num = 2 : i32, axis = 0 : i32}
  %5, %6 = tfl.unpack %x {num = 2 : i32, axis = 0 : i32} : (tensor<2x6x!q>) -> (tensor<6x!q>, tensor<6x!q>)
  func.return %0, %2, %6 : tensor<2x3x!q>, tensor<2x1x!q>, tensor<6x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>

// CHECK-LABEL: func.func @composite_and_opaque
func.func @composite_and_opaque(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  // CHECK: tfl.stablehlo_composite %x {name = "odml.hard_swish", decomposition = @decomposition, composite_attributes = {approximate = true}, version = 1 : i32}
  %0 = tfl.stablehlo_composite %x {name = "odml.hard_swish", decomposition = @decomposition, composite_attributes = {approximate = true}, version = 1 : i32} : (tensor<1x4x!q>) -> tensor<1x4x!q>
  // CHECK: tfl.opaque %0 {op_name = "ARG_MAX", opcode = 56 : i32, version = 2 : i32, options = {output_type = "INT32"}}
  %1 = tfl.opaque %0 {op_name = "ARG_MAX", opcode = 56 : i32, version = 2 : i32, options = {output_type = "INT32"}} : (tensor<1x4x!q>) -> tensor<1xi32>
  // CHECK: tfl.opaque %0 {op_name = "CUSTOM", opcode = 32 : i32, custom_code = "MyOp", options = {}, custom_options = array<i8: 1, 2>}
  %2 = tfl.opaque %0 {op_name = "CUSTOM", opcode = 32 : i32, custom_code = "MyOp", options = {}, custom_options = array<i8: 1, 2>} : (tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %0 : tensor<1x4x!q>
}
func.func private @decomposition(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  func.return %x : tensor<1x4x!q>
}
