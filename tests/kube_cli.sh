#!/bin/sh
# Integration test of the live watcher (`gpuledger watch --kubeconfig`,
# ingest/kube*.c) against the test Kubernetes API server
# (tests/apiserver/fake_apiserver.py): TLS with a token, a token file that
# rotates, client certificates, pagination, watch streams cut at random
# bytes, bookmarks, 410 and ERROR events that relist and reconcile, dropped
# connections, 429/500 with Retry-After, SIGTERM, SIGKILL at random moments.
#
# The oracle is the server itself: after each step the objects it holds are
# listed with curl and replayed into a fresh ledger with `watch --from`; the
# watcher's ledger must reach the same `replay --json` (without seq, time and
# chainHead, which count NOTEs and TICKs). At the end the watcher's --record
# file replayed with `watch --from` must give the same state, and `verify`
# must pass on every ledger.
#
# Usage: tests/kube_cli.sh [PATH/TO/gpuledger]   (KEEP=1 keeps the temp dir)
# Needs python3, openssl, curl and jq.
set -u
bin=${1:-./gpuledger}
case $bin in /*) ;; *) bin=$(pwd)/$bin ;; esac
here=$(cd "$(dirname "$0")" && pwd)
srv=$here/apiserver/fake_apiserver.py
scen=$here/apiserver/scenarios/small.json
tmp=$(mktemp -d)
pids=""
token=s3cret

pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"

cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for c in python3 openssl curl jq; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "kube_cli: $c not found"
		echo "kube_cli: 0 passed, 1 failed"
		exit 1
	fi
done
# The watcher must have a live mode; without it there is nothing to test.
if ! "$bin" watch --help 2>/dev/null | grep -q -- --kubeconfig; then
	echo "kube_cli: $bin watch has no --kubeconfig (live mode): skipped"
	echo "kube_cli: 0 passed, 1 failed"
	exit 1
fi

# wait_until comes from tests/lib/cli.sh. The moments of section 10's
# kills are random, from a printed seed (SEED=N repeats them).
test_seed kube_cli

# ------------------------------------------------------------ certificates
# gen_ca and gen_cert come from tests/lib/cli.sh.
if ! gen_ca ca || ! gen_ca wrongca ||
	! gen_cert server ca /CN=127.0.0.1 \
		"subjectAltName=IP:127.0.0.1,DNS:localhost;extendedKeyUsage=serverAuth" ||
	! gen_cert client ca "/O=tenants/CN=watcher" "extendedKeyUsage=clientAuth"; then
	echo "FAIL: openssl could not make the certificates"
	echo "kube_cli: 0 passed, 1 failed"
	exit 1
fi

# ------------------------------------------------------------ the server
python3 "$srv" --port-file "$tmp/srv.port" --scenario "$scen" \
	--cert "$tmp/server.crt" --key "$tmp/server.key" \
	--client-ca "$tmp/ca.crt" --token "$token" --seed 3 \
	>"$tmp/srv.log" 2>&1 &
pids="$pids $!"
if ! wait_until 20 test -f "$tmp/srv.port"; then
	echo "FAIL: the API server did not start: $(cat "$tmp/srv.log")"
	echo "kube_cli: $pass passed, $((fail + 1)) failed"
	exit 1
fi
. "$tmp/srv.port"
cport=$control_port

ctl() { curl -sS -f -X POST --data-binary "$2" "http://127.0.0.1:$cport$1" >/dev/null; }
api() { curl -sS -f --cacert "$tmp/ca.crt" -H "Authorization: Bearer $token" "$@"; }
requests() { curl -sS -f "http://127.0.0.1:$cport/_control/requests" >"$tmp/req.json"; }
last_req() { requests && jq '.[-1].n' "$tmp/req.json"; }
# req_true EXPR: the jq expression holds on the request log.
req_true() { requests && jq -e "$1" "$tmp/req.json" >/dev/null; }

# ------------------------------------------------------------ kubeconfigs
b64() { base64 -w0 <"$1"; }
mkconf() { # FILE CLUSTER-YAML USER-YAML
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: $url
$2
users:
- name: w
  user:
$3
contexts:
- name: other
  context: {cluster: fake}
- name: fake
  context: {cluster: fake, user: w}
current-context: fake
EOF
}
printf '%s\n' "$token" >"$tmp/token"
mkconf "$tmp/kc" "    certificate-authority: ca.crt" "    tokenFile: token"
mkconf "$tmp/kc-cert" "    certificate-authority-data: $(b64 "$tmp/ca.crt")" \
	"    client-certificate-data: $(b64 "$tmp/client.crt")
    client-key-data: $(b64 "$tmp/client.key")"
mkconf "$tmp/kc-wrongca" "    certificate-authority: wrongca.crt" "    token: $token"

# ------------------------------------------------------------ the oracle
# truth: the server's objects now, as a recorded stream replayed into a fresh
# ledger; its normalised state goes to $tmp/truth.json.
truth_ca=$tmp/ca.crt
. "$here/apiserver/truth.sh"
# converge NAME DB: the watcher's ledger reaches the server's state.
converge() {
	if ! truth; then
		bad "$1: oracle failed: $(cat "$tmp/truth.err")"
		return
	fi
	if wait_until 30 same_as_truth "$2"; then ok; else
		bad "$1: ledger did not converge: $(diff "$tmp/got.json" "$tmp/truth.json" | head -20)"
	fi
}

# ------------------------------------------------------------ the watcher
wpid=""
start_watch() { # DB LOG ARGS...
	db=$1
	log=$2
	shift 2
	"$bin" watch --db "$db" "$@" >>"$log" 2>&1 &
	wpid=$!
	pids="$pids $wpid"
}
stop_watch() { # NAME: SIGTERM, and the watcher exits 0
	kill -TERM "$wpid"
	if wait "$wpid"; then ok; else bad "$1: exit status $? after SIGTERM"; fi
}

# Objects the steps change.
gpu_pod() { # NS NAME COUNT NODE PHASE
	echo "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"$1\"}, \"spec\": {\"nodeName\": \"$4\", \"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": {\"nvidia.com/GH100_H100_SXM5_80GB\": \"$3\"}}}]}, \"status\": {\"phase\": \"$5\"}}"
}
vmi() { # NS NAME COUNT
	echo "{\"apiVersion\": \"apps.cozystack.io/v1alpha1\", \"kind\": \"VMInstance\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"$1\"}, \"spec\": {\"gpus\": [{\"class\": \"h100\", \"count\": $3}]}}"
}
tenant() { # NAME BUDGET
	echo "{\"apiVersion\": \"apps.cozystack.io/v1alpha1\", \"kind\": \"Tenant\", \"metadata\": {\"name\": \"$1\", \"namespace\": \"tenant-root\"}, \"spec\": {\"resourceQuotas\": {\"h100.gpuclass.cozystack.io/devices\": \"$2\"}}}"
}
ev() { echo "{\"type\": \"$1\", \"object\": $2}"; }

db=$tmp/db
rec=$tmp/rec.ndjson
wlog=$tmp/watch.log

# --------------------------------------------------- 1. first sync over TLS
# Watch streams cut into chunks of 1..7 bytes anywhere; 700 more pods (a
# few with GPUs) make the pod list two pages of the watcher's 500.
ctl /_control/config '{"watch": {"chunking": "random", "max_chunk": 7, "bookmark_interval": 0.3}}'
python3 - >"$tmp/many.json" <<'EOF'
import json
pods = []
for i in range(700):
    gpu = {"limits": {"nvidia.com/GH100_H100_SXM5_80GB": "1"}} if i % 100 == 7 else {}
    pods.append({"type": "ADDED", "object": {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p-%03d" % i, "namespace": "tenant-beta" if i % 2 else "default"},
        "spec": {"nodeName": "gpu-node-%d" % (1 + i % 2),
                 "containers": [{"name": "c", "image": "x", "resources": gpu}]},
        "status": {"phase": "Running"}}})
print(json.dumps(pods))
EOF
ctl /_control/apply "@$tmp/many.json"
n0=$(last_req)
start_watch "$db" "$wlog" --kubeconfig "$tmp/kc" --record "$rec"
converge "first sync" "$db"
if req_true "[.[] | select(.n > $n0 and .path == \"/api/v1/pods\" and (.query | test(\"continue=\")))] | length == 1"; then ok; else
	bad "pods were not listed in two pages: $(jq -c '.[-12:]' "$tmp/req.json")"
fi
# Watches show in the log when they end: end them (cleanly, as at their
# timeoutSeconds) once all eight are open; the watcher watches again.
watches_open() {
	curl -sS -f "http://127.0.0.1:$cport/_control/state" | jq -e '.activeWatches >= 8' >/dev/null
}
wait_until 20 watches_open
ctl /_control/close-watches '{}'
if wait_until 20 req_true "[.[] | select(.n > $n0 and .watch and (.query | test(\"allowWatchBookmarks=true\")) and (.query | test(\"resourceVersion=[0-9]\")) and (.query | capture(\"timeoutSeconds=(?<t>[0-9]+)\").t | tonumber | . >= 300 and . < 600))] | length >= 8"; then ok; else
	bad "no watch with bookmarks from a list's resourceVersion: $(jq -c '.[-8:]' "$tmp/req.json")"
fi

# --------------------------------------------------- 2. changes while watching
ctl /_control/apply "[$(ev ADDED "$(gpu_pod tenant-acme train-1 3 gpu-node-1 Running)"),
	$(ev MODIFIED "$(vmi tenant-acme trainer 4)"),
	$(ev ADDED "$(tenant beta 5)"),
	$(ev DELETED "$(gpu_pod tenant-acme-dev notebook-0 1 gpu-node-2 Running)")]"
converge "watch events" "$db"
# Bookmarks arrive (interval 0.3 s) while nothing changes; they move the
# stored resourceVersion only, which the next converge proves harmless.
bookmarks() { curl -sS -f "http://127.0.0.1:$cport/_control/state" | jq '.bookmarksSent'; }
bookmarks_past() { [ "$(bookmarks)" -ge "$1" ]; }
b0=$(bookmarks)
if wait_until 20 bookmarks_past $((b0 + 8)); then ok; else
	bad "no bookmarks while nothing changed: $b0 -> $(bookmarks)"
fi
ctl /_control/apply "$(ev MODIFIED "$(gpu_pod tenant-acme train-1 3 gpu-node-1 Succeeded)")"
converge "after bookmarks" "$db"

# A new class names a raw resource that running pods already use: they
# become holders, although the engine never kept them (they held nothing).
raw_pod() { # NS NAME
	echo "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"$1\"}, \"spec\": {\"nodeName\": \"gpu-node-1\", \"containers\": [{\"name\": \"c\", \"resources\": {\"limits\": {\"example.com/gpu-b\": \"2\"}}}]}, \"status\": {\"phase\": \"Running\"}}"
}
ctl /_control/apply "[$(ev ADDED "$(raw_pod tenant-acme raw-1)"), $(ev ADDED "$(raw_pod tenant-beta raw-2)")]"
converge "pods of no class" "$db"
classes='{\"classes\": [{\"name\": \"h100\", \"resourceNames\": [\"nvidia.com/GH100_H100_SXM5_80GB\"], \"tolerations\": [{\"key\": \"nvidia.com/gpu\", \"operator\": \"Exists\", \"effect\": \"NoSchedule\"}]}, {\"name\": \"b\", \"resourceNames\": [\"example.com/gpu-b\"]}]}'
ctl /_control/apply "$(ev MODIFIED "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"gpu-classes\", \"namespace\": \"cozy-system\"}, \"data\": {\"classes.json\": \"$classes\"}}")"
converge "new class maps running pods" "$db"
if jq -e '[.tenants[] | select(.namespace == "tenant-acme" or .namespace == "tenant-beta") | .reserved.b] == [2, 2]' "$tmp/got.json" >/dev/null; then ok; else
	bad "pods of the new class not counted: $(jq -c '[.tenants[] | {namespace, reserved}]' "$tmp/got.json")"
fi

# --------------------------------------------------- 3. 429 and 500 with Retry-After
n0=$(last_req)
ctl /_control/fault '{"match": {"resource": "pods", "watch": true}, "times": 2, "status": 429, "retry_after": 1}'
ctl /_control/fault '{"match": {"resource": "vminstances", "watch": true}, "times": 1, "status": 500, "retry_after": 1}'
ctl /_control/close-watches '{}'
ctl /_control/apply "[$(ev ADDED "$(gpu_pod tenant-beta b-2 2 gpu-node-2 Running)"),
	$(ev ADDED "$(vmi tenant-beta v2 1)")]"
converge "429/500 then re-watch" "$db"
wait_until 20 watches_open
ctl /_control/close-watches '{}'
if wait_until 20 req_true "[.[] | select(.n > $n0 and .path == \"/api/v1/pods\" and .watch) | .status] | (index(429) // 1e9) as \$i | .[\$i:\$i + 2] == [429, 429] and (.[\$i + 2:] | index(200) != null)"; then ok; else
	bad "429s were not retried: $(jq -c "[.[] | select(.n > $n0 and .path == \"/api/v1/pods\") | [.n, .watch, .status]]" "$tmp/req.json")"
fi
check_gap() { # PATH: a failed watch, then another one
	requests && python3 - "$tmp/req.json" "$1" "$n0" <<'EOF'
import json, sys
reqs, path, n0 = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
st = [r["status"] for r in reqs if r["n"] > n0 and r["path"] == path and r["watch"]]
sys.exit(0 if 500 in st and 200 in st[st.index(500):] else 1)
EOF
}
if wait_until 20 check_gap /apis/apps.cozystack.io/v1alpha1/vminstances; then ok; else bad "500 on vminstances not seen"; fi
if grep -q "HTTP 429" "$wlog" && grep -q "retrying in" "$wlog"; then ok; else
	bad "429 not logged with its retry: $(tail -5 "$wlog")"
fi

# --------------------------------------------------- 4. disconnects
ctl /_control/fault '{"match": {"resource": "pods", "watch": true}, "disconnect_after_events": 1}'
ctl /_control/fault '{"match": {"resource": "namespaces", "watch": false}, "disconnect_after_bytes": 30}'
ctl /_control/apply "[$(ev ADDED "$(gpu_pod tenant-beta b-3 1 gpu-node-1 Running)"),
	$(ev ADDED "$(gpu_pod tenant-beta b-4 1 gpu-node-1 Running)"),
	$(ev DELETED "$(gpu_pod tenant-beta b-2 2 gpu-node-2 Running)")]"
converge "watch cut mid-event" "$db"
ctl /_control/close-watches '{"abrupt": true}'
ctl /_control/apply "$(ev MODIFIED "$(gpu_pod tenant-beta b-3 2 gpu-node-1 Running)")"
converge "abrupt close" "$db"

# --------------------------------------------------- 5. 410 -> relist that reconciles
# Every watch fails for a while; meanwhile objects are deleted and changed
# and the history is compacted, so the stored resourceVersions are too old.
gap_changes() { # VMI-COUNT BUDGET [MORE-EVENTS]
	gn=$(last_req)
	ctl /_control/fault '{"match": {"watch": true}, "times": 8, "status": 503, "retry_after": 2}'
	ctl /_control/close-watches '{}'
	# The changes come while the watches fail: after the first 503.
	wait_until 20 req_true "[.[] | select(.n > $gn and .watch and .status == 503)] | length >= 1" ||
		bad "gap: no watch failed with 503"
	ctl /_control/apply "[${3:+$3,} $(ev DELETED "$(gpu_pod tenant-beta b-4 1 gpu-node-1 Running)"),
		$(ev DELETED "$(vmi tenant-beta v2 1)"),
		$(ev MODIFIED "$(vmi tenant-acme trainer $1)"),
		$(ev MODIFIED "$(tenant beta $2)"),
		$(ev ADDED "$(gpu_pod tenant-acme "late-$1" 1 gpu-node-2 Running)")]"
	ctl /_control/compact ''
}
n0=$(last_req)
# A pod that holds nothing goes too: the engine never kept it (most pods
# never enter its cache), yet the record, which holds what it received,
# must say that it is gone. That DELETED line comes from the record's own
# view of what it holds (ingest/kube.c), not from what the relist
# released: the engine cannot report an object it never kept.
plain_pod() { # NS NAME
	echo "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"$2\", \"namespace\": \"$1\"}}"
}
gap_changes 1 3 "$(ev DELETED "$(plain_pod default p-000)")"
converge "410 relist" "$db"
if jq -e -s '[.[] | select(.type == "DELETED" and .object.kind == "Pod" and .object.metadata.name == "p-000" and .object.metadata.namespace == "default")] | length == 1' "$rec" >/dev/null; then ok; else
	bad "the record has no DELETED line for a vanished pod that held nothing"
fi
if "$bin" log --db "$db" | grep -q '"p-000"'; then
	bad "the ledger names p-000, a pod that held nothing"
else ok; fi
if grep -q "410 Gone: relisting" "$wlog"; then ok; else bad "no 410 relist in the log: $(tail -5 "$wlog")"; fi
# A 410 answer relists at once: it is never retried with backoff.
if grep -q "HTTP 410" "$wlog"; then
	bad "a 410 answer was retried with backoff: $(grep "HTTP 410" "$wlog" | head -3)"
else ok; fi
if req_true "[.[] | select(.n > $n0 and .watch == false and .path == \"/api/v1/pods\")] | length >= 1"; then ok; else
	bad "pods were not listed again after 410"
fi

# --------------------------------------------------- 6. ERROR event -> relist
ctl /_control/config '{"watch": {"too_old": "event"}}'
ctl /_control/apply "$(ev ADDED "$(gpu_pod tenant-beta b-4 1 gpu-node-1 Running)")"
ctl /_control/apply "$(ev ADDED "$(vmi tenant-beta v2 2)")"
converge "before ERROR" "$db"
gap_changes 3 2
converge "ERROR event relist" "$db"
if grep -q "watch ERROR 410" "$wlog"; then ok; else bad "no ERROR event in the log: $(tail -5 "$wlog")"; fi
# A 410 ERROR relists at once (every ERROR of this test is a 410): no
# backoff is logged for it.
if grep -q "relisting after a watch ERROR" "$wlog"; then
	bad "a 410 ERROR waited with backoff: $(grep "relisting after a watch ERROR" "$wlog" | head -3)"
else ok; fi
ctl /_control/config '{"watch": {"too_old": "status"}}'

# --------------------------------------------------- 7. token rotation
# The server takes a new token; the watcher gets 401s until the token file
# holds it, then goes on without a restart.
ctl /_control/config '{"auth": {"token": "rotated"}}'
token=rotated
ctl /_control/close-watches '{}'
ctl /_control/apply "$(ev ADDED "$(gpu_pod tenant-acme rot-1 1 gpu-node-1 Running)")"
# The new token is written once the watcher has been refused with the old.
n401=$(grep -c "HTTP 401" "$wlog")
more_401() { [ "$(grep -c "HTTP 401" "$wlog")" -gt "$n401" ]; }
wait_until 20 more_401
printf 'rotated\n' >"$tmp/token"
converge "rotated token" "$db"
if grep -q "HTTP 401" "$wlog"; then ok; else bad "no 401 before the rotation"; fi

stop_watch "first watcher"
if "$bin" verify --db "$db" >"$tmp/verify.out" 2>&1; then ok; else
	bad "verify: $(cat "$tmp/verify.out")"
fi

# --------------------------------------------------- 8. the record replays
rm -rf "$tmp/recdb"
if "$bin" watch --db "$tmp/recdb" --no-sync --from "$rec" \
	>/dev/null 2>"$tmp/rec.err"; then ok; else bad "watch --from the record: $(cat "$tmp/rec.err")"; fi
if norm "$db" >"$tmp/a.json" && norm "$tmp/recdb" >"$tmp/b.json" &&
	cmp -s "$tmp/a.json" "$tmp/b.json"; then ok; else
	bad "record replay differs: $(diff "$tmp/a.json" "$tmp/b.json" | head -20)"
fi
if jq -e -s 'all(.[]; has("time") and has("type") and (.object | has("apiVersion") and has("kind")))' "$rec" >/dev/null; then ok; else
	bad "record lines lack time/type/apiVersion/kind"
fi

# A record ahead of its ledger, as a watcher killed after flushing its
# record and before its commit leaves it (the record is flushed first, so
# that it never lags): the record holds an object the ledger never had.
# The next start reads the record, so that its first relist writes the
# DELETED line that the engine, which never had the object, cannot.
rm -rf "$tmp/aheaddb"
printf '%s\n' "{\"type\": \"ADDED\", \"object\": $(gpu_pod tenant-acme ghost 2 gpu-node-1 Running), \"time\": \"2026-01-01T00:00:00Z\"}" >"$tmp/ahead.ndjson"
truth
start_watch "$tmp/aheaddb" "$tmp/ahead.log" --kubeconfig "$tmp/kc" --record "$tmp/ahead.ndjson"
if wait_until 30 same_as_truth "$tmp/aheaddb"; then ok; else bad "record ahead: $(tail -3 "$tmp/ahead.log")"; fi
stop_watch "record ahead"
if jq -e -s '[.[] | select(.type == "DELETED" and .object.metadata.name == "ghost")] | length == 1' "$tmp/ahead.ndjson" >/dev/null; then ok; else
	bad "record ahead: no DELETED line for the object only the record held"
fi
rm -rf "$tmp/aheadrec"
if "$bin" watch --db "$tmp/aheadrec" --no-sync --from "$tmp/ahead.ndjson" >/dev/null 2>"$tmp/ahead.err" &&
	norm "$tmp/aheaddb" >"$tmp/a.json" && norm "$tmp/aheadrec" >"$tmp/b.json" &&
	cmp -s "$tmp/a.json" "$tmp/b.json"; then ok; else
	bad "record ahead replays differently: $(cat "$tmp/ahead.err"; diff "$tmp/a.json" "$tmp/b.json" | head -20)"
fi

# --------------------------------------------------- 9. other credentials
# Inline client certificate and CA (no token), a non-current context, and
# insecure-skip-tls-verify with its warning.
ctl /_control/config '{"watch": {"chunking": "event"}}'
truth
start_watch "$tmp/db-cert" "$tmp/cert.log" --kubeconfig "$tmp/kc-cert" --tick 1
if wait_until 30 same_as_truth "$tmp/db-cert"; then ok; else bad "client certificate: $(tail -3 "$tmp/cert.log")"; fi
# A quiet cluster, every watch healthy: TICKs mark the time (--tick 1).
has_tick() { "$bin" log --db "$tmp/db-cert" | grep -q '"type":"TICK"'; }
if wait_until 10 has_tick; then ok; else bad "no TICK in a quiet cluster"; fi
stop_watch "client certificate"
mkconf "$tmp/kc-insecure" "    insecure-skip-tls-verify: true" "    token: $token"
start_watch "$tmp/db-insecure" "$tmp/insecure.log" --kubeconfig "$tmp/kc-insecure"
if wait_until 30 same_as_truth "$tmp/db-insecure"; then ok; else bad "insecure: $(tail -3 "$tmp/insecure.log")"; fi
stop_watch "insecure"
if grep -q "insecure-skip-tls-verify" "$tmp/insecure.log"; then ok; else bad "no warning for insecure-skip-tls-verify"; fi
# A server its CA did not sign: nothing is written, errors are retried,
# SIGTERM still ends it cleanly.
start_watch "$tmp/db-wrongca" "$tmp/wrongca.log" --kubeconfig "$tmp/kc-wrongca"
if wait_until 10 grep -qi "certificate" "$tmp/wrongca.log"; then ok; else bad "wrong CA not reported: $(cat "$tmp/wrongca.log")"; fi
stop_watch "wrong CA"
# The context without a user is anonymous: 401s, retried, no crash.
start_watch "$tmp/db-anon" "$tmp/anon.log" --kubeconfig "$tmp/kc" --context other
if wait_until 10 grep -q "HTTP 401" "$tmp/anon.log"; then ok; else bad "anonymous context: $(cat "$tmp/anon.log")"; fi
stop_watch "anonymous"
if "$bin" watch --db "$tmp/db-x" --kubeconfig "$tmp/kc" --context nosuch \
	>"$tmp/ctx.out" 2>&1; then
	bad "an unknown context was accepted"
elif grep -q 'no context named "nosuch"' "$tmp/ctx.out"; then ok; else
	bad "unknown context error: $(cat "$tmp/ctx.out")"
fi

# --------------------------------------------------- 10. SIGKILL at random moments
# A watcher killed anywhere and started again loses and repeats nothing:
# its ledger ends equal to the server's state, its chain verifies, and its
# record (appended across restarts) replays to the same state.
ctl /_control/config '{"watch": {"chunking": "random", "max_chunk": 64}}'
kdb=$tmp/kdb
krec=$tmp/krec.ndjson
i=0
while [ $i -lt 8 ]; do
	start_watch "$kdb" "$tmp/kill.log" --kubeconfig "$tmp/kc" --record "$krec"
	ctl /_control/apply "[$(ev ADDED "$(gpu_pod tenant-beta "k-$i" $((i % 3 + 1)) gpu-node-1 Running)"),
		$(ev MODIFIED "$(vmi tenant-acme trainer $((i % 4 + 1)))")]"
	[ $i -ge 2 ] && ctl /_control/apply "$(ev DELETED "$(gpu_pod tenant-beta "k-$((i - 2))" 1 gpu-node-1 Running)")"
	[ $((i % 3)) -eq 1 ] && ctl /_control/compact ''
	rnd 10
	sleep "0.$r" # a random moment to kill at (the seed), not a wait
	kill -9 "$wpid"
	wait "$wpid" 2>/dev/null
	i=$((i + 1))
done
start_watch "$kdb" "$tmp/kill.log" --kubeconfig "$tmp/kc" --record "$krec"
converge "after SIGKILLs" "$kdb"
stop_watch "after SIGKILLs"
if "$bin" verify --db "$kdb" >"$tmp/verify.out" 2>&1; then ok; else
	bad "verify after SIGKILLs: $(cat "$tmp/verify.out")"
fi
rm -rf "$tmp/krecdb"
if "$bin" watch --db "$tmp/krecdb" --no-sync --from "$krec" >/dev/null 2>"$tmp/krec.err"; then ok; else
	bad "watch --from the record across restarts: $(cat "$tmp/krec.err")"
fi
if norm "$kdb" >"$tmp/a.json" && norm "$tmp/krecdb" >"$tmp/b.json" &&
	cmp -s "$tmp/a.json" "$tmp/b.json"; then ok; else
	bad "record across restarts replays differently: $(diff "$tmp/a.json" "$tmp/b.json" | head -20)"
fi

# --------------------------------------------------- 11. wall-clock steps
# DESIGN 4.1: the watcher under libfaketime, only CLOCK_REALTIME faked,
# whose wall clock jumps a day ahead, then a day behind the real time, while
# objects arrive. Events are dated from CLOCK_MONOTONIC: the ledger's time
# spans at most the real elapsed time plus 1 s per event, and each step is
# a NOTE ClockStep.
ftlib=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -n 1)
ctl /_control/config '{"watch": {"chunking": "event"}}'
echo "+0" >"$tmp/faketime"
has_pod() { # DB NAME
	"$bin" log --db "$1" | grep -q "\"name\":\"$2\".*\"type\":\"ALLOC\""
}
clock_steps() { # N: the clock ledger holds at least N ClockStep NOTEs
	[ "$("$bin" log --db "$tmp/db-clock" | grep -c '"code":"ClockStep"')" -ge "$1" ]
}
if [ -z "$ftlib" ]; then
	bad "clock: libfaketime not found (tools/install-deps.sh installs it)"
else
	r0=$(date +%s%N)
	env LD_PRELOAD="$ftlib" FAKETIME_TIMESTAMP_FILE="$tmp/faketime" \
		FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1 \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$bin" watch --db "$tmp/db-clock" --kubeconfig "$tmp/kc" --tick 1 \
		>>"$tmp/clock.log" 2>&1 &
	wpid=$!
	pids="$pids $wpid"
	converge "clock: first sync" "$tmp/db-clock"
	steps=0
	for step in +1d -1d; do
		name=$([ "$step" = +1d ] && echo -ahead || echo -behind)
		echo "$step" >"$tmp/faketime"
		# The watcher notes the step at its next tick (--tick 1).
		steps=$((steps + 1))
		wait_until 20 clock_steps "$steps" ||
			bad "clock: the $step step was not noted: $(tail -3 "$tmp/clock.log")"
		ctl /_control/apply "$(ev ADDED "$(gpu_pod tenant-beta "clock$name" 1 gpu-node-2 Running)")"
		if wait_until 20 has_pod "$tmp/db-clock" "clock$name"; then ok; else
			bad "clock: pod after the $step step not seen: $(tail -3 "$tmp/clock.log")"
		fi
	done
	stop_watch "clock"
	r1=$(date +%s%N)
	"$bin" log --db "$tmp/db-clock" >"$tmp/clock.events"
	n=$(grep -c '"code":"ClockStep"' "$tmp/clock.events")
	[ "$n" -ge 2 ] && ok || bad "clock: $n ClockStep NOTEs, want one per step"
	if python3 - "$tmp/clock.events" "$r0" "$r1" <<'EOF'
import datetime, json, sys
evs = [json.loads(l) for l in open(sys.argv[1])]
def ns(t):
    d = datetime.datetime.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")
    d = d.replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 10**9 + int(t[20:29])
span = ns(evs[-1]["time"]) - ns(evs[0]["time"])
real = int(sys.argv[3]) - int(sys.argv[2])
limit = real + len(evs) * 10**9
print("clock: ledger span %.3f s, real %.3f s, %d events"
      % (span / 1e9, real / 1e9, len(evs)))
sys.exit(0 if 0 <= span <= limit else 1)
EOF
	then ok; else bad "clock: the ledger's time ran ahead of real time"; fi
fi

echo "kube_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
