"""The OpenAI-compatible HTTP side of the rig (aiohttp), with vLLM's
endpoints, error bodies, SSE chunks and Prometheus metric names."""
import asyncio
import json
import os
import signal
import time

from aiohttp import web

from engine import Request
import truth_stats
from runner import OP_PROF_START, OP_PROF_STOP, OP_TRUTH, capture_sizes, vlog


def _aiohttp_at_least(major, minor):
    import aiohttp
    try:
        v = tuple(int(x) for x in aiohttp.__version__.split(".")[:2])
    except ValueError:
        return False
    return v >= (major, minor)


class Api:
    """The server's handlers; the engine runs on its own thread."""

    def __init__(self, args, cfg, runner, eng, tokenize, token_text):
        self.args, self.runner, self.eng = args, runner, eng
        self.tokenize, self.token_text = tokenize, token_text
        self.vocab = cfg["vocab_size"]
        self.model = args.served_model_name
        self.counter = 0

    @staticmethod
    def err(code, typ, msg):
        return web.json_response({"object": "error", "message": msg, "type": typ, "param": None, "code": code}, status=code)

    def authed(self, request):
        k = self.args.api_key
        return not k or request.headers.get("Authorization", "") == "Bearer " + k

    async def health(self, request):
        if self.eng.error:
            return web.Response(status=503, text=self.eng.error)
        return web.Response(status=200)

    async def version(self, request):
        return web.json_response({"version": "fieldrig-0.1"})

    async def models(self, request):
        if not self.authed(request):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return web.json_response({"object": "list", "data": [{
            "id": self.model, "object": "model", "created": int(time.time()), "owned_by": "fieldrig", "root": self.args.model,
            "max_model_len": self.args.max_model_len}]})

    def prompt_of(self, body, chat):
        tok, vocab = self.tokenize, self.vocab
        if chat:
            msgs = body.get("messages")
            if not isinstance(msgs, list) or not msgs:
                raise ValueError("messages: a non-empty list is required")
            ids = []
            for m in msgs:
                c = m.get("content", "") if isinstance(m, dict) else ""
                if isinstance(c, list):
                    c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
                ids += tok("<|%s|> %s" % (m.get("role", "user") if isinstance(m, dict) else "user", c), vocab)
            return ids + tok("<|assistant|>", vocab)
        p = body.get("prompt")
        if isinstance(p, str):
            return tok(p, vocab)
        if isinstance(p, list) and p and all(isinstance(x, int) for x in p):
            if any(x < 0 or x >= vocab for x in p):
                raise ValueError("prompt: token id out of range [0, %d)" % vocab)
            return list(p)
        if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
            return tok(p[0], vocab)
        raise ValueError("prompt: a string, a one-string list or a list of token ids is required")

    async def tokenize_h(self, request):
        try:
            body = await request.json()
            ids = self.prompt_of(body, "messages" in body)
        except (ValueError, json.JSONDecodeError, AttributeError) as e:
            return self.err(400, "BadRequestError", str(e))
        return web.json_response({"count": len(ids), "max_model_len": self.args.max_model_len, "tokens": ids})

    async def completions(self, request):
        return await self.completion(request, False)

    async def chat_completions(self, request):
        return await self.completion(request, True)

    def _max_tokens(self, body, chat, ids):
        """The request's output length, or an error response."""
        mt = body.get("max_completion_tokens") if chat else None
        if mt is None:
            mt = body.get("max_tokens")
        if mt is None:
            mt = self.args.max_model_len - len(ids) if chat else 16
        if not isinstance(mt, int) or mt < 1 or len(ids) + mt > self.args.max_model_len or not ids:
            return None, self.err(400, "BadRequestError",
                                  "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %s in the completion)." % (
                                      self.args.max_model_len, len(ids) + (mt if isinstance(mt, int) else 0), len(ids), mt))
        return mt, None

    async def completion(self, request, chat):
        if not self.authed(request):
            return web.json_response({"error": "Unauthorized"}, status=401)
        if self.eng.error:
            return self.err(500, "InternalServerError", "the engine failed: " + self.eng.error)
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            ids = self.prompt_of(body, chat)
        except (ValueError, json.JSONDecodeError) as e:
            return self.err(400, "BadRequestError", str(e))
        if body.get("model") != self.model:
            return self.err(404, "NotFoundError", "The model `%s` does not exist." % body.get("model"))
        mt, bad = self._max_tokens(body, chat, ids)
        if bad is not None:
            return bad
        self.counter += 1
        rid = ("chatcmpl-%x" if chat else "cmpl-%x") % (time.time_ns() + self.counter)
        req = Request(rid, ids, mt, asyncio.get_running_loop(), asyncio.Queue())
        self.eng.submit(req)
        st = Stream(self, request, req, chat, body)
        try:
            if not body.get("stream"):
                return await st.whole()
            return await st.sse()
        except (asyncio.CancelledError, ConnectionResetError):
            req.cancelled = True
            raise
        finally:
            if not req.out or len(req.out) < req.max_tokens:
                req.cancelled = True

    async def metrics(self, request):
        return web.Response(text=metrics_text(self.eng, self.args, self.model), content_type="text/plain", charset="utf-8")

    async def start_profile(self, request):
        vlog("APIServer", "Starting profiler...", "api_server.py:950")
        await asyncio.wrap_future(self.eng.control(OP_PROF_START))
        vlog("APIServer", "Profiler started.", "api_server.py:953")
        return web.Response(status=200)

    async def stop_profile(self, request):
        vlog("APIServer", "Stopping profiler...", "api_server.py:964")
        await asyncio.wrap_future(self.eng.control(OP_PROF_STOP))
        vlog("APIServer", "Profiler stopped.", "api_server.py:967")
        return web.Response(status=200)

    async def truth_reset(self, request):
        self.eng.reset_served()
        return web.json_response({"reset": True})

    async def truth(self, request):
        args, eng, runner = self.args, self.eng, self.runner
        try:
            q = request.query.get("m", "")
            ms = [int(x) for x in q.split(",") if x.strip()] if q else capture_sizes(args.max_num_seqs)
            reps = int(request.query.get("reps", args.truth_reps))
            if not ms or any(m < 1 or m > args.max_num_seqs for m in ms) or not 1 <= reps <= 1000:
                raise ValueError
        except ValueError:
            return self.err(400, "BadRequestError", "m: comma-separated batch sizes in 1..%d; reps: 1..1000" % args.max_num_seqs)
        finished = list(eng.finished)
        clean, walls, mixed = dict(eng.clean_period), dict(eng.step_wall), dict(eng.mixed_wall)
        window = {b for f in finished for b in f[2]} | set(mixed)
        ms = sorted(set(ms) | window)
        ranks = await asyncio.wrap_future(eng.control(OP_TRUTH, ms, reps))
        batch = truth_stats.combine_ranks(ranks)
        truth_stats.add_served_steps(batch, eng.served_steps())
        by_m = {b["m"]: b for b in batch}
        served = truth_stats.served_window(finished, by_m, clean, walls, mixed)
        dev = runner.torch.cuda.get_device_name(0) if runner.cuda else "cpu"
        tp = args.tp
        return web.json_response({
            "model": self.model, "tp": tp, "device": dev, "dtype": str(runner.dtype).replace("torch.", ""),
            "moe": runner.moe_impl, "cuda_graphs": bool(runner.graphs),
            "prefill": ("chunked: prefill chunks join the decode batch up to %d tokens per step" % args.max_num_batched_tokens
                        if eng.chunked else "separate: whole prefills between decode steps"),
            "allreduce": ("%s all_reduce (torch.distributed)" % ("NCCL" if runner.cuda else "gloo")) if tp > 1 else "none (tp 1)",
            "allreduce_per_step": 2 * runner.model.s.layers + 1 if tp > 1 else 0,
            "method": truth_stats.METHOD, "served": served, "batch": [truth_stats.rounded(b) for b in batch]})


class Stream:
    """One request's answer: whole, or as SSE chunks (vLLM's shapes)."""

    def __init__(self, api, request, req, chat, body):
        self.api, self.request, self.req, self.chat = api, request, req, chat
        so = body.get("stream_options") or {}
        self.usage = bool(body.get("stream")) and bool(so.get("include_usage"))
        self.continuous = self.usage and bool(so.get("continuous_usage_stats"))
        self.created = int(time.time())
        self.n = len(req.prompt)

    def chunk(self, choices, sent, with_usage):
        d = {"id": self.req.rid, "object": "chat.completion.chunk" if self.chat else "text_completion",
             "created": self.created, "model": self.api.model, "choices": choices}
        if with_usage:
            d["usage"] = {"prompt_tokens": self.n, "total_tokens": self.n + sent, "completion_tokens": sent}
        return b"data: " + json.dumps(d, separators=(",", ":")).encode() + b"\n\n"

    def _gone(self):
        tr = self.request.transport
        if tr is None or tr.is_closing():
            self.req.cancelled = True
            return True
        return False

    async def next_token(self, poll):
        """The next (token, finished), or None once the client has gone
        (aiohttp before 3.9 does not cancel the handler then). A stream
        sees that at its next token; a whole answer, which writes nothing
        until the end, looks every poll seconds."""
        sink = self.req.sink
        while True:
            if self._gone():
                return None
            if not poll:
                got = await sink.get()
                return None if self._gone() else got
            try:
                return await asyncio.wait_for(sink.get(), poll)
            except asyncio.TimeoutError:
                continue

    async def whole(self):
        toks = []
        while True:
            got = await self.next_token(0.5)
            if got is None:
                return web.Response(status=499)
            tok, fin = got
            toks.append(tok)
            if fin:
                break
        text = "".join(self.api.token_text(t) for t in toks)
        choice = {"index": 0, "finish_reason": "length", "logprobs": None}
        if self.chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        return web.json_response({"id": self.req.rid, "object": "chat.completion" if self.chat else "text_completion",
                                  "created": self.created, "model": self.api.model, "choices": [choice],
                                  "usage": {"prompt_tokens": self.n, "completion_tokens": len(toks), "total_tokens": self.n + len(toks)}})

    async def sse(self):
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
        await resp.prepare(self.request)
        sent = 0
        if self.chat:
            await resp.write(self.chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}], 0, self.continuous))
        sink = self.req.sink
        while True:
            got = await self.next_token(0)
            if got is None:
                return resp
            buf = [got]
            fin = got[1]
            while not sink.empty() and not fin:
                buf.append(sink.get_nowait())
                fin = buf[-1][1]
            out = b""
            for tok, f in buf:
                sent += 1
                out += self.chunk([self.choice(tok, f)], sent, self.continuous)
            if fin:
                if self.usage:
                    out += self.chunk([], sent, True)
                out += b"data: [DONE]\n\n"
            await resp.write(out)
            if fin:
                break
        await resp.write_eof()
        return resp

    def choice(self, tok, fin):
        t = self.api.token_text(tok)
        if self.chat:
            return {"index": 0, "delta": {"content": t}, "logprobs": None, "finish_reason": "length" if fin else None}
        return {"index": 0, "text": t, "logprobs": None, "finish_reason": "length" if fin else None, "stop_reason": None}


def metrics_text(eng, args, model):
    """/metrics in Prometheus text, with vLLM's names."""
    lbl = 'engine="0",model_name="%s"' % model
    b = []

    def gauge(name, help_, v):
        b.append("# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n" % (name, help_, name, name, lbl, float(v)))

    def counter_(name, help_, v, extra=""):
        l = extra + "," + lbl if extra else lbl
        b.append("# HELP %s %s\n# TYPE %s counter\n%s_total{%s} %s\n" % (name, help_, name, name, l, float(v)))
    # vLLM V1 counts a request that is still prefilling as running.
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", len(eng.running) + len(eng.prefilling))
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", len(eng.waiting) + eng.inbox.qsize())
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", eng.kv_usage())
    counter_("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 0)
    counter_("vllm:prompt_tokens", "Number of prefill tokens processed.", eng.prompt_tokens)
    counter_("vllm:generation_tokens", "Number of generation tokens processed.", eng.gen_tokens)
    counter_("vllm:request_success", "Count of successfully processed requests.", eng.succeeded, 'finished_reason="length"')
    b.append('# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n'
             'vllm:cache_config_info{block_size="%d",engine="0",num_gpu_blocks="%d"} 1.0\n' % (args.max_model_len, args.max_num_seqs))
    for name, help_, h in (
            ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", eng.ttft),
            ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", eng.e2e),
            ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", eng.itl),
            ("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", eng.tpot),
            ("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", eng.iter_tokens)):
        b.append("# HELP %s %s\n# TYPE %s histogram\n" % (name, help_, name))
        cum = 0
        for bound, c in zip(h.bounds, h.counts):
            cum += c
            b.append('%s_bucket{%s,le="%s"} %s\n' % (name, lbl, float(bound), float(cum)))
        b.append('%s_bucket{%s,le="+Inf"} %s\n%s_count{%s} %s\n%s_sum{%s} %s\n' % (
            name, lbl, float(h.n), name, lbl, float(h.n), name, lbl, h.sum))
    return "".join(b)


def serve(args, cfg, runner, eng, tokenize, token_text):
    api = Api(args, cfg, runner, eng, tokenize, token_text)
    app = web.Application(client_max_size=64 << 20)
    for method, path, h in (("GET", "/health", api.health), ("GET", "/version", api.version), ("GET", "/v1/models", api.models),
                            ("POST", "/tokenize", api.tokenize_h), ("POST", "/v1/completions", api.completions),
                            ("POST", "/v1/chat/completions", api.chat_completions), ("GET", "/metrics", api.metrics),
                            ("GET", "/truth", api.truth), ("POST", "/truth/reset_served", api.truth_reset)):
        app.router.add_route(method, path, h)
    if args.profiler_dir:
        vlog("APIServer", "Torch Profiler is enabled in the API server. This should ONLY be used for local development!",
             "api_server.py:1200", "WARNING")
        vlog("Worker_TP0", "Profiling enabled. Traces will be saved to: %s" % args.profiler_dir, "gpu_worker.py:120")
        app.router.add_post("/start_profile", api.start_profile)
        app.router.add_post("/stop_profile", api.stop_profile)
    asyncio.run(_run(app, args, eng))


async def _run(app, args, eng):
    # A client that leaves cancels its handler: aiohttp 3.9+ is asked to,
    # earlier versions always do (and refuse the argument per connection).
    kw = {"handler_cancellation": True} if _aiohttp_at_least(3, 9) else {}
    runner_ = web.AppRunner(app, access_log=None, **kw)
    await runner_.setup()
    site = web.TCPSite(runner_, args.host, args.port)
    await site.start()
    vlog("APIServer", "Starting vLLM API server 0 on http://%s:%d" % (args.host, args.port), "api_server.py:1880")
    print("INFO:     Started server process [%d]" % os.getpid(), flush=True)
    print("INFO:     Waiting for application startup.", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    while not stop.is_set() and eng.thread.is_alive():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
    vlog("APIServer", "Shutting down", "api_server.py:1900")
    await runner_.cleanup()
