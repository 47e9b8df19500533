#!/usr/bin/env python3
"""A real etcd cluster on loopback for the cluster tests (DESIGN 11), with a
small TCP proxy in front of each member that a test steers at run time.

    etcd_cluster.py up DIR [--members N] [--proxies-per-member K]
                           [--watch-pid PID]
        Starts N (default 3) etcd members (Debian's etcd-server) on free
        loopback ports, data under DIR/data, logs DIR/m<i>.log; waits until
        `etcdctl endpoint health` says every member is healthy; starts K
        (default 1) proxies per member (p<i> for member i, then p<i>.<j>);
        writes DIR/env (sh: ETCD_URLS, ETCD_URL<i>, PROXY_URLS,
        PROXY_URL<i>, ...) and then DIR/ready; and runs until SIGTERM,
        SIGINT or, with --watch-pid PID, until PID is gone, then stops
        every member. The
        members die with it even when it is SIGKILLed (PR_SET_PDEATHSIG),
        so that a failed test leaves no stray etcd.
    etcd_cluster.py ctl DIR COMMAND...
        Sends a command over DIR/ctl.sock and prints the answer:
          mode PROXY forward|drop-answer [MATCH]|reset|reset-early|
                     blackhole|delay MS|delay-once MS [MATCH]
          stats PROXY            counters as JSON
          proxy NAME PORT        a new proxy NAME in front of 127.0.0.1:PORT
                                 (a member's, say); prints its port
          stop MEMBER | kill MEMBER | start MEMBER   (SIGTERM, SIGKILL, again)

Proxy modes, read for every chunk (so they apply to kept-alive connections
too):
  forward      bytes both ways;
  drop-answer  the request goes upstream; when the upstream answers, the
               answer is dropped and the client's connection closed (FIN):
               the write committed and its client never heard; with
               MATCH, only the answers to requests whose bytes hold MATCH
               (say, the base64 of "P/log/": the txns that append), the
               rest forwarded; MATCH may name several substrings,
               comma-separated, all of which must be in the request,
               each of them one of several alternatives split by "|";
  reset        as drop-answer, but the client's connection is reset (RST):
               a write that committed, and a reset instead of its answer;
  reset-early  the client's connection is reset as soon as it sends,
               nothing goes upstream;
  blackhole    what the client sends is read and dropped, nothing answers;
  delay MS     every chunk, both ways, waits MS milliseconds first.
  delay-once MS [MATCH]
               the next request (whose bytes hold MATCH, say "/v3/kv/txn"
               or the base64 of a key only some txns name) waits MS
               milliseconds before it goes upstream, on its connection
               alone; then the proxy forwards (its mode is "forward"
               again): requests on other connections overtake it, so that
               txns reach etcd out of order.

Standard library only.
"""
import asyncio
import ctypes
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
MODES = ("forward", "drop-answer", "reset", "reset-early", "blackhole",
         "delay", "delay-once")


def die_with_parent():
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Proxy:
    def __init__(self, name, upstream_port):
        self.name = name
        self.upstream = ("127.0.0.1", upstream_port)
        self.mode, self.delay_ms = "forward", 0
        self.match = None  # drop-answer's MATCH ([bytes]), or None
        self.once = None  # delay-once's (MS, MATCH or None), or None
        self.stats = {"connections": 0, "up_bytes": 0, "down_bytes": 0,
                      "dropped": 0, "reset": 0, "blackholed": 0,
                      "delayed_once": 0}
        self.conns = set()
        self.port = None

    async def start(self):
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    @staticmethod
    def rst(writer):
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                struct.pack("ii", 1, 0))
            except OSError:
                pass
        writer.transport.abort()

    async def handle(self, creader, cwriter):
        self.stats["connections"] += 1
        try:
            ureader, uwriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            self.rst(cwriter)
            return
        done = asyncio.Event()
        req = bytearray()  # the bytes of the last request sent

        async def up():
            try:
                while True:
                    data = await creader.read(65536)
                    if not data:
                        uwriter.write_eof()
                        return
                    if data[:4] in (b"POST", b"GET ", b"PUT "):
                        req.clear()
                    if len(req) < 1 << 20:
                        req.extend(data)
                    # The request's bytes so far (its head and body may
                    # come in chunks of their own) hold MATCH: this chunk
                    # and what follows on this connection wait.
                    once = self.once
                    if once is not None and (once[1] is None or
                                             once[1] in req):
                        self.once = None
                        self.stats["delayed_once"] += 1
                        await asyncio.sleep(once[0] / 1000)
                    if self.mode == "reset-early":
                        self.stats["reset"] += 1
                        self.rst(cwriter)
                        uwriter.close()
                        done.set()
                        return
                    if self.mode == "blackhole":
                        self.stats["blackholed"] += len(data)
                        continue
                    if self.mode == "delay":
                        await asyncio.sleep(self.delay_ms / 1000)
                    uwriter.write(data)
                    self.stats["up_bytes"] += len(data)
                    await uwriter.drain()
            except (OSError, RuntimeError):
                done.set()

        async def down():
            try:
                while True:
                    data = await ureader.read(65536)
                    if not data:
                        break
                    if self.mode == "drop-answer" and (
                            self.match is None or
                            all(any(a in req for a in m.split(b"|"))
                                for m in self.match)):
                        self.stats["dropped"] += 1
                        break
                    if self.mode == "reset":
                        self.stats["reset"] += 1
                        self.rst(cwriter)
                        break
                    if self.mode == "blackhole":
                        continue
                    if self.mode == "delay":
                        await asyncio.sleep(self.delay_ms / 1000)
                    cwriter.write(data)
                    self.stats["down_bytes"] += len(data)
                    await cwriter.drain()
            except (OSError, RuntimeError):
                pass
            done.set()

        tasks = [asyncio.ensure_future(up()), asyncio.ensure_future(down())]
        await done.wait()
        for t in tasks:
            t.cancel()
        for w in (cwriter, uwriter):
            try:
                w.close()
            except (OSError, RuntimeError):
                pass


class Cluster:
    def __init__(self, d, members, per_member):
        self.dir = d
        self.n = members
        self.per = per_member
        self.procs = [None] * members
        self.proxies = {}
        ports = free_ports(2 * members)
        self.client = ports[:members]
        self.peer = ports[members:]
        self.names = ["m%d" % i for i in range(members)]

    def initial_cluster(self):
        return ",".join("%s=http://127.0.0.1:%d" % (self.names[i], self.peer[i])
                        for i in range(self.n))

    def start_member(self, i, state="new"):
        cmd = ["etcd", "--name", self.names[i],
               "--data-dir", os.path.join(self.dir, "data", self.names[i]),
               "--listen-client-urls", "http://127.0.0.1:%d" % self.client[i],
               "--advertise-client-urls", "http://127.0.0.1:%d" % self.client[i],
               "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
               "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
               "--initial-cluster", self.initial_cluster(),
               "--initial-cluster-state", state,
               "--initial-cluster-token", "gpuledger-test",
               "--heartbeat-interval", "50", "--election-timeout", "500",
               "--snapshot-count", "10000", "--logger", "zap",
               "--log-outputs", "stderr"]
        log = open(os.path.join(self.dir, "%s.log" % self.names[i]), "ab")
        self.procs[i] = subprocess.Popen(cmd, stdout=log, stderr=log,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=die_with_parent)
        log.close()

    def urls(self):
        return ["http://127.0.0.1:%d" % p for p in self.client]

    def healthy(self):
        r = subprocess.run(["etcdctl", "--endpoints", ",".join(self.urls()),
                            "--command-timeout=2s", "endpoint", "health"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           env=dict(os.environ, ETCDCTL_API="3"))
        return r.returncode == 0

    def stop_member(self, i, sig):
        p = self.procs[i]
        if p is None or p.poll() is not None:
            return
        p.send_signal(sig)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()

    def stop_all(self):
        for i in range(self.n):
            self.stop_member(i, signal.SIGTERM)


async def control(cluster, reader, writer):
    try:
        line = (await reader.readline()).decode().split()
        answer = "error: unknown command"
        if len(line) >= 3 and line[0] == "mode" and line[1] in cluster.proxies:
            p = cluster.proxies[line[1]]
            if line[2] == "delay" and len(line) == 4 and line[3].isdigit():
                p.mode, p.delay_ms = "delay", int(line[3])
                answer = "ok"
            elif line[2] == "delay-once" and len(line) in (4, 5) and \
                    line[3].isdigit():
                p.mode, p.match = "forward", None
                p.once = (int(line[3]),
                          line[4].encode() if len(line) == 5 else None)
                answer = "ok"
            elif line[2] == "drop-answer" and len(line) == 4:
                p.mode, p.match = "drop-answer", line[3].encode().split(b",")
                answer = "ok"
            elif line[2] in MODES and line[2] != "delay" and len(line) == 3:
                p.mode, p.match, p.once = line[2], None, None
                answer = "ok"
            else:
                answer = "error: modes are " + ", ".join(MODES)
        elif len(line) == 3 and line[0] == "proxy" and line[2].isdigit() \
                and line[1] not in cluster.proxies:
            # Another proxy, in front of any local port (say, a member's:
            # the link from a door to the sequencer); answers its port.
            p = Proxy(line[1], int(line[2]))
            await p.start()
            cluster.proxies[line[1]] = p
            answer = str(p.port)
        elif len(line) == 2 and line[0] == "stats" and line[1] in cluster.proxies:
            p = cluster.proxies[line[1]]
            answer = json.dumps(dict(p.stats, mode=p.mode,
                                     delayMs=p.delay_ms), sort_keys=True)
        elif len(line) == 2 and line[0] in ("stop", "kill", "start") and \
                line[1].isdigit() and int(line[1]) < cluster.n:
            i = int(line[1])
            loop = asyncio.get_event_loop()
            if line[0] == "start":
                # On the main thread: PR_SET_PDEATHSIG fires when the
                # thread that forked ends, not the process.
                cluster.start_member(i, "existing")
            else:
                sig = signal.SIGTERM if line[0] == "stop" else signal.SIGKILL
                await loop.run_in_executor(None, cluster.stop_member, i, sig)
            answer = "ok"
        writer.write((answer + "\n").encode())
        await writer.drain()
    finally:
        writer.close()


async def serve(cluster, stop):
    for i in range(cluster.n):
        for j in range(cluster.per):
            name = "p%d" % i if j == 0 else "p%d.%d" % (i, j)
            p = Proxy(name, cluster.client[i])
            await p.start()
            cluster.proxies[name] = p
    sock = os.path.join(cluster.dir, "ctl.sock")
    await asyncio.start_unix_server(lambda r, w: control(cluster, r, w), sock)
    env = ["ETCD_URLS=%s" % ",".join(cluster.urls()),
           "PROXY_URLS=%s" % ",".join("http://127.0.0.1:%d" % cluster.proxies["p%d" % i].port
                                      for i in range(cluster.n))]
    for i, u in enumerate(cluster.urls()):
        env.append("ETCD_URL%d=%s" % (i, u))
    for name, p in sorted(cluster.proxies.items()):
        env.append("PROXY_URL%s=http://127.0.0.1:%d" %
                   (name[1:].replace(".", "_"), p.port))
    with open(os.path.join(cluster.dir, "env.tmp"), "w") as f:
        f.write("\n".join(env) + "\n")
    os.rename(os.path.join(cluster.dir, "env.tmp"),
              os.path.join(cluster.dir, "env"))
    open(os.path.join(cluster.dir, "ready"), "w").close()
    await stop.wait()


async def watch(pid, stop):
    """Stops when the test that started us is gone, however it ended."""
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            stop.set()
            return
        await asyncio.sleep(0.5)


def up(d, members, per, watch_pid):
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    cluster = Cluster(d, members, per)
    try:
        for i in range(members):
            cluster.start_member(i)
        deadline = time.monotonic() + 60
        while not cluster.healthy():
            if time.monotonic() > deadline or any(
                    p.poll() is not None for p in cluster.procs):
                sys.stderr.write("etcd_cluster: the members did not become "
                                 "healthy (see %s/m*.log)\n" % d)
                return 1
            time.sleep(0.2)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        stop = asyncio.Event()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        if watch_pid:
            loop.create_task(watch(watch_pid, stop))
        loop.run_until_complete(serve(cluster, stop))
        return 0
    finally:
        cluster.stop_all()


def ctl(d, args):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(os.path.join(d, "ctl.sock"))
    s.sendall((" ".join(args) + "\n").encode())
    out = b""
    while True:
        b = s.recv(4096)
        if not b:
            break
        out += b
    s.close()
    sys.stdout.write(out.decode())
    return 0 if not out.startswith(b"error") else 1


def main(argv):
    if len(argv) >= 3 and argv[1] == "up":
        members, per, watch_pid = 3, 1, 0
        rest = argv[3:]
        while rest:
            if rest[0] == "--members" and len(rest) > 1:
                members = int(rest[1])
            elif rest[0] == "--proxies-per-member" and len(rest) > 1:
                per = int(rest[1])
            elif rest[0] == "--watch-pid" and len(rest) > 1:
                watch_pid = int(rest[1])
            else:
                sys.stderr.write(__doc__)
                return 2
            rest = rest[2:]
        return up(argv[2], members, per, watch_pid)
    if len(argv) >= 4 and argv[1] == "ctl":
        return ctl(argv[2], argv[3:])
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
