"""Helpers of the deploy/ checks (check_manifests.py, webhook_check.py):
Checks, manifest lookups, and the serve container of deploy/deployment.yaml
run on this machine: its
command line with every mounted path moved under a scratch directory, the
listeners moved to ephemeral loopback ports, and the files cert-manager
would mount made here (a CA, the serving certificate for the Certificate's
DNS names, the API server's client certificate). Shared by
check_manifests.py and webhook_check.py."""
import os
import re
import ssl
import subprocess
import urllib.request


def get(d, *path, default=None):
    for k in path:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and k < len(d):
            d = d[k]
        else:
            return default
    return d


def flag(args, name):
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


class Checks:
    """Counts checks; prints "ok: NAME" or "FAIL: NAME: DETAIL"."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok: " + name)
        else:
            self.failed += 1
            print("FAIL: " + name + (": " + detail if detail else ""))
        return ok


def objects(docs, kind):
    return [d for _, d in docs if d.get("kind") == kind]


def certificate(docs, name):
    for d in objects(docs, "Certificate"):
        if get(d, "metadata", "name") == name:
            return d
    return {}


def openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_pki(d, dns_names, client_cns, ips=("127.0.0.1",),
             server_usage="serverAuth"):
    """ca.crt/key; server.crt/key for dns_names and ips (extended key usage
    server_usage); a client certificate <cn>.crt/key per client CN;
    stranger.crt of another CA."""
    os.makedirs(d, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes"]

    def ca(name):
        openssl("req", "-x509", *ec, "-keyout", f"{d}/{name}.key", "-out",
                f"{d}/{name}.crt", "-days", "2", "-subj", f"/CN={name}",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")

    def leaf(name, cn, issuer, ext):
        openssl("req", *ec, "-keyout", f"{d}/{name}.key", "-out",
                f"{d}/{name}.csr", "-subj", f"/CN={cn}")
        with open(f"{d}/{name}.ext", "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", f"{d}/{name}.csr", "-CA",
                f"{d}/{issuer}.crt", "-CAkey", f"{d}/{issuer}.key",
                "-CAcreateserial", "-out", f"{d}/{name}.crt", "-days", "2",
                "-extfile", f"{d}/{name}.ext")

    ca("ca")
    ca("otherca")
    san = ",".join([f"DNS:{n}" for n in dns_names] +
                   [f"IP:{a}" for a in ips])
    leaf("server", dns_names[0] if dns_names else "127.0.0.1", "ca",
         f"subjectAltName={san}\nextendedKeyUsage={server_usage}")
    for cn in client_cns:
        leaf(cn, cn, "ca", "extendedKeyUsage=clientAuth")
    leaf("stranger", "stranger", "otherca", "extendedKeyUsage=clientAuth")


class Serve:
    """serve started from the manifest's command line."""

    def __init__(self, binary, docs, tmp, db=None, tokens=""):
        dep = objects(docs, "Deployment")[0]
        spec = get(dep, "spec", "template", "spec", default={})
        cts = (spec.get("initContainers") or []) + (spec.get("containers")
                                                    or [])
        ct = [x for x in cts if x.get("name") == "serve"][0]
        self.ct = ct
        cmd = ct.get("command") or []
        args = list(cmd[1:] if cmd and cmd[0].endswith("gpuledger")
                    else cmd)
        self.manifest_args = list(args)
        for m in ct.get("volumeMounts") or []:
            local = os.path.join(tmp, "mnt", m["name"])
            os.makedirs(local, exist_ok=True)
            mp = m["mountPath"].rstrip("/")
            args = [local + a[len(mp):] if a == mp or a.startswith(mp + "/")
                    else a for a in args]
        serving = certificate(docs, "gpuledger-serving")
        client = certificate(docs, "gpuledger-apiserver-client")
        self.dns = get(serving, "spec", "dnsNames", default=[])
        self.client_cn = get(client, "spec", "commonName", default="")
        self.pki = os.path.join(tmp, "pki")
        make_pki(self.pki, self.dns, [self.client_cn] if self.client_cn
                 else [])
        self.tls = flag(args, "--tls-cert") is not None
        for f, src in (("--tls-cert", "server.crt"),
                       ("--tls-key", "server.key"),
                       ("--tls-client-ca", "ca.crt")):
            p = flag(args, f)
            if p is not None:
                os.makedirs(os.path.dirname(p), exist_ok=True)
                with open(os.path.join(self.pki, src), "rb") as i, \
                        open(p, "wb") as o:
                    o.write(i.read())
        self.admin = "t0k3n-for-the-deploy-check"
        tf = flag(args, "--token-file")
        if tf:
            with open(tf, "w") as f:
                f.write(f"{self.admin} admin\n{tokens}")
            os.chmod(tf, 0o600)
        self.listen = flag(args, "--listen") or ""
        self.probe_listen = flag(args, "--probe-listen")
        args = ["127.0.0.1:0" if a in (self.listen, self.probe_listen)
                else a for a in args]
        if db is not None:
            args[args.index("--db") + 1] = db
        self.args = args
        self.p = subprocess.Popen([binary] + args, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        self.port = self.probe_port = None
        self.first = self.p.stdout.readline().decode()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", self.first)
        if m:
            self.port = int(m.group(1))
            if self.probe_listen:
                m = re.search(r"probes on 127\.0\.0\.1:(\d+)",
                              self.p.stdout.readline().decode())
                self.probe_port = int(m.group(1)) if m else None

    def context(self, cert=None):
        """A client context trusting the CA, presenting cert (a name in the
        PKI directory) if given; the host name checked is the Service's."""
        ctx = ssl.create_default_context(cafile=f"{self.pki}/ca.crt")
        if cert:
            ctx.load_cert_chain(f"{self.pki}/{cert}.crt",
                                f"{self.pki}/{cert}.key")
        return ctx

    def request(self, path, cert=None, body=None, token=None, probe=False):
        """(status, body bytes) of a request; over TLS unless probe."""
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        if probe or not self.tls:
            port = self.probe_port if probe else self.port
            req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                         data=body, headers=headers)
            return _open(req, None)
        # Connect to 127.0.0.1 but check the name the API server uses.
        import http.client
        host = self.dns[0] if self.dns else "127.0.0.1"
        conn = http.client.HTTPSConnection("127.0.0.1", self.port,
                                           context=self.context(cert),
                                           timeout=10)
        try:
            conn.sock = self.context(cert).wrap_socket(
                __import__("socket").create_connection(
                    ("127.0.0.1", self.port), timeout=10),
                server_hostname=host)
            conn.request("POST" if body is not None else "GET", path,
                         body=body, headers=headers)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def stop(self):
        import signal
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        return self.p.stdout.read().decode()


def _open(req, ctx):
    try:
        r = urllib.request.urlopen(req, timeout=10, context=ctx)
        return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
