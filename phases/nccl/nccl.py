"""profdeck nccl: time a decode step's collectives, one process per GPU.

Run by profdeck under torchrun, as
`TORCHRUN --standalone --nproc-per-node N --no-python PYTHON -c "$(cat this-file)" ARGS`,
or on several nodes with --nnodes/--node-rank/--master-addr/--master-port
in place of --standalone (one torchrun per node).
Rank 0 prints one JSON object per line on stdout, each with a "type": start,
env, progress, burst, alltoall, error, fatal, done. Every time is the max over
ranks of that rank's figure (NCCL kernels wait for the slowest peer).
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


def ints(s):
    return [int(x) for x in s.split(",") if x.strip()]


def main():
    ap = argparse.ArgumentParser(prog="profdeck-nccl")
    ap.add_argument("--hidden", type=int, required=True)
    ap.add_argument("--count", type=int, required=True, help="all-reduces per decode step")
    ap.add_argument("--batch", type=ints, default=[1, 8, 64, 128])
    ap.add_argument("--a2a-bytes-per-token", type=int, default=0, help="0: no all-to-all")
    ap.add_argument("--tokens", type=ints, default=[1, 2, 4, 8, 16, 32, 64, 128, 256])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-graph", action="store_true")
    args = ap.parse_args()
    emit("start", pid=os.getpid(), ppid=os.getppid())
    import torch
    import torch.distributed as dist

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    try:  # eager communicator creation, so the first timed call pays nothing
        dist.init_process_group("nccl", device_id=dev)
    except TypeError:
        dist.init_process_group("nccl")
    world = dist.get_world_size()
    nccl = ""
    try:
        v = torch.cuda.nccl.version()
        nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception:
        pass
    env = {k: v for k, v in os.environ.items() if k.startswith("NCCL_") or k.startswith("TORCH_SYMM")}
    emit("env", gpu=torch.cuda.get_device_name(local), torch=torch.__version__, cuda=torch.version.cuda or "",
         nccl=nccl, nproc=world, nccl_env=env)

    def maxrank(x):
        t = torch.tensor([x], dtype=torch.float64, device=dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return float(t.item())

    def timed(fn, repeats):
        """Median over repeats of one call of fn, in ms, max over ranks."""
        times = []
        for _ in range(repeats):
            dist.barrier()
            torch.cuda.synchronize()
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
        return maxrank(statistics.median(times))

    def in_step(x, m):
        """The burst's all-reduces between GEMMs that evict L2, as in a
        decode step: graph(GEMM, all-reduce)xCOUNT less graph(GEMM)xCOUNT,
        in ms; None when it cannot be captured."""
        a = torch.randn(m, args.hidden, dtype=torch.bfloat16, device=dev)
        w = torch.randn(args.hidden, args.hidden, dtype=torch.bfloat16, device=dev)
        y = torch.empty(m, args.hidden, dtype=torch.bfloat16, device=dev)
        side = torch.cuda.Stream()  # lazy cuBLAS and NCCL set-up outside any capture
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                torch.matmul(a, w, out=y)
                dist.all_reduce(x)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graphs = []
        for with_ar in (True, False):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(args.count):
                    torch.matmul(a, w, out=y)
                    if with_ar:
                        dist.all_reduce(x)
            g.replay()
            torch.cuda.synchronize()
            graphs.append(g)
        both = timed(graphs[0].replay, args.repeats)
        gemm = timed(graphs[1].replay, args.repeats)
        del graphs, a, w, y
        return both - gemm if both > gemm else None

    total = len(args.batch) + (len(args.tokens) if args.a2a_bytes_per_token > 0 else 0)
    done = 0
    # One rank: NCCL moves no data and a captured burst is empty, so only
    # the eager launch cost is measured.
    graph_ok = not args.no_graph and world > 1
    step_ok = graph_ok
    for m in args.batch:
        emit("progress", done=done, total=total, text="all-reduce burst M=%d" % m)
        x = torch.randn(m, args.hidden, dtype=torch.bfloat16, device=dev) / world
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()

        def burst():
            for _ in range(args.count):
                dist.all_reduce(x)

        eager = timed(burst, args.repeats)
        out = dict(m=m, count=args.count, bytes=m * args.hidden * 2, total_ms=eager,
                   per_op_us=eager * 1e3 / args.count, nproc=world)
        if graph_ok:
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    dist.all_reduce(x)
                torch.cuda.current_stream().wait_stream(side)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(args.count):
                        dist.all_reduce(x)
                g.replay()
                torch.cuda.synchronize()
                gms = timed(g.replay, args.repeats)
                out.update(graph_ms=gms, graph_per_op_us=gms * 1e3 / args.count)
                del g
                if step_ok:
                    try:
                        step = in_step(x, m)
                    except Exception as e:
                        step_ok, step = False, None
                        emit("error", what="all-reduces between GEMMs in a CUDA graph",
                             error=(str(e).splitlines() or [type(e).__name__])[0])
                    if step is not None:
                        out.update(in_step_ms=step, in_step_per_op_us=step * 1e3 / args.count)
            except Exception as e:
                graph_ok = False
                emit("error", what="cuda graph capture of all_reduce", error=(str(e).splitlines() or [type(e).__name__])[0])
        emit("burst", **out)
        done += 1
        del x

    if args.a2a_bytes_per_token > 0:
        for t in args.tokens:
            emit("progress", done=done, total=total, text="all-to-all T=%d" % t)
            n = t * args.a2a_bytes_per_token // 2
            n = (n + world - 1) // world * world
            inp = torch.randn(n, dtype=torch.bfloat16, device=dev)
            out_t = torch.empty_like(inp)
            for _ in range(3):
                dist.all_to_all_single(out_t, inp)
            torch.cuda.synchronize()

            def loop():
                for _ in range(args.iters):
                    dist.all_to_all_single(out_t, inp)

            ms = timed(loop, max(3, args.repeats // 2)) / args.iters
            nbytes = n * 2
            algbw = nbytes / (ms / 1e3) / 1e9 if ms > 0 else 0.0  # one rank moves nothing
            local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
            emit("alltoall", tokens_per_gpu=t, bytes=nbytes, us=ms * 1e3, algbw_gbs=algbw,
                 busbw_gbs=algbw * (world - 1) / world, nproc=world,
                 nodes=max(1, world // max(1, local_world)),
                 off_node_bytes=nbytes * (world - local_world) // world)
            done += 1
            del inp, out_t
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
