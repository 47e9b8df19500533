#!/usr/bin/env python3
"""deploy/cluster/ run the way Kubernetes runs it (issue 44), on this
machine, by the commands of docs/operations.md: its ```sh blocks marked
`<!-- cluster: ... -->` (the fresh install, then the members' upgrade) run
as written under `sh -eu` in a scratch directory, `gpuledger` on the PATH
and `kubectl` a shell function that asks this process, which does each
call here: `apply -k` of deploy/cluster/etcd-example/, deploy/cluster/init/
and deploy/admission/ as rendered, and of deploy/cluster/ as rendered (or
--manifest FILE, or a broken copy); `create secret generic --from-file`;
`rollout status` and `wait` for the pods; `rollout restart` for the
rolling update. Any other call fails the block. Each pod runs through
tests/deploy/kubelet.py's Pod (its containers' exact commands, users,
read-only roots, volumes and Secrets as rendered; that file says how),
and around them what a cluster provides:

- a pod network: each pod its own network namespace (`ip netns`), a veth
  pair onto a bridge the test makes, an address from 198.18.0.0/15 (RFC
  2544, never a private range); a pod keeps its address when it is
  re-created (a StatefulSet's name, here its address too);
- cluster DNS as a hosts file in every pod (the kubelet's managed
  /etc/hosts): the headless Services' names of each etcd and each member
  pod, the webhook's Service name gpuledger.gpuledger.svc at a Service
  address where a kube-proxy stand-in (userspace mode: a TCP relay) sends
  each connection to a member whose readiness probe answered 200;
- the API server: tests/apiserver/fake_apiserver.py on the bridge's
  address (KUBERNETES_SERVICE_HOST), the service-account token the
  members' projected volume holds;
- cert-manager's Secrets: test certificates of the webhook's CA (serving,
  the API server's, the members' peer and Prometheus's client), and of
  etcd's own CA (etcd's serving and peer, the members' etcd client); the
  tokens and the signer key are the docs' own Secrets;
- the webhook as the API server calls it through its Service: clients
  (the API server's client certificate, the webhook's timeoutSeconds)
  that spread AdmissionReviews over the members whose readiness probe was
  200 when last read (read again every second; a terminating pod is
  dropped at its next read, as kube-proxy learns of it about that late);
- the StatefulSet controller: all members at once (Parallel), a rolling
  update from the highest ordinal down, each next only when the last one
  is Ready for minReadySeconds, and only when the PodDisruptionBudget's
  minAvailable stays met without the pod; the kubelet's stop (preStop,
  SIGTERM, the grace period);
- a node loss: a member's processes SIGKILLed and its network namespace
  deleted (no preStop, no SIGTERM), its volume kept, then the pod made
  again on that volume.

The checks, with admissions flowing from `apply -k deploy/admission/` on:
every member Ready, its probes 200; doors forward to the sequencer (their
gpuledger_cluster_verdict_forwarded_total grows, no fallback while all
run); the log past --sign-every and each member's /v1/checkpoint a note
signed by the key; no admission refused through the rolling update; then
the node loss (after the blocks): only admissions sent to the lost member
refused, within DESIGN 10's second (the spread of their send times) plus
the Service's re-read; at the end, all pods stopped, every answered
verdict in every member's ledger exactly once and the ledgers identical,
`verify` and `audit` on each (tests/cluster/history.py), and each note
proved by its member's ledger (`verify --checkpoint`).

Then the broken copies of the overlay (each must fail one of the checks
named): without the etcd client certificate, without the peer
credentials, without the signing key Secret, with replicas 1.

Needs root (namespaces, mounts, links), iproute2, util-linux, etcd,
etcdctl, openssl, kubectl, python3-yaml.
Usage: kube_cluster.py --bin GPULEDGER --root SRC [--manifest FILE]
       [--no-broken | --only-broken WORDS] [--keep]
Prints "ok:"/"FAIL:" lines, each phase's time, and
"checks: N passed, N failed".
"""
import argparse
import glob
import http.client
import json
import os
import random
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
from kubelet import API_PORT, SA_TOKEN, Pod, Quiet  # noqa: E402
from serve_tls import Checks, flag, get, make_pki  # noqa: E402
import history  # noqa: E402
import vclients  # noqa: E402

NS = "gpuledger"
ADMIN = "t0k3n-of-the-cluster-test-admin"
AUDITOR = "gpuledger-prometheus"  # the base's ServiceMonitor's client
PROBE_EVERY = 1.0  # the Service's re-read of readiness
MARK = "<!-- cluster:"


def doc_blocks(page):
    """The ```sh blocks of docs/operations.md that follow a MARK line."""
    out, lines = [], open(page, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        if line.startswith(MARK):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```sh"):
                j += 1
            k = j + 1
            while k < len(lines) and not lines[k].startswith("```"):
                k += 1
            out.append("\n".join(lines[j + 1:k]) + "\n")
    return out


def render(root, sub):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(root, sub)],
                         check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def one(docs, kind, name):
    for d in docs:
        if d.get("kind") == kind and get(d, "metadata", "name") == name:
            return d
    return {}


def sh(*args, check=True):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {p.stderr.strip()}")
    return p


class Network:
    """A bridge, a network namespace per pod, a veth pair each; addresses
    198.18.N.0/24 (N of this run, so that runs side by side differ)."""

    def __init__(self):
        n = os.getpid() % 200 + 20
        self.tag = f"gk{os.getpid() % 100000}"
        self.prefix = f"198.18.{n}"
        self.bridge = f"{self.tag}br"
        self.gw = f"{self.prefix}.1"   # the node: the API server
        self.vip = f"{self.prefix}.2"  # the Service gpuledger
        self.pods = {}                 # name -> (netns, address, index)

    def up(self):
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{self.gw}/24", "dev", self.bridge)
        sh("ip", "addr", "add", f"{self.vip}/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")

    def address(self, index):
        return f"{self.prefix}.{10 + index}"

    def add(self, name, index):
        ns = f"{self.tag}-{name}"
        veth = f"{self.tag}v{index}"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        sh("ip", "link", "set", veth, "master", self.bridge, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", f"{self.address(index)}/24", "dev",
           "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        sh("ip", "-n", ns, "route", "add", "default", "via", self.gw)
        self.pods[name] = (f"/var/run/netns/{ns}", self.address(index),
                           index)
        return self.pods[name]

    def remove(self, name):
        path, _, _ = self.pods.pop(name)
        sh("ip", "netns", "del", os.path.basename(path), check=False)

    def down(self):
        for name in list(self.pods):
            self.remove(name)
        sh("ip", "link", "del", self.bridge, check=False)


class World:
    """What the cluster gives the pods: network, names, Secrets, the API
    server, and the Services' view of readiness."""

    def __init__(self, args, docs, c, tmp):
        self.args, self.docs, self.c, self.tmp = args, docs, c, tmp
        self.net = Network()
        self.pki = os.path.join(tmp, "pki")
        self.etcd_pki = os.path.join(tmp, "etcd-pki")
        self.secrets = {}
        self.pods = {}        # name -> Pod (the current incarnation)
        self.ready = {}       # member name -> last readiness probe 200
        self.terminating = set()
        self.incarnation = {}
        self.addresses = {}
        self.stop_flag = threading.Event()
        self.threads = []
        self.apiserver = None
        self.hosts = os.path.join(tmp, "hosts")

    # -- Secrets ----------------------------------------------------------
    def make_pki(self):
        """cert-manager's part of deploy/common/ and deploy/cluster/: the
        webhook's CA, the serving certificate for its names (the API
        server's address too: the stand-in API server uses it), the API
        server's, the members' peer and Prometheus's client certificates;
        kube-root-ca.crt."""
        cert = lambda n: one(self.docs, "Certificate", n)  # noqa: E731
        serving = cert("gpuledger-serving")
        self.serving_dns = get(serving, "spec", "dnsNames", default=[])
        self.api_cn = get(cert("gpuledger-apiserver-client"), "spec",
                          "commonName", default="gpuledger-apiserver")
        self.peer_cn = get(cert("gpuledger-peer-client"), "spec",
                           "commonName", default="gpuledger-peer")
        # The auditor reads /metrics and /v1/checkpoint as Prometheus does.
        make_pki(self.pki, self.serving_dns,
                 [self.api_cn, self.peer_cn, AUDITOR],
                 ips=("127.0.0.1", self.net.gw))
        rd = lambda n: open(os.path.join(self.pki, n)).read()  # noqa: E731
        self.secrets.update({
            "gpuledger-serving-tls": {"tls.crt": rd("server.crt"),
                                      "tls.key": rd("server.key"),
                                      "ca.crt": rd("ca.crt")},
            "gpuledger-peer-client": {"tls.crt": rd(f"{self.peer_cn}.crt"),
                                      "tls.key": rd(f"{self.peer_cn}.key"),
                                      "ca.crt": rd("ca.crt")},
            "kube-root-ca.crt": {"ca.crt": rd("ca.crt")}})

    def make_etcd_pki(self, etcd_docs):
        """cert-manager's part of etcd-example/: etcd's own CA, etcd's
        serving and peer certificate (both usages), the members' etcd
        client certificate."""
        etls = one(etcd_docs, "Certificate", "gpuledger-etcd-tls")
        ecl = one(etcd_docs, "Certificate", "gpuledger-etcd-client")
        ecn = get(ecl, "spec", "commonName", default="gpuledger-member")
        make_pki(self.etcd_pki, get(etls, "spec", "dnsNames", default=[]),
                 [ecn], ips=get(etls, "spec", "ipAddresses",
                                default=["127.0.0.1"]),
                 server_usage="serverAuth,clientAuth")
        rd = lambda n: open(os.path.join(self.etcd_pki, n)).read()  # noqa
        self.secrets.update({
            "gpuledger-etcd-tls": {"tls.crt": rd("server.crt"),
                                   "tls.key": rd("server.key"),
                                   "ca.crt": rd("ca.crt")},
            "gpuledger-etcd-client": {"tls.crt": rd(f"{ecn}.crt"),
                                      "tls.key": rd(f"{ecn}.key"),
                                      "ca.crt": rd("ca.crt")}})
        self.etcd_client = (f"{self.etcd_pki}/ca.crt",
                            f"{self.etcd_pki}/{ecn}.crt",
                            f"{self.etcd_pki}/{ecn}.key")

    def secret(self, name):
        return self.secrets.get(name)

    # -- names ------------------------------------------------------------
    def write_hosts(self, names):
        """The Services' names: each pod of a StatefulSet under its
        headless Service, the webhook's Service at the relay."""
        lines = ["127.0.0.1 localhost", f"{self.net.gw} kubernetes.default.svc"]
        for name, svc, index in names:
            a = self.net.address(index)
            lines.append(f"{a} {name}.{svc}.{NS}.svc "
                         f"{name}.{svc}.{NS}.svc.cluster.local {name}")
        lines.append(f"{self.net.vip} gpuledger.{NS}.svc "
                     f"gpuledger.{NS}.svc.cluster.local")
        with open(self.hosts, "w") as f:
            f.write("\n".join(lines) + "\n")
        os.chmod(self.hosts, 0o644)

    # -- pods -------------------------------------------------------------
    def claim(self, pod, name, fs_group):
        d = os.path.join(self.tmp, "claims", pod, name)
        if not os.path.isdir(d):
            os.makedirs(d)
            os.chown(d, 0, fs_group if fs_group is not None else 0)
            os.chmod(d, 0o775 | (0o2000 if fs_group else 0))
        return d

    def start_pod(self, name, index, spec, claims=()):
        """Makes the pod's network and runs it: its init containers to
        completion, then its containers. Returns the Pod, or None when an
        init container failed."""
        if name not in self.net.pods:
            self.net.add(name, index)
        self.addresses[name] = self.net.address(index)
        path, _, _ = self.net.pods[name]
        k = self.incarnation[name] = self.incarnation.get(name, 0) + 1
        ptmp = os.path.join(self.tmp, "pods", f"{name}.{k}")
        os.makedirs(ptmp)
        os.chmod(ptmp, 0o755)
        fsg = get(spec, "securityContext", "fsGroup")
        pod = Pod(self.docs, self.args.bin, self.args.root, ptmp, self.c, net={
            "spec": spec, "name": name, "netns": path, "hosts": self.hosts,
            "secrets": self.secret, "api_host": self.net.gw,
            "claims": {n: self.claim(name, n, fsg) for n in claims}})
        pod.start_sandbox()
        self.pods[name] = pod
        if not pod.run_init():
            return None
        pod.start()
        return pod

    def address(self, name):
        """A pod's address, kept while it is gone (a client that still
        sends there reaches nothing)."""
        return self.addresses[name]

    def start_apiserver(self):
        pf = os.path.join(self.tmp, "apiserver.port")
        log = open(os.path.join(self.tmp, "apiserver.log"), "w")
        self.apiserver = subprocess.Popen([
            sys.executable,
            os.path.join(self.args.root, "tests/apiserver/fake_apiserver.py"),
            "--scenario", os.path.join(self.args.root,
                                       "tests/apiserver/scenarios/small.json"),
            "--cert", f"{self.pki}/server.crt",
            "--key", f"{self.pki}/server.key", "--token", SA_TOKEN,
            "--host", self.net.gw, "--port", str(API_PORT),
            "--port-file", pf], stdout=log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(pf) and os.path.getsize(pf) > 0:
                return True
            time.sleep(0.05)
        return False

    # -- the Services -----------------------------------------------------
    def probe(self, name, port, path):
        try:
            with urllib.request.urlopen(
                    f"http://{self.address(name)}:{port}{path}",
                    timeout=1) as r:
                return r.status == 200
        except Exception:
            return False

    def start_services(self, members, probe_port, probe_path, https):
        """Re-reads every member's readiness every second (each member on
        its own thread, so that one silent member delays no other), and
        relays the Service address's port 443 to a ready member."""
        self.members = members

        def prober(name):
            while not self.stop_flag.is_set():
                t = time.monotonic()
                ok = (name not in self.terminating and name in self.net.pods
                      and self.probe(name, probe_port, probe_path))
                self.ready[name] = ok and name not in self.terminating
                self.stop_flag.wait(max(0, PROBE_EVERY -
                                        (time.monotonic() - t)))
        for m in members:
            self.threads.append(threading.Thread(target=prober, args=(m,),
                                                 daemon=True))
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((self.net.vip, 443))
        ls.listen(64)
        ls.settimeout(0.5)
        self.relay_socket = ls

        def pipe(a, b):
            try:
                while True:
                    d = a.recv(65536)
                    if not d:
                        break
                    b.sendall(d)
            except OSError:
                pass
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def relay():
            while not self.stop_flag.is_set():
                try:
                    cl, _ = ls.accept()
                except OSError:
                    continue
                ready = self.ready_members()
                if not ready:
                    cl.close()
                    continue
                try:
                    up = socket.create_connection(
                        (self.address(random.choice(ready)), https), 2)
                except OSError:
                    cl.close()
                    continue
                for a, b in ((cl, up), (up, cl)):
                    threading.Thread(target=pipe, args=(a, b),
                                     daemon=True).start()
        self.threads.append(threading.Thread(target=relay, daemon=True))
        for t in self.threads:
            t.start()

    def ready_members(self):
        """The Service's endpoints: as last read, so a terminating pod is
        dropped within a second (kube-proxy learns of it that late)."""
        return [m for m in self.members if self.ready.get(m)]

    def stop_pods(self, pods, grace, hooks=True):
        """Stops pods as the kubelets do, all at once (without their
        preStop hooks when not hooks: once nothing is sent to them)."""
        ts = [threading.Thread(target=p.stop, kwargs={"grace": grace,
                                                     "hooks": hooks})
              for p in pods]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def stop(self):
        self.stop_flag.set()
        if getattr(self, "relay_socket", None) is not None:
            self.relay_socket.close()
        for t in self.threads:
            t.join(5)
        # The end of the test: what still runs is killed.
        for p in self.pods.values():
            p.kill()
        if self.apiserver is not None and self.apiserver.poll() is None:
            self.apiserver.kill()
            self.apiserver.wait()
        self.net.down()


class HTTPSTo(http.client.HTTPSConnection):
    """HTTPS to an address, checking the certificate against a name (the
    Service's, as the API server calls it)."""

    def __init__(self, address, port, name, ctx, timeout):
        super().__init__(address, port, context=ctx, timeout=timeout)
        self.name = name

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.name)


class Admissions:
    """The API server's webhook calls: threads, each picking a member at
    random among those the Service has ready, one AdmissionReview a
    connection, answers logged as tests/cluster/history.py reads them."""

    def __init__(self, world, https, timeout, out, clients=6, pause=0.05):
        self.w, self.https, self.timeout = world, https, timeout
        self.out = open(out, "w")
        self.lock = threading.Lock()
        self.ctx = ssl.create_default_context(cafile=f"{world.pki}/ca.crt")
        self.ctx.load_cert_chain(f"{world.pki}/{world.api_cn}.crt",
                                 f"{world.pki}/{world.api_cn}.key")
        self.stop_flag = threading.Event()
        self.clients, self.pause = clients, pause
        self.answers = []  # (monotonic sent, status, member)
        with open(vclients.REVIEW) as f:
            self.base = json.load(f)
        self.threads = []

    def one(self, c, j, rnd):
        uid = f"k-{c}-{j}"
        body = vclients.review(self.base, uid, rnd.choice(vclients.TENANTS),
                               f"vm-{c}-{j}", rnd.randint(1, 2))
        ready = self.w.ready_members()
        sent, t0 = vclients.now(), time.monotonic()
        status = answer = err = member = None
        if not ready:
            err = "refused"  # no endpoints: the API server calls nobody
        else:
            member = random.Random(rnd.random()).choice(ready)
            cn = HTTPSTo(self.w.address(member), self.https,
                         f"gpuledger.{NS}.svc", self.ctx, self.timeout)
            try:
                cn.request("POST", "/v1/admission", json.dumps(body),
                           {"Content-Type": "application/json"})
                r = cn.getresponse()
                status, answer = r.status, r.read()
            except Exception as e:
                err = history.no_answer_error(e)
            finally:
                cn.close()
        try:
            parsed = json.loads(answer) if answer else None
        except ValueError:
            parsed = None
        with self.lock:
            self.answers.append((t0, status, member))
            self.out.write(json.dumps({
                "uid": uid, "request": body, "sent": sent,
                "received": vclients.now() if status else None,
                "status": status, "body": parsed, "error": err,
                "member": member}) + "\n")

    def start(self):
        def client(c):
            rnd = random.Random(c)
            j = 0
            while not self.stop_flag.is_set():
                self.one(c, j, rnd)
                j += 1
                self.stop_flag.wait(self.pause)
        for c in range(self.clients):
            t = threading.Thread(target=client, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join()
        self.out.close()

    def refused(self, since=0, until=None):
        with self.lock:
            return [(t, s, m) for t, s, m in self.answers
                    if t >= since and (until is None or t < until) and
                    s != 200]

    def count(self):
        with self.lock:
            return len(self.answers)


def container_of(spec, name):
    return [c for c in spec.get("containers") or [] if c["name"] == name][0]


def port_number(ct, port):
    if isinstance(port, int):
        return port
    for p in ct.get("ports") or []:
        if p.get("name") == port:
            return p.get("containerPort")
    return None


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            try:
                return float(line.split()[-1])
            except ValueError:
                return None
    return None


class Broken(Exception):
    """A broken copy failed a check it must fail: the run stops there."""


class MustFail(Quiet):
    """The checks of a broken copy: quiet, and the run ends at the first
    failure of a check named in must_fail (by its start)."""

    def __init__(self, must_fail):
        super().__init__()
        self.must_fail = must_fail

    def check(self, name, ok, detail=""):
        super().check(name, ok, detail)
        if not ok and name.startswith(self.must_fail):
            raise Broken(name)
        return ok


class Run:
    def __init__(self, args, c):
        self.args, self.c = args, c
        self.t0 = time.monotonic()

    def phase(self, what):
        print(f"-- {time.monotonic() - self.t0:5.1f}s {what}", flush=True)

    def wait(self, cond, seconds, step=0.2):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cond():
                return True
            time.sleep(step)
        return cond()

    def get(self, w, member, path):
        """(status, body) of an auditor's GET to a member over TLS, at the
        member's name under the headless Service."""
        ctx = ssl.create_default_context(cafile=f"{w.pki}/ca.crt")
        ctx.load_cert_chain(f"{w.pki}/{AUDITOR}.crt",
                            f"{w.pki}/{AUDITOR}.key")
        cn = HTTPSTo(w.address(member), self.https,
                     f"{member}.gpuledger-members.{NS}.svc", ctx, 5)
        try:
            cn.request("GET", path)
            r = cn.getresponse()
            return r.status, r.read().decode(errors="replace")
        except Exception as e:
            return 0, str(e)
        finally:
            cn.close()

    def counters(self, w):
        out = {}
        for m in w.members:
            st, body = self.get(w, m, "/metrics")
            out[m] = (metric(body, "gpuledger_cluster_verdict_forwarded_total")
                      if st == 200 else None,
                      metric(body, "gpuledger_cluster_verdict_fallbacks_total")
                      if st == 200 else None)
        return out

    def leader(self, w):
        """The member whose URL P/leader holds (etcdctl with the members'
        etcd client certificate; the etcd pods' names are the pods')."""
        ca, cert, key = w.etcd_client
        p = sh("etcdctl", "--endpoints",
               ",".join(f"https://{w.address(e)}:2379" for e in w.etcds),
               "--cacert", ca, "--cert", cert, "--key", key,
               "--insecure-skip-tls-verify", "--command-timeout=3s",
               "get", f"{self.prefix}/leader", "--print-value-only",
               check=False)
        for m in w.members:
            if f"//{m}." in p.stdout:
                return m
        return None

    def seq(self, w, m):
        try:
            with urllib.request.urlopen(
                    f"http://{w.address(m)}:{self.probe_port}/readyz",
                    timeout=2) as r:
                return json.loads(r.read()).get("seq")
        except Exception:
            return None

    def main(self, docs, tmp):
        args, c = self.args, self.c
        etcd_docs = render(args.root, "deploy/cluster/etcd-example")
        init_docs = render(args.root, "deploy/cluster/init")
        sts = one(docs, "StatefulSet", "gpuledger")
        spec = get(sts, "spec", "template", "spec", default={})
        ct = container_of(spec, "member")
        cmd = (ct.get("command") or []) + (ct.get("args") or [])
        self.prefix = flag(cmd, "--prefix")
        self.https = port_number(ct, "https")
        rp = get(ct, "readinessProbe", "httpGet", default={})
        self.probe_port = port_number(ct, rp.get("port"))
        replicas = get(sts, "spec", "replicas", default=1)
        min_ready = get(sts, "spec", "minReadySeconds", default=0)
        pdb = one(docs, "PodDisruptionBudget", "gpuledger")
        min_avail = get(pdb, "spec", "minAvailable", default=0)
        ests = one(etcd_docs, "StatefulSet", "gpuledger-etcd")
        espec = get(ests, "spec", "template", "spec", default={})
        self.etcd_claims = get(ests, "spec", "volumeClaimTemplates",
                               default=[])
        self.claims = [get(t, "metadata", "name") for t in
                       get(sts, "spec", "volumeClaimTemplates", default=[])]
        job = one(init_docs, "Job", "gpuledger-cluster-init")
        jspec = get(job, "spec", "template", "spec", default={})
        admission = render(args.root, "deploy/admission")
        timeout = min(w.get("timeoutSeconds", 10) for d in admission
                      if d.get("kind") == "ValidatingWebhookConfiguration"
                      for w in d.get("webhooks") or [])
        w = World(args, docs, c, tmp)
        self.w = w
        try:
            w.net.up()
        except RuntimeError as e:
            c.check("the pod network (a bridge, veth pairs, network "
                    "namespaces) can be made", False, str(e))
            return
        try:
            self.scenario(w, spec, espec, jspec, replicas, min_ready,
                          min_avail, timeout, tmp)
        finally:
            self.phase("stopping")
            w.stop()

    def scenario(self, w, spec, espec, jspec, replicas, min_ready,
                 min_avail, timeout, tmp):
        """docs/operations.md's cluster blocks, run as written, each
        kubectl call done here (kubectl()); then the node loss and the
        ledgers."""
        c = self.c
        w.etcds = [f"gpuledger-etcd-{i}" for i in range(3)]
        w.members = [f"gpuledger-{i}" for i in range(replicas)]
        names = [(e, "gpuledger-etcd", i) for i, e in enumerate(w.etcds)]
        names += [(m, "gpuledger-members", 10 + i)
                  for i, m in enumerate(w.members)]
        w.write_hosts(names)
        # cert-manager's part: deploy/common/'s certificates.
        w.make_pki()
        if not c.check("the stand-in API server starts on the pod network",
                       w.start_apiserver()):
            return
        self.spec, self.espec, self.jspec = spec, espec, jspec
        self.replicas, self.min_ready = replicas, min_ready
        self.min_avail, self.timeout, self.tmp = min_avail, timeout, tmp
        self.mi = {m: 10 + i for i, m in enumerate(w.members)}
        self.adm = None
        self.rolled = False
        blocks = doc_blocks(os.path.join(self.args.root, "docs",
                                         "operations.md"))
        if not c.check("docs/operations.md has the cluster's blocks "
                       f"({MARK} ...)", len(blocks) >= 2):
            return
        try:
            ok = True
            for text in blocks:
                ok = ok and self.run_block(text)
            c.check("docs/operations.md's cluster blocks run to their end",
                    ok)
            c.check("... and they roll the members (rollout restart)",
                    self.rolled)
            if ok and self.adm is not None:
                self.node_loss()
        finally:
            if self.adm is not None:
                self.adm.stop()
        if self.adm is not None and ok:
            self.phase(f"{self.adm.count()} admissions sent; the ledgers")
            self.ledgers(w, self.adm, tmp)

    def run_block(self, text):
        """The block under sh -eu in the scratch directory, kubectl a
        function that asks this process over two pipes and returns what
        it answers; gpuledger on the PATH."""
        scratch = os.path.join(self.tmp, "operator")
        os.makedirs(scratch, exist_ok=True)
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir, exist_ok=True)
        if not os.path.exists(os.path.join(bindir, "gpuledger")):
            os.symlink(self.args.bin, os.path.join(bindir, "gpuledger"))
        req_r, req_w = os.pipe()
        ack_r, ack_w = os.pipe()
        prelude = (f'kubectl() {{ printf "%s\\n" "$#" >&{req_w}; '
                   f'for a; do printf "%s\\n" "$a" >&{req_w}; done; '
                   f'read -r st <&{ack_r}; return "$st"; }}\n')
        env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"])
        log = open(os.path.join(self.tmp, "operator.log"), "a+")
        sh_p = subprocess.Popen(["sh", "-eu", "-c", prelude + text],
                                cwd=scratch, env=env, stdout=log,
                                stderr=subprocess.STDOUT,
                                pass_fds=(req_w, ack_r))
        os.close(req_w)
        os.close(ack_r)
        reqs = os.fdopen(req_r)
        acks = os.fdopen(ack_w, "w")
        try:
            while True:
                n = reqs.readline()
                if not n:
                    break
                argv = [reqs.readline().rstrip("\n")
                        for _ in range(int(n))]
                self.phase("kubectl " + " ".join(argv))
                st = self.kubectl(argv, scratch)
                acks.write(f"{0 if st else 1}\n")
                acks.flush()
        finally:
            if sh_p.poll() is None and sys.exc_info()[0] is not None:
                sh_p.kill()
            rc = sh_p.wait()
            reqs.close()
            try:
                acks.close()
            except OSError:
                pass
        log.seek(0)
        out = log.read()
        log.close()
        return self.c.check("a block of docs/operations.md's cluster "
                            "section runs (sh -eu)", rc == 0,
                            f"exit {rc}: {out[-300:]}")

    def kubectl(self, argv, scratch):
        """What one kubectl call of the docs does here; True when it
        succeeded."""
        c, w = self.c, self.w
        a = list(argv)
        if a[:2] == ["-n", NS]:
            a = a[2:]
        timeouts = [x for x in a if x.startswith("--timeout=")]
        a = [x for x in a if not x.startswith("--timeout=")]
        if a[:2] == ["apply", "-f"]:
            return os.path.exists(os.path.join(self.args.root, a[2]))
        if a[:2] == ["apply", "-k"]:
            d = a[2].rstrip("/")
            if d == "deploy/cluster/etcd-example":
                return self.apply_etcd()
            if d == "deploy/cluster/init":
                return self.apply_init()
            if d == "deploy/cluster":
                return self.apply_members()
            if d == "deploy/admission":
                return self.apply_admission()
        if a[:3] == ["create", "secret", "generic"] and len(a) > 3:
            files = {}
            for x in a[4:]:
                if not x.startswith("--from-file="):
                    return False
                k, _, path = x[len("--from-file="):].partition("=")
                with open(os.path.join(scratch, path)) as f:
                    files[k] = f.read()
            w.secrets[a[3]] = files
            return True
        if a[:2] == ["rollout", "status"] and len(a) == 3:
            if a[2] == "statefulset/gpuledger-etcd":
                return self.etcd_ready()
            if a[2] == "statefulset/gpuledger":
                return self.members_ready()
        if a == ["wait", "--for=condition=complete",
                 "job/gpuledger-cluster-init"]:
            return self.init_done()
        if a == ["rollout", "restart", "statefulset/gpuledger"]:
            return self.rolling_update()
        c.check(f"kubectl {' '.join(argv)} is a call the test knows",
                False, str(timeouts))
        return False

    def apply_etcd(self):
        """etcd-example/: cert-manager's certificates (the Secrets
        gpuledger-etcd-tls and gpuledger-etcd-client), then the pods."""
        w = self.w
        w.make_etcd_pki(render(self.args.root, "deploy/cluster/etcd-example"))
        eclaims = [get(t, "metadata", "name") for t in self.etcd_claims]
        for i, e in enumerate(w.etcds):
            w.start_pod(e, i, self.espec, eclaims)
        return True

    def etcd_ready(self):
        w = self.w
        ok = self.wait(lambda: all(w.probe(e, 2381, "/health")
                                   for e in w.etcds), 60, 0.5)
        return self.c.check(
            "etcd's 3 pods are ready (/health on the metrics port)", ok,
            " / ".join(w.pods[e].log("etcd")[-300:] for e in w.etcds))

    def apply_init(self):
        self.init = self.w.start_pod("gpuledger-cluster-init", 30,
                                     self.jspec)
        return self.init is not None

    def init_done(self):
        init, w = self.init, self.w
        done = self.wait(lambda: not init.running("init"), 30)
        rc = init.procs["init"].returncode
        w.net.remove("gpuledger-cluster-init")
        del w.pods["gpuledger-cluster-init"]
        return self.c.check("the init Job's pod completes (cluster init, "
                            "exit 0)", done and rc == 0,
                            init.log("init")[-400:])

    def apply_members(self):
        w = self.w
        for m in w.members:
            w.start_pod(m, self.mi[m], self.spec, self.claims)
        ct = container_of(self.spec, "member")
        rp = get(ct, "readinessProbe", "httpGet", default={})
        self.ready_path = rp.get("path")
        w.start_services(w.members, self.probe_port, rp.get("path"),
                         self.https)
        return True

    def members_ready(self):
        c, w, replicas = self.c, self.w, self.replicas
        ok = self.wait(lambda: len(w.ready_members()) == replicas, 20, 0.5)
        if not c.check(f"all {replicas} members are Ready (readinessProbe "
                       f"{self.ready_path} 200)", ok and replicas >= 1,
                       " / ".join(f"{m}: {w.pods[m].log('member')[-300:]}"
                                  for m in w.members)):
            return False
        if self.rolled:
            return True
        # Before any load: can the StatefulSet be rolled at all?
        c.check(f"the PodDisruptionBudget lets a member go (minAvailable "
                f"{self.min_avail} of {replicas} Ready members)",
                replicas - 1 >= self.min_avail)
        c.check("the members hold the service-account token (the leader "
                "runs the watcher)", all(
                    os.path.exists(f"/proc/{w.pods[m].host_pid('member')}"
                                   "/root/var/run/secrets/kubernetes.io/"
                                   "serviceaccount/token")
                    for m in w.members))
        ct = container_of(self.spec, "member")
        for kind in ("startupProbe", "livenessProbe"):
            hp = get(ct, kind, "httpGet", default={})
            port = port_number(ct, hp.get("port"))
            c.check(f"each member's {kind} {hp.get('path')} answers 200",
                    all(w.probe(m, port, hp.get("path"))
                        for m in w.members))
        return True

    def apply_admission(self):
        """The webhook configuration: from here the API server calls the
        Service. Then steady state, and the log past --sign-every."""
        c, w = self.c, self.w
        self.adm = Admissions(w, self.https, self.timeout,
                              os.path.join(self.tmp, "answers.ndjson"))
        self.adm.start()
        time.sleep(2)
        self.forwards_work(w, "steady state")
        adm = self.adm
        c.check("admissions are answered in steady state (none refused)",
                adm.count() > 0 and not adm.refused(), str(adm.refused()[:3]))
        # The log past --sign-every: every member signs the same note.
        ct = container_of(self.spec, "member")
        cmd = (ct.get("command") or []) + (ct.get("args") or [])
        every = int(flag(cmd, "--sign-every") or 1000)
        self.phase(f"admissions until the log passes {every}")
        ok = self.wait(lambda: all((self.seq(w, m) or 0) > every + 20
                                   for m in w.members), 150, 1)
        c.check(f"the log passes --sign-every ({every})", ok,
                str({m: self.seq(w, m) for m in w.members}))
        self.notes = {}
        for m in w.members:
            st, body = self.get(w, m, "/v1/checkpoint")
            self.notes[m] = body if st == 200 else None
            c.check(f"{m}'s /v1/checkpoint is a signed note", st == 200 and
                    "\n\n" in body and "\u2014 " in body,
                    f"{st} {body[:200]}")
        return True

    def rolling_update(self):
        """As the StatefulSet controller does it: ordinals down, each
        next only once the last is Ready for minReadySeconds, and only
        when the PodDisruptionBudget stays met without the pod."""
        c, w, adm, spec = self.c, self.w, self.adm, self.spec
        if adm is None:
            return c.check("the rolling update runs with admissions "
                           "flowing (after deploy/admission/)", False)
        self.rolled = True
        t_roll = time.monotonic()
        for i in reversed(range(self.replicas)):
            m = w.members[i]
            others = [x for x in w.ready_members() if x != m]
            if not c.check(f"rolling update: {m} may go (the "
                           f"PodDisruptionBudget's minAvailable "
                           f"{self.min_avail} stays met: {len(others)} "
                           "others Ready)", len(others) >= self.min_avail):
                return False
            w.terminating.add(m)
            w.pods[m].stop(grace=get(spec, "terminationGracePeriodSeconds",
                                     default=30))
            w.terminating.discard(m)
            w.start_pod(m, self.mi[m], spec, self.claims)
            ok = self.wait(lambda: m in w.ready_members(), 60, 0.2)
            if not c.check(f"rolling update: the new {m} is Ready", ok,
                           w.pods[m].log("member")[-400:]):
                return False
            time.sleep(self.min_ready)
            c.check(f"rolling update: the new {m} stayed Ready for "
                    f"minReadySeconds ({self.min_ready} s)",
                    m in w.ready_members())
        r = adm.refused()
        c.check(f"rolling update: no admission refused (nor before it: "
                f"{adm.count()} sent)", not r, f"{len(r)} refused: {r[:5]}")
        print(f"rolling update: {time.monotonic() - t_roll:.1f} s")
        self.forwards_work(w, "after the rolling update")
        return True

    def node_loss(self):
        """The sequencer's node is lost: its pod's processes killed and
        its network namespace deleted, no preStop, no SIGTERM; the pod
        made again on its volume."""
        c, w, adm = self.c, self.w, self.adm
        self.phase("node loss (the sequencer's pod)")
        lost = self.leader(w) or w.members[0]
        t_loss = time.monotonic()
        w.pods[lost].kill()
        w.net.remove(lost)
        time.sleep(3)
        w.start_pod(lost, self.mi[lost], self.spec, self.claims)
        ok = self.wait(lambda: lost in w.ready_members(), 60, 0.2)
        c.check(f"node loss: {lost} re-created on its volume is Ready",
                ok, w.pods[lost].log("member")[-400:])
        time.sleep(2)
        r = adm.refused(since=t_loss)
        span = (max(t for t, _, _ in r) - min(t for t, _, _ in r)) if r \
            else 0
        c.check("node loss: refused admissions span at most DESIGN 10's "
                f"1 s (plus the Service's {PROBE_EVERY:.0f} s re-read of "
                "readiness)", span <= 1 + PROBE_EVERY,
                f"{len(r)} refused over {span:.2f} s: {r[:5]}")
        c.check("node loss: only admissions sent to the lost member are "
                "refused", all(x == lost for _, _, x in r),
                str([x for _, _, x in r][:10]))
        print(f"node loss: {len(r)} refused over {span:.2f} s")
        self.forwards_work(w, "after the node loss")

    def forwards_work(self, w, what, tries=4):
        """Steady state: a window of 2 s in which every door's forwarded
        verdicts grow and no forward fails (the first of up to `tries`:
        a leader change or a slow moment may fall back before it)."""
        for _ in range(tries):
            ld = self.leader(w)
            before = self.counters(w)
            time.sleep(2)
            after = self.counters(w)
            doors = [m for m in w.members if m != ld]
            grew = {m: (after[m][0] or 0) - (before[m][0] or 0)
                    for m in doors}
            fell = {m: (after[m][1] or 0) - (before[m][1] or 0)
                    for m in w.members}
            ok = ld is not None and doors and \
                all(v > 0 for v in grew.values())
            if (ok and not any(fell.values())) or not doors:
                break
        self.c.check(f"{what}: the sequencer is a member ({ld}) and each "
                     "door's forwarded verdicts grow", ok,
                     f"leader {ld}, forwarded {grew}, counters {after}")
        self.c.check(f"{what}: no forward fails (fallbacks stay)",
                     not any(fell.values()), f"{fell}")

    def ledgers(self, w, adm, tmp):
        c = self.c
        # Every member caught up with the same head, then stopped.
        ok = self.wait(lambda: len({self.seq(w, m)
                                    for m in w.members}) == 1, 30, 0.5)
        c.check("the members end at the same seq", ok,
                str({m: self.seq(w, m) for m in w.members}))
        # The doors first, the leader last: a member that stops while
        # another leads would miss what the leader still appends.
        ld = self.leader(w)
        doors = [m for m in w.members if m != ld]
        for group in (doors, [ld] if ld else []):
            w.terminating.update(group)
            w.stop_pods([w.pods[m] for m in group], 30, hooks=False)
        dirs = {m: os.path.join(tmp, "claims", m, self.claims[0])
                for m in w.members}
        pre = []
        logs = {m: history.member_dir(self.args.bin, m, d, pre)
                for m, d in dirs.items()}
        answers = history.load_answers(os.path.join(tmp, "answers.ndjson"))
        vs = pre + history.check(answers, logs)
        for v in vs[:10]:
            print(f"history: {v.kind}: {v.message}")
        c.check(f"history: {len(answers)} answers against every member's "
                "ledger: each answered verdict in each exactly once, the "
                "ledgers identical, verify and audit on each", not vs,
                f"{len(vs)} violations")
        for m, note in (getattr(self, "notes", None) or {}).items():
            if note is None:
                continue
            f = os.path.join(tmp, f"{m}.note")
            with open(f, "w") as o:
                o.write(note)
            pubs = glob.glob(os.path.join(tmp, "operator", "keys", "*.pub"))
            p = sh(self.args.bin, "verify", "--db", dirs[m], "--checkpoint",
                   f, "--key", pubs[0] if pubs else "/nonexistent",
                   check=False)
            c.check(f"{m}'s note is signed by gpuledger-sign-key and its "
                    "ledger holds that tree (verify --checkpoint)",
                    p.returncode == 0, (p.stdout + p.stderr)[-300:])


def statefulset_ct(docs):
    sts = one(docs, "StatefulSet", "gpuledger")
    spec = sts["spec"]["template"]["spec"]
    return sts, spec, container_of(spec, "member")


def drop_flags(cmd, names):
    out, skip = [], False
    for a in cmd:
        if skip:
            skip = False
            continue
        if a in names:
            skip = True
            continue
        out.append(a)
    return out


def drop_secret(spec, ct, secret):
    vols = [v for v in spec.get("volumes") or []
            if get(v, "secret", "secretName") == secret]
    names = {v["name"] for v in vols}
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in names]
    ct["volumeMounts"] = [m for m in ct.get("volumeMounts") or []
                          if m["name"] not in names]


def no_etcd_cert(docs):
    _, _, ct = statefulset_ct(docs)
    ct["command"] = drop_flags(ct["command"], ("--etcd-cert", "--etcd-key"))


def no_peer_credentials(docs):
    _, spec, ct = statefulset_ct(docs)
    ct["command"] = drop_flags(ct["command"], ("--peer-cert", "--peer-key"))


def no_sign_key(docs):
    _, spec, ct = statefulset_ct(docs)
    ct["command"] = drop_flags(ct["command"], ("--sign-key", "--sign-every"))
    drop_secret(spec, ct, "gpuledger-sign-key")


def one_replica(docs):
    sts, _, _ = statefulset_ct(docs)
    sts["spec"]["replicas"] = 1


# The broken copies: (what, change, the checks of which one must fail;
# a check named by its start).
BROKEN = [
    ("without the etcd client certificate", no_etcd_cert,
     ("all 3 members are Ready",)),
    ("without the peer credentials", no_peer_credentials,
     ("steady state: the sequencer is a member",
      "steady state: no forward fails")),
    ("without the signing key Secret", no_sign_key,
     ("gpuledger-0's /v1/checkpoint is a signed note",)),
    ("with replicas: 1", one_replica,
     ("the PodDisruptionBudget lets a member go",
      "rolling update: gpuledger-0 may go")),
]


def run(args, c, docs):
    tmp = tempfile.mkdtemp(prefix="gpuledger-kube-")
    os.chmod(tmp, 0o755)
    r = Run(args, c)
    try:
        r.main(docs, tmp)
    except Broken:
        pass
    finally:
        print(f"-- {time.monotonic() - r.t0:.1f}s in all", flush=True)
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--manifest")
    ap.add_argument("--no-broken", action="store_true")
    ap.add_argument("--only-broken", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    c = Checks()
    if os.geteuid() != 0:
        c.check("runs as root (namespaces, mounts, links)", False)
        print(f"checks: {c.passed} passed, {c.failed} failed")
        sys.exit(1)
    if args.manifest:
        with open(args.manifest) as f:
            base = [d for d in yaml.safe_load_all(f) if d]
    else:
        base = render(args.root, "deploy/cluster")
    if args.only_broken is None:
        run(args, c, base)
    for what, change, must_fail in ([] if args.no_broken else BROKEN):
        if args.only_broken is not None and \
                args.only_broken not in what:
            continue
        print(f"== the overlay {what}", flush=True)
        docs = json.loads(json.dumps(base))
        change(docs)
        q = MustFail(must_fail)
        run(args, q, docs)
        names = [n for n, _ in q.failures]
        failed = [n for n in names if n.startswith(must_fail)]
        c.check(f"the overlay {what} fails the test", bool(failed),
                str(q.failures)[:600])
        for n, d in q.failures[:3]:
            print(f"   it fails: {n}: {d[:300]}")
    print(f"checks: {c.passed} passed, {c.failed} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
