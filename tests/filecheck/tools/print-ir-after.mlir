// --print-ir-after=PASS (repeatable, comma-separated) dumps after the named passes only; a
// named pipeline's name dumps after its last pass; a pass that does not run is an error.
// RUN: qaccel-opt %s -p 'cse,canonicalize,dce' --print-ir-after=canonicalize 2>&1 >/dev/null | filecheck %s
// RUN: %opt_with_test_passes %s -p 'test-pipeline{value=3},dce' --print-ir-after=test-pipeline,cse --print-ir-after=dce 2>&1 >/dev/null | filecheck %s --check-prefix=PIPELINE
// RUN: not qaccel-opt %s -p 'cse' --print-ir-after=dce 2>&1 | filecheck %s --check-prefix=ABSENT

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %0 : tensor<4x!q>
}

// CHECK-NOT:  IR Dump After cse
// CHECK:      // -----// IR Dump After canonicalize //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NOT:  IR Dump After

// PIPELINE:      // -----// IR Dump After cse (test-pipeline) //----- //
// PIPELINE-NOT:  IR Dump After test-set-attr
// PIPELINE:      // -----// IR Dump After test-pipeline //----- //
// PIPELINE-NEXT: builtin.module attributes {test.value = 3 : i64} {
// PIPELINE:      // -----// IR Dump After dce //----- //

// ABSENT: qaccel-opt: error: --print-ir-after: pass 'dce' is not in the pipeline (passes that run: cse)
