#!/bin/sh
# Integration test of `gpuledger serve` over TLS (DESIGN 7, "As a Kubernetes
# admission webhook"): a CA made here, curl, `openssl s_client` and a
# python client (tests/tls/client.py) for keep-alive, pipelining and a
# handshake that never ends; certificate rotation under a client that keeps
# sending; client certificates and the `cert:<CN> ROLE` token-file lines.
# Usage: tests/tls_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
server_pid=
trap 'stop_server; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
db=$tmp/db
port=
client="python3 $here/tls/client.py"

# get NAME WANT PATH CURL-ARGS...: an HTTPS GET answered WANT.
get() {
	name=$1 want=$2 path=$3
	shift 3
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' "$@" \
		"https://127.0.0.1:$port$path")
	if [ "$code" = "$want" ]; then ok; else
		bad "$name: HTTP $code, want $want ($(head -c 200 "$tmp/body"))"
	fi
}
# refused NAME CURL-ARGS...: curl cannot complete a request (TLS refused).
refused() {
	name=$1
	shift
	if curl -sS -o /dev/null "$@" "https://127.0.0.1:$port/healthz" \
		2>"$tmp/curl.err"; then
		bad "$name: the request went through"
	else ok; fi
}
# serial PORT: the serial of the certificate a new connection is shown.
serial() {
	openssl s_client -connect "127.0.0.1:$port" -CAfile "$tmp/ca.crt" \
		</dev/null 2>/dev/null | openssl x509 -noout -serial
}

# --- the CA, the certificates -------------------------------------------
san="subjectAltName=IP:127.0.0.1;extendedKeyUsage=serverAuth"
if ! gen_ca ca || ! gen_ca wrongca ||
	! gen_cert server ca /CN=127.0.0.1 "$san" ||
	! gen_cert server2 ca /CN=127.0.0.1 "$san" ||
	! gen_cert apiserver ca /CN=kube-apiserver extendedKeyUsage=clientAuth ||
	! gen_cert stranger ca /CN=stranger extendedKeyUsage=clientAuth ||
	! gen_cert twocn ca /CN=kube-apiserver/CN=stranger \
		extendedKeyUsage=clientAuth ||
	! gen_cert twocnlast ca /CN=stranger/CN=kube-apiserver \
		extendedKeyUsage=clientAuth ||
	! gen_cert intruder wrongca /CN=kube-apiserver \
		extendedKeyUsage=clientAuth; then
	bad "could not make the test certificates"
fi
# A certificate that expired yesterday (made as if two days ago).
if ! faketime -f -3d sh -c ". '$here/lib/cli.sh'; tmp='$tmp'; \
	gen_cert expired ca /CN=127.0.0.1 '$san'" ||
	[ "$(openssl x509 -in "$tmp/expired.crt" -noout -checkend 0 >/dev/null;
		echo $?)" != 1 ]; then
	bad "could not make an expired certificate"
fi

run "$bin" import --db "$db" --create <"$here/query/base.ndjson"
expect "import fixture" 0
# A month of horizon: hourly exports of many chunks (a TICK moves no
# content).
echo '{"time":"2026-04-01T00:00:00Z","type":"TICK"}' |
	"$bin" import --db "$db" >/dev/null 2>&1
printf 'admin-token-0123456789 admin\ncert:kube-apiserver admission\n' \
	>"$tmp/tokens"
chmod 600 "$tmp/tokens"
tok=admin-token-0123456789

# --- refusals at start --------------------------------------------------
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --tls-cert "$tmp/server.crt"
expect "--tls-cert without --tls-key" 2
has "cert and key go together" "$tmp/err" 'go together'
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --tls-cert "$tmp/server.crt" \
	--tls-key "$tmp/server2.key"
expect "a key that does not match" 2
has "mismatch named" "$tmp/err" 'mismatch|does not match'
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --tls-cert "$tmp/none.crt" \
	--tls-key "$tmp/server.key"
expect "a missing certificate file" 2
has "missing file named" "$tmp/err" 'none.crt'
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --tls-client-ca "$tmp/ca.crt"
expect "--tls-client-ca alone" 2
printf 'cert: admin\n' >"$tmp/badtokens"
chmod 600 "$tmp/badtokens"
run "$bin" serve --db "$db" --listen 127.0.0.1:0 --token-file "$tmp/badtokens"
expect "an empty cert: CN" 2

# --- TLS, bearer tokens, keep-alive, pipelining ---------------------------
# The files as the kubelet mounts a secret: tls.crt and tls.key are links
# into ..data, itself a link to a directory of this version; an update
# writes a new directory and swaps ..data in one rename.
mnt=$tmp/mnt
mkdir -p "$mnt/v1"
cp "$tmp/server.crt" "$mnt/v1/tls.crt"
cp "$tmp/server.key" "$mnt/v1/tls.key"
ln -s v1 "$mnt/..data"
ln -s ..data/tls.crt "$mnt/tls.crt"
ln -s ..data/tls.key "$mnt/tls.key"
# secret_update VERSION CERT KEY: the kubelet's atomic update.
secret_update() {
	mkdir -p "$mnt/$1"
	cp "$2" "$mnt/$1/tls.crt"
	cp "$3" "$mnt/$1/tls.key"
	ln -s "$1" "$mnt/..data_tmp"
	mv -T "$mnt/..data_tmp" "$mnt/..data"
}
start_server --tls-cert "$mnt/tls.crt" --tls-key "$mnt/tls.key" \
	--token-file "$tmp/tokens" --tls-reload-ms 100 --request-ms 500
get "healthz over TLS" 200 /healthz --cacert "$tmp/ca.crt"
get "remaining needs a token over TLS" 401 /v1/tenants/tenant-acme/remaining \
	--cacert "$tmp/ca.crt"
get "remaining with a token" 200 /v1/tenants/tenant-acme/remaining \
	--cacert "$tmp/ca.crt" -H "Authorization: Bearer $tok"
has "remaining answer" "$tmp/body" '"classes":\{"a10"'
refused "a client that trusts another CA" --cacert "$tmp/wrongca.crt"
has "wrong CA is a verification failure" "$tmp/curl.err" 'certificate'
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
[ "$code" = 000 ] && ok || bad "plain HTTP on the TLS port answered $code"
# Two requests on one curl connection: keep-alive.
n=$(curl -s -o /dev/null -o /dev/null -w '%{num_connects}\n' \
	--cacert "$tmp/ca.crt" -H "Authorization: Bearer $tok" \
	"https://127.0.0.1:$port/v1/classes" "https://127.0.0.1:$port/healthz" |
	tr '\n' ' ')
[ "$n" = "1 0 " ] && ok || bad "keep-alive over TLS: connects $n"
# A streamed export (many chunks, off the loop) over TLS is the CLI's.
"$bin" export --db "$db" --from 2026-03-01 --step hour --format ndjson \
	>"$tmp/want" 2>/dev/null
get "streamed export over TLS" 200 \
	"/v1/export?from=2026-03-01&step=hour&format=ndjson" \
	--cacert "$tmp/ca.crt" -H "Authorization: Bearer $tok"
same "streamed export over TLS = CLI" "$tmp/want" "$tmp/body"
[ "$(wc -c <"$tmp/want")" -gt 262144 ] && ok ||
	bad "TLS export: only $(wc -c <"$tmp/want") bytes"
$client pipeline "$port" "$tmp/ca.crt" 20 /v1/tenants/tenant-acme/remaining \
	"$tok" >"$tmp/pipe" 2>"$tmp/pipe.err"
[ "$(grep -c '^200$' "$tmp/pipe")" = 20 ] && ok ||
	bad "20 pipelined requests over TLS: $(tr '\n' ' ' <"$tmp/pipe") $(cat "$tmp/pipe.err")"
# TLS 1.2 and 1.3 are spoken; 1.1 is refused by the server (the client is
# allowed every cipher so that only the server can say no).
for v in tls1_2 tls1_3; do
	if openssl s_client -connect "127.0.0.1:$port" -CAfile "$tmp/ca.crt" \
		-"$v" </dev/null >"$tmp/s" 2>&1 &&
		grep -q 'Verify return code: 0' "$tmp/s"; then ok; else
		bad "openssl s_client -$v: $(tail -3 "$tmp/s")"
	fi
done
if openssl s_client -connect "127.0.0.1:$port" -tls1_1 \
	-cipher 'DEFAULT:@SECLEVEL=0' </dev/null >"$tmp/s" 2>&1; then
	bad "TLS 1.1 was accepted"
else
	has "TLS 1.1 refused by protocol version" "$tmp/s" 'alert protocol version|unsupported protocol|no protocols available|wrong version'
fi
# ALPN: offered h2 and http/1.1 (as curl and the API server's Go client
# do), the server picks http/1.1; offered h2 alone, it picks nothing.
openssl s_client -connect "127.0.0.1:$port" -CAfile "$tmp/ca.crt" \
	-alpn h2,http/1.1 </dev/null >"$tmp/s" 2>&1
has "ALPN picks http/1.1" "$tmp/s" '^ALPN protocol: http/1.1'
openssl s_client -connect "127.0.0.1:$port" -CAfile "$tmp/ca.crt" \
	-alpn h2 </dev/null >"$tmp/s" 2>&1
has "ALPN without http/1.1: none" "$tmp/s" '^No ALPN negotiated'
# A handshake that never finishes is cut like a slow request.
r=$($client slowhello "$port")
[ "$r" = closed ] && ok || bad "a stalled handshake was not cut ($r)"
get "serving after the stalled handshake" 200 /healthz --cacert "$tmp/ca.crt"

# --- rotation under a keep-alive client -----------------------------------
old=$(serial)
new=$(openssl x509 -in "$tmp/server2.crt" -noout -serial)
[ -n "$old" ] && [ "$old" != "$new" ] && ok || bad "serials $old / $new"
STOP=$tmp/stop PROGRESS=$tmp/ka.n $client keepalive "$port" "$tmp/ca.crt" 30 \
	/v1/tenants/tenant-acme/remaining "$tok" >"$tmp/ka" 2>"$tmp/ka.err" &
ka=$!
# ka_past N: the keep-alive client has had more than N answers.
ka_past() { [ "$(cat "$tmp/ka.n" 2>/dev/null || echo 0)" -gt "$1" ]; }
wait_until 10 ka_past 0 || bad "the keep-alive client got no answer"
# cert-manager renews the secret; the kubelet swaps the files.
secret_update v2 "$tmp/server2.crt" "$tmp/server2.key"
i=0
while [ $i -lt 50 ] && [ "$(serial)" != "$new" ]; do
	sleep 0.1
	i=$((i + 1))
done
[ "$(serial)" = "$new" ] && ok || bad "new connections did not get the new certificate"
has "reload logged" "$tmp/serve.err" 'reloaded the TLS certificate'
# A bad pair: the old key with the new certificate is refused, logged,
# and the certificate in use stays.
secret_update v3 "$tmp/server.crt" "$tmp/server2.key"
i=0
while [ $i -lt 50 ] && ! grep -q 'not reloading' "$tmp/serve.err"; do
	sleep 0.1
	i=$((i + 1))
done
has "bad pair refused with a log line" "$tmp/serve.err" 'not reloading the TLS files.*(mismatch|does not match)'
[ "$(serial)" = "$new" ] && ok || bad "a bad pair replaced the certificate"
get "serving after the bad pair" 200 /healthz --cacert "$tmp/ca.crt"
get "metrics over TLS" 200 /metrics --cacert "$tmp/ca.crt" \
	-H "Authorization: Bearer $tok"
has "one reload taken" "$tmp/body" '^gpuledger_tls_reloads_total 1$'
has "one reload refused" "$tmp/body" '^gpuledger_tls_reload_errors_total 1$'
exp=$(date -u -d "$(openssl x509 -in "$tmp/server2.crt" -noout -enddate |
	cut -d= -f2)" +%s)
has "the expiry of the certificate in use" "$tmp/body" \
	"^gpuledger_tls_certificate_expiry_timestamp_seconds $exp\$"
# More answers on the old connection after both reloads, then stop.
kan=$(cat "$tmp/ka.n" 2>/dev/null || echo 0)
wait_until 10 ka_past $((kan + 5)) || bad "the keep-alive client stalled after the reloads"
touch "$tmp/stop"
wait "$ka"
has "keep-alive client never failed across rotations" "$tmp/ka" '^requests [1-9][0-9]* failed 0 '
[ -s "$tmp/ka.err" ] && bad "keep-alive client: $(cat "$tmp/ka.err")"
stop_server

# --- an expired certificate ------------------------------------------------
start_server --tls-cert "$tmp/expired.crt" --tls-key "$tmp/expired.key" \
	--token-file "$tmp/tokens"
refused "a client refuses an expired server certificate" --cacert "$tmp/ca.crt"
openssl s_client -connect "127.0.0.1:$port" -CAfile "$tmp/ca.crt" \
	</dev/null >"$tmp/s" 2>&1
has "expired named" "$tmp/s" 'certificate has expired'
stop_server

# --- client certificates ----------------------------------------------------
start_server --tls-cert "$tmp/server.crt" --tls-key "$tmp/server.key" \
	--tls-client-ca "$tmp/ca.crt" --token-file "$tmp/tokens" \
	--probe-listen 127.0.0.1:0
pport=$(sed -n 's/^probes on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/serve.out")
# The ledger is the hand-written fixture (no watcher's complete list):
# alive, and not ready to judge.
for pw in /healthz:200 /readyz:503; do
	p=${pw%:*}
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$pport$p")
	[ "$code" = "${pw#*:}" ] && ok || bad "probe port $p: $code, want ${pw#*:}"
done
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
	"http://127.0.0.1:$pport/v1/tenants")
[ "$code" = 404 ] && ok || bad "the probe port answers only probes: $code"
refused "no client certificate" --cacert "$tmp/ca.crt"
refused "a client certificate of another CA" --cacert "$tmp/ca.crt" \
	--cert "$tmp/intruder.crt" --key "$tmp/intruder.key"
api="--cacert $tmp/ca.crt --cert $tmp/apiserver.crt --key $tmp/apiserver.key"
# shellcheck disable=SC2086
get "cert:kube-apiserver reads remaining (admission)" 200 \
	/v1/tenants/tenant-acme/remaining $api
# shellcheck disable=SC2086
get "cert:kube-apiserver is admission, not a reader of tenants" 403 \
	/v1/tenants $api
has "role named" "$tmp/body" 'role admission may not'
code=$(curl -s -o "$tmp/body" -w '%{http_code}' $api -X POST \
	-H 'Content-Type: application/json' --data-binary \
	'{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"vm-t","old":null,"new":{"gpus":[{"class":"h100"}]}}' \
	"https://127.0.0.1:$port/v1/admission")
[ "$code" = 200 ] && ok || bad "admission by certificate: $code $(cat "$tmp/body")"
has "a verdict" "$tmp/body" '"allowed":(true|false)'
get "a verified but unmapped certificate" 401 /v1/tenants \
	--cacert "$tmp/ca.crt" --cert "$tmp/stranger.crt" \
	--key "$tmp/stranger.key"
# A subject with two CNs is read as its first CN by OpenSSL's lookup and
# as its last by Go and Kubernetes: whichever is mapped, it gets no role
# (DESIGN 7), answered as an unmapped certificate is (401, a token still
# counts).
for c in twocn twocnlast; do
	[ "$(openssl x509 -in "$tmp/$c.crt" -noout -subject -nameopt RFC2253 |
		grep -o 'CN=' | wc -l)" = 2 ] && ok || bad "$c: not two CNs"
	cc="--cacert $tmp/ca.crt --cert $tmp/$c.crt --key $tmp/$c.key"
	# shellcheck disable=SC2086
	get "$c: two CNs get no role" 401 /v1/tenants/tenant-acme/remaining $cc
	code=$(curl -s -o "$tmp/body" -w '%{http_code}' $cc -X POST \
		-H 'Content-Type: application/json' --data-binary \
		'{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"vm-2cn","old":null,"new":{"gpus":[{"class":"h100"}]}}' \
		"https://127.0.0.1:$port/v1/admission")
	[ "$code" = 401 ] && ok || bad "$c: admission by a two-CN certificate: $code $(cat "$tmp/body")"
	# shellcheck disable=SC2086
	get "$c: a bearer token beside it" 200 /v1/tenants $cc \
		-H "Authorization: Bearer $tok"
done
get "a bearer token beside a certificate" 200 /v1/tenants \
	--cacert "$tmp/ca.crt" --cert "$tmp/stranger.crt" \
	--key "$tmp/stranger.key" -H "Authorization: Bearer $tok"
# shellcheck disable=SC2086
get "a wrong token is not rescued by the certificate" 401 \
	/v1/tenants/tenant-acme/remaining $api \
	-H "Authorization: Bearer wrong-token-0123456789"
# shellcheck disable=SC2086
get "metrics by certificate and token" 200 /metrics $api \
	-H "Authorization: Bearer $tok"
has "the refused handshakes are counted" "$tmp/body" \
	'^gpuledger_tls_handshake_errors_total [2-9]$'
has "the completed handshakes are counted" "$tmp/body" \
	'^gpuledger_tls_handshakes_total [1-9][0-9]*$'
stop_server

echo "tls_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
