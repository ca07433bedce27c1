#!/usr/bin/env bash
# .clang-tidy's checks.
#   scripts/check_tidy.sh BUILD        CI step (scripts/test.sh): the sources of the stages without torch, less the
#                                      files that include ITK (Debian's ITK headers refuse clang's parser without the
#                                      shim of cmake/MedsegItkClang.cmake). BUILD is any configured build folder (its
#                                      compile_commands.json). About 80 files, a minute or two.
#   scripts/check_tidy.sh --all BUILD  every source of lib/, apps/ and bench/. BUILD must be a clang build folder
#                                      (scripts/sanitize.sh's, e.g. build-asan after `scripts/sanitize.sh fuzz 1`):
#                                      clang-tidy reads clang's precompiled torch headers (built here first) and the
#                                      ITK shim from it. A torch file then takes ~8-15 s instead of ~30 s; the whole
#                                      tree ~18 min on 2 cores, too long for CI's hour next to the two suites.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
all=0
if [[ ${1:-} == --all ]]; then all=1; shift; fi
build=${1:?usage: check_tidy.sh [--all] BUILD_DIR}
[[ -f $build/compile_commands.json ]] || { echo "check_tidy: $build/compile_commands.json not found" >&2; exit 1; }
jobs=${MEDSEG_TEST_JOBS:-2}
cd "$root"
if [[ $all == 1 ]]; then
  grep -q '"command": "[^"]*clang++' "$build/compile_commands.json" ||
    { echo "check_tidy: --all needs a clang build folder (scripts/sanitize.sh's); $build is not one" >&2; exit 1; }
  mapfile -t pchs < <(grep -oE '^build [^ :]*cmake_pch\.hxx\.pch' "$build/build.ninja" | sed 's/^build //' |
    grep -v '^tests/')
  cmake --build "$build" --target "${pchs[@]}" -j "$jobs" >/dev/null
  # Only files the build compiles (a file for a switched-off option, e.g. *_cairo_off.cpp, has no command).
  mapfile -t files < <(ls lib/*/*.cpp lib/*/*/*.cpp apps/*.cpp bench/*.cpp bench/*/*.cpp 2>/dev/null |
    while read -r f; do grep -qF "\"file\": \"$root/$f\"" "$build/compile_commands.json" && echo "$f"; done)
else
  mapfile -t files < <(ls lib/{core,io,fingerprint,plans,planning,preprocessing,evaluation,postprocessing,selection,visualization}/*.cpp |
    grep -v -e '_itk\.cpp$')
  # lib/serve includes no torch header either; it is built only where cpp-httplib is found.
  if grep -qF "\"file\": \"$root/lib/serve/" "$build/compile_commands.json"; then files+=(lib/serve/*.cpp); fi
fi
log=$(mktemp "${TMPDIR:-/tmp}/medseg-tidy.XXXXXX")
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${files[@]}" | xargs -P "$jobs" -n 4 clang-tidy -p "$build" --quiet >"$log" 2>&1; then
  grep -E "(warning|error):" "$log" | sort -u | head -20 >&2
  echo "check_tidy: .clang-tidy's checks fail (above)" >&2
  exit 1
fi
echo "check_tidy: ${#files[@]} files pass .clang-tidy's checks"
