#!/bin/sh
# Validates every manifest that the kustomizations of deploy/ render
# against the Kubernetes, cert-manager and Prometheus Operator OpenAPI
# schemas (npm kubernetes-models and @kubernetes-models/*, installed here by
# npm into build/npm-schema on first use, versions pinned by
# tests/deploy/schema/package.json), runs the Install steps of
# docs/operations.md with kubectl and docker stand-ins
# (tests/deploy/install_check.py), then breaks copies of the manifests in
# ways a typo would and checks that each broken copy is refused.
# Usage: tests/manifests_cli.sh PATH/TO/gpuledger (the binary is not used)
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
pass=0
fail=0
. "$root/tests/lib/cli.sh"
npm_schema "$root" || fail=$((fail + 1))

# deploy/ is a kustomize base and deploy/admission/ and deploy/replicas/
# are kustomizations applied after it: what they render is what a cluster
# gets (the generated dashboard ConfigMap and the image of deploy/image/
# included). Every kustomization under deploy/ is rendered and validated.
kusts=$(cd "$root" && find deploy -name kustomization.yaml | sort | tr "\n" " ")
rendered=
for k in $kusts; do
	d=$(dirname "$k")
	case $d in deploy/image | deploy/common) continue ;; esac # components: rendered by those that include them
	f=$tmp/$(printf '%s' "$d" | tr / -).yaml
	if kubectl kustomize "$root/$d" >"$f" 2>"$tmp/kustomize.err"; then ok; else
		bad "kubectl kustomize $d/: $(cat "$tmp/kustomize.err")"
	fi
	rendered="$rendered $f"
done
for k in deploy deploy/admission deploy/replicas deploy/cluster \
	deploy/cluster/init deploy/cluster/etcd-example; do
	case " $kusts " in
	*" $k/kustomization.yaml "*) ok ;;
	*) bad "$k/ is not a kustomization" ;;
	esac
done
# shellcheck disable=SC2086
run node "$mods/validate.mjs" $rendered
expect "every manifest of deploy/ validates" 0
n=$(grep -c '^ok: ' "$tmp/out")
# shellcheck disable=SC2086
docs=$(python3 -c 'import sys, yaml
print(sum(1 for f in sys.argv[1:] for d in yaml.safe_load_all(open(f)) if d))' \
	$rendered)
[ "$n" = "$docs" ] && ok || bad "validated $n of $docs documents: $(grep FAIL "$tmp/out")"
grep -q '^ok: deploy-admission.yaml ValidatingWebhookConfiguration ' "$tmp/out" && ok ||
	bad "the webhook configuration was not validated"
grep -q '^ok: deploy-replicas.yaml Deployment gpuledger-read' "$tmp/out" && ok ||
	bad "the replicas' Deployment was not validated"
# The cluster of members (DESIGN 11), its init Job and the example etcd.
for want in 'deploy-cluster.yaml StatefulSet gpuledger' \
	'deploy-cluster.yaml PodDisruptionBudget gpuledger' \
	'deploy-cluster.yaml Service gpuledger-members' \
	'deploy-cluster-init.yaml Job gpuledger-cluster-init' \
	'deploy-cluster-etcd-example.yaml StatefulSet gpuledger-etcd'; do
	grep -q "^ok: $want\$" "$tmp/out" && ok || bad "$want was not validated"
done

# The Install steps of docs/operations.md, run as written with stand-ins
# for kubectl and docker (tests/deploy/install_check.py says how and what
# that cannot prove).
run python3 "$root/tests/deploy/install_check.py" --root "$root" \
	--validator "$mods/validate.mjs" "$root/docs/operations.md"
expect "the install steps of docs/operations.md" 0
grep '^FAIL' "$tmp/out"
p=$(sed -n 's/^checks: \([0-9]*\) passed.*/\1/p' "$tmp/out")
[ "${p:-0}" -ge 10 ] && ok || bad "install_check ran ${p:-no} checks: $(tail -3 "$tmp/out")"

# break FILE NAME PYTHON: a copy of deploy/FILE with PYTHON applied to its
# documents (d, a list) must be refused.
break_one() {
	python3 - "$root/deploy/$1" "$tmp/$2.yaml" "$3" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
def kind(k):
    return [d for d in docs if d["kind"] == k][0]
exec(sys.argv[3])
yaml.safe_dump_all(docs, open(sys.argv[2], "w"))
PY
	run node "$mods/validate.mjs" "$tmp/$2.yaml"
	if [ "$rc" -ne 0 ] && grep -q '^FAIL: ' "$tmp/out"; then ok; else
		bad "broken manifest $2 was accepted"
	fi
}
break_one deployment.yaml replicas-string 'kind("Deployment")["spec"]["replicas"] = "one"'
break_one deployment.yaml port-string 'kind("Service")["spec"]["ports"][0]["port"] = "https"'
break_one deployment.yaml no-selector 'del kind("Deployment")["spec"]["selector"]'
break_one deployment.yaml container-no-name 'del kind("Deployment")["spec"]["template"]["spec"]["containers"][0]["name"]'
break_one admission/webhook.yaml webhook-no-sideeffects 'del kind("ValidatingWebhookConfiguration")["webhooks"][0]["sideEffects"]'
break_one admission/webhook.yaml webhook-condition-no-expression 'del kind("ValidatingWebhookConfiguration")["webhooks"][0]["matchConditions"][0]["expression"]'
break_one admission/webhook.yaml webhook-rules-string 'kind("ValidatingWebhookConfiguration")["webhooks"][0]["rules"] = "vminstances"'
break_one common/monitoring/prometheusrule.yaml rule-for-number 'kind("PrometheusRule")["spec"]["groups"][0]["rules"][0]["for"] = 5'
break_one common/monitoring/servicemonitor.yaml monitor-endpoints-string 'kind("ServiceMonitor")["spec"]["endpoints"] = "https"'
break_one common/webhook.yaml certificate-no-issuer 'del [d for d in docs if d["kind"] == "Certificate"][1]["spec"]["issuerRef"]'
break_one common/webhook.yaml certificate-bad-duration 'kind("Certificate")["spec"]["isCA"] = "yes"'
break_one common/rbac.yaml role-verbs-string 'kind("ClusterRole")["rules"][0]["verbs"] = "list"'
break_one cluster/members.yaml sts-replicas-string 'kind("StatefulSet")["spec"]["replicas"] = "three"'
break_one cluster/members.yaml sts-no-selector 'del kind("StatefulSet")["spec"]["selector"]'
break_one cluster/members.yaml sts-claim-template-string 'kind("StatefulSet")["spec"]["volumeClaimTemplates"] = "data"'
break_one cluster/members.yaml pdb-min-available-list 'kind("PodDisruptionBudget")["spec"]["minAvailable"] = [2]'
break_one cluster/init/job.yaml job-no-restart-policy 'kind("Job")["spec"]["template"]["spec"]["restartPolicy"] = 1'
break_one common/namespace.yaml unknown-kind 'docs[0]["kind"] = "Namespaces"'

echo "manifests_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
