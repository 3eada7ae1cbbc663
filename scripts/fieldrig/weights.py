"""Random, seeded weights written as safetensors shards, and a reader that
maps a shard and hands out (slices of) its tensors.

The safetensors format: 8 bytes little-endian header length, a JSON header
{name: {"dtype", "shape", "data_offsets": [begin, end]}} (offsets relative to
the end of the header), then the raw little-endian data.
"""
import hashlib
import json
import math
import mmap
import os
import queue
import struct
import threading
import time

from modelcfg import Shapes

DTYPES = {"BF16": 2, "F32": 4}


def tensor_list(c):
    """Every (name, shape, kind) of the checkpoint, in layer order. kind
    is "norm" (ones) or "w" (random, scaled by 1/sqrt(fan-in))."""
    s = Shapes(c)
    out = [("model.embed_tokens.weight", (s.vocab, s.hidden), "w")]
    for i in range(s.layers):
        p = "model.layers.%d." % i
        out += [
            (p + "input_layernorm.weight", (s.hidden,), "norm"),
            (p + "self_attn.q_a_proj.weight", (s.q_lora, s.hidden), "w"),
            (p + "self_attn.q_a_layernorm.weight", (s.q_lora,), "norm"),
            (p + "self_attn.q_b_proj.weight", (s.heads * (s.nope + s.rope), s.q_lora), "w"),
            (p + "self_attn.kv_a_proj_with_mqa.weight", (s.kv_lora + s.rope, s.hidden), "w"),
            (p + "self_attn.kv_a_layernorm.weight", (s.kv_lora,), "norm"),
            (p + "self_attn.kv_b_proj.weight", (s.heads * (s.nope + s.v), s.kv_lora), "w"),
            (p + "self_attn.o_proj.weight", (s.hidden, s.heads * s.v), "w"),
            (p + "post_attention_layernorm.weight", (s.hidden,), "norm"),
        ]
        if s.is_moe(i):
            out.append((p + "mlp.gate.weight", (s.experts, s.hidden), "w"))
            for e in range(s.experts):
                q = p + "mlp.experts.%d." % e
                out += [(q + "gate_proj.weight", (s.moe_inter, s.hidden), "w"),
                        (q + "up_proj.weight", (s.moe_inter, s.hidden), "w"),
                        (q + "down_proj.weight", (s.hidden, s.moe_inter), "w")]
            if s.shared:
                w = s.shared * s.moe_inter
                q = p + "mlp.shared_experts."
                out += [(q + "gate_proj.weight", (w, s.hidden), "w"),
                        (q + "up_proj.weight", (w, s.hidden), "w"),
                        (q + "down_proj.weight", (s.hidden, w), "w")]
        else:
            q = p + "mlp."
            out += [(q + "gate_proj.weight", (s.inter, s.hidden), "w"),
                    (q + "up_proj.weight", (s.inter, s.hidden), "w"),
                    (q + "down_proj.weight", (s.hidden, s.inter), "w")]
    out += [("model.norm.weight", (s.hidden,), "norm"), ("lm_head.weight", (s.vocab, s.hidden), "w")]
    return out


def fingerprint(c, seed):
    return hashlib.sha256(json.dumps([c, seed], sort_keys=True).encode()).hexdigest()[:16]


def write(torch, c, out_dir, seed=0, shard_bytes=1 << 30, device="cpu", log=print):
    """Writes config.json, the shards and model.safetensors.index.json into
    out_dir, unless a checkpoint of the same config and seed is there."""
    os.makedirs(out_dir, exist_ok=True)
    fp = fingerprint(c, seed)
    idx_path = os.path.join(out_dir, "model.safetensors.index.json")
    if os.path.exists(idx_path):
        with open(idx_path) as f:
            if json.load(f).get("metadata", {}).get("fingerprint") == fp:
                log("weights in %s are current (fingerprint %s)" % (out_dir, fp))
                return
    t0 = time.time()
    shards = plan_shards(tensor_list(c), shard_bytes)
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    w = _Writer()
    weight_map = {}
    total = 0
    for si, shard in enumerate(shards):
        fname = shard_name(si, len(shards))
        hb, size = shard_header(shard)
        for name, _, _ in shard:
            weight_map[name] = fname
        f = open(os.path.join(out_dir, fname + ".tmp"), "wb")
        w.put(f, struct.pack("<Q", len(hb)) + hb)
        for _, shape, kind in shard:
            w.put(f, tensor_bytes(torch, g, shape, kind, device))
        w.put(f, None)
        total += size
        log("wrote %s (%d tensors, %.2f GiB)" % (fname, len(shard), size / 2**30))
    w.join()
    for si in range(len(shards)):
        fname = shard_name(si, len(shards))
        os.replace(os.path.join(out_dir, fname + ".tmp"), os.path.join(out_dir, fname))
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    with open(idx_path, "w") as f:
        json.dump({"metadata": {"total_size": total, "fingerprint": fp}, "weight_map": weight_map}, f, indent=1)
    log("checkpoint of %.2f GiB in %d shards written in %.1f s" % (total / 2**30, len(shards), time.time() - t0))


def shard_name(i, n):
    """The file name of shard i (from 0) of n."""
    return "model-%05d-of-%05d.safetensors" % (i + 1, n)


def plan_shards(tensors, shard_bytes):
    """Groups the (name, shape, kind) tensors, in order, into shards of at
    most shard_bytes of BF16 (a larger tensor has a shard of its own)."""
    shards, cur, size = [], [], 0
    for name, shape, kind in tensors:
        n = 2 * math.prod(shape)
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append((name, shape, kind))
        size += n
    if cur:
        shards.append(cur)
    return shards


def shard_header(shard):
    """A shard's safetensors header, padded to 8 bytes, and the size of its
    data."""
    header, off = {}, 0
    for name, shape, _ in shard:
        n = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    header["__metadata__"] = {"format": "pt"}
    hb = json.dumps(header, separators=(",", ":")).encode()
    hb += b" " * ((8 - len(hb) % 8) % 8)
    return hb, off


def tensor_bytes(torch, g, shape, kind, device):
    """One tensor's BF16 bytes: ones for a norm, else random from g scaled
    by 1/sqrt(fan-in)."""
    if kind == "norm":
        t = torch.ones(shape, dtype=torch.bfloat16)
    else:
        t = torch.randn(shape, generator=g, device=device, dtype=torch.float32 if device == "cpu" else torch.bfloat16)
        t = t.mul_(1.0 / math.sqrt(shape[-1])).to(torch.bfloat16).cpu()
    return t.contiguous().view(-1).view(torch.int16).numpy().tobytes()


class _Writer:
    """A thread that writes (file, bytes) in order, overlapping the file
    writes with the generation; bytes None closes the file. join raises
    the first error met."""

    def __init__(self):
        self.q = queue.Queue(maxsize=8)
        self.err = []
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def put(self, f, data):
        self.q.put((f, data))

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            f, data = item
            try:
                if data is None:
                    f.close()
                else:
                    f.write(data)
            except Exception as e:  # reported after the join
                self.err.append(e)

    def join(self):
        self.q.put(None)
        self.th.join()
        if self.err:
            raise self.err[0]


class Shard:
    """One mapped safetensors file."""

    def __init__(self, path):
        self.f = open(path, "rb")
        n = struct.unpack("<Q", self.f.read(8))[0]
        if n > 100 << 20:
            raise ValueError("%s: header of %d bytes" % (path, n))
        self.header = json.loads(self.f.read(n))
        self.header.pop("__metadata__", None)
        self.base = 8 + n
        self.mm = mmap.mmap(self.f.fileno(), 0, access=mmap.ACCESS_COPY)

    def names(self):
        return list(self.header)

    def get(self, torch, name):
        h = self.header[name]
        if h["dtype"] not in DTYPES:
            raise ValueError("%s: dtype %s" % (name, h["dtype"]))
        b, e = h["data_offsets"]
        dt = torch.bfloat16 if h["dtype"] == "BF16" else torch.float32
        count = (e - b) // DTYPES[h["dtype"]]
        t = torch.frombuffer(self.mm, dtype=dt, count=count, offset=self.base + b)
        return t.view(h["shape"])

    def close(self):
        self.mm.close()
        self.f.close()


def shard_files(ckpt):
    with open(os.path.join(ckpt, "model.safetensors.index.json")) as f:
        idx = json.load(f)
    return sorted(set(idx["weight_map"].values()))
