/*
 * gpuledger console: everything that computes, without the DOM, so that
 * node's test runner checks it (tests/ui/lib.test.js) and the page uses the
 * same code (app.js). Loaded in the page as a classic script, it defines the
 * global GL; under node, module.exports.
 *
 * Inputs are the API's JSON exactly (DESIGN 6 `replay --json` tenants, 7
 * classes and capacity, 8 export rows in JSON, 3.5 verdict records, 3.6
 * the reconciliation, 4.4 proofs); nothing here invents a number the API
 * did not give.
 */
(function (root, factory) {
	'use strict';
	const lib = factory();
	if (typeof module === 'object' && module.exports)
		module.exports = lib;
	else
		root.GL = lib;
})(typeof self !== 'undefined' ? self : this, function () {
	'use strict';

	const TOTAL_KEY = 'gpuclass.cozystack.io/devices';
	const classKey = (c) => c + '.gpuclass.cozystack.io/devices';
	const HOUR_MS = 3600000;

	/* ---------------------------------------------------------------- */
	/* Formatting. */

	/* An integer with thousands separated by commas; null and undefined
	 * are shown as `none` (the caller says what none means). */
	function fmtInt(n, none) {
		if (n === null || n === undefined)
			return none === undefined ? '—' : none;
		if (typeof n !== 'number' || !Number.isFinite(n))
			return String(n);
		const neg = n < 0;
		const s = String(Math.abs(Math.trunc(n)));
		let out = '';
		for (let i = 0; i < s.length; i++) {
			if (i > 0 && (s.length - i) % 3 === 0)
				out += ',';
			out += s[i];
		}
		return (neg ? '-' : '') + out;
	}

	/* Parses what fmtInt printed back to a number (null for a dash or a
	 * word): the browser test reads the page with it. */
	function parseInt10(s) {
		const t = String(s).trim().replace(/,/g, '');
		return /^-?\d+$/.test(t) ? Number(t) : null;
	}

	/* A fixed-point number with d decimals (default 2). */
	function fmtFixed(x, d) {
		if (x === null || x === undefined || !Number.isFinite(x))
			return '—';
		return x.toFixed(d === undefined ? 2 : d);
	}

	/* device-milliseconds as GPU-hours. */
	function fmtGpuHours(ms) {
		return fmtFixed(ms / HOUR_MS, 2);
	}

	/* RFC 3339 (any precision) as "YYYY-MM-DD HH:MM:SS UTC". */
	function fmtTime(iso) {
		if (typeof iso !== 'string')
			return '—';
		const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})/.exec(iso);
		return m ? m[1] + ' ' + m[2] + ' UTC' : iso;
	}

	/* A percentage of used against budget, or '' without a budget. */
	function fmtShare(used, budget) {
		if (budget === null || budget === undefined)
			return '';
		if (budget === 0)
			return used > 0 ? 'over' : '0%';
		return Math.round((100 * used) / budget) + '%';
	}

	function limitedByText(lb) {
		return lb ? lb.tenant + ' (' + shortKey(lb.key) + ')' : '—';
	}

	/* "h100" for a per-class key, "total" for the total key. */
	function shortKey(key) {
		if (key === TOTAL_KEY)
			return 'total';
		const m = /^(.*)\.gpuclass\.cozystack\.io\/devices$/.exec(key);
		return m ? m[1] : key;
	}

	/* ---------------------------------------------------------------- */
	/* The tenant tree. */

	/* Builds the tree of the tenant list (GET /v1/tenants). A tenant
	 * whose parent is not in the list is a root: a tenant token sees its
	 * own subtree, whose top has its parent outside. Children and roots
	 * are sorted by name. Returns {roots, byNs}. */
	function buildTree(tenants) {
		const byNs = new Map();
		for (const t of tenants)
			byNs.set(t.namespace, {ns: t.namespace, t: t, children: [],
					       parent: null, depth: 0});
		const roots = [];
		for (const n of byNs.values()) {
			const p = n.t.parent;
			if (p !== null && p !== undefined && byNs.has(p) &&
			    p !== n.ns) {
				n.parent = byNs.get(p);
				n.parent.children.push(n);
			} else {
				roots.push(n);
			}
		}
		const byName = (a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0);
		roots.sort(byName);
		const stack = roots.slice();
		while (stack.length) {
			const n = stack.pop();
			n.children.sort(byName);
			for (const c of n.children) {
				c.depth = n.depth + 1;
				stack.push(c);
			}
		}
		return {roots: roots, byNs: byNs};
	}

	/* The rows of one tenant: its total first (class null), then one per
	 * class of the table. used is what budgets cap (subtree reserved). */
	function tenantRows(t, classes) {
		const b = t.budgets || {};
		const get = (o, c) => (o && o[c]) || 0;
		const sum = (o) => Object.values(o || {}).reduce((a, x) => a + x, 0);
		const rows = [{
			cls: null,
			key: TOTAL_KEY,
			budget: b[TOTAL_KEY] === undefined ? null : b[TOTAL_KEY],
			own: sum(t.reserved),
			subtree: sum(t.subtreeReserved),
			/* Holds on (DESIGN 3.7) only: units promised to admissions
			 * whose objects are not observed yet (absent when off). */
			...(t.subtreeHeld ? {held: sum(t.subtreeHeld)} : {}),
			allocated: sum(t.subtreeAllocated),
			remaining: t.remainingTotal ? t.remainingTotal.remaining : null,
			limitedBy: t.remainingTotal ? t.remainingTotal.limitedBy : null,
			blocked: false,
		}];
		for (const c of classes) {
			const r = (t.remaining || {})[c] || {};
			const k = classKey(c);
			rows.push({
				cls: c,
				key: k,
				budget: b[k] === undefined ? null : b[k],
				own: get(t.reserved, c),
				subtree: get(t.subtreeReserved, c),
				...(t.subtreeHeld ? {held: get(t.subtreeHeld, c)} : {}),
				allocated: get(t.subtreeAllocated, c),
				remaining: r.remaining === undefined ? null : r.remaining,
				limitedBy: r.limitedBy || null,
				blocked: !!r.blocked,
			});
		}
		return rows;
	}

	/* Whether a class row says anything beyond its tenant's total row:
	 * some usage, a budget, or a block. The total row always shows. */
	function rowInUse(r) {
		return r.cls === null || r.own > 0 || r.subtree > 0 ||
		       r.allocated > 0 || r.budget !== null || r.blocked;
	}

	/* The classes a tenant list knows of (its remaining maps list every
	 * class of the table), sorted. */
	function classesOf(tenants) {
		const s = new Set();
		for (const t of tenants)
			for (const c of Object.keys(t.remaining || {}))
				s.add(c);
		return Array.from(s).sort();
	}

	/* Over: a declared key used or carved beyond its budget (the API's
	 * overcommitted list) or nothing left somewhere above. Near: some key
	 * the tenant declares is at least `near` (0..1) used. */
	function tenantStatus(t, classes, near) {
		const rows = tenantRows(t, classes);
		if ((t.overcommitted || []).length > 0)
			return 'over';
		let st = 'ok';
		for (const r of rows) {
			if (r.budget !== null && r.subtree > r.budget)
				return 'over';
			if (r.budget !== null && r.budget > 0 &&
			    r.subtree >= (near === undefined ? 0.8 : near) * r.budget)
				st = 'near';
		}
		return st;
	}

	/* Does tenant node n pass filter f = {text, status: 'all'|'over'|
	 * 'near'} (near includes over)? */
	function tenantMatches(n, f, classes) {
		const text = (f.text || '').trim().toLowerCase();
		if (text && n.ns.toLowerCase().indexOf(text) < 0)
			return false;
		if (!f.status || f.status === 'all')
			return true;
		const st = tenantStatus(n.t, classes);
		return f.status === 'over' ? st === 'over' : st !== 'ok';
	}

	/* The tree flattened in display order. Without a filter a node shows
	 * when every ancestor is expanded. With one, the matching nodes show
	 * with their ancestors (whatever is collapsed), so a match is never
	 * hidden. Each row: {node, match}. */
	function visibleRows(tree, expanded, f, classes) {
		const active = f && ((f.text || '').trim() !== '' ||
				     (f.status && f.status !== 'all'));
		const out = [];
		const keep = new Map();
		function mark(n) {
			let any = tenantMatches(n, f || {}, classes);
			const self = any;
			for (const c of n.children)
				if (mark(c))
					any = true;
			keep.set(n.ns, {any: any, self: self});
			return any;
		}
		if (active)
			for (const r of tree.roots)
				mark(r);
		function walk(n) {
			if (active) {
				const k = keep.get(n.ns);
				if (!k.any)
					return;
				out.push({node: n, match: k.self});
				for (const c of n.children)
					walk(c);
				return;
			}
			out.push({node: n, match: false});
			if (expanded.has(n.ns))
				for (const c of n.children)
					walk(c);
		}
		for (const r of tree.roots)
			walk(r);
		return out;
	}

	/* ---------------------------------------------------------------- */
	/* Classes and nodes. */

	/* Merges GET /v1/classes/{c}/capacity answers into nodes sorted by
	 * name: {name, classes: {c: {capacity, allocated, serves}}, over}
	 * where over lists the classes allocated beyond capacity. */
	function mergeNodes(capacities) {
		const nodes = new Map();
		for (const cap of capacities) {
			for (const n of cap.nodes || []) {
				if (!nodes.has(n.name))
					nodes.set(n.name, {name: n.name, classes: {}, over: []});
				const e = nodes.get(n.name);
				e.classes[cap.class] = {capacity: n.capacity,
							allocated: n.allocated,
							serves: n.serves};
				if (n.allocated > n.capacity)
					e.over.push(cap.class);
			}
		}
		return Array.from(nodes.values()).sort(
			(a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
	}

	/* ---------------------------------------------------------------- */
	/* History (GET /v1/export?format=json&rollup=subtree&step=hour). */

	function parseNdjson(text) {
		const out = [];
		for (const line of text.split('\n'))
			if (line.trim() !== '')
				out.push(JSON.parse(line));
		return out;
	}

	/* Usage over time of tenant's subtree: per class, the mean number of
	 * devices held in each period (device-ms / period length), periods
	 * from the export rows. Periods the export omitted (no usage) are 0.
	 * Returns {times: [start ms], ends: [end ms], classes: [c],
	 * series: {c: [mean]}, deviceMs: {c: total}}. */
	function historySeries(rows, tenant, fromMs, toMs, stepMs) {
		const times = [], ends = [];
		for (let t = fromMs; t < toMs; t += stepMs) {
			times.push(t);
			ends.push(Math.min(t + stepMs, toMs));
		}
		const index = new Map(times.map((t, i) => [t, i]));
		const series = {}, deviceMs = {};
		for (const r of rows) {
			if (r.SubAccountId !== tenant)
				continue;
			if (r.x_Scope !== undefined && r.x_Scope !== 'subtree')
				continue;
			const s = Date.parse(r.ChargePeriodStart);
			const e = Date.parse(r.ChargePeriodEnd);
			const c = r.x_DeviceClass;
			let i = index.get(s);
			if (i === undefined) {
				/* A period the grid does not know: the export
				 * clipped it at the horizon; put it in place. */
				i = times.findIndex((t, j) => t <= s && s < ends[j]);
				if (i < 0)
					continue;
			}
			if (!series[c]) {
				series[c] = times.map(() => 0);
				deviceMs[c] = 0;
			}
			const len = Math.max(1, e - s);
			series[c][i] += r.x_DeviceMilliseconds / len;
			deviceMs[c] += r.x_DeviceMilliseconds;
		}
		/* What the total budget caps: the sum over classes. */
		const total = times.map((_, i) => Object.values(series).reduce(
			(a, v) => a + v[i], 0));
		return {times: times, ends: ends, classes: Object.keys(series).sort(),
			series: series, deviceMs: deviceMs, total: total};
	}

	/* Round tick values 0..>=max, about n of them. */
	function niceTicks(max, n) {
		if (!(max > 0))
			return [0, 1];
		const raw = max / Math.max(1, n || 5);
		const mag = Math.pow(10, Math.floor(Math.log10(raw)));
		const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw);
		const out = [];
		for (let v = 0; v < max + step / 2; v += step)
			out.push(Number(v.toFixed(10)));
		if (out[out.length - 1] < max)
			out.push(Number((out[out.length - 1] + step).toFixed(10)));
		return out;
	}

	/* The chart's geometry: x over [times[0], end), y over 0..top (the
	 * highest tick above every value and budget line). budgets: {label:
	 * value}. Returns {w, h, pad, x(t), y(v), ticks, lines: {c: "x,y
	 * ..."}, budgets: [{label, value, y}]}. */
	function chartModel(hist, budgets, w, h) {
		const pad = {l: 48, r: 110, t: 12, b: 28};
		const t0 = hist.times.length ? hist.times[0] : 0;
		const t1 = hist.ends.length ? hist.ends[hist.ends.length - 1] : 1;
		let max = 0;
		for (const c of hist.classes)
			for (const v of hist.series[c])
				max = Math.max(max, v);
		for (const k of Object.keys(budgets || {}))
			max = Math.max(max, budgets[k]);
		const withTotal = budgets && budgets['total budget'] !== undefined &&
				  hist.total !== undefined;
		if (withTotal)
			for (const v of hist.total)
				max = Math.max(max, v);
		const ticks = niceTicks(max, 5);
		const top = ticks[ticks.length - 1];
		const x = (t) => pad.l + ((t - t0) / Math.max(1, t1 - t0)) *
					 (w - pad.l - pad.r);
		const y = (v) => h - pad.b - (v / top) * (h - pad.t - pad.b);
		/* Steps: a mean holds over its whole period. */
		const steps = (vals) => {
			const pts = [];
			vals.forEach((v, i) => {
				pts.push(x(hist.times[i]).toFixed(1) + ',' + y(v).toFixed(1));
				pts.push(x(hist.ends[i]).toFixed(1) + ',' + y(v).toFixed(1));
			});
			return pts.join(' ');
		};
		const lines = {};
		for (const c of hist.classes)
			lines[c] = steps(hist.series[c]);
		/* The sum over classes is drawn against a total budget. */
		const total = withTotal ? steps(hist.total) : null;
		const bl = Object.keys(budgets || {}).sort().map(
			(k) => ({label: k, value: budgets[k], y: y(budgets[k])}));
		return {w: w, h: h, pad: pad, x: x, y: y, ticks: ticks, top: top,
			lines: lines, total: total, budgets: bl, t0: t0, t1: t1};
	}

	/* The budget lines of a tenant for the chart: per class its own
	 * per-class budget, and the total. */
	function budgetLines(t, classes) {
		const out = {};
		const b = (t && t.budgets) || {};
		for (const c of classes)
			if (b[classKey(c)] !== undefined)
				out[c + ' budget'] = b[classKey(c)];
		if (b[TOTAL_KEY] !== undefined)
			out['total budget'] = b[TOTAL_KEY];
		return out;
	}

	/* ---------------------------------------------------------------- */
	/* Verdicts. */

	/* The reasons a verdict can give (query/metrics.c's table, which
	 * the unit test compares), sorted: the reason filter's choices. */
	const REASONS = ['ClassBudgetExceeded', 'ExceedsParentBudget', 'Invalid',
		'InvalidBudgetKey', 'InvalidQuantity', 'NoGrowth', 'NotATenant',
		'RawKeyBlocksClass', 'TotalBudgetExceeded', 'Unconstrained',
		'UnknownClass', 'WithinBudget'];

	/* The GET /v1/verdicts path for filter f = {tenant ('' any, else a
	 * namespace: its subtree), reason ('' any), allowed ('all'|'yes'|
	 * 'no')} and a cursor: {} the newest, {before: id} older ones (both
	 * newest first), {after: id} newer ones (in id order). */
	function verdictsPath(f, cursor, limit) {
		const q = [];
		const add = (k, v) => q.push(k + '=' + encodeURIComponent(String(v)));
		const c = cursor || {};
		if (c.after !== undefined && c.after !== null) {
			add('after', c.after);
		} else {
			add('order', 'desc');
			if (c.before !== undefined && c.before !== null)
				add('before', c.before);
		}
		add('limit', limit || 50);
		if (f.tenant)
			add('tenant', f.tenant);
		if (f.reason)
			add('reason', f.reason);
		if (f.allowed === 'yes' || f.allowed === 'no')
			add('allowed', f.allowed === 'yes' ? 'true' : 'false');
		return '/v1/verdicts?' + q.join('&');
	}

	/* The verdicts of a listing page as the view keeps them:
	 * {id, seq, time, record} (the record as listed). */
	function verdictsOfListing(d) {
		return ((d && d.verdicts) || []).map((v) => ({id: v.id, seq: v.seq, time: v.time,
							       record: v}));
	}

	/* list with the verdicts of page added (each id once), newest first. */
	function mergeVerdicts(list, page) {
		const by = new Map();
		for (const v of list.concat(page))
			if (!by.has(v.id))
				by.set(v.id, v);
		return Array.from(by.values()).sort((a, b) => b.id - a.id);
	}

	/* Who asked, when the record keeps it (an AdmissionReview's user and
	 * operation, DESIGN 3.5); '' when it does not. */
	function requesterText(r) {
		const q = r && r.requester;
		if (!q || typeof q.username !== 'string' || q.username === '')
			return '';
		return q.username + (q.operation ? ' (' + q.operation + ')' : '');
	}

	/* What a verdict was about, in a few words. */
	function verdictSubject(r) {
		const q = r.request || {};
		if (r.type === 'declaration')
			return 'budgets of ' + (q.namespace || '?');
		return (q.kind || '?') + ' ' + (q.namespace || '?') + '/' +
		       (q.name || '?');
	}

	/* ---------------------------------------------------------------- */
	/* Reconciliation (GET /v1/reconcile, DESIGN 3.6): did every
	 * reservation pass admission, and did the budgets hold? */

	const RECONCILE_PARAMS = ['tenant', 'from', 'to', 'since', 'window'];

	/* The GET /v1/reconcile path for form f = {tenant, from, to, since,
	 * window}, each as typed (a seq or a time; a duration): values are
	 * trimmed and empty ones left out, so that the server's defaults
	 * apply; the server judges the rest (a 400 says what it refused). */
	function reconcilePath(f) {
		const q = [];
		for (const k of RECONCILE_PARAMS) {
			const v = String((f && f[k]) || '').trim();
			if (v !== '')
				q.push(k + '=' + encodeURIComponent(v));
		}
		return '/v1/reconcile' + (q.length ? '?' + q.join('&') : '');
	}

	/* Milliseconds as a duration the CLI takes back: "10m", "1h30m",
	 * "1m30s", "500ms", "0s". */
	function fmtDuration(ms) {
		if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0)
			return '—';
		const parts = [[3600000, 'h'], [60000, 'm'], [1000, 's'], [1, 'ms']];
		let left = Math.round(ms), out = '';
		for (const [n, u] of parts) {
			if (left >= n) {
				out += Math.floor(left / n) + u;
				left %= n;
			}
		}
		return out || '0s';
	}

	/* "seq 12 (2026-01-01 00:00:00 UTC)", or "seq 12" without a time. */
	function seqText(seq, time) {
		return 'seq ' + fmtInt(seq) + (typeof time === 'string' ? ' (' + fmtTime(time) + ')' : '');
	}

	/* What the answer's range says, in sentences: which events, whose,
	 * since when admission counts as in force (DESIGN 3.6: objects first
	 * observed before it are listed apart, never as bypasses), and the
	 * window a verdict covers. */
	function reconcileRangeText(r) {
		if (!r)
			return '';
		const who = r.tenant ? 'the subtree of ' + r.tenant : 'every tenant';
		const out = [r.toSeq > 0
			? 'Events from ' + seqText(r.fromSeq, r.fromTime) + ' to ' +
			  seqText(r.toSeq, r.toTime) + ', ' + who + '.'
			: 'The log holds no event yet (' + who + ').'];
		if (r.since)
			out.push('Admission is in force from ' + seqText(r.since.seq, r.since.time) +
				 ': objects first observed before it are listed as observed before ' +
				 'admission, not as bypasses.');
		else
			out.push('Admission was never in force (no admission verdict is recorded, or ' +
				 'since lies after the last event): every object counts as observed ' +
				 'before admission, none as a bypass.');
		out.push('A verdict covers an observation up to ' + fmtDuration(r.windowMs) +
			 ' after it.');
		return out.join(' ');
	}

	/* "VMInstance tenant-a/vm-1". */
	function objectText(x) {
		return (x.kind || '?') + ' ' + (x.namespace || '?') + '/' + (x.name || '?');
	}

	/* What triggered an overshoot: the event at its start. */
	function triggerText(t) {
		if (!t)
			return '—';
		const what = t.namespace !== undefined
			? t.type + ' of ' + objectText(t) : t.type;
		return what + ' at seq ' + fmtInt(t.seq);
	}

	const CAUSE_LABELS = {race: 'race', bypass: 'bypass', budgetLowered: 'budget lowered',
			      preExisting: 'observed before admission'};

	/* One cause of an overshoot as the page lists it: {type, label,
	 * seq, verdicts: [ids] (a race's, else [])}. */
	function causeView(c) {
		return {type: c.type, label: CAUSE_LABELS[c.type] || String(c.type),
			seq: c.seq, verdicts: Array.isArray(c.verdicts) ? c.verdicts.slice() : []};
	}

	/* One overshoot as the page shows it, from the API's object. */
	function overshootView(o) {
		const excess = o.peak.used - o.peak.budget;
		return {
			tenant: o.tenant, key: o.key, keyShort: shortKey(o.key), fromSeq: o.fromSeq,
			from: seqText(o.fromSeq, o.fromTime),
			to: o.toSeq === null || o.toSeq === undefined ? 'still over'
				: seqText(o.toSeq, o.toTime),
			open: o.toSeq === null || o.toSeq === undefined,
			start: 'used ' + fmtInt(o.used) + ' of ' + fmtInt(o.budget),
			peak: 'used ' + fmtInt(o.peak.used) + ' of ' + fmtInt(o.peak.budget) +
			      ' (' + (excess >= 0 ? '+' : '') + fmtInt(excess) + ') at seq ' +
			      fmtInt(o.peak.seq),
			trigger: triggerText(o.trigger),
			causes: (o.causes || []).map(causeView),
			omitted: o.causesOmitted || 0,
		};
	}

	/* The answer as the view lays it out, each list bounded by max rows:
	 * bypasses and overshoots newest first (overshoots by start, then
	 * tenant and key), objects observed before admission in seq order;
	 * *More counts what was left out; shownBypass and shownPre are the
	 * seqs listed, so that a cause links only to a row on the page;
	 * nothing is true when neither a bypass nor an overshoot was found
	 * (objects observed before admission are not findings: the CLI
	 * exits 0 for them). */
	function reconcileView(d, max) {
		const cap = max === undefined ? Infinity : max;
		const take = (list) => ({shown: list.slice(0, cap),
					 more: Math.max(0, list.length - cap)});
		const bypasses = (d.bypasses || []).slice().sort((a, b) => b.seq - a.seq);
		const overs = (d.overshoots || []).slice().sort((a, b) =>
			b.fromSeq - a.fromSeq || (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1
				: a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
		const pre = (d.preExisting || []).slice().sort((a, b) => a.seq - b.seq);
		const b = take(bypasses), o = take(overs), p = take(pre);
		const counts = d.counts || {};
		return {
			counts: counts,
			nothing: (d.bypasses || []).length === 0 && (d.overshoots || []).length === 0,
			bypasses: b.shown, bypassesMore: b.more,
			overshoots: o.shown.map(overshootView), overshootsMore: o.more,
			pre: p.shown, preMore: p.more,
			shownBypass: new Set(b.shown.map((x) => x.seq)),
			shownPre: new Set(p.shown.map((x) => x.seq)),
		};
	}

	/* What an empty bypass list means: in a range where admission was
	 * in force, that every reservation had its verdict; elsewhere, that
	 * none could be a bypass. */
	function bypassNoneText(r) {
		return !r || !r.since || r.since.seq > r.toSeq
			? 'None: admission was never in force in this range, so no reservation counts as a bypass.'
			: 'None: every reservation of a VMInstance or KubernetesNodes object in the range had ' +
			  'an allowed admission verdict.';
	}

	/* The note under a list bounded to n rows when more were left out. */
	function listNote(n, more, what) {
		return more > 0 ? 'The ' + fmtInt(n) + ' ' + what + ' of ' + fmtInt(n + more) +
				  ' are listed; narrow the tenant or the range (or run gpuledger ' +
				  'reconcile) for the others.' : '';
	}

	/* The plain sentence for an answer that found nothing. */
	function nothingText(r) {
		return 'Nothing found: no bypass and no overshoot' +
		       (r && r.tenant ? ' in the subtree of ' + r.tenant : '') +
		       (r && r.toSeq > 0 ? ' from seq ' + fmtInt(r.fromSeq) + ' to seq ' +
			fmtInt(r.toSeq) : '') + '.';
	}

	/* ---------------------------------------------------------------- */
	/* Proofs (DESIGN 4.4: RFC 9162 Merkle tree over JCS events). */

	/* RFC 8785 canonical JSON: keys sorted by UTF-16 code units, no
	 * space, ECMAScript number and string forms (JSON.stringify's). */
	function jcs(v) {
		if (v === null || typeof v !== 'object')
			return JSON.stringify(v);
		if (Array.isArray(v))
			return '[' + v.map(jcs).join(',') + ']';
		return '{' + Object.keys(v).sort().map(
			(k) => JSON.stringify(k) + ':' + jcs(v[k])).join(',') + '}';
	}

	function concat(...parts) {
		let n = 0;
		for (const p of parts)
			n += p.length;
		const out = new Uint8Array(n);
		let o = 0;
		for (const p of parts) {
			out.set(p, o);
			o += p.length;
		}
		return out;
	}

	function utf8(s) {
		return new TextEncoder().encode(s);
	}

	function b64decode(s) {
		const bin = atob(s);
		const out = new Uint8Array(bin.length);
		for (let i = 0; i < bin.length; i++)
			out[i] = bin.charCodeAt(i);
		return out;
	}

	/* b64decode, or null for text that is not base64. */
	function b64OrNull(s) {
		try {
			return b64decode(s);
		} catch (e) {
			return null;
		}
	}

	function hex(u) {
		return Array.from(u).map((b) => b.toString(16).padStart(2, '0')).join('');
	}

	function b64encode(u) {
		let s = '';
		for (const b of u)
			s += String.fromCharCode(b);
		return btoa(s);
	}

	function equalBytes(a, b) {
		if (a.length !== b.length)
			return false;
		let d = 0;
		for (let i = 0; i < a.length; i++)
			d |= a[i] ^ b[i];
		return d === 0;
	}

	/* sha256: async (Uint8Array) => Uint8Array. */
	async function leafHash(sha256, bytes) {
		return sha256(concat(new Uint8Array([0]), bytes));
	}

	async function nodeHash(sha256, l, r) {
		return sha256(concat(new Uint8Array([1]), l, r));
	}

	/* RFC 9162 2.1.3.2: does path prove leaf `index` (0-based) with hash
	 * `leaf` in the tree of `size` whose root is `root`? Indices are
	 * numbers (exact to 2^53); halving is division, not a 32-bit shift. */
	async function verifyInclusion(sha256, index, size, leaf, path, root) {
		if (!(index >= 0 && index < size))
			return false;
		let fn = index, sn = size - 1, r = leaf;
		const half = (x) => Math.floor(x / 2);
		for (const p of path) {
			if (sn === 0)
				return false;
			if (fn % 2 === 1 || fn === sn) {
				r = await nodeHash(sha256, p, r);
				if (fn % 2 === 0)
					while (fn % 2 === 0 && fn !== 0) {
						fn = half(fn);
						sn = half(sn);
					}
			} else {
				r = await nodeHash(sha256, r, p);
			}
			fn = half(fn);
			sn = half(sn);
		}
		return sn === 0 && equalBytes(r, root);
	}

	/* A C2SP tlog-checkpoint in a signed note: {origin, size, root
	 * (bytes), body (the signed text), signatures: [{name, blob}]}, or
	 * null when it is not one. */
	function parseCheckpoint(note) {
		if (typeof note !== 'string')
			return null;
		const cut = note.indexOf('\n\n');
		if (cut < 0)
			return null;
		const body = note.slice(0, cut + 1);
		const lines = body.split('\n');
		if (lines.length < 4 || !/^\d+$/.test(lines[1]))
			return null;
		const root = b64OrNull(lines[2]);
		if (root === null)
			return null;
		const sigs = [];
		for (const l of note.slice(cut + 2).split('\n')) {
			const m = /^\u2014 (\S+) (\S+)$/.exec(l);
			if (m)
				sigs.push({name: m[1], blob: m[2]});
		}
		return {origin: lines[0], size: Number(lines[1]), root: root,
			body: body, signatures: sigs};
	}

	/* Checks an inclusion proof as DESIGN 4.4 gives it ({type:
	 * "inclusion", seq, treeSize, hashes, event, checkpoint}) against the
	 * signed checkpoint it carries: the leaf is recomputed from the
	 * event, the path must lead to the checkpoint's root, and the sizes
	 * must agree. Returns {ok, reason, root (base64), size}. The note's
	 * signature needs the verifier key: checkSignature below. */
	async function checkInclusion(sha256, proof) {
		const fail = (reason) => ({ok: false, reason: reason});
		if (!proof || proof.type !== 'inclusion')
			return fail('not an inclusion proof');
		if (!proof.event || proof.event.seq !== proof.seq)
			return fail('the proof does not carry the event of its seq');
		const cp = parseCheckpoint(proof.checkpoint);
		if (!cp)
			return fail('no signed checkpoint of the tree size comes with the proof');
		if (cp.size !== proof.treeSize)
			return fail('the checkpoint is of size ' + cp.size +
				    ', the proof of size ' + proof.treeSize);
		const path = (proof.hashes || []).map(b64OrNull);
		if (path.some((h) => h === null))
			return fail('a proof hash is not base64');
		const leaf = await leafHash(sha256, utf8(jcs(proof.event)));
		const ok = await verifyInclusion(sha256, proof.seq - 1, proof.treeSize,
						 leaf, path, cp.root);
		return ok ? {ok: true, reason: 'the event is leaf ' + proof.seq +
					' of the signed tree of size ' + cp.size,
			     root: b64encode(cp.root), size: cp.size}
			  : fail('the path does not lead to the checkpoint\'s root');
	}

	/* A verifier key "<name>+<8 hex key id>+<base64(0x01 || pub)>". */
	function parseVerifierKey(s) {
		const m = /^([^+\s]+)\+([0-9a-f]{8})\+(\S+)$/.exec(String(s).trim());
		if (!m)
			return null;
		const raw = b64OrNull(m[3]);
		if (raw === null || raw.length !== 33 || raw[0] !== 1)
			return null;
		return {name: m[1], id: m[2], pub: raw.slice(1)};
	}

	/* Key id = first 4 bytes of SHA-256(name || 0x0A || 0x01 || pub). */
	async function keyId(sha256, name, pub) {
		const h = await sha256(concat(utf8(name), new Uint8Array([10, 1]), pub));
		return hex(h.slice(0, 4));
	}

	/* Whether some signature line of the note is by key and verifies.
	 * ed25519verify: async (pub, sig, msg) => bool. */
	async function checkSignature(sha256, ed25519verify, cp, key) {
		const id = await keyId(sha256, key.name, key.pub);
		if (id !== key.id)
			return {ok: false, reason: 'the verifier key\'s id does not match its name and key'};
		for (const s of cp.signatures) {
			if (s.name !== key.name)
				continue;
			const blob = b64OrNull(s.blob);
			if (blob === null || blob.length !== 68 || hex(blob.slice(0, 4)) !== id)
				continue;
			if (await ed25519verify(key.pub, blob.slice(4), utf8(cp.body)))
				return {ok: true, reason: 'signed by ' + key.name};
			return {ok: false, reason: 'the signature of ' + key.name + ' does not verify'};
		}
		return {ok: false, reason: 'no signature of ' + key.name + ' on the checkpoint'};
	}

	/* The browser's primitives for the checks above (Web Crypto; node has
	 * the same object). Ed25519 in Web Crypto is recent: a browser
	 * without it makes ed25519verify throw, which the page reports. */
	function subtle() {
		if (typeof crypto !== 'undefined' && crypto.subtle)
			return crypto.subtle;
		/* node 18 (Debian 12's) has Web Crypto but not as a global. */
		if (typeof require === 'function')
			return require('node:crypto').webcrypto.subtle;
		throw new Error('no Web Crypto here (not a secure context)');
	}

	async function webSha256(bytes) {
		return new Uint8Array(await subtle().digest('SHA-256', bytes));
	}

	async function webEd25519Verify(pub, sig, msg) {
		const k = await subtle().importKey('raw', pub, {name: 'Ed25519'}, false, ['verify']);
		return subtle().verify({name: 'Ed25519'}, k, sig, msg);
	}

	return {
		webSha256, webEd25519Verify, TOTAL_KEY, classKey, HOUR_MS, fmtInt, parseInt10, fmtFixed,
		fmtGpuHours, fmtTime, fmtShare, limitedByText, shortKey, buildTree,
		tenantRows, rowInUse, classesOf, tenantStatus, tenantMatches, visibleRows,
		mergeNodes, parseNdjson, historySeries, niceTicks, chartModel,
		budgetLines, REASONS, verdictsPath, verdictsOfListing, mergeVerdicts,
		requesterText, verdictSubject, reconcilePath, fmtDuration, seqText,
		reconcileRangeText, objectText, triggerText, causeView, overshootView,
		reconcileView, bypassNoneText, listNote, nothingText, jcs,
		b64decode, b64encode, leafHash, nodeHash, verifyInclusion,
		parseCheckpoint, checkInclusion, parseVerifierKey, keyId,
		checkSignature, utf8, concat,
	};
});
