// Validates Kubernetes manifests against the OpenAPI schemas of the
// Kubernetes API (npm kubernetes-models) and of cert-manager
// (@kubernetes-models/cert-manager) and of the Prometheus Operator
// (@kubernetes-models/prometheus-operator): every document of every file given is
// looked up by apiVersion and kind; a kind without a schema is an error,
// as is any schema violation.
// Usage: node validate.mjs FILE.yaml...   (exit 1 on any failure)
// Prints "ok: FILE KIND NAME" or "FAIL: FILE KIND NAME: why" per document.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import yaml from "js-yaml";

// apiVersion -> module directory.
function modulePath(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/")
    ? apiVersion.split("/")
    : ["", apiVersion];
  if (group.endsWith("cert-manager.io"))
    return `@kubernetes-models/cert-manager/${group}/${version}/${kind}`;
  if (group === "monitoring.coreos.com")
    return `@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`;
  return group === ""
    ? `kubernetes-models/${version}/${kind}`
    : `kubernetes-models/${group}/${version}/${kind}`;
}

let failed = 0;
for (const file of process.argv.slice(2)) {
  const docs = yaml.loadAll(readFileSync(file, "utf8")).filter((d) => d);
  for (const d of docs) {
    const what = `${basename(file)} ${d.kind} ${d?.metadata?.name}`;
    try {
      if (typeof d.apiVersion !== "string" || typeof d.kind !== "string")
        throw new Error("no apiVersion or kind");
      let mod;
      try {
        mod = await import(modulePath(d.apiVersion, d.kind));
      } catch {
        throw new Error(`no schema for ${d.apiVersion} ${d.kind}`);
      }
      const Model = mod[d.kind];
      new Model(d).validate();
      console.log(`ok: ${what}`);
    } catch (e) {
      failed++;
      console.log(`FAIL: ${what}: ${String(e.message).split("\n").slice(0, 6).join(" | ")}`);
    }
  }
}
process.exit(failed ? 1 : 0);
