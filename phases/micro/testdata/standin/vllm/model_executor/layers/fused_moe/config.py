"""Stand-in for vLLM's fused-MoE quant config helpers (same names and
keyword arguments)."""


class QuantConfig:
    def __init__(self, fmt, w1_scale, w2_scale, block_shape, zp=None):
        self.fmt, self.w1_scale, self.w2_scale, self.block_shape, self.zp = fmt, w1_scale, w2_scale, block_shape, zp


def int4_w4a16_moe_quant_config(w1_scale, w2_scale, w1_zp, w2_zp, block_shape=None):
    return QuantConfig("int4_w4a16", w1_scale, w2_scale, block_shape, (w1_zp, w2_zp))


def fp8_w8a8_moe_quant_config(w1_scale, w2_scale, a1_scale=None, a2_scale=None, per_act_token_quant=False,
                              per_out_ch_quant=False, block_shape=None):
    return QuantConfig("fp8_w8a8", w1_scale, w2_scale, block_shape)
