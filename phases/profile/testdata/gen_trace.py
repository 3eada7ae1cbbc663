"""Generate a small real torch.profiler capture for profdeck's parser tests.

Runs a few decode-step-shaped operations on one GPU (bf16 matmuls at
Kimi-K2.5 TP8 widths, scaled-dot-product attention over a short KV cache, a
router top-k with a softmax, batched expert matmuls, and torch.distributed
all_reduce in a world of size 1), profiles them with torch.profiler, and
writes to the folder given as the only argument:

  trace.json        chrome trace (export_chrome_trace)
  trace.json.gz     the same, gzipped
  key_averages.txt  key_averages().table(sort_by="self_cuda_time_total", row_limit=-1)
  key_averages_top15.txt  the same with row_limit=15 (rows cut, footer total kept)
  meta.txt          torch, CUDA, NCCL and device versions

Under torchrun (WORLD_SIZE > 1) every rank runs the step with real NCCL
all-reduces across the GPUs, and rank 0 writes the same files with a
"-tpN" suffix (trace-tp2.json.gz, key_averages-tp2.txt, meta-tp2.txt).

Usage: python3 gen_trace.py OUTDIR
       torchrun --nproc_per_node 2 gen_trace.py OUTDIR
"""
import gzip
import os
import shutil
import sys
import time

# Keep NVLink multicast off (shared machine).
os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function

out = sys.argv[1] if len(sys.argv) > 1 else "."
os.makedirs(out, exist_ok=True)
world = int(os.environ.get("WORLD_SIZE", "1"))
rank = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))
dev = torch.device("cuda", local_rank)
torch.cuda.set_device(dev)
bf16 = torch.bfloat16
suffix = "" if world == 1 else "-tp%d" % world

backend = "nccl"
if world > 1:
    dist.init_process_group("nccl", device_id=dev)  # env:// from torchrun
else:
    try:
        dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29517", rank=0, world_size=1,
                                device_id=dev)
    except Exception as e:  # noqa: BLE001
        print("nccl init failed, using gloo:", e, flush=True)
        backend = "gloo"
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29518", rank=0, world_size=1)

torch.manual_seed(0)
T, H = 8, 7168            # decode batch of 8 tokens, Kimi-K2.5 hidden size
HEADS, HD, KV = 16, 128, 1024  # 128 heads / TP8, head dim, cached tokens
E, TOPK, MI = 384, 8, 256  # experts, top-k, expert intermediate / TP8

x = torch.randn(T, H, dtype=bf16, device=dev)
w_qa = torch.randn(H, 2112, dtype=bf16, device=dev) * 0.01
w_q = torch.randn(2112, HEADS * HD, dtype=bf16, device=dev) * 0.01
k = torch.randn(T, HEADS, KV, HD, dtype=bf16, device=dev)
v = torch.randn(T, HEADS, KV, HD, dtype=bf16, device=dev)
w_o = torch.randn(HEADS * HD, H, dtype=bf16, device=dev) * 0.01
w_r = torch.randn(H, E, dtype=bf16, device=dev) * 0.01
w_up = torch.randn(TOPK, H, 2 * MI, dtype=bf16, device=dev) * 0.01
w_down = torch.randn(TOPK, MI, H, dtype=bf16, device=dev) * 0.01


def step(h):
    a = h @ w_qa
    q = (a @ w_q).view(T, HEADS, 1, HD)
    att = F.scaled_dot_product_attention(q, k, v)
    o = att.reshape(T, HEADS * HD) @ w_o
    if backend == "nccl":
        dist.all_reduce(o)
    else:
        o_cpu = o.float().cpu()
        dist.all_reduce(o_cpu)
        o = o_cpu.to(dev, bf16)
    h = h + o
    logits = h @ w_r
    probs = torch.softmax(logits.float(), dim=-1)
    topv, topi = torch.topk(probs, TOPK, dim=-1)
    hb = h.unsqueeze(0).expand(TOPK, T, H)
    up = torch.bmm(hb, w_up)
    g, u = up.chunk(2, dim=-1)
    act = F.silu(g) * u
    down = torch.bmm(act, w_down)
    moe = (down * topv.t().unsqueeze(-1).to(bf16)).sum(0)
    if backend == "nccl":
        dist.all_reduce(moe)
    return h + moe


# Warm up: first calls pay for communicator creation and kernel selection.
for _ in range(3):
    y = step(x)
torch.cuda.synchronize()

graph = None
try:
    static_in = x.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            static_out = static_in @ w_qa
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = static_in @ w_qa
    torch.cuda.synchronize()
except Exception as e:  # noqa: BLE001
    print("cuda graph capture skipped:", e, flush=True)
    graph = None

t0 = time.time()
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    h = x
    for i in range(6):
        with record_function("decode_step"):
            h = step(h)
    if graph is not None:
        for _ in range(2):
            graph.replay()
    torch.cuda.synchronize()
print("rank %d profiled in %.3fs" % (rank, time.time() - t0), flush=True)
if rank != 0:
    dist.barrier()
    dist.destroy_process_group()
    sys.exit(0)

trace = os.path.join(out, "trace%s.json" % suffix)
prof.export_chrome_trace(trace)
with open(trace, "rb") as src, gzip.open(trace + ".gz", "wb") as dst:
    shutil.copyfileobj(src, dst)

src_line = ("# source: torch.profiler key_averages().table(sort_by=\"self_cuda_time_total\", row_limit=%s), "
            "torch %s on one %s, %s: 6 decode-step-shaped iterations (bf16 matmuls, SDPA, router top-k, "
            "batched expert matmuls, %s all_reduce in a world of size %d) plus 2 CUDA graph replays; "
            "generated by phases/profile/testdata/gen_trace.py\n")
day = time.strftime("%Y-%m-%d")
name = torch.cuda.get_device_name(0)
for limit, fname in ((-1, "key_averages%s.txt" % suffix), (15, "key_averages_top15%s.txt" % suffix)):
    table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=limit)
    with open(os.path.join(out, fname), "w") as f:
        f.write(src_line % (limit, torch.__version__, name, day, backend, world))
        f.write(table)
        f.write("\n")

with open(os.path.join(out, "meta%s.txt" % suffix), "w") as f:
    f.write("torch %s\ncuda %s\ndevice %s\nbackend %s\nworld_size %d\n" % (torch.__version__, torch.version.cuda, name, backend, world))
    try:
        f.write("nccl %s\n" % (".".join(map(str, torch.cuda.nccl.version())),))
    except Exception:  # noqa: BLE001
        pass
    f.write("graph_replays %d\n" % (2 if graph is not None else 0))
    f.write("trace_bytes %d\n" % os.path.getsize(trace))

print(open(os.path.join(out, "key_averages_top15%s.txt" % suffix)).read())
print(open(os.path.join(out, "meta%s.txt" % suffix)).read())
if world > 1:
    dist.barrier()
dist.destroy_process_group()
