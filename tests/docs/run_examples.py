#!/usr/bin/env python3
"""Runs the examples of a Markdown page and compares their output.

Every ```console block of the page is a sequence of commands, each a line
starting with "$ " (a line ending in a backslash, or a here-document, goes
on), followed by the output the command printed when the page was written.
The commands run in order with sh, in a scratch directory that holds a
symlink `tests` to the source tree's tests/ (so fixtures are found as from
the top of the tree) and with the gpuledger under test first on the PATH.

A command ending in "&" starts a server in the background: 127.0.0.1:8420
in it becomes 127.0.0.1:0, and its first lines of output are compared once
they have come ("listening on 127.0.0.1:PORT"). Later commands reach it
through 127.0.0.1:8420, which is rewritten to the real port.

Outputs are compared as text; a JSON document (whole, or one per line) is
compared as canonical JSON, so the page may pretty-print it. A line "..."
in the expected output stands for one or more lines, and "..." inside a line
for any characters. Only what must vary is normalised: the port, the
answeredAt of VERDICT records (the server's clock; older ledgers stamped
it as the VERDICT event's time) and the chain heads from the first VERDICT
event on, which hash those times. A documented chain head or time
matches itself or any such varying value of the real run.

Usage: run_examples.py --bin GPULEDGER --root SRC PAGE.md
Prints one "ok:" or "FAIL:" line per example and "examples: N passed,
N failed" last; exit 1 on any failure.
"""
import argparse
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

DOC_ADDR = "127.0.0.1:8420"
HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_]\w*)['\"]?")
# What a documented value that may vary looks like.
VARYING = re.compile(r"[0-9a-f]{64}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z"
                     r"|\.\.\.")
HEAD_MARK = "\x00H\x00"
TIME_MARK = "\x00T\x00"


class Example:
    def __init__(self, line, cmd):
        self.line = line
        self.cmd = cmd
        self.want = []


def parse(path):
    """The examples of every ```console block, in order."""
    examples = []
    lines = open(path, encoding="utf-8").read().split("\n")
    i, in_block, has_cmd = 0, False, False
    while i < len(lines):
        ln = lines[i]
        i += 1
        if not in_block:
            in_block = re.fullmatch(r"```console\s*", ln) is not None
            has_cmd = False
            continue
        if re.fullmatch(r"```\s*", ln):
            in_block = False
            continue
        if not ln.startswith("$ "):
            if not has_cmd:
                raise SystemExit(f"{path}:{i}: output before any command")
            examples[-1].want.append(ln)
            continue
        has_cmd = True
        ex = Example(i, ln[2:])
        while ex.cmd.endswith("\\") and i < len(lines):
            ex.cmd += "\n" + lines[i]
            i += 1
        m = HEREDOC.search(ex.cmd)
        if m:
            while i < len(lines):
                ex.cmd += "\n" + lines[i]
                i += 1
                if lines[i - 1] == m.group(1):
                    break
        examples.append(ex)
    return examples


def tidy(text):
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


def canon_json(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False)


def canonical(text):
    """Text with every JSON document (whole or per line) made canonical."""
    s = text.strip()
    if s[:1] in ("{", "["):
        try:
            return canon_json(json.loads(s))
        except ValueError:
            pass
    out = []
    for ln in text.split("\n"):
        if ln.lstrip()[:1] in ("{", "["):
            try:
                ln = canon_json(json.loads(ln))
            except ValueError:
                pass
        out.append(ln)
    return "\n".join(out)


def pattern(want):
    """A regex for the expected text: varying-looking tokens match the
    same value or a mark, "..." matches anything."""
    parts, pos = [], 0
    for m in VARYING.finditer(want):
        parts.append(re.escape(want[pos:m.start()]))
        tok = m.group(0)
        if tok == "...":
            parts.append(".*?")
        elif len(tok) == 64 and "T" not in tok:
            parts.append("(?:%s|%s)" % (tok, re.escape(HEAD_MARK)))
        else:
            parts.append("(?:%s|%s)" % (re.escape(tok), re.escape(TIME_MARK)))
        pos = m.end()
    parts.append(re.escape(want[pos:]))
    return re.compile("".join(parts), re.DOTALL)


class Runner:
    def __init__(self, binary, root):
        self.tmp = tempfile.mkdtemp(prefix="docs_cli.")
        self.work = os.path.join(self.tmp, "work")
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(self.work)
        os.makedirs(bindir)
        os.symlink(os.path.abspath(binary), os.path.join(bindir, "gpuledger"))
        os.symlink(os.path.join(os.path.abspath(root), "tests"),
                   os.path.join(self.work, "tests"))
        self.env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
                        LC_ALL="C")
        self.port = None
        self.servers = []
        self.commands = []

    def close(self, keep):
        for p in self.servers:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if keep:
            print("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def sh(self, cmd, timeout=60):
        r = subprocess.run(["sh", "-c", cmd], cwd=self.work, env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        return r.stdout.decode("utf-8", "replace")

    def background(self, ex):
        cmd = ex.cmd[:-1].rstrip().replace(DOC_ADDR, "127.0.0.1:0")
        p = subprocess.Popen(["sh", "-c", "exec " + cmd], cwd=self.work,
                             env=self.env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        self.servers.append(p)
        got, buf, end = [], b"", time.monotonic() + 20
        while len(got) < max(1, len(ex.want)) and time.monotonic() < end:
            r, _, _ = select.select([p.stdout], [], [], 0.1)
            if not r:
                continue
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            got += [x.decode("utf-8", "replace") for x in lines]
        for ln in got:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", ln)
            if m:
                self.port = m.group(1)
        return "\n".join(got)

    def run(self, ex):
        self.commands.append(ex.cmd)
        if ex.cmd.rstrip().endswith("&"):
            out = self.background(ex)
        else:
            cmd = ex.cmd
            if DOC_ADDR in cmd and self.port is None:
                return "no server started before this command"
            if self.port is not None:
                cmd = cmd.replace(DOC_ADDR, "127.0.0.1:" + self.port)
            try:
                out = self.sh(cmd)
            except subprocess.TimeoutExpired:
                return "timed out"
        if self.port is not None:
            out = out.replace("127.0.0.1:" + self.port, DOC_ADDR)
        return out

    def varying(self):
        """VERDICT times and the chain heads from the first VERDICT on, in
        the ledger the page builds (./ledger)."""
        db = os.path.join(self.work, "ledger")
        if not os.path.isdir(db):
            return set(), set()
        log = self.sh("gpuledger log --db ledger")
        events = [json.loads(x) for x in log.splitlines() if x.startswith("{")]
        verdicts = [e for e in events if e.get("type") == "VERDICT"]
        if not verdicts:
            return set(), set()
        times = {e["time"] for e in verdicts}
        times |= {e["record"]["answeredAt"] for e in verdicts
                  if isinstance(e.get("record"), dict)
                  and isinstance(e["record"].get("answeredAt"), str)}
        heads = set()
        for s in range(verdicts[0]["seq"], events[-1]["seq"] + 1):
            st = json.loads(self.sh(f"gpuledger replay --db ledger --at {s} "
                                    "--json"))
            heads.add(st["chainHead"])
        return times, heads


def matches(runner, want, got):
    want, got = tidy(want), tidy(got)
    if want == got:
        return True
    want, got = canonical(want), canonical(got)
    if want == got:
        return True
    times, heads = runner.varying()
    for h in heads:
        got = got.replace(h, HEAD_MARK)
    for t in times:
        got = got.replace(t, TIME_MARK)
    return pattern(want).fullmatch(got) is not None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--commands", help="write the commands run to this file")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--show", action="store_true",
                    help="print what each command printed (to write a page)")
    ap.add_argument("page")
    a = ap.parse_args()
    examples = parse(a.page)
    runner = Runner(a.bin, a.root)
    passed = failed = 0
    try:
        for ex in examples:
            got = runner.run(ex)
            first = ex.cmd.split("\n")[0]
            if a.show:
                print("$ " + ex.cmd + "\n" + tidy(got))
                continue
            if matches(runner, "\n".join(ex.want), got):
                passed += 1
                print(f"ok: {a.page}:{ex.line}: {first[:70]}")
            else:
                failed += 1
                print(f"FAIL: {a.page}:{ex.line}: {first}")
                print("  want: " + "\n        ".join(ex.want)[:1500])
                print("  got:  " + "\n        ".join(tidy(got).split("\n"))
                      [:1500])
    finally:
        runner.close(a.keep)
    if a.commands:
        with open(a.commands, "w", encoding="utf-8") as f:
            f.write("\0".join(runner.commands))
    if not examples:
        print(f"FAIL: {a.page}: no ```console examples")
    print(f"examples: {passed} passed, {failed} failed")
    return 1 if failed or not examples else 0


if __name__ == "__main__":
    sys.exit(main())
