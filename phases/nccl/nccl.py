"""profdeck nccl: time a decode step's collectives, one process per GPU.

Run by profdeck under torchrun, as
`TORCHRUN --standalone --nproc-per-node N --no-python PYTHON -c "$(cat this-file)" ARGS`,
or on several nodes with --nnodes/--node-rank/--master-addr/--master-port
in place of --standalone (one torchrun per node).
Rank 0 prints one JSON object per line on stdout, each with a "type": start,
env, progress, burst, alltoall, warning, error, fatal, done. Every time is the
max over ranks of that rank's figure (NCCL kernels wait for the slowest peer).
A figure left out is said in a warning line (its "text", with "m" or
"tokens_per_gpu" when it is about one size), never dropped silently.
(a) burst: the step's COUNT all-reduces of [M, hidden] BF16 back to back,
    eager and captured in a CUDA graph (as vLLM decodes), per M; and in the
    step: each all-reduce after a GEMM of [M, hidden] x [hidden, hidden]
    (weights larger than L2, as the step's own GEMMs stream theirs), the
    graph of both less the graph of the GEMMs alone;
(b) all-to-all: all_to_all_single of T x bytes-per-token per rank, with
    nccl-tests' algbw = bytes/time and busbw = algbw x (n-1)/n.
"""
import argparse
import json
import os
import statistics
import sys
import traceback

RANK = int(os.environ.get("RANK", "0"))


def emit(kind, **kw):
    if RANK != 0:
        return
    kw = dict(type=kind, **kw)
    sys.stdout.write(json.dumps(kw, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def warn(text, **kw):
    """Says aloud why a figure is missing (a "warning" line)."""
    emit("warning", text=text, **kw)


def ints(s):
    return [int(x) for x in s.split(",") if x.strip()]


def first_line(e):
    return (str(e).splitlines() or [type(e).__name__])[0]


def parse_args():
    ap = argparse.ArgumentParser(prog="profdeck-nccl")
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--count", type=int, required=True, help="all-reduces per decode step")
    ap.add_argument("--batch", type=ints, default=[1, 8, 64, 128])
    ap.add_argument("--a2a-bytes-per-token", type=int, default=0, help="0: no all-to-all")
    ap.add_argument("--tokens", type=ints, default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-graph", action="store_true")
    return ap.parse_args()


def nccl_version(torch):
    try:
        v = torch.cuda.nccl.version()
        return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        return ""


def join_ranks(torch, dist):
    """Joins the process group on this rank's GPU and emits the env line.
    Returns (device, world size)."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:  # eager communicator creation, so the first timed call pays nothing
        dist.init_process_group("nccl", device_id=dev)
    except TypeError:
        dist.init_process_group("nccl")
    world = dist.get_world_size()
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_") or k.startswith("TORCH_SYMM")}
    emit("env", gpu=torch.cuda.get_device_name(local), torch=torch.__version__, cuda=torch.version.cuda or "",
         nccl=nccl_version(torch), nproc=world, nccl_env=env)
    return dev, world


class Collectives:
    """Times the step's collectives on this rank's GPU; each time is the
    max over ranks of this rank's figure."""

    def __init__(self, torch, dist, dev, world, args):
        self.torch, self.dist, self.dev, self.world, self.args = torch, dist, dev, world, args
        # One rank: NCCL moves no data and a captured burst is empty, so only
        # the eager launch cost is measured (PROFDECK_NCCL_GRAPH_ONE_RANK=1
        # captures anyway: a test of the capture paths on one GPU).
        one_rank = os.environ.get("PROFDECK_NCCL_GRAPH_ONE_RANK") == "1"
        self.graph_ok = not args.no_graph and (world > 1 or one_rank)
        self.step_ok = self.graph_ok
        self.graph_failed = self.step_failed = 0  # the M where it failed
        if args.no_graph:
            warn("CUDA graph: not captured (--no-graph): no graph or between-GEMMs figure at any M")
        elif not self.graph_ok:
            warn("CUDA graph: not captured on one rank (NCCL moves no data, so a captured burst is empty): "
                 "no graph or between-GEMMs figure at any M")

    def maxrank(self, x):
        t = self.torch.tensor([x], dtype=self.torch.float64, device=self.dev)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return float(t.item())

    def timed(self, fn, repeats):
        """Median over repeats of one call of fn, in ms, max over ranks."""
        torch = self.torch
        times = []
        for _ in range(repeats):
            self.dist.barrier()
            torch.cuda.synchronize()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return self.maxrank(statistics.median(times))

    def on_side_stream(self, fn):
        """Runs fn once on a side stream: lazy cuBLAS and NCCL set-up
        outside any capture."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()

    def capture(self, fn):
        """A CUDA graph of fn, replayed once."""
        torch = self.torch
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn()
        g.replay()
        torch.cuda.synchronize()
        return g

    def all_reduces(self, x):
        for _ in range(self.args.count):
            self.dist.all_reduce(x)

    def in_step(self, x, m):
        """The burst's all-reduces between GEMMs that evict L2, as in a
        decode step: the times of graph(GEMM, all-reduce)xCOUNT and of
        graph(GEMM)xCOUNT, in ms."""
        torch, dist, args, dev = self.torch, self.dist, self.args, self.dev
        a = torch.randn(m, args.hidden, dtype=torch.bfloat16, device=dev)
        w = torch.randn(args.hidden, args.hidden, dtype=torch.bfloat16, device=dev)
        y = torch.empty(m, args.hidden, dtype=torch.bfloat16, device=dev)

        def gemms(with_ar, times):
            for _ in range(times):
                torch.matmul(a, w, out=y)
                if with_ar:
                    dist.all_reduce(x)

        self.on_side_stream(lambda: gemms(True, 3))
        graphs = [self.capture(lambda: gemms(with_ar, args.count)) for with_ar in (True, False)]
        both = self.timed(graphs[0].replay, args.repeats)
        gemm = self.timed(graphs[1].replay, args.repeats)
        del graphs, a, w, y
        return both, gemm

    def add_in_step(self, out, x, m):
        """Adds the burst in the step (the graph with all-reduces less the
        GEMMs alone) to out, or warns why there is none; a failure stops
        trying it."""
        try:
            both, gemm = self.in_step(x, m)
        except Exception as e:
            self.step_ok, self.step_failed = False, m
            emit("error", what="all-reduces between GEMMs in a CUDA graph", error=first_line(e), step_m=m)
            return
        if both > gemm:
            step = both - gemm
            out.update(in_step_ms=step, in_step_per_op_us=step * 1e3 / self.args.count)
            return
        warn("between GEMMs: the graph with all-reduces at M=%d was not slower than the GEMMs alone "
             "(%.3f ms vs %.3f ms): no figure" % (m, both, gemm), m=m)

    def add_graph(self, out, x, m):
        """Adds the captured burst (and the burst in the step) to out; a
        failure stops capturing."""
        args = self.args
        try:
            self.on_side_stream(lambda: self.dist.all_reduce(x))
            g = self.capture(lambda: self.all_reduces(x))
            gms = self.timed(g.replay, args.repeats)
            out.update(graph_ms=gms, graph_per_op_us=gms * 1e3 / args.count)
            del g
            if self.step_ok:
                self.add_in_step(out, x, m)
            elif self.step_failed:
                warn("between GEMMs: not tried at M=%d after its failure at M=%d: no figure" % (m, self.step_failed), m=m)
        except Exception as e:
            self.graph_ok, self.graph_failed = False, m
            emit("error", what="cuda graph capture of all_reduce", error=first_line(e), step_m=m)

    def burst(self, m):
        """Emits the burst line of COUNT all-reduces of [m, hidden]."""
        torch, args = self.torch, self.args
        x = torch.randn(m, args.hidden, dtype=torch.bfloat16, device=self.dev) / self.world
        for _ in range(5):
            self.dist.all_reduce(x)
        torch.cuda.synchronize()
        eager = self.timed(lambda: self.all_reduces(x), args.repeats)
        out = dict(m=m, count=args.count, bytes=m * args.hidden * 2, total_ms=eager,
                   per_op_us=eager * 1e3 / args.count, nproc=self.world)
        if self.graph_ok:
            self.add_graph(out, x, m)
        elif self.graph_failed:
            warn("CUDA graph: not tried at M=%d after its failure at M=%d: no graph or between-GEMMs figure"
                 % (m, self.graph_failed), m=m)
        emit("burst", **out)

    def alltoall(self, t):
        """Emits the all-to-all line of t tokens per GPU."""
        torch, dist, args, world = self.torch, self.dist, self.args, self.world
        n = t * args.a2a_bytes_per_token // 2
        n = (n + world - 1) // world * world
        inp = torch.randn(n, dtype=torch.bfloat16, device=self.dev)
        out_t = torch.empty_like(inp)
        for _ in range(3):
            dist.all_to_all_single(out_t, inp)
        torch.cuda.synchronize()

        def loop():
            for _ in range(args.iters):
                dist.all_to_all_single(out_t, inp)

        ms = self.timed(loop, max(3, args.repeats // 2)) / args.iters
        nbytes = n * 2
        algbw = nbytes / (ms / 1e3) / 1e9 if ms > 0 else 0.0
        if ms <= 0:
            warn("all-to-all at T=%d: timed at 0 us (below the timer's resolution): no bandwidth figure" % t,
                 tokens_per_gpu=t)
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
        emit("alltoall", tokens_per_gpu=t, bytes=nbytes, us=ms * 1e3, algbw_gbs=algbw,
             busbw_gbs=algbw * (world - 1) / world, nproc=world,
             nodes=max(1, world // max(1, local_world)),
             off_node_bytes=nbytes * (world - local_world) // world)


def main():
    args = parse_args()
    emit("start", pid=os.getpid(), ppid=os.getppid())
    import torch
    import torch.distributed as dist

    dev, world = join_ranks(torch, dist)
    coll = Collectives(torch, dist, dev, world, args)
    tokens = args.tokens if args.a2a_bytes_per_token > 0 else []
    total = len(args.batch) + len(tokens)
    done = 0
    for m in args.batch:
        emit("progress", done=done, total=total, text="all-reduce burst M=%d" % m)
        coll.burst(m)
        done += 1
    for t in tokens:
        emit("progress", done=done, total=total, text="all-to-all T=%d" % t)
        coll.alltoall(t)
        done += 1
    emit("done", done=done, total=total)
    dist.barrier()
    dist.destroy_process_group()
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
