#!/usr/bin/env python3
"""One measured `gpuledger cluster feed` for run.sh's cluster figures
(DESIGN 10's cluster bullet). Not a test: it measures and prints one JSON
line; run.sh turns it into figures.

    cluster_feed.py --bin B --etcd URLS --prefix P --from FILE --batch N
                    --members URL[,URL...]
                    [--kill-pid PID --kill-member URL --kill-after S]
                    [--admission BODY-FILE]

While the feed runs, one thread per member polls its /readyz (which names
its applied seq, ready or not) every POLL_S over a kept-alive connection.
The feed prints one line per committed txn; the time a line arrives is the
txn's commit as its writer saw it. From these:
  - appends/s and txns/s of the steady state (from the first committed
    line to the last: the feed's start, reading P/head and building its
    state, is left out);
  - txn latency: the interval between consecutive committed lines (the
    feed has one txn outstanding, so this is one txn's round trip plus the
    batch's build on the writer's state);
  - apply lag: per txn, the first time every live member answered a seq
    >= the txn's last seq, less the commit time (resolution: POLL_S plus
    one request).
With --kill-pid (and --kill-member, its URL), that process is SIGKILLed after --kill-after seconds,
and for every other member the longest stretch of refusals after the kill
is reported: with --admission (once a member answers admission), POST
/v1/admission with that body not 200; with --probe PATH, GET PATH not 200;
else /readyz not 200. A stretch runs from
the first refused answer's request to the next answered one's.

Standard library only; every loop is bounded in time.
"""
import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

POLL_S = 0.005
# After the feed ends, how long the members get to apply its last txn.
SETTLE_S = 20.0


class Poller(threading.Thread):
    """Polls one member: (sent, received, seq, answered) samples."""

    def __init__(self, url, path, body, stop):
        super().__init__(daemon=True)
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.path, self.body, self.stop = path, body, stop
        self.samples = []
        self.conn = None

    def once(self):
        t0 = time.monotonic()
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port,
                                                       timeout=1.0)
            if self.body is None:
                self.conn.request("GET", self.path)
            else:
                self.conn.request("POST", self.path, body=self.body,
                                  headers={"Content-Type":
                                           "application/json"})
            r = self.conn.getresponse()
            data = r.read()
            status = r.status
        except (OSError, http.client.HTTPException):
            if self.conn is not None:
                self.conn.close()
            self.conn = None
            data, status = b"", 0
        seq = None
        if self.body is None and data:
            try:
                seq = json.loads(data).get("seq")
            except ValueError:
                seq = None
        why = None
        if status != 200:
            why = "%d %s" % (status, data[:200].decode(errors="replace"))
        return (t0, time.monotonic(), seq, status == 200, why)

    def run(self):
        while not self.stop.is_set():
            self.samples.append(self.once())
            time.sleep(POLL_S)


def quantile(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def longest_refusal(samples, since, until=float("inf")):
    """The longest stretch of refused answers in [since, until), in ms."""
    worst, start = 0.0, None
    for sent, _, _, answered, _ in samples:
        if sent < since or sent >= until:
            continue
        if not answered and start is None:
            start = sent
        elif answered and start is not None:
            worst = max(worst, sent - start)
            start = None
    if start is not None and samples:
        worst = max(worst, samples[-1][1] - start)
    return worst * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--from", dest="src", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--members", required=True)
    ap.add_argument("--kill-pid", type=int)
    ap.add_argument("--kill-member", help="the URL of the member at --kill-pid")
    ap.add_argument("--kill-after", type=float, default=1.0)
    ap.add_argument("--admission")
    ap.add_argument("--probe", help="a GET path probed instead of admission")
    a = ap.parse_args()
    members = a.members.split(",")
    stop = threading.Event()
    pollers = [Poller(u, "/readyz", None, stop) for u in members]
    body = None
    if a.admission:
        with open(a.admission, "rb") as f:
            body = f.read()
    probes = []
    if body is not None:
        probes = [Poller(u, "/v1/admission", body, stop) for u in members]
    elif a.probe:
        probes = [Poller(u, a.probe, None, stop) for u in members]
    for p in pollers + probes:
        p.start()
    killed = None  # (index in members, time)
    t_start = time.monotonic()
    feed = subprocess.Popen([a.bin, "cluster", "feed", "--etcd", a.etcd,
                             "--prefix", a.prefix, "--from", a.src,
                             "--batch", str(a.batch)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kill_timer = None
    if a.kill_pid and not a.kill_member:
        ap.error("--kill-pid needs --kill-member")
    if a.kill_pid:
        def kill():
            nonlocal killed
            t = time.monotonic()
            try:
                os.kill(a.kill_pid, signal.SIGKILL)
            except OSError:
                return
            killed = t
        kill_timer = threading.Timer(a.kill_after, kill)
        kill_timer.start()
    commits = []  # (time, last seq, events)
    others = []
    for line in feed.stdout:
        t = time.monotonic()
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("outcome") == "committed":
            commits.append((t, o["lastSeq"], o["events"]))
        else:
            others.append(o.get("outcome"))
    err = feed.stderr.read().decode(errors="replace")
    rc = feed.wait()
    if kill_timer is not None:
        kill_timer.cancel()
    # The members still up must reach the last seq (bounded).
    live = [i for i, u in enumerate(members) if u != a.kill_member]
    last = commits[-1][1] if commits else 0
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        if all(any(x[2] is not None and x[2] >= last
                   for x in pollers[i].samples[-3:]) for i in live):
            break
        time.sleep(0.05)
    stop.set()
    for p in pollers + probes:
        p.join(timeout=2)
    # Commit times and seqs only grow, so each member's first sample that
    # shows a txn applied is at or after the previous txn's.
    lags = []
    at = {i: 0 for i in live}
    for t, seq, _ in commits:
        worst = 0.0
        for i in live:
            sm = pollers[i].samples
            j = at[i]
            while j < len(sm) and not (sm[j][1] >= t and sm[j][2] is not None
                                       and sm[j][2] >= seq):
                j += 1
            at[i] = j
            if j == len(sm):
                worst = None
                break
            worst = max(worst, sm[j][1] - t)
        if worst is not None:
            lags.append(worst * 1e3)
    out = {"rc": rc, "txns": len(commits), "other": others,
           "events": sum(c[2] for c in commits),
           "live": [members[i] for i in live]}
    if rc != 0:
        out["error"] = err.strip().splitlines()[-1:] if err else []
    if len(commits) >= 2:
        span = commits[-1][0] - commits[0][0]
        steady = sum(c[2] for c in commits[1:])
        gaps = [(commits[i][0] - commits[i - 1][0]) * 1e3
                for i in range(1, len(commits))]
        out.update({
            "secs": commits[-1][0] - t_start,
            "events_per_s": steady / span if span > 0 else 0,
            "txns_per_s": (len(commits) - 1) / span if span > 0 else 0,
            "txn_p50_ms": quantile(gaps, 0.5),
            "txn_p99_ms": quantile(gaps, 0.99)})
    # The lag's resolution: the mean interval between one member's polls.
    iv = [(p.samples[-1][0] - p.samples[0][0]) / (len(p.samples) - 1) * 1e3
          for p in pollers if len(p.samples) > 1]
    if iv:
        out["poll_ms"] = sum(iv) / len(iv)
    if a.kill_pid and killed is None:
        out["error"] = ["the feed ended before the kill"]
    if lags:
        out.update({"lag_p50_ms": quantile(lags, 0.5),
                    "lag_p99_ms": quantile(lags, 0.99),
                    "lag_max_ms": max(lags)})
    if killed is not None:
        refused, before, whys = {}, {}, set()
        for i, u in enumerate(members):
            if i not in live:
                continue
            samples = probes[i].samples if probes else pollers[i].samples
            refused[u] = longest_refusal(samples, killed)
            before[u] = longest_refusal(samples, 0, killed)
            whys.update(x[4] for x in samples if x[4] and x[0] >= killed)
        out["killed_at_s"] = killed - t_start
        out["refused_ms"] = refused
        out["refused_max_ms"] = max(refused.values()) if refused else None
        # The same members before the kill: what the load alone does.
        out["refused_before_ms"] = before
        out["refused_before_max_ms"] = max(before.values()) if before else None
        out["refused_why"] = sorted(whys)[:5]
        out["probe"] = ("POST /v1/admission" if body is not None else
                        "GET " + (a.probe or "/readyz"))
    print(json.dumps(out, sort_keys=True))
    return 0 if rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
