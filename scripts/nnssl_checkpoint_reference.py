"""An nnssl checkpoint and what nnU-Net's fine-tuning makes of it, for medseg's test
(tests/nn/training_pretrained_encoder_test.cpp).

nnssl is not on PyPI, so its checkpoint is written here the way nnssl writes one: AbstractTrainer.save_checkpoint's
dict (network_weights, optimizer_state, grad_scaler_state, logging, _best_ema, current_epoch, init_args,
trainer_name, nnssl_adaptation_plan) saved with torch.save, the adaptation plan laid out as AdaptationPlan.serialize()
lays it out, and the pretraining network built from dynamic-network-architectures as nnssl builds it.

The expected result is nnU-Net master's PretrainedTrainer.load_pretrained_weights (pretraining/pretrainedTrainer.py,
utilities/load_weights_utils.py), followed step by step on dynamic-network-architectures' own downstream network:
the pretrained stem and encoder selected by their keys, the one-channel input projection repeated over the input
channels and divided by their number, the position embedding resized with torch's trilinear interpolation, and
both modules loaded with load_state_dict (strict). nnunetv2 2.8.1 on PyPI lacks that code, hence the port.

    python nnssl_checkpoint_reference.py OUT_DIR --arch resenc|plain|primus --in 2 --out 3 \
        --pt_patch 32 32 32 --patch 48 32 40 [--seed 0]

    python nnssl_checkpoint_reference.py OUT_DIR --plans PLANS.json --configuration 3d_fullres

Writes OUT_DIR/nnssl.pth (the checkpoint; with --plans, of the configuration's U-Net, for a fine-tuning run on that
dataset, and nothing else) and OUT_DIR/expected.pt ({"state_dict": the downstream network's state
after loading, "encoder_keys": the names the load set}). Run with the nnU-Net venv of scripts/nnunet_reference.sh.
"""
import argparse
import os

import torch
import torch.nn.functional as F
from dynamic_network_architectures.architectures.primus import Primus
from dynamic_network_architectures.architectures.unet import PlainConvUNet, ResidualEncoderUNet

UNET_KWARGS = dict(n_stages=3, features_per_stage=[8, 16, 24], conv_op=torch.nn.Conv3d, kernel_sizes=[[3, 3, 3]] * 3,
                   strides=[[1, 1, 1], [2, 2, 2], [2, 2, 2]], n_conv_per_stage_decoder=[1, 1], conv_bias=True,
                   norm_op=torch.nn.InstanceNorm3d, norm_op_kwargs={"eps": 1e-5, "affine": True}, dropout_op=None,
                   dropout_op_kwargs=None, nonlin=torch.nn.LeakyReLU, nonlin_kwargs={"inplace": True})


def build(arch, cin, cout, patch):
    if arch == "primus":
        return Primus(cin, 48, (8, 8, 8), cout, 2, 2, tuple(patch), init_values=0.1, scale_attn_inner=True)
    if arch == "resenc":
        return ResidualEncoderUNet(cin, num_classes=cout, n_blocks_per_stage=[1, 2, 2], **UNET_KWARGS)
    return PlainConvUNet(cin, num_classes=cout, n_conv_per_stage=[2, 2, 2], **UNET_KWARGS)


def architecture_plans(arch):
    """AdaptationPlan.architecture_plans.serialize(): the preset's name and, for the dynamic U-Nets, their kwargs
    with the operators as dotted names."""
    if arch == "primus":
        return {"arch_class_name": "PrimusS", "arch_kwargs": None, "arch_kwargs_requiring_import": None}
    k = dict(UNET_KWARGS)
    k["n_blocks_per_stage" if arch == "resenc" else "n_conv_per_stage"] = [1, 2, 2] if arch == "resenc" else [2, 2, 2]
    for key in ("conv_op", "norm_op", "nonlin"):
        k[key] = k[key].__module__ + "." + k[key].__name__
    name = "ResidualEncoderUNet" if arch == "resenc" else "PlainConvUNet"
    return {"arch_class_name": name, "arch_kwargs": k, "arch_kwargs_requiring_import": ["conv_op", "norm_op", "nonlin"]}


def adaptation_plan(arch, net, pt_patch):
    pretrain_plan = {
        "dataset_name": "Dataset745_OpenNeuro", "plans_name": "nnsslPlans",
        "original_median_spacing_after_transp": [1.0, 1.0, 1.0], "image_reader_writer": "SimpleITKIO",
        "transpose_forward": [0, 1, 2], "transpose_backward": [0, 1, 2],
        "configurations": {"onemmiso": {
            "data_identifier": "nnsslPlans_onemmiso", "preprocessor_name": "DefaultPreprocessor",
            "spacing_style": "onemmiso", "normalization_schemes": ["ZScoreNormalization"], "use_mask_for_norm": [False],
            "resampling_fn_data": "resample_data_or_seg_to_shape",
            "resampling_fn_data_kwargs": {"is_seg": False, "order": 3, "order_z": 0, "force_separate_z": None},
            "resampling_fn_mask": "resample_data_or_seg_to_shape",
            "resampling_fn_mask_kwargs": {"is_seg": False, "order": 1, "order_z": 0, "force_separate_z": None},
            "spacing": [1, 1, 1], "patch_size": list(pt_patch)}},
        "experiment_planner_used": "ExperimentPlanner"}
    return {"architecture_plans": architecture_plans(arch), "pretrain_plan": pretrain_plan,
            "pretrain_num_input_channels": 1, "recommended_downstream_patchsize": list(pt_patch),
            "key_to_encoder": net.key_to_encoder, "key_to_stem": net.key_to_stem,
            "keys_to_in_proj": tuple(net.keys_to_in_proj), "key_to_lpe": getattr(net, "key_to_lpe", None)}


def resize_pos_embed(pos, pt_patch, patch, embed):
    """load_weights_utils.interpolate_patch_embed_3d: tokens as an x-y-z grid, trilinear, align_corners False."""
    grid_in = [p // e for p, e in zip(pt_patch, embed)]
    grid_out = [p // e for p, e in zip(patch, embed)]
    b, n, c = pos.shape
    g = pos.permute(0, 2, 1).reshape(b, c, *grid_in)
    g = F.interpolate(g, size=grid_out, mode="trilinear", align_corners=False)
    return g.reshape(b, c, -1).permute(0, 2, 1)


def load_like_nnunet(net, ckpt, cin, pt_patch, patch):
    """PretrainedTrainer.load_pretrained_weights, the branch every dynamic-network-architectures network takes
    (the stem's key is never itself a tensor's): encoder and stem selected, adapted and loaded strictly."""
    plan = ckpt["nnssl_adaptation_plan"]
    sd = ckpt["network_weights"]
    enc_key, stem_key = plan["key_to_encoder"], plan["key_to_stem"]
    enc = {k: v for k, v in sd.items() if k.startswith(enc_key)}
    stem = {k: v for k, v in sd.items() if k.startswith(stem_key)}
    if cin > plan["pretrain_num_input_channels"]:
        w = stem[plan["keys_to_in_proj"][0] + ".weight"].repeat(1, cin, 1, 1, 1) / cin
        for k in plan["keys_to_in_proj"]:
            stem[k + ".weight"] = w
            if stem_key.startswith(enc_key):
                enc[k + ".weight"] = w  # a PlainConvUNet's stem is in its encoder: medseg adapts it there too
    strip = lambda d, key: {k.replace(key, "", 1).lstrip("."): v for k, v in d.items()}
    new_enc, new_stem = strip(enc, enc_key), strip(stem, stem_key)
    if getattr(net, "key_to_lpe", None) and list(pt_patch) != list(patch):
        new_enc["pos_embed"] = resize_pos_embed(new_enc["pos_embed"], pt_patch, patch,
                                                new_stem["proj.weight"].shape[2:])
    net.get_submodule(net.key_to_encoder).load_state_dict(new_enc)
    net.get_submodule(net.key_to_stem).load_state_dict(new_stem)


def from_plans(plans_file, configuration):
    """The configuration's U-Net with one input and one output channel, and its architecture_plans entry."""
    import json
    from nnunetv2.utilities.get_network_from_plans import get_network_from_plans
    with open(plans_file) as f:
        c = json.load(f)["configurations"][configuration]
    arch = c["architecture"]
    net = get_network_from_plans(arch["network_class_name"], arch["arch_kwargs"], arch["_kw_requires_import"], 1, 1,
                                 allow_init=True, deep_supervision=False)
    entry = {"arch_class_name": arch["network_class_name"].split(".")[-1], "arch_kwargs": arch["arch_kwargs"],
             "arch_kwargs_requiring_import": arch["_kw_requires_import"]}
    return net, entry, c["patch_size"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--arch", choices=("resenc", "plain", "primus"))
    p.add_argument("--plans")
    p.add_argument("--configuration", default="3d_fullres")
    p.add_argument("--in", dest="cin", type=int)
    p.add_argument("--out", dest="cout", type=int)
    p.add_argument("--pt_patch", type=int, nargs=3)
    p.add_argument("--patch", type=int, nargs=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    torch.manual_seed(a.seed)
    if a.plans:
        pretrain, entry, a.pt_patch = from_plans(a.plans, a.configuration)
    else:
        pretrain = build(a.arch, 1, 1, a.pt_patch)  # a one-channel pretraining network (an MAE reconstructs its input)
    with torch.no_grad():
        for q in pretrain.parameters():
            q.add_(0.05 * torch.randn_like(q))
    opt = torch.optim.AdamW(pretrain.parameters(), lr=1e-4)
    y = pretrain(torch.randn(1, 1, *a.pt_patch))
    (y if torch.is_tensor(y) else y[0]).mean().backward()
    opt.step()
    plan = adaptation_plan(a.arch, pretrain, a.pt_patch)
    if a.plans:
        plan["architecture_plans"] = entry
    ckpt = {"network_weights": pretrain.state_dict(), "optimizer_state": opt.state_dict(), "grad_scaler_state": None,
            "logging": {"train_losses": [0.9, 0.7], "val_losses": [0.8, 0.6], "lrs": [1e-4, 1e-4],
                        "epoch_start_timestamps": [0.0, 1.0], "epoch_end_timestamps": [1.0, 2.0]},
            "_best_ema": 0.6, "current_epoch": 2,
            "init_args": {"plan": {"plans_name": "nnsslPlans"}, "configuration_name": "onemmiso", "fold": 0,
                          "device": torch.device("cpu")},
            "trainer_name": "BaseMAETrainer", "nnssl_adaptation_plan": plan,
            "citations": [{"type": "pretraining", "name": "MAE", "apa_citations": ["He et al. (2022)."]}]}
    os.makedirs(a.out_dir, exist_ok=True)
    torch.save(ckpt, os.path.join(a.out_dir, "nnssl.pth"))
    if a.plans:
        print(f"{a.out_dir}/nnssl.pth: {len(ckpt['network_weights'])} pretrained tensors")
        return
    downstream = build(a.arch, a.cin, a.cout, a.patch)
    before = {k: v.clone() for k, v in downstream.state_dict().items()}
    load_like_nnunet(downstream, torch.load(os.path.join(a.out_dir, "nnssl.pth"), weights_only=False), a.cin,
                     a.pt_patch, a.patch)
    after = downstream.state_dict()
    changed = [k for k in after if not torch.equal(after[k], before[k])]
    torch.save({"state_dict": after, "encoder_keys": changed}, os.path.join(a.out_dir, "expected.pt"))
    print(f"{a.out_dir}: {len(ckpt['network_weights'])} pretrained tensors, {len(changed)} set downstream")


if __name__ == "__main__":
    main()
