#!/bin/sh
# Measures `gpuledger serve` on loopback with wrk (DESIGN 10): requests/s and
# latency percentiles of GET /v1/tenants/{ns}/remaining and of durable
# POST /v1/admission verdicts, each for a bounded time. Not a test: it
# asserts nothing and prints wrk's report.
# With TLS=1 the server speaks TLS (a certificate made here) and a third
# figure is the rate of full handshakes (a new connection per request).
# Usage: [TLS=1] tests/bench/serve_bench.sh PATH/TO/gpuledger [SECONDS] [CONNECTIONS]
set -eu
bin=${1:-./gpuledger}
secs=${2:-10}
conns=${3:-64}
here=$(dirname "$0")
command -v wrk >/dev/null || { echo "serve_bench: needs wrk (apt-get install -y wrk)"; exit 2; }
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
"$bin" import --db "$tmp/db" --create <"$here/../query/base.ndjson" >/dev/null
scheme=http
set --
if [ -n "${TLS:-}" ]; then
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -keyout "$tmp/tls.key" -out "$tmp/tls.crt" -days 2 \
		-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
	set -- --tls-cert "$tmp/tls.crt" --tls-key "$tmp/tls.key"
	scheme=https
fi
"$bin" serve --db "$tmp/db" --listen 127.0.0.1:0 "$@" >"$tmp/out" 2>"$tmp/err" &
pid=$!
port=
while [ -z "$port" ]; do
	sleep 0.05
	port=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/out")
done
url=$scheme://127.0.0.1:$port
echo "== GET /v1/tenants/tenant-acme-dev/remaining, $conns connections, ${secs}s"
wrk -t1 -c"$conns" -d"${secs}s" --latency "$url/v1/tenants/tenant-acme-dev/remaining"
echo "== POST /v1/admission (durable verdicts), $conns connections, ${secs}s"
wrk -t1 -c"$conns" -d"${secs}s" --latency -s "$here/serve_admission.lua" "$url/v1/admission"
if [ -n "${TLS:-}" ]; then
	echo "== full TLS handshakes: GET /healthz with Connection: close, 8 connections, ${secs}s"
	wrk -t1 -c8 -d"${secs}s" -H 'Connection: close' "$url/healthz"
fi
curl -sk "$url/metrics" | grep -E '^gpuledger_verdict_batch'
