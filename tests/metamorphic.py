#!/usr/bin/env python3
"""The metamorphic test of DESIGN 2.3 "Order independence".

For a recorded stream and a cut point, the state after ingesting the stream
up to the cut must equal the state after ingesting a snapshot of it: every
ConfigMap event up to the cut in order, then one ADDED per object alive at
the cut, in shuffled order. Both are compared as `replay --json` without
seq, time and chainHead.

Usage: metamorphic.py GPULEDGER TMPDIR SEEDS CUTS [FIXTURE CLASSES]...
  SEEDS x CUTS simulator streams (`simulate --churn`, small), then for each
  FIXTURE (a tests/ingest stream) with its CLASSES file, CUTS cuts. Seeds
  1..SEEDS; each pair prints "ok NAME" or "FAIL NAME: why" (with the seed
  and the cut, so that a failure can be replayed by hand).
"""
import json
import os
import random
import shutil
import subprocess
import sys

# The watched resources (DESIGN 2): an object is ours only when both its
# apiVersion and kind match; cluster-scoped ones have no namespace.
WATCHED = {
    ("v1", "Namespace"): True,
    ("apps.cozystack.io/v1alpha1", "Tenant"): False,
    ("apps.cozystack.io/v1alpha1", "VMInstance"): False,
    ("apps.cozystack.io/v1alpha1", "KubernetesNodes"): False,
    ("v1", "Pod"): False,
    ("resource.k8s.io/v1", "ResourceClaim"): False,
    ("v1", "Node"): True,
    ("v1", "ConfigMap"): False,
}


def snapshot(lines, cut, rng):
    """The snapshot of lines[:cut] as a list of NDJSON lines, and the names
    of the Node objects alive at the cut."""
    configmaps, live, last_time = [], {}, None
    for raw in lines[:cut]:
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(ev, dict) or not isinstance(ev.get("object"), dict):
            continue
        if isinstance(ev.get("time"), str):
            last_time = ev["time"]
        obj, typ = ev["object"], ev.get("type")
        key = (obj.get("apiVersion"), obj.get("kind"))
        if key not in WATCHED or typ not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        if key == ("v1", "ConfigMap"):
            configmaps.append(raw)
            continue
        meta = obj.get("metadata") or {}
        ns = "" if WATCHED[key] else meta.get("namespace")
        ident = key + (ns, meta.get("name"))
        if typ != "DELETED":
            live[ident] = obj
            continue
        # DELETED of an older incarnation of a name does nothing.
        have = live.get(ident)
        uid = meta.get("uid") or ""
        huid = ((have or {}).get("metadata") or {}).get("uid") or ""
        if have is not None and (not uid or not huid or uid == huid):
            del live[ident]
    nodes = sorted(k[3] for k in live if k[:2] == ("v1", "Node"))
    objs = [live[k] for k in sorted(live, key=repr)]
    rng.shuffle(objs)
    out = list(configmaps)
    for o in objs:
        ev = {"type": "ADDED", "object": o}
        if last_time is not None:
            ev["time"] = last_time
        out.append(json.dumps(ev, separators=(",", ":")))
    return out, nodes


def state(gl, db, stream, classes):
    args = [gl, "watch", "--no-sync", "--db", db, "--from", stream]
    if classes:
        args += ["--classes", classes]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return None, "watch exit %d: %s" % (r.returncode, r.stderr[:300])
    r = subprocess.run([gl, "replay", "--db", db, "--json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return None, "replay exit %d: %s" % (r.returncode, r.stderr[:300])
    d = json.loads(r.stdout)
    for k in ("seq", "time", "chainHead"):
        d.pop(k, None)
    return d, None


def first_diff(a, b, path=""):
    """Where two JSON values first differ, for the failure message."""
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s: only in %s" % (path, k,
                                              "prefix" if k in a else "snapshot")
            d = first_diff(a[k], b[k], "%s.%s" % (path, k))
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d entries" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, "%s[%d]" % (path, i))
            if d:
                return d
        return None
    return None if a == b else "%s: %r (prefix) vs %r (snapshot)" % (path, a, b)


def check(gl, tmp, name, lines, cut, rng, classes):
    work = os.path.join(tmp, "mm")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    pre, snap = os.path.join(work, "prefix.ndjson"), os.path.join(
        work, "snapshot.ndjson")
    with open(pre, "w") as f:
        f.write("\n".join(lines[:cut]) + "\n")
    snap_lines, nodes = snapshot(lines, cut, rng)
    with open(snap, "w") as f:
        f.write("\n".join(snap_lines) + "\n")
    a, err = state(gl, os.path.join(work, "a"), pre, classes)
    if err is None:
        b, err = state(gl, os.path.join(work, "b"), snap, classes)
    if err is None and a != b:
        err = "states differ at " + first_diff(a, b)
    # Both could lose the same nodes: DESIGN 6 lists every Node that
    # exists, GPU entries or not, so the names are those of the objects.
    if err is None and [n["name"] for n in a["nodes"]] != nodes:
        err = "nodes %s, the live Node objects are %s" % (
            [n["name"] for n in a["nodes"]], nodes)
    if err is None:
        print("ok %s" % name)
        return True
    print("FAIL %s: %s" % (name, err))
    keep = os.path.join(tmp, "failed-" + name.replace(" ", "_"))
    shutil.rmtree(keep, ignore_errors=True)
    shutil.copytree(work, keep)
    return False


def main():
    gl, tmp, seeds, cuts = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(
        sys.argv[4])
    fixtures = sys.argv[5:]
    bad = 0
    for seed in range(1, seeds + 1):
        r = subprocess.run([gl, "simulate", "--churn", "--seed", str(seed),
                            "--events", "500", "--tenants", "6", "--days", "1"],
                           capture_output=True, text=True, check=True)
        lines = r.stdout.splitlines()
        rng = random.Random(seed)
        for cut in sorted(rng.sample(range(1, len(lines) + 1), cuts)):
            bad += not check(gl, tmp, "seed %d cut %d" % (seed, cut), lines,
                             cut, rng, None)
    for i in range(0, len(fixtures), 2):
        with open(fixtures[i]) as f:
            lines = f.read().splitlines()
        rng = random.Random(i)
        n = min(cuts, len(lines))
        for cut in sorted(rng.sample(range(1, len(lines) + 1), n)):
            bad += not check(gl, tmp, "%s cut %d" % (os.path.basename(
                fixtures[i]), cut), lines, cut, rng, fixtures[i + 1])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
