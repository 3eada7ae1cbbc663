#!/usr/bin/env bash
# The one-GPU variants campaign: campaign-tp1-variants.yaml run by profdeck
# itself, the baseline then each variant of its `variants:` list (the batch cap
# halved, chunked prefill) served, predicted and swept in one `profdeck run`.
# The journal, notebook, result document, charts and server log are packed
# into RESULTS_DIR/variants-campaign.tgz.
#   scripts/fieldrig/experiment-tp1-variants-campaign.sh PROFDECK RESULTS_DIR
set -u -o pipefail
PD=$(realpath "$1"); RES=$(realpath -m "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
export PYTHONUNBUFFERED=1
MODEL=${FR_MODEL:-/tmp/fieldrig-model} PRESET=${FR_PRESET:-kimi-scaled} DEV=${FR_DEVICE:-cuda}
OUTD="$RES/variants-campaign"; mkdir -p "$OUTD"
step() { echo "=== $(date -u +%T) $*"; }
pack() { cp /tmp/fieldrig-server.log "$OUTD/server.log" 2>/dev/null; (cd "$RES" && tar czf variants-campaign.tgz variants-campaign); }

step env
nvidia-smi -L 2>/dev/null
if [ ! -f "$MODEL/config.json" ]; then
  step prepare weights
  timeout 240 python3 "$HERE/prepare.py" --preset "$PRESET" --out "$MODEL" --device "$DEV" || exit 1
fi
sed -e "s#python3 scripts/fieldrig/serve.py#python3 $HERE/serve.py#" -e "s#--device cuda#--device $DEV#" \
  -e "s#^notebook: .*#notebook: $OUTD/fieldrig-variants.md#" \
  -e "s#^journal: .*#journal: $OUTD/fieldrig-variants.journal.jsonl#" \
  "$HERE/campaign-tp1-variants.yaml" >"$OUTD/campaign.yaml"
step "profdeck run (baseline, then its variants)"
(cd /tmp && timeout "${FR_RUN_TIMEOUT:-480}" "$PD" run -c "$OUTD/campaign.yaml" --host local \
  --json "$OUTD/run.json" 2>&1 | tail -40)
echo "run exit $?"
pack
step done
ls -la "$OUTD"
