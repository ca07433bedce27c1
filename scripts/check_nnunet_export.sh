#!/usr/bin/env bash
# A model trained by medseg, used by nnU-Net: medseg_export_nnunet's folder loaded by nnU-Net v2's own
# nnUNetPredictor must segment like medseg_predict (docs/model_sharing.md, "To nnU-Net").
#
#   scripts/check_nnunet_export.sh PYTHON [NNUNET_CHECKOUT] [BUILD_DIR]
# PYTHON: an interpreter with torch and nnunetv2 (e.g. a venv with `pip install nnunetv2`; never a medseg
# dependency); NNUNET_CHECKOUT: an nnU-Net source checkout put first on PYTHONPATH ("" to skip).
# Environment: CONFIG (3d_fullres; or 2d), PLANNER (nnUNetPlannerResEncM: ResidualEncoderUNet; "" for the
# default PlainConvUNet plans), ITERS (20 training iterations, so that the logits are not ties), TRAINER (the
# trainer medseg trains with, nnUNetTrainer; e.g. nnUNet_PrimusV3S_Trainer, whose own network nnU-Net's predictor
# then builds from the trainer's class), SHAPE (the cases' shape, "20 28 28" to "24 32 32" by default; one shape,
# e.g. "24 32 32"), PATCH (the plans' patch size set to this, e.g. "16 24 24" for a Primus trainer, whose patch
# must be a multiple of 8 on every axis), KEEP (1 keeps the work folder).
# What it does: a synthetic dataset (medseg_make_dataset, 6 cases, 2 test images) is planned, preprocessed and
# trained for one short epoch by medseg; the model is exported; both tools predict the test images with
# mirroring and probabilities; prints the largest probability difference and the share of equal labels, and
# fails above 1e-2 or below 99.9 % (both tools resample to the original grid: differences of about 1e-3
# at resampled boundaries are expected; the network alone agrees to 1e-6, scripts/check_nnunet_parity.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${1:?usage: check_nnunet_export.sh PYTHON [NNUNET_CHECKOUT] [BUILD_DIR]}
nnunet=${2:-}
build=${3:-$root/build}
config=${CONFIG:-3d_fullres}
planner=${PLANNER-nnUNetPlannerResEncM}
iters=${ITERS:-20}
trainer=${TRAINER:-nnUNetTrainer}
read -r -a shape <<<"${SHAPE:-}"
shape_args=(--min-shape 20 28 28 --max-shape 24 32 32)
[ ${#shape[@]} -eq 3 ] && shape_args=(--min-shape "${shape[@]}" --max-shape "${shape[@]}")
[ -n "$nnunet" ] && export PYTHONPATH=$nnunet${PYTHONPATH:+:$PYTHONPATH}
"$py" -c "import nnunetv2, torch" || { echo "check_nnunet_export: $py cannot import nnunetv2 and torch" >&2; exit 1; }
for app in medseg_make_dataset medseg_plan_and_preprocess medseg_train medseg_predict medseg_export_nnunet; do
  [ -x "$build/bin/$app" ] || { echo "check_nnunet_export: missing $build/bin/$app (build it first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/medseg_check_export.XXXXXX")
[ "${KEEP:-0}" = 1 ] && echo "check_nnunet_export: keeping $work" || trap 'rm -rf "$work"' EXIT
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/pre MEDSEG_RESULTS=$work/results
export nnUNet_raw=$work/raw nnUNet_preprocessed=$work/pre nnUNet_results=$work/nnunet_results
mkdir -p "$MEDSEG_RAW"
b=$build/bin
"$b/medseg_make_dataset" -d 954 -n Export --cases 6 --test-cases 2 "${shape_args[@]}" --seed 7 >/dev/null
plans_name=nnUNetPlans
pl=()
if [ -n "$planner" ]; then pl=(--pl "$planner"); plans_name=nnUNetResEncUNet${planner#nnUNetPlannerResEnc}Plans; fi
"$b/medseg_plan_and_preprocess" -d 954 -c "$config" --np 2 --no_pbar "${pl[@]}" >/dev/null
if [ -n "${PATCH:-}" ]; then
  python3 - "$MEDSEG_PREPROCESSED/Dataset954_Export/$plans_name.json" "$config" $PATCH <<'PY'
import json, sys
path, config, patch = sys.argv[1], sys.argv[2], [int(v) for v in sys.argv[3:]]
plans = json.load(open(path))
plans["configurations"][config]["patch_size"] = patch
json.dump(plans, open(path, "w"), indent=4)
PY
fi
"$b/medseg_train" 954 "$config" 0 -p "$plans_name" --tr "$trainer" --epochs 1 --iters-per-epoch "$iters" --val-iters-per-epoch 1 \
  --num-workers 1 --threads 2 --no_pbar >"$work/train.log" 2>&1 || { tail -5 "$work/train.log"; exit 1; }
model=$MEDSEG_RESULTS/Dataset954_Export/${trainer}__${plans_name}__$config
"$b/medseg_export_nnunet" -m "$model" -o "$work/nnunet_model"
imgs=$MEDSEG_RAW/Dataset954_Export/imagesTs
"$b/medseg_predict" -i "$imgs" -o "$work/pred_medseg" -m "$model" -f 0 --threads 2 -npp 0 -nps 0 \
  --save_probabilities --disable_progress_bar --amp off >/dev/null
cat >"$work/nnunet_side.py" <<'PY'
import os, sys, glob
import numpy as np, torch
from nnunetv2.inference.predict_from_raw_data import nnUNetPredictor
work, imgs = sys.argv[1:3]
torch.set_num_threads(2)
p = nnUNetPredictor(tile_step_size=0.5, use_gaussian=True, use_mirroring=True, perform_everything_on_device=False,
                    device=torch.device('cpu'), verbose=False, allow_tqdm=False)
p.initialize_from_trained_model_folder(os.path.join(work, 'nnunet_model'), use_folds=(0,))
os.makedirs(os.path.join(work, 'pred_nnunet'), exist_ok=True)
p.predict_from_files_sequential(imgs, os.path.join(work, 'pred_nnunet'), save_probabilities=True)
worst, equal, total = 0.0, 0, 0
for f in sorted(glob.glob(os.path.join(work, 'pred_nnunet', '*.npz'))):
    case = os.path.basename(f)[:-4]
    ref = np.load(f)['probabilities']
    ours = np.load(os.path.join(work, 'pred_medseg', case + '_probabilities.npy'))
    assert ref.shape == ours.shape, (case, ref.shape, ours.shape)
    d = float(np.abs(ref.astype(np.float64) - ours).max())
    a, b = ref.argmax(0), ours.argmax(0)
    worst, equal, total = max(worst, d), equal + int((a == b).sum()), total + a.size
    print(f'{case}: largest probability difference {d:.2e}, labels equal {100.0 * (a == b).mean():.3f} %')
print(f'check_nnunet_export: nnUNetPredictor on the exported model vs medseg_predict: largest difference {worst:.2e}, '
      f'{100.0 * equal / total:.3f} % of labels equal')
sys.exit(0 if worst <= 1e-2 and equal >= 0.999 * total else 1)
PY
"$py" "$work/nnunet_side.py" "$work" "$imgs"
