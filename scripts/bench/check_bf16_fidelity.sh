#!/usr/bin/env bash
# Does bf16 on the CPU keep the answers fp32 gives? (issue 45: `--amp auto` may pick bf16 only where it does.)
# Trains the demo model (scripts/demo.sh's dataset and plan) for EPOCHS x ITERS, predicts its 4 held-out test cases
# with `--amp off` (fp32, nnU-Net's arithmetic) and `--amp bf16`, both with their probabilities, and prints:
#   - the mean Dice of each against the reference labels (medseg_evaluate's summary.json) and their difference
#     (goal: within 0.001);
#   - the voxels whose fp32 top-two probability margin exceeds 1e-2, and how many of them bf16 labels
#     differently (goal: none); all differing voxels, and the largest probability difference.
#
#   scripts/bench/check_bf16_fidelity.sh [BUILD_DIR]        # EPOCHS=30 ITERS=25 THREADS=2 by default
# Takes about EPOCHS x 37 s on 2 cores (30 epochs: 19 min). The comparison needs numpy: PYTHON, else
# MEDSEG_NNUNET_PYTHON (scripts/nnunet_reference.sh's venv), else python3.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${BUILD:-$root/build}}
bin=$build/bin
epochs=${EPOCHS:-30}
iters=${ITERS:-25}
threads=${THREADS:-2}
for app in medseg_make_dataset medseg_plan_and_preprocess medseg_train medseg_predict medseg_evaluate; do
  [[ -x $bin/$app ]] || { echo "check_bf16_fidelity: missing $bin/$app (build it first)" >&2; exit 1; }
done
python=${PYTHON:-${MEDSEG_NNUNET_PYTHON:-python3}}
"$python" -c 'import numpy' 2>/dev/null ||
  { echo "check_bf16_fidelity: $python has no numpy (set PYTHON, e.g. to scripts/nnunet_reference.sh's venv)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bf16.XXXXXX")
trap 'rm -rf "$work"' EXIT
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/preprocessed MEDSEG_RESULTS=$work/results

"$bin/medseg_make_dataset" -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 \
  --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 --np "$threads" >/dev/null 2>&1
"$bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --np "$threads" --no_pbar >/dev/null 2>&1
model=$MEDSEG_RESULTS/Dataset900_Demo/nnUNetTrainer__nnUNetPlans__3d_fullres
echo "training fold 0: $epochs epochs x $iters iterations (fp32), $threads threads"
"$bin/medseg_train" 900 3d_fullres 0 --epochs "$epochs" --iters-per-epoch "$iters" --val-iters-per-epoch 5 \
  --num-workers 2 --no_pbar --amp off >"$work/train.log" 2>&1 || { tail -20 "$work/train.log" >&2; exit 1; }
grep -E "EMA|pseudo dice" "$work/train.log" | tail -2 || true

for amp in off bf16; do
  start=$(date +%s.%N)
  "$bin/medseg_predict" -i "$MEDSEG_RAW/Dataset900_Demo/imagesTs" -o "$work/pred_$amp" -m "$model" -f 0 \
    --disable_progress_bar --save_probabilities --amp "$amp" --threads "$threads" >/dev/null 2>&1
  echo "predict --amp $amp: $(echo "$(date +%s.%N) - $start" | bc) s (4 cases, TTA on)"
  "$bin/medseg_evaluate" "$MEDSEG_RAW/Dataset900_Demo/labelsTs" "$work/pred_$amp" --djfile "$model/dataset.json" \
    >/dev/null 2>&1
done

"$python" - "$work/pred_off" "$work/pred_bf16" <<'PY'
import glob, json, os, sys
import numpy as np
fp32, bf16 = sys.argv[1:3]
dice = [json.load(open(f"{d}/summary.json"))["foreground_mean"]["Dice"] for d in (fp32, bf16)]
print(f"mean Dice: fp32 {dice[0]:.5f}, bf16 {dice[1]:.5f}, difference {abs(dice[0] - dice[1]):.5f} (goal <= 0.001)")
confident = differ = differ_confident = total = 0
worst = 0.0
for f in sorted(glob.glob(f"{fp32}/*_probabilities.npy")):
    p = np.load(f)
    q = np.load(os.path.join(bf16, os.path.basename(f)))
    top2 = np.sort(p, axis=0)[-2:]
    margin = top2[1] - top2[0]
    a, b = p.argmax(0), q.argmax(0)
    sure = margin > 1e-2
    total += a.size
    confident += int(sure.sum())
    differ += int((a != b).sum())
    differ_confident += int(((a != b) & sure).sum())
    worst = max(worst, float(np.abs(p - q).max()))
print(f"labels differing: {differ} of {total} voxels; where the fp32 margin > 1e-2 ({confident} voxels): "
      f"{differ_confident} (goal 0); largest probability difference {worst:.4f}")
ok = abs(dice[0] - dice[1]) <= 0.001 and differ_confident == 0
print("bf16 keeps fp32's answers" if ok else "bf16 does NOT keep fp32's answers")
sys.exit(0 if ok else 1)
PY
