#!/bin/sh
# Integration test of the connection budgets (DESIGN 7, "No client can
# starve the probes or the admission path"): `gpuledger serve` over TLS
# with client certificates and a probe listener, at its default bounds,
# while a client on 127.0.0.2 holds 5,000 half-open connections (4,000 with
# 11 bytes of a TLS ClientHello to the API port, 1,000 with a partial
# request head to the probe port) and reopens every one the server closes
# (tests/budget/flood.py). The probe port's /healthz, asked from 127.0.0.1
# as the kubelet would from its node, must answer every time, and so must
# admissions over TLS with a valid client certificate; their latencies are
# printed, never judged.
# Before the budgets both were refused (0/100): the connections filled the
# one global --max-conns that the probe listener shared.
# FLOOD_CONNS and FLOOD_SAMPLES change the 5,000 and the 100.
# Usage: tests/budget_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
server_pid=
flood_pid=
trap '[ -z "$flood_pid" ] || kill "$flood_pid" 2>/dev/null; stop_server;
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
db=$tmp/db
port=
flood="python3 $here/budget/flood.py"
conns=${FLOOD_CONNS:-5000}
samples=${FLOOD_SAMPLES:-100}

# The client holds n connections and serve about as many: both need that
# many descriptors (serve raises its own soft limit to the hard one).
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((conns + 256)) ] ||
	ulimit -n "$(ulimit -Hn)" 2>/dev/null
lim=$(ulimit -n)
if [ "$lim" != unlimited ] && [ "$lim" -lt $((conns + 256)) ]; then
	# Not a quiet skip: the test cannot say anything without them.
	echo "FAIL: ulimit -n is $lim and cannot be raised; $((conns + 256)) needed"
	echo "budget_cli: 0 passed, 1 failed"
	exit 1
fi

san="subjectAltName=IP:127.0.0.1;extendedKeyUsage=serverAuth"
if ! gen_ca ca || ! gen_cert server ca /CN=127.0.0.1 "$san" ||
	! gen_cert apiserver ca /CN=kube-apiserver extendedKeyUsage=clientAuth
then
	bad "could not make the test certificates"
fi
run "$bin" import --db "$db" --create <"$here/query/base.ndjson"
expect "import fixture" 0
printf 'admin-token-0123456789 admin\ncert:kube-apiserver admission\n' \
	>"$tmp/tokens"
chmod 600 "$tmp/tokens"

start_server --tls-cert "$tmp/server.crt" --tls-key "$tmp/server.key" \
	--tls-client-ca "$tmp/ca.crt" --token-file "$tmp/tokens" \
	--probe-listen 127.0.0.1:0
pport=$(sed -n 's/^probes on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve.out")
$flood hold "$port" "$pport" "$conns" "$tmp/ready" "$tmp/stop" \
	>"$tmp/flood.out" 2>"$tmp/flood.err" &
flood_pid=$!
# is_ready: the flood has opened every connection.
is_ready() { [ -e "$tmp/ready" ]; }
wait_until 120 is_ready || bad "the flood did not open its connections: $(cat "$tmp/flood.err")"
$flood measure "$port" "$pport" "$tmp/ca.crt" "$tmp/apiserver.crt" \
	"$tmp/apiserver.key" "$samples" >"$tmp/measure" 2>"$tmp/measure.err"
touch "$tmp/stop"
wait "$flood_pid"
flood_pid=
cat "$tmp/measure" "$tmp/flood.out"
has "every probe answered under the flood" "$tmp/measure" \
	"^probe $samples/$samples "
has "every admission answered under the flood" "$tmp/measure" \
	"^admission $samples/$samples "
[ -s "$tmp/measure.err" ] && bad "measure: $(head -c 300 "$tmp/measure.err")"
has "the flood opened its connections" "$tmp/flood.out" "^flood opened $conns "

# What the budgets did, in /metrics (the certificate and an admin token).
code=$(curl -s -o "$tmp/metrics" -w '%{http_code}' --cacert "$tmp/ca.crt" \
	--cert "$tmp/apiserver.crt" --key "$tmp/apiserver.key" \
	-H "Authorization: Bearer admin-token-0123456789" \
	"https://127.0.0.1:$port/metrics")
[ "$code" = 200 ] && ok || bad "metrics: HTTP $code"
grep '^gpuledger_connections_\(shed\|budget_refused\)_total.* [1-9]' \
	"$tmp/metrics"
has "the flood's API connections were shed" "$tmp/metrics" \
	'^gpuledger_connections_shed_total\{listener="api",reason="max_per_peer"\} [1-9]'
has "probe connections were shed" "$tmp/metrics" \
	'^gpuledger_connections_shed_total\{listener="probe",reason="max_per_peer"\} [1-9]'
stop_server
[ "$stopped_rc" -eq 0 ] && ok ||
	bad "serve exited $stopped_rc: $(tail -c 600 "$tmp/serve.err")"

echo "budget_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
