#!/bin/sh
# The log in etcd and `gpuledger member` as a follower (DESIGN 11), against
# a real 3-member etcd on loopback with a TCP proxy in front of each member
# (tests/cluster/etcd_cluster.py):
#  - a simulated history (`simulate`, `watch --from`, a few verdicts from
#    `serve`) fed through the append txn (`cluster feed`) to 3 members:
#    every member's `log` is byte for byte a single-pod `import` of the same
#    events, `verify` gives the same head, each holds the tree of the
#    single-pod ledger's signed checkpoint (the same Merkle root), `audit`
#    passes, and the checkpoints (every N seqs) fall at the same seqs;
#  - rule 1: the feeder's txn commits and its answer is dropped by the
#    proxy: re-sent, found to be ours, no duplicate;
#  - a member SIGKILLed and restarted resumes from its stored revision; a
#    second member with a live member's --name is refused, naming the
#    holder, and one restarted at once after SIGKILL starts; a
#    member stopped while `etcdctl compact` passes its revision catches up
#    by range reads; a member cut off from etcd keeps answering GETs with
#    X-Gpuledger-Stale and /readyz 503, and recovers;
#  - rule 8: a member on a ledger of another prefix or epoch refuses,
#    naming why; a bad POST is a 400; SIGTERM exits 0;
#  - `cluster init --db` of a single-pod ledger, members on copies of it:
#    the same heads and Merkle roots, audit passes on each;
#  - bad input to the feed (not JSON, an event that does not fit) is exit
#    2 naming the line, and writes nothing.
# Usage: tests/member_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-member.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds member_cli etcd etcdctl python3 jq curl
export ETCDCTL_API=3

. "$here/cluster/lib.sh"
etcd_up member_cli

# member NAME PREFIX ETCD [OPTIONS...]: starts a member on $tmp/NAME
# (tests/cluster/lib.sh's member_up); sets its pid in $pid_NAME and port in
# $port_NAME. stop NAME [SIGNAL] stops it and sets $stopped_rc; seq_of NAME
# is its last applied seq.
member() {
	mn=$1 mp=$2 me=$3
	shift 3
	member_up "$mn" "$tmp/$mn" "$me" "$mp" --checkpoint-every 500 \
		--sign-key "$tmp/keys/test.example_member.key" --sign-every 250 "$@"
}
stop() { member_stop "$@"; }
seq_of() { member_seq "$1"; }
at_seq() { [ "$(seq_of "$1")" = "$2" ]; }
# caught_up NAME SEQ
caught_up() {
	if wait_until 40 at_seq "$1" "$2"; then ok; else
		bad "$1 is at seq $(seq_of "$1"), not $2: $(tail -3 "$tmp/$1.err")"
	fi
}

# ----------------------------------------------------- the history to feed
"$bin" simulate --seed 26 --events 30000 --tenants 10 --days 3 --out "$tmp/sim.ndjson" ||
	bad "simulate failed"
"$bin" watch --from "$tmp/sim.ndjson" --db "$tmp/src" >/dev/null 2>&1 || bad "watch --from failed"
# A few verdicts, so that the log holds VERDICTs and audit has work.
db=$tmp/src
start_server
tenant=$("$bin" replay --db "$tmp/src" --json | jq -r '[.tenants[] | select(.parent != null)][0].namespace')
class=$("$bin" replay --db "$tmp/src" --json | jq -r '.classes[0].name')
for n in 1 2 3; do
	curl -s -X POST "http://127.0.0.1:$port/v1/admission" \
		-d "{\"namespace\":\"$tenant\",\"kind\":\"VMInstance\",\"name\":\"vm$n\",\"old\":null,\"new\":{\"gpus\":[{\"class\":\"$class\",\"count\":$n}]}}" \
		>/dev/null
done
stop_server
"$bin" log --db "$tmp/src" >"$tmp/events"
total=$(wc -l <"$tmp/events" | tr -d ' ')
is "the history holds verdicts" "$(grep -c '"type":"VERDICT"' "$tmp/events")" 3
[ "$total" -gt 1500 ] && ok || bad "a history of only $total events"
"$bin" import --db "$tmp/single" --create <"$tmp/events" >/dev/null || bad "import failed"
head -n 1000 "$tmp/events" >"$tmp/part1"
sed -n '1001,1400p' "$tmp/events" >"$tmp/part2"
sed -n "1401,${total}p" "$tmp/events" >"$tmp/part3"

# --------------------------------------------------------- three members
"$bin" keygen --name test.example/member --out "$tmp/keys" >/dev/null || bad "keygen failed"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /m/a
expect "init /m/a" 0
member m1 /m/a "$ETCD_URLS"
member m2 /m/a "$ETCD_URL1,$ETCD_URL2"
member m3 /m/a "$PROXY_URL2"
run "$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/a --from "$tmp/part1" --batch 300
expect "feed part 1" 0
is "feed part 1: one line per txn" "$(jq -r .outcome "$tmp/out" | sort -u)" committed
is "feed part 1: 4 txns of at most 300" "$(wc -l <"$tmp/out" | tr -d ' ')" 4
is "feed part 1: the last seq" "$(tail -1 "$tmp/out" | jq .lastSeq)" 1000
for m in m1 m2 m3; do caught_up $m 1000; done
# Members without --watch are listed too (P/members/<name>, bound to a
# lease they keep alive): each one's applied seq pins retention (rule 11).
members_at() { # SEQ: every member listed, at SEQ
	"$bin" cluster status --etcd "$ETCD_URLS" --prefix /m/a --format json >"$tmp/st.json" 2>/dev/null &&
		[ "$(jq -c "[.members[] | select(.applied == $1) | .name] | sort" "$tmp/st.json")" = '["m1","m2","m3"]' ]
}
if wait_until 10 members_at 1000; then ok; else bad "members without --watch in P/members/: $(jq -c .members "$tmp/st.json")"; fi

# Rule 10: signed checkpoints every 250 seqs, never on a timer: every
# member serves the same note, and one behind the cluster's newest answers
# 503 rather than a smaller tree.
for m in m1 m2 m3; do
	eval "mp=\$port_$m"
	curl -s -m 5 -o "$tmp/cp.$m" -w '%{http_code}' "http://127.0.0.1:$mp/v1/checkpoint" >"$tmp/cpc.$m"
	is "rule 10: $m answers /v1/checkpoint" "$(cat "$tmp/cpc.$m")" 200
done
is "rule 10: the note's tree size" "$(sed -n 2p "$tmp/cp.m1")" 1000
same "rule 10: m2 serves m1's note byte for byte" "$tmp/cp.m1" "$tmp/cp.m2"
same "rule 10: m3 serves m1's note byte for byte" "$tmp/cp.m1" "$tmp/cp.m3"
run "$bin" verify --db "$tmp/single" --checkpoint "$tmp/cp.m1" --key "$tmp/keys/test.example_member.pub"
expect "rule 10: the members' note verifies against the single-pod ledger" 0
touch "$tmp/pause.m4"
wrap="env GPULEDGER_TEST_APPLY_PAUSE=$tmp/pause.m4"
member m4 /m/a "$ETCD_URLS"
wrap=
behind4() {
	curl -s -m 5 -o "$tmp/cp.m4" -w '%{http_code}' "http://127.0.0.1:$port_m4/v1/checkpoint" >"$tmp/cpc.m4"
	[ "$(cat "$tmp/cpc.m4")" = 503 ]
}
if wait_until 20 behind4; then ok; else bad "rule 10: a member behind answered $(cat "$tmp/cpc.m4")"; fi
has "rule 10: a member behind says why" "$tmp/cp.m4" "newest signed checkpoint is of size 0, the cluster's of size 1000"
is "rule 10: a member behind refuses proofs" \
	"$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port_m4/v1/proof/inclusion?seq=1")" 503
rm -f "$tmp/pause.m4"
caught_up m4 1000
curl -s -m 5 -o "$tmp/cp.m4" "http://127.0.0.1:$port_m4/v1/checkpoint"
same "rule 10: caught up, m4 serves the same note" "$tmp/cp.m1" "$tmp/cp.m4"
stop m4
is "SIGTERM revokes the member's lease: its P/members/ key is gone" \
	"$(etcdctl --endpoints "$ETCD_URL1" get /m/a/members/m4 --print-value-only)" ""

# A member that cannot reach etcd answers reads, stale, and is not ready.
ctl mode p2 blackhole
stale_seen() {
	curl -s -m 2 -D "$tmp/h3" -o /dev/null "http://127.0.0.1:$port_m3/v1/tenants"
	grep -qi '^X-Gpuledger-Stale: [0-9]' "$tmp/h3"
}
if wait_until 20 stale_seen; then ok; else bad "no X-Gpuledger-Stale while cut off"; fi
is "cut off: GETs still answer" "$(sed -n 1p "$tmp/h3" | cut -d' ' -f2)" 200
curl -s -m 2 -o "$tmp/ready3" -w '%{http_code}' "http://127.0.0.1:$port_m3/readyz" >"$tmp/code3"
is "cut off: /readyz 503" "$(cat "$tmp/code3")" 503
has "cut off: /readyz says why" "$tmp/ready3" 'cannot reach an etcd quorum'
curl -s -m 2 -D "$tmp/h1" -o /dev/null "http://127.0.0.1:$port_m1/v1/tenants"
if grep -qi 'X-Gpuledger-Stale' "$tmp/h1"; then bad "a member in touch says it is stale"; else ok; fi
ctl mode p2 forward

# A member SIGKILLed; the feeder's answer dropped (rule 1) meanwhile.
stop m2 KILL
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$bin" cluster feed --etcd "$PROXY_URL0,$ETCD_URL1" --prefix /m/a --batch 5000 \
	<"$tmp/fifo" >"$tmp/lost.out" 2>"$tmp/lost.err" &
fpid=$!
exec 3>"$tmp/fifo"
sleep 1 # the feed has read P/head through the proxy, answered
ctl mode p0 drop-answer
cat "$tmp/part2" >&3
exec 3>&-
wait "$fpid"
frc=$?
ctl mode p0 forward
is "answer dropped: the feed exits 0" "$frc" 0
is "answer dropped: committed" "$(jq -r .outcome "$tmp/lost.out")" committed
is "answer dropped: sent twice" "$(jq -r .attempts "$tmp/lost.out")" 2
is "answer dropped: found ours in the failure branch" "$(jq -r .found "$tmp/lost.out")" true
python3 "$harness" ctl "$tmp/etcd" stats p0 >"$tmp/stats"
is "answer dropped: the proxy dropped one answer" "$(jq .dropped "$tmp/stats")" 1
is "answer dropped: one value, no duplicate" \
	"$(etcdctl --endpoints "$ETCD_URL1" get /m/a/log/ --prefix --keys-only | grep -c log)" 5
member m2 /m/a "$ETCD_URL1,$ETCD_URL2"
caught_up m2 1400
has "restarted: resumes from its stored revision" "$tmp/m2.err" 'resuming after seq 1000 from revision'

# One member per name (issue 40): a second process with a live member's
# --name is refused, naming the key, its lease and its applied seq; the
# live one goes on. Restarted at once after a SIGKILL, the same name starts
# (its old lease, no longer renewed, is dead).
lease_of() { # NAME: the lease of /m/a/members/NAME, in hex
	printf '%x' "$(etcdctl --endpoints "$ETCD_URL1" get "/m/a/members/$1" -w fields |
		sed -n 's/^"Lease" : //p')"
}
l1=$(lease_of m1)
run timeout 30 "$bin" member --db "$tmp/dup" --etcd "$ETCD_URLS" --prefix /m/a --name m1 --listen 127.0.0.1:0
expect "a second member named m1: refused" 2
has "a second m1: names the holder" "$tmp/err" "^gpuledger: member: --name m1 is taken: /m/a/members/m1 is held by a live member \(lease $l1, applied seq 1400\); stop it or give this member another --name\$"
is "a second m1: the first one's key is untouched" "$(lease_of m1)" "$l1"
is "a second m1: the first one still answers" "$(seq_of m1)" 1400
stop m1 KILL
member m1 /m/a "$ETCD_URLS"
caught_up m1 1400
if [ "$(lease_of m1)" != "$l1" ]; then ok; else bad "restarted m1: its key is still on the dead lease $l1"; fi

# A member stopped while etcd compacts past its revision.
stop m3
is "SIGTERM: exit 0" "$stopped_rc" 0
run "$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/a --from "$tmp/part3" --batch 700
expect "feed part 3" 0
rev=$(etcdctl --endpoints "$ETCD_URL1" get /m/a/head -w json | jq .header.revision)
etcdctl --endpoints "$ETCD_URL1" compaction "$rev" >/dev/null || bad "compaction failed"
member m3 /m/a "$PROXY_URL2"
caught_up m3 "$total"
has "compacted past it: the watch says so" "$tmp/m3.err" 'compacted'
has "compacted past it: range reads" "$tmp/m3.err" 'reading ranges'
caught_up m1 "$total"
caught_up m2 "$total"

# A member judges POSTs (tests/cluster_verdicts_cli.sh); bad input is a 400
# and records nothing.
curl -s -D "$tmp/ph" -o "$tmp/pb" -X POST "http://127.0.0.1:$port_m1/v1/admission" -d '{}'
is "POST /v1/admission of {}: 400" "$(sed -n 1p "$tmp/ph" | cut -d' ' -f2)" 400
has "POST /v1/admission of {}: says why" "$tmp/pb" 'error'
for m in m1 m2 m3; do
	stop $m
	is "$m: SIGTERM exits 0" "$stopped_rc" 0
done

# ------------------------------------------- every member: the same ledger
"$bin" log --db "$tmp/single" >"$tmp/want.log"
same "the single-pod import: the events as watched" "$tmp/events" "$tmp/want.log"
cp -r "$tmp/single" "$tmp/signed"
"$bin" checkpoint --db "$tmp/signed" --sign-key "$tmp/keys/test.example_member.key" >/dev/null ||
	bad "checkpoint --sign-key failed"
"$bin" head --db "$tmp/signed" >"$tmp/note" || bad "head failed"
"$bin" verify --db "$tmp/single" | sed 's/[0-9]* checkpoints, //' >"$tmp/want.verify"
"$bin" stats --db "$tmp/m1" --format json | jq -c '{checkpoints, lastCheckpointSeq}' >"$tmp/cp1"
for m in m1 m2 m3; do
	"$bin" log --db "$tmp/$m" >"$tmp/$m.log"
	same "$m: log is byte for byte the single-pod import's" "$tmp/want.log" "$tmp/$m.log"
	"$bin" verify --db "$tmp/$m" | sed 's/[0-9]* checkpoints, //' >"$tmp/$m.verify"
	same "$m: verify, the same head" "$tmp/want.verify" "$tmp/$m.verify"
	run "$bin" verify --db "$tmp/$m" --checkpoint "$tmp/note" --key "$tmp/keys/test.example_member.pub"
	expect "$m: holds the tree of the single-pod signed checkpoint" 0
	run "$bin" audit --db "$tmp/$m"
	expect "$m: audit" 0
	has "$m: audit re-derives the verdicts" "$tmp/out" '3 verdicts match'
	"$bin" stats --db "$tmp/$m" --format json | jq -c '{checkpoints, lastCheckpointSeq}' >"$tmp/cp"
	same "$m: checkpoints at the same seqs" "$tmp/cp1" "$tmp/cp"
done
[ "$(jq .checkpoints "$tmp/cp1")" -ge 1 ] && ok || bad "no checkpoint every 500 seqs"

# ------------------------------------------------ rule 8: another history
cp -r "$tmp/m1" "$tmp/f1"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /m/b
run timeout 30 "$bin" member --db "$tmp/f1" --etcd "$ETCD_URLS" --prefix /m/b --name f1 --listen 127.0.0.1:0
expect "a ledger of another prefix" 2
has "another prefix: says why" "$tmp/err" 'follows prefix /m/a, not /m/b'
etcdctl --endpoints "$ETCD_URL1" del /m/a --prefix >/dev/null
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /m/a --db "$tmp/single"
expect "etcd wiped, /m/a initialised again" 0
run timeout 30 "$bin" member --db "$tmp/f1" --etcd "$ETCD_URLS" --prefix /m/a --name f1 --listen 127.0.0.1:0
expect "a ledger of another epoch" 2
has "another epoch: says why" "$tmp/err" "/m/a/epoch is [0-9a-f]{32}, the ledger's epoch is [0-9a-f]{32}: another history"
cp -r "$tmp/single" "$tmp/f2"
run timeout 30 "$bin" member --db "$tmp/f2" --etcd "$ETCD_URLS" --prefix /m/b --name f2 --listen 127.0.0.1:0
expect "a ledger past P/head" 2
has "past P/head: says why" "$tmp/err" "the ledger is at seq $total, past /m/b/head's seq 0"

run timeout 30 "$bin" member --etcd "$ETCD_URLS" --prefix /m/b --name x
expect "member without --db" 2
run timeout 30 "$bin" member --db "$tmp/x" --etcd "$ETCD_URLS" --prefix /m/b/ --name x
expect "member with a prefix ending in /" 2
# The --peer-* credentials are also a door's, for the sequencer (DESIGN
# 11): they no longer need --peer. A URL for peers that cannot be put in
# P/leader is refused, naming the bound.
run timeout 30 "$bin" member --db "$tmp/x" --etcd "$ETCD_URLS" --prefix /m/b --name x \
	--advertise-url "http://$(printf '%0600d' 0)"
expect "member: --advertise-url too long" 2
has "--advertise-url too long: says so" "$tmp/err" 'advertise-url: an http:// or https:// URL of at most 511 bytes'
run timeout 30 "$bin" member --db "$tmp/x" --etcd "$ETCD_URLS" --prefix /m/b --name x --peer http://127.0.0.1:1 --peer-cert "$tmp/x"
expect "member: --peer-cert without --peer-key" 2
has "--peer-cert without --peer-key: says so" "$tmp/err" 'go together'
printf 'tok\n' >"$tmp/peer.tok"
chmod 644 "$tmp/peer.tok"
run timeout 30 "$bin" member --db "$tmp/x" --etcd "$ETCD_URLS" --prefix /m/b --name x --peer http://127.0.0.1:1 --peer-token-file "$tmp/peer.tok"
expect "member: a peer token readable by others" 2
has "a peer token readable by others: says so" "$tmp/err" 'chmod 600'

# ------------------------------ cluster init --db, members on copies of it
"$bin" import --db "$tmp/half" --create <"$tmp/part1" >/dev/null || bad "import of part 1 failed"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /m/c --db "$tmp/half"
expect "init /m/c from a single-pod ledger" 0
cp -r "$tmp/half" "$tmp/c1"
cp -r "$tmp/half" "$tmp/c2"
member c1 /m/c "$ETCD_URLS"
member c2 /m/c "$ETCD_URLS"
sed -n "1001,${total}p" "$tmp/events" >"$tmp/rest"
run "$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/c
expect "feed without --db on a log that starts after seq 1" 2
run "$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/c --db "$tmp/half" --from "$tmp/rest" --max-txn-bytes 65536
expect "feed after init --db" 0
[ "$(wc -l <"$tmp/out")" -gt 3 ] && ok || bad "--max-txn-bytes 65536 did not split the batch"
caught_up c1 "$total"
caught_up c2 "$total"
stop c1
stop c2
for m in c1 c2; do
	"$bin" verify --db "$tmp/$m" | sed 's/[0-9]* checkpoints, //' >"$tmp/$m.verify"
	same "$m: the head of the single-pod ledger" "$tmp/want.verify" "$tmp/$m.verify"
	run "$bin" verify --db "$tmp/$m" --checkpoint "$tmp/note" --key "$tmp/keys/test.example_member.pub"
	expect "$m: the Merkle root of the single-pod ledger" 0
	run "$bin" audit --db "$tmp/$m"
	expect "$m: audit" 0
done

# ---------------------------------------------------------- bad feed input
head=$(etcdctl --endpoints "$ETCD_URL1" get /m/c/head --print-value-only)
printf '%s\n' '{"type":"TICK"' | "$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/c --db "$tmp/c1" >"$tmp/out" 2>"$tmp/err"
is "feed: not JSON: exit 2" $? 2
has "feed: not JSON: names the line" "$tmp/err" 'line 1: malformed JSON'
printf '%s\n' '{"type":"TICK"}' '{"type":"TENANT","namespace":"tenant-root","parent":null}' |
	"$bin" cluster feed --etcd "$ETCD_URLS" --prefix /m/c --db "$tmp/c1" >"$tmp/out" 2>"$tmp/err"
is "feed: an event that does not fit: exit 2" $? 2
has "feed: does not fit: names the line" "$tmp/err" 'line 2: event 1 does not fit the state'
is "feed: nothing written" "$(etcdctl --endpoints "$ETCD_URL1" get /m/c/head --print-value-only)" "$head"

echo "member_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
