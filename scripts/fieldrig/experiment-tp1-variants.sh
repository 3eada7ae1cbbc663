#!/usr/bin/env bash
# The one-GPU variants experiment: the baseline campaign (campaign-tp1.yaml,
# separate prefill, with the sweeps again and /truth of experiment-tp1.sh),
# then each variant of the rig served and swept on its own with the same
# workload: its batch cap halved (--max-num-seqs 64), chunked prefill, and
# the baseline without the torch profiler configured (the idle profiler's
# cost). Each variant's journal, notebook and result document are packed
# into RESULTS_DIR/VARIANT.tgz.
#   scripts/fieldrig/experiment-tp1-variants.sh PROFDECK RESULTS_DIR [VARIANT...]
set -u -o pipefail
PD=$(realpath "$1"); RES=$(realpath -m "$2"); shift 2
VARIANTS=${*:-baseline cap64 chunked noprof}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$RES"
step() { echo "=== $(date -u +%T) $*"; }
for v in $VARIANTS; do
  if [ "$v" = baseline ]; then
    FR_RESWEEP=${FR_RESWEEP:-1 8 128} "$HERE/experiment-tp1.sh" "$PD" "$RES" separate
    continue
  fi
  OUTD="$RES/$v"; mkdir -p "$OUTD"
  edit=()
  case "$v" in
    cap64) edit=(-e 's#--max-num-seqs 128#--max-num-seqs 64#') ;;
    chunked) edit=(-e 's#--port 8000#--port 8000 --chunked-prefill#') ;;
    noprof) edit=(-e '/VLLM_TORCH_PROFILER_DIR/d' -e '/profiler_dir:/d' -e '/^  env:$/d') ;;
    *) echo "unknown variant $v"; continue ;;
  esac
  sed -e "s#python3 scripts/fieldrig/serve.py#python3 $HERE/serve.py#" -e "s#--port 8000#--port 8000 --device cuda#" \
    "${edit[@]}" -e "s#^name: .*#name: fieldrig-kimi-scaled-tp1-$v#" \
    -e "s#^notebook: .*#notebook: $OUTD/fieldrig.md#" -e "s#^journal: .*#journal: $OUTD/fieldrig.journal.jsonl#" \
    -e 's#leave_server: profiler#leave_server: stopped#' "$HERE/campaign-tp1.yaml" >"$OUTD/campaign.yaml"
  step "profdeck run --phases load,macro ($v)"
  (cd /tmp && timeout "${FR_RUN_TIMEOUT:-240}" "$PD" run -c "$OUTD/campaign.yaml" --host local --phases load,macro \
    --skip-doctor --json "$OUTD/run.json" 2>&1 | tail -25)
  echo "run exit $?"
  cp /tmp/fieldrig-server.log "$OUTD/server.log" 2>/dev/null
  (cd "$RES" && tar czf "$v.tgz" "$v")
done
step done
ls -la "$RES"
