#!/usr/bin/env python3
"""Builds a ledger the way a cluster builds one: a watcher following a
recorded stream and `gpuledger serve` answering the admission reviews that
go with it, each review sent once the stream lines before it are observed
(DESIGN 3.6; the reviews come from `gpuledger simulate --cases`).

  drive.py BIN STREAM REVIEWS DB [--mode fifo|file] [--answers FILE]

--mode fifo (default): one `watch --from FIFO` for the whole run, fed line
by line, the writer kept open between steps: what `kubectl get --watch -o
json | gpuledger watch --from -` does. --mode file: the stream is appended
to a file step by step and `watch --from FILE` is run after each step
(a watch of the same file resumes at its stored offset).

"Observed" is read from serve's GET /v1/events: the event the last written
line gives (a RESERVE or RELEASE of its VMInstance, the BUDGET of its
Tenant, the CLASS of the class table). Each answer is checked to be an
AdmissionReview with the review's uid; --answers writes them, one per line.
Exit 0, or 1 with the reason on stderr.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

TIMEOUT_S = 120


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def fail(msg):
    sys.stderr.write("drive: %s\n" % msg)
    sys.exit(1)


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def post(url, body):
    req = urllib.request.Request(url, data=body.encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.status, json.loads(r.read())


def governed(tenant_obj):
    md = tenant_obj["metadata"]
    if md["namespace"] == "tenant-root":
        return "tenant-" + md["name"]
    return md["namespace"] + "-" + md["name"]


def matches(line, ev):
    """Whether event ev is what stream line gives."""
    obj = json.loads(line)["object"]
    kind = obj.get("kind")
    if kind == "VMInstance":
        return (ev.get("type") in ("RESERVE", "RELEASE") and
                ev.get("name") == obj["metadata"]["name"] and
                ev.get("namespace") == obj["metadata"]["namespace"])
    if kind == "Tenant":
        return ev.get("type") == "BUDGET" and ev.get("namespace") == governed(obj)
    if kind == "ConfigMap":
        return ev.get("type") == "CLASS"
    fail("no event to wait for after a %s line" % kind)


class Events:
    def __init__(self, base):
        self.base = base
        self.next = 1

    def wait_for(self, line):
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                page = get("%s/v1/events?from=%d&limit=1000" %
                           (self.base, self.next))
            except OSError:
                time.sleep(0.05)
                continue
            for ev in page["events"]:
                self.next = ev["seq"] + 1
                if matches(line, ev):
                    return
            if not page["events"]:
                time.sleep(0.05)
        fail("the watcher did not observe %s within %d s" %
             (line[:120], TIMEOUT_S))


def main():
    args = sys.argv[1:]
    mode, answers_path = "fifo", None
    while len(args) > 4:
        if args[-2] == "--mode":
            mode = args[-1]
        elif args[-2] == "--answers":
            answers_path = args[-1]
        else:
            fail("usage: drive.py BIN STREAM REVIEWS DB [--mode fifo|file] "
                 "[--answers FILE]")
        args = args[:-2]
    binary, stream, reviews, db = args
    lines = open(stream).read().splitlines()
    plan = [json.loads(l) for l in open(reviews).read().splitlines()]
    tmp = tempfile.mkdtemp(prefix="gpuledger-drive-")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    procs = []
    answers = []

    def start(argv, **kw):
        p = subprocess.Popen(argv, **kw)
        procs.append(p)
        return p

    try:
        feed = None
        if mode == "fifo":
            fifo = os.path.join(tmp, "stream.fifo")
            os.mkfifo(fifo)
            watcher = start([binary, "watch", "--from", fifo, "--db", db],
                            stdout=subprocess.DEVNULL)
            feed = open(fifo, "w")  # blocks until the watcher opens it
        else:
            copy = os.path.join(tmp, "stream.ndjson")
            open(copy, "w").close()
            subprocess.run([binary, "watch", "--from", copy, "--db", db],
                           check=True, stdout=subprocess.DEVNULL)
        serve = start([binary, "serve", "--db", db, "--create", "--listen",
                       "127.0.0.1:%d" % port], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
        events = Events(base)
        written = 0

        def write_upto(n):
            nonlocal written
            if n <= written:
                return
            chunk = "".join(l + "\n" for l in lines[written:n])
            if mode == "fifo":
                feed.write(chunk)
                feed.flush()
            else:
                with open(copy, "a") as f:
                    f.write(chunk)
                subprocess.run([binary, "watch", "--from", copy, "--db", db],
                               check=True, stdout=subprocess.DEVNULL)
            written = n
            events.wait_for(lines[n - 1])

        for step in plan:
            write_upto(step["after"])
            uid = step["review"]["request"]["uid"]
            status, ans = post(base + "/v1/admission", json.dumps(step["review"]))
            if status != 200 or ans.get("response", {}).get("uid") != uid:
                fail("review %s: HTTP %d %s" % (uid, status, ans))
            answers.append(ans)
        write_upto(len(lines))
        if mode == "fifo":
            feed.close()
            if watcher.wait(timeout=TIMEOUT_S) != 0:
                fail("the watcher exited with %d" % watcher.returncode)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    if answers_path:
        with open(answers_path, "w") as f:
            for a in answers:
                f.write(json.dumps(a, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
