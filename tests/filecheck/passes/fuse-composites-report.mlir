// RUN: qaccel-opt %s -p 'fuse-composites{report=true}' --split-input-file -o /dev/null 2>&1 | filecheck %s
// RUN: qaccel-opt %s -p 'fuse-composites{report=true allow-inexact=true}' --split-input-file -o /dev/null 2>&1 | filecheck %s --check-prefix=INEXACT

// fuse-composites{report=true}: one line on stderr per run of the pass, naming the fusions
// that fired, how often, and where each comes from (built-in, an entry point, the API).

// CHECK: fuse-composites: 1 fused: odml.embedding_lookup x1 (built-in)
// INEXACT: fuse-composites: 1 fused: odml.embedding_lookup x1 (built-in)
!q = !quant.uniform<i8:f32, 0.02:3>

func.func @odml_embedding_lookup(%ids: tensor<4xi32>) -> tensor<4x3x!q> {
  %table = tfl.const dense<7> : tensor<6x3xi8> -> tensor<6x3x!q>
  %0 = tfl.stablehlo_composite %ids, %table {name = "odml.embedding_lookup", decomposition = @lookup_impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xi32>, tensor<6x3x!q>) -> tensor<4x3x!q>
  func.return %0 : tensor<4x3x!q>
}
func.func private @lookup_impl(%ids: tensor<4xi32>, %table: tensor<6x3x!q>) -> tensor<4x3x!q> {
  %0 = tfl.gather %table, %ids {axis = 0 : i32, batch_dims = 0 : i32} : (tensor<6x3x!q>, tensor<4xi32>) -> tensor<4x3x!q>
  func.return %0 : tensor<4x3x!q>
}

// -----

// The int8 hard_swish decomposition is inexact: nothing fires unless allow-inexact=true.

// CHECK: fuse-composites: no fusion fired
// INEXACT: fuse-composites: 1 fused: aten.hardswish.default x1 (built-in)
!x = !quant.uniform<i8:f32, 0.06:5>
!y = !quant.uniform<i8:f32, 0.035:-110>

func.func @aten_hardswish(%x: tensor<1x8x!x>) -> tensor<1x8x!y> {
  %0 = tfl.stablehlo_composite %x {name = "aten.hardswish.default", decomposition = @hswish_impl, composite_attributes = {}, version = 0 : i32} : (tensor<1x8x!x>) -> tensor<1x8x!y> loc("y")
  func.return %0 : tensor<1x8x!y>
}
func.func private @hswish_impl(%x: tensor<1x8x!x>) -> tensor<1x8x!y> {
  %three = tfl.const dense<127> : tensor<1xi8> -> tensor<1x!quant.uniform<i8:f32, 0.023622047:0>>
  %sixth = tfl.const dense<127> : tensor<1xi8> -> tensor<1x!quant.uniform<i8:f32, 0.001312336:0>>
  %0 = tfl.add %x, %three {fused_activation_function = "RELU6", pot_scale_int16 = true} : (tensor<1x8x!x>, tensor<1x!quant.uniform<i8:f32, 0.023622047:0>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.023529412:-128>>
  %1 = tfl.mul %0, %sixth {fused_activation_function = "NONE"} : (tensor<1x8x!quant.uniform<i8:f32, 0.023529412:-128>>, tensor<1x!quant.uniform<i8:f32, 0.001312336:0>>) -> tensor<1x8x!quant.uniform<i8:f32, 0.003921569:-128>>
  %2 = tfl.mul %x, %1 {fused_activation_function = "NONE"} : (tensor<1x8x!x>, tensor<1x8x!quant.uniform<i8:f32, 0.003921569:-128>>) -> tensor<1x8x!y>
  func.return %2 : tensor<1x8x!y>
}
