#!/usr/bin/env bash
# Prints the path of a Python interpreter with schemathesis (scripts/serve_requirements.txt, pinned): the contract
# check of medseg_serve's OpenAPI document (scripts/check_serve_contract.sh). The venv lives outside the
# checkout, in $MEDSEG_CACHE/venv-serve (default ~/.cache/medseg), made once. Never a run-time dependency.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
venv=$cache/venv-serve
req=$root/scripts/serve_requirements.txt
stamp=$(sha256sum "$req" | cut -c1-16)
if [ "$(cat "$venv/READY" 2>/dev/null)" != "$stamp" ]; then
  echo "serve_reference: making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req" >&2
  "$venv/bin/python" -c 'import schemathesis, requests' >&2
  echo "$stamp" >"$venv/READY"
fi
echo "$venv/bin/python"
