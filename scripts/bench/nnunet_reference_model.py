#!/usr/bin/env python3
"""Writes an nnU-Net v2 results folder for a medseg-planned configuration, for side-by-side benchmarks.

    PYTHON scripts/bench/nnunet_reference_model.py PREPROCESSED_DATASET_FOLDER RAW_DATASET_FOLDER PLANS CONFIG OUT

PYTHON must import nnunetv2 (nnU-Net's own code, from PyPI or a checkout on PYTHONPATH; never a dependency
of medseg). The network is built by nnU-Net from medseg's plans.json (the same format) and initialised the
way nnU-Net's trainer does (InitWeights_He(1e-2)); OUT gets plans.json, dataset.json and
fold_0/checkpoint_final.pth with the keys nnUNetPredictor reads. scripts/import_nnunet_model.py then gives
medseg the very same weights.
"""
import json
import os
import shutil
import sys

import torch
from nnunetv2.utilities.get_network_from_plans import get_network_from_plans
from nnunetv2.utilities.plans_handling.plans_handler import PlansManager
from nnunetv2.utilities.label_handling.label_handling import determine_num_input_channels
from dynamic_network_architectures.initialization.weight_init import InitWeights_He


def main():
    pre, raw, plans_name, config, out = sys.argv[1:6]
    plans = json.load(open(os.path.join(pre, plans_name + ".json")))
    dataset_json = json.load(open(os.path.join(raw, "dataset.json")))
    pm = PlansManager(plans)
    cm = pm.get_configuration(config)
    lm = pm.get_label_manager(dataset_json)
    in_ch = determine_num_input_channels(pm, cm, dataset_json)
    torch.manual_seed(1234)
    net = get_network_from_plans(cm.network_arch_class_name, cm.network_arch_init_kwargs,
                                 cm.network_arch_init_kwargs_req_import, in_ch, lm.num_segmentation_heads,
                                 allow_init=True, deep_supervision=True)
    net.apply(InitWeights_He(1e-2))
    os.makedirs(os.path.join(out, "fold_0"), exist_ok=True)
    shutil.copy(os.path.join(pre, plans_name + ".json"), os.path.join(out, "plans.json"))
    shutil.copy(os.path.join(raw, "dataset.json"), os.path.join(out, "dataset.json"))
    fp = os.path.join(pre, "dataset_fingerprint.json")
    if os.path.isfile(fp):
        shutil.copy(fp, os.path.join(out, "dataset_fingerprint.json"))
    mirror = tuple(range(len(cm.patch_size)))
    torch.save({"network_weights": net.state_dict(), "optimizer_state": None, "grad_scaler_state": None,
                "logging": {}, "_best_ema": None, "current_epoch": 1,
                "init_args": {"plans": plans, "configuration": config, "fold": 0, "dataset_json": dataset_json},
                "trainer_name": "nnUNetTrainer", "inference_allowed_mirroring_axes": mirror},
               os.path.join(out, "fold_0", "checkpoint_final.pth"))


if __name__ == "__main__":
    main()
