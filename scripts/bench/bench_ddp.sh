#!/usr/bin/env bash
# Data-parallel scaling on this machine (docs/distributed.md): the same global batch trained by
#   one   : 1 process, all THREADS threads
#   ranks : 2 ranks (--nproc_per_node 2), THREADS/2 threads each
#   half  : 1 process with THREADS/2 threads on half the batch = one rank's compute, no communication
# Prints samples per second of each, the scaling efficiency ranks/one, and the share of a 2-rank
# step not spent computing, 1 - t(half)/t(ranks) (all-reduces, waiting for the slower rank, the
# batch-Dice and loss collectives). Epoch times from metrics.jsonl, epoch 0 (warm-up) excluded;
# ROUNDS rounds alternate the order, the median is reported.
#   BUILD=build scripts/bench/bench_ddp.sh [EPOCHS] [ITERS] [ROUNDS] [THREADS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
BIN=$BUILD/bin
E=${1:-3}
IT=${2:-6}
ROUNDS=${3:-3}
T=${4:-$(nproc)}
HALF_T=$(( T / 2 > 0 ? T / 2 : 1 ))
W=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_ddp.XXXXXX")
trap 'rm -rf "$W"' EXIT
export MEDSEG_RAW=$W/raw MEDSEG_PREPROCESSED=$W/pre
mkdir -p "$MEDSEG_RAW"
"$BIN/medseg_make_dataset" -d 900 -n Demo --cases 12 --labels 2 --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 >/dev/null 2>&1
"$BIN/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --no_pbar >/dev/null 2>&1
P=$MEDSEG_PREPROCESSED/Dataset900_Demo
B=$(python3 -c "import json; print(json.load(open('$P/nnUNetPlans.json'))['configurations']['3d_fullres']['batch_size'])")
python3 - "$P" <<'PY'
import json, sys
p = json.load(open(sys.argv[1] + "/nnUNetPlans.json"))
p["plans_name"] = "HalfBatchPlans"
c = p["configurations"]["3d_fullres"]
c["batch_size"] = max(1, c["batch_size"] // 2)
json.dump(p, open(sys.argv[1] + "/HalfBatchPlans.json", "w"), indent=1)
PY
args=(900 3d_fullres 0 --epochs "$E" --iters-per-epoch "$IT" --val-iters-per-epoch 0 --num-workers 1 --no_pbar)
one()   { MEDSEG_RESULTS=$W/one$1   "$BIN/medseg_train" "${args[@]}" --threads "$T" >/dev/null 2>&1; }
ranks() { MEDSEG_RESULTS=$W/ranks$1 "$BIN/medseg_train" "${args[@]}" --threads "$HALF_T" --nproc_per_node 2 >/dev/null 2>&1; }
half()  { MEDSEG_RESULTS=$W/half$1  "$BIN/medseg_train" "${args[@]}" --threads "$HALF_T" -p HalfBatchPlans >/dev/null 2>&1; }
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then one $r; ranks $r; half $r; else half $r; ranks $r; one $r; fi
  echo "round $r of $ROUNDS done" >&2
done
python3 - "$W" "$ROUNDS" "$B" "$IT" "$T" <<'PY'
import glob, json, statistics, sys
w, rounds, b, it, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def step(run):
    f = glob.glob(f"{w}/{run}/Dataset900_Demo/*/fold_0/metrics.jsonl")[0]
    ts = [j["epoch_time"] for j in map(json.loads, open(f)) if j["epoch"] > 0]
    return sum(ts) / len(ts) / it
res = {k: statistics.median(step(f"{k}{r}") for r in range(1, rounds + 1)) for k in ("one", "ranks", "half")}
print(f"global batch {b}, {it} iterations per epoch, median of {rounds} rounds, {t} threads in all")
for k, label in (("one", f"1 process x {t} threads"), ("ranks", f"2 ranks x {max(1, t // 2)} threads"),
                 ("half", f"1 process, half batch, {max(1, t // 2)} threads (one rank's compute)")):
    print(f"  {label:52s} {res[k]:.3f} s/step  {b / res[k]:.2f} samples/s")
print(f"scaling efficiency (2 ranks vs 1 process, same cores): {res['one'] / res['ranks']:.2f}")
print(f"share of a 2-rank step not spent computing: {1 - res['half'] / res['ranks']:.2f}")
PY
