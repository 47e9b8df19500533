#!/usr/bin/env python3
"""Runs the Install steps of docs/operations.md as written, without a
cluster, and checks what they would have done.

The ```sh block after the page's `<!-- install: ... -->` marker runs with
`sh -eu` in a scratch directory holding a copy of deploy/, with shims of
`kubectl` and `docker` first on the PATH (this file, called by the shims'
wrappers) that log every call:

  - `kubectl apply -k DIR` renders DIR with the real `kubectl kustomize`
    (a DIR without a kustomization.yaml fails the step); `apply -f` fails:
    there is one way to install;
  - `kubectl -n NS create secret ...` runs the real kubectl with
    `--dry-run=client -o yaml` (a --from-file that does not exist fails);
  - `kubectl -n NS rollout status deploy/NAME` stands for the wait;
  - `docker build -f FILE -t TAG CTX` checks FILE and CTX exist and
    remembers TAG; `docker push TAG` needs a TAG built before;
  - anything else fails the step, so a new command cannot slip in unrun.

Then: every rendered object and secret is validated against the OpenAPI
schemas (tests/deploy/schema/validate.mjs); every kustomization of deploy/
that a cluster needs is applied; a secret is created only in a Namespace
applied before it; a rollout waits on a Deployment applied before it
whose secrets and claims were applied or created before the wait (the
cert-manager Certificates name their secrets); the
ValidatingWebhookConfiguration is applied only after a rollout of the
Deployment behind its Service; every container runs the image pushed; the
tokens secret has a `cert:CN ROLE` line for each client certificate the
shipped manifests use (the API server's, Prometheus's, the replicas').
Last, broken copies of the block (a path that does not exist, the webhook
before the wait, a token line missing) must fail.

What it cannot show: that a cluster accepts the objects (the CRDs and
cert-manager are there, admission allows them), that cert-manager issues
the secrets, that the image builds, pulls and becomes ready. The pod's
start is tests/deploy_cli.sh's and tests/webhook_cli.sh's.

Usage: install_check.py --root SRC --validator DIR/validate.mjs PAGE.md
Prints "ok:" and "FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_tls import Checks, get  # noqa: E402

MARK = "<!-- install:"
# The roles each client certificate of the manifests needs (DESIGN 7):
# the API server posts reviews, Prometheus reads /metrics, a replica reads
# /v1/events.
NEEDS = {"apiserver": ("admission", "admin"),
         "metrics": ("auditor", "admin"),
         "replica": ("auditor", "admin")}


# ------------------------------------------------------------------ shims
def shim(argv):
    """The kubectl or docker stand-in: log the call, do what can be done
    offline, exit 1 on what a real cluster would refuse or cannot be run
    here."""
    tool, args = argv[0], argv[1:]
    log = os.environ["INSTALL_LOG"]
    n = sum(1 for _ in open(log)) if os.path.exists(log) else 0
    out = os.path.join(os.path.dirname(log), "step%02d.yaml" % n)

    def record(**kv):
        with open(log, "a") as f:
            f.write(json.dumps(kv) + "\n")

    def die(msg):
        sys.stderr.write(f"{tool} (install shim): {msg}\n")
        sys.exit(1)

    if tool == "docker":
        if args[:1] == ["build"]:
            f = args[args.index("-f") + 1] if "-f" in args else "Dockerfile"
            tag = args[args.index("-t") + 1] if "-t" in args else None
            ctx = args[-1]
            if not os.path.isfile(f):
                die(f"no Dockerfile {f}")
            if not os.path.isdir(ctx):
                die(f"no build context {ctx}")
            record(op="build", tag=tag)
            return 0
        if args[:1] == ["push"] and len(args) == 2:
            built = [json.loads(x) for x in open(log)] if n else []
            if not any(b.get("op") == "build" and b.get("tag") == args[1]
                       for b in built):
                die(f"{args[1]} was not built")
            record(op="push", tag=args[1])
            return 0
        die("not a step the shim knows: docker " + " ".join(args))
    real = os.environ["REAL_KUBECTL"]
    ns, rest, i = None, [], 0
    while i < len(args):
        if args[i] in ("-n", "--namespace") and i + 1 < len(args):
            ns = args[i + 1]
            i += 2
            continue
        if args[i].startswith("--namespace="):
            ns = args[i].split("=", 1)[1]
        else:
            rest.append(args[i])
        i += 1
    if rest[:2] == ["apply", "-k"] and len(rest) == 3:
        d = rest[2]
        if not os.path.isfile(os.path.join(d, "kustomization.yaml")):
            die(f"{d}: no kustomization.yaml")
        r = subprocess.run([real, "kustomize", d], capture_output=True,
                           text=True)
        if r.returncode != 0:
            die(r.stderr.strip())
        open(out, "w").write(r.stdout)
        record(op="apply", dir=os.path.normpath(d), file=out)
        return 0
    if rest[:1] == ["apply"]:
        die("only `kubectl apply -k DIR` installs gpuledger")
    if rest[:2] == ["create", "secret"]:
        for a in rest:
            if a.startswith("--from-file="):
                p = a.split("=", 1)[1].split("=", 1)[-1]
                if not os.path.exists(p):
                    die(f"--from-file {p}: no such file")
        r = subprocess.run([real] + (["-n", ns] if ns else []) + rest +
                           ["--dry-run=client", "-o", "yaml"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            die(r.stderr.strip())
        open(out, "w").write(r.stdout)
        record(op="secret", ns=ns, file=out)
        return 0
    if rest[:2] == ["rollout", "status"] and len(rest) >= 3:
        m = re.fullmatch(r"(?:deploy|deployment|deployments)/(\S+)", rest[2])
        if not m:
            die("rollout status of what? " + rest[2])
        record(op="rollout", ns=ns, name=m.group(1))
        return 0
    die("not a step the shim knows: kubectl " + " ".join(args))
    return 1


# ------------------------------------------------------------------ run
def block(page):
    """The ```sh block after the install marker."""
    lines = open(page, encoding="utf-8").read().split("\n")
    for i, ln in enumerate(lines):
        if ln.startswith(MARK):
            j = i + 1
            if j < len(lines) and lines[j].strip() == "```sh":
                k = lines.index("```", j + 1)
                return "\n".join(lines[j + 1:k]) + "\n"
    return None


def run_block(root, text, tmp):
    work = os.path.join(tmp, "work")
    bindir = os.path.join(tmp, "bin")
    os.makedirs(work)
    os.makedirs(bindir)
    shutil.copytree(os.path.join(root, "deploy"), os.path.join(work,
                                                               "deploy"))
    me = os.path.abspath(__file__)
    for tool in ("kubectl", "docker"):
        p = os.path.join(bindir, tool)
        with open(p, "w") as f:
            f.write(f'#!/bin/sh\nexec "{sys.executable}" "{me}" --shim '
                    f'{tool} "$@"\n')
        os.chmod(p, 0o755)
    log = os.path.join(tmp, "log")
    script = os.path.join(tmp, "install.sh")
    open(script, "w").write(text)
    env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
               INSTALL_LOG=log, REAL_KUBECTL=shutil.which("kubectl") or
               "kubectl")
    r = subprocess.run(["sh", "-eu", script], cwd=work, env=env,
                       capture_output=True, text=True, timeout=120)
    steps = [json.loads(x) for x in open(log)] if os.path.exists(log) else []
    return r, steps


# ------------------------------------------------------------------ checks
def objects(step):
    return [d for d in yaml.safe_load_all(open(step["file"])) if d]


def analyse(steps):
    """The problems with what the steps did, as a list of strings (empty
    when the install is right), and the files to validate."""
    bad, files = [], []
    applied = []          # (step index, object)
    secrets = {}          # (ns, name) -> (step index, object)
    waited = []           # (step index, ns, name)
    pushed = {s["tag"] for s in steps if s["op"] == "push"}
    dirs = [s["dir"] for s in steps if s["op"] == "apply"]
    for want in ("deploy", "deploy/admission", "deploy/replicas"):
        if want not in dirs:
            bad.append(f"{want}/ is never applied")
    for i, s in enumerate(steps):
        if s["op"] == "apply":
            files.append(s["file"])
            for d in objects(s):
                applied.append((i, d))
                if d["kind"] == "Certificate":
                    secrets[(get(d, "metadata", "namespace"),
                             get(d, "spec", "secretName"))] = (i, None)
        elif s["op"] == "secret":
            files.append(s["file"])
            for d in objects(s):
                ns = get(d, "metadata", "namespace")
                if not any(j < i and o["kind"] == "Namespace" and
                           get(o, "metadata", "name") == ns
                           for j, o in applied):
                    bad.append(f"secret {get(d, 'metadata', 'name')} is "
                               f"created before its Namespace {ns}")
                secrets[(ns, get(d, "metadata", "name"))] = (i, d)
        elif s["op"] == "rollout":
            deps = [(j, o) for j, o in applied if o["kind"] == "Deployment"
                    and get(o, "metadata", "name") == s["name"]
                    and get(o, "metadata", "namespace") == s["ns"]]
            if not deps:
                bad.append(f"rollout status of {s['ns']}/{s['name']}, "
                           "which was not applied before")
                continue
            pod = get(deps[-1][1], "spec", "template", "spec", default={})
            for v in pod.get("volumes") or []:
                sn = get(v, "secret", "secretName")
                if sn and (s["ns"], sn) not in secrets:
                    bad.append(f"{s['name']}'s secret {sn} does not exist "
                               "when its rollout is awaited")
                cn = get(v, "persistentVolumeClaim", "claimName")
                if cn and not any(o["kind"] == "PersistentVolumeClaim" and
                                  get(o, "metadata", "name") == cn
                                  for _, o in applied):
                    bad.append(f"{s['name']}'s claim {cn} is not applied")
            waited.append((i, s["ns"], s["name"]))
    by_kind = {}
    for _, o in applied:
        by_kind.setdefault(o["kind"], []).append(o)
    for i, o in applied:
        if o["kind"] != "ValidatingWebhookConfiguration":
            continue
        for h in o.get("webhooks") or []:
            svc = get(h, "clientConfig", "service", default={})
            sv = [x for x in by_kind.get("Service", [])
                  if get(x, "metadata", "name") == svc.get("name") and
                  get(x, "metadata", "namespace") == svc.get("namespace")]
            sel = get(sv[0], "spec", "selector", default={}) if sv else {}
            behind = {get(d, "metadata", "name")
                      for d in by_kind.get("Deployment", [])
                      if sel and get(d, "metadata", "namespace") ==
                      svc.get("namespace") and
                      all(get(d, "spec", "template", "metadata", "labels",
                              k) == val for k, val in sel.items())}
            if not behind:
                bad.append(f"webhook {h.get('name')}: no Deployment behind "
                           f"Service {svc.get('name')}")
            elif not any(j < i and ns == svc.get("namespace") and n in behind
                         for j, ns, n in waited):
                bad.append(f"webhook {h.get('name')} is applied before a "
                           f"rollout status of {sorted(behind)}")
    for d in by_kind.get("Deployment", []):
        spec = get(d, "spec", "template", "spec", default={})
        for ct in (spec.get("initContainers") or []) + (
                spec.get("containers") or []):
            if ct.get("image") not in pushed:
                bad.append(f"{get(d, 'metadata', 'name')}/{ct.get('name')} "
                           f"runs {ct.get('image')}, not the image pushed "
                           f"{sorted(pushed)}")
        if not any(n == get(d, "metadata", "name") for _, _, n in waited):
            bad.append(f"no rollout status of {get(d, 'metadata', 'name')}")
    bad += token_problems(by_kind, secrets)
    return bad, files


def token_problems(by_kind, secrets):
    """Each client certificate of the manifests has its `cert:CN ROLE`
    line in the tokens secret that serve reads."""
    bad = []
    tok = secrets.get(("gpuledger", "gpuledger-tokens"), (0, None))[1]
    if tok is None:
        return ["no secret gpuledger-tokens is created"]
    text = base64.b64decode(get(tok, "data", "tokens", default="")).decode()
    lines = {}
    for ln in text.splitlines():
        w = ln.split()
        if len(w) == 2 and w[0].startswith("cert:"):
            lines[w[0][5:]] = w[1]
    certs = {get(c, "spec", "secretName"): c
             for c in by_kind.get("Certificate", [])}
    used = {}
    # The API server's: the Certificate the admission docs name.
    for c in by_kind.get("Certificate", []):
        if get(c, "metadata", "name") == "gpuledger-apiserver-client":
            used["apiserver"] = c
    for sm in by_kind.get("ServiceMonitor", []):
        for e in get(sm, "spec", "endpoints", default=[]):
            sn = get(e, "tlsConfig", "cert", "secret", "name")
            if sn in certs:
                used["metrics"] = certs[sn]
    for d in by_kind.get("Deployment", []):
        for v in get(d, "spec", "template", "spec", "volumes", default=[]):
            sn = get(v, "secret", "secretName")
            c = certs.get(sn)
            if c and "client auth" in (get(c, "spec", "usages") or []):
                used["replica"] = c
    for what, roles in NEEDS.items():
        c = used.get(what)
        if c is None:
            bad.append(f"no client certificate for {what} in the manifests")
            continue
        cn = get(c, "spec", "commonName")
        if lines.get(cn) not in roles:
            bad.append(f"the tokens have no `cert:{cn} {roles[0]}` line "
                       f"({what}; got {lines.get(cn)})")
    return bad


def validate(c, validator, files):
    r = subprocess.run(["node", validator] + files, capture_output=True,
                       text=True)
    n = sum(1 for f in files for d in yaml.safe_load_all(open(f)) if d)
    oks = r.stdout.count("\nok: ") + r.stdout.startswith("ok: ")
    c.check(f"the {n} objects the install makes validate",
            r.returncode == 0 and oks == n,
            "\n".join(x for x in r.stdout.splitlines()
                      if x.startswith("FAIL")) or r.stderr[-300:])


# Broken copies of the block that must fail, and how: (name, regex,
# replacement, what the shim or the analysis says).
BREAKS = [
    ("a path that does not exist", r"apply -k deploy/admission/?",
     "apply -k deploy/webhook/", "no kustomization.yaml"),
    ("the webhook configuration before the wait", None, None,
     "is applied before a rollout status"),
    ("Prometheus's token line missing",
     r"'cert:gpuledger-prometheus auditor' ?", "",
     "no `cert:gpuledger-prometheus auditor` line"),
    ("apply -f instead of -k", r"apply -k deploy/(\s)", r"apply -f deploy/\1",
     "only `kubectl apply -k DIR`"),
]


def webhook_first(text):
    """The block with its apply of deploy/admission/ moved to the top."""
    lines = text.split("\n")
    hit = [ln for ln in lines if re.search(r"apply -k deploy/admission", ln)]
    rest = [ln for ln in lines if ln not in hit]
    return "\n".join(hit + rest)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--shim":
        return shim(sys.argv[2:])
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--validator", required=True)
    ap.add_argument("page")
    a = ap.parse_args()
    c = Checks()
    text = block(a.page)
    if not c.check("the page has an install block after its marker",
                   text is not None):
        print(f"checks: {c.passed} passed, {c.failed} failed")
        return 1
    tmp = tempfile.mkdtemp(prefix="install_check.")
    try:
        r, steps = run_block(os.path.abspath(a.root), text,
                             os.path.join(tmp, "as-written"))
        c.check("the install steps run as written", r.returncode == 0,
                (r.stdout + r.stderr)[-600:])
        bad, files = analyse(steps)
        c.check("the install is complete and in order", not bad,
                "; ".join(bad))
        validate(c, a.validator, files)
        for i, (name, rx, rep, why) in enumerate(BREAKS):
            broken = webhook_first(text) if rx is None else \
                re.sub(rx, rep, text)
            if not c.check(f"broken copy changes the block: {name}",
                           broken != text):
                continue
            r, steps = run_block(os.path.abspath(a.root), broken,
                                 os.path.join(tmp, "broken%d" % i))
            said = r.stderr if r.returncode != 0 else \
                "; ".join(analyse(steps)[0])
            c.check(f"broken copy is refused: {name}", why in said, said)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
