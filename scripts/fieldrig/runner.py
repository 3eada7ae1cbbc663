"""One rank's executor: loads the shards, owns the KV cache and the decode
CUDA graphs, and runs the operations rank 0 broadcasts (prefill, decode, row
moves, the ground-truth pass, the profiler). Log lines follow vLLM's format
so that log readers made for vLLM read them.
"""
import os
import statistics
import sys
import time

import weights
from model import EventProbe, Model

# Operations, broadcast as the first word of a control message.
OP_STOP, OP_PREFILL, OP_DECODE, OP_MOVE, OP_TRUTH, OP_PROF_START, OP_PROF_STOP, OP_MIXED = range(8)

# Cache rows a chunked-prefill engine keeps for requests still prefilling
# (beyond max_num_seqs); a request moves to the decode rows once prefilled.
STAGING_ROWS = 8


def vlog(role, msg, src="fieldrig.py:1", level="INFO"):
    """One vLLM-format log line: (Role pid=N) INFO mm-dd hh:mm:ss [file:line] msg."""
    ts = time.strftime("%m-%d %H:%M:%S")
    sys.stdout.write("(%s pid=%d) %s %s [%s] %s\n" % (role, os.getpid(), level, ts, src, msg))
    sys.stdout.flush()


def fmt_clock(s):
    s = int(s)
    return "%02d:%02d" % (s // 60, s % 60) if s < 3600 else "%d:%02d:%02d" % (s // 3600, s // 60 % 60, s % 60)


def bar_line(desc, n, total, t0, style="completed"):
    """A tqdm progress line as vLLM prints it."""
    el = time.time() - t0
    pct = int(100 * n / total) if total else 100
    if n == 0 or el <= 0:
        tail = "[%s<?, ?it/s]" % fmt_clock(el)
    else:
        rate = n / el
        r = "%5.2fit/s" % rate if rate >= 1 else "%5.2fs/it" % (1 / rate)
        tail = "[%s<%s, %s]" % (fmt_clock(el), fmt_clock((total - n) / rate), r)
    if style == "completed":
        line = "%s: %3d%% Completed | %d/%d %s" % (desc, pct, n, total, tail)
    else:
        fill = int(10 * n / total) if total else 10
        line = "%s: %3d%%|%s%s| %d/%d %s" % (desc, pct, "█" * fill, " " * (10 - fill), n, total, tail)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def msg_words(args):
    """The longest control message: a prefill of a whole context, or a
    mixed step (decode rows, chunk descriptors and a token budget of ids)."""
    mixed = 2 * args.max_num_seqs + 3 * STAGING_ROWS + args.max_num_batched_tokens
    return 8 + max(2 * args.max_num_seqs, args.max_model_len, mixed)


def capture_sizes(max_seqs):
    """vLLM's decode graph sizes: 1, 2, 4, then every 8, up to max_num_seqs."""
    out = [s for s in [1, 2, 4] + list(range(8, max_seqs + 1, 8)) if s <= max_seqs]
    if max_seqs not in out:
        out.append(max_seqs)
    return out


class Runner:
    def __init__(self, torch, args, rank, tp, group, ctrl):
        self.torch, self.args, self.rank, self.tp, self.group, self.ctrl = torch, args, rank, tp, group, ctrl
        self.cuda = args.device == "cuda"
        self.device = torch.device("cuda", rank) if self.cuda else torch.device("cpu")
        self.dtype = torch.bfloat16 if self.cuda else torch.float32
        self.role = "Worker_TP%d" % rank
        self.graphs = {}
        self.prof = None
        self.msg_len = msg_words(args)

    def log(self, msg, src="gpu_model_runner.py:3467", level="INFO", all_ranks=False):
        if self.rank == 0 or all_ranks:
            vlog(self.role, msg, src, level)

    # ---- control messages ------------------------------------------------
    def open_channel(self, path):
        """The shared-memory control channel (rank 0 creates it before the
        other ranks start)."""
        import shmchan
        self.chan = shmchan.Channel(path, self.msg_len, self.tp - 1, self.rank)

    def bcast(self, words):
        """Rank 0: sends one control message to the other ranks."""
        if self.tp > 1:
            self.chan.send(words)

    def recv(self):
        return self.chan.recv()

    # ---- load ----------------------------------------------------------------
    def load(self, cfg):
        torch, args = self.torch, self.args
        t0 = time.time()
        self.log("Starting to load model %s..." % args.model)
        self.model = Model(torch, cfg, self.rank, self.tp, self.device, self.dtype, self.group)
        files = weights.shard_files(args.model)
        desc = "Loading safetensors checkpoint shards"
        if self.rank == 0:
            bar_line(desc, 0, len(files), t0)
        tw = time.time()
        for i, fn in enumerate(files):
            sh = weights.Shard(os.path.join(args.model, fn))
            for name in sh.names():
                self.model.load_tensor(name, sh.get(torch, name))
            sh.close()
            if self.cuda:
                torch.cuda.synchronize(self.device)
            if self.rank == 0:
                bar_line(desc, i + 1, len(files), tw)
        self.model.check_loaded()
        self.moe_impl = self.model.check_grouped()
        self.log("Loading weights took %.2f seconds" % (time.time() - tw), src="default_loader.py:308", all_ranks=True)
        gib = torch.cuda.memory_allocated(self.device) / 2**30 if self.cuda else 0.0
        self.log("Model loading took %.4f GiB memory and %.6f seconds" % (gib, time.time() - t0), src="gpu_model_runner.py:3549", all_ranks=True)
        self.log("MoE: %s" % self.moe_impl, src="fused_moe.py:1")
        return gib

    def alloc_kv(self):
        torch, args, s = self.torch, self.args, self.model.s
        R, L = args.max_num_seqs, args.max_model_len
        if getattr(args, "chunked_prefill", False):
            R += STAGING_ROWS
        self.caches = [torch.zeros(R, L, s.kv_lora + s.rope, device=self.device, dtype=self.dtype) for _ in range(s.layers)]
        gib = sum(c.numel() * c.element_size() for c in self.caches) / 2**30
        self.log("Available KV cache memory: %.2f GiB" % gib, src="gpu_worker.py:356")
        self.log("GPU KV cache size: {:,} tokens".format(R * L), src="kv_cache_utils.py:1307")
        self.log("Maximum concurrency for {:,} tokens per request: {:.2f}x".format(L, float(R)), src="kv_cache_utils.py:1312")
        self.rows = torch.arange(R, device=self.device)
        self.ids = torch.zeros(R, dtype=torch.int64, device=self.device)
        self.pos = torch.zeros(R, dtype=torch.int64, device=self.device)
        self.out = torch.zeros(R, dtype=torch.int64, device=self.device)

    def capture(self):
        """Captures the decode step for every batch size (largest first,
        sharing one memory pool), as vLLM does."""
        torch = self.torch
        sizes = capture_sizes(self.args.max_num_seqs)
        self.sizes = sorted(sizes)
        if not self.cuda or self.args.enforce_eager:
            self.log("CUDA graphs are off (%s): decode runs eagerly" % ("--enforce-eager" if self.cuda else "CPU"),
                     src="gpu_model_runner.py:4100")
            return
        if self.model.grouped is False:
            self.log("CUDA graphs are off: the per-expert MoE loop has data-dependent shapes", src="gpu_model_runner.py:4100", level="WARNING")
            return
        t0 = time.time()
        free0 = torch.cuda.mem_get_info(self.device)[0]
        pool = torch.cuda.graph_pool_handle()
        desc = "Capturing CUDA graphs (decode, FULL)"
        if self.rank == 0:
            bar_line(desc, 0, len(sizes), t0, style="bar")
        side = torch.cuda.Stream(self.device)
        for i, b in enumerate(sorted(sizes, reverse=True)):
            side.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(side):
                for _ in range(2):
                    self._decode_body(b)
            torch.cuda.current_stream(self.device).wait_stream(side)
            torch.cuda.synchronize(self.device)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, capture_error_mode="thread_local"):
                self._decode_body(b)
            torch.cuda.synchronize(self.device)
            self.graphs[b] = g
            if self.rank == 0:
                bar_line(desc, i + 1, len(sizes), t0, style="bar")
        took = (free0 - torch.cuda.mem_get_info(self.device)[0]) / 2**30
        self.log("Graph capturing finished in %d secs, took %.2f GiB" % (round(time.time() - t0), max(took, 0.0)),
                 src="gpu_model_runner.py:4583")

    def _decode_body(self, b, p=None):
        t = self.model.forward(self.ids[:b], self.pos[:b], self.caches, rows=self.rows[:b], p=p)
        self.out[:b].copy_(t)

    def padded(self, b):
        for s in self.sizes:
            if s >= b:
                return s
        return b

    # ---- operations ----------------------------------------------------
    def prefill(self, row, ids):
        torch = self.torch
        t = torch.tensor(ids, dtype=torch.int64, device=self.device)
        pos = torch.arange(len(ids), device=self.device)
        with torch.no_grad():
            tok = self.model.forward(t, pos, self.caches, prefill_row=row)
        return int(tok[0]) if self.rank == 0 else None

    def decode(self, b, ids, pos):
        """One decode step of b rows (rows 0..b-1), padded to a captured size."""
        torch = self.torch
        bp = self.padded(b)
        self.ids[:b].copy_(torch.tensor(ids, dtype=torch.int64), non_blocking=False)
        self.pos[:b].copy_(torch.tensor(pos, dtype=torch.int64), non_blocking=False)
        if bp > b:
            self.pos[b:bp].zero_()
        with torch.no_grad():
            g = self.graphs.get(bp)
            if g is not None:
                g.replay()
            else:
                self._decode_body(bp)
        return self.out[:b].tolist() if self.rank == 0 else None, bp

    def mixed(self, ids, pos, segs):
        """One chunked-prefill step, eagerly: the decode rows 0..nd-1 (ids
        and pos, one token each) and the prefill chunks segs [(row, start,
        token ids)], all tokens through the GEMMs together. Returns the next
        token of each decode row, then of each chunk's last position."""
        torch = self.torch
        nd = len(ids)
        all_ids = list(ids)
        all_pos = list(pos)
        sg = []
        for row, p0, toks in segs:
            all_ids += toks
            all_pos += range(p0, p0 + len(toks))
            sg.append((row, p0, len(toks)))
        t = torch.tensor(all_ids, dtype=torch.int64, device=self.device)
        p = torch.tensor(all_pos, dtype=torch.int64, device=self.device)
        with torch.no_grad():
            out = self.model.forward(t, p, self.caches, rows=self.rows[:nd], segs=sg)
        return out.tolist() if self.rank == 0 else None

    def move(self, src, dst):
        for c in self.caches:
            c[dst].copy_(c[src])

    # ---- ground truth ----------------------------------------------------
    def _barrier(self):
        if self.tp > 1:
            self.torch.distributed.barrier(group=self.ctrl)
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def truth(self, ms, reps):
        """Per batch size M: the graph replay's step time, and an eager step
        with CUDA events around every GEMM and collective (the CPU is given
        a head start with a GPU sleep so launches never gate the GPU)."""
        torch = self.torch
        out = []
        cycles_per_ms = 0
        if self.cuda:
            # Calibrate the GPU sleep with the clocks up (an idle GPU runs
            # slow clocks, and the sleep counts cycles).
            a = torch.randn(4096, 4096, device=self.device, dtype=self.dtype)
            for _ in range(50):
                a @ a
            for _ in range(2):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                torch.cuda._sleep(20_000_000)
                e.record()
                torch.cuda.synchronize(self.device)
                cycles_per_ms = max(cycles_per_ms, 20_000_000 / max(s.elapsed_time(e), 1e-3))
            del a
        with torch.no_grad():
            for m in ms:
                if m > self.args.max_num_seqs:
                    continue
                self.ids[:m].copy_(torch.randint(0, self.model.s.vocab, (m,), generator=torch.Generator().manual_seed(m)))
                self.pos[:m].fill_(min(200, self.args.max_model_len - 1))
                rec = {"m": m}
                g = self.graphs.get(m)
                if g is not None:
                    times = []
                    for _ in range(reps + 2):
                        self._barrier()
                        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        a.record()
                        g.replay()
                        b.record()
                        torch.cuda.synchronize(self.device)
                        times.append(a.elapsed_time(b))
                    rec["graph_step_ms"] = statistics.median(times[2:])
                steps, ars, gathers, gemms, names, ar_ops = [], [], [], [], {}, []
                counts = {}
                for r in range(reps + 2):
                    self._barrier()
                    if self.cuda:
                        torch.cuda._sleep(int(cycles_per_ms * self.args.truth_head_start_ms))
                    p = EventProbe(torch, self.cuda)
                    t0 = p._mark()
                    self._decode_body(m, p)
                    t1 = p._mark()
                    if self.cuda:
                        torch.cuda.synchronize(self.device)
                    if r < 2:
                        continue
                    kinds, per, counts = p.totals()
                    steps.append(p.elapsed_ms(t0, t1))
                    gemms.append(kinds.get("gemm", 0.0))
                    ars.append(per.get(("comm", "all_reduce"), 0.0))
                    gathers.append(per.get(("comm", "all_gather"), 0.0))
                    for (k, n), v in per.items():
                        if k == "gemm":
                            names.setdefault(n, []).append(v)
                    ar_ops.append([p.elapsed_ms(s_, e_) for k, n, s_, e_ in p.recs if n == "all_reduce"])
                med = statistics.median
                rec.update(eager_step_ms=med(steps), allreduce_ms=med(ars), gather_ms=med(gathers), gemm_ms=med(gemms),
                           allreduce_count=counts.get(("comm", "all_reduce"), 0),
                           gemm_ms_by_name={n: round(med(v), 4) for n, v in sorted(names.items())},
                           gemm_calls_by_name={n: c for (k, n), c in sorted(counts.items()) if k == "gemm"})
                # Each all-reduce's time per rep, for the across-rank minimum.
                rec["_ar_ops"] = ar_ops
                out.append(rec)
        if self.tp > 1:
            allr = [None] * self.tp
            self.torch.distributed.all_gather_object(allr, out, group=self.ctrl)
            return allr
        return [out]

    # ---- profiler --------------------------------------------------------
    def prof_start(self):
        torch = self.torch
        acts = [torch.profiler.ProfilerActivity.CPU]
        if self.cuda:
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        self.prof = torch.profiler.profile(activities=acts)
        self.prof.start()
        vlog(self.role, "Profiler started.", "gpu_worker.py:330")
        # The first start initialises CUPTI for a while, longer on one rank
        # than on another: wait here, or the next collective waits instead
        # and the profile books the skew as communication.
        self._barrier()

    def prof_stop(self):
        torch, d = self.torch, self.args.profiler_dir
        if self.prof is None:
            self._barrier()
            return
        self.prof.stop()
        os.makedirs(d, exist_ok=True)
        name = "dp0_pp0_tp%d_dcp0_ep0_rank%d.%d.pt.trace.json" % (self.rank, self.rank, time.time_ns())
        self.prof.export_chrome_trace(os.path.join(d, name))
        sort = "self_cuda_time_total" if self.cuda else "self_cpu_time_total"
        table = self.prof.key_averages().table(sort_by=sort, row_limit=-1, max_name_column_width=120)
        with open(os.path.join(d, "profiler_out_%d.txt" % self.rank), "w") as f:  # noqa: SIM115
            f.write(table)
        if self.rank == 0:
            print(table, flush=True)
        self.prof = None
        vlog(self.role, "Profiler stopped successfully.", "wrapper.py:120")
        self._barrier()  # stop_profile answers once every rank has written its files

    # ---- the other ranks' loop -------------------------------------------
    def follow(self):
        """Ranks other than 0: run what rank 0 broadcasts until OP_STOP."""
        torch = self.torch
        while True:
            w = self.recv()
            op = w[0]
            if op == OP_STOP:
                return
            if op == OP_PREFILL:
                row, n = w[1], w[2]
                self.prefill(row, w[3:3 + n])
            elif op == OP_DECODE:
                b = w[1]
                self.decode(b, w[2:2 + b], w[2 + b:2 + 2 * b])
            elif op == OP_MOVE:
                self.move(w[1], w[2])
            elif op == OP_MIXED:
                nd, ns = w[1], w[2]
                ids, pos = w[3:3 + nd], w[3 + nd:3 + 2 * nd]
                k, segs = 3 + 2 * nd, []
                for _ in range(ns):
                    row, p0, n = w[k], w[k + 1], w[k + 2]
                    segs.append((row, p0, n))
                    k += 3
                toks = []
                for row, p0, n in segs:
                    toks.append((row, p0, w[k:k + n]))
                    k += n
                self.mixed(ids, pos, toks)
            elif op == OP_TRUTH:
                n, reps = w[1], w[2]
                self.truth(w[3:3 + n], reps)
            elif op == OP_PROF_START:
                self.prof_start()
            elif op == OP_PROF_STOP:
                self.prof_stop()
