// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p insert-pack-unpack | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p 'insert-pack-unpack{block=0}' 2>&1 | filecheck %s --check-prefix=BLOCK

// BLOCK: qaccel-opt: error: insert-pack-unpack: block must be positive, got 0

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @tpu_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @tpu_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "tpu"} {
  func.return %arg0 : !t
}
// CHECK: insert-pack-unpack: unknown target 'tpu' (known: vta)

// -----

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = 3 : i64} {
  func.return %arg0 : !t
}
// CHECK: insert-pack-unpack: @vta_fn_0: qaccel.target must be a string, got 3 : i64

// -----

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %a = func.call @vta_fn_1(%arg0) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  func.return %arg0 : !t
}
// CHECK: insert-pack-unpack: accelerator function @vta_fn_0 calls accelerator function @vta_fn_1: not supported

// -----

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = scf.execute_region -> !t {
    %b = func.call @vta_fn_0(%x) : (!t) -> !t
    scf.yield %b : !t
  }
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  func.return %arg0 : !t
}
// CHECK: insert-pack-unpack: call of @vta_fn_0 inside 'scf.execute_region': accelerator calls must be at the top level of a function

// -----

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"}
// CHECK: insert-pack-unpack: accelerator function @vta_fn_0 has no body
