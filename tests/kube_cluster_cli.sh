#!/bin/sh
# deploy/cluster/ run the way Kubernetes runs it (issue 44): 3 etcd pods of
# deploy/cluster/etcd-example/, deploy/cluster/init/'s Job and 3 member
# pods, each pod its own network namespace on a bridge (198.18.0.0/15),
# every container through tests/deploy/kubelet.py's Pod, admissions spread
# over the ready members through a rolling update and a node loss, the
# answers checked against every member's ledger; then the broken copies of
# the overlay, each of which must fail (tests/deploy/kube_cluster.py says
# what it models and checks). About 3 minutes.
# Needs root, iproute2, util-linux, etcd, etcdctl, openssl, kubectl and
# python3-yaml (tools/install-deps.sh).
# Usage: tests/kube_cluster_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/tests/lib/cli.sh"
need_cmds kube_cluster_cli ip unshare nsenter setpriv etcd etcdctl openssl kubectl
py_checks kube_cluster_cli "$root/tests/deploy/kube_cluster.py" --bin "$bin" --root "$root"
