#!/usr/bin/env bash
# Fresh vs resumed training speed (nnU-Net issue #2294: resumed ResEnc runs were 25% slower).
# Trains the demo dataset for E epochs in one go, and again as E/2 epochs + --c to E epochs, in
# ROUNDS rounds that alternate which run goes first; prints per round the mean epoch time of the
# epochs after the resume point in both runs and their ratio, then the median ratio. The first
# epoch after a (re)start is excluded (warm-up: allocator, cuDNN autotuning).
#   BUILD=build scripts/bench/bench_resume.sh [EPOCHS] [ITERS] [DEVICE] [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
BIN=$BUILD/bin
E=${1:-6}
IT=${2:-10}
DEV=${3:-cpu}
ROUNDS=${4:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_resume.XXXXXX")
trap 'rm -rf "$W"' EXIT
export MEDSEG_RAW=$W/raw MEDSEG_PREPROCESSED=$W/pre
mkdir -p "$MEDSEG_RAW"
"$BIN/medseg_make_dataset" -d 900 -n Demo --cases 12 --labels 2 --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 >/dev/null 2>&1
"$BIN/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --no_pbar >/dev/null 2>&1
args=(900 3d_fullres 0 --iters-per-epoch "$IT" --val-iters-per-epoch 1 --checkpoint-every 1 --no_pbar --device "$DEV")
fresh() { MEDSEG_RESULTS=$W/fresh$1 "$BIN/medseg_train" "${args[@]}" --epochs "$E" >/dev/null 2>&1; }
resumed() {
  MEDSEG_RESULTS=$W/resumed$1 "$BIN/medseg_train" "${args[@]}" --epochs $((E / 2)) >/dev/null 2>&1
  # Extend the same run: --c from the final checkpoint of E/2 epochs continues to E.
  MEDSEG_RESULTS=$W/resumed$1 "$BIN/medseg_train" "${args[@]}" --epochs "$E" --c >/dev/null 2>&1
}
# Alternate which goes first, so that drift in the machine's speed falls on both alike.
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then fresh $r; resumed $r; else resumed $r; fresh $r; fi
  echo "round $r of $ROUNDS done" >&2
done
python3 - "$W" "$E" "$ROUNDS" <<'PY'
import json, statistics, sys
w, e, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def times(run):
    f = f"{w}/{run}/Dataset900_Demo/nnUNetTrainer__nnUNetPlans__3d_fullres/fold_0/metrics.jsonl"
    return {j["epoch"]: j["epoch_time"] for j in map(json.loads, open(f))}
after = list(range(e // 2 + 1, e))  # the first epoch after the restart is warm-up: left out
ratios = []
for r in range(1, rounds + 1):
    fr, re = times(f"fresh{r}"), times(f"resumed{r}")
    f = statistics.mean(fr[k] for k in after)
    s = statistics.mean(re[k] for k in after)
    ratios.append(s / f)
    first = f"first epoch after the restart {re[e // 2]:.2f} s vs {fr[e // 2]:.2f} s"
    print(f"round {r}: epochs {after}: fresh {f:.2f} s/epoch, resumed {s:.2f} s/epoch, "
          f"resumed/fresh = {s / f:.3f} ({first})")
print(f"median resumed/fresh over {rounds} rounds = {statistics.median(ratios):.3f} "
      f"(min {min(ratios):.3f}, max {max(ratios):.3f})")
PY
