#!/usr/bin/env bash
# Does training in bf16 on the CPU reach fp32's Dice? (issue 45, point 2: final Dice within 0.005 of fp32 over 3
# seeds.) Trains the demo model (scripts/demo.sh's dataset and plan) SEEDS times in fp32 (--amp off) and in bf16
# (--amp bf16), each EPOCHS x ITERS with the trainer seed 1, 2, 3 (weights and data order), predicts the 4 held-out
# test cases of each model in fp32 (--amp off, so only the training precision differs) and prints each run's mean
# foreground Dice (medseg_evaluate's summary.json), the per-seed differences, their mean and the seconds per run.
#
#   scripts/bench/check_bf16_training.sh [BUILD_DIR]     # SEEDS=3 EPOCHS=12 ITERS=25 THREADS=2
# Exits 1 when the mean Dice over the seeds differs by more than 0.005.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${BUILD:-$root/build}}
bin=$build/bin
seeds=${SEEDS:-3}
epochs=${EPOCHS:-12}
iters=${ITERS:-25}
threads=${THREADS:-2}
for app in medseg_make_dataset medseg_plan_and_preprocess medseg_train medseg_predict medseg_evaluate; do
  [[ -x $bin/$app ]] || { echo "check_bf16_training: missing $bin/$app (build it first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bf16_train.XXXXXX")
trap 'rm -rf "$work"' EXIT
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/preprocessed MEDSEG_RESULTS=$work/results
"$bin/medseg_make_dataset" -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 \
  --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 --np "$threads" >/dev/null 2>&1
"$bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --np "$threads" --no_pbar >/dev/null 2>&1
raw=$MEDSEG_RAW/Dataset900_Demo
echo "demo model, $epochs epochs x $iters iterations, $threads threads, seeds 1..$seeds; test Dice predicted in fp32"
printf '%-6s %-6s %10s %8s\n' seed amp "Dice" "s"
dice_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['foreground_mean']['Dice'])" "$1"; }
for seed in $(seq 1 "$seeds"); do
  for amp in off bf16; do
    name="Seed${seed}_${amp}"
    printf '{"name": "%s", "seed": %d}\n' "$name" "$seed" >"$work/$name.json"
    start=$(date +%s.%N)
    "$bin/medseg_train" 900 3d_fullres 0 --tr "$work/$name.json" --epochs "$epochs" --iters-per-epoch "$iters" \
      --val-iters-per-epoch 5 --num-workers 2 --threads "$threads" --no_pbar --amp "$amp" >"$work/$name.log" 2>&1 ||
      { tail -20 "$work/$name.log" >&2; exit 1; }
    secs=$(echo "$(date +%s.%N) - $start" | bc)
    model=$MEDSEG_RESULTS/Dataset900_Demo/${name}__nnUNetPlans__3d_fullres
    "$bin/medseg_predict" -i "$raw/imagesTs" -o "$work/pred_$name" -m "$model" -f 0 --disable_progress_bar \
      --amp off --threads "$threads" >/dev/null 2>&1
    "$bin/medseg_evaluate" "$raw/labelsTs" "$work/pred_$name" --djfile "$model/dataset.json" >/dev/null 2>&1
    d=$(dice_of "$work/pred_$name/summary.json")
    echo "$seed $amp $d" >>"$work/dice.txt"
    printf '%-6s %-6s %10.5f %8.0f\n' "$seed" "$amp" "$d" "$secs"
  done
done
python3 - "$work/dice.txt" <<'PY'
import collections, sys
runs = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    seed, amp, d = line.split()
    runs[seed][amp] = float(d)
diffs = [r["bf16"] - r["off"] for r in runs.values()]
mean32 = sum(r["off"] for r in runs.values()) / len(runs)
mean16 = sum(r["bf16"] for r in runs.values()) / len(runs)
print("per seed bf16 - fp32: " + ", ".join(f"{x:+.5f}" for x in diffs))
print(f"mean Dice over {len(runs)} seeds: fp32 {mean32:.5f}, bf16 {mean16:.5f}, difference {mean16 - mean32:+.5f} "
      f"(goal within 0.005)")
sys.exit(0 if abs(mean16 - mean32) <= 0.005 else 1)
PY
