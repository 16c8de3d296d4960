// RUN: qaccel-opt %s --split-input-file -p legalize-tfl-to-q | filecheck %s

// What stays tfl: a permutation computed at run time, a float softmax, an int8 softmax whose
// output is not 1/256 with zero point -128 (the reference kernel refuses it), an int8 x int8
// product into int32.

!qa = !quant.uniform<i8:f32, 0.03:3>

// CHECK-LABEL: func.func @transpose_computed_perm
// CHECK:         tfl.transpose
func.func @transpose_computed_perm(%x: tensor<1x4x2x16x!qa>, %p: tensor<4xi32>) -> tensor<1x2x4x16x!qa> {
  %y = tfl.transpose %x, %p : (tensor<1x4x2x16x!qa>, tensor<4xi32>) -> tensor<1x2x4x16x!qa>
  func.return %y : tensor<1x2x4x16x!qa>
}

// -----

// CHECK-LABEL: func.func @softmax_float
// CHECK:         tfl.softmax
func.func @softmax_float(%x: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %y = tfl.softmax %x {beta = 1.0 : f32} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %y : tensor<1x8xf32>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qbad = !quant.uniform<i8:f32, 0.01:0>

// CHECK-LABEL: func.func @softmax_wrong_output_scale
// CHECK:         tfl.softmax
func.func @softmax_wrong_output_scale(%x: tensor<1x8x!qa>) -> tensor<1x8x!qbad> {
  %y = tfl.softmax %x {beta = 1.0 : f32} : (tensor<1x8x!qa>) -> tensor<1x8x!qbad>
  func.return %y : tensor<1x8x!qbad>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

// CHECK-LABEL: func.func @batch_matmul_int32
// CHECK:         tfl.batch_matmul
func.func @batch_matmul_int32(%a: tensor<1x4x8x!qa>, %b: tensor<1x8x4x!qa>) -> tensor<1x4x4xi32> {
  %y = tfl.batch_matmul %a, %b {adj_x = false, adj_y = false, asymmetric_quantize_inputs = false} : (tensor<1x4x8x!qa>, tensor<1x8x4x!qa>) -> tensor<1x4x4xi32>
  func.return %y : tensor<1x4x4xi32>
}
