// --verify-semantics[=SEED] runs @main on seeded random inputs with the interpreter before the
// first pass and after every pass that changed the IR, and names the first pass after which
// an output differs bit for bit, or after which the module cannot run.
// RUN: qaccel-opt --verify-semantics %s -p 'cse,canonicalize' | filecheck %s
// RUN: not %opt_with_test_passes %s -p 'cse,test-corrupt-const{delta=3}' --verify-semantics 2>&1 | filecheck %s --check-prefix=WRONG
// RUN: not %opt_with_test_passes %s -p 'test-pipeline,test-corrupt-const' --verify-semantics=42 2>&1 | filecheck %s --check-prefix=SEED
// RUN: not %opt_with_test_passes %s -p 'test-insert-unknown-op' --verify-semantics 2>&1 | filecheck %s --check-prefix=UNRUNNABLE
// RUN: %opt_with_test_passes %s -p 'test-corrupt-const{delta=0}' --verify-semantics | filecheck %s --check-prefix=SAME

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %c = tfl.const dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!q>
  %0 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %1 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %2 = tfl.add %0, %1 {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %2 : tensor<4x!q>
}

// CHECK:      func.func @main
// CHECK:      %1 = tfl.add %0, %0

// WRONG:      qaccel-opt: error: --verify-semantics: pass 'test-corrupt-const{delta=3}' changed output 0 of @main (1 of 4 elements differ, max |diff| 6)

// SEED:       qaccel-opt: error: --verify-semantics: pass 'test-corrupt-const' changed output 0 of @main (1 of 4 elements differ, max |diff| 2)

// UNRUNNABLE: qaccel-opt: error: --verify-semantics: cannot run @main after pass 'test-insert-unknown-op': cannot execute op arith.constant: no implementation of arith.constant

// SAME:       tfl.const dense<[1, 2, 3, 4]>
