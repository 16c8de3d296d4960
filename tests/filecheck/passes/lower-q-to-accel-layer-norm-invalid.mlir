// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s

// A mean over the channels sums whole blocks of lanes (the padding lanes of 6 channels in
// two 4-lane blocks would count).
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<1x2x6x!q>) -> tensor<1x2x1x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x6x!q>) -> tensor<1x2x1x!q>
  func.return %y : tensor<1x2x1x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x6x!q>) -> tensor<1x2x1x!q> attributes {qaccel.target = "vta"} {
  %y = q.mean %x {axes = array<i64: 2>, num_elements = 6 : i32, input_zero_point = -1 : i32, multiplier = 1431655765 : i32, shift = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x6x!q>) -> tensor<1x2x1x!q>
  func.return %y : tensor<1x2x1x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.mean %y: mean over the channels of [1, 2, 6]: the lanes are summed in whole 4-lane blocks into a result keeping the axis

// -----

// A mean over the channels that drops the axis ([1, 2, 8] -> [1, 2] would read 2 as channels).
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<1x2x8x!q>) -> tensor<1x2x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x8x!q>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x8x!q>) -> tensor<1x2x!q> attributes {qaccel.target = "vta"} {
  %y = q.mean %x {axes = array<i64: 2>, num_elements = 8 : i32, input_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x8x!q>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.mean %y: mean over the channels of [1, 2, 8]: the lanes are summed in whole 4-lane blocks into a result keeping the axis

// -----

// A squared difference whose left shift would overflow the square.
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<1x2x8x!q>) -> tensor<1x2x8x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x8x!q>) -> tensor<1x2x8x!q>
  func.return %y : tensor<1x2x8x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x8x!q>) -> tensor<1x2x8x!q> attributes {qaccel.target = "vta"} {
  %y = q.squared_difference %x, %x {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 15 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -14 : i32, output_zero_point = -1 : i32} : (tensor<1x2x8x!q>, tensor<1x2x8x!q>) -> tensor<1x2x8x!q>
  func.return %y : tensor<1x2x8x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.squared_difference %y: left_shift 15: the square of the difference would leave int32 (at most 7)
