#!/usr/bin/env python3
"""The history checker of DESIGN 11 (its last paragraph): holds every
client's answers against the final log of a cluster of members.

Input:

  - the clients' answer log, NDJSON, one line per request sent:
      {"uid": U, "request": BODY, "sent": T, "received": T|null,
       "status": 200|503|...|null, "body": ANSWER|null, "error": E}
    uid is what identifies the request to the ledger: an AdmissionReview's
    request.uid (then it may be left out: it is read from the request), or
    the Idempotency-Key of a plain POST; without one, a plain request is
    known by its body (canonical JSON, keys sorted). status null means no
    answer came; then error says why (no_answer_error() writes it):
    "reset" when the connection was reset or ended after the whole
    request was sent (its member may have been killed before it
    answered), "timeout", "refused" (nothing was sent), or another word;
    a line without one counts as a timeout. A 200's body is the verdict
    record as answered (a plain POST: the record with "seq"; an AdmissionReview: its
    response, whose auditAnnotations carry gpuledger.cozystack.io/verdict-id
    and verdict-seq, or /dry-run when it was not recorded). Times are RFC
    3339 strings, carried into the messages only (clients' clocks are not
    the ledger's);
  - each member's `gpuledger log` output (NDJSON, JCS, one event a line),
    or its ledger directory (then `gpuledger log`, `verify` and `audit` are
    run on it with --bin);
  - optionally a single-pod ingest's `gpuledger log` of the same input.

Checks, each a kind of violation named in its message:

  lost        an answered verdict is not in the log;
  duplicate   a request (uid) has more than one VERDICT in the log, or a
              verdict id appears twice;
  changed     an answered verdict's recorded body differs from the answer
              (or its request from what the client sent);
  id-gap      verdict ids, in log order, are not 1, 2, 3, ... (unique and
              gap-free);
  basis       a VERDICT's basisSeq is not its seq - 1;
  unanswered  a request answered 503 or not at all is in the log and no
              NOTE VerdictUnanswered with its id follows it (or one
              precedes it), or a NOTE VerdictUnanswered names an id that
              no VERDICT has, or one that every attempt of its request
              was answered with. A request of which some attempt was
              reset after it was sent (error "reset") owes no NOTE: its
              member may have been killed before it answered, and no
              process was left to write one (it is still in the log at
              most once: duplicate);
  dry-run     a dry run (not recorded) is in the log;
  diverged    two members' logs are not byte-identical;
  verify      `gpuledger verify` or `gpuledger audit` fails on a member;
  observed    the observation events differ from the single-pod ingest's
              (VERDICTs and the cluster's own NOTEs, VerdictUnanswered and
              LeaderChanged, left out; seqs renumbered).

Any line of the answers or of a log may hold any JSON where an object or
a number was expected (a member's `log` prints a VERDICT's record as its
text, a string, when it holds a number beyond int64): such a record is read
from its text, and any other shape is read as holding nothing, so it fails
the checks it cannot pass (an id that is not a number is an id-gap), never
the checker.

A NOTE VerdictUnanswered has exactly the form a member writes
(cluster/verdicts.c): no namespace and no object kind, its object name the
verdict's id in decimal, and the message "verdict id N was answered 503: its
outcome was unknown within the webhook's time (DESIGN 11 rule 2)" with the
same N. Any other spelling names no id (so an answered-503 verdict it was
meant to cover is a violation).

Library: check(answers, logs, single=None) -> [Violation]; load_answers,
load_log. CLI:
  history.py --answers FILE --member NAME=LOG|DIR ... [--bin GPULEDGER]
             [--single LOG]
prints "ok: ..." or "FAIL: <kind>: ..." lines and "history: N violations";
exit 0 when there are none, 1 when there are, 2 on unreadable input.
"""
import argparse
import json
import os
import re
import subprocess
import sys

CLUSTER_NOTES = ("VerdictUnanswered", "LeaderChanged")
ANN_ID = "gpuledger.cozystack.io/verdict-id"
ANN_SEQ = "gpuledger.cozystack.io/verdict-seq"
ANN_DRY = "gpuledger.cozystack.io/dry-run"


class Violation:
    def __init__(self, kind, message):
        self.kind = kind
        self.message = message

    def __repr__(self):
        return f"{self.kind}: {self.message}"


class InputError(Exception):
    pass


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def obj(v):
    """v when it is an object, else an empty one: a field of any other
    shape holds nothing."""
    return v if isinstance(v, dict) else {}


def hkey(v):
    """A verdict id as a dict key: a JSON integer or string as itself, any
    other shape (a list, an object, true) by its canonical text."""
    if type(v) in (int, str):
        return v
    return ("json", canon(v))


def record_of(e):
    """The record of a VERDICT event as an object: a string is the record's
    text (what `log` prints for a record holding a number beyond int64);
    anything that is not an object, or text that is not one, is {}."""
    r = e.get("record")
    if isinstance(r, str):
        try:
            r = json.loads(r)
        except ValueError:
            return {}
    return obj(r)


RESET = "reset"


def no_answer_error(exc):
    """The "error" a client writes for a request that raised exc instead
    of answering (urllib or http.client): "refused" when it could not
    connect, "timeout", "reset" when the connection was reset or ended
    after the request was sent (the only one that excuses a missing NOTE),
    else "unsent: ..." for a failure while sending, or the exception's
    name."""
    import http.client
    import socket
    import urllib.error
    if isinstance(exc, urllib.error.URLError):
        # urllib raises URLError for what fails before the request is
        # sent (connecting, writing it): never "reset".
        r = exc.reason
        if isinstance(r, ConnectionRefusedError):
            return "refused"
        if isinstance(r, (TimeoutError, socket.timeout)):
            return "timeout"
        if isinstance(r, BaseException):
            r = type(r).__name__
        return f"unsent: {r}"
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return "timeout"
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError,
                        BrokenPipeError, http.client.IncompleteRead,
                        http.client.BadStatusLine)):
        return RESET
    return type(exc).__name__


def load_ndjson(text, what):
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except ValueError as e:
            raise InputError(f"{what}: line {n} is not JSON: {e}")
    return out


def load_answers(path):
    with open(path, encoding="utf-8") as f:
        out = load_ndjson(f.read(), path)
    for n, a in enumerate(out, 1):
        if not isinstance(a, dict):
            raise InputError(f"{path}: answer {n} is not an object")
    return out


def load_log(text, what="log"):
    """(lines, events): the raw lines (for byte comparison) and the parsed
    events, checked to be seqs 1..N in order."""
    lines = [ln for ln in text.split("\n") if ln != ""]
    evs = load_ndjson(text, what)
    for i, e in enumerate(evs, 1):
        if not isinstance(e, dict) or e.get("seq") != i:
            raise InputError(f"{what}: event {i} has seq "
                             f"{e.get('seq') if isinstance(e, dict) else e}"
                             f", want {i}")
    return lines, evs


def request_uid(a):
    """The uid of a client's request (None: known by its body)."""
    if a.get("uid"):
        return str(a["uid"])
    rq = a.get("request")
    if isinstance(rq, dict) and rq.get("kind") == "AdmissionReview":
        u = obj(rq.get("request")).get("uid")
        return str(u) if u else None
    return None


def record_uid(rec):
    r = rec.get("requester")
    if isinstance(r, dict) and r.get("uid"):
        return str(r["uid"])
    for k in ("idempotencyKey", "idempotency_key"):
        if rec.get(k):
            return str(rec[k])
    return None


def request_key(a):
    u = request_uid(a)
    return ("uid", u) if u is not None else ("body", canon(a.get("request")))


def record_key(rec):
    u = record_uid(rec)
    return ("uid", u) if u is not None else ("body", canon(rec.get("request")))


def is_review(a):
    rq = a.get("request")
    return isinstance(rq, dict) and rq.get("kind") == "AdmissionReview"


def answered_id(a):
    """(id, seq, dry) of a 200 answer; id None when the body names none."""
    b = a.get("body")
    if not isinstance(b, dict):
        return None, None, False
    if "response" in b:
        ann = obj(obj(b.get("response")).get("auditAnnotations"))
        if ANN_DRY in ann:
            return None, None, True
        try:
            return int(ann[ANN_ID]), int(ann.get(ANN_SEQ, -1)), False
        except (KeyError, ValueError, TypeError):
            return None, None, False
    i = b.get("id")
    return (i if type(i) is int else None), b.get("seq"), False


NOTE_MESSAGE = ("verdict id {} was answered 503: its outcome was unknown "
                "within the webhook's time (DESIGN 11 rule 2)")


def note_id(e):
    """The verdict id a NOTE VerdictUnanswered names, or None when it is
    not in the member's form."""
    n = e.get("name")
    if (not isinstance(n, str) or not n.isdigit() or n != str(int(n))
            or e.get("namespace") is not None or e.get("kind") is not None
            or e.get("message") != NOTE_MESSAGE.format(n)):
        return None
    return int(n)


def who(a):
    return (f"request {request_key(a)[1][:80]!s} sent {a.get('sent')}, "
            f"status {a.get('status')}")


def same_answer(a, ev):
    """'' when the answer a carries the recorded verdict of event ev, else
    what differs."""
    rec = record_of(ev)
    b = obj(a.get("body"))
    if "response" in b:
        r = obj(b.get("response"))
        want = {"allowed": rec.get("allowed"),
                "reason": rec.get("reason"),
                "message": f"{rec.get('reason')}: {rec.get('message')}",
                "warnings": rec.get("warnings") or []}
        got = {"allowed": r.get("allowed"),
               "reason": obj(r.get("status")).get("reason"),
               "message": obj(r.get("status")).get("message"),
               "warnings": r.get("warnings") or []}
        diff = [k for k in want if want[k] != got[k]]
        _, seq, _ = answered_id(a)
        if seq != ev.get("seq"):
            diff.append(f"verdict-seq {seq} != {ev.get('seq')}")
        if record_uid(rec) != request_uid(a):
            diff.append("requester uid")
        return ", ".join(diff)
    body = dict(b)
    seq = body.pop("seq", ev.get("seq"))
    diff = sorted(k for k in set(body) | set(rec)
                  if canon(body.get(k)) != canon(rec.get(k)))
    if seq != ev.get("seq"):
        diff.append(f"seq {seq} != {ev.get('seq')}")
    if not is_review(a) and isinstance(a.get("request"), dict) and \
            canon(rec.get("request")) != canon(a["request"]):
        diff.append("request differs from what was sent")
    return ", ".join(diff)


def check_log(evs, out):
    """The log alone: ids unique and gap-free, basisSeq = seq - 1."""
    want = 1
    seen = {}
    for e in evs:
        if e.get("type") != "VERDICT":
            continue
        rec = record_of(e)
        i, s = hkey(rec.get("id")), e.get("seq")
        if rec.get("basisSeq") != s - 1:
            out.append(Violation("basis", f"VERDICT id {i} at seq {s} has "
                                 f"basisSeq {rec.get('basisSeq')}, want "
                                 f"{s - 1}"))
        if i in seen:
            out.append(Violation("duplicate", f"verdict id {i} is at seq "
                                 f"{seen[i]} and at seq {s}"))
        elif i != want:
            out.append(Violation("id-gap", f"VERDICT at seq {s} has id {i}, "
                                 f"want {want} (ids unique and gap-free)"))
        seen.setdefault(i, s)
        if type(i) is int:
            want = max(want, i + 1)


def check(answers, logs, single=None):
    """answers: the client log (list of dicts); logs: {member: text of its
    `gpuledger log`}; single: the text of a single-pod ingest's log, or
    None. Returns the violations (empty when the history holds)."""
    out = []
    if not logs:
        raise InputError("no member's log")
    parsed = {}
    for m, text in sorted(logs.items()):
        parsed[m] = load_log(text, f"member {m}")
    names = sorted(parsed)
    ref = names[0]
    for m in names[1:]:
        a, b = parsed[ref][0], parsed[m][0]
        if a == b:
            continue
        n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                 min(len(a), len(b)))
        if n < min(len(a), len(b)):
            out.append(Violation("diverged", f"member {m}'s log differs "
                                 f"from member {ref}'s at seq {n + 1}"))
        else:
            out.append(Violation("diverged", f"member {m}'s log ends at seq "
                                 f"{len(b)}, member {ref}'s at seq "
                                 f"{len(a)}"))
    # Every VERDICT's record as an object, once (record_of).
    evs = [dict(e, record=record_of(e)) if e.get("type") == "VERDICT" else e
           for e in parsed[ref][1]]
    check_log(evs, out)
    verdicts = [e for e in evs if e.get("type") == "VERDICT"]
    by_id = {}
    by_key = {}
    for e in verdicts:
        rec = e["record"]
        by_id.setdefault(hkey(rec.get("id")), e)
        by_key.setdefault(record_key(rec), []).append(e)
    notes = {}
    for e in evs:
        if e.get("type") == "NOTE" and e.get("code") == "VerdictUnanswered":
            notes.setdefault(note_id(e), []).append(e)
    attempts = {}
    for a in answers:
        attempts.setdefault(request_key(a), []).append(a)
    for key, tries in attempts.items():
        recs = by_key.get(key, [])
        if len(recs) > 1:
            out.append(Violation("duplicate", f"{who(tries[0])}: in the log "
                                 f"{len(recs)} times (seqs "
                                 f"{[e['seq'] for e in recs]})"))
        for a in tries:
            st = a.get("status")
            if st == 200:
                i, _, dry = answered_id(a)
                if dry:
                    if recs:
                        out.append(Violation("dry-run", f"{who(a)}: a dry "
                                             "run is recorded at seq "
                                             f"{recs[0]['seq']}"))
                    continue
                if not recs:
                    out.append(Violation("lost", f"{who(a)}: answered "
                                         f"verdict id {i} is not in the log"))
                    continue
                ev = by_id.get(i) if i is not None else None
                if ev is None or record_key(ev["record"]) != key:
                    out.append(Violation("changed", f"{who(a)}: answered "
                                         f"id {i}, but the log records it as "
                                         f"id {recs[0]['record'].get('id')} "
                                         f"(seq {recs[0]['seq']})"))
                    continue
                d = same_answer(a, ev)
                if d:
                    out.append(Violation("changed", f"{who(a)}: answered id "
                                         f"{i} differs from its record at seq"
                                         f" {ev['seq']}: {d}"))
            elif st == 503 or st is None:
                # Another attempt (a retry of the same uid, perhaps at
                # another member) answered with the record: it was
                # answered, and owes no NOTE.
                answered = {answered_id(t)[0] for t in tries
                            if t.get("status") == 200}
                # An attempt reset after it was sent: its member may have
                # died with the verdict committed and unanswered, leaving
                # no process to write the NOTE. Which attempt the record
                # is of cannot be told, so the whole request is excused
                # (a 503 or a timeout alone never is).
                killed = any(t.get("status") is None and
                             t.get("error") == RESET for t in tries)
                for ev in recs[:1]:
                    i = hkey(ev["record"].get("id"))
                    later = [n for n in notes.get(i, [])
                             if n["seq"] > ev["seq"]]
                    if not later and i not in answered and not killed:
                        out.append(Violation(
                            "unanswered", f"{who(a)}: not answered, but "
                            f"recorded as verdict id {i} at seq {ev['seq']} "
                            "with no NOTE VerdictUnanswered after it"))
        # A NOTE says a verdict was never answered: no attempt may have
        # been answered with it alone.
        ids = {hkey(e["record"].get("id")) for e in recs}
        if ids and all(t.get("status") == 200 for t in tries):
            for i in ids:
                for n in notes.get(i, []):
                    out.append(Violation(
                        "unanswered", f"NOTE VerdictUnanswered at seq "
                        f"{n['seq']} names verdict id {i}, which every "
                        f"attempt of {key[1][:80]} was answered with"))
    for i, ns in notes.items():
        v = by_id.get(i)
        for n in ns:
            if v is None:
                out.append(Violation("unanswered", f"NOTE VerdictUnanswered "
                                     f"at seq {n['seq']} names id {i}, which "
                                     "no VERDICT has"))
            elif n["seq"] < v["seq"]:
                out.append(Violation("unanswered", f"NOTE VerdictUnanswered "
                                     f"at seq {n['seq']} comes before its "
                                     f"verdict id {i} at seq {v['seq']}"))
    if single is not None:
        check_observed(evs, load_log(single, "the single-pod log")[1], out)
    return out


def observations(evs):
    out = []
    for e in evs:
        if e.get("type") == "VERDICT" or (e.get("type") == "NOTE" and
                                          e.get("code") in CLUSTER_NOTES):
            continue
        e = dict(e)
        e.pop("seq", None)
        out.append(canon(e))
    return out


def check_observed(evs, single, out):
    a, b = observations(evs), observations(single)
    if a == b:
        return
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
             min(len(a), len(b)))
    out.append(Violation("observed", f"observation event {n + 1} of the "
                         f"cluster's log ({len(a)} in all) differs from the "
                         f"single-pod ingest's ({len(b)}): "
                         f"{(a[n] if n < len(a) else 'none')[:200]} vs "
                         f"{(b[n] if n < len(b) else 'none')[:200]}"))


def member_dir(binary, name, d, out):
    """The log of a member's ledger directory; verify and audit on it."""
    for sub in ("verify", "audit"):
        r = subprocess.run([binary, sub, "--db", d], capture_output=True,
                           text=True)
        if r.returncode != 0:
            out.append(Violation("verify", f"member {name}: gpuledger {sub} "
                                 f"exits {r.returncode}: "
                                 f"{(r.stdout + r.stderr).strip()[:300]}"))
    r = subprocess.run([binary, "log", "--db", d], capture_output=True,
                       text=True)
    if r.returncode != 0:
        # What it printed up to the damage is still compared.
        out.append(Violation("verify", f"member {name}: gpuledger log exits "
                             f"{r.returncode}: {r.stderr.strip()[:300]}"))
    return r.stdout


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--answers", required=True)
    ap.add_argument("--member", action="append", default=[],
                    metavar="NAME=LOG|DIR")
    ap.add_argument("--bin", default="./gpuledger")
    ap.add_argument("--single")
    a = ap.parse_args(argv)
    pre = []
    try:
        answers = load_answers(a.answers)
        logs = {}
        for m in a.member:
            name, sep, path = m.partition("=")
            if not sep or not name or not path:
                raise InputError(f"--member {m}: want NAME=LOG|DIR")
            if os.path.isdir(path):
                logs[name] = member_dir(a.bin, name, path, pre)
            else:
                with open(path, encoding="utf-8") as f:
                    logs[name] = f.read()
        single = None
        if a.single:
            with open(a.single, encoding="utf-8") as f:
                single = f.read()
        vs = pre + check(answers, logs, single)
    except (InputError, OSError) as e:
        print(f"history: {e}", file=sys.stderr)
        return 2
    for v in vs:
        print(f"FAIL: {v.kind}: {v.message}")
    if not vs:
        print(f"ok: {len(answers)} answers, {len(logs)} members' logs hold")
    print(f"history: {len(vs)} violations")
    return 1 if vs else 0


if __name__ == "__main__":
    sys.exit(main())
