#!/bin/sh
# Integration test of read replicas (DESIGN 7): `gpuledger replicate`
# follows a primary `serve` over TLS while verdicts are written to it, is
# killed and restarted at random moments, as is the primary, and ends with
# the identical log (same events, seqs and heads: `verify` and `log` of
# both). `serve --read-only` answers reads from the replica and refuses
# writes naming the primary. A primary whose log was rewritten (or cut)
# behind the replica's back is detected, naming the first seq that differs.
# Usage: tests/replicate_cli.sh PATH/TO/gpuledger
set -u
bin=${1:-./gpuledger}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null;
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
test_seed replicate_cli

gen_ca ca && gen_cert server ca /CN=127.0.0.1 \
	"subjectAltName=IP:127.0.0.1;extendedKeyUsage=serverAuth" ||
	bad "could not make the test certificates"
printf 'admin-token-0123456789 admin\nauditor-token-0123456789 auditor\n' \
	>"$tmp/tokens"
chmod 600 "$tmp/tokens"
echo auditor-token-0123456789 >"$tmp/reader"
chmod 600 "$tmp/reader"
tls="--tls-cert $tmp/server.crt --tls-key $tmp/server.key"

# serve_at DB LISTEN OUT [OPTIONS]: serve with the tokens and TLS; $spid,
# $sport.
serve_at() {
	sa_db=$1 sa_listen=$2 sa_out=$3
	shift 3
	# shellcheck disable=SC2086
	serve_up "$sa_db" "$sa_listen" "$sa_out" "$sa_out.err" \
		--token-file "$tmp/tokens" $tls --poll-ms 20 "$@"
	pids="$pids $spid"
}
start_replica() {
	"$bin" replicate --from "https://127.0.0.1:$pport" --db "$tmp/rep" \
		--token-file "$tmp/reader" --cacert "$tmp/ca.crt" --page 7 \
		--poll-ms 20 2>>"$tmp/rep.err" &
	rpid=$!
	pids="$pids $rpid"
}
# A writer: admissions, one after another, for as long as $tmp/stop is
# absent; each is a VERDICT event on the primary. Failures while the
# primary is down are expected and not counted.
writer() {
	n=0
	while [ ! -f "$tmp/stop" ]; do
		curl -s -o /dev/null --cacert "$tmp/ca.crt" \
			-H 'Authorization: Bearer admin-token-0123456789' \
			--data-binary "{\"namespace\":\"tenant-acme\",\"kind\":\"VMInstance\",\"name\":\"vm-$1-$n\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"h100\"}]}}" \
			"https://127.0.0.1:$pport/v1/admission" 2>/dev/null
		n=$((n + 1))
	done
}

# --- usage ----------------------------------------------------------------
run "$bin" replicate --db "$tmp/x"
expect "replicate without --from" 2
run "$bin" replicate --from ftp://x --db "$tmp/x"
expect "replicate from a non-HTTP URL" 2
chmod 644 "$tmp/reader"
run "$bin" replicate --from https://127.0.0.1:1 --db "$tmp/x" \
	--token-file "$tmp/reader"
expect "a token file others may read" 2
chmod 600 "$tmp/reader"
run "$bin" replicate --from https://127.0.0.1:1 --db "$tmp/x" --once
expect "--once with the primary away is an error" 2

# SIGTERM while the primary is away (retrying) is a stop: exit 0, not the
# last try's connection error.
"$bin" replicate --from https://127.0.0.1:1 --db "$tmp/away" \
	--token-file "$tmp/reader" --cacert "$tmp/ca.crt" 2>"$tmp/away.err" &
apid=$!
pids="$pids $apid"
wait_until 20 grep -q 'retrying' "$tmp/away.err" ||
	bad "replicate did not retry an absent primary: $(cat "$tmp/away.err")"
kill -TERM "$apid"
wait "$apid"
rc=$?
[ "$rc" = 0 ] && ok || bad "SIGTERM while retrying exited $rc: $(tail -2 "$tmp/away.err")"

# --- a replica under write load, both sides killed and restarted ------------
run "$bin" import --db "$tmp/primary" --create <"$here/query/base.ndjson"
expect "import the primary" 0
serve_at "$tmp/primary" 127.0.0.1:0 "$tmp/p.out"
ppid=$spid pport=$sport
start_replica
writer a &
w1=$!
writer b &
w2=$!
pids="$pids $w1 $w2"
# The moments of the kills are the random part (the seed): these sleeps
# pick them, they wait for nothing.
for round in 1 2 3; do
	rnd 5
	sleep "0.$((r + 3))"
	rnd 2
	if [ "$r" = 0 ]; then
		kill -9 "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
		start_replica
	else
		kill -9 "$ppid" 2>/dev/null
		wait "$ppid" 2>/dev/null
		sleep 0.2 # the primary stays down a while: the replica retries
		serve_at "$tmp/primary" "127.0.0.1:$pport" "$tmp/p.out"
		ppid=$spid
	fi
done
# Load goes on until the replica, restarted or not, holds more than ten
# verdicts (the count checked below).
rep_verdicts() {
	[ "$("$bin" log --db "$tmp/rep" 2>/dev/null | grep -c '"type":"VERDICT"')" -gt 10 ]
}
wait_until 30 rep_verdicts
touch "$tmp/stop"
wait "$w1" "$w2" 2>/dev/null
kill -TERM "$rpid"
wait "$rpid"
rc=$?
[ "$rc" = 0 ] && ok || bad "replicate stopped by SIGTERM exited $rc: $(tail -3 "$tmp/rep.err")"
run "$bin" replicate --from "https://127.0.0.1:$pport" --db "$tmp/rep" \
	--token-file "$tmp/reader" --cacert "$tmp/ca.crt" --once
expect "catching up once" 0
kill -TERM "$ppid"
wait "$ppid"
"$bin" verify --db "$tmp/primary" >"$tmp/pv" 2>&1 && ok || bad "verify primary: $(cat "$tmp/pv")"
"$bin" verify --db "$tmp/rep" >"$tmp/rv" 2>&1 && ok || bad "verify replica: $(cat "$tmp/rv")"
same "replica and primary verify to the same head and count" "$tmp/pv" "$tmp/rv"
"$bin" log --db "$tmp/primary" >"$tmp/plog"
"$bin" log --db "$tmp/rep" >"$tmp/rlog"
same "replica log is the primary's, byte for byte" "$tmp/plog" "$tmp/rlog"
n=$(grep -c '"type":"VERDICT"' "$tmp/rlog")
[ "$n" -gt 10 ] && ok || bad "only $n verdicts were written under load"

# --- serve --read-only on the replica ---------------------------------------
serve_at "$tmp/primary" 127.0.0.1:0 "$tmp/p.out"
ppid=$spid pport=$sport
serve_at "$tmp/rep" 127.0.0.1:0 "$tmp/r.out" \
	--read-only --primary "https://127.0.0.1:$pport"
rport=$sport
for path in /v1/tenants/tenant-acme/remaining /v1/tenants /v1/verdicts/3; do
	for p in "$pport" "$rport"; do
		curl -s --cacert "$tmp/ca.crt" \
			-H 'Authorization: Bearer auditor-token-0123456789' \
			"https://127.0.0.1:$p$path" >"$tmp/ans.$p"
	done
	same "GET $path from the replica" "$tmp/ans.$pport" "$tmp/ans.$rport"
done
code=$(curl -s -o "$tmp/body" -w '%{http_code}' --cacert "$tmp/ca.crt" \
	-H 'Authorization: Bearer admin-token-0123456789' --data-binary '{}' \
	"https://127.0.0.1:$rport/v1/admission")
[ "$code" = 503 ] && ok || bad "POST on a read-only replica: $code"
has "the 503 names the primary" "$tmp/body" "read-only replica.*primary https://127.0.0.1:$pport"
kill -TERM "$ppid" "$spid"
wait "$ppid" "$spid"

# --- a rewritten primary ----------------------------------------------------
# departs PRIMARY REPLICA WHAT PATTERN: replicating once from a primary
# serving the ledger PRIMARY into REPLICA fails, its error matching PATTERN.
departs() {
	serve_at "$1" 127.0.0.1:0 "$tmp/d.out"
	run "$bin" replicate --from "https://127.0.0.1:$sport" --db "$2" \
		--token-file "$tmp/reader" --cacert "$tmp/ca.crt" --once
	expect "replicating from $3" 1
	has "$3: the seq is named" "$tmp/err" "$4"
	kill -TERM "$spid"
	wait "$spid"
}
# The same history with the 9th event changed: it departs at seq 9.
awk 'NR == 9 { sub(/"value":8/, "\"value\":9") } { print }' \
	"$here/query/base.ndjson" >"$tmp/rewritten.ndjson"
cmp -s "$here/query/base.ndjson" "$tmp/rewritten.ndjson" && bad "the rewrite changed nothing"
run "$bin" import --db "$tmp/forged" --create <"$tmp/rewritten.ndjson"
expect "import the rewritten history" 0
departs "$tmp/forged" "$tmp/rep" "a rewritten primary" \
	'departs from this replica at seq 9 '
"$bin" log --db "$tmp/rep" >"$tmp/rlog2"
same "nothing was appended from it" "$tmp/rlog" "$tmp/rlog2"
# A primary that lost its tail: it holds 20 events of the same history.
head -n 20 "$here/query/base.ndjson" >"$tmp/short.ndjson"
run "$bin" import --db "$tmp/short" --create <"$tmp/short.ndjson"
departs "$tmp/short" "$tmp/rep" "a primary that lost events" \
	'departs from this replica at seq 21 '
# A primary whose last event is another than the replica's, with nothing
# after it: the heads at the replica's last seq differ, so it departs there
# (without that check the replica would take itself for up to date).
head -n 9 "$here/query/base.ndjson" >"$tmp/nine.ndjson"
head -n 9 "$tmp/rewritten.ndjson" >"$tmp/nine-forged.ndjson"
run "$bin" import --db "$tmp/rep9" --create <"$tmp/nine.ndjson"
expect "import nine events" 0
run "$bin" import --db "$tmp/forged9" --create <"$tmp/nine-forged.ndjson"
expect "import nine rewritten events" 0
departs "$tmp/forged9" "$tmp/rep9" "a primary whose last event differs" \
	'departs from this replica at seq 9 \(a different chain head\)'

# A primary whose event does not hash to the head it sends: a fresh replica
# takes the events before it and stops at it, appending nothing of it.
serve_at "$tmp/primary" 127.0.0.1:0 "$tmp/p.out"
python3 "$here/replicate/tamper.py" "https://127.0.0.1:$sport" "$tmp/ca.crt" \
	auditor-token-0123456789 30 >"$tmp/tamper.port" 2>"$tmp/tamper.err" &
tpid=$!
pids="$pids $tpid"
i=0
while [ $i -lt 100 ] && [ ! -s "$tmp/tamper.port" ]; do
	sleep 0.05
	i=$((i + 1))
done
run "$bin" replicate --from "http://127.0.0.1:$(cat "$tmp/tamper.port")" \
	--db "$tmp/fresh" --page 25 --once
expect "replicating from a primary whose event does not match its head" 1
has "the event's seq is named" "$tmp/err" 'departs from this replica at seq 30 \(its head does not follow'
"$bin" stats --db "$tmp/fresh" >"$tmp/fresh.stats" 2>&1
has "the page before it was appended, nothing of the bad page" "$tmp/fresh.stats" '^lastSeq: 25$'
kill "$tpid" "$spid"
wait "$tpid" "$spid" 2>/dev/null

echo "replicate_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
