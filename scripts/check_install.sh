#!/usr/bin/env bash
# medseg installed, moved and linked (CI step, scripts/test.sh; docs/install.md and docs/api.md):
#   1. `cmake --install` of a build folder to one prefix, then the prefix moved to another;
#   2. the demo pipeline (scripts/demo.sh, short training) run end to end with the moved tree's programs;
#   3. examples/predict_image, a separate CMake project that only does find_package(medseg), built against the
#      moved tree and run on a demo test image with the demo's model;
#   4. its segmentation file compared with medseg_predict's for the same image and model, byte for byte.
# Usage: scripts/check_install.sh BUILD_DIR [WORK_DIR]   (MEDSEG_DEMO_EPOCHS/ITERS: the demo's training)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: check_install.sh BUILD_DIR [WORK_DIR]}" && pwd)
own_work=0
if [[ -n ${2:-} ]]; then work=$2; else work=$(mktemp -d "${TMPDIR:-/tmp}/medseg-install.XXXXXX"); own_work=1; fi
die() { echo "check_install: $*" >&2; exit 1; }
rm -rf "$work/first" "$work/moved" "$work/example" "$work/demo"
mkdir -p "$work"

cmake --install "$build" --prefix "$work/first" >"$work/install.log" || { tail -5 "$work/install.log" >&2; die "cmake --install failed"; }
mv "$work/first" "$work/moved"
prefix=$work/moved

# The demo from the moved tree (its configs/ and plans/ are the moved tree's: core/data_files.h).
MEDSEG_BIN_DIR=$prefix/bin MEDSEG_DEMO_DIR=$work/demo MEDSEG_DEMO_EPOCHS=${MEDSEG_DEMO_EPOCHS:-1} \
  MEDSEG_DEMO_ITERS=${MEDSEG_DEMO_ITERS:-5} bash "$root/scripts/demo.sh" >"$work/demo.log" 2>&1 ||
  { tail -20 "$work/demo.log" >&2; die "the demo with the moved tree's programs failed (log: $work/demo.log)"; }
echo "check_install: the demo ran end to end with $prefix/bin ($(grep -c '^== ' "$work/demo.log") steps)"

# The example consumer, configured with the moved prefix only.
torch_dir=$(sed -n 's/^Torch_DIR:PATH=//p' "$build/CMakeCache.txt")
cmake -S "$root/examples/predict_image" -B "$work/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" ${torch_dir:+-DTorch_DIR="$torch_dir"} >"$work/example-configure.log" 2>&1 ||
  { tail -20 "$work/example-configure.log" >&2; die "configuring examples/predict_image against $prefix failed"; }
cmake --build "$work/example" >"$work/example-build.log" 2>&1 ||
  { tail -20 "$work/example-build.log" >&2; die "building examples/predict_image against $prefix failed"; }

model=$work/demo/results/Dataset900_Demo/nnUNetTrainer__nnUNetPlans__3d_fullres
image=$(ls "$work/demo/raw/Dataset900_Demo/imagesTs/"*_0000.nii.gz | head -1)
case=$(basename "$image" _0000.nii.gz)
"$work/example/predict_image" "$model" "$work/example_$case.nii.gz" "$image" --fold 0 >/dev/null ||
  die "examples/predict_image failed on $image"
expected=$work/demo/predictions/$case.nii.gz
[[ -f $expected ]] || die "the demo wrote no $expected"
cmp "$expected" "$work/example_$case.nii.gz" ||
  die "examples/predict_image's segmentation of $case differs from medseg_predict's ($expected)"
echo "check_install: examples/predict_image, built against the moved tree, writes medseg_predict's segmentation of $case byte for byte"
if ((own_work)); then rm -rf "$work"; fi
