// Evaluates webhook matchConditions (CEL) the way the API server does,
// with @bufbuild/cel (npm, pinned by tests/deploy/schema/package.json).
// Input on stdin, JSON: {"conditions": [{name, expression}],
// "requests": {NAME: AdmissionReview.request}}. Output, JSON:
// {NAME: {"send": true|false|null, "errors": [...]}}: send is true when
// every condition is true, false when one is false, null when none is
// false and one errs (the API server then applies failurePolicy).
// The variables are the API server's: object and oldObject (null when
// absent: oldObject on CREATE), request; JSON objects become CEL maps,
// integers CEL ints and other numbers doubles, as the API server's
// conversion of unstructured objects does.
// Usage: node cel_match.mjs < input.json   (exit 1 on bad input)
import { readFileSync } from "node:fs";
import { run, isCelError } from "@bufbuild/cel";

function cel(v) {
  if (v === null || v === undefined) return null;
  if (Array.isArray(v)) return v.map(cel);
  if (typeof v === "number") return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === "object")
    return new Map(Object.entries(v).map(([k, x]) => [k, cel(x)]));
  return v;
}

const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const [name, rq] of Object.entries(input.requests)) {
  const vars = {
    object: cel(rq.object ?? null),
    oldObject: cel(rq.oldObject ?? null),
    request: cel(rq),
  };
  let anyFalse = false;
  const errors = [];
  for (const c of input.conditions) {
    const r = run(c.expression, vars);
    if (isCelError(r)) errors.push(`${c.name}: ${r.message}`);
    else if (r === false) anyFalse = true;
    else if (r !== true) errors.push(`${c.name}: not a bool: ${String(r)}`);
  }
  out[name] = { send: anyFalse ? false : errors.length ? null : true, errors };
}
console.log(JSON.stringify(out));
