// RUN: qaccel-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

func.func @zero_point_out_of_range(%a: tensor<4x!quant.uniform<i8:f32, 0.5:200>>) {
  func.return
}
// CHECK: zero point 200 outside the i8 range [-128, 127]

// -----

func.func @negative_scale(%a: tensor<4x!quant.uniform<i8:f32, -0.5:0>>) {
  func.return
}
// CHECK: scale must be positive and finite, got -0.5

// -----

func.func @float_storage(%a: tensor<4x!quant.uniform<f32:f32, 0.5:0>>) {
  func.return
}
// CHECK: storage type must be i8, u8, i16, u16, i32, u32, i64 or u64

// -----

func.func @four_bit_storage(%a: tensor<4x!quant.uniform<i4:f32, 0.5:0>>) {
  func.return
}
// CHECK: storage type must be i8, u8, i16, u16, i32, u32, i64 or u64

// -----

func.func @zero_point_out_of_u16_range(%a: tensor<4x!quant.uniform<u16:f32, 0.5:65536>>) {
  func.return
}
// CHECK: zero point 65536 outside the u16 range [0, 65535]
