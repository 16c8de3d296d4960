// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack' | filecheck %s
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack{print-flags=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=FLAGS
// Running the pass twice is the same as running it once (done functions are marked accel.packed):
// RUN: qaccel-opt %s --split-input-file -p 'attach-target{config="%S/Inputs/vta-block4.json"},insert-pack-unpack,insert-pack-unpack' | filecheck %s
// With the bundled vta-default configuration: VTA's BLOCK_IN = BLOCK_OUT = 16.
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p 'attach-target,insert-pack-unpack' | filecheck %s --check-prefix=VTA

// The method's step 3.3, case by case, on hand-written partitioned IR: host functions calling
// accelerator functions (marked qaccel.target). With B = 4, tensor<1x2x2x6> packs into
// tensor<1x2x2x2x1x4>: two blocks of 4 channels, the last two lanes padded with the zero point.
// --verify-semantics runs every case before and after the pass on the same random inputs.

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Rule "first accelerator function and a non-element-wise op before it: pack" (at its call).
// After the last one there is only the graph's output: unpack=0, and the result is unpacked
// right before func.return instead.
// FLAGS: @first_after_host_op sub-functions: [(vta_fn_0, 1)]
// FLAGS: @first_after_host_op accelerator functions: [(vta_fn_0, 1)]
// FLAGS: @first_after_host_op flags: [(vta_fn_0, pack=1, unpack=0)]

// CHECK-LABEL: func.func @first_after_host_op
// CHECK-NEXT:    %m = q.max_pool2d %x
// CHECK-NEXT:    %m_packed = accel.pack %m padding_value(-1) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 4] : tensor<1x2x2x6x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    %a = func.call @vta_fn_0(%m_packed) : (tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %a_unpacked = accel.unpack %a outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 4] : tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x2x6x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK-NEXT:    func.return %a_unpacked
// The accelerator function takes and returns packed tensors; its body still runs: it unpacks
// on entry and packs before returning.
// CHECK:       func.func private @vta_fn_0(%arg0: tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}> attributes {qaccel.target = "vta", accel.packed} {
// CHECK-NEXT:    %arg0_unpacked = accel.unpack %arg0 {{.*}} -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %r = q.relu %arg0_unpacked
// CHECK-NEXT:    %r_packed = accel.pack %r padding_value(-1) {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    func.return %r_packed

// VTA-LABEL: func.func @first_after_host_op
// VTA:         accel.pack %m padding_value(-1) outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [1, 16] : tensor<1x2x2x6x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x1x2x2x1x16x!quant.uniform<i8:f32, 0.5:-1>>
// VTA:         func.func private @vta_fn_0(%arg0: tensor<1x1x2x2x1x16x{{.*}}>) -> tensor<1x1x2x2x1x16x{{.*}}>
func.func @first_after_host_op(%x: tensor<1x4x4x6x!q>) -> !t {
  %m = q.max_pool2d %x {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (tensor<1x4x4x6x!q>) -> !t
  %a = func.call @vta_fn_0(%m) : (!t) -> !t
  func.return %a : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Rule "last accelerator function and a non-element-wise op after it: unpack". Before the
// first one there is only the graph's input: pack=0, and the input is packed on entry instead.
// FLAGS: @last_before_host_op flags: [(vta_fn_0, pack=0, unpack=1)]

// CHECK-LABEL: func.func @last_before_host_op
// CHECK-NEXT:    %x_packed = accel.pack %x padding_value(-1) {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %a = func.call @vta_fn_0(%x_packed)
// CHECK-NEXT:    %a_unpacked = accel.unpack %a {{.*}} -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %m = q.max_pool2d %a_unpacked
// CHECK-NEXT:    func.return %m
func.func @last_before_host_op(%x: !t) -> tensor<1x1x1x6x!q> {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %m = q.max_pool2d %a {filter = array<i64: 2, 2>, strides = array<i64: 2, 2>, padding = array<i64: 0, 0, 0, 0>} : (!t) -> tensor<1x1x1x6x!q>
  func.return %m : tensor<1x1x1x6x!q>
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Rules "a non-element-wise op between this and the next: unpack" (vta_fn_1) and "between
// the previous and this: pack" (vta_fn_2); only an element-wise op between vta_fn_0 and
// vta_fn_1, and between vta_fn_2 and vta_fn_3: no pack/unpack there, the relus run packed.
// FLAGS: @between sub-functions: [(vta_fn_0, 0), (vta_fn_1, 2), (vta_fn_2, 4), (vta_fn_3, 6)]
// FLAGS: @between accelerator functions: [(vta_fn_0, 0), (vta_fn_1, 2), (vta_fn_2, 4), (vta_fn_3, 6)]
// FLAGS: @between flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=1), (vta_fn_2, pack=1, unpack=0), (vta_fn_3, pack=0, unpack=0)]

// CHECK-LABEL: func.func @between
// CHECK-NEXT:    %x_packed = accel.pack %x
// CHECK-NEXT:    %a = func.call @vta_fn_0(%x_packed)
// CHECK-NEXT:    %b = q.relu %a {min = 0 : i32, max = 127 : i32} : (tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %c = func.call @vta_fn_1(%b)
// CHECK-NEXT:    %c_unpacked = accel.unpack %c
// CHECK-NEXT:    %d = q.max_pool2d %c_unpacked {{.*}} : (tensor<1x2x2x6x{{.*}}>) -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %d_packed = accel.pack %d
// CHECK-NEXT:    %e = func.call @vta_fn_2(%d_packed)
// CHECK-NEXT:    %f = q.relu %e {{.*}} : (tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %g = func.call @vta_fn_3(%f)
// CHECK-NEXT:    %g_unpacked = accel.unpack %g
// CHECK-NEXT:    func.return %g_unpacked
func.func @between(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %b = q.relu %a {min = 0 : i32, max = 127 : i32} : (!t) -> !t
  %c = func.call @vta_fn_1(%b) : (!t) -> !t
  %d = q.max_pool2d %c {filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (!t) -> !t
  %e = func.call @vta_fn_2(%d) : (!t) -> !t
  %f = q.relu %e {min = -1 : i32, max = 100 : i32} : (!t) -> !t
  %g = func.call @vta_fn_3(%f) : (!t) -> !t
  func.return %g : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -20 : i32, max = 60 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_2(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -30 : i32, max = 70 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_3(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -40 : i32, max = 80 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!q3 = !quant.uniform<i8:f32, 0.75:3>
!t = tensor<1x2x2x6x!q>
!t3 = tensor<1x2x2x6x!q3>

// The element-wise-only case: between the accelerator functions only same-shape q.add and
// q.mul and a per-tensor q.requantize, which run on packed tensors; no pack or unpack between
// them. A constant operand is packed where it is defined; the input, used by two accelerator
// functions, is packed once.
// FLAGS: @elementwise_only flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=0), (vta_fn_2, pack=0, unpack=0)]

// CHECK-LABEL: func.func @elementwise_only
// CHECK-NEXT:    %x_packed = accel.pack %x
// CHECK-NEXT:    %a = func.call @vta_fn_0(%x_packed)
// CHECK-NEXT:    %b = func.call @vta_fn_1(%x_packed)
// CHECK-NEXT:    %s = q.add %a, %b {{.*}} : (tensor<1x2x2x2x1x4x{{.*}}>, tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %k = tfl.const
// CHECK-NEXT:    %k_packed = accel.pack %k padding_value(-1)
// CHECK-NEXT:    %p = q.mul %s, %k_packed {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %r = q.requantize %p {{.*}} : (tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.5:-1>>) -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.75:3>>
// CHECK-NEXT:    %c = func.call @vta_fn_2(%r)
// CHECK-NEXT:    %c_unpacked = accel.unpack %c
// CHECK-NEXT:    func.return %c_unpacked
// Padding takes the zero point of each tensor's quantization.
// CHECK:       func.func private @vta_fn_2
// CHECK:         accel.pack %r padding_value(3)
func.func @elementwise_only(%x: !t) -> !t3 {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %b = func.call @vta_fn_1(%x) : (!t) -> !t
  %s = q.add %a, %b {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = -1 : i32} : (!t, !t) -> !t
  %k = tfl.const dense<[[[[1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]], [[-1, -2, -3, -4, -5, -6], [0, 0, 0, 0, 0, 0]]]]> : tensor<1x2x2x6xi8> -> !t
  %p = q.mul %s, %k {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, multiplier = 1073741824 : i32, shift = -2 : i32, output_zero_point = -1 : i32} : (!t, !t) -> !t
  %r = q.requantize %p {multiplier = array<i32: 1431655765>, shift = array<i32: 0>, input_zero_point = -1 : i32, output_zero_point = 3 : i32} : (!t) -> !t3
  %c = func.call @vta_fn_2(%r) : (!t3) -> !t3
  func.return %c : !t3
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -20 : i32, max = 60 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_2(%arg0: !t3) -> !t3 attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = 3 : i32, max = 90 : i32} : (!t3) -> !t3
  func.return %r : !t3
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Not element-wise: a broadcasting q.add (its constant has one row per channel) and a
// per-channel q.requantize (its multipliers index the channel axis, which packing moves).
// FLAGS: @not_elementwise flags: [(vta_fn_0, pack=0, unpack=1), (vta_fn_1, pack=1, unpack=1), (vta_fn_2, pack=1, unpack=0)]

// CHECK-LABEL: func.func @not_elementwise
// CHECK:         %a = func.call @vta_fn_0
// CHECK-NEXT:    %a_unpacked = accel.unpack %a
// CHECK-NEXT:    %k = tfl.const
// CHECK-NEXT:    %s = q.add %a_unpacked, %k {{.*}} : (tensor<1x2x2x6x{{.*}}>, tensor<1x1x1x6x{{.*}}>) -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %s_packed = accel.pack %s
// CHECK-NEXT:    %c = func.call @vta_fn_1(%s_packed)
// CHECK-NEXT:    %c_unpacked = accel.unpack %c
// CHECK-NEXT:    %r = q.requantize %c_unpacked {{.*}} : (tensor<1x2x2x6x{{.*}}>) -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %r_packed = accel.pack %r
// CHECK-NEXT:    %d = func.call @vta_fn_2(%r_packed)
func.func @not_elementwise(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %k = tfl.const dense<[[[[1, 2, 3, 4, 5, 6]]]]> : tensor<1x1x1x6xi8> -> tensor<1x1x1x6x!q>
  %s = q.add %a, %k {lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, output_zero_point = -1 : i32} : (!t, tensor<1x1x1x6x!q>) -> !t
  %c = func.call @vta_fn_1(%s) : (!t) -> !t
  %r = q.requantize %c {multiplier = array<i32: 1073741824, 1073741824, 1073741824, 1431655765, 1431655765, 1431655765>, shift = array<i32: 0, 0, 0, 0, 0, 0>, input_zero_point = -1 : i32, output_zero_point = -1 : i32} : (!t) -> !t
  %d = func.call @vta_fn_2(%r) : (!t) -> !t
  func.return %d : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -20 : i32, max = 60 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_2(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -30 : i32, max = 70 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// On a DAG, a non-element-wise op that consumes the element-wise ops between two accelerator
// functions lies "between" them: the relu runs in host layout, vta_fn_0 unpacks, vta_fn_1 packs.
// FLAGS: @segment_feeds_host_op flags: [(vta_fn_0, pack=0, unpack=1), (vta_fn_1, pack=1, unpack=0)]

// CHECK-LABEL: func.func @segment_feeds_host_op
// CHECK:         %a = func.call @vta_fn_0
// CHECK-NEXT:    %a_unpacked = accel.unpack %a
// CHECK-NEXT:    %b = q.relu %a_unpacked {{.*}} -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %b_packed = accel.pack %b
// CHECK-NEXT:    %c = func.call @vta_fn_1(%b_packed)
// CHECK-NEXT:    %m = q.max_pool2d %b
// CHECK-NEXT:    %c_unpacked = accel.unpack %c
// CHECK-NEXT:    func.return %c_unpacked, %m
func.func @segment_feeds_host_op(%x: !t) -> (!t, !t) {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %b = q.relu %a {min = 0 : i32, max = 127 : i32} : (!t) -> !t
  %c = func.call @vta_fn_1(%b) : (!t) -> !t
  %m = q.max_pool2d %b {filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (!t) -> !t
  func.return %c, %m : !t, !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -20 : i32, max = 60 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// A result used by the next accelerator function and by a host op: unpacked once, for the host
// op only; the next accelerator function takes it packed.
// FLAGS: @result_to_both flags: [(vta_fn_0, pack=0, unpack=1), (vta_fn_1, pack=0, unpack=0)]

// CHECK-LABEL: func.func @result_to_both
// CHECK:         %a = func.call @vta_fn_0
// CHECK-NEXT:    %a_unpacked = accel.unpack %a
// CHECK-NEXT:    %c = func.call @vta_fn_1(%a)
// CHECK-NEXT:    %m = q.max_pool2d %a_unpacked
func.func @result_to_both(%x: !t) -> (!t, !t) {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %c = func.call @vta_fn_1(%a) : (!t) -> !t
  %m = q.max_pool2d %a {filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (!t) -> !t
  func.return %c, %m : !t, !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -20 : i32, max = 60 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Only element-wise ops before the first and after the last accelerator function: pack=0 and
// unpack=0, the ops run packed, and the packing moves to the graph's input and output. An
// element-wise op that touches no accelerator function (%h) stays in host layout.
// FLAGS: @elementwise_at_the_ends flags: [(vta_fn_0, pack=0, unpack=0)]

// CHECK-LABEL: func.func @elementwise_at_the_ends
// CHECK-NEXT:    %x_packed = accel.pack %x
// CHECK-NEXT:    %h = q.relu %y {{.*}} : (tensor<1x2x2x6x{{.*}}>) -> tensor<1x2x2x6x{{.*}}>
// CHECK-NEXT:    %b = q.relu %x_packed {{.*}} : (tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %a = func.call @vta_fn_0(%b)
// CHECK-NEXT:    %c = q.relu %a {{.*}} : (tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %c_unpacked = accel.unpack %c
// CHECK-NEXT:    func.return %c_unpacked, %h
func.func @elementwise_at_the_ends(%x: !t, %y: !t) -> (!t, !t) {
  %h = q.relu %y {min = 0 : i32, max = 127 : i32} : (!t) -> !t
  %b = q.relu %x {min = 0 : i32, max = 127 : i32} : (!t) -> !t
  %a = func.call @vta_fn_0(%b) : (!t) -> !t
  %c = q.relu %a {min = -1 : i32, max = 20 : i32} : (!t) -> !t
  func.return %c, %h : !t, !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r : !t
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>

// Tensors without a batch and a channel dimension, and float tensors, cross as they are.
// FLAGS: @unpackable flags: [(vta_fn_0, pack=0, unpack=0)]

// CHECK-LABEL: func.func @unpackable
// CHECK-NEXT:    %x_packed = accel.pack %x
// CHECK-NEXT:    %a, %b, %c = func.call @vta_fn_0(%x_packed, %v, %f) : (tensor<1x2x2x2x1x4x{{.*}}>, tensor<6xi32>, tensor<1x6xf32>) -> (tensor<1x2x2x2x1x4x{{.*}}>, tensor<6xi32>, tensor<1x6xf32>)
// CHECK-NEXT:    %a_unpacked = accel.unpack %a
// CHECK-NEXT:    func.return %a_unpacked, %b, %c
// CHECK:       func.func private @vta_fn_0(%arg0: tensor<1x2x2x2x1x4x{{.*}}>, %arg1: tensor<6xi32>, %arg2: tensor<1x6xf32>)
func.func @unpackable(%x: !t, %v: tensor<6xi32>, %f: tensor<1x6xf32>) -> (!t, tensor<6xi32>, tensor<1x6xf32>) {
  %a, %b, %c = func.call @vta_fn_0(%x, %v, %f) : (!t, tensor<6xi32>, tensor<1x6xf32>) -> (!t, tensor<6xi32>, tensor<1x6xf32>)
  func.return %a, %b, %c : !t, tensor<6xi32>, tensor<1x6xf32>
}
func.func private @vta_fn_0(%arg0: !t, %arg1: tensor<6xi32>, %arg2: tensor<1x6xf32>) -> (!t, tensor<6xi32>, tensor<1x6xf32>) attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -1 : i32, max = 50 : i32} : (!t) -> !t
  func.return %r, %arg1, %arg2 : !t, tensor<6xi32>, tensor<1x6xf32>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>
!w = !quant.uniform<i8:f32, 0.25:0>

// Weights are packed at compile time: the q.conv2d filter [O=5, 1, 1, I=6] into
// [O/4, I/4, 1, 1, 4, 4] and the q.dense weights [5, 6] into [2, 2, 4, 4], padded with the
// filter zero point; an accel.unpack keeps the body executable. Depthwise filters keep their
// layout. [N, C] activations pack into [N, C/4, 1, 4].
// FLAGS: @weights flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=0)]

// CHECK-LABEL: func.func @weights
// CHECK-NEXT:    %x_packed = accel.pack %x
// CHECK-NEXT:    %v_packed = accel.pack %v padding_value(-1) inner_dims_pos = [0, 1] inner_tiles = [1, 4] : tensor<1x6x!quant.uniform<i8:f32, 0.5:-1>> -> tensor<1x2x1x4x!quant.uniform<i8:f32, 0.5:-1>>
// CHECK:       func.func private @vta_fn_0(%arg0: tensor<1x2x2x2x1x4x{{.*}}>) -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %arg0_unpacked = accel.unpack %arg0
// CHECK-NEXT:    %w_packed = tfl.const dense<{{\[\[\[\[\[\[}}-3, -2, -1, 0], [3, -3, -2, -1], [2, 3, -3, -2], [1, 2, 3, -3]]]], {{\[\[\[\[}}1, 2, 0, 0], [0, 1, 0, 0], [-1, 0, 0, 0], [-2, -1, 0, 0]]]]], {{\[\[\[\[\[}}0, 1, 2, 3], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]]], {{\[\[\[\[}}-3, -2, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]]]]]> : tensor<2x2x1x1x4x4xi8> -> tensor<2x2x1x1x4x4x!quant.uniform<i8:f32, 0.25:0>>
// CHECK-NEXT:    %w_unpacked = accel.unpack %w_packed outer_dims_perm = [0, 3, 1, 2] inner_dims_pos = [0, 3] inner_tiles = [4, 4] : tensor<2x2x1x1x4x4x{{.*}}> -> tensor<5x1x1x6x{{.*}}>
// CHECK-NEXT:    %acc = q.conv2d %arg0_unpacked, %w_unpacked
// CHECK-NEXT:    %r = q.requantize %acc
// CHECK-NEXT:    %dw = tfl.const dense<{{\[\[\[\[}}1, 2, 3, 4, 5]]]]> : tensor<1x1x1x5xi8>
// CHECK-NEXT:    %dacc = q.depthwise_conv2d %r, %dw
// CHECK:       func.func private @vta_fn_1(%arg0: tensor<1x2x1x4x{{.*}}>) -> tensor<1x2x1x4x{{.*}}>
// CHECK-NEXT:    %arg0_unpacked = accel.unpack %arg0 inner_dims_pos = [0, 1] inner_tiles = [1, 4]
// CHECK-NEXT:    %w_packed = tfl.const {{.*}} : tensor<2x2x4x4xi8> -> tensor<2x2x4x4x!quant.uniform<i8:f32, 0.25:0>>
// CHECK-NEXT:    %w_unpacked = accel.unpack %w_packed inner_dims_pos = [0, 1] inner_tiles = [4, 4] : tensor<2x2x4x4x{{.*}}> -> tensor<5x6x{{.*}}>
// CHECK-NEXT:    %acc = q.dense %arg0_unpacked, %w_unpacked
func.func @weights(%x: !t, %v: tensor<1x6x!q>) -> (tensor<1x2x2x5x!q>, tensor<1x5x!q>) {
  %a = func.call @vta_fn_0(%x) : (!t) -> tensor<1x2x2x5x!q>
  %b = func.call @vta_fn_1(%v) : (tensor<1x6x!q>) -> tensor<1x5x!q>
  func.return %a, %b : tensor<1x2x2x5x!q>, tensor<1x5x!q>
}
func.func private @vta_fn_0(%arg0: !t) -> tensor<1x2x2x5x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[[[-3, -2, -1, 0, 1, 2]]], [[[3, -3, -2, -1, 0, 1]]], [[[2, 3, -3, -2, -1, 0]]], [[[1, 2, 3, -3, -2, -1]]], [[[0, 1, 2, 3, -3, -2]]]]> : tensor<5x1x1x6xi8> -> tensor<5x1x1x6x!w>
  %acc = q.conv2d %arg0, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (!t, tensor<5x1x1x6x!w>) -> tensor<1x2x2x5xi32>
  %r = q.requantize %acc {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x5xi32>) -> tensor<1x2x2x5x!q>
  %dw = tfl.const dense<[[[[1, 2, 3, 4, 5]]]]> : tensor<1x1x1x5xi8> -> tensor<1x1x1x5x!w>
  %dacc = q.depthwise_conv2d %r, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32, depth_multiplier = 1 : i32} : (tensor<1x2x2x5x!q>, tensor<1x1x1x5x!w>) -> tensor<1x2x2x5xi32>
  %y = q.requantize %dacc {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x5xi32>) -> tensor<1x2x2x5x!q>
  func.return %y : tensor<1x2x2x5x!q>
}
func.func private @vta_fn_1(%arg0: tensor<1x6x!q>) -> tensor<1x5x!q> attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[-2, -1, 0, 1, 2, -2], [-1, 0, 1, 2, -2, -1], [0, 1, 2, -2, -1, 0], [1, 2, -2, -1, 0, 1], [2, -2, -1, 0, 1, 2]]> : tensor<5x6xi8> -> tensor<5x6x!w>
  %acc = q.dense %arg0, %w {input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (tensor<1x6x!q>, tensor<5x6x!w>) -> tensor<1x5xi32>
  %r = q.requantize %acc {scale = array<f64: 0.125>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x5xi32>) -> tensor<1x5x!q>
  func.return %r : tensor<1x5x!q>
}

// -----

!q = !quant.uniform<i8:f32, 0.05:-3>
!l = !quant.uniform<i8:f32, 0.00390625:-128>
!h = !quant.uniform<i8:f32, 0.0078125:0>
!t = tensor<1x2x2x6x!q>

// tfl's element-wise ops (not yet legalized to q, or without a q form) run packed too; their
// CPU kernels compute the padded lanes as any others.
// FLAGS: @tfl_elementwise flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=0), (vta_fn_2, pack=0, unpack=0)]

// CHECK-LABEL: func.func @tfl_elementwise
// CHECK-NEXT:    %x_packed = accel.pack %x padding_value(-3)
// CHECK-NEXT:    %a = func.call @vta_fn_0(%x_packed)
// CHECK-NEXT:    %b = tfl.add %a, %a {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %c = tfl.mul %b, %a {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %d = tfl.sub %c, %a {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %e = tfl.leaky_relu %d {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %f = tfl.hard_swish %e {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %g = tfl.relu %f {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %h = tfl.relu6 %g {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %i = func.call @vta_fn_1(%h)
// CHECK-NEXT:    %j = tfl.logistic %i {{.*}} -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.00390625:-128>>
// CHECK-NEXT:    %k = tfl.quantize %j {{.*}} -> tensor<1x2x2x2x1x4x{{.*}}>
// CHECK-NEXT:    %m = tfl.tanh %k {{.*}} -> tensor<1x2x2x2x1x4x!quant.uniform<i8:f32, 0.0078125:0>>
// CHECK-NEXT:    %n = func.call @vta_fn_2(%m)
// CHECK-NEXT:    %n_unpacked = accel.unpack %n
// CHECK-NEXT:    func.return %n_unpacked
func.func @tfl_elementwise(%x: !t) -> tensor<1x2x2x6x!h> {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %b = tfl.add %a, %a {fused_activation_function = "RELU6", pot_scale_int16 = true} : (!t, !t) -> !t
  %c = tfl.mul %b, %a {fused_activation_function = "NONE"} : (!t, !t) -> !t
  %d = tfl.sub %c, %a {fused_activation_function = "NONE", pot_scale_int16 = true} : (!t, !t) -> !t
  %e = tfl.leaky_relu %d {alpha = 0.2 : f32} : (!t) -> !t
  %f = tfl.hard_swish %e : (!t) -> !t
  %g = tfl.relu %f : (!t) -> !t
  %h = tfl.relu6 %g : (!t) -> !t
  %i = func.call @vta_fn_1(%h) : (!t) -> !t
  %j = tfl.logistic %i : (!t) -> tensor<1x2x2x6x!l>
  %k = tfl.quantize %j : (tensor<1x2x2x6x!l>) -> !t
  %m = tfl.tanh %k : (!t) -> tensor<1x2x2x6x!h>
  %n = func.call @vta_fn_2(%m) : (tensor<1x2x2x6x!h>) -> tensor<1x2x2x6x!h>
  func.return %n : tensor<1x2x2x6x!h>
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -100 : i32, max = 100 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_1(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -90 : i32, max = 90 : i32} : (!t) -> !t
  func.return %r : !t
}
func.func private @vta_fn_2(%arg0: tensor<1x2x2x6x!h>) -> tensor<1x2x2x6x!h> attributes {qaccel.target = "vta"} {
  %r = q.relu %arg0 {min = -90 : i32, max = 90 : i32} : (tensor<1x2x2x6x!h>) -> tensor<1x2x2x6x!h>
  func.return %r : tensor<1x2x2x6x!h>
}

// -----

!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x4x!q>
!w = !quant.uniform<i8:f32, 0.25:0>

// A weight constant used by two convolutions is packed once.
// CHECK-LABEL: func.func @shared_weights
// CHECK:       func.func private @vta_fn_0
// CHECK-NEXT:    %arg0_unpacked = accel.unpack %arg0
// CHECK-NEXT:    %w_packed = tfl.const {{.*}} -> tensor<1x1x1x1x4x4x!quant.uniform<i8:f32, 0.25:0>>
// CHECK-NEXT:    %w_unpacked = accel.unpack %w_packed
// CHECK-NEXT:    %a = q.conv2d %arg0_unpacked, %w_unpacked
// CHECK-NEXT:    %r = q.requantize %a
// CHECK-NEXT:    %b = q.conv2d %r, %w_unpacked
// CHECK-NOT:     tfl.const
func.func @shared_weights(%x: !t) -> !t {
  %y = func.call @vta_fn_0(%x) : (!t) -> !t
  func.return %y : !t
}
func.func private @vta_fn_0(%arg0: !t) -> !t attributes {qaccel.target = "vta"} {
  %w = tfl.const dense<[[[[1, 2, 3, 4]]], [[[0, 1, 0, -1]]], [[[2, 2, 2, 2]]], [[[-3, 0, 3, 1]]]]> : tensor<4x1x1x4xi8> -> tensor<4x1x1x4x!w>
  %a = q.conv2d %arg0, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (!t, tensor<4x1x1x4x!w>) -> tensor<1x2x2x4xi32>
  %r = q.requantize %a {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x4xi32>) -> !t
  %b = q.conv2d %r, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = -1 : i32, filter_zero_point = 0 : i32} : (!t, tensor<4x1x1x4x!w>) -> tensor<1x2x2x4xi32>
  %y = q.requantize %b {multiplier = array<i32: 1073741824>, shift = array<i32: -2>, input_zero_point = 0 : i32, output_zero_point = -1 : i32} : (tensor<1x2x2x4xi32>) -> !t
  func.return %y : !t
}
