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
