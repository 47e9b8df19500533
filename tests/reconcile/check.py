#!/usr/bin/env python3
"""The exact reconciliation of the `simulate --cases` history (DESIGN 3.6),
derived from the log itself: every seq, time, uid and verdict id in the
expected answer is read from `gpuledger log`, so the check holds for any
run of tests/reconcile/drive.py, and the answer must equal it byte for
byte (canonical JSON, as reconcile writes it).

  check.py LOG.ndjson RECONCILE.json     exit 0, or 1 with a diff
"""
import json
import sys


def canon(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def main():
    log = [json.loads(l) for l in open(sys.argv[1])]
    got_text = open(sys.argv[2]).read()
    by = {}
    verdicts = {}
    for ev in log:
        if ev["type"] in ("RESERVE", "RELEASE"):
            by.setdefault((ev["type"], ev["name"]), ev)
        if ev["type"] == "BUDGET" and ev["namespace"] == "tenant-acme-dev":
            by[("BUDGET", ev["value"])] = ev
        if ev["type"] == "VERDICT":
            rec = ev["record"]
            verdicts[rec["request"]["name"]] = (ev, rec)
    first_verdict = min(ev["seq"] for ev, _ in verdicts.values())
    t_of = {ev["seq"]: ev["time"] for ev in log}
    last = log[-1]["seq"]

    def obj(ev):
        return {"seq": ev["seq"], "time": ev["time"], "namespace": ev["namespace"],
                "kind": ev["kind"], "name": ev["name"], "uid": ev["uid"]}

    def trig(ev):
        return {"seq": ev["seq"], "type": ev["type"], "namespace": ev["namespace"],
                "kind": ev["kind"], "name": ev["name"]}

    key = "gpuclass.cozystack.io/devices"
    rogue = by[("RESERVE", "rogue")]
    race_b = by[("RESERVE", "race-b")]
    race_b_gone = by[("RELEASE", "race-b")]
    lowered = by[("BUDGET", 2)]
    bypass = dict(obj(rogue), **{"class": "h100", "before": 0, "after": 3,
                                 "previousSeq": None})
    want = {
        "range": {"fromSeq": 1, "fromTime": t_of[1], "toSeq": last,
                  "toTime": t_of[last],
                  "since": {"seq": first_verdict, "time": t_of[first_verdict]},
                  "windowMs": 600000},
        "preExisting": [obj(by[("RESERVE", "legacy")])],
        "bypasses": [bypass],
        "overshoots": sorted([
            {"tenant": "tenant-beta", "key": key, "fromSeq": rogue["seq"],
             "fromTime": rogue["time"], "toSeq": None, "toTime": None,
             "budget": 2, "used": 3,
             "peak": {"seq": rogue["seq"], "used": 3, "budget": 2},
             "trigger": trig(rogue),
             "causes": [{"type": "bypass", "seq": rogue["seq"]}],
             "causesOmitted": 0},
            {"tenant": "tenant-gamma", "key": key, "fromSeq": race_b["seq"],
             "fromTime": race_b["time"], "toSeq": race_b_gone["seq"],
             "toTime": race_b_gone["time"], "budget": 4, "used": 6,
             "peak": {"seq": race_b["seq"], "used": 6, "budget": 4},
             "trigger": trig(race_b),
             "causes": [{"type": "race", "seq": race_b["seq"],
                         "verdicts": sorted([verdicts["race-a"][1]["id"],
                                             verdicts["race-b"][1]["id"]])}],
             "causesOmitted": 0},
            {"tenant": "tenant-acme-dev", "key": key,
             "fromSeq": lowered["seq"], "fromTime": lowered["time"],
             "toSeq": None, "toTime": None, "budget": 2, "used": 3,
             "peak": {"seq": lowered["seq"], "used": 3, "budget": 2},
             "trigger": {"seq": lowered["seq"], "type": "BUDGET"},
             "causes": [{"type": "budgetLowered", "seq": lowered["seq"]}],
             "causesOmitted": 0},
        # The documented order: as they closed (by toSeq, those still
        # open last), then fromSeq, tenant, key.
        ], key=lambda o: (o["toSeq"] is None, o["toSeq"] or 0,
                          o["fromSeq"], o["tenant"], o["key"])),
        "counts": {"events": last, "admissionVerdicts": 4, "preExisting": 1,
                   "bypasses": 1, "overshoots": 3},
    }
    parts = ["{\"range\":" + canon(want["range"]),
             "\"preExisting\":[" + ",".join(canon(o) for o in want["preExisting"]) + "]",
             "\"bypasses\":[" + ",".join(canon(o) for o in want["bypasses"]) + "]",
             "\"overshoots\":" + canon(want["overshoots"]),
             "\"counts\":" + canon(want["counts"]) + "}\n"]
    want_text = ",".join(parts)
    if got_text != want_text:
        sys.stderr.write("reconcile differs from what the log says:\n got  %s\n want %s\n"
                         % (got_text, want_text))
        sys.exit(1)


if __name__ == "__main__":
    main()
