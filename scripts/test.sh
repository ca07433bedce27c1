#!/usr/bin/env bash
# The README's test command: installs dependencies, builds, runs the whole ctest suite on CPU.
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
