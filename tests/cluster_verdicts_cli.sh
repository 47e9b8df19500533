#!/bin/sh
# Verdicts in a cluster (DESIGN 11 "Verdicts in a cluster", rules 1, 2, 3,
# 9) against a real 3-member etcd on loopback with a TCP proxy in front of
# each etcd member (tests/cluster/etcd_cluster.py):
#  - 3 members on copies of a single-pod ledger (`cluster init --db`), one
#    through proxy p1, one through p2 whose clock is an hour ahead
#    (faketime); concurrent clients (tests/cluster/vclients.py) POST
#    AdmissionReviews with unique uids to random members, some retried with
#    the same uid at another member, while `cluster feed` appends
#    observations (budget changes) that make the verdicts judge again;
#  - rule 3 after a conflict: m2's link slowed, the same review asked of m1
#    and then of m2 is answered from m1's record;
#  - rule 1: p1 drops the answer of m2's verdict txn: re-sent, found ours,
#    answered once;
#  - rule 2: p2 blackholed past m3's --verdict-timeout-ms: 503 without
#    Retry-After; once the link is back the identical txn is resolved and,
#    committed, followed by a NOTE VerdictUnanswered naming its id; a member
#    cut off answers 503 at once and /readyz says why;
#  - conflicts made to happen: m2's link delayed while m1 records a
#    verdict (one txn re-numbered), then blackholed while the feed
#    appends an observation (m2's txn judged again); /metrics counts both;
#  - then tests/cluster/history.py over every answer and every member's
#    ledger: every answered verdict in the log once with the answered
#    body, ids unique and gap-free, basisSeq = seq - 1, the logs
#    byte-identical, verify and audit pass on each; every VERDICT's time is
#    the time of the event before it (no member's clock moves the log's);
#    the members' /metrics count the re-numbered and re-judged txns; the
#    export of m3 (an hour ahead) equals a single pod's of the same
#    observations.
# Usage: tests/cluster_verdicts_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-cv.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds cluster_verdicts_cli etcd etcdctl python3 jq curl
export ETCDCTL_API=3

. "$here/cluster/lib.sh"
etcd_up cluster_verdicts_cli

# member NAME ETCD [OPTIONS...]: starts a member of /v/a on $tmp/NAME
# (under $wrap, a command prefix, when set; tests/cluster/lib.sh's
# member_up); sets $pid_NAME and $port_NAME. stop NAME [SIGNAL] sets
# $stopped_rc; seq_of NAME is its last applied seq.
member() {
	mn=$1 me=$2
	shift 2
	member_up "$mn" "$tmp/$mn" "$me" /v/a "$@"
}
stop() { member_stop "$@"; }
seq_of() { member_seq "$1"; }
head_seq() {
	etcdctl --endpoints "$ETCD_URL0" get /v/a/head --print-value-only | jq .seq
}
all_at_head() {
	h=$(head_seq)
	[ "$(seq_of m1)" = "$h" ] && [ "$(seq_of m2)" = "$h" ] && [ "$(seq_of m3)" = "$h" ]
}
# ask MEMBER UID NAME COUNT: POSTs the review to the member with curl and
# logs the answer for the history checker; the status in $code, the body
# in $tmp/body, the headers in $tmp/ah. Its files are the uid's, so that
# asks may run at once in the background; a review written beforehand to
# $tmp/rq.UID (prep UID NAME COUNT) is sent as it is.
prep() { review "$1" "$2" "$3" >"$tmp/rq.$1"; }
ask() {
	eval "ap=\$port_$1"
	[ -s "$tmp/rq.$2" ] || prep "$2" "$3" "$4"
	sent=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	code=$(curl -s -m 20 -D "$tmp/ah.$2" -o "$tmp/body.$2" -w '%{http_code}' -X POST \
		"http://127.0.0.1:$ap/v1/admission" --data-binary @"$tmp/rq.$2")
	[ -s "$tmp/body.$2" ] || echo null >"$tmp/body.$2"
	jq -n -c --slurpfile rq "$tmp/rq.$2" --slurpfile b "$tmp/body.$2" \
		--arg code "$code" --arg sent "$sent" --arg uid "$2" \
		'{uid: $uid, request: $rq[0], sent: $sent, received: $sent,
		  status: (if $code == "000" then null else ($code | tonumber) end),
		  body: (if $code == "000" then null else $b[0] end)}' >>"$tmp/answers"
	cp "$tmp/body.$2" "$tmp/body"
	cp "$tmp/ah.$2" "$tmp/ah" 2>/dev/null || : >"$tmp/ah"
}
# metric MEMBER NAME: the value of gpuledger_cluster_verdict_NAME_total on
# the member's /metrics (0 when it is not there).
metric() {
	eval "mp=\$port_$1"
	v=$(curl -s -m 2 "http://127.0.0.1:$mp/metrics" |
		sed -n "s/^gpuledger_cluster_verdict_$2_total \([0-9]*\)\$/\1/p")
	echo "${v:-0}"
}
moved() { [ "$(metric "$1" "$2")" -gt "$3" ]; }

# ------------------------------------------- three members on one ledger
"$bin" import --db "$tmp/base" --create <"$here/query/base.ndjson" >/dev/null ||
	bad "import failed"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /v/a --db "$tmp/base"
expect "init /v/a from a single-pod ledger" 0
for m in m1 m2 m3; do cp -r "$tmp/base" "$tmp/$m"; done
member m1 "$ETCD_URLS"
member m2 "$PROXY_URL1"
# m3's clock is an hour ahead: its answers say so (answeredAt), the log's
# times do not move.
# libfaketime preloaded straight into the member (the faketime wrapper
# would stand between it and its signals); CLOCK_MONOTONIC is left alone.
faketime_lib=
for f in /usr/lib/*/faketime/libfaketimeMT.so.1 /usr/lib/faketime/libfaketimeMT.so.1; do
	[ -f "$f" ] && faketime_lib=$f && break
done
if [ -n "$faketime_lib" ]; then
	# (ASan wants to be first in the link order; libfaketime is preloaded.)
	wrap="env LD_PRELOAD=$faketime_lib FAKETIME=+1h FAKETIME_DONT_FAKE_MONOTONIC=1 ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
	skewed=1
else
	echo "note: libfaketime is not installed: m3's clock is not moved"
	skewed=0
fi
member m3 "$PROXY_URL2" --verdict-timeout-ms 3000
wrap=
: >"$tmp/answers"

# ------------------------------------- concurrent clients and observations
# Budget changes of tenant-acme, fed as the watcher would write them.
python3 - "$tmp" <<'EOF'
import json, sys
t = sys.argv[1]
for b in range(8):
    with open(f"{t}/obs{b}", "w") as f:
        for k in range(3):
            v = 9 + (b * 3 + k) % 4
            f.write(json.dumps({"type": "BUDGET", "namespace": "tenant-acme",
                                "key": "h100.gpuclass.cozystack.io/devices",
                                "value": v,
                                "time": f"2026-03-03T0{b}:00:0{k}Z"}) + "\n")
EOF
(
	for b in 0 1 2 3 4 5 6 7; do
		"$bin" cluster feed --etcd "$ETCD_URLS" --prefix /v/a --db "$tmp/base" --from "$tmp/obs$b" \
			>>"$tmp/feed.out" 2>>"$tmp/feed.err" || echo "feed $b: exit $?" >>"$tmp/feed.err"
		sleep 0.3
	done
) &
feed_pid=$!
urls="http://127.0.0.1:$port_m1,http://127.0.0.1:$port_m2,http://127.0.0.1:$port_m3"
python3 "$here/cluster/vclients.py" --members "$urls" --out "$tmp/answers" \
	--clients 6 --requests 12 --retry 0.3 ${SEED:+--seed "$SEED"} >"$tmp/clients.out" 2>&1
crc=$?
cat "$tmp/clients.out"
is "clients: no 503 carries Retry-After" "$crc" 0
wait "$feed_pid"
if grep -q . "$tmp/feed.err" 2>/dev/null && grep -q 'exit' "$tmp/feed.err"; then
	bad "the feed failed: $(tail -3 "$tmp/feed.err")"
else ok; fi
is "the feed: 8 txns committed" "$(jq -r .outcome "$tmp/feed.out" | grep -c committed)" 8
n200=$(jq -s 'map(select(.status == 200)) | length' "$tmp/answers")
nall=$(wc -l <"$tmp/answers" | tr -d ' ')
[ "$n200" -ge $((nall * 3 / 4)) ] && ok || bad "only $n200 of $nall answers were 200"
echo "load: $n200 of $nall answers 200"
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
# Each member's metrics: the conflicts were resolved both ways.
renum=0
rejud=0
for m in m1 m2 m3; do
	eval "mp=\$port_$m"
	curl -s "http://127.0.0.1:$mp/metrics" >"$tmp/metrics.$m"
	r=$(sed -n 's/^gpuledger_cluster_verdict_renumbered_total \([0-9]*\)$/\1/p' "$tmp/metrics.$m")
	j=$(sed -n 's/^gpuledger_cluster_verdict_rejudged_total \([0-9]*\)$/\1/p' "$tmp/metrics.$m")
	renum=$((renum + ${r:-0}))
	rejud=$((rejud + ${j:-0}))
done
echo "conflicts under the load: $renum re-numbered, $rejud judged again (a race: not asserted)"

# The group linger: after a group, a member waits a moment for as many
# requests as it answered before the next txn. Clients that leave (8 on
# m1, the k-th sending k of 8 requests, keep-alive or not) must not hold
# up the ones that stay: every request is answered 200, well inside the
# clients' 5 s (a linger that only ends when enough come back hangs the
# last ones).
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
python3 "$here/cluster/vclients.py" --members "http://127.0.0.1:$port_m1" --out "$tmp/linger" \
	--clients 8 --requests 8 --retry 0 --stagger --timeout 5 --uid-prefix lg \
	${SEED:+--seed "$SEED"} >"$tmp/linger.out" 2>&1
is "linger: the clients ran" "$?" 0
is "linger: 36 requests, all answered 200" \
	"$(jq -s 'map(select(.status == 200)) | length' "$tmp/linger")/$(wc -l <"$tmp/linger" | tr -d ' ')" 36/36
cat "$tmp/linger" >>"$tmp/answers"

# Both ways of resolving a conflict, made to happen rather than left to the
# load's race: m2's link (p1) delays every chunk by 450 ms (a round trip
# stays inside its --etcd-timeout-ms of 1.5 s), so its verdict txn,
# judged at once on (s, h), reaches etcd after what a direct link appends
# 0.1 s later. Over m1's VERDICT one of the two txns is re-numbered (m2's,
# or m1's if m2's came first: both judged on the same head), its
# judgement kept; over an observation of the feed m2's is judged again.
# Once the counter has moved the link is forwarded again. The order is
# made by the delay; no time is measured.
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
renum_sum() { echo $(($(metric m1 renumbered) + $(metric m2 renumbered))); }
r0=$(renum_sum)
prep conf-r1 vm-conf-r1 1
prep conf-r2 vm-conf-r2 1
ctl mode p1 delay 450
ask m2 conf-r1 vm-conf-r1 1 &
conf_pid=$!
sleep 0.1
ask m1 conf-r2 vm-conf-r2 1
is "a verdict of m1 while m2's txn is delayed: 200" "$code" 200
renumbered() { [ "$(renum_sum)" -gt "$r0" ]; }
if wait_until 20 renumbered; then ok; else
	bad "no verdict txn was re-numbered over VERDICTs: $(tail -3 "$tmp/m2.err")"
fi
ctl mode p1 forward
wait "$conf_pid"
is "m2's verdict beside m1's: 200" "$(tail -1 "$tmp/answers" | jq -c '[.uid, .status]')" '["conf-r1",200]'

# The observation: m2's link blackholed, so that its verdict txn, judged
# on (s, h), is swallowed and its outcome unknown (rule 1: re-sent
# identical); the feed (a direct link) appends an observation meanwhile;
# then the link is forwarded and the re-sent txn meets the observation.
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
j0=$(metric m2 rejudged)
prep conf-j1 vm-conf-j1 1
echo '{"type":"BUDGET","namespace":"tenant-acme","key":"h100.gpuclass.cozystack.io/devices","value":10,"time":"2026-03-03T07:00:02Z"}' >"$tmp/obs-j"
ctl mode p1 blackhole
ask m2 conf-j1 vm-conf-j1 1 &
conf_pid=$!
sleep 0.3
"$bin" cluster feed --etcd "$ETCD_URLS" --prefix /v/a --db "$tmp/base" \
	--from "$tmp/obs-j" >"$tmp/feed2.out" 2>"$tmp/feed2.err"
sleep 0.3
ctl mode p1 forward
is "an observation fed while m2's txn is swallowed" "$(tail -1 "$tmp/feed2.out" | jq -r .outcome 2>/dev/null)" committed
if wait_until 20 moved m2 rejudged "$j0"; then ok; else
	bad "no verdict txn was judged again over an observation: $(tail -3 "$tmp/m2.err")"
fi
wait "$conf_pid"
is "m2's verdict judged again: 200" "$(tail -1 "$tmp/answers" | jq -c '[.uid, .status]')" '["conf-j1",200]'

# A retry of a recorded uid at another member: its recorded answer.
uid1=$(jq -r 'select(.status == 200) | .uid' "$tmp/answers" | head -1)
rec1=$(jq -c --arg u "$uid1" 'select(.uid == $u and .status == 200) | .body' "$tmp/answers" | head -1)
jq -c --arg u "$uid1" 'select(.uid == $u) | .request' "$tmp/answers" | head -1 >"$tmp/again"
for m in m1 m2 m3; do
	eval "mp=\$port_$m"
	curl -s -X POST "http://127.0.0.1:$mp/v1/admission" --data-binary @"$tmp/again" >"$tmp/again.$m"
	is "rule 3: $m answers $uid1 from its record" "$(jq -c . "$tmp/again.$m")" "$rec1"
done

# Rule 3 over the carry: a member chains its next batch on the log its last
# txn committed, before its applier has it; a review repeated at once to the
# same member must still get the recorded answer, not a second verdict.
# Pairs sent back to back on one connection (a repeat within ~1 ms).
prep carry-0 vm-carry 1
python3 - "$port_m1" "$tmp/rq.carry-0" "$tmp/answers" >"$tmp/carry.out" <<'PY'
import datetime, http.client, json, sys
port, rq0, out = int(sys.argv[1]), json.load(open(sys.argv[2])), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
same = differ = 0
with open(out, "a") as f:
    for i in range(100):
        rq = json.loads(json.dumps(rq0))
        rq["request"]["uid"] = "carry-%d" % i
        rq["request"]["name"] = rq["request"]["object"]["metadata"]["name"] = "vm-carry-%d" % i
        ids = []
        for _ in range(2):
            sent = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
            c.request("POST", "/v1/admission", json.dumps(rq), {"Content-Type": "application/json"})
            r = c.getresponse()
            body = json.loads(r.read() or b"null")
            f.write(json.dumps({"uid": rq["request"]["uid"], "request": rq, "sent": sent,
                                "received": sent, "status": r.status, "body": body}) + "\n")
            ann = ((body or {}).get("response") or {}).get("auditAnnotations") or {}
            ids.append((r.status, ann.get("gpuledger.cozystack.io/verdict-id")))
        if ids[0] == ids[1] and ids[0][0] == 200:
            same += 1
        else:
            differ += 1
            print("carry-%d: %s" % (i, ids))
print("same %d differ %d" % (same, differ))
PY
is "rule 3 over the carry: 100 repeats at once, each its first answer" "$(tail -1 "$tmp/carry.out")" "same 100 differ 0"

# Rule 3 after a conflict: m2's link slowed, so that its applier has not
# yet seen the verdict m1 recorded for a uid when the same review reaches
# m2: its txn meets m1's verdict, whose uid answers it.
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
ctl mode p1 delay 400
sleep 1
ask m1 slow-1 vm-slow 1
first=$(tail -1 "$tmp/answers" | jq -c .body)
ask m2 slow-1 vm-slow 1
ctl mode p1 forward
is "rule 3 after a conflict: 200" "$code" 200
is "rule 3 after a conflict: m1's answer" "$(tail -1 "$tmp/answers" | jq -c .body)" "$first"

# ---------------------------- rule 1: the answer of m2's txn is dropped
# After the slowed link m2 may still count etcd as out of reach (and
# answer a verdict 503 at once): first it reaches etcd again, which its
# GETs say by carrying no X-Gpuledger-Stale.
m2_reaches() {
	curl -s -m 2 -D "$tmp/h2" -o /dev/null "http://127.0.0.1:$port_m2/healthz" &&
		! grep -qi '^X-Gpuledger-Stale' "$tmp/h2"
}
wait_until 40 m2_reaches && ok || bad "m2 does not reach etcd again after its slowed link"
# Only the answers to appends (the txns that put /v/a/log/..., base64
# L3YvYS9sb2cv) are dropped: were the applier's reads and the lease's
# dropped too, m2 could count etcd as out of reach again before the
# verdict came.
python3 "$harness" ctl "$tmp/etcd" stats p1 >"$tmp/stats0"
d0=$(jq .dropped "$tmp/stats0")
ctl mode p1 drop-answer "$(printf /v/a/log/ | base64)"
ask m2 drop-1 vm-drop 1 &
ask_pid=$!
dropped() {
	python3 "$harness" ctl "$tmp/etcd" stats p1 >"$tmp/stats1"
	[ "$(jq .dropped "$tmp/stats1")" -gt "$d0" ]
}
wait_until 40 dropped || bad "p1 dropped no answer"
sleep 0.3
ctl mode p1 forward
wait "$ask_pid"
is "rule 1: answered 200 after the dropped answer" "$(tail -1 "$tmp/answers" | jq .status)" 200
has "rule 1: re-sent and found ours" "$tmp/m2.err" 'committed after [0-9]+ txns, found ours in the failure branch'

# ----------------- rule 2: m3's link blackholed past its deadline (3 s)
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
# (The review is built before the link goes: m3 must be asked before its
# applier finds etcd unreachable.)
prep hole-1 vm-hole 1
ctl mode p2 blackhole
ask m3 hole-1 vm-hole 1
is "rule 2: unknown at the deadline: 503" "$code" 503
if grep -qi '^Retry-After' "$tmp/ah"; then bad "a 503 with Retry-After"; else ok; fi
has "rule 2: says so" "$tmp/m3.err" 'the outcome is unknown at the deadline, answered 503'
# Cut off: once the applier knows, 503 at once, and /readyz says why.
unready() {
	[ "$(curl -s -m 2 -o "$tmp/ready3" -w '%{http_code}' "http://127.0.0.1:$port_m3/readyz")" = 503 ]
}
wait_until 40 unready && ok || bad "m3 cut off: /readyz is not 503"
has "cut off: /readyz says why" "$tmp/ready3" 'cannot reach an etcd quorum'
ask m3 hole-2 vm-hole-2 1
is "cut off: 503" "$code" 503
has "cut off: says why" "$tmp/body" 'etcd quorum|still unknown'
ctl mode p2 forward
# The identical txn, re-sent once the link is back, commits (nothing else
# wrote meanwhile) or is found: then a NOTE follows it.
noted() { grep -q 'NOTE VerdictUnanswered at seqs' "$tmp/m3.err"; }
if wait_until 100 noted; then ok; else bad "no NOTE VerdictUnanswered: $(tail -3 "$tmp/m3.err")"; fi
if wait_until 40 all_at_head; then ok; else bad "the members did not reach P/head"; fi
"$bin" log --db "$tmp/m1" --from 1 >"$tmp/now.log" 2>/dev/null || true
hole_id=$(jq -r 'select(.type == "VERDICT" and .record.requester.uid == "hole-1") | .record.id' "$tmp/now.log")
[ -n "$hole_id" ] && ok || bad "the verdict answered 503 is not in the log"
is "rule 2: the NOTE names it" \
	"$(jq -r --arg i "$hole_id" 'select(.type == "NOTE" and .code == "VerdictUnanswered" and .name == $i) | .name' "$tmp/now.log")" \
	"$hole_id"
# After all that, m3 answers again.
ask m3 after-1 vm-after 1
is "m3 back: 200" "$code" 200

# ------------------------------------------------------ the whole history
for m in m1 m2 m3; do
	stop $m
	is "$m: SIGTERM exits 0" "$stopped_rc" 0
done
run python3 "$here/cluster/history.py" --bin "$bin" --answers "$tmp/answers" \
	--member "m1=$tmp/m1" --member "m2=$tmp/m2" --member "m3=$tmp/m3"
expect "history.py: the history holds" 0
[ "$rc" -eq 0 ] || cat "$tmp/out" | grep -v '^ok' | head -20
has "history.py: says so" "$tmp/out" '^ok: [0-9]+ answers, 3 members'
"$bin" log --db "$tmp/m1" >"$tmp/final.log"
# No member's clock moves the log: a VERDICT's time is its basis event's.
bad_times=$(jq -s -r '. as $e | [range(1; length) | select($e[.].type == "VERDICT" and
	$e[.].time != $e[. - 1].time) | $e[.].seq] | join(",")' "$tmp/final.log")
is "every VERDICT's time is its basis event's" "$bad_times" ""
is "the last event's time is the feed's last" "$(tail -1 "$tmp/final.log" | jq -r .time)" \
	"2026-03-03T07:00:02.000000000Z"
if [ "$skewed" = 1 ]; then
	ahead=$(jq -r 'select(.type == "VERDICT" and .record.answeredAt != null) | .record.answeredAt' \
		"$tmp/final.log" | python3 -c '
import sys, datetime
now = datetime.datetime.now(datetime.timezone.utc)
n = 0
for ln in sys.stdin:
    t = datetime.datetime.strptime(ln.strip()[:26] + "Z", "%Y-%m-%dT%H:%M:%S.%fZ")
    n += (t.replace(tzinfo=datetime.timezone.utc) - now).total_seconds() > 1800
print(n)')
	[ "$ahead" -gt 0 ] && ok || bad "no verdict answered by the member an hour ahead"
fi
# The export equals a single pod's (DESIGN 11: a member's clock an hour
# ahead): the log's observations imported into one LMDB, billed over the
# whole log and over the feed's day; only the seq and chain-head columns
# may differ, since the cluster's log interleaves VERDICTs.
jq -c 'select(.type != "VERDICT" and .type != "NOTE") | del(.seq)' "$tmp/final.log" |
	"$bin" import --db "$tmp/single" --create >/dev/null 2>"$tmp/single.err" ||
	bad "a single-pod ledger of the observations: $(cat "$tmp/single.err")"
for range in "--from 2026-03-01" "--from 2026-03-03 --to 2026-03-03T07:30:00Z"; do
	# shellcheck disable=SC2086
	for d in m3 single; do
		"$bin" export --db "$tmp/$d" $range --format ndjson --rollup subtree \
			>"$tmp/export.raw" 2>"$tmp/export.err" || bad "export $range of $d: $(cat "$tmp/export.err")"
		jq -c 'del(.x_LedgerSeqStart, .x_LedgerSeqEnd, .x_ChainHead)' "$tmp/export.raw" >"$tmp/export.$d"
	done
	if [ -s "$tmp/export.single" ] && cmp -s "$tmp/export.m3" "$tmp/export.single"; then ok; else
		bad "export $range: m3's differs from a single pod's: $(diff "$tmp/export.m3" "$tmp/export.single" | head -4)"
	fi
done
# One verdict path, two back ends (DESIGN 3.7): a single-pod serve over the
# same ledger records as a member does: basisSeq = seq - 1, the time of
# the event before it, the clock in answeredAt.
db=$tmp/base
start_server
curl -s -X POST "http://127.0.0.1:$port/v1/admission" --data-binary @"$tmp/again" >/dev/null
stop_server
"$bin" log --db "$tmp/base" >"$tmp/single.log"
is "single pod: the verdict carries answeredAt" \
	"$(jq -r 'select(.type == "VERDICT") | .record | has("answeredAt")' "$tmp/single.log" | sort -u)" true
is "single pod: basisSeq = seq - 1, the time of the event before it" \
	"$(jq -s -r '. as $e | [range(1; length) | select($e[.].type == "VERDICT" and
		($e[.].time != $e[. - 1].time or $e[.].record.basisSeq != $e[.].seq - 1)) | $e[.].seq] | join(",")' \
		"$tmp/single.log")" ""

echo "cluster_verdicts_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
