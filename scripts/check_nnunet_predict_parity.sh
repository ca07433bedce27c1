#!/usr/bin/env bash
# medseg_predict against nnU-Net 2.8.1's own predictor (nnUNetPredictor), file to file, on the same
# weights, for every input kind of scripts/nnunet_predict_parity.py; fails on a probability difference
# beyond 1e-4, naming the kind, the case and the voxel (docs/predict.md, "Parity with nnU-Net").
#
#   scripts/check_nnunet_predict_parity.sh [BUILD_DIR] [nnunet_predict_parity.py options ...]
#
# BUILD_DIR: a built medseg (default $MEDSEG_BUILD_DIR, else ./build). nnU-Net comes from PyPI into a venv
# outside the checkout (scripts/nnunet_reference.sh); it is never a run-time dependency of medseg.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
[ -x "$build/bin/medseg_predict" ] || { echo "check_nnunet_predict_parity: no medseg_predict in $build/bin" >&2; exit 2; }
py=$(bash "$root/scripts/nnunet_reference.sh")
# One thread each way: nnU-Net's and medseg's network then run the same kernels in the same order.
export OMP_NUM_THREADS=1 nnUNet_def_n_proc=1
# Everything the check and its worker processes put in the temp folder (nnU-Net's spawned workers re-run the
# script's top level and make folders of their own) goes into one folder removed at the end.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/medseg-parity-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
TMPDIR=$scratch timeout 1200 "$py" "$root/scripts/nnunet_predict_parity.py" --bin "$build/bin" --threads 1 "$@"
