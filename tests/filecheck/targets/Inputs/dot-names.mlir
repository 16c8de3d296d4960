// Tensor names as TFLite's converter writes them (fused ops joined by `;`, a model scope).
func.func @names(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
  %t = tfl.tanh %x : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> loc("model_1/block_12_expand_relu/Relu6;model_1/block_12_expand_BN/FusedBatchNormV3;model_1/block_12_expand/Conv2D")
  %u = tfl.tanh %t : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> loc("model_1/block_13_expand_relu/Relu6;model_1/block_13_expand_BN/FusedBatchNormV3")
  %v = tfl.tanh %u : (tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> loc("model_1/block_13_project_with_a_long_name/BiasAdd")
  func.return %v : tensor<1x4x4x16xi8>
}
