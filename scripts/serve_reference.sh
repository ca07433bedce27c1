#!/usr/bin/env bash
# Prints the path of a Python interpreter with schemathesis (scripts/serve_requirements.txt, pinned; its own
# dependencies come with it): the contract check of medseg_serve's OpenAPI document
# (scripts/check_serve_contract.sh) and the client of its tests, in $MEDSEG_CACHE/venv-serve (scripts/reference_venv.sh).
set -euo pipefail
here=$(dirname "$0")
exec bash "$here/reference_venv.sh" serve "$here/serve_requirements.txt" "schemathesis, requests"
