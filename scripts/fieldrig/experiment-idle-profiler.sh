#!/usr/bin/env bash
# The idle profiler's cost on a real engine step: the rig served alternately
# without and with the torch profiler configured (never started), as the
# one-load order serves it for the sweep (off, on, off, on by default). Each
# serving: a sweep at C=1 and at C=128, then /truth for exactly those
# requests (the served decode steps' wall time per batch size and the
# captured step's device time). Files: RESULTS_DIR/N-MODE-{sweep,truth}-cC.json.
#   scripts/fieldrig/experiment-idle-profiler.sh PROFDECK RESULTS_DIR [off on off on]
set -u -o pipefail
PD=$(realpath "$1"); RES=$(realpath -m "$2"); shift 2
ORDER=${*:-off on off on}
HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=${FR_MODEL:-/tmp/fieldrig-model} DEV=${FR_DEVICE:-cuda} PORT=${FR_PORT:-8000}
PY=${FR_PYTHON:-python3} LEVELS=${FR_LEVELS:-1 128} N1=${FR_REQUESTS_C1:-48}
URL=http://127.0.0.1:$PORT
mkdir -p "$RES"
step() { echo "=== $(date -u +%T) $*"; }
i=0
for mode in $ORDER; do
  i=$((i + 1))
  prof=(); [ "$mode" = on ] && prof=(--profiler-dir "/tmp/fieldrig-idle-profile-$(id -u)")
  step "serve $i ($mode)"
  $PY "$HERE/serve.py" --model "$MODEL" --device "$DEV" --port "$PORT" --max-num-seqs 128 --max-model-len 1024 \
    --served-model-name fieldrig/kimi-scaled ${FR_SERVE_ARGS:-} "${prof[@]}" >"$RES/$i-$mode-server.log" 2>&1 &
  pid=$!
  for _ in $(seq 240); do curl -sf "$URL/health" >/dev/null && break; sleep 0.5; done
  curl -sf "$URL/health" >/dev/null || { echo "server $i did not come up"; tail -5 "$RES/$i-$mode-server.log"; kill $pid; exit 1; }
  for c in $LEVELS; do
    curl -sf -X POST "$URL/truth/reset_served" >/dev/null
    n=$N1; [ "$c" -gt 1 ] && n=$((2 * c))
    "$PD" sweep --url "$URL" --concurrency "$c" --requests "$n" --warmup 2 --input-len "${FR_IN:-256}" \
      --output-len "${FR_OUT:-128}" --seed 2 --json "$RES/$i-$mode-sweep-c$c.json" 2>&1 | tail -1
    curl -sf "$URL/truth?m=$c&reps=${FR_REPS:-20}" -o "$RES/$i-$mode-truth-c$c.json"
  done
  kill $pid; wait $pid 2>/dev/null
done
step done
