#!/usr/bin/env python3
"""Helpers of run.sh's cluster admission figures (DESIGN 10's cluster
bullet, issue 40). Not a test: it prepares inputs and turns wrk's output
into numbers; run.sh prints them. It talks to members over HTTP only and to
etcd only through its v3 JSON gateway, so that the same figures measure
today's members and the verdict sequencer.

    cluster_admit.py scenario SIM.ndjson OUT.json
        The fake API server's scenario (tests/apiserver/fake_apiserver.py):
        the objects alive at the end of a recorded stream (`gpuledger
        simulate`), so that the leader's watcher lists the state the
        existing cluster figures feed.
    cluster_admit.py kubeconfig URL TOKEN OUT
    cluster_admit.py pick MEMBER-URL
        Prints "NAMESPACE CLASS": the deepest tenant with a bounded,
        unblocked class left (GET /v1/tenants), as run.sh's pick_tenant.
    cluster_admit.py review NAMESPACE CLASS OUT
        One AdmissionReview v1 on one line (a VMInstance create of one
        device of CLASS; tests/webhook/vminstance-create-allowed.json) whose
        request.uid is @UID@, for tests/bench/wrk_review.lua.
    cluster_admit.py leader ETCD-URL PREFIX
        Prints the name in P/leader (a range through the gateway), or
        nothing when no member holds it.
    cluster_admit.py delete ETCD-URL KEY-PREFIX
        Deletes every key under KEY-PREFIX (deleterange); prints the count.
    cluster_admit.py merge WRK-OUTPUT...
        One JSON line pooling several wrk processes run together with
        tests/bench/wrk_log.lua (the report in WRK-OUTPUT, the request logs
        in WRK-OUTPUT.log.THREAD): "ok_per_s" (requests answered 200 per
        second: the sum over the processes of each one's count over its own
        duration, wrk's), "req_per_s", "p99_ms" and "p50_ms" over the union
        of every answered request's own latency (nearest rank), "non200"
        (answered with another status), "no_answer" (the connection failed
        after the request was sent), "requests", "socket_errors" (wrk's
        connect, read and write errors).
    cluster_admit.py kill --kill-at T --end T2 --survivor WRK-OUTPUT...
                          [--killed WRK-OUTPUT] --member-url URL
                          --etcd URL --prefix P
        The SIGKILL figure from the logs of one SIGKILL run: on the
        survivors' connections only, "refused_s", the length within [T, T2]
        of the union of [sent, answered] over every request not answered
        200 (another status, or no answer: its connection failed), so a
        request that waited and was then refused counts for its wait;
        "refused_before_s", the same over as long a window before T;
        "waiting_at_end_max_s", the longest a survivor's thread had been
        waiting for an answer when the load stopped (wrk logs no request
        still pending then); "slowest_after_s", the longest wait of a
        survivor's request answered after T; and, for every request
        answered 200 on any
        connection (the killed member's before it died too), whether its
        uid is in exactly one VERDICT of the log the member at URL serves
        (GET /v1/events once it has applied P/head): "lost", "duplicated".

Standard library only; every request has a timeout.
"""
import argparse
import base64
import collections
import copy
import glob
import json
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REVIEW = os.path.join(HERE, "..", "webhook", "vminstance-create-allowed.json")


def http(url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    rq = urllib.request.Request(url, data=data,
                                method="GET" if body is None else "POST")
    with urllib.request.urlopen(rq, timeout=timeout) as a:
        return json.loads(a.read())


def b64(s):
    return base64.b64encode(s.encode()).decode()


def prefix_end(p):
    b = bytearray(p.encode())
    b[-1] += 1
    return base64.b64encode(bytes(b)).decode()


def scenario(sim, out):
    live = {}
    with open(sim, encoding="utf-8") as f:
        for line in f:
            e = json.loads(line)
            t, o = e.get("type"), e.get("object") or {}
            if t not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            m = o.get("metadata") or {}
            k = (o.get("apiVersion"), o.get("kind"), m.get("namespace"),
                 m.get("name"))
            live.pop(k, None)  # re-added at the end: creation order kept
            if t != "DELETED":
                live[k] = o
    objs = []
    for o in live.values():
        o = copy.deepcopy(o)
        o["metadata"].pop("resourceVersion", None)  # the server numbers
        objs.append(o)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"objects": objs}, f)
    print(len(objs))


def kubeconfig(url, token, out):
    with open(out, "w", encoding="utf-8") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n"
                "  cluster: {server: \"%s\"}\nusers:\n- name: w\n"
                "  user: {token: %s}\ncontexts:\n- name: fake\n"
                "  context: {cluster: fake, user: w}\n"
                "current-context: fake\n" % (url, token))


def pick(member):
    st = http(member + "/v1/tenants")
    best = None
    for t in st.get("tenants", []):
        for c, r in sorted((t.get("remaining") or {}).items()):
            if r.get("remaining") is not None and not r.get("blocked") \
                    and r["remaining"] > 0:
                d = t["namespace"].count("-")
                if best is None or d > best[0]:
                    best = (d, t["namespace"], c)
    print("%s %s" % (best[1], best[2]) if best else "tenant-root h100")


def review(ns, cls, out):
    with open(REVIEW, encoding="utf-8") as f:
        r = json.load(f)
    q = r["request"]
    q["uid"] = "@UID@"
    q["namespace"] = ns
    q["name"] = "vm-bench"
    q["object"]["metadata"] = {"name": "vm-bench", "namespace": ns}
    q["object"]["spec"]["gpus"] = [{"class": cls, "count": 1}]
    with open(out, "w", encoding="utf-8") as f:
        f.write(json.dumps(r, separators=(",", ":")) + "\n")


def leader(etcd, prefix):
    a = http(etcd + "/v3/kv/range", {"key": b64(prefix + "/leader")})
    for kv in a.get("kvs") or []:
        v = json.loads(base64.b64decode(kv["value"]))
        print(v.get("name", ""))


def delete(etcd, p):
    a = http(etcd + "/v3/kv/deleterange",
             {"key": b64(p), "range_end": prefix_end(p)}, timeout=60)
    print(a.get("deleted", 0))


def percentile(xs, p):
    """The p-th percentile of sorted xs (nearest rank), or nan."""
    if not xs:
        return float("nan")
    k = max(0, min(len(xs) - 1, int(-(-p / 100.0 * len(xs) // 1)) - 1))
    return xs[k]


def read_logs_file(fn):
    recs = []
    with open(fn, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if len(w) == 4:
                recs.append((float(w[0]), float(w[1]), int(w[2]), w[3]))
    return recs


def read_logs(out):
    """The request lines of the wrk whose report is in file out (its
    BENCH_LOG was out.log): [(sent, received, status, id)]."""
    recs = []
    for fn in sorted(glob.glob(glob.escape(out) + ".log.*")):
        recs.extend(read_logs_file(fn))
    return recs


def read_summary(out):
    with open(out, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.split()
            if w[:1] == ["SUMMARY"]:
                return dict(zip(w[1::2], (int(x) for x in w[2::2])))
    return None


def merge(files):
    lat = []
    ok = req = non200 = noans = sock = n = 0
    for fn in files:
        s = read_summary(fn)
        recs = read_logs(fn)
        if s is None:
            continue
        d = s["duration_us"] / 1e6 or 1e-9
        good = sum(1 for r in recs if r[2] == 200)
        ok += good / d
        req += len(recs) / d
        n += len(recs)
        non200 += sum(1 for r in recs if r[2] not in (0, 200))
        noans += sum(1 for r in recs if r[2] == 0)
        sock += s["connect"] + s["read"] + s["write"]
        lat.extend(r[1] - r[0] for r in recs if r[2] != 0)
    lat.sort()
    print(json.dumps({"ok_per_s": round(ok, 1), "req_per_s": round(req, 1),
                      "p99_ms": round(percentile(lat, 99) * 1000, 3),
                      "p50_ms": round(percentile(lat, 50) * 1000, 3),
                      "requests": n, "non200": non200, "no_answer": noans,
                      "socket_errors": sock}))


def union(intervals, lo, hi):
    """The length of the union of intervals clipped to [lo, hi]."""
    iv = sorted((max(a, lo), min(b, hi)) for a, b in intervals
                if b > lo and a < hi)
    total, end = 0.0, lo
    for a, b in iv:
        a = max(a, end)
        if b > a:
            total += b - a
            end = b
    return total


def answered_uids(member, want_seq):
    """The requester uid of every VERDICT in the log a member serves, once
    it has applied want_seq (bounded wait)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            seq = http(member + "/readyz").get("seq", -1)
        except Exception:  # 503 while catching up carries JSON too
            seq = -1
        if seq >= want_seq or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    uids = collections.Counter()
    nxt = 1
    while True:
        a = http("%s/v1/events?from=%d&limit=10000" % (member, nxt),
                 timeout=60)
        for e in a.get("events", []):
            if e.get("type") != "VERDICT":
                continue
            rec = e.get("record")
            if isinstance(rec, str):
                try:
                    rec = json.loads(rec)
                except ValueError:
                    rec = {}
            rq = (rec or {}).get("requester") or {}
            if isinstance(rq, dict) and rq.get("uid"):
                uids[str(rq["uid"])] += 1
        if not a.get("events") or a.get("next") is None:
            break
        nxt = a["next"]
        if nxt > a.get("lastSeq", nxt):
            break
    return uids, seq


def head_seq(etcd, prefix):
    a = http(etcd + "/v3/kv/range", {"key": b64(prefix + "/head")})
    for kv in a.get("kvs") or []:
        return json.loads(base64.b64decode(kv["value"]))["seq"]
    return 0


def kill(args):
    ap = argparse.ArgumentParser(prog="cluster_admit.py kill")
    ap.add_argument("--kill-at", type=float, required=True)
    ap.add_argument("--end", type=float, required=True)
    ap.add_argument("--survivor", action="append", default=[])
    ap.add_argument("--killed", action="append", default=[])
    ap.add_argument("--member-url", required=True)
    ap.add_argument("--etcd", required=True)
    ap.add_argument("--prefix", required=True)
    a = ap.parse_args(args)
    t0, t1 = a.kill_at, a.end
    surv = [read_logs(f) for f in a.survivor]
    rs = [r for recs in surv for r in recs]
    refused = [(r[0], r[1]) for r in rs if r[2] != 200]
    # A thread whose last answer came long before the end was waiting
    # for one (wrk does not log a request still pending when it stops).
    tails = []
    for f in a.survivor:
        for fn in glob.glob(glob.escape(f) + ".log.*"):
            last = [r[1] for r in read_logs_file(fn)]
            tails.append(t1 - max(last) if last else t1 - t0)
    out = {
        "refused_s": round(union(refused, t0, t1), 3),
        "refused_before_s": round(union(refused, t0 - (t1 - t0), t0), 3),
        "window_s": round(t1 - t0, 3),
        "refused_after": sum(1 for r in rs if r[2] != 200 and r[1] > t0),
        "no_answer_after": sum(1 for r in rs if r[2] == 0 and r[1] > t0),
        "answered_after": sum(1 for r in rs if r[2] == 200 and r[1] > t0),
        "statuses_after": dict(collections.Counter(
            str(r[2]) for r in rs if r[1] > t0)),
        "waiting_at_end_max_s": round(max(tails, default=0.0), 3),
        "slowest_after_s": round(max((r[1] - r[0] for r in rs
                                      if r[1] > t0), default=0.0), 3),
    }
    ok = [r[3] for f in a.survivor + a.killed for r in read_logs(f)
          if r[2] == 200]
    uids, seq = answered_uids(a.member_url, head_seq(a.etcd, a.prefix))
    out["answered_200"] = len(ok)
    out["lost"] = sum(1 for u in ok if uids[u] == 0)
    out["duplicated"] = sum(1 for u in ok if uids[u] > 1)
    out["log_seq"] = seq
    print(json.dumps(out, sort_keys=True))


def main(argv):
    cmd, rest = (argv[1], argv[2:]) if len(argv) > 1 else ("", [])
    if cmd == "scenario" and len(rest) == 2:
        scenario(*rest)
    elif cmd == "kubeconfig" and len(rest) == 3:
        kubeconfig(*rest)
    elif cmd == "pick" and len(rest) == 1:
        pick(*rest)
    elif cmd == "review" and len(rest) == 3:
        review(*rest)
    elif cmd == "leader" and len(rest) == 2:
        leader(*rest)
    elif cmd == "delete" and len(rest) == 2:
        delete(*rest)
    elif cmd == "merge" and rest:
        merge(rest)
    elif cmd == "kill" and rest:
        kill(rest)
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
