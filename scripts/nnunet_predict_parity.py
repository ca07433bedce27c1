#!/usr/bin/env python3
"""medseg_predict against nnU-Net 2.8.1's own predictor, file to file, on the same weights.

    scripts/check_nnunet_predict_parity.sh [BUILD_DIR] [--kinds K ...] [--keep DIR]
    (runs this file with the nnU-Net venv's python: scripts/nnunet_reference.sh)

For every input kind below, in a scratch folder:
  1. writes a small raw dataset with SimpleITK (nnU-Net's reader), or PNGs for the 2D kind;
  2. extracts the fingerprint and plans it with nnU-Net's own code (ExperimentPlanner, or the kind's planner:
     then medseg_plan_experiment -pl <the same name> must write nnU-Net's plans; the cascade kind adds a
     3d_lowres and a 3d_cascade_fullres configuration to them);
  3. builds the configuration's network with nnU-Net's get_network_from_plans, random weights (norm
     parameters perturbed too), and saves nnU-Net's checkpoint_final.pth in a results folder;
  4. predicts the test images with nnUNetPredictor.predict_from_files_sequential (CPU, fp32 network,
     mirroring as the kind says, probabilities saved), and with medseg: medseg_import_nnunet, then
     medseg_predict --save_probabilities --probabilities_format nnunet, once with --exact_nnunet and once
     with its defaults;
  5. compares the probabilities (nnU-Net's .npz and medseg's _probabilities.npy) and the segmentations voxel
     for voxel (for the cascade, both stages; each side's second stage runs on its own first stage's
     segmentations), then postprocesses nnU-Net's segmentations with nnU-Net's apply_postprocessing_to_folder
     and with medseg_apply_postprocessing (keep the largest component of the foreground, then of the last
     label): equal voxel for voxel;
  6. preprocesses the training cases with medseg_preprocess and with nnU-Net's DefaultPreprocessor.run_case:
     the .npy data and segmentations must be equal bit for bit.
Fails when a probability differs by more than --tol (1e-4; --exact_nnunet; a kind may set its own, primus
1e-3) or --default_tol (1e-2; the defaults), naming the kind, the mode, the case and the voxel, or when a label differs where nnU-Net's
top-two probability margin exceeds 1e-3.
"""
import atexit
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

TOL = 1e-4
DEFAULT_TOL = 1e-2  # fp32 rounding of other convolution kernels, moved by fp16 accumulation (docs/predict.md)
MARGIN = 1e-3


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True, help="medseg build's bin folder")
    p.add_argument("--kinds", nargs="*", default=None)
    p.add_argument("--keep", default=None, help="work in this folder and keep it")
    p.add_argument("--tol", type=float, default=TOL, help="medseg_predict --exact_nnunet against nnU-Net")
    p.add_argument("--default_tol", type=float, default=DEFAULT_TOL,
                   help="medseg_predict's defaults (batched tiles, oneDNN convolutions) against nnU-Net")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--medseg_args", default="", help="extra medseg_predict arguments (e.g. '--slabs always')")
    return p.parse_args()


ARGS = parse_args()
WORK = ARGS.keep or tempfile.mkdtemp(prefix="medseg-nnunet-parity.")
if not ARGS.keep:  # a work folder of its own: gone when the check ends, however it ends
    atexit.register(shutil.rmtree, WORK, True)
os.makedirs(WORK, exist_ok=True)
for v in ("raw", "preprocessed", "results"):
    os.makedirs(os.path.join(WORK, v), exist_ok=True)
os.environ["nnUNet_raw"] = os.path.join(WORK, "raw")
os.environ["nnUNet_preprocessed"] = os.path.join(WORK, "preprocessed")
os.environ["nnUNet_results"] = os.path.join(WORK, "results")
os.environ.setdefault("nnUNet_def_n_proc", "1")

import numpy as np  # noqa: E402
import SimpleITK as sitk  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(ARGS.threads)

from nnunetv2.experiment_planning.plan_and_preprocess_api import extract_fingerprints, plan_experiments  # noqa
from nnunetv2.inference.predict_from_raw_data import nnUNetPredictor  # noqa: E402
from nnunetv2.utilities.get_network_from_plans import get_network_from_plans  # noqa: E402
from nnunetv2.utilities.plans_handling.plans_handler import PlansManager  # noqa: E402


# ----------------------------------------------------------------------------------------------------------
# Synthetic cases: smooth blobs with noise; labels from the blobs. Array order (z, y, x).

def blobs(rng, shape, n=4):
    zz, yy, xx = np.meshgrid(*[np.arange(s, dtype=np.float64) for s in shape], indexing="ij")
    img = np.zeros(shape)
    lab = np.zeros(shape, dtype=np.uint8)
    for k in range(n):
        c = [rng.uniform(0.25, 0.75) * s for s in shape]
        r = rng.uniform(0.12, 0.3) * min(s for s in shape if s > 1)
        d2 = ((zz - c[0]) ** 2 + (yy - c[1]) ** 2 + (xx - c[2]) ** 2) / r ** 2
        img += rng.uniform(0.5, 2.0) * np.exp(-d2)
        lab[d2 < 1] = 1 + (k % 2)
    img += 0.1 * rng.standard_normal(shape)
    return img, lab


def write_sitk(path, arr, spacing_zyx, direction=None, origin=None):
    im = sitk.GetImageFromArray(arr)
    im.SetSpacing(tuple(float(s) for s in spacing_zyx[::-1]))
    if direction is not None:
        im.SetDirection(tuple(float(v) for v in np.asarray(direction).ravel()))
    if origin is not None:
        im.SetOrigin(tuple(float(v) for v in origin))
    sitk.WriteImage(im, path)


def rotation(ax, ay, az):
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


class Kind:
    """One input kind: how its training and test cases look."""

    def __init__(self, name, channels=("MR",), border=3, spacing=(1.0, 1.0, 1.0), test_spacings=None,
                 direction=None, reader=None, shapes=None, test_shapes=None, ct=False, intensity_offset=0.0,
                 labels=None, regions_class_order=None, mirroring=False, medseg_args=(), png=False,
                 planner="ExperimentPlanner", plans="nnUNetPlans", train_spacings=None, cascade=False,
                 trainer="nnUNetTrainer", exact_tol=None):
        self.name = name
        self.exact_tol = exact_tol  # replaces --tol for this kind's --exact_nnunet comparison
        self.trainer = trainer  # a trainer that builds its own network (Primus) instead of the plans' one
        self.cascade = cascade  # 3d_lowres, then 3d_cascade_fullres on its segmentations
        self.train_spacings = train_spacings  # per training case (else all at `spacing`)
        self.planner = planner  # nnU-Net's planner class, and medseg's -pl preset of the same name
        self.plans = plans      # its plans name
        self.labels = labels or {"background": 0, "a": 1, "b": 2}
        self.regions_class_order = regions_class_order
        self.mirroring = mirroring  # nnU-Net's test-time mirroring (and medseg's, without --disable_tta)
        self.medseg_args = list(medseg_args)
        self.png = png  # 2D natural images (NaturalImage2DIO), configuration 2d
        self.channels = channels
        self.border = border
        self.spacing = spacing
        self.test_spacings = test_spacings or [spacing, spacing]
        self.direction = direction
        self.reader = reader
        self.shapes = shapes or [(18, 26, 26), (17, 25, 27), (19, 27, 25), (18, 24, 26)]
        self.test_shapes = test_shapes or [(18, 26, 26), (21, 23, 29)]
        self.ct = ct
        self.offset = intensity_offset

    def images(self, rng, shape):
        inner = tuple(max(4, s - 2 * self.border) for s in shape)
        out = []
        img, lab = blobs(rng, inner)
        for c, mod in enumerate(self.channels):
            im = img * (1 + 0.5 * c) + self.offset
            if mod == "CT":
                im = im * 400 - 200
            full = np.zeros(shape, dtype=np.float32)
            sl = tuple(slice(self.border, self.border + i) for i in inner)
            full[sl] = im + (0 if self.border == 0 else 0)
            if self.border == 0:
                full = np.asarray(im, dtype=np.float32)
            out.append(full)
        seg = np.zeros(shape, dtype=np.uint8)
        seg[tuple(slice(self.border, self.border + i) for i in inner)] = lab
        return out, seg


KINDS = {
    # medseg_make_dataset's default look: a zero border, so nnU-Net crops; the nonzero mask is used for norm.
    "zero_background": Kind("zero_background", border=3),
    # the same with little border: no use_mask_for_norm (the crop keeps most of the volume).
    "no_mask_norm": Kind("no_mask_norm", border=1, intensity_offset=3.0),
    # thick slices: a 3 mm axis; test cases at other spacings, resampled both ways.
    "resampling": Kind("resampling", spacing=(3.0, 1.0, 1.0), border=2,
                       test_spacings=[(3.0, 1.0, 1.0), (2.2, 0.8, 1.25)],
                       shapes=[(10, 30, 30), (11, 28, 31), (10, 31, 29), (9, 30, 30)],
                       test_shapes=[(10, 30, 30), (13, 34, 26)]),
    # very thick slices: separate-z resampling (in-plane linear, nearest along z) in the export.
    "separate_z": Kind("separate_z", spacing=(5.0, 1.0, 1.0), border=2,
                       test_spacings=[(5.0, 1.0, 1.0), (3.5, 0.9, 1.1)],
                       shapes=[(8, 30, 30), (9, 28, 31), (8, 31, 29), (7, 30, 30)],
                       test_shapes=[(8, 30, 30), (11, 33, 27)]),
    # an oblique, flipped direction matrix.
    "oblique": Kind("oblique", direction=rotation(0.3, -0.2, 2.5) @ np.diag([1, -1, 1]), border=2),
    # the same read through NibabelIO (nibabel's arrays: x, y, z transposed; medseg reads the file with ITK).
    "nibabel": Kind("nibabel", direction=rotation(0.3, -0.2, 2.5) @ np.diag([1, -1, 1]), border=2,
                    reader="NibabelIO"),
    # the same read through NibabelIOWithReorient (canonical RAS orientation, transposed arrays).
    "nibabel_reorient": Kind("nibabel_reorient", direction=rotation(0.3, -0.2, 2.5) @ np.diag([1, -1, 1]),
                             border=2, reader="NibabelIOWithReorient"),
    # two channels, one of them CT (CT normalization).
    "two_channels_ct": Kind("two_channels_ct", channels=("CT", "MR"), border=0),
    # regions (sigmoid, painted in regions_class_order) and an ignore label.
    "regions": Kind("regions", labels={"background": 0, "whole": [1, 2], "core": 2}, regions_class_order=[1, 2]),
    "ignore_label": Kind("ignore_label", labels={"background": 0, "a": 1, "b": 2, "ignore": 3}),
    # test-time mirroring over all axes.
    "mirroring": Kind("mirroring", border=2, mirroring=True),
    # predicted slab by slab.
    "slabs": Kind("slabs", border=3, medseg_args=("--slabs", "always")),
    # nnU-Net 2.8.1's torch resampling (resample_torch_fornnunet): the thick-slice data resampled both ways,
    # without separate z (nnUNetPlanner_torchres) and with it (nnUNetPlannerResEncL_torchres_sepz).
    "torchres": Kind("torchres", spacing=(3.0, 1.0, 1.0), border=2,
                     test_spacings=[(3.0, 1.0, 1.0), (2.2, 0.8, 1.25)],
                     shapes=[(10, 30, 30), (11, 28, 31), (10, 31, 29), (9, 30, 30)],
                     test_shapes=[(10, 30, 30), (13, 34, 26)],
                     train_spacings=[(3.0, 1.0, 1.0), (2.5, 1.1, 0.9), (3.3, 0.95, 1.05), (3.0, 1.0, 1.0)],
                     planner="nnUNetPlanner_torchres", plans="nnUNetPlans_torchres"),
    # (slices of 70 voxels: torch's bilinear kernel for output slices of height + width <= 128 is another one,
    # rounded by the CPU's vector width; medseg writes out the generic one, tests/nn/inference_torch_resampling_test.cpp)
    "torchres_sepz": Kind("torchres_sepz", spacing=(5.0, 1.0, 1.0), border=2,
                          test_spacings=[(5.0, 1.0, 1.0), (3.5, 0.9, 1.1)],
                          shapes=[(8, 70, 70), (9, 68, 71), (8, 71, 68), (7, 70, 70)],
                          test_shapes=[(8, 70, 70), (11, 74, 66)],
                          train_spacings=[(5.0, 1.0, 1.0), (4.2, 1.1, 0.9), (5.5, 0.95, 1.05), (5.0, 1.0, 1.0)],
                          planner="nnUNetPlannerResEncL_torchres_sepz", plans="nnUNetResEncUNetLPlans_torchres_sepz"),
    # the cascade: 3d_lowres at 1.6x the spacing, then 3d_cascade_fullres on each side's own lowres labels.
    "cascade": Kind("cascade", border=2, cascade=True),
    # 2D natural images: RGB PNGs, NaturalImage2DIO, the 2d configuration.
    "png_2d": Kind("png_2d", channels=("R", "G", "B"), png=True,
                   shapes=[(1, 40, 44), (1, 42, 40), (1, 38, 41), (1, 40, 40)],
                   test_shapes=[(1, 40, 44), (1, 45, 37)]),
    # nnU-Net's Primus S trainer (its own network, not the plans'): a 16 x 24 x 24 patch of 8^3 tokens; the
    # model folder is nnUNet_Primus_S_Trainer's and medseg_import_nnunet must build its Primus. Its logits agree
    # with Python's to about 1e-6, not bit for bit (docs/models.md, "Primus"), and nnU-Net's fp16 logit
    # accumulators turn that into one fp16 step now and then (2e-3 in a logit of 2-4, up to 5e-4 in probability).
    "primus": Kind("primus", border=1, trainer="nnUNet_Primus_S_Trainer",
                   shapes=[(18, 26, 26), (18, 26, 26), (18, 26, 26), (18, 26, 26)],
                   test_shapes=[(18, 26, 26), (21, 23, 29)], exact_tol=1e-3),
    # nnU-Net's Primus V3 S trainer: the same transformer on PrimusV3's residual patch embedding (a BasicBlockD
    # stem at full resolution, three strided stages to 1024 channels, scaled projections of each onto the tokens).
    "primus_v3": Kind("primus_v3", border=1, trainer="nnUNet_PrimusV3S_Trainer",
                      shapes=[(18, 26, 26), (18, 26, 26), (18, 26, 26), (18, 26, 26)],
                      test_shapes=[(18, 26, 26), (21, 23, 29)], exact_tol=1e-3),
}


def write_png(path, arr):
    from PIL import Image
    Image.fromarray(arr).save(path)


def make_png_dataset(base, kind, rng):
    """RGB cases as PNG (uint8), labels as PNG; NaturalImage2DIO reads them."""
    for i, shape in enumerate(kind.shapes):
        img, lab = blobs(rng, (1, shape[1], shape[2]))
        rgb = np.stack([np.clip(img[0] * 80 + 40 * c, 0, 255) for c in range(3)], -1).astype(np.uint8)
        write_png(f"{base}/imagesTr/case_{i:03d}_0000.png", rgb)
        write_png(f"{base}/labelsTr/case_{i:03d}.png", lab[0].astype(np.uint8))
    for i, shape in enumerate(kind.test_shapes):
        img, _ = blobs(rng, (1, shape[1], shape[2]))
        rgb = np.stack([np.clip(img[0] * 80 + 40 * c, 0, 255) for c in range(3)], -1).astype(np.uint8)
        write_png(f"{base}/imagesTs/test_{i:03d}_0000.png", rgb)


def make_dataset(did, kind, rng):
    name = f"Dataset{did:03d}_{kind.name}"
    base = os.path.join(WORK, "raw", name)
    for sub in ("imagesTr", "labelsTr", "imagesTs"):
        os.makedirs(os.path.join(base, sub), exist_ok=True)
    if kind.png:
        make_png_dataset(base, kind, rng)
    for i, shape in enumerate([] if kind.png else kind.shapes):
        imgs, seg = kind.images(rng, shape)
        if "ignore" in kind.labels:  # a band of the ignore label over the background
            seg[:, : shape[1] // 4, :][seg[:, : shape[1] // 4, :] == 0] = 3
        sp = kind.train_spacings[i] if kind.train_spacings else kind.spacing
        for c, im in enumerate(imgs):
            write_sitk(f"{base}/imagesTr/case_{i:03d}_{c:04d}.nii.gz", im, sp, kind.direction)
        write_sitk(f"{base}/labelsTr/case_{i:03d}.nii.gz", seg, sp, kind.direction)
    for i, (shape, sp) in enumerate(zip([] if kind.png else kind.test_shapes, kind.test_spacings)):
        imgs, _ = kind.images(rng, shape)
        for c, im in enumerate(imgs):
            write_sitk(f"{base}/imagesTs/test_{i:03d}_{c:04d}.nii.gz", im, sp, kind.direction,
                       origin=(1.5 * i, -2.0, 0.25))
    channels = {str(c): m for c, m in enumerate(kind.channels)}
    ds = {"channel_names": channels, "labels": kind.labels,
          "numTraining": len(kind.shapes), "file_ending": ".png" if kind.png else ".nii.gz"}
    if kind.regions_class_order:
        ds["regions_class_order"] = kind.regions_class_order
    if kind.reader:
        ds["overwrite_image_reader_writer"] = kind.reader
    with open(f"{base}/dataset.json", "w") as f:
        json.dump(ds, f, indent=2)
    return name


def make_model(did, name, rng, configuration="3d_fullres", plans_name="nnUNetPlans", trainer="nnUNetTrainer"):
    """nnU-Net's plans for the dataset and a random checkpoint in nnU-Net's results layout; `trainer` other than
    nnUNetTrainer builds its own network with nnU-Net's trainer class (build_network_architecture)."""
    pre = os.path.join(WORK, "preprocessed", name)
    plans = json.load(open(f"{pre}/{plans_name}.json"))
    ds = json.load(open(os.path.join(WORK, "raw", name, "dataset.json")))
    pm = PlansManager(plans)
    cm = pm.get_configuration(configuration)
    n_in = len(ds["channel_names"])
    if cm.previous_stage_name is not None:  # nnU-Net's determine_num_input_channels: one per foreground label
        n_in += len(pm.get_label_manager(ds).foreground_labels)
    n_out = pm.get_label_manager(ds).num_segmentation_heads
    torch.manual_seed(int(rng.integers(1 << 30)))
    if trainer != "nnUNetTrainer":
        from nnunetv2.training.nnUNetTrainer.primus import primus_trainers
        assert all(p % 8 == 0 for p in cm.patch_size), f"{name}: patch {cm.patch_size} is not a multiple of 8"
        net = getattr(primus_trainers, trainer).build_network_architecture(pm, cm, n_in, n_out, False)
        with torch.no_grad():  # norms and layer scales away from their initial ones and zeros
            for q in net.parameters():
                q.add_(0.05 * torch.randn_like(q))
    else:
        net = get_network_from_plans(cm.network_arch_class_name, cm.network_arch_init_kwargs,
                                     cm.network_arch_init_kwargs_req_import, n_in, n_out, allow_init=True,
                                     deep_supervision=True)
    with torch.no_grad():
        for mod in net.modules():
            if isinstance(mod, (torch.nn.InstanceNorm3d, torch.nn.InstanceNorm2d)) and mod.affine:
                mod.weight.add_(0.2 * torch.randn_like(mod.weight))
                mod.bias.add_(0.2 * torch.randn_like(mod.bias))
            if isinstance(mod, (torch.nn.Conv3d, torch.nn.Conv2d)):
                mod.weight.mul_(1.5)
    folder = os.path.join(WORK, "results", name, f"{trainer}__{plans_name}__{configuration}")
    os.makedirs(f"{folder}/fold_0", exist_ok=True)
    shutil.copy(f"{pre}/{plans_name}.json", f"{folder}/plans.json")
    shutil.copy(f"{pre}/dataset.json", f"{folder}/dataset.json")
    ck = {"network_weights": net.state_dict(), "optimizer_state": None, "grad_scaler_state": None,
          "logging": {}, "_best_ema": None, "current_epoch": 1,
          "init_args": {"plans": plans, "configuration": configuration, "fold": 0, "dataset_json": ds,
                        "device": "cpu"},
          "trainer_name": trainer,
          "inference_allowed_mirroring_axes": (0, 1) if configuration == "2d" else (0, 1, 2)}
    torch.save(ck, f"{folder}/fold_0/checkpoint_final.pth")
    return folder


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-4000:]}")
    return p.stdout


def read_seg(path):
    return sitk.GetArrayFromImage(sitk.ReadImage(path))


def to_file_order(prob, image):
    """NibabelIOWithReorient's probabilities (C, z, y, x of the RAS-reoriented array) in the file's
    (z, y, x) array order, as ITK (medseg) reads it."""
    import nibabel as nib
    ornt = nib.orientations.io_orientation(nib.load(image).affine)
    back = nib.orientations.ornt_transform(nib.orientations.axcodes2ornt(("R", "A", "S")), ornt)
    return np.stack([nib.orientations.apply_orientation(c.transpose(2, 1, 0), back).transpose(2, 1, 0) for c in prob])


def compare(kind, folder_ref, folder_ms, file_ending, reoriented_from=None):
    """Worst probability difference and label disagreements over the test cases."""
    worst = (0.0, None, None)
    bad_labels = []
    cases = sorted(f[:-4] for f in os.listdir(folder_ref) if f.endswith(".npz"))
    if not cases:
        raise RuntimeError(f"{kind}: nnU-Net wrote no probabilities in {folder_ref}")
    for case in cases:
        ref = np.load(f"{folder_ref}/{case}.npz")["probabilities"].astype(np.float64)
        if reoriented_from:  # nnU-Net's npz holds its canonical (RAS) array, medseg's the file's
            ref = to_file_order(ref, f"{reoriented_from}/{case}_0000.nii.gz")
        ms_file = f"{folder_ms}/{case}.npz"
        if not os.path.exists(ms_file):
            raise RuntimeError(f"{kind}/{case}: medseg wrote no {ms_file}")
        got = np.load(ms_file)["probabilities"].astype(np.float64)
        if ref.shape != got.shape:
            raise RuntimeError(f"{kind}/{case}: probabilities of shape {got.shape}, nnU-Net's {ref.shape}")
        diff = np.abs(ref - got)
        npy = f"{folder_ms}/{case}_probabilities.npy"  # medseg's own format (--probabilities_format both)
        if os.path.exists(npy):
            mine = np.load(npy).astype(np.float64)
            if mine.shape != ref.shape:
                raise RuntimeError(f"{kind}/{case}: {npy} has shape {mine.shape}, nnU-Net's probabilities {ref.shape}")
            diff = np.maximum(diff, np.abs(ref - mine))
        i = np.unravel_index(int(np.argmax(diff)), diff.shape)
        if diff[i] >= worst[0]:
            worst = (float(diff[i]), case, tuple(int(v) for v in i))
        seg_ref = read_seg(f"{folder_ref}/{case}{file_ending}")
        seg_ms = read_seg(f"{folder_ms}/{case}{file_ending}")
        srt = np.sort(ref, axis=0)
        margin = srt[-1] - srt[-2]
        # the probabilities' array order is the segmentation's (both transposed back)
        differ = seg_ref != seg_ms
        n_bad = int(np.sum(differ & (margin > MARGIN)))
        if n_bad:
            bad_labels.append(f"{case}: {n_bad} label(s) differ where nnU-Net's margin > {MARGIN}")
        print(f"  {kind}/{case}: max |p - p_nnunet| = {diff[i]:.3g} at {tuple(int(v) for v in i)}, "
              f"labels differing {int(differ.sum())}/{differ.size}")
    return worst, bad_labels


def check_preprocessing(did, name, configuration, plans_name="nnUNetPlans"):
    """Training preprocessing: medseg_preprocess's .npy files against nnU-Net's DefaultPreprocessor.run_case
    on every training case, data and segmentation; the largest difference (0 when equal bit for bit)."""
    from nnunetv2.preprocessing.preprocessors.default_preprocessor import DefaultPreprocessor
    env = dict(os.environ, MEDSEG_RAW=os.path.join(WORK, "raw"), MEDSEG_PREPROCESSED=os.path.join(WORK, "preprocessed"))
    p = subprocess.run([f"{ARGS.bin}/medseg_preprocess", "-d", str(did), "-c", configuration, "--np", "1",
                        "--plans_name", plans_name, "--no-progress"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"medseg_preprocess failed:\n{p.stdout[-3000:]}")
    pre = os.path.join(WORK, "preprocessed", name)
    plans = json.load(open(f"{pre}/{plans_name}.json"))
    ds = json.load(open(f"{pre}/dataset.json"))
    pm = PlansManager(plans)
    cm = pm.get_configuration(configuration)
    raw = os.path.join(WORK, "raw", name)
    ending = ds["file_ending"]
    worst = 0.0
    for lab in sorted(os.listdir(f"{raw}/labelsTr")):
        case = lab[: -len(ending)]
        images = sorted(f"{raw}/imagesTr/{f}" for f in os.listdir(f"{raw}/imagesTr") if f.startswith(case + "_"))
        data, seg, _ = DefaultPreprocessor(verbose=False).run_case(images, f"{raw}/labelsTr/{lab}", pm, cm, ds)
        folder = f"{pre}/{cm.data_identifier}"
        mine = np.load(f"{folder}/{case}.npy")
        mine_seg = np.load(f"{folder}/{case}_seg.npy")
        if mine.shape != data.shape or mine_seg.shape != seg.shape:
            raise RuntimeError(f"{name}/{case}: preprocessed shape {mine.shape}, nnU-Net's {data.shape}")
        d = float(np.abs(mine.astype(np.float64) - data).max())
        if not np.array_equal(mine_seg.astype(np.int32), seg.astype(np.int32)):
            raise RuntimeError(f"{name}/{case}: the preprocessed segmentation differs from nnU-Net's in "
                               f"{int((mine_seg.astype(np.int32) != seg).sum())} voxel(s)")
        worst = max(worst, d)
    return worst


def check_plans(name, kind):
    """medseg_plan_experiment -pl <the planner's name> on nnU-Net's fingerprint writes nnU-Net's plans (less
    medseg's own "medseg" notes)."""
    pre = os.path.join(WORK, "preprocessed", name)
    mine_file = os.path.join(WORK, f"{name}_{kind.plans}_medseg.json")
    run([f"{ARGS.bin}/medseg_plan_experiment", "--fingerprint", f"{pre}/dataset_fingerprint.json", "--dataset-json",
         os.path.join(WORK, "raw", name, "dataset.json"), "--dataset-name", name, "-pl", kind.planner,
         "-o", mine_file])
    mine = json.load(open(mine_file))
    ref = json.load(open(f"{pre}/{kind.plans}.json"))
    for c in mine.get("configurations", {}).values():
        c.pop("medseg", None)
    if mine != ref:
        keys = sorted(k for k in set(mine) | set(ref) if mine.get(k) != ref.get(k))
        detail = {k: (mine.get(k), ref.get(k)) for k in keys if k != "configurations"}
        for c in sorted(set(mine.get("configurations", {})) | set(ref.get("configurations", {}))):
            a, b = mine["configurations"].get(c, {}), ref["configurations"].get(c, {})
            detail.update({f"{c}.{k}": (a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)})
        raise RuntimeError(f"{kind.name}: medseg's -pl {kind.planner} plans differ from nnU-Net's: {detail}")
    print(f"  {kind.name}: medseg_plan_experiment -pl {kind.planner} writes nnU-Net's plans")


def predict_stage(kind, name, folder, tag="", prev=None):
    """nnU-Net's predictor and medseg_predict (exact, then default) on the kind's test images with the model in
    `folder`. `prev` holds each side's previous-stage segmentations (cascade): {"nnunet": DIR, "exact": DIR,
    "default": DIR}. Returns the worst difference per medseg mode, and each side's output folder."""
    images = os.path.join(WORK, "raw", name, "imagesTs")
    ref_out = os.path.join(WORK, "out_nnunet", name + tag)
    os.makedirs(ref_out, exist_ok=True)
    pred = nnUNetPredictor(tile_step_size=0.5, use_gaussian=True, use_mirroring=kind.mirroring,
                           perform_everything_on_device=False, device=torch.device("cpu"),
                           verbose=False, verbose_preprocessing=False, allow_tqdm=False)
    pred.initialize_from_trained_model_folder(folder, use_folds=(0,), checkpoint_name="checkpoint_final.pth")
    pred.predict_from_files_sequential(images, ref_out, save_probabilities=True, overwrite=True,
                                       folder_with_segs_from_prev_stage=prev["nnunet"] if prev else None)
    ms_model = os.path.join(WORK, "medseg_models", name + tag)
    run([f"{ARGS.bin}/medseg_import_nnunet", "-i", folder, "-o", ms_model, "--overwrite"])
    ending = ".png" if kind.png else ".nii.gz"
    results, outputs = {}, {"nnunet": ref_out}
    for mode, extra in (("exact", ["--exact_nnunet"]), ("default", [])):
        ms_out = os.path.join(WORK, f"out_medseg_{mode}", name + tag)
        # both probability formats: nnU-Net's .npz and medseg's _probabilities.npy, each compared with nnU-Net's
        cmd = [f"{ARGS.bin}/medseg_predict", "-i", images, "-o", ms_out, "-m", ms_model, "--save_probabilities",
               "--probabilities_format", "both", "--threads", str(ARGS.threads), "-npp", "0", "-nps", "0",
               "--disable_progress_bar", "--amp", "off"] + ([] if kind.mirroring else ["--disable_tta"])
        if prev:  # medseg's cascade runs on medseg's own first stage
            cmd += ["-prev_stage_predictions", prev[mode]]
        run(cmd + extra + kind.medseg_args + ARGS.medseg_args.split())
        results[mode] = compare(f"{kind.name}{tag} ({mode})", ref_out, ms_out, ending,
                                images if kind.reader == "NibabelIOWithReorient" else None)
        outputs[mode] = ms_out
    if kind.trainer != "nnUNetTrainer":
        check_export_round_trip(kind, name + tag, ms_model, images, ref_out)
    return results, outputs


def check_export_round_trip(kind, name, ms_model, images, ref_out):
    """A trainer's own network (Primus) both ways: the imported model exported again with medseg_export_nnunet
    must load in nnU-Net's predictor under that trainer and predict exactly what the original folder did."""
    exported = os.path.join(WORK, "exported", name)
    run([f"{ARGS.bin}/medseg_export_nnunet", "-m", ms_model, "-o", exported, "--overwrite"])
    out = os.path.join(WORK, "out_nnunet_exported", name)
    os.makedirs(out, exist_ok=True)
    pred = nnUNetPredictor(tile_step_size=0.5, use_gaussian=True, use_mirroring=kind.mirroring,
                           perform_everything_on_device=False, device=torch.device("cpu"),
                           verbose=False, verbose_preprocessing=False, allow_tqdm=False)
    pred.initialize_from_trained_model_folder(exported, use_folds=(0,), checkpoint_name="checkpoint_final.pth")
    assert type(pred.network).__name__.startswith("Primus"), type(pred.network).__name__
    pred.predict_from_files_sequential(images, out, save_probabilities=True, overwrite=True)
    for f in sorted(os.listdir(ref_out)):
        if f.endswith(".npz"):
            a = np.load(os.path.join(ref_out, f))["probabilities"]
            b = np.load(os.path.join(out, f))["probabilities"]
            if not np.array_equal(a, b):
                raise SystemExit(f"{name}: nnU-Net's prediction from medseg's export differs from the original "
                                 f"folder's on {f} by {np.abs(a - b).max():.3g}")
    print(f"  {name}: exported again, nnU-Net ({kind.trainer}) predicts exactly as from the original folder")


def check_postprocessing(kind, name, predictions):
    """nnU-Net's apply_postprocessing_to_folder and medseg_apply_postprocessing on the same segmentations
    (nnU-Net's predictions), with the same two steps: keep the largest component of all foreground, then of
    the last label (region). The results must be equal voxel for voxel; returns the cases compared."""
    from nnunetv2.postprocessing.remove_connected_components import (
        apply_postprocessing_to_folder, remove_all_but_largest_component_from_segmentation)
    ds = json.load(open(f"{predictions}/dataset.json"))
    values = kind.regions_class_order or sorted(v for v in ds["labels"].values()
                                               if isinstance(v, int) and v > 0 and not
                                               (kind.labels.get("ignore") == v))
    kwargs = [{"labels_or_regions": list(values)}, {"labels_or_regions": values[-1]}]
    ref_pp = os.path.join(WORK, "pp_nnunet", name)
    apply_postprocessing_to_folder(predictions, ref_pp, [remove_all_but_largest_component_from_segmentation] * 2,
                                   kwargs, f"{predictions}/plans.json", f"{predictions}/dataset.json", 1)
    ending = ds["file_ending"]
    pp_json = os.path.join(WORK, f"{name}_postprocessing.json")
    with open(pp_json, "w") as f:
        json.dump({"postprocessing_fns": ["remove_all_but_largest_component_from_segmentation"] * 2,
                   "postprocessing_kwargs": kwargs, "file_ending": ending}, f)
    ms_pp = os.path.join(WORK, "pp_medseg", name)
    run([f"{ARGS.bin}/medseg_apply_postprocessing", "-i", predictions, "-o", ms_pp, "--pp_json", pp_json, "--np", "1"])
    cases = sorted(f for f in os.listdir(predictions) if f.endswith(ending))
    changed = 0
    for case in cases:
        a, b = read_seg(f"{ref_pp}/{case}"), read_seg(f"{ms_pp}/{case}")
        if a.shape != b.shape or not np.array_equal(a, b):
            n = int((a != b).sum()) if a.shape == b.shape else "all"
            raise RuntimeError(f"{kind.name}/{case}: postprocessed segmentations differ in {n} voxel(s)")
        changed += int((a != read_seg(f"{predictions}/{case}")).sum())
    print(f"  {kind.name}: postprocessing equal to nnU-Net's on {len(cases)} case(s) ({changed} voxels removed)")
    return len(cases)


def add_cascade(name, plans_name):
    """nnU-Net plans no 3d_lowres for images this small: add one as its planner writes it (a coarser spacing,
    its own data, next_stage), and 3d_cascade_fullres on top of 3d_fullres."""
    path = os.path.join(WORK, "preprocessed", name, f"{plans_name}.json")
    plans = json.load(open(path))
    full = plans["configurations"]["3d_fullres"]
    low = dict(full, data_identifier=f"{plans_name}_3d_lowres", spacing=[1.6 * s for s in full["spacing"]],
               next_stage="3d_cascade_fullres")
    plans["configurations"]["3d_lowres"] = low
    plans["configurations"]["3d_cascade_fullres"] = {"inherits_from": "3d_fullres", "previous_stage": "3d_lowres"}
    with open(path, "w") as f:
        json.dump(plans, f, indent=2)


def worse(a, b):
    """Two stages' results as one: the larger worst difference, every label disagreement."""
    return (max(a[0], b[0], key=lambda w: w[0]), a[1] + b[1])


def check_kind(did, kind, rng):
    """Predicts the kind's test cases with nnU-Net and with medseg (exact, then default); the worst
    difference of each medseg mode."""
    t0 = time.time()
    name = make_dataset(did, kind, rng)
    extract_fingerprints([did], num_processes=1, check_dataset_integrity=True, verbose=False,
                         show_progress_bar=False)
    plan_experiments([did], experiment_planner_class_name=kind.planner)
    if kind.planner != "ExperimentPlanner":
        check_plans(name, kind)
    if kind.cascade:
        add_cascade(name, kind.plans)
        pp = max(check_preprocessing(did, name, c, kind.plans) for c in ("3d_lowres", "3d_fullres"))
        low, outputs = predict_stage(kind, name, make_model(did, name, rng, "3d_lowres", kind.plans), "_lowres")
        casc, _ = predict_stage(kind, name, make_model(did, name, rng, "3d_cascade_fullres", kind.plans),
                                "_cascade", prev=outputs)
        results = {mode: worse(low[mode], casc[mode]) for mode in ("exact", "default")}
    else:
        configuration = "2d" if kind.png else "3d_fullres"
        folder = make_model(did, name, rng, configuration, kind.plans, kind.trainer)
        pp = check_preprocessing(did, name, configuration, kind.plans)
        results, outputs = predict_stage(kind, name, folder)
        check_postprocessing(kind, name, outputs["nnunet"])
    print(f"  {kind.name}: training preprocessing, largest difference from nnU-Net's {pp:.3g}")
    print(f"{kind.name}: worst exact {results['exact'][0][0]:.3g}, default {results['default'][0][0]:.3g}, "
          f"preprocessing {pp:.3g}, {time.time() - t0:.1f} s")
    results["preprocessing"] = pp
    return results


def main():
    names = ARGS.kinds or list(KINDS)
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        sys.exit(f"unknown kind(s) {unknown}; known: {list(KINDS)}")
    rng = np.random.default_rng(1234)
    failures = []
    for n in names:
        results = check_kind(900 + list(KINDS).index(n), KINDS[n], rng)
        if results["preprocessing"] > 0:
            failures.append(f"{n}: training preprocessing differs from nnU-Net's by {results['preprocessing']:.3g}")
        for mode, tol in (("exact", KINDS[n].exact_tol or ARGS.tol), ("default", ARGS.default_tol)):
            worst, bad = results[mode]
            if worst[0] > tol:
                failures.append(f"{n} ({mode}): probability differs by {worst[0]:.3g} > {tol} "
                                f"(case {worst[1]}, voxel (class, z, y, x) {worst[2]})")
            failures += [f"{n} ({mode}): {b}" for b in bad]
    if failures:
        print("nnU-Net prediction parity FAILED:")
        for f in failures:
            print("  " + f)
        sys.exit(1)
    own = ", ".join(f"{n} {KINDS[n].exact_tol}" for n in names if KINDS[n].exact_tol)
    print(f"nnU-Net prediction parity: {len(names)} kind(s): --exact_nnunet within {ARGS.tol}"
          f"{f' ({own})' if own else ''}, the defaults within {ARGS.default_tol}")


if __name__ == "__main__":
    try:
        main()
    finally:
        if not ARGS.keep:
            shutil.rmtree(WORK, ignore_errors=True)
