// RUN: qaccel-opt %s | qaccel-opt | filecheck %s

// CHECK-LABEL: func.func @per_tensor
// CHECK-SAME: tensor<1x4x!quant.uniform<i8:f32, 0.007842395:-1>>
// CHECK-SAME: tensor<4x!quant.uniform<u8:f32, 0.5:128>>
// CHECK-SAME: tensor<2x!quant.uniform<i16:f32, 3.0e-05:0>>
func.func @per_tensor(%a: tensor<1x4x!quant.uniform<i8:f32, 0.007842395:-1>>, %b: tensor<4x!quant.uniform<u8:f32, 0.5:128>>, %c: tensor<2x!quant.uniform<i16:f32, 3.0e-05:0>>) {
  func.return
}

// CHECK-LABEL: func.func @per_axis
// CHECK-SAME: tensor<2x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>
// CHECK-SAME: tensor<2x!quant.uniform<i32:f32:0, {1.0e-07:0, 2.5e+06:0}>>
func.func @per_axis(%w: tensor<2x3x!quant.uniform<i8:f32:0, {0.1:0, 0.2:0}>>, %b: tensor<2x!quant.uniform<i32:f32:0, {1.0e-07:0, 2.5e+06:0}>>) {
  func.return
}

// The int64 biases of int16x8 models, and every other integer width a TFLite tensor can be
// quantized in: what qaccel prints parses back.
// CHECK-LABEL: func.func @wide_storage
// CHECK-SAME: tensor<2x!quant.uniform<i64:f32:0, {1.5e-06:0, 3.0e-06:0}>>
// CHECK-SAME: tensor<4x!quant.uniform<i64:f32, 0.25:-9000000000>>
// CHECK-SAME: tensor<4x!quant.uniform<u16:f32, 0.5:32768>>
// CHECK-SAME: tensor<4x!quant.uniform<u32:f32, 0.5:7>>
// CHECK-SAME: tensor<4x!quant.uniform<u64:f32, 0.5:0>>
func.func @wide_storage(%b: tensor<2x!quant.uniform<i64:f32:0, {1.5e-06:0, 3.0e-06:0}>>, %c: tensor<4x!quant.uniform<i64:f32, 0.25:-9000000000>>, %d: tensor<4x!quant.uniform<u16:f32, 0.5:32768>>, %e: tensor<4x!quant.uniform<u32:f32, 0.5:7>>, %f: tensor<4x!quant.uniform<u64:f32, 0.5:0>>) {
  func.return
}
