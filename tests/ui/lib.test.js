/*
 * Unit tests of the console's computing JavaScript (query/ui/lib.js) with
 * node's built-in runner: `node --test tests/ui/lib.test.js`.
 * Every random test draws from one seed, printed (UI_SEED=N repeats a run).
 */
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const GL = require('../../query/ui/lib.js');

// The seed of every random test: UI_SEED or the clock, printed once.
const SEED = Number(process.env.UI_SEED || Date.now() % 100000);
console.log('# seed ' + SEED + ' (UI_SEED=' + SEED + ' repeats it)');
// random(): a float in [0, 1) from a mulberry32 stream of SEED and a salt,
// so that each test's draws do not depend on the others'.
function randomFrom(salt) {
	let a = (SEED ^ salt) >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

const sha256 = async (b) => new Uint8Array(crypto.createHash('sha256').update(b).digest());

/* A tenant object as GET /v1/tenants gives it. */
function tenant(ns, parent, o) {
	return Object.assign({
		namespace: ns, parent: parent, budgets: {}, rawKeys: [], reserved: {},
		allocated: {}, subtreeReserved: {}, subtreeAllocated: {}, remaining: {},
		remainingTotal: {remaining: null, limitedBy: null}, overcommitted: [],
	}, o || {});
}

test('fmtInt groups thousands, keeps the sign, names null', () => {
	const rows = [[0, '0'], [7, '7'], [999, '999'], [1000, '1,000'], [-1234567, '-1,234,567'],
		[123456, '123,456'], [9007199254740991, '9,007,199,254,740,991']];
	for (const [n, s] of rows) {
		assert.equal(GL.fmtInt(n), s);
		assert.equal(GL.parseInt10(s), n);
	}
	assert.equal(GL.fmtInt(null), '—');
	assert.equal(GL.fmtInt(null, 'unbounded'), 'unbounded');
	assert.equal(GL.fmtInt(undefined, 'x'), 'x');
	assert.equal(GL.parseInt10('unbounded'), null);
	assert.equal(GL.parseInt10('—'), null);
	assert.equal(GL.parseInt10('1,2x'), null);
});

test('fmtInt round-trips through parseInt10 for random integers', () => {
	const random = randomFrom(1);
	for (let i = 0; i < 2000; i++) {
		const n = Math.round((random() - 0.5) * 2 * Math.pow(10, Math.floor(random() * 15))) || 0;
		assert.equal(GL.parseInt10(GL.fmtInt(n)), n, 'seed ' + SEED + ' n=' + n);
	}
});

test('time, hours, shares and keys format as the page shows them', () => {
	assert.equal(GL.fmtTime('2026-01-02T03:04:05.123456789Z'), '2026-01-02 03:04:05 UTC');
	assert.equal(GL.fmtTime(null), '—');
	assert.equal(GL.fmtGpuHours(5400000), '1.50');
	assert.equal(GL.fmtGpuHours(0), '0.00');
	assert.equal(GL.fmtShare(8, 10), '80%');
	assert.equal(GL.fmtShare(1, 0), 'over');
	assert.equal(GL.fmtShare(1, null), '');
	assert.equal(GL.shortKey('h100.gpuclass.cozystack.io/devices'), 'h100');
	assert.equal(GL.shortKey(GL.TOTAL_KEY), 'total');
	assert.equal(GL.limitedByText({tenant: 'tenant-a', key: GL.TOTAL_KEY}), 'tenant-a (total)');
	assert.equal(GL.limitedByText(null), '—');
});

test('buildTree nests by parent, sorts, and roots a subtree whose parent is not listed', () => {
	const ts = [tenant('tenant-b', 'tenant-root'), tenant('tenant-root', null),
		tenant('tenant-a-x', 'tenant-a'), tenant('tenant-a', 'tenant-root'),
		tenant('tenant-a-b', 'tenant-a')];
	const tr = GL.buildTree(ts);
	assert.deepEqual(tr.roots.map((n) => n.ns), ['tenant-root']);
	assert.deepEqual(tr.byNs.get('tenant-root').children.map((n) => n.ns), ['tenant-a', 'tenant-b']);
	assert.deepEqual(tr.byNs.get('tenant-a').children.map((n) => n.ns), ['tenant-a-b', 'tenant-a-x']);
	assert.equal(tr.byNs.get('tenant-a-x').depth, 2);
	/* A tenant token's view: tenant-a and below, parent not listed. */
	const sub = GL.buildTree(ts.filter((t) => t.namespace.startsWith('tenant-a')));
	assert.deepEqual(sub.roots.map((n) => n.ns), ['tenant-a']);
	assert.equal(sub.byNs.get('tenant-a-b').depth, 1);
	/* A self-parent does not loop. */
	assert.deepEqual(GL.buildTree([tenant('tenant-q', 'tenant-q')]).roots.map((n) => n.ns), ['tenant-q']);
});

test('buildTree keeps every tenant exactly once for random trees', () => {
	const seed = SEED;
	let s = seed;
	const rnd = (n) => {
		s = (s * 1103515245 + 12345) % 2147483648;
		return s % n;
	};
	for (let round = 0; round < 200; round++) {
		const names = ['tenant-root'];
		const ts = [tenant('tenant-root', null)];
		const n = 1 + rnd(40);
		for (let i = 0; i < n; i++) {
			const p = names[rnd(names.length)];
			const ns = (p === 'tenant-root' ? 'tenant' : p) + '-t' + i;
			names.push(ns);
			ts.push(tenant(ns, p));
		}
		ts.sort(() => rnd(3) - 1);
		const tr = GL.buildTree(ts);
		const all = GL.visibleRows(tr, new Set(names), null, []);
		assert.equal(all.length, ts.length, 'seed ' + seed);
		assert.equal(new Set(all.map((r) => r.node.ns)).size, ts.length, 'seed ' + seed);
		/* Pre-order: every tenant comes after its parent. */
		const pos = new Map(all.map((r, i) => [r.node.ns, i]));
		for (const t of ts)
			if (t.parent)
				assert.ok(pos.get(t.parent) < pos.get(t.namespace), 'seed ' + seed);
	}
});

test('tenantRows gives the API numbers: total first, then each class', () => {
	const t = tenant('tenant-a', 'tenant-root', {
		budgets: {'h100.gpuclass.cozystack.io/devices': 8, [GL.TOTAL_KEY]: 10},
		reserved: {h100: 2}, subtreeReserved: {h100: 5, l40s: 1}, subtreeAllocated: {h100: 3},
		remaining: {
			h100: {remaining: 3, limitedBy: {tenant: 'tenant-a', key: 'h100.gpuclass.cozystack.io/devices'}, blocked: false},
			l40s: {remaining: null, limitedBy: null, blocked: true},
		},
		remainingTotal: {remaining: 4, limitedBy: {tenant: 'tenant-a', key: GL.TOTAL_KEY}},
	});
	const rows = GL.tenantRows(t, ['h100', 'l40s']);
	assert.equal(rows.length, 3);
	assert.deepEqual(rows[0], {cls: null, key: GL.TOTAL_KEY, budget: 10, own: 2, subtree: 6,
		allocated: 3, remaining: 4, limitedBy: {tenant: 'tenant-a', key: GL.TOTAL_KEY}, blocked: false});
	assert.equal(rows[1].budget, 8);
	assert.equal(rows[1].subtree, 5);
	assert.equal(rows[1].remaining, 3);
	assert.equal(rows[2].budget, null);
	assert.equal(rows[2].own, 0);
	assert.equal(rows[2].blocked, true);
	assert.deepEqual(rows.map(GL.rowInUse), [true, true, true]);
	const idle = GL.tenantRows(tenant('tenant-z', null, {remaining: {a100: {remaining: 3}}}), ['a100']);
	assert.deepEqual(idle.map(GL.rowInUse), [true, false]);
	assert.deepEqual(GL.classesOf([t, tenant('x', null, {remaining: {a100: {}}})]), ['a100', 'h100', 'l40s']);
});

test('tenantStatus: over, near and ok', () => {
	const k = 'h100.gpuclass.cozystack.io/devices';
	const st = (o) => GL.tenantStatus(tenant('tenant-a', 'tenant-root', o), ['h100']);
	assert.equal(st({}), 'ok');
	assert.equal(st({budgets: {[k]: 10}, subtreeReserved: {h100: 7}}), 'ok');
	assert.equal(st({budgets: {[k]: 10}, subtreeReserved: {h100: 8}}), 'near');
	assert.equal(st({budgets: {[k]: 10}, subtreeReserved: {h100: 11}}), 'over');
	assert.equal(st({budgets: {[GL.TOTAL_KEY]: 4}, subtreeReserved: {h100: 5}}), 'over');
	assert.equal(st({overcommitted: [{key: k, budget: 4, used: 2, carved: 6}]}), 'over');
	assert.equal(st({budgets: {[k]: 0}, subtreeReserved: {}}), 'ok');
});

test('visibleRows: collapse hides descendants; a filter shows matches with their ancestors', () => {
	const k = 'h100.gpuclass.cozystack.io/devices';
	const ts = [tenant('tenant-root', null), tenant('tenant-a', 'tenant-root'),
		tenant('tenant-a-deep', 'tenant-a', {budgets: {[k]: 1}, subtreeReserved: {h100: 2}}),
		tenant('tenant-b', 'tenant-root'), tenant('tenant-b-c', 'tenant-b')];
	const tr = GL.buildTree(ts);
	const names = (rows) => rows.map((r) => r.node.ns);
	assert.deepEqual(names(GL.visibleRows(tr, new Set(), null, ['h100'])), ['tenant-root']);
	assert.deepEqual(names(GL.visibleRows(tr, new Set(['tenant-root']), null, ['h100'])),
		['tenant-root', 'tenant-a', 'tenant-b']);
	/* A filter reaches into collapsed parts. */
	const f = GL.visibleRows(tr, new Set(), {text: 'DEEP', status: 'all'}, ['h100']);
	assert.deepEqual(names(f), ['tenant-root', 'tenant-a', 'tenant-a-deep']);
	assert.deepEqual(f.map((r) => r.match), [false, false, true]);
	assert.deepEqual(names(GL.visibleRows(tr, new Set(), {text: '', status: 'over'}, ['h100'])),
		['tenant-root', 'tenant-a', 'tenant-a-deep']);
	assert.deepEqual(names(GL.visibleRows(tr, new Set(), {text: 'nothing', status: 'all'}, ['h100'])), []);
	/* "b" matches tenant-b and tenant-b-c (and not tenant-root). */
	assert.deepEqual(names(GL.visibleRows(tr, new Set(), {text: '-b', status: 'all'}, ['h100'])),
		['tenant-root', 'tenant-b', 'tenant-b-c']);
});

test('mergeNodes joins classes per node and flags allocation beyond capacity', () => {
	const n = GL.mergeNodes([
		{class: 'h100', nodes: [{name: 'n2', capacity: 8, allocated: 9, serves: true},
			{name: 'n1', capacity: 8, allocated: 8, serves: false}]},
		{class: 'l40s', nodes: [{name: 'n1', capacity: 0, allocated: 1, serves: true}]},
	]);
	assert.deepEqual(n.map((x) => x.name), ['n1', 'n2']);
	assert.deepEqual(n[0].over, ['l40s']);
	assert.deepEqual(n[1].over, ['h100']);
	assert.deepEqual(n[0].classes.h100, {capacity: 8, allocated: 8, serves: false});
});

test('historySeries: mean devices per period for the subtree rows of one tenant', () => {
	const row = (ns, c, s, e, ms, scope) => ({SubAccountId: ns, x_DeviceClass: c, ChargePeriodStart: s,
		ChargePeriodEnd: e, x_DeviceMilliseconds: ms, x_Scope: scope});
	const from = Date.parse('2026-01-01T00:00:00Z');
	const rows = [
		row('tenant-a', 'h100', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', 7200000, 'subtree'),
		row('tenant-a', 'h100', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', 3600000, 'namespace'),
		row('tenant-b', 'h100', '2026-01-01T00:00:00Z', '2026-01-01T01:00:00Z', 3600000, 'subtree'),
		row('tenant-a', 'l40s', '2026-01-01T02:00:00Z', '2026-01-01T03:00:00Z', 1800000, 'subtree'),
		/* A last period clipped at the horizon: 30 min at 1 device = 1. */
		row('tenant-a', 'h100', '2026-01-01T03:00:00Z', '2026-01-01T03:30:00Z', 1800000, 'subtree'),
	];
	const h = GL.historySeries(rows, 'tenant-a', from, from + 4 * GL.HOUR_MS, GL.HOUR_MS);
	assert.deepEqual(h.classes, ['h100', 'l40s']);
	assert.equal(h.times.length, 4);
	assert.deepEqual(h.series.h100, [2, 0, 0, 1]);
	assert.deepEqual(h.series.l40s, [0, 0, 0.5, 0]);
	assert.deepEqual(h.deviceMs, {h100: 9000000, l40s: 1800000});
	assert.deepEqual(h.total, [2, 0, 0.5, 1]);
	const none = GL.historySeries(rows, 'tenant-z', from, from + GL.HOUR_MS, GL.HOUR_MS);
	assert.deepEqual(none.classes, []);
	assert.deepEqual(GL.parseNdjson('{"a":1}\n\n{"a":2}\n'), [{a: 1}, {a: 2}]);
});

test('niceTicks and chartModel put every value and budget inside the chart', () => {
	assert.deepEqual(GL.niceTicks(0), [0, 1]);
	assert.deepEqual(GL.niceTicks(10, 5), [0, 2, 4, 6, 8, 10]);
	assert.deepEqual(GL.niceTicks(7.3, 5), [0, 2, 4, 6, 8]);
	const random = randomFrom(2);
	for (let i = 0; i < 500; i++) {
		const max = random() * Math.pow(10, Math.floor(random() * 6) - 2);
		const t = GL.niceTicks(max, 5);
		assert.ok(t[t.length - 1] >= max && t.length <= 12, 'seed ' + SEED + ' max ' + max + ' ticks ' + t);
	}
	const from = 0;
	const h = {times: [0, 3600000], ends: [3600000, 7200000], classes: ['h100'],
		series: {h100: [1, 3]}, deviceMs: {h100: 14400000}};
	const m = GL.chartModel(h, {'h100 budget': 4}, 800, 300);
	assert.equal(m.top, 4);
	assert.equal(m.x(from), m.pad.l);
	assert.equal(m.x(7200000), 800 - m.pad.r);
	assert.equal(m.y(0), 300 - m.pad.b);
	assert.equal(m.y(4), m.pad.t);
	assert.equal(m.lines.h100.split(' ').length, 4);
	assert.equal(m.budgets[0].y, m.pad.t);
	assert.equal(m.total, null);
	/* With a total budget the sum is drawn, and the scale covers it. */
	const ht = Object.assign({}, h, {classes: ['h100', 'l40s'], series: {h100: [1, 3], l40s: [2, 3]},
		total: [3, 6]});
	const mt = GL.chartModel(ht, {'total budget': 5}, 800, 300);
	assert.equal(mt.top, 6);
	assert.equal(mt.total.split(' ')[2], mt.x(3600000).toFixed(1) + ',' + mt.y(6).toFixed(1));
	assert.deepEqual(GL.budgetLines(tenant('t', null, {budgets: {'h100.gpuclass.cozystack.io/devices': 4,
		[GL.TOTAL_KEY]: 9, cpu: 3}}), ['h100', 'l40s']), {'h100 budget': 4, 'total budget': 9});
});

test('verdicts: the listing path carries the filters and the cursor', () => {
	const any = {tenant: '', reason: '', allowed: 'all'};
	assert.equal(GL.verdictsPath(any), '/v1/verdicts?order=desc&limit=50');
	assert.equal(GL.verdictsPath(any, {before: 17}, 20), '/v1/verdicts?order=desc&before=17&limit=20');
	assert.equal(GL.verdictsPath(any, {after: 40}, 5), '/v1/verdicts?after=40&limit=5');
	assert.equal(GL.verdictsPath(any, {after: 0}), '/v1/verdicts?after=0&limit=50');
	assert.equal(GL.verdictsPath({tenant: 'tenant-a', reason: 'WithinBudget', allowed: 'yes'}, {before: 3}, 9),
		'/v1/verdicts?order=desc&before=3&limit=9&tenant=tenant-a&reason=WithinBudget&allowed=true');
	assert.equal(GL.verdictsPath({allowed: 'no'}, {}), '/v1/verdicts?order=desc&limit=50&allowed=false');
	/* A parameter value is encoded, never spliced into the query. */
	assert.equal(GL.verdictsPath({tenant: 'a&b=c', reason: 'x y'}),
		'/v1/verdicts?order=desc&limit=50&tenant=a%26b%3Dc&reason=x%20y');
});

test('verdicts: pages merge once per id, newest first; the requester when recorded', () => {
	const rec = (id, o) => Object.assign({id, seq: 100 + id, time: 't' + id, allowed: true,
		reason: 'WithinBudget', type: 'admission',
		request: {namespace: 'tenant-a', kind: 'VMInstance', name: 'v' + id}}, o || {});
	const p1 = GL.verdictsOfListing({verdicts: [rec(9), rec(7)], next: 7});
	assert.deepEqual(p1.map((v) => [v.id, v.seq, v.time]), [[9, 109, 't9'], [7, 107, 't7']]);
	assert.equal(p1[0].record.reason, 'WithinBudget');
	const p2 = GL.verdictsOfListing({verdicts: [rec(3), rec(7)], next: null});
	const p3 = GL.verdictsOfListing({verdicts: [rec(10), rec(12)], next: null});
	assert.deepEqual(GL.mergeVerdicts(GL.mergeVerdicts(p1, p2), p3).map((v) => v.id), [12, 10, 9, 7, 3]);
	assert.deepEqual(GL.verdictsOfListing({}), []);
	assert.deepEqual(GL.verdictsOfListing(null), []);
	assert.equal(GL.requesterText(rec(1, {requester: {username: 'system:serviceaccount:kube-system:x',
		groups: ['a'], uid: 'u', operation: 'UPDATE'}})), 'system:serviceaccount:kube-system:x (UPDATE)');
	assert.equal(GL.requesterText(rec(1, {requester: {username: 'alice'}})), 'alice');
	assert.equal(GL.requesterText(rec(1)), '');
	assert.equal(GL.requesterText(rec(1, {requester: {username: ''}})), '');
	assert.equal(GL.requesterText(rec(1, {requester: 'alice'})), '');
	assert.equal(GL.verdictSubject(rec(2, {request: {namespace: 'tenant-b-x', kind: 'VMInstance', name: 'v2'}})),
		'VMInstance tenant-b-x/v2');
	assert.equal(GL.verdictSubject({type: 'declaration', request: {namespace: 'tenant-a'}}),
		'budgets of tenant-a');
});

test('verdicts: the reason filter offers every reason the server counts', () => {
	const src = fs.readFileSync(path.join(__dirname, '..', '..', 'query', 'metrics.c'), 'utf8');
	const table = /static const char \*const reasons\[\] = \{([^}]*)\}/.exec(src);
	assert.ok(table, 'query/metrics.c has its reasons table');
	const names = Array.from(table[1].matchAll(/"([A-Za-z]+)"/g), (m) => m[1]).sort();
	assert.ok(names.length >= 10);
	assert.deepEqual(GL.REASONS, names);
});

/* A GET /v1/reconcile answer (DESIGN 3.6), as the server writes it. */
function reconcileAnswer(o) {
	const t = (s) => '2026-01-01T00:00:' + String(s % 60).padStart(2, '0') + '.000000001Z';
	return Object.assign({
		range: {fromSeq: 1, fromTime: t(1), toSeq: 40, toTime: t(40),
			since: {seq: 10, time: t(10)}, windowMs: 600000},
		preExisting: [{seq: 3, time: t(3), namespace: 'tenant-a', kind: 'VMInstance', name: 'old',
			       uid: 'u-old'}],
		bypasses: [
			{seq: 20, time: t(20), namespace: 'tenant-a', kind: 'VMInstance', name: 'sneak', uid: 'u1',
			 'class': 'h100', before: 0, after: 1, previousSeq: null},
			{seq: 31, time: t(31), namespace: 'tenant-a-b', kind: 'KubernetesNodes', name: 'kn',
			 uid: 'u2', 'class': 'a100', before: 2, after: 6, previousSeq: 25},
		],
		overshoots: [
			{tenant: 'tenant-a', key: 'h100.gpuclass.cozystack.io/devices', fromSeq: 15,
			 fromTime: t(15), toSeq: 22, toTime: t(22), budget: 3, used: 4,
			 peak: {seq: 20, used: 5, budget: 3},
			 trigger: {seq: 15, type: 'RESERVE', namespace: 'tenant-a', kind: 'VMInstance', name: 'race-b'},
			 causes: [{type: 'race', seq: 15, verdicts: [4, 5]}, {type: 'bypass', seq: 20}],
			 causesOmitted: 0},
			{tenant: 'tenant-a', key: GL.TOTAL_KEY, fromSeq: 33, fromTime: t(33), toSeq: null,
			 toTime: null, budget: 8, used: 9, peak: {seq: 33, used: 9, budget: 8},
			 trigger: {seq: 33, type: 'BUDGET'},
			 causes: [{type: 'budgetLowered', seq: 33}, {type: 'preExisting', seq: 3}],
			 causesOmitted: 2},
		],
		counts: {events: 40, admissionVerdicts: 6, preExisting: 1, bypasses: 2, overshoots: 2},
	}, o || {});
}

test('reconcile: the path carries what was typed, trimmed, encoded, in a fixed order', () => {
	assert.equal(GL.reconcilePath({}), '/v1/reconcile');
	assert.equal(GL.reconcilePath(null), '/v1/reconcile');
	assert.equal(GL.reconcilePath({tenant: '', from: '  ', to: '', since: '', window: ''}), '/v1/reconcile');
	assert.equal(GL.reconcilePath({window: ' 90s ', tenant: 'tenant-a', since: '12', bogus: 'x'}),
		'/v1/reconcile?tenant=tenant-a&since=12&window=90s');
	assert.equal(GL.reconcilePath({from: '2026-01-01T00:00:00Z', to: '40'}),
		'/v1/reconcile?from=2026-01-01T00%3A00%3A00Z&to=40');
	/* A value is encoded, never spliced into the query. */
	assert.equal(GL.reconcilePath({tenant: 'a&window=1s'}), '/v1/reconcile?tenant=a%26window%3D1s');
});

test('reconcile: durations print as the CLI reads them (property: they parse back)', () => {
	const rows = [[600000, '10m'], [5400000, '1h30m'], [90000, '1m30s'], [500, '500ms'],
		[0, '0s'], [3600000, '1h'], [1500, '1s500ms']];
	for (const [ms, want] of rows)
		assert.equal(GL.fmtDuration(ms), want);
	assert.equal(GL.fmtDuration(null), '—');
	assert.equal(GL.fmtDuration(-1), '—');
	/* A reader of Go-style durations, as model/reconcile.c's. */
	const parse = (d) => {
		let ms = 0;
		for (const m of d.matchAll(/(\d+)(ms|h|m|s)/g))
			ms += Number(m[1]) * {h: 3600000, m: 60000, s: 1000, ms: 1}[m[2]];
		return ms;
	};
	const random = randomFrom(11);
	for (let i = 0; i < 2000; i++) {
		const ms = Math.floor(random() * Math.pow(10, 1 + Math.floor(random() * 9)));
		const d = GL.fmtDuration(ms);
		assert.match(d, /^(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$/, 'seed ' + SEED + ' ms=' + ms);
		assert.equal(parse(d), ms, 'seed ' + SEED + ' ms=' + ms + ' -> ' + d);
	}
});

test('reconcile: the range in sentences, with or without admission in force', () => {
	const d = reconcileAnswer();
	assert.equal(GL.reconcileRangeText(d.range),
		'Events from seq 1 (2026-01-01 00:00:01 UTC) to seq 40 (2026-01-01 00:00:40 UTC), every tenant. ' +
		'Admission is in force from seq 10 (2026-01-01 00:00:10 UTC): objects first observed before it ' +
		'are listed as observed before admission, not as bypasses. A verdict covers an observation up to ' +
		'10m after it.');
	const never = Object.assign({}, d.range, {since: null, tenant: 'tenant-a', windowMs: 90000});
	assert.match(GL.reconcileRangeText(never), /, the subtree of tenant-a\. Admission was never in force/);
	assert.match(GL.reconcileRangeText(never), /up to 1m30s after it\.$/);
	assert.match(GL.reconcileRangeText({fromSeq: 1, fromTime: null, toSeq: 0, toTime: null, since: null,
					    windowMs: 600000}), /^The log holds no event yet \(every tenant\)\./);
	assert.equal(GL.reconcileRangeText(null), '');
	assert.match(GL.bypassNoneText(d.range), /^None: every reservation /);
	assert.match(GL.bypassNoneText(never), /^None: admission was never in force/);
	assert.match(GL.bypassNoneText(Object.assign({}, d.range, {since: {seq: 41}})),
		/^None: admission was never in force/, 'since after the range');
	assert.equal(GL.nothingText(d.range), 'Nothing found: no bypass and no overshoot from seq 1 to seq 40.');
	assert.equal(GL.nothingText(never), 'Nothing found: no bypass and no overshoot in the subtree of ' +
		'tenant-a from seq 1 to seq 40.');
	assert.equal(GL.listNote(200, 0, 'newest'), '');
	assert.match(GL.listNote(200, 1234, 'newest'), /^The 200 newest of 1,434 are listed; /);
});

test('reconcile: the view lays out the answer: newest first, each cause with its links', () => {
	const v = GL.reconcileView(reconcileAnswer());
	assert.equal(v.nothing, false);
	assert.deepEqual(v.bypasses.map((b) => b.seq), [31, 20]);
	assert.deepEqual([...v.shownBypass].sort(), [20, 31]);
	assert.deepEqual([...v.shownPre], [3]);
	assert.deepEqual(v.overshoots.map((o) => o.fromSeq), [33, 15]);
	const [open, closed] = v.overshoots;
	assert.deepEqual(open, {
		tenant: 'tenant-a', key: GL.TOTAL_KEY, keyShort: 'total', fromSeq: 33,
		from: 'seq 33 (2026-01-01 00:00:33 UTC)', to: 'still over', open: true,
		start: 'used 9 of 8', peak: 'used 9 of 8 (+1) at seq 33', trigger: 'BUDGET at seq 33',
		causes: [{type: 'budgetLowered', label: 'budget lowered', seq: 33, verdicts: []},
			 {type: 'preExisting', label: 'observed before admission', seq: 3, verdicts: []}],
		omitted: 2});
	assert.equal(closed.to, 'seq 22 (2026-01-01 00:00:22 UTC)');
	assert.equal(closed.open, false);
	assert.equal(closed.keyShort, 'h100');
	assert.equal(closed.peak, 'used 5 of 3 (+2) at seq 20');
	assert.equal(closed.trigger, 'RESERVE of VMInstance tenant-a/race-b at seq 15');
	assert.deepEqual(closed.causes[0], {type: 'race', label: 'race', seq: 15, verdicts: [4, 5]});
	assert.deepEqual(closed.causes[1].verdicts, []);
	/* The view's lists are its own: the answer is not changed. */
	closed.causes[0].verdicts.push(99);
	assert.deepEqual(reconcileAnswer().overshoots[0].causes[0].verdicts, [4, 5]);
	assert.equal(GL.objectText(v.bypasses[0]), 'KubernetesNodes tenant-a-b/kn');
	assert.equal(GL.causeView({type: 'new', seq: 1}).label, 'new');
	/* Nothing found: no bypass and no overshoot, whatever was observed
	 * before admission (not a finding). */
	const clean = GL.reconcileView(reconcileAnswer({bypasses: [], overshoots: []}));
	assert.equal(clean.nothing, true);
	assert.equal(clean.pre.length, 1);
	assert.equal(GL.reconcileView(reconcileAnswer({bypasses: []})).nothing, false);
	assert.equal(GL.reconcileView(reconcileAnswer({overshoots: []})).nothing, false);
	assert.equal(GL.reconcileView({}).nothing, true);
});

test('reconcile: bounded lists keep each finding once, newest first (property)', () => {
	const random = randomFrom(12);
	const int = (n) => Math.floor(random() * n);
	for (let i = 0; i < 300; i++) {
		const seqs = new Set();
		while (seqs.size < int(60))
			seqs.add(1 + int(1000));
		const bypasses = [...seqs].sort((a, b) => a - b).map((seq) => ({seq, time: null,
			namespace: 'tenant-a', kind: 'VMInstance', name: 'v' + seq, 'class': 'h100',
			before: 0, after: 1, previousSeq: null}));
		const overshoots = [];
		for (let k = int(40); k > 0; k--)
			overshoots.push({tenant: 'tenant-' + 'abc'[int(3)], key: GL.TOTAL_KEY, fromSeq: 1 + int(50),
				toSeq: null, budget: 1, used: 2, peak: {seq: 1, used: 2, budget: 1},
				trigger: {seq: 1, type: 'BUDGET'}, causes: [], causesOmitted: 0});
		overshoots.sort((a, b) => a.fromSeq - b.fromSeq || (a.tenant < b.tenant ? -1 : 1));
		const pre = bypasses.map((b) => Object.assign({}, b, {seq: b.seq + 2000}));
		const max = int(50);
		const what = 'seed ' + SEED + ' case ' + i + ' max ' + max;
		const v = GL.reconcileView({bypasses, overshoots, preExisting: pre.slice().reverse(),
					    counts: {}}, max);
		assert.equal(v.bypasses.length + v.bypassesMore, bypasses.length, what);
		assert.equal(v.bypasses.length, Math.min(max, bypasses.length), what);
		assert.deepEqual(v.bypasses.map((b) => b.seq),
			bypasses.map((b) => b.seq).reverse().slice(0, max), what);
		assert.deepEqual([...v.shownBypass].sort((a, b) => a - b),
			v.bypasses.map((b) => b.seq).sort((a, b) => a - b), what);
		assert.equal(v.overshoots.length + v.overshootsMore, overshoots.length, what);
		assert.ok(v.overshoots.every((o, j) => j === 0 || o.fromSeq <= v.overshoots[j - 1].fromSeq), what);
		assert.deepEqual(v.overshoots.map((o) => o.fromSeq),
			overshoots.map((o) => o.fromSeq).reverse().slice(0, max), what);
		assert.deepEqual(v.pre.map((p) => p.seq), pre.map((p) => p.seq).slice(0, max), what);
		assert.equal(v.pre.length + v.preMore, pre.length, what);
		assert.equal(v.nothing, bypasses.length === 0 && overshoots.length === 0, what);
	}
});

test('jcs sorts keys at every level and prints no space', () => {
	assert.equal(GL.jcs({b: 1, a: [true, null, 'x"y'], c: {z: 1, y: -2.5}}),
		'{"a":[true,null,"x\\"y"],"b":1,"c":{"y":-2.5,"z":1}}');
	assert.equal(GL.jcs({'\u00e9': 1, 'z': 2, 'A': 3}), '{"A":3,"z":2,"\u00e9":1}');
});

/* RFC 9162 2.1.1 and 2.1.3.1, written out as the reference. */
async function mth(leaves) {
	if (leaves.length === 1)
		return GL.leafHash(sha256, leaves[0]);
	let k = 1;
	while (k * 2 < leaves.length)
		k *= 2;
	return GL.nodeHash(sha256, await mth(leaves.slice(0, k)), await mth(leaves.slice(k)));
}
async function refPath(m, leaves) {
	if (leaves.length === 1)
		return [];
	let k = 1;
	while (k * 2 < leaves.length)
		k *= 2;
	if (m < k)
		return (await refPath(m, leaves.slice(0, k))).concat([await mth(leaves.slice(k))]);
	return (await refPath(m - k, leaves.slice(k))).concat([await mth(leaves.slice(0, k))]);
}

test('verifyInclusion accepts every RFC 9162 path and rejects any change (property)', async () => {
	const seed = SEED;
	let s = seed;
	const rnd = (n) => {
		s = (s * 1103515245 + 12345) % 2147483648;
		return s % n;
	};
	for (let round = 0; round < 60; round++) {
		const size = 1 + rnd(70);
		const leaves = [];
		for (let i = 0; i < size; i++)
			leaves.push(GL.utf8('event ' + round + '.' + i + '.' + rnd(1000)));
		const root = await mth(leaves);
		for (let i = 0; i < size; i++) {
			const path = await refPath(i, leaves);
			const leaf = await GL.leafHash(sha256, leaves[i]);
			const ctx = 'seed ' + seed + ' size ' + size + ' index ' + i;
			assert.ok(await GL.verifyInclusion(sha256, i, size, leaf, path, root), ctx);
			/* The wrong index, size, leaf, path or root fail. */
			if (size > 1)
				assert.ok(!await GL.verifyInclusion(sha256, (i + 1) % size, size, leaf, path, root), ctx + ' index');
			/* (Another size may verify the same path when the tree's
			 * shape along it is the same: the size is bound by the
			 * signed checkpoint, which checkInclusion compares.) */
			assert.ok(!await GL.verifyInclusion(sha256, i, size, await sha256(leaves[i]), path, root), ctx + ' leaf');
			if (path.length) {
				const bad = path.map((p) => p.slice());
				bad[rnd(bad.length)][rnd(32)] ^= 1 << rnd(8);
				assert.ok(!await GL.verifyInclusion(sha256, i, size, leaf, bad, root), ctx + ' path');
				assert.ok(!await GL.verifyInclusion(sha256, i, size, leaf, path.slice(1), root), ctx + ' short');
			}
			assert.ok(!await GL.verifyInclusion(sha256, i, size, leaf, path.concat([root]), root), ctx + ' long');
			const r2 = root.slice();
			r2[0] ^= 0x80;
			assert.ok(!await GL.verifyInclusion(sha256, i, size, leaf, path, r2), ctx + ' root');
		}
		assert.ok(!await GL.verifyInclusion(sha256, size, size, leaves[0], [], root));
	}
});

/* A signed checkpoint as DESIGN 4.4 gives it, made here with node's
 * Ed25519 so that the page's check is tested against real signatures. */
async function signedProof(events, index) {
	const leaves = events.map((e) => GL.utf8(GL.jcs(e)));
	const root = await mth(leaves);
	const {publicKey, privateKey} = crypto.generateKeyPairSync('ed25519');
	const pub = new Uint8Array(publicKey.export({format: 'der', type: 'spki'}).slice(-32));
	const name = 'gpuledger.example/test';
	const id = await GL.keyId(sha256, name, pub);
	const body = name + '\n' + events.length + '\n' + GL.b64encode(root) + '\n';
	const sig = new Uint8Array(crypto.sign(null, Buffer.from(body), privateKey));
	const blob = GL.concat(Buffer.from(id, 'hex'), sig);
	const note = body + '\n\u2014 ' + name + ' ' + GL.b64encode(blob) + '\n';
	const proof = {type: 'inclusion', seq: index + 1, treeSize: events.length,
		hashes: (await refPath(index, leaves)).map(GL.b64encode), event: events[index], checkpoint: note};
	const key = name + '+' + id + '+' + GL.b64encode(GL.concat(new Uint8Array([1]), pub));
	return {proof, key};
}

const edVerify = async (pub, sig, msg) => {
	const k = crypto.createPublicKey({key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'),
		Buffer.from(pub)]), format: 'der', type: 'spki'});
	return crypto.verify(null, Buffer.from(msg), k, Buffer.from(sig));
};

test('checkInclusion proves an event against its signed checkpoint; tampering fails', async () => {
	const events = [];
	for (let i = 1; i <= 13; i++)
		events.push({seq: i, time: '2026-01-01T00:00:0' + (i % 10) + 'Z', type: 'TICK'});
	events[6] = {seq: 7, time: '2026-01-01T00:00:07Z', type: 'VERDICT', record: {id: 1, allowed: true, b: [1, 2]}};
	const {proof, key} = await signedProof(events, 6);
	const res = await GL.checkInclusion(sha256, proof);
	assert.ok(res.ok, res.reason);
	assert.equal(res.size, 13);
	const cp = GL.parseCheckpoint(proof.checkpoint);
	assert.equal(cp.origin, 'gpuledger.example/test');
	const k = GL.parseVerifierKey(key);
	assert.ok((await GL.checkSignature(sha256, edVerify, cp, k)).ok);

	const tamper = async (f) => {
		const p = JSON.parse(JSON.stringify(proof));
		f(p);
		return (await GL.checkInclusion(sha256, p)).ok;
	};
	assert.equal(await tamper((p) => { p.event.record.allowed = false; }), false);
	assert.equal(await tamper((p) => { p.event.seq = 8; p.seq = 8; }), false);
	assert.equal(await tamper((p) => { p.seq = 8; }), false);
	assert.equal(await tamper((p) => { p.treeSize = 14; }), false);
	assert.equal(await tamper((p) => { p.hashes.pop(); }), false);
	assert.equal(await tamper((p) => { delete p.checkpoint; }), false);
	assert.equal(await tamper((p) => { p.checkpoint = p.checkpoint.replace('\n13\n', '\n12\n'); }), false);
	assert.equal(await tamper((p) => { p.type = 'consistency'; }), false);
	assert.equal(await tamper((p) => { p.hashes[0] = '!!'; }), false);
	/* A checkpoint changed after signing, another key, a wrong id. */
	const cp2 = GL.parseCheckpoint(proof.checkpoint.replace('\n13\n', '\n14\n'));
	assert.equal((await GL.checkSignature(sha256, edVerify, cp2, k)).ok, false);
	const other = (await signedProof(events, 0)).key;
	assert.equal((await GL.checkSignature(sha256, edVerify, cp, GL.parseVerifierKey(other))).ok, false);
	const wrongId = GL.parseVerifierKey(key.replace(/\+([0-9a-f]{8})\+/, '+00000000+'));
	assert.match((await GL.checkSignature(sha256, edVerify, cp, wrongId)).reason, /id does not match/);
	assert.equal(GL.parseVerifierKey('nope'), null);
	assert.equal(GL.parseCheckpoint('one line'), null);
});

/* Known answers from the C side: proofs printed by `gpuledger prove` (the
 * issue 16 branch, its RFC 9162 tree, JCS and signed notes) on a small
 * simulated ledger with one verdict whose request holds a non-ASCII name,
 * and the verifier key `gpuledger keygen` wrote. The page's checker must
 * agree with them byte for byte. */
test('checkInclusion and checkSignature accept proofs made by gpuledger prove', async () => {
	const dir = path.join(__dirname, 'fixtures');
	const key = GL.parseVerifierKey(fs.readFileSync(path.join(dir, 'verifier.pub'), 'utf8'));
	assert.ok(key, 'verifier key parses');
	for (const f of ['proof-verdict.json', 'proof-budget.json']) {
		const proof = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
		const res = await GL.checkInclusion(sha256, proof);
		assert.ok(res.ok, f + ': ' + res.reason);
		const sig = await GL.checkSignature(sha256, edVerify, GL.parseCheckpoint(proof.checkpoint), key);
		assert.ok(sig.ok, f + ': ' + sig.reason);
		/* The same with the Web Crypto primitives the page uses. */
		assert.ok((await GL.checkInclusion(GL.webSha256, proof)).ok, f + ' (web crypto)');
		assert.ok((await GL.checkSignature(GL.webSha256, GL.webEd25519Verify,
			GL.parseCheckpoint(proof.checkpoint), key)).ok, f + ' (web crypto)');
		/* One changed character of the event breaks it. */
		const bad = JSON.parse(JSON.stringify(proof));
		bad.event.time = bad.event.time.replace(/0/, '1');
		assert.equal((await GL.checkInclusion(sha256, bad)).ok, false, f);
	}
});
