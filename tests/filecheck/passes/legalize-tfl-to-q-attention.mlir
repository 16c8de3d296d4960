// RUN: qaccel-opt %s --split-input-file -p legalize-tfl-to-q | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'legalize-tfl-to-q{ops=softmax}' | filecheck %s --check-prefix=ONLY-SOFTMAX

// The attention core: TRANSPOSE, int8 SOFTMAX and activation x activation BATCH_MATMUL.

!qa = !quant.uniform<i8:f32, 0.03:3>
!qb = !quant.uniform<i8:f32, 0.029:6>
!qo = !quant.uniform<i8:f32, 0.135:-4>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>


// A constant permutation: q.transpose (the dead permutation constant goes).
// CHECK-LABEL: func.func @transpose
// CHECK-NOT:     tfl.const
// CHECK:         %y = q.transpose %x {perm = array<i64: 0, 2, 1, 3>}
// CHECK-NEXT:    func.return %y
// ONLY-SOFTMAX-LABEL: func.func @transpose
// ONLY-SOFTMAX:         tfl.transpose
func.func @transpose(%x: tensor<1x16x2x16x!qa>) -> tensor<1x2x16x16x!qa> {
  %p = tfl.const dense<[0, 2, 1, 3]> : tensor<4xi32> -> tensor<4xi32>
  %y = tfl.transpose %x, %p : (tensor<1x16x2x16x!qa>, tensor<4xi32>) -> tensor<1x2x16x16x!qa>
  func.return %y : tensor<1x2x16x16x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qs = !quant.uniform<i8:f32, 0.00390625:-128>


// PreprocessSoftmaxScaling: 1.0 * 0.03 * 2**26 -> multiplier, left shift; diff_min the radius.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %y = q.softmax %x {multiplier = 2061584256 : i32, left_shift = 21 : i32, diff_min = -992 : i32, beta = 1.000000e+00 : f32}
// CHECK-NEXT:    func.return %y
func.func @softmax(%x: tensor<1x2x4x4x!qa>) -> tensor<1x2x4x4x!qs> {
  %y = tfl.softmax %x {beta = 1.0 : f32} : (tensor<1x2x4x4x!qa>) -> tensor<1x2x4x4x!qs>
  func.return %y : tensor<1x2x4x4x!qs>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qb = !quant.uniform<i8:f32, 0.029:6>
!qo = !quant.uniform<i8:f32, 0.135:-4>


// Both zero points; the multiplier of float(0.03f * 0.029f) / 0.135f.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-NEXT:    %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 0 : i32, lhs_zero_point = 3 : i32, rhs_zero_point = 6 : i32, multiplier = 1771435189 : i32, shift = -7 : i32, output_zero_point = -4 : i32}
// CHECK-NEXT:    func.return %y
func.func @batch_matmul(%a: tensor<1x2x4x8x!qa>, %b: tensor<1x2x8x4x!qb>) -> tensor<1x2x4x4x!qo> {
  %y = tfl.batch_matmul %a, %b {adj_x = false, adj_y = false, asymmetric_quantize_inputs = false} : (tensor<1x2x4x8x!qa>, tensor<1x2x8x4x!qb>) -> tensor<1x2x4x4x!qo>
  func.return %y : tensor<1x2x4x4x!qo>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>
!qb = !quant.uniform<i8:f32, 0.029:6>
!qo = !quant.uniform<i8:f32, 0.135:-4>


// CHECK-LABEL: func.func @batch_matmul_adj_y
// CHECK-NEXT:    %y = q.batch_matmul %a, %b {adj_x = 0 : i32, adj_y = 1 : i32,
// CHECK-SAME:    -> tensor<2x4x4x
func.func @batch_matmul_adj_y(%a: tensor<2x4x8x!qa>, %b: tensor<2x4x8x!qb>) -> tensor<2x4x4x!qo> {
  %y = tfl.batch_matmul %a, %b {adj_x = false, adj_y = true, asymmetric_quantize_inputs = false} : (tensor<2x4x8x!qa>, tensor<2x4x8x!qb>) -> tensor<2x4x4x!qo>
  func.return %y : tensor<2x4x4x!qo>
}
