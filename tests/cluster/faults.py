#!/usr/bin/env python3
"""The fault harness of DESIGN 11 "What it must survive": a real 3-member
etcd with a TCP proxy per member (etcd_cluster.py), 3 `gpuledger member
--watch` processes on copies of one single-pod ledger (`cluster init
--db`) watching the test Kubernetes API server
(tests/apiserver/fake_apiserver.py): the member holding P/leader is the
writer of observations and the verdict sequencer, the others are doors
that forward verdicts to it ("One sequencer, every member a door"),
each reachable by its peers through a proxy of the harness
(--advertise-url), with the peer token; admission load from several
clients (vclients.py, spread over every member; some retries with the
same uid, rule 3) and observations (a Tenant's budget changed in the API
server), each fault injected under that load and then checked; every run
ends with tests/cluster/history.py over every answer and every member's
ledger (log, verify, audit).

    faults.py --bin GPULEDGER [--dir DIR] [--seed S] [--faults A,B,...]
              [--random N] [--clients C] [--requests R] [--check-every K]

--faults runs the named faults in that order (default: each once, the
table's order); --random N draws N faults at random from the repeatable
ones (the soak). The destructive one, `wipe-reinit`, always runs last,
after the history check of everything before it. Prints "seed S" first:
SEED=S (or --seed S) replays the same draw, loads and victims.

A fault is one row of FAULTS: name -> (inject, check); inject runs while
the load runs (it may start its own requests), check after the load and
once every member is at P/head again. The sequencer's rows (kill-,
stop-sequencer, lost-forward-answer, forward-without-credentials) find
it in P/leader; the pipeline's (a middle txn failing, txns out of order)
are tests/cluster_pipeline_cli.sh's, not rows yet. Output: "ok: NAME:
what" / "FAIL: NAME: what" lines, then "faults: P passed, F failed"; exit
0 when nothing failed.
"""
import argparse
import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import etcd_cluster
import history

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "etcd_cluster.py")
APISERVER = os.path.join(HERE, "..", "apiserver", "fake_apiserver.py")
SCENARIO = os.path.join(HERE, "..", "apiserver", "scenarios", "small.json")
VCLIENTS = os.path.join(HERE, "vclients.py")
HISTORY = os.path.join(HERE, "history.py")
BASE = os.path.join(HERE, "..", "query", "base.ndjson")
REVIEW = os.path.join(HERE, "..", "webhook", "vminstance-create-allowed.json")
PREFIX = "/f/a"
VERDICT_TIMEOUT_MS = 3000  # the member's bound (rule 2)
WEBHOOK_TIMEOUT_S = 10     # the API server's timeoutSeconds it stands for
FORWARD_TIMEOUT_MS = 800   # a door's wait for the sequencer
LEASE_TTL_S = 5            # P/leader's lease (the default): a takeover
                           # within about it; shorter ones lose renewals on
                           # a loaded machine (a keepalive waits TTL/8)
NAMES = ("m0", "m1", "m2")
# Bearer tokens: the API server's (admission), the members' own (peer),
# an auditor's (GETs, /metrics); the Kubernetes API server's.
ADM_TOKEN = "adm-token-0123456789"
PEER_TOKEN = "peer-token-0123456789"
AUD_TOKEN = "aud-token-0123456789"
KUBE_TOKEN = "kube-s3cret"
# The Tenant whose budget the observations change (tenant-acme's h100).
TENANT = {"apiVersion": "apps.cozystack.io/v1alpha1", "kind": "Tenant",
          "metadata": {"name": "acme", "namespace": "tenant-root"}}
BUDGET_KEY = "h100.gpuclass.cozystack.io/devices"


def txn_match(text):
    """The harness's drop-answer MATCH for the etcd txns that put text (a
    request's uid, in a VERDICT of a value: base64 at any of 3
    alignments): "request_put," and the alternatives."""
    alts = []
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + text.encode()).decode()
        alts.append(enc[4 if k else 0:(k + len(text)) // 3 * 4])
    return "request_put," + "|".join(alts)
# The watcher's complete list: a member is ready for admission only after it.
SYNCED = (b'{"type":"NOTE","code":"Synced","kind":null,"name":null,'
          b'"namespace":null,"message":"complete list: the base ledger"}\n')


class Run:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.abspath(a.bin)
        self.dir = a.dir
        self.rnd = random.Random(a.seed)
        self.passed = 0
        self.failed = 0
        self.fault = "setup"
        self.procs = {}
        self.ports = {}
        self.answers = os.path.join(self.dir, "answers")
        self.n_req = 0
        self.n_feed = 0
        self.harness = None
        self.apiserver = None
        self.env = {}
        self.lport = {}  # a member's own port (stays across restarts)
        self.pport = {}  # the port of the proxy its peers reach it by

    # ------------------------------------------------------------ results
    def ok(self, what):
        self.passed += 1
        print(f"ok: {self.fault}: {what}", flush=True)

    def bad(self, what):
        self.failed += 1
        print(f"FAIL: {self.fault}: {what}", flush=True)

    def expect(self, cond, what, why=""):
        if cond:
            self.ok(what)
        else:
            self.bad(what + (f": {why}" if why else ""))
        return cond

    # ---------------------------------------------------------- processes
    def sh(self, *cmd, stdin=None, timeout=60):
        r = subprocess.run(list(cmd), input=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout,
                           env=dict(os.environ, ETCDCTL_API="3"))
        return r.returncode, r.stdout.decode(errors="replace"), \
            r.stderr.decode(errors="replace")

    def ctl(self, *args):
        """The harness's ctl, over its socket from here: a proxy's mode
        changes in a millisecond, not a Python start (a second or more on
        a loaded machine, when a member's verdict has 3)."""
        out = ""
        try:
            with socket.socket(socket.AF_UNIX) as c:
                c.settimeout(30)
                c.connect(os.path.join(self.dir, "etcd", "ctl.sock"))
                c.sendall((" ".join(args) + "\n").encode())
                while True:
                    b = c.recv(4096)
                    if not b:
                        break
                    out += b.decode()
        except OSError as e:
            out = f"error: {e}"
        if out.startswith("error"):
            self.bad(f"ctl {' '.join(args)}: {out}")
        return out

    def stats(self, proxy):
        return json.loads(self.ctl("stats", proxy) or "{}")

    def up(self):
        ed = os.path.join(self.dir, "etcd")
        log = open(os.path.join(self.dir, "harness.log"), "w")
        self.harness = subprocess.Popen(
            ["python3", HARNESS, "up", ed, "--watch-pid", str(os.getpid())],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        end = time.monotonic() + 60
        while not os.path.exists(os.path.join(ed, "ready")):
            if time.monotonic() > end or self.harness.poll() is not None:
                return False
            time.sleep(0.1)
        for ln in open(os.path.join(ed, "env")):
            k, _, v = ln.strip().partition("=")
            self.env[k] = v
        return self.up_apiserver() and self.up_peers()

    def up_apiserver(self):
        """The test Kubernetes API server the members watch, a kubeconfig
        for it, and the members' token files."""
        pf = os.path.join(self.dir, "srv.port")
        self.apiserver = subprocess.Popen(
            ["python3", APISERVER, "--plain", "--token", KUBE_TOKEN,
             "--scenario", SCENARIO, "--seed", "5", "--port-file", pf],
            stdout=open(os.path.join(self.dir, "srv.log"), "w"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=etcd_cluster.die_with_parent)
        if not self.wait_until(20, lambda: os.path.exists(pf)):
            return False
        kv = dict(ln.strip().split("=", 1) for ln in open(pf) if "=" in ln)
        self.control = f"http://127.0.0.1:{kv['control_port']}"
        with open(os.path.join(self.dir, "kc"), "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n"
                    f"  cluster: {{server: \"{kv['url']}\"}}\nusers:\n"
                    f"- name: w\n  user: {{token: {KUBE_TOKEN}}}\n"
                    "contexts:\n- name: fake\n  context: {cluster: fake, "
                    "user: w}\ncurrent-context: fake\n")
        for name, text in (("tokens", f"{ADM_TOKEN} admission\n"
                            f"{PEER_TOKEN} peer\n{AUD_TOKEN} auditor\n"),
                           ("peer.tok", PEER_TOKEN + "\n")):
            path = os.path.join(self.dir, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o600)
        return True

    def up_peers(self):
        """Each member's own port, and a proxy of the harness in front of
        it (x<name>) that its peers reach it by: a test drops or resets
        what a door and the sequencer say to each other there."""
        for n in NAMES:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            self.lport[n] = s.getsockname()[1]
            s.close()
            out = self.ctl("proxy", "x" + n, str(self.lport[n])).strip()
            if not out.isdigit():
                return False
            self.pport[n] = int(out)
        return True

    def peers(self, mode, *args):
        """Every member's peer proxy in one mode (forward, reset-early,
        ...): what a door forwards, the sequencer answering or not."""
        for n in NAMES:
            self.ctl("mode", "x" + n, mode, *args)

    def etcd_urls(self, name):
        e = self.env
        return {"m0": f"{e['PROXY_URL0']},{e['ETCD_URL1']},{e['ETCD_URL2']}",
                "m1": f"{e['PROXY_URL1']},{e['ETCD_URL2']},{e['ETCD_URL0']}",
                "m2": e["PROXY_URL2"]}.get(name, e["ETCD_URLS"])

    def start(self, name, db=None, wait=True, prefix=PREFIX, peer=True):
        """Starts member NAME on DIR/NAME (or db); returns the Popen.
        m0..m2 run --watch (a door, and the sequencer while they hold
        P/leader) with the peer token (none when not peer); any other
        name (a member that must refuse its ledger, or one of another
        prefix) runs as a plain member."""
        db = db or os.path.join(self.dir, name)
        out = os.path.join(self.dir, name + ".out")
        err = open(os.path.join(self.dir, name + ".err"), "a")
        err.write(f"--- {self.fault}: started\n")
        err.flush()
        cmd = [self.bin, "member", "--db", db, "--etcd", self.etcd_urls(name),
               "--prefix", prefix, "--name", name,
               "--etcd-timeout-ms", "1500", "--checkpoint-every", "200",
               "--verdict-timeout-ms", str(VERDICT_TIMEOUT_MS)]
        if name in NAMES:
            cmd += ["--listen", f"127.0.0.1:{self.lport[name]}",
                    "--token-file", os.path.join(self.dir, "tokens"),
                    "--advertise-url", f"http://127.0.0.1:{self.pport[name]}",
                    "--forward-timeout-ms", str(FORWARD_TIMEOUT_MS),
                    "--watch", "--kubeconfig", os.path.join(self.dir, "kc"),
                    "--lease-ttl", str(LEASE_TTL_S), "--tick", "3600"]
            if peer:
                cmd += ["--peer-token-file", os.path.join(self.dir,
                                                          "peer.tok")]
        else:
            cmd += ["--listen", "127.0.0.1:0"]
        # (They die with this script however it ends.)
        p = subprocess.Popen(cmd, stdout=open(out, "w"), stderr=err,
                             stdin=subprocess.DEVNULL,
                             preexec_fn=etcd_cluster.die_with_parent)
        err.close()
        if not wait:
            return p
        end = time.monotonic() + 30
        while time.monotonic() < end and p.poll() is None:
            txt = open(out).read()
            if "listening on" in txt:
                self.ports[name] = int(txt.split("listening on")[1].split()[0]
                                       .rsplit(":", 1)[1])
                self.procs[name] = p
                return p
            time.sleep(0.05)
        self.bad(f"member {name} did not start: {self.tail(name)}")
        return p

    def stop(self, name, sig=signal.SIGTERM):
        p = self.procs.pop(name, None)
        if p is None:
            return None
        p.send_signal(sig)
        try:
            return p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            return "hung"

    def tail(self, name, n=3):
        try:
            with open(os.path.join(self.dir, name + ".err")) as f:
                return " | ".join(f.read().splitlines()[-n:])
        except OSError:
            return ""

    def url(self, name):
        return f"http://127.0.0.1:{self.ports[name]}"

    def get(self, name, path, timeout=3, token=AUD_TOKEN):
        rq = urllib.request.Request(self.url(name) + path)
        if token:
            rq.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(rq, timeout=timeout) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)
        except Exception:
            return None, b"", {}

    def readyz(self, name):
        st, body, _ = self.get(name, "/readyz")
        try:
            return st, json.loads(body)
        except ValueError:
            return st, {"raw": body.decode(errors="replace")}

    def head_seq(self):
        rc, out, _ = self.sh("etcdctl", "--endpoints", self.env["ETCD_URLS"],
                             "--command-timeout=3s", "get", PREFIX + "/head",
                             "--print-value-only")
        try:
            return json.loads(out)["seq"] if rc == 0 else None
        except ValueError:
            return None

    def wait_until(self, secs, f):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            if f():
                return True
            time.sleep(0.2)
        return f()

    def all_at_head(self, names=None, secs=40):
        names = names or [n for n in NAMES if n in self.procs]

        def at():
            h = self.head_seq()
            if h is None:
                return False
            for n in names:
                st, js = self.readyz(n)
                if st != 200 or js.get("seq") != h:
                    return False
            return True
        return self.wait_until(secs, at)

    def etcd_healthy(self):
        rc, _, _ = self.sh("etcdctl", "--endpoints", self.env["ETCD_URLS"],
                           "--command-timeout=2s", "endpoint", "health")
        return rc == 0

    def etcd_leader(self):
        rc, out, _ = self.sh("etcdctl", "--endpoints", self.env["ETCD_URLS"],
                             "--command-timeout=2s", "endpoint", "status",
                             "-w", "json")
        if rc != 0:
            return None
        for i, s in enumerate(json.loads(out)):
            st = s["Status"]
            if st["leader"] == st["header"]["member_id"]:
                return self.env["ETCD_URLS"].split(",").index(s["Endpoint"])
        return None

    # --------------------------------------------------------------- load
    def review(self, uid, name, count=1, ns="tenant-acme"):
        with open(REVIEW) as f:
            r = json.load(f)
        q = r["request"]
        q.update(uid=uid, namespace=ns, name=name)
        q["object"]["metadata"] = {"name": name, "namespace": ns}
        q["object"]["spec"]["gpus"] = [{"class": "h100", "count": count}]
        return r

    def ask(self, member, uid, name, timeout=20):
        """POSTs one review and logs the answer as vclients.py does;
        returns (status, body, headers, seconds)."""
        body = self.review(uid, name)
        sent = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        t0 = time.monotonic()
        rq = urllib.request.Request(self.url(member) + "/v1/admission",
                                    data=json.dumps(body).encode(),
                                    method="POST")
        rq.add_header("Authorization", "Bearer " + ADM_TOKEN)
        err = None
        try:
            with urllib.request.urlopen(rq, timeout=timeout) as r:
                st, ans, h = r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            st, ans, h = e.code, e.read(), dict(e.headers)
        except Exception as e:  # a timeout or a reset: no answer
            st, ans, h, err = None, None, {}, history.no_answer_error(e)
        took = time.monotonic() - t0
        received = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            parsed = json.loads(ans) if ans else None
        except ValueError:
            parsed = None
        with open(self.answers, "a") as f:
            f.write(json.dumps({"uid": uid, "request": body, "sent": sent,
                                "received": received if st else None,
                                "status": st, "body": parsed,
                                "error": err, "member": member}) + "\n")
        return st, parsed, h, took

    def next_value(self):
        """A budget value unlike the last (a BUDGET that changes nothing
        does not fit the state)."""
        self.value = 9 + (getattr(self, "value", 9) - 9 + 1 +
                          self.rnd.randrange(3)) % 4
        return self.value

    def feed(self, n=3):
        """Changes tenant-acme's h100 budget n times in the API server:
        the leader's watcher appends the BUDGET observations (the writer
        of observations); 0 when the API server took every change."""
        rc = 0
        for k in range(n):
            ev = {"type": "MODIFIED", "object": dict(TENANT, spec={
                "resourceQuotas": {BUDGET_KEY: str(self.next_value()),
                                   "cpu": "100"}})}
            try:
                urllib.request.urlopen(urllib.request.Request(
                    self.control + "/_control/apply",
                    data=json.dumps(ev).encode(), method="POST"),
                    timeout=10).read()
            except Exception as e:
                rc = 1
                with open(os.path.join(self.dir, "feed.err"), "a") as f:
                    f.write(f"{self.fault}: apply: {e}\n")
            time.sleep(0.05)
        self.n_feed += rc == 0
        return rc

    def observed(self, secs=30):
        """Waits until the log's last BUDGET of tenant-acme's h100 is the
        API server's (the leader observed every change)."""
        def last():
            rc, out, _ = self.sh(self.bin, "log", "--db",
                                 os.path.join(self.dir, self.any_member()))
            for ln in reversed(out.splitlines()):
                e = json.loads(ln)
                if e.get("type") == "BUDGET" and e.get("key") == \
                        BUDGET_KEY and e.get("namespace") == "tenant-acme":
                    return e.get("value") == self.value
            return False
        if getattr(self, "value", None) is None:
            return True  # no change made yet
        return self.wait_until(secs, last)

    def any_member(self):
        return next(n for n in NAMES if n in self.procs)

    def sequencer(self):
        """The member holding P/leader (None: no one, or not readable)."""
        rc, out, _ = self.sh("etcdctl", "--endpoints", self.env["ETCD_URLS"],
                             "--command-timeout=3s", "get", PREFIX + "/leader",
                             "--print-value-only")
        try:
            return json.loads(out).get("name") if rc == 0 and out else None
        except ValueError:
            return None

    def metric(self, name, what):
        """gpuledger_cluster_verdict_<what>_total of member name."""
        st, body, _ = self.get(name, "/metrics")
        for ln in body.decode(errors="replace").splitlines():
            if ln.startswith(f"gpuledger_cluster_verdict_{what}_total "):
                return int(ln.split()[1])
        return None

    def settled(self, secs=40):
        """Every member at P/head, and P/head still there a second later
        (a new leader's relist, NOTEs a door or a stopped sequencer owed:
        all appended and applied)."""
        def still():
            h = self.head_seq()
            time.sleep(1)
            return h is not None and self.all_at_head(secs=0.1) and \
                self.head_seq() == h
        return self.wait_until(secs, still)

    def load(self, feed=True, requests=None):
        """Starts the admission load (and the observations) in the
        background; returns a function that waits for it and checks it.
        self.load_uids and self.load_members name its requests' uid prefix
        and its members (by vclients.py's index)."""
        self.n_req += 1
        out = os.path.join(self.dir, "clients.out")
        live = [n for n in NAMES if n in self.procs]
        self.load_members = live
        self.load_uids = f"{self.fault}-{self.n_req}-"
        urls = ",".join(self.url(n) for n in live)
        p = subprocess.Popen(
            ["python3", VCLIENTS, "--members", urls, "--out", self.answers,
             "--clients", str(self.a.clients), "--requests",
             str(requests or self.a.requests), "--retry", "0.3",
             "--seed", str(self.rnd.randrange(1 << 30)),
             "--uid-prefix", f"{self.fault}-{self.n_req}",
             "--timeout", str(WEBHOOK_TIMEOUT_S), "--token", ADM_TOKEN],
            stdout=open(out, "w"), stderr=subprocess.STDOUT)
        feeds = []
        if feed:
            t = threading.Thread(target=lambda: feeds.append(self.feed()))
            t.start()
        else:
            t = None

        def done():
            rc = p.wait(300)
            if t:
                t.join()
            self.expect(rc == 0, "the clients ran, no 503 with Retry-After",
                        open(out).read()[-300:])
            if feeds:
                self.expect(feeds == [0], "observations made in the API "
                            "server under the load", f"apply exit {feeds}")
        return done

    # ------------------------------------------------------------- checks
    def history(self, names=None, answers=None, what="the history holds"):
        names = names or [n for n in NAMES if n in self.procs]
        if not self.observed():
            self.bad("the leader observed the API server's last budget")
        if not self.settled():
            self.bad("every member at P/head before the check: " +
                     "; ".join(f"{n}: {self.readyz(n)}" for n in names))
        cmd = ["python3", HISTORY, "--bin", self.bin, "--answers",
               answers or self.answers]
        for n in names:
            cmd += ["--member", f"{n}={os.path.join(self.dir, n)}"]
        rc, out, err = self.sh(*cmd, timeout=300)
        fails = [ln for ln in out.splitlines() if not ln.startswith("ok")]
        self.expect(rc == 0, f"{what} (history.py: "
                    f"{out.splitlines()[-1] if out else err.strip()})",
                    " | ".join(fails[:6]) + err[-300:])
        return rc == 0


# ------------------------------------------------------------------ faults
# Each: inject(run) while the load runs; check(run) afterwards.

def kill_follower_inject(r):
    v = r.rnd.choice(NAMES)
    r.victim = v
    time.sleep(r.rnd.uniform(0.2, 1.5))
    before = r.readyz(v)[1].get("seq")
    r.stop(v, signal.SIGKILL)
    time.sleep(r.rnd.uniform(0.2, 1.0))
    r.start(v)
    r.victim_seq = before


def kill_follower_check(r):
    v = r.victim
    r.expect(r.all_at_head([v]), f"{v} SIGKILLed and restarted catches up "
             "to P/head", r.tail(v))
    r.expect("resuming after seq" in open(os.path.join(
        r.dir, v + ".err")).read().split(f"--- {r.fault}: started")[-1],
        f"{v} resumed from its stored revision", r.tail(v))


def kill_etcd(r, i):
    r.victim = i
    r.ctl("kill", str(i))
    time.sleep(r.rnd.uniform(1.0, 2.5))
    r.ctl("start", str(i))


def kill_etcd_inject(r):
    time.sleep(r.rnd.uniform(0.2, 1.0))
    kill_etcd(r, r.rnd.randrange(3))


def kill_etcd_leader_inject(r):
    time.sleep(r.rnd.uniform(0.2, 1.0))
    lead = r.etcd_leader()
    if lead is None:
        r.bad("no etcd leader found")
        return
    kill_etcd(r, lead)
    r.new_leader = r.wait_until(10, lambda: r.etcd_leader() not in
                                (None, lead))


def etcd_back_check(r):
    r.expect(r.wait_until(30, r.etcd_healthy),
             f"etcd member {r.victim} restarted, every endpoint healthy")
    r.expect(r.all_at_head(), "every member at P/head again")
    if r.fault == "kill-etcd-leader":
        r.expect(r.new_leader, "another etcd member led meanwhile")


def drop_answer_inject(r):
    # Rule 1: m2's verdict txn commits and the proxy drops its answer
    # (once): the member re-sends the identical txn, finds its own value
    # in the failure branch and answers 200. Then the answers dropped
    # past m2's deadline: 503, and the NOTE once the link is back.
    # m2 at P/head first: its next batch then waits for nothing its
    # applier (behind the same proxy) would have to fetch while answers
    # are dropped. Only the answers to the txns that put this request's
    # verdict are dropped (not the lease's, nor the applier's reads or
    # watch, which would make m2 unreachable, nor other verdicts').
    # m2 must append its own verdicts: every forward is reset meanwhile,
    # so that a door judges and appends itself (its fallback).
    # The load goes on beside it, so the txn whose answer is dropped may
    # be one that failed (another writer moved P/head first): then there
    # is nothing of ours to find, and it is tried again with a new uid,
    # up to 3 times.
    r.peers("reset-early")
    errf = os.path.join(r.dir, "m2.err")
    r.drop_found = False
    for k in range(3):
        r.wait_until(10, lambda: r.readyz("m2")[0] == 200)
        r.all_at_head(["m2"], 10)
        d0 = r.stats("p2").get("dropped", 0)
        e0 = os.path.getsize(errf)
        uid = f"drop-once-{r.n_req}-{k}-{r.rnd.randrange(1 << 40):010x}"
        r.ctl("mode", "p2", "drop-answer", txn_match(uid))
        res = {}
        t = threading.Thread(target=lambda: res.update(
            once=r.ask("m2", uid, f"vm-drop-{r.n_req}-{k}")))
        t.start()
        # The link comes back soon after the drop: the re-sent txn must
        # commit well inside m2's verdict timeout.
        end = time.monotonic() + 10
        while r.stats("p2").get("dropped", 0) <= d0 and \
                time.monotonic() < end:
            time.sleep(0.02)
        time.sleep(0.1)
        r.ctl("mode", "p2", "forward")
        t.join()
        r.drop_once = res["once"]
        with open(errf) as f:
            f.seek(e0)
            new = f.read()
        if "committed after" in new and "found ours" in new:
            r.drop_found = True
            break
        print(f"drop-answer: attempt {k + 1}: the dropped answer was not "
              f"of a committed txn of ours ({r.drop_once[0]})", flush=True)
    r.wait_until(10, lambda: r.readyz("m2")[0] == 200)
    r.ctl("mode", "p2", "drop-answer")
    r.drop_long = r.ask("m2", f"drop-long-{r.n_req}", f"vm-dropl-{r.n_req}")
    r.ctl("mode", "p2", "forward")
    r.peers("forward")


def drop_answer_check(r):
    st, body, _, _ = r.drop_once
    r.expect(st == 200, "one answer dropped: answered 200", f"status {st}")
    r.expect(r.drop_found, "re-sent identical, found ours in the failure "
             "branch (in 3 tries)", r.tail("m2"))
    st, body, h, took = r.drop_long
    r.expect(st == 503, "every answer dropped past the deadline: 503",
             f"status {st}")
    r.expect(took < WEBHOOK_TIMEOUT_S, f"within the webhook's "
             f"{WEBHOOK_TIMEOUT_S} s ({took:.1f} s)")
    r.expect(not any(k.lower() == "retry-after" for k in h),
             "no Retry-After on the 503")
    r.expect(r.all_at_head(), "every member at P/head again")


def cut_off_inject(r):
    r.ctl("mode", "p2", "blackhole")
    r.wait_until(20, lambda: r.readyz("m2")[0] == 503)
    r.cut_ready = r.readyz("m2")
    r.cut_ask = r.ask("m2", f"cut-{r.n_req}", f"vm-cut-{r.n_req}")
    r.cut_get = r.get("m2", "/v1/tenants")
    r.in_touch = r.get("m0", "/v1/tenants")
    r.ctl("mode", "p2", "forward")


def cut_off_check(r):
    st, js = r.cut_ready
    r.expect(st == 503 and "cannot reach an etcd quorum" in
             json.dumps(js), "cut off: /readyz 503 says why", f"{st} {js}")
    st, body, h, took = r.cut_ask
    r.expect(st == 503 and took < 1.5, f"cut off: POST 503 at once "
             f"({took:.2f} s)", f"status {st}")
    st, _, h = r.cut_get
    stale = {k.lower(): v for k, v in h.items()}.get("x-gpuledger-stale")
    r.expect(st == 200 and stale is not None and stale.isdigit(),
             "cut off: GETs answer, with X-Gpuledger-Stale", f"{st} {h}")
    h = {k.lower() for k in r.in_touch[2]}
    r.expect("x-gpuledger-stale" not in h, "a member in touch is not stale")
    r.expect(r.all_at_head(), "m2 back in touch: every member at P/head")


def two_down_inject(r):
    a, b = r.rnd.sample(range(3), 2)
    r.victims = (a, b)
    r.ctl("kill", str(a))
    r.ctl("kill", str(b))
    r.down_asks = {}
    r.down_gets = {}
    for n in NAMES:
        r.down_asks[n] = r.ask(n, f"down-{n}-{r.n_req}",
                               f"vm-down-{n}-{r.n_req}",
                               timeout=WEBHOOK_TIMEOUT_S + 5)
        r.down_gets[n] = r.get(n, "/v1/tenants")
    time.sleep(r.rnd.uniform(0.5, 2))
    r.ctl("start", str(a))
    r.ctl("start", str(b))


def two_down_check(r):
    for n in NAMES:
        st, body, h, took = r.down_asks[n]
        r.expect(st == 503 and took < WEBHOOK_TIMEOUT_S,
                 f"no quorum: {n} answers 503 within the webhook's "
                 f"{WEBHOOK_TIMEOUT_S} s ({took:.1f} s)", f"status {st}")
        st, _, _ = r.down_gets[n]
        r.expect(st == 200, f"no quorum: {n}'s reads go on", f"status {st}")
    r.expect(r.wait_until(30, r.etcd_healthy),
             f"etcd members {r.victims} back, every endpoint healthy")
    r.expect(r.all_at_head(), "every member at P/head again")
    st = r.ask("m1", f"after-down-{r.n_req}", f"vm-afterd-{r.n_req}")[0]
    r.expect(st == 200, "recovered: admission answers 200", f"status {st}")


def uid_retry_inject(r):
    """One uid at every member, then at one of them again. A 503 (rule 2:
    not recorded in time, as the load beside it may cause on a loaded
    machine) is asked again, as the API server's client would, until
    the webhook's time is spent: each member must end with a 200."""
    uid = f"same-uid-{r.n_req}"
    r.same, r.same_503 = [], []
    for n in NAMES + (r.rnd.choice(NAMES),):
        t0 = time.monotonic()
        a = r.ask(n, uid, f"vm-same-{r.n_req}")
        while a[0] == 503 and time.monotonic() - t0 < WEBHOOK_TIMEOUT_S:
            r.same_503.append((n, round(a[3], 2), a[1]))
            time.sleep(0.3)
            a = r.ask(n, uid, f"vm-same-{r.n_req}")
        r.same.append(a)


def uid_retry_check(r):
    bodies = [json.dumps(a[1], sort_keys=True) for a in r.same]
    if r.same_503:
        print(f"uid-retry: asked again after 503: {r.same_503}"[:600],
              flush=True)
    r.expect(all(a[0] == 200 for a in r.same), "rule 3: every member "
             "answers 200 within the webhook's time",
             str([a[0] for a in r.same]))
    r.expect(len(set(bodies)) == 1, "rule 3: every member answers the "
             "recorded verdict", str(set(bodies))[:300])


# ---------------------------------------------------- the sequencer's faults
# DESIGN 11 "One sequencer, every member a door": the member holding
# P/leader judges; the doors forward to it and fall back to judging
# themselves (same key) when a forward is not answered.

def door_refusals(r):
    """The answers of the fault's load given by a member other than the
    sequencer hit (a door), that are not 200: [(sent, received)] as
    seconds (received is when the client gave up, for no answer)."""
    out = []
    victim = r.victim
    for ln in open(r.answers):
        a = json.loads(ln)
        if not a["uid"].startswith(r.load_uids):
            continue
        m = a.get("member")
        m = r.load_members[m] if isinstance(m, int) else m
        if m == victim or a.get("status") == 200:
            continue
        out.append((a["sent"], a.get("received"), a.get("status")))
    return out


def refusals_check(r):
    """DESIGN 11: the doors fall back, <= 1 s refused: the doors' answers
    that are not 200 all lie within one second (sent to received)."""
    bad = door_refusals(r)
    if not bad:
        r.ok("the doors answered every admission 200")
        return

    def secs(t):
        return time.mktime(time.strptime(t[:19], "%Y-%m-%dT%H:%M:%S")) + \
            float("0" + t[19:].rstrip("Z")) if t else None
    first = min(secs(b[0]) for b in bad)
    last = max(secs(b[1] or b[0]) for b in bad)
    r.expect(last - first <= 1.0, f"the doors refused {len(bad)} "
             f"admissions within {last - first:.2f} s (<= 1 s)", str(bad[:5]))


def sequencer_victim(r):
    """The member holding P/leader, once every member is ready."""
    r.wait_until(15, lambda: r.sequencer() in r.procs)
    r.victim = r.sequencer()
    if r.victim not in r.procs:
        r.bad(f"no sequencer to hit (P/leader: {r.victim})")
        r.victim = None
    return r.victim


def kill_sequencer_inject(r):
    """SIGKILL of the sequencer under admissions spread over every member:
    another member takes over; meanwhile the doors judge themselves."""
    v = sequencer_victim(r)
    if v is None:
        return
    time.sleep(r.rnd.uniform(0.2, 0.6))
    r.stop(v, signal.SIGKILL)
    r.took_over = r.wait_until(3 * LEASE_TTL_S + 5, lambda: r.sequencer()
                               not in (None, v))
    r.start(v)


def kill_sequencer_check(r):
    if r.victim is None:
        return
    r.expect(r.took_over, f"{r.victim} SIGKILLed: another member took over "
             "as sequencer", f"P/leader {r.sequencer()}")
    refusals_check(r)
    r.expect(r.all_at_head([r.victim]), f"{r.victim} restarted catches up "
             "to P/head", r.tail(r.victim))


def stop_sequencer_inject(r):
    """SIGSTOP of the sequencer past the doors' forward timeout (and some
    times past its lease), then SIGCONT: the doors fall back; what the
    stopped member commits late is answered or NOTEd (history.py)."""
    v = sequencer_victim(r)
    if v is None:
        return
    time.sleep(r.rnd.uniform(0.2, 0.6))
    r.stopped_s = r.rnd.uniform(FORWARD_TIMEOUT_MS / 1000 + 0.5,
                                LEASE_TTL_S + 1)
    p = r.procs[v]
    fb0 = sum(r.metric(n, "fallbacks") or 0 for n in r.procs if n != v)
    p.send_signal(signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        # The load's clients may all wait on the stopped member: each
        # door is asked too, while it is stopped.
        res = {}
        ts = [threading.Thread(target=lambda n=n: res.update({n: r.ask(
            n, f"stopped-{r.n_req}-{n}", f"vm-stopped-{r.n_req}-{n}")}))
              for n in NAMES if n != v and n in r.procs]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        r.stop_asks = res
        time.sleep(max(0, r.stopped_s - (time.monotonic() - t0)))
        r.fallbacks = sum(r.metric(n, "fallbacks") or 0
                          for n in r.procs if n != v) - fb0
    finally:
        p.send_signal(signal.SIGCONT)


def stop_sequencer_check(r):
    v = r.victim
    if v is None:
        return
    asks = {n: (a[0], round(a[3], 2)) for n, a in r.stop_asks.items()}
    r.expect(all(a[0] == 200 for a in r.stop_asks.values()),
             f"{v} stopped {r.stopped_s:.1f} s: the doors answered 200 "
             f"({r.fallbacks} groups fell back; status, seconds: {asks})",
             str(asks))
    # A door that waited the forward timeout forwarded to the stopped
    # member: it fell back. (One that did not, did not see it as the
    # sequencer: P/leader may still name a holder whose lease a restart
    # of etcd's leader prolonged.)
    if any(a[3] >= FORWARD_TIMEOUT_MS / 1000 for a in r.stop_asks.values()):
        r.expect(r.fallbacks > 0, "a door that waited on it fell back",
                 str(asks))
    refusals_check(r)
    r.expect(r.wait_until(20, lambda: r.readyz(v)[0] == 200) and
             r.all_at_head([v]), f"{v} continued: ready, at P/head "
             f"(P/leader {r.sequencer()})", r.tail(v))


def lost_forward_inject(r):
    """A forward whose answer is lost after the sequencer committed: the
    proxy in front of the sequencer's peer port drops its answers; the
    door judges itself under the same key, and rule 3 returns the
    sequencer's verdict (one record)."""
    seq = sequencer_victim(r)
    r.victim = None  # every member answers here
    if seq is None:
        r.lost = None
        return
    door = r.rnd.choice([n for n in NAMES if n != seq and n in r.procs])

    def dropped():
        return sum(r.stats("x" + n).get("dropped", 0) for n in NAMES)
    d0 = dropped()
    fb0 = r.metric(door, "fallbacks") or 0
    # Every peer proxy: whoever holds P/leader meanwhile.
    r.peers("drop-answer", "/v1/peer/verdicts")
    uid = f"lost-{r.n_req}"
    ans = r.ask(door, uid, f"vm-lost-{r.n_req}")
    # A plain request: its key is one the door made (member, boot, n).
    body = {"namespace": "tenant-acme", "kind": "VMInstance",
            "name": f"vm-lost-plain-{r.n_req}", "old": None,
            "new": {"gpus": [{"class": "h100", "count": 1}]}}
    rq = urllib.request.Request(r.url(door) + "/v1/admission",
                                data=json.dumps(body).encode(), method="POST")
    rq.add_header("Authorization", "Bearer " + ADM_TOKEN)
    try:
        with urllib.request.urlopen(rq, timeout=WEBHOOK_TIMEOUT_S) as a:
            plain = (a.status, json.loads(a.read()))
    except urllib.error.HTTPError as e:
        plain = (e.code, None)
    except Exception:
        plain = (None, None)
    r.peers("forward")
    r.lost = dict(seq=seq, door=door, uid=uid, ans=ans, plain=plain,
                  name=body["name"], dropped=dropped() - d0,
                  fallbacks=(r.metric(door, "fallbacks") or 0) - fb0,
                  seq_after=r.sequencer())


def lost_forward_check(r):
    lo = r.lost
    if lo is None:
        return
    door, seq = lo["door"], lo["seq"]
    r.expect(lo["ans"][0] == 200, f"answer lost: the door {door} answers "
             "200", f"status {lo['ans'][0]}")
    r.expect(lo["plain"][0] == 200, "answer lost, a plain request: 200",
             f"status {lo['plain'][0]}")
    if lo["seq_after"] != door:
        r.expect(lo["dropped"] > 0 and lo["fallbacks"] > 0, f"the "
                 f"sequencer's answers to {door} were dropped "
                 f"({lo['dropped']}), it fell back ({lo['fallbacks']} "
                 "groups)")
    r.expect(r.settled(), "every member at P/head")
    rc, log, _ = r.sh(r.bin, "log", "--db", os.path.join(r.dir, door))
    evs = [json.loads(ln) for ln in log.splitlines()]
    recs = [history.record_of(e) for e in evs if e.get("type") == "VERDICT"]
    mine = [x for x in recs if history.record_uid(x) == lo["uid"]]
    r.expect(len(mine) == 1, "answer lost: one record of the review",
             f"{len(mine)} records")
    plain = [x for x in recs if history.obj(x.get("request")).get("name")
             == lo["name"]]
    r.expect(len(plain) == 1 and str(plain[0].get("idempotencyKey", ""))
             .startswith(door + "."), "answer lost: one record of the plain "
             "request, under the door's key",
             str([x.get("idempotencyKey") for x in plain]))
    r.expect(len(plain) == 1 and lo["plain"][1] is not None and
             lo["plain"][1].get("id") == plain[0].get("id"),
             "answer lost: the door answered that record",
             f"{lo['plain'][1] and lo['plain'][1].get('id')} vs "
             f"{[x.get('id') for x in plain]}")


def no_creds_inject(r):
    """A door without peer credentials: the sequencer refuses its
    forwards (401) and it judges itself; a forward without credentials
    is 401, with another role's token 403, and records nothing."""
    seq = sequencer_victim(r)
    r.victim = None
    r.nocred = None
    if seq is None:
        return
    door = r.rnd.choice([n for n in NAMES if n != seq and n in r.procs])
    r.stop(door)
    r.start(door, peer=False)
    r.wait_until(20, lambda: r.readyz(door)[0] == 200)
    asks = [r.ask(door, f"nocred-{r.n_req}-{k}", f"vm-nocred-{r.n_req}-{k}")
            for k in range(3)]
    fw = r.metric(door, "forwarded")
    fb = r.metric(door, "fallbacks")
    codes = {}
    v0 = r.sh(r.bin, "log", "--db", os.path.join(r.dir, seq))[1].count(
        '"uid":"nocred-direct"')
    fwd = json.dumps({"from": "test", "items": [{
        "kind": "admission", "key": None, "budgetMs": 3000,
        "body": json.dumps(r.review("nocred-direct", "vm-nocred-direct"))}]})
    for what, tok in (("none", None), ("admission", ADM_TOKEN)):
        rq = urllib.request.Request(r.url(seq) + "/v1/peer/verdicts",
                                    data=fwd.encode(), method="POST")
        if tok:
            rq.add_header("Authorization", "Bearer " + tok)
        try:
            with urllib.request.urlopen(rq, timeout=5) as a:
                codes[what] = a.status
        except urllib.error.HTTPError as e:
            codes[what] = e.code
        except Exception as e:
            codes[what] = repr(e)
    r.nocred = dict(seq=seq, door=door, asks=asks, fw=fw, fb=fb, codes=codes,
                    v0=v0, seq_after=r.sequencer())
    # Back with its credentials, for the faults after this one.
    r.stop(door)
    r.start(door)


def no_creds_check(r):
    nc = r.nocred
    if nc is None:
        return
    door, seq = nc["door"], nc["seq"]
    r.expect(all(a[0] == 200 for a in nc["asks"]), f"a door without peer "
             f"credentials ({door}) answers 200",
             str([a[0] for a in nc["asks"]]))
    if nc["seq_after"] != door:
        r.expect(nc["fw"] == 0 and (nc["fb"] or 0) > 0, f"{door}'s forwards "
                 f"were refused, it judged itself ({nc['fb']} fallbacks, "
                 f"{nc['fw']} forwarded)")
        err = open(os.path.join(r.dir, door + ".err")).read().split(
            f"--- {r.fault}: started")[-2]
        r.expect("HTTP 401" in err, f"{door} says its forward was 401",
                 err.strip()[-300:])
    r.expect(nc["codes"] == {"none": 401, "admission": 403}, "a forward "
             "without credentials: 401, with the admission role: 403",
             str(nc["codes"]))
    r.expect(r.settled(), "every member at P/head")
    n = r.sh(r.bin, "log", "--db", os.path.join(r.dir, seq))[1].count(
        '"uid":"nocred-direct"')
    r.expect(n == nc["v0"] == 0, "refused forwards record nothing", str(n))


def init_twice_inject(r):
    pass


def init_twice_check(r):
    # The log settled first; a NOTE a door owes may still follow (a
    # minute long): the head named is then at or past the one read.
    r.expect(r.settled(), "every member at P/head")
    h = r.head_seq()
    rc, out, err = r.sh(r.bin, "cluster", "init", "--etcd",
                        r.env["ETCD_URLS"], "--prefix", PREFIX, "--db",
                        os.path.join(r.dir, "base"))
    named = err.split("(seq ", 1)[-1].split(",", 1)[0]
    r.expect(rc != 0 and named.isdigit() and int(named) >= (h or 0),
             f"a second `cluster init` is refused, naming the head (seq "
             f"{named}, read {h})", f"exit {rc}: {err}")
    now = r.head_seq()
    r.expect(now is not None and h is not None and now >= h,
             "and changes nothing (the head is not reset)", f"{h} -> {now}")


def refuse(r, db, what, want):
    """Starts a member on db: it must refuse (exit 2) saying `want`."""
    p = r.start("m9", db=db, wait=False)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "running"
    txt = open(os.path.join(r.dir, "m9.err")).read().split(
        f"--- {r.fault}: started")[-1]
    r.expect(rc == 2 and want in txt, f"{what}: refused (exit 2), "
             f"saying '{want}'", f"exit {rc}: {txt.strip()[-300:]}")


def damaged_check(r):
    # A ledger whose event at P/head's seq differs from the log's: the
    # member names the seq. (The last event is a BUDGET the leader
    # observed.)
    r.feed(1)
    r.expect(r.observed() and r.settled(), "the budget observed, every "
             "member at P/head")
    h = r.head_seq()
    rc, log, _ = r.sh(r.bin, "log", "--db", os.path.join(r.dir, "m0"))
    lines = log.splitlines()
    ev = json.loads(lines[h - 1])
    if not r.expect(ev.get("type") == "BUDGET", "the last event is the "
                    "feed's", lines[h - 1][:200]):
        return
    ev["value"] = ev["value"] + 100
    lines[h - 1] = json.dumps(ev)
    bad = os.path.join(r.dir, "damaged")
    shutil.rmtree(bad, ignore_errors=True)
    rc, _, err = r.sh(r.bin, "import", "--db", bad, "--create",
                      stdin=("\n".join(lines) + "\n").encode())
    r.expect(rc == 0, "a ledger with another event at the head's seq", err)
    refuse(r, bad, "another event at the head's seq", f"seq {h}:")
    # A ledger one event past P/head.
    ev["seq"] = h + 1
    ev["value"] = ev["value"] + 1
    shutil.rmtree(bad, ignore_errors=True)
    r.sh(r.bin, "import", "--db", bad, "--create", stdin=(
        "\n".join(log.splitlines() + [json.dumps(ev)]) + "\n").encode())
    refuse(r, bad, "a ledger past P/head", f"the ledger is at seq {h + 1}")
    # A data file cut short (a torn copy): it must not start.
    r.stop("m1")
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(os.path.join(r.dir, "m1"), bad)
    r.start("m1")
    f = os.path.join(bad, "data.mdb")
    with open(f, "r+b") as fh:
        fh.truncate(os.path.getsize(f) // 3)
    p = r.start("m9", db=bad, wait=False)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "running"
    # (LMDB maps the file: a member killed by SIGBUS here does not start
    # either, but says nothing; the report names it.)
    r.expect(rc not in (0, "running"), "a data file cut short: the member "
             f"does not start (exit {rc})", r.tail("m9"))


def foreign_check(r):
    # Another prefix's ledger, and one of another epoch of the same prefix.
    other = "/f/other"
    rc, _, err = r.sh(r.bin, "cluster", "init", "--etcd", r.env["ETCD_URLS"],
                      "--prefix", other, "--db", os.path.join(r.dir, "base"))
    if not r.expect(rc == 0, f"init {other}", err):
        return
    fd = os.path.join(r.dir, "foreign")
    shutil.rmtree(fd, ignore_errors=True)
    shutil.copytree(os.path.join(r.dir, "base"), fd)
    p = r.start("m9", db=fd, prefix=other)
    r.procs.pop("m9", None)
    r.feed_other = None
    # One value of /f/other, so that the ledger stores its meta.
    path = os.path.join(r.dir, "obs-other")
    with open(path, "w") as f:
        f.write(json.dumps({"type": "BUDGET", "namespace": "tenant-acme",
                            "key": "h100.gpuclass.cozystack.io/devices",
                            "value": 11, "time": "2026-03-03T00:00:00Z"})
                + "\n")
    r.sh(r.bin, "cluster", "feed", "--etcd", r.env["ETCD_URLS"], "--prefix",
         other, "--db", os.path.join(r.dir, "base"), "--from", path)
    time.sleep(1.5)
    p.send_signal(signal.SIGTERM)
    p.wait(20)
    refuse(r, fd, "a ledger of another prefix",
           f"the ledger follows prefix {other}, not {PREFIX}")
    # The same prefix, another epoch: /f/other wiped and initialised again.
    r.sh("etcdctl", "--endpoints", r.env["ETCD_URLS"], "del", "--prefix",
         other + "/")
    r.sh(r.bin, "cluster", "init", "--etcd", r.env["ETCD_URLS"], "--prefix",
         other)
    p = r.start("m9", db=fd, wait=False, prefix=other)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "running"
    txt = open(os.path.join(r.dir, "m9.err")).read().split(
        f"--- {r.fault}: started")[-1]
    r.expect(rc == 2 and "another history" in txt, "a ledger of another "
             "epoch: refused (exit 2), saying 'another history'",
             f"exit {rc}: {txt.strip()[-300:]}")


def wipe_reinit(r):
    """Rule 8: etcd loses the prefix; it is initialised again from a
    lagging member's ledger. The members ahead of it refuse, naming why;
    the lagging member's history is kept and it goes on."""
    lag = "m2"
    r.expect(r.all_at_head(), "every member at P/head")
    r.stop(lag)
    done = r.load()
    done()
    r.feed(2)
    r.expect(r.observed() and r.all_at_head(["m0", "m1"]),
             "m0, m1 ahead of m2")
    rc, kept, _ = r.sh(r.bin, "log", "--db", os.path.join(r.dir, lag))
    for n in ("m0", "m1"):
        r.stop(n)
    rc, _, err = r.sh("etcdctl", "--endpoints", r.env["ETCD_URLS"], "del",
                      "--prefix", PREFIX + "/")
    r.expect(rc == 0, "etcd wiped of the prefix", err)
    rc, _, err = r.sh(r.bin, "cluster", "init", "--etcd", r.env["ETCD_URLS"],
                      "--prefix", PREFIX, "--db", os.path.join(r.dir, lag))
    r.expect(rc == 0, f"cluster init --db from the lagging {lag}", err)
    for n in ("m0", "m1"):
        p = r.start(n, wait=False)
        try:
            rc = p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = "running"
        txt = open(os.path.join(r.dir, n + ".err")).read().split(
            f"--- {r.fault}: started")[-1]
        r.expect(rc == 2 and "another history" in txt,
                 f"{n} of the old history refuses (exit 2), saying why",
                 f"exit {rc}: {txt.strip()[-300:]}")
    # The lagging member's own directory still names the old epoch: it
    # refuses too (rule 8); it goes on from a copy of its events, the
    # ledger `cluster init --db` read (no cluster meta).
    p = r.start(lag, wait=False)
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = "running"
    r.expect(rc == 2, f"{lag}'s own directory (the old epoch) refuses too",
             f"exit {rc}")
    shutil.rmtree(os.path.join(r.dir, lag))
    r.sh(r.bin, "import", "--db", os.path.join(r.dir, lag), "--create",
         stdin=kept.encode())
    r.start(lag)
    r.expect(r.all_at_head([lag]), f"{lag} follows the new history")
    rc, now, _ = r.sh(r.bin, "log", "--db", os.path.join(r.dir, lag))
    r.expect(now.startswith(kept) and len(kept) > 0,
             f"{lag}'s history is kept ({len(kept.splitlines())} events)")
    # The new history takes verdicts; a member on a copy of the lagging
    # ledger joins it; the history checker holds the new answers.
    for n in ("m0", "m1"):
        shutil.rmtree(os.path.join(r.dir, n))
        r.sh(r.bin, "import", "--db", os.path.join(r.dir, n), "--create",
             stdin=kept.encode())
        r.start(n)
    r.answers = os.path.join(r.dir, "answers.new")
    open(r.answers, "w").close()
    done = r.load()
    done()
    r.history(what="the re-initialised history holds")


FAULTS = {
    "kill-follower": (kill_follower_inject, kill_follower_check),
    "kill-etcd": (kill_etcd_inject, etcd_back_check),
    "kill-etcd-leader": (kill_etcd_leader_inject, etcd_back_check),
    "drop-answer": (drop_answer_inject, drop_answer_check),
    "cut-off": (cut_off_inject, cut_off_check),
    "two-etcd-down": (two_down_inject, two_down_check),
    "uid-retry": (uid_retry_inject, uid_retry_check),
    "kill-sequencer": (kill_sequencer_inject, kill_sequencer_check),
    "stop-sequencer": (stop_sequencer_inject, stop_sequencer_check),
    "lost-forward-answer": (lost_forward_inject, lost_forward_check),
    "forward-without-credentials": (no_creds_inject, no_creds_check),
    "init-twice": (init_twice_inject, init_twice_check),
    "damaged-ledger": (None, damaged_check),
    "foreign-ledger": (None, foreign_check),
}
NO_FEED = {"two-etcd-down"}  # the feed would fail without a quorum
# Requests per client of a fault's load (default --requests): the
# sequencer is hit while admissions still come.
LOAD = {"kill-sequencer": 20, "stop-sequencer": 20,
        "lost-forward-answer": 12}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="./gpuledger")
    ap.add_argument("--dir")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--faults")
    ap.add_argument("--random", type=int, default=0)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--requests", type=int, default=6)
    ap.add_argument("--check-every", type=int, default=25)
    ap.add_argument("--no-wipe", action="store_true")
    a = ap.parse_args(argv)
    if a.seed is None:
        a.seed = int(os.environ.get("SEED") or random.randrange(1 << 30))
    print(f"seed {a.seed}", flush=True)
    own = a.dir is None
    if own:
        import tempfile
        base = "/dev/shm" if os.path.isdir("/dev/shm") else None
        a.dir = tempfile.mkdtemp(prefix="gpuledger-faults.", dir=base)
    r = Run(a)
    rnd = random.Random(a.seed)
    if a.random:
        plan = [rnd.choice(list(FAULTS)) for _ in range(a.random)]
    elif a.faults:
        plan = [f for f in a.faults.split(",") if f != "wipe-reinit"]
        bad = [f for f in plan if f not in FAULTS]
        if bad:
            print(f"faults: unknown {bad}; known: {list(FAULTS)} and "
                  "wipe-reinit", file=sys.stderr)
            return 2
    else:
        plan = list(FAULTS)
    wipe = not a.no_wipe and (not a.faults or "wipe-reinit" in
                              a.faults.split(","))
    try:
        if not r.up():
            r.bad("the etcd cluster did not start")
            return 1
        base_db = os.path.join(a.dir, "base")
        rc, _, err = r.sh(a.bin, "import", "--db", base_db, "--create",
                          stdin=open(BASE, "rb").read() + SYNCED)
        rc2, _, err2 = r.sh(a.bin, "cluster", "init", "--etcd",
                            r.env["ETCD_URLS"], "--prefix", PREFIX, "--db",
                            base_db)
        if not r.expect(rc == 0 and rc2 == 0, "init from a single-pod "
                        "ledger", err + err2):
            return 1
        open(r.answers, "w").close()
        for n in NAMES:
            shutil.copytree(base_db, os.path.join(a.dir, n))
            r.start(n)
        if not r.expect(r.wait_until(30, lambda: r.sequencer() in NAMES)
                        and r.settled(), "a member leads (the sequencer), "
                        "every member at P/head"):
            return 1
        for k, name in enumerate(plan):
            r.fault = name
            inject, check = FAULTS[name]
            t0 = time.monotonic()
            if inject:
                r.victim = None
                done = r.load(feed=name not in NO_FEED,
                              requests=LOAD.get(name))
                inject(r)
                done()
            check(r)
            print(f"fault {k + 1}/{len(plan)} {name}: "
                  f"{time.monotonic() - t0:.1f} s", flush=True)
            if (k + 1) % a.check_every == 0 and k + 1 < len(plan):
                r.history(what=f"the history after {k + 1} faults holds")
        r.fault = "history"
        r.history()
        if wipe:
            r.fault = "wipe-reinit"
            wipe_reinit(r)
    finally:
        for n in list(r.procs):
            r.stop(n)
        for p in (r.harness, r.apiserver):
            if p:
                p.terminate()
                p.wait()
        if r.failed == 0 and own and not os.environ.get("KEEP"):
            shutil.rmtree(a.dir, ignore_errors=True)
        elif r.failed:
            print(f"faults: kept {a.dir} (seed {a.seed})")
    print(f"faults: {r.passed} passed, {r.failed} failed", flush=True)
    return 0 if r.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
