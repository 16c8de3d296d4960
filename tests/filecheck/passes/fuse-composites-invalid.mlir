// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p fuse-composites | filecheck %s

// An implements attribute must name the interface as a string.
// CHECK: fuse-composites: func @bad_attr: tf._implements must be a string, got 3 : i64
func.func private @bad_attr(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tf._implements = 3 : i64} {
  func.return %x : tensor<4xf32>
}

// -----

// A composite's decomposition must be a function of the module (the op's verifier says so).
// CHECK: tfl.stablehlo_composite 'odml.thing': decomposition @nowhere is not a function in this module
func.func @missing(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "odml.thing", decomposition = @nowhere, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A decomposition that contains a composite decomposed by itself would inline forever.
// CHECK: fuse-composites: decompositions call themselves: @impl -> @impl
func.func @cycle(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "odml.thing", decomposition = @impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @impl(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "odml.thing", decomposition = @impl, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

// A decomposition whose type is not the composite's cannot be inlined.
// CHECK: fuse-composites: tfl.stablehlo_composite ('odml.thing'): cannot inline @impl2: it has type (tensor<8xf32>) -> (tensor<8xf32>), the composite (tensor<4xf32>) -> (tensor<4xf32>)
func.func @mistyped(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tfl.stablehlo_composite %x {name = "odml.thing", decomposition = @impl2, composite_attributes = {}, version = 0 : i32} : (tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
func.func private @impl2(%x: tensor<8xf32>) -> tensor<8xf32> {
  func.return %x : tensor<8xf32>
}

// -----

// The interface's attributes must be a dictionary.
// CHECK: fuse-composites: func @bad_spec: qaccel.implements_attributes must be a dictionary
func.func private @bad_spec(%x: tensor<4xf32>) -> tensor<4xf32> attributes {tf._implements = "embedding_lookup", qaccel.implements_attributes = 3 : i64} {
  func.return %x : tensor<4xf32>
}
