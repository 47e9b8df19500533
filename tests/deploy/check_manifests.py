#!/usr/bin/env python3
"""Checks deploy/ without a Kubernetes API server.

`kubectl apply --dry-run=client` needs an API server for discovery, and the
test API server (tests/apiserver/fake_apiserver.py) serves only the
resources the watcher reads, so the manifests are parsed with PyYAML
(Debian's python3-yaml) and checked here against what the code does:

  - shape: kinds and apiVersions, names, namespaces, the fields each kind
    needs, references between objects (service account, claim, volumes,
    ports, selectors), the restricted Pod Security profile;
  - RBAC: the ClusterRole and the cozy-system Role grant exactly list and
    watch on the resources of ingest/cache.c's resource table, and a real
    `gpuledger watch` run against the test API server (with the watch
    container's command line) is authorized for every request it makes,
    with every granted rule used;
  - command lines: every container command is a real subcommand with real
    flags (`gpuledger SUB --help`); the serve container's command line,
    with its paths moved to a scratch directory, starts and answers probes;
  - Dockerfile: multi-stage Debian, the sources and -dev packages the build
    needs (tools/install-deps.sh, the Makefile's layers), the runtime
    packages that provide the binary's NEEDED libraries, a non-root user.

Usage: check_manifests.py --bin GPULEDGER --root SRC
Prints "ok:" and "FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_tls import Checks, Serve, flag, get  # noqa: E402
import check_cluster  # noqa: E402

import yaml

NS = "gpuledger"
# kind -> (apiVersion, namespaced)
KINDS = {
    "Namespace": ("v1", False),
    "ServiceAccount": ("v1", True),
    "PersistentVolumeClaim": ("v1", True),
    "Service": ("v1", True),
    "Deployment": ("apps/v1", True),
    "PriorityClass": ("scheduling.k8s.io/v1", False),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", False),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", False),
    "Role": ("rbac.authorization.k8s.io/v1", True),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", True),
    "Issuer": ("cert-manager.io/v1", True),
    "Certificate": ("cert-manager.io/v1", True),
    "ValidatingWebhookConfiguration": ("admissionregistration.k8s.io/v1",
                                       False),
    "ConfigMap": ("v1", True),
    "ServiceMonitor": ("monitoring.coreos.com/v1", True),
    "PrometheusRule": ("monitoring.coreos.com/v1", True),
    # deploy/cluster/ (tests/deploy/check_cluster.py).
    "StatefulSet": ("apps/v1", True),
    "PodDisruptionBudget": ("policy/v1", True),
    "Job": ("batch/v1", True),
}
REQUIRED = ["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
            "PersistentVolumeClaim", "Deployment", "Service"]
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                           r"(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def load(root, sub="deploy"):
    """What `kubectl kustomize SUB` renders (it builds offline), each object
    named by the kustomization it came from: deploy/ is the base,
    deploy/admission/ (the webhook configuration) and deploy/replicas/ (the
    optional read replicas) are applied after it."""
    out = subprocess.run(["kubectl", "kustomize", os.path.join(root, sub)],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        print(f"FAIL: kubectl kustomize {sub}/: " + out.stderr.strip())
        return []
    return [(sub, d) for d in yaml.safe_load_all(out.stdout)
            if d is not None]


def one(docs, kind):
    found = [d for _, d in docs if d.get("kind") == kind]
    return found[0] if found else {}


# --------------------------------------------------------------------- shape
def check_shape(c, docs, required=REQUIRED):
    kinds = [d.get("kind") for _, d in docs]
    for k in required:
        c.check(f"a {k} is declared", k in kinds)
    seen = set()
    for f, d in docs:
        kind, name = d.get("kind"), get(d, "metadata", "name")
        what = f"{f}: {kind} {name}"
        if not c.check(f"{what}: known kind", kind in KINDS, str(kind)):
            continue
        api, namespaced = KINDS[kind]
        c.check(f"{what}: apiVersion {api}", d.get("apiVersion") == api,
                str(d.get("apiVersion")))
        c.check(f"{what}: name is a DNS subdomain",
                isinstance(name, str) and len(name) <= 253
                and DNS_SUBDOMAIN.fullmatch(name) is not None)
        ns = get(d, "metadata", "namespace")
        if namespaced:
            c.check(f"{what}: namespaced", isinstance(ns, str) and
                    DNS_LABEL.fullmatch(ns) is not None)
        else:
            c.check(f"{what}: cluster-scoped, no namespace", ns is None)
        c.check(f"{what}: unique", (kind, ns, name) not in seen)
        seen.add((kind, ns, name))
    c.check("the Namespace is the one the objects live in",
            get(one(docs, "Namespace"), "metadata", "name") == NS)


def containers(dep):
    spec = get(dep, "spec", "template", "spec", default={})
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def check_deployment(c, docs):
    dep = one(docs, "Deployment")
    spec = get(dep, "spec", default={})
    pod = get(spec, "template", "spec", default={})
    labels = get(spec, "template", "metadata", "labels", default={})
    sel = get(spec, "selector", "matchLabels", default={})
    c.check("Deployment: one replica", spec.get("replicas") == 1)
    c.check("Deployment: Recreate (never two writers on one volume)",
            get(spec, "strategy", "type") == "Recreate")
    c.check("Deployment: selector matches the pod labels",
            bool(sel) and all(labels.get(k) == v for k, v in sel.items()))
    sas = {get(d, "metadata", "name") for _, d in docs
           if d.get("kind") == "ServiceAccount"
           and get(d, "metadata", "namespace") == NS}
    c.check("Deployment: its service account is declared",
            pod.get("serviceAccountName") in sas)
    names = [x.get("name") for x in pod.get("containers") or []]
    c.check("Deployment: containers watch and serve",
            sorted(names) == ["serve", "watch"], str(names))
    vols = {v.get("name"): v for v in pod.get("volumes") or []}
    claims = {get(d, "metadata", "name") for _, d in docs
              if d.get("kind") == "PersistentVolumeClaim"}
    data = [v for v in vols.values() if "persistentVolumeClaim" in v]
    c.check("Deployment: one PersistentVolumeClaim volume, declared",
            len(data) == 1 and get(data[0], "persistentVolumeClaim",
                                   "claimName") in claims)
    pvc = one(docs, "PersistentVolumeClaim")
    c.check("PVC: ReadWriteOncePod (one pod, one local filesystem)",
            get(pvc, "spec", "accessModes") == ["ReadWriteOncePod"])
    c.check("pod: one PID namespace (LMDB's reader locks are by PID)",
            pod.get("shareProcessNamespace") is True)
    c.check("pod: no service-account token but where a volume mounts it",
            pod.get("automountServiceAccountToken") is False)
    c.check("PVC: requests storage",
            get(pvc, "spec", "resources", "requests", "storage") is not None)
    for ct in containers(dep):
        n = ct.get("name")
        c.check(f"container {n}: image and command",
                bool(ct.get("image")) and isinstance(ct.get("command"), list))
        for m in ct.get("volumeMounts") or []:
            c.check(f"container {n}: volume {m.get('name')} is declared",
                    m.get("name") in vols)
    check_restricted(c, pod)
    check_service(c, docs, pod, labels)


def check_restricted(c, pod):
    """The restricted Pod Security Standard the Namespace enforces."""
    psc = pod.get("securityContext") or {}
    c.check("pod: runAsNonRoot", psc.get("runAsNonRoot") is True)
    c.check("pod: a non-zero runAsUser", (psc.get("runAsUser") or 0) > 0)
    c.check("pod: seccomp RuntimeDefault",
            get(psc, "seccompProfile", "type") == "RuntimeDefault")
    for ct in (pod.get("initContainers") or []) + (pod.get("containers")
                                                   or []):
        sc = ct.get("securityContext") or {}
        n = ct.get("name")
        c.check(f"container {n}: no privilege escalation",
                sc.get("allowPrivilegeEscalation") is False)
        c.check(f"container {n}: drops ALL capabilities",
                get(sc, "capabilities", "drop") == ["ALL"])
    for v in pod.get("volumes") or []:
        c.check(f"volume {v.get('name')}: a type restricted allows",
                any(k in v for k in ("persistentVolumeClaim", "secret",
                                     "emptyDir", "configMap", "projected",
                                     "ephemeral")))


def check_service(c, docs, pod, labels):
    svc = one(docs, "Service")
    sel = get(svc, "spec", "selector", default={})
    c.check("Service: selector matches the pod labels",
            bool(sel) and all(labels.get(k) == v for k, v in sel.items()))
    ports = {p.get("name"): p.get("containerPort")
             for ct in pod.get("containers") or []
             for p in ct.get("ports") or []}
    for p in get(svc, "spec", "ports", default=[]):
        t = p.get("targetPort")
        c.check(f"Service port {p.get('name')}: targets a container port",
                t in ports or t in ports.values(), str(t))
    for ct in pod.get("containers") or []:
        for probe in ("readinessProbe", "livenessProbe"):
            hg = get(ct, probe, "httpGet")
            if hg is None:
                continue
            c.check(f"container {ct['name']}: {probe} port is declared",
                    hg.get("port") in ports or hg.get("port") in
                    ports.values())
            c.check(f"container {ct['name']}: {probe} needs no token",
                    hg.get("path") in ("/healthz", "/readyz"))


# ---------------------------------------------------------------------- RBAC
def c_strings(text):
    """Adjacent C string literals joined, after expanding simple string
    #defines."""
    defs = dict(re.findall(r'#define\s+(\w+)\s+("(?:[^"\\]|\\.)*")', text))
    toks = re.findall(r'"(?:[^"\\]|\\.)*"|\w+|[{},\[\]=]', text)
    out, cur = [], None
    for t in toks:
        t = defs.get(t, t)
        if t.startswith('"'):
            cur = (cur or "") + t[1:-1]
            continue
        if cur is not None:
            out.append(cur)
            cur = None
        out.append(t)
    return out


def watcher_paths(root):
    """The API paths of ingest/cache.c's resource table."""
    text = open(os.path.join(root, "ingest", "cache.c"),
                encoding="utf-8").read()
    m = re.search(r"resources\[RES_MAX\]\s*=\s*\{(.*?)\n\};", text, re.S)
    if not m:
        return []
    defs = "\n".join(re.findall(r"#define\s+\w+\s+\"[^\"]*\"", text))
    toks = c_strings(defs + "\n" + m.group(1))
    return [t for t in toks if t.startswith("/api")]


def attributes(path, query):
    """What the API server's authorizer sees: (group, resource, namespace,
    name), for a collection path (list or watch)."""
    segs = [s for s in path.split("/") if s]
    if segs[:1] == ["api"]:
        group, rest = "", segs[2:]
    else:
        group, rest = segs[1], segs[3:]
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    name = None
    for kv in query.split("&"):
        if kv.startswith("fieldSelector="):
            sel = urllib.parse.unquote(kv.split("=", 1)[1])
            m = re.fullmatch(r"metadata\.name==?([^,]+)", sel)
            name = m.group(1) if m else None
    return group, rest[0], ns, name


def grants(docs, sa):
    """Every rule bound to the service account: (scope namespace or None,
    rule, role name)."""
    roles = {}
    for _, d in docs:
        if d.get("kind") in ("ClusterRole", "Role"):
            key = (d["kind"], get(d, "metadata", "namespace"),
                   get(d, "metadata", "name"))
            roles[key] = d.get("rules") or []
    out = []
    for _, d in docs:
        kind = d.get("kind")
        if kind not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(s.get("kind") == "ServiceAccount" and s.get("name") == sa
                   and s.get("namespace") == NS
                   for s in d.get("subjects") or []):
            continue
        ref = d.get("roleRef") or {}
        scope = get(d, "metadata", "namespace") if kind == "RoleBinding" \
            else None
        rns = scope if ref.get("kind") == "Role" else None
        for r in roles.get((ref.get("kind"), rns, ref.get("name")), []):
            out.append((scope, r, ref.get("name")))
    return out


def allows(rule, scope, group, resource, ns, name, verb):
    if scope is not None and ns != scope:
        return False
    names = rule.get("resourceNames") or []
    return (group in (rule.get("apiGroups") or [])
            and resource in (rule.get("resources") or [])
            and verb in (rule.get("verbs") or [])
            and (not names or name in names))


def check_rbac(c, docs, requests, what):
    """Every request authorized, every granted (group, resource, verb) of
    every rule used, no wildcard."""
    sa = get(one(docs, "Deployment"), "spec", "template", "spec",
             "serviceAccountName")
    rules = grants(docs, sa)
    c.check(f"RBAC ({what}): rules are bound to the service account",
            bool(rules))
    used = set()
    for path, query, verb in requests:
        segs = [x for x in path.split("/") if x]
        if segs[:1] == ["apis"] and len(segs) <= 3:
            # Discovery (/apis/GROUP[/VERSION]) is a non-resource URL that
            # the built-in system:discovery ClusterRole grants every
            # authenticated user: no rule of ours is needed or used.
            c.check(f"RBAC ({what}): discovery GET {path} needs no rule",
                    verb == "list" and not query)
            continue
        g, res, ns, name = attributes(path, query)
        hit = [(i, r) for i, (scope, r, _) in enumerate(rules)
               if allows(r, scope, g, res, ns, name, verb)]
        c.check(f"RBAC ({what}): {verb} {path}"
                + (f"?{query}" if "fieldSelector" in query else "")
                + " is allowed", bool(hit))
        for i, _ in hit:
            used.add((i, g, res, verb))
    for i, (scope, r, role) in enumerate(rules):
        for g in r.get("apiGroups") or []:
            for res in r.get("resources") or []:
                for v in r.get("verbs") or []:
                    c.check(f"RBAC ({what}): {role} grants {v} on "
                            f"{g or 'core'}/{res} and the watcher uses it",
                            "*" not in (g, res, v) and (i, g, res, v) in used)


def static_requests(root):
    out = []
    for p in watcher_paths(root):
        path, _, query = p.partition("?")
        out += [(path, query, "list"), (path, query, "watch")]
    return out


# ------------------------------------------------------------ command lines
def help_text(binary, sub=None):
    args = [binary] + ([sub] if sub else []) + ["--help"]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return r.stdout.decode()


def subcommands(binary):
    text = help_text(binary)
    part = text.split("subcommands:", 1)[-1]
    return re.findall(r"^\s{2}([a-z]+)\s", part, re.M)


def gpuledger_args(ct):
    cmd = (ct.get("command") or []) + (ct.get("args") or [])
    return cmd[1:] if cmd[:1] == ["gpuledger"] else None


def check_commands(c, docs, binary):
    subs = subcommands(binary)
    c.check("gpuledger --help lists subcommands", len(subs) > 5, str(subs))
    dep = one(docs, "Deployment")
    for ct in containers(dep):
        n = ct.get("name")
        args = gpuledger_args(ct)
        if args is None:
            c.check(f"container {n}: a plain command (no shell)",
                    os.path.basename(str((ct.get("command") or [""])[0]))
                    in ("install",), str(ct.get("command")))
            continue
        if not c.check(f"container {n}: gpuledger {args[:1]} is a "
                       "subcommand", bool(args) and args[0] in subs):
            continue
        text = help_text(binary, args[0])
        for i, a in enumerate(args[1:], 1):
            if not a.startswith("--"):
                continue
            c.check(f"container {n}: gpuledger {args[0]} has {a}",
                    re.search(r"(?<![\w-])" + re.escape(a) + r"(?![\w-])",
                              text) is not None)
            value_next = re.search(re.escape(a) + r"[ =][A-Z]", text)
            if value_next:
                c.check(f"container {n}: {a} has a value",
                        i + 1 < len(args) and
                        not args[i + 1].startswith("--"))
        check_paths(c, ct, args)
    check_shared_db(c, dep)
    init = [x for x in get(dep, "spec", "template", "spec", "initContainers",
                           default=[])]
    serve = [x for x in containers(dep) if x.get("name") == "serve"]
    if init and serve:
        tf = flag(gpuledger_args(serve[0]) or [], "--token-file")
        c.check("init container writes the token file serve reads",
                tf is not None and tf in (init[0].get("command") or []))


def mount_of(ct, path):
    best = None
    for m in ct.get("volumeMounts") or []:
        mp = m.get("mountPath", "").rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def check_paths(c, ct, args):
    for f in ("--db", "--token-file", "--classes", "--record", "--kubeconfig",
              "--tls-cert", "--tls-key", "--tls-client-ca", "--cacert",
              "--cert", "--key"):
        p = flag(args, f)
        if p is not None:
            c.check(f"container {ct['name']}: {f} {p} is on a volume",
                    mount_of(ct, p) is not None)


def check_shared_db(c, dep):
    dbs = {}
    for ct in get(dep, "spec", "template", "spec", "containers", default=[]):
        args = gpuledger_args(ct) or []
        db = flag(args, "--db")
        if db is not None:
            m = mount_of(ct, db) or {}
            dbs[ct["name"]] = (m.get("name"), db[len(m.get("mountPath",
                                                             "")):])
    c.check("watch and serve use the same --db on the same volume",
            len(dbs) == 2 and len(set(dbs.values())) == 1, str(dbs))


# ---------------------------------------------------------- live: serve
def run_serve(c, docs, binary, tmp):
    """The serve container's command line, its mounts moved under tmp and
    the TLS files made (tests/deploy/serve_tls.py)."""
    srv = Serve(binary, docs, tmp)
    try:
        ct = srv.ct
        port = str(get(ct, "ports", 0, "containerPort"))
        c.check("serve --listen uses the container port",
                srv.listen.endswith(":" + port), srv.listen)
        if not c.check("the serve command line starts",
                       srv.port is not None, srv.first):
            return
        ports = {p.get("name"): p.get("containerPort")
                 for p in ct.get("ports") or []}
        for probe in ("readinessProbe", "livenessProbe"):
            path = get(ct, probe, "httpGet", "path")
            on_probe = srv.probe_listen is not None and \
                srv.probe_listen.endswith(":%s" % ports.get(
                    get(ct, probe, "httpGet", "port")))
            try:
                code, _ = srv.request(path, probe=on_probe)
            except Exception as e:  # noqa: BLE001 - reported as a failure
                code = str(e)
            # A fresh ledger holds no complete list yet: not ready to
            # judge (DESIGN 7), but alive.
            want = 503 if path == "/readyz" else 200
            c.check(f"serve answers its {probe} {path} without a token "
                    f"({want} on a fresh ledger)", code == want, str(code))
        try:
            code, _ = srv.request("/v1/tenants")
        except Exception as e:  # noqa: BLE001
            code = "refused" if srv.tls else str(e)
        c.check("serve demands a token (or a client certificate) for "
                "/v1/tenants", code in (401, "refused"), str(code))
        code, _ = srv.request("/v1/tenants", token=srv.admin,
                              cert=srv.client_cn or None)
        c.check("serve answers /v1/tenants to the admin token", code == 200,
                str(code))
    finally:
        srv.stop()


# ---------------------------------------------------------- live: watch
def start_apiserver(root, tmp):
    pf = os.path.join(tmp, "apiserver.port")
    srv = subprocess.Popen(
        [sys.executable, os.path.join(root, "tests", "apiserver",
                                      "fake_apiserver.py"),
         "--scenario", os.path.join(root, "tests", "apiserver", "scenarios",
                                    "small.json"),
         "--plain", "--port-file", pf],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    end = time.monotonic() + 20
    while time.monotonic() < end and not os.path.exists(pf):
        time.sleep(0.1)
    if not os.path.exists(pf):
        return srv, None
    conf = dict(ln.strip().split("=", 1) for ln in open(pf) if "=" in ln)
    return srv, conf


def watch_requests(c, docs, binary, root, tmp):
    """Runs the watch container's command line (its --db moved under tmp)
    with a kubeconfig for the test API server until every resource is
    watched; returns the (path, query, verb) it requested."""
    dep = one(docs, "Deployment")
    ct = [x for x in containers(dep) if x.get("name") == "watch"][0]
    args = list(gpuledger_args(ct) or [])
    db = flag(args, "--db")
    args = [os.path.join(tmp, "watchdb") if a == db else a for a in args]
    srv, conf = start_apiserver(root, tmp)
    w = None
    try:
        if not c.check("the test API server starts", conf is not None):
            return None
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write(KUBECONFIG % conf["url"])
        w = subprocess.Popen([binary] + args + ["--kubeconfig", kc],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        ctl = "http://127.0.0.1:%s/_control/" % conf["control_port"]
        want = len(watcher_paths(root))
        end = time.monotonic() + 30
        while time.monotonic() < end:
            st = json.load(urllib.request.urlopen(ctl + "state", timeout=5))
            if st.get("watchesStarted", 0) >= want:
                break
            time.sleep(0.2)
        # A watch is logged when it ends: stop the watcher, end them all.
        stop(w)
        w = None
        urllib.request.urlopen(urllib.request.Request(
            ctl + "close-watches", data=b"{}", method="POST"), timeout=5)
        reqs, end = [], time.monotonic() + 10
        while time.monotonic() < end:
            reqs = json.load(urllib.request.urlopen(ctl + "requests",
                                                    timeout=5))
            if sum(1 for r in reqs if r.get("watch")) >= want:
                break
            time.sleep(0.2)
        return [(r["path"], r["query"], "watch" if r.get("watch") else
                 "list") for r in reqs]
    finally:
        stop(w)
        stop(srv)


def stop(p):
    if p is None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: "%s"}
users:
- name: test
  user: {token: unused}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
"""


# ---------------------------------------------------------------- Dockerfile
def stages(text):
    out, cur = [], None
    for ln in re.sub(r"\\\n", " ", text).split("\n"):
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        if s.upper().startswith("FROM "):
            cur = {"from": s.split()[1], "lines": []}
            out.append(cur)
        elif cur is not None:
            cur["lines"].append(s)
    return out


def apt_packages(stage):
    pk = set()
    for ln in stage["lines"]:
        for m in re.finditer(r"apt-get install ([^&;]*)", ln):
            pk |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pk


def needed_packages(binary):
    """Debian packages that hold the binary's NEEDED libraries, or None
    where that cannot be found out (no readelf or dpkg)."""
    if not shutil.which("readelf") or not shutil.which("dpkg"):
        return None
    out = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE,
                         text=True).stdout
    # A `make test SANITIZE=...` binary also needs the sanitizer runtimes;
    # the image is built without them (its build stage runs plain `make`).
    libs = [lib for lib in re.findall(r"\(NEEDED\).*\[(.+?)\]", out)
            if not re.match(r"lib(asan|ubsan|tsan|lsan)\.so", lib)]
    pk = {}
    ldd = subprocess.run(["ldd", binary], stdout=subprocess.PIPE,
                         text=True).stdout
    where = dict(re.findall(r"^\s*(\S+) => (\S+)", ldd, re.M))
    for lib in libs:
        path = os.path.realpath(where.get(lib, lib))
        r = subprocess.run(["dpkg", "-S", path], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if r.returncode != 0:
            r = subprocess.run(["dpkg", "-S", where.get(lib, lib)],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        pk[lib] = r.stdout.split(":")[0] if r.returncode == 0 else None
    return pk


def check_dockerfile(c, docs, root, binary):
    text = open(os.path.join(root, "deploy", "Dockerfile")).read()
    st = stages(text)
    if not c.check("Dockerfile: multi-stage", len(st) >= 2):
        return
    c.check("Dockerfile: every stage is Debian 12",
            all(re.fullmatch(r"debian:12(-slim)?", s["from"]) for s in st))
    build, run = st[0], st[-1]
    copies = " ".join(ln for ln in build["lines"] if ln.startswith("COPY"))
    mk = open(os.path.join(root, "Makefile")).read()
    layers = re.search(r"^LAYERS\s*:=\s*(.*)$", mk, re.M).group(1).split()
    for d in ["Makefile"] + layers:
        c.check(f"Dockerfile: the build copies {d}",
                re.search(r"COPY (\S+ )*" + re.escape(d) + r"\b", copies)
                is not None)
    c.check("Dockerfile: the build does not copy the whole tree",
            re.search(r"COPY \. ", copies) is None)
    deps = open(os.path.join(root, "tools", "install-deps.sh")).read()
    pkgs = [w for w in re.search(r'pkgs="([^"]*)"', deps, re.S).group(1)
            .replace("\\\n", " ").split() if w != "\\"]
    bp = apt_packages(build)
    for p in pkgs:
        if p in ("check", "libsubunit-dev"):  # tests only
            continue
        c.check(f"Dockerfile: the build installs {p}", p in bp)
    c.check("Dockerfile: the build installs a compiler and make",
            "build-essential" in bp or {"gcc", "make"} <= bp)
    c.check("Dockerfile: the build runs make gpuledger",
            any(re.search(r"\bmake\b.*\bgpuledger\b", ln)
                for ln in build["lines"]))
    rp = apt_packages(run)
    need = needed_packages(binary)
    if need is None:
        # Not a skip: tools/install-deps.sh installs binutils (readelf).
        c.check("readelf and dpkg are there to list the runtime packages",
                False, "install binutils (tools/install-deps.sh)")
    else:
        for lib, p in sorted(need.items()):
            c.check(f"Dockerfile: runtime has {lib} ({p})",
                    p is not None and (p.split(":")[0] in rp or
                                       p.startswith("libc6")), str(p))
    c.check("Dockerfile: the runtime copies the binary from the build",
            any(re.match(r"COPY --from=\S+ \S*gpuledger /usr/(local/)?bin/",
                         ln) for ln in run["lines"]))
    user = [ln.split()[1] for ln in run["lines"] if ln.startswith("USER")]
    psc = get(one(docs, "Deployment"), "spec", "template", "spec",
              "securityContext", default={})
    c.check("Dockerfile: runs as the Deployment's non-root user",
            bool(user) and user[-1].split(":")[0] == str(psc.get("runAsUser"))
            and user[-1].split(":")[0] != "0", str(user))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    binary, root = os.path.abspath(a.bin), os.path.abspath(a.root)
    c = Checks()
    docs = load(root)
    c.check("deploy/ renders", len(docs) > 0)
    adocs = load(root, "deploy/admission")
    c.check("deploy/admission/ renders the webhook configuration only",
            [d.get("kind") for _, d in adocs] ==
            ["ValidatingWebhookConfiguration"])
    c.check("the base has no webhook configuration (it is applied after "
            "the pod is ready)",
            not any(d.get("kind") == "ValidatingWebhookConfiguration"
                    for _, d in docs))
    rdocs = load(root, "deploy/replicas")
    # Every object the three kustomizations make, as one set: kinds, names,
    # namespaces, no duplicates.
    check_shape(c, docs + adocs + rdocs)
    check_deployment(c, docs)
    c.check("ingest/cache.c's resource table is readable",
            len(watcher_paths(root)) >= 8, str(watcher_paths(root)))
    check_rbac(c, docs, static_requests(root), "cache.c")
    check_commands(c, docs, binary)
    # The optional read replicas (deploy/replicas/): real commands and
    # flags, one ledger for both containers, the restricted profile.
    c.check("deploy/replicas/ renders", len(rdocs) > 0)
    check_commands(c, rdocs, binary)
    check_restricted(c, get(one(rdocs, "Deployment"), "spec", "template",
                            "spec", default={}))
    check_dockerfile(c, docs, root, binary)
    # The cluster of members (deploy/cluster/, its init Job and the example
    # etcd): the design's shape (tests/deploy/check_cluster.py), and the
    # checks every kustomization gets: kinds, names, the restricted profile.
    got = check_cluster.run(c, root, binary, [d for _, d in docs],
                            [d for _, d in adocs])
    if got is not None:
        cdocs, idocs, edocs = got
        check_shape(c, [("deploy/cluster", d) for d in cdocs] + adocs +
                    [("deploy/cluster/init", d) for d in idocs or []] +
                    [("deploy/cluster/etcd-example", d)
                     for d in edocs or []],
                    ["Namespace", "ServiceAccount", "StatefulSet",
                     "Service", "PodDisruptionBudget", "Job"])
        for d in check_cluster.objs(cdocs, "StatefulSet") + \
                check_cluster.objs(idocs or [], "Job") + \
                check_cluster.objs(edocs or [], "StatefulSet"):
            check_restricted(c, get(d, "spec", "template", "spec",
                                    default={}))
    tmp = tempfile.mkdtemp(prefix="deploy_cli.")
    try:
        run_serve(c, docs, binary, tmp)
        reqs = watch_requests(c, docs, binary, root, tmp)
        if reqs is not None:
            c.check("the watcher made list and watch requests",
                    {v for _, _, v in reqs} == {"list", "watch"})
            check_rbac(c, docs, reqs, "live watcher")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
