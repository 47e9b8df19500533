#!/bin/sh
# One sequencer, every member a door (DESIGN 11): 3 `gpuledger member
# --watch` on a real 3-member etcd on loopback (tests/cluster/etcd_cluster.py)
# watching the test Kubernetes API server, each reachable by its peers
# through a TCP proxy of the harness (--advertise-url), so that a test can
# drop or delay what the sequencer answers a door:
#  - P/leader names the sequencer's URL; a forward (POST /v1/peer/verdicts)
#    without credentials is 401, with another role's 403, with the peer
#    token answered;
#  - admissions spread over the 3 members (tests/cluster/vclients.py) are
#    forwarded by the doors and judged by the sequencer: every answer 200,
#    the doors count forwards and no fallback;
#  - a forward whose answer is lost after the sequencer committed (the
#    proxy drops it): the door judges itself under the same key and answers
#    the sequencer's verdict, one record (a review, and a plain request
#    whose key the door made);
#  - the sequencer SIGSTOPped under spread admissions (the doors fall back
#    after --forward-timeout-ms), then SIGKILLed (another member takes
#    over as sequencer);
#  - the sequencer SIGKILLed and restarted while its old lease still
#    holds P/leader: it judges there, forwarding nothing to itself;
#  - tests/cluster/history.py over every answer and every member's log:
#    each answered verdict once, the logs byte-identical, verify and audit.
# With DOORS_MODE=judge (tests/cluster_holds_cli.sh) the members run
# --no-forward: each judges its own verdicts, and the holds promise rests
# on its conflict rule alone (a conflict over a VERDICT that made a hold is
# judged again, never re-numbered); the sections about forwards are
# skipped.
# Usage: tests/cluster_doors_cli.sh [PATH/TO/gpuledger]
set -u
mode=${DOORS_MODE:-forward}
me=cluster_doors_cli
fwd_opt=
if [ "$mode" = judge ]; then
	me=cluster_holds_cli
	fwd_opt=--no-forward
fi
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-doors.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds "$me" etcd etcdctl python3 jq curl
export ETCDCTL_API=3
token=s3cret
P=/doors

. "$here/cluster/lib.sh"
etcd_up "$me"

# ------------------------------------------------------------ the API server
apiserver_up "$me" "$token"

# ------------------------------------------------------------ the members
# Tokens: the API server's (admission), the members' own (peer), an
# auditor's.
printf 'adm-token-0123456789 admission\npeer-token-0123456789 peer\naud-token-0123456789 auditor\n' >"$tmp/tokens"
printf 'peer-token-0123456789\n' >"$tmp/peer.tok"
chmod 600 "$tmp/tokens" "$tmp/peer.tok"
"$bin" cluster init --etcd "$ETCD_URLS" --prefix $P >"$tmp/init.out" 2>&1 ||
	bad "cluster init: $(cat "$tmp/init.out")"
# Each member listens on a port chosen here, behind a proxy its peers use.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
for m in m1 m2 m3; do
	lp=$(free_port)
	pp=$(python3 "$harness" ctl "$tmp/etcd" proxy "x$m" "$lp")
	case $pp in *[!0-9]* | "") bad "proxy x$m: $pp" ;; esac
	eval "lport_$m=$lp pport_$m=$pp"
done
# start NAME: the member with --watch, a door and maybe the sequencer.
start() {
	eval "sl=\$lport_$1 sp=\$pport_$1"
	[ -f "$tmp/$1.err" ] && cat "$tmp/$1.err" >>"$tmp/$1.err.old" && : >"$tmp/$1.err"
	rm -f "$tmp/$1.out"
	"$bin" member --db "$tmp/$1" --etcd "$ETCD_URLS" --prefix $P --name "$1" \
		--listen "127.0.0.1:$sl" --etcd-timeout-ms 1500 --token-file "$tmp/tokens" \
		--peer-token-file "$tmp/peer.tok" --advertise-url "http://127.0.0.1:$sp" \
		--forward-timeout-ms 800 --verdict-timeout-ms 4000 \
		--watch --kubeconfig "$tmp/kc" --lease-ttl 2 --tick 3600 --holds 2m $fwd_opt \
		>"$tmp/$1.out" 2>>"$tmp/$1.err" &
	eval "pid_$1=$! port_$1=$sl"
	pids="$pids $!"
	wait_listening "$tmp/$1.out"
	[ -n "$port" ] || bad "member $1 did not start: $(tail -3 "$tmp/$1.err")"
}
ready() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz" | grep -q 200; }
leader() {
	etcdctl --endpoints "$ETCD_URL0" get $P/leader --print-value-only 2>/dev/null | jq -r .name 2>/dev/null
}
for m in m1 m2 m3; do start $m; done
for m in m1 m2 m3; do
	eval "mp=\$port_$m"
	if wait_until 60 ready "$mp"; then ok; else bad "$m is not ready: $(curl -s "http://127.0.0.1:$mp/readyz")"; fi
done
if [ "$fail" -gt 0 ]; then
	echo "$me: $pass passed, $fail failed"
	exit 1
fi
wait_until 20 test -n "$(leader)" || bad "no member leads"
seq1=$(leader)
eval "seqport=\$port_$seq1 seqproxy=\$pport_$seq1"
doors=
for m in m1 m2 m3; do [ "$m" = "$seq1" ] || doors="$doors $m"; done
is "P/leader names the sequencer's URL for doors" \
	"$(etcdctl --endpoints "$ETCD_URL0" get $P/leader --print-value-only | jq -r .peer)" \
	"http://127.0.0.1:$seqproxy"
: >"$tmp/answers"

# ask PORT UID: a review with the admission token, logged for history.py.
ask() {
	review "$2" "vm-$2" 1 >"$tmp/rq.$2"
	sent=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
	code=$(curl -s -m 10 -o "$tmp/body.$2" -w '%{http_code}' -H 'Authorization: Bearer adm-token-0123456789' \
		-X POST "http://127.0.0.1:$1/v1/admission" --data-binary @"$tmp/rq.$2")
	[ -s "$tmp/body.$2" ] || echo null >"$tmp/body.$2"
	jq -n -c --slurpfile rq "$tmp/rq.$2" --slurpfile b "$tmp/body.$2" \
		--arg code "$code" --arg sent "$sent" --arg uid "$2" \
		'{uid: $uid, request: $rq[0], sent: $sent, received: $sent,
		  status: (if $code == "000" then null else ($code | tonumber) end),
		  body: (if $code == "000" then null else $b[0] end)}
		 + (if $code == "000" then {error: "timeout"} else {} end)' >>"$tmp/answers"
}
metric() { # PORT NAME
	curl -s -m 2 -H 'Authorization: Bearer aud-token-0123456789' "http://127.0.0.1:$1/metrics" |
		sed -n "s/^gpuledger_cluster_verdict_$2_total \([0-9]*\)\$/\1/p"
}

# ------------------------------------------------ a forward's credentials
fwd_body=$(review cred-1 vm-cred 1 | jq -Rs '{from: "test", items: [{kind: "admission", body: ., key: null, budgetMs: 3000}]}')
code=$(curl -s -o "$tmp/f.out" -w '%{http_code}' -X POST "http://127.0.0.1:$seqport/v1/peer/verdicts" -d "$fwd_body")
is "a forward without credentials: 401" "$code" 401
code=$(curl -s -o "$tmp/f.out" -w '%{http_code}' -H 'Authorization: Bearer adm-token-0123456789' \
	-X POST "http://127.0.0.1:$seqport/v1/peer/verdicts" -d "$fwd_body")
is "a forward with the admission role: 403" "$code" 403
is "refused forwards record nothing" \
	"$("$bin" log --db "$tmp/$seq1" 2>/dev/null | jq -s 'map(select(.type == "VERDICT")) | length')" 0
code=$(curl -s -o "$tmp/f.out" -w '%{http_code}' -H 'Authorization: Bearer peer-token-0123456789' \
	-X POST "http://127.0.0.1:$seqport/v1/peer/verdicts" -d "$fwd_body")
is "a forward with the peer token: 200" "$code" 200
is "its item answered 200, an AdmissionReview" \
	"$(jq -r '.items[0].status, (.items[0].body | fromjson | .kind)' "$tmp/f.out" | tr '\n' ' ')" \
	"200 AdmissionReview "
review cred-1 vm-cred 1 >"$tmp/rq.cred-1"
jq -n -c --slurpfile rq "$tmp/rq.cred-1" --argjson b "$(jq -r '.items[0].body' "$tmp/f.out")" \
	'{uid: "cred-1", request: $rq[0], sent: "", received: "", status: 200, body: $b}' >>"$tmp/answers"

# --------------------------------------- admissions spread over 3 members
urls="http://127.0.0.1:$port_m1,http://127.0.0.1:$port_m2,http://127.0.0.1:$port_m3"
python3 "$here/cluster/vclients.py" --members "$urls" --out "$tmp/answers" --token adm-token-0123456789 \
	--clients 6 --requests 10 --retry 0.2 --uid-prefix sp ${SEED:+--seed "$SEED"} >"$tmp/spread.out" 2>&1
is "spread: the clients ran" "$?" 0
is "spread: every answer 200" \
	"$(jq -s '[.[] | select((.uid | startswith("sp-")) and .status != 200)] | length' "$tmp/answers")" 0
fw=0
fb=0
[ "$mode" = forward ] && for m in $doors; do
	eval "mp=\$port_$m"
	fw=$((fw + $(metric "$mp" forwarded)))
	fb=$((fb + $(metric "$mp" fallbacks)))
done
if [ "$mode" = forward ]; then
	[ "$fw" -gt 0 ] && ok || bad "the doors forwarded nothing"
	is "spread: no forward fell back" "$fb" 0
	echo "spread: $fw verdicts forwarded by the doors"
fi

at_head() {
	h=$(etcdctl --endpoints "$ETCD_URL0" get $P/head --print-value-only | jq .seq)
	for m in m1 m2 m3; do
		eval "mp=\$port_$m"
		[ "$(curl -s -m 2 "http://127.0.0.1:$mp/readyz" | jq -r .seq)" = "$h" ] || return 1
	done
}

# ------------------------------ holds: the promise as a user sees it
# (DESIGN 3.7, the members run --holds 2m; the leader appended the HOLDS
# event): a tenant with 10 h100 left, 60 admissions of 1 at once spread
# over the 3 members: exactly 10 allowed, 10 holds listed on every
# member; the watcher then observes the 10 objects: 0 left, no hold.
apply "$(printf '%s\n' \
	'{"type":"ADDED","object":{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"tenant-holds"},"status":{"phase":"Active"}}}' \
	'{"type":"ADDED","object":{"apiVersion":"apps.cozystack.io/v1alpha1","kind":"Tenant","metadata":{"name":"holds","namespace":"tenant-root"},"spec":{"resourceQuotas":{"h100.gpuclass.cozystack.io/devices":"10"}}}}')"
left() { # PORT: tenant-holds' h100 remaining
	curl -s -m 2 -H 'Authorization: Bearer aud-token-0123456789' \
		"http://127.0.0.1:$1/v1/tenants/tenant-holds/remaining" | jq -r '.classes.h100.remaining'
}
all_left() { # N: every member says N left
	for m in m1 m2 m3; do
		eval "mp=\$port_$m"
		[ "$(left "$mp")" = "$1" ] || return 1
	done
}
if wait_until 30 all_left 10; then ok; else bad "tenant-holds does not have 10 left: $(left "$port_m1")"; fi
python3 - "$tmp/answers" "$tmp/holds.allowed" "$here/webhook/vminstance-create-allowed.json" \
	"$port_m1" "$port_m2" "$port_m3" <<'PYEOF'
import json, sys, threading, urllib.request, datetime
out, allowed_file, base_file, ports = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
base = json.load(open(base_file))
lock, lines, allowed = threading.Lock(), [], []
def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
def one(i):
    rq = json.loads(json.dumps(base))
    name = "hv-%d" % i
    rq["request"]["uid"] = "holds-%d" % i
    rq["request"]["name"] = name
    rq["request"]["namespace"] = "tenant-holds"
    rq["request"]["object"]["metadata"] = {"name": name, "namespace": "tenant-holds"}
    rq["request"]["object"]["spec"]["gpus"] = [{"class": "h100", "count": 1}]
    req = urllib.request.Request("http://127.0.0.1:%s/v1/admission" % ports[i % 3],
                                 data=json.dumps(rq).encode(), method="POST")
    req.add_header("Authorization", "Bearer adm-token-0123456789")
    sent = now()
    try:
        with urllib.request.urlopen(req, timeout=10) as a:
            st, body = a.status, json.loads(a.read())
    except urllib.error.HTTPError as e:
        st, body = e.code, json.loads(e.read() or b"null")
    with lock:
        lines.append(json.dumps({"uid": "holds-%d" % i, "request": rq, "sent": sent,
                                 "received": now(), "status": st, "body": body}))
        if st == 200 and body["response"]["allowed"]:
            allowed.append(name)
ts = [threading.Thread(target=one, args=(i,)) for i in range(60)]
for t in ts: t.start()
for t in ts: t.join()
open(out, "a").write("\n".join(lines) + "\n")
open(allowed_file, "w").write("\n".join(sorted(allowed)) + "\n")
PYEOF
is "holds: 60 admissions of 1 into 10 left, 10 allowed" "$(grep -c . "$tmp/holds.allowed")" 10
is "holds: every answer 200" \
	"$(jq -s '[.[] | select((.uid | startswith("holds-")) and .status != 200)] | length' "$tmp/answers")" 0
holds_listed() { # N
	for m in m1 m2 m3; do
		eval "mp=\$port_$m"
		[ "$(curl -s -m 2 -H 'Authorization: Bearer aud-token-0123456789' \
			"http://127.0.0.1:$mp/v1/holds?tenant=tenant-holds" | jq '.holds | length')" = "$1" ] || return 1
	done
}
if wait_until 20 holds_listed 10; then ok; else bad "holds: not 10 listed on every member"; fi
if wait_until 5 all_left 0; then ok; else bad "holds: 0 left while they hold: $(left "$port_m1")"; fi
objs=
for n in $(cat "$tmp/holds.allowed"); do
	objs="$objs{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":\"VMInstance\",\"metadata\":{\"name\":\"$n\",\"namespace\":\"tenant-holds\"},\"spec\":{\"runStrategy\":\"Always\",\"gpus\":[{\"class\":\"h100\",\"count\":1}]}}}
"
done
apply "$objs"
if wait_until 30 holds_listed 0; then ok; else bad "holds: not ended by the observations"; fi
if wait_until 5 all_left 0; then ok; else bad "holds: not 0 left once observed: $(left "$port_m1")"; fi

if [ "$mode" = forward ]; then
# ------------------- a forward whose answer is lost after the commit
set -- $doors
door=$1
eval "dport=\$port_$door"
fb0=$(metric "$dport" fallbacks)
ctl mode "x$seq1" drop-answer "/v1/peer/verdicts"
ask "$dport" lost-1
is "answer lost: the door answers 200" "$code" 200
code=$(curl -s -m 10 -o "$tmp/body.plain" -w '%{http_code}' -H 'Authorization: Bearer adm-token-0123456789' \
	-X POST "http://127.0.0.1:$dport/v1/admission" \
	-d '{"namespace":"tenant-acme","kind":"VMInstance","name":"vm-lost-plain","old":null,"new":{"gpus":[{"class":"h100","count":1}]}}')
is "answer lost, a plain request: 200" "$code" 200
ctl mode "x$seq1" forward
[ "$(metric "$dport" fallbacks)" -gt "$fb0" ] && ok || bad "the door did not fall back"
wait_until 20 at_head || bad "the members did not reach P/head"
"$bin" log --db "$tmp/$seq1" >"$tmp/lost.log"
is "answer lost: one record of the review" \
	"$(jq -s 'map(select(.type == "VERDICT" and .record.requester.uid == "lost-1")) | length' "$tmp/lost.log")" 1
is "answer lost: one record of the plain request, under the door's key" \
	"$(jq -r 'select(.type == "VERDICT" and .record.request.name == "vm-lost-plain") | .record.idempotencyKey | startswith("'"$door"'.")' "$tmp/lost.log")" true
is "answer lost: the door answered that record" \
	"$(jq -r .id "$tmp/body.plain")" \
	"$(jq -r 'select(.type == "VERDICT" and .record.request.name == "vm-lost-plain") | .record.id' "$tmp/lost.log")"

fi

# ------------------------- the sequencer stopped, then killed, under load
python3 "$here/cluster/vclients.py" --members "$urls" --out "$tmp/answers" --token adm-token-0123456789 \
	--clients 6 --requests 14 --retry 0.2 --uid-prefix st --timeout 10 ${SEED:+--seed "$SEED"} \
	>"$tmp/stop.out" 2>&1 &
load=$!
sleep 1
eval "spid=\$pid_$seq1"
kill -STOP "$spid"
sleep 3
kill -CONT "$spid"
sleep 1
kill -9 "$spid"
wait "$spid" 2>/dev/null
wait "$load"
# Only the killed member's own clients may have gone unanswered.
is "stop and kill: every client of a door answered 200" \
	"$(jq -s --argjson k "$(echo "$seq1" | sed 's/m//')" '[.[] | select((.uid | startswith("st-")) and .member != ($k - 1) and .status != 200)] | length' "$tmp/answers")" 0
wait_until 20 test -n "$(leader)" -a "$(leader)" != "$seq1" || bad "no other member took over"
start "$seq1"
eval "mp=\$port_$seq1"
wait_until 60 ready "$mp" || bad "$seq1 is not ready after its restart"
# The log settles: the leader's relist after the takeover, the doors'
# NOTEs owed after the stop, all appended and applied everywhere (P/head
# the same over two seconds, every member at it); then the three stop at
# once, so that none misses what another appended while it stopped.
settled() {
	h0=$(etcdctl --endpoints "$ETCD_URL0" get $P/head --print-value-only | jq .seq)
	sleep 2
	at_head && [ "$(etcdctl --endpoints "$ETCD_URL0" get $P/head --print-value-only | jq .seq)" = "$h0" ]
}
wait_until 3 settled || bad "the log did not settle (within about a minute)"

if [ "$mode" = forward ]; then
# ---------------- the sequencer restarted while its old lease still lives
# A crashed sequencer's lease lives out its TTL (kept alive here, by
# etcdctl, so that the window does not race the restart): P/leader names
# the restarted member, but under a lease it does not hold. It judges
# here; forwarding to its own URL would wait --forward-timeout-ms for
# nothing (found by the fault suite under load).
seq2=$(leader)
eval "spid=\$pid_$seq2"
lease_of_leader() {
	etcdctl --endpoints "$ETCD_URL0" get $P/leader -w fields | sed -n 's/^"Lease" : //p'
}
lid=$(lease_of_leader)
kill -9 "$spid"
wait "$spid" 2>/dev/null
etcdctl --endpoints "$ETCD_URL0" lease keep-alive "$(printf '%x' "$lid")" >/dev/null 2>&1 &
kapid=$!
pids="$pids $kapid"
start "$seq2"
eval "mp=\$port_$seq2"
wait_until 60 ready "$mp" || bad "$seq2 is not ready after its restart"
wait_until 20 grep -q "following $seq2 " "$tmp/$seq2.err" ||
	bad "$seq2 restarted did not see P/leader name it"
ask "$mp" self-1
is "restarted under its own old lease: 200" "$code" 200
is "restarted under its own old lease: nothing forwarded" "$(metric "$mp" forwarded)" 0
is "restarted under its own old lease: no fallback" "$(metric "$mp" fallbacks)" 0
is "the old lease held P/leader all along" "$(lease_of_leader)" "$lid"
kill "$kapid" 2>/dev/null
wait "$kapid" 2>/dev/null
etcdctl --endpoints "$ETCD_URL0" lease revoke "$(printf '%x' "$lid")" >/dev/null 2>&1 ||
	bad "the old lease could not be revoked"
wait_until 20 test -n "$(leader)" || bad "no member leads after the old lease"
wait_until 3 settled || bad "the log did not settle after the old lease"
fi

# ------------------------------------------------------ the whole history
kill -TERM $pid_m1 $pid_m2 $pid_m3
for m in m1 m2 m3; do
	eval "mpid=\$pid_$m"
	wait "$mpid"
done
run python3 "$here/cluster/history.py" --bin "$bin" --answers "$tmp/answers" \
	--member "m1=$tmp/m1" --member "m2=$tmp/m2" --member "m3=$tmp/m3"
expect "history.py: the history holds" 0
[ "$rc" -eq 0 ] || grep -v '^ok' "$tmp/out" | head -20

echo "$me: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
