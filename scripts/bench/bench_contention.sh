#!/usr/bin/env bash
# medseg_predict against nnU-Net's own nnUNetPredictor on the same model and images, idle and beside a
# controlled CPU load, alternated (scripts/bench/contention_driver.py): how much slower each gets when the
# cores are shared; then the same for a short training (medseg_train against nnUNetTrainer). The case of issue 29: a 2d PlainConvUNet planned by medseg for Hippocampus-sized
# volumes (about 12 x 56 x 56), 10 test images, nnU-Net's weights imported into medseg
# (scripts/bench/nnunet_reference_model.py, scripts/import_nnunet_model.py), everything inline on both
# sides (medseg -npp 0 -nps 0; nnU-Net predict_from_files_sequential), the same torch thread count.
#
#   scripts/bench/bench_contention.sh PYTHON [NNUNET_CHECKOUT] [BUILD_DIR]
# PYTHON: an interpreter with torch and nnunetv2 (e.g. a venv with `pip install nnunetv2`);
# NNUNET_CHECKOUT: an nnU-Net source checkout put first on PYTHONPATH (optional; "" to skip).
# Environment: THREADS (2), LOAD (busy processes, default: the number of cores), LOAD_KIND (spin: a Python
#              busy loop per process; torch: a torch process running 3D convolutions on THREADS threads, as a
#              training beside it would), REPEAT (3), CASES (10),
#              CONFIG (2d), TTA (1: mirroring on, as both tools default), AMP (off: fp32, nnU-Net's arithmetic on
#              the CPU; auto: medseg's default, bf16 on a CPU with bf16 units), MEDSEG_ARGS (extra medseg flags),
#              TRAIN (1: also a short training, medseg_train against nnU-Net's nnUNetTrainer; 0 skips it),
#              ITERS (10: training iterations), KEEP (1: keep the work folder), SPIN_BASELINE (1: also medseg
#              with libgomp's default spinning, GOMP_SPINCOUNT=300000, as before issue 29; 0 skips it).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
py=${1:?usage: bench_contention.sh PYTHON [NNUNET_CHECKOUT] [BUILD_DIR]}
nnunet=${2:-}
build=${3:-$root/build}
threads=${THREADS:-2}
load=${LOAD:-$(nproc)}
repeat=${REPEAT:-3}
cases=${CASES:-10}
config=${CONFIG:-2d}
tta=${TTA:-1}
train=${TRAIN:-1}
iters=${ITERS:-10}
[ -n "$nnunet" ] && export PYTHONPATH=$nnunet${PYTHONPATH:+:$PYTHONPATH}
"$py" -c "import nnunetv2, torch" || { echo "bench_contention: $py cannot import nnunetv2 and torch" >&2; exit 1; }
for app in medseg_make_dataset medseg_plan_and_preprocess medseg_predict medseg_version; do
  [ -x "$build/bin/$app" ] || { echo "bench_contention: missing $build/bin/$app (build it first)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_contention.XXXXXX")
[ "${KEEP:-0}" = 1 ] && echo "bench_contention: keeping $work" || trap 'rm -rf "$work"' EXIT
export MEDSEG_RAW=$work/raw MEDSEG_PREPROCESSED=$work/pre MEDSEG_RESULTS=$work/results
"$build/bin/medseg_make_dataset" -d 904 -n Contention --cases 20 --test-cases "$cases" --labels 2 \
  --min-shape 10 50 48 --max-shape 14 60 58 --seed 29 >/dev/null 2>&1
pp_flag=(--no_pp)
[ "$train" = 1 ] && pp_flag=()
"$build/bin/medseg_plan_and_preprocess" -d 904 -c "$config" "${pp_flag[@]}" -np 2 >/dev/null 2>&1
ds=Dataset904_Contention
nn_model=$work/nnunet_results/$ds/nnUNetTrainer__nnUNetPlans__$config
ms_model=$MEDSEG_RESULTS/$ds/nnUNetTrainer__nnUNetPlans__$config
"$py" "$root/scripts/bench/nnunet_reference_model.py" "$MEDSEG_PREPROCESSED/$ds" "$MEDSEG_RAW/$ds" nnUNetPlans \
  "$config" "$nn_model"
"$py" "$root/scripts/import_nnunet_model.py" "$nn_model" "$ms_model" -f 0 >/dev/null

cat >"$work/nnunet_predict.py" <<'PY'
import os, sys, torch
from nnunetv2.inference.predict_from_raw_data import nnUNetPredictor
model, inp, out, threads, tta = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
torch.set_num_threads(threads)
os.makedirs(out, exist_ok=True)
p = nnUNetPredictor(tile_step_size=0.5, use_gaussian=True, use_mirroring=tta, perform_everything_on_device=False,
                    device=torch.device("cpu"), verbose=False, verbose_preprocessing=False, allow_tqdm=False)
p.initialize_from_trained_model_folder(model, use_folds=(0,), checkpoint_name="checkpoint_final.pth")
p.predict_from_files_sequential(inp, out, save_probabilities=False, overwrite=True, folder_with_segs_from_prev_stage=None)
PY

# Training: one epoch of ITERS iterations, 2 validation iterations, 2 data workers on both sides, then the
# final validation (nnU-Net's run_training does the same). nnU-Net plans and preprocesses the same raw data
# itself; each run starts from an empty results folder.
if [ "$train" = 1 ]; then
  export nnUNet_raw=$MEDSEG_RAW nnUNet_preprocessed=$work/nn_pre nnUNet_results=$work/nn_train nnUNet_compile=f
  "$(dirname "$py")/nnUNetv2_plan_and_preprocess" -d 904 -c "$config" -np 2 >/dev/null 2>&1 ||
    "$py" -m nnunetv2.experiment_planning.plan_and_preprocess_entrypoints -d 904 -c "$config" -np 2 >/dev/null
  cat >"$work/nnunet_train.py" <<'PY'
import json, os, shutil, sys, torch
from nnunetv2.training.nnUNetTrainer.nnUNetTrainer import nnUNetTrainer
config, threads, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
pre = os.path.join(os.environ["nnUNet_preprocessed"], "Dataset904_Contention")
if __name__ == "__main__":
    shutil.rmtree(os.environ["nnUNet_results"], ignore_errors=True)
class Short(nnUNetTrainer):
    def __init__(self, plans, configuration, fold, dataset_json, device=torch.device("cpu")):
        super().__init__(plans, configuration, fold, dataset_json, device)
        self.num_epochs, self.num_iterations_per_epoch, self.num_val_iterations_per_epoch = 1, iters, 2
if __name__ == "__main__":  # nnU-Net's worker processes are spawned: they import this file again
    plans = json.load(open(f"{pre}/nnUNetPlans.json"))
    plans["continue_training"] = False  # what nnU-Net's run_training passes (2.8)
    t = Short(plans, config, 0, json.load(open(f"{pre}/dataset.json")), device=torch.device("cpu"))
    t.run_training()
    t.perform_actual_validation(False)
PY
fi

tta_flag=()
[ "$tta" = 1 ] || tta_flag=(--disable_tta)
# shellcheck disable=SC2206
medseg_cmd=("$build/bin/medseg_predict" -i "$MEDSEG_RAW/$ds/imagesTs" -o "$work/out_medseg" -m "$ms_model" -f 0
  --threads "$threads" --npp 0 --nps 0 --disable_progress_bar --amp "${AMP:-off}" "${tta_flag[@]}" ${MEDSEG_ARGS:-})
nnunet_cmd=("$py" "$work/nnunet_predict.py" "$nn_model" "$MEDSEG_RAW/$ds/imagesTs" "$work/out_nnunet" "$threads" "$tta")
printf '%s\n' "${medseg_cmd[@]}" >"$work/medseg.cmd"
printf '%s\n' "${nnunet_cmd[@]}" >"$work/nnunet.cmd"
if [ "$train" = 1 ]; then
  printf '%s\n' sh -c "rm -rf '$work/ms_train' && exec '$build/bin/medseg_train' 904 $config 0 --results '$work/ms_train' \
    --epochs 1 --iters-per-epoch $iters --val-iters-per-epoch 2 --num-workers 2 --threads $threads --no_pbar" \
    >"$work/medseg_train.cmd"
  printf '%s\n' "$py" "$work/nnunet_train.py" "$config" "$threads" "$iters" >"$work/nnunet_train.cmd"
fi
cat >"$work/torch_load.py" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
conv = torch.nn.Conv3d(16, 16, 3, padding=1)
x = torch.randn(1, 16, 32, 32, 32)
end = time.monotonic() + 3600
with torch.no_grad():
    while time.monotonic() < end:
        conv(x)
PY
python3 - "$work" "$repeat" "$load" "$threads" "${LOAD_KIND:-spin}" "$py" "${SPIN_BASELINE:-1}" <<'PY'
import json, sys
work, repeat, load, threads, kind, py = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
spin = sys.argv[7] == "1"
cmd = lambda f: open(f"{work}/{f}").read().splitlines()
nn_env = {"nnUNet_raw": work, "nnUNet_preprocessed": work, "nnUNet_results": work, "nnUNet_n_proc_DA": "2"}
load_cmd = [py, f"{work}/torch_load.py", threads] if kind == "torch" else None
spec = {"repeat": repeat, "load": load, "load_cmd": load_cmd, "runs": [
    {"name": "medseg", "cmd": cmd("medseg.cmd"), "env": {"OMP_NUM_THREADS": threads}},
    {"name": "nnunet", "cmd": cmd("nnunet.cmd"), "env": dict(nn_env, OMP_NUM_THREADS=threads)}]}
if spin:  # medseg as it was before issue 29: libgomp's default spin before a waiting thread sleeps
    spec["runs"].insert(1, {"name": "medseg_spin", "cmd": cmd("medseg.cmd"),
                            "env": {"OMP_NUM_THREADS": threads, "GOMP_SPINCOUNT": "300000"}})
json.dump(spec, open(f"{work}/spec.json", "w"))
import os
if os.path.exists(f"{work}/medseg_train.cmd"):
    tenv = dict(nn_env, OMP_NUM_THREADS=threads, nnUNet_raw=f"{work}/raw", nnUNet_preprocessed=f"{work}/nn_pre",
                nnUNet_results=f"{work}/nn_train", nnUNet_compile="f")
    menv = {"OMP_NUM_THREADS": threads, "MEDSEG_RAW": f"{work}/raw", "MEDSEG_PREPROCESSED": f"{work}/pre"}
    spec["runs"] = [dict(spec["runs"][0], name="medseg", cmd=cmd("medseg_train.cmd"), env=menv),
                    dict(spec["runs"][-1], name="nnunet", cmd=cmd("nnunet_train.cmd"), env=tenv)]
    if spin:
        spec["runs"].insert(1, dict(spec["runs"][0], name="medseg_spin", env=dict(menv, GOMP_SPINCOUNT="300000")))
    json.dump(spec, open(f"{work}/spec_train.json", "w"))
PY
echo "medseg: $("$build/bin/medseg_version" | head -1)"
echo "nnU-Net: $("$py" -c 'import importlib.metadata as m, torch; print("nnunetv2", m.version("nnunetv2"), "torch", torch.__version__)')"
echo "$config model, $cases cases, $threads torch threads, TTA $([ "$tta" = 1 ] && echo on || echo off)"
echo "== prediction (medseg_predict against nnUNetPredictor)"
python3 "$root/scripts/bench/contention_driver.py" "$work/spec.json"
if [ "$train" = 1 ]; then
  echo
  echo "== training: 1 epoch of $iters iterations + final validation (medseg_train against nnUNetTrainer)"
  python3 "$root/scripts/bench/contention_driver.py" "$work/spec_train.json"
fi
