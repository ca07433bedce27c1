#!/usr/bin/env bash
# Prints the path of a Python interpreter whose torch is the same version as the LibTorch a build uses,
# for the side-by-side benchmarks (never a run-time dependency of medseg):
#   LibTorch 1.13 (MEDSEG_TORCH=debian)  Debian's /usr/bin/python3 with python3-torch 1.13.1
#   LibTorch 2.11 (the default build)    a venv outside the checkout, $MEDSEG_CACHE/venv-torch-2.11.0, made
#                                        once from the same sha256-pinned torch wheel (scripts/install_libtorch.sh
#                                        keeps it), installed without its CUDA dependency wheels: the machine's
#                                        CUDA toolkit and the libraries install_libtorch.sh unpacked serve it
#   scripts/bench/python_reference.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: python_reference.sh BUILD_DIR}
torch_cmake=$(sed -n 's/^Torch_DIR:[A-Z]*=//p' "$build/CMakeCache.txt" 2>/dev/null)
[ -n "$torch_cmake" ] || { echo "python_reference: $build is not a configured medseg build" >&2; exit 1; }
version=$(sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\).*/\1/p' "$torch_cmake/TorchConfigVersion.cmake" | head -1)
case "$version" in
  1.13*) echo /usr/bin/python3; exit 0 ;;
  2.11*) ;;
  *) echo "python_reference: no Python reference for LibTorch '$version'" >&2; exit 1 ;;
esac
cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
venv=$cache/venv-torch-2.11.0
if [ ! -f "$venv/READY" ]; then
  torch_dir=$(bash "$root/scripts/install_libtorch.sh")
  wheel=$(ls "$cache"/wheels/torch-2.11.0-*.whl | head -1)
  echo "python_reference: making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps --no-warn-conflicts "$wheel" >&2
  "$venv/bin/pip" install --quiet numpy filelock typing-extensions sympy networkx jinja2 fsspec >&2
  # The CUDA libraries the toolkit lacks, where torch's RPATH ($ORIGIN/../../nvidia/...) looks for them.
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  [ -d "${torch_dir%/torch/share/cmake/Torch}/nvidia" ] && cp -r "${torch_dir%/torch/share/cmake/Torch}/nvidia" "$site/"
  "$venv/bin/python" -c 'import torch; assert torch.__version__.startswith("2.11.0"), torch.__version__' >&2
  touch "$venv/READY"
fi
echo "$venv/bin/python"
