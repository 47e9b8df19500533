#!/bin/sh
# Integration test of the test Kubernetes API server
# (tests/apiserver/fake_apiserver.py), which gpuledger's watcher is tested
# against.  It must speak the real protocol, so the real kubectl is its first
# client; tests/apiserver/probe.py, a raw HTTP/1.1 client, checks the framing
# that kubectl and curl hide (chunk boundaries, cuts, terminating chunk).
#
# Usage: tests/apiserver_cli.sh [PATH/TO/gpuledger]   (the binary is unused)
# Needs python3, openssl and curl; the kubectl checks are skipped, with a
# note, when kubectl is not on the PATH.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srv=$here/apiserver/fake_apiserver.py
probe=$here/apiserver/probe.py
scen=$here/apiserver/scenarios/small.json
scen2=$here/apiserver/scenarios/faults.ndjson
tmp=$(mktemp -d)
pids=""
token=s3cret

cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

pass=0
fail=0
. "$(dirname "$0")/lib/cli.sh"

# check NAME COMMAND...: the command must succeed.
check() {
	name=$1
	shift
	if "$@" >"$tmp/check.out" 2>&1; then ok; else
		bad "$name: $(head -c 600 "$tmp/check.out")"
	fi
}

# jtrue FILE EXPR: the Python expression EXPR holds for d, the JSON in FILE.
# Also offers ev (the NDJSON lines of FILE, when it is NDJSON) and docs (the
# JSON documents of FILE one after another, as kubectl prints them).
jtrue() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
text = open(sys.argv[1], encoding="utf-8").read()
docs, i, dec = [], 0, json.JSONDecoder()
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    obj, i = dec.raw_decode(text, i)
    docs.append(obj)
d = docs[0] if docs else None
ev = docs
ok = eval(sys.argv[2])
if not ok:
    print("false:", sys.argv[2], "on", text[:400])
sys.exit(0 if ok else 1)
EOF
}

# wait_until COMMAND...: poll, at most 100 times 0.1 s.
wait_until() {
	n=0
	while [ $n -lt 100 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n + 1))
	done
	return 1
}

# start NAME ARGS...: start a server; sets port, cport, url.
start() {
	name=$1
	shift
	rm -f "$tmp/$name.port"
	python3 "$srv" --port-file "$tmp/$name.port" "$@" \
		>"$tmp/$name.log" 2>&1 &
	pids="$pids $!"
	last_pid=$!
	if ! wait_until test -f "$tmp/$name.port"; then
		echo "FAIL: server $name did not start: $(cat "$tmp/$name.log")"
		exit 1
	fi
	control_port=
	url=
	# shellcheck source=/dev/null
	. "$tmp/$name.port"
	cport=$control_port
}

ctl() { curl -sS -f -X POST --data-binary "$2" "http://127.0.0.1:$cport$1"; }
state() { curl -sS -f "http://127.0.0.1:$cport/_control/state" >"$tmp/state.json"; }
requests() { curl -sS -f "http://127.0.0.1:$cport/_control/requests" >"$tmp/req.json"; }
state_has() { state && jtrue "$tmp/state.json" "$1"; }
api() { curl -sS --cacert "$tmp/ca.crt" -H "Authorization: Bearer $token" "$@"; }
prb() { python3 "$probe" --cacert "$tmp/ca.crt" --token "$token" "$@"; }

# ---------------------------------------------------------------- certificates
# A CA, a server certificate for 127.0.0.1, a client certificate from the same
# CA, and a second, unrelated CA with its own client certificate.
# gen_ca and gen_cert come from tests/lib/cli.sh.
if ! gen_ca ca || ! gen_ca wrongca ||
	! gen_cert server ca /CN=127.0.0.1 \
		"subjectAltName=IP:127.0.0.1,DNS:localhost;extendedKeyUsage=serverAuth" ||
	! gen_cert client ca "/O=tenants/CN=tester" "extendedKeyUsage=clientAuth" ||
	! gen_cert wrongclient wrongca /CN=intruder "extendedKeyUsage=clientAuth"; then
	echo "FAIL: openssl could not make the certificates"
	exit 1
fi

start main --scenario "$scen" --cert "$tmp/server.crt" --key "$tmp/server.key" \
	--client-ca "$tmp/ca.crt" --token "$token" --seed 7
main_pid=$last_pid
main_url=$url
main_cport=$cport

# The scenario's timeline labels gpu-node-2 0.2 s after start (rv 19 + 1),
# and adds namespace tenant-late when the first API request arrives.
check "timed timeline entry applied" wait_until state_has 'd["resourceVersion"] == "20"'
api -o /dev/null "$main_url/version"
check "request-count timeline entry applied" state_has 'd["resourceVersion"] == "21" and d["objects"]["namespaces"] == 7'

# ------------------------------------------------------------- kubectl checks
mkconf() { # FILE CA-FILE AUTH-YAML
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: $main_url
    certificate-authority: $2
users:
- name: tester
  user:
$3
contexts:
- name: fake
  context: {cluster: fake, user: tester}
current-context: fake
EOF
}
mkconf "$tmp/kc" "$tmp/ca.crt" "    token: $token"
mkconf "$tmp/kc-notoken" "$tmp/ca.crt" "    username: nobody"
mkconf "$tmp/kc-cert" "$tmp/ca.crt" "    client-certificate: $tmp/client.crt
    client-key: $tmp/client.key"
mkconf "$tmp/kc-wrongca" "$tmp/wrongca.crt" "    token: $token"

kc() { # KUBECONFIG ARGS...
	conf=$1
	shift
	HOME=$tmp KUBECONFIG=$conf timeout 30 kubectl --cache-dir "$tmp/kcache" \
		--request-timeout=20s "$@"
}

# Pod keys ("ns/name", sorted) of the scenario, for comparisons.
python3 - "$scen" >"$tmp/want_pods" <<'EOF'
import json, sys
sc = json.load(open(sys.argv[1]))
print(json.dumps(sorted(o["metadata"]["namespace"] + "/" + o["metadata"]["name"]
                        for o in sc["objects"] if o["kind"] == "Pod")))
EOF
want_pods=$(cat "$tmp/want_pods")
pods_expr="sorted(i['metadata']['namespace']+'/'+i['metadata']['name'] for i in d['items']) == $want_pods"

kubectl_checks() {
	kc "$tmp/kc" get pods -A -o json >"$tmp/pods.json" 2>"$tmp/err"
	check "kubectl get pods -A" jtrue "$tmp/pods.json" \
		"$pods_expr and all(i['metadata']['resourceVersion'].isdigit() and i['kind'] == 'Pod' for i in d['items'])"

	# Pagination: kubectl follows the continue tokens, limit=2 per page.
	requests && n0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["n"])' "$tmp/req.json")
	kc "$tmp/kc" get pods -A --chunk-size=2 -o json >"$tmp/pods2.json" 2>"$tmp/err"
	check "kubectl --chunk-size=2" jtrue "$tmp/pods2.json" "$pods_expr"
	requests
	check "pages of 2 with continue" jtrue "$tmp/req.json" \
		"len([r for r in d if r['n'] > $n0 and r['path'] == '/api/v1/pods' and 'limit=2' in r['query']]) == 3 and len([r for r in d if r['n'] > $n0 and 'continue=' in r['query']]) == 2"

	kc "$tmp/kc" get namespaces >"$tmp/ns.txt" 2>"$tmp/err"
	check "kubectl get namespaces" sh -c "grep -q '^NAME' '$tmp/ns.txt' &&
		for n in tenant-root tenant-acme tenant-acme-dev tenant-beta cozy-system default tenant-late; do
			grep -q \"^\$n \" '$tmp/ns.txt' || exit 1; done"

	kc "$tmp/kc" get vminstances.apps.cozystack.io -A -o json >"$tmp/vmi.json" 2>"$tmp/err"
	check "kubectl get vminstances" jtrue "$tmp/vmi.json" \
		"[(i['kind'], i['metadata']['namespace'], i['metadata']['name'], i['spec']['gpus']) for i in d['items']] == [('VMInstance', 'tenant-acme', 'trainer', [{'class': 'h100', 'count': 2}])]"

	kc "$tmp/kc" get configmaps -A --field-selector metadata.name=gpu-classes -o json >"$tmp/cm.json" 2>"$tmp/err"
	check "kubectl configmaps field selector" jtrue "$tmp/cm.json" \
		"[i['metadata']['namespace'] + '/' + i['metadata']['name'] for i in d['items']] == ['cozy-system/gpu-classes'] and 'classes.json' in d['items'][0]['data']"

	kc "$tmp/kc" get nodes -l late=yes -o name >"$tmp/nodes.txt" 2>"$tmp/err"
	check "kubectl label selector sees the timeline change" \
		sh -c "[ \"\$(cat '$tmp/nodes.txt')\" = node/gpu-node-2 ]"

	kc "$tmp/kc" get pod -n tenant-acme web-5d8f7 -o json >"$tmp/pod.json" 2>"$tmp/err"
	check "kubectl get one pod" jtrue "$tmp/pod.json" "d['metadata']['name'] == 'web-5d8f7' and d['kind'] == 'Pod'"
	if kc "$tmp/kc" get pod -n tenant-acme nosuch >/dev/null 2>"$tmp/err"; then
		bad "kubectl get of a missing pod succeeded"
	else
		check "kubectl NotFound" grep -q 'pods "nosuch" not found' "$tmp/err"
	fi

	kubectl_watch
	kubectl_auth

	# 429 with Retry-After: client-go waits and retries, kubectl succeeds.
	ctl /_control/fault '{"match": {"resource": "pods", "watch": false}, "status": 429, "retry_after": 1}' >/dev/null
	requests && n0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[-1]["n"])' "$tmp/req.json")
	kc "$tmp/kc" get pods -A -o json >"$tmp/pods429.json" 2>"$tmp/err"
	check "kubectl retries after 429" jtrue "$tmp/pods429.json" "$pods_expr"
	requests
	check "429 then 200 in the log" jtrue "$tmp/req.json" \
		"[r['status'] for r in d if r['n'] > $n0 and r['path'] == '/api/v1/pods'] == [429, 200]"
}

kubectl_watch() {
	# A watch prints the changes the test makes through the control port;
	# the stream is cut into chunks of 1..5 bytes, which kubectl reassembles.
	ctl /_control/config '{"watch": {"chunking": "random", "max_chunk": 5}}' >/dev/null
	state && w0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchesStarted"])' "$tmp/state.json")
	# Not through kc: $! must be timeout's pid, which passes our kill on.
	HOME=$tmp KUBECONFIG=$tmp/kc timeout 30 kubectl --cache-dir "$tmp/kcache" \
		get pods -A --watch -o json --output-watch-events \
		>"$tmp/watch.out" 2>"$tmp/watch.err" &
	kpid=$!
	pids="$pids $kpid"
	check "kubectl watch started" wait_until state_has "d['watchesStarted'] > $w0 and d['activeWatches'] >= 1"
	pod='{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "new-pod", "namespace": "tenant-beta"}, "spec": {"nodeName": "gpu-node-1", "containers": []}, "status": {"phase": "PHASE"}}'
	ctl /_control/apply "[{\"type\": \"ADDED\", \"object\": $(echo "$pod" | sed s/PHASE/Pending/)},
		{\"type\": \"MODIFIED\", \"object\": $(echo "$pod" | sed s/PHASE/Running/)},
		{\"type\": \"DELETED\", \"object\": $(echo "$pod" | sed s/PHASE/Running/)}]" >/dev/null
	check "kubectl watch printed three events" wait_until \
		sh -c "[ \$(grep -c new-pod '$tmp/watch.out') -ge 3 ]"
	kill "$kpid" 2>/dev/null
	wait "$kpid" 2>/dev/null
	check "the server ends the watch of a client that left" \
		wait_until state_has "d['activeWatches'] == 0"
	ctl /_control/config '{"watch": {"chunking": "event"}}' >/dev/null
	n=$(wc -l <"$want_pods_n")
	check "watch events: initial ADDED, then ours in order" jtrue "$tmp/watch.out" \
		"[e['type'] for e in ev] == ['ADDED'] * $n + ['ADDED', 'MODIFIED', 'DELETED'] and [e['object']['status']['phase'] for e in ev[-3:]] == ['Pending', 'Running', 'Running'] and len({e['object']['metadata']['resourceVersion'] for e in ev[-3:]}) == 3"

	# The server ends the next watch after one event: kubectl exits by itself.
	ctl /_control/fault '{"match": {"resource": "pods", "watch": true}, "end_after_events": 1}' >/dev/null
	state && w0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchesStarted"])' "$tmp/state.json")
	HOME=$tmp KUBECONFIG=$tmp/kc timeout 30 kubectl --cache-dir "$tmp/kcache" \
		get pods -n tenant-acme --watch -o json >"$tmp/watch2.out" 2>"$tmp/watch2.err" &
	kpid=$!
	pids="$pids $kpid"
	check "second watch started" wait_until state_has "d['watchesStarted'] > $w0"
	ctl /_control/apply '{"type": "MODIFIED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-5d8f7", "namespace": "tenant-acme", "labels": {"app": "web", "rev": "2"}}, "spec": {"nodeName": "gpu-node-2", "containers": []}, "status": {"phase": "Running"}}}' >/dev/null
	if wait "$kpid"; then ok; else bad "kubectl watch did not end cleanly: $(cat "$tmp/watch2.err")"; fi
	check "ended watch printed the change" jtrue "$tmp/watch2.out" \
		"docs[-1]['metadata']['labels'].get('rev') == '2' and len(docs) == 3"
}

kubectl_auth() {
	if kc "$tmp/kc-notoken" get pods -A >/dev/null 2>"$tmp/err"; then
		bad "kubectl without a token succeeded"
	else
		check "kubectl without token: Unauthorized" grep -qi 'unauthorized\|must be logged in' "$tmp/err"
	fi
	kc "$tmp/kc-cert" get pods -A -o json >"$tmp/podscert.json" 2>"$tmp/err"
	check "kubectl with a client certificate" jtrue "$tmp/podscert.json" "$pods_expr"
	if kc "$tmp/kc-wrongca" get pods -A >/dev/null 2>"$tmp/err"; then
		bad "kubectl trusted a server its CA did not sign"
	else
		check "kubectl wrong CA: x509 error" grep -q 'certificate signed by unknown authority' "$tmp/err"
	fi
}

want_pods_n=$tmp/want_pods_lines
python3 -c 'import json,sys; [print(p) for p in json.load(open(sys.argv[1]))]' "$tmp/want_pods" >"$want_pods_n"
if command -v kubectl >/dev/null 2>&1; then
	kubectl_checks
else
	bad "kubectl not found (tools/install-deps.sh installs kubernetes-client)"
fi

# The watch above left a modified web pod and added/deleted new-pod; every
# check below reads the server with curl or the raw probe.

# ------------------------------------------------------------- lists and auth
api -o "$tmp/l.json" "$main_url/api/v1/pods"
check "list: kind, rv, items without typemeta (built-in)" jtrue "$tmp/l.json" \
	"d['kind'] == 'PodList' and d['apiVersion'] == 'v1' and d['metadata']['resourceVersion'].isdigit() and all('kind' not in i and 'apiVersion' not in i for i in d['items'])"
api -o "$tmp/l.json" "$main_url/apis/apps.cozystack.io/v1alpha1/namespaces/tenant-acme-dev/kubernetesnodeses"
check "custom resource items keep typemeta" jtrue "$tmp/l.json" \
	"d['kind'] == 'KubernetesNodesList' and [i['kind'] for i in d['items']] == ['KubernetesNodes']"
api -o "$tmp/l.json" "$main_url/apis/resource.k8s.io/v1/resourceclaims"
check "resourceclaims list" jtrue "$tmp/l.json" "len(d['items']) == 1 and d['apiVersion'] == 'resource.k8s.io/v1'"
api -o "$tmp/l.json" "$main_url/api/v1/namespaces/cozy-system/configmaps?fieldSelector=metadata.name%3Dgpu-classes"
check "namespaced configmap field selector" jtrue "$tmp/l.json" "[i['metadata']['name'] for i in d['items']] == ['gpu-classes']"
api -o "$tmp/l.json" -w '%{http_code}' "$main_url/api/v1/pods?fieldSelector=spec.bogus%3Dx" >"$tmp/code"
check "unsupported field selector: 400" jtrue "$tmp/l.json" "d['code'] == 400 and 'field label not supported' in d['message']"

curl -sS --cacert "$tmp/ca.crt" -o "$tmp/l.json" -w '%{http_code}' "$main_url/api/v1/pods" >"$tmp/code"
check "no token: 401 Status" jtrue "$tmp/l.json" \
	"d['kind'] == 'Status' and d['code'] == 401 and d['reason'] == 'Unauthorized' and open('$tmp/code').read() == '401'"
curl -sS --cacert "$tmp/ca.crt" -H "Authorization: Bearer wrong" -o /dev/null -w '%{http_code}' "$main_url/api/v1/pods" >"$tmp/code"
check "wrong token: 401" grep -qx 401 "$tmp/code"
curl -sS --cacert "$tmp/ca.crt" --cert "$tmp/client.crt" --key "$tmp/client.key" -o "$tmp/l.json" "$main_url/api/v1/nodes"
check "client certificate authenticates" jtrue "$tmp/l.json" "d['kind'] == 'NodeList' and len(d['items']) == 2"
if curl -sS --cacert "$tmp/ca.crt" --cert "$tmp/wrongclient.crt" --key "$tmp/wrongclient.key" -o /dev/null "$main_url/api/v1/nodes" 2>/dev/null; then
	bad "a client certificate from another CA was accepted"
else ok; fi
if curl -sS --cacert "$tmp/wrongca.crt" -o /dev/null "$main_url/version" 2>"$tmp/err"; then
	bad "curl trusted a server its CA did not sign"
else ok; fi

# ------------------------------------------------------------------ pagination
api -o "$tmp/p1.json" "$main_url/api/v1/pods?limit=2"
check "page 1" jtrue "$tmp/p1.json" "len(d['items']) == 2 and d['metadata']['continue'] and d['metadata']['remainingItemCount'] == 3"
tok=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["continue"])' "$tmp/p1.json")
# A change between pages does not show: the pages are one snapshot.
ctl /_control/apply '{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "aaa-late", "namespace": "tenant-zzz"}}}' >/dev/null
api -o "$tmp/p2.json" "$main_url/api/v1/pods?limit=10&continue=$tok"
check "page 2: the rest of the same snapshot" jtrue "$tmp/p2.json" \
	"len(d['items']) == 3 and 'continue' not in d['metadata'] and d['metadata']['resourceVersion'] == json.load(open('$tmp/p1.json'))['metadata']['resourceVersion']"
api -o "$tmp/l.json" "$main_url/api/v1/pods?limit=2&continue=garbage"
check "invalid continue: 400" jtrue "$tmp/l.json" "d['code'] == 400"
ctl /_control/compact '' >/dev/null
api -o "$tmp/l.json" -w '%{http_code}' "$main_url/api/v1/pods?limit=2&continue=$tok" >"$tmp/code"
check "expired continue: 410 Expired" jtrue "$tmp/l.json" \
	"d['kind'] == 'Status' and d['code'] == 410 and d['reason'] == 'Expired' and open('$tmp/code').read() == '410'"

# --------------------------------------------------------------------- watches
state
rv_now=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["resourceVersion"])' "$tmp/state.json")
prb "$main_url/api/v1/pods?watch=true&resourceVersion=1" >"$tmp/w.json"
check "watch from a compacted rv: HTTP 410 Expired" jtrue "$tmp/w.json" \
	"d['status'] == 410 and d['json']['reason'] == 'Expired' and d['json']['code'] == 410 and d['json']['kind'] == 'Status'"
ctl /_control/config '{"watch": {"too_old": "event"}}' >/dev/null
prb "$main_url/api/v1/pods?watch=1&resourceVersion=1" >"$tmp/w.json"
check "ERROR event mode" jtrue "$tmp/w.json" \
	"d['status'] == 200 and d['complete'] and [e['type'] for e in d['events']] == ['ERROR'] and d['events'][0]['object']['code'] == 410 and d['events'][0]['object']['reason'] == 'Expired' and 'too old resource version' in d['events'][0]['object']['message']"
ctl /_control/config '{"watch": {"too_old": "status"}}' >/dev/null

# Resuming at the current rv sees only later changes.
ctl /_control/apply '{"type": "DELETED", "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "aaa-late", "namespace": "tenant-zzz"}}}' >/dev/null
ctl /_control/apply '{"type": "ADDED", "object": {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-node"}}}' >/dev/null
prb "$main_url/api/v1/pods?watch=1&resourceVersion=$rv_now&timeoutSeconds=1" >"$tmp/w.json"
check "resume: only the later pod change, then the stream ends" jtrue "$tmp/w.json" \
	"d['complete'] and [(e['type'], e['object']['metadata']['name']) for e in d['events']] == [('DELETED', 'aaa-late')] and d['events'][0]['object']['metadata']['resourceVersion'] == str($rv_now + 1)"

# Bookmarks when asked for (the scenario sets a 0.5 s interval), none else.
prb "$main_url/api/v1/namespaces/tenant-acme/pods?watch=1&resourceVersion=$rv_now&allowWatchBookmarks=true&timeoutSeconds=2" >"$tmp/w.json"
check "bookmarks" jtrue "$tmp/w.json" \
	"d['complete'] and len(d['events']) >= 2 and all(e['type'] == 'BOOKMARK' and e['object'] == {'kind': 'Pod', 'apiVersion': 'v1', 'metadata': {'resourceVersion': str($rv_now + 2)}} for e in d['events'])"
prb "$main_url/api/v1/namespaces/tenant-acme/pods?watch=1&resourceVersion=$rv_now&timeoutSeconds=1" >"$tmp/w.json"
check "no bookmarks unless asked" jtrue "$tmp/w.json" "d['complete'] and d['events'] == []"
prb "$main_url/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1" >"$tmp/w.json"
check "sendInitialEvents ends with the annotated bookmark" jtrue "$tmp/w.json" \
	"[e['type'] for e in d['events']][:6] == ['ADDED'] * 5 + ['BOOKMARK'] and d['events'][5]['object']['metadata']['annotations'] == {'k8s.io/initial-events-end': 'true'}"

# Random chunking reassembles to the same events as one chunk per event.
prb "$main_url/api/v1/pods?watch=1&timeoutSeconds=1" >"$tmp/w-event.json"
check "event chunking: one chunk per event" jtrue "$tmp/w-event.json" \
	"d['chunked'] and d['complete'] and len(d['chunks']) == len(d['events']) == 5 and d['boundaries_inside_event'] == 0"
ctl /_control/config '{"watch": {"chunking": "random", "max_chunk": 7}}' >/dev/null
prb "$main_url/api/v1/pods?watch=1&timeoutSeconds=1" >"$tmp/w-rand.json"
check "random chunking splits JSON objects and UTF-8 sequences" jtrue "$tmp/w-rand.json" \
	"d['chunked'] and d['complete'] and not d['cut'] and max(d['chunks']) <= 7 and d['boundaries_inside_event'] > 100 and d['boundaries_inside_utf8'] > 0 and d['partial'] == ''"
check "random chunks reassemble to the same events" jtrue "$tmp/w-rand.json" \
	"d['events'] == json.load(open('$tmp/w-event.json'))['events'] and any('𝄞' in json.dumps(e, ensure_ascii=False) for e in d['events'])"
ctl /_control/config '{"watch": {"chunking": "event"}}' >/dev/null

# ----------------------------------------------------------------------- faults
ctl /_control/fault '{"match": {"resource": "pods", "watch": true}, "disconnect_after_events": 2}' >/dev/null
prb "$main_url/api/v1/pods?watch=1&timeoutSeconds=5" >"$tmp/w.json"
check "disconnect mid-stream: two events, then a cut inside a chunk" jtrue "$tmp/w.json" \
	"d['cut'] and not d['complete'] and len(d['events']) == 2 and d['partial'].startswith('{\"type\":\"ADDED\"') and len(d['chunks']) == 3"
state && w0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchesStarted"])' "$tmp/state.json")
prb "$main_url/api/v1/nodes?watch=1" >"$tmp/w.json" &
ppid_=$!
pids="$pids $ppid_"
check "node watch open" wait_until state_has "d['activeWatches'] == 1 and d['watchesStarted'] > $w0"
ctl /_control/close-watches '{"abrupt": true}' >/dev/null
wait "$ppid_"
check "close-watches abrupt: cut without terminating chunk" jtrue "$tmp/w.json" \
	"d['cut'] and not d['complete'] and [e['object']['metadata']['name'] for e in d['events']] == ['cpu-node', 'gpu-node-1', 'gpu-node-2']"
ctl /_control/fault '{"match": {"path": "^/api/v1/nodes$"}, "disconnect_after_bytes": 40}' >/dev/null
prb "$main_url/api/v1/nodes" >"$tmp/w.json"
check "disconnect mid-list body" jtrue "$tmp/w.json" "d['cut'] and len(d['partial']) == 40"

ctl /_control/fault '{"match": {"resource": "nodes"}, "status": 429, "retry_after": 3}' >/dev/null
api -D "$tmp/h" -o "$tmp/l.json" "$main_url/api/v1/nodes"
check "429: Retry-After and Status" jtrue "$tmp/l.json" \
	"d['code'] == 429 and d['reason'] == 'TooManyRequests' and d['details']['retryAfterSeconds'] == 3 and 'retry-after: 3' in open('$tmp/h').read().lower()"
ctl /_control/fault '{"match": {"resource": "nodes"}, "status": 500, "retry_after": 1, "nth": 2}' >/dev/null
api -o "$tmp/l1.json" "$main_url/api/v1/nodes"
api -D "$tmp/h" -o "$tmp/l.json" "$main_url/api/v1/nodes"
check "nth: the first request passes, the second gets 500 InternalError" jtrue "$tmp/l.json" \
	"json.load(open('$tmp/l1.json'))['kind'] == 'NodeList' and d['code'] == 500 and d['reason'] == 'InternalError' and 'retry-after: 1' in open('$tmp/h').read().lower()"
ctl /_control/fault '{"match": {"resource": "namespaces"}, "delay": 3}' >/dev/null
if api -m 1 -o /dev/null "$main_url/api/v1/namespaces" 2>/dev/null; then
	bad "slow response was not slow"
else ok; fi
api -o "$tmp/l.json" "$main_url/api/v1/namespaces"
check "after the slow one, answers again" jtrue "$tmp/l.json" "d['kind'] == 'NamespaceList'"

# ---------------------------------------------------------------- discovery
api -o "$tmp/d.json" "$main_url/apis/apps.cozystack.io/v1alpha1"
check "discovery of the cozystack group" jtrue "$tmp/d.json" \
	"sorted(r['name'] for r in d['resources']) == ['kubernetesnodeses', 'tenants', 'vminstances'] and all(r['namespaced'] and 'watch' in r['verbs'] for r in d['resources'])"
api -o "$tmp/d.json" -w '%{http_code}' "$main_url/openapi/v2" >"$tmp/code"
check "openapi: 404" grep -qx 404 "$tmp/code"
api -o "$tmp/d.json" -X POST -w '%{http_code}' "$main_url/api/v1/namespaces/x/pods" >"$tmp/code"
check "writes: 405" grep -qx 405 "$tmp/code"

# ----------------------------------------------- NDJSON scenario, plain HTTP, seed
# Two plain-HTTP servers with the same seed cut the same stream at the same
# places; a third with another seed does not.
chunks_of() { # SEED -> chunk sizes of the first watch on a fresh server
	start "plain$1" --plain --scenario "$scen2" --seed "$1"
	python3 "$probe" "$url/api/v1/pods?watch=1&timeoutSeconds=1" >"$tmp/plain$1.json"
	kill -TERM "$last_pid"
	wait "$last_pid"
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["chunks"], len(d["events"]))' "$tmp/plain$1.json"
}
a=$(chunks_of 11)
b=$(chunks_of 11)
c=$(chunks_of 12)
if [ "$a" = "$b" ] && [ "$a" != "$c" ]; then ok; else bad "seeded chunking: $a / $b / $c"; fi
check "NDJSON scenario: its initial objects and random chunking" jtrue "$tmp/plain11.json" \
	"len(d['events']) == 3 and len(d['chunks']) > 3 and d['complete']"
start plain13 --plain --scenario "$scen2" --seed 13
curl -sS -o "$tmp/l.json" -D "$tmp/h" "$url/api/v1/nodes"
check "NDJSON scenario fault: first nodes list 503" jtrue "$tmp/l.json" \
	"d['code'] == 503 and 'retry-after: 2' in open('$tmp/h').read().lower()"

# A bad scenario stops the server at start with a message naming the fault.
bad_scenario() { # TEXT EXPECTED-MESSAGE-PART
	printf '%s\n' "$1" >"$tmp/bad.json"
	if python3 "$srv" --plain --scenario "$tmp/bad.json" >/dev/null 2>"$tmp/bad.err"; then
		bad "scenario accepted: $1"
	elif [ $? -eq 2 ] && grep -q "$2" "$tmp/bad.err"; then ok
	else bad "scenario $1: $(cat "$tmp/bad.err")"; fi
}
bad_scenario '{"objetcs": []}' "unknown scenario keys"
bad_scenario '{"objects": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}]}' "namespace is required"
bad_scenario '{"objects": [{"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "p"}}]}' "no resource for"
bad_scenario '{"timeline": [{"at": 1, "after_requests": 2, "compact": true}]}' "exactly one of"
bad_scenario '{"faults": [{"status": "429"}]}' "must be a number"
bad_scenario '{"watch": {"chunking": "words"}}' "chunking is event"
bad_scenario '{"type": "ADDED"}
{"type": "ADDED", "object": {}}' "an event needs an object"

# ------------------------------------------------------------------- SIGTERM
# A watch open at SIGTERM gets its terminating chunk; the server exits 0.
cport=$main_cport
state && w0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchesStarted"])' "$tmp/state.json")
prb "$main_url/api/v1/pods?watch=1&resourceVersion=$rv_now" >"$tmp/term.json" &
ppid_=$!
pids="$pids $ppid_"
check "watch open before SIGTERM" wait_until state_has "d['activeWatches'] >= 1 and d['watchesStarted'] > $w0"
kill -TERM "$main_pid"
if wait "$main_pid"; then ok; else bad "server exit status $? after SIGTERM"; fi
wait "$ppid_"
check "SIGTERM ends the open watch cleanly" jtrue "$tmp/term.json" "d['complete'] and not d['cut']"

echo "apiserver_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
