#!/usr/bin/env python3
"""What is judged is what is recorded (DESIGN 3.5), as a property over many
random requests.

Seeded random verdict requests — numbers spelt every way JSON allows (2,
2.0, 2e0, 20e-1, 2.000, -0, -0.0, 1E+0, 2^53 +- 1, 1e19, 1e400, fractions),
duplicate keys, unicode escapes, deep nesting, every field missing or null
or of another type, AdmissionReviews around them (dryRun of every type, uid
and userInfo near and past their bounds) — are sent to a real serve over
HTTP and through `gpuledger eval` on the same ledger state. Then:

- every recorded verdict is re-derived by `gpuledger audit` (all of them)
  and by GET /v1/verdicts/{id}?verify=1, and every record parses back;
- HTTP and eval give the same outcome for every request: the same verdict
  (HTTP's without id, seq, basisSeq and chainHead), or both a request error
  (with the same message, unless it is the JSON reader's, whose position
  text differs);
- one review, one verdict (DESIGN 11 rule 3): a review sent again (some are,
  verbatim) is answered with the first answer's bytes and not recorded
  again; a uid reused for another request is a 409.

Usage: verdict_prop.py --bin GPULEDGER --root SRC [--n N] [--seed S]
Prints "ok:"/"FAIL:" lines, the seed, and "checks: N passed, N failed".
"""
import argparse
import http.client
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

TENANTS = ["tenant-acme", "tenant-acme-dev", "tenant-acme-prod", "tenant-beta",
           "tenant-root", "tenant-old", "default", "tenant-nope"]
CLASSES = ["h100", "a10", "l40s", None]
KEYS = ["h100.gpuclass.cozystack.io/devices", "gpuclass.cozystack.io/devices",
        "a10.gpuclass.cozystack.io/devices", "requests.nvidia.com/GH100",
        "x.gpuclass.cozystack.io/devices"]


class Gen:
    """Writes JSON text with randomly spelt numbers and keys."""

    def __init__(self, rnd):
        self.r = rnd

    def num(self, v):
        """v (an int) spelt one of the ways JSON allows, or a neighbour a
        chart would read differently."""
        r = self.r
        c = r.randrange(20)
        if c == 0:
            return f"{v}.0"
        if c == 1:
            return f"{v}e0"
        if c == 2:
            return f"{v * 10}e-1"
        if c == 3:
            return f"{v}.000"
        if c == 4 and v == 0:
            return r.choice(["-0", "-0.0", "0e5", "0.0"])
        if c == 5:
            return f"{v}E+0"
        if c == 6:
            return r.choice(["9007199254740991", "9007199254740992",
                             "9007199254740993", "-9007199254740993"])
        if c == 7:
            return r.choice(["1e19", "10000000000000000000",
                             "9223372036854775807", "9223372036854775808",
                             "18446744073709551616", "1.5e300"])
        if c == 8 and r.random() < 0.2:
            return r.choice(["1e400", "-1e400"])  # no double holds these
        if c == 9:
            return r.choice(["2.5", "0.5", "1e-7", "-1", "-2.0"])
        return str(v)

    def string(self, s):
        """s as a JSON string, sometimes with unicode escapes."""
        out = []
        for ch in s:
            if self.r.random() < 0.1:
                out.append("\\u%04x" % ord(ch))
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    def obj(self, members):
        """members: [(key, text)]; sometimes a member is doubled."""
        ms = list(members)
        if ms and self.r.random() < 0.03:
            k, v = self.r.choice(ms)
            ms.append((k, v))
        self.r.shuffle(ms)
        return "{" + ",".join(self.string(k) + ":" + v for k, v in ms) + "}"

    def maybe(self, key, text, members):
        """Adds key: text, or drops it, or makes it null."""
        c = self.r.random()
        if c < 0.06:
            return
        if c < 0.1:
            members.append((key, "null"))
            return
        members.append((key, text))

    def odd(self):
        """A value of a type nobody expects."""
        return self.r.choice(['"3"', "true", "[]", "{}", "null", '"x"',
                              "[[[[[[1]]]]]]", self.num(2)])

    def gpus(self):
        r = self.r
        if r.random() < 0.05:
            return self.odd()
        items = []
        for _ in range(r.randrange(4)):
            if r.random() < 0.05:
                items.append(self.odd())
                continue
            m = []
            cls = r.choice(CLASSES)
            self.maybe("class", self.string(cls) if cls else "null", m)
            if r.random() < 0.1:
                m.append(("name", self.string("nvidia.com/GH100")))
            self.maybe("count", self.num(r.choice([0, 1, 1, 2, 3, 5, 9])), m)
            items.append(self.obj(m))
        return "[" + ",".join(items) + "]"

    def spec(self, kind):
        r = self.r
        if r.random() < 0.04:
            return self.odd()
        m = []
        self.maybe("gpus", self.gpus(), m)
        if kind == "KubernetesNodes" or r.random() < 0.2:
            self.maybe("maxReplicas", self.num(r.choice([0, 1, 2, 3, 10])),
                       m)
        if r.random() < 0.1:
            m.append(("nested", "[" * 20 + "1" + "]" * 20))
        return self.obj(m)

    def quotas(self):
        r = self.r
        m = []
        for _ in range(r.randrange(4)):
            k = r.choice(KEYS)
            if any(k == x for x, _ in m):
                continue
            v = r.choice([self.string(r.choice(["4", "2", "0", "1k", "x",
                                                 "9Ei", "-1"])),
                          self.num(r.choice([0, 1, 2, 4, 8, 100]))])
            m.append((k, v))
        return self.obj(m)

    def admission(self):
        r = self.r
        kind = r.choice(["VMInstance", "KubernetesNodes"])
        m = []
        self.maybe("namespace", self.string(r.choice(TENANTS)), m)
        self.maybe("kind", self.string(kind) if r.random() > 0.03
                   else self.string("Pod"), m)
        self.maybe("name", self.string(f"vm-{r.randrange(5)}"), m)
        m.append(("old", self.spec(kind) if r.random() < 0.3 else "null"))
        self.maybe("new", self.spec(kind), m)
        if r.random() < 0.1:
            m.append(("extra", self.num(7)))
        return kind, m

    def declaration(self):
        r = self.r
        m = []
        self.maybe("namespace", self.string(r.choice(TENANTS)), m)
        m.append(("old", self.quotas() if r.random() < 0.4 else "null"))
        self.maybe("new", self.quotas(), m)
        return m

    def review(self, kind, plain, decl):
        """An AdmissionReview around what plain (members) describes."""
        r = self.r
        d = dict(plain)
        op = r.choice(["CREATE", "CREATE", "UPDATE", "DELETE"])
        uid = "u-%d" % r.randrange(10 ** 9)
        if r.random() < 0.05:
            uid = "x" * r.choice([127, 128, 129, 4000])
        rq = [("uid", self.string(uid)), ("operation", self.string(op))]
        if decl:
            ns = r.choice(["tenant-acme", "tenant-root"])
            rq += [("kind", '{"kind":"Tenant"}'),
                   ("namespace", self.string(ns)),
                   ("name", self.string(r.choice(["dev", "prod", "beta"]))),
                   ("object", '{"spec":{"resourceQuotas":%s}}' %
                    d.get("new", "{}")),
                   ("oldObject", '{"spec":{"resourceQuotas":%s}}' %
                    d.get("old", "{}") if op != "CREATE" else "null")]
        else:
            rq += [("kind", '{"kind":%s}' % self.string(kind)),
                   ("namespace", d.get("namespace", '"tenant-acme"')),
                   ("name", d.get("name", '"vm"')),
                   ("object", '{"spec":%s}' % d.get("new", "{}")),
                   ("oldObject", '{"spec":%s}' % d.get("old", "null"))]
        c = r.random()
        if c < 0.1:
            rq.append(("dryRun", r.choice(['"true"', "1", "null", "{}"])))
        elif c < 0.4:
            rq.append(("dryRun", r.choice(["true", "false"])))
        ui = [("username", self.string(r.choice(["alice", "bob", "é"]))),
              ("groups", '["system:authenticated", 7]')]
        if r.random() < 0.03:
            ui.append(("extra", '{"k":["%s"]}' % ("v" * r.choice(
                [100, 17000]))))
        self.maybe("userInfo", self.obj(ui), rq)
        return self.obj([("apiVersion", '"admission.k8s.io/v1"'),
                         ("kind", '"AdmissionReview"'),
                         ("request", self.obj(rq))])

    def request(self):
        """(path, body text, is a review)."""
        r = self.r
        decl = r.random() < 0.3
        if decl:
            m = self.declaration()
            kind = None
        else:
            kind, m = self.admission()
        if r.random() < 0.35:
            return (("/v1/declarations" if decl else "/v1/admission"),
                    self.review(kind, m, decl), True)
        return (("/v1/declarations" if decl else "/v1/admission"),
                self.obj(m), False)


STRIP = ("id", "seq", "basisSeq", "chainHead", "answeredAt")


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("SEED") or
                                random.SystemRandom().randrange(1 << 30)))
    a = ap.parse_args()
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("ok: " + name)
        else:
            failed += 1
            print("FAIL: " + name + (": " + detail if detail else ""))

    print(f"verdict_prop: seed {a.seed} (SEED={a.seed} reruns it), "
          f"{a.n} requests")
    rnd = random.Random(a.seed)
    g = Gen(rnd)
    tmp = tempfile.mkdtemp()
    db = os.path.join(tmp, "db")
    try:
        with open(os.path.join(a.root, "tests/query/base.ndjson")) as f:
            subprocess.run([a.bin, "import", "--db", db, "--create"],
                           stdin=f, check=True, capture_output=True)
        srv = subprocess.Popen([a.bin, "serve", "--db", db, "--listen",
                                "127.0.0.1:0"],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
        m = re.search(r":(\d+)$", srv.stdout.readline().strip())
        port = int(m.group(1))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        reqs, answers = [], []
        for _ in range(a.n):
            path, body, review = g.request()
            # A retry: the API server sends a review again, verbatim.
            sent = [q for q in reqs if q[2]]
            if sent and rnd.random() < 0.03:
                path, body, review = rnd.choice(sent)
            reqs.append((path, body, review))
            conn.request("POST", path, body=body.encode(),
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            answers.append((r.status, r.read().decode("utf-8", "replace")))
        # eval on the same state (verdicts change no state), each body
        # spelt exactly as sent.
        lines = "".join(
            '{"function":"%s","input":%s}\n' %
            ("Declaration" if p == "/v1/declarations" else "Admission", b)
            for p, b, _ in reqs)
        ev = subprocess.run([a.bin, "eval", "--db", db], input=lines,
                            capture_output=True, text=True)
        outs = ev.stdout.splitlines()
        check("eval answers every line", len(outs) == a.n,
              f"{len(outs)} of {a.n}: {ev.stderr[-300:]}")
        differ, ids, kinds = [], [], {}
        # One review, one verdict (DESIGN 11 rule 3): a recorded review's
        # uid -> (its type and request, its answer).
        first = {}
        for i, ((path, body, review), (st, text)) in enumerate(
                zip(reqs, answers)):
            try:
                e = json.loads(outs[i])
            except (IndexError, ValueError):
                differ.append((i, "no eval line"))
                continue
            try:
                h = json.loads(text)
            except ValueError:
                differ.append((i, f"HTTP {st} not JSON: {text[:100]}"))
                continue
            if st == 400:
                kinds["refused"] = kinds.get("refused", 0) + 1
                he, ee = h.get("error", ""), e.get("error")
                if ee is None or (not he.startswith("malformed JSON") and
                                  he != ee):
                    differ.append((i, f"HTTP 400 {he!r}, eval {outs[i]}"))
                continue
            uid = None
            if review:
                try:
                    rq = json.loads(body).get("request")
                    if isinstance(rq, dict) and rq.get("dryRun") is not True:
                        uid = rq.get("uid")
                except (ValueError, AttributeError):
                    uid = None
            out = e.get("output") or {}
            me = (out.get("type"), canon(out.get("request")))
            prior = first.get(uid) if isinstance(uid, str) else None
            if prior is not None and prior[0] != me:
                if st != 409:
                    differ.append((i, f"uid reused for another request: "
                                      f"HTTP {st}, not 409"))
                kinds["uid reused"] = kinds.get("uid reused", 0) + 1
                continue
            if st != 200:
                differ.append((i, f"HTTP {st}: {text[:200]}"))
                continue
            if prior is not None:
                if text != prior[1]:
                    differ.append((i, f"repeat answered {text[:200]}, "
                                      f"first {prior[1][:200]}"))
                kinds["repeat"] = kinds.get("repeat", 0) + 1
                continue
            if review:
                resp = h.get("response", {})
                vid = resp.get("auditAnnotations", {}).get(
                    "gpuledger.cozystack.io/verdict-id")
                out = e.get("output")
                if out is None:
                    differ.append((i, f"review answered, eval {outs[i]}"))
                    continue
                if vid is None:  # a dry run: not recorded
                    kinds["dry run"] = kinds.get("dry run", 0) + 1
                    same = (resp.get("allowed") == out.get("allowed") and
                            resp.get("status", {}).get("reason") ==
                            out.get("reason"))
                    if not same:
                        differ.append((i, f"dry run {text[:200]} / "
                                          f"{outs[i][:200]}"))
                    continue
                if isinstance(uid, str):
                    first[uid] = (me, text)
                conn.request("GET", f"/v1/verdicts/{vid}")
                r = conn.getresponse()
                h = json.loads(r.read())
            kinds["recorded"] = kinds.get("recorded", 0) + 1
            ids.append(h.get("id"))
            got = {k: v for k, v in h.items() if k not in STRIP}
            if canon(got) != canon(e.get("output")):
                differ.append((i, f"HTTP {canon(got)[:300]} / eval "
                                  f"{outs[i][:300]}"))
        print(f"verdict_prop: {kinds}")
        for i, why in differ[:5]:
            print(f"  request {i}: {reqs[i][1][:300]}\n    {why}")
        check("HTTP and eval give the same outcome for every request",
              not differ, f"{len(differ)} differ")
        check("requests of every outcome were sent",
              all(kinds.get(k, 0) > 0 for k in ("refused", "recorded",
                                                 "dry run", "repeat",
                                                 "uid reused")), str(kinds))
        # Every recorded verdict re-derives over HTTP; each record parses.
        bad = []
        for vid in ids:
            conn.request("GET", f"/v1/verdicts/{vid}?verify=1")
            r = conn.getresponse()
            body = r.read()
            try:
                v = json.loads(body)
            except ValueError:
                v = {}
            if r.status != 200 or v.get("verified") is not True:
                bad.append((vid, r.status, body[:300]))
        for b in bad[:5]:
            print(f"  verdict {b[0]}: HTTP {b[1]} {b[2]!r}")
        check(f"?verify=1 re-derives all {len(ids)} recorded verdicts",
              not bad, f"{len(bad)} do not")
        conn.close()
        srv.terminate()
        srv.wait(20)
        au = subprocess.run([a.bin, "audit", "--db", db],
                            capture_output=True, text=True)
        check("audit re-derives every recorded verdict",
              au.returncode == 0 and
              au.stdout.startswith(f"ok: {len(ids)} verdicts match"),
              (au.stdout + au.stderr)[-600:])
        ve = subprocess.run([a.bin, "verify", "--db", db],
                            capture_output=True, text=True)
        check("verify passes", ve.returncode == 0, ve.stdout[-300:])
    finally:
        if os.environ.get("KEEP"):
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"checks: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
