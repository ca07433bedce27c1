#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the whole ctest suite on CPU, then
# every libFuzzer target for a few seconds (MEDSEG_FUZZ_SECONDS, default 10; 0 skips them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_BUILD_DIR:-$root/build}
bash "$root/scripts/install_deps.sh"
start=$(date +%s)
# -Werror: a new warning fails CI (docs/hardening.md); local builds only warn.
bash "$root/scripts/build.sh" -DMEDSEG_WERROR=ON
echo "test.sh: build took $(( $(date +%s) - start )) s"
cd "$build"
ctest --output-on-failure -j "${MEDSEG_TEST_JOBS:-2}" --timeout 900
# The fuzz targets link only the torch-free readers, in their own clang ASan+UBSan build folder
# (docs/hardening.md): a few minutes of build, then each target from its seeds.
fuzz_seconds=${MEDSEG_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" != 0 ]; then
  start=$(date +%s)
  MEDSEG_SANITIZE_BUILD_DIR=${MEDSEG_FUZZ_BUILD_DIR:-$root/build-fuzz} bash "$root/scripts/sanitize.sh" fuzz "$fuzz_seconds"
  echo "test.sh: fuzz targets took $(( $(date +%s) - start )) s"
fi
