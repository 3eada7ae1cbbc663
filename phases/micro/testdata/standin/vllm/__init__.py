"""A stand-in for vLLM, for profdeck's micro tests without vLLM: the same
import paths and call shapes as the parts micro calls, computed with plain
PyTorch:
- vLLM's fused-MoE entry point (vllm.model_executor.layers.fused_moe.
  fused_experts with a quant_config from its config helpers);
- its quantized linear layers (vllm.model_executor.layers.linear.
  ReplicatedLinear built with the config get_quantization_config(method).
  from_config(quantization_config) makes: compressed-tensors pack-quantized
  and block fp8), under vllm.config.set_current_vllm_config.
It proves that micro finds the engine's kernels, hands them weights in the
served format and reads the result back; its timings are PyTorch's, never
vLLM's."""
__version__ = "stand-in"
