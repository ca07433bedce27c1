#!/usr/bin/env bash
# Functions a reader can hold (issue 43; CI step, scripts/test.sh): no C++ function in lib/ longer than 80 lines
# or of cyclomatic complexity over 15, as lizard counts them (length: the function's lines, comments included;
# CCN: 1 + each if, loop, case, catch, && and ||, ?:), unless the function says why inside itself:
#   // #lizard forgives: a parser of a fixed list of keys
# A marker without a reason after the colon fails the check too.
#   scripts/check_complexity.sh [PATH ...]   PATHs (files or folders) default to lib/
# lizard (PyPI, pinned in scripts/lizard_requirements.txt) runs from a venv outside the checkout
# (scripts/reference_venv.sh, $MEDSEG_CACHE/venv-lizard), never a run-time dependency of medseg.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
paths=("$@")
[[ ${#paths[@]} -gt 0 ]] || paths=(lib)
python=$(bash "$root/scripts/reference_venv.sh" lizard "$root/scripts/lizard_requirements.txt" lizard)

# lizard honours any "#lizard forgives"; a marker must also say why.
bare=$(grep -rnE '#lizard forgives' --include='*.cpp' --include='*.h' "${paths[@]}" |
  grep -vE '#lizard forgives: *[^ ]' || true)
if [[ -n $bare ]]; then
  echo "$bare" >&2
  echo "check_complexity: the markers above give no reason; write // #lizard forgives: <one-line reason>" >&2
  exit 1
fi
forgiven=$(grep -rhE '#lizard forgives: *[^ ]' --include='*.cpp' --include='*.h' "${paths[@]}" | wc -l || true)

# -w: warnings only, one line per function over a threshold; lizard exits 1 when it printed any.
status=0
warnings=$("$python" -m lizard "${paths[@]}" -l cpp -L 80 -C 15 -w) || status=$?
if [[ $status -ne 0 && -z $warnings ]]; then
  echo "check_complexity: lizard failed (exit $status)" >&2
  exit "$status"
fi
if [[ -n $warnings ]]; then
  echo "$warnings" >&2
  count=$(grep -c ': warning: ' <<<"$warnings" || true)
  echo "check_complexity: $count function(s) in ${paths[*]} over 80 lines or CCN 15; split them into named steps," \
    "or say why inside the function: // #lizard forgives: <reason>" >&2
  exit 1
fi
echo "check_complexity: no function in ${paths[*]} over 80 lines or CCN 15 ($forgiven forgiven, each with its reason)"
