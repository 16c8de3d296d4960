// A named pipeline expands to its passes, its options passing through to them; an entry that
// names a pass nobody registered is an error.
// Every named pipeline takes start-after=PASS and stop-after=PASS; option errors name options
// in kebab-case, as pipelines spell them.
// RUN: %opt_with_test_passes %s -p 'test-pipeline{value=7}' 2>&1 | filecheck %s
// RUN: not %opt_with_test_passes %s -p 'test-broken-pipeline' 2>&1 | filecheck %s --check-prefix=BROKEN
// RUN: not %opt_with_test_passes %s -p 'test-pipeline{bogus=3}' 2>&1 | filecheck %s --check-prefix=BOGUS
// RUN: not qaccel-opt %s -p 'vta-pipeline{no-such-option=1}' 2>&1 | filecheck %s --check-prefix=VTA
// RUN: not qaccel-opt %s -p 'vta-pipeline{stop-after=no-such-pass}' 2>&1 | filecheck %s --check-prefix=STOP
// RUN: not qaccel-opt %s -p 'vta-pipeline{max-partitions=x}' 2>&1 | filecheck %s --check-prefix=TYPE
// RUN: qaccel-opt %s -p 'vta-pipeline{stop-after=legalize-tfl-to-q}' | filecheck %s --check-prefix=STOPPED

!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %0 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %1 = tfl.add %x, %x {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %1 : tensor<4x!q>
}

// CHECK-NOT:  note:
// CHECK:      builtin.module attributes {test.value = 7 : i64} {
// CHECK-NEXT:   func.func @main
// CHECK-NEXT:     %0 = tfl.add %x, %x
// CHECK-NEXT:     func.return %0

// BROKEN: qaccel-opt: error: test-broken-pipeline: unknown pass 'test-not-registered' in the pipeline (no pass of that name is registered)

// BOGUS: qaccel-opt: error: bad options for pass 'test-pipeline': unknown option(s) bogus (its options: value, start-after, stop-after)

// VTA:   qaccel-opt: error: bad options for pass 'vta-pipeline': unknown option(s) no-such-option (its options: config, max-partitions, bias-placement, start-after, stop-after)

// STOP:  qaccel-opt: error: vta-pipeline: stop-after=no-such-pass: no pass 'no-such-pass' in the pipeline (it runs: attach-target, fuse-composites, legalize-tfl-to-q, annotate-target, partition-graph, insert-pack-unpack, lower-q-to-accel, form-vta-layers, schedule-vta)

// TYPE:  qaccel-opt: error: bad options for pass 'vta-pipeline': Incompatible types: given ('x',), expected int | None

// STOPPED:      builtin.module attributes {accel.target = #accel.target<"vta"
// STOPPED:        func.func @main
// STOPPED-NEXT:     %0 = q.add %x, %x
// STOPPED-NOT:    qaccel.pattern
