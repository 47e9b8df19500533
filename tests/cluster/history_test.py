#!/usr/bin/env python3
"""Tests of the history checker (tests/cluster/history.py) on synthetic
histories: a correct one passes, and each kind of violation fails with a
message naming it.

A history is generated from a seed: observation events, verdicts asked by
clients (plain POSTs and AdmissionReviews) with every outcome a client can
see (answered; 503 or a timeout, then committed and followed by a NOTE
VerdictUnanswered, or never committed; a reset after the request was sent,
its member killed: committed with no NOTE, or never committed; a retry of
the same uid answered with the recorded verdict; a dry run, not recorded),
rendered into a log
(seqs, ids, basisSeq = seq - 1) and the clients' answer log, and copied to
three members. Then each violation is made on a copy of a correct history,
and the checker must name it. Many seeds run (printed: SEED=N repeats one).

Usage: history_test.py [--seeds N]   (SEED=N: that seed only)
Prints "ok:"/"FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import copy
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import history  # noqa: E402

HEAD = "ab" * 32


def t(n):
    return "2026-03-01T%02d:%02d:%02d.000000000Z" % (n // 3600 % 24,
                                                    n // 60 % 60, n % 60)


class World:
    """A history before rendering: items are ("obs", event),
    ("verdict", V) or ("note", V); V is a dict describing one verdict."""

    def __init__(self, seed):
        self.rnd = random.Random(seed)
        self.items = []
        self.requests = []  # (V or None, outcome, request, uid)
        self.clock = 0
        self.id_step = {}  # V index -> extra id added (for id gaps)

    def obs(self):
        self.clock += self.rnd.randint(1, 30)
        n = self.rnd.randint(0, 9)
        kind = self.rnd.choice(["RESERVE", "RELEASE", "TICK", "NOTE"])
        if kind == "TICK":
            ev = {"type": "TICK"}
        elif kind == "NOTE":
            ev = {"type": "NOTE", "code": "InvalidBudgetKey", "kind": None,
                  "message": "x: invalid", "name": f"t{n}",
                  "namespace": f"tenant-{n}"}
        else:
            ev = {"type": kind, "after": n, "before": n + 1, "class": "h100",
                  "kind": "VMInstance", "name": f"vm-{n}",
                  "namespace": "tenant-acme", "uid": f"u-{n}"}
        ev["time"] = t(self.clock)
        self.items.append(("obs", ev))

    def ask(self, k):
        review = self.rnd.random() < 0.5
        uid = "uid-%d-%d" % (k, self.rnd.randint(0, 1 << 30))
        body = {"namespace": "tenant-acme", "kind": "VMInstance",
                "name": f"ask-{k}", "old": None,
                "new": {"gpus": [{"class": "h100",
                                  "count": self.rnd.randint(1, 9)}]}}
        if review:
            sent = {"apiVersion": "admission.k8s.io/v1",
                    "kind": "AdmissionReview",
                    "request": {"uid": uid, "operation": "CREATE",
                                "userInfo": {"username": "alice"},
                                "dryRun": False}}
        else:
            sent = body
        outcome = self.rnd.choice(
            ["ok", "ok", "ok", "503-committed", "503-lost",
             "timeout-committed", "timeout-lost", "killed-committed",
             "killed-lost", "retry", "dry-run"])
        if outcome == "dry-run" and not review:
            outcome = "ok"
        if outcome == "dry-run":
            sent["request"]["dryRun"] = True
        allowed = self.rnd.random() < 0.7
        v = {"k": k, "body": body, "uid": uid if review else None,
             "allowed": allowed, "review": review}
        if outcome not in ("503-lost", "timeout-lost", "killed-lost",
                           "dry-run"):
            self.items.append(("verdict", v))
        if outcome in ("503-committed", "timeout-committed", "retry"):
            # The NOTE comes some events later.
            self.pending.append(v)
        self.requests.append((v, outcome, sent, uid if review else None))

    def build(self, n):
        self.pending = []
        for k in range(n):
            for _ in range(self.rnd.randint(0, 3)):
                self.obs()
            self.ask(k)
            while self.pending and self.rnd.random() < 0.5:
                self.items.append(("note", self.pending.pop(0)))
        for v in self.pending:
            self.items.append(("note", v))
        self.obs()
        return self


def record(v, i, seq):
    r = {"allowed": v["allowed"], "basisSeq": seq - 1, "chainHead": HEAD,
         "checks": [], "id": i,
         "message": "within budget" if v["allowed"] else "over",
         "reason": "WithinBudget" if v["allowed"] else
         "ClassBudgetExceeded",
         "request": v["body"], "type": "admission", "warnings": []}
    if v["uid"] is not None:
        r["requester"] = {"groups": [], "operation": "CREATE",
                          "uid": v["uid"], "username": "alice"}
    return r


def render(w, skip=None, gap_at=None, basis_off=None):
    """The log's text and {k: (id, seq, record)}. skip: an item index left
    out; gap_at: the verdict k whose id (and every later) is one more;
    basis_off: the verdict k whose basisSeq is seq - 2."""
    lines, got, vid, last = [], {}, 0, t(0)
    for n, (kind, x) in enumerate(w.items):
        if n == skip:
            continue
        seq = len(lines) + 1
        if kind == "obs":
            ev = dict(x, seq=seq)
            last = ev["time"]
        elif kind == "verdict":
            vid += 2 if x["k"] == gap_at else 1
            rec = record(x, vid, seq)
            if x["k"] == basis_off:
                rec["basisSeq"] = seq - 2
            ev = {"record": rec, "seq": seq, "time": last, "type": "VERDICT"}
            got[x["k"]] = (vid, seq, rec)
        else:
            # A NOTE of a verdict not yet rendered ("note-early": the
            # verdict comes next) names the id that verdict gets.
            i = got[x["k"]][0] if x["k"] in got else vid + 1
            ev = {"code": "VerdictUnanswered", "kind": None,
                  "message": history.NOTE_MESSAGE.format(i),
                  "name": str(i), "namespace": None, "seq": seq,
                  "time": last, "type": "NOTE"}
        lines.append(history.canon(ev))
    return "".join(ln + "\n" for ln in lines), got


def answers(w, got):
    out = []
    for v, outcome, sent, uid in w.requests:
        base = {"request": sent, "sent": t(v["k"])}
        if uid is not None:
            base["uid"] = uid

        def ok():
            i, seq, rec = got[v["k"]]
            if v["review"]:
                body = {"apiVersion": "admission.k8s.io/v1",
                        "kind": "AdmissionReview",
                        "response": {
                            "uid": uid, "allowed": rec["allowed"],
                            "status": {"code": 200 if rec["allowed"] else
                                       403,
                                       "message": "%s: %s" % (
                                           rec["reason"], rec["message"]),
                                       "reason": rec["reason"]},
                            "auditAnnotations": {history.ANN_ID: str(i),
                                                 history.ANN_SEQ: str(seq)},
                            "warnings": []}}
            else:
                body = dict(rec, seq=seq)
            return dict(base, status=200, body=body, received=t(v["k"] + 1))
        if outcome == "ok":
            out.append(ok())
        elif outcome == "dry-run":
            out.append(dict(base, status=200, received=t(v["k"] + 1), body={
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": uid, "allowed": True,
                             "auditAnnotations": {history.ANN_DRY:
                                                  "not recorded"}}}))
        elif outcome.startswith("503"):
            out.append(dict(base, status=503, body={"error": "unavailable"},
                            received=t(v["k"] + 1)))
        elif outcome.startswith("timeout"):
            out.append(dict(base, status=None, body=None, received=None,
                            error="timeout"))
        elif outcome.startswith("killed"):
            # Reset after it was sent: its member died before answering
            # (and left no NOTE).
            out.append(dict(base, status=None, body=None, received=None,
                            error=history.RESET))
        elif outcome == "retry":
            out.append(dict(base, status=503, body={"error": "x"},
                            received=t(v["k"] + 1)))
            out.append(ok())
    return out


class History:
    def __init__(self, seed, n=12):
        self.w = World(seed).build(n)
        self.log, self.got = render(self.w)
        self.answers = answers(self.w, self.got)
        self.logs = {"m0": self.log, "m1": self.log, "m2": self.log}
        self.single = self.log

    def run(self, single=True):
        return history.check(self.answers, self.logs,
                             self.single if single else None)


def kinds(vs):
    return sorted({v.kind for v in vs})


# Each violation: (name, the kind it must be reported as, a function that
# makes it on a History h and returns False when this history has nothing
# to make it on).
def v_duplicate(h):
    for n, (kind, v) in enumerate(h.w.items):
        if kind == "verdict":
            h.w.items.insert(n + 1, ("verdict", dict(v)))
            h.log, _ = render(h.w)
            h.logs = {m: h.log for m in h.logs}
            return True
    return False


def answered(h):
    return [a for a in h.answers if a.get("status") == 200 and
            history.answered_id(a)[0] is not None]


def v_lost(h):
    ks = [v["k"] for v, o, _, _ in h.w.requests if o in ("ok", "retry")]
    if not ks:
        return False
    k = ks[h.w.rnd.randrange(len(ks))]
    n = [i for i, (kind, v) in enumerate(h.w.items)
         if kind == "verdict" and v["k"] == k][0]
    # Its NOTE (a retry's) goes too: a log that never had the verdict.
    h.w.items = [x for i, x in enumerate(h.w.items) if i != n and
                 not (x[0] == "note" and x[1]["k"] == k)]
    h.log, _ = render(h.w)
    h.logs = {m: h.log for m in h.logs}
    return True


def v_changed(h):
    a = answered(h)
    if not a:
        return False
    a = a[h.w.rnd.randrange(len(a))]
    i = history.answered_id(a)[0]
    lines = h.log.split("\n")
    for n, ln in enumerate(lines):
        e = json.loads(ln) if ln else {}
        if e.get("type") == "VERDICT" and e["record"]["id"] == i:
            e["record"]["allowed"] = not e["record"]["allowed"]
            lines[n] = history.canon(e)
    h.log = "\n".join(lines)
    h.logs = {m: h.log for m in h.logs}
    return True


def v_id_gap(h):
    ks = [v["k"] for kind, v in h.w.items if kind == "verdict"]
    if not ks:
        return False
    h.log, got = render(h.w, gap_at=ks[h.w.rnd.randrange(len(ks))])
    h.logs = {m: h.log for m in h.logs}
    return True


def v_basis(h):
    ks = [v["k"] for kind, v in h.w.items if kind == "verdict"]
    if not ks:
        return False
    h.log, got = render(h.w, basis_off=ks[h.w.rnd.randrange(len(ks))])
    h.logs = {m: h.log for m in h.logs}
    return True


def v_diverged(h):
    lines = h.log.split("\n")
    n = h.w.rnd.randrange(len(lines) - 1)
    e = json.loads(lines[n])
    e["time"] = "2027-01-01T00:00:00.000000000Z"
    lines[n] = history.canon(e)
    h.logs["m2"] = "\n".join(lines)
    return True


def v_diverged_short(h):
    lines = h.log.split("\n")
    h.logs["m1"] = "\n".join(lines[:-2]) + "\n"
    return True


def v_killed_twice(h):
    for n, (kind, v) in enumerate(h.w.items):
        if kind == "verdict" and any(
                o == "killed-committed" and w is v
                for w, o, _, _ in h.w.requests):
            h.w.items.insert(n + 1 + h.w.rnd.randrange(
                len(h.w.items) - n), ("verdict", dict(v)))
            h.log, _ = render(h.w)
            h.logs = {m: h.log for m in h.logs}
            h.single = h.log
            return True
    return False


def v_unanswered(h):
    ks = [v["k"] for v, o, _, _ in h.w.requests
          if o in ("503-committed", "timeout-committed")]
    if not ks:
        return False
    k = ks[h.w.rnd.randrange(len(ks))]
    h.w.items = [x for x in h.w.items
                 if not (x[0] == "note" and x[1]["k"] == k)]
    h.log, _ = render(h.w)
    h.logs = {m: h.log for m in h.logs}
    # The observation events are unchanged: only the NOTE went.
    h.single = h.log
    return True


def v_note_first(h):
    ks = [v["k"] for v, o, _, _ in h.w.requests
          if o in ("503-committed", "timeout-committed")]
    if not ks:
        return False
    k = ks[0]
    note = [x for x in h.w.items if x[0] == "note" and x[1]["k"] == k][0]
    h.w.items.remove(note)
    n = [i for i, x in enumerate(h.w.items)
         if x[0] == "verdict" and x[1]["k"] == k][0]
    h.w.items.insert(n, ("note-early", note[1]))
    h.log, got = render(h.w)
    h.answers = answers(h.w, got)
    h.logs = {m: h.log for m in h.logs}
    h.single = h.log
    return True


def v_dry_run(h):
    ks = [(v, i) for i, (v, o, _, _) in enumerate(h.w.requests)
          if o == "dry-run"]
    if not ks:
        return False
    v = ks[0][0]
    h.w.items.append(("verdict", v))
    h.log, _ = render(h.w)
    h.logs = {m: h.log for m in h.logs}
    h.single = h.log
    return True


def v_observed(h):
    lines = h.single.split("\n")
    for n, ln in enumerate(lines):
        if ln and json.loads(ln)["type"] in ("RESERVE", "RELEASE"):
            e = json.loads(ln)
            e["after"] += 1
            lines[n] = history.canon(e)
            h.single = "\n".join(lines)
            return True
    return False


VIOLATIONS = [
    ("duplicate verdict of one request", "duplicate", v_duplicate),
    ("a killed member's request recorded twice", "duplicate",
     v_killed_twice),
    ("lost answered verdict", "lost", v_lost),
    ("changed body", "changed", v_changed),
    ("id gap", "id-gap", v_id_gap),
    ("basisSeq off", "basis", v_basis),
    ("diverging member logs", "diverged", v_diverged),
    ("a member's log cut short", "diverged", v_diverged_short),
    ("unanswered without NOTE", "unanswered", v_unanswered),
    ("NOTE VerdictUnanswered before its verdict", "unanswered",
     v_note_first),
    ("a dry run recorded", "dry-run", v_dry_run),
    ("observations differ from the single pod's", "observed", v_observed),
]


def killed(c):
    """DESIGN 11: a request whose member was killed before it answered
    (reset or end of stream after it was sent) is in the log at most once,
    with no NOTE; a 503 or a timeout still owes the NOTE."""
    h = History(13)
    keys = [history.request_key(x) for x in h.answers]
    one = [x for x in answered(h) if keys.count(history.request_key(x)) == 1]
    c.check("the killed cases have an answered verdict", bool(one))
    if not one:
        return
    a = one[0]
    no = dict(a, status=None, body=None, received=None)

    def run(tries, log=None):
        ans = [x for x in h.answers if x is not a] + tries
        log = log or h.log
        return history.check(ans, {"m0": log, "m1": log}, log)
    vs = run([dict(no, error=history.RESET)])
    c.check("reset after sending, recorded once with no NOTE: holds",
            not vs, str(vs))
    for what, tries in (
            ("a 503", [dict(a, status=503, body={"error": "x"})]),
            ("a timeout", [dict(no, error="timeout")]),
            ("no answer, no error said", [no]),
            ("refused (never sent)", [dict(no, error="refused")])):
        vs = run(tries)
        c.check(f"{what}, recorded with no NOTE: unanswered",
                kinds(vs) == ["unanswered"], str(vs))
    # The same verdict twice in the log (a second VERDICT of its uid).
    mine = [k for k, x in enumerate(h.w.items) if x[0] == "verdict" and
            history.request_key({"uid": x[1]["uid"],
                                 "request": x[1]["body"]}) ==
            history.request_key(a)]
    c.check("the killed request is one verdict of the world",
            len(mine) == 1, str(mine))
    w = copy.deepcopy(h.w)
    w.items.insert(mine[0] + 1, ("verdict", dict(w.items[mine[0]][1])))
    log2, _ = render(w)
    vs = run([dict(no, error=history.RESET)], log2)
    c.check("reset after sending, recorded twice: duplicate",
            "duplicate" in kinds(vs), str(vs))
    # Killed, then retried and answered 503 with the first attempt's
    # record: which attempt it is of cannot be told, no NOTE owed.
    vs = run([dict(no, error=history.RESET),
              dict(a, status=503, body={"error": "x"})])
    c.check("reset, then a 503 retry, recorded once with no NOTE: holds",
            not vs, str(vs))


def fixed(c):
    """Hand-made cases of the formats: the first VERDICT's id 2, a note
    naming no verdict, a timeout that was never committed."""
    h = History(7)
    log = h.log + history.canon(
        {"code": "VerdictUnanswered", "kind": None,
         "message": history.NOTE_MESSAGE.format(999),
         "name": "999", "namespace": None,
         "seq": h.log.count("\n") + 1, "time": "x", "type": "NOTE"}) + "\n"
    vs = history.check(h.answers, {"m0": log})
    c.check("a NOTE VerdictUnanswered naming no VERDICT is a violation",
            "unanswered" in kinds(vs) and any("999" in v.message
                                              for v in vs), str(vs))
    good = {"type": "NOTE", "code": "VerdictUnanswered", "kind": None,
            "namespace": None, "name": "7",
            "message": history.NOTE_MESSAGE.format(7)}
    # Only the member's form names an id: each other spelling names none.
    for n, want in ((good, 7),
                    ({"type": "NOTE", "code": "VerdictUnanswered",
                      "id": 5}, None),
                    ({"verdictId": 6}, None), ({"name": "7"}, None),
                    (dict(good, name="07"), None),
                    (dict(good, namespace="x"), None),
                    (dict(good, kind="Pod"), None),
                    (dict(good, message=history.NOTE_MESSAGE.format(8)),
                     None),
                    ({"message": "verdict id 8 was answered 503"}, None),
                    ({"message": "no number"}, None)):
        c.check(f"note_id reads {n}", history.note_id(n) == want)
    # A 503 at one member, then the same review retried at another and
    # answered there with the record: answered, no NOTE owed. Without the
    # retry's 200 the same record owes a NOTE.
    h = History(11)
    keys = [history.request_key(x) for x in h.answers]
    ok200 = [x for x in answered(h)
             if keys.count(history.request_key(x)) == 1]
    c.check("the retry case has an answered verdict", bool(ok200))
    if ok200:
        a = ok200[0]
        refused = dict(a, status=503, body={"error": "x"})
        vs = history.check([refused] + h.answers, h.logs, h.single)
        c.check("a 503 then a retry answered with the record holds",
                not vs, str(vs))
        alone = [refused if x is a else x for x in h.answers]
        vs = history.check(alone, h.logs, h.single)
        c.check("the same 503 without the retry owes a NOTE",
                "unanswered" in kinds(vs), str(vs))
    killed(c)
    try:
        history.check([], {"m0": '{"seq":2,"type":"TICK"}\n'})
        c.check("a log whose seqs do not start at 1 is an input error",
                False)
    except history.InputError as e:
        c.check("a log whose seqs do not start at 1 is an input error",
                "seq 2" in str(e), str(e))
    try:
        history.check([], {"m0": "{not json\n"})
        c.check("a log line that is not JSON is an input error", False)
    except history.InputError as e:
        c.check("a log line that is not JSON is an input error",
                "line 1" in str(e), str(e))


def text_records(log):
    """The log as `gpuledger log` prints it when each VERDICT's record
    holds a number beyond int64: the record as its text, a string."""
    out = []
    for ln in log.split("\n"):
        if ln:
            e = json.loads(ln)
            if e["type"] == "VERDICT":
                e["record"] = history.canon(e["record"])
            ln = history.canon(e)
        out.append(ln)
    return "\n".join(out)


def set_record(log, n, rec):
    """The log with the n-th VERDICT's record replaced by rec."""
    lines = log.split("\n")
    for k, ln in enumerate(lines):
        if ln and json.loads(ln)["type"] == "VERDICT":
            if n == 0:
                e = json.loads(ln)
                e["record"] = rec(e["record"]) if callable(rec) else rec
                lines[k] = history.canon(e)
                break
            n -= 1
    return "\n".join(lines)


def shapes(c):
    """Records and answers of any JSON shape: never a crash; a record given
    as its text is read; any other shape fails the checks it breaks."""
    big = 18446744073709551617  # 2^64 + 1: `log` prints the record as text
    h = History(5)
    for v, _, _, _ in h.w.requests:
        v["body"]["new"]["gpus"][0]["count"] = big
    h.log, h.got = render(h.w)
    h.log = text_records(h.log)
    h.answers = answers(h.w, h.got)
    h.logs = {m: h.log for m in h.logs}
    h.single = h.log
    c.check("the records are printed as text", '"record":"{' in h.log)
    try:
        vs = h.run()
        c.check("records given as their text (a count of 2^64 + 1) hold",
                not vs, str(vs)[:600])
    except Exception as e:  # noqa: BLE001 (the crash is what is tested)
        c.check("records given as their text (a count of 2^64 + 1) hold",
                False, f"{type(e).__name__}: {e}")
    h = History(5)
    # (what, record of the first VERDICT, the kind it must fail as; None:
    # only no crash, as whether it fails depends on what was answered)
    for what, rec, kind in (
            ("text that is not JSON", "not json", "id-gap"),
            ("the text of a string", '"a string"', "id-gap"),
            ("the text of a list", "[1]", "id-gap"),
            ("a list", [1], "id-gap"), ("a number", 5, "id-gap"),
            ("null", None, "id-gap"), ("true", True, "id-gap"),
            ("an object id", lambda r: dict(r, id={"n": 1}), "id-gap"),
            ("a list id", lambda r: dict(r, id=[1]), "id-gap"),
            ("a string id", lambda r: dict(r, id="1"), "id-gap"),
            ("a true id", lambda r: dict(r, id=True), "id-gap"),
            ("a string basisSeq", lambda r: dict(r, basisSeq="x"), "basis"),
            ("a string requester", lambda r: dict(r, requester="alice"),
             None),
            ("a list uid", lambda r: dict(r, requester={"uid": ["x"]}),
             None),
            ("a string request", lambda r: dict(r, request="x"), None),
            ("odd checks and warnings",
             lambda r: dict(r, checks="x", warnings=7), None)):
        log = set_record(h.log, 0, rec)
        try:
            vs = history.check(h.answers, {"m0": log, "m1": log}, log)
        except Exception as e:  # noqa: BLE001
            c.check(f"a record of {what}: no crash", False,
                    f"{type(e).__name__}: {e}")
            continue
        c.check(f"a record of {what}: no crash"
                + (f", fails as {kind}" if kind else ""),
                kind is None or kind in kinds(vs), str(vs)[:300])
    # Answers of any shape: never a crash.
    for change in (lambda a: dict(a, body=[1]),
                   lambda a: dict(a, body="x"),
                   lambda a: dict(a, body={"response": "x"}),
                   lambda a: dict(a, body={"response": {
                       "status": "x", "auditAnnotations": [1],
                       "warnings": {}}}),
                   lambda a: dict(a, body={"response": {
                       "auditAnnotations": {history.ANN_ID: [1]}}}),
                   lambda a: dict(a, body={"id": "1", "seq": {}}),
                   lambda a: dict(a, request={"kind": "AdmissionReview",
                                              "request": "x"}),
                   lambda a: dict(a, request=[1], uid=None),
                   lambda a: dict(a, uid={"x": 1}),
                   lambda a: dict(a, status="200")):
        ans = [change(a) for a in h.answers]
        try:
            history.check(ans, h.logs, h.single)
            c.check(f"answers changed to {ans[0]!s:.100}: no crash", True)
        except Exception as e:  # noqa: BLE001
            c.check(f"answers changed to {ans[0]!s:.100}: no crash", False,
                    f"{type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=40)
    a = ap.parse_args()
    from serve_tls import Checks  # noqa: E402 (tests/deploy/)
    c = Checks()
    if os.environ.get("SEED"):
        seeds = [int(os.environ["SEED"])]
    else:
        first = random.SystemRandom().randrange(1 << 30)
        seeds = [first + i for i in range(a.seeds)]
    print(f"history_test: seeds {seeds[0]}..{seeds[-1]} (SEED=N reruns one)")
    made = {name: 0 for name, _, _ in VIOLATIONS}
    for seed in seeds:
        h = History(seed)
        vs = h.run()
        c.check(f"seed {seed}: a correct history passes", not vs,
                str(vs)[:600])
        for name, kind, make in VIOLATIONS:
            h2 = copy.deepcopy(h)
            h2.w.rnd = random.Random(seed * 31 + len(name))
            if not make(h2):
                continue
            made[name] += 1
            vs = h2.run(single=h2.single is not None)
            ok = kind in kinds(vs) and any(v.kind == kind and v.message
                                           for v in vs)
            c.check(f"seed {seed}: {name} fails as {kind}", ok,
                    f"got {kinds(vs)}: {str(vs)[:400]}")
    for name, n in made.items():
        c.check(f"the violation '{name}' was made on some seed", n > 0)
    fixed(c)
    shapes(c)
    print(f"checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "deploy"))
    sys.exit(main())
