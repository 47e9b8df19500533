#!/bin/sh
# Installs the Debian packages gpuledger builds and tests with, only when one is
# missing, so that a fresh Debian 12 machine needs nothing but `make test`.
#
#   liblmdb-dev       the event log (LMDB)
#   libjansson-dev    JSON codecs
#   libuv1-dev        the query process's event loop
#   libcurl4-openssl-dev  the Kubernetes watch client
#   libssl-dev        SHA-256 (libcrypto) for the hash chain and claim names
#   libyaml-dev       kubeconfig parsing
#   libhttp-parser-dev  HTTP/1.1 parsing in the query process (Node's parser,
#                     maintained in Debian; we do not write an HTTP parser)
#   check, libsubunit-dev  unit tests (check's pkg-config file names subunit)
#   pkg-config        library flags
# and for the integration tests, real clients and peers:
#   python3           the test Kubernetes API server (standard library only)
#   python3-yaml      PyYAML, to check the manifests in deploy/
#   kubernetes-client kubectl, to prove that server speaks the real protocol
#   openssl, curl, jq a test CA and certificates; HTTP requests and JSON
#                     from a shell
#   faketime          an expired certificate for tests/tls_cli.sh; a frozen
#                     wall clock for the README tour's server (demo_cli.sh);
#                     steps of the live watcher's wall clock (kube_cli.sh)
#   nodejs, npm       the Kubernetes OpenAPI schemas (npm kubernetes-models)
#                     that tests/manifests_cli.sh validates deploy/ with, and
#                     the CEL evaluator (npm @bufbuild/cel) that
#                     tests/webhook_cli.sh runs the webhook's matchConditions
#                     with; both pinned by tests/deploy/schema/package.json
#                     and installed by those tests into build/npm-schema;
#                     and DuckDB (npm @duckdb/node-api, a prebuilt DuckDB)
#                     that tests/duckdb_cli.sh loads the FOCUS export into,
#                     pinned by tests/duckdb/package.json, installed into
#                     build/npm-duckdb
#   wrk               tests/bench/serve_bench.sh, the quick HTTP and TLS
#                     figures outside `make bench` (which installs it too)
#   chromium          the web console's browser test: headless chromium driven
#                     over the DevTools protocol (tests/ui_cli.sh); node's
#                     test runner for its JavaScript
#   prometheus        promtool: lints /metrics, checks and unit-tests the
#                     alerting rules in deploy/
#   mandoc            `mandoc -T lint` checks the man pages that
#                     `gpuledger SUB --help-man` writes (tests/manners_cli.sh)
#   binutils          readelf, to check the image's runtime packages
#   util-linux, iproute2  unshare, nsenter, setpriv and ip: the pod of deploy/
#                     run the way the kubelet runs it (tests/pod_cli.sh)
#   etcd-server, etcd-client  a real 3-member etcd on loopback and etcdctl
#                     for the cluster tests (tests/cluster_cli.sh,
#                     tests/cluster/etcd_cluster.py); Debian starts its own
#                     etcd service on 2379, which the tests do not use
set -eu

pkgs="liblmdb-dev libjansson-dev libuv1-dev libcurl4-openssl-dev libssl-dev \
libyaml-dev libhttp-parser-dev check libsubunit-dev pkg-config"
# Tools are wanted as commands: any kubectl on the PATH will do (some images
# ship another package of it, which Debian's would conflict with).
cmds="python3:python3 kubectl:kubernetes-client openssl:openssl curl:curl jq:jq \
faketime:faketime node:nodejs npm:npm wrk:wrk chromium:chromium \
promtool:prometheus mandoc:mandoc readelf:binutils unshare:util-linux \
nsenter:util-linux setpriv:util-linux ip:iproute2 etcd:etcd-server \
etcdctl:etcd-client"

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
for c in $cmds; do
	command -v "${c%%:*}" >/dev/null 2>&1 || missing="$missing ${c#*:}"
done
# tests/deploy_cli.sh parses the manifests in deploy/ with PyYAML.
python3 -c 'import yaml' >/dev/null 2>&1 || missing="$missing python3-yaml"
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=sudo
	else
		echo "install-deps: need root to install:$missing" >&2
		exit 1
	fi
else
	SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
