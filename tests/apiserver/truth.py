"""The oracle of the watcher tests: the test API server's objects now, as a
recorded watch stream (one ADDED line per object) that `gpuledger watch
--from` replays into a fresh ledger.

    python3 truth.py URL TOKEN [CA]

CA: the server's CA file for https (absent: plain http). The class table
comes first, as the watcher lists it first: a pod that holds nothing under
the table in force is not kept, so it must come after. Faults meant for the
watcher may hit the oracle too: each list is retried."""
import json
import ssl
import sys
import time
import urllib.request

PATHS = ["/api/v1/namespaces/cozy-system/configmaps?fieldSelector=metadata.name%3Dgpu-classes",
         "/api/v1/namespaces",
         "/apis/apps.cozystack.io/v1alpha1/tenants",
         "/apis/apps.cozystack.io/v1alpha1/vminstances",
         "/apis/apps.cozystack.io/v1alpha1/kubernetesnodeses",
         "/api/v1/pods", "/apis/resource.k8s.io/v1/resourceclaims",
         "/api/v1/nodes"]


def get(url, token, ctx, path):
    for _ in range(20):
        try:
            req = urllib.request.Request(url + path,
                                         headers={"Authorization": "Bearer " + token})
            return json.load(urllib.request.urlopen(req, context=ctx, timeout=10))
        except Exception:
            time.sleep(0.2)
    raise SystemExit("cannot list " + path)


def main():
    if len(sys.argv) not in (3, 4):
        raise SystemExit("usage: truth.py URL TOKEN [CA]")
    url, token = sys.argv[1:3]
    ctx = ssl.create_default_context(cafile=sys.argv[3]) if len(sys.argv) == 4 else None
    for p in PATHS:
        d = get(url, token, ctx, p)
        for it in d["items"]:
            it.setdefault("apiVersion", d["apiVersion"])
            it.setdefault("kind", d["kind"][:-4])
            print(json.dumps({"type": "ADDED", "object": it}))


if __name__ == "__main__":
    main()
