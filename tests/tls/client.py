#!/usr/bin/env python3
"""A TLS client for tests/tls_cli.sh that curl cannot be: one connection
kept open for many requests, pipelined requests, and a handshake that never
finishes.

  client.py keepalive PORT CA SECONDS PATH TOKEN
      one TLS connection, requests back to back for SECONDS (or until the
      file $STOP exists); prints "requests N failed N reconnects 0"; any
      answer that is not 200, a short read or a closed connection counts as
      failed, and the connection is never reopened. With $PROGRESS set,
      the count of answers so far is kept in that file (for polling).
  client.py pipeline PORT CA N PATH TOKEN
      N requests in one write on one connection; prints the status of each
      answer read back, in order.
  client.py slowhello PORT
      connects and sends 5 bytes of a ClientHello, then waits up to 20 s;
      prints "closed" when the server ends the connection, "open" if not.
"""
import os
import socket
import ssl
import sys
import time


def connect(port, ca):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
    return ctx.wrap_socket(s, server_hostname="127.0.0.1")


def request(path, token):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n").encode()


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise EOFError("connection closed")
        self.buf += d

    def answer(self):
        while b"\r\n\r\n" not in self.buf:
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        n = 0
        for l in lines[1:]:
            k, v = l.split(":", 1)
            if k.lower() == "content-length":
                n = int(v)
        while len(self.buf) < n:
            self.fill()
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, body


def keepalive(port, ca, secs, path, token):
    s = connect(port, ca)
    r = Reader(s)
    n = failed = 0
    end = time.time() + float(secs)
    stop = os.environ.get("STOP")
    progress = os.environ.get("PROGRESS")
    while time.time() < end and not (stop and os.path.exists(stop)):
        try:
            s.sendall(request(path, token))
            st, _ = r.answer()
        except (OSError, EOFError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            break
        n += 1
        if st != 200:
            failed += 1
        if progress:
            with open(progress + ".tmp", "w") as f:
                f.write(f"{n}\n")
            os.replace(progress + ".tmp", progress)
        time.sleep(0.005)
    print(f"requests {n} failed {failed} reconnects 0")


def pipeline(port, ca, count, path, token):
    s = connect(port, ca)
    s.sendall(request(path, token) * int(count))
    r = Reader(s)
    for _ in range(int(count)):
        print(r.answer()[0])


def slowhello(port):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
    s.sendall(b"\x16\x03\x01\x00\xc8")
    try:
        d = s.recv(1)
        print("closed" if not d else "open")
    except ConnectionResetError:
        print("closed")
    except socket.timeout:
        print("open")


if __name__ == "__main__":
    mode, args = sys.argv[1], sys.argv[2:]
    {"keepalive": keepalive, "pipeline": pipeline,
     "slowhello": slowhello}[mode](*args)
