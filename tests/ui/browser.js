/*
 * The console's browser test (tests/ui_cli.sh runs it): Debian chromium,
 * headless, drives /ui of a running `gpuledger serve` and checks that
 *   - each view renders, and the tenants, classes, nodes and history
 *     numbers on the page equal the API's (three tenants in full);
 *   - a tenant token sees its own subtree only, never a sibling, and the
 *     views its role may not read say so;
 *   - without --token-file (UI_OPEN_URL) the views show with no token
 *     and the sign-in form never appears, "Sign in" offers it anyway;
 *     with it, the form appears only after the API's 401 to a request
 *     without a token, a refused token (typed, or one that stops being
 *     accepted) brings it back saying so and is dropped, and a 403 is
 *     the token's scope, not a sign-in prompt;
 *   - the timer refresh keeps the user's place (collapsed tenant, focus);
 *   - keyboard: the tabs move with the arrow keys, a verdict opens with
 *     Enter;
 *   - the reconciliation in the verdicts view equals GET /v1/reconcile
 *     (counts, bypasses, overshoots and their causes) for each token: the
 *     race the script staged names its two verdicts, each opening its
 *     record (a 403 for a tenant token, said as such), the bypass cause
 *     leads to its row, a tenant token sees its own subtree's findings
 *     only; it says that it is loading while the answer is held back, a
 *     400 and a 403 are said as such, and a clean ledger (UI_CLEAN_URL)
 *     says plainly that nothing was found;
 *   - no console error, no exception, no CSP violation, and no request to
 *     anything but the server on 127.0.0.1.
 * Screenshots of each view go to $UI_ARTIFACTS.
 *
 * Environment: UI_URL (http://127.0.0.1:PORT, a serve with --token-file),
 * UI_OPEN_URL (the same ledger served without one), UI_CLEAN_URL (a ledger
 * where reconcile finds nothing, without --token-file), ADMIN_TOKEN,
 * TENANT_TOKEN, TENANT_NS, SIBLING_NS, UI_RACE_TENANT and UI_RACE_IDS (a
 * tenant of TENANT_NS's subtree where the verdicts with these ids raced, an
 * object "sneak" bypassed admission and the budget was lowered; an object
 * "sneak-sib" bypassed it in SIBLING_NS), UI_SIM_END (the time the
 * simulated history ends: the history view is checked up to it),
 * UI_ARTIFACTS, UI_EXPECT_OVER (set: the ledger has a node allocated
 * beyond capacity, which must be highlighted). Prints FAIL lines and a last line
 * "browser: N passed, M failed"; exits 1 on any failure.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const {launch} = require('./cdp.js');
const GL = require('../../query/ui/lib.js');

const URL0 = process.env.UI_URL;
const OPEN = process.env.UI_OPEN_URL;
const ADMIN = process.env.ADMIN_TOKEN;
const TENANT = process.env.TENANT_TOKEN;
const TNS = process.env.TENANT_NS;
const SIB = process.env.SIBLING_NS;
const CLEAN = process.env.UI_CLEAN_URL;
const RACE = process.env.UI_RACE_TENANT;
const RACE_IDS = (process.env.UI_RACE_IDS || '').split(',').filter((x) => x).map(Number);
const OUT = process.env.UI_ARTIFACTS || 'build/ui-artifacts';
const W = 1366, H = 900;

let pass = 0, fail = 0;
const WATCHED = []; /* every page's watcher, checked at the end */
function ok(cond, what) {
	if (cond) {
		pass++;
	} else {
		fail++;
		console.log('FAIL: ' + what);
	}
	return cond;
}

async function apiGet(p, tok, base) {
	const r = await fetch((base || URL0) + p, {headers: tok ? {Authorization: 'Bearer ' + tok} : {}});
	const text = await r.text();
	if (!r.ok)
		throw new Error(p + ': ' + r.status + ' ' + text);
	return text;
}
const apiJson = async (p, tok, base) => JSON.parse(await apiGet(p, tok, base));

/* Every verdict GET /v1/verdicts lists for query q, newest first, read
 * through its cursor in pages of another size than the console's. */
async function apiVerdicts(q) {
	const out = [];
	for (let before = null, pages = 0; pages < 1000; pages++) {
		const d = await apiJson('/v1/verdicts?order=desc&limit=37' + (q ? '&' + q : '') +
					(before === null ? '' : '&before=' + before), ADMIN);
		out.push(...d.verdicts);
		if (d.next === null)
			break;
		before = d.next;
	}
	return out;
}
/* The listing's query for the page's filter controls. */
function verdictQuery(f) {
	const q = [];
	if (f['v-tenant'])
		q.push('tenant=' + encodeURIComponent(f['v-tenant']));
	if (f['v-reason'])
		q.push('reason=' + encodeURIComponent(f['v-reason']));
	if (f['v-allowed'] !== 'all')
		q.push('allowed=' + (f['v-allowed'] === 'yes'));
	return q.join('&');
}
/* What the page must show of each: id, requester, answer, reason. */
const apiRows = (vs) => vs.map((v) => [v.id, v.requester && v.requester.username
	? v.requester.username + ' (' + v.requester.operation + ')' : 'not recorded',
	v.allowed ? 'allowed' : 'denied', v.reason]);

/* Everything a page does that the test watches. */
function watch(b, page) {
	/* requests: URLs; auth: of the API's, those sent with a token. */
	const w = {requests: [], auth: [], errors: []};
	b.on((m) => {
		if (m.sessionId !== page.s)
			return;
		const p = m.params;
		if (m.method === 'Network.requestWillBeSent') {
			w.requests.push(p.request.url);
			if (/\/v1\//.test(p.request.url))
				w.auth.push([p.request.url, p.request.headers.Authorization !== undefined]);
		}
		else if (m.method === 'Runtime.consoleAPICalled' &&
			 (p.type === 'error' || p.type === 'assert'))
			w.errors.push('console.' + p.type + ': ' +
				      p.args.map((a) => a.value || a.description).join(' '));
		else if (m.method === 'Runtime.exceptionThrown')
			w.errors.push('exception: ' + (p.exceptionDetails.exception
				? p.exceptionDetails.exception.description : p.exceptionDetails.text));
		else if (m.method === 'Log.entryAdded' &&
			 (p.entry.level === 'error' || p.entry.source === 'security'))
			w.errors.push('log: ' + p.entry.text + ' ' + (p.entry.url || ''));
	});
	return w;
}

/* Set before the page's own scripts: window.__loginShown becomes true
 * the moment the sign-in form is shown, however briefly. */
const LOGIN_WATCH = `window.__loginShown = false;
new MutationObserver(() => {
	const l = document.getElementById('login');
	if (l && !l.hidden)
		window.__loginShown = true;
}).observe(document, {childList: true, subtree: true, attributes: true, attributeFilter: ['hidden']});`;

async function openPage(b, base) {
	const page = await b.page();
	const w = watch(b, page);
	WATCHED.push(w);
	for (const d of ['Page', 'Runtime', 'Network', 'Log'])
		await page.send(d + '.enable');
	await page.send('Emulation.setDeviceMetricsOverride',
			{width: W, height: H, deviceScaleFactor: 1, mobile: false});
	await page.send('Page.addScriptToEvaluateOnNewDocument', {source: LOGIN_WATCH});
	await page.send('Page.navigate', {url: (base || URL0) + '/ui'});
	return {page, w};
}

/* The sign-in form, as the page shows it. */
const LOGIN_STATE = `(() => ({
	shown: !document.getElementById('login').hidden,
	focused: document.activeElement.id === 'token',
	msg: document.getElementById('login-error').textContent,
	field: document.getElementById('token').value,
	noToken: !document.getElementById('no-token').hidden,
	views: ['tenants', 'classes', 'history', 'verdicts'].filter(
		(v) => !document.getElementById('view-' + v).hidden),
	stored: sessionStorage.getItem('gpuledger.token'),
}))()`;

/* A fresh page of the server with --token-file asks for a token, and
 * only once the API has refused a request without one. */
async function asksForToken(page, w, who) {
	const f = await page.until(`(() => { const f = ${LOGIN_STATE};
		return f.shown && f.focused ? f : null; })()`, 'the sign-in form');
	ok(w.auth.length > 0 && w.auth[0][0] === URL0 + '/v1/tenants' && !w.auth[0][1],
	   who + ': the page first asks the API without a token: ' + JSON.stringify(w.auth.slice(0, 2)));
	ok(/^This server needs a token: it answered a request without one with 401/.test(f.msg),
	   who + ': the form says the server needs a token (its 401): "' + f.msg + '"');
	ok(!f.noToken && f.views.length === 0,
	   who + ': no "Continue without a token" where the server needs one, no view: ' + JSON.stringify(f));
}

/* A refused token: the form is back, says so, and the token is dropped. */
async function refusedToken(page, who) {
	const f = await page.until(`(() => { const f = ${LOGIN_STATE};
		return f.shown && f.msg !== '' && !/needs a token/.test(f.msg) ? f : null; })()`,
	'the form after a refused token');
	ok(/^The server refused this token \(401: .*\): it is wrong, or it has expired or been revoked/.test(f.msg),
	   who + ': the form says the token was refused: "' + f.msg + '"');
	ok(f.stored === null && f.field === '' && f.focused && f.views.length === 0,
	   who + ': the refused token is dropped from session storage, the field is empty and focused, ' +
	   'no view is shown: ' + JSON.stringify(f));
}

/* Types the token into the sign-in form and presses Enter, as a user. */
async function signIn(page, tok) {
	await page.until("!document.getElementById('login').hidden &&" +
			 " document.activeElement.id === 'token'", 'the sign-in form');
	await page.send('Input.insertText', {text: tok});
	await page.send('Input.dispatchKeyEvent', {type: 'keyDown', key: 'Enter', code: 'Enter',
						   windowsVirtualKeyCode: 13, text: '\r'});
	await page.send('Input.dispatchKeyEvent', {type: 'keyUp', key: 'Enter', code: 'Enter',
						   windowsVirtualKeyCode: 13});
}

/* The tenants table as the page shows it: {ns: {cls|'': {field: text}}}. */
const READ_TENANTS = `(() => {
	const out = {};
	for (const b of document.querySelectorAll('#t-table tbody[data-ns]')) {
		const t = out[b.dataset.ns] = {};
		for (const tr of b.rows) {
			const r = t[tr.dataset.cls] = {};
			for (const td of tr.querySelectorAll('td[data-f]'))
				r[td.dataset.f] = td.textContent;
		}
	}
	return out;
})()`;

/* What the page must show for tenant t, straight from the API's JSON
 * (not through lib.js, so that a bug there cannot hide): per class and
 * for the total. */
function expectedRows(t, classes) {
	const TOTAL = 'gpuclass.cozystack.io/devices';
	const sum = (o) => Object.values(o).reduce((a, x) => a + x, 0);
	const lb = (l) => (l ? l.tenant + ' (' + (l.key === TOTAL ? 'total'
		: l.key.split('.')[0]) + ')' : '—');
	const out = {'': {budget: t.budgets[TOTAL] === undefined ? null : t.budgets[TOTAL],
		own: sum(t.reserved), subtree: sum(t.subtreeReserved),
		allocated: sum(t.subtreeAllocated),
		remaining: t.remainingTotal.remaining === null ? 'unbounded'
			: String(t.remainingTotal.remaining),
		limitedBy: lb(t.remainingTotal.limitedBy)}};
	for (const c of classes) {
		const k = c + '.gpuclass.cozystack.io/devices';
		const r = t.remaining[c];
		out[c] = {budget: t.budgets[k] === undefined ? null : t.budgets[k],
			own: t.reserved[c] || 0, subtree: t.subtreeReserved[c] || 0,
			allocated: t.subtreeAllocated[c] || 0,
			remaining: r.blocked ? 'blocked (raw key)' : r.remaining === null
				? 'unbounded' : String(r.remaining),
			limitedBy: lb(r.limitedBy)};
	}
	return out;
}

function checkTenant(shown, t, classes) {
	const got = shown[t.namespace];
	if (!ok(got !== undefined, 'tenant ' + t.namespace + ' is on the page'))
		return;
	for (const [cls, e] of Object.entries(expectedRows(t, classes))) {
		const g = got[cls];
		const where = t.namespace + ' ' + (cls || 'total');
		if (!ok(g !== undefined, where + ' has a row'))
			continue;
		for (const f of ['budget', 'own', 'subtree', 'allocated'])
			ok(GL.parseInt10(g[f]) === e[f], where + ' ' + f + ' ' + g[f] + ' != ' + e[f]);
		const rem = /^-?[\d,]+$/.test(g.remaining) ? String(GL.parseInt10(g.remaining))
			: g.remaining;
		ok(rem === e.remaining, where + ' remaining ' + g.remaining + ' != ' + e.remaining);
		ok(g.limitedBy === e.limitedBy, where + ' limitedBy ' + g.limitedBy + ' != ' + e.limitedBy);
	}
	ok(Object.keys(got).length === classes.length + 1, t.namespace + ' has a row per class and a total');
}

/* Three tenants to compare in full: the root, the deepest, and one with a
 * budget of its own that is neither. */
function pickThree(tenants) {
	const depth = (t) => t.namespace.split('-').length;
	const root = tenants.find((t) => t.parent === null);
	const deep = tenants.slice().sort((a, b) => depth(b) - depth(a) ||
					  (a.namespace < b.namespace ? -1 : 1))[0];
	const mid = tenants.find((t) => t !== root && t !== deep &&
				 Object.keys(t.budgets).length > 0) ||
		    tenants.find((t) => t !== root && t !== deep);
	return [root, deep, mid];
}

/* What the view shown breaks of the basics: a form control without a
 * label, a button without a name, text below WCAG AA contrast (4.5:1,
 * computed colours against the nearest opaque background). */
const A11Y = `(() => {
	const bad = [];
	for (const e of document.querySelectorAll('input, select'))
		if (e.offsetParent && (!e.labels || e.labels.length === 0))
			bad.push('no label: ' + e.id);
	for (const b of document.querySelectorAll('button'))
		if (b.offsetParent && !(b.textContent.trim() || b.getAttribute('aria-label')))
			bad.push('a button without a name');
	const rgb = (s) => (s.match(/[\\d.]+/g) || []).map(Number);
	const lum = (c) => {
		const [r, g, b] = c.slice(0, 3).map((v) => {
			v /= 255;
			return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
		});
		return 0.2126 * r + 0.7152 * g + 0.0722 * b;
	};
	const back = (e) => {
		for (; e; e = e.parentElement) {
			const c = rgb(getComputedStyle(e).backgroundColor);
			if (c.length === 3 || (c.length === 4 && c[3] > 0))
				return c;
		}
		return [255, 255, 255];
	};
	let checked = 0;
	for (const e of document.querySelectorAll('body *')) {
		if (!e.offsetParent)
			continue;
		if (!Array.from(e.childNodes).some((n) => n.nodeType === 3 && n.textContent.trim()))
			continue;
		const a = lum(rgb(getComputedStyle(e).color)), b = lum(back(e));
		const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
		checked++;
		if (ratio < 4.5)
			bad.push('contrast ' + ratio.toFixed(2) + ': ' + e.tagName + ' ' +
				 e.textContent.trim().slice(0, 30));
	}
	return checked > 0 ? bad : ['no text checked'];
})()`;

async function shot(page, name) {
	const bad = await page.eval(A11Y);
	ok(bad.length === 0, name + ' view: labels, names and contrast: ' + bad.slice(0, 5).join(' | '));
	fs.mkdirSync(OUT, {recursive: true});
	await page.screenshot(path.join(OUT, name + '.png'));
}

/* ------------------------------------------------------------------ */
/* The reconciliation (DESIGN 3.6) in the verdicts view. */

const TXT = (sel) => `((e) => e ? e.textContent : null)(document.querySelector(${JSON.stringify(sel)}))`;
/* The reconciliation as the page shows it. */
const READ_RECONCILE = `(() => {
	const f = (tr) => Object.fromEntries(Array.from(tr.querySelectorAll('[data-f]')).map(
		(td) => [td.dataset.f, td.textContent]));
	const st = document.getElementById('r-status');
	const nothing = document.getElementById('r-nothing');
	return {
		shown: !document.getElementById('r-result').hidden,
		busy: document.getElementById('r-section').getAttribute('aria-busy'),
		status: st.textContent, statusClass: st.className,
		range: document.getElementById('r-range').textContent,
		nothing: nothing.hidden ? null : nothing.textContent,
		counts: f(document.getElementById('r-counts')),
		bypasses: Array.from(document.querySelectorAll('#r-bypasses tbody tr[data-seq]')).map(
			(tr) => Object.assign(f(tr), {id: tr.id})),
		bypassNone: ${TXT('#r-bypasses tbody tr:not([data-seq]) td')},
		overshoots: Array.from(document.querySelectorAll('#r-overshoots tbody tr[data-from]')).map((tr) => ({
			tenant: tr.dataset.tenant, key: tr.dataset.key, fromSeq: Number(tr.dataset.from),
			over: tr.className === 'over', to: tr.querySelector('[data-f=to]').textContent,
			causes: Array.from(tr.querySelectorAll('ul.causes li[data-type]')).map((li) => ({
				type: li.dataset.type, seq: Number(li.dataset.seq),
				verdicts: Array.from(li.querySelectorAll('button[data-verdict]')).map(
					(x) => Number(x.dataset.verdict)),
				bypass: li.querySelector('button[data-bypass]') ? 'rb-' +
					li.querySelector('button[data-bypass]').dataset.bypass : null})),
		})),
		overshootNone: ${TXT('#r-overshoots tbody tr:not([data-from]) td')},
		pre: document.querySelectorAll('#r-pre-table tbody tr').length,
		preOpen: document.getElementById('r-pre').open,
		preSummary: document.getElementById('r-pre-h').textContent,
	};
})()`;

/* The page against GET /v1/reconcile's answer d, straight from the JSON
 * (lib.js is not used, so that a bug there cannot hide). */
function checkReconcile(got, d, who) {
	const at = (what) => who + ': ' + what;
	for (const k of ['events', 'admissionVerdicts', 'bypasses', 'overshoots', 'preExisting'])
		ok(GL.parseInt10(got.counts[k]) === d.counts[k],
		   at('count ' + k + ' ' + got.counts[k] + ' != ' + d.counts[k]));
	const want = d.bypasses.slice().sort((a, b) => b.seq - a.seq).slice(0, 200).map((x) => ({
		seq: String(x.seq), object: x.kind + ' ' + x.namespace + '/' + x.name, 'class': x.class,
		units: x.before + ' → ' + x.after,
		previous: x.previousSeq === null ? 'none (first observation)' : 'seq ' + x.previousSeq}));
	ok(JSON.stringify(got.bypasses.map((x) => ({seq: String(GL.parseInt10(x.seq)), object: x.object, 'class': x.class,
		units: x.units, previous: x.previous}))) === JSON.stringify(want),
	   at('the bypasses on the page (' + got.bypasses.length + ') = the API\'s, newest first (' +
	      want.length + ')'));
	const key = (o) => o.tenant + ' ' + o.key + ' ' + o.fromSeq;
	const overs = d.overshoots.slice(-200);
	ok(got.overshoots.length === overs.length &&
	   got.overshoots.map(key).sort().join() === overs.map(key).sort().join(),
	   at('the overshoots on the page (' + got.overshoots.length + ') = the API\'s (' +
	      overs.length + ')'));
	ok(got.overshoots.every((o, i) => i === 0 || o.fromSeq <= got.overshoots[i - 1].fromSeq),
	   at('overshoots newest first'));
	for (const o of overs) {
		const g = got.overshoots.find((x) => key(x) === key(o));
		if (!g)
			continue;
		ok(JSON.stringify(g.causes.map((c) => [c.type, c.seq, c.verdicts])) ===
		   JSON.stringify(o.causes.map((c) => [c.type, c.seq, c.verdicts || []])),
		   at('the causes of ' + key(o) + ': ' + JSON.stringify(g.causes)));
		ok(g.over === (o.toSeq === null) && (o.toSeq === null) === (g.to === 'still over'),
		   at(key(o) + ' is marked as lasting exactly when it lasts: ' + g.to));
	}
	ok(got.pre === Math.min(200, d.preExisting.length) &&
	   got.preSummary.indexOf(GL.fmtInt(d.counts.preExisting) + ' object') === 0 && !got.preOpen,
	   at('objects observed before admission: counted, listed collapsed: ' + got.preSummary +
	      ' (' + got.pre + ' rows)'));
}

/* Waits in node until fn() is truthy. */
async function waitFor(fn, what, ms) {
	const end = Date.now() + (ms || 15000);
	while (!fn()) {
		if (Date.now() > end)
			throw new Error('timed out waiting for ' + what);
		await new Promise((r) => setTimeout(r, 20));
	}
}

/* Runs the reconciliation from the form and waits for its answer. */
async function reconcileNow(page, form) {
	await page.eval(`(() => { for (const [id, v] of ${JSON.stringify(Object.entries(form || {}))})
		document.getElementById(id).value = v;
		document.getElementById('r-status').textContent = '';
		document.getElementById('r-run').click(); })()`);
	return page.until(`(() => { const r = ${READ_RECONCILE};
		return r.busy === 'false' && r.status !== '' && !/^Reconciling/.test(r.status) ? r : null; })()`,
	'the reconciliation', 30000);
}

async function reconcileAdmin(b, page) {
	/* The answer is held back (CDP Fetch) until the page has said that
	 * it is reading: no clock in it. */
	const paused = [];
	b.on((m) => {
		if (m.sessionId === page.s && m.method === 'Fetch.requestPaused')
			paused.push(m.params.requestId);
	});
	await page.send('Fetch.enable', {patterns: [{urlPattern: '*/v1/reconcile*', requestStage: 'Request'}]});
	await page.eval("document.getElementById('r-run').click()");
	await waitFor(() => paused.length > 0, 'the held reconcile request');
	const loading = await page.eval(READ_RECONCILE);
	ok(loading.busy === 'true' && /^Reconciling: the server reads the whole log up to seq [\d,]+…$/.test(loading.status),
	   'while the answer is on its way the view says it is reading: ' + loading.status);
	await page.send('Fetch.continueRequest', {requestId: paused[0]});
	await page.send('Fetch.disable');
	const got = await page.until(`(() => { const r = ${READ_RECONCILE};
		return r.busy === 'false' && /^Reconciled at/.test(r.status) && r.shown ? r : null; })()`,
	'the reconciliation');
	const d = await apiJson('/v1/reconcile', ADMIN);
	checkReconcile(got, d, 'admin');
	ok(got.nothing === null && /^Events from seq 1 \(/.test(got.range) &&
	   /Admission is in force from seq /.test(got.range),
	   'findings: no "nothing found"; the range says since when admission is in force: ' + got.range);
	/* What the script staged, whatever the API says. */
	const objs = got.bypasses.map((x) => x.object);
	ok(objs.indexOf('VMInstance ' + RACE + '/sneak') >= 0 && objs.indexOf('VMInstance ' + SIB + '/sneak-sib') >= 0,
	   'both staged bypasses are listed: ' + objs.slice(0, 5).join(', '));
	const race = got.overshoots.find((o) => o.tenant === RACE && o.key === 'h100.gpuclass.cozystack.io/devices');
	if (ok(race !== undefined, 'the overshoot of ' + RACE + ' h100 is listed')) {
		const types = race.causes.map((c) => c.type);
		ok(race.over && race.to === 'still over', 'it lasts, and says so: ' + race.to);
		ok(RACE_IDS.length === 2 && JSON.stringify(types) === '["race","bypass","budgetLowered"]',
		   'its causes: the race, the bypass, the lowered budget: ' + types.join());
		const rc = race.causes.find((c) => c.type === 'race') || {verdicts: []};
		ok(JSON.stringify(rc.verdicts) === JSON.stringify(RACE_IDS),
		   'the race cause links to the verdicts that raced (' + RACE_IDS + '): ' + rc.verdicts);
		const bc = race.causes.find((c) => c.type === 'bypass') || {};
		const sneak = got.bypasses.find((x) => x.object === 'VMInstance ' + RACE + '/sneak') || {};
		ok(bc.bypass !== null && bc.bypass === sneak.id, 'the bypass cause links to the row of sneak: ' + bc.bypass);
		/* Each link goes where it says. */
		await page.eval(`document.querySelector('#r-overshoots tr[data-tenant=${JSON.stringify(RACE)}] ` +
				`button[data-verdict="${RACE_IDS[0]}"]').click()`);
		const opened = await page.until(`(() => { const h = document.getElementById('v-record-h');
			return !document.getElementById('v-record').hidden &&
				h.textContent.indexOf('Verdict ${RACE_IDS[0]} ') === 0 ? h.textContent : ''; })()`,
		'the record of a racing verdict');
		const json = await page.eval("document.getElementById('v-json').textContent");
		ok(/"name": "race-a"/.test(json) && await page.eval("document.activeElement.id === 'v-record-h'"),
		   'a race cause opens the record of its verdict, focused: ' + opened);
		await page.eval(`document.querySelector('#r-overshoots tr[data-tenant=${JSON.stringify(RACE)}] ` +
				"button[data-bypass]').click()");
		ok(await page.eval(`document.activeElement.id === ${JSON.stringify(sneak.id)} &&
			document.activeElement.getAttribute('aria-current') === 'true'`),
		   'a bypass cause moves to its row and marks it');
	}
	/* A parameter the server refuses: its 400, said as such. */
	const bad400 = await reconcileNow(page, {'r-window': 'abc'});
	ok(bad400.statusClass === 'error' && !bad400.shown &&
	   /^The server refused these parameters \(400: reconcile: parameter window "abc" is not a duration/.test(bad400.status),
	   'a window the server refuses: its 400 is shown: ' + bad400.status);
	/* One tenant's subtree. */
	const one = await reconcileNow(page, {'r-window': '', 'r-tenant': RACE});
	checkReconcile(one, await apiJson('/v1/reconcile?tenant=' + RACE, ADMIN), 'tenant ' + RACE);
	ok(one.overshoots.length > 0 && one.overshoots.every((o) => o.tenant === RACE) &&
	   one.bypasses.length === 1, 'the tenant filter shows that subtree only');
	await page.eval("document.getElementById('r-section').scrollIntoView()");
	await shot(page, 'reconcile');
	await reconcileNow(page, {'r-tenant': ''});
	await page.eval('window.scrollTo(0, 0)');
}

/* A tenant token: its own subtree's findings, and a race cause's verdict
 * is the API's 403. */
async function reconcileTenant(page) {
	const got = await page.until(`(() => { const r = ${READ_RECONCILE};
		return r.busy === 'false' && r.shown ? r : null; })()`, 'the reconciliation of a tenant token');
	const d = await apiJson('/v1/reconcile', TENANT);
	checkReconcile(got, d, 'tenant token');
	const mine = (ns) => ns === TNS || ns.startsWith(TNS + '-');
	ok(got.overshoots.length > 0 && got.overshoots.every((o) => mine(o.tenant)),
	   'a tenant token sees overshoots of its own subtree only');
	ok(got.bypasses.length > 0 && got.bypasses.every((x) => mine(x.object.split(' ')[1].split('/')[0])) &&
	   got.bypasses.every((x) => x.object.indexOf('sneak-sib') < 0),
	   'a tenant token sees bypasses of its own subtree only: ' + got.bypasses.map((x) => x.object).join());
	await page.eval(`document.querySelector('#r-overshoots button[data-verdict]').click()`);
	const msg = await page.until(`(() => { const t = document.getElementById('r-link-out').textContent;
		return /\\(403: /.test(t) ? t : ''; })()`, 'the 403 of a verdict');
	ok(/^This token may not see verdict \d+ \(403: /.test(msg) &&
	   await page.eval("document.getElementById('v-record').hidden"),
	   'a race cause\'s verdict is the API\'s 403 for a tenant token, said as such: ' + msg);
}

/* A ledger where reconcile finds nothing: it says so, plainly. */
async function cleanSession(b) {
	const {page} = await openPage(b, CLEAN);
	await page.until("document.querySelectorAll('#t-table tbody[data-ns]').length > 0", 'the clean ledger');
	await page.eval("document.getElementById('tab-verdicts').click()");
	const got = await page.until(`(() => { const r = ${READ_RECONCILE};
		return r.busy === 'false' && r.shown ? r : null; })()`, 'the reconciliation of the clean ledger');
	const d = await apiJson('/v1/reconcile', null, CLEAN);
	checkReconcile(got, d, 'clean ledger');
	ok(/^Nothing found: no bypass and no overshoot from seq 1 to seq \d+\.$/.test(got.nothing || ''),
	   'a clean ledger: "nothing found", plainly: ' + got.nothing);
	ok(d.counts.admissionVerdicts === 1 && /^None: every reservation/.test(got.bypassNone || '') &&
	   /^None: /.test(got.overshootNone || '') && got.pre === 0,
	   'a clean ledger: empty lists say what they mean: ' + got.bypassNone + ' / ' + got.overshootNone);
	await page.eval("document.getElementById('r-section').scrollIntoView()");
	await shot(page, 'reconcile-clean');
}

async function adminSession(b) {
	const {page, w} = await openPage(b);
	w.expect = [401, 400];
	await asksForToken(page, w, 'admin');
	await signIn(page, ADMIN);
	await page.until("document.querySelectorAll('#t-table tbody[data-ns]').length > 0",
			 'the tenant tree');
	ok(await page.eval("document.getElementById('login').hidden && " +
			   "!document.getElementById('view-tenants').hidden && " +
			   "!document.getElementById('signout').hidden && " +
			   "(document.getElementById('signin') || {hidden: false}).hidden"),
	   'a good token shows the views, with "Forget token" and no "Sign in"');
	ok(await page.eval("sessionStorage.getItem('gpuledger.token')") === ADMIN,
	   'the token is in session storage');
	ok(await page.eval('localStorage.length === 0 && document.cookie === ""'),
	   'nothing in local storage or cookies');

	/* Tenants: every tenant, three in full. */
	const api = await apiJson('/v1/tenants', ADMIN);
	const classes = GL.classesOf(api.tenants);
	await page.eval("document.getElementById('t-expand').click()");
	await shot(page, 'tenants');
	/* Idle class rows are hidden by default; every row, to compare. */
	const idle = await page.eval(READ_TENANTS);
	for (const t of api.tenants)
		for (const r of GL.tenantRows(t, classes))
			ok((idle[t.namespace] || {})[r.cls === null ? '' : r.cls] !== undefined ===
			   GL.rowInUse(r), 'idle rows hidden: ' + t.namespace + ' ' + r.cls);
	await page.eval(`(() => { const c = document.getElementById('t-busy');
		c.checked = false; c.dispatchEvent(new Event('change')); })()`);
	const shown = await page.until(`(() => { const t = ${READ_TENANTS};
		return Object.keys(t).length === ${api.tenants.length} ? t : null; })()`,
	'every tenant after Expand all');
	ok(Object.keys(shown).length === api.tenants.length, 'every tenant is listed');
	for (const t of pickThree(api.tenants))
		checkTenant(shown, t, classes);

	/* The filter shows matches with their ancestors and nothing else. */
	const target = pickThree(api.tenants)[1].namespace;
	await page.eval(`(() => { const f = document.getElementById('t-filter');
		f.value = ${JSON.stringify(target)}; f.dispatchEvent(new Event('input')); })()`);
	const filtered = Object.keys(await page.eval(READ_TENANTS));
	ok(filtered.indexOf(target) >= 0 && filtered.every(
		(ns) => ns === target || target.startsWith(ns + '-') || ns === 'tenant-root' ||
			ns.indexOf(target) >= 0),
	   'the filter keeps matches and their ancestors: ' + filtered.join(' '));
	await page.eval(`(() => { const f = document.getElementById('t-filter');
		f.value = ''; f.dispatchEvent(new Event('input')); })()`);

	/* The refresh timer keeps the place: a collapsed tenant stays
	 * collapsed and its toggle keeps the focus. */
	const parent = api.tenants.find((t) => t.parent === 'tenant-root' &&
		api.tenants.some((c) => c.parent === t.namespace));
	if (ok(parent !== undefined, 'a tenant with children to collapse')) {
		const id = 'tg-' + parent.namespace;
		await page.eval(`document.getElementById(${JSON.stringify(id)}).click()`);
		await page.eval(`document.getElementById(${JSON.stringify(id)}).focus()`);
		await page.eval(`(() => { const s = document.getElementById('refresh');
			s.value = '5'; s.dispatchEvent(new Event('change')); })()`);
		await page.until("/^Refreshed/.test(document.getElementById('status').textContent)",
				 'a timer refresh', 12000);
		ok(await page.eval(`document.activeElement.id === ${JSON.stringify(id)} &&
			document.activeElement.getAttribute('aria-expanded') === 'false'`),
		   'after a refresh the collapsed tenant is collapsed and focused');
		const after = await page.eval(READ_TENANTS);
		ok(!api.tenants.some((t) => t.parent === parent.namespace && after[t.namespace]),
		   'the collapsed tenant\'s children stay hidden');
		await page.eval(`(() => { const s = document.getElementById('refresh');
			s.value = '0'; s.dispatchEvent(new Event('change')); })()`);
	}

	/* Classes and nodes, reached with the keyboard. */
	await page.eval("document.getElementById('tab-tenants').focus()");
	await page.key('ArrowRight', 'ArrowRight', 39);
	ok(await page.eval("document.activeElement.id === 'tab-classes' && " +
			   "document.getElementById('tab-classes').getAttribute('aria-selected') === 'true'"),
	   'ArrowRight moves to the Classes tab');
	const cls = (await apiJson('/v1/classes', ADMIN)).classes;
	await page.until(`document.querySelectorAll('#c-table tbody tr[data-cls]').length === ${cls.length}`,
			 'the classes table');
	const cshown = await page.eval(`Array.from(document.querySelectorAll('#c-table tbody tr')).map(
		(tr) => [tr.dataset.cls, tr.querySelector('[data-f=capacity]').textContent,
			 tr.querySelector('[data-f=free]').textContent])`);
	for (const c of cls) {
		const row = cshown.find((r) => r[0] === c.name);
		ok(row && GL.parseInt10(row[1]) === c.capacity && GL.parseInt10(row[2]) === c.free,
		   'class ' + c.name + ' capacity/free on the page equal the API');
	}
	const caps = await Promise.all(cls.map((c) => apiJson('/v1/classes/' + c.name + '/capacity', ADMIN)));
	/* The expectation straight from the capacity answers. */
	const nodes = [];
	for (const cap of caps)
		for (const n of cap.nodes) {
			let e = nodes.find((x) => x.name === n.name);
			if (!e)
				nodes.push(e = {name: n.name, classes: {}});
			e.classes[cap.class] = n;
		}
	const nshown = await page.eval(`Array.from(document.querySelectorAll('#n-table tbody tr[data-node]')).map(
		(tr) => [tr.dataset.node, tr.dataset.cls, tr.querySelector('[data-f=capacity]').textContent,
			 tr.querySelector('[data-f=allocated]').textContent, tr.className])`);
	let nrows = 0, over = 0;
	for (const n of nodes)
		for (const [c, e] of Object.entries(n.classes)) {
			nrows++;
			const r = nshown.find((x) => x[0] === n.name && x[1] === c);
			ok(r && GL.parseInt10(r[2]) === e.capacity && GL.parseInt10(r[3]) === e.allocated,
			   'node ' + n.name + ' ' + c + ' numbers equal the API');
			if (e.allocated > e.capacity) {
				over++;
				ok(r && r[4] === 'over', 'node ' + n.name + ' ' + c + ' over capacity is highlighted');
			} else {
				ok(r && r[4] !== 'over', 'node ' + n.name + ' ' + c + ' is not highlighted');
			}
		}
	ok(nshown.length === nrows, 'every node and class is listed');
	if (process.env.UI_EXPECT_OVER)
		ok(over > 0, 'the fixture has a node allocated beyond capacity to highlight');
	await shot(page, 'classes');

	/* History: a tenant's subtree over the ledger's whole span. */
	await page.key('ArrowRight', 'ArrowRight', 39);
	await page.until("document.getElementById('h-tenant').options.length > 0", 'the history form');
	const first = (await apiJson('/v1/events?from=1&limit=1', ADMIN)).events[0].time;
	const day = (ms) => new Date(ms).toISOString().slice(0, 10);
	const hFrom = day(Date.parse(first));
	/* The default range is the last three days before the horizon. */
	ok(await page.eval("document.getElementById('h-to').value") ===
	   day(Date.parse(api.horizon) + 86400000),
	   'history ends by default on the day after the horizon ' + api.horizon);
	/* Checked over the simulated days (the observations after the
	 * verdicts carry the wall clock's time). */
	const hTo = day(Date.parse(process.env.UI_SIM_END || api.horizon) + 86400000);
	const hns = pickThree(api.tenants)[2].namespace;
	await page.eval(`(() => { document.getElementById('h-tenant').value = ${JSON.stringify(hns)};
		document.getElementById('h-from').value = ${JSON.stringify(hFrom)};
		document.getElementById('h-to').value = ${JSON.stringify(hTo)};
		document.getElementById('h-form').requestSubmit(); })()`);
	await page.until(`document.getElementById('h-caption').textContent.indexOf(${JSON.stringify(hns)}) >= 0 &&
		document.getElementById('h-caption').textContent.indexOf('${hFrom}') >= 0`, 'the history chart');
	const rows = GL.parseNdjson(await apiGet('/v1/export?format=json&focusVersion=1.2&rollup=subtree&step=hour&from=' +
		hFrom + 'T00:00:00Z&to=' + hTo + 'T00:00:00Z', ADMIN));
	const want = {};
	for (const r of rows)
		if (r.x_Scope === 'subtree' && r.SubAccountId === hns)
			want[r.x_DeviceClass] = (want[r.x_DeviceClass] || 0) + r.x_DeviceMilliseconds;
	const hshown = await page.eval(`Object.fromEntries(Array.from(
		document.querySelectorAll('#h-table tbody tr')).map((tr) =>
		[tr.dataset.cls, tr.querySelector('[data-f=hours]').textContent]))`);
	ok(Object.keys(want).length > 0, 'the history tenant has usage to draw');
	ok(Object.keys(hshown).sort().join() === Object.keys(want).sort().join(),
	   'history lists the classes the export has: ' + Object.keys(hshown).join());
	for (const [c, ms] of Object.entries(want))
		ok(hshown[c] === (ms / 3600000).toFixed(2),
		   'history ' + hns + ' ' + c + ' GPU-hours ' + hshown[c] + ' != ' + (ms / 3600000).toFixed(2));
	const budgets = Object.keys(GL.budgetLines(api.tenants.find((t) => t.namespace === hns), classes));
	ok(await page.eval(`document.querySelectorAll('#h-chart polyline.series').length`) ===
	   Object.keys(want).length + (budgets.indexOf('total budget') >= 0 ? 1 : 0),
	   'one line per class in the chart (and their sum against a total budget)');
	ok(await page.eval(`document.querySelectorAll('#h-chart line.budget').length`) === budgets.length,
	   'one dashed line per budget of the tenant');
	/* It asked for that tenant's rows only, never for everyone's. */
	const exports = w.requests.filter((u) => u.startsWith(URL0 + '/v1/export?'));
	ok(exports.some((u) => u.indexOf('tenant=' + encodeURIComponent(hns) + '&') >= 0) &&
	   exports.every((u) => /[?&]tenant=tenant-[a-z0-9-]+&/.test(u)),
	   'the history asks the export for one tenant\'s rows (tenant=): ' + exports.join(' '));
	await shot(page, 'history');

	/* Verdicts: the page's list equals GET /v1/verdicts for each filter
	 * (newest first, every page read with "Load older"), and the listing
	 * holds every VERDICT event of the log. */
	await page.key('ArrowRight', 'ArrowRight', 39);
	const evs = [];
	for (let at = 1, last = Infinity; at <= last;) {
		const ev = await apiJson('/v1/events?from=' + at + '&limit=10000', ADMIN);
		evs.push(...ev.events);
		last = ev.lastSeq;
		at = ev.next;
	}
	const verdicts = evs.filter((e) => e.type === 'VERDICT').map((e) => ({id: e.record.id, record: e.record}));
	const all = await apiVerdicts('');
	ok(all.map((v) => v.id).join() === verdicts.map((v) => v.id).reverse().join(),
	   'GET /v1/verdicts lists every VERDICT event of the log, newest first (' + all.length + ')');
	ok(all.length > 50, 'more verdicts than one page of the console: ' + all.length);
	const pageRows = `Array.from(document.querySelectorAll('#v-table tbody tr[data-id]')).map((tr) =>
		[Number(tr.dataset.id), tr.querySelector('[data-f=requester]').textContent,
		 tr.cells[5].textContent, tr.cells[6].textContent])`;
	/* Sets the filter, waits for the newest page, reads older pages until
	 * "Load older" is disabled; the rows shown, and how many pages. */
	async function showAll(f) {
		await page.eval(`(() => { for (const [id, v] of ${JSON.stringify(Object.entries(f))}) {
			const s = document.getElementById(id); s.value = v;
			s.dispatchEvent(new Event('change')); } })()`);
		const q = verdictQuery(f);
		const want = apiRows(await apiVerdicts(q));
		await page.until(`JSON.stringify(${pageRows}) === ${JSON.stringify(JSON.stringify(want.slice(0, 50)))}`,
				 'the newest page of ' + q);
		let pages = 1;
		while (!(await page.eval("document.getElementById('v-older').disabled"))) {
			const n = await page.eval(`${pageRows}.length`);
			await page.eval("document.getElementById('v-older').click()");
			await page.until(`${pageRows}.length > ${n} || document.getElementById('v-older').disabled`,
					 'Load older (' + q + ')');
			ok(++pages < 50, 'Load older ends');
			if (pages >= 50)
				break;
		}
		const got = await page.eval(pageRows);
		ok(JSON.stringify(got) === JSON.stringify(want),
		   'verdicts ' + (q || 'unfiltered') + ': the page (' + got.length + ' rows) = the API (' +
		   want.length + ')');
		return {got: got, pages: pages};
	}
	const any = {'v-tenant': '', 'v-reason': '', 'v-allowed': 'all'};
	const everyone = await showAll(any);
	ok(everyone.pages >= 2, 'the unfiltered list took Load older: ' + everyone.pages + ' pages');
	const asked = everyone.got.filter((r) => /^ui-user-\d@example\.com \(CREATE\)$/.test(r[1]));
	ok(asked.length === 3, 'the requester of each AdmissionReview is shown: ' + asked.map((r) => r[1]).join());
	ok(everyone.got.filter((r) => r[1] === 'not recorded').length === everyone.got.length - asked.length,
	   'verdicts asked without a review say the requester is not recorded');
	if (asked.length > 0) {
		const rv = all.find((v) => v.id === asked[0][0]);
		await page.eval(`document.getElementById('vr-${rv.id}').click()`);
		const m = await page.until(`(() => { const t = document.getElementById('v-message').textContent;
			return document.getElementById('v-record-h').textContent.indexOf('Verdict ${rv.id} ') === 0 ? t : ''; })()`,
		'the record of a reviewed verdict');
		ok(m.indexOf('Asked by ' + rv.requester.username + ' (' + rv.requester.operation + ') (review ' +
			     rv.requester.uid + ')') >= 0, 'the record says who asked: ' + m);
	}
	const denied = all.filter((v) => !v.allowed).length;
	ok(denied > 0 && denied < all.length, 'the fixture has allowed and denied verdicts');
	const den = await showAll(Object.assign({}, any, {'v-allowed': 'no'}));
	ok(den.got.length === denied && den.got.every((r) => r[2] === 'denied'),
	   'the answer filter shows the denied verdicts only (' + den.got.length + ' of ' + denied + ')');
	const reason = all.find((v) => !v.allowed).reason;
	const narrow = await showAll({'v-tenant': TNS, 'v-reason': reason, 'v-allowed': 'no'});
	ok(narrow.got.length > 0 && narrow.got.every((r) => r[3] === reason),
	   'tenant ' + TNS + ', reason ' + reason + ': ' + narrow.got.length + ' rows');
	const none = await showAll({'v-tenant': SIB, 'v-reason': '', 'v-allowed': 'all'});
	ok(none.got.length === 0 && /No verdict matches/.test(await page.eval(
		"document.getElementById('v-table').tBodies[0].textContent")),
	   'a tenant without verdicts: none, and the page says so');
	/* A refresh adds what was recorded since at the top and keeps the
	 * older pages read. */
	await showAll(any);
	const fresh = await (await fetch(URL0 + '/v1/admission', {method: 'POST',
		headers: {Authorization: 'Bearer ' + ADMIN}, body: JSON.stringify({namespace: TNS,
		kind: 'VMInstance', name: 'ui-fresh', old: null, new: {gpus: [{class: 'h100', count: 1}]}})})).json();
	await page.eval("document.getElementById('tab-verdicts').click()");
	await page.until(`document.querySelector('#v-table tbody tr[data-id]').dataset.id === '${fresh.id}'`,
			 'the new verdict on top after a refresh');
	ok(await page.eval(`${pageRows}.length`) === all.length + 1,
	   'the refresh kept every older verdict read and added the new one');
	const vid = verdicts.find((v) => !v.record.allowed).id;
	await page.eval(`document.getElementById('vr-${vid}').focus()`);
	await page.send('Input.dispatchKeyEvent', {type: 'keyDown', key: 'Enter', code: 'Enter',
						   windowsVirtualKeyCode: 13, text: '\r'});
	await page.send('Input.dispatchKeyEvent', {type: 'keyUp', key: 'Enter', code: 'Enter',
						   windowsVirtualKeyCode: 13});
	await page.until(`!document.getElementById('v-record').hidden &&
		document.getElementById('v-json').textContent.indexOf('"id": ${vid}') >= 0`,
	'Enter opens the verdict record');
	const rec = verdicts.find((v) => v.id === vid).record;
	ok(await page.eval("document.querySelectorAll('#v-checks tbody tr').length") === rec.checks.length,
	   'the record lists every check');
	await page.eval("document.getElementById('v-verify').click()");
	const vout = await page.until(`(() => { const t = document.getElementById('v-verify-out').textContent;
		return /^Re-derived/.test(t) ? t : ''; })()`, 're-derive');
	ok(/byte for byte/.test(vout), 're-derive says the verdict is reproduced: ' + vout);
	/* Prove: with the proof routes (issue 16) the page must prove; without
	 * them it must say there are none. */
	const pr = await fetch(URL0 + '/v1/verdicts/' + vid + '?proof=1',
			       {headers: {Authorization: 'Bearer ' + ADMIN}});
	const hasProof = pr.ok && (await pr.json()).proof !== undefined;
	if (process.env.UI_VERIFIER_KEY)
		await page.eval(`(() => { const k = document.getElementById('v-key');
			k.value = ${JSON.stringify(process.env.UI_VERIFIER_KEY)};
			k.dispatchEvent(new Event('input')); })()`);
	await page.eval("document.getElementById('v-prove').click()");
	const pout = await page.until(`(() => { const t = document.getElementById('v-prove-out').textContent;
		return /^Asking/.test(t) ? '' : t; })()`, 'prove');
	ok(hasProof ? /^Proved: /.test(pout) : /no proofs|without an inclusion proof/.test(pout),
	   'prove: ' + pout);
	ok(!process.env.UI_VERIFIER_KEY || /signed by gpuledger.test\/ui/.test(pout),
	   'prove checks the checkpoint\'s signature with the verifier key: ' + pout);
	/* Re-derive the shown (the tenant, reason and answer filter): every
	 * row says reproduced. */
	await showAll({'v-tenant': TNS, 'v-reason': reason, 'v-allowed': 'no'});
	await page.eval("document.getElementById('v-audit').click()");
	const audits = await page.until(`(() => {
		const a = Array.from(document.querySelectorAll('#v-table tbody tr[data-id] td[data-f=audit]'))
			.map((td) => td.textContent);
		return /^Re-derived/.test(document.getElementById('status').textContent) ? a : null; })()`,
	're-derive the shown', 60000);
	ok(audits.length === narrow.got.length && audits.every((a) => a === 'reproduced'),
	   'every shown verdict re-derived: ' + audits.join());
	await showAll(any);
	await page.eval('window.scrollTo(0, 0)');
	await shot(page, 'verdicts');
	await reconcileAdmin(b, page);

	/* The page's proof check in this browser (Web Crypto SHA-256 and
	 * Ed25519) on a proof made by `gpuledger prove` (tests/ui/fixtures). */
	const fx = path.join(__dirname, 'fixtures');
	const proof = fs.readFileSync(path.join(fx, 'proof-verdict.json'), 'utf8');
	const key = fs.readFileSync(path.join(fx, 'verifier.pub'), 'utf8').trim();
	const checked = await page.eval(`(async () => {
		const p = ${proof};
		const r = await GL.checkInclusion(GL.webSha256, p);
		const s = await GL.checkSignature(GL.webSha256, GL.webEd25519Verify,
			GL.parseCheckpoint(p.checkpoint), GL.parseVerifierKey(${JSON.stringify(key)}));
		p.event.record.allowed = !p.event.record.allowed;
		const t = await GL.checkInclusion(GL.webSha256, p);
		return [r.ok, s.ok, t.ok, r.reason + ' / ' + s.reason];
	})()`);
	ok(checked[0] && checked[1] && !checked[2],
	   'chromium checks a gpuledger proof and its signature, and refuses a changed one: ' + checked[3]);

	/* The CSP is in force: an injected inline script does not run. The
	 * violation it logs is this probe's, and is taken off the list. */
	const before = w.errors.length;
	const csp = await page.eval(`new Promise((res) => {
		document.addEventListener('securitypolicyviolation',
			(e) => res(e.effectiveDirective + ' ' + (window.__probe === undefined)), {once: true});
		const s = document.createElement('script');
		s.textContent = 'window.__probe = 1';
		document.body.append(s);
		setTimeout(() => res('no violation ' + window.__probe), 2000);
	})`);
	ok(/^script-src(-elem)? true$/.test(csp), 'the CSP blocks an inline script: ' + csp);
	await new Promise((r) => setTimeout(r, 200));
	w.errors.splice(before).forEach((e) => ok(/Content Security Policy/.test(e),
		'only the probe\'s violation is logged: ' + e));

	/* A token that stops being accepted in the middle of a session (to
	 * the page an expired or revoked token and a wrong one are the same
	 * 401): the next load brings the form back, saying so. */
	await page.eval("sessionStorage.setItem('gpuledger.token', 'expired-0123456789abcdef')");
	await page.eval("document.getElementById('tab-tenants').click()");
	await refusedToken(page, 'a token refused mid-session');
	return w;
}

async function tenantSession(b) {
	const {page, w} = await openPage(b);
	w.expect = [401, 403];
	await asksForToken(page, w, 'tenant');
	/* A wrong token typed in: the form again, saying so. */
	await signIn(page, 'not-a-token-at-all-x');
	await refusedToken(page, 'a wrong token typed in');
	await signIn(page, TENANT);
	await page.until("document.querySelectorAll('#t-table tbody[data-ns]').length > 0",
			 'the tenant tree for a tenant token');
	await page.eval(`(() => { const c = document.getElementById('t-busy');
		c.checked = false; c.dispatchEvent(new Event('change'));
		document.getElementById('t-expand').click(); })()`);
	const api = await apiJson('/v1/tenants', TENANT);
	const shown = await page.until(`(() => { const t = ${READ_TENANTS};
		return Object.keys(t).length === ${api.tenants.length} ? t : null; })()`,
	'the tenant\'s subtree');
	const names = Object.keys(shown);
	ok(names.length > 0 && names.every((ns) => ns === TNS || ns.startsWith(TNS + '-')),
	   'a tenant token sees its own subtree only: ' + names.join(' '));
	ok(names.indexOf(SIB) < 0 && names.indexOf('tenant-root') < 0,
	   'a tenant token does not see its sibling ' + SIB + ' or the root');
	const classes = GL.classesOf(api.tenants);
	checkTenant(shown, api.tenants.find((t) => t.namespace === TNS), classes);
	ok((await page.eval('document.body.textContent')).indexOf(SIB) < 0,
	   'the sibling\'s name appears nowhere on the page');
	await shot(page, 'tenant-token');
	await page.eval("document.getElementById('tab-classes').click()");
	const msg = await page.until(`(() => { const e = document.querySelector('#c-table tbody td.error');
		return e ? e.textContent : ''; })()`, 'the refusal of the classes');
	ok(/^This token may not see the classes \(403: /.test(msg),
	   'the classes view shows the API\'s 403 to a tenant as the token\'s scope: ' + msg);
	ok(await page.eval("document.getElementById('login').hidden && " +
			   "!document.getElementById('view-classes').hidden"),
	   'a 403 is no sign-in prompt: the form stays hidden, the view shown');
	await page.eval("document.getElementById('tab-verdicts').click()");
	const vmsg = await page.until(`(() => { const e = document.querySelector('#v-table tbody td.error');
		return e ? e.textContent : ''; })()`, 'the refusal of the verdicts');
	ok(/^This token may not see the verdicts \(403: /.test(vmsg),
	   'the verdicts view shows the API\'s 403 to a tenant: ' + vmsg);
	await reconcileTenant(page);
	/* Showback: a tenant may export its own subtree (DESIGN 8), so the
	 * history draws, from rows of its subtree only. */
	await page.eval("document.getElementById('tab-history').click()");
	const hstate = await page.until(`(() => { const e = document.getElementById('h-caption');
		if (e.className === 'error') return 'error: ' + e.textContent;
		return document.querySelector('#h-chart svg') ? 'chart' : ''; })()`,
	'the history of a tenant token');
	ok(hstate === 'chart', 'the history view draws a tenant\'s own subtree: ' + hstate);
	const rows = await apiGet('/v1/export?format=ndjson&step=day&focusVersion=1.2&from=2000-01-01', TENANT);
	const foreign = rows.split('\n').filter((l) => l).map((l) => JSON.parse(l).SubAccountId)
		.filter((ns) => !(ns === TNS || ns.startsWith(TNS + '-')));
	ok(foreign.length === 0, 'a tenant token\'s export holds its subtree only: ' + foreign.slice(0, 3).join(' '));
	ok((await page.eval('document.body.textContent')).indexOf(SIB) < 0,
	   'the sibling\'s name appears nowhere on the history view');
	/* A tenant outside the token's subtree (a stale choice): the API's
	 * 403 is said as the token's scope. */
	await page.eval("document.getElementById('tab-verdicts').click()");
	await page.eval(`(() => { const s = document.getElementById('r-tenant');
		s.append(new Option(${JSON.stringify(SIB)}, ${JSON.stringify(SIB)}));
		s.value = ${JSON.stringify(SIB)}; document.getElementById('r-run').click(); })()`);
	const r403 = await page.until(`(() => { const r = ${READ_RECONCILE};
		return r.statusClass === 'error' ? r : null; })()`, 'the 403 of the reconciliation');
	ok(/^This token may not see the reconciliation \(403: reconcile: tenant /.test(r403.status) &&
	   !r403.shown && r403.busy === 'false',
	   'the reconciliation of a tenant outside the token\'s subtree shows the API\'s 403: ' + r403.status);
	/* Forget token: gone from session storage, and what it showed; this
	 * server shows nothing without one, so the sign-in form again. */
	await page.eval("document.getElementById('signout').click()");
	ok(await page.until("sessionStorage.getItem('gpuledger.token') === null && " +
			   "!document.getElementById('login').hidden && " +
			   "/needs a token/.test(document.getElementById('login-error').textContent) && " +
			   "document.getElementById('view-tenants').hidden && " +
			   "document.querySelectorAll('#t-table tbody').length === 0 && " +
			   `document.body.textContent.indexOf(${JSON.stringify(TNS)}) < 0`,
			   'the form after Forget token').catch(() => false),
	   'Forget token removes the token and what it showed');
	/* A refused token in session storage (a reload of the tab) asks again. */
	await page.eval("window.__before = 1; sessionStorage.setItem('gpuledger.token', 'not-a-token-at-all-x'); " +
			"location.reload()");
	await page.until("window.__before === undefined && document.readyState === 'complete'", 'the reload');
	await refusedToken(page, 'a refused token on reload');
	return w;
}

/* The server without --token-file (`make run`): the views with no token
 * asked for, and "Sign in" to give one anyway. */
async function openSession(b) {
	const {page, w} = await openPage(b, OPEN);
	const state = await page.until(`document.querySelectorAll('#t-table tbody[data-ns]').length > 0 ? 'views'
		: !document.getElementById('login').hidden ? 'form' : ''`, 'the views or the form');
	ok(state === 'views', 'without --token-file the views show with no token entered: ' + state);
	if (state !== 'views')
		return w;
	const f = await page.eval(LOGIN_STATE);
	ok(f.stored === null && !(await page.eval('window.__loginShown')),
	   'without --token-file the sign-in form is never shown and no token is stored: ' + JSON.stringify(f));
	ok(w.auth.length > 0 && w.auth.every((a) => !a[1]),
	   'without --token-file every API request goes without a token: ' + JSON.stringify(w.auth.slice(0, 3)));
	ok(await page.eval("(document.getElementById('signin') || {hidden: true}).hidden === false && " +
			  "document.getElementById('signout').hidden"),
	   'without a token the header offers "Sign in", not "Forget token"');
	const api = await apiJson('/v1/tenants', null, OPEN);
	await page.eval("document.getElementById('t-expand').click()");
	await shot(page, 'no-token');
	await page.eval(`(() => { const c = document.getElementById('t-busy');
		c.checked = false; c.dispatchEvent(new Event('change')); })()`);
	const shown = await page.until(`(() => { const t = ${READ_TENANTS};
		return Object.keys(t).length === ${api.tenants.length} ? t : null; })()`,
	'every tenant without a token');
	checkTenant(shown, api.tenants.find((t) => t.parent === null), GL.classesOf(api.tenants));
	/* Sign in anyway: the form, with the way back. */
	await page.eval("document.getElementById('signin').click()");
	const g = await page.eval(LOGIN_STATE);
	ok(g.shown && g.focused && g.noToken && g.views.length === 0,
	   '"Sign in" opens the form, with "Continue without a token": ' + JSON.stringify(g));
	await page.eval("document.getElementById('no-token').click()");
	ok(await page.until("document.getElementById('login').hidden && " +
			    "document.querySelectorAll('#t-table tbody[data-ns]').length > 0",
			    'the views again').catch(() => false),
	   '"Continue without a token" goes back to the views');
	return w;
}

async function main() {
	const b = launch({width: W, height: H});
	try {
		await openSession(b);
		await adminSession(b);
		await tenantSession(b);
		if (CLEAN)
			await cleanSession(b);
	} catch (e) {
		ok(false, e.stack || String(e));
	} finally {
		await b.close();
	}
	/* Chromium logs every 4xx answer as an error. On the server with
	 * --token-file the 401 to the first request (without a token) and to
	 * the refused tokens is the point, and so for a tenant is the API's
	 * 403 on what its role may not read; anything else is not. */
	const expected = {
		401: new RegExp('^log: Failed to load resource: the server responded with a ' +
			'status of 401 \\(Unauthorized\\) ' + URL0 + '/v1/tenants$'),
		400: new RegExp('^log: Failed to load resource: the server responded with a ' +
			'status of 400 \\(Bad Request\\) ' + URL0 + '/v1/reconcile\\?window=abc$'),
		403: new RegExp('^log: Failed to load resource: the server responded with a ' +
			'status of 403 \\(Forbidden\\) ' + URL0 + '/v1/(classes|verdicts|export|reconcile)'),
	};
	const errors = [].concat(...WATCHED.map((w) => w.errors.filter(
		(e) => !(w.expect || []).some((c) => expected[c].test(e)))));
	ok(errors.length === 0, 'no console errors: ' + errors.join(' | '));
	const reqs = [].concat(...WATCHED.map((w) => w.requests));
	const away = reqs.filter((u) => !u.startsWith(URL0 + '/') && !u.startsWith(OPEN + '/') &&
				 !(CLEAN && u.startsWith(CLEAN + '/')) &&
				 !u.startsWith('data:') &&
				 u !== 'about:blank');
	ok(reqs.length > 10 && away.length === 0,
	   'every request went to the servers on 127.0.0.1 (' + reqs.length + ' requests): ' + away.join(' '));
	console.log('browser: ' + pass + ' passed, ' + fail + ' failed');
	process.exit(fail ? 1 : 0);
}

main();
