"""fieldrig: a small tensor-parallel decode server with vLLM's HTTP API and
log format, for checking profdeck's measurements against an engine whose
inside is known. Rank 0 serves HTTP and schedules; ranks 1..TP-1 follow.

  python3 scripts/fieldrig/prepare.py --preset kimi-scaled --out /tmp/fieldrig-model
  python3 scripts/fieldrig/serve.py --model /tmp/fieldrig-model --tp 2 --port 8000

Endpoints: /v1/completions and /v1/chat/completions (SSE with continuous
usage), /v1/models, /health, /metrics (vLLM names), /tokenize, /version,
/start_profile and /stop_profile (when a profiler directory is set, as
vLLM's VLLM_TORCH_PROFILER_DIR), and /truth: the decode step measured inside
the engine, per batch size.
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# NVLink multicast stays off in every process (children inherit these).
for _k, _v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"), ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ[_k] = _v

import modelcfg  # noqa: E402
from runner import OP_PROF_START, OP_PROF_STOP, OP_STOP, OP_TRUTH, Runner, vlog  # noqa: E402

WORDS = ("the model keeps writing tokens at a steady pace while the batch grows and the step time "
         "stretches under load").split()


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="fieldrig")
    ap.add_argument("--model", required=True, help="checkpoint directory (config.json and safetensors shards)")
    ap.add_argument("--served-model-name", default="")
    ap.add_argument("--tp", "--tensor-parallel-size", dest="tp", type=int, default=1)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--dist-port", type=int, default=0, help="rendezvous port (default: port + 1000)")
    ap.add_argument("--max-num-seqs", type=int, default=128)
    ap.add_argument("--max-model-len", type=int, default=1024)
    ap.add_argument("--max-num-batched-tokens", type=int, default=2048,
                    help="tokens per step: prompt tokens admitted per iteration, or with --chunked-prefill the decode "
                         "tokens and prefill chunks of one step")
    ap.add_argument("--chunked-prefill", "--enable-chunked-prefill", dest="chunked_prefill", action="store_true",
                    help="join prefill chunks to the decode batch up to --max-num-batched-tokens per step (vLLM V1)")
    ap.add_argument("--enforce-eager", action="store_true")
    ap.add_argument("--profiler-dir", default=os.environ.get("VLLM_TORCH_PROFILER_DIR", ""))
    ap.add_argument("--profiler-config", default="", help='vLLM 0.13+ form: {"profiler":"torch","torch_profiler_dir":DIR}')
    ap.add_argument("--truth-reps", type=int, default=10)
    ap.add_argument("--truth-head-start-ms", type=float, default=40)
    ap.add_argument("--api-key", default=os.environ.get("VLLM_API_KEY", ""))
    ap.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.profiler_config:
        try:
            pc = json.loads(a.profiler_config)
            if pc.get("profiler", "torch") != "torch" or not pc.get("torch_profiler_dir"):
                raise ValueError("only the torch profiler with a torch_profiler_dir is supported")
            a.profiler_dir = pc["torch_profiler_dir"]
        except (ValueError, AttributeError) as e:
            ap.error("--profiler-config: %s" % e)
    if not a.served_model_name:
        a.served_model_name = a.model
    if not a.dist_port:
        a.dist_port = a.port + 1000
    if a.max_num_seqs < 1 or a.max_model_len < 2 or a.tp < 1:
        ap.error("--max-num-seqs, --max-model-len and --tp must be positive")
    if a.chunked_prefill and a.max_num_batched_tokens <= a.max_num_seqs:
        ap.error("--max-num-batched-tokens must exceed --max-num-seqs with --chunked-prefill (room for a chunk beside the decodes)")
    return a


def tokenize(text, vocab):
    """One token per word, ids from a hash of the word (never 0 or 1)."""
    return [2 + zlib.crc32(w.encode()) % (vocab - 2) for w in text.split()]


def token_text(tok):
    return " " + WORDS[tok % len(WORDS)]


def init_dist(torch, args):
    if args.tp == 1:
        return None, None
    dist = torch.distributed
    backend = "nccl" if args.device == "cuda" else "gloo"
    kw = {}
    if args.device == "cuda":
        torch.cuda.set_device(args.rank)
        kw["device_id"] = torch.device("cuda", args.rank)
    method = "tcp://127.0.0.1:%d" % args.dist_port
    try:
        dist.init_process_group(backend, init_method=method, rank=args.rank, world_size=args.tp, **kw)
    except TypeError:
        dist.init_process_group(backend, init_method=method, rank=args.rank, world_size=args.tp)
    role = "Worker_TP%d" % args.rank
    vlog(role, "world_size=%d rank=%d local_rank=%d distributed_init_method=%s backend=%s" % (
        args.tp, args.rank, args.rank, method, backend), "parallel_state.py:1200")
    vlog(role, "rank %d in world size %d is assigned as DP rank 0, PP rank 0, TP rank %d, EP rank %d" % (
        args.rank, args.tp, args.rank, args.rank), "parallel_state.py:1408")
    ctrl = dist.new_group(backend="gloo")
    return dist.group.WORLD, ctrl


def main(argv):
    args = parse_args(argv)
    try:
        cfg = modelcfg.load(os.path.join(args.model, "config.json"))
    except (OSError, ValueError) as e:
        print("fieldrig: --model %s: %s" % (args.model, e), file=sys.stderr)
        return 2
    children = []
    shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
    chan_path = os.path.join(shm_dir, "fieldrig-%d.ctl" % args.dist_port)
    if args.rank == 0 and args.tp > 1:
        import shmchan
        from runner import msg_words
        shmchan.Channel.create(chan_path, msg_words(args), args.tp - 1)
    if args.rank == 0:
        vlog("APIServer", "non-default args: %s" % {k: v for k, v in vars(args).items() if k not in ("rank", "api_key")}, "utils.py:253")
        for r in range(1, args.tp):
            children.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + argv + ["--rank", str(r)]))
    import torch
    if args.device == "cuda" and torch.cuda.device_count() < args.tp:
        print("fieldrig: --tp %d needs %d GPUs, this machine has %d" % (args.tp, args.tp, torch.cuda.device_count()), file=sys.stderr)
        return 2
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    t_start = time.time()
    group, ctrl = init_dist(torch, args)
    runner = Runner(torch, args, args.rank, args.tp, group, ctrl)
    if args.tp > 1:
        runner.open_channel(chan_path)
    runner.load(cfg)
    runner.alloc_kv()
    runner.capture()
    if args.rank != 0:
        runner.follow()
        return 0
    vlog("EngineCore_DP0", "init engine (profile, create kv cache, warmup model) took %.2f seconds" % (time.time() - t_start), "core.py:210")
    if args.tp > 1:
        threading.Thread(target=_watch_children, args=(children,), daemon=True).start()
    from engine import Engine
    eng = Engine(runner, args)
    eng.start()
    import http_api
    try:
        http_api.serve(args, cfg, runner, eng, tokenize, token_text)
    finally:
        if eng.thread.is_alive():
            try:
                eng.control(OP_STOP).result(timeout=10)
            except Exception:
                pass
        for c in children:
            if c.poll() is None:
                c.terminate()
    return 0


def _watch_children(children):
    """A rank that dies takes the server down: rank 0 would hang in its next collective."""
    while True:
        for c in children:
            if c.poll() is not None:
                vlog("EngineCore_DP0", "Worker proc rank %d died unexpectedly (exit %s), shutting down." % (
                    children.index(c) + 1, c.returncode), "multiproc_executor.py:150", "ERROR")
                os._exit(1)
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
