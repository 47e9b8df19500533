#!/bin/sh
# What is judged is what is recorded (DESIGN 3.5; issue 28): the bounds of
# an AdmissionReview, then the property over 10,000 seeded random requests
# sent over HTTP and through eval (tests/verdict_prop.py says how; SEED=N
# reruns one, PROP_N=N sets the count).
# Usage: tests/judged_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pass=0
fail=0
. "$root/tests/lib/cli.sh"
trap 'stop_server; rm -rf "$tmp"' EXIT

db=$tmp/db
"$bin" import --db "$db" --create <"$root/tests/query/base.ndjson" >/dev/null
start_server

# review UID DRYRUN USERINFO: an AdmissionReview of a VMInstance CREATE.
review() {
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"%s","kind":{"kind":"VMInstance"},"operation":"CREATE","namespace":"tenant-acme-dev","name":"vm","object":{"spec":{"gpus":[{"class":"h100","count":1}]}}%s%s}}' \
		"$1" "$2" "$3"
}
# post NAME WANT BODY: POST /v1/admission (or $route) answers HTTP WANT.
post() {
	printf '%s' "$3" >"$tmp/body"
	code=$(curl -s -o "$tmp/ans" -w '%{http_code}' -H 'Content-Type: application/json' \
		--data-binary @"$tmp/body" "http://127.0.0.1:$port${route:-/v1/admission}")
	if [ "$code" = "$2" ]; then ok; else
		bad "$1: HTTP $code, want $2: $(head -c 300 "$tmp/ans")"
	fi
}
u128=$(printf '%0128d' 7)
u129=$(printf '%0129d' 7)
big=$(printf '%017000d' 1)
post "uid of 128 bytes" 200 "$(review "$u128" '' '')"
post "uid of 129 bytes" 400 "$(review "$u129" '' '')"
has "uid: says why" "$tmp/ans" 'request.uid is longer than 128 bytes'
post "dryRun true" 200 "$(review u1 ',"dryRun":true' '')"
has "dryRun true: not recorded" "$tmp/ans" 'dry-run'
post "dryRun null is absent" 200 "$(review u2 ',"dryRun":null' '')"
has "dryRun null: recorded" "$tmp/ans" 'verdict-id'
post 'dryRun "true"' 400 "$(review u3 ',"dryRun":"true"' '')"
has "dryRun: says why" "$tmp/ans" 'dryRun must be a boolean'
post "dryRun 1" 400 "$(review u4 ',"dryRun":1' '')"
post "userInfo of 17 KiB" 400 "$(review u5 '' ",\"userInfo\":{\"username\":\"$big\"}")"
has "userInfo: says why" "$tmp/ans" 'userInfo is larger than 16384 bytes'
post "userInfo not an object" 400 "$(review u6 '' ',"userInfo":[]')"
# A malformed review is a 400, never a verdict (issue 40): an object or
# oldObject that is not an object (or null), an empty uid; the same for a
# Tenant's review at /v1/declarations.
# shape NAME ROUTE KIND OP UID OBJECTS MESSAGE: a review of KIND with the
# members OBJECTS answers 400 and exactly {"error": MESSAGE}.
shape() {
	route=$2
	post "$1" 400 "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"$5\",\"kind\":{\"kind\":\"$3\"},\"operation\":\"$4\",\"namespace\":\"tenant-acme\",\"name\":\"dev\",$6}}"
	route=
	eq "$1: the error" "$(cat "$tmp/ans")" "{\"error\":\"AdmissionReview: $7\"}"
}
# eq NAME GOT WANT
eq() {
	if [ "$2" = "$3" ]; then ok; else bad "$1: got $2, want $3"; fi
}
n0=$("$bin" log --db "$db" | wc -l)
shape 'object "x"' /v1/admission VMInstance CREATE s1 '"object":"x"' \
	'request.object must be an object or null'
shape 'object []' /v1/admission KubernetesNodes UPDATE s2 \
	'"object":[],"oldObject":{"spec":{}}' 'request.object must be an object or null'
shape 'oldObject "x"' /v1/admission VMInstance UPDATE s3 \
	'"object":{"spec":{}},"oldObject":"x"' 'request.oldObject must be an object or null'
shape 'oldObject 7 of a DELETE' /v1/admission VMInstance DELETE s4 \
	'"object":null,"oldObject":7' 'request.oldObject must be an object or null'
shape 'uid ""' /v1/admission VMInstance CREATE '' '"object":{"spec":{}}' \
	'request.uid must not be empty'
shape 'Tenant object "x"' /v1/declarations Tenant CREATE s5 '"object":"x"' \
	'request.object must be an object or null'
shape 'Tenant oldObject "x"' /v1/declarations Tenant UPDATE s6 \
	'"object":{"spec":{}},"oldObject":"x"' 'request.oldObject must be an object or null'
shape 'Tenant uid ""' /v1/declarations Tenant CREATE '' '"object":{"spec":{}}' \
	'request.uid must not be empty'
eq "no malformed review was recorded" "$("$bin" log --db "$db" | wc -l)" "$n0"
# Null and absent are no object: still judged.
post "object null of a DELETE" 200 '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"s7","kind":{"kind":"VMInstance"},"operation":"DELETE","namespace":"tenant-acme","name":"gone","object":null,"oldObject":{"spec":{}}}}'
has "object null: a verdict" "$tmp/ans" 'verdict-id'
# Spelt as a chart spells it: 1.0 and 1e0 are the integer 1 in the
# verdict and in its record, and the record re-derives.
post "count 1.0" 200 '{"namespace":"tenant-acme-dev","kind":"KubernetesNodes","name":"f0","old":null,"new":{"maxReplicas":1.0,"gpus":[{"class":"h100","count":1e0}]}}'
has "count 1.0: judged as 1" "$tmp/ans" '"count":1}.*"maxReplicas":1}'
id=$(sed -n 's/.*"id":\([0-9]*\),.*/\1/p' "$tmp/ans")
curl -s "http://127.0.0.1:$port/v1/verdicts/$id?verify=1" >"$tmp/v"
has "count 1.0: the record re-derives" "$tmp/v" '"verified":true'
post "a duplicate key" 400 '{"namespace":"tenant-acme-dev","namespace":"x","kind":"VMInstance","name":"v","old":null,"new":{}}'
post "a number no double holds" 400 '{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"v","old":null,"new":{"gpus":[{"class":"h100","count":1e400}]}}'
# Time filters of the verdict list: 1970 to what the ledger can date.
for tw in 2026-01-01:200 1970-01-01T00:00:00Z:200 1969-12-31T23:59:59Z:400 \
	5000-01-01:400 2262-04-12:400 -1:400; do
	code=$(curl -s -o "$tmp/ans" -w '%{http_code}' \
		"http://127.0.0.1:$port/v1/verdicts?from=${tw%:*}")
	[ "$code" = "${tw##*:}" ] && ok || bad "verdicts from=${tw%:*}: HTTP $code, want ${tw##*:}"
done
stop_server
run "$bin" audit --db "$db"
expect "audit" 0

echo "judged_cli: bounds: $pass passed, $fail failed"
b_pass=$pass b_fail=$fail
py_checks judged_cli "$root/tests/verdict_prop.py" --bin "$bin" --root "$root" \
	--n "${PROP_N:-10000}" ${SEED:+--seed "$SEED"}
p_rc=$?
pass=$((pass + b_pass)) fail=$((fail + b_fail))
echo "judged_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$p_rc" -eq 0 ]
