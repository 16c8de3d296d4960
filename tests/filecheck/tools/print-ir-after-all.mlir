// --print-ir-after-all dumps the IR to stderr after every pass, inside named pipelines too;
// stdout stays the final IR.
// RUN: qaccel-opt %s -p 'cse,canonicalize' --print-ir-after-all 2>&1 >/dev/null | filecheck %s
// RUN: qaccel-opt %s -p 'cse,canonicalize' --print-ir-after-all 2>/dev/null | filecheck %s --check-prefix=STDOUT
// RUN: %opt_with_test_passes %s -p 'test-pipeline{value=7},dce' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=PIPELINE

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %c = tfl.const dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!q>
  %0 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %1 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %2 = tfl.add %0, %1 {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %2 : tensor<4x!q>
}

// CHECK:      // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @main
// CHECK-NEXT:     %c = tfl.const
// CHECK-NEXT:     %0 = tfl.add %x, %c
// CHECK-NEXT:     %1 = tfl.add %0, %0
// CHECK-NEXT:     func.return %1
// CHECK:      // -----// IR Dump After canonicalize //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NOT:  IR Dump

// STDOUT-NOT: IR Dump
// STDOUT:     builtin.module {
// STDOUT:       %1 = tfl.add %0, %0
// STDOUT-NOT: IR Dump

// PIPELINE:      // -----// IR Dump After cse (test-pipeline) //----- //
// PIPELINE-NEXT: builtin.module {
// PIPELINE:      // -----// IR Dump After test-set-attr{value=7} (test-pipeline) //----- //
// PIPELINE-NEXT: builtin.module attributes {test.value = 7 : i64} {
// PIPELINE:      // -----// IR Dump After dce //----- //
