// qaccel-compile builds the artifact for the module's #accel.target: --config goes to
// attach-target (through vta-pipeline{config=...} or before another pipeline).
// RUN: not qaccel-compile %s -p '' -o %t 2>&1 | filecheck %s --check-prefix=NOTARGET
// RUN: not qaccel-compile %s -p '' -o %t --config vta-huge 2>&1 | filecheck %s --check-prefix=CONFIG
// RUN: rm -rf %t && qaccel-compile %fixtures/small_cnn.tflite -o %t --config vta-store-requant 2>&1 >/dev/null | filecheck %s --check-prefix=REPORT
// RUN: filecheck %s --check-prefix=HOST < %t/host.mlir
// RUN: rm -rf %t.q && qaccel-compile %fixtures/small_cnn.tflite -o %t.q --quiet 2>&1 | filecheck %s --allow-empty --check-prefix=QUIET
// QUIET-NOT: {{.}}

// NOTARGET: qaccel-compile: error: the module has no accel.target: run attach-target{target=vta} first (vta-pipeline does)
// CONFIG: qaccel-compile: error: attach-target: vta-huge: no such hardware config file or bundled config (bundled: vta-default, vta-store-requant)
// REPORT: vta: selected 17 of 19 ops (100.0% of MACs) into 2 partitions
// HOST: builtin.module attributes {accel.target = #accel.target<"vta", {name = "vta-store-requant", {{.*}}store_requant = true, energy_mac_pj = {{.*}}}>}

func.func @main(%x: tensor<1x4xi8>) -> tensor<1x4xi8> {
  func.return %x : tensor<1x4xi8>
}
