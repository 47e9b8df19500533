#!/bin/sh
# Leadership on etcd (DESIGN 11 rule 5), with `gpuledger cluster campaign`
# (the debugging aid that drives cluster/lease.c, which the member uses),
# against a real 3-member etcd on loopback with a TCP proxy per campaigner
# in front of each member (tests/cluster/etcd_cluster.py): campaigner cJ
# reaches member i through proxy pI.J only, so one campaigner's links can
# be blackholed alone. Three campaigners, a 3 s lease:
#  - exactly one is elected, the others follow it; P/leader is its name
#    bound to its lease, with the fence (create_revision) it printed;
#    P/members/<name> = {"applied": SEQ} bound to each one's lease, and
#    follows --applied-from; `cluster status` shows them;
#  - SIGTERM of the leader: it revokes (its lease is gone when it has
#    exited: no waiting out the TTL), another is elected;
#  - SIGHUP (resign on request) and SIGUSR1 (a failed leader compare
#    elsewhere: deposed): it steps down at once, another wins;
#  - SIGSTOP of the leader past its TTL: another is elected and a txn with
#    the old fence is refused; SIGCONT: the old one reports its loss and
#    follows;
#  - the leader's links blackholed: it reports renewal-late before another
#    is elected (never after), and follows once the links are back;
#  - an etcd member killed (not etcd's leader: the campaigners fail over
#    and keep their leader), then etcd's leader killed (a leader again);
#  - SIGKILL of the leader: another is elected once its lease expires and
#    its P/members key goes with the lease;
#  - across the run: the fences of successive leaders strictly increase,
#    no fence is elected twice, every "elected" is closed by a step-down
#    of the same fence, and a txn comparing any old fence fails while the
#    current one's commits.
# Orders of events are asserted, never times.
# Usage: tests/lease_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# etcd's data on tmpfs when there is one: 3.4.23 has no --unsafe-no-fsync.
tmp=$(mktemp -d /dev/shm/gpuledger-lease.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	[ -n "$hpid" ] && kill "$hpid" 2>/dev/null
	wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds lease_cli etcd etcdctl python3 jq
export ETCDCTL_API=3

. "$here/cluster/lib.sh"
etcd_up lease_cli --proxies-per-member 3
P=/lease
ttl=3
get() { etcdctl --endpoints "$ETCD_URLS" get --print-value-only "$1"; }
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# etcd KEY: one request of `cluster etcd` (NDJSON), its answer on stdout.
etcd1() { echo "$1" | "$bin" cluster etcd --etcd "$ETCD_URLS"; }

# Campaigner J: its own proxy in front of each etcd member.
urls_of() {
	if [ "$1" -eq 0 ]; then echo "$PROXY_URL0,$PROXY_URL1,$PROXY_URL2"; else
		eval echo "\$PROXY_URL0_$1,\$PROXY_URL1_$1,\$PROXY_URL2_$1"
	fi
}
proxies() { # J MODE: every proxy of campaigner J
	for px in 0 1 2; do
		if [ "$1" -eq 0 ]; then ctl mode "p$px" "$2"; else ctl mode "p$px.$1" "$2"; fi
	done
}
start_c() { # J: starts campaigner cJ, its events appended to $tmp/cJ.out
	"$bin" cluster campaign --etcd "$(urls_of "$1")" --prefix $P --name "c$1" \
		--lease-ttl $ttl --applied-from "$tmp/applied$1" \
		>>"$tmp/c$1.out" 2>>"$tmp/c$1.err" &
	eval "pid$1=$!"
	pids="$pids $!"
}
pid_of() { eval echo "\$pid$1"; }
# last J: the last event of cJ as "EVENT CREATEREVISION".
last() { tail -n1 "$tmp/c$1.out" 2>/dev/null | jq -r '"\(.event) \(.createRevision // 0)"' 2>/dev/null; }
lease_of() { tail -n1 "$tmp/c$1.out" | jq -r .lease; }
mark() { wc -l <"$tmp/c$1.out" | tr -d ' '; }
# after J MARK: cJ's events after line MARK, one "EVENT CREATEREVISION" a line.
after() { tail -n +"$(($2 + 1))" "$tmp/c$1.out" | jq -r '"\(.event) \(.createRevision // 0)"'; }
# settled J...: exactly one of them leads (its last event is "elected"),
# every other one follows it (last event "follower" of that fence), and
# P/leader is the leader's name with that create_revision. Sets L and R.
settled() {
	L= R=
	for j in "$@"; do
		case $(last "$j") in
		"elected "*)
			[ -z "$L" ] || return 1
			L=$j R=$(last "$j" | cut -d' ' -f2)
			;;
		esac
	done
	[ -n "$L" ] || return 1
	for j in "$@"; do
		[ "$j" = "$L" ] || [ "$(last "$j")" = "follower $R" ] || return 1
	done
	[ "$(etcd1 "{\"op\":\"range\",\"key\":\"$P/leader\"}" |
		jq -r '.kvs[0] | "\(.createRevision) \(.value)"')" = "$R {\"name\":\"c$L\"}" ]
}
# steady J...: settled, and still settled with the same leader and fence a
# renewal later. A leader elected just before etcd lost its own leader may
# rightly step down (renewal-late) a moment after it was seen settled.
steady() {
	settled "$@" || return 1
	sl="$L $R"
	sleep 1
	settled "$@" && [ "$L $R" = "$sl" ]
}
# The fences of successive leaders, in the order this script saw them.
fences=
new_leader() { # NAME J...: waits until steady, records the fence
	nl_name=$1
	shift
	if wait_until 30 steady "$@"; then ok; else
		bad "$nl_name: no settled leader among $*"
		for j in 0 1 2; do
			echo "  c$j: $(tail -n3 "$tmp/c$j.out" | tr '\n' ' ')"
			echo "  c$j stderr: $(tail -n2 "$tmp/c$j.err" | tr '\n' ' ')"
		done
		etcdctl --endpoints "$ETCD_URLS" --command-timeout=2s endpoint status 2>&1 | sed 's/^/  /'
		return 1
	fi
	# The same leader may stay (an etcd member killed); a new one has a
	# greater fence.
	prev=${fences##* }
	if [ -n "$prev" ]; then
		[ "$R" -ge "$prev" ] && ok || bad "$nl_name: fence $R after $prev: not increasing"
	fi
	[ "$R" = "$prev" ] || fences="$fences $R"
}
# fenced R: the outcome of a txn that compares P/leader's create_revision
# with R, as every leader's txn does.
fenced() {
	etcd1 "{\"op\":\"txn\",\"compare\":[{\"key\":\"$P/leader\",\"target\":\"create\",\"result\":\"=\",\"number\":$1}],\"success\":[{\"put\":\"$P/fenced\",\"value\":\"$1\"}]}" |
		jq -r .outcome
}

# ------------------------------------------------------------ bad input
run "$bin" cluster campaign --etcd "$ETCD_URLS" --prefix $P
expect "campaign without --name" 2
has "campaign without --name: says so" "$tmp/err" 'needs a --name'
run "$bin" cluster campaign --etcd "$ETCD_URLS" --prefix $P --name a/b
expect "campaign with a name holding /" 2
has "a name holding /: says so" "$tmp/err" 'has a character other than'
run "$bin" cluster campaign --etcd "$ETCD_URLS" --prefix $P --name a --lease-ttl 0
expect "campaign --lease-ttl 0" 2
run "$bin" cluster campaign --etcd "$ETCD_URLS" --prefix $P --name a --lease-ttl 3601
expect "campaign --lease-ttl 3601" 2
run "$bin" cluster campaign --etcd "$ETCD_URLS" --name a
expect "campaign without --prefix" 2
run "$bin" cluster campaign --prefix $P --name a
expect "campaign without --etcd" 2
run "$bin" cluster campaign --etcd 127.0.0.1:2379 --prefix $P --name a
expect "campaign with a URL without scheme" 2
# etcd unreachable: it says why and keeps trying; SIGTERM ends it.
"$bin" cluster campaign --etcd "http://127.0.0.1:$dead" --prefix $P --name u \
	>"$tmp/u.out" 2>"$tmp/u.err" &
upid=$!
wait_until 20 grep -q 'lease grant: .*could not connect' "$tmp/u.err" && ok ||
	bad "etcd unreachable: no warning ($(head -c 300 "$tmp/u.err"))"
kill -TERM $upid
wait $upid
is "etcd unreachable: SIGTERM exits 0" $? 0
is "etcd unreachable: resigned, never elected" "$(jq -r .event "$tmp/u.out" | tr '\n' ' ')" "resigned "

# ------------------------------------------------------------ election
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix $P
expect "cluster init" 0
for j in 0 1 2; do
	echo $((10 + j)) >"$tmp/applied$j"
	: >"$tmp/c$j.out"
	start_c $j
done
if ! new_leader "three campaigners" 0 1 2; then
	# Nothing after this can mean anything.
	echo "lease_cli: $pass passed, $fail failed"
	exit 1
fi
is "exactly one elected" "$(cat "$tmp"/c?.out | jq -r .event | grep -c '^elected$')" 1
for j in 0 1 2; do
	[ "$j" = "$L" ] && continue
	is "c$j follows c$L" "$(tail -n1 "$tmp/c$j.out" | jq -r .leader)" "c$L"
done
etcd1 "{\"op\":\"range\",\"key\":\"$P/leader\"}" >"$tmp/pl"
is "P/leader: the leader's name" "$(jq -r '.kvs[0].value' "$tmp/pl")" "{\"name\":\"c$L\"}"
is "P/leader: bound to the leader's lease" "$(jq -r '.kvs[0].lease' "$tmp/pl")" "$(lease_of "$L")"
is "P/leader: the fence printed is its create_revision" "$(jq -r '.kvs[0].createRevision' "$tmp/pl")" "$R"
etcd1 "{\"op\":\"range\",\"key\":\"$P/members/\",\"prefix\":true}" >"$tmp/members"
is "P/members: one key each" "$(jq -r '[.kvs[].key] | join(" ")' "$tmp/members")" \
	"$P/members/c0 $P/members/c1 $P/members/c2"
for j in 0 1 2; do
	is "P/members/c$j: its applied seq" "$(jq -r ".kvs[$j].value" "$tmp/members")" "{\"applied\":$((10 + j))}"
	is "P/members/c$j: bound to its lease" "$(jq -r ".kvs[$j].lease" "$tmp/members")" "$(lease_of $j)"
done
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix $P --format json
expect "cluster status" 0
is "status: the leader" "$(jq -r .leader.name "$tmp/out")" "c$L"
is "status: the members' applied seqs" "$(jq -c '[.members[] | .applied]' "$tmp/out")" "[10,11,12]"
is "the leader's fence commits" "$(fenced "$R")" committed
is "a fence that never was fails" "$(fenced $((R + 1000)))" compare-failed
# The applied seq follows the member (rate-limited, so not at once).
echo 42 >"$tmp/applied$L"
wait_until 10 sh -c "[ \"\$(etcdctl --endpoints $ETCD_URLS get --print-value-only $P/members/c$L)\" = '{\"applied\":42}' ]" &&
	ok || bad "P/members/c$L did not follow --applied-from: $(get "$P/members/c$L")"

# ------------------------------------------------------------ SIGTERM
old=$L oldR=$R oldlease=$(lease_of "$L")
kill -TERM "$(pid_of "$old")"
wait "$(pid_of "$old")"
is "SIGTERM: the leader exits 0" $? 0
is "SIGTERM: its last word is resigned, of its fence" "$(last "$old")" "resigned $oldR"
# Revoked before it exited: gone now, not a TTL later.
etcdctl --endpoints "$ETCD_URLS" lease timetolive "$oldlease" >"$tmp/ttl" 2>&1
has "SIGTERM: the lease is revoked" "$tmp/ttl" 'already expired'
is "SIGTERM: its P/members key went with it" "$(get "$P/members/c$old")" ""
live=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
# shellcheck disable=SC2086
new_leader "after SIGTERM" $live
is "after SIGTERM: the old fence fails" "$(fenced "$oldR")" compare-failed
is "after SIGTERM: the new one commits" "$(fenced "$R")" committed
start_c "$old"
new_leader "the SIGTERMed one back" 0 1 2

# ------------------------------------------- resign on request, deposed
for sig in HUP USR1; do
	old=$L oldR=$R
	m=$(mark "$old")
	kill -"$sig" "$(pid_of "$old")"
	new_leader "after SIG$sig" 0 1 2
	want=resigned
	[ $sig = USR1 ] && want=deposed
	is "SIG$sig: the leader says $want, then follows" "$(after "$old" "$m" | tr '\n' ' ')" \
		"$want $oldR follower $R "
	[ "$L" != "$old" ] && ok || bad "SIG$sig: c$old won again at once (no hold-off)"
	is "SIG$sig: the old fence fails" "$(fenced "$oldR")" compare-failed
done

# --------------------------------------------- SIGSTOP past the TTL
old=$L oldR=$R
m=$(mark "$old")
kill -STOP "$(pid_of "$old")"
live=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
# shellcheck disable=SC2086
new_leader "SIGSTOP past the TTL" $live
is "SIGSTOP: the stopped one's batch (its old fence) is refused" "$(fenced "$oldR")" compare-failed
kill -CONT "$(pid_of "$old")"
wait_until 20 sh -c "tail -n1 '$tmp/c$old.out' | grep -q follower" || bad "SIGCONT: c$old does not follow"
after "$old" "$m" >"$tmp/after"
grep -Eq "^(lost|deposed) $oldR$" "$tmp/after" && ok ||
	bad "SIGCONT: no lost/deposed of $oldR: $(tr '\n' ' ' <"$tmp/after")"
is "SIGCONT: never elected again meanwhile" "$(grep -c '^elected' "$tmp/after")" 0
is "SIGCONT: it follows the new leader" "$(tail -n1 "$tmp/after")" "follower $R"
new_leader "after SIGCONT" 0 1 2
is "after SIGCONT: the old fence still fails" "$(fenced "$oldR")" compare-failed

# ------------------------------------------------ the leader cut off
old=$L oldR=$R
m=$(mark "$old")
proxies "$old" blackhole
live=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
# Every time another one is seen elected, the cut-off one has already
# said renewal-late: it stopped before its lease could expire.
order=unseen
n=0
while [ $n -lt 300 ]; do
	elected=
	for j in $live; do
		case $(last "$j") in "elected "*) elected=$j ;; esac
	done
	if [ -n "$elected" ]; then
		if after "$old" "$m" | grep -q "^renewal-late $oldR$"; then order=ok; else order=late; fi
		break
	fi
	sleep 0.1
	n=$((n + 1))
done
is "cut off: renewal-late before another is elected" "$order" ok
is "cut off: its first word is renewal-late" "$(after "$old" "$m" | head -n1)" "renewal-late $oldR"
# shellcheck disable=SC2086
new_leader "the leader cut off" $live
is "cut off: its fence fails" "$(fenced "$oldR")" compare-failed
proxies "$old" forward
new_leader "the links back" 0 1 2
[ "$L" != "$old" ] || bad "the cut-off one leads again"
is "the links back: it follows" "$(tail -n1 "$tmp/c$old.out" | jq -r .event)" follower

# --------------------------------------------------- etcd members killed
# Which member is etcd's leader: status through each member.
leader_member() {
	for em in 0 1 2; do
		eval u=\$ETCD_URL$em
		echo '{"op":"status"}' | "$bin" cluster etcd --etcd "$u" >"$tmp/st$em" 2>/dev/null
		[ "$(jq -r .memberId "$tmp/st$em")" = "$(jq -r .leader "$tmp/st$em")" ] && echo $em && return
	done
}
healthy() { etcdctl --endpoints "$1" --command-timeout=2s endpoint health; }
el=$(leader_member)
victim=$(((${el:-0} + 1) % 3))
keep=$L keepR=$R
for j in 0 1 2; do eval "m$j=$(mark $j)"; done
ctl kill "$victim"
# The campaigners whose first endpoint is gone go on through the others;
# the leader keeps renewing (several renewals pass).
sleep $((3 * ttl))
settled 0 1 2 && ok || bad "etcd member $victim killed: no settled leader"
is "etcd member killed: the same leader" "$L $R" "$keep $keepR"
eval "mk=\$m$keep"
is "etcd member killed: no transition of the leader" "$(after "$keep" "$mk" | wc -l | tr -d ' ')" 0
is "etcd member killed: its fence commits" "$(fenced "$keepR")" committed
ctl start "$victim"
eval u=\$ETCD_URL$victim
wait_until 30 healthy "$u" && ok || bad "etcd member $victim did not come back"
el=$(leader_member)
ctl kill "${el:-0}"
new_leader "etcd's leader killed" 0 1 2
ctl start "${el:-0}"
eval u=\$ETCD_URL${el:-0}
wait_until 30 healthy "$u" && ok || bad "etcd member ${el:-0} did not come back"

# ------------------------------------------------------------ SIGKILL
old=$L oldR=$R
kill -KILL "$(pid_of "$old")"
wait "$(pid_of "$old")" 2>/dev/null
live=$(echo 0 1 2 | tr ' ' '\n' | grep -v "^$old$" | tr '\n' ' ')
# shellcheck disable=SC2086
new_leader "SIGKILL of the leader" $live
wait_until 20 sh -c "[ -z \"\$(etcdctl --endpoints $ETCD_URLS get --print-value-only $P/members/c$old)\" ]" &&
	ok || bad "SIGKILL: P/members/c$old outlived its lease"
for j in $live; do
	[ -n "$(get "$P/members/c$j")" ] && ok || bad "P/members/c$j is gone"
done
is "SIGKILL: the old fence fails" "$(fenced "$oldR")" compare-failed

# ------------------------------------------------------ the whole run
# Every fence but the last fails, the last commits.
set -- $fences
n=$#
i=0
for f in $fences; do
	i=$((i + 1))
	if [ $i -lt $n ]; then want=compare-failed; else want=committed; fi
	is "fence $f (leader $i of $n)" "$(fenced "$f")" "$want"
done
[ "$n" -ge 7 ] && ok || bad "only $n leaders in the run: $fences"
# The history of every campaigner: each "elected" is closed by a step-down
# of the same fence before anything else (or the output ends: SIGKILL);
# no fence is elected twice; elected fences increase in each output.
python3 - "$tmp"/c0.out "$tmp"/c1.out "$tmp"/c2.out <<'EOF' >"$tmp/history" 2>&1
import json, sys
bad = []
seen = {}
for path in sys.argv[1:]:
    evs = [json.loads(l) for l in open(path) if l.strip()]
    last = 0
    for i, e in enumerate(evs):
        if e["event"] != "elected":
            continue
        r = e["createRevision"]
        if r in seen:
            bad.append("%s: fence %d elected twice (also %s)" % (path, r, seen[r]))
        seen[r] = path
        if r <= last:
            bad.append("%s: fence %d after %d" % (path, r, last))
        last = r
        nxt = evs[i + 1] if i + 1 < len(evs) else None
        if nxt is not None and (nxt["event"] not in ("renewal-late", "deposed", "lost", "resigned")
                                or nxt.get("createRevision") != r):
            bad.append("%s: elected %d is followed by %s" % (path, r, json.dumps(nxt)))
print("\n".join(bad) if bad else "ok %d fences" % len(seen))
sys.exit(1 if bad else 0)
EOF
[ $? -eq 0 ] && ok || bad "history: $(cat "$tmp/history")"

# ------------------------------------------------------ everyone leaves
for j in $live; do
	kill -TERM "$(pid_of "$j")"
	wait "$(pid_of "$j")"
	is "c$j: SIGTERM exits 0" $? 0
	is "c$j: resigned last" "$(tail -n1 "$tmp/c$j.out" | jq -r .event)" resigned
done
is "all left: no leader" "$(get "$P/leader")" ""
is "all left: no members" "$(etcdctl --endpoints "$ETCD_URLS" get --prefix --keys-only "$P/members/" | grep -c .)" 0
pids=

echo "lease_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
