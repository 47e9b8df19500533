#!/bin/sh
# The admission webhook end to end (issue 17's closing test): serve with the
# flags of deploy/deployment.yaml, sent the AdmissionReviews of
# tests/webhook/ where deploy/admission/webhook.yaml routes them
# (tests/deploy/webhook_check.py says how). Needs python3 with PyYAML.
# Usage: tests/webhook_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/lib/cli.sh"
# The matchConditions are evaluated with the npm CEL evaluator.
npm_schema "$root" || { echo "webhook_cli: 0 passed, 1 failed"; exit 1; }
py_checks webhook_cli "$root/tests/deploy/webhook_check.py" --bin "$bin" \
	--root "$root" --cel "$mods/cel_match.mjs"
