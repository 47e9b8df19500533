#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A raw HTTP/1.1 client for tests/apiserver_cli.sh.

curl and kubectl hide the transfer framing; this client shows it.  It sends
one GET and prints one JSON object describing the answer:

  {"status": 200, "headers": {lower-case name: value},
   "chunked": true, "chunks": [sizes as declared], "complete": true,
   "cut": false,              # the connection ended mid-chunk or before the
                              # terminating chunk
   "boundaries_inside_event": n,  # chunk boundaries not right after "\\n"
   "boundaries_inside_utf8": n,   # chunk boundaries before a continuation byte
   "events": [...],           # the complete NDJSON lines of a chunked body
   "partial": "...",          # bytes after the last complete line
   "json": {...}}             # the parsed body of a non-chunked answer

Usage: probe.py URL [--cacert F] [--token T] [--cert F --key F]
                [--max-seconds S]
"""

import argparse
import json
import socket
import ssl
import sys
from urllib.parse import urlsplit


def connect(url, args):
    u = urlsplit(url)
    sock = socket.create_connection((u.hostname, u.port), timeout=5)
    sock.settimeout(args.max_seconds)
    if u.scheme == "https":
        ctx = ssl.create_default_context(cafile=args.cacert)
        if args.cert:
            ctx.load_cert_chain(args.cert, args.key)
        sock = ctx.wrap_socket(sock, server_hostname=u.hostname)
    target = u.path + ("?" + u.query if u.query else "")
    req = [f"GET {target} HTTP/1.1", f"Host: {u.netloc}",
           "Accept: application/json", "Connection: close"]
    if args.token:
        req.append(f"Authorization: Bearer {args.token}")
    sock.sendall(("\r\n".join(req) + "\r\n\r\n").encode())
    return sock.makefile("rb")


def read_head(f, out):
    line = f.readline(65537)
    out["status"] = int(line.split()[1])
    headers = {}
    for _ in range(200):
        line = f.readline(65537).decode("latin-1").rstrip("\r\n")
        if not line:
            break
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    out["headers"] = headers


def read_chunks(f, out):
    """Read chunks as declared; returns the reassembled payload and the
    offsets at which chunk boundaries fall."""
    body, bounds = bytearray(), []
    out["chunks"], out["complete"], out["cut"] = [], False, True
    for _ in range(1000000):
        line = f.readline(100)
        if not line.endswith(b"\r\n"):
            return body, bounds
        size = int(line.split(b";")[0], 16)
        if size == 0:
            out["complete"] = f.readline(100) == b"\r\n"
            out["cut"] = not out["complete"]
            return body, bounds
        out["chunks"].append(size)
        data = f.read(size)
        if body:
            bounds.append(len(body))
        body += data
        if len(data) < size or f.read(2) != b"\r\n":
            return body, bounds
    return body, bounds


def describe_stream(body, bounds, out):
    out["boundaries_inside_event"] = sum(
        1 for b in bounds if body[b - 1:b] != b"\n")
    out["boundaries_inside_utf8"] = sum(
        1 for b in bounds if 0x80 <= body[b] <= 0xBF)
    lines = bytes(body).split(b"\n")
    out["events"] = [json.loads(x) for x in lines[:-1]]
    out["partial"] = lines[-1].decode("utf-8", "replace")


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("url")
    p.add_argument("--cacert")
    p.add_argument("--token")
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--max-seconds", type=float, default=20)
    args = p.parse_args(argv)
    out = {}
    f = connect(args.url, args)
    read_head(f, out)
    out["chunked"] = out["headers"].get("transfer-encoding") == "chunked"
    if out["chunked"]:
        body, bounds = read_chunks(f, out)
        describe_stream(body, bounds, out)
    else:
        n = int(out["headers"].get("content-length", "0"))
        data = f.read(n)
        out["cut"] = len(data) < n
        out["json"] = None if out["cut"] else json.loads(data)
        out["partial"] = data.decode("utf-8", "replace") if out["cut"] \
            else ""
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
