#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A test Kubernetes API server that speaks the real wire protocol.

No kube-apiserver can run on the development machines, so gpuledger's watcher
(ingest/) and the real `kubectl` are tested against this server.  It serves
list, get and watch of the resources gpuledger follows (DESIGN.md section 2),
discovery, bearer-token and client-certificate auth over TLS, pagination,
a global resourceVersion counter with bounded history, bookmarks, and fault
injection.  Python 3 standard library only.

Usage
-----
  fake_apiserver.py --scenario FILE [--cert F --key F | --plain]
                    [--client-ca F [--require-client-cert]] [--token T]
                    [--seed N] [--port-file F] [--host ADDR] [--port N]
                    [--control-port N]

It binds 127.0.0.1 only (the API on --host ADDR when given: a pod network's
address, tests/deploy/kube_cluster.py), on ephemeral ports unless --port/--control-port are
given, prints "listening https://127.0.0.1:PORT control http://127.0.0.1:CPORT"
on stdout and writes the same as shell assignments to --port-file:
    port=PORT
    control_port=CPORT
    url=https://127.0.0.1:PORT
The port file is written (atomically, by rename) only once both ports accept
connections.  SIGTERM or SIGINT end every watch stream cleanly (terminating
chunk), stop both listeners and exit 0.

Scenario format
---------------
A scenario is one JSON object (every key optional):

  {
    "seed": 1,                 # random seed; --seed overrides
    "version": {"gitVersion": "v1.32.4", ...},   # merged into GET /version
    "auth": {"token": "T"},    # require "Authorization: Bearer T"; --token overrides
    "history": 1000,           # watch events retained: a watch or a continue
                               # token may start at most this many changes back
    "served": {"resource.k8s.io": ["v1beta2", "v1beta1"]},
                               # API versions served per group, most preferred
                               # first ([] = the group is absent); objects are
                               # converted to the version asked for (v1beta1
                               # claims carry no "exactly")
    "list_item_typemeta": "real",  # "real": items of built-in lists carry no
                               # kind/apiVersion, as kube-apiserver sends them
                               # (custom resources keep them); "always": all do
    "watch": {
      "chunking": "event",     # "event": one chunk per event (as the real server
                               # flushes); "random": each batch of events is cut
                               # into chunks of 1..max_chunk bytes at random
                               # byte positions (inside JSON and UTF-8 sequences)
      "max_chunk": 16,
      "bookmark_interval": 1.0,  # seconds between BOOKMARKs when asked for
      "too_old": "status",     # watch from a resourceVersion older than the
                               # history: "status" = HTTP 410 Status (Expired);
                               # "event" = HTTP 200 and one ERROR event whose
                               # object is that Status, then the stream ends
      "default_timeout": 1800  # seconds a watch lasts without timeoutSeconds
    },
    "objects": [OBJ, ...],     # initial objects, created in order (rv 1, 2, ...);
                               # may also be {"pods": [OBJ, ...], ...} by resource
    "timeline": [ENTRY, ...],  # changes while the server runs
    "faults": [FAULT, ...]
  }

OBJ is a Kubernetes object with apiVersion, kind and metadata.name (and
metadata.namespace for namespaced kinds).  The server fills in
metadata.resourceVersion, and uid and creationTimestamp when absent
(deterministically, from the seed and the resourceVersion).

ENTRY is a watch event {"type": "ADDED|MODIFIED|DELETED", "object": OBJ} or
{"compact": true} (drop all history) plus exactly one trigger:
  "at": SECONDS           applied that long after start;
  "after_requests": N     applied when request number N (counting every API
                          request from 1) arrives, before it is served.
ADDED of an existing object acts as MODIFIED and MODIFIED of a missing one as
ADDED; DELETED needs only apiVersion, kind and metadata.

FAULT injects failures into matching API requests:
  {"match": {"resource": "pods", "watch": true, "path": "REGEX",
             "namespace": "NS"},     # every key optional; all must hold
   "nth": 1,              # first matching request affected (1-based)
   "times": 1,            # how many matching requests, 0 = every one after nth
   "delay": 0.5,          # slow response: wait this long before answering
   "status": 429,         # answer with this code and a Status object
   "retry_after": 1,      # ... and a Retry-After header / retryAfterSeconds
   "message": "...",
   "disconnect_after_events": N,  # watch: deliver N events, then cut the
                          # connection in the middle of the next one
   "disconnect_after_bytes": N,   # cut after N body bytes (mid-chunk for a
                          # watch, mid-body for a list)
   "end_after_events": N  # watch: end the stream cleanly after N events
  }

A scenario file may instead be NDJSON: each line is a watch event (an initial
object, applied in order), a timeline ENTRY (it has "at" or
"after_requests"), {"fault": FAULT}, or {"config": {...scenario keys...}}.
A recorded gpuledger stream is thus a valid scenario.

Control endpoint (plain HTTP on 127.0.0.1, no auth)
---------------------------------------------------
  POST /_control/apply     body: a watch event, a JSON list of them, or NDJSON;
                           applied in order -> {"resourceVersion", "applied"}
  POST /_control/fault     body: a FAULT or a list -> {"faults": count}
  POST /_control/config    body: scenario keys "watch", "auth", "history",
                           "served",
                           "list_item_typemeta" (merged)
  POST /_control/compact   drop the history: every older resourceVersion and
                           continue token expires
  POST /_control/close-watches   end every open watch (body {"abrupt": true}
                           cuts them without the terminating chunk)
  GET  /_control/state     {"resourceVersion", "oldestResourceVersion",
                           "requests", "activeWatches", "watchesStarted",
                           "bookmarksSent" (periodic BOOKMARKs written),
                           "objects": {resource: count}}
  GET  /_control/requests  the last requests: [{"n", "method", "path",
                           "query", "status", "watch", "events"}]

Protocol notes (what real kube-apiserver does, and this server too)
-------------------------------------------------------------------
* Lists are ordered by etcd key ("ns/name" as a string).  `limit` pages;
  `continue` is opaque (base64 of the list resourceVersion and the next key);
  a continue token older than the history answers 410 Expired.  A page is a
  consistent snapshot at the first page's resourceVersion.
  resourceVersion=0 is served from the "watch cache": current, limit ignored.
  resourceVersion=N&resourceVersionMatch=Exact lists the snapshot at N.
* Watch: resourceVersion unset or "0" starts with synthetic ADDED events for
  the current objects; N replays every change after N.  Objects that move
  in or out of a selector are sent as ADDED / DELETED.  BOOKMARK objects carry
  only kind, apiVersion and metadata.resourceVersion.
  sendInitialEvents=true ends the initial events with a BOOKMARK annotated
  "k8s.io/initial-events-end": "true".
* Errors are Status objects; 429 and 5xx carry Retry-After when configured.
* Only GET is served (the server is read-only for API clients): other
  methods answer 405.  Responses are always JSON; kubectl's request for a
  server-side Table is answered with the plain list, and kubectl falls back
  to its NAME/AGE columns.  /openapi/* answers 404, which kubectl get copes
  with.  Discovery is the legacy (unaggregated) kind, which clients fall
  back to when the aggregated media type is not returned.
* With --client-ca, a client certificate the handshake verified
  authenticates like the token (kube-apiserver's x509 authenticator); a
  certificate from another CA fails the handshake.

Files: scenarios/small.json (the integration test's cluster: tenant
namespaces, pods with and without GPUs, nodes, the gpu-classes ConfigMap,
a Tenant, a VMInstance, KubernetesNodes and a ResourceClaim) and
scenarios/faults.ndjson (the NDJSON form); probe.py is a raw HTTP/1.1
client that shows chunk framing; tests/apiserver_cli.sh drives them all.

Determinism: all randomness (chunk cut positions) comes from a generator
seeded with (seed, request number), so a client issuing the same requests in
the same order sees the same bytes.
"""

import argparse
import base64
import bisect
import copy
import datetime
import hashlib
import json
import os
import random
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time
import traceback
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

# Bounds: nothing a client or scenario sends may grow without limit.
MAX_BODY_BYTES = 16 << 20
MAX_LOG_ENTRIES = 2000
MAX_EVENTS_PER_BATCH = 10000
MAX_HISTORY = 1000000
MAX_TIMEOUT_SECONDS = 24 * 3600
CLIENT_POLL_SECONDS = 0.5
BASE_TIME = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)


class Resource:
    """One served resource: where it lives and what it is called."""

    def __init__(self, group, version, plural, kind, namespaced,
                 short=(), builtin=True, fields=()):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.namespaced = namespaced
        self.short = list(short)
        self.builtin = builtin
        # Field selectors the real server accepts besides metadata.*.
        self.fields = ("metadata.name", "metadata.namespace") + tuple(fields)

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self):
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def discovery(self):
        return {"name": self.plural, "singularName": self.kind.lower(),
                "namespaced": self.namespaced, "kind": self.kind,
                "verbs": ["get", "list", "watch"],
                **({"shortNames": self.short} if self.short else {})}


RESOURCES = (
    Resource("", "v1", "namespaces", "Namespace", False, ["ns"],
             fields=("status.phase",)),
    Resource("", "v1", "pods", "Pod", True, ["po"],
             fields=("spec.nodeName", "spec.restartPolicy",
                     "spec.schedulerName", "spec.serviceAccountName",
                     "status.phase", "status.podIP",
                     "status.nominatedNodeName")),
    Resource("", "v1", "nodes", "Node", False, ["no"],
             fields=("spec.unschedulable",)),
    Resource("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    Resource("apps.cozystack.io", "v1alpha1", "tenants", "Tenant", True,
             builtin=False),
    Resource("apps.cozystack.io", "v1alpha1", "vminstances", "VMInstance",
             True, builtin=False),
    Resource("apps.cozystack.io", "v1alpha1", "kubernetesnodeses",
             "KubernetesNodes", True, builtin=False),
    Resource("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim",
             True),
)
BY_KEY = {r.key: r for r in RESOURCES}
BY_TYPE = {(r.api_version, r.kind): r for r in RESOURCES}

STATUS_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden",
    404: "NotFound", 405: "MethodNotAllowed", 406: "NotAcceptable",
    409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
    422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
    503: "ServiceUnavailable", 504: "Timeout",
}

DEFAULT_WATCH = {"chunking": "event", "max_chunk": 16,
                 "bookmark_interval": 1.0, "too_old": "status",
                 "default_timeout": 1800}


def jdump(obj):
    """Compact JSON with a trailing newline, as Go's json.Encoder writes."""
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            + "\n").encode()


def status_obj(code, message, reason=None, details=None):
    st = {"kind": "Status", "apiVersion": "v1", "metadata": {},
          "status": "Failure", "message": message,
          "reason": reason or STATUS_REASONS.get(code, "Unknown"),
          "code": code}
    if details:
        st["details"] = details
    return st


class ApiError(Exception):
    """An error answered to the client as a Status object."""

    def __init__(self, code, message, reason=None, details=None,
                 headers=None):
        super().__init__(message)
        self.status = status_obj(code, message, reason, details)
        self.code = code
        self.headers = headers or {}


class Cut(Exception):
    """The connection was cut on purpose (fault injection)."""


def parse_bool(s):
    """strconv.ParseBool, which the real server uses for query flags."""
    if s in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if s in ("0", "f", "F", "false", "FALSE", "False", ""):
        return False
    raise ApiError(400, f"invalid boolean value {s!r}")


def timestamp(rv):
    """A deterministic creationTimestamp: no wall clock enters the data."""
    t = BASE_TIME + datetime.timedelta(seconds=rv)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def obj_key(obj):
    md = obj["metadata"]
    ns = md.get("namespace")
    return f"{ns}/{md['name']}" if ns else md["name"]


# ---------------------------------------------------------------- selectors

def field_value(obj, path):
    """The string a field selector compares, "" when absent."""
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(text, res):
    """Field selector terms: [(path, op, value)], op in {'=', '!='}."""
    terms = []
    for term in filter(None, text.split(",")):
        m = re.fullmatch(r"([^=!]+)(==|=|!=)(.*)", term)
        if not m:
            raise ApiError(400, f"invalid selector: '{text}'; can't "
                           f"understand '{term}'")
        path, op, value = m.group(1), m.group(2), m.group(3)
        if path not in res.fields:
            raise ApiError(400, f'field label not supported: {path}')
        terms.append((path, "!=" if op == "!=" else "=", value))
    return terms


def split_label_terms(text):
    """Split on commas outside parentheses ("k in (a,b)" is one term)."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    terms.append(cur)
    return [t.strip() for t in terms if t.strip()]


LABEL_FORMS = (
    (re.compile(r"(\S+?)\s*(==|=|!=)\s*(\S*)"), None),
    (re.compile(r"(\S+)\s+(in|notin)\s*\(([^)]*)\)"), None),
    (re.compile(r"!(\S+)"), "!"),
    (re.compile(r"(\S+)"), "exists"),
)


def parse_label_selector(text):
    """Label selector terms: [(key, op, set of values)]."""
    terms = []
    for term in split_label_terms(text):
        for rx, op in LABEL_FORMS:
            m = rx.fullmatch(term)
            if not m:
                continue
            if op:
                terms.append((m.group(1), op, set()))
            else:
                vals = {v.strip() for v in m.group(3).split(",")}
                terms.append((m.group(1), m.group(2), vals))
            break
        else:
            raise ApiError(400, f"unable to parse requirement: {term!r}")
    return terms


def label_term_ok(labels, key, op, vals):
    has = key in labels
    val = labels.get(key)
    if op in ("=", "==", "in"):
        return has and val in vals
    if op in ("!=", "notin"):
        return not has or val not in vals
    if op == "!":
        return not has
    return has


class Selector:
    """Namespace, field and label filtering of one request."""

    def __init__(self, res, namespace, params):
        self.res = res
        self.namespace = namespace
        self.fields = parse_field_selector(params.get("fieldSelector", ""),
                                           res)
        self.labels = parse_label_selector(params.get("labelSelector", ""))

    def matches(self, obj):
        md = obj.get("metadata", {})
        if self.namespace and md.get("namespace") != self.namespace:
            return False
        for path, op, value in self.fields:
            if (field_value(obj, path) == value) != (op == "="):
                return False
        labels = md.get("labels") or {}
        return all(label_term_ok(labels, k, op, v)
                   for k, op, v in self.labels)


# -------------------------------------------------------------------- store

class Event:
    """One change: the object after it (last state for DELETED) and before."""
    __slots__ = ("rv", "res", "type", "obj", "prev")

    def __init__(self, rv, res, etype, obj, prev):
        self.rv, self.res, self.type = rv, res, etype
        self.obj, self.prev = obj, prev


class Store:
    """The objects, the global resourceVersion and the retained history.

    Stored objects are never mutated after insertion, so they may be shared
    with readers that serialize them outside the lock.  One condition
    variable wakes every watcher on any change.
    """

    def __init__(self, seed, retention):
        self.cond = threading.Condition()
        self.seed = seed
        self.rv = 0
        self.objects = {r.key: {} for r in RESOURCES}
        self.history = []
        self.history_rvs = []
        self.oldest_rv = 0
        self.retention = retention
        self.closing = False
        self.watch_epoch = 0
        self.abrupt_epoch = 0

    def _normalize(self, obj):
        if not isinstance(obj, dict):
            raise ApiError(400, "object is not a JSON object")
        res = BY_TYPE.get((obj.get("apiVersion"), obj.get("kind")))
        if res is None:
            raise ApiError(400, f"no resource for apiVersion "
                           f"{obj.get('apiVersion')!r} kind "
                           f"{obj.get('kind')!r}")
        md = obj.get("metadata")
        if not isinstance(md, dict) or not isinstance(md.get("name"), str) \
                or not md["name"]:
            raise ApiError(400, "metadata.name is required")
        ns = md.get("namespace")
        if res.namespaced and (not isinstance(ns, str) or not ns):
            raise ApiError(400, f"{res.kind} {md['name']}: "
                           "metadata.namespace is required")
        obj = copy.deepcopy(obj)
        if not res.namespaced:
            obj["metadata"].pop("namespace", None)
        return res, obj

    def _uid(self, res, key, rv):
        h = hashlib.sha256(f"{self.seed}/{res.key}/{key}/{rv}".encode())
        return str(uuid.UUID(bytes=h.digest()[:16], version=4))

    def apply(self, etype, obj):
        """Apply one change; returns its resourceVersion.  Caller holds no
        lock."""
        if etype not in ("ADDED", "MODIFIED", "DELETED"):
            raise ApiError(400, f"unknown event type {etype!r}")
        res, obj = self._normalize(obj)
        key = obj_key(obj)
        with self.cond:
            objs = self.objects[res.key]
            prev = objs.get(key)
            if etype == "DELETED" and prev is None:
                raise ApiError(404, f'{res.plural} "{key}" not found')
            self.rv += 1
            if etype == "DELETED":
                new = copy.deepcopy(prev)
                del objs[key]
            else:
                new = obj
                etype = "ADDED" if prev is None else "MODIFIED"
                md = new["metadata"]
                src = prev["metadata"] if prev else {}
                md.setdefault("uid", src.get("uid")
                              or self._uid(res, key, self.rv))
                md.setdefault("creationTimestamp",
                              src.get("creationTimestamp")
                              or timestamp(self.rv))
                objs[key] = new
            new["metadata"]["resourceVersion"] = str(self.rv)
            self._record(Event(self.rv, res, etype, new, prev))
            self.cond.notify_all()
            return self.rv

    def _record(self, ev):
        self.history.append(ev)
        self.history_rvs.append(ev.rv)
        excess = len(self.history) - self.retention
        if excess > 0:
            del self.history[:excess]
            del self.history_rvs[:excess]
        self.oldest_rv = (self.history[0].rv - 1 if self.history
                          else self.rv)

    def compact(self):
        with self.cond:
            self.history.clear()
            self.history_rvs.clear()
            self.oldest_rv = self.rv
            return self.rv

    def set_retention(self, n):
        with self.cond:
            self.retention = n
            excess = len(self.history) - n
            if excess > 0:
                del self.history[:excess]
                del self.history_rvs[:excess]
                self.oldest_rv = (self.history[0].rv - 1 if self.history
                                  else self.rv)

    def snapshot(self, res, at_rv):
        """The objects of res at at_rv, sorted by key.  Caller holds the
        lock and checked at_rv >= oldest_rv."""
        objs = dict(self.objects[res.key])
        i = bisect.bisect_right(self.history_rvs, at_rv)
        for ev in reversed(self.history[i:]):
            if ev.res is not res:
                continue
            k = obj_key(ev.obj)
            if ev.prev is None:
                objs.pop(k, None)
            else:
                objs[k] = ev.prev
        return [objs[k] for k in sorted(objs)]

    def events_after(self, rv):
        """Retained events with resourceVersion > rv.  Caller holds the
        lock."""
        return self.history[bisect.bisect_right(self.history_rvs, rv):]

    def counts(self):
        with self.cond:
            return {k: len(v) for k, v in self.objects.items()}


# ------------------------------------------------------------------- faults

FAULT_NUMBERS = ("nth", "times", "delay", "status", "retry_after",
                 "disconnect_after_events", "disconnect_after_bytes",
                 "end_after_events")


class Faults:
    """Fault rules and their per-rule counts of matching requests."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, fault):
        if not isinstance(fault, dict):
            raise ApiError(400, "a fault is a JSON object")
        match = fault.get("match", {})
        if not isinstance(match, dict):
            raise ApiError(400, "fault match is a JSON object")
        if "path" in match:
            try:
                re.compile(match["path"])
            except (re.error, TypeError) as e:
                raise ApiError(400, f"fault path: {e}")
        for k in set(fault) - {"match", "message"}:
            if k not in FAULT_NUMBERS:
                raise ApiError(400, f"unknown fault key {k!r}")
            v = fault[k]
            if not isinstance(v, (int, float)) or isinstance(v, bool) \
                    or v < 0:
                raise ApiError(400, f"fault {k} must be a number >= 0")
        if "status" in fault and int(fault["status"]) not in STATUS_REASONS:
            raise ApiError(400, f"fault status one of "
                           f"{sorted(STATUS_REASONS)}")
        with self.lock:
            self.rules.append({"fault": fault, "seen": 0, "used": 0})
            return len(self.rules)

    @staticmethod
    def _matches(match, req):
        if "resource" in match and match["resource"] not in (
                req["resource"], req["plural"]):
            return False
        if "watch" in match and bool(match["watch"]) != req["watch"]:
            return False
        if "namespace" in match and match["namespace"] != req["namespace"]:
            return False
        if "path" in match and not re.search(match["path"], req["path"]):
            return False
        return True

    def pick(self, req):
        """The fault for this request, if any; every rule counts it."""
        chosen = None
        with self.lock:
            for rule in self.rules:
                f = rule["fault"]
                if not self._matches(f.get("match", {}), req):
                    continue
                rule["seen"] += 1
                times = int(f.get("times", 1))
                if rule["seen"] < int(f.get("nth", 1)):
                    continue
                if times and rule["used"] >= times:
                    continue
                if chosen is None:
                    rule["used"] += 1
                    chosen = f
        return chosen


# ---------------------------------------------------------------- scenario

def entry_trigger(entry):
    """Validate one timeline entry; returns ("at"|"after_requests", value)."""
    if not isinstance(entry, dict):
        raise ValueError("a timeline entry is a JSON object")
    triggers = [k for k in ("at", "after_requests") if k in entry]
    if len(triggers) != 1:
        raise ValueError("a timeline entry has exactly one of "
                         "'at' and 'after_requests'")
    value = entry[triggers[0]]
    if not isinstance(value, (int, float)) or isinstance(value, bool) \
            or value < 0:
        raise ValueError(f"{triggers[0]} must be a number >= 0")
    if not entry.get("compact"):
        check_event(entry)
    return triggers[0], value


def check_event(ev):
    if not isinstance(ev, dict) or ev.get("type") not in (
            "ADDED", "MODIFIED", "DELETED"):
        raise ValueError("an event is {\"type\": ADDED|MODIFIED|DELETED, "
                         "\"object\": {...}}")
    if not isinstance(ev.get("object"), dict):
        raise ValueError("an event needs an object")


SCENARIO_KEYS = ("seed", "version", "auth", "history", "list_item_typemeta",
                 "served",
                 "watch", "objects", "timeline", "faults")


def load_ndjson(text):
    """An NDJSON scenario: events, timeline entries, faults and config."""
    sc = {"objects": [], "timeline": [], "faults": []}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise ValueError(f"line {lineno}: {e}")
        if not isinstance(item, dict):
            raise ValueError(f"line {lineno}: not a JSON object")
        if "config" in item:
            sc.update(item["config"])
        elif "fault" in item:
            sc["faults"].append(item["fault"])
        elif "at" in item or "after_requests" in item:
            sc["timeline"].append(item)
        elif item.get("type") == "BOOKMARK":
            continue
        else:
            check_event(item)
            sc["objects"].append(item)
    return sc


def initial_events(objects):
    """Scenario "objects" as a list of watch events, in creation order."""
    if isinstance(objects, dict):
        out = []
        for name, objs in objects.items():
            if not isinstance(objs, list):
                raise ValueError(f"objects.{name} is not a list")
            out.extend({"type": "ADDED", "object": o} for o in objs)
        return out
    if not isinstance(objects, list):
        raise ValueError("objects is neither a list nor a map")
    return [o if "object" in o and "type" in o else
            {"type": "ADDED", "object": o} for o in objects]


def load_scenario(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        sc = json.loads(text) if text.strip() else {}
    except ValueError:
        sc = load_ndjson(text)
    if not isinstance(sc, dict):
        raise ValueError("a scenario is a JSON object")
    unknown = set(sc) - set(SCENARIO_KEYS)
    if unknown:
        raise ValueError(f"unknown scenario keys: {sorted(unknown)}")
    return sc


# --------------------------------------------------------------------- app

class App:
    """Everything the two servers share: store, faults, settings, counters."""

    def __init__(self, scenario, seed, token):
        self.lock = threading.Lock()
        self.apply_lock = threading.Lock()
        self.seed = seed
        self.store = Store(seed, 1000)
        self.faults = Faults()
        self.watch = dict(DEFAULT_WATCH)
        self.token = None
        self.typemeta = "real"
        self.served = default_served()
        self.version = {
            "major": "1", "minor": "32", "gitVersion": "v1.32.4",
            "gitCommit": "0" * 40, "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.8",
            "compiler": "gc", "platform": "linux/amd64"}
        self.configure(scenario)
        if token is not None:
            self.token = token
        self.requests = 0
        self.log = []
        self.active_watches = 0
        self.watches_started = 0
        self.bookmarks_sent = 0
        self.address = ""
        self.after_requests = []
        self.at = []
        self._load(scenario)

    def configure(self, cfg):
        """Merge settings (scenario or POST /_control/config)."""
        if "watch" in cfg:
            w = cfg["watch"]
            if not isinstance(w, dict) or set(w) - set(DEFAULT_WATCH):
                raise ApiError(400, f"watch keys: {sorted(DEFAULT_WATCH)}")
            if w.get("chunking", "event") not in ("event", "random") or \
                    w.get("too_old", "status") not in ("status", "event"):
                raise ApiError(400, "chunking is event|random, "
                               "too_old is status|event")
            if int(w.get("max_chunk", 1)) < 1 or \
                    float(w.get("bookmark_interval", 1)) <= 0:
                raise ApiError(400, "max_chunk >= 1, bookmark_interval > 0")
            with self.lock:
                self.watch.update(w)
        if "auth" in cfg:
            auth = cfg["auth"] or {}
            if not isinstance(auth, dict) or not isinstance(
                    auth.get("token", ""), (str, type(None))):
                raise ApiError(400, "auth is {\"token\": STRING}")
            self.token = auth.get("token")
        if "list_item_typemeta" in cfg:
            if cfg["list_item_typemeta"] not in ("real", "always"):
                raise ApiError(400, "list_item_typemeta is real|always")
            self.typemeta = cfg["list_item_typemeta"]
        if "history" in cfg:
            history = cfg["history"]
            if not isinstance(history, int) or isinstance(history, bool) \
                    or not 0 <= history <= MAX_HISTORY:
                raise ApiError(400, f"history is an integer in "
                               f"0..{MAX_HISTORY}")
            self.store.set_retention(history)
        if "served" in cfg:
            served = cfg["served"]
            if not isinstance(served, dict) or any(
                    g not in SERVABLE or not isinstance(vs, list) or
                    any(v not in SERVABLE[g] for v in vs)
                    for g, vs in served.items()):
                raise ApiError(400, "served is {group: [versions]} with "
                               f"groups and versions of {SERVABLE}")
            with self.lock:
                self.served.update({g: list(vs) for g, vs in
                                    served.items()})
        if "version" in cfg:
            if not isinstance(cfg["version"], dict):
                raise ApiError(400, "version is a JSON object")
            self.version.update(cfg["version"])

    def _load(self, sc):
        for ev in initial_events(sc.get("objects", [])):
            check_event(ev)
            self.store.apply(ev["type"], ev["object"])
        for entry in sc.get("timeline", []):
            trigger, value = entry_trigger(entry)
            # Validate the object now, so a typo fails at start.
            if not entry.get("compact"):
                self.store._normalize(entry["object"])
            getattr(self, trigger).append((value, len(self.at) +
                                           len(self.after_requests), entry))
        self.after_requests.sort(key=lambda t: t[:2])
        self.at.sort(key=lambda t: t[:2])
        for fault in sc.get("faults", []):
            self.faults.add(fault)

    def apply_entry(self, entry):
        """Apply one timeline entry or control event; returns the rv."""
        with self.apply_lock:
            if entry.get("compact"):
                return self.store.compact()
            check_event(entry)
            return self.store.apply(entry["type"], entry["object"])

    def run_entry(self, entry):
        try:
            self.apply_entry(entry)
        except (ApiError, ValueError) as e:
            print(f"fake_apiserver: timeline entry failed: {e}",
                  file=sys.stderr, flush=True)

    def begin_request(self):
        """Count an API request and apply the entries due at it."""
        with self.lock:
            self.requests += 1
            n = self.requests
            due = []
            while self.after_requests and self.after_requests[0][0] <= n:
                due.append(self.after_requests.pop(0)[2])
        for entry in due:
            self.run_entry(entry)
        return n

    def run_timeline(self, start):
        """Thread body: apply the "at" entries at their times."""
        for at, _, entry in self.at:
            with self.store.cond:
                while not self.store.closing:
                    left = start + at - time.monotonic()
                    if left <= 0:
                        break
                    self.store.cond.wait(left)
                if self.store.closing:
                    return
            self.run_entry(entry)

    def record(self, entry):
        with self.lock:
            self.log.append(entry)
            if len(self.log) > MAX_LOG_ENTRIES:
                del self.log[:len(self.log) - MAX_LOG_ENTRIES]

    def watch_started(self, delta):
        with self.lock:
            self.active_watches += delta
            if delta > 0:
                self.watches_started += 1

    def bookmark_sent(self):
        with self.lock:
            self.bookmarks_sent += 1

    def state(self):
        st = self.store
        with st.cond:
            rv, oldest = st.rv, st.oldest_rv
        counts = st.counts()
        with self.lock:
            return {"resourceVersion": str(rv),
                    "oldestResourceVersion": str(oldest),
                    "requests": self.requests,
                    "activeWatches": self.active_watches,
                    "watchesStarted": self.watches_started,
                    "bookmarksSent": self.bookmarks_sent,
                    "objects": counts}


# ------------------------------------------------------------- HTTP bodies

class ChunkWriter:
    """Writes a chunked body, optionally cut at random byte positions, and
    cuts the connection after a byte budget when a fault asks for it."""

    def __init__(self, wfile, rng, chunking, max_chunk):
        self.wfile = wfile
        self.rng = rng
        self.random = chunking == "random"
        self.max_chunk = max_chunk
        self.sent = 0
        self.cut_at = None

    def _chunk(self, data):
        if self.cut_at is not None and self.sent + len(data) > self.cut_at:
            keep = self.cut_at - self.sent
            self.wfile.write(b"%x\r\n" % len(data) + data[:keep])
            self.wfile.flush()
            raise Cut()
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        self.sent += len(data)

    def write(self, pieces):
        """Write pieces (bytes objects): one chunk each, or in random mode
        their concatenation cut at random positions."""
        if self.random:
            data = b"".join(pieces)
            i = 0
            while i < len(data):
                n = self.rng.randint(1, self.max_chunk)
                self._chunk(data[i:i + n])
                i += n
        else:
            for p in pieces:
                if p:
                    self._chunk(p)
        self.wfile.flush()

    def end(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def encode_continue(rv, start):
    tok = {"v": "meta.k8s.io/v1", "rv": rv, "start": start}
    return base64.urlsafe_b64encode(json.dumps(
        tok, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_continue(text):
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        tok = json.loads(raw)
        if tok.get("v") != "meta.k8s.io/v1" or not isinstance(
                tok.get("rv"), int) or not isinstance(tok.get("start"), str):
            raise ValueError("bad fields")
        return tok["rv"], tok["start"]
    except (ValueError, TypeError, AttributeError) as e:
        raise ApiError(400, f"continue key is not valid: {e}")


def watch_event(ev, sel):
    """The (type, object) a watcher with selector sel sees for ev, or None.
    An object that leaves the selector is DELETED with its previous state,
    one that enters it is ADDED, as the real watch cache does."""
    if ev.type == "ADDED":
        return ("ADDED", ev.obj) if sel.matches(ev.obj) else None
    if ev.type == "DELETED":
        return ("DELETED", ev.obj) if sel.matches(ev.obj) else None
    now, before = sel.matches(ev.obj), sel.matches(ev.prev)
    if now:
        return ("MODIFIED" if before else "ADDED", ev.obj)
    if before:
        gone = copy.deepcopy(ev.prev)
        gone["metadata"]["resourceVersion"] = str(ev.rv)
        return ("DELETED", gone)
    return None


def int_param(params, name, default, lo=0, hi=None):
    text = params.get(name)
    if text is None or text == "":
        return default
    try:
        v = int(text)
    except ValueError:
        raise ApiError(400, f"{name}: invalid value {text!r}")
    if v < lo or (hi is not None and v > hi):
        raise ApiError(400, f"{name}: {v} out of range")
    return v


# ------------------------------------------------------------------ routing

# The versions each API group can be served in ("served" in a scenario or
# POST /_control/config picks a subset, most preferred first; [] removes the
# group, as on a cluster without Cozystack's CRDs).  Objects are stored in
# their resource's version and converted when served in another, as the
# real server converts from its storage version: resource.k8s.io/v1beta1
# keeps a DeviceRequest's deviceClassName, allocationMode and count at its
# top, where v1 and v1beta2 hold them under "exactly".
SERVABLE = {"apps.cozystack.io": ["v1alpha1"],
            "resource.k8s.io": ["v1", "v1beta2", "v1beta1"]}


def default_served():
    out = {}
    for r in RESOURCES:
        if r.group and r.version not in out.setdefault(r.group, []):
            out[r.group].append(r.version)
    return out


def served_versions(app, res):
    return app.served.get(res.group, [res.version]) if res.group \
        else [res.version]


def present(obj, res, version):
    """obj (stored in res.version) as served in version."""
    if version == res.version or not isinstance(obj, dict):
        return obj
    out = copy.deepcopy(obj)
    if "apiVersion" in out:
        out["apiVersion"] = f"{res.group}/{version}"
    if res.kind == "ResourceClaim" and version == "v1beta1":
        reqs = ((out.get("spec") or {}).get("devices") or {}).get(
            "requests") or []
        for req in reqs:
            if isinstance(req, dict) and isinstance(req.get("exactly"),
                                                    dict):
                req.update(req.pop("exactly"))
    return out


def groups(app):
    """API groups other than the core group that are served, in first-seen
    order, each with its served versions."""
    return {g: vs for g, vs in app.served.items() if vs}


def group_doc(name, versions):
    vs = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": vs, "preferredVersion": vs[0]}


def resource_list(app, group, version):
    gv = f"{group}/{version}" if group else version
    res = [r.discovery() for r in RESOURCES
           if r.group == group and version in served_versions(app, r)]
    if not res:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": gv, "resources": res}


class Route:
    """What a request path names: a discovery document or a resource."""

    def __init__(self, doc=None, res=None, namespace=None, name=None,
                 version=None):
        self.doc = doc
        self.res = res
        self.version = version
        self.namespace = namespace
        self.name = name


def route_discovery(app, segs):
    if segs == ["version"]:
        return Route(doc=app.version)
    if segs == ["api"]:
        return Route(doc={"kind": "APIVersions", "versions": ["v1"],
                          "serverAddressByClientCIDRs": [{
                              "clientCIDR": "0.0.0.0/0",
                              "serverAddress": app.address}]})
    if segs == ["apis"]:
        return Route(doc={"kind": "APIGroupList", "apiVersion": "v1",
                          "groups": [group_doc(g, v)
                                     for g, v in groups(app).items()]})
    if len(segs) == 2 and segs[0] == "apis" and segs[1] in groups(app):
        doc = group_doc(segs[1], groups(app)[segs[1]])
        return Route(doc={"kind": "APIGroup", "apiVersion": "v1", **doc})
    return None


def route(app, path):
    """Map a path to a Route, or raise 404 as the real server does."""
    segs = [s for s in path.split("/") if s]
    found = route_discovery(app, segs) if segs else None
    if found:
        return found
    if len(segs) >= 2 and segs[0] == "api":
        group, version, rest = "", segs[1], segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        group, version, rest = segs[1], segs[2], segs[3:]
    else:
        raise ApiError(404, "the server could not find the requested "
                       "resource")
    if not rest:
        doc = resource_list(app, group, version)
        if doc is None:
            raise ApiError(404, "the server could not find the requested "
                           "resource")
        return Route(doc=doc)
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    res = BY_KEY.get(f"{rest[0]}.{group}" if group else rest[0])
    if res is None or version not in served_versions(app, res) or \
            len(rest) > 2 or \
            (ns is not None and not res.namespaced):
        raise ApiError(404, "the server could not find the requested "
                       "resource")
    name = rest[1] if len(rest) == 2 else None
    if name is not None and res.namespaced and ns is None:
        raise ApiError(404, "the server could not find the requested "
                       "resource")
    return Route(res=res, namespace=ns, name=name, version=version)


# -------------------------------------------------------------- API server

class ApiHandler(BaseHTTPRequestHandler):
    """The Kubernetes API: discovery, get, list and watch, GET only."""

    protocol_version = "HTTP/1.1"
    server_version = "fake-apiserver"
    sys_version = ""
    # Idle keep-alive connections are closed after this many seconds.
    timeout = 120

    def log_message(self, fmt, *args):
        pass

    def version_string(self):
        return self.server_version

    def do_GET(self):
        self._serve()

    def _refuse(self):
        """Writes are not served; the body is not read, so close."""
        self.close_connection = True
        self._serve(refuse=True)

    do_POST = do_PUT = do_PATCH = do_DELETE = _refuse

    def _serve(self, refuse=False):
        app = self.server.app
        n = app.begin_request()
        url = urlsplit(self.path)
        self.entry = {"n": n, "method": self.command, "path": url.path,
                      "query": url.query, "status": 0, "watch": False,
                      "events": 0}
        self.rng = random.Random(f"{app.seed}:{n}")
        self.fault = {}
        try:
            if refuse:
                raise ApiError(405, f"{self.command} is not supported by "
                               "this test server")
            self._dispatch(app, url)
        except ApiError as e:
            self.send_json(e.code, e.status, e.headers)
        except Cut:
            self.entry["cut"] = True
            self.cut()
        except (OSError, ssl.SSLError):
            self.close_connection = True
        except Exception as e:  # noqa: BLE001 - a bug must not go unseen
            traceback.print_exc(file=sys.stderr)
            self.close_connection = True
            try:
                self.send_json(500, status_obj(500, f"test server bug: "
                                                    f"{e!r}"))
            except (OSError, ValueError):
                pass
        finally:
            app.record(self.entry)

    def cut(self):
        """Drop the connection without any further byte (no terminating
        chunk, no TLS close_notify)."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def authorized(self, app):
        if not app.token:
            return True
        auth = self.headers.get("Authorization", "")
        if auth == f"Bearer {app.token}":
            return True
        # A client certificate the handshake verified against --client-ca
        # authenticates as well, as with kube-apiserver's x509 authenticator.
        getpeercert = getattr(self.connection, "getpeercert", None)
        return bool(getpeercert and getpeercert())

    def _dispatch(self, app, url):
        if not self.authorized(app):
            raise ApiError(401, "Unauthorized")
        params = {k: v[0] for k, v in
                  parse_qs(url.query, keep_blank_values=True).items()}
        rt = route(app, url.path)
        watch = parse_bool(params.get("watch", "false"))
        self.entry["watch"] = watch
        fault = app.faults.pick({
            "path": url.path, "resource": rt.res.key if rt.res else "",
            "plural": rt.res.plural if rt.res else "", "watch": watch,
            "namespace": rt.namespace})
        self.fault = fault or {}
        if fault:
            self.entry["fault"] = True
            self.apply_fault(fault)
        if rt.doc is not None:
            self.send_json(200, rt.doc)
        elif rt.name is not None:
            self.serve_get(app, rt)
        elif watch:
            self.serve_watch(app, rt, params)
        else:
            self.serve_list(app, rt, params)

    def apply_fault(self, fault):
        delay = float(fault.get("delay", 0))
        if delay > 0:
            time.sleep(min(delay, 600))
        code = fault.get("status")
        if code:
            headers = {}
            details = None
            if "retry_after" in fault:
                headers["Retry-After"] = str(int(fault["retry_after"]))
                details = {"retryAfterSeconds": int(fault["retry_after"])}
            msg = fault.get("message") or {
                429: "Too many requests, please try again later.",
            }.get(int(code), "injected fault")
            raise ApiError(int(code), msg, details=details, headers=headers)

    def send_json(self, code, obj, headers=None):
        body = jdump(obj)
        self.entry["status"] = code
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.UUID(int=self.entry["n"])))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut_at = self.fault.get("disconnect_after_bytes")
        if cut_at is not None and int(cut_at) < len(body):
            self.wfile.write(body[:int(cut_at)])
            self.wfile.flush()
            raise Cut()
        self.wfile.write(body)
        self.wfile.flush()

    def serve_get(self, app, rt):
        key = f"{rt.namespace}/{rt.name}" if rt.namespace else rt.name
        with app.store.cond:
            obj = app.store.objects[rt.res.key].get(key)
        if obj is None:
            raise ApiError(404, f'{rt.res.plural} "{rt.name}" not found',
                           details={"name": rt.name,
                                    "group": rt.res.group,
                                    "kind": rt.res.plural})
        self.send_json(200, present(obj, rt.res, rt.version))

    # ------------------------------------------------------------- lists

    def list_items(self, store, rt, params):
        """(resourceVersion, sorted items, start key, limit) of a list,
        following the real server's resourceVersion semantics.  Caller
        holds the store lock."""
        rv = params.get("resourceVersion", "")
        match = params.get("resourceVersionMatch", "")
        cont = params.get("continue", "")
        limit = int_param(params, "limit", 0)
        if cont and rv:
            raise ApiError(400, "specifying resource version is not "
                           "allowed when using continue")
        if match and not rv:
            raise ApiError(400, "resourceVersionMatch is forbidden unless "
                           "resourceVersion is provided")
        if match not in ("", "Exact", "NotOlderThan"):
            raise ApiError(400, f"resourceVersionMatch: unsupported value "
                           f"{match!r}")
        if cont:
            at, start = decode_continue(cont)
            if at < store.oldest_rv:
                raise ApiError(410, "The provided continue parameter is too "
                               "old to display a consistent list result. "
                               "You can start a new list without the "
                               "continue parameter.")
            return at, store.snapshot(rt.res, min(at, store.rv)), start, limit
        at = store.rv
        if rv:
            want = int_param(params, "resourceVersion", 0)
            if want > store.rv:
                store.cond.wait_for(lambda: store.rv >= want, 3.0)
                if want > store.rv:
                    raise ApiError(504, f"Too large resource version: "
                                   f"{want}, current: {store.rv}",
                                   details={"causes": [{
                                       "reason": "ResourceVersionTooLarge",
                                       "message": "Too large resource "
                                                  "version"}],
                                       "retryAfterSeconds": 1})
            if match == "Exact":
                if want < store.oldest_rv:
                    raise ApiError(410, f"too old resource version: {want} "
                                   f"({store.oldest_rv + 1})")
                at = want
            elif want == 0 and not match:
                # Served from the watch cache, which ignores limit.
                limit = 0
        return at, store.snapshot(rt.res, at), "", limit

    def serve_list(self, app, rt, params):
        sel = Selector(rt.res, rt.namespace, params)
        store = app.store
        with store.cond:
            at, items, start, limit = self.list_items(store, rt, params)
        picked = [o for o in items if obj_key(o) >= start and sel.matches(o)]
        page = picked[:limit] if limit else picked
        md = {"resourceVersion": str(at)}
        if limit and len(picked) > limit:
            md["continue"] = encode_continue(at, obj_key(page[-1]) + "\0")
            if not sel.fields and not sel.labels:
                md["remainingItemCount"] = len(picked) - limit
        page = [present(o, rt.res, rt.version) for o in page]
        if rt.res.builtin and app.typemeta == "real":
            page = [{k: v for k, v in o.items()
                     if k not in ("kind", "apiVersion")} for o in page]
        self.entry["events"] = len(page)
        self.send_json(200, {"kind": f"{rt.res.kind}List",
                             "apiVersion": present(
                                 {"apiVersion": rt.res.api_version},
                                 rt.res, rt.version)["apiVersion"],
                             "metadata": md, "items": page})

    # ------------------------------------------------------------- watch

    def watch_start(self, store, rt, sel, params):
        """(initial events, position, too-old message) under the lock."""
        rv = params.get("resourceVersion", "")
        initial = params.get("sendInitialEvents")
        initial = None if initial is None else parse_bool(initial)
        if initial and params.get("resourceVersionMatch") != "NotOlderThan":
            raise ApiError(400, "sendInitialEvents requires "
                           "resourceVersionMatch=NotOlderThan")
        if initial or (initial is None and rv in ("", "0")):
            objs = store.snapshot(rt.res, store.rv)
            evs = [("ADDED", o) for o in objs if sel.matches(o)]
            return evs, store.rv, None
        if rv in ("", "0"):
            return [], store.rv, None
        want = int_param(params, "resourceVersion", 0)
        if want < store.oldest_rv:
            return [], 0, (f"too old resource version: {want} "
                           f"({store.oldest_rv + 1})")
        evs = [w for w in (watch_event(e, sel) for e in
                           store.events_after(want) if e.res is rt.res) if w]
        return evs, max(want, store.rv), None

    def serve_watch(self, app, rt, params):
        self.watch_rt = rt
        sel = Selector(rt.res, rt.namespace, params)
        cfg = dict(app.watch)
        bookmarks = parse_bool(params.get("allowWatchBookmarks", "false"))
        # timeoutSeconds=0, like its absence, means the server's default.
        timeout = int_param(params, "timeoutSeconds", 0, 0,
                            MAX_TIMEOUT_SECONDS) or \
            int(cfg["default_timeout"])
        store = app.store
        with store.cond:
            initial, pos, too_old = self.watch_start(store, rt, sel, params)
            epochs = (store.watch_epoch, store.abrupt_epoch)
        if too_old and cfg["too_old"] == "status":
            raise ApiError(410, too_old, "Expired")
        self.entry["status"] = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Audit-Id", str(uuid.UUID(int=self.entry["n"])))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.writer = ChunkWriter(self.wfile, self.rng, cfg["chunking"],
                                  int(cfg["max_chunk"]))
        if "disconnect_after_bytes" in self.fault:
            self.writer.cut_at = int(self.fault["disconnect_after_bytes"])
        app.watch_started(1)
        try:
            if too_old:
                self.writer.write([jdump({"type": "ERROR", "object":
                                          status_obj(410, too_old,
                                                     "Expired")})])
            else:
                self.watch_loop(app, rt, sel, cfg, bookmarks, timeout,
                                initial, pos, epochs, params)
            self.writer.end()
        finally:
            app.watch_started(-1)

    def bookmark(self, rt, rv, initial_end=False):
        md = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        return jdump({"type": "BOOKMARK", "object": {
            "kind": rt.res.kind, "apiVersion": present(
                {"apiVersion": rt.res.api_version}, rt.res,
                rt.version)["apiVersion"],
            "metadata": md}})

    def deliver(self, evs):
        """Send events; returns False when the stream must end now (the
        end_after_events fault).  disconnect_after_events cuts mid-event."""
        f = self.fault
        done = self.entry["events"]
        if "end_after_events" in f:
            evs = evs[:max(0, int(f["end_after_events"]) - done)]
        rt = self.watch_rt
        pieces = [jdump({"type": t, "object": present(o, rt.res, rt.version)})
                  for t, o in evs]
        if "disconnect_after_events" in f:
            k = int(f["disconnect_after_events"]) - done
            if 0 <= k < len(pieces):
                self.writer.cut_at = (self.writer.sent +
                                      sum(map(len, pieces[:k])) +
                                      max(1, len(pieces[k]) // 2))
        self.writer.write(pieces)
        self.entry["events"] = done + len(pieces)
        return not ("end_after_events" in f and
                    self.entry["events"] >= int(f["end_after_events"]))

    def client_gone(self):
        """A watch client sends nothing after its request, so a readable
        socket means it closed (FIN or TLS close_notify): stop serving it,
        as the real server does when the request context ends."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def watch_loop(self, app, rt, sel, cfg, bookmarks, timeout, initial,
                   pos, epochs, params):
        store = app.store
        if not self.deliver(initial):
            return
        # A WatchList client learns that its initial state is complete
        # from this annotated bookmark.
        if bookmarks and parse_bool(params.get("sendInitialEvents", "0")):
            self.writer.write([self.bookmark(rt, pos, True)])
        now = time.monotonic()
        deadline = now + timeout
        interval = float(cfg["bookmark_interval"])
        next_bm = now + interval if bookmarks else float("inf")
        while True:
            with store.cond:
                while True:
                    now = time.monotonic()
                    if store.rv > pos or store.closing or \
                            (store.watch_epoch, store.abrupt_epoch) != epochs \
                            or now >= min(deadline, next_bm):
                        break
                    if self.client_gone():
                        return
                    store.cond.wait(min(deadline, next_bm, now +
                                        CLIENT_POLL_SECONDS) - now)
                if store.abrupt_epoch != epochs[1]:
                    raise Cut()
                if store.closing or store.watch_epoch != epochs[0]:
                    return
                lagged = pos < store.oldest_rv
                evs = [] if lagged else [
                    w for w in (watch_event(e, sel) for e in
                                store.events_after(pos) if e.res is rt.res)
                    if w]
                pos = max(pos, store.rv)
            if lagged:
                # The history moved past this watcher: the real server
                # ends such a watch with an ERROR too.
                self.writer.write([jdump({"type": "ERROR", "object":
                                          status_obj(410, "too old resource "
                                                     "version", "Expired")})])
                return
            for i in range(0, len(evs), MAX_EVENTS_PER_BATCH):
                if not self.deliver(evs[i:i + MAX_EVENTS_PER_BATCH]):
                    return
            now = time.monotonic()
            if now >= deadline:
                return
            if now >= next_bm:
                self.writer.write([self.bookmark(rt, pos)])
                app.bookmark_sent()
                next_bm = now + interval


class ApiServer(ThreadingHTTPServer):
    """Threaded HTTP/1.1 server; the TLS handshake runs in the connection's
    thread so that a stalled or failing client never blocks accept()."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, app, ssl_ctx=None):
        super().__init__(addr, handler)
        self.app = app
        self.ssl_ctx = ssl_ctx

    def finish_request(self, request, client_address):
        conn = request
        if self.ssl_ctx is not None:
            request.settimeout(10)
            try:
                conn = self.ssl_ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError) as e:
                print(f"fake_apiserver: TLS handshake failed: {e}",
                      file=sys.stderr, flush=True)
                return
        try:
            self.RequestHandlerClass(conn, client_address, self)
        finally:
            if conn is not request:
                conn.close()

    def handle_error(self, request, client_address):
        # A client that goes away mid-response is routine here.
        pass


# ---------------------------------------------------------- control server

class ControlHandler(BaseHTTPRequestHandler):
    """Plain-HTTP loopback endpoint through which a test drives the server."""

    protocol_version = "HTTP/1.1"
    timeout = 60

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, obj):
        body = jdump(obj)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        if not 0 <= n <= MAX_BODY_BYTES:
            raise ApiError(413, "body too large")
        return self.rfile.read(n).decode("utf-8") if n else ""

    def do_GET(self):
        app = self.server.app
        path = urlsplit(self.path).path
        if path == "/_control/state":
            self.reply(200, app.state())
        elif path == "/_control/requests":
            with app.lock:
                self.reply(200, list(app.log))
        else:
            self.reply(404, status_obj(404, f"no control path {path}"))

    def do_POST(self):
        path = urlsplit(self.path).path
        op = CONTROL_OPS.get(path)
        try:
            text = self.body()
            if op is None:
                raise ApiError(404, f"no control path {path}")
            self.reply(200, op(self.server.app, text))
        except ApiError as e:
            self.reply(e.code, e.status)
        except (ValueError, TypeError, AttributeError) as e:
            self.reply(400, status_obj(400, str(e)))
        except Exception as e:  # noqa: BLE001 - a bug must not go unseen
            traceback.print_exc(file=sys.stderr)
            self.reply(500, status_obj(500, f"test server bug: {e!r}"))


def parse_items(text):
    """A JSON value, a JSON list, or NDJSON, as a list of values."""
    try:
        val = json.loads(text)
        return val if isinstance(val, list) else [val]
    except ValueError:
        return [json.loads(line) for line in text.splitlines()
                if line.strip()]


def ctl_apply(app, text):
    items = parse_items(text)
    for ev in items:
        check_event(ev)
    rv = None
    for ev in items:
        rv = app.apply_entry(ev)
    return {"resourceVersion": str(rv if rv is not None else app.store.rv),
            "applied": len(items)}


def ctl_fault(app, text):
    n = 0
    for f in parse_items(text):
        n = app.faults.add(f)
    return {"faults": n}


def ctl_config(app, text):
    cfg = json.loads(text or "{}")
    if not isinstance(cfg, dict):
        raise ApiError(400, "config is a JSON object")
    app.configure(cfg)
    return {"watch": app.watch, "history": app.store.retention,
            "list_item_typemeta": app.typemeta, "served": app.served}


def ctl_compact(app, text):
    return {"oldestResourceVersion": str(app.apply_entry({"compact": True}))}


def ctl_close_watches(app, text):
    opts = json.loads(text) if text.strip() else {}
    if not isinstance(opts, dict):
        raise ApiError(400, "close-watches takes {\"abrupt\": BOOL}")
    abrupt = bool(opts.get("abrupt"))
    st = app.store
    with st.cond:
        if abrupt:
            st.abrupt_epoch += 1
        else:
            st.watch_epoch += 1
        st.cond.notify_all()
    return {"closed": app.active_watches}


CONTROL_OPS = {
    "/_control/apply": ctl_apply,
    "/_control/fault": ctl_fault,
    "/_control/config": ctl_config,
    "/_control/compact": ctl_compact,
    "/_control/close-watches": ctl_close_watches,
}


# -------------------------------------------------------------------- main

def tls_context(args):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.cert, args.key)
    # HTTP/1.1 only: chunked watch streams are what this server tests.
    ctx.set_alpn_protocols(["http/1.1"])
    if args.client_ca:
        ctx.load_verify_locations(args.client_ca)
        ctx.verify_mode = (ssl.CERT_REQUIRED if args.require_client_cert
                           else ssl.CERT_OPTIONAL)
    return ctx


def parse_args(argv):
    p = argparse.ArgumentParser(description="Test Kubernetes API server "
                                "(see the comment block at the top).")
    p.add_argument("--scenario", help="scenario file (JSON or NDJSON)")
    p.add_argument("--cert", help="server certificate (PEM)")
    p.add_argument("--key", help="server private key (PEM)")
    p.add_argument("--plain", action="store_true",
                   help="serve plain HTTP (debugging)")
    p.add_argument("--client-ca", help="accept client certificates "
                   "signed by this CA as authentication")
    p.add_argument("--require-client-cert", action="store_true")
    p.add_argument("--token", help="required bearer token")
    p.add_argument("--seed", type=int, help="random seed")
    p.add_argument("--host", default="127.0.0.1",
                   help="the address of the API (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--control-port", type=int, default=0)
    p.add_argument("--port-file", help="write port=, control_port=, url=")
    args = p.parse_args(argv)
    if not args.plain and not (args.cert and args.key):
        p.error("--cert and --key are required unless --plain")
    if args.require_client_cert and not args.client_ca:
        p.error("--require-client-cert needs --client-ca")
    return args


def write_port_file(path, port, cport, scheme):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"port={port}\ncontrol_port={cport}\n"
                f"url={scheme}://127.0.0.1:{port}\n")
    os.rename(tmp, path)


def shutdown(app, servers):
    """End every watch cleanly, then stop the listeners."""
    st = app.store
    with st.cond:
        st.closing = True
        st.cond.notify_all()
    for _ in range(100):
        if app.active_watches == 0:
            break
        time.sleep(0.05)
    for s in servers:
        s.shutdown()


def main(argv):
    args = parse_args(argv)
    try:
        sc = load_scenario(args.scenario) if args.scenario else {}
        seed = args.seed if args.seed is not None else int(sc.get("seed", 0))
        app = App(sc, seed, args.token)
        ctx = None if args.plain else tls_context(args)
    except (OSError, ValueError, ApiError, ssl.SSLError) as e:
        print(f"fake_apiserver: {e}", file=sys.stderr)
        return 2
    api = ApiServer((args.host, args.port), ApiHandler, app, ctx)
    ctl = ApiServer(("127.0.0.1", args.control_port), ControlHandler, app)
    port, cport = api.server_address[1], ctl.server_address[1]
    app.address = f"127.0.0.1:{port}"
    scheme = "http" if args.plain else "https"
    threads = [threading.Thread(target=ctl.serve_forever, daemon=True),
               threading.Thread(target=app.run_timeline,
                                args=(time.monotonic(),), daemon=True)]
    for t in threads:
        t.start()
    stopper = []

    def on_signal(signum, frame):
        if not stopper:
            stopper.append(threading.Thread(target=shutdown,
                                            args=(app, [api, ctl])))
            stopper[0].start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if args.port_file:
        write_port_file(args.port_file, port, cport, scheme)
    print(f"listening {scheme}://127.0.0.1:{port} "
          f"control http://127.0.0.1:{cport}", flush=True)
    api.serve_forever(poll_interval=0.1)
    stopper[0].join()
    api.server_close()
    ctl.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
