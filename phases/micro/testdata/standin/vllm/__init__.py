"""A stand-in for vLLM, for profdeck's micro tests on a GPU without vLLM:
the same import path and call shape as vLLM's fused-MoE entry point
(vllm.model_executor.layers.fused_moe.fused_experts with a quant_config from
its config helpers), computed with plain PyTorch. It proves that micro finds
the engine's kernels, hands them weights in the served format and reads the
result back; its timings are PyTorch's, never vLLM's."""
__version__ = "stand-in"
