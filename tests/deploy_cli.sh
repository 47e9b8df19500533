#!/bin/sh
# Checks the Kubernetes manifests and the Dockerfile in deploy/ offline
# (tests/deploy/check_manifests.py says how): their shape, RBAC against the
# requests a real watcher makes of the test API server, container command
# lines against `gpuledger SUB --help` and a real start of serve, and the
# Dockerfile against the build's packages and the binary's libraries; and
# the cluster of members of deploy/cluster/ against DESIGN 11
# (tests/deploy/check_cluster.py).
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
. "$root/tests/lib/cli.sh"
py_checks deploy_cli "$root/tests/deploy/check_manifests.py" --bin "$bin" --root "$root"
