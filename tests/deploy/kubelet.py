#!/usr/bin/env python3
"""Runs the pod of deploy/ the way the kubelet runs it, on this machine.

The manifest is what `kubectl kustomize deploy/` renders (or --manifest
FILE). Its Deployment's pod gets what a node gives a pod and nothing more:

- a pod sandbox: its own network namespace (loopback only) and, when the
  pod sets shareProcessNamespace, one PID namespace for all its containers
  (the sandbox's pause process is PID 1); otherwise each container gets a
  PID namespace of its own and its command runs as PID 1 there;
- per container: its own mount namespace whose root is the image (this
  machine's /usr, /etc, /lib ... read-only, the binary where the Dockerfile
  copies it), read-only when readOnlyRootFilesystem, /proc of its PID
  namespace, and exactly the volumeMounts the manifest gives it;
- the pod's securityContext: runAsUser, runAsGroup, fsGroup as a
  supplementary group and owner of the volumes, no capabilities, no new
  privileges;
- volumes as the kubelet lays them out: a PVC and emptyDirs are
  directories of group fsGroup (emptyDirs world-writable), secret and
  projected files are owned by root with group fsGroup and mode
  defaultMode plus group read; the service-account token is mounted at
  /var/run/secrets/kubernetes.io/serviceaccount into every container when
  automountServiceAccountToken is on (the kubelet's kube-api-access
  volume), else only where a projected volume puts it;
- the environment the kubelet sets (KUBERNETES_SERVICE_HOST/PORT, HOSTNAME,
  the image's PATH, the container's env).

Init containers run first, one after another, to completion; then the
containers together, each with its exact command. Local stand-ins only for
what a cluster provides: the API server is tests/apiserver/fake_apiserver.py
(HTTPS, the service-account token, a recorded scenario) inside the pod's
network namespace, the secrets hold test certificates and tokens.

Then the checks: both containers keep running, serve's /readyz on the probe
port answers 200 (and only after the watcher's first list), a VMInstance
AdmissionReview over TLS with the API server's client certificate is
answered, the watcher's metrics port answers, the service-account token is
visible only where the manifest means it, and serve's user cannot read the
watcher's token through /proc.

Needs root (namespaces, mounts), util-linux (unshare, nsenter, setpriv),
iproute2, openssl, kubectl, python3-yaml.
Usage: kubelet.py --bin GPULEDGER --root SRC [--manifest FILE] [--expect-fail]
Prints "ok:"/"FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_tls import Checks, certificate, get, make_pki  # noqa: E402

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
API_PORT = 6443
ADMIN = "t0k3n-for-the-pod-check"
SA_TOKEN = "sa-t0k3n-of-the-watcher"

# The mount namespace of one container, set up as root and then entered:
# $1 the root directory, $2 the file of mounts ("HOSTPATH TARGET ro|rw"
# lines), $3 "ro" for a read-only root; then the command to exec.
SETUP = r'''
set -eu
R=$1; M=$2; RO=$3; shift 3
# The image's layers: this machine's directories under an overlay whose
# upper layer (the container's writable layer) is on a tmpfs of its own.
W=$R.layers
mkdir -p "$W"; mount -t tmpfs tmpfs "$W"
mount -t tmpfs -o mode=0755 tmpfs "$R"
layers=
for d in bin sbin lib lib32 lib64 libx32 usr etc; do
	if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$R/$d"
	elif [ -d "/$d" ]; then
		mkdir -p "$R/$d" "$W/$d/up" "$W/$d/work"
		mount -t overlay overlay \
			-o "lowerdir=/$d,upperdir=$W/$d/up,workdir=$W/$d/work" "$R/$d"
		layers="$layers $d"
	fi
done
mkdir -p "$R/proc" "$R/dev" "$R/tmp" "$R/var/run" "$R/run"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
while read -r src dst mode; do
	if [ -d "$src" ]; then mkdir -p "$R$dst"
	else mkdir -p "$(dirname "$R$dst")"; : >"$R$dst"; fi
	mount --bind "$src" "$R$dst"
	[ "$mode" = ro ] && mount -o remount,bind,ro "$R$dst"
done <"$M"
if [ "$RO" = ro ]; then
	for d in $layers; do mount -o remount,ro "$R/$d"; done
	mount -o remount,ro "$R"
fi
exec chroot "$R" "$@"
'''


def rendered(root, manifest):
    if manifest:
        with open(manifest, encoding="utf-8") as f:
            return [d for d in yaml.safe_load_all(f) if d]
    out = subprocess.run(["kubectl", "kustomize", os.path.join(root, "deploy")],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def image_binary_path(root):
    """Where deploy/Dockerfile copies the binary in the runtime stage."""
    dest = "/usr/local/bin/gpuledger"
    with open(os.path.join(root, "deploy", "Dockerfile")) as f:
        for line in f:
            w = line.split()
            if len(w) >= 3 and w[0] == "COPY" and w[-2].endswith("gpuledger"):
                dest = w[-1]
    return dest


def children(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        return [int(x) for x in f.read().split()]


def ns_pid(pid):
    """The PID of host process pid in its innermost PID namespace."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("NSpid:"):
                return int(line.split()[-1])
    return pid


def leaf(pid):
    """The last of a chain of single children (nsenter forks)."""
    for _ in range(10):
        try:
            c = children(pid)
        except OSError:
            return pid
        if len(c) != 1:
            return pid
        pid = c[0]
    return pid


class Pod:
    """A pod: the Deployment's of deploy/ by default. With `net` (a cluster
    of pods, tests/deploy/kube_cluster.py), the pod of `net`'s spec instead:
    its name, its network namespace (a path made by the caller, on a
    bridge), a hosts file for the Services' names (the kubelet's managed
    /etc/hosts), the Secrets' files (a function of a name), the API
    server's address, and its claims (volumeClaimTemplates: directories
    that outlive the pod)."""

    def __init__(self, docs, binary, root, tmp, c, net=None):
        self.c = c
        self.tmp = tmp
        self.net = net
        if net is None:
            dep = [d for d in docs if d.get("kind") == "Deployment" and
                   get(d, "metadata", "name") == "gpuledger"][0]
            self.spec = get(dep, "spec", "template", "spec", default={})
        else:
            self.spec = net["spec"]
        self.name = net["name"] if net else "gpuledger-pod"
        sc = self.spec.get("securityContext") or {}
        self.uid = sc.get("runAsUser", 0)
        self.gid = sc.get("runAsGroup", 0)
        self.fs_group = sc.get("fsGroup")
        self.shared_pid = bool(self.spec.get("shareProcessNamespace"))
        sa = [d for d in docs if d.get("kind") == "ServiceAccount" and
              get(d, "metadata", "name") ==
              self.spec.get("serviceAccountName", "default")]
        auto = self.spec.get("automountServiceAccountToken")
        if auto is None:
            auto = (sa[0].get("automountServiceAccountToken", True)
                    if sa else True)
        self.automount = auto
        self.docs = docs
        self.binary = binary
        self.image_bin = image_binary_path(root)
        self.procs = {}
        self.pause = None
        self.apiserver = None
        self.pki = os.path.join(tmp, "pki")
        if net is None:
            pairs = [("rendered", d) for d in docs]
            serving = certificate(pairs, "gpuledger-serving")
            client = certificate(pairs, "gpuledger-apiserver-client")
            self.dns = get(serving, "spec", "dnsNames", default=[])
            self.client_cn = get(client, "spec", "commonName",
                                 default="gpuledger-apiserver")
            make_pki(self.pki, self.dns, [self.client_cn])
        self.volumes = {}
        self.make_volumes()

    # -- volumes --------------------------------------------------------
    def own(self, path, mode):
        os.chown(path, 0, self.fs_group if self.fs_group is not None else 0)
        os.chmod(path, mode)

    def secret_files(self, name):
        """What a cluster's secret (or configMap) holds here."""
        if self.net is not None:
            return self.net["secrets"](name)
        if name == "gpuledger-tokens":
            return {"tokens": f"{ADMIN} admin\n"
                              f"cert:{self.client_cn} admission\n"}
        if name == "gpuledger-serving-tls":
            return {k: open(os.path.join(self.pki, v)).read()
                    for k, v in (("tls.crt", "server.crt"),
                                 ("tls.key", "server.key"),
                                 ("ca.crt", "ca.crt"))}
        if name == "kube-root-ca.crt":
            return {"ca.crt": open(os.path.join(self.pki, "ca.crt")).read()}
        return None

    def write_files(self, d, files, mode):
        os.makedirs(d, exist_ok=True)
        self.own(d, 0o755 | (0o2000 if self.fs_group is not None else 0))
        for k, v in files.items():
            p = os.path.join(d, k)
            with open(p, "w") as f:
                f.write(v)
            # The kubelet adds group read whenever fsGroup is set.
            self.own(p, mode | (0o040 if self.fs_group is not None else 0))

    def projected(self, d, vol):
        files = {}
        for src in get(vol, "projected", "sources", default=[]):
            if "serviceAccountToken" in src:
                files[src["serviceAccountToken"].get("path", "token")] = \
                    SA_TOKEN
            for kind in ("configMap", "secret"):
                if kind in src:
                    have = self.secret_files(src[kind]["name"]) or {}
                    for it in src[kind].get("items") or \
                            [{"key": k, "path": k} for k in have]:
                        if it["key"] in have:
                            files[it["path"]] = have[it["key"]]
            for it in get(src, "downwardAPI", "items", default=[]):
                if get(it, "fieldRef", "fieldPath") == "metadata.namespace":
                    files[it["path"]] = "gpuledger"
                if get(it, "fieldRef", "fieldPath") == "metadata.name":
                    files[it["path"]] = self.name
        self.write_files(d, files,
                         get(vol, "projected", "defaultMode", default=0o644))

    def make_volumes(self):
        # The claims of volumeClaimTemplates: the caller's directories,
        # kept across the pod's incarnations.
        for n, d in (self.net or {}).get("claims", {}).items():
            self.volumes[n] = d
        for vol in self.spec.get("volumes") or []:
            n = vol["name"]
            d = os.path.join(self.tmp, "volumes", n)
            self.volumes[n] = d
            if "secret" in vol:
                files = self.secret_files(vol["secret"]["secretName"])
                self.c.check(f"volume {n}: a stand-in for secret "
                             f"{vol['secret']['secretName']}",
                             files is not None)
                self.write_files(d, files or {},
                                 vol["secret"].get("defaultMode", 0o644))
            elif "projected" in vol:
                self.projected(d, vol)
            elif "emptyDir" in vol:
                os.makedirs(d)
                self.own(d, 0o777 | (0o2000 if self.fs_group else 0))
            else:  # a persistentVolumeClaim or ephemeral: a fresh volume
                os.makedirs(d)
                self.own(d, 0o775 | (0o2000 if self.fs_group else 0))
        if self.automount:
            d = os.path.join(self.tmp, "volumes", "kube-api-access")
            self.write_files(d, {"token": SA_TOKEN, "namespace": "gpuledger",
                                 "ca.crt": open(os.path.join(
                                     self.pki, "ca.crt")).read()}, 0o644)
            self.volumes["kube-api-access"] = d

    def mounts(self, ct):
        ms = [(self.volumes[m["name"]] +
               ("/" + m["subPath"] if m.get("subPath") else ""),
               m["mountPath"], "ro" if m.get("readOnly") else "rw")
              for m in ct.get("volumeMounts") or []]
        if self.automount and not any(m[1] == SA_DIR for m in ms):
            ms.append((self.volumes["kube-api-access"], SA_DIR, "ro"))
        if self.net is not None and self.net.get("hosts"):
            ms.append((self.net["hosts"], "/etc/hosts", "ro"))
        # The image's directory of the binary holds only it (as in
        # debian-slim's /usr/local/bin).
        img = os.path.join(self.tmp, "image")
        os.makedirs(img, exist_ok=True)
        exe = os.path.join(img, os.path.basename(self.image_bin))
        shutil.copy(self.binary, exe)
        os.chmod(exe, 0o755)
        ms.insert(0, (img, os.path.dirname(self.image_bin), "ro"))
        return ms

    # -- the sandbox and the containers -----------------------------------
    def start_sandbox(self):
        if self.net is not None:
            # The caller made the network namespace; a PID namespace of
            # the pod's own only when it shares one.
            if not self.shared_pid:
                self.pause_pid = None
                return
            args = ["nsenter", f"--net={self.net['netns']}", "unshare",
                    "--fork", "--kill-child"]
        else:
            args = ["unshare", "--net", "--fork", "--kill-child"]
        if self.shared_pid:
            args += ["--pid", "--mount-proc"]
        self.pause = subprocess.Popen(
            args + ["sh", "-c", "ip link set lo up && exec sleep 100000"])
        for _ in range(100):
            c = children(self.pause.pid)
            if c and os.readlink(f"/proc/{c[0]}/exe").endswith("sleep"):
                self.pause_pid = c[0]
                return
            time.sleep(0.05)
        raise RuntimeError("the pod sandbox did not start")

    def enter(self, pid_ns=True):
        if self.net is not None and not self.shared_pid:
            return ["nsenter", f"--net={self.net['netns']}"]
        a = ["nsenter", "-t", str(self.pause_pid), "--net"]
        if pid_ns and self.shared_pid:
            a.append("--pid")
        return a

    def start_apiserver(self, root):
        pf = os.path.join(self.tmp, "apiserver.port")
        log = open(os.path.join(self.tmp, "apiserver.log"), "w")
        self.apiserver = subprocess.Popen(
            self.enter(pid_ns=False) + [
                sys.executable,
                os.path.join(root, "tests/apiserver/fake_apiserver.py"),
                "--scenario",
                os.path.join(root, "tests/apiserver/scenarios/small.json"),
                "--cert", f"{self.pki}/server.crt",
                "--key", f"{self.pki}/server.key",
                "--token", SA_TOKEN, "--port", str(API_PORT),
                "--port-file", pf], stdout=log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(pf) and os.path.getsize(pf) > 0:
                return True
            time.sleep(0.05)
        return False

    def command(self, ct):
        name = ct["name"]
        csc = ct.get("securityContext") or {}
        uid = csc.get("runAsUser", self.uid)
        gid = csc.get("runAsGroup", self.gid)
        rootdir = os.path.join(self.tmp, "rootfs", name)
        os.makedirs(rootdir)
        mf = os.path.join(self.tmp, f"mounts.{name}")
        with open(mf, "w") as f:
            for src, dst, mode in self.mounts(ct):
                f.write(f"{src} {dst} {mode}\n")
        env = {"PATH": IMAGE_PATH, "HOSTNAME": self.name, "HOME": "/",
               "KUBERNETES_SERVICE_HOST":
                   (self.net or {}).get("api_host", "127.0.0.1"),
               "KUBERNETES_SERVICE_PORT": str(API_PORT)}
        fields = {"metadata.name": self.name,
                  "metadata.namespace": "gpuledger"}
        for e in ct.get("env") or []:
            if "value" in e:
                env[e["name"]] = str(e["value"])
            ref = get(e, "valueFrom", "fieldRef", "fieldPath")
            if ref in fields:
                env[e["name"]] = fields[ref]
        groups = [str(self.fs_group)] if self.fs_group is not None else []
        priv = ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={gid}"]
        priv += [f"--groups={','.join(groups)}"] if groups else \
            ["--clear-groups"]
        if csc.get("allowPrivilegeEscalation") is False:
            priv.append("--no-new-privs")
        if "ALL" in (get(csc, "capabilities", "drop", default=[]) or []):
            priv += ["--inh-caps=-all", "--bounding-set=-all"]
        # The kubelet expands $(VAR) of the container's environment in its
        # command and args.
        cmd = [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                      lambda m: env.get(m.group(1), m.group(0)), a)
               for a in (ct.get("command") or []) + (ct.get("args") or [])]
        inner = priv + ["--", "/usr/bin/env", "-i"] + \
            [f"{k}={v}" for k, v in env.items()] + cmd
        unshare = ["unshare", "--mount", "--propagation", "private"]
        if not self.shared_pid:
            unshare += ["--pid", "--fork"]
        ro = "ro" if csc.get("readOnlyRootFilesystem") else "rw"
        return self.enter() + unshare + ["sh", "-c", SETUP, "setup",
                                         rootdir, mf, ro] + inner

    def run_init(self):
        ok = True
        for ct in self.spec.get("initContainers") or []:
            p = subprocess.run(self.command(ct), capture_output=True,
                               text=True, timeout=60)
            ok = self.c.check(f"init container {ct['name']} completes",
                              p.returncode == 0,
                              (p.stdout + p.stderr)[-600:]) and ok
        return ok

    def start(self):
        for ct in self.spec.get("containers") or []:
            log = open(os.path.join(self.tmp, f"{ct['name']}.log"), "w")
            self.procs[ct["name"]] = subprocess.Popen(
                self.command(ct), stdout=log, stderr=subprocess.STDOUT)

    def host_pid(self, name):
        """The host PID of the container's own process (past nsenter's and
        unshare's forks)."""
        return leaf(self.procs[name].pid)

    def log(self, name):
        with open(os.path.join(self.tmp, f"{name}.log"), errors="replace") \
                as f:
            return f.read()

    def running(self, name):
        return self.procs[name].poll() is None

    def curl(self, url, *extra):
        p = subprocess.run(self.enter(pid_ns=False) + [
            "curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "5",
            *extra, url], capture_output=True, text=True)
        body, _, code = p.stdout.rpartition("\n")
        return (int(code) if code.isdigit() else 0), body

    def pre_stop(self):
        """Each container's preStop exec hook, run inside the container
        (its mount, PID and network namespaces, as its user), all at once;
        waits for them (the kubelet's grace period bounds them)."""
        hooks = []
        for ct in self.spec.get("containers") or []:
            cmd = get(ct, "lifecycle", "preStop", "exec", "command")
            p = self.procs.get(ct["name"])
            if not cmd or p is None or p.poll() is not None:
                continue
            csc = ct.get("securityContext") or {}
            hooks.append(subprocess.Popen(
                ["nsenter", "-t", str(self.host_pid(ct["name"])), "--mount",
                 "--pid", "--net", "--root", "--wd=/", "--",
                 "/usr/bin/setpriv",
                 f"--reuid={csc.get('runAsUser', self.uid)}",
                 f"--regid={csc.get('runAsGroup', self.gid)}",
                 "--clear-groups", "--"] + cmd,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        for h in hooks:
            h.wait()

    def kill(self):
        """The node is lost: every process of the pod ends at once (SIGKILL,
        no preStop, no SIGTERM); the caller tears its network down."""
        own = [self.host_pid(n) for n, p in self.procs.items()
               if p.poll() is None]
        for pid in own:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def stop(self, grace=15, hooks=True):
        """Stops the pod as the kubelet does: its preStop hooks, then
        SIGTERM to each container's
        own process (not the nsenter/unshare wrappers: without a shared PID
        namespace the command is PID 1 of its own and would outlive them),
        SIGKILL after the grace period. Returns the PIDs still alive."""
        if hooks:
            self.pre_stop()
        own = {n: self.host_pid(n) for n, p in self.procs.items()
               if p.poll() is None}
        for pid in own.values():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs.values():
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for p in (self.apiserver, self.pause):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
        alive = []
        for pid in own.values():
            try:
                os.kill(pid, signal.SIGKILL)
                alive.append(pid)
            except ProcessLookupError:
                pass
        return alive


def container(spec, name):
    for ct in spec.get("containers") or []:
        if ct["name"] == name:
            return ct
    return {}


def port_of(ct, name, default=None):
    for p in ct.get("ports") or []:
        if p.get("name") == name:
            return p.get("containerPort")
    return default


def probe_path(ct, kind):
    return get(ct, kind, "httpGet", "path"), get(ct, kind, "httpGet", "port")


def review(name, count):
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": "0d6e3a52-1b6a-4c55-9a8e-000000000001",
            "kind": {"group": "apps.cozystack.io", "version": "v1alpha1",
                     "kind": "VMInstance"},
            "resource": {"group": "apps.cozystack.io",
                         "version": "v1alpha1", "resource": "vminstances"},
            "namespace": "tenant-acme", "name": name,
            "operation": "CREATE",
            "userInfo": {"username": "alice", "groups": ["tenants"]},
            "object": {"apiVersion": "apps.cozystack.io/v1alpha1",
                       "kind": "VMInstance",
                       "metadata": {"name": name,
                                    "namespace": "tenant-acme"},
                       "spec": {"gpus": [{"class": "h100",
                                          "count": count}]}},
            "oldObject": None, "dryRun": False}})


def run(args, c):
    docs = rendered(args.root, args.manifest)
    tmp = tempfile.mkdtemp(prefix="gpuledger-pod-")
    os.chmod(tmp, 0o755)
    pod = Pod(docs, args.bin, args.root, tmp, c)
    spec = pod.spec
    srv, wat = container(spec, "serve"), container(spec, "watch")
    try:
        pod.start_sandbox()
        c.check("the stand-in API server starts in the pod's network",
                pod.start_apiserver(args.root))
        if not pod.run_init():
            return
        pod.start()
        path, port = probe_path(srv, "readinessProbe")
        probe = port_of(srv, port, port) if isinstance(port, str) else port
        ready = 0
        body = ""
        for _ in range(200):
            if not all(pod.running(n) for n in pod.procs):
                break
            ready, body = pod.curl(f"http://127.0.0.1:{probe}{path}")
            if ready == 200:
                break
            time.sleep(0.1)
        for n in pod.procs:
            c.check(f"container {n} is running", pod.running(n),
                    pod.log(n)[-800:])
        c.check(f"serve's readinessProbe {path} answers 200", ready == 200,
                f"{ready} {body} / serve: {pod.log('serve')[-400:]}")
        lp, lport = probe_path(srv, "livenessProbe")
        code, _ = pod.curl(f"http://127.0.0.1:{port_of(srv, lport, lport)}"
                           f"{lp}")
        c.check(f"serve's livenessProbe {lp} answers 200", code == 200)
        sp, sport = probe_path(srv, "startupProbe")
        if sp is not None:
            code, _ = pod.curl(f"http://127.0.0.1:"
                               f"{port_of(srv, sport, sport)}{sp}")
            c.check(f"serve's startupProbe {sp} answers 200", code == 200)
        for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
            wp, wport = probe_path(wat, kind)
            if kind == "livenessProbe":
                c.check(f"watch has a {kind}", wp is not None)
            if wp is not None:
                code, _ = pod.curl(f"http://127.0.0.1:"
                                   f"{port_of(wat, wport, wport)}{wp}")
                c.check(f"watch's {kind} {wp} answers 200", code == 200)
        https = port_of(srv, "https", 8443)
        host = pod.dns[0] if pod.dns else "localhost"
        tls = ["--resolve", f"{host}:{https}:127.0.0.1",
               "--cacert", f"{pod.pki}/ca.crt",
               "--cert", f"{pod.pki}/{pod.client_cn}.crt",
               "--key", f"{pod.pki}/{pod.client_cn}.key",
               "-H", "Content-Type: application/json"]
        code, body = pod.curl(f"https://{host}:{https}/v1/admission", *tls,
                              "--data-binary", review("pod-check-vm", 1))
        ans = {}
        try:
            ans = json.loads(body).get("response", {})
        except ValueError:
            pass
        c.check("a VMInstance AdmissionReview over TLS with the API "
                "server's client certificate is answered",
                code == 200 and ans.get("uid") ==
                "0d6e3a52-1b6a-4c55-9a8e-000000000001" and
                isinstance(ans.get("allowed"), bool), f"{code} {body[:300]}")
        # Judged on the cluster's list: the class is known once ready.
        c.check("it is judged on the watcher's list (h100 is a known class)",
                get(ans, "status", "reason") not in (None, "UnknownClass"),
                body[:300])
        code, body = pod.curl(f"https://{host}:{https}/v1/verdicts?limit=5",
                              *tls, "-H", f"Authorization: Bearer {ADMIN}")
        c.check("the verdict is in the ledger both containers share",
                code == 200 and "pod-check-vm" in body, f"{code} {body[:200]}")
        check_token_scope(pod, c)
    finally:
        alive = pod.stop()
        c.check("the pod stops: no process of it outlives SIGTERM",
                not alive, f"still running: {alive}")
        if os.environ.get("KEEP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def check_token_scope(pod, c):
    """The service-account token where the manifest means it: the watcher
    has it, serve (network-facing) has not, and serve's user cannot read
    the watcher's through /proc in a shared PID namespace."""
    tok = "var/run/secrets/kubernetes.io/serviceaccount/token"
    wpid, spid = pod.host_pid("watch"), pod.host_pid("serve")
    if not c.check("both containers still run for the token checks",
                   pod.running("watch") and pod.running("serve")):
        return
    c.check("the watcher has the service-account token",
            os.path.exists(f"/proc/{wpid}/root/{tok}"))
    c.check("serve has no service-account token",
            os.path.exists(f"/proc/{spid}/root/etc") and
            not os.path.exists(f"/proc/{spid}/root/{tok}"))
    if not pod.shared_pid:
        return
    # From inside serve's namespaces, as serve's user: the watcher's root.
    target = f"/proc/{ns_pid(wpid)}/root/{tok}"
    p = subprocess.run(
        ["nsenter", "-t", str(spid), "--mount", "--pid", "--root", "--",
         "/usr/bin/setpriv", f"--reuid={pod.uid}", f"--regid={pod.gid}",
         "--clear-groups", "--", "/bin/cat", target],
        capture_output=True, text=True)
    c.check("serve's user cannot read the watcher's token through /proc",
            p.returncode != 0 and SA_TOKEN not in p.stdout,
            p.stdout[:100] + p.stderr[:200])


def pod_spec(docs):
    return [d for d in docs if d.get("kind") == "Deployment"][0]["spec"][
        "template"]["spec"]


def no_shared_pid(docs):
    pod_spec(docs).pop("shareProcessNamespace", None)


def automount(docs):
    pod_spec(docs)["automountServiceAccountToken"] = True


# Manifest changes that must fail the pod: (what, change, the checks of
# which at least one must then fail). Without a shared PID namespace both
# containers are PID 1 of their own and whichever opens the ledger second
# fails on the reader lock: serve or watch, as the kubelet's timing goes.
MUTATIONS = [
    ("without shareProcessNamespace", no_shared_pid,
     ("container serve is running", "container watch is running")),
    ("with automountServiceAccountToken", automount,
     ("serve has no service-account token",)),
]


class Quiet(Checks):
    """Checks that remember what failed instead of printing."""

    def __init__(self):
        super().__init__()
        self.failures = []

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            self.failures.append((name, detail))
        return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--manifest")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    c = Checks()
    if os.geteuid() != 0:
        c.check("runs as root (namespaces and mounts)", False)
    else:
        run(args, c)
        base = rendered(args.root, args.manifest)
        for what, change, must_fail in MUTATIONS:
            docs = json.loads(json.dumps(base))
            change(docs)
            f = tempfile.NamedTemporaryFile("w", suffix=".yaml",
                                            delete=False)
            yaml.safe_dump_all(docs, f)
            f.close()
            q = Quiet()
            run(argparse.Namespace(bin=args.bin, root=args.root,
                                   manifest=f.name), q)
            os.unlink(f.name)
            names = [n for n, _ in q.failures]
            failed = [n for n in must_fail if n in names]
            c.check(f"the pod {what} fails: one of {must_fail!r} fails",
                    bool(failed), str(q.failures)[:600])
            if what.startswith("without shareProcessNamespace"):
                detail = " ".join(dict(q.failures).get(n, "") for n in failed)
                c.check("... and the container that failed says why (the "
                        "PID namespace)", "PID namespace" in detail,
                        detail[:300])
    print(f"checks: {c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
