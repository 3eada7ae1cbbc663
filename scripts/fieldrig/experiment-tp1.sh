#!/usr/bin/env bash
# The one-GPU experiment: the fieldrig at TP 1 in one or both prefill modes
# (separate: whole prefills between decode steps; chunked: prefill chunks
# inside the decode steps, as vLLM V1). For each mode: `profdeck run` with
# campaign-tp1.yaml (journal and notebook), then, on the server it leaves
# up, a sweep again at C=1, at a level between and at the plateau, each
# followed by /truth (which splits the TPOT of the requests just served).
#   scripts/fieldrig/experiment-tp1.sh PROFDECK RESULTS_DIR [separate] [chunked]
# Each mode's files are packed into RESULTS_DIR/MODE.tgz as soon as they exist.
set -u -o pipefail
PD=$(realpath "$1"); RES=$(realpath -m "$2"); shift 2
MODES=${*:-separate chunked}
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
MODEL=${FR_MODEL:-/tmp/fieldrig-model} URL=http://127.0.0.1:8000 PRESET=${FR_PRESET:-kimi-scaled} DEV=${FR_DEVICE:-cuda}
LEVELS=${FR_RESWEEP:-1 8 128}
mkdir -p "$RES"
step() { echo "=== $(date -u +%T) $*"; }

step env
nvidia-smi -L 2>/dev/null
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count(), "grouped_mm", hasattr(torch, "_grouped_mm"))'
if [ ! -f "$MODEL/config.json" ]; then
  step prepare weights
  timeout 240 python3 "$HERE/prepare.py" --preset "$PRESET" --out "$MODEL" --device "$DEV" || exit 1
fi

# server_pids lists the rig's server processes on port 8000 (those the run
# started), read from /proc.
server_pids() {
  python3 - <<'EOF'
import os
for p in os.listdir("/proc"):
    if not p.isdigit():
        continue
    try:
        cmd = open("/proc/%s/cmdline" % p, "rb").read().split(b"\0")
    except OSError:
        continue
    if any(c.endswith(b"serve.py") for c in cmd) and b"8000" in cmd:
        print(p)
EOF
}

for mode in $MODES; do
  OUTD="$RES/$mode"; mkdir -p "$OUTD"
  pack() { (cd "$RES" && tar czf "$mode.tgz" "$mode"); }
  extra=""; [ "$mode" = chunked ] && extra=" --chunked-prefill"
  sed -e "s#python3 scripts/fieldrig/serve.py#python3 $HERE/serve.py#" -e "s#--port 8000#--port 8000 --device $DEV$extra#" \
    -e "s#^name: fieldrig-kimi-scaled-tp1#name: fieldrig-kimi-scaled-tp1-$mode#" "${FR_CAMPAIGN:-$HERE/campaign-tp1.yaml}" >"$OUTD/campaign.yaml"
  step "profdeck run ($mode prefill)"
  rm -f /tmp/fieldrig.journal.jsonl /tmp/fieldrig.md
  (cd /tmp && timeout "${FR_RUN_TIMEOUT:-330}" "$PD" run -c "$OUTD/campaign.yaml" --host local --json "$OUTD/run.json" 2>&1 | tail -30)
  echo "run exit $?"
  cp /tmp/fieldrig.journal.jsonl /tmp/fieldrig.md "$OUTD/" 2>/dev/null
  pack
  for c in $LEVELS; do
    curl -sf -X POST "$URL/truth/reset_served" >/dev/null || { echo "no server for the sweeps again"; break; }
    step "sweep again at C=$c ($mode)"
    n=16; [ $((2 * c)) -gt $n ] && n=$((2 * c))
    timeout 120 "$PD" sweep --url "$URL" --concurrency "$c" --requests "$n" --warmup 2 --input-len "${FR_IN:-256}" \
      --output-len "${FR_OUT:-128}" --seed 2 --json "$OUTD/sweep-c$c.json" 2>&1 | tail -2
    timeout 120 curl -sf "$URL/truth?m=$c&reps=10" -o "$OUTD/truth-c$c.json" && echo "truth: $(wc -c <"$OUTD/truth-c$c.json") bytes"
    pack
  done
  cp /tmp/fieldrig-server.log "$OUTD/server.log" 2>/dev/null
  pack
  for p in $(server_pids); do kill "$p"; done
  for _ in $(seq 30); do [ -z "$(server_pids)" ] && break; sleep 1; done
done
step done
ls -la "$RES"
