#!/bin/sh
# Checks the Kubernetes manifests and the Dockerfile in deploy/ offline
# (tests/deploy/check_manifests.py says how): their shape, RBAC against the
# requests a real watcher makes of the test API server, container command
# lines against `gpuledger SUB --help` and a real start of serve, and the
# Dockerfile against the build's packages and the binary's libraries.
# Needs python3 with PyYAML (Debian's python3-yaml, tools/install-deps.sh).
# Usage: tests/deploy_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)

if ! python3 -c 'import yaml' 2>/dev/null; then
	echo "FAIL: python3 has no yaml module (apt-get install python3-yaml)"
	echo "deploy_cli: 0 passed, 1 failed"
	exit 1
fi
out=$(python3 "$root/tests/deploy/check_manifests.py" --bin "$bin" \
	--root "$root" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v -e '^ok: ' -e '^checks: '
pass=$(printf '%s\n' "$out" | sed -n 's/^checks: \([0-9]*\) passed.*/\1/p')
fail=$(printf '%s\n' "$out" | sed -n 's/^checks: [0-9]* passed, \([0-9]*\) failed/\1/p')
if [ -z "$pass" ]; then
	pass=0 fail=1
	echo "FAIL: check_manifests.py did not finish (exit $rc)"
fi
[ "$rc" -eq 0 ] || [ "$fail" -gt 0 ] || fail=1
echo "deploy_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
