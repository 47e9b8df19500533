#!/bin/sh
# The reconciliation audit (DESIGN 3.6; issue 27) on a ledger built as a
# cluster builds one: `gpuledger simulate --cases` gives a history in which
# each finding happens once and the admission reviews that go with it;
# tests/reconcile/drive.py feeds the history to a live `watch --from FIFO`
# while `serve` answers each review once the lines before it are observed.
# Then: the exact answer (tests/reconcile/check.py derives it from the
# log), the exit status, CLI and HTTP byte for byte, the overshoots against
# `replay --at`, a range and a tenant where nothing happens, tenant tokens,
# and bad input.
# Usage: tests/reconcile_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pass=0
fail=0
. "$root/tests/lib/cli.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT
mode=${DRIVE_MODE:-fifo}

db=$tmp/db
# The stream's times start now, so that the verdicts' wall-clock times and
# the observations' stream times keep one order (the log's time never goes
# back) and every review lies within the window of its object.
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
run "$bin" simulate --cases --start "$now" --reviews "$tmp/reviews" \
	--out "$tmp/stream"
expect "simulate --cases" 0
run "$bin" simulate --cases
expect "--cases without --reviews" 2
has "--cases without --reviews: says so" "$tmp/err" 'needs --reviews'

run python3 "$root/tests/reconcile/drive.py" "$bin" "$tmp/stream" \
	"$tmp/reviews" "$db" --mode "$mode" --answers "$tmp/answers"
expect "drive ($mode)" 0
has "the race's reviews were both allowed" "$tmp/answers" \
	'"allowed": true.*"uid": "review-race-b"'

run "$bin" log --db "$db"
cp "$tmp/out" "$tmp/log"
run "$bin" reconcile --db "$db"
expect "reconcile finds the bypass and the overshoots: exit 1" 1
cp "$tmp/out" "$tmp/rec.json"
run python3 "$root/tests/reconcile/check.py" "$tmp/log" "$tmp/rec.json"
expect "reconcile is exactly what the log says" 0
[ "$rc" -eq 0 ] || cat "$tmp/err"
run "$bin" reconcile --db "$db"
same "the same ledger, the same bytes" "$tmp/rec.json" "$tmp/out"
run "$bin" reconcile --db "$db" --format text
expect "text: exit 1 too" 1
has "text: the bypass" "$tmp/out" 'VMInstance tenant-beta/rogue +h100 0 -> 3'
has "text: the race" "$tmp/out" '^ +race at seq [0-9]+: verdicts [0-9]+ [0-9]+$'
has "text: the budget lowered" "$tmp/out" '^ +budgetLowered at seq'
run "$bin" audit --db "$db"
expect "the ledger audits clean" 0

# Every overshoot is what replay shows: over at fromSeq, not at
# fromSeq - 1, nor at toSeq.
python3 - "$tmp/rec.json" >"$tmp/probes" <<'PY'
import json, sys
for o in json.load(open(sys.argv[1]))["overshoots"]:
    print(o["tenant"], o["fromSeq"], "over")
    print(o["tenant"], o["fromSeq"] - 1, "within")
    if o["toSeq"] is not None:
        print(o["tenant"], o["toSeq"], "within")
PY
while read -r t s want; do
	"$bin" replay --db "$db" --at "$s" --tenant "$t" --format json \
		>"$tmp/st" 2>/dev/null
	got=$(python3 -c 'import json,sys
t=json.load(open(sys.argv[1]))["tenants"][0]
print("over" if any(o["used"] > o["budget"] for o in t["overcommitted"]) else "within")' "$tmp/st")
	if [ "$got" = "$want" ]; then ok; else
		bad "replay --at $s --tenant $t: $got, want $want"
	fi
done <"$tmp/probes"

# Where nothing happens: tenant-acme up to the observation of web (an
# object older than admission is no finding).
web=$(grep '"type":"RESERVE"' "$tmp/log" | grep -m1 '"name":"web"' |
	sed 's/.*"seq":\([0-9]*\).*/\1/')
run "$bin" reconcile --db "$db" --tenant tenant-acme --to "$web"
expect "nothing in tenant-acme up to web: exit 0" 0
has "nothing: no bypass, no overshoot" "$tmp/out" \
	'"bypasses":\[\],"overshoots":\[\],"counts"'
has "nothing: the older object is listed" "$tmp/out" '"preExisting":\[\{[^]]*"name":"legacy"'
run "$bin" reconcile --db "$db" --since 1
expect "--since 1: legacy is a bypass too" 1
has "--since 1: two bypasses" "$tmp/out" '"bypasses":2'
run "$bin" reconcile --db "$db" --window 0s
expect "--window 0s" 1
has "--window 0s: the admitted objects are bypasses" "$tmp/out" '"bypasses":5'

# Bad input: exit 2 with the parameter named.
for args in "--window 5q" "--from 0" "--from 999999" "--to yesterday" \
	"--since 2026-13-01" "--tenant kube-system" "--from 5 --to 4"; do
	# shellcheck disable=SC2086
	run "$bin" reconcile --db "$db" $args
	expect "reconcile $args" 2
	has "reconcile $args: says which" "$tmp/err" "reconcile: --(window|from|to|since|tenant)"
done
# A seq or time is read as replay --at reads it (ledger_at_resolve) and
# refused in its words, after the option's name.
for a in yesterday 1969-12-31 2262-04-12 12345678901234567890 "-1"; do
	run "$bin" replay --db "$db" --at "$a"
	why=$(sed -n 's/^gpuledger: replay: --at //p' "$tmp/err")
	run "$bin" reconcile --db "$db" --from "$a"
	expect "reconcile --from $a" 2
	if [ -n "$why" ] &&
		[ "$(cat "$tmp/err")" = "gpuledger: reconcile: --from $why" ]; then ok; else
		bad "reconcile --from $a: \"$(cat "$tmp/err")\", replay says \"$why\""
	fi
done
run "$bin" reconcile --db "$tmp/nothing-here"
expect "no ledger" 2

# GET /v1/reconcile: the CLI's bytes, the roles of DESIGN 7, and 400s.
cat >"$tmp/tokens" <<'TOK'
auditor-token-0123456789 auditor
gamma-token-0123456789 tenant:tenant-gamma
admission-token-0123456789 admission
TOK
chmod 600 "$tmp/tokens"
start_server --token-file "$tmp/tokens"
url=http://127.0.0.1:$port/v1/reconcile
# get NAME TOKEN QUERY WANT: GET /v1/reconcile?QUERY answers HTTP WANT.
get() {
	code=$(curl -s -o "$tmp/ans" -w '%{http_code}' -H "Authorization: Bearer $2" "$url?$3")
	if [ "$code" = "$4" ]; then ok; else
		bad "$1: HTTP $code, want $4: $(head -c 300 "$tmp/ans")"
	fi
}
get "auditor" auditor-token-0123456789 "" 200
same "HTTP equals the CLI" "$tmp/rec.json" "$tmp/ans"
get "auditor, a range" auditor-token-0123456789 "tenant=tenant-acme&to=$web" 200
"$bin" reconcile --db "$db" --tenant tenant-acme --to "$web" >"$tmp/cli2"
same "HTTP equals the CLI (range and tenant)" "$tmp/cli2" "$tmp/ans"
get "tenant token: its own subtree" gamma-token-0123456789 "" 200
"$bin" reconcile --db "$db" --tenant tenant-gamma >"$tmp/cli3"
same "tenant token = --tenant of its namespace" "$tmp/cli3" "$tmp/ans"
has "tenant token: gamma's race only" "$tmp/ans" '"overshoots":1'
get "tenant token: another subtree" gamma-token-0123456789 "tenant=tenant-beta" 403
get "admission role" admission-token-0123456789 "" 403
get "no token" "" "" 401
get "bad window" auditor-token-0123456789 "window=5q" 400
has "bad window: named" "$tmp/ans" 'parameter window'
get "unknown parameter" auditor-token-0123456789 "format=text" 400
get "since not a time" auditor-token-0123456789 "since=soon" 400
stop_server

echo "reconcile_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
