#!/usr/bin/env python3
"""File-to-file prediction, medseg against nnU-Net 2.8.1, side by side (scripts/bench/bench_predict_e2e.sh).

Run with the nnU-Net venv's python (scripts/nnunet_reference.sh). In a scratch folder:
  1. a dataset of --train_cases blob volumes at the plan spacing, fingerprinted and planned by nnU-Net's own
     ExperimentPlanner (3d_fullres), a random checkpoint of the planned network;
  2. one test volume of --shape at --spacing (array order z, y, x; mm), with a zero border so it is cropped;
  3. nnUNetv2_predict_from_modelfolder (-device cpu --disable_tta -npp 1 -nps 1) and medseg_predict
     (--disable_tta -npp 1 -nps 1, after medseg_import_nnunet), each a whole process timed from start to the
     written file: wall seconds, CPU seconds, and the peak resident memory of the largest process it ran.
Prints both and the ratios medseg / nnU-Net; the segmentations are compared too (labels equal).
  4. The sliding window alone (issue 45's goal is stated for it): nnU-Net's predict_sliding_window_return_logits on
     its own preprocessing of the test volume, one call timed in this process on --threads torch threads, against
     the window seconds each medseg_predict run logs (--verbose; one call each, in the run above). Both tile the
     volume alike, so each rate is FLOP of one pass (medseg_model_info forward_flops) x tiles x passes / seconds,
     printed beside what this processor's units reach (medseg_bench_peak: instruction loops and a 3072^2 GEMM).
"""
import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--shape", type=int, nargs=3, default=[160, 256, 256])
p.add_argument("--spacing", type=float, nargs=3, default=[2.0, 0.75, 0.75])
p.add_argument("--plan_spacing", type=float, nargs=3, default=[3.0, 1.5, 1.5])
p.add_argument("--classes", type=int, default=3, help="labels, background included")
p.add_argument("--train_cases", type=int, default=4)
p.add_argument("--threads", type=int, default=2)
p.add_argument("--keep", default=None)
p.add_argument("--tta", action="store_true", help="mirroring on, on both sides (default: off)")
p.add_argument("--modes", default="off,exact,auto",
               help="medseg rows, comma-separated: off (--amp off), exact (--exact_nnunet), auto (--amp auto), "
                    "off_nocache (--amp off with MEDSEG_CPU_BLOCK_CACHE=0: what the block cache saves)")
ARGS = p.parse_args()

# Only in the main process: nnU-Net's predictor starts its workers with multiprocessing's spawn, which runs this
# module again in each of them (as __mp_main__); a work folder made there was left behind. The workers inherit the
# environment, so they find nnU-Net's folders all the same.
if __name__ == "__main__":
    WORK = ARGS.keep or tempfile.mkdtemp(prefix="medseg-e2e.")
    for v in ("raw", "preprocessed", "results"):
        os.makedirs(os.path.join(WORK, v), exist_ok=True)
    # nnUNet_def_n_proc is also the cap on the predictor's torch threads (predict_logits_from_preprocessed_data:
    # min(default_num_processes, torch threads)): at 1 nnU-Net's sliding window ran on one thread while medseg's
    # ran on --threads. It is --threads here, so both run their networks on the same number of threads.
    os.environ.update(nnUNet_raw=f"{WORK}/raw", nnUNet_preprocessed=f"{WORK}/preprocessed",
                      nnUNet_results=f"{WORK}/results", nnUNet_def_n_proc=str(ARGS.threads))

import numpy as np  # noqa: E402
import SimpleITK as sitk  # noqa: E402
import torch  # noqa: E402
from nnunetv2.experiment_planning.plan_and_preprocess_api import extract_fingerprints, plan_experiments  # noqa
from nnunetv2.utilities.get_network_from_plans import get_network_from_plans  # noqa: E402
from nnunetv2.utilities.plans_handling.plans_handler import PlansManager  # noqa: E402


def volume(rng, shape, classes, border=4):
    inner = [s - 2 * border for s in shape]
    grids = np.ogrid[tuple(slice(0, s) for s in inner)]
    img = np.zeros(inner, np.float32)
    lab = np.zeros(inner, np.uint8)
    for k in range(2 * classes):
        c = [rng.uniform(0.2, 0.8) * s for s in inner]
        r = rng.uniform(0.1, 0.25) * min(inner)
        d2 = sum((g - ci) ** 2 for g, ci in zip(grids, c)) / r ** 2
        img += (rng.uniform(0.5, 2.0) * np.exp(-d2)).astype(np.float32)
        lab[d2 < 1] = 1 + k % (classes - 1)
    img += (0.1 * rng.standard_normal(inner)).astype(np.float32)
    full = np.zeros(shape, np.float32)
    seg = np.zeros(shape, np.uint8)
    sl = tuple(slice(border, border + i) for i in inner)
    full[sl] = img * 100 + 50
    seg[sl] = lab
    return full, seg


def write(path, arr, spacing_zyx):
    im = sitk.GetImageFromArray(arr)
    im.SetSpacing(tuple(float(s) for s in spacing_zyx[::-1]))
    sitk.WriteImage(im, path)


def measured(cmd, env=None):
    """Runs cmd in a fresh python that reports its children's usage: wall, CPU s, peak RSS (GiB)."""
    probe = ("import resource, subprocess, sys, time; t = time.monotonic(); "
             "r = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT); "
             "w = time.monotonic() - t; u = resource.getrusage(resource.RUSAGE_CHILDREN); "
             "o = r.stdout.decode(errors='replace'); sys.stdout.write(o[-3000:] if r.returncode else ''); "
             "[print(ln) for ln in o.splitlines() if 'sliding window:' in ln]; "
             "print('MEASURED', r.returncode, w, u.ru_utime + u.ru_stime, u.ru_maxrss / 1048576.0)")
    out = subprocess.run([sys.executable, "-c", probe] + cmd, env=env, stdout=subprocess.PIPE, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.startswith("MEASURED")][-1].split()
    if int(line[1]) != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out}")
    return float(line[2]), float(line[3]), float(line[4]), window_log(out)


def window_log(text):
    """(tiles, passes per tile, seconds) summed over the sliding-window lines medseg_predict --verbose logs."""
    found = re.findall(r"sliding window: (\d+) tile\(s\) of \S+, (\d+) network pass\(es\) each, ([0-9.]+) s", text)
    if not found:
        return None
    return (sum(int(t) for t, _, _ in found), int(found[0][1]), sum(float(x) for _, _, x in found))


def nnunet_window(folder, image, threads, tta):
    """Seconds of one call of nnU-Net's predict_sliding_window_return_logits on its preprocessing of image."""
    from nnunetv2.inference.predict_from_raw_data import nnUNetPredictor
    torch.set_num_threads(threads)
    pred = nnUNetPredictor(tile_step_size=0.5, use_gaussian=True, use_mirroring=tta, device=torch.device("cpu"),
                           perform_everything_on_device=False, verbose=False, allow_tqdm=False)
    pred.initialize_from_trained_model_folder(folder, use_folds=(0,), checkpoint_name="checkpoint_final.pth")
    pre = pred.configuration_manager.preprocessor_class(verbose=False)
    data, _, _ = pre.run_case([image], None, pred.plans_manager, pred.configuration_manager, pred.dataset_json)
    data = torch.from_numpy(data)
    t = time.monotonic()
    pred.predict_sliding_window_return_logits(data)
    return time.monotonic() - t


def window_table(rows, nn_window, flops, peaks):
    """The sliding window alone: seconds, ratio to nnU-Net's, GFLOP/s, and the measured peaks."""
    tiles = next((r[3] for _, r in rows[1:] if r[3]), None)
    if tiles is None:
        print("sliding window: no medseg run logged its window (medseg_predict --verbose)")
        return
    work = flops * tiles[0] * tiles[1] / 1e9
    print(f"sliding window alone: {tiles[0]} tile(s) x {tiles[1]} pass(es) x {flops / 1e9:.1f} GFLOP = {work:.0f} "
          f"GFLOP; processor, {peaks['threads']} threads: fp32 {peaks['loop_fp32_isa']} loop "
          f"{fmt(peaks['loop_fp32'])}, GEMM {fmt(peaks['gemm_fp32'])}; bf16 loop {fmt(peaks['loop_bf16'])}, "
          f"GEMM {fmt(peaks['gemm_bf16'])} GFLOP/s")
    print(f"{'':24} {'window s':>9} {'x nnU-Net':>10} {'GFLOP/s':>8}")
    print(f"{'nnU-Net 2.8.1 (fp32)':24} {nn_window:9.2f} {1.0:10.2f} {work / nn_window:8.0f}")
    for tag, r in rows[1:]:
        if r[3]:
            print(f"{tag:24} {r[3][2]:9.2f} {r[3][2] / nn_window:10.2f} {work / r[3][2]:8.0f}")
    best = max(peaks["gemm_bf16"], peaks["loop_bf16"] or 0)
    print(f"floor: nnU-Net's window at {work / nn_window:.0f} GFLOP/s against the best bf16 rate measured here "
          f"({best:.0f}): no bf16 window goes below {work / best / nn_window:.2f}x nnU-Net's on this processor")


def fmt(x):
    return "n/a" if x is None else f"{x:.0f}"


def main():
    rng = np.random.default_rng(7)
    did, name = 990, "Dataset990_E2E"
    base = f"{WORK}/raw/{name}"
    for sub in ("imagesTr", "labelsTr", "imagesTs"):
        os.makedirs(f"{base}/{sub}", exist_ok=True)
    resampled = [round(s * sp / ps) for s, sp, ps in zip(ARGS.shape, ARGS.spacing, ARGS.plan_spacing)]
    for i in range(ARGS.train_cases):
        img, seg = volume(rng, [s + 2 * (i % 2) for s in resampled], ARGS.classes)
        write(f"{base}/imagesTr/case_{i:03d}_0000.nii.gz", img, ARGS.plan_spacing)
        write(f"{base}/labelsTr/case_{i:03d}.nii.gz", seg, ARGS.plan_spacing)
    img, _ = volume(rng, ARGS.shape, ARGS.classes)
    write(f"{base}/imagesTs/ct_000_0000.nii.gz", img, ARGS.spacing)
    labels = {"background": 0, **{f"c{k}": k for k in range(1, ARGS.classes)}}
    json.dump({"channel_names": {"0": "MR"}, "labels": labels, "numTraining": ARGS.train_cases,
               "file_ending": ".nii.gz"}, open(f"{base}/dataset.json", "w"))
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):  # the planner's printout
        extract_fingerprints([did], num_processes=1, verbose=False, show_progress_bar=False)
        plan_experiments([did])
    pre = f"{WORK}/preprocessed/{name}"
    plans = json.load(open(f"{pre}/nnUNetPlans.json"))
    cm = PlansManager(plans).get_configuration("3d_fullres")
    net = get_network_from_plans(cm.network_arch_class_name, cm.network_arch_init_kwargs,
                                 cm.network_arch_init_kwargs_req_import, 1, ARGS.classes, allow_init=True,
                                 deep_supervision=True)
    folder = f"{WORK}/results/{name}/nnUNetTrainer__nnUNetPlans__3d_fullres"
    os.makedirs(f"{folder}/fold_0", exist_ok=True)
    shutil.copy(f"{pre}/nnUNetPlans.json", f"{folder}/plans.json")
    shutil.copy(f"{pre}/dataset.json", f"{folder}/dataset.json")
    torch.save({"network_weights": net.state_dict(), "trainer_name": "nnUNetTrainer",
                "init_args": {"configuration": "3d_fullres"}, "inference_allowed_mirroring_axes": (0, 1, 2),
                "current_epoch": 1}, f"{folder}/fold_0/checkpoint_final.pth")
    ms_model = f"{WORK}/medseg_model"
    subprocess.run([f"{ARGS.bin}/medseg_import_nnunet", "-i", folder, "-o", ms_model, "--overwrite"], check=True,
                   stdout=subprocess.DEVNULL)
    print(f"case {ARGS.shape} at {ARGS.spacing} mm -> plan spacing {cm.spacing} (about {resampled}), "
          f"patch {cm.patch_size}, {cm.network_arch_class_name.split('.')[-1]}, {ARGS.classes} classes, "
          f"{ARGS.threads} threads, TTA {'on' if ARGS.tta else 'off'}", flush=True)
    no_tta = [] if ARGS.tta else ["--disable_tta"]
    env = dict(os.environ, OMP_NUM_THREADS=str(ARGS.threads), MKL_NUM_THREADS=str(ARGS.threads))
    nn = measured([os.path.join(os.path.dirname(sys.executable), "nnUNetv2_predict_from_modelfolder"),
                   "-i", f"{base}/imagesTs", "-o", f"{WORK}/out_nnunet", "-m", folder, "-f", "0", "-device", "cpu",
                   *no_tta, "-npp", "1", "-nps", "1", "--disable_progress_bar"], env)
    rows = [("nnU-Net 2.8.1", nn)]
    # fp32 as nnU-Net (--amp off), nnU-Net's kernels, and the default, which is bf16 on a CPU with bf16 units
    modes = {"off": ("medseg --amp off", ["--amp", "off"]), "exact": ("medseg --exact_nnunet", ["--exact_nnunet"]),
             "auto": ("medseg (--amp auto)", ["--amp", "auto"]),
             "off_nocache": ("medseg off, no cache", ["--amp", "off"])}
    for mode in ARGS.modes.split(","):
        tag, extra = modes[mode]
        run_env = dict(env, MEDSEG_CPU_BLOCK_CACHE="0") if mode == "off_nocache" else env
        ms = measured([f"{ARGS.bin}/medseg_predict", "-i", f"{base}/imagesTs", "-o", f"{WORK}/out_{len(rows)}",
                       "-m", ms_model, *no_tta, "-npp", "1", "-nps", "1", "--threads", str(ARGS.threads),
                       "--disable_progress_bar", "--verbose"] + extra, run_env)
        rows.append((tag, ms))
    print(f"{'':24} {'wall s':>8} {'cpu s':>8} {'peak GiB':>9} {'wall x':>7} {'peak x':>7}")
    for tag, (w, c, m, _) in rows:
        print(f"{tag:24} {w:8.1f} {c:8.1f} {m:9.2f} {w / nn[0]:7.2f} {m / nn[2]:7.2f}")
    ref = sitk.GetArrayFromImage(sitk.ReadImage(f"{WORK}/out_nnunet/ct_000.nii.gz"))
    for i, (tag, _) in enumerate(rows[1:], 1):
        got = sitk.GetArrayFromImage(sitk.ReadImage(f"{WORK}/out_{i}/ct_000.nii.gz"))
        print(f"{tag}: labels differing from nnU-Net's {int((got != ref).sum())} of {ref.size}")
    info = json.loads(subprocess.run([f"{ARGS.bin}/medseg_model_info", "--plans", f"{ms_model}/plans.json",
                                      "--dataset-json", f"{ms_model}/dataset.json", "-c", "3d_fullres", "--no-forward"],
                                     check=True, stdout=subprocess.PIPE, text=True).stdout)
    peaks = json.loads(subprocess.run([f"{ARGS.bin}/medseg_bench_peak", "--threads", str(ARGS.threads)], check=True,
                                      stdout=subprocess.PIPE, text=True).stdout)
    nn_window = nnunet_window(folder, f"{base}/imagesTs/ct_000_0000.nii.gz", ARGS.threads, ARGS.tta)
    window_table(rows, nn_window, info["forward_flops"], peaks)


if __name__ == "__main__":
    try:
        main()
    finally:
        if not ARGS.keep:
            shutil.rmtree(WORK, ignore_errors=True)
