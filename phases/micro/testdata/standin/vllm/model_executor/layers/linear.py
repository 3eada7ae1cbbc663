"""Stand-in for vLLM's ReplicatedLinear: the same constructor and forward
(the quantization config's method creates the weights, the loader fills
them, process_weights_after_loading prepares them, forward calls apply and
returns (output, bias)). As in newer vLLM, a layer not built with
disable_tp=True needs a tensor-parallel group, which the stand-in never
has."""
import torch

from vllm.config import get_current_vllm_config


class ReplicatedLinear(torch.nn.Module):
    def __init__(self, input_size, output_size, bias=True, skip_bias_add=False, params_dtype=None,
                 quant_config=None, prefix="", *, return_bias=True, disable_tp=False):
        super().__init__()
        get_current_vllm_config()
        if not disable_tp:
            raise AssertionError("tensor model parallel group is not initialized (vllm stand-in)")
        assert not bias, "micro builds its layers without bias"
        self.input_size, self.output_size, self.prefix = input_size, output_size, prefix
        self.params_dtype = params_dtype or torch.get_default_dtype()
        self.return_bias = return_bias
        self.quant_method = quant_config.get_quant_method(self, prefix=prefix)
        self.quant_method.create_weights(self, input_size, [output_size], input_size, output_size,
                                         self.params_dtype, weight_loader=None)

    def forward(self, x):
        out = self.quant_method.apply(self, x)
        return (out, None) if self.return_bias else out
