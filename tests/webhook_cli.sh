#!/bin/sh
# The admission webhook end to end (issue 17's closing test): serve with the
# flags of deploy/deployment.yaml, sent the AdmissionReviews of
# tests/webhook/ where deploy/webhook.yaml routes them
# (tests/deploy/webhook_check.py says how). Needs python3 with PyYAML.
# Usage: tests/webhook_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(python3 "$root/tests/deploy/webhook_check.py" --bin "$bin" \
	--root "$root" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v -e '^ok: ' -e '^checks: '
pass=$(printf '%s\n' "$out" | sed -n 's/^checks: \([0-9]*\) passed.*/\1/p')
fail=$(printf '%s\n' "$out" | sed -n 's/^checks: [0-9]* passed, \([0-9]*\) failed/\1/p')
if [ -z "$pass" ]; then
	pass=0 fail=1
	echo "FAIL: webhook_check.py did not finish (exit $rc)"
fi
[ "$rc" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
echo "webhook_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
