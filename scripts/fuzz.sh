#!/usr/bin/env bash
# Builds (when needed) and runs one libFuzzer target for SECONDS (docs/hardening.md):
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
#   scripts/fuzz.sh list
# TARGET is a tests/fuzz/fuzz_TARGET.cpp (checkpoint, npy, nifti_header, image_read, dataset_json,
# plans, fingerprint, trainer_config, case_properties, splits). The build is the clang ASan+UBSan
# build in $MEDSEG_SANITIZE_BUILD_DIR (default build-asan, shared with scripts/sanitize.sh). Seeds
# are written by medseg_fuzz_seeds; the growing corpus is kept in build-asan/fuzz/corpus/TARGET and
# crashing inputs land in build-asan/fuzz/artifacts/TARGET/. Exit status non-zero on any finding.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${MEDSEG_SANITIZE_BUILD_DIR:-$root/build-asan}
if [ "${1:-}" = list ]; then
  ls "$root"/tests/fuzz/fuzz_*.cpp | sed 's/.*fuzz_\(.*\)\.cpp/\1/'
  exit 0
fi
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]  (scripts/fuzz.sh list)" >&2
  exit 2
fi
target=$1 seconds=$2
shift 2
[ -f "$root/tests/fuzz/fuzz_$target.cpp" ] || { echo "fuzz.sh: no target '$target' (scripts/fuzz.sh list)" >&2; exit 2; }
source "$root/scripts/sanitize_env.sh"
medseg_configure_asan "$root" "$build"
cmake --build "$build" --target "medseg_fuzz_$target" medseg_fuzz_seeds -j "${MEDSEG_JOBS:-$(nproc)}"
seeds=$build/fuzz/seeds
[ -d "$seeds/$target" ] || { rm -rf "$seeds"; "$build/fuzz/medseg_fuzz_seeds" "$seeds" "$root"; }
corpus=$build/fuzz/corpus/$target artifacts=$build/fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"
# -malloc_limit_mb: any single allocation over 512 MB is a finding (inputs are a few KB, so a
# reader that believes a header-declared size would be caught); -rss_limit_mb bounds the total.
log=$build/fuzz/$target.log
set +e
"$build/fuzz/medseg_fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=30 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" "$corpus" "$seeds/$target" 2>&1 | tee "$log" | grep -v '^#[0-9]*\s*\(NEW\|REDUCE\|pulse\)'
rc=${PIPESTATUS[0]}
set -e
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
echo "fuzz.sh: $target: ${runs:-?} executions in ${seconds} s, exit status $rc (log $log)"
exit "$rc"
