#!/usr/bin/env python3
"""Random bit flips of a ledger's data.mdb, for tests/ledger_cli.sh.

usage: flips.py GPULEDGER DB WORK SEED N

For each of N flips (flip i uses the seed "SEED" + i, through mdb_edit.py,
so that one flip can be repeated by hand) of a copy of DB in WORK, runs
verify, log and audit and checks what DESIGN 4.3 promises:
  - every run exits 0 or 1: never 2, never a signal;
  - exit 1 names the damage: "corrupt at seq N", "damaged storage at seq
    N", or "damaged storage: ..." naming a page, a meta page or a count;
  - log prints exactly the events before the seq it names, and on exit 0
    every event, unchanged;
  - verify says ok only when every event is what it was (the log of the
    damaged copy is the log of DB).
Prints each flip that breaks one (offset, bit, page, why) and a tally of
exit statuses; exits 1 when any did.
"""
import os
import re
import shutil
import subprocess
import sys

NAMED = re.compile(r"(corrupt at seq (\d+)|damaged storage at seq (\d+)"
                   r"|damaged storage: .*(page \d+|meta page|entries"
                   r"|databases|beyond the file))")


def run(binary, cmd, db):
    r = subprocess.run([binary, cmd, "--db", db], capture_output=True)
    return r.returncode, r.stdout.decode(errors="replace"), \
        r.stderr.decode(errors="replace")


def check(binary, work, base_log, base_lines):
    """The exit status of each tool, and what broke the promises."""
    why, verify_ok, status = [], False, {}
    for cmd in ("verify", "log", "audit"):
        rc, out, err = run(binary, cmd, work)
        status[cmd] = rc
        said = (out + err).strip()
        if rc not in (0, 1):
            why.append("%s: exit %d: %s" % (cmd, rc, said[-200:]))
            continue
        m = NAMED.search(said)
        if rc == 1 and m is None:
            why.append("%s: exit 1 naming nothing: %s" % (cmd, said[-200:]))
        if cmd == "verify":
            verify_ok = rc == 0
        elif cmd == "log":
            if verify_ok and out != base_log:
                why.append("verify said ok, but the events differ")
            elif rc == 0 and out != base_log:
                why.append("log: exit 0 with other events")
            seq = m and int(m.group(2) or m.group(3) or 0)
            if rc == 1 and seq and out != "".join(base_lines[:seq - 1]):
                why.append("log: not the %d events before seq %d" %
                           (seq - 1, seq))
    return status, why


def main():
    binary, db, work, seed, n = sys.argv[1:6]
    edit = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "mdb_edit.py")
    rc, base_log, err = run(binary, "log", db)
    assert rc == 0, err
    base_lines = base_log.splitlines(keepends=True)
    tally, failed = {}, 0
    for i in range(int(n)):
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(db, work)
        where = subprocess.run(
            [sys.executable, edit, os.path.join(work, "data.mdb"), "flip",
             "%s%04d" % (seed, i)],
            capture_output=True, text=True, check=True).stdout.split()
        status, why = check(binary, work, base_log, base_lines)
        for cmd, rc in status.items():
            tally[(cmd, rc)] = tally.get((cmd, rc), 0) + 1
        if why:
            failed += 1
            print("flip %d (seed %s%04d) at offset %s bit %s (page %d):" %
                  (i, seed, i, where[0], where[1], int(where[0]) // 4096))
            for w in why:
                print("  " + w)
    print("ledger_cli: flips: " + " ".join(
        "%s exit %d: %d" % (c, r, k) for (c, r), k in sorted(tally.items())))
    sys.exit(1 if failed else 0)


main()
