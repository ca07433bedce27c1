#!/usr/bin/env python3
"""Turn a trained nnU-Net v2 model folder into a medseg model folder.

    python3 scripts/import_nnunet_model.py NNUNET_MODEL_FOLDER MEDSEG_MODEL_FOLDER [-f 0 1 ...] [-chk checkpoint_final]

NNUNET_MODEL_FOLDER is e.g. $nnUNet_results/Dataset004_Hippocampus/nnUNetTrainer__nnUNetPlans__3d_fullres
(plans.json, dataset.json, fold_K/checkpoint_final.pth); MEDSEG_MODEL_FOLDER is where the medseg folder is
written, usually the same relative path under $MEDSEG_RESULTS. Needs Python 3 and torch (to unpickle the
.pth files); nnU-Net itself is not needed.

What it does (docs/predict.md):
  * copies plans.json, dataset.json and dataset_fingerprint.json (or takes plans/dataset from the checkpoint's
    init_args when the files are missing);
  * keeps each network tensor once: nnU-Net's state dict lists the encoder twice (decoder.encoder.* is the same
    module as encoder.*) and every ConvDropoutNormReLU's conv/norm a second time under .all_modules.<i>;
    prefixes added by DDP ("module.") or torch.compile ("_orig_mod.") are removed;
  * the remaining names are medseg's state-dict names (lib/models registers dynamic-network-architectures'
    module names: encoder.stages.*, encoder.stem.*, decoder.stages.*, decoder.transpconvs.*, decoder.seg_layers.*);
  * writes fold_K/<chk>.ckpt in medseg's MEDSEGCK container (docs/checkpoints.md) with extra = configuration,
    in_channels, num_classes, inference_allowed_mirroring_axes, trainer_name and imported_from (source folder,
    checkpoint file, its SHA-256, nnU-Net epoch, dropped alias count, time of the import).
"""
import argparse
import datetime
import hashlib
import json
import os
import re
import shutil
import struct
import sys
import zlib
from collections import OrderedDict

import torch

MAGIC = b"MEDSEGCK"
FORMAT_VERSION = 1
ALIGN = 64
DTYPES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64",
    torch.bool: "bool",
}


def align_up(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: same bytes as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write_medseg_checkpoint(path, meta, named_tensors):
    """MEDSEGCK version 1: preamble, JSON header, 64-byte aligned blobs, (payload size, CRC32, 'CKOK')."""
    blobs, entries, payloads, offset = [], [], [], 0
    for name, t in named_tensors:
        if t.dtype not in DTYPES:
            raise SystemExit(f"{path}: tensor {name} has unsupported dtype {t.dtype}")
        data = tensor_bytes(t)
        offset = align_up(offset)
        blobs.append({"dtype": DTYPES[t.dtype], "offset": offset, "nbytes": len(data)})
        shape = list(t.shape)
        strides, s = [], 1
        for n in reversed(shape):  # C-order strides of the contiguous copy, in elements
            strides.insert(0, s)
            s *= n
        entries.append({"name": name, "blob": len(blobs) - 1, "dtype": DTYPES[t.dtype], "shape": shape,
                        "strides": strides, "storage_offset": 0})
        payloads.append((offset, data))
        offset += len(data)
    data_bytes = offset
    header = json.dumps({"format": "medseg-checkpoint", "meta": meta, "blobs": blobs, "data_bytes": data_bytes,
                         "tensors": entries}).encode("utf-8")
    head = MAGIC + struct.pack("<IIQ", FORMAT_VERSION, 0, len(header)) + header
    data_start = align_up(len(head))
    body = bytearray(head + b"\0" * (data_start - len(head)))
    for off, data in payloads:
        body += b"\0" * (data_start + off - len(body))
        body += data
    body += b"\0" * (data_start + data_bytes - len(body))
    payload_size = len(body)
    body += struct.pack("<QI", payload_size, zlib.crc32(bytes(body)) & 0xFFFFFFFF) + b"CKOK"
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def strip_prefixes(key):
    for p in ("module.", "_orig_mod."):
        while key.startswith(p):
            key = key[len(p):]
    return key


def is_alias_name(key):
    return key.startswith("decoder.encoder.") or ".all_modules." in key


def same_storage(a, b):
    return (a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
            and a.dtype == b.dtype)


def deduplicate(state_dict, source):
    """Drops alias keys; each dropped tensor must be a kept tensor (same storage, or equal to its twin)."""
    items = [(strip_prefixes(k), v) for k, v in state_dict.items()]
    kept = OrderedDict((k, v) for k, v in items if not is_alias_name(k))
    dropped = [(k, v) for k, v in items if is_alias_name(k)]
    for k, v in dropped:
        twin = k[len("decoder."):] if k.startswith("decoder.encoder.") else None
        if twin is not None and twin in kept and kept[twin].shape == v.shape and torch.equal(kept[twin], v):
            continue
        if any(same_storage(v, t) or (t.shape == v.shape and t.dtype == v.dtype and torch.equal(t, v))
               for t in kept.values()):
            continue
        raise SystemExit(f"{source}: '{k}' looks like an alias but no kept tensor has its values; not converting")
    return kept, len(dropped)


def load_pth(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=False)
    except TypeError:  # torch < 1.13 has no weights_only
        return torch.load(path, map_location="cpu")


def json_or(path, fallback, what):
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    if fallback is None:
        raise SystemExit(f"{path}: not found and the checkpoint has no copy of {what}")
    return fallback


def last_seg_layer_outputs(weights):
    heads = [(int(m.group(1)), k) for k in weights for m in [re.match(r"decoder\.seg_layers\.(\d+)\.weight$", k)] if m]
    if not heads:
        return None
    return int(weights[max(heads)[1]].shape[0])


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("nnunet_folder")
    ap.add_argument("medseg_folder")
    ap.add_argument("-f", "--folds", nargs="+", help="folds to import (default: every fold_K with the checkpoint)")
    ap.add_argument("-chk", "--checkpoint", default="checkpoint_final", help="checkpoint name (default checkpoint_final)")
    a = ap.parse_args()

    src = os.path.abspath(a.nnunet_folder)
    chk = a.checkpoint[:-4] if a.checkpoint.endswith(".pth") else a.checkpoint
    folds = a.folds or sorted(
        (d[5:] for d in os.listdir(src)
         if d.startswith("fold_") and os.path.isfile(os.path.join(src, d, chk + ".pth"))),
        key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    if not folds:
        raise SystemExit(f"{src}: no fold_K/{chk}.pth found")
    os.makedirs(a.medseg_folder, exist_ok=True)

    for fold in folds:
        pth = os.path.join(src, f"fold_{fold}", chk + ".pth")
        if not os.path.isfile(pth):
            raise SystemExit(f"{pth}: not found")
        ck = load_pth(pth)
        if "network_weights" not in ck:
            raise SystemExit(f"{pth}: no 'network_weights' (not an nnU-Net v2 checkpoint?)")
        init = ck.get("init_args", {}) or {}
        plans = json_or(os.path.join(src, "plans.json"), init.get("plans"), "plans")
        dataset = json_or(os.path.join(src, "dataset.json"), init.get("dataset_json"), "dataset.json")
        configuration = init.get("configuration") or os.path.basename(src.rstrip("/")).split("__")[-1]
        weights, n_dropped = deduplicate(ck["network_weights"], pth)
        channels = dataset.get("channel_names", dataset.get("modality", {}))
        mirror = ck.get("inference_allowed_mirroring_axes")
        extra = {
            "configuration": configuration,
            "in_channels": len(channels),
            "num_classes": last_seg_layer_outputs(weights),
            "inference_allowed_mirroring_axes": list(mirror) if mirror is not None else None,
            "trainer_name": ck.get("trainer_name", os.path.basename(src.rstrip("/")).split("__")[0]),
            "imported_from": {
                "tool": "scripts/import_nnunet_model.py",
                "folder": src,
                "checkpoint": os.path.relpath(pth, src),
                "sha256": sha256(pth),
                "nnunet_epoch": ck.get("current_epoch"),
                "aliases_dropped": n_dropped,
                "imported_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            },
        }
        if extra["num_classes"] is None:
            del extra["num_classes"]
        meta = {"kind": "medseg-training-checkpoint", "epoch": int(ck.get("current_epoch") or 0),
                "optimizer": {"type": "", "groups": [], "scalars": {}}, "grad_scaler": {}, "rng": {},
                "sampler": {}, "logs": [], "ema": ck.get("_best_ema"), "plans": plans, "dataset": dataset,
                "trainer_config": None, "fingerprint": None, "extra": extra,
                # medseg reads the metadata key-sorted; the label order (= region output order) travels as text.
                "dataset_text": json.dumps(dataset)}
        out_dir = os.path.join(a.medseg_folder, f"fold_{fold}")
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, chk + ".ckpt")
        write_medseg_checkpoint(out, meta, [("weights/" + k, v) for k, v in weights.items()])
        print(f"fold {fold}: {len(weights)} tensors ({n_dropped} aliases dropped) -> {out}")

    for name in ("plans.json", "dataset.json", "dataset_fingerprint.json"):
        if os.path.isfile(os.path.join(src, name)):
            shutil.copyfile(os.path.join(src, name), os.path.join(a.medseg_folder, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
