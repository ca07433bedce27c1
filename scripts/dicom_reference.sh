#!/usr/bin/env bash
# Prints the path of a Python interpreter with highdicom and pydicom (scripts/dicom_requirements.txt, pinned with
# their dependencies, hence --no-deps): the independent reader of medseg's DICOM SEG output
# (scripts/check_dicom_seg.py), in $MEDSEG_CACHE/venv-dicom (scripts/reference_venv.sh).
set -euo pipefail
here=$(dirname "$0")
exec bash "$here/reference_venv.sh" dicom "$here/dicom_requirements.txt" "highdicom, pydicom" --no-deps --no-warn-conflicts
