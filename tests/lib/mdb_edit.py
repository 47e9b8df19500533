#!/usr/bin/env python3
"""Damage a gpuledger data.mdb the way a disk or an attacker would, for the
tamper tests of the command-line tools (tests/*_cli.sh).

usage: mdb_edit.py DATA.MDB MODE [ARGS]
  rekey A B    the leaf node of event A gets key B (A's record stays)
  swapkeys A B the leaf nodes of events A and B swap keys
  head N       flips a bit of the chain head stored with event N
  before N     event N (a RELEASE or FREE with small counts) gets before+1:
               it still decodes but no longer fits the state
  dupflag N    sets F_DUPDATA on event N's leaf node: liblmdb follows it
               into a sub-database that does not exist (a crash inside
               LMDB unless the reader guards against it)
  cpbyte       flips a byte in the middle of the first checkpoint record
  flip SEED    flips one random bit (seeded); prints "offset bit"
  treepage     the first node of the first Merkle tree leaf page (8-byte
               keys, 32-byte hashes) claims its hash on an overflow page
               past the end of the file: an unguarded read of it faults

Events are found in LMDB's leaf pages (format version 1: a 16-byte page
header, P_LEAF 0x02 in its flags; nodes of lo, hi, flags, ksize (u16 each),
the key, the data): an 8-byte key N whose data is an event record of seq N
(version byte 1, a type byte, varint seq).
"""
import random
import struct
import sys

PSIZE = 4096
P_LEAF = 0x02
F_BIGDATA = 0x01
F_DUPDATA = 0x04


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        v |= (c & 0x7F) << shift
        i += 1
        if not c & 0x80:
            return v, i
        shift += 7


def event_node(d, seq):
    """The offset of the leaf node holding event seq, and its data size."""
    pat = struct.pack("<HQ", 8, seq)
    at = d.find(pat)
    while at >= 0:
        node = at - 6
        page = node // PSIZE * PSIZE
        lo, hi, flags = struct.unpack_from("<HHH", d, node)
        data = node + 16
        if (d[page + 10] & P_LEAF and not flags & F_BIGDATA
                and data + 3 < len(d) and d[data] == 1
                and 1 <= d[data + 1] <= 16
                and varint(d, data + 2)[0] == seq):
            return node, lo | hi << 16
        at = d.find(pat, at + 1)
    sys.exit("mdb_edit: event %d not found" % seq)


def tree_node(d):
    """The offset of the first node of the first leaf page whose nodes all
    have 8-byte keys and 32-byte data (the Merkle tree database)."""
    for page in range(2 * PSIZE, len(d) - PSIZE + 1, PSIZE):
        flags, lower = struct.unpack_from("<HH", d, page + 10)
        if not flags & P_LEAF or flags & ~0x12 or lower < 18:
            continue
        ptrs = [struct.unpack_from("<H", d, page + 16 + 2 * i)[0]
                for i in range((lower - 16) // 2)]
        if any(not 16 <= p <= PSIZE - 48 for p in ptrs):
            continue
        if all(struct.unpack_from("<HHHH", d, page + p) == (32, 0, 0, 8)
               for p in ptrs):
            return page + ptrs[0]
    sys.exit("mdb_edit: no Merkle tree page found")


def main():
    path, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    d = bytearray(open(path, "rb").read())
    if mode == "rekey":
        node, _ = event_node(d, int(args[0]))
        struct.pack_into("<Q", d, node + 8, int(args[1]))
    elif mode == "swapkeys":
        a, _ = event_node(d, int(args[0]))
        b, _ = event_node(d, int(args[1]))
        struct.pack_into("<Q", d, a + 8, int(args[1]))
        struct.pack_into("<Q", d, b + 8, int(args[0]))
    elif mode == "head":
        node, size = event_node(d, int(args[0]))
        d[node + 16 + size - 1] ^= 0x01
    elif mode == "before":
        node, size = event_node(d, int(args[0]))
        # ... zz(before) zz(after) head: one byte each for small counts.
        at = node + 16 + size - 32 - 2
        assert d[at] < 0x7E and d[at + 1] < 0x80 and d[at] > d[at + 1]
        d[at] += 2  # zigzag: before + 1
    elif mode == "dupflag":
        node, _ = event_node(d, int(args[0]))
        d[node + 4] |= F_DUPDATA
    elif mode == "cpbyte":
        at = d.find(b"GLCP")
        assert at >= 0, "no checkpoint"
        d[at + 200] ^= 0x20
    elif mode == "treepage":
        node = tree_node(d)
        d[node + 4] |= F_BIGDATA
        struct.pack_into("<Q", d, node + 16, len(d) // PSIZE + 16)
        print(node)
    elif mode == "flip":
        rng = random.Random(int(args[0]))
        off, bit = rng.randrange(len(d)), rng.randrange(8)
        d[off] ^= 1 << bit
        print(off, bit)
    else:
        sys.exit("mdb_edit: unknown mode " + mode)
    open(path, "wb").write(d)


main()
