// RUN: qaccel-opt %s --split-input-file -p legalize-tfl-to-q | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p legalize-tfl-to-q --verify-semantics | filecheck %s

// A layer norm's ops: DEQUANTIZE -> NEG -> QUANTIZE of one int8 input is one table (here
// -(v - 2) * 0.5 requantized at zero point -3: -v - 1); SQUARED_DIFFERENCE keeps the kernel's
// multipliers: 0.5 / (2 * 0.5) = 2^30 * 2^-31, and (2 * 0.5)^2 / (2^14 * 2.0) = 2^-15.
!q = !quant.uniform<i8:f32, 0.5:-1>
!m = !quant.uniform<i8:f32, 0.5:2>
!n = !quant.uniform<i8:f32, 0.5:-3>
!s = !quant.uniform<i8:f32, 2.0:-128>

// CHECK-LABEL: func.func @layer_norm_ops
// CHECK-NEXT:    %0 = q.lut %m {table = array<i32: 127, 126, 125, 124,
// CHECK-SAME:    -126, -127, -128>}
// CHECK-NEXT:    %1 = q.squared_difference %x, %m {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -128 : i32}
// CHECK-NEXT:    func.return %0, %1
func.func @layer_norm_ops(%x: tensor<1x2x16x!q>, %m: tensor<1x2x1x!m>) -> (tensor<1x2x1x!n>, tensor<1x2x16x!s>) {
  %0 = tfl.dequantize %m : (tensor<1x2x1x!m>) -> tensor<1x2x1xf32>
  %1 = tfl.neg %0 : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %2 = tfl.quantize %1 : (tensor<1x2x1xf32>) -> tensor<1x2x1x!n>
  %3 = tfl.squared_difference %x, %m : (tensor<1x2x16x!q>, tensor<1x2x1x!m>) -> tensor<1x2x16x!s>
  func.return %2, %3 : tensor<1x2x1x!n>, tensor<1x2x16x!s>
}

// -----

// A chain stays float when an intermediate value is used elsewhere, or holds an op that is
// not one IEEE operation per element (LOGISTIC's exp).
!m = !quant.uniform<i8:f32, 0.5:2>
!n = !quant.uniform<i8:f32, 0.5:-3>

// CHECK-LABEL: func.func @chain_kept
// CHECK-NEXT:    %0 = tfl.dequantize %m
// CHECK-NEXT:    %1 = tfl.neg %0
// CHECK-NEXT:    %2 = tfl.quantize %1
// CHECK-NEXT:    %3 = tfl.dequantize %m
// CHECK-NEXT:    %4 = tfl.logistic %3
// CHECK-NEXT:    %5 = tfl.quantize %4
// CHECK-NOT:     q.
func.func @chain_kept(%m: tensor<1x2x1x!m>) -> (tensor<1x2x1x!n>, tensor<1x2x1xf32>, tensor<1x2x1x!n>) {
  %0 = tfl.dequantize %m : (tensor<1x2x1x!m>) -> tensor<1x2x1xf32>
  %1 = tfl.neg %0 : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %2 = tfl.quantize %1 : (tensor<1x2x1xf32>) -> tensor<1x2x1x!n>
  %3 = tfl.dequantize %m : (tensor<1x2x1x!m>) -> tensor<1x2x1xf32>
  %4 = tfl.logistic %3 : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %5 = tfl.quantize %4 : (tensor<1x2x1xf32>) -> tensor<1x2x1x!n>
  func.return %2, %1, %5 : tensor<1x2x1x!n>, tensor<1x2x1xf32>, tensor<1x2x1x!n>
}

// -----

// SQUARED_DIFFERENCE whose output multiplier is not below one is refused by LiteRT's Prepare
// ((2 * 1.0)^2 / (2^14 * 0.0001) = 2.44): it stays tfl, for the CPU kernel to refuse.
!a = !quant.uniform<i8:f32, 1.0:0>
!o = !quant.uniform<i8:f32, 0.0001:0>

// CHECK-LABEL: func.func @squared_difference_kept
// CHECK-NEXT:    %0 = tfl.squared_difference %x, %y
func.func @squared_difference_kept(%x: tensor<1x2x16x!a>, %y: tensor<1x2x16x!a>) -> tensor<1x2x16x!o> {
  %0 = tfl.squared_difference %x, %y : (tensor<1x2x16x!a>, tensor<1x2x16x!a>) -> tensor<1x2x16x!o>
  func.return %0 : tensor<1x2x16x!o>
}
