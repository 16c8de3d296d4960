// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p 'attach-target,insert-pack-unpack' | filecheck %s
// RUN: not qaccel-opt %s --split-input-file -p insert-pack-unpack 2>&1 | filecheck %s --check-prefix=NOTARGET

// The block comes from the module's #accel.target: without one the pass says so.
// NOTARGET: qaccel-opt: error: insert-pack-unpack: the module has no accel.target: run attach-target{target=NAME} first (vta-pipeline does)

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @tpu_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @tpu_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "tpu"} {
  func.return %arg0 : !t
}
// CHECK: insert-pack-unpack: @tpu_fn_0 is for target tpu, the module's is vta

// -----

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = 3 : i64} {
  func.return %arg0 : !t
}
// The verifier of the registered discardable attributes rejects the input.
// CHECK: func.func @vta_fn_0: qaccel.target must be a target name (an identifier string), got 3 : i64

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
