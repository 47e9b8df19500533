#!/bin/sh
# Integration test of `gpuledger serve` and `gpuledger audit` (DESIGN 7, 3.5)
# with real clients: the server runs on an ephemeral loopback port, curl
# talks to it, `gpuledger import` appends while it runs, and the answers are
# compared with what `replay --json` and `eval --db` say about the same
# ledger (built from tests/query/base.ndjson).
# Usage: tests/serve_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
dir=$(dirname "$0")/query
tmp=$(mktemp -d)
server_pid=
trap 'stop_server; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"
db=$tmp/db
port=


run() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
expect() {
	if [ "$rc" -eq "$2" ]; then ok; else
		bad "$1: exit $rc, want $2 ($(head -c 300 "$tmp/err"))"
	fi
}
has() {
	if grep -Eq -- "$3" "$2"; then ok; else
		bad "$1: no line matching /$3/ in: $(head -c 300 "$2")"
	fi
}


# req METHOD PATH [TOKEN [BODY]]: body to $tmp/body, status to $code.
req() {
	set -- "$1" "$2" "${3:-}" "${4:-}"
	rm -f "$tmp/body"
	: >"$tmp/body"
	if [ -n "$4" ]; then
		code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$1" \
			${3:+-H "Authorization: Bearer $3"} \
			-H 'Content-Type: application/json' --data-binary "$4" \
			"http://127.0.0.1:$port$2")
	else
		code=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$1" \
			${3:+-H "Authorization: Bearer $3"} \
			"http://127.0.0.1:$port$2")
	fi
}
status() { # NAME WANT
	if [ "$code" = "$2" ]; then ok; else
		bad "$1: HTTP $code, want $2 ($(head -c 200 "$tmp/body"))"
	fi
}
# A member of the JSON in $tmp/body, printed canonically.
member() {
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[int(k)] if isinstance(v, list) else v[k]
print(json.dumps(v, sort_keys=True, separators=(",", ":")))' "$tmp/body" "$@"
}

vm='{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"vm-x","old":null,"new":{"gpus":[{"class":"h100"}]}}'

# --- usage and refusals ------------------------------------------------
run "$bin" import --db "$db" --create <"$dir/base.ndjson"
expect "import fixture" 0
run "$bin" serve
expect "serve without --db" 2
run "$bin" serve --db "$db" --listen 0.0.0.0:0
expect "serve on 0.0.0.0 without tokens" 2
has "non-loopback refused" "$tmp/err" 'not a loopback address'
printf 'admin-token-0123456789 admin\n' >"$tmp/tokens"
chmod 644 "$tmp/tokens"
run "$bin" serve --db "$db" --token-file "$tmp/tokens" --listen 127.0.0.1:0
expect "world-readable token file" 2
has "token file mode" "$tmp/err" 'chmod 600'
run "$bin" audit --db "$db" --from 0
expect "audit --from 0" 2
run "$bin" audit --db "$db" --from 3 --to 2
expect "audit --from 3 --to 2" 2
run "$bin" audit --db "$db"
expect "audit with no verdicts" 0
has "audit of nothing" "$tmp/out" '^ok: 0 verdicts'

# --- ready means ready to judge (DESIGN 7) ----------------------------
# A fresh install: serve --create before the watcher's first list is
# alive but not ready, and says why; the end of the recorded stream (the
# watcher's complete list) makes it ready without a restart.
fresh=$tmp/fresh
serve_db=$fresh
mkdir -p "$fresh"
start_server --create --poll-ms 20
req GET /healthz
status "fresh: healthz" 200
req GET /readyz
status "fresh: readyz before any list" 503
has "fresh: readyz says why" "$tmp/body" 'no complete list.*NOTE Synced'
printf '%s\n' '{"type":"ADDED","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tenant-root"}}}' \
	>"$tmp/list.ndjson"
run "$bin" watch --db "$fresh" --from "$tmp/list.ndjson" --no-sync
expect "fresh: the watcher's first list" 0
fresh_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz")" = 200 ]; }
if wait_until 10 fresh_ready; then ok; else bad "fresh: readyz not 200 after the list"; fi
stop_server
serve_db=

# --- reads agree with the tools ----------------------------------------
start_server
run "$bin" serve --db "$db" --listen 127.0.0.1:0
expect "a second server on the same ledger" 2
has "second server" "$tmp/err" 'another gpuledger serve'
req GET /healthz
status healthz 200
# The fixture is a log written by hand, with no watcher's complete list:
# caught up, but not ready to judge.
req GET /readyz
status readyz 503
has "readyz names the seq it is at" "$tmp/body" '"seq":37'
req GET /v1/state
status state 200
"$bin" replay --db "$db" --json | tr -d "\n" >"$tmp/replay"
same "GET /v1/state = replay --json" "$tmp/replay" "$tmp/body"
req GET /v1/tenants/tenant-acme
status tenant 200
member children >"$tmp/got"
echo '["tenant-acme-dev","tenant-acme-prod"]' >"$tmp/want"
same "children" "$tmp/want" "$tmp/got"
"$bin" replay --db "$db" --json --tenant tenant-acme | python3 -c '
import json, sys
t = json.load(sys.stdin)["tenants"][0]
print(json.dumps(t, sort_keys=True, separators=(",", ":")))' >"$tmp/want"
python3 -c 'import json, sys
t = json.load(open(sys.argv[1])); del t["children"]
print(json.dumps(t, sort_keys=True, separators=(",", ":")))' "$tmp/body" \
	>"$tmp/got"
same "tenant = replay tenant" "$tmp/want" "$tmp/got"
req GET /v1/tenants/tenant-acme-dev/remaining
status remaining 200
echo '{"function":"Remaining","input":{"namespace":"tenant-acme-dev"}}' |
	"$bin" eval --db "$db" | python3 -c 'import json, sys
print(json.dumps(json.load(sys.stdin)["output"], sort_keys=True, separators=(",", ":")))' \
	>"$tmp/want"
python3 -c 'import json, sys
print(json.dumps(json.load(open(sys.argv[1])), sort_keys=True, separators=(",", ":")))' \
	"$tmp/body" >"$tmp/got"
same "remaining = eval Remaining" "$tmp/want" "$tmp/got"
req GET /v1/classes/h100/capacity
status capacity 200
has "capacity" "$tmp/body" '"capacity":16,"class":"h100","free":13'
req GET /v1/export
status "export without from" 400
# The HTTP export is the CLI's, byte for byte (costs 0 without --rates).
for q in "step=hour" "step=day&basis=allocated" "step=day&rollup=subtree"; do
	req GET "/v1/export?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&$q"
	status "export $q" 200
	set -- --step hour
	case $q in
	*day*) set -- --step day ;;
	esac
	case $q in *allocated*) set -- "$@" --basis allocated ;; esac
	case $q in *rollup*) set -- "$@" --rollup subtree ;; esac
	"$bin" export --db "$db" --from 2026-01-01T00:00:00Z \
		--to 2026-03-01T00:00:00Z "$@" >"$tmp/want" 2>/dev/null
	same "export $q = CLI" "$tmp/want" "$tmp/body"
done
req GET /v1/nope
status "unknown path" 404
req DELETE /v1/tenants
status "wrong method" 405

# --- verdicts ----------------------------------------------------------
req POST /v1/admission "" "$vm"
status admission 200
has "verdict id" "$tmp/body" '"id":1,'
has "verdict basis" "$tmp/body" '"basisSeq":37,'
has "verdict seq" "$tmp/body" '"seq":38,'
cp "$tmp/body" "$tmp/verdict1"
req GET /v1/verdicts/1
same "lookup = answer" "$tmp/verdict1" "$tmp/body"
req GET '/v1/verdicts/1?verify=1'
has "verify" "$tmp/body" '"verified":true'
req POST /v1/admission "" '{"namespace":"tenant-a","kind":"Pod"}'
status "unknown kind" 400
req POST /v1/admission "" '{not json'
status "malformed JSON" 400
head -c 1100000 /dev/zero | tr '\0' 'x' >"$tmp/big"
code=$(curl -s -o "$tmp/body" -w '%{http_code}' --data-binary "@$tmp/big" \
	"http://127.0.0.1:$port/v1/admission")
status "oversized body" 413
req POST /v1/declarations "" \
	'{"namespace":"tenant-acme-dev","old":null,"new":{"h100.gpuclass.cozystack.io/devices":"9"}}'
status declaration 200
has "declaration reason" "$tmp/body" '"reason":"ExceedsParentBudget"'
req POST /v1/admission "" '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"abc-1","kind":{"kind":"VMInstance"},"operation":"DELETE","namespace":"tenant-acme","name":"vm-a","oldObject":{"spec":{"gpus":[{"class":"h100"}]}}}}'
status "AdmissionReview" 200
has "review answer" "$tmp/body" '"uid":"abc-1"'
has "review allowed" "$tmp/body" '"allowed":true'

# Concurrent clients: 8 x 20 verdicts; every id distinct.
cpids=
for c in 1 2 3 4 5 6 7 8; do
	(
		i=0
		while [ $i -lt 20 ]; do
			curl -s --data-binary "$vm" \
				"http://127.0.0.1:$port/v1/admission"
			echo
			i=$((i + 1))
		done
	) >"$tmp/conc.$c" &
	cpids="$cpids $!"
done
for p in $cpids; do wait "$p"; done
cat "$tmp"/conc.* | sed -n 's/.*"id":\([0-9]*\),.*/\1/p' | sort -n >"$tmp/ids"
n=$(wc -l <"$tmp/ids")
u=$(uniq "$tmp/ids" | wc -l)
if [ "$n" -eq 160 ] && [ "$u" -eq 160 ]; then ok; else
	bad "concurrent verdicts: $n answers, $u distinct ids"
fi

# --- a writer appends while the server follows -------------------------
printf '%s\n' '{"type":"TENANT","namespace":"tenant-gamma","parent":"tenant-root"}' |
	"$bin" import --db "$db" >/dev/null 2>&1
i=0
code=404
while [ $i -lt 100 ] && [ "$code" != 200 ]; do
	req GET /v1/tenants/tenant-gamma
	[ "$code" = 200 ] || sleep 0.05
	i=$((i + 1))
done
status "follows import" 200
req GET /metrics
has "metrics verdicts" "$tmp/body" '^gpuledger_verdicts_total\{type="admission",reason="WithinBudget"\} 16[0-9]$'
has "metrics lag" "$tmp/body" '^gpuledger_log_lag_seconds [0-9.e-]+$'

# --- restart -------------------------------------------------------------
req GET /v1/state
cp "$tmp/body" "$tmp/state.before"
stop_server
if [ "$stopped_rc" -eq 0 ]; then ok; else bad "SIGTERM exit $stopped_rc"; fi
start_server
req GET /v1/state
same "state after restart" "$tmp/state.before" "$tmp/body"
req POST /v1/admission "" "$vm"
has "ids go on after restart" "$tmp/body" '"id":164,'
stop_server
if [ "$stopped_rc" -eq 0 ]; then ok; else bad "SIGTERM after restart: exit $stopped_rc"; fi

# --- audit ---------------------------------------------------------------
run "$bin" audit --db "$db"
expect "audit" 0
has "audit count" "$tmp/out" '^ok: 164 verdicts match \(ids 1\.\.164\)$'
run "$bin" audit --db "$db" --from 2 --to 3
expect "audit range" 0
has "audit range count" "$tmp/out" '^ok: 2 verdicts match \(ids 2\.\.3\)$'
# A forged verdict (right shape, wrong answer) is found and named.
python3 -c 'import json, sys
v = json.load(open(sys.argv[1])); del v["seq"]; v["id"] = 165
v["allowed"] = not v["allowed"]
print(json.dumps({"type": "VERDICT", "record": v}))' "$tmp/verdict1" |
	"$bin" import --db "$db" >/dev/null
run "$bin" audit --db "$db"
expect "audit finds a forgery" 1
has "mismatch named" "$tmp/out" '^mismatch: verdict 165 \(seq [0-9]+\)'
has "stored shown" "$tmp/out" '^stored: '
has "recomputed shown" "$tmp/out" '^recomputed: '

# --- tokens --------------------------------------------------------------
cat >"$tmp/tokens" <<'EOF'
admin-token-0123456789 admin
admission-token-0123456 admission
auditor-token-012345678 auditor
tenant-acme-token-01234 tenant:tenant-acme
EOF
chmod 600 "$tmp/tokens"
start_server --token-file "$tmp/tokens"
while read -r method path token want; do
	[ "$token" = "-" ] && token=
	body=
	[ "$method" = POST ] && body=$vm
	req "$method" "$path" "$token" "$body"
	status "$method $path as ${token:-nobody}" "$want"
done <<'EOF'
GET /healthz - 200
GET /v1/state - 401
GET /v1/state wrong-token-000000000 401
GET /v1/state auditor-token-012345678 200
GET /v1/state admission-token-0123456 403
POST /v1/admission admission-token-0123456 200
POST /v1/admission auditor-token-012345678 403
POST /v1/admission tenant-acme-token-01234 403
GET /v1/tenants/tenant-acme-dev/remaining tenant-acme-token-01234 200
GET /v1/tenants/tenant-beta/remaining tenant-acme-token-01234 403
GET /v1/tenants/tenant-beta/remaining admission-token-0123456 200
GET /metrics tenant-acme-token-01234 403
GET /metrics admin-token-0123456789 200
EOF
stop_server
if [ "$stopped_rc" -eq 0 ]; then ok; else bad "SIGTERM with a token file: exit $stopped_rc"; fi

# --- streamed heavy reads ------------------------------------------------
# A month of hourly rows is many chunks: streamed (chunked, off the loop),
# it is still the CLI's export byte for byte, over HTTP/1.1 and HTTP/1.0.
echo '{"time":"2026-04-01T00:00:00Z","type":"TICK"}' |
	"$bin" import --db "$db" >/dev/null 2>&1
start_server
for fmt in focus-csv ndjson; do
	"$bin" export --db "$db" --from 2026-03-01 --step hour --format "$fmt" \
		>"$tmp/want" 2>/dev/null
	for v in --http1.1 --http1.0; do
		curl -s $v -D "$tmp/hdr" -o "$tmp/body" \
			"http://127.0.0.1:$port/v1/export?from=2026-03-01&step=hour&format=$fmt"
		same "streamed export $fmt $v = CLI" "$tmp/want" "$tmp/body"
	done
	if [ "$(wc -c <"$tmp/want")" -gt 262144 ]; then ok; else
		bad "export $fmt: only $(wc -c <"$tmp/want") bytes, want many chunks"
	fi
done
curl -s --http1.1 -D "$tmp/hdr" -o /dev/null \
	"http://127.0.0.1:$port/v1/export?from=2026-03-01&step=hour"
has "export is chunked" "$tmp/hdr" '^Transfer-Encoding: chunked'
stop_server

echo "serve_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
