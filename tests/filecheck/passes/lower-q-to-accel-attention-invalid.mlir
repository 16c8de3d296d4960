// RUN: qaccel-opt %s --split-input-file --verify-diagnostics | filecheck %s

// The accel forms refuse shapes that do not fit their plain descriptions.

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @relayout_wrong_result(%x: tensor<1x2x6x1x4x!qa>) -> tensor<1x1x6x3x1x4x!qa> {
  // CHECK: accel.relayout: [1, 1, 6, 3, 1, 4] is not the packed [1, 6, 6] reshaped to [1, 6, 2, 3] and permuted by [0, 1, 2, 3]
  %y = accel.relayout %x {in_shape = array<i64: 1, 6, 6>, shape = array<i64: 1, 6, 2, 3>, perm = array<i64: 0, 1, 2, 3>, pad_value = 3 : i64} : (tensor<1x2x6x1x4x!qa>) -> tensor<1x1x6x3x1x4x!qa>
  func.return %y : tensor<1x1x6x3x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @softmax_channels(%x: tensor<1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4x!qa> {
  // CHECK: accel.softmax: [1, 2, 6, 1, 4] -> [1, 2, 6, 1, 4] with 9 channels
  %y = accel.softmax %x {channels = 9 : i64, multiplier = 2061584256 : i64, left_shift = 21 : i64, diff_min = -992 : i64} : (tensor<1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4x!qa>
  func.return %y : tensor<1x2x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @batch_matmul_depth(%a: tensor<1x1x2x6x1x4x!qa>, %b: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x2x6x1x4x!qa> {
  // CHECK: accel.batch_matmul: [1, 1, 2, 6, 1, 4] x [1, 1, 2, 6, 1, 4] -> [1, 2, 2, 6, 1, 4] does not fit plain [1, 2, 6, 3] x [1, 2, 6, 3]
  %y = accel.batch_matmul %a, %b {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, pad_value = -4 : i64, adj_x = 0 : i64, adj_y = 0 : i64, lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, multiplier = 1771435189 : i64, shift = -7 : i64, output_zero_point = -4 : i64} : (tensor<1x1x2x6x1x4x!qa>, tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x2x6x1x4x!qa>
  func.return %y : tensor<1x2x2x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_index(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: batch index 2 not in [0, 2)
  %y = accel.bmm_operand %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 2 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa>
  func.return %y : tensor<1x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_tiles(%b: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x4x4x!qa> {
  // CHECK: accel.bmm_operand: the result must be int8 [2, 1, 4, 4]
  %y = accel.bmm_operand %b {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 0 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x4x4x!qa>
  func.return %y : tensor<1x1x4x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_depth(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: plain shapes [1, 2, 6, 3] x [1, 2, 6, 3] do not multiply
  %y = accel.bmm_operand %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 0 : i64, index = 0 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa>
  func.return %y : tensor<1x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_correction_int8(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4x!qa> {
  // CHECK: accel.bmm_zp_correction: the result must be int32 [1, 2, 6, 1, 4]
  %y = accel.bmm_zp_correction %a, %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 0 : i64} : (tensor<1x1x2x6x1x4x!qa>, tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4x!qa>
  func.return %y : tensor<1x2x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_correction_zero_point(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4xi32> {
  // CHECK: accel.bmm_zp_correction: lhs_zero_point 300 is not int8
  %y = accel.bmm_zp_correction %a, %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, lhs_zero_point = 300 : i64, rhs_zero_point = 3 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = 0 : i64} : (tensor<1x1x2x6x1x4x!qa>, tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4xi32>
  func.return %y : tensor<1x2x6x1x4xi32>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_index_negative(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: batch index -2 not in [0, 2) nor -1 (every index, stacked)
  %y = accel.bmm_operand %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -2 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa>
  func.return %y : tensor<2x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_stacked_tokens(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: the result must be int8 [2, 1, 6, 1, 4]
  %y = accel.bmm_operand %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<1x1x6x1x4x!qa>
  func.return %y : tensor<1x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_stacked_tiles(%b: tensor<1x1x2x6x1x4x!qa>) -> tensor<2x1x4x4x!qa> {
  // CHECK: accel.bmm_operand: the result must be int8 [2, 2, 1, 4, 4]
  %y = accel.bmm_operand %b {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 1 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<1x1x2x6x1x4x!qa>) -> tensor<2x1x4x4x!qa>
  func.return %y : tensor<2x1x4x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_correction_stacked(%a: tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4xi32> {
  // CHECK: accel.bmm_zp_correction: the result must be int32 [2, 2, 6, 1, 4]
  %y = accel.bmm_zp_correction %a, %a {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64} : (tensor<1x1x2x6x1x4x!qa>, tensor<1x1x2x6x1x4x!qa>) -> tensor<1x2x6x1x4xi32>
  func.return %y : tensor<1x2x6x1x4xi32>
}

// -----

func.func @dense_stacked_filter_batch(%x: tensor<2x1x6x1x4xi8>, %w: tensor<3x2x1x4x4xi8>) -> tensor<2x2x6x1x4xi32> {
  // CHECK: accel.dense_zp: the filter must be int8 [O/B, 1, 4, 4] tiles for this input
  %y = accel.dense_zp %x, %w : tensor<2x1x6x1x4xi8>, tensor<3x2x1x4x4xi8> -> tensor<2x2x6x1x4xi32>
  func.return %y : tensor<2x2x6x1x4xi32>
}

// -----

func.func @dense_stacked_filter_rows_flattened(%x: tensor<2x1x6x1x4xi8>, %w: tensor<2x2x1x4x4xi8>) -> tensor<12x2x1x4xi32> {
  // CHECK: accel.dense_zp: the result must be [2, 2, 6, 1, 4], got [12, 2, 1, 4]
  %y = accel.dense_zp %x, %w : tensor<2x1x6x1x4xi8>, tensor<2x2x1x4x4xi8> -> tensor<12x2x1x4xi32>
  func.return %y : tensor<12x2x1x4xi32>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_view_shape(%q: tensor<1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: the lhs view reads [1, 6, 2, 3], not [1, 2, 6, 3]
  %y = accel.bmm_operand %q {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, lhs_view = array<i64: 3, 1, 6, 6, 4, 1, 6, 2, 3, 0, 1, 2, 3>} : (tensor<1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa>
  func.return %y : tensor<2x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_operand_view_malformed(%q: tensor<1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa> {
  // CHECK: accel.bmm_operand: lhs_view: relayout [1, 6, 2, 4] [0, 2, 1, 3] does not fit [1, 6, 6]
  %y = accel.bmm_operand %q {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, operand = 0 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, lhs_view = array<i64: 3, 1, 6, 6, 4, 1, 6, 2, 4, 0, 2, 1, 3>} : (tensor<1x2x6x1x4x!qa>) -> tensor<2x1x6x1x4x!qa>
  func.return %y : tensor<2x1x6x1x4x!qa>
}

// -----

!qa = !quant.uniform<i8:f32, 0.03:3>

func.func @bmm_correction_view_root(%q: tensor<1x1x2x6x1x4x!qa>) -> tensor<2x2x6x1x4xi32> {
  // CHECK: accel.bmm_zp_correction: the lhs [1, 1, 2, 6, 1, 4] is not plain [1, 6, 6] packed
  %y = accel.bmm_zp_correction %q, %q {lhs_shape = array<i64: 1, 2, 6, 3>, rhs_shape = array<i64: 1, 2, 6, 3>, lhs_zero_point = 3 : i64, rhs_zero_point = 3 : i64, adj_x = 0 : i64, adj_y = 1 : i64, index = -1 : i64, lhs_view = array<i64: 3, 1, 6, 6, 4, 1, 6, 2, 3, 0, 2, 1, 3>} : (tensor<1x1x2x6x1x4x!qa>, tensor<1x1x2x6x1x4x!qa>) -> tensor<2x2x6x1x4xi32>
  func.return %y : tensor<2x2x6x1x4xi32>
}
