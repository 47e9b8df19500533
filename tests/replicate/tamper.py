#!/usr/bin/env python3
"""A primary that lies, for tests/replicate_cli.sh: an HTTP server on
127.0.0.1 (port printed first) whose GET /v1/events answers are those of
the real primary at UPSTREAM, except that the event with seq SEQ is changed
(its "time" moved by one nanosecond) while its "head" is left as the
primary sent it: the head no longer follows from the event.

Usage: tamper.py UPSTREAM CAFILE TOKEN SEQ
"""
import http.server
import json
import re
import ssl
import sys
import urllib.request

upstream, cafile, token, seq = sys.argv[1], sys.argv[2], sys.argv[3], \
    int(sys.argv[4])
ctx = ssl.create_default_context(cafile=cafile)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        req = urllib.request.Request(upstream + self.path,
                                     headers={"Authorization":
                                              "Bearer " + token})
        body = json.load(urllib.request.urlopen(req, context=ctx))
        for ev in body.get("events", []):
            if ev.get("seq") == seq:
                ev["time"] = re.sub(r"(\d)Z$", lambda m: str(
                    (int(m.group(1)) + 1) % 10) + "Z", ev["time"])
        out = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(srv.server_address[1], flush=True)
srv.serve_forever()
