// RUN: not qaccel-opt %s 2>&1 | filecheck %s

// An `#accel.schedule` field that does not exist is a parse error naming the field and
// listing the fields there are.
// CHECK: qaccel-opt: error: {{.*}}schedule-invalid.mlir:{{[0-9]+}}:{{[0-9]+}}: accel.schedule: unknown field 'unroll' (fields: config, tile_h, tile_w, tile_co, tile_ci, loop_order, bias_mode, inp_slots, wgt_slots, acc_slots, rows, param_rows, output_stage, estimated_cycles)
func.func @unknown_field(%x: tensor<1x1x2x2x1x16xi8>) -> tensor<1x1x2x2x1x16xi8> {
  %y = accel.layer "eltwise" schedule #accel.schedule<eltwise, rows = 4, unroll = 4> {
    %w = accel.widen %x : tensor<1x1x2x2x1x16xi8> -> tensor<1x1x2x2x1x16xi32>
    %n = accel.narrow %w : tensor<1x1x2x2x1x16xi32> -> tensor<1x1x2x2x1x16xi8>
    accel.yield %n : tensor<1x1x2x2x1x16xi8>
  } : tensor<1x1x2x2x1x16xi8>
  func.return %y : tensor<1x1x2x2x1x16xi8>
}
