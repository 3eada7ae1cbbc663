"""Stand-in for vLLM's CompressedTensorsConfig with the WNA16 scheme
(pack-quantized int4/int8 weights, symmetric, a scale per group of K or
per output channel): from_config reads the checkpoint's
quantization_config, get_quant_method picks the scheme by the ignore list,
create_weights registers weight_packed (int32 [N, K·bits/32]),
weight_scale ([N, K/group]) and weight_shape, and
process_weights_after_loading checks what was loaded and unpacks it: the
int32 words read as little-endian bytes, values in order from the lowest
bits, each stored plus 2^(bits-1)."""
import torch

from vllm._standin import log
from vllm.model_executor.layers.quantization.base import LinearMethod, UnquantizedLinearMethod, ignored, param


class CompressedTensorsConfig:
    def __init__(self, weights, ignore, targets):
        self.weights, self.ignore, self.targets = weights, ignore, targets

    @classmethod
    def from_config(cls, config):
        assert config.get("quant_method") == "compressed-tensors", config.get("quant_method")
        assert config.get("format") == "pack-quantized", "the stand-in reads pack-quantized only, not %s" % config.get("format")
        groups = list((config.get("config_groups") or {}).values())
        assert len(groups) == 1, "the stand-in reads one config group"
        w = groups[0]["weights"]
        assert w.get("type") == "int" and w.get("num_bits") in (4, 8), w
        assert not groups[0].get("input_activations"), "weight-only (WNA16) in the stand-in"
        return cls(w, config.get("ignore") or [], groups[0].get("targets") or [])

    def get_quant_method(self, layer, prefix):
        if ignored(prefix, self.ignore) or "Linear" not in self.targets:
            return UnquantizedLinearMethod()
        layer.scheme = CompressedTensorsWNA16(self.weights)
        return CompressedTensorsLinearMethod(layer.scheme)


class CompressedTensorsWNA16:
    def __init__(self, w):
        self.bits = w["num_bits"]
        self.pack_factor = 32 // self.bits
        self.group_size = w.get("group_size") if w.get("strategy") == "group" else -1
        self.symmetric = w.get("symmetric", True)


class CompressedTensorsLinearMethod(LinearMethod):
    name = "CompressedTensorsLinearMethod"

    def __init__(self, scheme):
        super().__init__()
        self.scheme = scheme

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size, output_size,
                       params_dtype, **extra):
        s = self.scheme
        n, k = sum(output_partition_sizes), input_size_per_partition
        group = k if s.group_size == -1 else s.group_size
        param(layer, "weight_packed", torch.empty(n, k // s.pack_factor, dtype=torch.int32))
        param(layer, "weight_scale", torch.empty(n, k // group, dtype=params_dtype))
        param(layer, "weight_shape", torch.empty(2, dtype=torch.int64))
        if not s.symmetric:
            param(layer, "weight_zero_point", torch.empty(n // s.pack_factor, k // group, dtype=torch.int32))
        layer.group = group

    def process_weights_after_loading(self, layer):
        s, n, k, g = self.scheme, layer.output_size, layer.input_size, layer.group
        assert layer.weight_shape.tolist() == [n, k], "weight_shape %s, not [%d, %d]" % (layer.weight_shape.tolist(), n, k)
        w, sc = layer.weight_packed.data, layer.weight_scale.data.float()
        assert w.dtype == torch.int32 and tuple(w.shape) == (n, k * s.bits // 32), (w.dtype, tuple(w.shape))
        assert bool(torch.isfinite(sc).all()) and bool((sc > 0).all()), "weight_scale not loaded"
        b = w.contiguous().view(torch.uint8).reshape(n, -1).long()  # little-endian bytes
        if s.bits == 4:
            q = torch.stack([b & 0xF, b >> 4], dim=-1).reshape(n, k)
        else:
            q = b
        q = q.float() - float(1 << (s.bits - 1))
        layer.weight_dense = (q * sc.repeat_interleave(g, dim=1)).to(layer.params_dtype)
        log(dict(linear=self.name, scheme="CompressedTensorsWNA16", prefix=layer.prefix, n=n, k=k,
                 weight_packed=list(w.shape), weight_scale=list(sc.shape), bits=s.bits, group=g))
