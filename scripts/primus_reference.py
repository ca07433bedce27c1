"""dynamic-network-architectures' Primus (the network nnU-Net's Primus trainers build) on a random input, saved
for medseg's parity test (tests/nn/models_primus_test.cpp): its state dict (perturbed away from the initial
values, so that norms and layer scales are not all ones), the input and the output of eval mode.

    python primus_reference.py OUT.pt --in 2 --out 3 --embed 48 --depth 2 --heads 2 --patch 8 4 8 \
        --shape 32 16 24 [--register 2] [--init_values 0.1] [--scale_attn_inner] [--seed 0]
        [--version 2 | --version 3 [--depth_per_level 1 2 1] [--ch_per_level 8 16 24 32] [--no_skips]]

--version 2 / 3 builds PrimusV2 / PrimusV3 (the residual patch embeddings) instead of Primus.

Run with the nnU-Net venv of scripts/nnunet_reference.sh (same torch as the build). Never a run-time dependency.
"""
import argparse

import torch
from dynamic_network_architectures.architectures.primus import Primus, PrimusV2, PrimusV3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--in", dest="cin", type=int, required=True)
    p.add_argument("--out", dest="cout", type=int, required=True)
    p.add_argument("--embed", type=int, required=True)
    p.add_argument("--depth", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--patch", type=int, nargs=3, required=True)
    p.add_argument("--shape", type=int, nargs=3, required=True)
    p.add_argument("--register", type=int, default=0)
    p.add_argument("--init_values", type=float, default=None)
    p.add_argument("--scale_attn_inner", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--version", type=int, choices=(1, 2, 3), default=1)
    p.add_argument("--depth_per_level", type=int, nargs="+", default=None)
    p.add_argument("--ch_per_level", type=int, nargs="+", default=None)
    p.add_argument("--no_skips", action="store_true")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    cls, extra = {1: (Primus, {}), 2: (PrimusV2, {}), 3: (PrimusV3, {"add_skips": not a.no_skips})}[a.version]
    if a.depth_per_level:
        extra["depth_per_level"] = tuple(a.depth_per_level)
    if a.ch_per_level:
        extra["ch_per_level"] = tuple(a.ch_per_level)
    net = cls(a.cin, a.embed, tuple(a.patch), a.cout, a.depth, a.heads, tuple(a.shape),
              num_register_tokens=a.register, init_values=a.init_values, scale_attn_inner=a.scale_attn_inner,
              drop_path_rate=0.2, **extra)
    with torch.no_grad():
        for q in net.parameters():
            q.add_(0.05 * torch.randn_like(q))
        net.mask_token.normal_()
    net.eval()
    x = torch.randn(2, a.cin, *a.shape)
    with torch.no_grad():
        y = net(x)
    torch.save({"state_dict": net.state_dict(), "input": x, "output": y,
                "parameters": sum(q.numel() for q in net.parameters())}, a.out)
    print(f"{a.out}: {len(net.state_dict())} tensors, output {tuple(y.shape)}")


if __name__ == "__main__":
    main()
