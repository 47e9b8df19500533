#!/usr/bin/env python3
"""Concurrent admission clients for the cluster tests (DESIGN 11): each of
--clients threads POSTs --requests AdmissionReviews (unique uids, a VMInstance
create of 1 to 3 GPUs in one of a few tenants) to a member chosen at random,
and re-sends some of them (--retry, a fraction) with the same uid to another
member. Every attempt is logged, one line of NDJSON in the form
tests/cluster/history.py reads: {"uid", "request", "sent", "received",
"status", "body", "error", "member"} (error: why no answer came, in
history.no_answer_error's words; null when one came).

    vclients.py --members URL[,URL...] --out FILE [--clients N]
                [--requests M] [--retry F] [--seed S] [--uid-prefix P]
                [--timeout S] [--stagger] [--token T]

With --stagger, client c sends only M*(c+1)/N of its requests: the clients
leave one by one, so that a member's next group is smaller than the last
(its linger must end on its own).

Prints "seed S" first (a failure is replayed with --seed). Standard library
only.
"""
import argparse
import copy
import datetime
import json
import os
import random
import sys
import threading
import urllib.error
import urllib.request

import history

HERE = os.path.dirname(os.path.abspath(__file__))
REVIEW = os.path.join(HERE, "..", "webhook", "vminstance-create-allowed.json")
TENANTS = ("tenant-acme-dev", "tenant-acme", "tenant-beta", "tenant-acme-prod")


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def review(base, uid, ns, name, count):
    r = copy.deepcopy(base)
    q = r["request"]
    q["uid"] = uid
    q["namespace"] = ns
    q["name"] = name
    q["object"]["metadata"] = {"name": name, "namespace": ns}
    q["object"]["spec"]["gpus"] = [{"class": "h100", "count": count}]
    return r


TOKEN = None  # --token: the bearer token every request carries


def post(url, body, timeout):
    """(status, body, headers, error): error says why no answer came
    (a reset after the request was sent, a timeout, ...), else None."""
    data = json.dumps(body).encode()
    rq = urllib.request.Request(url + "/v1/admission", data=data,
                                method="POST")
    if TOKEN is not None:
        rq.add_header("Authorization", "Bearer " + TOKEN)
    try:
        with urllib.request.urlopen(rq, timeout=timeout) as a:
            return a.status, a.read(), dict(a.headers), None
    except urllib.error.HTTPError as e:
        return e.code, e.read(), dict(e.headers), None
    except Exception as e:  # a timeout or a reset: no answer
        return None, None, {}, history.no_answer_error(e)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--retry", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--uid-prefix", default="u")
    ap.add_argument("--timeout", type=float, default=15)
    ap.add_argument("--stagger", action="store_true")
    ap.add_argument("--token", default=None)
    a = ap.parse_args(argv)
    global TOKEN
    TOKEN = a.token
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    print(f"seed {seed}", flush=True)
    urls = a.members.split(",")
    with open(REVIEW, encoding="utf-8") as f:
        base = json.load(f)
    lock = threading.Lock()
    out = open(a.out, "a", encoding="utf-8")
    bad_headers = []

    def log(uid, body, sent, status, answer, member, headers, error):
        try:
            parsed = json.loads(answer) if answer else None
        except ValueError:
            parsed = None
        if status == 503 and any(k.lower() == "retry-after" for k in headers):
            bad_headers.append(uid)
        with lock:
            out.write(json.dumps({"uid": uid, "request": body, "sent": sent,
                                  "received": now() if status else None,
                                  "status": status, "body": parsed,
                                  "error": error,
                                  "member": member}) + "\n")

    def client(c):
        rnd = random.Random(seed * 1000 + c)
        n = a.requests * (c + 1) // a.clients if a.stagger else a.requests
        for j in range(n):
            uid = f"{a.uid_prefix}-{c}-{j}"
            body = review(base, uid, rnd.choice(TENANTS), f"vm-{c}-{j}",
                          rnd.randint(1, 3))
            m = rnd.randrange(len(urls))
            sent = now()
            st, ans, h, err = post(urls[m], body, a.timeout)
            log(uid, body, sent, st, ans, m, h, err)
            if rnd.random() < a.retry:
                m2 = (m + 1 + rnd.randrange(max(1, len(urls) - 1))) % len(urls)
                sent = now()
                st, ans, h, err = post(urls[m2], body, a.timeout)
                log(uid, body, sent, st, ans, m2, h, err)

    ts = [threading.Thread(target=client, args=(c,)) for c in range(a.clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out.close()
    if bad_headers:
        print(f"503 with Retry-After: {bad_headers[:5]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
