// Input of partition-graph-invalid.mlir: one group whose ops give different partition indices.
func.func @mixed(%x: tensor<1x16xi8>) -> tensor<1x16xi8> {
  %a = q.relu %x {qaccel.target = "vta", qaccel.group = 0 : i64, qaccel.partition_index = 1 : i64, min = 0 : i32, max = 127 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  %b = q.relu %a {qaccel.target = "vta", qaccel.group = 0 : i64, qaccel.partition_index = 2 : i64, min = 0 : i32, max = 100 : i32} : (tensor<1x16xi8>) -> tensor<1x16xi8>
  func.return %b : tensor<1x16xi8>
}
