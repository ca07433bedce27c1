#!/usr/bin/env bash
# The README's test command (CI runs it: .ci/run):
#   1. installs dependencies (Debian packages; LibTorch 2.11 + CUDA 13 from PyTorch's wheel) and checks the
#      code style (.clang-format, scripts/check_format.sh; function length and complexity, scripts/check_complexity.sh;
#      .clang-tidy after the build, scripts/check_tidy.sh),
#   2. builds the default build (LibTorch 2.11, CUDA compiled in) with -Werror and runs the whole ctest
#      suite on CPU; the tests that need a GPU report "Skipped" (ctest counts them apart from passes),
#      then installs it, moves the installed tree, runs the demo from there and builds examples/predict_image
#      against it (scripts/check_install.sh),
#      and checks medseg_predict against nnU-Net 2.8.1's own predictor (scripts/check_nnunet_predict_parity.sh),
#   3. builds against Debian's LibTorch 1.13 (CPU, Debian packages alone) and runs the tests of what differs
#      between the versions (MEDSEG_DEBIAN_TESTS, below),
#   4. runs every libFuzzer target for a few seconds (MEDSEG_FUZZ_SECONDS, default 5; 0 skips them),
#   5. checks the offline GPU bundle in a clean debootstrapped root (MEDSEG_CLEAN_ROOT=0 skips it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
build_debian=${MEDSEG_DEBIAN_BUILD_DIR:-$root/build-debian}
jobs=${MEDSEG_TEST_JOBS:-2}
t0=$(date +%s)
# OpenMP's waiting threads sleep (docs/predict.md, "Shared machines"): ctest runs two tests at a time on two
# cores, and spinning threads would take the cores from the tests beside them. The commands set this
# themselves; the test executables, which train and predict in-process too, take it from here.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
elapsed() { echo "test.sh: $1 took $(( $(date +%s) - $2 )) s"; }

bash "$root/scripts/install_deps.sh"
elapsed "installing dependencies" "$t0"
bash "$root/scripts/check_format.sh"
# No function in lib/ over 80 lines or CCN 15 without a reason in it (lizard, from a venv outside the checkout).
bash "$root/scripts/check_complexity.sh"

# The clean root of the last step is made (debootstrap, about 5 min on a new machine, mostly waiting on the
# network) while the builds run; the last step waits for it.
clean_root=${MEDSEG_CLEAN_ROOT:-1}
prepare_pid=""
prepare_log=$(mktemp "${TMPDIR:-/tmp}/medseg-clean-root-prepare.XXXXXX")
# A failing step ends the run: the root's making stops too (an unfinished root is made anew next time).
trap 'rm -f "$prepare_log"; if [ -n "$prepare_pid" ]; then kill "$prepare_pid" 2>/dev/null || true; fi' EXIT
if [ "$clean_root" != 0 ] && [ "$(id -u)" = 0 ]; then
  bash "$root/scripts/gpu/check_clean_root.sh" --prepare >"$prepare_log" 2>&1 &
  prepare_pid=$!
fi

# -Werror: a new warning fails CI (docs/hardening.md); local builds only warn.
start=$(date +%s)
MEDSEG_BUILD_DIR=$build bash "$root/scripts/build.sh" -DMEDSEG_WERROR=ON
elapsed "the LibTorch 2.11 + CUDA build" "$start"
start=$(date +%s)
bash "$root/scripts/check_tidy.sh" "$build"
elapsed "clang-tidy" "$start"
"$build/bin/medseg_version"
# highdicom reads the DICOM SEG output back in the suite (tests/nn/inference_dicom_seg_cli_itk_test.cpp):
# a venv outside the checkout (scripts/dicom_reference.sh), as for nnU-Net below.
MEDSEG_DICOM_PYTHON=$(bash "$root/scripts/dicom_reference.sh")
export MEDSEG_DICOM_PYTHON
# schemathesis checks medseg_serve against its OpenAPI document (tests/nn/serve_cli_itk_test.cpp), from its venv.
MEDSEG_SERVE_PYTHON=$(bash "$root/scripts/serve_reference.sh")
export MEDSEG_SERVE_PYTHON
# nnU-Net 2.8.1 and dynamic-network-architectures on the build's torch (scripts/nnunet_reference.sh): the
# Primus forward-parity tests (tests/nn/models_primus_test.cpp) and, after the suite, the prediction parity.
MEDSEG_NNUNET_PYTHON=$(bash "$root/scripts/nnunet_reference.sh")
export MEDSEG_NNUNET_PYTHON
start=$(date +%s)
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900
elapsed "the LibTorch 2.11 suite" "$start"
# medseg_predict against nnU-Net 2.8.1's own predictor on the same weights, file to file, for every input
# kind of scripts/nnunet_predict_parity.py (docs/predict.md, "Parity with nnU-Net"): nnunetv2 comes from
# PyPI into a venv outside the checkout. MEDSEG_NNUNET_PARITY=0 skips it.
if [ "${MEDSEG_NNUNET_PARITY:-1}" != 0 ]; then
  start=$(date +%s)
  bash "$root/scripts/check_nnunet_predict_parity.sh" "$build"
  elapsed "the nnU-Net prediction parity" "$start"
fi
# The build installed, moved, running the demo from there, and linked by examples/predict_image through
# find_package(medseg); its segmentation must be medseg_predict's (scripts/check_install.sh).
start=$(date +%s)
bash "$root/scripts/check_install.sh" "$build"
elapsed "the installed package and the example consumer" "$start"

# Against Debian's LibTorch 1.13 every torch-using source (library and apps) is compiled with -Werror, and
# the tests of what differs between the two LibTorch versions run (docs/libtorch_versions.md, "CI"):
# torch_compat.h's surfaces (autocast and the grad scaler, c10d's Reducer and process groups, the optimizer
# state key, RNG states, the counting allocator), model numerics, checkpoints and exact resume, torch's
# pickle files, and one end-to-end workflow. The rest (argument and file checks, messages, sampling, CLI
# plumbing) is the same code on the same calls and runs once, above: both full suites do not fit CI's
# 60 minutes cold on 2 cores. MEDSEG_DEBIAN_TESTS: compat (default), nn (the whole torch suite), all,
# a ctest -R regex over the compat files' tests, or none.
debian_compat_files='/nn/(checkpoint|training_(optimizer_resume|resume_itk|grad_scaler|loss|region_loss|spatial_loss|variant_settings)|distributed_(train_itk|p2p|halo)|models_|memory_model_measured|core_torch_block_cache|scoped_process_state|link_order|spatial_reference|inference_(sliding_window|export|import_itk)|data_((device_)?augment|da5)_test|sharing_(torch_pickle|nnunet_export_itk|model_zip)|workflow_itk)'
debian_tests=${MEDSEG_DEBIAN_TESTS:-compat}
if [ "$debian_tests" != none ]; then
  start=$(date +%s)
  targets=(--target medseg_tests_nn)
  [ "$debian_tests" = all ] && targets=()
  regex=$debian_compat_files
  case "$debian_tests" in nn|all) regex= ;; esac
  MEDSEG_TORCH=debian MEDSEG_BUILD_DIR=$build_debian MEDSEG_BUILD_ARGS="${targets[*]}" \
    bash "$root/scripts/build.sh" -DMEDSEG_WERROR=ON "-DMEDSEG_TEST_SOURCES_REGEX=$regex"
  elapsed "the Debian LibTorch 1.13 build" "$start"
  "$build_debian/bin/medseg_version"
  start=$(date +%s)
  filter=(-L nn)
  case "$debian_tests" in
    all) filter=() ;;
    nn|compat) ;;
    *) filter=(-L nn -R "$debian_tests") ;;
  esac
  ctest --test-dir "$build_debian" "${filter[@]}" --output-on-failure -j "$jobs" --timeout 900
  elapsed "the LibTorch 1.13 suite" "$start"
fi

# The fuzz targets link only the torch-free readers, in their own clang ASan+UBSan build folder
# (docs/hardening.md): a few minutes of build, then each target from its seeds.
fuzz_seconds=${MEDSEG_FUZZ_SECONDS:-5}
if [ "$fuzz_seconds" != 0 ]; then
  start=$(date +%s)
  MEDSEG_SANITIZE_BUILD_DIR=${MEDSEG_FUZZ_BUILD_DIR:-$root/build-fuzz} bash "$root/scripts/sanitize.sh" fuzz "$fuzz_seconds"
  elapsed "the fuzz targets" "$start"
fi
# The offline GPU bundle in a clean root (docs/gpu-validation.md): a debootstrapped Debian 12 with only
# what a GPU node has configures against the bundle, builds a program linking its libraries and the
# object that includes c10d's gloo/NCCL headers, and plans the bundled dataset. MEDSEG_CLEAN_ROOT=0 skips.
if [ "$clean_root" != 0 ]; then
  start=$(date +%s)
  if [ -n "$prepare_pid" ] && ! wait "$prepare_pid"; then
    cat "$prepare_log" >&2
    echo "test.sh: making the clean root failed (above)" >&2
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then
    bash "$root/scripts/gpu/check_clean_root.sh" --build "$build" --jobs "$jobs"
  else
    echo "test.sh: the clean-root check of the GPU bundle needs root (debootstrap, chroot): skipped"
  fi
  elapsed "the GPU bundle in a clean root" "$start"
fi
elapsed "everything" "$t0"
