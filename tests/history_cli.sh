#!/bin/sh
# The history checker of DESIGN 11 (tests/cluster/history.py): its tests on
# synthetic histories (tests/cluster/history_test.py: a correct history
# passes, each kind of violation fails naming it, over many seeds), then
# the checker on a real ledger: verdicts asked of a real `gpuledger serve`
# with curl (plain POSTs, an AdmissionReview, a dry run), the answers
# logged as a client would, and two "members" (the ledger and a copy made
# with `log | import`), whose directories the checker runs `log`, `verify`
# and `audit` on. Then the same with a lost answer, a cut copy, a verdict
# the client never saw answered (timed out, reset, 503), and input it
# cannot read.
# Usage: tests/history_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'stop_server; rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$root/tests/lib/cli.sh"
need_cmds history_cli python3 curl jq
hist=$root/tests/cluster/history.py

# The synthetic histories (prints its seeds).
out=$(python3 "$root/tests/cluster/history_test.py" 2>&1)
rc=$?
printf '%s\n' "$out" | grep -v -e '^ok: ' -e '^checks: '
p=$(printf '%s\n' "$out" | sed -n 's/^checks: \([0-9]*\) passed.*/\1/p')
f=$(printf '%s\n' "$out" | sed -n 's/^checks: [0-9]* passed, \([0-9]*\) failed/\1/p')
if [ -z "$p" ]; then
	bad "history_test.py did not finish (exit $rc)"
else
	pass=$((pass + p))
	fail=$((fail + f))
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || bad "history_test.py exit $rc"
fi

# A real ledger and real answers.
db=$tmp/m0
run "$bin" import --db "$db" --create <"$root/tests/query/base.ndjson"
expect "import the base ledger" 0
start_server
url=http://127.0.0.1:$port
: >"$tmp/answers"
# ask PATH FILE [UID]: POSTs FILE to PATH with curl and logs the answer as
# a client of the history checker does.
ask() {
	sent=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	curl -s -o "$tmp/body" -w '%{http_code}' -X POST "$url$1" \
		--data-binary @"$2" >"$tmp/code"
	jq -n -c --slurpfile rq "$2" --slurpfile b "$tmp/body" \
		--arg code "$(cat "$tmp/code")" --arg sent "$sent" \
		--arg rcv "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" --arg uid "${3:-}" \
		'{request: $rq[0], status: ($code | tonumber), body: $b[0],
		  sent: $sent, received: $rcv} + (if $uid == "" then {} else {uid: $uid} end)' \
		>>"$tmp/answers"
}
for n in 1 2 3; do
	printf '{"namespace":"tenant-acme","kind":"VMInstance","name":"h-%s","old":null,"new":{"gpus":[{"class":"h100","count":%s}]}}' \
		"$n" "$n" >"$tmp/rq$n"
	ask /v1/admission "$tmp/rq$n"
done
ask /v1/admission "$root/tests/webhook/vminstance-create-allowed.json"
ask /v1/admission "$root/tests/webhook/vminstance-create-dryrun.json"
# A count of 2^64 + 1: `log` prints this VERDICT's record as its text (a
# string), which the checker reads as the record.
jq -c '.request.uid = "big-count" |
	.request.object.spec.gpus[0].count = 18446744073709551617' \
	"$root/tests/webhook/vminstance-create-allowed.json" >"$tmp/big.json"
ask /v1/admission "$tmp/big.json"
stop_server
[ "$(jq -s 'map(select(.status == 200)) | length' "$tmp/answers")" = 6 ] && ok ||
	bad "six answers of 200: $(cat "$tmp/answers" | head -c 600)"
"$bin" log --db "$db" | "$bin" import --db "$tmp/m1" --create >/dev/null
run python3 "$hist" --bin "$bin" --answers "$tmp/answers" \
	--member "m0=$db" --member "m1=$tmp/m1"
expect "the real history holds" 0
has "it says so" "$tmp/out" '^ok: 6 answers, 2 members'
"$bin" log --db "$db" >"$tmp/m0.log"
has "the big count's record is printed as text" "$tmp/m0.log" '"record":"{.*"uid\\":\\"big-count\\"'
run python3 "$hist" --answers "$tmp/answers" --member "m0=$tmp/m0.log" \
	--single "$tmp/m0.log"
expect "logs given as files, and a single pod's with the same observations" 0

# A copy cut before the last verdict: the members' logs differ.
n=$(wc -l <"$tmp/m0.log")
head -n $((n - 1)) "$tmp/m0.log" >"$tmp/cut.log"
run python3 "$hist" --answers "$tmp/answers" --member "m0=$tmp/m0.log" \
	--member "cut=$tmp/cut.log"
expect "a cut member's log fails" 1
has "naming the divergence" "$tmp/out" "^FAIL: diverged: member m0's log ends at seq $n, member cut's at seq $((n - 1))"
# The same cut log alone: the last answered verdict is lost.
run python3 "$hist" --answers "$tmp/answers" --member "cut=$tmp/cut.log"
expect "a log without an answered verdict fails" 1
has "naming it lost" "$tmp/out" '^FAIL: lost: .*answered verdict id 5 is not in the log'
# A request the client saw time out, which the log holds with no NOTE.
jq -c 'if .request.name == "h-2" then .status = null | .body = null | .received = null else . end' \
	"$tmp/answers" >"$tmp/timeout"
run python3 "$hist" --answers "$tmp/timeout" --member "m0=$tmp/m0.log"
expect "a timed-out verdict with no NOTE VerdictUnanswered fails" 1
has "naming it" "$tmp/out" '^FAIL: unanswered: .*recorded as verdict id 2 at seq 39 with no NOTE VerdictUnanswered'
# The same request reset after it was sent (its member killed before it
# answered): in the log once with no NOTE holds; a 503 still owes the NOTE.
jq -c 'if .request.name == "h-2" then .status = null | .body = null | .received = null | .error = "reset" else . end' \
	"$tmp/answers" >"$tmp/reset"
run python3 "$hist" --answers "$tmp/reset" --member "m0=$tmp/m0.log"
expect "a verdict whose connection was reset, recorded with no NOTE, holds" 0
jq -c 'if .request.name == "h-2" then .status = 503 | .body = {error: "x"} else . end' \
	"$tmp/answers" >"$tmp/503"
run python3 "$hist" --answers "$tmp/503" --member "m0=$tmp/m0.log"
expect "a verdict answered 503 with no NOTE VerdictUnanswered fails" 1
has "naming it" "$tmp/out" '^FAIL: unanswered: .*status 503: not answered, but recorded as verdict id 2 at seq 39'
# An answer whose body differs from the record.
jq -c 'if .request.name == "h-3" then .body.allowed = false else . end' \
	"$tmp/answers" >"$tmp/changed"
run python3 "$hist" --answers "$tmp/changed" --member "m0=$tmp/m0.log"
expect "an answer that differs from its record fails" 1
has "naming it" "$tmp/out" '^FAIL: changed: .*answered id 3 differs from its record at seq 40: allowed'
# A member directory that holds no ledger: verify, audit and log say so.
mkdir "$tmp/empty"
run python3 "$hist" --bin "$bin" --answers "$tmp/answers" --member "m0=$db" \
	--member "empty=$tmp/empty"
expect "a member without a ledger fails" 1
has "naming verify" "$tmp/out" '^FAIL: verify: member empty: gpuledger verify exits'
has "and the divergence" "$tmp/out" "^FAIL: diverged: member m0's log ends at seq $n, member empty's at seq 0"
# Bad input: exit 2 with a message, never a trace.
printf '{"seq":1}\nnot json\n' >"$tmp/garbage.log"
run python3 "$hist" --answers "$tmp/answers" --member "m0=$tmp/garbage.log"
expect "a log that is not NDJSON is exit 2" 2
has "with the line" "$tmp/err" '^history: member m0: line 2 is not JSON'
run python3 "$hist" --answers "$tmp/answers" --member "m0"
expect "a --member without NAME= is exit 2" 2
has "saying so" "$tmp/err" 'want NAME=LOG\|DIR'
run python3 "$hist" --answers "$tmp/nonexistent" --member "m0=$tmp/m0.log"
expect "missing answers are exit 2" 2

echo "history_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
