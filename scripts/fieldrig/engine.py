"""Rank 0's engine: continuous batching up to max_num_seqs, in one of two
modes. By default each iteration admits waiting requests (prefilling each
whole, eagerly, between decode steps) and then runs one decode step of every
running sequence as a CUDA graph replay of the padded batch size. With
--chunked-prefill (as vLLM's V1 engine), prefill chunks join the decode
batch up to --max-num-batched-tokens tokens per step: a step that holds
chunks runs eagerly over all its tokens at once, a step without them
replays the decode graph. Finished sequences leave at once and their cache
row is refilled by moving the last row into it, so the batch always
occupies rows 0..B-1; a request still prefilling in chunked mode holds a
staging row above them.

Every token a running request receives is accounted for (truth_stats.py):
the period since its last token, the prefill wall time between (prefills run
between decode steps), and whether its step was mixed (held prefill chunks).
"""
import concurrent.futures
import queue
import statistics
import threading
import time

from runner import OP_DECODE, OP_MIXED, OP_MOVE, OP_PREFILL, OP_PROF_START, OP_PROF_STOP, OP_STOP, OP_TRUTH, STAGING_ROWS, vlog


class Hist:
    """A Prometheus histogram with vLLM's bucket bounds."""

    def __init__(self, *bounds):
        self.bounds, self.counts, self.sum, self.n = bounds, [0] * len(bounds), 0.0, 0

    def observe(self, v):
        self.sum += v
        self.n += 1
        for i, b in enumerate(self.bounds):
            if v <= b:
                self.counts[i] += 1
                return


class Request:
    def __init__(self, rid, prompt_ids, max_tokens, loop, sink):
        self.rid, self.prompt, self.max_tokens = rid, prompt_ids, max_tokens
        self.loop, self.sink = loop, sink  # sink: asyncio.Queue fed through loop
        self.out = []
        self.arrived = time.time()
        self.first = self.last = None
        self.cancelled = False
        self.row = -1
        self.steps = {}  # padded batch size → decode steps this request took part in
        self.done_prompt = 0  # prompt tokens prefilled (chunked mode)
        # The wait for each token after the first (truth_stats.py): the
        # clock and the engine's prefill wall counter at the last token.
        self.t_last, self.pf_mark = 0.0, 0.0
        self.acct = {"periods": 0, "period_s": 0.0, "prefill_s": 0.0, "decode": {}, "mixed": {}}


class Engine:
    def __init__(self, runner, args):
        self.r, self.args = runner, args
        self.inbox = queue.Queue()
        self.ctl = queue.Queue()
        self.waiting, self.running = [], []
        self.lock = threading.Lock()
        self.prompt_tokens = self.gen_tokens = self.succeeded = self.aborted = 0
        self.ttft = Hist(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560)
        self.e2e = Hist(0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680)
        self.itl = Hist(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80)
        self.tpot = Hist(0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80)
        self.iter_tokens = Hist(1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
        # Wall time of each decode step by padded batch size (bounded).
        self.step_wall = {}
        # Time from the end of one decode step to the end of the next, by
        # padded batch size: the step plus whatever ran between (prefills,
        # scheduling), which is what each running sequence waits per token.
        self.step_period = {}
        self.last_decode_end, self.last_batch = 0.0, set()
        self.chunked = bool(getattr(args, "chunked_prefill", False))
        self.prefilling = []  # chunked mode: admitted, not yet fully prefilled
        self.free_staging = list(range(args.max_num_seqs, args.max_num_seqs + STAGING_ROWS))
        # Wall seconds of prefills run between decode steps, cumulative.
        self.pf_cum = 0.0
        # Wall of decode-only steps and of mixed steps, and the periods
        # with no prefill between ("clean"), by padded decode batch size.
        self.clean_period, self.mixed_wall = {}, {}
        # Requests finished since the last reset: (TPOT s, tokens after the
        # first, {padded batch size: decode steps}).
        self.finished = []
        self.steps = 0
        self.stats_t, self.stats_prompt, self.stats_gen = time.time(), 0, 0
        self.error = None
        self.thread = threading.Thread(target=self._main, name="engine", daemon=True)

    def start(self):
        self.thread.start()

    # ---- called from the HTTP thread -----------------------------------
    def submit(self, req):
        self.inbox.put(req)

    def control(self, op, *args):
        """Runs op on the engine thread between iterations; returns a future."""
        fut = concurrent.futures.Future()
        self.ctl.put((op, args, fut))
        return fut

    def kv_usage(self):
        with self.lock:
            used = sum(len(q.prompt) + len(q.out) for q in self.running)
        return used / float(self.args.max_num_seqs * self.args.max_model_len)

    # ---- engine thread ---------------------------------------------------
    def _main(self):
        self.r.torch.set_grad_enabled(False)  # per thread
        try:
            self._loop()
        except SystemExit:
            return
        except BaseException as e:  # the server answers 500s from now on
            self.error = "%s: %s" % (type(e).__name__, e)
            vlog("EngineCore_DP0", "EngineCore encountered a fatal error: " + self.error, "core.py:700", "ERROR")
            raise

    def _loop(self):
        torch = self.r.torch
        while True:
            self._controls()
            idle = not self.waiting and not self.running
            try:
                while True:
                    self.waiting.append(self.inbox.get(timeout=0.05) if idle else self.inbox.get_nowait())
                    idle = False
            except queue.Empty:
                pass
            self._drop_cancelled()
            if self.chunked:
                self._step_chunked()
            else:
                self._admit()
                if self.running:
                    self._decode()
            self._stats_log()

    def _controls(self):
        while True:
            try:
                op, args, fut = self.ctl.get_nowait()
            except queue.Empty:
                return
            try:
                if op == OP_TRUTH:
                    if self.running or self.waiting or self.prefilling:
                        # Wait for the batch to drain: the pass writes rows 0..M-1.
                        self.ctl.put((op, args, fut))
                        return
                    ms, reps = args
                    self.r.bcast([OP_TRUTH, len(ms), reps] + list(ms))
                    fut.set_result(self.r.truth(ms, reps))
                elif op == OP_PROF_START:
                    vlog("EngineCore_DP0", "Starting profiler...", "api_server.py:950")
                    self.r.bcast([OP_PROF_START])
                    self.r.prof_start()
                    fut.set_result(True)
                elif op == OP_PROF_STOP:
                    self.r.bcast([OP_PROF_STOP])
                    self.r.prof_stop()
                    fut.set_result(True)
                elif op == OP_STOP:
                    self.r.bcast([OP_STOP])
                    fut.set_result(True)
                    raise SystemExit(0)
            except SystemExit:
                raise
            except BaseException as e:
                fut.set_exception(e)

    def _deliver(self, batch):
        """Hands (request, token or None, finished) to the HTTP side."""
        by_loop = {}
        for req, tok, fin in batch:
            by_loop.setdefault(req.loop, []).append((req.sink, tok, fin))
        for loop, items in by_loop.items():
            loop.call_soon_threadsafe(_put_all, items)

    def _drop_cancelled(self):
        keep = []
        for q in self.waiting:
            if q.cancelled:
                self.aborted += 1
            else:
                keep.append(q)
        self.waiting = keep
        for q in list(self.prefilling):
            if q.cancelled:
                self.aborted += 1
                self.prefilling.remove(q)
                self.free_staging.append(q.row)
        for q in list(self.running):
            if q.cancelled:
                self.aborted += 1
                self._release(q)

    def _release(self, q):
        with self.lock:
            last = self.running[-1]
            if last is not q:
                self.r.bcast([OP_MOVE, last.row, q.row])
                self.r.move(last.row, q.row)
                last.row = q.row
                self.running[q.row] = last
            self.running.pop()

    def _admit(self):
        budget = self.args.max_num_batched_tokens
        out = []
        while self.waiting and len(self.running) < self.args.max_num_seqs and budget > 0:
            q = self.waiting.pop(0)
            budget -= len(q.prompt)
            q.row = len(self.running)
            t0 = time.perf_counter()
            self.r.bcast([OP_PREFILL, q.row, len(q.prompt)] + q.prompt)
            tok = self.r.prefill(q.row, q.prompt)
            self.pf_cum += time.perf_counter() - t0
            self.steps += 1
            self.iter_tokens.observe(len(q.prompt))
            self.prompt_tokens += len(q.prompt)
            self.stats_prompt += len(q.prompt)
            q.out.append(tok)
            self.gen_tokens += 1
            self.stats_gen += 1
            fin = len(q.out) >= q.max_tokens
            out.append((q, tok, fin))
            if not fin:
                with self.lock:
                    self.running.append(q)
        if out:
            self._first_tokens(out)
            self._deliver(out)

    def _first_tokens(self, out):
        """Marks the pass's first tokens as sent together at its end, as a
        client receives them: a request's TTFT, and its first period's
        start, hold the prefills run after its own in the same pass."""
        end, now = time.perf_counter(), time.time()
        for q, _, fin in out:
            q.t_last, q.pf_mark = end, self.pf_cum
            q.first = q.last = now
            self.ttft.observe(now - q.arrived)
            if fin:
                self._finish(q, now)

    def _decode(self):
        b = len(self.running)
        ids = [q.out[-1] for q in self.running]
        pos = [len(q.prompt) + len(q.out) - 1 for q in self.running]
        t0 = time.perf_counter()
        self.r.bcast([OP_DECODE, b] + ids + pos)
        toks, bp = self.r.decode(b, ids, pos)
        wall = time.perf_counter() - t0
        _bounded(self.step_wall, bp, wall)
        end = time.perf_counter()
        self._account(self.running, end, bp, None)
        ids_now = {id(q) for q in self.running}
        # A period counts when some sequence of this step was in the last
        # one: the time it waited for its next token.
        if self.last_decode_end and ids_now & self.last_batch:
            per = self.step_period.setdefault(bp, [])
            if len(per) >= 4096:
                del per[:2048]
            per.append(end - self.last_decode_end)
        self.last_decode_end, self.last_batch = end, ids_now
        self.steps += 1
        self.iter_tokens.observe(b)
        now = time.time()
        out, done = self._decoded(toks, bp, now)
        self._deliver(out)
        for q in done:
            self._release(q)
            self._finish(q, now)

    def _decoded(self, toks, bp, now):
        """Gives each running request its decoded token (one per request,
        in order) at padded batch size bp: returns the (request, token,
        finished) list to deliver and the requests that finished."""
        out, done = [], []
        for q, tok in zip(self.running, toks):
            q.out.append(tok)
            q.steps[bp] = q.steps.get(bp, 0) + 1
            self.itl.observe(now - q.last)
            q.last = now
            fin = len(q.out) >= q.max_tokens
            out.append((q, tok, fin))
            if fin:
                done.append(q)
        self.gen_tokens += len(out)
        self.stats_gen += len(out)
        return out, done

    def _account(self, batch, end, bp, mixed_wall):
        """Books each request's wait for this token: the period since its
        last one, the prefills run between, and the step's kind."""
        for q in batch:
            if q.t_last:
                a = q.acct
                per = end - q.t_last
                pf = self.pf_cum - q.pf_mark
                a["periods"] += 1
                a["period_s"] += per
                a["prefill_s"] += pf
                if mixed_wall is None:
                    a["decode"][bp] = a["decode"].get(bp, 0) + 1
                    if pf == 0:
                        _bounded(self.clean_period, bp, per)
                else:
                    m = a["mixed"].setdefault(bp, [0, 0.0])
                    m[0] += 1
                    m[1] += mixed_wall
            q.t_last, q.pf_mark = end, self.pf_cum

    # ---- chunked prefill -------------------------------------------------
    def _step_chunked(self):
        """One step as vLLM V1 schedules it: every running request's decode
        token, then prefill chunks (oldest first) up to the token budget."""
        a = self.args
        while (self.waiting and self.free_staging and
               len(self.running) + len(self.prefilling) < a.max_num_seqs):
            q = self.waiting.pop(0)
            q.row = self.free_staging.pop(0)
            self.prefilling.append(q)
        budget = a.max_num_batched_tokens - len(self.running)
        chunks = []
        for q in self.prefilling:
            if budget <= 0:
                break
            n = min(budget, len(q.prompt) - q.done_prompt)
            chunks.append((q, q.done_prompt, n))
            budget -= n
        if not chunks:
            if self.running:
                self._decode()
            return
        self._mixed(chunks)

    def _mixed(self, chunks):
        b = len(self.running)
        bp = self.r.padded(b) if b else 0
        ids = [q.out[-1] for q in self.running]
        pos = [len(q.prompt) + len(q.out) - 1 for q in self.running]
        segs = [(q.row, p0, q.prompt[p0:p0 + n]) for q, p0, n in chunks]
        msg = [OP_MIXED, b, len(segs)] + ids + pos
        for row, p0, toks in segs:
            msg += [row, p0, len(toks)]
        for _, _, toks in segs:
            msg += toks
        t0 = time.perf_counter()
        self.r.bcast(msg)
        toks = self.r.mixed(ids, pos, segs)
        end = time.perf_counter()
        wall = end - t0
        ntok = b + sum(n for _, _, n in chunks)
        self.steps += 1
        self.iter_tokens.observe(ntok)
        if b:
            _bounded(self.mixed_wall, bp, wall)
            self._account(self.running, end, bp, wall)
        now = time.time()
        out, done = self._decoded(toks[:b], bp, now)
        prefilled = []
        for (q, p0, n), tok in zip(chunks, toks[b:]):
            q.done_prompt += n
            self.prompt_tokens += n
            self.stats_prompt += n
            if q.done_prompt < len(q.prompt):
                continue
            q.first = q.last = now
            q.t_last, q.pf_mark = end, self.pf_cum
            q.out.append(tok)
            self.gen_tokens += 1
            self.stats_gen += 1
            self.ttft.observe(now - q.arrived)
            fin = len(q.out) >= q.max_tokens
            out.append((q, tok, fin))
            prefilled.append((q, fin))
        self._deliver(out)
        for q in done:
            self._release(q)
            self._finish(q, now)
        for q, fin in prefilled:
            self.prefilling.remove(q)
            staging = q.row
            if fin:
                self._finish(q, now)
            else:
                with self.lock:
                    q.row = len(self.running)
                    self.r.bcast([OP_MOVE, staging, q.row])
                    self.r.move(staging, q.row)
                    self.running.append(q)
            self.free_staging.append(staging)

    def _finish(self, q, now):
        self.succeeded += 1
        self.e2e.observe(now - q.arrived)
        if len(q.out) > 1:
            tpot = (now - q.first) / (len(q.out) - 1)
            self.tpot.observe(tpot)
            if len(self.finished) < 100000:
                self.finished.append((tpot, len(q.out) - 1, q.steps, q.acct))

    def _stats_log(self):
        now = time.time()
        el = now - self.stats_t
        if el < 10:
            return
        if self.stats_prompt or self.stats_gen or self.running:
            vlog("APIServer", "Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, "
                 "Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%" % (
                     self.stats_prompt / el, self.stats_gen / el, len(self.running), len(self.waiting), 100 * self.kv_usage()),
                 "loggers.py:271")
        self.stats_t, self.stats_prompt, self.stats_gen = now, 0, 0

    def reset_served(self):
        self.step_wall, self.step_period, self.finished = {}, {}, []
        self.clean_period, self.mixed_wall = {}, {}

    def served_steps(self):
        """Median wall time of the decode steps served, by padded batch size."""
        periods = {b: statistics.mean(v) * 1e3 for b, v in list(self.step_period.items()) if v}
        return {b: (statistics.median(v) * 1e3, len(v), periods.get(b, 0.0)) for b, v in list(self.step_wall.items()) if v}


def _bounded(d, key, v):
    """Appends v to d[key], keeping the list bounded."""
    w = d.setdefault(key, [])
    if len(w) >= 4096:
        del w[:2048]
    w.append(v)


def _put_all(items):
    for sink, tok, fin in items:
        sink.put_nowait((tok, fin))
