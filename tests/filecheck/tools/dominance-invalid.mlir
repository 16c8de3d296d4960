// RUN: not qaccel-opt %s --split-input-file 2>&1 | filecheck %s
// Parsed IR must be in SSA form: a value is used after its definition, never by its own op.

func.func @self_use(%b: tensor<2xi32>) -> tensor<1x2xi32> {
  %4 = q.bias_add %4, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %4 : tensor<1x2xi32>
}
// CHECK: qaccel-opt: error: {{.*}}dominance-invalid.mlir: @self_use: op 0 (q.bias_add) uses its own result as operand 0
