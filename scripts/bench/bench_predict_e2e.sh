#!/usr/bin/env bash
# File-to-file prediction, medseg_predict against nnU-Net 2.8.1's nnUNetv2_predict_from_modelfolder on the
# same torch 2.11 and the same weights, side by side in one run (scripts/bench/predict_e2e.py): whole
# processes from start-up to the written file (reading, preprocessing, sliding window, export), wall and CPU
# seconds and peak resident memory, and the ratios. Default: a 160x256x256 volume at 2 x 0.75 x 0.75 mm
# predicted with a 3 x 1.5 x 1.5 mm plan (down and back up), no TTA, 2 threads.
#
#   scripts/bench/bench_predict_e2e.sh [BUILD_DIR] [predict_e2e.py options: --shape Z Y X --spacing Z Y X
#                                       --plan_spacing Z Y X --classes K --threads N --keep DIR --tta
#                                       --modes off,exact,auto,off_nocache]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then build=$1; shift; fi
[ -x "$build/bin/medseg_predict" ] || { echo "bench_predict_e2e: no medseg_predict in $build/bin" >&2; exit 2; }
py=$(bash "$root/scripts/nnunet_reference.sh")
# Both tools' temporary files (the work folder, torch's torchinductor_$USER) in a folder removed at exit.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/medseg_bench_e2e.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
TMPDIR=$tmp "$py" "$root/scripts/bench/predict_e2e.py" --bin "$build/bin" "$@"
