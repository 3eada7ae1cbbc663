"""The rig's model: a tensor-parallel MoE with DeepSeek-V3's multi-head latent
attention, one process per GPU. Decode uses the absorbed MLA form (queries
projected into the latent, attention over the latent KV cache, the output
projected back per head), so its weight GEMMs are exactly those profdeck's
plan (phases/model/plan.go) times: q_a+kv_a, q_b, w_uk, w_uv, o_proj,
dense.gate_up/down, router, experts.w13/w2, shared.gate_up/down and lm_head.
Each layer all-reduces twice (after o_proj, after the MLP), the vocab-parallel
embedding once, and the logits are all-gathered for sampling.

Every GEMM and collective goes through a Probe, which either just runs it or
records CUDA events around it (the ground-truth pass).
"""
import math
import time

from modelcfg import Shapes


class Probe:
    """Runs GEMMs and collectives as they are."""

    def gemm(self, name, fn):
        return fn()

    def comm(self, name, fn):
        return fn()


class EventProbe(Probe):
    """Records a start and an end event around every GEMM and collective
    (CUDA events; on a CPU, wall-clock times, which are synchronous there)."""

    def __init__(self, torch, cuda):
        self.torch, self.cuda, self.recs = torch, cuda, []

    def _mark(self):
        if self.cuda:
            e = self.torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def _run(self, kind, name, fn):
        s = self._mark()
        y = fn()
        self.recs.append((kind, name, s, self._mark()))
        return y

    def gemm(self, name, fn):
        return self._run("gemm", name, fn)

    def comm(self, name, fn):
        return self._run("comm", name, fn)

    @staticmethod
    def elapsed_ms(s, e):
        if isinstance(s, float):
            return (e - s) * 1e3
        return s.elapsed_time(e)

    def totals(self):
        """Milliseconds per kind and per (kind, name)."""
        kinds, names, counts = {}, {}, {}
        for kind, name, s, e in self.recs:
            ms = self.elapsed_ms(s, e)
            kinds[kind] = kinds.get(kind, 0.0) + ms
            names[(kind, name)] = names.get((kind, name), 0.0) + ms
            counts[(kind, name)] = counts.get((kind, name), 0) + 1
        return kinds, names, counts


class Model:
    """One rank's shard of the model."""

    def __init__(self, torch, cfg, rank, tp, device, dtype, group=None):
        self.torch, self.F = torch, torch.nn.functional
        self.s = s = Shapes(cfg)
        self.rank, self.tp, self.device, self.dtype, self.group = rank, tp, device, dtype, group
        self.cuda = device.type == "cuda"
        for field, v in (("num_attention_heads", s.heads), ("intermediate_size", s.inter),
                         ("moe_intermediate_size", s.moe_inter)):
            if v % tp:
                raise ValueError("%s %d is not divisible by tp %d" % (field, v, tp))
        self.hl = s.heads // tp
        vpad = (s.vocab + 63) // 64 * 64
        self.vl = (vpad + tp - 1) // tp  # vocab rows per rank
        self.v0 = rank * self.vl
        self.layers = [dict() for _ in range(s.layers)]
        self.top = {}
        self.grouped = None  # set by check_grouped(): torch._grouped_mm usable
        half = s.rope // 2
        inv = 1.0 / (s.rope_theta ** (torch.arange(0, half, dtype=torch.float32) / half))
        t = torch.arange(8192, dtype=torch.float32)
        fr = torch.outer(t, inv)
        self.cos = fr.cos().to(device=device, dtype=dtype)
        self.sin = fr.sin().to(device=device, dtype=dtype)
        self.scale = 1.0 / math.sqrt(s.nope + s.rope)

    # ---- loading -------------------------------------------------------
    def _put(self, t):
        return t.to(device=self.device, dtype=self.dtype).contiguous()

    def load_tensor(self, name, t):
        """Takes one checkpoint tensor (on the CPU), keeps this rank's slice."""
        s, r, hl = self.s, self.rank, self.hl
        torch = self.torch
        if name == "model.embed_tokens.weight" or name == "lm_head.weight":
            part = t[self.v0:self.v0 + self.vl]
            if part.shape[0] < self.vl:  # the padded tail of the vocabulary
                pad = torch.zeros(self.vl - part.shape[0], t.shape[1], dtype=t.dtype)
                part = torch.cat([part, pad])
            self.top["embed" if name.startswith("model.embed") else "lm_head"] = self._put(part)
            return
        if name == "model.norm.weight":
            self.top["norm"] = self._put(t)
            return
        parts = name.split(".")
        li = int(parts[2])
        L = self.layers[li]
        rest = ".".join(parts[3:-1])
        if rest == "input_layernorm":
            L["ln1"] = self._put(t)
        elif rest == "post_attention_layernorm":
            L["ln2"] = self._put(t)
        elif rest == "self_attn.q_a_proj":
            self._fused_qkv_a(L, 0, t)
        elif rest == "self_attn.kv_a_proj_with_mqa":
            self._fused_qkv_a(L, s.q_lora, t)
        elif rest == "self_attn.q_a_layernorm":
            L["q_ln"] = self._put(t)
        elif rest == "self_attn.kv_a_layernorm":
            L["kv_ln"] = self._put(t)
        elif rest == "self_attn.q_b_proj":
            d = s.nope + s.rope
            L["q_b"] = self._put(t[r * hl * d:(r + 1) * hl * d])
        elif rest == "self_attn.kv_b_proj":
            w = t.view(s.heads, s.nope + s.v, s.kv_lora)[r * hl:(r + 1) * hl]
            L["w_uk"] = self._put(w[:, :s.nope, :].transpose(1, 2))  # [hl, kv_lora, nope]
            L["w_uv"] = self._put(w[:, s.nope:, :])  # [hl, v, kv_lora]
        elif rest == "self_attn.o_proj":
            L["o_proj"] = self._put(t[:, r * hl * s.v:(r + 1) * hl * s.v])
        elif rest == "mlp.gate":
            L["router"] = self._put(t)
        elif rest.startswith("mlp.experts."):
            e, kind = int(parts[5]), parts[6]
            i = s.moe_inter // self.tp
            if "w13" not in L:
                L["w13"] = torch.empty(s.experts, 2 * i, s.hidden, device=self.device, dtype=self.dtype)
                L["w2"] = torch.empty(s.experts, s.hidden, i, device=self.device, dtype=self.dtype)
            if kind == "gate_proj":
                L["w13"][e, :i].copy_(t[r * i:(r + 1) * i])
            elif kind == "up_proj":
                L["w13"][e, i:].copy_(t[r * i:(r + 1) * i])
            else:
                L["w2"][e].copy_(t[:, r * i:(r + 1) * i])
        elif rest.startswith("mlp.shared_experts.") or rest in ("mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
            pre = "shared" if "shared" in rest else "dense"
            kind = parts[-2]
            width = t.shape[0] if kind != "down_proj" else t.shape[1]
            i = width // self.tp
            if kind == "down_proj":
                L[pre + ".down"] = self._put(t[:, r * i:(r + 1) * i])
            else:
                if pre + ".gate_up" not in L:
                    L[pre + ".gate_up"] = torch.empty(2 * i, s.hidden, device=self.device, dtype=self.dtype)
                off = 0 if kind == "gate_proj" else i
                L[pre + ".gate_up"][off:off + i].copy_(t[r * i:(r + 1) * i])
        else:
            raise ValueError("unexpected tensor " + name)

    def _fused_qkv_a(self, L, off, t):
        s = self.s
        if "qkv_a" not in L:
            L["qkv_a"] = self.torch.empty(s.q_lora + s.kv_lora + s.rope, s.hidden, device=self.device, dtype=self.dtype)
        L["qkv_a"][off:off + t.shape[0]].copy_(t)

    def check_loaded(self):
        for i, L in enumerate(self.layers):
            need = ["ln1", "ln2", "qkv_a", "q_ln", "kv_ln", "q_b", "w_uk", "w_uv", "o_proj"]
            need += ["router", "w13", "w2"] + (["shared.gate_up", "shared.down"] if self.s.shared else []) \
                if self.s.is_moe(i) else ["dense.gate_up", "dense.down"]
            miss = [n for n in need if n not in L]
            if miss:
                raise ValueError("layer %d: missing %s" % (i, ", ".join(miss)))
        for n in ("embed", "lm_head", "norm"):
            if n not in self.top:
                raise ValueError("missing " + n)

    def check_grouped(self):
        """Uses torch._grouped_mm for the routed experts when it runs and
        agrees with a plain loop on this device."""
        torch = self.torch
        self.grouped = False
        if not self.cuda or not hasattr(torch, "_grouped_mm"):
            return "per-expert loop (no torch._grouped_mm on this device)"
        try:
            E, K, N = 4, 64, 32
            x = torch.randn(8, K, device=self.device, dtype=self.dtype)
            w = torch.randn(E, N, K, device=self.device, dtype=self.dtype)
            offs = torch.tensor([2, 2, 5, 8], device=self.device, dtype=torch.int32)
            y = torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
            ref = torch.cat([x[0:2] @ w[0].t(), x[2:5] @ w[2].t(), x[5:8] @ w[3].t()])
            if not torch.allclose(y.float(), ref.float(), atol=0.5, rtol=0.05):
                return "per-expert loop (torch._grouped_mm disagreed with a loop)"
        except Exception as e:
            return "per-expert loop (torch._grouped_mm failed: %s)" % (str(e).splitlines() or [type(e).__name__])[0]
        self.grouped = True
        return "torch._grouped_mm over the experts a batch routes to"

    # ---- pieces --------------------------------------------------------
    def rms(self, x, w):
        xf = x.float()
        xf = xf * self.torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.s.eps)
        return (xf.to(self.dtype)) * w

    def rope(self, x, pos):
        # x [..., rope]; cos/sin [T, rope/2] broadcast over the middle dims.
        cos, sin = self.cos[pos], self.sin[pos]
        while cos.dim() < x.dim():
            cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
        h = x.shape[-1] // 2
        x1, x2 = x[..., :h], x[..., h:]
        return self.torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)

    def all_reduce(self, p, x):
        if self.tp == 1:
            return x
        dist = self.torch.distributed

        def ar():
            dist.all_reduce(x, group=self.group)
            return x
        return p.comm("all_reduce", ar)

    def linear(self, p, name, x, w):
        return p.gemm(name, lambda: self.F.linear(x, w))

    # ---- forward -------------------------------------------------------
    def embed(self, p, ids):
        torch = self.torch
        local = ids - self.v0
        ok = (local >= 0) & (local < self.vl)
        h = self.F.embedding(torch.where(ok, local, torch.zeros_like(local)), self.top["embed"])
        h = h * ok.unsqueeze(-1).to(h.dtype)
        return self.all_reduce(p, h)

    def attention(self, p, L, x, pos, cache, rows, prefill_row, segs=None):
        """MLA at decode (rows: the batch's cache rows 0..nd-1, one token
        each), at prefill (prefill_row: one sequence, its tokens at positions
        0..T-1), or over a mixed batch (segs: the decode rows' tokens first,
        then each prefill chunk (row, start, n), its tokens at positions
        start..start+n-1), as a chunked-prefill engine runs a step."""
        torch, s, hl = self.torch, self.s, self.hl
        T = x.shape[0]
        a = self.linear(p, "q_a+kv_a", x, L["qkv_a"])
        q_a, kv_a, k_pe = a.split([s.q_lora, s.kv_lora, s.rope], dim=-1)
        q = self.linear(p, "q_b", self.rms(q_a, L["q_ln"]), L["q_b"]).view(T, hl, s.nope + s.rope)
        q_nope, q_pe = q.split([s.nope, s.rope], dim=-1)
        q_pe = self.rope(q_pe, pos)
        k_pe = self.rope(k_pe, pos)
        kv = torch.cat([self.rms(kv_a, L["kv_ln"]), k_pe], dim=-1)  # [T, kv_lora+rope]
        # Absorbed: q_nope into the latent space, per head.
        q_lat = p.gemm("w_uk", lambda: torch.bmm(q_nope.transpose(0, 1), L["w_uk"].transpose(1, 2)))  # [hl, T, kv_lora]
        qf = torch.cat([q_lat.transpose(0, 1), q_pe], dim=-1)  # [T, hl, C]
        if segs is not None:
            nd = T - sum(n for _, _, n in segs)
            outs = []
            if nd:
                outs.append(self._attend_decode(qf[:nd], kv[:nd], pos[:nd], cache, rows[:nd]))
            off = nd
            for row, p0, n in segs:
                outs.append(self._attend_prefill(qf[off:off + n], kv[off:off + n], cache, row, p0))
                off += n
            o_lat = torch.cat(outs) if len(outs) > 1 else outs[0]
        elif prefill_row is None:
            o_lat = self._attend_decode(qf, kv, pos, cache, rows)
        else:
            o_lat = self._attend_prefill(qf, kv, cache, prefill_row, 0)
        o = p.gemm("w_uv", lambda: torch.bmm(o_lat.transpose(0, 1), L["w_uv"].transpose(1, 2)))  # [hl, T, v]
        o = o.transpose(0, 1).reshape(T, hl * s.v)
        return self.all_reduce(p, self.linear(p, "o_proj", o, L["o_proj"]))

    def _attend_decode(self, qf, kv, pos, cache, rows):
        """One token per row (rows 0..T-1) over its latent cache."""
        torch, s = self.torch, self.s
        T = qf.shape[0]
        cache[rows, pos] = kv
        ctx = cache[:T]  # [T, L, C]: decode rows are 0..T-1
        sc = torch.bmm(qf, ctx.transpose(1, 2)) * self.scale  # [T, hl, L]
        mask = torch.arange(ctx.shape[1], device=qf.device).view(1, 1, -1) > pos.view(-1, 1, 1)
        pr = torch.softmax(sc.float().masked_fill(mask, float("-inf")), dim=-1).to(self.dtype)
        return torch.bmm(pr, ctx[..., :s.kv_lora])  # [T, hl, kv_lora]

    def _attend_prefill(self, qf, kv, cache, row, p0):
        """A chunk of one sequence, its tokens at p0..p0+T-1, causally over
        the cache up to its last token."""
        torch, s = self.torch, self.s
        T = qf.shape[0]
        cache[row, p0:p0 + T] = kv
        ctx = cache[row, :p0 + T]  # [p0+T, C]
        sc = torch.matmul(qf.transpose(0, 1), ctx.t()) * self.scale  # [hl, T, p0+T]
        causal = torch.ones(T, p0 + T, dtype=torch.bool, device=qf.device).triu(p0 + 1)
        pr = torch.softmax(sc.float().masked_fill(causal, float("-inf")), dim=-1).to(self.dtype)
        return torch.matmul(pr, ctx[:, :s.kv_lora]).transpose(0, 1)  # [T, hl, kv_lora]

    def mlp(self, p, pre, x, L):
        h = self.linear(p, pre + ".gate_up", x, L[pre + ".gate_up"])
        i = h.shape[-1] // 2
        return self.linear(p, pre + ".down", self.F.silu(h[:, :i]) * h[:, i:], L[pre + ".down"])

    def moe(self, p, x, L):
        torch, s = self.torch, self.s
        T = x.shape[0]
        logits = self.linear(p, "router", x, L["router"])
        probs = torch.softmax(logits.float(), dim=-1)
        w, ids = torch.topk(probs, s.topk, dim=-1)
        w = (w / w.sum(-1, keepdim=True) * s.scale_routed).to(self.dtype)
        flat = ids.view(-1)
        order = torch.argsort(flat)
        tok = torch.div(order, s.topk, rounding_mode="floor")
        xs = x[tok]
        w13, w2 = L["w13"], L["w2"]
        i = w2.shape[-1]
        if self.grouped:
            counts = torch.zeros(s.experts, device=x.device, dtype=torch.int32)
            counts.scatter_add_(0, flat, torch.ones_like(flat, dtype=torch.int32))
            offs = torch.cumsum(counts, 0, dtype=torch.int32)
            h = p.gemm("experts.w13", lambda: torch._grouped_mm(xs, w13.transpose(-2, -1), offs=offs))
            a = self.F.silu(h[:, :i]) * h[:, i:]
            y = p.gemm("experts.w2", lambda: torch._grouped_mm(a, w2.transpose(-2, -1), offs=offs))
        else:
            sorted_ids = flat[order].tolist()
            y = torch.empty(T * s.topk, s.hidden, device=x.device, dtype=self.dtype)

            def loop(which, inp):
                out = []
                b = 0
                while b < len(sorted_ids):
                    e = sorted_ids[b]
                    n = b
                    while n < len(sorted_ids) and sorted_ids[n] == e:
                        n += 1
                    wt = w13[e] if which == 13 else w2[e]
                    out.append(self.F.linear(inp[b:n], wt))
                    b = n
                return torch.cat(out)
            h = p.gemm("experts.w13", lambda: loop(13, xs))
            a = self.F.silu(h[:, :i]) * h[:, i:]
            y = p.gemm("experts.w2", lambda: loop(2, a))
        y = y * w.view(-1)[order].unsqueeze(-1)
        out = torch.zeros(T, s.hidden, device=x.device, dtype=self.dtype).index_add_(0, tok, y)
        if s.shared:
            out = out + self.mlp(p, "shared", x, L)
        return out

    def forward(self, ids, pos, caches, rows=None, prefill_row=None, p=None, segs=None):
        """Runs the model over ids (one token per decode row, one sequence's
        prompt, or a mixed batch: decode rows then prefill chunks, segs) and
        returns the greedy next token of each decode row and of each chunk's
        last position (a mixed batch), or of the prompt's last position."""
        p = p or Probe()
        torch = self.torch
        h = self.embed(p, ids)
        for li, L in enumerate(self.layers):
            x = self.rms(h, L["ln1"])
            h = h + self.attention(p, L, x, pos, caches[li], rows, prefill_row, segs)
            x = self.rms(h, L["ln2"])
            if self.s.is_moe(li):
                y = self.moe(p, x, L)
            else:
                y = self.mlp(p, "dense", x, L)
            h = h + self.all_reduce(p, y)
        if prefill_row is not None:
            h = h[-1:]
        elif segs is not None:
            nd = h.shape[0] - sum(n for _, _, n in segs)
            last, off = [], nd
            for _, _, n in segs:
                off += n
                last.append(off - 1)
            h = torch.cat([h[:nd], h[last]])
        x = self.rms(h, self.top["norm"])
        logits = self.linear(p, "lm_head", x, self.top["lm_head"])  # [T, vl]
        if self.tp > 1:
            logits = p.comm("all_gather", lambda: self._gather(logits))
        return torch.argmax(logits[:, :self.s.vocab], dim=-1)

    def _gather(self, logits):
        torch, dist = self.torch, self.torch.distributed
        T = logits.shape[0]
        if self.cuda:
            out = torch.empty(self.tp * T, self.vl, device=logits.device, dtype=logits.dtype)
            dist.all_gather_into_tensor(out, logits.contiguous(), group=self.group)
            return out.view(self.tp, T, self.vl).transpose(0, 1).reshape(T, self.tp * self.vl)
        parts = [torch.empty_like(logits) for _ in range(self.tp)]
        dist.all_gather(parts, logits.contiguous(), group=self.group)
        return torch.cat(parts, dim=-1)

    def kv_bytes_per_token(self):
        return self.s.layers * (self.s.kv_lora + self.s.rope) * (2 if self.dtype == self.torch.bfloat16 else 4)
