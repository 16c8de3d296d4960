// RUN: not qaccel-opt %s -p 'legalize-tfl-to-q{ops=conv_2d,gelu}' 2>&1 | filecheck %s

// CHECK: qaccel-opt: error: legalize-tfl-to-q: unknown op kind 'gelu' in ops (known: add, average_pool_2d, concatenation, conv_2d, depthwise_conv_2d, fully_connected, max_pool_2d, maximum, mean, mean_reshape, minimum, mul, pad, padv2, reshape, strided_slice, sub, table)
func.func @f() {
  func.return
}
