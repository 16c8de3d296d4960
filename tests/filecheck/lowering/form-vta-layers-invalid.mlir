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

// -----

// A product with run-time weight tiles that no zero-point correction follows forms no layer:
// the GEMM op says why (accel.host_reason).
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%a: tensor<1x1x5x1x16x!qa>, %b: tensor<1x1x7x1x16x!qa>) -> tensor<1x1x5x1x16xi32> attributes {qaccel.target = "vta", accel.packed} {
  %x = accel.bmm_operand %a {lhs_shape = array<i64: 1, 5, 7>, rhs_shape = array<i64: 1, 7, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 0 : i64, index = 0 : i64} : (tensor<1x1x5x1x16x!qa>) -> tensor<1x1x5x1x16x!qa>
  %w = accel.bmm_operand %b {lhs_shape = array<i64: 1, 5, 7>, rhs_shape = array<i64: 1, 7, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 0 : i64, index = 0 : i64} : (tensor<1x1x7x1x16x!qa>) -> tensor<1x1x16x16x!qa>
  %p = accel.dense_zp %x, %w : tensor<1x1x5x1x16x!qa>, tensor<1x1x16x16x!qa> -> tensor<1x1x5x1x16xi32>
  %s = accel.add %p, %p : tensor<1x1x5x1x16xi32>, tensor<1x1x5x1x16xi32>
  func.return %s : tensor<1x1x5x1x16xi32>
}
// CHECK: accel.dense_zp {{.*}}accel.host_reason = "a product with run-time weights is not followed by its zero-point correction"

// -----

// Per-image filters that are not a BATCH_MATMUL's stacked run-time tiles (here constants, not
// accel.bmm_operand's) form no layer: the GEMM op says why.
!qa = !quant.uniform<i8:f32, 0.5:0>
func.func private @vta_fn_0(%x: tensor<2x1x5x1x16x!qa>) -> tensor<2x1x5x1x16xi32> attributes {qaccel.target = "vta", accel.packed} {
  %w = tfl.const dense<1> : tensor<2x1x1x16x16xi8> -> tensor<2x1x1x16x16x!qa>
  %p = accel.dense_zp %x, %w : tensor<2x1x5x1x16x!qa>, tensor<2x1x1x16x16x!qa> -> tensor<2x1x5x1x16xi32>
  func.return %p : tensor<2x1x5x1x16xi32>
}
// CHECK: accel.dense_zp {{.*}}accel.host_reason = "per-image filters [2, 1, 1, 16, 16] on [2, 1, 5, 1, 16] (only a product's stacked run-time weight tiles on token images)"
