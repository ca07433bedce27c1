#!/usr/bin/env bash
# The C++ sources follow .clang-format (CI step, scripts/test.sh). Reformat with:
#   git ls-files '*.cpp' '*.h' | xargs clang-format -i
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if git rev-parse --git-dir >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.h')
else
  mapfile -t files < <(find lib apps bench tests examples -name '*.cpp' -o -name '*.h' | sort)
fi
if ! clang-format --dry-run --Werror --style=file "${files[@]}" 2>"${TMPDIR:-/tmp}/medseg-format.$$"; then
  grep -m 10 "error:" "${TMPDIR:-/tmp}/medseg-format.$$" >&2 || true
  rm -f "${TMPDIR:-/tmp}/medseg-format.$$"
  echo "check_format: files above differ from .clang-format; reformat: git ls-files '*.cpp' '*.h' | xargs clang-format -i" >&2
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/medseg-format.$$"
echo "check_format: ${#files[@]} C++ files follow .clang-format"
