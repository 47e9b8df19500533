"""A client that tries to starve `gpuledger serve` (tests/budget_cli.sh).

  flood.py hold PORT PROBE_PORT N READY STOP
      opens N connections from 127.0.0.2 (one peer; measure asks from
      127.0.0.1, another) and leaves each half-open: four in
      five to the API port with 11 bytes of a TLS ClientHello, the rest to
      the (plain HTTP) probe port with a partial request head. Then touches
      READY and reopens every one the server closes (an attacker who just
      reconnects) until the file STOP exists; prints "flood opened N
      reopened R failed F held H" (F: connects that did not complete; H:
      connections still open at the end, by the client's count).
  flood.py measure PORT PROBE_PORT CA CERT KEY SAMPLES
      asks SAMPLES times for the probe port's /healthz and SAMPLES times for
      an admission over TLS with the client certificate CERT, each on a
      fresh connection as the kubelet and the API server do; prints
      "probe OK/SAMPLES p50 MS p99 MS max MS" and the same for admission.
      Times are printed, never judged.
"""
import json
import math
import os
import resource
import selectors
import socket
import ssl
import sys
import time

HELLO = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"  # 11 bytes
HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "
ADMISSION = json.dumps({
    "namespace": "tenant-acme-dev", "kind": "VMInstance", "name": "vm-f",
    "old": None, "new": {"gpus": [{"class": "h100"}]}}).encode()


def raise_nofile(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, n))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


class Flood:
    def __init__(self, port, pport, n):
        self.kinds = []
        for i in range(n):
            self.kinds.append((pport, HEAD) if i % 5 == 4
                              else (port, HELLO))
        self.sel = selectors.DefaultSelector()
        self.opened = self.reopened = self.failed = 0

    def open_one(self, kind):
        port, data = self.kinds[kind]
        s = socket.socket()
        s.settimeout(5)
        try:
            s.bind(("127.0.0.2", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(data)
        except OSError:
            s.close()
            self.failed += 1
            return False
        s.setblocking(False)
        self.sel.register(s, selectors.EVENT_READ, kind)
        return True

    def open_all(self):
        for k in range(len(self.kinds)):
            self.opened += self.open_one(k)

    def churn(self, stop):
        """Reopens what the server closes until the file stop exists."""
        last = 0
        while True:
            now = time.monotonic()
            if now - last > 0.1:
                if os.path.exists(stop):
                    return
                last = now
            for key, _ in self.sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    if s.recv(4096):
                        continue  # an alert or a 408: wait for the close
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                self.sel.unregister(s)
                s.close()
                self.reopened += self.open_one(key.data)


def probe(pport):
    s = socket.create_connection(("127.0.0.1", pport), timeout=10)
    try:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        got = b""
        while True:
            d = s.recv(4096)
            if not d:
                break
            got += d
        return got.startswith(b"HTTP/1.1 200 ")
    finally:
        s.close()


def admission(port, ctx):
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    try:
        s.sendall(b"POST /v1/admission HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: %d\r\n\r\n"
                  % len(ADMISSION) + ADMISSION)
        got = b""
        while True:
            d = s.recv(4096)
            if not d:
                break
            got += d
        return got.startswith(b"HTTP/1.1 200 ") and b'"allowed"' in got
    finally:
        s.close()


def measure(name, samples, fn):
    times, ok = [], 0
    for _ in range(samples):
        t0 = time.monotonic()
        try:
            ok += bool(fn())
        except OSError:
            pass
        times.append((time.monotonic() - t0) * 1000)
    times.sort()

    def q(p):
        return times[max(0, math.ceil(p * len(times)) - 1)]  # nearest rank
    print(f"{name} {ok}/{samples} p50 {q(0.50):.1f} ms p99 {q(0.99):.1f} ms"
          f" max {times[-1]:.1f} ms", flush=True)


def hold(port, pport, n, ready, stop):
    raise_nofile(n + 256)
    f = Flood(port, pport, n)
    f.open_all()
    open(ready, "w").close()
    f.churn(stop)
    print(f"flood opened {f.opened} reopened {f.reopened} "
          f"failed {f.failed} held {len(f.sel.get_map())}", flush=True)


def main():
    a = sys.argv[1:]
    if a[0] == "hold":
        hold(int(a[1]), int(a[2]), int(a[3]), a[4], a[5])
        return
    port, pport = int(a[1]), int(a[2])
    ctx = ssl.create_default_context(cafile=a[3])
    ctx.check_hostname = False
    ctx.load_cert_chain(a[4], a[5])
    samples = int(a[6])
    measure("probe", samples, lambda: probe(pport))
    measure("admission", samples, lambda: admission(port, ctx))


if __name__ == "__main__":
    main()
