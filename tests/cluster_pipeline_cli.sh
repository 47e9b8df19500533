#!/bin/sh
# The sequencer's pipeline (DESIGN 11 "One sequencer, every member a
# door", --pipeline K): up to K verdict txns in flight, txn i+1 built on the
# head txn i will produce and compared on P/head's value, the exact bytes
# txn i puts. Against a real 3-member etcd on loopback
# (tests/cluster/etcd_cluster.py), m1 (--watch, the sequencer) reaching
# etcd only through proxy p0, m2 (no --watch, a door) directly:
#  - the pipeline runs: under admissions spread over m1 and m2, m1's
#    /metrics count txns committed while an earlier one was in flight
#    (pipelined) and more than one group in flight at once;
#  - txns reach etcd out of order: p0 holds back one verdict txn (the next
#    one that compares P/open) on its connection while the next ones
#    overtake it on theirs: they fail their compare, are sent again,
#    identical, once it committed, and committed once (early);
#  - a pipeline whose middle txn fails: p0 slows every txn while `cluster
#    feed` (a direct link, another writer) appends observations: the txn
#    in flight fails its compare and those chained on it are built again
#    from the failure branch (chain_failed); every answer 200 or 503;
#  - `member --pipeline` outside 1..16 is refused;
#  - tests/cluster/history.py over every answer and both members' logs:
#    each answered verdict once with its body, ids unique and gap-free,
#    the logs byte-identical, verify and audit.
# Usage: tests/cluster_pipeline_cli.sh [PATH/TO/gpuledger]
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /dev/shm/gpuledger-pipe.XXXXXX 2>/dev/null || mktemp -d)
hpid=
pids=
trap 'for p in $pids; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done; [ -n "$hpid" ] && kill "$hpid" 2>/dev/null;
	wait 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$here/lib/cli.sh"
need_cmds cluster_pipeline_cli etcd etcdctl python3 jq curl base64
export ETCDCTL_API=3
token=s3cret
P=/pipe

. "$here/cluster/lib.sh"
etcd_up cluster_pipeline_cli

# ------------------------------------------------------------ refusals
for k in 0 17; do
	run "$bin" member --db "$tmp/x" --etcd "$ETCD_URLS" --prefix $P --name x --pipeline "$k"
	expect "--pipeline $k is refused" 2
done

# ------------------------------------------------------------ the API server
apiserver_up cluster_pipeline_cli "$token"

# ------------------------------------------------------------ the members
printf 'adm-token-0123456789 admission\npeer-token-0123456789 peer\naud-token-0123456789 auditor\n' >"$tmp/tokens"
printf 'peer-token-0123456789\n' >"$tmp/peer.tok"
chmod 600 "$tmp/tokens" "$tmp/peer.tok"
"$bin" cluster init --etcd "$ETCD_URLS" --prefix $P >"$tmp/init.out" 2>&1 ||
	bad "cluster init: $(cat "$tmp/init.out")"
common="--token-file $tmp/tokens --peer-token-file $tmp/peer.tok --forward-timeout-ms 2000 --verdict-timeout-ms 6000"
member_up m1 "$tmp/m1" "$PROXY_URL0" $P $common --pipeline 3 \
	--watch --kubeconfig "$tmp/kc" --tick 3600
ready() { curl -s -m 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/readyz" | grep -q 200; }
leader() {
	etcdctl --endpoints "$ETCD_URL0" get $P/leader --print-value-only 2>/dev/null | jq -r .name 2>/dev/null
}
wait_until 30 ready "$port_m1" || bad "m1 is not ready: $(curl -s "http://127.0.0.1:$port_m1/readyz")"
wait_until 30 test "$(leader)" = m1 || bad "m1 does not lead"
member_up m2 "$tmp/m2" "$ETCD_URLS" $P $common
wait_until 30 ready "$port_m2" || bad "m2 is not ready: $(curl -s "http://127.0.0.1:$port_m2/readyz")"
if [ "$fail" -gt 0 ]; then
	echo "cluster_pipeline_cli: $pass passed, $fail failed"
	exit 1
fi
: >"$tmp/answers"

# metric MEMBER NAME: gpuledger_cluster_verdict_NAME (a counter's _total
# or a gauge) on the member's /metrics, 0 when absent.
metric() {
	eval "mp=\$port_$1"
	v=$(curl -s -m 2 -H 'Authorization: Bearer aud-token-0123456789' "http://127.0.0.1:$mp/metrics" |
		sed -n "s/^gpuledger_cluster_verdict_$2 \([0-9]*\)\$/\1/p")
	echo "${v:-0}"
}
moved() { [ "$(metric "$1" "$2")" -gt "$3" ]; }
# load PREFIX CLIENTS REQUESTS URLS [RETRY]: vclients.py, answers to
# $tmp/answers; RETRY of the requests (0.1) sent again with their uid.
load() {
	python3 "$here/cluster/vclients.py" --members "$4" --out "$tmp/answers" \
		--token adm-token-0123456789 --clients "$2" --requests "$3" --retry "${5:-0.1}" \
		--uid-prefix "$1" --timeout 12 ${SEED:+--seed "$SEED"} >"$tmp/$1.out" 2>&1
}
statuses() { # PREFIX: the statuses its answers got, sorted and counted
	jq -r --arg p "$1-" 'select(.uid | startswith($p)) | .status' "$tmp/answers" | sort | uniq -c | tr -s ' ' | tr '\n' ';'
}
m1url="http://127.0.0.1:$port_m1"
both="$m1url,http://127.0.0.1:$port_m2"

# ------------------------------------------------------ the pipeline runs
load pl 8 15 "$both"
is "spread: every answer 200" "$(jq -s '[.[] | select((.uid | startswith("pl-")) and .status != 200)] | length' "$tmp/answers")" 0
[ "$(metric m1 pipelined_total)" -gt 0 ] && ok ||
	bad "m1 committed no txn while another was in flight: $(metric m1 txns_total) txns"
[ "$(metric m1 groups_in_flight_max)" -gt 1 ] && ok ||
	bad "m1 never had two groups in flight"
echo "spread: $(metric m1 txns_total) txns, $(metric m1 pipelined_total) pipelined, at most $(metric m1 groups_in_flight_max) groups in flight"

# --------------------------------------------- txns reaching etcd out of order
# Every verdict txn compares P/open (rule 6); nothing else m1 sends names it.
open_b64=$(printf '%s' "$P/open" | base64)
e0=$(metric m1 early_total)
ctl mode p0 delay-once 400 "$open_b64"
load oo 8 25 "$m1url"
is "out of order: one txn held back" \
	"$(python3 "$harness" ctl "$tmp/etcd" stats p0 | jq .delayed_once)" 1
if moved m1 early_total "$e0"; then ok; else
	bad "no txn was sent again after its predecessor: $(grep -c 'sent again' "$tmp/m1.err") lines"
fi
is "out of order: every answer 200" "$(jq -s '[.[] | select((.uid | startswith("oo-")) and .status != 200)] | length' "$tmp/answers")" 0

# --------------------------------------------- a pipeline whose middle txn fails
c0=$(metric m1 chain_failed_total)
ctl mode p0 delay 60
# Every request sent again with its uid, at once at the other member:
# a txn built again on another tip must find the verdict a door recorded
# meanwhile (rule 3), never record its key twice.
load mf 8 25 "$both" 1 &
lpid=$!
sleep 1
i=0
while [ $i -lt 20 ] && ! moved m1 chain_failed_total "$c0"; do
	printf '{"time":"%s","type":"NOTE","code":"PipelineTest","kind":null,"name":"n%d","namespace":"default","message":"another writer"}\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$i" >"$tmp/obs"
	"$bin" cluster feed --etcd "$ETCD_URLS" --prefix $P --from "$tmp/obs" >>"$tmp/feed.out" 2>>"$tmp/feed.err" ||
		echo "feed $i: exit $?" >>"$tmp/feed.err"
	sleep 0.3
	i=$((i + 1))
done
wait "$lpid"
ctl mode p0 forward
if moved m1 chain_failed_total "$c0"; then ok; else
	bad "no txn chained on a failed one was built again ($i feeds: $(tail -2 "$tmp/feed.err" 2>/dev/null))"
fi
is "middle fails: only 200 and 503" \
	"$(jq -s '[.[] | select((.uid | startswith("mf-")) and .status != 200 and .status != 503)] | length' "$tmp/answers")" 0
echo "middle fails: $(statuses mf) $(metric m1 chain_failed_total) built again, $(metric m1 rejudged_total) judged again, $(metric m1 renumbered_total) re-numbered"

# ------------------------------------------------------ the whole history
at_head() {
	h=$(etcdctl --endpoints "$ETCD_URL0" get $P/head --print-value-only | jq .seq)
	[ "$(member_seq m1)" = "$h" ] && [ "$(member_seq m2)" = "$h" ]
}
wait_until 30 at_head || bad "the members did not reach P/head"
member_stop m1
member_stop m2
run python3 "$here/cluster/history.py" --bin "$bin" --answers "$tmp/answers" \
	--member "m1=$tmp/m1" --member "m2=$tmp/m2"
expect "history.py: the history holds" 0
[ "$rc" -eq 0 ] || grep -v '^ok' "$tmp/out" | head -20

echo "cluster_pipeline_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
