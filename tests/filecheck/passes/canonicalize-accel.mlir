// RUN: qaccel-opt %s --split-input-file --verify-semantics -p canonicalize-accel | filecheck %s
// xDSL's generic canonicalize finds the same patterns through the ops' traits:
// RUN: qaccel-opt %s --split-input-file --verify-semantics -p canonicalize | filecheck %s

// The accel canonicalization patterns on hand-written packed IR (B = 4). --verify-semantics
// runs every function before and after on random inputs: no pattern may change a value.

!t = tensor<1x2x2x2x1x4xi32>
!q = tensor<1x2x2x2x1x4xi8>

// Clamps that cannot clip: a widened int8 is already within [-128, 127].
// CHECK-LABEL: func.func @unclipping
// CHECK-NEXT:    %w = accel.widen %x
// CHECK-NEXT:    %hi = accel.min %w by [100]
// CHECK-NEXT:    func.return %hi
func.func @unclipping(%x: !q) -> !t {
  %w = accel.widen %x : !q -> !t
  %lo = accel.max %w by [-128] : !t
  %hi = accel.min %lo by [100] : !t
  %top = accel.min %hi by [127] : !t
  func.return %top : !t
}

// -----

!t = tensor<1x2x2x2x1x4xi32>

// Consecutive clamps merge (per lane where either is per lane); max-then-min order first.
// CHECK-LABEL: func.func @merge
// CHECK-NEXT:    %[[LO:.*]] = accel.max %x by [5] : tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:    %[[HI:.*]] = accel.min %[[LO]] by [10, 20, 30, 40, 40, 40, 40, 40] : tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:    func.return %[[HI]]
func.func @merge(%x: !t) -> !t {
  %a = accel.max %x by [-3] : !t
  %b = accel.min %a by [40] : !t
  %c = accel.max %b by [5] : !t
  %d = accel.min %c by [10, 20, 30, 50, 60, 70, 80, 90] : !t
  func.return %d : !t
}

// -----

!t = tensor<1x2x2x2x1x4xi32>
!q = tensor<1x2x2x2x1x4xi8>

// A clamp after the zero-point add moves in front of it when the add cannot wrap (here the
// int8 input plus 100), then merges with the clamp there; a clamp after an add of a full-range
// int32 value stays where it is.
// CHECK-LABEL: func.func @through_add
// CHECK-NEXT:    %w = accel.widen %x
// CHECK-NEXT:    %[[LO:.*]] = accel.max %w by [-100]
// CHECK-NEXT:    %[[HI:.*]] = accel.min %[[LO]] by [-80]
// CHECK-NEXT:    %[[Z:.*]] = accel.add %[[HI]] by [100]
// CHECK-NEXT:    %[[A:.*]] = accel.add %y by [100]
// CHECK-NEXT:    %[[B:.*]] = accel.max %[[A]] by [0]
// CHECK-NEXT:    func.return %[[Z]], %[[B]]
func.func @through_add(%x: !q, %y: !t) -> (!t, !t) {
  %w = accel.widen %x : !q -> !t
  %a = accel.add %w by [100] : !t
  %b = accel.max %a by [0] : !t
  %c = accel.min %b by [20] : !t
  %d = accel.add %y by [100] : !t
  %e = accel.max %d by [0] : !t
  func.return %c, %e : !t, !t
}

// -----

!t = tensor<1x2x2x2x1x4xi32>

// Shifts by 0, adds of 0, multiplies by 1 disappear; constants of consecutive adds, biases and
// left shifts combine (modulo 2^32; shifts only while the total stays within 31).
// CHECK-LABEL: func.func @identities
// CHECK-NEXT:    %[[A:.*]] = accel.add %x by [-2147483646] : tensor<1x2x2x2x1x4xi32>
// CHECK-NEXT:    %[[B:.*]] = accel.bias_add_zp %[[A]] by [4, 4, 4, 4, 4, 4, 4, 5]
// CHECK-NEXT:    %[[S:.*]] = accel.shift_left %[[B]] by [30]
// CHECK-NEXT:    %[[T:.*]] = accel.shift_left %[[S]] by [2]
// CHECK-NEXT:    func.return %[[T]]
func.func @identities(%x: !t) -> !t {
  %a = accel.round_rshift %x by [0] : !t
  %b = accel.shift_left %a by [0, 0, 0, 0, 0, 0, 0, 0] : !t
  %c = accel.add %b by [0] : !t
  %d = accel.mul %c by [1] : !t
  %e = accel.bias_add_zp %d by [0] : !t
  %f = accel.add %e by [2147483647] : !t
  %g = accel.add %f by [3] : !t
  %h = accel.bias_add_zp %g by [1] : !t
  %i = accel.bias_add_zp %h by [3, 3, 3, 3, 3, 3, 3, 4] : !t
  %j = accel.shift_left %i by [10] : !t
  %k = accel.shift_left %j by [20] : !t
  %l = accel.shift_left %k by [2] : !t
  func.return %l : !t
}

// -----

!t = tensor<1x2x2x2x1x4xi32>
!q = tensor<1x2x2x2x1x4xi8>

// widen(narrow(x)) is x when x fits int8 (after a clamp), not otherwise; narrow(widen(y)) is y.
// CHECK-LABEL: func.func @conversions
// CHECK-NEXT:    %[[LO:.*]] = accel.max %x by [-128]
// CHECK-NEXT:    %[[HI:.*]] = accel.min %[[LO]] by [127]
// CHECK-NEXT:    %[[N:.*]] = accel.narrow %x
// CHECK-NEXT:    %[[W:.*]] = accel.widen %[[N]]
// CHECK-NEXT:    func.return %[[HI]], %[[W]], %y
func.func @conversions(%x: !t, %y: !q) -> (!t, !t, !q) {
  %lo = accel.max %x by [-128] : !t
  %hi = accel.min %lo by [127] : !t
  %n = accel.narrow %hi : !t -> !q
  %w = accel.widen %n : !q -> !t
  %n2 = accel.narrow %x : !t -> !q
  %w2 = accel.widen %n2 : !q -> !t
  %yw = accel.widen %y : !q -> !t
  %yn = accel.narrow %yw : !t -> !q
  func.return %w, %w2, %yn : !t, !t, !q
}

// -----

!t = tensor<1x2x2x2x1x4xi32>
!q = tensor<1x2x2x2x1x4xi8>

// A clamp of a widened host requantization tightens the host's own clamp.
// CHECK-LABEL: func.func @host_clamp
// CHECK-NEXT:    %[[H:.*]] = accel.host_requantize %x scale = [5.000000e-01] zero_points(0, -10) clamp(-10, 14)
// CHECK-NEXT:    func.return %[[H]]
func.func @host_clamp(%x: !t) -> !q {
  %h = accel.host_requantize %x scale = [0.5] zero_points(0, -10) clamp(-128, 127) : !t -> !q
  %w = accel.widen %h : !q -> !t
  %lo = accel.max %w by [-10] : !t
  %hi = accel.min %lo by [14] : !t
  %n = accel.narrow %hi : !t -> !q
  func.return %n : !q
}

// -----

// A pad with the convolution's own pad value folds into the convolution's padding (the DMA
// pads while loading); a pad with another value, one that would leave windows of padding
// only, and one with another user stay.
// CHECK-LABEL: func.func @pad_into_conv
// CHECK-NEXT:    %w = tfl.const
// CHECK-NEXT:    %[[A:.*]] = accel.conv2d_zp %x, %w pad_value(-1) strides = [2, 2] dilations = [1, 1] padding = [1, 2, 2, 1] : tensor<1x1x6x6x1x4xi8>, tensor<1x1x3x3x4x4xi8> -> tensor<1x1x4x4x1x4xi32>
// CHECK-NEXT:    %[[P1:.*]] = accel.pad %x pad_value(5)
// CHECK-NEXT:    %[[B:.*]] = accel.conv2d_zp %[[P1]], %w pad_value(-1)
// CHECK-NEXT:    %[[P2:.*]] = accel.pad %x pad_value(-1) padding = [3, 3, 0, 0]
// CHECK-NEXT:    %[[C:.*]] = accel.conv2d_zp %[[P2]], %w pad_value(-1)
// CHECK-NEXT:    %[[P3:.*]] = accel.pad %x pad_value(-1) padding = [1, 1, 1, 1]
// CHECK-NEXT:    %[[D:.*]] = accel.conv2d_zp %[[P3]], %w pad_value(-1)
// CHECK-NEXT:    func.return %[[A]], %[[B]], %[[C]], %[[D]], %[[P3]]
func.func @pad_into_conv(%x: tensor<1x1x6x6x1x4xi8>) -> (tensor<1x1x4x4x1x4xi32>, tensor<1x1x3x3x1x4xi32>, tensor<1x1x5x4x1x4xi32>, tensor<1x1x6x6x1x4xi32>, tensor<1x1x8x8x1x4xi8>) {
  %w = tfl.const dense<1> : tensor<1x1x3x3x4x4xi8> -> tensor<1x1x3x3x4x4xi8>
  %p = accel.pad %x pad_value(-1) padding = [1, 1, 1, 1] : tensor<1x1x6x6x1x4xi8> -> tensor<1x1x8x8x1x4xi8>
  %a = accel.conv2d_zp %p, %w pad_value(-1) strides = [2, 2] dilations = [1, 1] padding = [0, 1, 1, 0] : tensor<1x1x8x8x1x4xi8>, tensor<1x1x3x3x4x4xi8> -> tensor<1x1x4x4x1x4xi32>
  %p1 = accel.pad %x pad_value(5) padding = [1, 1, 1, 1] : tensor<1x1x6x6x1x4xi8> -> tensor<1x1x8x8x1x4xi8>
  %b = accel.conv2d_zp %p1, %w pad_value(-1) strides = [2, 2] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x4xi8>, tensor<1x1x3x3x4x4xi8> -> tensor<1x1x3x3x1x4xi32>
  %p2 = accel.pad %x pad_value(-1) padding = [3, 3, 0, 0] : tensor<1x1x6x6x1x4xi8> -> tensor<1x1x12x6x1x4xi8>
  %c = accel.conv2d_zp %p2, %w pad_value(-1) strides = [2, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x12x6x1x4xi8>, tensor<1x1x3x3x4x4xi8> -> tensor<1x1x5x4x1x4xi32>
  %p3 = accel.pad %x pad_value(-1) padding = [1, 1, 1, 1] : tensor<1x1x6x6x1x4xi8> -> tensor<1x1x8x8x1x4xi8>
  %d = accel.conv2d_zp %p3, %w pad_value(-1) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] : tensor<1x1x8x8x1x4xi8>, tensor<1x1x3x3x4x4xi8> -> tensor<1x1x6x6x1x4xi32>
  func.return %a, %b, %c, %d, %p3 : tensor<1x1x4x4x1x4xi32>, tensor<1x1x3x3x1x4xi32>, tensor<1x1x5x4x1x4xi32>, tensor<1x1x6x6x1x4xi32>, tensor<1x1x8x8x1x4xi8>
}
