#!/bin/sh
# The web console at /ui (DESIGN 7): what serve sends (the compiled-in
# files, byte for byte, with CSP and the other security headers), the unit
# tests of the console's JavaScript (node --test tests/ui/), and the
# headless browser test (tests/ui/browser.js, Debian chromium) against a
# small simulated ledger served on an ephemeral loopback port, once with
# --token-file and once (a copy of the ledger) without, as `make run`.
# Screenshots of each view: $UI_ARTIFACTS (default build/ui-artifacts).
# Usage: tests/ui_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(dirname "$0")
tmp=$(mktemp -d)
server_pid=
open_pid=
clean_pid=
trap 'stop_servers; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
art=${UI_ARTIFACTS:-build/ui-artifacts}
admin=admin-0123456789abcdef
tenant=tenant-0123456789abcdef

stop_servers() {
	for p in $server_pid $open_pid $clean_pid; do
		kill -TERM "$p" 2>/dev/null
		wait "$p"
	done
	server_pid= open_pid= clean_pid=
}

# serve_port OUT: the port that the serve writing OUT listens on, once it
# says so (empty if it did not within 5 s).
serve_port() {
	p= i=0
	while [ $i -lt 100 ] && [ -z "$p" ]; do
		p=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$1" 2>/dev/null)
		[ -n "$p" ] || sleep 0.05
		i=$((i + 1))
	done
	echo "$p"
}

# hdr NAME PATH REGEX: a header line of GET PATH matches REGEX.
hdr() {
	curl -s -D "$tmp/h" -o /dev/null "$url$2"
	has "$1" "$tmp/h" "$3"
}

for c in node chromium; do
	command -v $c >/dev/null 2>&1 || bad "$c is not installed (tools/install-deps.sh installs it)"
done

# --- the console's JavaScript, alone -----------------------------------
node --test "$here/ui/lib.test.js" >"$tmp/node.out" 2>&1
node_rc=$?
# Its random tests' seed, so that a failure can be repeated.
echo "ui_cli: tests/ui/lib.test.js: $(grep -o 'seed [0-9]* (UI_SEED=[0-9]* repeats it)' "$tmp/node.out" | head -n 1)"
if [ "$node_rc" -eq 0 ]; then ok; else
	bad "node --test tests/ui/lib.test.js: $(grep -E '^not ok|Error' "$tmp/node.out" | head -c 800)"
fi
grep -E '^# (pass|fail)' "$tmp/node.out" | tr '\n' ' '
echo

# --- a small cluster: ~2 days, a node allocated beyond its capacity, a
# tenant over its budget. UI_LEDGER=demo: the `make run` cluster instead
# (tools/demo.sh's simulation, 40 tenants, 30 days), a few seconds more.
sim="--seed 7 --events 20000 --tenants 12 --days 2"
[ "${UI_LEDGER:-}" = demo ] && sim="--seed 7 --events 200000 --tenants 40 --days 30"
# shellcheck disable=SC2086
"$bin" simulate $sim --out "$tmp/stream.ndjson" 2>"$tmp/err" ||
	bad "simulate: $(cat "$tmp/err")"
cat >>"$tmp/stream.ndjson" <<'EOF'
{"type":"ADDED","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hog","namespace":"tenant-dev3","uid":"c0ffee00-0000-4000-8000-000000000001"},"spec":{"nodeName":"gpu-l40s-0000","containers":[{"name":"hog","resources":{"requests":{"nvidia.com/AD102GL_L40S":"9"},"limits":{"nvidia.com/AD102GL_L40S":"9"}}}]},"status":{"phase":"Running"}},"time":"2026-01-02T23:00:00Z"}
{"type":"MODIFIED","object":{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Tenant","metadata":{"name":"dev3","namespace":"tenant-root","uid":"c0ffee00-0000-4000-8000-000000000002"},"spec":{"resourceQuotas":{"l40s.gpuclass.cozystack.io/devices":"2"}}},"time":"2026-01-02T23:00:01Z"}
EOF
"$bin" watch --from "$tmp/stream.ndjson" --db "$tmp/db" >/dev/null 2>"$tmp/err" ||
	bad "watch: $(cat "$tmp/err")"
# A copy for the server without --token-file, made while no serve holds
# the ledger.
cp -R "$tmp/db" "$tmp/db-open"
# A tenant with a sibling, for the scope check: the first child of the root
# that has children, and another child of the root.
"$bin" replay --db "$tmp/db" --json >"$tmp/state.json"
set -- $(python3 -c '
import json, sys
ts = json.load(open(sys.argv[1]))["tenants"]
kids = {}
for t in ts:
    kids.setdefault(t["parent"], []).append(t["namespace"])
top = sorted(kids.get("tenant-root", []))
mine = [n for n in top if n in kids][0]
print(mine, [n for n in top if n != mine][0])' "$tmp/state.json")
tns=$1 sib=$2
# Where the simulated history ends: the verdicts below are stamped with the
# wall clock, and so are the observations that follow them, so the history
# view is checked over the simulated days only.
sim_end=$(jq -r .time "$tmp/state.json")
printf '%s admin\n%s tenant:%s\n' "$admin" "$tenant" "$tns" >"$tmp/tokens"
chmod 600 "$tmp/tokens"

# Signed checkpoints, so that the verdicts view proves against one.
"$bin" keygen --name gpuledger.test/ui --out "$tmp/keys" >/dev/null ||
	bad "keygen"
"$bin" serve --db "$tmp/db" --listen 127.0.0.1:0 --token-file "$tmp/tokens" \
	--sign-key "$tmp/keys/gpuledger.test_ui.key" --sign-every 1 \
	>"$tmp/serve.out" 2>"$tmp/serve.err" &
server_pid=$!
port=$(serve_port "$tmp/serve.out")
[ -n "$port" ] || { bad "serve did not start: $(cat "$tmp/serve.err")"; exit 1; }
url=http://127.0.0.1:$port

# The same ledger served without --token-file, as `make run` serves it:
# the console must show it without asking for a token.
"$bin" serve --db "$tmp/db-open" --listen 127.0.0.1:0 \
	>"$tmp/open.out" 2>"$tmp/open.err" &
open_pid=$!
port=$(serve_port "$tmp/open.out")
[ -n "$port" ] || { bad "serve without --token-file did not start: $(cat "$tmp/open.err")"; exit 1; }
open_url=http://127.0.0.1:$port
code=$(curl -s -o /dev/null -w '%{http_code}' "$open_url/v1/tenants")
[ "$code" = 200 ] && ok || bad "GET /v1/tenants without a token, no --token-file: HTTP $code"

# --- what serve sends ----------------------------------------------------
for f in index.html app.js lib.js app.css; do
	p=/ui/$f
	[ $f = index.html ] && p=/ui
	code=$(curl -s -o "$tmp/got" -w '%{http_code}' "$url$p")
	[ "$code" = 200 ] && ok || bad "GET $p: HTTP $code"
	same "GET $p is query/ui/$f as built" "$here/../query/ui/$f" "$tmp/got"
done
hdr "CSP on /ui" /ui "^Content-Security-Policy: default-src 'none'; script-src 'self'; style-src 'self';.* frame-ancestors 'none'"
hdr "nosniff" /ui/app.js '^X-Content-Type-Options: nosniff'
hdr "no framing" /ui '^X-Frame-Options: DENY'
hdr "no referrer" /ui '^Referrer-Policy: no-referrer'
hdr "html type" /ui '^Content-Type: text/html; charset=utf-8'
hdr "js type" /ui/lib.js '^Content-Type: text/javascript'
hdr "css type" /ui/app.css '^Content-Type: text/css'
hdr "CSP on a 404 of /ui" /ui/nope.js "^Content-Security-Policy: default-src 'none'"
code=$(curl -s -o "$tmp/got" -w '%{http_code}' "$url/ui/nope.js")
[ "$code" = 404 ] && ok || bad "GET /ui/nope.js: HTTP $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' "$url/ui/..%2Fquery.h")
[ "$code" = 404 ] && ok || bad "GET /ui/..%2F...: HTTP $code, want 404"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/ui")
[ "$code" = 405 ] && ok || bad "POST /ui: HTTP $code, want 405"
# The API keeps its own headers: no CSP on JSON, and still a token.
curl -s -D "$tmp/h" -o /dev/null "$url/v1/tenants"
if grep -q '^Content-Security-Policy' "$tmp/h"; then bad "CSP on /v1"; else ok; fi
has "the API still wants a token" "$tmp/h" '^HTTP/1.1 401'

# --- verdicts to list: allowed and denied ---------------------------------
for n in 1 500; do
	curl -s -H "Authorization: Bearer $admin" -X POST "$url/v1/admission" \
		-d "{\"namespace\":\"$tns\",\"kind\":\"VMInstance\",\"name\":\"ui-$n\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\",\"count\":$n}]}}" \
		>"$tmp/v" || bad "admission $n"
	has "admission $n answered" "$tmp/v" '"allowed"'
done

# More than a page of them (the console reads 50 at a time, newest first,
# and "Load older" follows the listing's cursor), and three asked through an
# AdmissionReview, whose records keep the requester.
n=0
while [ $n -lt 60 ]; do
	c=$((n % 3 == 0 ? 500 : 1))
	curl -s -H "Authorization: Bearer $admin" -X POST "$url/v1/admission" \
		-d "{\"namespace\":\"$tns\",\"kind\":\"VMInstance\",\"name\":\"ui-more-$n\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\",\"count\":$c}]}}" \
		-o /dev/null -w '%{http_code}\n' >>"$tmp/more"
	n=$((n + 1))
done
[ "$(grep -c '^200$' "$tmp/more")" = 60 ] && ok || bad "60 more admissions: $(sort "$tmp/more" | uniq -c)"
for n in 1 2 3; do
	jq --arg ns "$tns" --arg n "$n" '.request.namespace = $ns |
		.request.object.metadata.namespace = $ns |
		.request.name = "ui-review-" + $n | .request.object.metadata.name = "ui-review-" + $n |
		.request.uid = "ui-review-uid-" + $n | .request.userInfo.username = "ui-user-" + $n + "@example.com"' \
		"$here/webhook/vminstance-create-denied.json" >"$tmp/review.json"
	curl -s -H "Authorization: Bearer $admin" -X POST "$url/v1/admission" \
		--data-binary @"$tmp/review.json" >"$tmp/v" || bad "review $n"
	has "review $n answered" "$tmp/v" '"uid":"ui-review-uid-'$n'"'
done
curl -s -H "Authorization: Bearer $admin" -X POST "$url/v1/admission" \
	-d "{\"namespace\":\"$tns\",\"kind\":\"VMInstance\",\"name\":\"ui-last\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\",\"count\":1}]}}" \
	>"$tmp/v" || bad "admission ui-last"

# --- the reconciliation (DESIGN 3.6): a race, a bypass, a lowered budget ---
# A tenant of the tenant token's subtree with an h100 budget of 3 and nothing
# used. Two admissions of 2 units each fit alone; both objects are then
# observed, 4 > 3: an overshoot whose cause is the race of those two
# verdicts. Then an object no verdict covers (a bypass, and a further cause),
# one in the sibling's subtree (a bypass a tenant token must not see), and
# the budget lowered. import appends while serve runs (the log's one other
# writer), and without "time" each event takes the ledger's time, that of
# the verdicts: within the window.
race=$tns-race
key=h100.gpuclass.cozystack.io/devices
# seen URL: serve at URL has applied the log up to the seq $tmp/imp names.
seen() {
	s=$(curl -s -H "Authorization: Bearer $admin" "$1/v1/tenants" | jq .seq)
	want=$(sed -n 's/.*last seq \([0-9]*\).*/\1/p' "$tmp/imp")
	[ -n "$s" ] && [ -n "$want" ] && [ "$s" -ge "$want" ]
}
# imp DB WHAT [OPTION]: appends the events on stdin to the ledger DB.
imp() {
	"$bin" import --db "$1" ${3:-} >"$tmp/imp" 2>"$tmp/err" || bad "import $2: $(cat "$tmp/err")"
}
reserve() { # NS NAME CLASS UNITS
	echo "{\"type\":\"RESERVE\",\"namespace\":\"$1\",\"class\":\"$3\",\"kind\":\"VMInstance\",\"name\":\"$2\",\"uid\":\"ui-$2\",\"before\":0,\"after\":$4}"
}
printf '%s\n' \
	"{\"type\":\"TENANT\",\"namespace\":\"$race\",\"parent\":\"$tns\"}" \
	"{\"type\":\"BUDGET\",\"namespace\":\"$race\",\"key\":\"$key\",\"value\":3}" >"$tmp/ev"
imp "$tmp/db" "the race tenant" <"$tmp/ev"
wait_until 10 seen "$url" && ok || bad "serve did not follow the import of $race"
race_ids=
for n in a b; do
	curl -s -H "Authorization: Bearer $admin" -X POST "$url/v1/admission" \
		-d "{\"namespace\":\"$race\",\"kind\":\"VMInstance\",\"name\":\"race-$n\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\",\"count\":2}]}}" \
		>"$tmp/v" || bad "admission race-$n"
	has "race-$n is allowed alone" "$tmp/v" '"allowed":true'
	race_ids=$race_ids${race_ids:+,}$(jq .id "$tmp/v")
done
{
	reserve "$race" race-a h100 2
	reserve "$race" race-b h100 2
	reserve "$race" sneak h100 1
	reserve "$sib" sneak-sib l40s 1
	echo "{\"type\":\"BUDGET\",\"namespace\":\"$race\",\"key\":\"$key\",\"value\":2}"
} >"$tmp/ev"
imp "$tmp/db" "the observations" <"$tmp/ev"
wait_until 10 seen "$url" && ok || bad "serve did not follow the import of the observations"
# The API finds the race (the browser checks that the console shows it).
curl -s -H "Authorization: Bearer $admin" "$url/v1/reconcile?tenant=$race" >"$tmp/rec"
has "the race of verdicts $race_ids is found" "$tmp/rec" "\"type\":\"race\",\"verdicts\":\[$race_ids\]"
last=$(sed -n 's/.*last seq \([0-9]*\).*/\1/p' "$tmp/imp")

# --- a clean ledger: an admission, and the object it admitted observed ----
imp "$tmp/db-clean" "the clean ledger" --create <<EOF
{"time":"2026-01-01T00:00:00Z","type":"CLASS","class":"h100","definition":{"name":"h100","resourceNames":["nvidia.com/GH100_H100_SXM5_80GB"]}}
{"type":"TENANT","namespace":"tenant-root","parent":null}
{"type":"TENANT","namespace":"tenant-clean","parent":"tenant-root"}
{"type":"BUDGET","namespace":"tenant-clean","key":"$key","value":4}
EOF
"$bin" serve --db "$tmp/db-clean" --listen 127.0.0.1:0 \
	>"$tmp/clean.out" 2>"$tmp/clean.err" &
clean_pid=$!
port=$(serve_port "$tmp/clean.out")
[ -n "$port" ] || { bad "serve of the clean ledger did not start: $(cat "$tmp/clean.err")"; exit 1; }
clean_url=http://127.0.0.1:$port
curl -s -X POST "$clean_url/v1/admission" \
	-d '{"namespace":"tenant-clean","kind":"VMInstance","name":"vm-ok","old":null,"new":{"gpus":[{"class":"h100","count":2}]}}' \
	>"$tmp/v" || bad "admission vm-ok"
has "vm-ok is allowed" "$tmp/v" '"allowed":true'
reserve tenant-clean vm-ok h100 2 >"$tmp/ev"
imp "$tmp/db-clean" "vm-ok" <"$tmp/ev"
wait_until 10 seen "$clean_url" && ok || bad "serve of the clean ledger did not follow the import"
curl -s "$clean_url/v1/reconcile" >"$tmp/rec"
has "the clean ledger: nothing found" "$tmp/rec" '"counts":\{"admissionVerdicts":1,"bypasses":0,"events":[0-9]+,"overshoots":0,"preExisting":0\}'

# A signed checkpoint covering the last event of the ledger (serve signs
# every second while the tree grows).
signed() {
	size=$(curl -s -H "Authorization: Bearer $admin" "$url/v1/checkpoint" | sed -n 2p)
	[ -n "$size" ] && [ -n "$last" ] && [ "$size" -ge "$last" ]
}
wait_until 15 signed && ok || bad "no signed checkpoint covers seq $last"

# --- the browser ------------------------------------------------------------
UI_VERIFIER_KEY=$(cat "$tmp/keys/gpuledger.test_ui.pub") \
	UI_EXPECT_OVER=1 UI_URL=$url UI_OPEN_URL=$open_url UI_CLEAN_URL=$clean_url \
	UI_SIM_END=$sim_end UI_RACE_TENANT=$race UI_RACE_IDS=$race_ids ADMIN_TOKEN=$admin TENANT_TOKEN=$tenant TENANT_NS=$tns SIBLING_NS=$sib \
	UI_ARTIFACTS=$art node "$here/ui/browser.js" >"$tmp/browser.out" 2>"$tmp/browser.err"
rc=$?
cat "$tmp/browser.out"
[ $rc -eq 0 ] && ok || bad "browser test (exit $rc): $(tail -c 600 "$tmp/browser.err")"
for v in tenants classes history verdicts reconcile reconcile-clean tenant-token no-token; do
	[ -s "$art/$v.png" ] && ok || bad "no screenshot $art/$v.png"
done

stop_servers
echo "ui_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
