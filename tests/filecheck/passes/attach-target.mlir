// RUN: qaccel-opt %s --split-input-file -p attach-target | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{target=vta config=vta-store-requant}' | filecheck %s --check-prefix=RQ
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-block4.json"}' | filecheck %s --check-prefix=FILE
// A target already on the module is replaced:
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config=vta-store-requant},attach-target' | filecheck %s
// The printed attribute parses back to the same target:
// RUN: qaccel-opt %s --split-input-file -p attach-target | qaccel-opt --split-input-file | filecheck %s
// Every later pass reads it: the block of insert-pack-unpack's packed layout is the config's.
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack' | filecheck %s --check-prefix=PACK

// CHECK: builtin.module attributes {accel.target = #accel.target<"vta", {name = "vta-default", log_inp_width = 3 : i64, log_wgt_width = 3 : i64, log_acc_width = 5 : i64, log_batch = 0 : i64, log_block = 4 : i64, log_uop_buff_size = 15 : i64, log_inp_buff_size = 15 : i64, log_wgt_buff_size = 18 : i64, log_acc_buff_size = 17 : i64, clock_mhz = 3.330000e+02 : f64, bus_width_bytes = 16 : i64, dma_setup_cycles = 32 : i64, insn_issue_cycles = 1 : i64, gemm_cycles_per_uop = 1 : i64, alu_cycles_per_uop = 2 : i64, store_requant = false, energy_mac_pj = 3.000000e-01 : f64, energy_alu_op_pj = 1.000000e-01 : f64, energy_alu_mul_pj = 3.100000e+00 : f64, energy_sram_read_pj_per_byte = 1.250000e+00 : f64, energy_sram_write_pj_per_byte = 1.250000e+00 : f64, energy_dram_pj_per_byte = 1.600000e+02 : f64}>}
// CHECK-LABEL: func.func @main
// RQ: #accel.target<"vta", {name = "vta-store-requant", {{.*}}, store_requant = true, energy_mac_pj = {{.*}}}>
// FILE: #accel.target<"vta", {name = "vta-block4", {{.*}}, log_block = 2 : i64, {{.*}}}>
// PACK-LABEL: func.func @main
// PACK: accel.pack %x padding_value(0) {{.*}} inner_tiles = [1, 4] : tensor<1x2x2x6xi8> -> tensor<1x2x2x2x1x4xi8>

!t = tensor<1x2x2x6xi8>
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  func.return %arg0 : !t
}
