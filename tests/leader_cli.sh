#!/bin/sh
# The leader's watcher (DESIGN 11; rules 1, 4, 5, 6): 3 `gpuledger member
# --watch` on a real 3-member etcd on loopback, watching the test
# Kubernetes API server (tests/apiserver/fake_apiserver.py, plain HTTP with
# a bearer token). The oracle is the server itself, as in kube_cli: its
# objects listed and replayed into a fresh ledger with `watch --from`; every
# member's ledger must reach that state (`replay --json` without seq, time
# and chainHead).
#  - one member wins P/leader and watches: the observations reach every
#    member through etcd's log, and a NOTE LeaderChanged starts the term;
#  - SIGKILL of the leader: another member leads within TTL + 2 s, relists,
#    and changes made meanwhile reach every member; the killed member comes
#    back as a follower;
#  - rule 5: a leader that checked its lease and then stalls (a test pause
#    between the check and the send, then SIGSTOP past its TTL) has its
#    late batch refused by the fence ("deposed"), and rejoins as a
#    follower;
#  - SIGKILL of etcd's leader together with the gpuledger leader: a member
#    on a live endpoint leads, and all comes back;
#  - rule 6: a class-table change that remaps more holders than one txn
#    holds is split with P/open around its parts (gone at the end); a
#    leader killed between the parts: the next one finishes the batch with
#    its relist and deletes P/open with its NOTE Synced, no verdict in
#    between;
#  - rule 11: a follower stopped while retention deletes past it, and the
#    killed leader, rejoin from a peer (--peer); members below the oldest
#    key without --peer, seeded from a backup, and new with --peer;
#  - at the end every member's `log` is byte for byte the same, `verify`
#    and `audit` pass on each, and each term starts with LeaderChanged.
# Usage: tests/leader_cli.sh [PATH/TO/gpuledger]   (KEEP=1 keeps the temp dir,
# LEADER_TTL=S sets the lease)
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-leader.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds leader_cli etcd etcdctl python3 jq curl
export ETCDCTL_API=3
# LEADER_TTL: the lease (default 2 s; `make bench` measures the failover at
# the default of 5).
ttl=${LEADER_TTL:-2}
token=s3cret
P=/lead

. "$here/cluster/lib.sh"
etcd_up leader_cli

# ------------------------------------------------------------ the API server
apiserver_up leader_cli "$token"
ev() { echo "{\"type\": \"$1\", \"object\": $2}"; }
gpu_pod() { # NS NAME COUNT NODE PHASE
	echo "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"$1\"}, \"spec\": {\"nodeName\": \"$4\", \"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": {\"nvidia.com/GH100_H100_SXM5_80GB\": \"$3\"}}}]}, \"status\": {\"phase\": \"$5\"}}"
}

# ------------------------------------------------------------ the oracle
truth_ca=
. "$here/apiserver/truth.sh"
# converge WHAT NAME...: each member's ledger reaches the server's state.
converge() {
	cv_what=$1
	shift
	if ! truth; then
		bad "$cv_what: the oracle failed: $(cat "$tmp/truth.err")"
		return
	fi
	for cv_n in "$@"; do
		if wait_until 30 same_as_truth "$tmp/$cv_n"; then ok; else
			bad "$cv_what: $cv_n did not converge: $(diff "$tmp/got.json" "$tmp/truth.json" | head -10)"
		fi
	done
}

# ------------------------------------------------------------ the members
"$bin" cluster init --etcd "$ETCD_URLS" --prefix $P >"$tmp/init.out" 2>&1 ||
	bad "cluster init: $(cat "$tmp/init.out")"
# watcher NAME ETCD [OPTIONS...]: a member with --watch on $tmp/NAME.
# A restarted member's earlier stderr goes to NAME.err.old.
watcher() {
	[ -f "$tmp/$1.err" ] && cat "$tmp/$1.err" >>"$tmp/$1.err.old" && : >"$tmp/$1.err"
	wrap="env GPULEDGER_TEST_APPLY_PAUSE=$tmp/apply.$1"
	wt_n=$1 wt_e=$2
	shift 2
	member_up "$wt_n" "$tmp/$wt_n" "$wt_e" $P --watch --kubeconfig "$tmp/kc" \
		--lease-ttl $ttl --tick 3600 --max-txn-bytes 65536 --keep 1000 \
		--defrag-free 1 "$@"
	wrap=
}
url_of() { case $1 in a) echo "$ETCD_URL0" ;; b) echo "$ETCD_URL1" ;; *) echo "$ETCD_URL2" ;; esac; }
followers_of() { for fo_n in a b c; do [ "$fo_n" != "$1" ] && printf '%s ' "$fo_n"; done; }
# leader: the member that holds P/leader and says it watches (its last term
# line).
leader() {
	ln=$("$bin" cluster status --etcd "$ETCD_URLS" --prefix $P --format json 2>/dev/null | jq -r '.leader.name // empty')
	[ -n "$ln" ] || return 1
	last=$(grep -E "^member $ln: (watching as leader|the watcher stopped|renewal-late|deposed|lost|resigned)" "$tmp/$ln.err" 2>/dev/null | tail -1)
	case $last in *"watching as leader"*) echo "$ln"; return 0 ;; esac
	return 1
}
has_leader() { leader >/dev/null; }
other_leader() { l=$(leader) && [ "$l" != "$1" ]; }
notes() { # NAME: LeaderChanged NOTEs in its ledger
	"$bin" log --db "$tmp/$1" 2>/dev/null | jq -c 'select(.type == "NOTE" and .code == "LeaderChanged")' | wc -l
}

export GPULEDGER_TEST_LEADER_PAUSE="$tmp/pause"
watcher a "$ETCD_URL0"
watcher b "$ETCD_URL1"
watcher c "$ETCD_URL2"
if wait_until 20 has_leader; then ok; else bad "no member leads: $(tail -3 "$tmp/a.err")"; fi
L1=$(leader)
echo "leader_cli: the first leader is $L1"
converge "the first term" a b c
is "one NOTE LeaderChanged after the first term" "$(notes a)" 1
"$bin" log --db "$tmp/a" | jq -r 'select(.type == "NOTE" and .code == "LeaderChanged") | .message' >"$tmp/lc1"
if grep -q "changed from none to $L1 " "$tmp/lc1"; then ok; else bad "LeaderChanged: $(cat "$tmp/lc1")"; fi

# Changes while it leads.
apply "[$(ev ADDED "$(gpu_pod tenant-acme train-1 2 gpu-node-1 Running)"), $(ev ADDED "$(gpu_pod tenant-beta infer-1 1 gpu-node-1 Running)")]"
converge "changes under the first leader" a b c

# ------------------------------------------------------------ SIGKILL of the leader
t0=$(date +%s%N)
member_stop "$L1" KILL
apply "$(ev ADDED "$(gpu_pod tenant-acme train-2 1 gpu-node-1 Running)")"
if wait_until 20 other_leader "$L1"; then ok; else bad "no new leader after SIGKILL of $L1"; fi
t1=$(date +%s%N)
L2=$(leader)
gap_ms=$(((t1 - t0) / 1000000))
echo "leader_cli: $L2 leads ${gap_ms} ms after SIGKILL of $L1 (TTL ${ttl} s)"
if [ "$gap_ms" -le $(((ttl + 2) * 1000 + 500)) ]; then ok; else bad "the watcher resumed after $gap_ms ms, over TTL + 2 s"; fi
survivors=$(for n in a b c; do [ "$n" != "$L1" ] && printf '%s ' "$n"; done)
# shellcheck disable=SC2086
converge "after the failover" $survivors
# The killed member comes back as a follower and catches up.
case $L1 in a) e=$ETCD_URL0 ;; b) e=$ETCD_URL1 ;; *) e=$ETCD_URL2 ;; esac
watcher "$L1" "$e"
converge "the killed member back" "$L1"
is "a second LeaderChanged" "$(notes "$L1")" 2

# ------------------------------------------------------------ rule 5: a stalled leader
# The followers' appliers stop (GPULEDGER_TEST_APPLY_PAUSE) and the leader
# appends a change they do not apply; then it checks its lease for the next
# one and stalls before sending (the pause file
# $GPULEDGER_TEST_LEADER_PAUSE.NAME), and SIGSTOP keeps its keepalive from
# renewing. Another member wins and waits for its applier (rule 4), so
# nothing moves P/head: the stalled batch, sent at last, would fit the head
# compare; the fence alone refuses it ("deposed").
L3=$(leader)
F3=$(followers_of "$L3")
for n in $F3; do touch "$tmp/apply.$n"; done
apply "$(ev ADDED "$(gpu_pod tenant-beta infer-2 1 gpu-node-1 Running)")"
converge "the leader alone" "$L3"
touch "$tmp/pause.$L3"
apply "$(ev ADDED "$(gpu_pod tenant-beta infer-3 1 gpu-node-1 Running)")"
sleep 1
eval "lp=\$pid_$L3"
kill -STOP "$lp"
sleep $((ttl + 2))
kill -CONT "$lp"
rm -f "$tmp/pause.$L3"
if wait_until 15 grep -q "deposed" "$tmp/$L3.err"; then ok; else
	bad "the stalled leader's batch was not refused as deposed: $(grep -E '^member' "$tmp/$L3.err" | tail -3)"
fi
for n in $F3; do rm -f "$tmp/apply.$n"; done
if wait_until 20 other_leader "$L3"; then ok; else bad "no new leader after $L3 stalled"; fi
L4=$(leader)
if cat "$tmp"/*.err | grep -q "another writer"; then bad "a term met another writer's observation"; else ok; fi
converge "after the stalled leader" a b c
is "the stalled leader follows" "$(leader)" "$L4"

# ------------------------------------------------------------ rule 4: a lagging member wins
# The followers' appliers stop applying (GPULEDGER_TEST_APPLY_PAUSE), the
# leader appends a change and is killed: the member that wins must apply
# the log to P/head before it builds its cache and writes; one that did not
# would meet the dead leader's observation in its first append.
L6=$(leader)
F6=$(followers_of "$L6")
for n in $F6; do touch "$tmp/apply.$n"; done
apply "$(ev ADDED "$(gpu_pod tenant-acme train-3 1 gpu-node-1 Running)")"
converge "the leader alone" "$L6"
member_stop "$L6" KILL
sleep $((ttl + 1))
for n in $F6; do rm -f "$tmp/apply.$n"; done
if wait_until 20 other_leader "$L6"; then ok; else bad "no leader after the lagging failover"; fi
# shellcheck disable=SC2086
converge "after the lagging failover" $F6
if cat "$tmp"/*.err | grep -q "another writer"; then bad "a new leader wrote before catching up: $(cat "$tmp"/*.err | grep "another writer" | head -2)"; else ok; fi
watcher "$L6" "$(url_of "$L6")"
converge "the killed member back" "$L6"

# ------------------------------------------------------------ the etcd leader with the leader
# SIGKILL of etcd's leader and of the gpuledger leader together: etcd
# elects another leader (and extends the leases it inherits), the dead
# member's lease ends there, and a member on a live endpoint leads; then
# the etcd member comes back and the killed member follows.
etcd_leader() {
	etcdctl --endpoints "$ETCD_URLS" --command-timeout=2s endpoint status -w json 2>/dev/null |
		jq -r --arg urls "$ETCD_URLS" '($urls | split(",")) as $u |
			.[] | select(.Status.leader == .Status.header.member_id) |
			.Endpoint as $e | $u | index($e)'
}
L8=$(leader)
E8=$(etcd_leader)
if [ -n "$E8" ]; then ok; else bad "no etcd leader found"; E8=0; fi
t0=$(date +%s%N)
ctl kill "$E8"
member_stop "$L8" KILL
apply "$(ev ADDED "$(gpu_pod tenant-acme train-4 1 gpu-node-1 Running)")"
if wait_until 30 other_leader "$L8"; then ok; else bad "no leader after SIGKILL of etcd's leader ($E8) and of $L8"; fi
t1=$(date +%s%N)
echo "leader_cli: $(leader) leads $(((t1 - t0) / 1000000)) ms after SIGKILL of etcd member $E8 (its leader) and of $L8"
case $E8 in 0) dead=a ;; 1) dead=b ;; *) dead=c ;; esac
live=$(for n in a b c; do [ "$n" != "$L8" ] && [ "$n" != "$dead" ] && printf '%s ' "$n"; done)
# shellcheck disable=SC2086
converge "etcd's leader and the leader killed together" $live
ctl start "$E8"
watcher "$L8" "$(url_of "$L8")"
converge "etcd member $E8 and $L8 back" a b c
if cat "$tmp"/*.err | grep -q "another writer"; then bad "a term met another writer's observation"; else ok; fi

# ------------------------------------------------------------ rule 6: a batch in parts
# 2,500 GPU pods, then a class table that renames their class: the remap
# releases and reserves every holder in one flush, more than one txn holds.
python3 - "$tmp/many.json" <<'EOF'
import json, sys
evs = []
for i in range(2500):
    evs.append({"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p%04d" % i, "namespace": "tenant-acme"},
        "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c",
            "resources": {"limits": {"nvidia.com/GH100_H100_SXM5_80GB": "1"}}}]},
        "status": {"phase": "Running"}}})
json.dump(evs, open(sys.argv[1], "w"))
EOF
apply "@$tmp/many.json"
converge "2,500 pods" a b c
etcdctl --endpoints "$ETCD_URLS" watch --prefix "$P/open" >"$tmp/open.watch" 2>&1 &
wpid=$!
pids="$pids $wpid"
sleep 0.5
# classes_cm NAME: the watch event of a class table whose one class, NAME,
# holds the H100s (renaming it remaps every holder).
classes_cm() {
	python3 - "$1" <<'EOF'
import json, sys
classes = {"classes": [{"name": sys.argv[1], "resourceNames": ["nvidia.com/GH100_H100_SXM5_80GB"],
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}]}
print(json.dumps({"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "gpu-classes", "namespace": "cozy-system"},
    "data": {"classes.json": json.dumps(classes)}}}))
EOF
}
classes_cm h100x >"$tmp/cm.json"
# Admissions on the followers all along the remap: none may be judged on a
# half-applied batch (verdict txns compare P/open absent).
review() {
	jq -c --arg uid "$1" '.request.uid = $uid | .request.name = $uid |
		 .request.object.metadata = {name: $uid, namespace: "tenant-acme"} |
		 .request.object.spec.gpus = [{class: "h100", count: 1}]' \
		"$here/webhook/vminstance-create-allowed.json"
}
asker() { # MEMBER
	eval "ak_port=\$port_$1"
	ak_i=0
	while [ ! -f "$tmp/asks.stop" ]; do
		ak_i=$((ak_i + 1))
		review "$1-$ak_i" >"$tmp/rq.$1"
		curl -s -m 10 -o /dev/null -X POST "http://127.0.0.1:$ak_port/v1/admission" \
			--data-binary @"$tmp/rq.$1"
	done
}
L7=$(leader)
for n in $(followers_of "$L7"); do asker "$n" & pids="$pids $!"; done
sleep 0.5
apply "@$tmp/cm.json"
converge "the remap" a b c
touch "$tmp/asks.stop"
"$bin" log --db "$tmp/a" 2>/dev/null | jq -r 'select(.type == "VERDICT") | .seq' >"$tmp/vseqs"
nv=$(wc -l <"$tmp/vseqs")
echo "leader_cli: $nv verdicts in the log"
if [ "$nv" -gt 10 ]; then ok; else bad "only $nv verdicts were recorded under the remap"; fi
cat "$tmp"/*.err | sed -n 's/.*a flush of [0-9]* events in [0-9]* txns, seqs \([0-9]*\) to \([0-9]*\),.*/\1 \2/p' >"$tmp/splits"
inside=$(awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; n = NR; next }
	{ for (i = 1; i <= n; i++) if ($1 >= lo[i] && $1 <= hi[i]) c++ }
	END { print c + 0 }' "$tmp/splits" "$tmp/vseqs")
is "verdicts inside a split batch (rule 6)" "$inside" 0
sleep 0.5
kill "$wpid" 2>/dev/null
if grep -q "^PUT" "$tmp/open.watch" && grep -q "^DELETE" "$tmp/open.watch"; then ok; else
	bad "P/open was not put and deleted around the remap: $(head -5 "$tmp/open.watch")"
fi
if cat "$tmp"/*.err | grep -q ", $P/open around them"; then ok; else bad "no flush was split"; fi
is "P/open is gone" "$(etcdctl --endpoints "$ETCD_URLS" get "$P/open" --print-value-only)" ""

# ------------------------------------------------------------ rule 6: a leader killed inside a batch
# The class renamed back: another remap in parts. A follower F is stopped
# first (SIGTERM: its lease revoked, it no longer pins retention); the
# leader puts P/open with its first part and is killed before its second
# ($GPULEDGER_TEST_LEADER_PAUSE.NAME.inside). The other follower leads: it
# applies the half batch, finds P/open, relists (the rest of the remap)
# and deletes P/open with its NOTE Synced; no verdict is recorded in
# between, though admissions go on all along (and again while the killed
# leader joins: a join under load). Its retention deletes what
# F has not applied; F and the killed leader, restarted with --peer, join
# from the new leader (the seqs etcd no longer holds copied from it) and
# converge. (A follower only SIGSTOPped gets the events its watch had
# buffered, so it needs no join: the stopped process is the case.)
L9=$(leader)
set -- $(followers_of "$L9")
F9=$1 G9=$2
f9_seq=$(member_seq "$F9")
member_stop "$F9"
touch "$tmp/pause.$L9.inside"
rm -f "$tmp/asks.stop"
asker "$G9" &
apid=$!
pids="$pids $apid"
classes_cm h100 >"$tmp/cm2.json"
apply "@$tmp/cm2.json"
open_put() { [ -n "$(etcdctl --endpoints "$ETCD_URLS" get "$P/open" --print-value-only 2>/dev/null)" ]; }
if wait_until 20 open_put; then ok; else bad "the leader put no $P/open: $(tail -3 "$tmp/$L9.err")"; fi
sleep 0.5
member_stop "$L9" KILL
rm -f "$tmp/pause.$L9.inside"
if wait_until 20 other_leader "$L9"; then ok; else bad "no leader after $L9 died inside a batch"; fi
is "the leader after the crash" "$(leader)" "$G9"
open_gone() { [ -z "$(etcdctl --endpoints "$ETCD_URLS" get "$P/open" --print-value-only 2>/dev/null)" ]; }
if wait_until 30 open_gone; then ok; else bad "$P/open is left after the crash inside a batch"; fi
converge "the batch finished by the next leader" "$G9"
# The dead leader's lease ends (it pinned what it had applied); 300 more
# pods, and the leader's next retention pass deletes past F.
sleep $((ttl + 1))
python3 - "$tmp/more.json" <<'EOF2'
import json, sys
json.dump([{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "q%04d" % i, "namespace": "tenant-beta"},
    "spec": {"nodeName": "gpu-node-1", "containers": [{"name": "c",
        "resources": {"limits": {"nvidia.com/GH100_H100_SXM5_80GB": "1"}}}]},
    "status": {"phase": "Running"}}} for i in range(300)], open(sys.argv[1], "w"))
EOF2
apply "@$tmp/more.json"
converge "300 pods more" "$G9"
oldest_key() { etcdctl --endpoints "$ETCD_URLS" get "$P/log/" --prefix --keys-only --limit 1 | sed -n 's|.*/log/0*\([0-9]*\)$|\1|p'; }
past_f9() { o=$(oldest_key) && [ -n "$o" ] && [ "$o" -gt $((f9_seq + 1)) ]; }
if wait_until 20 past_f9; then ok; else bad "retention left seq $(oldest_key), not past $F9's $f9_seq: $(grep retention "$tmp/$G9.err" | tail -2)"; fi
# No VERDICT between the dead leader's first part (the CLASS event) and
# the NOTE Synced of the term that finished the batch.
"$bin" log --db "$tmp/$G9" 2>/dev/null | jq -c '{seq, type, code: (.code // null)}' >"$tmp/crash.seqs"
inside=$(jq -rs '([.[] | select(.type == "CLASS")] | last | .seq) as $from |
	([.[] | select(.seq > $from and .type == "NOTE" and .code == "Synced")] | first | .seq) as $to |
	[.[] | select(.type == "VERDICT" and .seq > $from and .seq < $to)] | length' "$tmp/crash.seqs")
is "verdicts between the half batch and its end (rule 6)" "$inside" 0
nlc=$(jq -s '([.[] | select(.type == "CLASS")] | last | .seq) as $from |
	[.[] | select(.seq > $from and .type == "NOTE" and .code == "LeaderChanged")] | length' "$tmp/crash.seqs")
is "one LeaderChanged inside the crashed batch" "$nlc" 1
eval "pg=\$port_$G9"
# F joins while nothing is written: the events it copied carry no etcd
# revision and its ledger's is at its old seq, so it must read P/head's to
# answer a review at once (not wait for a value that may not come).
touch "$tmp/asks.stop"
wait "$apid"
watcher "$F9" "$(url_of "$F9")" --peer "http://127.0.0.1:$pg"
converge "the stopped follower, joined" "$F9"
review "$F9-first" >"$tmp/rq.first"
eval "pf=\$port_$F9"
is "the joined follower answers a review at once" \
	"$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$pf/v1/admission" --data-binary @"$tmp/rq.first")" 200
# The killed leader joins under load (admissions on G all along).
rm -f "$tmp/asks.stop"
asker "$G9" &
apid=$!
pids="$pids $apid"
watcher "$L9" "$(url_of "$L9")" --peer "http://127.0.0.1:$pg"
converge "the killed leader, joined under load" "$L9"
touch "$tmp/asks.stop"
wait "$apid"
if grep -q "joining from http://127.0.0.1:$pg: [1-9][0-9]* events copied after seq $f9_seq" "$tmp/$F9.err"; then ok; else
	bad "$F9 did not join from the leader after seq $f9_seq: $(grep -E '^member' "$tmp/$F9.err" | tail -3)"
fi

# ------------------------------------------------------------ rule 11: retention
# After more than --keep events the leader deleted the P/log/ keys below
# the members' lowest applied seq less 1000 and compacted etcd; every
# ledger still holds the whole history (the end's checks), and a member
# below the oldest key left says how to seed it, and one with --peer joins
# from a ready member. (That the lowest applied
# seq pins the log: tests/cluster_cli.sh, `cluster compact`.)
if cat "$tmp"/*.err "$tmp"/*.err.old 2>/dev/null | grep -q "retention: deleted"; then ok; else
	bad "the leader deleted no P/log/ key: $(cat "$tmp"/*.err | grep retention | tail -2)"
fi
# Then the leader defragments its etcd endpoint (--defrag-free 1: any
# free byte), once the compaction is done.
if cat "$tmp"/*.err "$tmp"/*.err.old 2>/dev/null | grep -q "retention: defragmented etcd member http://127.0.0.1:[0-9]*: [0-9]* bytes -> [0-9]*"; then ok; else
	bad "the leader defragmented no etcd member: $(cat "$tmp"/*.err | grep retention | tail -2)"
fi
oldest=$(oldest_key)
low=$(for n in a b c; do member_seq "$n"; done | sort -n | head -1)
echo "leader_cli: the oldest P/log/ key left is seq $oldest; the members are at $low or more"
if [ -n "$oldest" ] && [ "$oldest" -gt 1 ] && [ "$oldest" -le $((low + 1)) ]; then ok; else
	bad "the oldest P/log/ key is seq '$oldest' (the lowest member at $low)"
fi
if etcdctl --endpoints "$ETCD_URLS" get "$P/head" --rev=2 >"$tmp/rev2" 2>&1; then
	bad "etcd was not compacted: $(head -2 "$tmp/rev2")"
elif grep -q "compacted" "$tmp/rev2"; then ok; else bad "reading revision 2: $(head -2 "$tmp/rev2")"; fi
# A new member with an empty ledger: etcd no longer holds seq 1.
member_up d "$tmp/d" "$ETCD_URLS" $P
stranded() { grep -q "etcd no longer holds the log" "$tmp/d.err"; }
if wait_until 20 stranded; then ok; else bad "a member below the oldest key: $(tail -2 "$tmp/d.err")"; fi
member_stop d
# docs/operations.md's way out: its volume seeded from a ready member's
# backup (taken while that member runs), it follows etcd from there.
"$bin" backup --db "$tmp/a" --to "$tmp/d2" >/dev/null 2>"$tmp/d2.backup" ||
	bad "backup of a: $(cat "$tmp/d2.backup")"
member_up d2 "$tmp/d2" "$ETCD_URLS" $P
converge "a member seeded from a ready member's backup" d2
member_stop d2
# Joining: a new member with --peer copies what etcd no longer holds from
# a ready member (every head checked), then follows etcd.
eval "pa=\$port_a"
member_up d3 "$tmp/d3" "$ETCD_URLS" $P --peer "http://127.0.0.1:$pa"
converge "a new member joined from a peer" d3
# It answers admission at once, though nothing newer came from etcd (no
# etcd revision in its ledger at all: P/head's is read).
review d3-first >"$tmp/rq.d3"
eval "p3=\$port_d3"
is "the joined member answers a review at once" \
	"$(curl -s -m 10 -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$p3/v1/admission" --data-binary @"$tmp/rq.d3")" 200
if grep -q "joining from http://127.0.0.1:$pa: [1-9][0-9]* events copied after seq 0" "$tmp/d3.err"; then ok; else
	bad "d3 did not say it joined: $(tail -2 "$tmp/d3.err")"
fi
member_stop d3
if "$bin" verify --db "$tmp/d3" >/dev/null 2>&1 && "$bin" audit --db "$tmp/d3" >/dev/null 2>&1; then ok; else
	bad "verify/audit of the joined member"
fi
"$bin" log --db "$tmp/d3" >"$tmp/d3.log" 2>/dev/null
"$bin" log --db "$tmp/a" 2>/dev/null | head -n "$(wc -l <"$tmp/d3.log")" >"$tmp/a.prefix"
if [ -s "$tmp/d3.log" ] && cmp -s "$tmp/d3.log" "$tmp/a.prefix"; then ok; else bad "the joined member's log is not a's"; fi

# ------------------------------------------------------------ the end
# The followers first, once every member is at the same seq, then the
# leader: no term starts after the last one that every log holds.
same_seq() { [ "$(member_seq a)" = "$(member_seq b)" ] && [ "$(member_seq a)" = "$(member_seq c)" ]; }
if wait_until 20 same_seq; then ok; else bad "the members are at seqs $(member_seq a) $(member_seq b) $(member_seq c)"; fi
L5=$(leader)
for n in a b c; do
	[ "$n" = "$L5" ] && continue
	member_stop "$n"
	is "$n exits 0 on SIGTERM" "$stopped_rc" 0
done
member_stop "$L5"
is "the leader $L5 exits 0 on SIGTERM" "$stopped_rc" 0
for n in a b c; do "$bin" log --db "$tmp/$n" >"$tmp/$n.log" 2>/dev/null; done
if cmp -s "$tmp/a.log" "$tmp/b.log" && cmp -s "$tmp/a.log" "$tmp/c.log" && [ -s "$tmp/a.log" ]; then ok; else
	bad "the members' logs differ"
fi
for n in a b c; do
	if "$bin" verify --db "$tmp/$n" >/dev/null 2>&1; then ok; else bad "verify $n"; fi
	if "$bin" audit --db "$tmp/$n" >/dev/null 2>&1; then ok; else bad "audit $n"; fi
done
terms=$(cat "$tmp"/*.err "$tmp"/*.err.old 2>/dev/null | grep -c "watching as leader")
is "one LeaderChanged per term" "$(notes a)" "$terms"
echo "leader_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
