#!/usr/bin/env python3
"""Checks that the operator documentation names only things that exist and
leaves nothing out.

  - every subcommand of `gpuledger --help` is run by an example of
    docs/api.md, and every route of query/routes.c is requested by one
    (COMMANDS is the list run_examples.py --commands wrote);
  - every metric named in docs/*.md is one serve (query/metrics.c) or the
    watcher (ingest/kube_metrics.c, ledger/build.c) exposes;
  - every option written after `gpuledger SUB` is in `gpuledger SUB --help`,
    and every other --option in the docs belongs to some subcommand;
  - every relative link of docs/*.md points at a file that exists.

Usage: check_docs.py --bin GPULEDGER --root SRC --commands FILE
Prints "ok:"/"FAIL:" lines and "checks: N passed, N failed".
"""
import argparse
import glob
import os
import re
import subprocess
import sys


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok: " + name)
        else:
            self.failed += 1
            print("FAIL: " + name + (": " + detail if detail else ""))


def helptext(binary, sub=None):
    r = subprocess.run([binary] + ([sub] if sub else []) + ["--help"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return r.stdout.decode()


def manpage(binary, sub):
    r = subprocess.run([binary, sub, "--help-man"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    return re.sub(r"\\f[BIR]", "", r.stdout.decode()).replace("\\-", "-")


def subcommands(binary):
    part = helptext(binary).split("subcommands:", 1)[-1]
    return re.findall(r"^\s{2}([a-z][a-z-]*)\s", part, re.M)


def routes(root):
    text = open(os.path.join(root, "query", "routes.c")).read()
    return re.findall(r"ROUTE\(\s*R_\w+,\s*HTTP_(\w+),\s*\"([^\"]+)\"", text)


def requested(cmds, method, label):
    path = re.sub(r"\\\{\w+\\\}", r"[^/?'\" ]+", re.escape(label))
    url = re.compile(r"http://127\.0\.0\.1:8420" + path + r"(?=[?'\" ]|$)",
                     re.M)
    for cmd in cmds:
        if "curl" not in cmd or not url.search(cmd):
            continue
        post = re.search(r"(-X\s*POST|\s-d\s|--data)", cmd) is not None
        if post == (method == "POST"):
            return True
    return False


def check_coverage(c, binary, root, cmds):
    for sub in subcommands(binary):
        c.check(f"api.md runs gpuledger {sub}",
                any(re.search(r"(^|[|;&(]\s*)gpuledger\s+" + sub + r"\b", x,
                              re.M) for x in cmds))
    rs = routes(root)
    c.check("query/routes.c has routes", len(rs) >= 10, str(rs))
    for method, label in rs:
        c.check(f"api.md requests {method} {label}",
                requested(cmds, method, label))


def doc_texts(root):
    return {p: open(p, encoding="utf-8").read()
            for p in sorted(glob.glob(os.path.join(root, "docs", "*.md")))}


def check_metrics(c, root, texts):
    src = "".join(open(os.path.join(root, *f)).read() for f in (
        ("query", "metrics.c"), ("ingest", "kube_metrics.c"),
        ("ledger", "build.c")))
    names = set(re.findall(r"\"(gpuledger_[a-z_]+)", src))
    names |= {n + s for n in names for s in ("_bucket", "_sum", "_count")}
    for p, t in texts.items():
        for m in sorted(set(re.findall(r"\bgpuledger_[a-z_]+[a-z]", t))):
            c.check(f"{os.path.basename(p)}: metric {m} exists", m in names)


def check_options(c, binary, texts):
    subs = subcommands(binary)
    # --help lists the options; the man page also names each alias (an
    # old spelling still accepted, docs/api.md "Flag names").
    helps = {s: helptext(binary, s) + manpage(binary, s) for s in subs}
    every = "\n".join(helps.values()) + "\n--completion-helper --help-man"

    def has(text, opt):
        return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])",
                         text) is not None

    for p, t in texts.items():
        name = os.path.basename(p)
        tied = set()
        for m in re.finditer(r"gpuledger\s+([a-z][a-z-]*)\b([^`|\n]*)", t):
            if m.group(1) not in helps:
                continue
            for opt in re.findall(r"(?<![\w-])--[a-z][a-z-]*", m.group(2)):
                tied.add(opt)
                c.check(f"{name}: gpuledger {m.group(1)} has {opt}",
                        has(helps[m.group(1)], opt))
        # Options on lines of other tools' command lines are theirs
        # (python3: the test helpers', e.g. tests/cluster/history.py).
        own = "\n".join(ln for ln in t.split("\n")
                        if not re.search(r"\b(kubectl|docker|curl|python3)\b",
                                         ln))
        for opt in sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", own))
                          - tied - {"--help"}):
            c.check(f"{name}: {opt} is an option of some subcommand",
                    has(every, opt))


def check_links(c, root, texts):
    for p, t in texts.items():
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", t):
            path = os.path.normpath(os.path.join(os.path.dirname(p), target))
            c.check(f"{os.path.basename(p)}: link {target} exists",
                    os.path.exists(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--commands", required=True)
    a = ap.parse_args()
    binary, root = os.path.abspath(a.bin), os.path.abspath(a.root)
    cmds = open(a.commands, encoding="utf-8").read().split("\0")
    c = Checks()
    texts = doc_texts(root)
    check_coverage(c, binary, root, cmds)
    check_metrics(c, root, texts)
    check_options(c, binary, texts)
    check_links(c, root, texts)
    print(f"checks: {c.passed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
