// RUN: qaccel-opt %s --split-input-file | qaccel-opt --split-input-file | filecheck %s
// vta.layer, vta.yield and the schedule attributes survive a print-parse round trip.

// A formed layer (form-vta-layers) with its schedule (schedule-vta): the body's ops, the
// values it yields, each kind's schedule attribute printed whole; fields absent from the text stay absent.
// CHECK-LABEL: func.func @layers
// CHECK-NEXT:    %y, %v = vta.layer "eltwise" schedule #vta.eltwise_schedule<config = "vta-default", rows = 4, param_rows = 0, output_stage = false> {
// CHECK-NEXT:      %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
// CHECK-NEXT:      %a = accel.max %w by [0] : tensor<1x1x2x2x1x16xi32>
// CHECK-NEXT:      %n = accel.narrow %a : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
// CHECK-NEXT:      vta.yield %n, %a : tensor<1x1x2x2x1x16xi8>, tensor<1x1x2x2x1x16xi32>
// CHECK-NEXT:    } : tensor<1x1x2x2x1x16xi8>, tensor<1x1x2x2x1x16xi32>
// CHECK-NEXT:    %z = vta.layer "pool" schedule #vta.pool_schedule<rows = 1> {
// CHECK:         %g = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 2, tile_co = 1, tile_ci = 1, loop_order = channel, bias_mode = dma, acc_slots = 2> {
func.func @layers(%x: tensor<1x1x2x2x1x16xi8>) -> (tensor<1x1x2x2x1x16xi32>, tensor<1x1x1x1x1x16xi8>, tensor<1x1x2x2x1x16xi8>) {
  %y, %v = vta.layer "eltwise" schedule #vta.eltwise_schedule<config = "vta-default", rows = 4, param_rows = 0, output_stage = false> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %a = accel.max %w by [0] : tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n, %a : tensor<1x1x2x2x1x16xi8>, tensor<1x1x2x2x1x16xi32>
  } : tensor<1x1x2x2x1x16xi8>, tensor<1x1x2x2x1x16xi32>
  %z = vta.layer "pool" schedule #vta.pool_schedule<rows = 1> {
    %w = accel.widen %y : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %p = accel.max_pool2d %w window = [2, 2] strides = [2, 2] : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x1x1x1x16xi32>
    %n = accel.narrow %p : tensor<1x1x1x1x1x16xi32> -> tensor<1x1x1x1x1x16xi8>
    vta.yield %n : tensor<1x1x1x1x1x16xi8>
  } : tensor<1x1x1x1x1x16xi8>
  %f = tfl.const dense<1> : tensor<1x1x1x1x16x16xi8> -> tensor<1x1x1x1x16x16xi8>
  %g = vta.layer "conv" schedule #vta.gemm_schedule<tile_h = 1, tile_w = 2, tile_co = 1, tile_ci = 1, loop_order = channel, bias_mode = dma, acc_slots = 2> {
    %c = accel.conv2d_zp %y, %f pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x2x2x1x16xi8>, tensor<1x1x1x1x16x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %c : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %v, %z, %g : tensor<1x1x2x2x1x16xi32>, tensor<1x1x1x1x1x16xi8>, tensor<1x1x2x2x1x16xi8>
}

// -----

// Every field of each schedule kind, in print order whatever the order written; a
// configuration name with characters a string literal escapes.
// CHECK-LABEL: func.func @all_fields
// CHECK-NEXT:    %y = vta.layer "dense" schedule #vta.gemm_schedule<config = "my \22npu\22", tile_h = 1, tile_w = 1, tile_co = 2, tile_ci = 3, loop_order = spatial, bias_mode = store, inp_slots = 2, wgt_slots = 2, acc_slots = 1, estimated_cycles = 0> {
// CHECK:         %z = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 8, param_rows = 2, output_stage = true, estimated_cycles = 99> {
func.func @all_fields(%x: tensor<1x1x1x16xi8>, %w: tensor<1x1x16x16xi8>) -> tensor<1x1x1x16xi8> {
  %y = vta.layer "dense" schedule #vta.gemm_schedule<estimated_cycles = 0, acc_slots = 1, wgt_slots = 2, inp_slots = 2, bias_mode = store, loop_order = spatial, tile_ci = 3, tile_co = 2, tile_w = 1, tile_h = 1, config = "my \"npu\""> {
    %a = accel.dense_zp %x, %w : tensor<1x1x1x16xi8>, tensor<1x1x16x16xi8> -> tensor<1x1x1x16xi32>
    %n = accel.narrow %a : tensor<1x1x1x16xi32> -> tensor<1x1x1x16xi8>
    vta.yield %n : tensor<1x1x1x16xi8>
  } : tensor<1x1x1x16xi8>
  %z = vta.layer "eltwise" schedule #vta.eltwise_schedule<rows = 8, param_rows = 2, output_stage = true, estimated_cycles = 99> {
    %v = accel.widen %y : tensor<1x1x1x16xi8> -> tensor<1x1x1x16xi32>
    %n = accel.narrow %v : tensor<1x1x1x16xi32> -> tensor<1x1x1x16xi8>
    vta.yield %n : tensor<1x1x1x16xi8>
  } : tensor<1x1x1x16xi8>
  func.return %z : tensor<1x1x1x16xi8>
}

// -----

// A layer without a schedule (form-vta-layers' output) prints without one.
// CHECK-LABEL: func.func @unscheduled
// CHECK-NEXT:    %y = vta.layer "eltwise" {
func.func @unscheduled(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = vta.layer "eltwise" {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    vta.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
