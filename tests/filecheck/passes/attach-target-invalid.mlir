// RUN: not qaccel-opt %s --split-input-file -p 'attach-target{target=tpu}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target{config=vta-huge}' 2>&1 | filecheck %s --check-prefix=NAME
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/does-not-exist.json"}' 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-truncated.json"}' 2>&1 | filecheck %s --check-prefix=BADFILE
// RUN: not qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-bad-key.json"}' 2>&1 | filecheck %s --check-prefix=KEY
// RUN: qaccel-opt %s --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=VERIFY

// TARGET: qaccel-opt: error: attach-target: unknown target 'tpu' (known: vta)
// NAME: qaccel-opt: error: attach-target: vta-huge: no such hardware config file or bundled config (bundled: vta-default, vta-store-requant)
// MISSING: qaccel-opt: error: attach-target: {{.*}}does-not-exist.json: cannot read hardware config
// BADFILE: qaccel-opt: error: attach-target: {{.*}}vta-truncated.json: cannot read hardware config: {{.*}}
// KEY: qaccel-opt: error: attach-target: {{.*}}vta-bad-key.json: hardware config: unknown key(s) log_blok

func.func @main(%x: tensor<2xi8>) -> tensor<2xi8> {
  func.return %x : tensor<2xi8>
}

// -----

// An #accel.target whose configuration is not made of integers, floats, booleans and strings:
// VERIFY: #accel.target: config key 'log_block' must be an i64 integer, an f64 float, a boolean or a string, got [4 : i64]
builtin.module attributes {accel.target = #accel.target<"vta", {log_block = [4]}>} {
}

// -----

// VERIFY: #accel.target: target name '1vta' must be an identifier
builtin.module attributes {accel.target = #accel.target<"1vta", {}>} {
}

// -----

// VERIFY: accel.target must be an #accel.target, got "vta"
builtin.module attributes {accel.target = "vta"} {
}
