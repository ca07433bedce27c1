#!/usr/bin/env python3
"""medseg_predict on an imported nnU-Net model against nnU-Net's own network.

    python3 scripts/check_nnunet_parity.py --dna PATH_TO_dynamic-network-architectures [--bin build/bin]

For each of PlainConvUNet and ResidualEncoderUNet (planners ExperimentPlanner and nnUNetPlannerResEncM),
3d_fullres and 2d: plans a small synthetic dataset with medseg, builds the configuration's network with
dynamic-network-architectures (nnU-Net's network code, given as a source checkout; not part of medseg),
fills every parameter with random values, saves an nnU-Net v2 results folder (plans.json, dataset.json,
fold_0/checkpoint_final.pth with nnU-Net's aliased state dict), converts it with
scripts/import_nnunet_model.py (or, with --native, medseg_import_nnunet, which reads the .pth without Python),
and predicts one image with medseg_predict (no TTA, probabilities saved).
The image has the plan's spacing and patch-sized extent and no zero voxel, so preprocessing is a z-score
only and the sliding window is one tile per image (per slice for 2d). The reference is nnU-Net's network on
the z-scored image, softmaxed; prints the largest probability difference per case and fails above 1e-4.
Needs /usr/bin/python3 with torch and numpy (Debian's python3-torch).
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

TOL = 1e-4


def write_nifti(path, arr, spacing_xyz):
    """float32 (z, y, x) array as an uncompressed NIfTI-1 file, LPS-identity direction, origin 0."""
    nz, ny, nx = arr.shape
    hdr = bytearray(352)
    struct.pack_into("<i", hdr, 0, 348)
    struct.pack_into("<8h", hdr, 40, 3, nx, ny, nz, 1, 1, 1, 1)
    struct.pack_into("<hh", hdr, 70, 16, 32)  # DT_FLOAT32, bitpix
    struct.pack_into("<8f", hdr, 76, 1, *spacing_xyz, 1, 1, 1, 1)
    struct.pack_into("<f", hdr, 108, 352)  # vox_offset
    struct.pack_into("<f", hdr, 112, 1)  # scl_slope
    struct.pack_into("<hh", hdr, 252, 0, 1)  # qform 0, sform scanner
    # ITK reads RAS from the file and reports LPS: negate x and y so the image is LPS-identity.
    srow = [-spacing_xyz[0], 0, 0, 0, 0, -spacing_xyz[1], 0, 0, 0, 0, spacing_xyz[2], 0]
    struct.pack_into("<12f", hdr, 280, *srow)
    hdr[344:348] = b"n+1\0"
    with open(path, "wb") as f:
        f.write(bytes(hdr))
        f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())


def run(cmd, env):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}")
    return p.stdout


def build_network(dna_unet, cfg, in_channels, num_classes):
    arch = cfg["architecture"]
    kw = dict(arch["arch_kwargs"])
    cls_name = arch["network_class_name"].split(".")[-1]
    for key in arch.get("_kw_requires_import", []):
        if kw.get(key) is not None:
            module, name = kw[key].rsplit(".", 1)
            kw[key] = getattr(__import__(module, fromlist=[name]), name)
    cls = getattr(dna_unet, cls_name)
    return cls(in_channels, num_classes=num_classes, deep_supervision=False, **kw), cls_name


def check(args, work, planner, config, seed):
    env = dict(os.environ, MEDSEG_RAW=f"{work}/raw", MEDSEG_PREPROCESSED=f"{work}/pre", MEDSEG_RESULTS=f"{work}/res")
    os.makedirs(env["MEDSEG_RAW"], exist_ok=True)
    bin_ = args.bin
    if not os.path.exists(f"{work}/raw/Dataset960_Parity"):
        run([f"{bin_}/medseg_make_dataset", "-d", "960", "-n", "Parity", "--cases", "6", "--labels", "2",
             "--min-shape", "24", "40", "40", "--max-shape", "28", "48", "48", "--seed", "3"], env)
        run([f"{bin_}/medseg_plan_and_preprocess", "-d", "960", "--no_pp", "--no_pbar"], env)
        run([f"{bin_}/medseg_plan_experiment", "-d", "960", "-pl", "nnUNetPlannerResEncM"], env)
    pre = f"{work}/pre/Dataset960_Parity"
    plans_file = {"ExperimentPlanner": "nnUNetPlans.json", "nnUNetPlannerResEncM": "nnUNetResEncUNetMPlans.json"}[planner]
    plans = json.load(open(f"{pre}/{plans_file}"))
    dataset = json.load(open(f"{work}/raw/Dataset960_Parity/dataset.json"))
    cfg = plans["configurations"][config]
    num_classes = len(dataset["labels"])
    torch.manual_seed(seed)
    net, cls_name = build_network(args.unet, cfg, 1, num_classes)
    with torch.no_grad():
        for p in net.parameters():  # random everywhere: zero-initialised norms would hide mistakes
            p.copy_(torch.randn_like(p) * 0.2 + (1.0 if p.dim() == 1 else 0.0) * 0.1)
    net.eval()

    # nnU-Net results folder
    nn_folder = f"{work}/nnunet/{plans['plans_name']}__{config}"
    os.makedirs(f"{nn_folder}/fold_0", exist_ok=True)
    shutil.copy(f"{pre}/{plans_file}", f"{nn_folder}/plans.json")
    json.dump(dataset, open(f"{nn_folder}/dataset.json", "w"))
    torch.save({"network_weights": net.state_dict(), "trainer_name": "nnUNetTrainer", "current_epoch": 1000,
                "init_args": {"configuration": config, "fold": 0}}, f"{nn_folder}/fold_0/checkpoint_final.pth")
    md_folder = f"{work}/medseg/{plans['plans_name']}__{config}"
    if args.native:  # medseg's own reader of the .pth, no Python
        run([f"{args.bin}/medseg_import_nnunet", "-i", nn_folder, "-o", md_folder, "-f", "0"], env)
    else:
        run([sys.executable, f"{args.root}/scripts/import_nnunet_model.py", nn_folder, md_folder, "-f", "0"], env)

    # one image: the plan's spacing, patch-sized (2d: a few slices of the patch), no zero voxel
    patch = cfg["patch_size"]
    spacing_zyx = cfg["spacing"] if config != "2d" else [plans["original_median_spacing_after_transp"][0]] + cfg["spacing"]
    shape = patch if config != "2d" else [3] + patch
    rng = np.random.default_rng(seed)
    img = (rng.standard_normal(shape) * 2.0 + 5.0).astype(np.float32)
    img[np.abs(img) < 1e-3] = 1.0
    case_dir = f"{work}/in_{cls_name}_{config}"
    os.makedirs(case_dir, exist_ok=True)
    write_nifti(f"{case_dir}/case_0000.nii", img, spacing_zyx[::-1])
    subprocess.run(["gzip", "-f", f"{case_dir}/case_0000.nii"], check=True)  # the dataset's file ending
    out = f"{work}/out_{cls_name}_{config}"
    run([f"{bin_}/medseg_predict", "-i", case_dir, "-o", out, "-m", md_folder, "-f", "0", "--disable_tta",
         "--save_probabilities", "-npp", "0", "-nps", "0", "--threads", "2", "--disable_progress_bar",
         "--accumulators", "fp32", "--amp", "off"], env)  # the network alone: exact sums (nnU-Net's fp16 ones: check_nnunet_predict_parity.sh)
    mine = np.load(f"{out}/case_probabilities.npy")

    # reference: nnU-Net's ZScoreNormalization (no mask) and its network, softmax over classes
    x = (img - img.mean()) / max(img.std(), 1e-8)
    with torch.no_grad():
        if config == "2d":
            logits = net(torch.from_numpy(x)[:, None]).permute(1, 0, 2, 3)  # slices as the batch
        else:
            logits = net(torch.from_numpy(x)[None, None])[0]
        ref = torch.softmax(logits.double(), 0).numpy()
    if mine.shape != ref.shape:
        sys.exit(f"{cls_name} {config}: probabilities {mine.shape} vs reference {ref.shape}")
    diff = float(np.abs(mine - ref).max())
    agree = float((mine.argmax(0) == ref.argmax(0)).mean())
    print(f"{cls_name:20s} {config:10s} input {tuple(shape)}: max |p_medseg - p_nnunet| = {diff:.2e}, "
          f"argmax agreement {agree * 100:.2f} %; mean top probability {ref.max(0).mean():.3f}")
    return diff <= TOL


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dna", required=True, help="dynamic-network-architectures source checkout")
    ap.add_argument("--bin", default=None, help="medseg bin folder (default: build/bin)")
    ap.add_argument("--native", action="store_true",
                    help="convert with medseg_import_nnunet (no Python) instead of scripts/import_nnunet_model.py")
    args = ap.parse_args()
    args.root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args.bin = os.path.abspath(args.bin or f"{args.root}/build/bin")
    sys.path.insert(0, os.path.abspath(args.dna))
    from dynamic_network_architectures.architectures import unet
    args.unet = unet
    torch.set_num_threads(2)
    ok = True
    with tempfile.TemporaryDirectory(prefix="medseg_parity_") as work:
        for i, (planner, config) in enumerate([("ExperimentPlanner", "3d_fullres"), ("ExperimentPlanner", "2d"),
                                               ("nnUNetPlannerResEncM", "3d_fullres"), ("nnUNetPlannerResEncM", "2d")]):
            ok = check(args, work, planner, config, seed=i + 1) and ok
    print("PASS" if ok else f"FAIL: a difference above {TOL}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
