#!/bin/sh
# The pod of deploy/ run the way the kubelet runs it (issue 23): the
# rendered manifest's containers, each with its exact command, its own
# mount namespace over the image, its user, its volumes, and its own PID
# namespace unless the pod shares one; a stand-in API server and test
# certificates for what a cluster provides (tests/deploy/kubelet.py says
# how). Then the same with the manifest changes that must break it.
# Needs root, util-linux, iproute2, openssl, kubectl and python3-yaml
# (tools/install-deps.sh).
# Usage: tests/pod_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/lib/cli.sh"
py_checks pod_cli "$root/tests/deploy/kubelet.py" --bin "$bin" --root "$root"
