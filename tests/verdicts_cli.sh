#!/bin/sh
# `gpuledger verdicts` against GET /v1/verdicts (issue 27, items 1 and 2):
# a ledger from a recorded stream (watch --from), a serve answering plain
# requests and AdmissionReviews over curl, then for many filters the CLI's
# --format json must be byte for byte the server's answer; every filter's
# bad value is exit 2 from the CLI and 400 from the server, with the same
# words; the text layout; the user's uid kept as requester.userUid
# (present, absent, empty, oversized); and records without it, as every
# record before it, still audit.
# Usage: tests/verdicts_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pass=0
fail=0
. "$root/tests/lib/cli.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT
need_cmds verdicts_cli curl jq

db=$tmp/db
run "$bin" watch --db "$db" --from "$root/tests/ingest/acme.ndjson" \
	--classes "$root/tests/ingest/classes.json"
expect "watch --from the acme stream" 0
start_server
wait_until 10 curl -sf "http://127.0.0.1:$port/readyz" || bad "serve never ready"

# review UID OP NS NAME COUNT USERINFO: an AdmissionReview of a VMInstance.
review() {
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"group":"apps.cozystack.io","version":"v1alpha1","kind":"VMInstance"},"operation":"%s","namespace":"%s","name":"%s","object":{"metadata":{"name":"%s"},"spec":{"gpus":[{"class":"h100","count":%s}]}}%s}}' \
		"$1" "$2" "$3" "$4" "$4" "$5" "$6"
}
# post NAME PATH WANT BODY: POST answers HTTP WANT; the answer in $tmp/ans.
post() {
	printf '%s' "$4" >"$tmp/body"
	code=$(curl -s -o "$tmp/ans" -w '%{http_code}' \
		-H 'Content-Type: application/json' --data-binary @"$tmp/body" \
		"http://127.0.0.1:$port/v1/$2")
	if [ "$code" = "$3" ]; then ok; else
		bad "$1: HTTP $code, want $3: $(head -c 300 "$tmp/ans")"
	fi
}
alice=',"userInfo":{"username":"alice@example.com","uid":"u-alice-42","groups":["system:authenticated","acme-devs"]}'
bob=',"userInfo":{"username":"bob","groups":["system:masters"]}'
carol=',"userInfo":{"username":"carol","uid":""}'
# Seven verdicts: reviews by alice (with her uid), bob (without one) and
# carol (an empty one), a plain request (no requester), a declaration;
# allowed and denied, in tenant-acme-dev and tenant-acme.
post "alice small" admission 200 "$(review r-1 CREATE tenant-acme-dev vm-a 1 "$alice")"
post "alice big" admission 200 "$(review r-2 CREATE tenant-acme-dev vm-b 99 "$alice")"
post "bob" admission 200 "$(review r-3 CREATE tenant-acme vm-c 1 "$bob")"
post "plain" admission 200 '{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"vm-d","old":null,"new":{"gpus":[{"class":"h100","count":50}]}}'
post "declaration" declarations 200 '{"namespace":"tenant-acme-dev","old":null,"new":{"h100.gpuclass.cozystack.io/devices":"2"}}'
post "carol" admission 200 "$(review r-6 UPDATE tenant-acme-dev vm-e 1 "$carol")"
post "bob again" admission 200 "$(review r-7 CREATE tenant-acme-dev vm-f 1 "$bob")"

# --- item 2: the user's uid beside the review's ----------------------------
hv() { curl -s "http://127.0.0.1:$port/v1/verdicts/$1" >"$tmp/v"; }
hv 1
has "alice: the review's uid" "$tmp/v" '"requester":\{[^}]*"uid":"r-1"'
has "alice: her own uid, as userUid" "$tmp/v" '"requester":\{[^}]*"userUid":"u-alice-42"'
has "alice: username and groups" "$tmp/v" '"requester":\{"groups":\["system:authenticated","acme-devs"\],"operation":"CREATE","uid":"r-1","userUid":"u-alice-42","username":"alice@example.com"\}'
for id in 3 6; do
	hv $id
	if grep -q userUid "$tmp/v"; then bad "verdict $id: a userUid without one"; else ok; fi
	has "verdict $id: the review's uid still" "$tmp/v" '"uid":"r-[36]"'
done
hv 4
if grep -q '"requester"' "$tmp/v"; then bad "a plain request has a requester"; else ok; fi
# Bounded as the rest of userInfo: 16 KiB of JCS in all.
u16k=$(printf '%016300d' 5)
u17k=$(printf '%017000d' 5)
post "userInfo.uid within the bound" admission 200 "$(review r-8 CREATE tenant-acme-dev vm-g 1 ",\"userInfo\":{\"username\":\"dave\",\"uid\":\"$u16k\"}")"
has "a long userUid is recorded" "$tmp/ans" 'verdict-id'
post "userInfo.uid over the bound" admission 400 "$(review r-9 CREATE tenant-acme-dev vm-h 1 ",\"userInfo\":{\"username\":\"dave\",\"uid\":\"$u17k\"}")"
has "over the bound: says why" "$tmp/ans" 'userInfo is larger than 16384 bytes'
post "userInfo.uid not a string" admission 200 "$(review r-10 CREATE tenant-acme-dev vm-i 1 ',"userInfo":{"username":"erin","uid":7}')"
hv 9
if grep -q userUid "$tmp/v"; then bad "a uid that is no string is recorded"; else ok; fi
post "alice again" admission 200 "$(review r-11 DELETE tenant-acme-dev vm-a 1 "$alice")"
n_verdicts=10

# --- item 1: the CLI answers what the server answers -------------------------
# pair NAME QUERY OPTIONS...: GET /v1/verdicts?QUERY and `verdicts OPTIONS
# --format json` print the same bytes (the CLI adds a newline).
pair() {
	pn=$1 pq=$2
	shift 2
	curl -s -o "$tmp/http" "http://127.0.0.1:$port/v1/verdicts${pq:+?$pq}"
	printf '\n' >>"$tmp/http"
	run "$bin" verdicts --db "$db" "$@" --format json
	expect "verdicts $pn" 0
	same "verdicts $pn: CLI = HTTP" "$tmp/http" "$tmp/out"
}
t3=$(curl -s "http://127.0.0.1:$port/v1/verdicts?after=2&limit=1" | jq -r '.verdicts[0].time')
t6=$(curl -s "http://127.0.0.1:$port/v1/verdicts?after=5&limit=1" | jq -r '.verdicts[0].time')
pair "all" "" 
pair "tenant" "tenant=tenant-acme" --tenant tenant-acme
pair "tenant-dev denied" "tenant=tenant-acme-dev&allowed=false" \
	--tenant tenant-acme-dev --allowed false
pair "requester" "requester=alice%40example.com" --requester alice@example.com
pair "requester bob, newest first" "requester=bob&order=desc" \
	--requester bob --order desc
pair "reason" "reason=WithinBudget" --reason WithinBudget
pair "allowed 1 limit 2" "allowed=1&limit=2" --allowed 1 --limit 2
pair "after before" "after=2&before=6" --after 2 --before 6
pair "desc before limit" "order=desc&before=5&limit=2" --order desc \
	--before 5 --limit 2
pair "from to" "from=$t3&to=$t6" --from "$t3" --to "$t6"
pair "an empty window" "from=1970-01-01&to=2000-01-01" --from 1970-01-01 \
	--to 2000-01-01
pair "every filter" "tenant=tenant-root&requester=bob&reason=WithinBudget&allowed=true&from=1970-01-01&after=1&before=99&order=asc&limit=5" \
	--tenant tenant-root --requester bob --reason WithinBudget \
	--allowed true --from 1970-01-01 --after 1 --before 99 --order asc \
	--limit 5
pair "--json" "limit=3" --limit 3 --json
# What the answers hold, not only that they agree.
run "$bin" verdicts --db "$db" --format json
[ "$(jq '.verdicts | length' "$tmp/out")" = "$n_verdicts" ] && ok ||
	bad "all: $(jq '.verdicts | length' "$tmp/out") verdicts, want $n_verdicts"
has "all: next is null" "$tmp/out" '^\{"next":null,'
run "$bin" verdicts --db "$db" --requester bob --format json
[ "$(jq -c '[.verdicts[].id]' "$tmp/out")" = "[3,7]" ] && ok ||
	bad "requester bob: $(jq -c '[.verdicts[].id]' "$tmp/out")"
run "$bin" verdicts --db "$db" --tenant tenant-acme-dev --allowed false --format json
[ "$(jq -c '[.verdicts[] | select(.allowed or .request.namespace != "tenant-acme-dev")] | length' "$tmp/out")" = 0 ] &&
	[ "$(jq '.verdicts | length' "$tmp/out")" -ge 2 ] && ok ||
	bad "tenant-acme-dev denied: $(jq -c '[.verdicts[].id]' "$tmp/out")"
run "$bin" verdicts --db "$db" --order desc --limit 2 --format json
[ "$(jq -c '[[.verdicts[].id], .next]' "$tmp/out")" = "[[$n_verdicts,$((n_verdicts - 1))],$((n_verdicts - 1))]" ] && ok ||
	bad "desc limit 2: $(jq -c '[[.verdicts[].id], .next]' "$tmp/out")"

# Bad values: exit 2 naming the option, 400 naming the parameter, and the
# same reason in both.
for kv in tenant=default tenant= requester= reason= allowed=maybe \
	allowed=yes from=yesterday from=1969-12-31 to=2262-04-12 after=-1 \
	after=1e3 before=0 before=x order=up limit=0 limit=1001 limit=ten; do
	k=${kv%%=*} v=${kv#*=}
	code=$(curl -s -o "$tmp/ans" -w '%{http_code}' \
		"http://127.0.0.1:$port/v1/verdicts?$k=$v")
	[ "$code" = 400 ] && ok || bad "$kv: HTTP $code, want 400"
	run "$bin" verdicts --db "$db" "--$k" "$v"
	expect "--$k '$v'" 2
	has "--$k '$v': named" "$tmp/err" "^gpuledger: verdicts: --$k: "
	cli_why=$(sed -n "s/^gpuledger: verdicts: --$k: //p" "$tmp/err")
	http_why=$(jq -r .error "$tmp/ans" | sed "s/^$k: //")
	[ -n "$cli_why" ] && [ "$cli_why" = "$http_why" ] && ok ||
		bad "$kv: CLI says '$cli_why', HTTP '$http_why'"
done
run "$bin" verdicts --db "$db" --format xml
expect "--format xml" 2
run "$bin" verdicts --db "$db" --nope
expect "an unknown option" 2
run "$bin" verdicts
expect "no --db" 2
has "no --db: says so" "$tmp/err" '--db DIR is required'
run "$bin" verdicts --db "$tmp/nowhere"
expect "no such ledger" 2

# The text layout: a header, one verdict a line, where to go on.
run "$bin" verdicts --db "$db" --limit 3
expect "text" 0
has "text: header" "$tmp/out" '^ID +SEQ +TIME +ANSWER +REASON +TYPE +NAMESPACE +OBJECT +REQUESTER$'
has "text: alice's denied verdict" "$tmp/out" '^ 2 +[0-9]+ +20[0-9-]+T[0-9:.]+Z +denied +ClassBudgetExceeded +admission +tenant-acme-dev +VMInstance/vm-b +alice@example.com$'
has "text: where to go on" "$tmp/out" '^\(more: go on with --after 3\)$'
[ "$(wc -l <"$tmp/out")" -eq 5 ] && ok || bad "text: $(wc -l <"$tmp/out") lines"
run "$bin" verdicts --db "$db" --order desc --limit 1
has "text desc: where to go on" "$tmp/out" "^\\(more: go on with --before $n_verdicts\\)\$"
run "$bin" verdicts --db "$db" --reason NoSuchReason
expect "text: none" 0
has "text: none says so" "$tmp/out" '^\(no recorded verdict matches\)$'
run "$bin" verdicts --db "$db" --after 3 --limit 1
has "text: a plain request has no requester" "$tmp/out" '^ 4 .* admission +tenant-acme-dev +VMInstance/vm-d +-$'
run "$bin" verdicts --db "$db" --after 4 --limit 1
has "text: declaration" "$tmp/out" '^ 5 .* declaration +tenant-acme-dev +- +-$'
stop_server

# The records audit, with userUid and without; a record of a review with
# a user's uid, written as every record was before userUid (the last one,
# so that no later record's chainHead hashes it), audits as well: audit
# copies the requester as recorded.
run "$bin" audit --db "$db"
expect "audit" 0
has "audit: all" "$tmp/out" "^ok: $n_verdicts verdicts match"
"$bin" log --db "$db" >"$tmp/log"
last=$(tail -1 "$tmp/log" | jq .seq)
tail -1 "$tmp/log" | grep -q '"userUid":"u-alice-42".*"type":"VERDICT"' && ok ||
	bad "the last event is not alice's verdict: $(tail -1 "$tmp/log" | head -c 200)"
jq -c "if .seq == $last then del(.record.requester.userUid) else . end" \
	"$tmp/log" >"$tmp/old.log"
tail -1 "$tmp/old.log" | grep -q userUid && bad "old.log: still a userUid" || ok
run "$bin" import --db "$tmp/old" --create <"$tmp/old.log"
expect "import the records without userUid" 0
run "$bin" audit --db "$tmp/old"
expect "old records audit" 0
has "old records: all match" "$tmp/out" "^ok: $n_verdicts verdicts match"
# And the offline listing reads them alike.
run "$bin" verdicts --db "$tmp/old" --requester alice@example.com --format json
[ "$(jq -c '[.verdicts[].id]' "$tmp/out")" = "[1,2,10]" ] && ok ||
	bad "old: alice's: $(jq -c '[.verdicts[].id]' "$tmp/out")"

echo "verdicts_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
