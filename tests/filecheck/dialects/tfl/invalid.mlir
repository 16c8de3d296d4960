// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @bad_padding(%x: tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q> {
  %0 = tfl.max_pool_2d %x {padding = "FULL", stride_w = 2 : i32, stride_h = 2 : i32, filter_width = 2 : i32, filter_height = 2 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  func.return %0 : tensor<1x2x2x2x!q>
}
// CHECK: tfl.max_pool_2d: padding = "FULL" is not one of SAME, VALID

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @bad_activation(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "GELU", pot_scale_int16 = true} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %0 : tensor<1x4x!q>
}
// CHECK: tfl.add: fused_activation_function = "GELU" is not one of NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGN_BIT

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @zero_stride(%x: tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q> {
  %0 = tfl.average_pool_2d %x {padding = "VALID", stride_w = 0 : i32, stride_h = 2 : i32, filter_width = 2 : i32, filter_height = 2 : i32, fused_activation_function = "NONE"} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  func.return %0 : tensor<1x2x2x2x!q>
}
// CHECK: tfl.average_pool_2d: stride_w must be at least 1

// -----

func.func @const_shape_mismatch() -> tensor<3xi32> {
  %0 = tfl.const dense<1> : tensor<2xi32> -> tensor<3xi32>
  func.return %0 : tensor<3xi32>
}
// CHECK: tfl.const: value shape (2,) does not match the result shape (3,)

// -----

func.func @const_storage_mismatch() -> tensor<2x!quant.uniform<i8:f32, 0.5:0>> {
  %0 = tfl.const dense<1> : tensor<2xi32> -> tensor<2x!quant.uniform<i8:f32, 0.5:0>>
  func.return %0 : tensor<2x!quant.uniform<i8:f32, 0.5:0>>
}
// CHECK: tfl.const: value element type i32 is not the storage type of !quant.uniform<i8:f32, 0.5:0>

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @composite_without_decomposition(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  %0 = tfl.stablehlo_composite %x {name = "odml.foo", decomposition = @missing, composite_attributes = {}, version = 0 : i32} : (tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %0 : tensor<1x4x!q>
}
// CHECK: tfl.stablehlo_composite 'odml.foo': decomposition @missing is not a function in this module

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @composite_arity(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  %0 = tfl.stablehlo_composite %x, %x {name = "odml.foo", decomposition = @one, composite_attributes = {}, version = 0 : i32} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %0 : tensor<1x4x!q>
}
func.func private @one(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
  func.return %x : tensor<1x4x!q>
}
// CHECK: tfl.stablehlo_composite 'odml.foo': 2 operands but decomposition @one takes 1

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @add_declared_shape_wrong(%x: tensor<1x4x!q>, %z: tensor<1x4x!q>) -> tensor<1x5x!q> {
  %y = tfl.add %x, %z {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<1x4x!q>, tensor<1x4x!q>) -> tensor<1x5x!q>
  func.return %y : tensor<1x5x!q>
}
// CHECK: tfl.add: the result is declared with shape [1, 5], but the inputs give [1, 4]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @add_no_broadcast(%x: tensor<1x3x!q>, %z: tensor<1x4x!q>) -> tensor<1x4x!q> {
  %y = tfl.add %x, %z {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<1x3x!q>, tensor<1x4x!q>) -> tensor<1x4x!q>
  func.return %y : tensor<1x4x!q>
}
// CHECK: tfl.add: shapes [1, 3] and [1, 4] do not broadcast

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @reshape_shape_tensor_disagrees(%x: tensor<1x8x!q>) -> tensor<4x2x!q> {
  %s = tfl.const dense<[2, 4]> : tensor<2xi32> -> tensor<2xi32>
  %y = tfl.reshape %x, %s {new_shape = array<i32: 2, 4>} : (tensor<1x8x!q>, tensor<2xi32>) -> tensor<4x2x!q>
  func.return %y : tensor<4x2x!q>
}
// CHECK: tfl.reshape: the result is declared with shape [4, 2], but the inputs give [2, 4]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @split_result_shape(%x: tensor<2x6x!q>) -> tensor<2x2x!q> {
  %axis = tfl.const dense<1> : tensor<i32> -> tensor<i32>
  %0, %1 = tfl.split %axis, %x {num_splits = 2 : i32} : (tensor<i32>, tensor<2x6x!q>) -> (tensor<2x3x!q>, tensor<2x2x!q>)
  func.return %1 : tensor<2x2x!q>
}
// CHECK: tfl.split: the result 1 is declared with shape [2, 2], but the inputs give [2, 3]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @batch_matmul_depths(%x: tensor<2x4x3x!q>) -> tensor<2x4x4x!q> {
  %0 = tfl.batch_matmul %x, %x {adj_x = false, adj_y = false, asymmetric_quantize_inputs = false} : (tensor<2x4x3x!q>, tensor<2x4x3x!q>) -> tensor<2x4x4x!q>
  func.return %0 : tensor<2x4x4x!q>
}
// CHECK: tfl.batch_matmul: cannot multiply [2, 4, 3] (adj_x=False) by [2, 4, 3] (adj_y=False)

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!w = !quant.uniform<i8:f32, 0.1:0>
func.func @transpose_conv_output_shape(%x: tensor<1x2x2x3x!q>) -> tensor<1x4x4x2x!q> {
  %shape = tfl.const dense<[1, 3, 3, 2]> : tensor<4xi32> -> tensor<4xi32>
  %w = tfl.const dense<1> : tensor<2x3x3x3xi8> -> tensor<2x3x3x3x!w>
  %none = tfl.no_value
  %0 = tfl.transpose_conv %shape, %w, %x, %none {padding = "SAME", stride_w = 2 : i32, stride_h = 2 : i32, fused_activation_function = "NONE", quantized_bias_type = "FLOAT32"} : (tensor<4xi32>, tensor<2x3x3x3x!w>, tensor<1x2x2x3x!q>, none) -> tensor<1x4x4x2x!q>
  func.return %0 : tensor<1x4x4x2x!q>
}
// CHECK: tfl.transpose_conv: the result is declared with shape [1, 4, 4, 2], but the inputs give [1, 3, 3, 2]

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @broadcast_to_incompatible(%x: tensor<2x3x!q>) -> tensor<4x3x!q> {
  %s = tfl.const dense<[4, 3]> : tensor<2xi32> -> tensor<2xi32>
  %0 = tfl.broadcast_to %x, %s : (tensor<2x3x!q>, tensor<2xi32>) -> tensor<4x3x!q>
  func.return %0 : tensor<4x3x!q>
}
// CHECK: tfl.broadcast_to: [4, 3] is not broadcastable from [2, 3]
