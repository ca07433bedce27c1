#!/usr/bin/env bash
# .clang-tidy's checks (CI step, scripts/test.sh) over the sources of the stages without torch, less the files
# that include ITK (Debian's ITK headers refuse clang's parser without the shim of cmake/MedsegItkClang.cmake):
# the torch stages' files take ~30 s each to parse, which CI's hour cannot pay for.
# Usage: scripts/check_tidy.sh BUILD_DIR   (a configured build folder: its compile_commands.json)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: check_tidy.sh BUILD_DIR}
[[ -f $build/compile_commands.json ]] || { echo "check_tidy: $build/compile_commands.json not found" >&2; exit 1; }
jobs=${MEDSEG_TEST_JOBS:-2}
cd "$root"
mapfile -t files < <(ls lib/{core,io,fingerprint,planning,preprocessing,evaluation,postprocessing,selection,visualization}/*.cpp |
  grep -v -e '_itk\.cpp$' -e '/core/torch_')
log=$(mktemp "${TMPDIR:-/tmp}/medseg-tidy.XXXXXX")
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 4 clang-tidy -p "$build" --quiet >"$log" 2>&1; then
  grep -E "(warning|error):" "$log" | sort -u | head -20 >&2
  echo "check_tidy: .clang-tidy's checks fail (above)" >&2
  exit 1
fi
echo "check_tidy: ${#files[@]} files pass .clang-tidy's checks"
