// A named pipeline expands to its passes, its options passing through to them; an entry that
// names a pass not registered yet is skipped with a note, but an option for it is an error.
// RUN: python %S/Inputs/opt_with_test_passes.py %s -p 'test-pipeline{value=7}' 2>&1 | filecheck %s
// RUN: not python %S/Inputs/opt_with_test_passes.py %s -p 'test-pipeline{late=3}' 2>&1 | filecheck %s --check-prefix=LATE
// RUN: not python %S/Inputs/opt_with_test_passes.py %s -p 'test-pipeline{bogus=3}' 2>&1 | filecheck %s --check-prefix=BOGUS
// RUN: not qaccel-opt %s -p 'vta-pipeline{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=VTA

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %1 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %1 : tensor<4x!q>
}

// CHECK:      qaccel-opt: note: test-pipeline: skipping passes that are not registered yet: test-not-registered
// CHECK:      builtin.module attributes {test.value = 7 : i64} {
// CHECK-NEXT:   func.func @main
// CHECK-NEXT:     %0 = tfl.add %x, %x
// CHECK-NEXT:     func.return %0

// LATE:  qaccel-opt: error: test-pipeline{late=3}: cannot pass late=3 to pass 'test-not-registered': no such pass is registered yet

// BOGUS: qaccel-opt: error: bad options for pass 'test-pipeline': Provided arguments ["bogus"] not found in expected arguments ["value", "late"]

// VTA:   qaccel-opt: error: bad options for pass 'vta-pipeline': Provided arguments ["no_such_option"] not found
