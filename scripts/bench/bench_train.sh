#!/usr/bin/env bash
# Training speed on the CPU against nnU-Net's own nnUNetTrainer on the same torch (issue 45, point 2): the demo
# dataset (scripts/demo.sh's: 24 cases of 32-40 x 48-64 x 48-64, 2 labels), 3d_fullres planned by each tool from the
# same raw data (the plans must agree on patch and batch: checked), EPOCHS epochs of ITERS training and 2 validation
# iterations, 2 augmentation workers and THREADS torch threads on both sides, nnU-Net without torch.compile (as on
# the CPU by default). Prints the median seconds per epoch after the first (start-up and first-touch excluded) of
# nnU-Net (fp32: its trainer autocasts on CUDA only), medseg --amp off and medseg --amp bf16, and the ratios
# (NOCACHE=1 adds medseg --amp off and --amp bf16 with MEDSEG_CPU_BLOCK_CACHE=0).
#
#   scripts/bench/bench_train.sh PYTHON [BUILD_DIR]      # EPOCHS=4 ITERS=25 THREADS=2
# CASES=24 MIN_SHAPE="32 48 48" MAX_SHAPE="40 64 64" choose another synthetic dataset (each tool plans it; a larger
# shape gives nnU-Net's larger patches, e.g. MIN_SHAPE="100 128 128" MAX_SHAPE="112 140 140": 112 x 128 x 128, batch 2).
# PYTHON: an interpreter with torch and nnunetv2 (scripts/nnunet_reference.sh's venv, the build's torch version).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${1:?usage: bench_train.sh PYTHON [BUILD_DIR]}
build=${2:-$root/build}
epochs=${EPOCHS:-4}
iters=${ITERS:-25}
threads=${THREADS:-2}
cases=${CASES:-24}
min_shape=${MIN_SHAPE:-32 48 48}
max_shape=${MAX_SHAPE:-40 64 64}
(( epochs >= 2 )) || { echo "bench_train: EPOCHS must be at least 2 (the first is not timed)" >&2; exit 1; }
"$py" -c "import nnunetv2, torch" || { echo "bench_train: $py cannot import nnunetv2 and torch" >&2; exit 1; }
for app in medseg_make_dataset medseg_plan_and_preprocess medseg_train; do
  [ -x "$build/bin/$app" ] || { echo "bench_train: missing $build/bin/$app (build it first)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_train.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Temporary files of both tools inside it (torch made /tmp/torchinductor_$USER under nnU-Net's trainer and left it).
mkdir -p "$work/tmp"
export TMPDIR=$work/tmp
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/pre MEDSEG_RESULTS=$work/results
export nnUNet_raw=$MEDSEG_RAW nnUNet_preprocessed=$work/nn_pre nnUNet_results=$work/nn_results nnUNet_compile=f
export nnUNet_n_proc_DA=2 OMP_NUM_THREADS=$threads
# shellcheck disable=SC2086  # the shapes are three numbers each
"$build/bin/medseg_make_dataset" -d 900 -n Demo --cases "$cases" --test-cases 4 --labels 2 \
  --min-shape $min_shape --max-shape $max_shape --seed 7 --np 2 >/dev/null 2>&1
"$build/bin/medseg_plan_and_preprocess" -d 900 -c 3d_fullres --np 2 --no_pbar >/dev/null 2>&1
"$(dirname "$py")/nnUNetv2_plan_and_preprocess" -d 900 -c 3d_fullres -np 2 >/dev/null 2>&1
"$py" - "$MEDSEG_PREPROCESSED/Dataset900_Demo/nnUNetPlans.json" "$nnUNet_preprocessed/Dataset900_Demo/nnUNetPlans.json" <<'PY'
import json, sys
a, b = (json.load(open(f))["configurations"]["3d_fullres"] for f in sys.argv[1:3])
for k in ("patch_size", "batch_size", "spacing"):
    assert a[k] == b[k], f"the plans differ in {k}: medseg {a[k]}, nnU-Net {b[k]}"
print(f"plans: patch {a['patch_size']}, batch {a['batch_size']}, spacing {a['spacing']} (the same in both)")
PY

cat >"$work/nnunet_train.py" <<'PY'
import json, os, sys, torch
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer
epochs, iters, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
pre = os.path.join(os.environ["nnUNet_preprocessed"], "Dataset900_Demo")
class Short(nnUNetTrainer):
    def __init__(self, plans, configuration, fold, dataset_json, device=torch.device("cpu")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs, self.num_iterations_per_epoch, self.num_val_iterations_per_epoch = epochs, iters, 2
if __name__ == "__main__":  # nnU-Net's augmentation workers are spawned: they import this file again
    torch.set_num_threads(threads)
    plans = json.load(open(f"{pre}/nnUNetPlans.json"))
    plans["continue_training"] = False
    t = Short(plans, "3d_fullres", 0, json.load(open(f"{pre}/dataset.json")), device=torch.device("cpu"))
    t.run_training()
PY

# Median seconds per epoch after the first, from "Epoch time: X s" (nnU-Net) or "epoch N: ... X.Ys" (medseg).
median_epoch() {
  python3 - "$1" "$2" <<'PY'
import re, statistics, sys
text = open(sys.argv[2]).read()
pat = r"Epoch time: ([0-9.]+) s" if sys.argv[1] == "nnunet" else r"\] info: epoch \d+: .* ([0-9.]+)s\s*$"
t = [float(x) for x in re.findall(pat, text, flags=re.M)]
assert len(t) >= 2, f"{sys.argv[2]}: {len(t)} epoch times found"
print(f"{statistics.median(t[1:]):.2f}")
PY
}

echo "== $epochs epochs x $iters iterations (+2 validation), 2 augmentation workers, $threads torch threads"
"$py" "$work/nnunet_train.py" "$epochs" "$iters" "$threads" >"$work/nnunet.log" 2>&1 ||
  { tail -20 "$work/nnunet.log" >&2; exit 1; }
nn=$(median_epoch nnunet "$work/nnunet.log")
declare -A ms
rows=(off bf16)
[ "${NOCACHE:-0}" = 1 ] && rows+=(off_nocache bf16_nocache)  # without the CPU block cache: what it saves
for row in "${rows[@]}"; do
  rm -rf "$MEDSEG_RESULTS"
  cache=1
  [ "${row%_nocache}" != "$row" ] && cache=0
  MEDSEG_CPU_BLOCK_CACHE=$cache "$build/bin/medseg_train" 900 3d_fullres 0 --epochs "$epochs" --iters-per-epoch "$iters" \
    --val-iters-per-epoch 2 --num-workers 2 --threads "$threads" --no_pbar --amp "${row%_nocache}" \
    >"$work/medseg_$row.log" 2>&1 || { tail -20 "$work/medseg_$row.log" >&2; exit 1; }
  ms[$row]=$(median_epoch medseg "$work/medseg_$row.log")
done
printf '%-28s %10s %8s\n' "" "s/epoch" "ratio"
printf '%-28s %10s %8s\n' "nnU-Net nnUNetTrainer (fp32)" "$nn" "1.00"
for row in "${rows[@]}"; do
  printf '%-28s %10s %8s\n' "medseg --amp ${row/_nocache/, no cache}" "${ms[$row]}" "$(echo "scale=2; ${ms[$row]} / $nn" | bc)"
done
echo "goal (issue 45): an epoch <= 0.5x nnU-Net's"
