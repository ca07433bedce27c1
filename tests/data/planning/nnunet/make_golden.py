"""Writes the planner golden files of tests/base/planning_nnunet_golden_test.cpp by running nnU-Net v2's
own experiment planners (not medseg) on small synthetic fingerprints.

For every case below it writes, under tests/data/planning/nnunet/<dataset>/, the two planner inputs
(dataset.json, dataset_fingerprint.json) and one plans file per planner, exactly as nnU-Net saves it.
The Hippocampus default plans go to tests/data/planning/nnUNetPlans_hippocampus.json (the fixture of
planning_plans_test.cpp).

nnU-Net is not part of medseg and is not committed. To regenerate (no pip install needed), with Debian's
python3-numpy and python3-torch:
    git clone <nnUNet> <dynamic-network-architectures> <batchgenerators> into one folder SRC
    (the files in this folder were made from nnUNet 0e495086eb108ff79afe106291e8c15bd2f2bc3a,
     dynamic-network-architectures d35f85c7b92cbf3e9443b412fdc7c81f8e2e7b12,
     batchgenerators 9dc3d49b68ea11e0f37c14d5b75658d9eb364a5e)
    PYTHONPATH=tests/data/planning/nnunet/stubs:SRC/nnUNet:SRC/dynamic-network-architectures:SRC/batchgenerators \
      /usr/bin/python3 tests/data/planning/nnunet/make_golden.py
stubs/ replaces the image readers and resamplers (SimpleITK, scipy, skimage...) that the planners
import but never call while planning; any call into a stub raises.
"""
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PLANNING = os.path.dirname(HERE)


def props():
    return {"max": 1000.0, "mean": 100.0, "median": 90.0, "min": -5.0, "percentile_00_5": 1.0,
            "percentile_99_5": 800.0, "std": 50.0}


def hippocampus():
    # MSD Task04 as the reference notes describe it: 1 mm, median 36x50x35, 260 cases, 3 labels.
    n = 260
    ds = {"channel_names": {"0": "MRI"}, "labels": {"background": 0, "class1": 1, "class2": 2},
          "numTraining": n, "file_ending": ".nii.gz"}
    fp = {"foreground_intensity_properties_per_channel": {"0": props()},
          "median_relative_size_after_cropping": 1.0,
          "shapes_after_crop": [[36, 50, 35]] * n, "spacings": [[1.0, 1.0, 1.0]] * n}
    return ds, fp


def aniso_ct():
    # CT with thick slices along the LAST array axis (so nnU-Net transposes it first), varied
    # shapes and spacings (an even case count: the medians average two cases), large enough that a
    # 3d_lowres stage and the cascade are planned.
    n = 12
    spacings, shapes = [], []
    for i in range(n):
        inplane = 0.68 + 0.02 * i
        spacings.append([inplane, inplane, 2.5 + 0.25 * (i % 5)])
        shapes.append([480 + 4 * i, 460 + 6 * (i % 4), 90 + 7 * i])
    ds = {"channel_names": {"0": "CT"}, "labels": {"background": 0, "liver": 1, "tumor": 2, "vessel": 3},
          "numTraining": n, "file_ending": ".nii.gz"}
    fp = {"foreground_intensity_properties_per_channel": {"0": props()},
          "median_relative_size_after_cropping": 0.9, "shapes_after_crop": shapes, "spacings": spacings}
    return ds, fp


def two_channel_mri():
    # Two channels (z-scored MRI and noNorm), foreground smaller than 75% after cropping (so the
    # z-scored channel normalizes within the mask), mildly anisotropic z, odd case count.
    n = 9
    spacings, shapes = [], []
    for i in range(n):
        spacings.append([1.2 + 0.1 * (i % 3), 0.9, 0.9 + 0.05 * (i % 2)])
        shapes.append([120 + 5 * i, 170 + 3 * i, 150 - 2 * i])
    ds = {"channel_names": {"0": "T2", "1": "noNorm"}, "labels": {"background": 0, "edema": 1, "core": 2},
          "numTraining": n, "file_ending": ".nii.gz"}
    p = {"0": props(), "1": props()}
    fp = {"foreground_intensity_properties_per_channel": p, "median_relative_size_after_cropping": 0.6,
          "shapes_after_crop": shapes, "spacings": spacings}
    return ds, fp


# (dataset name, inputs, [(planner class, plans file written by nnU-Net, where it goes)])
RESENC = ["nnUNetPlannerResEncM", "nnUNetPlannerResEncL", "nnUNetPlannerResEncXL"]
CASES = [
    ("Dataset004_Hippocampus", hippocampus, ["ExperimentPlanner"] + RESENC),
    ("Dataset950_AnisoCT", aniso_ct, ["ExperimentPlanner", "nnUNetPlannerResEncM"]),
    ("Dataset951_TwoChannelMRI", two_channel_mri, ["ExperimentPlanner", "nnUNetPlannerResEncL"]),
]


def dump(obj, path, sort_keys):
    # batchgenerators.save_json: 4-space indent; nnU-Net sorts the fingerprint's keys, not the plans'.
    with open(path, "w") as f:
        json.dump(obj, f, indent=4, sort_keys=sort_keys)


def main():
    work = tempfile.mkdtemp()
    os.environ["nnUNet_raw"] = os.path.join(work, "raw")
    os.environ["nnUNet_preprocessed"] = os.path.join(work, "pre")
    os.environ["nnUNet_results"] = os.path.join(work, "res")
    from nnunetv2.experiment_planning.experiment_planners.default_experiment_planner import ExperimentPlanner
    from nnunetv2.experiment_planning.experiment_planners.residual_unets import residual_encoder_unet_planners as r
    from nnunetv2.imageio.simpleitk_reader_writer import SimpleITKIO
    # SimpleITKIO is nnU-Net's first reader for .nii.gz; the real check would open an image file.
    ExperimentPlanner.determine_reader_writer = lambda self: SimpleITKIO
    classes = {"ExperimentPlanner": ExperimentPlanner, "nnUNetPlannerResEncM": r.nnUNetPlannerResEncM,
               "nnUNetPlannerResEncL": r.nnUNetPlannerResEncL, "nnUNetPlannerResEncXL": r.nnUNetPlannerResEncXL}
    for name, make, planners in CASES:
        ds, fp = make()
        raw = os.path.join(work, "raw", name)
        pre = os.path.join(work, "pre", name)
        for d in ("imagesTr", "labelsTr"):
            os.makedirs(os.path.join(raw, d))
        os.makedirs(pre)
        for i in range(ds["numTraining"]):  # empty files: the planner only lists them
            for c in ds["channel_names"]:
                open(os.path.join(raw, "imagesTr", "case_%03d_%04d.nii.gz" % (i, int(c))), "w").close()
            open(os.path.join(raw, "labelsTr", "case_%03d.nii.gz" % i), "w").close()
        dump(ds, os.path.join(raw, "dataset.json"), False)
        dump(fp, os.path.join(pre, "dataset_fingerprint.json"), True)
        out = os.path.join(HERE, name)
        os.makedirs(out, exist_ok=True)
        shutil.copyfile(os.path.join(raw, "dataset.json"), os.path.join(out, "dataset.json"))
        shutil.copyfile(os.path.join(pre, "dataset_fingerprint.json"), os.path.join(out, "dataset_fingerprint.json"))
        for planner in planners:
            p = classes[planner](name)
            p.plan_experiment()
            src = os.path.join(pre, p.plans_identifier + ".json")
            dst = os.path.join(out, p.plans_identifier + ".json")
            if name == "Dataset004_Hippocampus" and planner == "ExperimentPlanner":
                dst = os.path.join(PLANNING, "nnUNetPlans_hippocampus.json")
            shutil.copyfile(src, dst)
            print(planner, "->", os.path.relpath(dst, PLANNING))
    shutil.rmtree(work)


if __name__ == "__main__":
    sys.exit(main())
