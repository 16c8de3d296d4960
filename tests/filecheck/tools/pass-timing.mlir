// --pass-timing prints MLIR's execution time table to stderr: input, each pass (inner passes
// of named pipelines indented under it), verifiers, output, total.
// RUN: qaccel-opt %s -p 'cse,canonicalize' --pass-timing --verify-semantics 2>&1 >/dev/null | filecheck %s
// RUN: %opt_with_test_passes %s -p 'test-pipeline,cse' --pass-timing 2>&1 >/dev/null | filecheck %s --check-prefix=PIPELINE

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %0 : tensor<4x!q>
}

// CHECK:      {{^}}===-------------------------------------------------------------------------==={{$}}
// CHECK-NEXT: {{^}}                         ... Execution time report ...{{$}}
// CHECK-NEXT: {{^}}===-------------------------------------------------------------------------==={{$}}
// CHECK-NEXT: {{^}}  Total Execution Time: {{[0-9]+\.[0-9][0-9][0-9][0-9]}} seconds{{$}}
// CHECK-EMPTY:
// CHECK-NEXT: {{^}}  ----Wall Time----  ----Name----{{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9][0-9][0-9][0-9] \( *[0-9]+\.[0-9]%\)}}  Parse (mlir){{$}}
// CHECK-NEXT: {{\)}}  cse{{$}}
// CHECK-NEXT: {{\)}}  canonicalize{{$}}
// CHECK-NEXT: {{\)}}  Verifier{{$}}
// CHECK-NEXT: {{\)}}  Semantics verifier (interpreter){{$}}
// CHECK-NEXT: {{\)}}  Output (mlir){{$}}
// CHECK-NEXT: {{^ +[0-9]+\.[0-9][0-9][0-9][0-9] \(100\.0%\)}}  Total{{$}}

// PIPELINE:      ----Wall Time----  ----Name----
// PIPELINE-NEXT: {{\)}}  Parse (mlir){{$}}
// PIPELINE-NEXT: {{\)}}  test-pipeline{{$}}
// PIPELINE-NEXT: {{\)}}    cse{{$}}
// PIPELINE-NEXT: {{\)}}    test-set-attr{{$}}
// PIPELINE-NEXT: {{\)}}  cse{{$}}
