"""Stand-in for vLLM's Fp8Config and Fp8LinearMethod with block-quantized
checkpoints (DeepSeek-V3, Qwen3-FP8): create_weights registers weight
(float8_e4m3fn [N, K]) and weight_scale_inv (float32, one per block of
weight_block_size); process_weights_after_loading checks what was loaded
and dequantizes it. The stand-in does not quantize activations, as vLLM's
kernels do."""
import torch

from vllm._standin import log
from vllm.model_executor.layers.quantization.base import LinearMethod, UnquantizedLinearMethod, ignored, param


class Fp8Config:
    def __init__(self, block, ignore):
        self.block, self.ignore = block, ignore

    @classmethod
    def from_config(cls, config):
        assert config.get("quant_method") == "fp8", config.get("quant_method")
        block = config.get("weight_block_size")
        assert block and len(block) == 2, "the stand-in reads block-quantized fp8 only"
        return cls(block, config.get("ignored_layers") or config.get("modules_to_not_convert") or [])

    def get_quant_method(self, layer, prefix):
        if ignored(prefix, self.ignore):
            return UnquantizedLinearMethod()
        return Fp8LinearMethod(self)


class Fp8LinearMethod(LinearMethod):
    name = "Fp8LinearMethod"

    def __init__(self, cfg):
        super().__init__()
        self.block = cfg.block

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size, output_size,
                       params_dtype, **extra):
        if not hasattr(torch, "float8_e4m3fn"):
            raise RuntimeError("torch %s has no float8_e4m3fn (vllm stand-in)" % torch.__version__)
        n, k = sum(output_partition_sizes), input_size_per_partition
        bn, bk = self.block
        param(layer, "weight", torch.empty(n, k, dtype=torch.float8_e4m3fn))
        param(layer, "weight_scale_inv", torch.empty(-(-n // bn), -(-k // bk), dtype=torch.float32))

    def process_weights_after_loading(self, layer):
        w, sc = layer.weight.data, layer.weight_scale_inv.data
        n, k = w.shape
        bn, bk = self.block
        assert w.dtype == torch.float8_e4m3fn, w.dtype
        assert bool(torch.isfinite(sc).all()) and bool((sc > 0).all()), "weight_scale_inv not loaded"
        rn = torch.arange(n, device=w.device) // bn
        rk = torch.arange(k, device=w.device) // bk
        layer.weight_dense = (w.float() * sc[rn][:, rk]).to(layer.params_dtype)
        log(dict(linear=self.name, prefix=layer.prefix, n=n, k=k, weight=str(w.dtype), weight_scale_inv=list(sc.shape),
                 block=self.block))
