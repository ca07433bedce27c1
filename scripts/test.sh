#!/usr/bin/env bash
# The README's test command (CI runs it: .ci/run):
#   1. installs dependencies (Debian packages; LibTorch 2.11 + CUDA 13 from PyTorch's wheel),
#   2. builds the default build (LibTorch 2.11, CUDA compiled in) with -Werror and runs the whole ctest
#      suite on CPU; the tests that need a GPU report "Skipped" (ctest counts them apart from passes),
#   3. builds against Debian's LibTorch 1.13 (CPU, Debian packages alone) and runs its torch suite
#      (label nn; the torch-free label base is the same code either way),
#   4. runs every libFuzzer target for a few seconds (MEDSEG_FUZZ_SECONDS, default 10; 0 skips them),
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

# -Werror: a new warning fails CI (docs/hardening.md); local builds only warn.
start=$(date +%s)
MEDSEG_BUILD_DIR=$build bash "$root/scripts/build.sh" -DMEDSEG_WERROR=ON
elapsed "the LibTorch 2.11 + CUDA build" "$start"
"$build/bin/medseg_version"
start=$(date +%s)
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900
elapsed "the LibTorch 2.11 suite" "$start"

# The torch-free suite (label base: tests/base links no LibTorch) does not depend on the LibTorch version
# and runs once, above; against 1.13 the torch suite (label nn) runs, with the apps it drives.
# MEDSEG_DEBIAN_TESTS: nn (default), all, a ctest -R regex over the nn suite, or none.
debian_tests=${MEDSEG_DEBIAN_TESTS:-nn}
if [ "$debian_tests" != none ]; then
  start=$(date +%s)
  targets=(--target medseg_tests_nn)
  [ "$debian_tests" = all ] && targets=()
  MEDSEG_TORCH=debian MEDSEG_BUILD_DIR=$build_debian MEDSEG_BUILD_ARGS="${targets[*]}" \
    bash "$root/scripts/build.sh" -DMEDSEG_WERROR=ON
  elapsed "the Debian LibTorch 1.13 build" "$start"
  "$build_debian/bin/medseg_version"
  start=$(date +%s)
  filter=(-L nn)
  case "$debian_tests" in
    all) filter=() ;;
    nn) ;;
    *) filter=(-L nn -R "$debian_tests") ;;
  esac
  ctest --test-dir "$build_debian" "${filter[@]}" --output-on-failure -j "$jobs" --timeout 900
  elapsed "the LibTorch 1.13 suite" "$start"
fi

# The fuzz targets link only the torch-free readers, in their own clang ASan+UBSan build folder
# (docs/hardening.md): a few minutes of build, then each target from its seeds.
fuzz_seconds=${MEDSEG_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" != 0 ]; then
  start=$(date +%s)
  MEDSEG_SANITIZE_BUILD_DIR=${MEDSEG_FUZZ_BUILD_DIR:-$root/build-fuzz} bash "$root/scripts/sanitize.sh" fuzz "$fuzz_seconds"
  elapsed "the fuzz targets" "$start"
fi
# The offline GPU bundle in a clean root (docs/gpu-validation.md): a debootstrapped Debian 12 with only
# what a GPU node has configures against the bundle, builds a program linking its libraries and the
# object that includes c10d's gloo/NCCL headers, and plans the bundled dataset. MEDSEG_CLEAN_ROOT=0 skips.
if [ "${MEDSEG_CLEAN_ROOT:-1}" != 0 ]; then
  start=$(date +%s)
  if [ "$(id -u)" = 0 ]; then
    bash "$root/scripts/gpu/check_clean_root.sh" --build "$build" --jobs "$jobs"
  else
    echo "test.sh: the clean-root check of the GPU bundle needs root (debootstrap, chroot): skipped"
  fi
  elapsed "the GPU bundle in a clean root" "$start"
fi
elapsed "everything" "$t0"
