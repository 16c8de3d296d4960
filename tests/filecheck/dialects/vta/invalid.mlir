// RUN: qaccel-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// A schedule field that does not exist is a parse error naming the field and listing the
// fields of that kind of schedule.
func.func @unknown_field(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 4, unroll = 4> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.eltwise_schedule: unknown field 'unroll' (fields: config, rows, param_rows, output_stage, estimated_cycles)

// -----

func.func @twice(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "pool" schedule #vta.pool_schedule<rows = 4, rows = 2> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.pool_schedule: field 'rows' given twice

// -----

func.func @missing(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<param_rows = 1> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.eltwise_schedule: an eltwise schedule lacks rows

// -----

func.func @bad_word(%x: tensor<1x1x1x16xi8>, %w: tensor<1x1x16x16xi8>) -> tensor<1x1x1x16xi8> {
  %y = vta.layer "dense" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 1, tile_co = 1, tile_ci = 1, bias_mode = sram> {
    %a = accel.dense_zp %x, %w : tensor<1x1x1x16xi8>, tensor<1x1x16x16xi8> -> tensor<1x1x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x1x16xi32> -> tensor<1x1x1x16xi8>
    vta.yield %n : tensor<1x1x1x16xi8>
  } : tensor<1x1x1x16xi8>
  func.return %y : tensor<1x1x1x16xi8>
}
// CHECK: vta.gemm_schedule: bias_mode must be one of alu, dma, gemm, store, not 'sram'

// -----

func.func @negative(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 4, param_rows = -1> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.eltwise_schedule: param_rows must not be negative

// -----

// Each layer kind takes its own kind of schedule.
func.func @wrong_kind(%x: tensor<1x1x1x16xi8>, %w: tensor<1x1x16x16xi8>) -> tensor<1x1x1x16xi8> {
  %y = vta.layer "dense" schedule #vta.eltwise_schedule<rows = 1> {
    %a = accel.dense_zp %x, %w : tensor<1x1x1x16xi8>, tensor<1x1x16x16xi8> -> tensor<1x1x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x1x16xi32> -> tensor<1x1x1x16xi8>
    vta.yield %n : tensor<1x1x1x16xi8>
  } : tensor<1x1x1x16xi8>
  func.return %y : tensor<1x1x1x16xi8>
}
// CHECK: vta.layer: kind dense takes a #vta.gemm_schedule, not a #vta.eltwise_schedule

// -----

func.func @unknown_kind(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "softmax" {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.layer: kind 'softmax' is not one of conv, depthwise, dense, eltwise, pool

// -----

func.func @yield_types(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi32> {
  %y = vta.layer "eltwise" {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi32>
  func.return %y : tensor<1x1x2x2x1x16xi32>
}
// CHECK: vta.layer: vta.yield's types differ from the results'

// -----

func.func @yield_outside(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  vta.yield %x : tensor<1x1x2x2x1x16xi8>
}
// CHECK: vta.yield: only a vta.layer's body ends with it
