#!/bin/sh
# The monitoring and the kustomize base in deploy/, with the tools an
# operator runs: `promtool check rules` and `promtool test rules`
# (tests/monitoring/alerts_test.yaml: every alert fires when it should and
# not on a blip) on the PrometheusRule's groups, `kubectl kustomize deploy/`
# offline, the image set in one place, the Grafana dashboard's JSON, and
# every metric the rules and the dashboard use is one gpuledger exports.
# (/metrics itself is linted by promtool in tests/demo_cli.sh for serve and
# tests/watchapi_cli.sh for the watcher.)
# Usage: tests/monitoring_cli.sh [PATH/TO/gpuledger]
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$root/tests/lib/cli.sh"

need_cmds monitoring_cli promtool kubectl python3 jq
rule=$root/deploy/common/monitoring/prometheusrule.yaml
dash=$root/deploy/common/monitoring/gpuledger-dashboard.json

# The rule groups as a Prometheus rule file: as they are for check rules;
# without annotations for test rules (which would otherwise have to repeat
# every annotation's text; check rules validates their templates).
python3 - "$rule" "$tmp" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
groups = d["spec"]["groups"]
yaml.safe_dump({"groups": groups}, open(sys.argv[2] + "/full.yaml", "w"))
for g in groups:
    for r in g["rules"]:
        r.pop("annotations", None)
yaml.safe_dump({"groups": groups}, open(sys.argv[2] + "/rules.yaml", "w"))
with open(sys.argv[2] + "/alerts", "w") as f:
    for g in groups:
        for r in g["rules"]:
            f.write("%s %s\n" % (r["alert"], r.get("for", "-")))
PY
run promtool check rules "$tmp/full.yaml"
expect "promtool check rules" 0
has "promtool check rules counts the rules" "$tmp/out" "SUCCESS: [0-9]+ rules found"
cp "$root/tests/monitoring/alerts_test.yaml" "$tmp/"
run promtool test rules "$tmp/alerts_test.yaml"
expect "promtool test rules" 0
[ "$rc" -eq 0 ] || cat "$tmp/out" "$tmp/err" | head -40
while read -r alert for; do
	if [ "$for" != "-" ]; then ok; else bad "$alert has no for:"; fi
	n=$(grep -c "alertname: $alert\b" "$root/tests/monitoring/alerts_test.yaml")
	if [ "$n" -ge 2 ]; then ok; else
		bad "$alert: $n promtool test cases, want one that fires and one that must not"
	fi
done <"$tmp/alerts"

# The kustomize base builds offline; the image is set in one place
# (deploy/image/, a component of the base and of deploy/replicas/).
run kubectl kustomize "$root/deploy"
expect "kubectl kustomize deploy/" 0
cp "$tmp/out" "$tmp/rendered.yaml"
for k in Namespace Deployment Service ServiceMonitor PrometheusRule ConfigMap; do
	has "kustomize renders a $k" "$tmp/rendered.yaml" "^kind: $k\$"
done
tag=$(python3 -c '
import sys, yaml
k = yaml.safe_load(open(sys.argv[1]))
print("%s:%s" % (k["images"][0]["newName"], k["images"][0]["newTag"]))' \
	"$root/deploy/image/kustomization.yaml")
run kubectl kustomize "$root/deploy/replicas"
expect "kubectl kustomize deploy/replicas/" 0
cp "$tmp/out" "$tmp/replicas.yaml"
for f in rendered replicas; do
	images=$(grep -E '^ +image: ' "$tmp/$f.yaml" | sed 's/^ *image: //' | sort -u)
	if [ "$images" = "$tag" ]; then ok; else
		bad "every container ($f) runs deploy/image/'s image $tag, got: $images"
	fi
done
n=$(grep -rn '^ *newTag:' "$root/deploy" | wc -l)
if [ "$n" -eq 1 ]; then ok; else bad "the image tag is set in $n places"; fi

# The dashboard: JSON Grafana loads, in the ConfigMap the sidecar finds.
if jq -e '.uid == "gpuledger" and (.panels | length) > 0 and
	all(.panels[]; .type == "row" or (.targets | length) > 0)' "$dash" \
	>/dev/null 2>&1; then ok; else bad "the dashboard is not valid JSON with panels"; fi
has "the dashboard ConfigMap carries the sidecar label" "$tmp/rendered.yaml" \
	'grafana_dashboard: "1"'

# Every dashboard query is valid PromQL: as recording rules (the template
# variables filled in), `promtool check rules` parses each one.
jq -r '.. | .expr? // empty' "$dash" | python3 -c '
import json, sys, yaml
exprs = [l.replace("$namespace", "gpuledger").replace("$tenant", ".*")
         for l in sys.stdin.read().splitlines() if l.strip()]
rules = [{"record": "dashboard:q%d" % i, "expr": e} for i, e in enumerate(exprs)]
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]},
               open(sys.argv[1], "w"))
print(len(exprs))' "$tmp/dash-rules.yaml" >"$tmp/n-exprs"
run promtool check rules "$tmp/dash-rules.yaml"
expect "the dashboard's $(cat "$tmp/n-exprs") queries parse (promtool)" 0

# The ServiceMonitor scrapes ports the Service has, and the Service selects
# the pod.
python3 - "$tmp/rendered.yaml" >"$tmp/sm" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
svc = [d for d in docs if d["kind"] == "Service"][0]
sm = [d for d in docs if d["kind"] == "ServiceMonitor"][0]
dep = [d for d in docs if d["kind"] == "Deployment"][0]
ports = {p["name"] for p in svc["spec"]["ports"]}
labels = svc["metadata"].get("labels", {})
sel = sm["spec"]["selector"]["matchLabels"]
cports = {p["name"] for c in dep["spec"]["template"]["spec"]["containers"]
          for p in c.get("ports", [])}
for e in sm["spec"]["endpoints"]:
    print("port", e["port"], e["port"] in ports and e["port"] in cports)
print("selector", "-", all(labels.get(k) == v for k, v in sel.items()))
PY
while read -r what name okay; do
	[ "$okay" = True ] && ok || bad "ServiceMonitor: $what $name does not match"
done <"$tmp/sm"
n=$(grep -c '^port' "$tmp/sm")
[ "$n" -eq 2 ] && ok || bad "the ServiceMonitor scrapes $n endpoints, want serve's and the watcher's"

# The rules that watch serve from outside name what a Prometheus Operator
# install really has: up{job, endpoint} of the ServiceMonitor's endpoint on
# serve's container port (the Operator sets job to the Service's name and
# endpoint to the port's name), and kube-state-metrics' series of the
# Deployment that runs serve, in its namespace.
python3 - "$rule" "$tmp/rendered.yaml" >"$tmp/sel" <<'PY'
import re, sys, yaml
rules = [r for g in yaml.safe_load(open(sys.argv[1]))["spec"]["groups"]
         for r in g["rules"]]
docs = [d for d in yaml.safe_load_all(open(sys.argv[2])) if d]
svc = [d for d in docs if d["kind"] == "Service"][0]
sm = [d for d in docs if d["kind"] == "ServiceMonitor"][0]
dep = [d for d in docs if d["kind"] == "Deployment"][0]
serve = [c for c in dep["spec"]["template"]["spec"]["containers"]
         if c["name"] == "serve"][0]
sports = {p["name"] for p in serve.get("ports", [])}
targets = {p["name"]: p["targetPort"] for p in svc["spec"]["ports"]}
serve_eps = {e["port"] for e in sm["spec"]["endpoints"]
             if targets.get(e["port"]) in sports}
need = {"GpuledgerServeAbsent", "GpuledgerServeScrapeFailing",
        "GpuledgerServeNotReady"}
for r in rules:
    for sel in re.findall(r"\bup\{([^}]*)\}", r["expr"]):
        kv = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', sel))
        print(r["alert"], "up-job", kv.get("job") == svc["metadata"]["name"])
        print(r["alert"], "up-endpoint-is-serve's", kv.get("endpoint") in serve_eps)
    for sel in re.findall(r"\bkube_deployment_\w+\{([^}]*)\}", r["expr"]):
        kv = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', sel))
        print(r["alert"], "deployment", kv.get("deployment") == dep["metadata"]["name"]
              and kv.get("namespace") == dep["metadata"]["namespace"])
    need.discard(r["alert"])
print("-", "rules-for-a-dead-serve-exist", not need)
PY
while read -r alert what okay; do
	[ "$okay" = True ] && ok || bad "$alert: $what does not match deploy/"
done <"$tmp/sel"
n=$(grep -c ' up-endpoint' "$tmp/sel")
[ "$n" -ge 2 ] && ok || bad "$n rules read serve's up, want absent and scrape failing"

# Every metric the rules and the dashboard use is exported by the code.
exported=$(cat "$root/query/metrics.c" "$root/ingest/kube_metrics.c" \
	"$root/ledger/build.c" | grep -oE '"(gpuledger|process)_[a-z_]+' |
	tr -d '"' | sort -u)
used=$( (cat "$rule"; jq -r '.. | .expr? // empty' "$dash") |
	grep -oE '\b(gpuledger|process)_[a-z_]+' | sort -u)
for m in $used; do
	base=$(printf '%s' "$m" | sed -E 's/_(bucket|count|sum)$//')
	if printf '%s\n' "$exported" | grep -qx -e "$m" -e "$base"; then ok; else
		bad "$m is used by deploy/common/monitoring but not exported"
	fi
done

echo "monitoring_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
