#!/usr/bin/env bash
# Prints the path of a Python interpreter with nnU-Net 2.8.1 on the same torch 2.11.0 wheel the default
# build's LibTorch comes from: the oracle of the parity checks (scripts/check_nnunet_predict_parity.sh).
# Never a run-time dependency of medseg.
#
#   scripts/nnunet_reference.sh
#
# The venv lives outside the checkout, in $MEDSEG_CACHE/venv-nnunet-2.8.1 (default ~/.cache/medseg), made
# once: the sha256-pinned torch wheel scripts/install_libtorch.sh keeps, then scripts/nnunet_requirements.txt
# (nnunetv2==2.8.1 and what it imports, every version pinned) with --no-deps, so that pip never swaps the
# torch version or fetches torch's CUDA wheels (the libraries install_libtorch.sh unpacked serve it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
venv=$cache/venv-nnunet-2.8.1
req=$root/scripts/nnunet_requirements.txt
stamp=$(sha256sum "$req" | cut -c1-16)
if [ "$(cat "$venv/READY" 2>/dev/null)" != "$stamp" ]; then
  torch_dir=$(bash "$root/scripts/install_libtorch.sh")
  wheel=$(ls "$cache"/wheels/torch-2.11.0-*.whl | head -1)
  echo "nnunet_reference: making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps --no-warn-conflicts "$wheel" >&2
  "$venv/bin/pip" install --quiet --no-deps --no-warn-conflicts -r "$req" >&2
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -d "${torch_dir%/torch/share/cmake/Torch}/nvidia" ] && cp -r "${torch_dir%/torch/share/cmake/Torch}/nvidia" "$site/"
  # torch makes $TMPDIR/torchinductor_$USER when nnU-Net is imported: a folder of its own, removed after.
  probe_tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnunet_reference.XXXXXX")
  TMPDIR=$probe_tmp "$venv/bin/python" -c 'import torch, nnunetv2.inference.predict_from_raw_data; assert torch.__version__.startswith("2.11.0"), torch.__version__' >&2
  rm -rf "$probe_tmp"
  echo "$stamp" >"$venv/READY"
fi
echo "$venv/bin/python"
