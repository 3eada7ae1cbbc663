#!/usr/bin/env bash
# The whole fieldrig experiment on a machine with two GPUs: write the
# weights, run profdeck's campaign against the rig, fetch the rig's /truth at
# the sweep's concurrencies, and profile C=1 and the plateau separately.
#   scripts/fieldrig/experiment.sh PROFDECK RESULTS_DIR [phases|run]
# "run" uses `profdeck run` with campaign.yaml (journal and notebook);
# "phases" runs load, sweep, profile, micro and nccl one by one.
set -u -o pipefail
PD=$(realpath "$1"); RES=$(realpath -m "$2"); MODE=${3:-run}
HERE=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
MODEL=${FR_MODEL:-/tmp/fieldrig-model} LOG=/tmp/fieldrig-server.log PROF=/tmp/fieldrig-profile URL=http://127.0.0.1:8000
LEVELS=${FR_LEVELS:-1,2,4,8,16,32,64,128} PRESET=${FR_PRESET:-kimi-scaled} DEV=${FR_DEVICE:-cuda}
SEQS=${FR_SEQS:-128} LEN=${FR_LEN:-1024} PLATEAU=${FR_PLATEAU:-128}
mkdir -p "$RES"
step() { echo "=== $(date -u +%T) $*"; }
ts() { date +%s.%N; }

step env
nvidia-smi -L; nvidia-smi topo -m 2>&1 | head -8
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "grouped_mm", hasattr(torch, "_grouped_mm"), "nccl", torch.cuda.nccl.version())'
TORCHRUN=torchrun; command -v torchrun >/dev/null || TORCHRUN="python3 -m torch.distributed.run"

step prepare weights
timeout 240 python3 "$HERE/prepare.py" --preset "$PRESET" --out "$MODEL" --device "$DEV" || exit 1
du -sh "$MODEL"

serve() { # extra args...
  rm -f "$LOG"
  python3 "$HERE/serve.py" --model "$MODEL" --served-model-name fieldrig/kimi-scaled --tp 2 --max-num-seqs "$SEQS" \
    --max-model-len "$LEN" --port 8000 --device "$DEV" "$@" >"$LOG" 2>&1 &
  SERVER=$!
}
stop_server() {
  [ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null && timeout 30 tail --pid="$SERVER" -f /dev/null
  sleep 2; SERVER=
}
truth() { # file
  timeout 300 curl -sf "$URL/truth?m=${FR_TRUTH_M:-$LEVELS}&reps=20" -o "$1" && echo "truth: $(wc -c <"$1") bytes" || echo "truth failed"
}

if [ "$MODE" = run ]; then
  step profdeck run
  sed "s#python3 scripts/fieldrig/serve.py#python3 $HERE/serve.py#" "${FR_CAMPAIGN:-$HERE/campaign.yaml}" >/tmp/campaign.yaml
  (cd /tmp && timeout 330 "$PD" run -c /tmp/campaign.yaml --host local --json "$RES/run.json" --jsonl "$RES/events.jsonl" 2>&1 | tail -40)
  cp /tmp/fieldrig.journal.jsonl /tmp/fieldrig.md "$RES/" 2>/dev/null
  curl -sf "$URL/health" >/dev/null || { echo "run left no server; starting one"; serve --profiler-dir "$PROF"; timeout 300 "$PD" load --host local --log "$LOG" --url "$URL" --every 5s | tail -3; }
  # The server left up serves a short sweep again at C=1 and at the plateau
  # (no profiler running); /truth then splits those requests' TPOT.
  for c in 1 $PLATEAU; do
    curl -sf -X POST "$URL/truth/reset_served" >/dev/null
    step sweep again at C=$c
    timeout 120 "$PD" sweep --url "$URL" --concurrency $c --requests 16 --warmup 2 --input-len ${FR_IN:-256} \
      --output-len ${FR_OUT:-128} --seed 2 --json "$RES/sweep-c$c.json" 2>&1 | tail -3
    step truth C=$c
    timeout 200 curl -sf "$URL/truth?m=$c&reps=10" -o "$RES/truth-c$c.json" && echo "truth: $(wc -c <"$RES/truth-c$c.json") bytes"
  done
  for c in 1 $PLATEAU; do
    step profile C=$c alone
    n=4; [ $c -gt 4 ] && n=$c
    timeout 100 "$PD" profile -c /tmp/campaign.yaml --host local --concurrency $c --requests $n \
      --json "$RES/profile-c$c.json" 2>&1 | tail -3
    cp "$PROF/profiler_out_0.txt" "$RES/profiler_out_0-c$c.txt" 2>/dev/null
  done
  cp "$LOG" "$RES/server.log"
  stop_server
else
  step load
  T0=$(ts); serve --profiler-dir "$PROF"
  timeout 300 "$PD" load --host local --log "$LOG" --url "$URL" --every 2s 2>&1 | tee "$RES/load.txt" | tail -25
  echo "load wall $(python3 -c "import time; print(round(time.time() - $T0, 1))") s"
  step sweep
  timeout 300 "$PD" sweep --url "$URL" --concurrency $LEVELS --requests 16 --warmup 2 --input-len ${FR_IN:-256} --output-len ${FR_OUT:-128} \
    --seed 1 --json "$RES/sweep.json" 2>&1 | tail -12
  step truth after the sweep
  truth "$RES/truth.json"
  for c in 1 $PLATEAU; do
    step profile C=$c
    n=4; [ $c -gt 4 ] && n=$c
    timeout 150 "$PD" profile -c "$HERE/campaign.yaml" --host local --profiler-dir "$PROF" --concurrency $c --requests $n \
      --json "$RES/profile-c$c.json" 2>&1 | tail -4
    cp "$PROF/profiler_out_0.txt" "$RES/profiler_out_0-c$c.txt" 2>/dev/null
  done
  cp "$LOG" "$RES/server.log"
  stop_server
  step micro
  timeout 300 "$PD" micro --host local --model-config "$MODEL/config.json" --tp 2 --batch $LEVELS --json "$RES/micro.json" 2>&1 | tail -8
  step nccl
  timeout 240 "$PD" nccl --host local --model-config "$MODEL/config.json" --tp 2 --nproc 2 --torchrun "$TORCHRUN" \
    --batch $LEVELS --json "$RES/nccl.json" 2>&1 | tail -8
fi
step done
ls -la "$RES"
