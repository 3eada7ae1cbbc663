"""What the stand-in's linear methods share: parameters as vLLM registers
them, the unquantized method, and the forward on the weights they prepared
(computed with PyTorch on dequantized weights: the stand-in checks formats,
its times are never vLLM's)."""
import re

import torch

from vllm._standin import log
from vllm.config import get_current_vllm_config


def param(layer, name, t):
    layer.register_parameter(name, torch.nn.Parameter(t, requires_grad=False))


def ignored(prefix, ignore):
    """vLLM's ignore-list match: "re:" entries as regexes from the start of
    the module path, others as the exact path."""
    for e in ignore:
        if e.startswith("re:") and re.match(e[3:], prefix):
            return True
        if prefix == e:
            return True
    return False


class LinearMethod:
    """A linear method whose process_weights_after_loading leaves a BF16
    weight_dense for apply."""

    name = "stand-in"

    def __init__(self):
        get_current_vllm_config()  # as vLLM's methods and custom ops do

    def apply(self, layer, x, bias=None):
        assert x.dtype == torch.bfloat16 and x.shape[-1] == layer.input_size, (x.dtype, tuple(x.shape))
        assert hasattr(layer, "weight_dense"), "apply before process_weights_after_loading"
        log(dict(apply=self.name, prefix=layer.prefix, m=x.shape[0], n=layer.output_size, k=layer.input_size))
        return torch.nn.functional.linear(x, layer.weight_dense)


class UnquantizedLinearMethod(LinearMethod):
    name = "UnquantizedLinearMethod"

    def create_weights(self, layer, input_size_per_partition, output_partition_sizes, input_size, output_size,
                       params_dtype, **extra):
        param(layer, "weight", torch.empty(sum(output_partition_sizes), input_size_per_partition, dtype=params_dtype))

    def process_weights_after_loading(self, layer):
        layer.weight_dense = layer.weight.data
