"""Stand-in for vLLM's quantization registry: get_quantization_config(name)
returns the config class vLLM would (compressed-tensors and fp8 here)."""


def get_quantization_config(name):
    from vllm.model_executor.layers.quantization.compressed_tensors import CompressedTensorsConfig
    from vllm.model_executor.layers.quantization.fp8 import Fp8Config
    methods = {"compressed-tensors": CompressedTensorsConfig, "fp8": Fp8Config}
    if name not in methods:
        raise ValueError("Invalid quantization method: %s (vllm stand-in)" % name)
    return methods[name]
