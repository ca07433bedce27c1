#!/usr/bin/env bash
# The contract check of medseg_serve (issue 41): schemathesis (scripts/serve_reference.sh's venv) generates
# requests from the OpenAPI document the server serves, within a bounded number of examples, and checks every
# answer against it: no 5xx, documented statuses and bodies, 401 without the token, 405 for other methods.
#   check_serve_contract.sh URL TOKEN [MAX_EXAMPLES]
# Left out: positive_data_acceptance, since a body that is any binary string matches the schema while only an
# image is a case (a random body is rightly refused 400); the filter_too_much health check concerns the
# generator (model names hold '/'), not the server.
set -euo pipefail
url=$1
token=$2
examples=${3:-20}
python=${MEDSEG_SERVE_PYTHON:-$(bash "$(dirname "$0")/serve_reference.sh")}
# schemathesis and hypothesis keep state in the working folder (.schemathesis, .hypothesis): a scratch one.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
"$(dirname "$python")/schemathesis" run "${url%/}/v1/openapi.json" \
  -H "Authorization: Bearer $token" -n "$examples" --checks all --exclude-checks positive_data_acceptance \
  --suppress-health-check filter_too_much --generation-deterministic --request-timeout 10 --no-color
