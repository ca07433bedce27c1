#!/usr/bin/env bash
# The README's main command: installs dependencies, builds, generates the embedded demo dataset and
# runs the pipeline on it. Everything is written under ./demo_work (or $MEDSEG_DEMO_DIR). With
# MEDSEG_BIN_DIR=<prefix>/bin it runs an installed medseg instead (scripts/check_install.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
work=${MEDSEG_DEMO_DIR:-$root/demo_work}
threads=${MEDSEG_DEMO_THREADS:-$(nproc)}

# MEDSEG_BIN_DIR: run the programs of an installed medseg (<prefix>/bin) instead of building them.
if [[ -n ${MEDSEG_BIN_DIR:-} ]]; then
  bin=$MEDSEG_BIN_DIR
else
  bash "$root/scripts/install_deps.sh"
  bash "$root/scripts/build.sh"
  bin="$build/bin"
fi

export MEDSEG_RAW="$work/raw" MEDSEG_PREPROCESSED="$work/preprocessed" MEDSEG_RESULTS="$work/results"
mkdir -p "$MEDSEG_RAW" "$MEDSEG_PREPROCESSED" "$MEDSEG_RESULTS"
step() { echo; echo "== $* =="; }

step "1/8 demo dataset: 24 training + 4 test cases, 2 foreground classes (Dataset900_Demo)"
"$bin/medseg_make_dataset" -d 900 -n Demo --cases 24 --test-cases 4 --labels 2 \
  --min-shape 32 48 48 --max-shape 40 64 64 --seed 7 --overwrite -np "$threads"

step "2/8 verify dataset integrity"
"$bin/medseg_verify_dataset" -d 900 -np "$threads"

step "3/8 fingerprint"
"$bin/medseg_extract_fingerprint" -d 900 -np "$threads" --clean
fp="$MEDSEG_PREPROCESSED/Dataset900_Demo/dataset_fingerprint.json"
echo "fingerprint written to $fp"

step "4/8 plan (nnU-Net default planner and ResEnc M)"
"$bin/medseg_plan_experiment" -d 900 -pl ExperimentPlanner
"$bin/medseg_plan_experiment" -d 900 -pl nnUNetPlannerResEncM

step "5/8 preprocess 3d_fullres (nnUNetPlans)"
"$bin/medseg_preprocess" -d 900 -c 3d_fullres -np "$threads"

epochs=${MEDSEG_DEMO_EPOCHS:-5}
iters=${MEDSEG_DEMO_ITERS:-25}
step "6/8 train fold 0 on CPU ($epochs epochs x $iters iterations; nnU-Net's recipe otherwise)"
model="$MEDSEG_RESULTS/Dataset900_Demo/nnUNetTrainer__nnUNetPlans__3d_fullres"
# A rerun of the demo starts over: medseg_train refuses a fold folder that holds an earlier run.
rm -rf "$model/fold_0"
"$bin/medseg_train" 900 3d_fullres 0 --epochs "$epochs" --iters-per-epoch "$iters" --val-iters-per-epoch 5 \
  --num-workers 2 --checkpoint-every 4 --no_pbar

step "7/8 predict the 4 held-out test cases"
"$bin/medseg_predict" -i "$MEDSEG_RAW/Dataset900_Demo/imagesTs" -o "$work/predictions" -m "$model" -f 0

step "8/8 evaluate against their reference labels"
"$bin/medseg_evaluate" "$MEDSEG_RAW/Dataset900_Demo/labelsTs" "$work/predictions" \
  -djfile "$model/dataset.json" -pfile "$model/plans.json"

echo
echo "demo finished: outputs under $work (training curve: $model/fold_0/progress.png)"
