"""FLOPs of one forward pass of nnU-Net's network for a plans architecture block, counted by torch's own
FlopCounterMode (convolutions and transposed convolutions, 2 per multiply-accumulate), for medseg's test of
planning::forward_macs (tests/base/planning_network_flops_test.cpp).

    python network_flops_reference.py SPEC.json [SPEC.json ...]
    # each: {"architecture": {plans.json's block}, "in": 1, "classes": 3, "patch": [...]}

Prints one total per file, a line each. The network is built as nnU-Net's predictor builds it (get_network_from_plans, deep
supervision off). Run with the nnU-Net venv of scripts/nnunet_reference.sh; never a run-time dependency.
"""
import json
import sys

import torch
from nnunetv2.utilities.get_network_from_plans import get_network_from_plans
from torch.utils.flop_counter import FlopCounterMode


def flops(path):
    spec = json.load(open(path))
    arch = spec["architecture"]
    net = get_network_from_plans(arch["network_class_name"], arch["arch_kwargs"],
                                 arch["_kw_requires_import"], spec["in"], spec["classes"],
                                 allow_init=True, deep_supervision=False)
    net.eval()
    x = torch.zeros([1, spec["in"], *spec["patch"]])
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        net(x)
    return counter.get_total_flops()


def main():
    for path in sys.argv[1:]:
        print(flops(path))


if __name__ == "__main__":
    main()
