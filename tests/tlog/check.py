#!/usr/bin/env python3
"""An auditor's check of a gpuledger log with no gpuledger code (DESIGN 4.4).

Usage: check.py LOG.ndjson VERIFIER_KEY_FILE CHECKPOINT_FILE PROOF.json

Recomputes the RFC 9162 Merkle root from `gpuledger log` output (leaf =
SHA-256(0x00 || the line's bytes), which are already RFC 8785 JCS; the
line is re-canonicalized here to check that too), verifies the C2SP signed
checkpoint with the Ed25519 verifier key, compares the roots, and checks
the inclusion proof of `gpuledger prove`. Prints "ok ..." and exits 0, or
names what failed and exits 1.
"""
import base64, hashlib, json, struct, sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

def jcs(v):
    # RFC 8785 for the values a gpuledger event holds (no floats).
    if isinstance(v, dict):
        keys = sorted(v, key=lambda k: k.encode("utf-16-be"))
        return "{" + ",".join(jcs(k) + ":" + jcs(v[k]) for k in keys) + "}"
    if isinstance(v, list):
        return "[" + ",".join(jcs(x) for x in v) + "]"
    if isinstance(v, str):
        out = []
        for c in v:
            o = ord(c)
            if c == '"' or c == "\\":
                out.append("\\" + c)
            elif o < 0x20:
                out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f",
                            13: "\\r"}.get(o, "\\u%04x" % o))
            else:
                out.append(c)
        return '"' + "".join(out) + '"'
    if v is True: return "true"
    if v is False: return "false"
    if v is None: return "null"
    if isinstance(v, int):
        assert abs(v) <= 2**53 - 1, "an integer beyond 2^53-1 in the JSON"
        return str(v)
    raise ValueError("unexpected value %r" % (v,))

def node(l, r): return hashlib.sha256(b"\x01" + l + r).digest()

def mth(leaves):
    if len(leaves) == 1: return leaves[0]
    k = 1
    while k * 2 < len(leaves): k *= 2
    return node(mth(leaves[:k]), mth(leaves[k:]))

def fail(msg):
    print("FAILED: " + msg); sys.exit(1)

log, keyfile, cpfile, prooffile = sys.argv[1:5]
leaves = []
for n, line in enumerate(open(log, encoding="utf-8").read().splitlines(), 1):
    ev = json.loads(line)
    if ev["seq"] != n: fail("line %d holds seq %d" % (n, ev["seq"]))
    if jcs(ev) != line: fail("line %d is not JCS" % n)
    leaves.append(hashlib.sha256(b"\x00" + line.encode()).digest())

# The verifier key: name+hexid+base64(0x01 || key); key ID checked.
name, kid, k64 = open(keyfile).read().strip().split("+", 2)
raw = base64.b64decode(k64)
if raw[0] != 1: fail("not an Ed25519 key")
want = hashlib.sha256(name.encode() + b"\n" + raw).digest()[:4]
if want.hex() != kid: fail("key ID")
pub = Ed25519PublicKey.from_public_bytes(raw[1:])

note = open(cpfile, encoding="utf-8").read()
text, sigs = note.rsplit("\n\n", 1)
text += "\n"
good = 0
for s in sigs.splitlines():
    dash, who, b = s.split(" ")
    blob = base64.b64decode(b)
    if who != name or blob[:4].hex() != kid: continue   # another key's line
    pub.verify(blob[4:], text.encode())                # raises if bad
    good += 1
if good == 0: fail("no signature of the key")
origin, size, root64 = text.splitlines()[:3]
size = int(size)
root = base64.b64decode(root64)
if origin != name: fail("origin")
if size > len(leaves): fail("the log is shorter than the checkpoint")
if mth(leaves[:size]) != root: fail("root of the log != checkpoint root")

# The inclusion proof (RFC 9162 2.1.3.2).
proof = json.load(open(prooffile))
if proof["treeSize"] != size: fail("proof size")
seq = proof["seq"]
ev = proof["event"]
r = hashlib.sha256(b"\x00" + jcs(ev).encode()).digest()
if r != leaves[seq - 1]: fail("the proof's event is not the log's")
fn, sn = seq - 1, size - 1
for h64 in proof["hashes"]:
    h = base64.b64decode(h64)
    if sn == 0: fail("proof too long")
    if fn & 1 or fn == sn:
        r = node(h, r)
        while not fn & 1 and fn != 0:
            fn >>= 1; sn >>= 1
    else:
        r = node(r, h)
    fn >>= 1; sn >>= 1
if sn != 0 or r != root: fail("inclusion proof")
print("ok %d events, tree of size %d, proof of seq %d" % (len(leaves), size, seq))
