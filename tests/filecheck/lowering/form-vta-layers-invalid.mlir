// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p form-vta-layers | filecheck %s

// Malformed vta.layer ops are rejected when the IR is read: one message naming the op and
// what is wrong.

!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "matmul" {
    %w = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.layer: kind 'matmul' is not one of conv, depthwise, dense, eltwise, pool

// -----

!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16xi32> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" {
    %w = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16xi32>
  func.return %y : tensor<1x1x8x8x1x16xi32>
}
// CHECK: vta.layer: vta.yield's types differ from the results'

// -----

!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16xi32> attributes {qaccel.target = "vta", accel.packed} {
  %w = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
  vta.yield %w : tensor<1x1x8x8x1x16xi32>
}
// CHECK: vta.yield: only a vta.layer's body ends with it

// -----

!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 8, tile_co = 1, tile_ci = 1> {
    %w = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %a = accel.add %w by [1] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.layer: kind eltwise takes a #vta.eltwise_schedule, not a #vta.gemm_schedule

// -----

!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<1x1x8x8x1x16x!qa>) -> tensor<1x1x8x8x1x16x!qa> attributes {qaccel.target = "vta", accel.packed} {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 0> {
    %w = accel.widen %x : tensor<1x1x8x8x1x16x!qa> -> tensor<1x1x8x8x1x16xi32>
    %a = accel.add %w by [1] : tensor<1x1x8x8x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x8x8x1x16xi32> -> tensor<1x1x8x8x1x16x!qa>
    vta.yield %n : tensor<1x1x8x8x1x16x!qa>
  } : tensor<1x1x8x8x1x16x!qa>
  func.return %y : tensor<1x1x8x8x1x16x!qa>
}
// CHECK: vta.eltwise_schedule: rows must be positive, got 0
