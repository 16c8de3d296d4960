// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,lower-q-to-accel' | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p 'lower-q-to-accel{bias-placement=dma}' 2>&1 | filecheck %s --check-prefix=MODE
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target,lower-q-to-accel' 2>&1 | filecheck %s --check-prefix=UNPACKED
// The block comes from the module's #accel.target:
// RUN: not qaccel-opt %s --split-input-file -p 'lower-q-to-accel' 2>&1 | filecheck %s --check-prefix=NOTARGET
// NOTARGET: qaccel-opt: error: lower-q-to-accel: the module has no accel.target: run attach-target{target=NAME} first (vta-pipeline does)

// Every accelerator function below holds something lower-q-to-accel cannot put on the
// accelerator exactly; the pass fails with one line naming the function, the op and why.

// MODE: qaccel-opt: error: lower-q-to-accel: bias-placement must be one of alu, preload, got 'dma'
// UNPACKED: qaccel-opt: error: lower-q-to-accel: @vta_fn_0: not in the packed layout yet: run insert-pack-unpack first

// A filter zero point that does not fold into int8 weights (w - zp_w spans [-228, 27]): the
// data-dependent term zp_w * Σx would be needed.
!q = !quant.uniform<i8:f32, 0.5:0>
func.func @main(%x: tensor<1x4x!q>) -> tensor<1x2x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x4x!q>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x!q>) -> tensor<1x2x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[127, 4, 5, 6], [-128, 0, 100, 3]]> : tensor<2x4xi8> -> tensor<2x4xi8>
  %acc = q.dense %x, %w {input_zero_point = 0 : i32, filter_zero_point = 100 : i32} : (tensor<1x4x!q>, tensor<2x4xi8>) -> tensor<1x2xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x2xi32>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.dense %acc: filter zero point 100: weights minus zero point span [-228, 27], outside int8 (the GEMM core multiplies int8 weights; a data-dependent zp_w * Σx term is not supported)

// -----

// Weights computed at run time.
!q = !quant.uniform<i8:f32, 0.5:0>
func.func @main(%x: tensor<1x4x!q>, %w: tensor<2x4xi8>) -> tensor<1x2x!q> {
  %y = func.call @vta_fn_0(%x, %w) : (tensor<1x4x!q>, tensor<2x4xi8>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x!q>, %w: tensor<2x4xi8>) -> tensor<1x2x!q> attributes {qaccel.target = "vta"} {
  %acc = q.dense %x, %w {input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x!q>, tensor<2x4xi8>) -> tensor<1x2xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x2xi32>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.dense %acc: the filter is computed at run time (argument 1 %w); the accelerator needs it at compile time

// -----

// A shift the ALU's 5-bit shift amounts cannot express.
!q = !quant.uniform<i8:f32, 0.5:0>
func.func @main(%x: tensor<1x4x!q>) -> tensor<1x2x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x4x!q>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x!q>) -> tensor<1x2x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[1, 4, 5, 6], [-1, 0, 1, 3]]> : tensor<2x4xi8> -> tensor<2x4xi8>
  %acc = q.dense %x, %w {input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x!q>, tensor<2x4xi8>) -> tensor<1x2xi32>
  %y = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -40>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x2xi32>) -> tensor<1x2x!q>
  func.return %y : tensor<1x2x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.requantize %y: requantize shift -40 is beyond the ALU's 31-bit shifts

// -----

// Pools the ALU cannot compute bit-exactly become a host step of the program (int8 only).
!q = !quant.uniform<i16:f32, 0.5:0>
func.func @main(%x: tensor<1x4x4x6x!q>) -> tensor<1x4x4x6x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x4x4x6x!q>) -> tensor<1x4x4x6x!q>
  func.return %y : tensor<1x4x4x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x4x4x6x!q>) -> tensor<1x4x4x6x!q> attributes {qaccel.target = "vta"} {
  %y = q.max_pool2d %x {filter = array<i64: 3, 3>, strides = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>} : (tensor<1x4x4x6x!q>) -> tensor<1x4x4x6x!q>
  func.return %y : tensor<1x4x4x6x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.max_pool2d %y: a host pool takes and gives int8

// -----

// A mean over the channel axis sums lanes in a host step, whole blocks only (6 channels in
// two 4-lane blocks: padding lanes would count).
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x3x3x6x!q>) -> tensor<1x3x3x1x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x3x3x6x!q>) -> tensor<1x3x3x1x!q>
  func.return %y : tensor<1x3x3x1x!q>
}
func.func private @vta_fn_0(%x: tensor<1x3x3x6x!q>) -> tensor<1x3x3x1x!q> attributes {qaccel.target = "vta"} {
  %y = q.mean %x {axes = array<i64: 3>, num_elements = 6 : i32, input_zero_point = 3 : i32, multiplier = 1431655765 : i32, shift = -2 : i32, output_zero_point = 3 : i32} : (tensor<1x3x3x6x!q>) -> tensor<1x3x3x1x!q>
  func.return %y : tensor<1x3x3x1x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.mean %y: mean over the channels of [1, 3, 3, 6]: the lanes are summed in whole 4-lane blocks into a result keeping the axis

// -----

!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x6x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x2x4x!q>) -> tensor<1x2x2x6x!q>
  func.return %y : tensor<1x2x2x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x6x!q> attributes {qaccel.target = "vta"} {
  %y = q.pad %x {padding = array<i64: 0, 0, 0, 0, 0, 0, 1, 1>, pad_value = 3 : i32} : (tensor<1x2x2x4x!q>) -> tensor<1x2x2x6x!q>
  func.return %y : tensor<1x2x2x6x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.pad %y: pads [[0, 0], [0, 0], [0, 0], [1, 1]]: only spatial dimensions are padded by the DMA (batch or channel padding would move lanes)

// -----

// An ADD whose centred inputs, shifted left, would overflow int32.
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q> attributes {qaccel.target = "vta"} {
  %y = q.add %x, %x {lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, left_shift = 24 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -20 : i32, output_zero_point = 3 : i32} : (tensor<1x2x2x4x!q>, tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.add %y: left_shift 24: centred int8 values shifted left must stay within int32 (at most 23)

// -----

// Broadcasting other than per channel.
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x4x!q>, %r: tensor<1x2x1x4x!q>) -> tensor<1x2x2x4x!q> {
  %y = func.call @vta_fn_0(%x, %r) : (tensor<1x2x2x4x!q>, tensor<1x2x1x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x4x!q>, %r: tensor<1x2x1x4x!q>) -> tensor<1x2x2x4x!q> attributes {qaccel.target = "vta"} {
  %y = q.mul %x, %r {lhs_zero_point = 3 : i32, rhs_zero_point = 3 : i32, multiplier = 1073741824 : i32, shift = -6 : i32, output_zero_point = 3 : i32} : (tensor<1x2x2x4x!q>, tensor<1x2x1x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.mul %y: operand argument 1 %r of shape [1, 2, 1, 4] broadcasts against [1, 2, 2, 4]: the ALU repeats whole rows only (per-channel operands)

// -----

// An op that is not a q op has no place in an accelerator function.
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q> attributes {qaccel.target = "vta"} {
  %y = tfl.relu %x : (tensor<1x2x2x4x!q>) -> tensor<1x2x2x4x!q>
  func.return %y : tensor<1x2x2x4x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: tfl.relu %y: cannot run on the accelerator: not a q or accel op

// -----

// A reshape that moves lanes is a gather (accel.relayout), of packed activations up to rank 6.
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x8x!q>) -> tensor<1x2x2x2x2x1x2x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x2x2x8x!q>) -> tensor<1x2x2x2x2x1x2x!q>
  func.return %z : tensor<1x2x2x2x2x1x2x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x8x!q>) -> tensor<1x2x2x2x2x1x2x!q> attributes {qaccel.target = "vta"} {
  %z = q.reshape %x : (tensor<1x2x2x8x!q>) -> tensor<1x2x2x2x2x1x2x!q>
  func.return %z : tensor<1x2x2x2x2x1x2x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.reshape %z: q.reshape on a rank-7 tensor (packed activations have rank 2 to 6)

// -----

// A slice of the channels would move lanes.
!q = !quant.uniform<i8:f32, 0.5:3>
func.func @main(%x: tensor<1x2x2x8x!q>) -> tensor<1x2x2x4x!q> {
  %z = func.call @vta_fn_0(%x) : (tensor<1x2x2x8x!q>) -> tensor<1x2x2x4x!q>
  func.return %z : tensor<1x2x2x4x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x8x!q>) -> tensor<1x2x2x4x!q> attributes {qaccel.target = "vta"} {
  %z = q.slice %x {begin = array<i64: 0, 0, 0, 4>} : (tensor<1x2x2x8x!q>) -> tensor<1x2x2x4x!q>
  func.return %z : tensor<1x2x2x4x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.slice %z: slices [1, 2, 2, 4] at [0, 0, 0, 4] out of [1, 2, 2, 8]: only the dimensions between batch and channels can be cropped (anything else moves lanes)

// -----

// The program's resize steps (a gather, an interpolation) take and give int8.
!q = !quant.uniform<i16:f32, 0.5:0>
func.func @main(%x: tensor<1x2x2x6x!q>) -> tensor<1x4x4x6x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x2x6x!q>) -> tensor<1x4x4x6x!q>
  func.return %y : tensor<1x4x4x6x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x2x6x!q>) -> tensor<1x4x4x6x!q> attributes {qaccel.target = "vta"} {
  %y = q.resize_bilinear %x {align_corners = false, half_pixel_centers = true} : (tensor<1x2x2x6x!q>) -> tensor<1x4x4x6x!q>
  func.return %y : tensor<1x4x4x6x!q>
}
// CHECK: lower-q-to-accel: @vta_fn_0: q.resize_bilinear %y: a resize step of the program takes and gives int8
