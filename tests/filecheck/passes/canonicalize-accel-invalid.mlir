// RUN: qaccel-opt %s --split-input-file --verify-diagnostics -p canonicalize-accel | filecheck %s

// canonicalize-accel refuses nothing of its own: input the accel verifiers reject never reaches
// the patterns (which rely on verified operand and lane types).

// A widen of accumulators (widen takes int8 storage).
// CHECK: accel.widen: the input must hold integers narrower than 32 bits, got i32
!t = tensor<1x2x2x2x1x4xi32>
func.func @widen_of_i32(%x: !t) -> !t {
  %w = accel.widen %x : !t -> !t
  func.return %w : !t
}

// -----

// A clamp constant with neither one value nor one per lane.
// CHECK: accel.min: value has 3 values; needs 1 (per tensor) or 8 (per lane: 2 blocks of 4)
!t = tensor<1x2x2x2x1x4xi32>
func.func @min_lanes(%x: !t) -> !t {
  %hi = accel.min %x by [100, 1, 2] : !t
  func.return %hi : !t
}

// -----

// A narrow that changes the shape.
// CHECK: accel.narrow: result shape [1, 2, 2, 2, 1, 8] differs from the input's [1, 2, 2, 2, 1, 4]
!t = tensor<1x2x2x2x1x4xi32>
func.func @narrow_shape(%x: !t) -> tensor<1x2x2x2x1x8xi8> {
  %n = accel.narrow %x : !t -> tensor<1x2x2x2x1x8xi8>
  func.return %n : tensor<1x2x2x2x1x8xi8>
}
