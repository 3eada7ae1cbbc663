"""Stand-in for vLLM's fused_experts: checks the weights are in the format
the quant config names (as vLLM's kernels read them: int4 as bytes of two
values along K, low nibble first, zero point 8, a scale per group of K;
fp8 e4m3 with a scale per 128x128 block), then computes the experts with
PyTorch. Each call is written to $PROFDECK_STANDIN_LOG (one JSON line)."""
import torch

from vllm._standin import log as _log


def _int4(w, scale, k, group):
    e, n, half = w.shape
    assert w.dtype == torch.uint8 and half * 2 == k, "int4 weights: uint8 [E, N, K/2], got %s %s" % (w.dtype, tuple(w.shape))
    assert tuple(scale.shape) == (e, n, k // group), "int4 scales: [E, N, K/group], got %s" % (tuple(scale.shape),)
    idx = torch.arange(k, device=w.device)
    vals = (w[:, :, idx // 2].int() >> ((idx % 2) * 4)) & 0xF
    return ((vals.float() - 8) * scale[:, :, idx // group].float())


def _fp8(w, scale):
    e, n, k = w.shape
    assert w.dtype == torch.float8_e4m3fn, "fp8 weights: float8_e4m3fn, got %s" % w.dtype
    assert tuple(scale.shape) == (e, -(-n // 128), -(-k // 128)), "fp8 block scales: [E, N/128, K/128], got %s" % (tuple(scale.shape),)
    rn = torch.arange(n, device=w.device) // 128
    rk = torch.arange(k, device=w.device) // 128
    return w.float() * scale[:, rn][:, :, rk].float()


def fused_experts(hidden_states, w1, w2, topk_weights, topk_ids, inplace=False, activation="silu",
                  apply_router_weight_on_input=False, global_num_experts=-1, expert_map=None, quant_config=None):
    assert quant_config is not None, "the stand-in takes quantized experts only"
    t, hidden = hidden_states.shape
    if quant_config.fmt == "int4_w4a16":
        group = quant_config.block_shape[1]
        inter = w2.shape[2] * 2
        d1, d2 = _int4(w1, quant_config.w1_scale, hidden, group), _int4(w2, quant_config.w2_scale, inter, group)
    else:
        assert quant_config.block_shape == [128, 128], quant_config.block_shape
        d1, d2 = _fp8(w1, quant_config.w1_scale), _fp8(w2, quant_config.w2_scale)
        inter = d2.shape[2]
    assert d1.shape[1] == 2 * inter and d1.shape[2] == hidden and d2.shape[1] == hidden
    assert topk_ids.shape == topk_weights.shape and topk_ids.shape[0] == t
    x = hidden_states.float()
    out = torch.zeros(t, hidden, device=x.device)
    for j in range(topk_ids.shape[1]):
        e = topk_ids[:, j].long()
        h = torch.einsum("th,tnh->tn", x, d1[e])
        a = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        out += topk_weights[:, j:j + 1].float() * torch.einsum("ti,thi->th", a, d2[e])
    _log(dict(format=quant_config.fmt, tokens=t, topk=topk_ids.shape[1], experts=w1.shape[0],
              w1=list(w1.shape), w2=list(w2.shape), w1_dtype=str(w1.dtype), block_shape=quant_config.block_shape))
    return out.to(hidden_states.dtype)
