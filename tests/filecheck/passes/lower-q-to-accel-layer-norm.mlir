// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s

// A layer norm's ops (B = 4): the mean over the channels sums the
// lanes in a host step (accel.lane_sum: lane 0 the sum, the other lanes 0) and requantizes on
// the ALU; a [1, T, 1] operand is broadcast over the channels by a host step
// (accel.lane_broadcast of the int8 value) and widened; the squared difference rescales both
// sides as ADD does and squares the difference with one MUL.
// CHECK-LABEL: func.func private @vta_fn_0
// CHECK-NEXT:      %0 = accel.lane_sum %x : tensor<1x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x1x2x1x4xi32>
// CHECK-NEXT:      %1 = accel.add %0 by [8]
// CHECK-NEXT:      %2 = accel.round_multiply %1 by [1073741824]
// CHECK-NEXT:      %3 = accel.max %2 by [-130]
// CHECK-NEXT:      %4 = accel.min %3 by [125]
// CHECK-NEXT:      %5 = accel.add %4 by [2]
// CHECK-NEXT:      %m = accel.narrow %5 : tensor<1x1x2x1x4xi32> -> tensor<1x1x2x1x4x!quant.uniform<i8:f32, 0.0625:2>>
// CHECK-NEXT:      %6 = accel.widen %x
// CHECK-NEXT:      %7 = accel.add %6 by [1]
// CHECK-NEXT:      %8 = accel.shift_left %7 by [7]
// CHECK-NEXT:      %9 = accel.round_multiply %8 by [1073741824]
// CHECK-NEXT:      %10 = accel.lane_broadcast %m : tensor<1x1x2x1x4x!quant.uniform<i8:f32, 0.0625:2>> -> tensor<1x2x2x1x4x!quant.uniform<i8:f32, 0.0625:2>>
// CHECK-NEXT:      %11 = accel.widen %10
// CHECK-NEXT:      %12 = accel.add %11 by [-2]
// CHECK-NEXT:      %13 = accel.shift_left %12 by [7]
// CHECK-NEXT:      %14 = accel.round_multiply %13 by [1073741824]
// CHECK-NEXT:      %15 = accel.round_rshift %14 by [3]
// CHECK-NEXT:      %16 = accel.mul %15 by [-1]
// CHECK-NEXT:      %17 = accel.add %9, %16
// CHECK-NEXT:      %18 = accel.mul %17, %17
// CHECK-NEXT:      %19 = accel.round_multiply %18 by [1073741824]
// CHECK-NEXT:      %20 = accel.round_rshift %19 by [14]
// CHECK:           %s = accel.narrow
// CHECK-NEXT:      %24 = accel.lane_broadcast %g : tensor<1x1x2x1x4x!quant.uniform<i8:f32, 0.01:-128>> -> tensor<1x2x2x1x4x!quant.uniform<i8:f32, 0.01:-128>>
// CHECK-NEXT:      %25 = accel.widen %24
// CHECK-NEXT:      %26 = accel.add %25 by [128]
// CHECK-NEXT:      %27 = accel.add %6 by [1]
// CHECK-NEXT:      %28 = accel.mul %26, %27
// CHECK:           %y = accel.narrow
// CHECK-NEXT:      func.return %s, %y
!q = !quant.uniform<i8:f32, 0.5:-1>
!m = !quant.uniform<i8:f32, 0.0625:2>
!s = !quant.uniform<i8:f32, 2.0:-128>
!g = !quant.uniform<i8:f32, 0.01:-128>
!y = !quant.uniform<i8:f32, 0.25:3>
func.func @layer_norm(%x: tensor<1x2x8x!q>, %g: tensor<1x2x1x!g>) -> (tensor<1x2x8x!s>, tensor<1x2x8x!y>) {
  %s, %y = func.call @vta_fn_0(%x, %g) : (tensor<1x2x8x!q>, tensor<1x2x1x!g>) -> (tensor<1x2x8x!s>, tensor<1x2x8x!y>)
  func.return %s, %y : tensor<1x2x8x!s>, tensor<1x2x8x!y>
}
func.func private @vta_fn_0(%x: tensor<1x2x8x!q>, %g: tensor<1x2x1x!g>) -> (tensor<1x2x8x!s>, tensor<1x2x8x!y>) attributes {qaccel.target = "vta"} {
  %m = q.mean %x {axes = array<i64: 2>, num_elements = 8 : i32, input_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = 0 : i32, output_zero_point = 2 : i32} : (tensor<1x2x8x!q>) -> tensor<1x2x1x!m>
  %s = q.squared_difference %x, %m {lhs_zero_point = -1 : i32, rhs_zero_point = 2 : i32, left_shift = 7 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = -3 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -128 : i32} : (tensor<1x2x8x!q>, tensor<1x2x1x!m>) -> tensor<1x2x8x!s>
  %y = q.mul %g, %x {lhs_zero_point = -128 : i32, rhs_zero_point = -1 : i32, multiplier = 1374389535 : i32, shift = -5 : i32, output_zero_point = 3 : i32} : (tensor<1x2x1x!g>, tensor<1x2x8x!q>) -> tensor<1x2x8x!y>
  func.return %s, %y : tensor<1x2x8x!s>, tensor<1x2x8x!y>
}
