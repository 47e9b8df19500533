#!/usr/bin/env python3
"""The test that closes issue 17: serve started with the flags of
deploy/deployment.yaml (TLS, client-certificate auth, the probe port), sent
the AdmissionReviews of tests/webhook/*.json exactly where the
ValidatingWebhookConfiguration of deploy/ would send them (its rules pick the
webhook, its clientConfig the path), over TLS with the API server's client
certificate, checking the host name the API server checks. Every answer is
compared with tests/webhook/expect.json; then the verdicts are listed by
requester, tenant, reason and time (a dry run is not among them) and
`gpuledger audit` re-derives every recorded one.

The API server sends a review only when the webhook's matchConditions (CEL)
are all true: they are evaluated here with a real CEL evaluator (npm
@bufbuild/cel, tests/deploy/schema/cel_match.mjs) on each review's object,
oldObject and request, so an update that changes no GPU entry (labels,
finalizers, status, a delete's finalizer removal) is shown not to be sent,
and every CREATE and every change of spec.gpus, spec.maxReplicas or
spec.resourceQuotas to be sent.

Usage: webhook_check.py --bin GPULEDGER --root SRC --cel CEL_MATCH.mjs
Prints "ok:" and "FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_tls import Checks, Serve, get, objects  # noqa: E402


def load(root):
    """What the cluster gets: the base (the Deployment, Service and
    certificates) and deploy/admission/ (the webhook configuration), as
    `kubectl kustomize` renders them."""
    docs = []
    for sub in ("deploy", "deploy/admission"):
        out = subprocess.run(["kubectl", "kustomize",
                              os.path.join(root, sub)],
                             capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            print(f"FAIL: kubectl kustomize {sub}/: " + out.stderr.strip())
            continue
        docs += [(sub, d) for d in yaml.safe_load_all(out.stdout)
                 if d is not None]
    return docs


def rules_match(hook, rq):
    """Whether webhook hook's rules match the review request rq."""
    res = rq.get("resource", {})
    for r in hook.get("rules") or []:
        if (res.get("group") in r.get("apiGroups", []) and
                ("*" in r.get("apiVersions", []) or
                 res.get("version") in r.get("apiVersions", [])) and
                res.get("resource") in r.get("resources", []) and
                rq.get("operation") in r.get("operations", []) and
                r.get("scope", "*") in ("*", "Namespaced")):
            return True
    return False


def cel_decisions(c, cel, hooks, reviews):
    """{hook name: {review name: {"send", "errors"}}}: each webhook's
    matchConditions evaluated on every review's request with a real CEL
    evaluator (tests/deploy/schema/cel_match.mjs, npm @bufbuild/cel)."""
    out = {}
    for h in hooks:
        inp = {"conditions": h.get("matchConditions") or [],
               "requests": {n: r["request"] for n, r in reviews.items()}}
        r = subprocess.run(["node", cel], input=json.dumps(inp),
                           capture_output=True, text=True)
        ok = c.check(f"{h.get('name')}: its matchConditions evaluate (CEL)",
                     r.returncode == 0, r.stderr[-300:])
        out[h.get("name")] = json.loads(r.stdout) if ok else {}
    return out


def check_conditions(c, hooks, decisions, reviews):
    """Every UPDATE is judged by a condition, none errs: an error with
    failurePolicy Fail would refuse the write."""
    for h in hooks:
        n = h.get("name")
        c.check(f"{n}: has matchConditions", bool(h.get("matchConditions")))
        for name, review in reviews.items():
            d = decisions.get(n, {}).get(name, {})
            if rules_match(h, review["request"]):
                c.check(f"{n}: {name}: no matchCondition errs",
                        d.get("send") is not None, str(d.get("errors")))


def check_config(c, docs, srv):
    vwc = objects(docs, "ValidatingWebhookConfiguration")
    if not c.check("a ValidatingWebhookConfiguration", len(vwc) == 1):
        return []
    hooks = vwc[0].get("webhooks") or []
    svc = {get(d, "metadata", "name"): d for d in objects(docs, "Service")}
    ports = {p.get("name"): p.get("containerPort")
             for p in srv.ct.get("ports") or []}
    for h in hooks:
        n = h.get("name")
        c.check(f"{n}: admissionReviewVersions [v1]",
                h.get("admissionReviewVersions") == ["v1"])
        c.check(f"{n}: sideEffects NoneOnDryRun",
                h.get("sideEffects") == "NoneOnDryRun")
        c.check(f"{n}: failurePolicy and timeoutSeconds chosen",
                h.get("failurePolicy") in ("Fail", "Ignore") and
                isinstance(h.get("timeoutSeconds"), int))
        s = get(h, "clientConfig", "service", default={})
        d = svc.get(s.get("name"), {})
        sp = [p for p in get(d, "spec", "ports", default=[])
              if p.get("port") == s.get("port", 443)]
        c.check(f"{n}: its Service port reaches serve's TLS listener",
                len(sp) == 1 and ports.get(sp[0].get("targetPort"),
                                           sp[0].get("targetPort")) ==
                int(srv.listen.rsplit(":", 1)[1]), str(sp))
        host = f"{s.get('name')}.{s.get('namespace')}.svc"
        c.check(f"{n}: the serving certificate names {host}",
                host in srv.dns, str(srv.dns))
    c.check("cert-manager injects the CA",
            "cert-manager.io/inject-ca-from" in
            (get(vwc[0], "metadata", "annotations", default={}) or {}))
    return hooks


def post(srv, path, review, cert):
    code, body = srv.request(path, cert=cert,
                             body=json.dumps(review).encode())
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body


def check_reviews(c, srv, hooks, root, cel):
    want = json.load(open(os.path.join(root, "tests/webhook/expect.json")))
    reviews = {name: json.load(open(os.path.join(root, "tests/webhook",
                                                 name + ".json")))
               for name in sorted(want)}
    c.check("every review of tests/webhook/ has an expectation",
            sorted(os.path.splitext(f)[0] for f in
                   os.listdir(os.path.join(root, "tests/webhook"))
                   if f != "expect.json") == sorted(want))
    decisions = cel_decisions(c, cel, hooks, reviews)
    check_conditions(c, hooks, decisions, reviews)
    recorded = []
    for name in sorted(want):
        review = reviews[name]
        rq, w = review["request"], want[name]
        # The API server calls a webhook whose rules match and whose
        # matchConditions are all true.
        hit = [h for h in hooks if rules_match(h, rq) and
               decisions.get(h.get("name"), {}).get(name, {}).get("send")]
        if not w.get("routed", True):
            c.check(f"{name}: not routed to the webhook", not hit)
            if w.get("by") == "matchConditions":
                c.check(f"{name}: the rules match, the matchConditions "
                        "skip it", any(rules_match(h, rq) for h in hooks))
            continue
        if not c.check(f"{name}: routed to one webhook", len(hit) == 1,
                       str([h.get("name") for h in hit])):
            continue
        path = get(hit[0], "clientConfig", "service", "path")
        code, ans = post(srv, path, review, srv.client_cn)
        resp = ans.get("response", {}) if isinstance(ans, dict) else {}
        st = resp.get("status", {})
        c.check(f"{name}: POST {path} answers 200", code == 200,
                f"{code} {ans}")
        c.check(f"{name}: an AdmissionReview v1",
                isinstance(ans, dict) and
                ans.get("apiVersion") == "admission.k8s.io/v1" and
                ans.get("kind") == "AdmissionReview", str(ans)[:200])
        c.check(f"{name}: uid echoed", resp.get("uid") == rq["uid"])
        c.check(f"{name}: allowed {w['allowed']}",
                resp.get("allowed") is w["allowed"], str(resp))
        c.check(f"{name}: status.code {w['code']}",
                st.get("code") == w["code"], str(st))
        c.check(f"{name}: status.reason {w['reason']}",
                st.get("reason") == w["reason"], str(st))
        c.check(f"{name}: status.message names the reason",
                str(st.get("message", "")).startswith(w["reason"]))
        c.check(f"{name}: warnings is a list of strings",
                isinstance(resp.get("warnings"), list) and
                all(isinstance(x, str) for x in resp["warnings"]))
        notes = resp.get("auditAnnotations", {})
        if w["recorded"]:
            c.check(f"{name}: the verdict id is annotated",
                    "gpuledger.cozystack.io/verdict-id" in notes, str(notes))
            recorded.append((name, rq))
        else:
            c.check(f"{name}: a dry run is annotated, not given an id",
                    "gpuledger.cozystack.io/dry-run" in notes and
                    "gpuledger.cozystack.io/verdict-id" not in notes,
                    str(notes))
    # The wrong endpoint for a kind is a 400, not a verdict.
    t = json.load(open(os.path.join(root, "tests/webhook",
                                    "tenant-create-allowed.json")))
    code, ans = post(srv, "/v1/admission", t, srv.client_cn)
    c.check("a Tenant review on /v1/admission is refused with 400",
            code == 400 and "error" in ans, f"{code} {ans}")
    return recorded


def verdicts(srv, query=""):
    code, body = srv.request("/v1/verdicts" + query, cert=srv.client_cn,
                             token=srv.admin)
    try:
        return code, json.loads(body)
    except ValueError:
        return code, {"error": repr(body)}


def check_listing(c, srv, recorded):
    code, all_ = verdicts(srv)
    vs = all_.get("verdicts", []) if code == 200 else []
    c.check("GET /v1/verdicts lists every recorded verdict, no dry run",
            code == 200 and len(vs) == len(recorded),
            f"{code} {len(vs)} vs {len(recorded)}")
    by_uid = {get(v, "requester", "uid"): v for v in vs}
    for name, rq in recorded:
        v = by_uid.get(rq["uid"], {})
        # Two uids named apart: the review's ("uid") and the user's own
        # ("userUid", absent when the user has none).
        want = {"username": rq["userInfo"]["username"],
                "groups": rq["userInfo"]["groups"], "uid": rq["uid"],
                "operation": rq["operation"]}
        if rq["userInfo"].get("uid"):
            want["userUid"] = rq["userInfo"]["uid"]
        c.check(f"{name}: the record keeps the requester",
                v.get("requester") == want, str(v.get("requester")))
    users = {}
    for _, rq in recorded:
        u = rq["userInfo"]["username"]
        users[u] = users.get(u, 0) + 1
    for u, n in users.items():
        _, got = verdicts(srv, "?requester=" + urllib.parse.quote(u))
        c.check(f"?requester={u}: {n} verdicts",
                len(got.get("verdicts", [])) == n, str(got)[:200])
    _, got = verdicts(srv, "?reason=ClassBudgetExceeded")
    c.check("?reason=ClassBudgetExceeded: one",
            [v.get("reason") for v in got.get("verdicts", [])] ==
            ["ClassBudgetExceeded"], str(got)[:200])
    _, got = verdicts(srv, "?tenant=tenant-beta")
    beta = [rq for _, rq in recorded if rq["namespace"] == "tenant-beta"]
    c.check("?tenant=tenant-beta: the KubernetesNodes verdicts only",
            [get(v, "request", "kind") for v in got.get("verdicts", [])] ==
            ["KubernetesNodes"] * len(beta) and len(beta) >= 1,
            str(got)[:200])
    _, got = verdicts(srv, "?from=2099-01-01T00:00:00Z")
    c.check("?from= in the future: none", got.get("verdicts") == [],
            str(got)[:200])
    _, got = verdicts(srv, "?from=2000-01-01T00:00:00Z&to=2099-01-01T00:00:00Z")
    c.check("?from=&to= around now: all", len(got.get("verdicts", [])) ==
            len(recorded), str(got)[:200])
    _, got = verdicts(srv, "?limit=2")
    c.check("?limit=2: two and a next cursor",
            len(got.get("verdicts", [])) == 2 and got.get("next") == 2,
            str(got)[:200])
    code, _ = verdicts(srv, "?limit=0")
    c.check("?limit=0 is a 400", code == 400, str(code))
    code, _ = verdicts(srv, "?tenant=default")
    c.check("?tenant= a non-tenant is a 400", code == 400, str(code))


def check_refusals(c, srv):
    for who in (None, "stranger"):
        try:
            code, _ = srv.request("/v1/tenants/tenant-acme/remaining",
                                  cert=who)
        except Exception:  # noqa: BLE001 - the handshake is refused
            code = "refused"
        c.check(f"client certificate {who or 'absent'}: refused",
                code == "refused", str(code))
    code, _ = srv.request("/v1/tenants/tenant-acme/remaining",
                          cert=srv.client_cn)
    c.check("the API server's certificate reads remaining (admission)",
            code == 200, str(code))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--cel", required=True,
                    help="tests/deploy/schema/cel_match.mjs beside its "
                    "node_modules")
    a = ap.parse_args()
    binary, root = os.path.abspath(a.bin), os.path.abspath(a.root)
    c = Checks()
    docs = load(root)
    tmp = tempfile.mkdtemp(prefix="webhook_cli.")
    srv = None
    try:
        db = os.path.join(tmp, "db")
        with open(os.path.join(root, "tests/query/base.ndjson")) as f:
            r = subprocess.run([binary, "import", "--db", db, "--create"],
                               stdin=f, capture_output=True)
        c.check("import the fixture ledger", r.returncode == 0, r.stderr)
        srv = Serve(binary, docs, tmp, db=db,
                    tokens="cert:%s admission\n" % "gpuledger-apiserver")
        c.check("the client certificate's CN is the one the token file maps",
                srv.client_cn == "gpuledger-apiserver", srv.client_cn)
        if c.check("serve starts with the manifest's flags",
                   srv.port is not None and srv.tls and
                   "--tls-client-ca" in srv.args, srv.first):
            hooks = check_config(c, docs, srv)
            check_refusals(c, srv)
            recorded = check_reviews(c, srv, hooks, root, a.cel)
            check_listing(c, srv, recorded)
        srv.stop()
        srv = None
        r = subprocess.run([binary, "audit", "--db", db],
                           capture_output=True, text=True)
        c.check("audit re-derives every recorded verdict, requester and all",
                r.returncode == 0 and
                f"ok: {len(recorded)} verdicts" in r.stdout,
                r.stdout + r.stderr)
    finally:
        if srv is not None:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
