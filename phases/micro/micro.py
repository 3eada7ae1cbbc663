"""profdeck micro: time one decode step's GEMMs at a model's exact shapes.

Run by profdeck as `PYTHON -c "$(cat this-file)" --plan "$(cat plan.json)"`.
The plan is profdeck's decode-step plan (model.Plan). Output is one JSON object
per line on stdout, each with a "type": start, env, calib, progress, gemm,
step, error, fatal, done. Timing follows triton.testing.do_bench: CUDA events
around each call, L2 flushed (a 256 MB buffer zeroed) before each, warm-up and
repetitions by time, median (p20/p80 too) of the per-call times.
"""
import argparse
import contextlib
import json
import os
import sys
import traceback


def emit(kind, **kw):
    kw = dict(type=kind, **kw)
    sys.stdout.write(json.dumps(kw, separators=(",", ":")) + "\n")
    sys.stdout.flush()


# Datasheet peaks: (substring of the device name, HBM GB/s, dense BF16 TFLOP/s).
# First match wins, so longer names come before their prefixes.
PEAKS = [
    ("GH200", 4000, 989), ("H200", 4800, 989), ("H100 NVL", 3900, 835),
    ("H100 PCIe", 2000, 756), ("H100", 3350, 989), ("H800", 3350, 989),
    ("H20", 4000, 148), ("B200", 8000, 2250), ("B300", 8000, 2250),
    ("RTX PRO 6000", 1792, 500), ("A100-SXM4-80GB", 2039, 312),
    ("A100 80GB PCIe", 1935, 312), ("A100", 1555, 312), ("L40S", 864, 362),
    ("RTX 5090", 1792, 209), ("RTX 4090", 1008, 165), ("L4", 300, 121),
    ("A10", 600, 125),
]


def peaks(name, args):
    gbs, tflops = 0.0, 0.0
    for sub, g, t in PEAKS:
        if sub in name:
            gbs, tflops = float(g), float(t)
            break
    if args.peak_gbs > 0:
        gbs = args.peak_gbs
    if args.peak_tflops > 0:
        tflops = args.peak_tflops
    return gbs, tflops


class Bencher:
    def __init__(self, torch, warmup_ms, rep_ms):
        self.torch = torch
        self.warmup_ms = warmup_ms
        self.rep_ms = rep_ms
        # do_bench's L2 flush: zero a 256 MB buffer before every timed call.
        self.cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")

    def run(self, fn, warmup_ms=None, rep_ms=None, min_rep=10, max_rep=400):
        torch = self.torch
        warmup_ms = self.warmup_ms if warmup_ms is None else warmup_ms
        rep_ms = self.rep_ms if rep_ms is None else rep_ms
        fn()
        torch.cuda.synchronize()
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        est = 0.0
        for _ in range(2):  # the first estimate can catch clocks still ramping up
            s.record()
            for _ in range(5):
                self.cache.zero_()
                fn()
            e.record()
            torch.cuda.synchronize()
            est = max(s.elapsed_time(e) / 5, 1e-3)
        n_warm = max(1, int(warmup_ms / est))
        n_rep = max(min_rep, min(max_rep, int(rep_ms / est)))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_rep)]
        for _ in range(n_warm):
            fn()
        for i in range(n_rep):
            self.cache.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        t = sorted(a.elapsed_time(b) for a, b in zip(starts, ends))
        q = lambda f: t[min(len(t) - 1, int(f * (len(t) - 1) + 0.5))]
        return q(0.5) * 1e3, q(0.2) * 1e3, q(0.8) * 1e3, n_rep  # microseconds


def make_gemm(torch, g):
    """Allocate random inputs for one plan GEMM and return a closure running
    it and the kernel family timed: "mm", "bmm", or "grouped_mm" for routed
    experts, which MoE engines run as one grouped GEMM over the experts'
    token segments (vLLM's fused_moe, torch._grouped_mm), not as a batched
    GEMM of equal products."""
    F = torch.nn.functional
    m, n, k, b = g["m"], g["n"], g["k"], max(1, g.get("batch") or 1)
    dt = torch.bfloat16
    if b > 1:
        w = torch.randn(b, n, k, device="cuda", dtype=dt)
        wt = w.transpose(1, 2)
        if g["name"].startswith("experts.") and hasattr(torch, "_grouped_mm"):
            try:
                xg = torch.randn(b * m, k, device="cuda", dtype=dt)
                offs = torch.arange(1, b + 1, device="cuda", dtype=torch.int32) * m
                fn = lambda: torch._grouped_mm(xg, wt, offs=offs)
                fn()
                return fn, "grouped_mm"
            except Exception:  # not on this GPU or build: the batched GEMM
                pass
        x = torch.randn(b, m, k, device="cuda", dtype=dt)
        return (lambda: torch.bmm(x, wt)), "bmm"
    x = torch.randn(m, k, device="cuda", dtype=dt)
    w = torch.randn(n, k, device="cuda", dtype=dt)
    return (lambda: F.linear(x, w)), "mm"


# ---- routed experts with the engine's own kernels ------------------------
# When vLLM is importable by this Python, routed experts whose weights are
# served quantized (int4 W4A16 with a scale per group of K, or fp8 with
# 128×128 block scales) are timed with vLLM's fused-MoE entry point
# (fused_experts: w13, the activation and w2 in one call) on weights in the
# served format, instead of a BF16 grouped GEMM (an upper bound).


def first_line(e):
    return (str(e).splitlines() or [type(e).__name__])[0]


def engine_moe():
    """(fused_experts, its config module or None, label) when vLLM's fused
    MoE is importable here, else (None, None, why not)."""
    try:
        import vllm
        try:
            from vllm.model_executor.layers.fused_moe import fused_experts
        except ImportError:
            from vllm.model_executor.layers.fused_moe.fused_moe import fused_experts
    except Exception as e:
        return None, None, "vLLM is not importable by this Python (%s): quantized experts are timed in BF16, an upper bound" % first_line(e)
    try:
        from vllm.model_executor.layers.fused_moe import config as qcfg
    except Exception:
        qcfg = None
    return fused_experts, qcfg, "vllm %s fused_experts" % getattr(vllm, "__version__", "?")


ENGINE_FORMATS = {"int4": "int4_w4a16", "fp8": "fp8_w8a8"}


def served_weights(torch, fmt, group, e, n, k):
    """e experts' [n, k] weights as the engine stores them, with their
    scales: int4 packs two values per byte along K (low nibble first, zero
    point 8) with a scale per group of K; fp8 is e4m3 with a scale per
    128×128 block."""
    if fmt == "int4":
        w = torch.randint(0, 256, (e, n, k // 2), dtype=torch.uint8, device="cuda")
        sc = (torch.rand(e, n, k // group, device="cuda") * 0.02 + 0.005).to(torch.bfloat16)
        return w, sc
    w = (torch.randn(e, n, k, device="cuda") * 0.5).to(torch.float8_e4m3fn)
    sc = torch.rand(e, (n + 127) // 128, (k + 127) // 128, device="cuda") * 0.02 + 0.005
    return w, sc


def dequant(torch, fmt, group, w, sc):
    """The BF16 weights the engine computes with (micro's own reading of
    the format, checked against the engine's result)."""
    if fmt == "int4":
        lo, hi = (w & 0xF).float(), (w >> 4).float()
        q = torch.stack([lo, hi], dim=-1).flatten(-2) - 8.0
        return (q * sc.float().repeat_interleave(group, dim=-1)).to(torch.bfloat16)
    n, k = w.shape[1], w.shape[2]
    s = sc.repeat_interleave(128, dim=1)[:, :n].repeat_interleave(128, dim=2)[:, :, :k]
    return (w.float() * s).to(torch.bfloat16)


def engine_kwargs(fused, qcfg, fmt, group, s1, s2):
    """How this vLLM's fused_experts takes the format: a quant_config built
    by its config helpers (newer), or the use_* flags and scales (older)."""
    import inspect
    params = inspect.signature(fused).parameters
    block = [0, group] if fmt == "int4" else [128, 128]
    if "quant_config" in params and qcfg is not None:
        if fmt == "int4":
            qc = qcfg.int4_w4a16_moe_quant_config(w1_scale=s1, w2_scale=s2, w1_zp=None, w2_zp=None, block_shape=block)
        else:
            qc = qcfg.fp8_w8a8_moe_quant_config(w1_scale=s1, w2_scale=s2, block_shape=block)
        return dict(quant_config=qc)
    flag = "use_%s" % ENGINE_FORMATS[fmt]
    if flag not in params:
        raise RuntimeError("this vLLM's fused_experts takes neither quant_config nor %s" % flag)
    return {flag: True, "w1_scale": s1, "w2_scale": s2, "block_shape": block}


def routing(torch, counts, t):
    """topk ids for t tokens that give expert i counts[i] routed tokens,
    no token routed twice to one expert (each count at most t)."""
    flat = [i for i, c in enumerate(counts) for _ in range(c)]
    k = len(flat) // t
    if k * t != len(flat) or max(counts) > t:
        raise ValueError("%d routed tokens do not split into %d tokens' top-k" % (len(flat), t))
    ids = torch.tensor(flat, dtype=torch.int32, device="cuda").view(k, t).t().contiguous()
    return ids, torch.full((t, k), 1.0 / k, device="cuda", dtype=torch.float32)


def engine_experts(torch, eng, entries, step_m):
    """One fused call for a step's routed experts (the plan's w13 and w2
    entries at one M) in their served format. Returns the callable and the
    result of checking it against micro's own dequantized computation."""
    fused, qcfg, _ = eng
    w13 = [g for g in entries if g["name"].startswith("experts.w13")]
    w2 = [g for g in entries if g["name"].startswith("experts.w2")]
    fmt, group = w13[0]["served"], int(w13[0].get("served_group") or 0) or 128
    counts = [g["m"] for g in w13 for _ in range(max(1, g.get("batch") or 1))]
    e, n1, hidden = len(counts), w13[0]["n"], w13[0]["k"]
    inter = w2[0]["k"]
    w1q, s1 = served_weights(torch, fmt, group, e, n1, hidden)
    w2q, s2 = served_weights(torch, fmt, group, e, hidden, inter)
    ids, tw = routing(torch, counts, step_m)
    x = torch.randn(step_m, hidden, device="cuda", dtype=torch.bfloat16) * 0.1
    kw = engine_kwargs(fused, qcfg, fmt, group, s1, s2)
    fn = lambda: fused(x, w1q, w2q, tw, ids, **kw)
    out = fn()
    d1, d2 = dequant(torch, fmt, group, w1q, s1).float(), dequant(torch, fmt, group, w2q, s2).float()
    ref = torch.zeros(step_m, hidden, device="cuda")
    xf = x.float()
    for j in range(ids.shape[1]):
        h = torch.einsum("th,tnh->tn", xf, d1[ids[:, j].long()])
        a = torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]
        ref += tw[:, j:j + 1] * torch.einsum("ti,thi->th", a, d2[ids[:, j].long()])
    err = float((out.float() - ref).norm() / ref.norm().clamp_min(1e-12))
    return fn, fmt, err


def engine_entries(gemms, eng):
    """The routed-expert entries at one M that the engine's kernels time:
    quantized ones in a format it takes, when vLLM is importable."""
    if eng[0] is None:
        return []
    ex = [g for g in gemms if g["name"].startswith("experts.") and g.get("served") in ENGINE_FORMATS]
    fmts = {g["served"] for g in ex}
    w13 = [g for g in ex if g["name"].startswith("experts.w13")]
    if len(fmts) != 1 or not w13 or len(w13) * 2 != len(ex):
        return []
    return ex


def time_engine_experts(torch, bench, eng, entries, m, peak_gbs):
    """Times the fused call once and emits each entry with its share of the
    time (by weight bytes as served: at decode the experts read their
    weights once). Returns (fn, per_step, sum of step_us)."""
    fn, fmt, err = engine_experts(torch, eng, entries, m)
    if not err < 5e-2:
        raise RuntimeError("%s gave %.3g relative error against micro's dequantized experts: the format is not what it takes" % (eng[2], err))
    us, p20, p80, reps = bench.run(fn)
    weight = lambda g: max(1, g.get("batch") or 1) * g["n"] * g["k"]
    total = float(sum(weight(g) for g in entries))
    per = int(entries[0].get("per_step", 1))
    kernel = "%s %s (w13, activation and w2 in one call; each entry's share by weight bytes; relative error %.1e against micro's dequantized experts)" % (
        eng[2], ENGINE_FORMATS[fmt], err)
    sum_us = 0.0
    for g in entries:
        f = weight(g) / total
        sum_us += emit_gemm(g, m, (us * f, p20 * f, p80 * f, reps), per, peak_gbs, fmt, kernel, as_served=True)
    return fn, per, sum_us


# ---- quantized linear layers with the engine's own path -----------------
# When vLLM is importable, the step's other GEMMs served quantized (a dense
# MLP, attention projections, shared experts) are timed through the layer
# vLLM serves them with: a linear layer built with the quantization config
# vLLM makes from the model's quantization_config (the plan carries it),
# its parameters written in the checkpoint's format as vLLM's loader would,
# then prepared by the quantization method as at load time
# (process_weights_after_loading: repacking for Marlin or Machete, scale
# layouts). Kernel selection is vLLM's own. Each layer is checked against
# micro's own dequantized reading of the weights before it is timed.

LINEAR_METHODS = ("compressed-tensors", "fp8")
LINEAR_FALLBACK = "quantized linear layers are timed in BF16, an upper bound"


def enter_vllm_config():
    """Enters a default vLLM config for the rest of the run (left when the
    script exits): vLLM's layers and custom ops read the current config
    when they are built. Newer vLLM raise outside set_current_vllm_config,
    older ones warned and used a default; the oldest have none."""
    try:
        from vllm.config import VllmConfig, set_current_vllm_config
    except ImportError:
        return None
    cm = set_current_vllm_config(VllmConfig())
    cm.__enter__()
    return cm


def engine_linear(plan):
    """(EngineLinear or None, label): vLLM's quantized linear path for the
    plan's quantization_config, or why micro cannot use it ("" for a model
    served in BF16)."""
    qc = plan.get("quantization_config")
    if not isinstance(qc, dict):
        return None, ""
    method = str(qc.get("quant_method") or "")
    try:
        import vllm
        from vllm.model_executor.layers.linear import ReplicatedLinear
        from vllm.model_executor.layers.quantization import get_quantization_config
    except Exception as e:
        return None, "vLLM is not importable by this Python (%s): %s" % (first_line(e), LINEAR_FALLBACK)
    ver = "vllm %s" % getattr(vllm, "__version__", "?")
    if method not in LINEAR_METHODS:
        return None, "%s: micro writes weights for %s checkpoints, not %s: %s" % (
            ver, " and ".join(LINEAR_METHODS), method or "this quant_method", LINEAR_FALLBACK)
    try:
        ctx = enter_vllm_config()
        qcfg = get_quantization_config(method).from_config(qc)
    except Exception as e:
        return None, "%s could not make its %s config from the model's quantization_config (%s): %s" % (
            ver, method, first_line(e), LINEAR_FALLBACK)
    eng = EngineLinear(ReplicatedLinear, qcfg, ctx, ver)
    return eng, "%s %s with %s" % (ver, ReplicatedLinear.__name__, type(qcfg).__name__)


def linear_served(g):
    """A GEMM the engine serves with a quantized linear layer: a weight
    served quantized, not a routed expert nor a batched product."""
    return bool(g.get("served")) and not g["name"].startswith("experts.") and max(1, g.get("batch") or 1) == 1


def on_device(torch, device):
    """Creates tensors on device inside the block where torch can (2.0+)."""
    d = torch.device(device)
    return d if hasattr(d, "__enter__") else contextlib.nullcontext()


def one_rank_group(device):
    """A tensor-parallel group of one rank, for vLLM versions whose linear
    layers read their TP rank and cannot be told not to."""
    import socket
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    init_distributed_environment(world_size=1, rank=0, local_rank=0,
                                 distributed_init_method="tcp://127.0.0.1:%d" % port,
                                 backend="nccl" if device == "cuda" else "gloo")
    initialize_model_parallel()


class EngineLinear:
    """Builds, fills and checks vLLM linear layers served quantized, one
    per module and shape, kept for every M."""

    def __init__(self, cls, qcfg, ctx, ver):
        self.cls, self.qcfg, self.ctx, self.ver = cls, qcfg, ctx, ver
        self.layers, self.failed = {}, {}
        self.grouped = False

    @staticmethod
    def key(g):
        """A layer is one module at one shape, the same at every M."""
        return g.get("module") or g["name"], g["n"], g["k"]

    def failed_to_build(self, g):
        return self.key(g) in self.failed

    def layer(self, torch, g, device="cuda"):
        """(layer, kernel label, relative error) for g's weight, built on
        first use; a layer that failed raises the same error again."""
        key = self.key(g)
        if key in self.failed:
            raise RuntimeError(self.failed[key])
        if key not in self.layers:
            try:
                self.layers[key] = self.build(torch, g, device)
            except Exception as e:
                self.failed[key] = first_line(e)
                raise
        return self.layers[key]

    def construct(self, torch, g, device):
        import inspect
        kw = dict(bias=False, params_dtype=torch.bfloat16, quant_config=self.qcfg, prefix=g.get("module") or g["name"])
        if "disable_tp" in inspect.signature(self.cls.__init__).parameters:
            kw["disable_tp"] = True  # one GPU's shard, without a tensor-parallel group
        with on_device(torch, device):
            try:
                return self.cls(g["k"], g["n"], **kw)
            except Exception as e:
                if self.grouped or "initialized" not in str(e):
                    raise
        one_rank_group(device)
        self.grouped = True
        with on_device(torch, device):
            return self.cls(g["k"], g["n"], **kw)

    def build(self, torch, g, device):
        n, k = g["n"], g["k"]
        layer = self.construct(torch, g, device)
        method = type(layer.quant_method).__name__
        if method.startswith("Unquantized"):
            raise RuntimeError("vLLM builds %s unquantized (%s) where the plan has it served %s" % (
                g.get("module") or g["name"], method, g["served"]))
        with torch.no_grad():
            ref = write_served(torch, layer, n, k)
            layer.quant_method.process_weights_after_loading(layer)
            x = torch.randn(4, k, device=device, dtype=torch.bfloat16)
            out = linear_out(layer(x)).float()
            want = x.float() @ ref.t()
        err = float((out - want).norm() / want.norm().clamp_min(1e-12))
        del ref, want
        if not err < 5e-2:
            raise RuntimeError("%s gave %.3g relative error against micro's dequantized weights: the format is not what it takes" % (method, err))
        return layer, linear_kernel(self.ver, layer), err


def linear_out(y):
    """The output of a vLLM linear layer's forward, which returns (output,
    bias) unless built with return_bias=False."""
    return y[0] if isinstance(y, tuple) else y


def linear_kernel(ver, layer):
    """Names what vLLM chose: the quantization method, its scheme and the
    kernel class where it exposes them."""
    parts = [type(layer.quant_method).__name__]
    for obj in (getattr(layer, "scheme", None), layer.quant_method):
        if obj is None:
            continue
        if obj is not layer.quant_method:
            parts.append(type(obj).__name__)
        kern = getattr(obj, "kernel", None)
        if kern is not None:
            parts.append(type(kern).__name__ if not isinstance(kern, type) else kern.__name__)
    return "%s %s (%s)" % (ver, type(layer).__name__, ", ".join(parts))


def is_float8(dt):
    return "float8" in str(dt)


def write_packed(torch, w, n, k):
    """Random int32 words in compressed-tensors' pack-quantized layout:
    32/bits values per word along K, the first in the lowest bits, each
    stored plus 2^(bits-1). Returns the signed values, [n, k] float."""
    rows, cols = w.shape
    pf = k // cols if cols else 0
    if w.dtype != torch.int32 or rows != n or pf < 1 or cols * pf != k or 32 % pf:
        raise RuntimeError("weight_packed %s %s does not pack [%d, %d]" % (w.dtype, tuple(w.shape), n, k))
    bits = 32 // pf
    w.data.copy_(torch.randint(0, 2 ** 32, tuple(w.shape), dtype=torch.int64, device=w.device).to(torch.int32))
    shifts = torch.arange(pf, device=w.device, dtype=torch.int32) * bits
    vals = (w.data.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    return (vals.reshape(n, k) - (1 << (bits - 1))).float()


def expand_scale(s, n, k):
    """A weight scale as [n, k] (or broadcastable): per tensor, per output
    channel, per group of K, or per block (128×128 where that fits)."""
    s = s.float()
    if s.numel() == 1:
        return s.reshape(1, 1)
    if s.dim() == 1 and s.numel() == n:
        return s.reshape(n, 1)
    if s.dim() == 2:
        a, b = s.shape
        if a == n and k % b == 0:
            return s.repeat_interleave(k // b, dim=1)
        bn = 128 if -(-n // 128) == a else -(-n // a)
        bk = 128 if -(-k // 128) == b else -(-k // b)
        return s.repeat_interleave(bn, dim=0)[:n].repeat_interleave(bk, dim=1)[:, :k]
    raise RuntimeError("weight scale of shape %s is not a layout micro reads" % (tuple(s.shape),))


def write_served(torch, layer, n, k):
    """Writes random weights in the checkpoint's format into the layer's
    parameters, as vLLM's loader copies a checkpoint's tensors in, and
    returns micro's own dequantized reading of them ([n, k] float)."""
    params = dict(layer.named_parameters(recurse=False))
    wname = "weight_packed" if "weight_packed" in params else "weight"
    sname = next((s for s in ("weight_scale", "weight_scale_inv") if s in params), None)
    if wname not in params or sname is None:
        raise RuntimeError("parameters %s: no weight and weight scale micro knows" % ", ".join(sorted(params)))
    w, s = params[wname], params[sname]
    s.data.copy_(torch.rand(tuple(s.shape), device=s.device) * 0.02 + 0.005)
    if wname == "weight_packed":
        q = write_packed(torch, w, n, k)
    elif is_float8(w.dtype):
        w.data.copy_((torch.randn(tuple(w.shape), device=w.device) * 0.5).to(w.dtype))
        q = w.data.float()
    elif w.dtype == torch.int8:
        w.data.copy_(torch.randint(-127, 128, tuple(w.shape), device=w.device, dtype=torch.int8))
        q = w.data.float()
    else:
        raise RuntimeError("weight is %s: not a quantized checkpoint format micro writes" % w.dtype)
    if tuple(q.shape) != (n, k):
        raise RuntimeError("weight %s is not [%d, %d]" % (tuple(q.shape), n, k))
    for name, p in params.items():
        if name in (wname, sname):
            continue
        if name == "weight_shape":
            p.data.copy_(torch.tensor([n, k], dtype=p.dtype))
        elif name == "weight_g_idx":  # activation order: kept in order
            p.data.copy_(torch.arange(k, device=p.device, dtype=p.dtype) // (k // s.shape[-1]))
        elif name == "input_scale":  # static activation scale: |x| up to 8
            p.data.fill_(8.0 / (448.0 if is_float8(w.dtype) else 127.0))
        elif name == "weight_zero_point":
            raise RuntimeError("asymmetric weights (weight_zero_point): micro writes symmetric ones only")
        else:
            raise RuntimeError("parameter %s is not one micro writes" % name)
    return q * expand_scale(s.data, n, k)


def time_engine_linear(torch, bench, lin, g, m, peak_gbs, device="cuda"):
    """Times g (its M rows) through vLLM's layer in the served format and
    emits it. Returns (fn, per_step, step_us)."""
    layer, kernel, err = lin.layer(torch, g, device)
    x = torch.randn(g["m"], g["k"], device=device, dtype=torch.bfloat16)
    fn = lambda: layer(x)
    per = int(g.get("per_step", 1))
    step_us = emit_gemm(g, m, bench.run(fn), per, peak_gbs, g["served"],
                        "%s; relative error %.1e against micro's dequantized weights" % (kernel, err), as_served=True)
    return fn, per, step_us


def emit_gemm(g, m, timing, per, peak_gbs, dtype, kernel, **extra):
    """Emits g's gemm line at step m from its timing (us, p20, p80, reps),
    run per times a step. Returns its step_us."""
    us, p20, p80, reps = timing
    tflops, gbs, pct = gemm_metrics(g, us, peak_gbs, WEIGHT_BYTES.get(dtype, 2.0))
    emit("gemm", name=g["name"], step_m=m, m=g["m"], n=g["n"], k=g["k"], batch=max(1, g.get("batch") or 1),
         dtype=dtype, served=g.get("served", ""), per_step=per, us=us, p20_us=p20, p80_us=p80, tflops=tflops,
         gbs=gbs, bw_pct=pct, step_us=us * per, reps=reps, kernel=kernel, **extra)
    return us * per


# WEIGHT_BYTES is a weight's size in the format it was timed in (scales
# left out); activations and outputs count two bytes (BF16).
WEIGHT_BYTES = {"int4": 0.5, "fp8": 1.0}


def gemm_metrics(g, us, peak_gbs, weight_bytes=2.0):
    b = max(1, g.get("batch") or 1)
    m, n, k = g["m"], g["n"], g["k"]
    flops = 2.0 * b * m * n * k
    nbytes = b * (weight_bytes * n * k + 2.0 * (m * k + m * n))
    sec = us / 1e6
    gbs = nbytes / sec / 1e9
    return flops / sec / 1e12, gbs, (100.0 * gbs / peak_gbs if peak_gbs else 0.0)


def calibrate(torch, bench, peak_tflops, rounds=3):
    """The 8192^3 BF16 GEMM, timed by this script and by triton's do_bench,
    alternately (rounds of each, medians), so that clock and power drift
    under a sustained load hits both alike."""
    n = 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    fn = lambda: torch.matmul(a, b)
    flops = 2.0 * n * n * n
    try:
        import triton.testing
        do_bench = triton.testing.do_bench
        db_err = ""
    except Exception as e:  # triton missing: our figure alone
        do_bench, db_err = None, (str(e).splitlines() or [type(e).__name__])[0]
    ours, theirs, reps = [], [], 0
    for _ in range(rounds):
        us, _, _, reps = bench.run(fn, warmup_ms=25, rep_ms=100)
        ours.append(us)
        if do_bench is not None:
            try:
                theirs.append(do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3)
            except Exception as e:
                do_bench, db_err = None, (str(e).splitlines() or [type(e).__name__])[0]
    med = lambda v: sorted(v)[len(v) // 2]
    us = med(ours)
    out = dict(name="gemm 8192x8192x8192 bf16", us=us, tflops=flops / (us / 1e6) / 1e12, reps=reps, rounds=rounds)
    if theirs:
        db = med(theirs)
        out.update(do_bench_us=db, do_bench_tflops=flops / (db / 1e6) / 1e12)
    if db_err:
        out["do_bench_error"] = db_err
    if peak_tflops:
        out["peak_pct"] = 100.0 * out["tflops"] / peak_tflops
    emit("calib", **out)
    del a, b


def gpu_warmup(torch, ms=300):
    """Run large GEMMs for about ms milliseconds so clocks reach steady state."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    spent = 0.0
    while spent < ms:
        s.record()
        for _ in range(20):
            torch.matmul(a, a)
        e.record()
        torch.cuda.synchronize()
        spent += s.elapsed_time(e)
    del a


def copy_bandwidth(torch):
    """Device-to-device copy of 1 GiB, bytes read plus written over time."""
    n = 1 << 29  # bf16 elements: 1 GiB
    src = torch.empty(n, dtype=torch.bfloat16, device="cuda").normal_()
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    s = torch.cuda.Event(enable_timing=True)
    e = torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(10):
        dst.copy_(src)
    e.record()
    torch.cuda.synchronize()
    sec = s.elapsed_time(e) / 10 / 1e3
    del src, dst
    return 2.0 * n * 2 / sec / 1e9


def step_sequence(fns):
    """Every GEMM of the step, each run per_step times, layer by layer."""
    layers = max(p for _, p in fns)
    seq = []
    for i in range(layers):
        for fn, per in fns:
            if i < per:
                seq.append(fn)
    return seq


def back_to_back(torch, bench, fns):
    seq = step_sequence(fns)

    def run_all():
        for f in seq:
            f()

    try:  # decode runs under CUDA graphs: capture the step and time replays
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            run_all()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run_all()
        us, _, _, _ = bench.run(graph.replay, min_rep=5, max_rep=50)
        del graph
        return us, True
    except Exception:
        us, _, _, _ = bench.run(run_all, min_rep=5, max_rep=50)
        return us, False


def parse_args():
    ap = argparse.ArgumentParser(prog="profdeck-micro")
    ap.add_argument("--plan", required=True, help="the decode-step plan, as JSON")
    ap.add_argument("--warmup-ms", type=float, default=10)
    ap.add_argument("--rep-ms", type=float, default=40)
    ap.add_argument("--peak-gbs", type=float, default=0)
    ap.add_argument("--peak-tflops", type=float, default=0)
    ap.add_argument("--no-calib", action="store_true")
    ap.add_argument("--no-step", action="store_true")
    return ap.parse_args()


def cuda_torch():
    """PyTorch when it sees a CUDA GPU; else None, after a fatal line."""
    try:
        import torch
    except Exception as e:
        emit("fatal", error="PyTorch is not importable by this Python: %s" % e)
        return None
    if not torch.cuda.is_available():
        emit("fatal", error="PyTorch sees no CUDA GPU (torch %s)" % torch.__version__)
        return None
    return torch


def emit_env(torch, args, eng, lin_label):
    """Emits the env line. Returns the peaks (HBM GB/s, BF16 TFLOP/s)."""
    props = torch.cuda.get_device_properties(0)
    name = torch.cuda.get_device_name(0)
    peak_gbs, peak_tflops = peaks(name, args)
    emit("env", engine_moe=eng[2], engine_linear=lin_label, gpu=name, torch=torch.__version__, cuda=torch.version.cuda or "",
         sms=props.multi_processor_count, mem_gib=round(props.total_memory / 2**30, 1),
         peak_gbs=peak_gbs, peak_tflops=peak_tflops, copy_gbs=round(copy_bandwidth(torch), 1))
    return peak_gbs, peak_tflops


def step_m(g):
    return g.get("step_m", g["m"])


class StepTimer:
    """Times the step's GEMMs at one M after another, each the way the
    engine serves it where micro can (routed experts through the fused
    MoE, quantized linear layers through vLLM's), else in BF16, and emits
    them with the progress made."""

    def __init__(self, torch, bench, eng, lin, peak_gbs, total, device="cuda"):
        self.torch, self.bench, self.eng, self.lin, self.peak_gbs = torch, bench, eng, lin, peak_gbs
        self.done, self.total, self.device = 0, total, device

    def progress(self, text):
        emit("progress", done=self.done, total=self.total, text=text)

    def experts(self, m, at_m, timed):
        """Times the routed experts at m with the engine's fused MoE when
        it takes their format, adding (fn, per_step, step_us) to timed.
        Returns the entries so timed ([]: they are timed in BF16)."""
        fused = engine_entries(at_m, self.eng)
        if not fused:
            return []
        self.progress("M=%d routed experts (%s)" % (m, self.eng[2]))
        try:
            timed.append(time_engine_experts(self.torch, self.bench, self.eng, fused, m, self.peak_gbs))
        except Exception as e:
            emit("error", name="experts (%s)" % self.eng[2], step_m=m, error=first_line(e) + ": timed in BF16 instead")
            return []
        self.done += len(fused)
        return fused

    def linear(self, g, m):
        """Times g through vLLM's quantized linear layer when vLLM serves
        it so: (fn, per_step, step_us), or None to time it in BF16. A layer
        that cannot be built is said once, at the first M: it is timed in
        BF16 at every M."""
        lin = self.lin
        if lin is None or not linear_served(g) or lin.failed_to_build(g):
            return None
        try:
            return time_engine_linear(self.torch, self.bench, lin, g, m, self.peak_gbs, self.device)
        except Exception as e:
            every = " at every M" if lin.failed_to_build(g) else ""
            emit("error", name="%s (%s)" % (g["name"], lin.ver), step_m=m, error=first_line(e) + ": timed in BF16 instead" + every)
            self.torch.cuda.empty_cache()
            return None

    def bf16(self, g, m):
        """Times g as a BF16 GEMM: (fn, per_step, step_us), or None after
        an error line."""
        try:
            fn, kernel = make_gemm(self.torch, g)
            timing = self.bench.run(fn)
        except Exception as e:
            emit("error", name=g["name"], step_m=m, error=first_line(e))
            self.torch.cuda.empty_cache()
            return None
        per = int(g.get("per_step", 1))
        return fn, per, emit_gemm(g, m, timing, per, self.peak_gbs, g.get("dtype", "bf16"), kernel)

    def whole_step(self, m, timed):
        """Times the step's GEMMs back to back (in a CUDA graph where it
        can be captured) beside the sum of their times."""
        self.progress("M=%d whole step back-to-back" % m)
        sum_us = sum(us for _, _, us in timed)
        try:
            b2b, graph = back_to_back(self.torch, self.bench, [(fn, per) for fn, per, _ in timed])
            emit("step", m=m, sum_us=sum_us, back_to_back_us=b2b, graph=graph)
        except Exception as e:
            emit("step", m=m, sum_us=sum_us, back_to_back_us=0, graph=False)
            emit("error", name="back-to-back", step_m=m, error=first_line(e))
        self.done += 1

    def batch(self, m, at_m, with_step):
        """Times the GEMMs at_m of the step at m, then the whole step."""
        timed = []  # (fn, per_step, step_us) of each GEMM timed
        fused = self.experts(m, at_m, timed)
        for g in (g for g in at_m if g not in fused):
            self.progress("M=%d %s" % (m, g["name"]))
            t = self.linear(g, m)
            if t is None:
                t = self.bf16(g, m)
            if t is not None:
                timed.append(t)
            self.done += 1
        if with_step and timed:
            self.whole_step(m, timed)
        del timed
        self.torch.cuda.empty_cache()


def main():
    args = parse_args()
    emit("start", pid=os.getpid(), ppid=os.getppid())
    plan = json.loads(args.plan)
    torch = cuda_torch()
    if torch is None:
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False
    bench = Bencher(torch, args.warmup_ms, args.rep_ms)
    eng = engine_moe()
    lin, lin_label = engine_linear(plan)
    peak_gbs, peak_tflops = emit_env(torch, args, eng, lin_label)

    gemms = plan.get("gemms") or []
    batches = sorted({step_m(g) for g in gemms})
    total = len(gemms) + (0 if args.no_step else len(batches)) + (0 if args.no_calib else 1)
    timer = StepTimer(torch, bench, eng, lin, peak_gbs, total)
    gpu_warmup(torch)
    if not args.no_calib:
        timer.progress("calibration: 8192^3 GEMM")
        calibrate(torch, bench, peak_tflops)
        timer.done += 1
    for m in batches:
        timer.batch(m, [g for g in gemms if step_m(g) == m], not args.no_step)
    emit("done", done=timer.done, total=total)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit:
        raise
    except BaseException as e:
        emit("fatal", error="%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""),
             trace=traceback.format_exc()[-2000:])
        sys.exit(1)
