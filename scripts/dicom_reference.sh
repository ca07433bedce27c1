#!/usr/bin/env bash
# Prints the path of a Python interpreter with highdicom and pydicom (scripts/dicom_requirements.txt,
# pinned): the independent reader of medseg's DICOM SEG output (scripts/check_dicom_seg.py). The venv lives
# outside the checkout, in $MEDSEG_CACHE/venv-dicom (default ~/.cache/medseg), made once. Never a run-time
# dependency of medseg.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${MEDSEG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/medseg}
venv=$cache/venv-dicom
req=$root/scripts/dicom_requirements.txt
stamp=$(sha256sum "$req" | cut -c1-16)
if [ "$(cat "$venv/READY" 2>/dev/null)" != "$stamp" ]; then
  echo "dicom_reference: making $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --no-deps --no-warn-conflicts -r "$req" >&2
  "$venv/bin/python" -c 'import highdicom, pydicom' >&2
  echo "$stamp" >"$venv/READY"
fi
echo "$venv/bin/python"
