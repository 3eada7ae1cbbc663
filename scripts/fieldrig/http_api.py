"""The OpenAI-compatible HTTP side of the rig (aiohttp), with vLLM's
endpoints, error bodies, SSE chunks and Prometheus metric names."""
import asyncio
import json
import os
import signal
import statistics
import time

from aiohttp import web

from engine import Request
from runner import OP_PROF_START, OP_PROF_STOP, OP_TRUTH, capture_sizes, vlog


def _aiohttp_at_least(major, minor):
    import aiohttp
    try:
        v = tuple(int(x) for x in aiohttp.__version__.split(".")[:2])
    except ValueError:
        return False
    return v >= (major, minor)


def serve(args, cfg, runner, eng, tokenize, token_text):
    vocab = cfg["vocab_size"]
    model = args.served_model_name
    counter = [0]

    def err(code, typ, msg):
        return web.json_response({"object": "error", "message": msg, "type": typ, "param": None, "code": code}, status=code)

    def authed(request):
        return not args.api_key or request.headers.get("Authorization", "") == "Bearer " + args.api_key

    async def health(request):
        if eng.error:
            return web.Response(status=503, text=eng.error)
        return web.Response(status=200)

    async def version(request):
        return web.json_response({"version": "fieldrig-0.1"})

    async def models(request):
        if not authed(request):
            return web.json_response({"error": "Unauthorized"}, status=401)
        return web.json_response({"object": "list", "data": [{
            "id": model, "object": "model", "created": int(time.time()), "owned_by": "fieldrig", "root": args.model,
            "max_model_len": args.max_model_len}]})

    def prompt_of(body, chat):
        if chat:
            msgs = body.get("messages")
            if not isinstance(msgs, list) or not msgs:
                raise ValueError("messages: a non-empty list is required")
            ids = []
            for m in msgs:
                c = m.get("content", "") if isinstance(m, dict) else ""
                if isinstance(c, list):
                    c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
                ids += tokenize("<|%s|> %s" % (m.get("role", "user"), c), vocab)
            return ids + tokenize("<|assistant|>", vocab)
        p = body.get("prompt")
        if isinstance(p, str):
            return tokenize(p, vocab)
        if isinstance(p, list) and p and all(isinstance(x, int) for x in p):
            if any(x < 0 or x >= vocab for x in p):
                raise ValueError("prompt: token id out of range [0, %d)" % vocab)
            return list(p)
        if isinstance(p, list) and len(p) == 1 and isinstance(p[0], str):
            return tokenize(p[0], vocab)
        raise ValueError("prompt: a string, a one-string list or a list of token ids is required")

    async def tokenize_h(request):
        try:
            body = await request.json()
            ids = prompt_of(body, "messages" in body)
        except (ValueError, json.JSONDecodeError) as e:
            return err(400, "BadRequestError", str(e))
        return web.json_response({"count": len(ids), "max_model_len": args.max_model_len, "tokens": ids})

    async def completion(request, chat):
        if not authed(request):
            return web.json_response({"error": "Unauthorized"}, status=401)
        if eng.error:
            return err(500, "InternalServerError", "the engine failed: " + eng.error)
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            ids = prompt_of(body, chat)
        except (ValueError, json.JSONDecodeError) as e:
            return err(400, "BadRequestError", str(e))
        if body.get("model") != model:
            return err(404, "NotFoundError", "The model `%s` does not exist." % body.get("model"))
        mt = body.get("max_completion_tokens") if chat else None
        if mt is None:
            mt = body.get("max_tokens")
        if mt is None:
            mt = args.max_model_len - len(ids) if chat else 16
        if not isinstance(mt, int) or mt < 1 or len(ids) + mt > args.max_model_len or not ids:
            return err(400, "BadRequestError",
                       "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %s in the completion)." % (
                           args.max_model_len, len(ids) + (mt if isinstance(mt, int) else 0), len(ids), mt))
        stream = bool(body.get("stream"))
        so = body.get("stream_options") or {}
        usage = stream and bool(so.get("include_usage"))
        continuous = usage and bool(so.get("continuous_usage_stats"))
        loop = asyncio.get_running_loop()
        sink = asyncio.Queue()
        counter[0] += 1
        rid = ("chatcmpl-%x" if chat else "cmpl-%x") % (time.time_ns() + counter[0])
        req = Request(rid, ids, mt, loop, sink)
        eng.submit(req)
        created = int(time.time())
        obj = "chat.completion.chunk" if chat else "text_completion"
        n = len(ids)

        def chunk(choices, sent, with_usage):
            d = {"id": rid, "object": obj, "created": created, "model": model, "choices": choices}
            if with_usage:
                d["usage"] = {"prompt_tokens": n, "total_tokens": n + sent, "completion_tokens": sent}
            return b"data: " + json.dumps(d, separators=(",", ":")).encode() + b"\n\n"

        async def next_token(poll):
            """The next (token, finished), or None once the client has gone
            (aiohttp before 3.9 does not cancel the handler then). A stream
            sees that at its next token; a whole answer, which writes nothing
            until the end, looks every poll seconds."""
            while True:
                tr = request.transport
                if tr is None or tr.is_closing():
                    req.cancelled = True
                    return None
                if not poll:
                    got = await sink.get()
                    tr = request.transport
                    if tr is None or tr.is_closing():
                        req.cancelled = True
                        return None
                    return got
                try:
                    return await asyncio.wait_for(sink.get(), poll)
                except asyncio.TimeoutError:
                    continue

        try:
            if not stream:
                toks = []
                while True:
                    got = await next_token(0.5)
                    if got is None:
                        return web.Response(status=499)
                    tok, fin = got
                    toks.append(tok)
                    if fin:
                        break
                text = "".join(token_text(t) for t in toks)
                choice = {"index": 0, "finish_reason": "length", "logprobs": None}
                if chat:
                    choice["message"] = {"role": "assistant", "content": text}
                else:
                    choice["text"] = text
                return web.json_response({"id": rid, "object": "chat.completion" if chat else "text_completion",
                                          "created": created, "model": model, "choices": [choice],
                                          "usage": {"prompt_tokens": n, "completion_tokens": len(toks), "total_tokens": n + len(toks)}})
            resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"})
            await resp.prepare(request)
            sent = 0
            if chat:
                await resp.write(chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}], 0, continuous))
            while True:
                got = await next_token(0)
                if got is None:
                    return resp
                tok, fin = got
                buf = [(tok, fin)]
                while not sink.empty() and not fin:
                    tok, fin = sink.get_nowait()
                    buf.append((tok, fin))
                out = b""
                for tok, f in buf:
                    sent += 1
                    t = token_text(tok)
                    if chat:
                        c = {"index": 0, "delta": {"content": t}, "logprobs": None, "finish_reason": "length" if f else None}
                    else:
                        c = {"index": 0, "text": t, "logprobs": None, "finish_reason": "length" if f else None, "stop_reason": None}
                    out += chunk([c], sent, continuous)
                if fin:
                    if usage:
                        out += chunk([], sent, True)
                    out += b"data: [DONE]\n\n"
                await resp.write(out)
                if fin:
                    break
            await resp.write_eof()
            return resp
        except (asyncio.CancelledError, ConnectionResetError):
            req.cancelled = True
            raise
        finally:
            if not req.out or len(req.out) < req.max_tokens:
                req.cancelled = True

    async def completions(request):
        return await completion(request, False)

    async def chat_completions(request):
        return await completion(request, True)

    async def metrics(request):
        lbl = 'engine="0",model_name="%s"' % model
        b = []

        def gauge(name, help_, v):
            b.append("# HELP %s %s\n# TYPE %s gauge\n%s{%s} %s\n" % (name, help_, name, name, lbl, float(v)))

        def counter_(name, help_, v, extra=""):
            l = extra + "," + lbl if extra else lbl
            b.append("# HELP %s %s\n# TYPE %s counter\n%s_total{%s} %s\n" % (name, help_, name, name, l, float(v)))
        gauge("vllm:num_requests_running", "Number of requests in model execution batches.", len(eng.running))
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
        return web.Response(text="".join(b), content_type="text/plain", charset="utf-8")

    async def start_profile(request):
        vlog("APIServer", "Starting profiler...", "api_server.py:950")
        await asyncio.wrap_future(eng.control(OP_PROF_START))
        vlog("APIServer", "Profiler started.", "api_server.py:953")
        return web.Response(status=200)

    async def stop_profile(request):
        vlog("APIServer", "Stopping profiler...", "api_server.py:964")
        await asyncio.wrap_future(eng.control(OP_PROF_STOP))
        vlog("APIServer", "Profiler stopped.", "api_server.py:967")
        return web.Response(status=200)

    async def truth(request):
        try:
            q = request.query.get("m", "")
            ms = [int(x) for x in q.split(",") if x.strip()] if q else capture_sizes(args.max_num_seqs)
            reps = int(request.query.get("reps", args.truth_reps))
            if not ms or any(m < 1 or m > args.max_num_seqs for m in ms) or not 1 <= reps <= 1000:
                raise ValueError
        except ValueError:
            return err(400, "BadRequestError", "m: comma-separated batch sizes in 1..%d; reps: 1..1000" % args.max_num_seqs)
        finished = list(eng.finished)
        window = sorted({b for _, _, st in finished for b in st})
        ms = sorted(set(ms) | set(window))
        ranks = await asyncio.wrap_future(eng.control(OP_TRUTH, ms, reps))
        served = eng.served_steps()
        batch = []
        for i, rec in enumerate(ranks[0]):
            rec = dict(rec)
            others = [r[i] for r in ranks]
            ops = [o.pop("_ar_ops") for o in others]
            rec.pop("_ar_ops", None)
            # Each all-reduce's transfer: the smaller of the ranks' times (the
            # rank that arrives last waits for nobody), summed over the step.
            per_rep = [sum(min(ops[k][rep][j] for k in range(len(ops))) for j in range(len(ops[0][rep])))
                       for rep in range(len(ops[0]))]
            rec["allreduce_ms_rank0"] = rec["allreduce_ms"]
            rec["allreduce_ms"] = statistics.median(per_rep) if per_rep else 0.0
            rec["allreduce_ms_by_rank"] = [round(o["allreduce_ms"], 4) for o in others]
            rec["gemm_ms_by_rank"] = [round(o["gemm_ms"], 4) for o in others]
            comm = rec["allreduce_ms"] + rec["gather_ms"]
            rec["rest_ms"] = rec["eager_step_ms"] - comm - rec["gemm_ms"]
            rec["comm_share"] = comm / rec["eager_step_ms"] if rec["eager_step_ms"] > 0 else 0.0
            if rec.get("graph_step_ms"):
                rec["comm_share_graph"] = min(comm / rec["graph_step_ms"], 1.0)
            if rec["m"] in served:
                rec["served_step_ms"], rec["served_steps"], rec["served_period_ms"] = served[rec["m"]]
                if rec["served_period_ms"] > 0:
                    rec["served_rest_ms"] = rec["served_period_ms"] - comm - rec["gemm_ms"]
            batch.append({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rec.items()})
        # The requests served since the last reset, token by token: each decode
        # step a request took part in costs that batch size's all-reduces and
        # GEMMs; the rest of its TPOT is everything else (prefills of others
        # included), as profdeck's budget splits a level's TPOT.
        by_m = {b["m"]: b for b in batch}
        window_doc = None
        if finished:
            per = {"allreduce_ms": [], "gather_ms": [], "gemm_ms": []}
            steps = tokens = weighted_m = 0
            for _, n, st in finished:
                for k in per:
                    per[k].append(sum(c * by_m[b][k] for b, c in st.items() if b in by_m) / n)
                for b, c in st.items():
                    steps += c
                    weighted_m += b * c
                tokens += n
            tp = sorted(t * 1e3 for t, _, _ in finished)
            med = statistics.median(tp)
            window_doc = {"requests": len(finished), "median_tpot_ms": round(med, 4), "mean_tpot_ms": round(statistics.mean(tp), 4),
                          "mean_padded_batch": round(weighted_m / steps, 2) if steps else 0,
                          "steps_by_batch": {str(b): sum(st.get(b, 0) for _, _, st in finished) for b in window}}
            for k, v in per.items():
                window_doc[k + "_per_token"] = round(statistics.mean(v), 4)
            window_doc["rest_ms_per_token"] = round(med - window_doc["allreduce_ms_per_token"] - window_doc["gather_ms_per_token"]
                                                    - window_doc["gemm_ms_per_token"], 4)
        dev = "cpu"
        if runner.cuda:
            dev = runner.torch.cuda.get_device_name(0)
        return web.json_response({
            "model": model, "tp": args.tp, "device": dev, "dtype": str(runner.dtype).replace("torch.", ""),
            "moe": runner.moe_impl, "cuda_graphs": bool(runner.graphs), "allreduce": ("%s all_reduce (torch.distributed)" % ("NCCL" if runner.cuda else "gloo")) if args.tp > 1 else "none (tp 1)",
            "allreduce_per_step": 2 * runner.model.s.layers + 1 if args.tp > 1 else 0,
            "method": ("per batch size M: graph_step_ms is the captured decode step replayed (CUDA events, median of reps); "
                       "the eager pass runs the same step with CUDA events around every GEMM and collective, after a GPU sleep that "
                       "lets the CPU queue the whole step; *_ms are medians over reps on rank 0 (per-rank figures beside); "
                       "allreduce_ms sums, over the step's all-reduces, the smaller of the ranks' times (the transfer without the wait for "
                       "a late peer; allreduce_ms_rank0 is rank 0's own sum); rest_ms = eager_step_ms - allreduce_ms - gather_ms - gemm_ms; "
                       "served_step_ms is the median wall time of the decode steps served at that padded batch size (scheduling, "
                       "broadcast and the token copy included); served_period_ms is the mean time from one decode step's end to the "
                       "next's at that size, prefills between them included (what a running sequence waits per token, TPOT's "
                       "counterpart); served_rest_ms = served_period_ms - allreduce_ms - gather_ms - gemm_ms. served covers the requests "
                       "finished since POST /truth/reset_served: each decode step a request took part in costs that (padded) batch "
                       "size's allreduce_ms, gather_ms and gemm_ms; *_per_token are means over requests of those sums per token after "
                       "the first, rest_ms_per_token = median_tpot_ms minus them"),
            "served": window_doc, "batch": batch})

    app = web.Application(client_max_size=64 << 20)
    app.router.add_get("/health", health)
    app.router.add_get("/version", version)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/tokenize", tokenize_h)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/truth", truth)

    async def truth_reset(request):
        eng.reset_served()
        return web.json_response({"reset": True})
    app.router.add_post("/truth/reset_served", truth_reset)
    if args.profiler_dir:
        vlog("APIServer", "Torch Profiler is enabled in the API server. This should ONLY be used for local development!",
             "api_server.py:1200", "WARNING")
        vlog("Worker_TP0", "Profiling enabled. Traces will be saved to: %s" % args.profiler_dir, "gpu_worker.py:120")
        app.router.add_post("/start_profile", start_profile)
        app.router.add_post("/stop_profile", stop_profile)

    async def run():
        # A client that leaves cancels its handler: aiohttp 3.9+ is asked to,
        # earlier versions always do (and refuse the argument per connection).
        kw = {"handler_cancellation": True} if _aiohttp_at_least(3, 9) else {}
        runner_ = web.AppRunner(app, access_log=None, **kw)
        await runner_.setup()
        site = web.TCPSite(runner_, args.host, args.port)
        await site.start()
        pid = os.getpid()
        vlog("APIServer", "Starting vLLM API server 0 on http://%s:%d" % (args.host, args.port), "api_server.py:1880")
        print("INFO:     Started server process [%d]" % pid, flush=True)
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

    asyncio.run(run())
