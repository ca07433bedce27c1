#!/usr/bin/env bash
# Makes (once) and prints the interpreter of a venv of Python references that the tests run against medseg: the
# pinned packages of a requirements file, in $MEDSEG_CACHE/venv-NAME (default ~/.cache/medseg), outside the
# checkout and never a run-time dependency of medseg. Remade when the requirements file changes.
#   reference_venv.sh NAME REQUIREMENTS IMPORTS [PIP_FLAG ...]
# IMPORTS: the modules that must import afterwards ("highdicom, pydicom"); PIP_FLAGs go to pip install.
set -euo pipefail
name=$1 req=$2 imports=$3
shift 3
cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
venv=$cache/venv-$name
stamp=$(sha256sum "$req" | cut -c1-16)
if [ "$(cat "$venv/READY" 2>/dev/null)" != "$stamp" ]; then
  echo "reference_venv: making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" -r "$req" >&2
  "$venv/bin/python" -c "import $imports" >&2
  echo "$stamp" >"$venv/READY"
fi
echo "$venv/bin/python"
