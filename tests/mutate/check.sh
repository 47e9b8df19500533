#!/bin/sh
# `make mutatecheck`: every mutation of tests/mutate/mutations.txt still
# applies to today's code, checked without building anything (well under a
# second), so that `make test` catches a list that no longer follows the
# code instead of the slow `make mutate` finding it later.
#
# For each "M <id> <file> <suite>..." block it checks what run.sh would
# trip over: the id is unique, the file exists, there is one "- " and one
# "+ " line, the "- " text (with an optional " @N") is found on the N-th
# line that has it, the replacement changes that line, and each suite is
# one that run.sh can run (unit:<module>[:<tcase>] with tests/test_<module>.c,
# cli:<name> with tests/<name>_cli.sh). It parses the list the way run.sh
# does (a line starting "M ", "- ", "+ " or "+"; anything else is ignored)
# and applies the text the way run.sh's apply() does.
#
# Usage: sh tests/mutate/check.sh [LIST]   (default: the tree's mutations.txt)
# Prints one line per problem and a summary; exits 1 when there is any.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
list=${1:-$root/tests/mutate/mutations.txt}
[ -f "$list" ] || { echo "mutatecheck: no list $list"; exit 2; }
command -v python3 >/dev/null || { echo "mutatecheck: python3 is needed"; exit 2; }

exec python3 - "$root" "$list" <<'EOF'
import os, re, sys

root, listpath = sys.argv[1:]
problems = []
texts = {}  # file -> its lines, read once


def lines_of(path):
    if path not in texts:
        with open(os.path.join(root, path), encoding="utf-8",
                  errors="surrogateescape") as f:
            texts[path] = f.read().split("\n")
    return texts[path]


def check(m):
    where = "%s:%d: %s" % (os.path.basename(listpath), m["lineno"], m["id"])
    if m["file"] is None:
        problems.append(where + ": no file named")
        return
    if os.path.isabs(m["file"]) or not os.path.isfile(os.path.join(root, m["file"])):
        problems.append("%s: no file %s" % (where, m["file"]))
        return
    if not m["suites"]:
        problems.append(where + ": no suite named")
    for s in m["suites"]:
        kind, _, rest = s.partition(":")
        name = rest.split(":")[0]
        if kind == "unit" and name and os.path.isfile(
                os.path.join(root, "tests", "test_%s.c" % name)):
            continue
        if kind == "cli" and name and ":" not in rest and os.path.isfile(
                os.path.join(root, "tests", "%s_cli.sh" % name)):
            continue
        problems.append("%s: unknown suite %s" % (where, s))
    if m["pat"] is None or m["rep"] is None:
        problems.append(where + ": needs one \"- \" and one \"+\" line")
        return
    pat, nth = m["pat"], 1
    at = re.match(r"^(.*) @([0-9]+)$", pat)
    if at:
        pat, nth = at.group(1), int(at.group(2))
    hits = [l for l in lines_of(m["file"]) if pat in l]
    if len(hits) < nth:
        problems.append("%s: text not found in %s%s: %s" % (
            where, m["file"],
            " (%d line(s) have it, @%d asked)" % (len(hits), nth) if hits else "",
            pat))
        return
    if hits[nth - 1].replace(pat, m["rep"], 1) == hits[nth - 1]:
        problems.append("%s: the replacement changes nothing" % where)


seen = {}
blocks = []
cur = None
with open(listpath, encoding="utf-8", errors="surrogateescape") as f:
    for n, line in enumerate(f.read().split("\n"), 1):
        if line.startswith("M "):
            words = line[2:].split()
            cur = {"lineno": n, "id": words[0] if words else "?",
                   "file": words[1] if len(words) > 1 else None,
                   "suites": words[2:], "pat": None, "rep": None}
            blocks.append(cur)
            if cur["id"] in seen:
                problems.append("%s:%d: id %s already used on line %d" % (
                    os.path.basename(listpath), n, cur["id"], seen[cur["id"]]))
            seen.setdefault(cur["id"], n)
        elif cur is None:
            continue
        elif line.startswith("- "):
            if cur["pat"] is not None:
                problems.append("%s:%d: %s: a second \"- \" line" % (
                    os.path.basename(listpath), n, cur["id"]))
            cur["pat"] = line[2:]
        elif line.startswith("+ ") or line == "+":
            if cur["rep"] is not None:
                problems.append("%s:%d: %s: a second \"+\" line" % (
                    os.path.basename(listpath), n, cur["id"]))
            cur["rep"] = line[2:]

for m in blocks:
    check(m)
for p in problems:
    print("mutatecheck: " + p)
if problems:
    print("mutatecheck: %d problem(s) in %d mutations" % (len(problems), len(blocks)))
    sys.exit(1)
print("mutatecheck: ok (%d mutations)" % len(blocks))
EOF
