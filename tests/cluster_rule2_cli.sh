#!/bin/sh
# DESIGN 11 rule 2 (answers tell the truth, within the webhook's time), as a
# red team found it broken, against a real 3-member etcd on loopback with a
# TCP proxy in front of each etcd member (tests/cluster/etcd_cluster.py):
#  - a member frozen (SIGSTOP) past its --verdict-timeout-ms with a verdict
#    txn in flight and two requests queued behind it: a request's bound
#    counts from its arrival, so the queued two are answered 503 and never
#    judged or recorded, and the one in flight, recorded after its bound, is
#    answered 503 and named by a NOTE VerdictUnanswered; the same freeze
#    with clients that give up as the API server does (history.py: nothing
#    recorded that was not answered, but with its NOTE);
#  - default flags (--verdict-timeout-ms 7000, --etcd-timeout-ms 5000) and
#    the member's only etcd link blackholed: the 503 arrives before 8 s
#    (every etcd request is capped at the time left, not 5 s each);
#  - one slow endpoint of three (every chunk delayed 2 s, past
#    --etcd-timeout-ms): reads go to the next endpoint, writes are re-sent
#    there, and no admission is refused.
# Usage: tests/cluster_rule2_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-r2.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null
	wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds cluster_rule2_cli etcd etcdctl python3 jq curl
export ETCDCTL_API=3

. "$here/cluster/lib.sh"
etcd_up cluster_rule2_cli

# ask PORT UID TIMEOUT: POSTs a review to the member as the API server
# would (giving up after TIMEOUT s) and logs the answer for the history
# checker ("error": "timeout" when the client gave up, "reset" when the
# connection broke); $tmp/code.UID holds the status (000: none).
ask() {
	review "$2" "vm-$2" 1 >"$tmp/rq.$2"
	sent=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	code=$(curl -s -m "$3" -o "$tmp/body.$2" -w '%{http_code}' -X POST \
		"http://127.0.0.1:$1/v1/admission" --data-binary @"$tmp/rq.$2")
	crc=$?
	echo "$code" >"$tmp/code.$2"
	case $crc in 0) why= ;; 28) why=timeout ;; *) why=reset ;; esac
	[ -s "$tmp/body.$2" ] || echo null >"$tmp/body.$2"
	jq -n -c --slurpfile rq "$tmp/rq.$2" --slurpfile b "$tmp/body.$2" \
		--arg code "$code" --arg sent "$sent" --arg uid "$2" --arg why "$why" \
		'{uid: $uid, request: $rq[0], sent: $sent, received: $sent,
		  status: (if $code == "000" then null else ($code | tonumber) end),
		  body: (if $code == "000" then null else $b[0] end)}
		 + (if $why == "" then {} else {error: $why} end)' >>"$tmp/answers"
}
# recorded DB UID: how many VERDICTs of the log record that review uid.
recorded() {
	"$bin" log --db "$1" | jq -s --arg u "$2" \
		'map(select(.type == "VERDICT" and .record.requester.uid == $u)) | length'
}
# noted DB UID: the NOTE VerdictUnanswered naming the verdict of that uid
# exists.
noted() {
	"$bin" log --db "$1" >"$tmp/noted.log" 2>/dev/null || return 1
	nid=$(jq -r --arg u "$2" 'select(.type == "VERDICT" and .record.requester.uid == $u) | .record.id' \
		"$tmp/noted.log")
	[ -n "$nid" ] && jq -e --arg i "$nid" \
		'select(.type == "NOTE" and .code == "VerdictUnanswered" and .name == $i)' \
		"$tmp/noted.log" >/dev/null
}
at_head() {
	h=$(etcdctl --endpoints "$ETCD_URL0" get /v/r/head --print-value-only | jq .seq)
	[ "$(member_seq "$1")" = "$h" ]
}

"$bin" import --db "$tmp/base" --create <"$here/query/base.ndjson" >/dev/null ||
	bad "import failed"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /v/r --db "$tmp/base"
expect "init /v/r from a single-pod ledger" 0
: >"$tmp/answers"

# ------------------------------------- frozen past the bound (SIGSTOP 4 s)
# m1 reaches etcd through p0 only, which delays every chunk by 500 ms: a
# verdict txn is in flight for a second. A is sent, then B and C queue
# behind its txn; m1 is stopped for 4 s, past its 1.5 s bound.
cp -r "$tmp/base" "$tmp/m1"
member_up m1 "$tmp/m1" "$PROXY_URL0" /v/r --verdict-timeout-ms 1500 --etcd-timeout-ms 3000
# freeze PREFIX CLIENT_TIMEOUT: the three requests and the freeze.
freeze() {
	ctl mode p0 delay 500
	ask "$port_m1" "$1-a" "$2" &
	fa=$!
	sleep 0.3
	ask "$port_m1" "$1-b" "$2" &
	fb=$!
	ask "$port_m1" "$1-c" "$2" &
	fc=$!
	sleep 0.3
	kill -STOP "$pid_m1"
	sleep 4
	kill -CONT "$pid_m1"
	wait "$fa" "$fb" "$fc"
	ctl mode p0 forward
}
freeze st 20
for u in st-b st-c; do
	is "frozen: $u, queued past its bound, answered 503" "$(cat "$tmp/code.$u")" 503
done
is "frozen: st-a, recorded after its bound, answered 503" "$(cat "$tmp/code.st-a")" 503
wait_until 40 at_head m1 || bad "m1 did not reach P/head"
for u in st-b st-c; do
	is "frozen: $u never judged (not in the log)" "$(recorded "$tmp/m1" "$u")" 0
done
if [ "$(recorded "$tmp/m1" st-a)" = 1 ]; then
	if wait_until 40 noted "$tmp/m1" st-a; then ok; else
		bad "st-a is recorded, answered 503, and no NOTE VerdictUnanswered names it"
	fi
else ok; fi
# The same freeze, the clients giving up after 2.5 s as the API server
# gives up on a webhook: the history holds.
freeze gv 2.5
for u in gv-b gv-c; do
	is "frozen, clients gone: $u never judged" "$(recorded "$tmp/m1" "$u")" 0
done
if [ "$(recorded "$tmp/m1" gv-a)" = 1 ]; then
	if wait_until 40 noted "$tmp/m1" gv-a; then ok; else
		bad "gv-a is recorded, unanswered, and no NOTE VerdictUnanswered names it"
	fi
else ok; fi
# m1 answers again once it has resolved what the freeze left unknown
# (rule 1: until then a verdict is answered 503, and a loaded machine may
# take a few rounds).
answers_again() {
	af=$((af + 1))
	ask "$port_m1" "after-freeze-$af" 20
	[ "$(cat "$tmp/code.after-freeze-$af")" = 200 ]
}
af=0
if wait_until 30 answers_again; then ok; else
	bad "m1 does not answer 200 after the freeze: $(cat "$tmp/body.after-freeze-$af")"
fi
# A member answers once etcd holds the verdict, before its own applier has
# it (its carry): history.py reads m1's ledger, so m1 must reach P/head
# before it stops.
wait_until 40 at_head m1 || bad "m1 did not reach P/head"
member_stop m1
is "m1: SIGTERM exits 0" "$stopped_rc" 0
run python3 "$here/cluster/history.py" --bin "$bin" --answers "$tmp/answers" --member "m1=$tmp/m1"
expect "history.py: the frozen member's history holds" 0
[ "$rc" -eq 0 ] || grep -v '^ok' "$tmp/out" | head -10

# -------------------------- default flags, the only link blackholed: < 8 s
cp -r "$tmp/m1" "$tmp/m2"
member_up m2 "$tmp/m2" "$PROXY_URL1" /v/r --etcd-timeout-ms 5000 --verdict-timeout-ms 7000
ask "$port_m2" bh-warm 20
is "m2 answers" "$(cat "$tmp/code.bh-warm")" 200
ctl mode p1 blackhole
t0=$(date +%s%N)
ask "$port_m2" bh-1 30
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
is "blackholed: 503" "$(cat "$tmp/code.bh-1")" 503
[ "$ms" -lt 8000 ] && ok || bad "blackholed: the 503 came after $ms ms, not within 7 s + 1 s"
echo "blackholed: 503 after $ms ms"
ctl mode p1 forward
member_stop m2 KILL

# ------------------------------ one slow endpoint of three refuses nothing
cp -r "$tmp/m1" "$tmp/m3"
ctl mode p2 delay 2000
member_up m3 "$tmp/m3" "$PROXY_URL2,$PROXY_URL0,$PROXY_URL1" /v/r
refused=0
i=0
while [ $i -lt 25 ]; do
	ask "$port_m3" "slow-$i" 20
	[ "$(cat "$tmp/code.slow-$i")" = 200 ] || refused=$((refused + 1))
	i=$((i + 1))
done
is "one slow endpoint of three: 0 of 25 refused" "$refused" 0
ctl mode p2 forward
member_stop m3
is "m3: SIGTERM exits 0" "$stopped_rc" 0

echo "cluster_rule2_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
