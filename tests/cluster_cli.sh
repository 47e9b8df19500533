#!/bin/sh
# The foundation of a cluster on etcd (DESIGN 11), against a real 3-member
# etcd (Debian's etcd-server) on loopback with a TCP proxy in front of each
# member (tests/cluster/etcd_cluster.py):
#  - the proxy's modes, with curl: forward, drop-answer (the write commits,
#    its client hears nothing), reset, blackhole, delay;
#  - the etcd client through `gpuledger cluster etcd` (the debugging aid):
#    a txn's compare success, and its failure with the failure branch's
#    reads; rule 1: a txn whose answer the proxy dropped is indeterminate
#    AND committed, reset and blackhole are indeterminate, a refused
#    connection and a request etcd calls too large are not applied; an
#    endpoint list whose first URL is dead works through the second;
#    watches from a revision see later puts in order and a compacted start
#    revision is reported; leases granted, kept alive and revoked (a key
#    bound to a revoked lease is gone); TLS with a client certificate;
#  - `cluster init` on an empty log and on a ledger of `watch --from`
#    (P/head equals the ledger's seq, chainHead and time), a second init
#    refused (exit 1, naming the head), an init whose first answer is
#    dropped learns that it committed (rule 1), `cluster status` as text
#    and JSON with a leader and members.
# Usage: tests/cluster_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# etcd's data on tmpfs when there is one: 3.4.23 has no --unsafe-no-fsync.
tmp=$(mktemp -d /dev/shm/gpuledger-cluster.XXXXXX 2>/dev/null || mktemp -d)
hpid=
tlspid=
trap '[ -n "$hpid" ] && kill "$hpid" 2>/dev/null; [ -n "$tlspid" ] && kill -9 "$tlspid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds cluster_cli etcd etcdctl python3 jq curl openssl
export ETCDCTL_API=3

. "$here/cluster/lib.sh"
etcd_up cluster_cli
get() { etcdctl --endpoints "$ETCD_URL1" get --print-value-only "$1"; }
# client URLS [TIMEOUT_MS]: the requests on stdin through the client; the
# answers in $tmp/out.
client() {
	"$bin" cluster etcd --etcd "$1" --etcd-timeout-ms "${2:-3000}" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
}
# field N JQ: JQ of the N-th answer.
field() { sed -n "$1p" "$tmp/out" | jq -r "$2"; }
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
b64() { printf '%s' "$1" | base64 -w0; }

# ------------------------------------------------------------ the proxy
put_body() { printf '{"key":"%s","value":"%s"}' "$(b64 "$1")" "$(b64 "$2")"; }
curl -s -m 5 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/fwd 1)" >"$tmp/out"
is "proxy forward: etcd's answer" "$(jq -r '.header | has("revision")' "$tmp/out")" true
ctl mode p0 drop-answer
curl -s -m 5 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/drop 1)" >"$tmp/out"
is "proxy drop-answer: an empty reply (curl 52)" $? 52
is "proxy drop-answer: the put reached etcd" "$(get px/drop)" 1
ctl mode p0 reset
curl -s -m 5 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/reset 1)" >"$tmp/out"
is "proxy reset: a reset (curl 56)" $? 56
is "proxy reset: after the put reached etcd" "$(get px/reset)" 1
ctl mode p0 reset-early
curl -s -m 5 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/early 1)" >"$tmp/out"
is "proxy reset-early: a reset (curl 56)" $? 56
is "proxy reset-early: nothing reached etcd" "$(get px/early)" ""
ctl mode p0 blackhole
curl -s -m 1 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/hole 1)" >"$tmp/out"
is "proxy blackhole: no answer (curl 28)" $? 28
is "proxy blackhole: nothing reached etcd" "$(get px/hole)" ""
ctl mode p0 delay 200
curl -s -m 10 "$PROXY_URL0/v3/kv/put" -d "$(put_body px/delay 1)" >"$tmp/out"
is "proxy delay: the answer arrives" "$(jq -r '.header | has("revision")' "$tmp/out")" true
ctl mode p0 forward
python3 "$harness" ctl "$tmp/etcd" stats p0 >"$tmp/stats"
is "proxy stats: one answer dropped" "$(jq .dropped "$tmp/stats")" 1
is "proxy stats: two resets" "$(jq .reset "$tmp/stats")" 2
python3 "$harness" ctl "$tmp/etcd" mode p0 sideways >/dev/null 2>&1
is "proxy: an unknown mode is refused" $? 1

# ------------------------------------------------------- txn: compares
etcdctl --endpoints "$ETCD_URL1" put t/a 1 >/dev/null
client "$ETCD_URLS" <<'EOF'
{"op":"txn","compare":[{"key":"t/a","target":"value","result":"=","value":"1"}],"success":[{"put":"t/b","value":"2"},{"range":"t/a"}],"failure":[{"range":"t/a"}]}
{"op":"txn","compare":[{"key":"t/a","target":"create","result":"=","number":0}],"success":[{"put":"t/c","value":"3"}],"failure":[{"range":"t/a"},{"range":"t/","prefix":true,"keysOnly":true}]}
EOF
is "txn compare holds: committed" "$(field 1 .outcome)" committed
is "txn compare holds: the success branch's read" "$(field 1 '.responses[1].kvs[0].value')" 1
is "txn compare holds: the put is there" "$(get t/b)" 2
is "txn compare fails: compare-failed" "$(field 2 .outcome)" compare-failed
is "txn compare fails: the failure branch's read" "$(field 2 '.responses[0].kvs[0].value')" 1
is "txn compare fails: its prefix read" "$(field 2 '[.responses[1].kvs[].key] | join(",")')" "t/a,t/b"
is "txn compare fails: its revision is the header's" "$(field 2 '.responses[0].kvs[0].modRevision < .revision')" true
is "txn compare fails: nothing of the success branch" "$(get t/c)" ""

# --------------------------------------------------- rule 1: outcomes
ctl mode p0 drop-answer
echo '{"op":"txn","compare":[{"key":"r/drop","target":"create","result":"=","number":0}],"success":[{"put":"r/drop","value":"mine"}]}' |
	client "$PROXY_URL0"
is "answer dropped: indeterminate" "$(field 1 .outcome)" indeterminate
is "answer dropped: AND committed" "$(get r/drop)" mine
ctl mode p0 reset
echo '{"op":"txn","success":[{"put":"r/reset","value":"x"}]}' | client "$PROXY_URL0"
is "reset after the commit: indeterminate" "$(field 1 .outcome)" indeterminate
is "reset after the commit: committed" "$(get r/reset)" x
# Reset before anything went upstream: not applied when the body had not
# left in full, else indeterminate; never committed, never compare-failed.
ctl mode p0 reset-early
echo '{"op":"txn","success":[{"put":"r/early","value":"x"}]}' | client "$PROXY_URL0"
case $(field 1 .outcome) in not-applied | indeterminate) ok ;;
*) bad "reset before the request: $(field 1 .outcome)" ;; esac
is "reset before the request: nothing written" "$(get r/early)" ""
ctl mode p0 blackhole
echo '{"op":"txn","success":[{"put":"r/hole","value":"x"}]}' | client "$PROXY_URL0" 700
is "blackhole: indeterminate" "$(field 1 .outcome)" indeterminate
has "blackhole: the timeout struck" "$tmp/out" 'timed out after the request was sent'
ctl mode p0 forward
echo '{"op":"txn","success":[{"put":"r/refused","value":"x"}]}' | client "http://127.0.0.1:$dead"
is "connection refused: not-applied" "$(field 1 .outcome)" not-applied
echo '{"op":"put","key":"r/nohost","value":"x"}' | client "http://no-such-host.invalid:2379"
is "unresolvable: not-applied" "$(field 1 .outcome)" not-applied
python3 -c 'import json; print(json.dumps({"op":"put","key":"r/big","value":"x"*1600000}))' |
	client "$ETCD_URLS"
is "too large for etcd: not-applied" "$(field 1 .outcome)" not-applied
has "too large for etcd: etcd's words" "$tmp/out" 'request is too large'
python3 -c 'import json; print(json.dumps({"op":"txn","success":[{"put":"r/m%d"%i,"value":"x"} for i in range(129)]}))' |
	client "$ETCD_URLS"
is "129 operations: not-applied" "$(field 1 .outcome)" not-applied
is "129 operations: none written" "$(get r/m0)" ""
# On a kept-alive connection whose answer is dropped, libcurl would send
# the request again on a fresh one by itself; a write must go once, its
# outcome left to the caller (rule 1): the key's version stays 1.
lines() { [ "$(wc -l <"$tmp/once.out")" -ge "$1" ]; }
mkfifo "$tmp/fifo"
"$bin" cluster etcd --etcd "$PROXY_URL0" <"$tmp/fifo" >"$tmp/once.out" 2>&1 &
cpid=$!
exec 3>"$tmp/fifo"
echo '{"op":"put","key":"once/warm","value":"x"}' >&3
wait_until 10 lines 1 || bad "kept-alive: no first answer"
ctl mode p0 drop-answer
echo '{"op":"txn","success":[{"put":"once/k","value":"x"}]}' >&3
wait_until 10 lines 2 || bad "kept-alive: no second answer"
exec 3>&-
wait "$cpid"
ctl mode p0 forward
is "kept-alive, answer dropped: indeterminate" "$(sed -n 2p "$tmp/once.out" | jq -r .outcome)" indeterminate
is "kept-alive, answer dropped: sent once (version 1)" \
	"$(etcdctl --endpoints "$ETCD_URL1" get once/k -w json | jq '.kvs[0].version')" 1
echo '{"op":"put","key":"r/failover","value":"y"}' | client "http://127.0.0.1:$dead,$ETCD_URL2"
is "first endpoint dead: committed through the second" "$(field 1 .outcome)" committed
is "first endpoint dead: the second answered" "$(field 1 .endpoint)" "$ETCD_URL2"
is "first endpoint dead: written" "$(get r/failover)" y

# ---------------------------------------------------------------- watch
rev=$(echo '{"op":"put","key":"w/0","value":"before"}' | client "$ETCD_URLS"; field 1 .revision)
for i in 1 2 3; do etcdctl --endpoints "$ETCD_URL2" put "w/$i" "v$i" >/dev/null; done
echo "{\"op\":\"watch\",\"key\":\"w/\",\"prefix\":true,\"startRevision\":$((rev + 1)),\"events\":3,\"timeoutMs\":10000}" |
	client "$ETCD_URLS"
is "watch: the later puts, in order" "$(head -3 "$tmp/out" | jq -r '.key + "=" + .value' | tr '\n' ' ')" "w/1=v1 w/2=v2 w/3=v3 "
is "watch: revisions ascend" "$(head -3 "$tmp/out" | jq -s '[.[].modRevision] == ([.[].modRevision] | sort)')" true
is "watch: stopped after 3 events" "$(field 4 .outcome)" committed
etcdctl --endpoints "$ETCD_URL1" compaction $((rev + 2)) >/dev/null
echo "{\"op\":\"watch\",\"key\":\"w/\",\"prefix\":true,\"startRevision\":$((rev + 1)),\"events\":3,\"timeoutMs\":10000}" |
	client "$ETCD_URLS"
is "watch from a compacted revision: reported" "$(field 1 .compactRevision)" $((rev + 2))
is "watch from a compacted revision: no event" "$(field 1 .events)" 0
has "watch from a compacted revision: says so" "$tmp/out" 'compacted'

# ---------------------------------------------------------------- leases
echo '{"op":"grant","ttl":60}' | client "$ETCD_URLS"
id=$(field 1 .id)
is "lease grant: the TTL asked" "$(field 1 .ttl)" 60
printf '%s\n' "{\"op\":\"put\",\"key\":\"l/k\",\"value\":\"bound\",\"lease\":\"$id\"}" \
	"{\"op\":\"keepalive\",\"id\":\"$id\"}" \
	"{\"op\":\"range\",\"key\":\"l/k\"}" \
	"{\"op\":\"revoke\",\"id\":\"$id\"}" \
	"{\"op\":\"keepalive\",\"id\":\"$id\"}" | client "$ETCD_URLS"
is "lease keepalive: renewed" "$(field 2 .ttl)" 60
is "lease: the key is bound to it" "$(field 3 '.kvs[0].lease')" "$id"
is "lease revoke: committed" "$(field 4 .outcome)" committed
is "lease revoke: the key is gone" "$(get l/k)" ""
etcdctl --endpoints "$ETCD_URL1" lease timetolive "$id" >"$tmp/ttl"
has "lease revoked: etcdctl finds it gone" "$tmp/ttl" 'already expired'
is "keepalive of a revoked lease: not found" "$(field 5 .code)" "not found"

# ---------------------------------------------------------------- status
echo '{"op":"status"}' | client "$ETCD_URLS"
leader=$(field 1 .leader | sed 's/^0*//')
etcdctl --endpoints "$ETCD_URLS" member list >"$tmp/members"
has "status: the leader is a member" "$tmp/members" "^$leader, started"

# ------------------------------------------------------------------- TLS
# etcd's gateway dials its own gRPC port with the server's certificate, so
# with --client-cert-auth that certificate must be good for clients too.
gen_ca ca && gen_cert server ca /CN=127.0.0.1 \
	"subjectAltName=IP:127.0.0.1;extendedKeyUsage=serverAuth,clientAuth" &&
	gen_cert client ca /CN=gpuledger "extendedKeyUsage=clientAuth" &&
	gen_ca other || bad "could not make the test certificates"
set -- $(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1",0))
print(" ".join(str(s.getsockname()[1]) for s in ss))')
etcd --name tls --data-dir "$tmp/tls-data" \
	--listen-client-urls "https://127.0.0.1:$1" --advertise-client-urls "https://127.0.0.1:$1" \
	--listen-peer-urls "http://127.0.0.1:$2" --initial-advertise-peer-urls "http://127.0.0.1:$2" \
	--initial-cluster "tls=http://127.0.0.1:$2" \
	--cert-file "$tmp/server.crt" --key-file "$tmp/server.key" \
	--client-cert-auth --trusted-ca-file "$tmp/ca.crt" >"$tmp/tls.log" 2>&1 &
tlspid=$!
tls="https://127.0.0.1:$1"
i=0
until etcdctl --endpoints "$tls" --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" \
	--key "$tmp/client.key" endpoint health >/dev/null 2>&1 || [ $i -ge 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
echo '{"op":"put","key":"tls/k","value":"v"}' |
	"$bin" cluster etcd --etcd "$tls" --etcd-cacert "$tmp/ca.crt" \
		--etcd-cert "$tmp/client.crt" --etcd-key "$tmp/client.key" >"$tmp/out" 2>&1
is "TLS with a client certificate: committed" "$(field 1 .outcome)" committed
echo '{"op":"put","key":"tls/k2","value":"v"}' |
	"$bin" cluster etcd --etcd "$tls" --etcd-cacert "$tmp/other.crt" >"$tmp/out" 2>&1
is "TLS, a server our CA did not sign: not-applied" "$(field 1 .outcome)" not-applied
run "$bin" cluster etcd --etcd "$tls" --etcd-cert "$tmp/client.crt" </dev/null
expect "--etcd-cert without --etcd-key" 2
kill -9 "$tlspid" 2>/dev/null
wait "$tlspid" 2>/dev/null
tlspid=

# ------------------------------------------------------------ cluster init
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/empty
expect "init on an empty log" 0
get /c/empty/head >"$tmp/head"
is "init on an empty log: seq 0" "$(jq .seq "$tmp/head")" 0
is "init on an empty log: the zero head" "$(jq -r .chainHead "$tmp/head")" \
	0000000000000000000000000000000000000000000000000000000000000000
is "init: P/epoch is a random id" "$(get /c/empty/epoch | grep -cE '^[0-9a-f]{32}$')" 1

db=$tmp/db
"$bin" watch --from "$root/tests/ingest/acme.ndjson" --classes "$root/tests/ingest/classes.json" \
	--db "$db" >/dev/null 2>&1 || bad "watch --from failed"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/acme --db "$db"
expect "init from a ledger" 0
get /c/acme/head >"$tmp/head"
"$bin" replay --db "$db" --json | jq -c '{seq, chainHead, time}' >"$tmp/want"
jq -c '{seq, chainHead, time}' "$tmp/head" >"$tmp/got"
same "init: P/head is the ledger's seq, chainHead and time" "$tmp/want" "$tmp/got"
"$bin" log --db "$db" | tail -1 | jq -c '{seq, time}' >"$tmp/want"
jq -c '{seq, time}' "$tmp/head" >"$tmp/got"
same "init: P/head's seq and time are the last event's (log)" "$tmp/want" "$tmp/got"
"$bin" verify --db "$db" | sed -n 's/.* head \([0-9a-f]*\)$/\1/p' >"$tmp/want"
jq -r .chainHead "$tmp/head" >"$tmp/got"
same "init: P/head's chainHead is verify's" "$tmp/want" "$tmp/got"
is "init: P/head is canonical JSON" "$(jq -cS . "$tmp/head")" "$(cat "$tmp/head")"
get /c/acme/pos/stream >"$tmp/pos"
is "init: P/pos/stream is the watcher's position (the end of the file)" \
	"$(jq .offset "$tmp/pos")" "$(wc -c <"$root/tests/ingest/acme.ndjson" | tr -d ' ')"
epoch=$(get /c/acme/epoch)
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/acme --db "$db"
expect "init twice" 1
has "init twice: names the head there" "$tmp/err" \
	"/c/acme/head is already there \\(seq $(jq .seq "$tmp/head"), chainHead $(jq -r .chainHead "$tmp/head")"
has "init twice: refuses a second history" "$tmp/err" 'refusing to write a second history'
is "init twice: the epoch is unchanged" "$(get /c/acme/epoch)" "$epoch"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/empty --db "$db"
expect "init over an empty head" 1
is "init over an empty head: still seq 0" "$(get /c/empty/head | jq .seq)" 0
# Rule 1: the first answer is lost, the identical txn goes to the next
# endpoint, its compare fails on our own epoch: ours, committed once.
ctl mode p0 drop-answer
run "$bin" cluster init --etcd "$PROXY_URL0,$ETCD_URL1" --prefix /c/lost --db "$db"
ctl mode p0 forward
expect "init whose answer is lost" 0
has "init whose answer is lost: sent twice" "$tmp/out" '2 txns sent'
is "init whose answer is lost: the head is there" "$(get /c/lost/head | jq .seq)" "$(jq .seq "$tmp/head")"
has "init whose answer is lost: the epoch printed is etcd's" "$tmp/out" "epoch $(get /c/lost/epoch),"
run "$bin" cluster init --etcd "http://127.0.0.1:$dead" --prefix /c/x
expect "init with etcd unreachable" 2
has "init with etcd unreachable: says so" "$tmp/err" 'not-applied: could not connect'
run "$bin" cluster init --etcd "$ETCD_URLS"
expect "init without --prefix" 2
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/acme/
expect "init with a prefix ending in /" 2
run "$bin" cluster init --etcd "127.0.0.1:2379" --prefix /c/x
expect "init with a URL without scheme" 2
has "init with a URL without scheme: says so" "$tmp/err" 'is not an http:// or https:// URL'
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/x --db "$tmp/missing"
expect "init with a missing --db" 2

# ---------------------------------------------------------- cluster status
etcdctl --endpoints "$ETCD_URL1" put /c/acme/leader '{"name":"member-a"}' >/dev/null
etcdctl --endpoints "$ETCD_URL1" put /c/acme/members/member-a '{"applied":23}' >/dev/null
etcdctl --endpoints "$ETCD_URL1" put /c/acme/members/member-b '{"applied":20}' >/dev/null
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix /c/acme
expect "status" 0
has "status: the head" "$tmp/out" "^head: seq 23  chainHead $(jq -r .chainHead "$tmp/head")"
has "status: the leader" "$tmp/out" '^leader: member-a$'
has "status: a member caught up" "$tmp/out" '^  member-a +23 +0$'
has "status: a member 3 behind" "$tmp/out" '^  member-b +20 +3$'
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix /c/acme --format json
expect "status --format json" 0
is "status json: the head" "$(jq -c '.head | {seq, chainHead}' "$tmp/out")" "$(jq -c '{seq, chainHead}' "$tmp/head")"
is "status json: the leader" "$(jq -r .leader.name "$tmp/out")" member-a
is "status json: the lags" "$(jq -c '[.members[] | [.name, .applied, .lag]]' "$tmp/out")" \
	'[["member-a",23,0],["member-b",20,3]]'
is "status json: the epoch" "$(jq -r .epoch "$tmp/out")" "$epoch"
cp "$tmp/out" "$tmp/json"
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix /c/acme --json
same "status --json is --format json" "$tmp/json" "$tmp/out"
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix /c/none
expect "status of a prefix without a head" 1
has "status without a head: says so" "$tmp/err" 'has no head'
run "$bin" cluster status --etcd "$ETCD_URLS" --prefix /c/acme --format yaml
expect "status --format yaml" 2
run "$bin" cluster status --etcd "http://127.0.0.1:$dead" --prefix /c/acme
expect "status with etcd unreachable" 2
# --------------------------------------------------------- cluster compact
# Rule 11's retention, once: 60 txns of one event each after a single-pod
# ledger of 37 (P/log/ keys 38..97), members listed in P/members/ pin it.
"$bin" import --db "$tmp/ret" --create <"$here/query/base.ndjson" >/dev/null || bad "import"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/ret --db "$tmp/ret"
expect "init /c/ret" 0
rev_early=$(etcdctl --endpoints "$ETCD_URL1" get /c/ret/head -w json | jq .header.revision)
python3 -c 'import json
for i in range(60):
    print(json.dumps({"type": "BUDGET", "namespace": "tenant-acme",
                      "key": "h100.gpuclass.cozystack.io/devices", "value": i % 5 + 1,
                      "time": "2026-03-03T00:%02d:00Z" % i}))' >"$tmp/ret.ndjson"
"$bin" cluster feed --etcd "$ETCD_URLS" --prefix /c/ret --db "$tmp/ret" --from "$tmp/ret.ndjson" \
	--batch 1 >"$tmp/ret.feed" 2>&1 || bad "feed: $(tail -2 "$tmp/ret.feed")"
oldest_key() { etcdctl --endpoints "$ETCD_URL1" get /c/ret/log/ --prefix --keys-only --limit 1 | sed -n 's|.*/log/0*\([0-9]*\)$|\1|p'; }
is "retention: the oldest key before" "$(oldest_key)" 38
compact() { # KEEP: the fields of the JSON line
	run "$bin" cluster compact --etcd "$ETCD_URLS" --prefix /c/ret --keep "$1"
	jq -c '[.head, .members, .low, .cut, .deleted, .oldest, (.compactRevision > 0)]' "$tmp/out"
}
is "compact: no member listed deletes nothing" "$(compact 10)" "[97,0,97,0,0,38,false]"
lease=$(etcdctl --endpoints "$ETCD_URL1" lease grant 60 | awk '{print $2}')
etcdctl --endpoints "$ETCD_URL1" put --lease="$lease" /c/ret/members/x '{"applied":80}' >/dev/null
etcdctl --endpoints "$ETCD_URL1" put /c/ret/members/y '{"applied":95}' >/dev/null
is "compact: the lowest applied pins the log" "$(compact 10)" "[97,2,80,70,32,70,true]"
is "compact: the oldest key after" "$(oldest_key)" 70
if etcdctl --endpoints "$ETCD_URL1" get /c/ret/head --rev="$rev_early" >"$tmp/rev" 2>&1; then
	bad "compact: etcd was not compacted"
else has "compact: etcd compacted at the oldest key kept" "$tmp/rev" "compacted"; fi
is "compact: again, nothing more" "$(compact 10)" "[97,2,80,70,0,70,false]"
is "compact: keep above the lowest applied deletes nothing" "$(compact 100)" "[97,2,80,0,0,70,false]"
# The lowest member's lease ends: it no longer pins.
etcdctl --endpoints "$ETCD_URL1" lease revoke "$lease" >/dev/null
is "compact: a member gone stops pinning" "$(compact 10)" "[97,1,95,85,15,85,true]"
# A member that names no applied seq pins everything.
etcdctl --endpoints "$ETCD_URL1" put /c/ret/members/z '{}' >/dev/null
is "compact: a member without an applied seq pins all" "$(compact 1)" "[97,2,0,0,0,85,false]"
# By bytes: the member that pins all does not stop it. The newest five
# values' bytes as the bound keep exactly those five (seqs 93..97), past
# every member; one byte less keeps four.
vbytes() { # FIRST LAST: the bytes of the values of P/log/ keys FIRST..LAST
	etcdctl --endpoints "$ETCD_URL1" get "/c/ret/log/$(printf '%020d' "$1")" \
		"/c/ret/log/$(printf '%020d' $(($2 + 1)))" -w json |
		python3 -c 'import base64, json, sys
print(sum(len(base64.b64decode(kv["value"])) for kv in json.load(sys.stdin)["kvs"]))'
}
b5=$(vbytes 93 97)
compact_b() { # KEEP BYTES DEFRAG: the fields of the JSON line
	run "$bin" cluster compact --etcd "$ETCD_URLS" --prefix /c/ret --keep "$1" \
		--keep-bytes "$2" --defrag-free "$3"
	jq -c '[.cut, .byBytes, .bytesKept, .deleted, .oldest]' "$tmp/out"
}
is "compact --keep-bytes: past the members' pin" "$(compact_b 1 "$b5" 0)" "[93,true,$b5,8,93]"
is "compact --keep-bytes: kept what it says" "$(vbytes 93 97)" "$b5"
is "compact --keep-bytes: again, nothing more" "$(compact_b 1 "$b5" 0)" "[0,false,$b5,0,93]"
b4=$(vbytes 94 97)
is "compact --keep-bytes: one byte less keeps four" "$(compact_b 1 $((b5 - 1)) 0)" "[94,true,$b4,1,94]"
is "compact --defrag-free 0: none defragmented" "$(jq '.defragmented | length' "$tmp/out")" 0
b1=$(vbytes 97 97)
is "compact --keep-bytes 1: the newest key stays" "$(compact_b 0 1 1)" "[97,true,$b1,3,97]"
# Defragmentation, one etcd member at a time, in the order of --etcd, at
# each pass (--defrag-free 1: a member with a byte free). etcd frees a
# compaction's pages in the background, so a member may show them only
# at a later pass: every member is defragmented within a few passes (on
# a loaded machine, many: up to a minute).
: >"$tmp/defragged"
i=0
while [ $i -lt 120 ]; do
	jq -r '.defragmented[] | select(.before > 0 and .after > 0 and .after <= .before) | .endpoint' \
		"$tmp/out" >>"$tmp/defragged"
	jq -r '[.defragmented[].endpoint] | join(",")' "$tmp/out" >>"$tmp/defrag.order"
	[ "$(sort -u "$tmp/defragged" | wc -l)" -ge 3 ] && break
	sleep 0.5
	compact_b 0 1 1 >/dev/null
	i=$((i + 1))
done
is "compact --defrag-free 1: every etcd member defragmented" \
	"$(sort -u "$tmp/defragged" | tr '\n' ' ')" "$(echo "$ETCD_URLS" | tr ',' '\n' | sort | tr '\n' ' ')"
bad_order=$(python3 -c 'import sys
urls = sys.argv[1].split(",")
for ln in open(sys.argv[2]):
    got = [u for u in ln.strip().split(",") if u]
    if [u for u in urls if u in got] != got:
        print(ln.strip())' "$ETCD_URLS" "$tmp/defrag.order")
is "compact --defrag-free 1: each pass in --etcd's order" "$bad_order" ""
# Large values (a remap's, near 1.4 MB): 16 of them are more than one
# answer may hold, so the byte count reads them one by one. 16 values of
# about 550 KB (base64: more than 8.25 MiB), then a bound that keeps the
# newest eight.
"$bin" import --db "$tmp/big" --create <"$here/query/base.ndjson" >/dev/null || bad "import big"
run "$bin" cluster init --etcd "$ETCD_URLS" --prefix /c/big --db "$tmp/big"
expect "init /c/big" 0
python3 -c 'import json
for i in range(16 * 8000):
    print(json.dumps({"type": "BUDGET", "namespace": "tenant-acme",
                      "key": "h100.gpuclass.cozystack.io/devices", "value": i % 5 + 1,
                      "time": "2026-03-04T00:00:00Z"}))' >"$tmp/big.ndjson"
"$bin" cluster feed --etcd "$ETCD_URLS" --prefix /c/big --db "$tmp/big" --from "$tmp/big.ndjson" \
	--batch 8000 >"$tmp/big.feed" 2>&1 || bad "feed big: $(tail -2 "$tmp/big.feed")"
bigb() { # FIRST LAST: bytes of the /c/big values from the FIRST-th key to the LAST-th (1-based)
	etcdctl --endpoints "$ETCD_URL1" get /c/big/log/ --prefix -w json |
		python3 -c 'import base64, json, sys
kvs = json.load(sys.stdin)["kvs"][int(sys.argv[1]) - 1:int(sys.argv[2])]
print(sum(len(base64.b64decode(kv["value"])) for kv in kvs))' "$1" "$2"
}
is "large values: 16 keys" "$(etcdctl --endpoints "$ETCD_URL1" get /c/big/log/ --prefix --keys-only | grep -c log)" 16
total_big=$(bigb 1 16)
if [ $((total_big / 3 * 4)) -gt 8650752 ]; then ok; else bad "the 16 values hold only $total_big bytes (base64: under one answer's bound)"; fi
keep8=$(bigb 9 16)
run "$bin" cluster compact --etcd "$ETCD_URLS" --prefix /c/big --keep 0 --keep-bytes "$keep8" --defrag-free 0
expect "compact --keep-bytes over large values" 0
is "compact --keep-bytes over large values: the newest eight kept" \
	"$(jq -c '[.byBytes, .bytesKept, .deleted]' "$tmp/out")" "[true,$keep8,8]"
run "$bin" cluster compact --etcd "$ETCD_URLS" --prefix /c/ret --keep 0 --keep-bytes 0
expect "compact --keep 0 --keep-bytes 0" 2
has "compact with no bound: says so" "$tmp/err" 'keep or --keep-bytes is 1 or more'
run "$bin" cluster compact --etcd "$ETCD_URLS" --prefix /c/none --keep 5
expect "compact of a prefix without an epoch" 2
has "compact without an epoch: says so" "$tmp/err" 'epoch is absent'

run "$bin" cluster
expect "cluster without an action" 2
has "cluster without an action: names them" "$tmp/err" 'which action\? init, status'

echo "cluster_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
