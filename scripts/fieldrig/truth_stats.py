"""The statistics behind /truth, apart from the server: pure functions of
what the engine recorded, so they can be tested without a model.

A served token's wait (the period since the request's last token) is split
the way profdeck's budget splits TPOT:

- decode_step: the decode step at the request's padded batch size bp, as a
  step with nothing else going on takes it: the median period between two
  decode-only steps with no prefill between ("clean" periods) at bp, which
  holds the step's device time and the host's time around it (launch,
  scheduling of a quiet step, token copy). Without a clean period at bp the
  median decode-only step wall stands in, then the captured graph's time.
  Its device part is split with the instrumented pass at bp: all-reduce,
  GEMM, logits gather, and the rest of the graph's time (attention, norms,
  routing, sampling); decode_host is decode_step less the graph's time;
- prefill: prefills the request waited for: the wall time of the prefills
  run between its previous step and this one (whole prefills between decode
  steps) plus, when its step held prefill chunks (chunked prefill), that
  step's wall less the decode-only step wall at bp;
- scheduling: the rest of the period (the host's extra work on a busy step:
  admissions, delivering tokens, finishing requests).
"""
import statistics

# The device parts of a decode step taken from the instrumented pass.
DEVICE_KEYS = ("allreduce_ms", "gather_ms", "gemm_ms")


def combine_ranks(ranks):
    """One record per batch size from every rank's truth records: each
    all-reduce's time is the smaller of the ranks' times (the rank that
    arrives last waits for nobody), summed over the step."""
    batch = []
    for i, rec in enumerate(ranks[0]):
        rec = dict(rec)
        others = [r[i] for r in ranks]
        ops = [o.get("_ar_ops", []) for o in others]
        rec.pop("_ar_ops", None)
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
        batch.append(rec)
    return batch


def add_served_steps(batch, served):
    """Adds the served steps' figures (median wall, count, mean period, by
    padded batch size) to the batch records."""
    for rec in batch:
        if rec["m"] not in served:
            continue
        rec["served_step_ms"], rec["served_steps"], rec["served_period_ms"] = served[rec["m"]]
        if rec["served_period_ms"] > 0:
            comm = rec["allreduce_ms"] + rec["gather_ms"]
            rec["served_rest_ms"] = rec["served_period_ms"] - comm - rec["gemm_ms"]


def rounded(d):
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.items()}


def _median_ms(d):
    return {b: statistics.median(v) * 1e3 for b, v in d.items() if v}


def baselines(by_m, clean_period, step_wall):
    """The decode-only period and step wall at each padded batch size (ms),
    and what each came from."""
    period, wall = _median_ms(clean_period), _median_ms(step_wall)
    out = {}
    for b in set(period) | set(wall) | set(by_m):
        g = by_m.get(b, {}).get("graph_step_ms") or by_m.get(b, {}).get("eager_step_ms") or 0.0
        w = wall.get(b, g)
        if b in period:
            out[b] = (period[b], w, "clean period")
        elif b in wall:
            out[b] = (wall[b], w, "decode-only step wall (no clean period)")
        else:
            out[b] = (g, g, "captured graph (no decode-only step served)")
    return out


def split_request(acct, steps, base, by_m):
    """One request's wait per token after the first, in ms, by part; None
    when it has no accounted period."""
    n = acct["periods"]
    if not n:
        return None
    dec = pf_mixed = graph = 0.0
    dev = dict.fromkeys(DEVICE_KEYS, 0.0)
    for b, c in acct["decode"].items():
        dec += c * base[b][0]
    for b, (c, wall_s) in acct["mixed"].items():
        dec += c * base[b][0]
        pf_mixed += max(0.0, wall_s * 1e3 - c * base[b][1])
    for b, c in steps.items():
        rec = by_m.get(b, {})
        graph += c * (rec.get("graph_step_ms") or rec.get("eager_step_ms") or 0.0)
        for k in DEVICE_KEYS:
            dev[k] += c * rec.get(k, 0.0)
    k = float(sum(steps.values())) or 1.0
    # steps counts every decode token, periods every token after the first:
    # the device figures are per decode step, scaled to the periods.
    scale = n / k
    period = acct["period_s"] * 1e3
    pf = acct["prefill_s"] * 1e3 + pf_mixed
    out = {"period": period / n, "decode_step": dec / n, "prefill": pf / n,
           "prefill_between_steps": acct["prefill_s"] * 1e3 / n, "prefill_in_mixed_steps": pf_mixed / n,
           "scheduling": (period - dec - pf) / n, "decode_device": graph * scale / n}
    for key in DEVICE_KEYS:
        out[key.replace("_ms", "")] = dev[key] * scale / n
    out["decode_other_device"] = out["decode_device"] - out["allreduce"] - out["gather"] - out["gemm"]
    out["decode_host"] = out["decode_step"] - out["decode_device"]
    return out


def served_window(finished, by_m, clean_period, step_wall, mixed_wall):
    """The requests finished since the last reset: their TPOT and its split
    per token (means over requests), beside the older per-step figures."""
    if not finished:
        return None
    base = baselines(by_m, clean_period, step_wall)
    per = {"allreduce_ms": [], "gather_ms": [], "gemm_ms": []}
    steps_n = weighted_m = tokens = 0
    parts = []
    window = sorted({b for f in finished for b in f[2]})
    for tpot, n, st, acct in finished:
        for k in per:
            per[k].append(sum(c * by_m[b][k] for b, c in st.items() if b in by_m) / n)
        for b, c in st.items():
            steps_n += c
            weighted_m += b * c
        tokens += n
        sp = split_request(acct, st, base, by_m)
        if sp is not None:
            parts.append(sp)
    tp = sorted(f[0] * 1e3 for f in finished)
    med = statistics.median(tp)
    doc = {"requests": len(finished), "median_tpot_ms": med, "mean_tpot_ms": statistics.mean(tp),
           "mean_padded_batch": round(weighted_m / steps_n, 2) if steps_n else 0,
           "steps_by_batch": {str(b): sum(f[2].get(b, 0) for f in finished) for b in window},
           "mixed_steps_by_batch": {str(b): len(v) for b, v in sorted(mixed_wall.items())}}
    for k, v in per.items():
        doc[k + "_per_token"] = statistics.mean(v)
    doc["rest_ms_per_token"] = med - doc["allreduce_ms_per_token"] - doc["gather_ms_per_token"] - doc["gemm_ms_per_token"]
    if parts:
        doc["wait_ms_per_token"] = rounded({k: statistics.mean(p[k] for p in parts) for k in parts[0]})
    doc["decode_baseline_by_batch"] = {str(b): {"decode_step_ms": round(v[0], 4), "step_wall_ms": round(v[1], 4), "from": v[2]}
                                       for b, v in sorted(base.items()) if str(b) in doc["steps_by_batch"]}
    return rounded(doc)


METHOD = (
    "per batch size M: graph_step_ms is the captured decode step replayed (CUDA events, median of reps); "
    "the eager pass runs the same step with CUDA events around every GEMM and collective, after a GPU sleep that "
    "lets the CPU queue the whole step; *_ms are medians over reps on rank 0 (per-rank figures beside); "
    "allreduce_ms sums, over the step's all-reduces, the smaller of the ranks' times (the transfer without the wait for "
    "a late peer; allreduce_ms_rank0 is rank 0's own sum); rest_ms = eager_step_ms - allreduce_ms - gather_ms - gemm_ms; "
    "served_step_ms is the median wall time of the decode steps served at that padded batch size; served_period_ms the "
    "mean time from one decode step's end to the next's. served covers the requests finished since POST "
    "/truth/reset_served; *_per_token are means over requests of each decode step's allreduce_ms, gather_ms and gemm_ms "
    "per token after the first. wait_ms_per_token splits each served token's wait (the period since the request's last "
    "token; its mean over requests is the mean TPOT) into decode_step (the decode-only period at its padded batch size: "
    "decode_device, the captured graph's time, split into allreduce, gather, gemm and decode_other_device, plus "
    "decode_host), prefill (prefills run between its steps, and the prefill chunks' share of a mixed step: its wall less "
    "the decode-only step wall) and scheduling (the rest of the period)")
