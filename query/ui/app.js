/*
 * gpuledger console: the DOM side. It reads only the API (/v1/...) and
 * shows what the API answers; a refusal is shown as such, never worked
 * around. It asks without a token first (a server without --token-file
 * answers) and asks the user for one only on a 401, as Grafana's anonymous
 * mode does; a 403 is the token's scope, never a sign-in prompt. What
 * computes lives in lib.js (GL) and is unit-tested there.
 *
 * Place is kept across the refresh timer: the view, filters, expanded
 * tenants, the open verdict and the focused control are state here, and a
 * refresh re-renders in place from them.
 */
'use strict';
(function () {
	const GL = window.GL;
	const TOKEN_KEY = 'gpuledger.token';
	const VIEWS = ['tenants', 'classes', 'history', 'verdicts'];
	const VPAGE = 50;    /* verdicts per /v1/verdicts request */
	const VNEWER = 20;   /* pages of newer verdicts one refresh reads */
	const RMAX = 200;    /* rows per list of the reconciliation */

	const S = {
		view: 'tenants',
		seq: null, time: null, horizon: null,
		tenants: null, classes: [], expanded: new Set(), expandedInit: false,
		hist: {loaded: false},
		v: {list: [], next: null, key: null, open: null},
		audit: new Map(), /* verdict id -> 'reproduced' | 'DIFFERS' | 'error' */
		/* The reconciliation: gen numbers the runs (an answer to an
		 * older one is dropped), started once the view has run it. */
		r: {gen: 0, started: false, timer: null, view: null},
		timer: null, busy: false, again: false,
		/* What the server said to a request without a token: null (not
		 * asked yet), 'open' (it answered) or 'needs' (401). */
		anon: null,
	};

	const $ = (id) => document.getElementById(id);

	/* An element: attrs are attributes (never "style": the CSP forbids
	 * inline styles), except text (textContent); children appended. */
	function el(tag, attrs, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v === null || v === undefined || v === false)
				continue;
			if (k === 'text')
				e.textContent = v;
			else
				e.setAttribute(k, v === true ? '' : String(v));
		}
		for (const c of children)
			if (c !== null && c !== undefined)
				e.append(c);
		return e;
	}

	const SVGNS = 'http://www.w3.org/2000/svg';
	function svg(tag, attrs, text) {
		const e = document.createElementNS(SVGNS, tag);
		for (const [k, v] of Object.entries(attrs || {}))
			e.setAttribute(k, String(v));
		if (text !== undefined)
			e.textContent = text;
		return e;
	}

	function setStatus(msg, error) {
		const s = $('status');
		s.textContent = msg || '';
		s.className = error ? 'error' : '';
	}

	/* ---------------------------------------------------------------- */
	/* The API. */

	class ApiError extends Error {
		constructor(status, message) {
			super(message);
			this.status = status;
		}
	}

	/* The token in use, or null for none ("" from an older console is
	 * none too). */
	function token() {
		return sessionStorage.getItem(TOKEN_KEY) || null;
	}

	/* GET path; JSON (or text with raw) on 2xx, else an ApiError with the
	 * API's own error message. A 401 asks for a token (again). */
	async function api(path, raw) {
		const h = {};
		const t = token();
		if (t)
			h.Authorization = 'Bearer ' + t;
		const r = await fetch(path, {headers: h, cache: 'no-store',
					     credentials: 'omit', redirect: 'error'});
		const text = await r.text();
		if (!r.ok) {
			let msg = text;
			try {
				msg = JSON.parse(text).error || text;
			} catch (e) { /* not JSON: the text itself */ }
			if (r.status === 401)
				unauthorized(t, msg);
			throw new ApiError(r.status, msg);
		}
		if (!t)
			S.anon = 'open';
		return raw ? text : JSON.parse(text);
	}

	/* A 401 to a request made with token t (null: none). An answer to a
	 * token the user has replaced meanwhile changes nothing. A refused
	 * token is dropped, with what it showed, so that a reload does not
	 * send it again. */
	function unauthorized(t, msg) {
		if (t !== token())
			return;
		if (t === null) {
			S.anon = 'needs';
			showLogin('This server needs a token: it answered a request without one with 401 (' +
				  msg + ').');
			return;
		}
		sessionStorage.removeItem(TOKEN_KEY);
		forgetShown();
		showLogin('The server refused this token (401: ' + msg + '): it is wrong, or it has ' +
			  'expired or been revoked. Enter a valid token.');
	}

	function refusal(e, what) {
		if (e instanceof ApiError && e.status === 403)
			return (token() ? 'This token may not see ' : 'Without a token this server does not show ') +
				what + ' (403: ' + e.message + ').';
		if (e instanceof ApiError)
			return 'Could not read ' + what + ' (' + e.status + ': ' + e.message + ').';
		return 'Could not read ' + what + ': ' + e.message;
	}

	/* ---------------------------------------------------------------- */
	/* Sign-in. */

	/* The header's controls: "Sign in" while no token is in use and the
	 * form is not shown, "Forget token" while one is. */
	function showSession() {
		$('signin').hidden = token() !== null || !$('login').hidden;
		$('signout').hidden = token() === null;
	}

	/* The form; "Continue without a token" only where the server has
	 * answered without one. */
	function showLogin(msg) {
		stopTimer();
		for (const v of VIEWS)
			$('view-' + v).hidden = true;
		$('login').hidden = false;
		$('login-error').textContent = msg || '';
		$('no-token').hidden = $('no-token-hint').hidden = S.anon !== 'open';
		showSession();
		$('token').focus();
	}

	function onLogin(ev) {
		ev.preventDefault();
		const t = $('token').value.trim();
		if (!t)
			return;
		forgetShown();
		sessionStorage.setItem(TOKEN_KEY, t);
		$('token').value = '';
		start();
	}

	/* Back to the views without a token, on a server that shows them. */
	function onNoToken() {
		if (token() !== null)
			forgetShown();
		sessionStorage.removeItem(TOKEN_KEY);
		$('token').value = '';
		start();
	}

	/* Forgetting the token forgets what it showed, too; the views come
	 * back if the server shows them without one, else the form. */
	function signOut() {
		sessionStorage.removeItem(TOKEN_KEY);
		forgetShown();
		setStatus('Token forgotten.');
		start();
	}

	/* Drops what the page holds from the API, so that another token (or
	 * none) never sees what the last one was shown. */
	function forgetShown() {
		S.tenants = null;
		S.expanded.clear();
		S.expandedInit = false;
		S.hist.loaded = false;
		S.v = {list: [], next: null, key: null, open: null};
		S.audit.clear();
		forgetReconcile();
		for (const b of Array.from($('t-table').tBodies))
			b.remove();
		for (const id of ['c-table', 'n-table', 'v-table', 'v-checks', 'h-table', 'r-bypasses',
				  'r-overshoots', 'r-pre-table'])
			$(id).tBodies[0].replaceChildren();
		for (const id of ['h-chart', 'h-caption', 'h-tenant', 'v-tenant', 'v-json', 'v-proof',
				  'v-message', 'ledger-pos', 'v-scan', 'r-tenant', 'r-status', 'r-range',
				  'r-nothing', 'r-link-out', 'r-b-note', 'r-o-note', 'r-p-note'])
			$(id).replaceChildren();
		for (const td of $('r-counts').querySelectorAll('td'))
			td.textContent = '';
		$('v-record').hidden = true;
		$('r-result').hidden = true;
		setStatus('');
	}

	/* ---------------------------------------------------------------- */
	/* Tabs: arrow keys move between them (WAI-ARIA tabs pattern). */

	function selectView(name, focus) {
		if (VIEWS.indexOf(name) < 0)
			name = 'tenants';
		S.view = name;
		for (const v of VIEWS) {
			const tab = $('tab-' + v);
			tab.setAttribute('aria-selected', v === name ? 'true' : 'false');
			tab.tabIndex = v === name ? 0 : -1;
			$('view-' + v).hidden = v !== name || !$('login').hidden;
		}
		if (focus)
			$('tab-' + name).focus();
		if (location.hash !== '#' + name)
			history.replaceState(null, '', '#' + name);
		loadView(false);
	}

	function onTabKey(ev) {
		const i = VIEWS.indexOf(S.view);
		let j = -1;
		if (ev.key === 'ArrowRight')
			j = (i + 1) % VIEWS.length;
		else if (ev.key === 'ArrowLeft')
			j = (i + VIEWS.length - 1) % VIEWS.length;
		else if (ev.key === 'Home')
			j = 0;
		else if (ev.key === 'End')
			j = VIEWS.length - 1;
		if (j >= 0) {
			ev.preventDefault();
			selectView(VIEWS[j], true);
		}
	}

	/* ---------------------------------------------------------------- */
	/* Loading, and the refresh timer. */

	async function loadTenants() {
		const d = await api('/v1/tenants');
		S.seq = d.seq;
		S.time = d.time;
		S.horizon = d.horizon || d.time;
		S.tenants = d.tenants;
		S.classes = GL.classesOf(d.tenants);
		$('ledger-pos').textContent = 'seq ' + GL.fmtInt(d.seq) + ' · ' + GL.fmtTime(d.time);
	}

	/* Reloads what the current view shows. A failure is shown in the
	 * view; the rest of the page stays. */
	async function loadView(timer) {
		if (!$('login').hidden)
			return;
		if (S.busy) {
			/* Asked while loading (a click, a new range): load again
			 * once this load is done, so the last request wins. */
			S.again = S.again || !timer;
			return;
		}
		S.busy = true;
		S.again = false;
		try {
			await loadTenants();
			if (S.view === 'tenants')
				renderTenants();
			else if (S.view === 'classes')
				await loadClasses();
			else if (S.view === 'history')
				await loadHistory(timer);
			else
				await loadVerdicts();
			setStatus((timer ? 'Refreshed' : 'Loaded') + ' at ' +
				  new Date().toISOString().slice(11, 19) + ' UTC.');
		} catch (e) {
			if (!(e instanceof ApiError && e.status === 401))
				setStatus(refusal(e, 'the tenants'), true);
		} finally {
			S.busy = false;
			if (S.again) {
				S.again = false;
				loadView(false);
			}
		}
	}

	function stopTimer() {
		if (S.timer)
			clearInterval(S.timer);
		S.timer = null;
	}

	function startTimer() {
		stopTimer();
		const s = Number($('refresh').value);
		if (s > 0)
			S.timer = setInterval(() => loadView(true), s * 1000);
	}

	/* Runs render, then puts focus back on the control that had it (by
	 * id) if it was replaced: a refresh never throws the user out. */
	function keepingFocus(render) {
		const id = document.activeElement && document.activeElement.id;
		render();
		if (id && document.activeElement && document.activeElement.id !== id) {
			const e = document.getElementById(id);
			if (e)
				e.focus({preventScroll: true});
		}
	}

	/* ---------------------------------------------------------------- */
	/* Tenants. */

	function tenantFilter() {
		return {text: $('t-filter').value, status: $('t-status').value};
	}

	function numCell(f, v, none, extra) {
		return el('td', {'class': 'num' + (extra ? ' ' + extra : ''), 'data-f': f},
			  GL.fmtInt(v, none));
	}

	function tenantBody(node, filtered) {
		const t = node.t;
		const st = GL.tenantStatus(t, S.classes);
		const body = el('tbody', {'class': 'tenant ' + st, 'data-ns': node.ns});
		const all = GL.tenantRows(t, S.classes);
		const rows = $('t-busy').checked ? all.filter(GL.rowInUse) : all;
		rows.forEach((r, i) => {
			const tr = el('tr', {'class': i === 0 ? 'total' : 'cls',
					     'data-cls': r.cls === null ? '' : r.cls});
			if (i === 0) {
				const th = el('th', {scope: 'row'});
				th.style.paddingLeft = (8 + 20 * node.depth) + 'px';
				if (node.children.length && !filtered) {
					const open = S.expanded.has(node.ns);
					th.append(el('button', {
						type: 'button', 'class': 'toggle', id: 'tg-' + node.ns,
						'aria-expanded': open ? 'true' : 'false',
						'aria-label': (open ? 'Collapse ' : 'Expand ') + node.ns,
						'data-ns': node.ns, text: open ? '−' : '+'}));
				} else {
					th.append(el('span', {'class': 'leaf', 'aria-hidden': 'true'}));
				}
				th.append(el('span', {'class': 'name', text: node.ns}));
				if (st !== 'ok')
					th.append(el('span', {'class': 'badge ' + st,
							      text: st === 'over' ? 'over' : 'near'}));
				for (const o of t.overcommitted || [])
					th.append(el('span', {'class': 'overnote', text:
						'overcommitted: ' + GL.shortKey(o.key) + ' used ' +
						GL.fmtInt(o.used) + ', carved ' + GL.fmtInt(o.carved) +
						' of budget ' + GL.fmtInt(o.budget)}));
				tr.append(th);
			} else {
				tr.append(el('td', {'class': 'sub'}));
			}
			tr.append(el('td', {text: r.cls === null ? 'total' : r.cls}));
			tr.append(numCell('budget', r.budget, '—'));
			tr.append(numCell('own', r.own));
			const used = numCell('subtree', r.subtree,
					  undefined, r.budget !== null && r.subtree > r.budget ? 'neg' : '');
			/* Held beside used (holds on, DESIGN 3.7): what admissions
			 * promised and the watcher has not observed yet. */
			if (r.held)
				used.append(el('span', {'class': 'held', 'data-f': 'held',
					title: 'held by admissions not yet observed',
					text: ' +' + GL.fmtInt(r.held) + ' held'}));
			tr.append(used);
			tr.append(numCell('allocated', r.allocated));
			const rem = r.blocked ? el('td', {'class': 'num neg', 'data-f': 'remaining',
							   text: 'blocked (raw key)'})
					      : numCell('remaining', r.remaining, 'unbounded',
							r.remaining !== null && r.remaining <= 0 ? 'neg' : '');
			tr.append(rem);
			tr.append(el('td', {'data-f': 'limitedBy', text: GL.limitedByText(r.limitedBy)}));
			body.append(tr);
		});
		return body;
	}

	function renderTenants() {
		if (!S.tenants)
			return;
		const tree = GL.buildTree(S.tenants);
		if (!S.expandedInit) {
			/* First view: the top two levels open. */
			for (const r of tree.roots) {
				S.expanded.add(r.ns);
				for (const c of r.children)
					if (c.children.length <= 8)
						S.expanded.add(c.ns);
			}
			S.expandedInit = true;
		}
		const f = tenantFilter();
		const filtered = f.text.trim() !== '' || f.status !== 'all';
		const rows = GL.visibleRows(tree, S.expanded, f, S.classes);
		keepingFocus(() => {
			const table = $('t-table');
			for (const b of Array.from(table.tBodies))
				b.remove();
			for (const r of rows)
				table.append(tenantBody(r.node, filtered));
		});
		$('t-empty').hidden = rows.length > 0;
	}

	function onTenantClick(ev) {
		const b = ev.target.closest('button.toggle');
		if (!b)
			return;
		const ns = b.getAttribute('data-ns');
		if (S.expanded.has(ns))
			S.expanded.delete(ns);
		else
			S.expanded.add(ns);
		renderTenants();
		const again = document.getElementById('tg-' + ns);
		if (again)
			again.focus();
	}

	function expandAll(open) {
		S.expanded.clear();
		if (open)
			for (const t of S.tenants || [])
				S.expanded.add(t.namespace);
		renderTenants();
	}

	/* ---------------------------------------------------------------- */
	/* Classes and nodes. */

	async function loadClasses() {
		let d;
		try {
			d = await api('/v1/classes');
		} catch (e) {
			if (e instanceof ApiError && e.status === 401)
				throw e;
			showClassesError(refusal(e, 'the classes'));
			return;
		}
		const caps = await Promise.all(d.classes.map(
			(c) => api('/v1/classes/' + encodeURIComponent(c.name) + '/capacity')));
		const nodes = GL.mergeNodes(caps);
		keepingFocus(() => renderClasses(d.classes, caps, nodes));
	}

	function showClassesError(msg) {
		const cb = $('c-table').tBodies[0];
		cb.replaceChildren(el('tr', {}, el('td', {colspan: 6, 'class': 'error', text: msg})));
		$('n-table').tBodies[0].replaceChildren();
	}

	function renderClasses(classes, caps, nodes) {
		const alloc = {};
		for (const cap of caps)
			alloc[cap.class] = (cap.nodes || []).reduce((a, n) => a + n.allocated, 0);
		$('c-table').tBodies[0].replaceChildren(...classes.map((c) =>
			el('tr', {'data-cls': c.name},
			   el('th', {scope: 'row', text: c.name}),
			   el('td', {text: c.deviceClassName}),
			   el('td', {text: (c.resourceNames || []).join(', ')}),
			   el('td', {'class': 'num', 'data-f': 'capacity', text: GL.fmtInt(c.capacity)}),
			   el('td', {'class': 'num', 'data-f': 'allocated', text: GL.fmtInt(alloc[c.name] || 0)}),
			   el('td', {'class': 'num' + (c.free === 0 ? ' neg' : ''), 'data-f': 'free',
				     text: GL.fmtInt(c.free)}))));
		const onlyOver = $('n-only-over').checked;
		const rows = [];
		for (const n of nodes) {
			if (onlyOver && n.over.length === 0)
				continue;
			const cls = Object.keys(n.classes).sort();
			cls.forEach((c, i) => {
				const e = n.classes[c];
				const over = e.allocated > e.capacity;
				rows.push(el('tr', {'class': over ? 'over' : null, 'data-node': n.name, 'data-cls': c},
					i === 0 ? el('th', {scope: 'row', rowspan: cls.length, text: n.name}) : null,
					el('td', {text: c}),
					el('td', {'class': 'num', 'data-f': 'capacity', text: GL.fmtInt(e.capacity)}),
					el('td', {'class': 'num' + (over ? ' neg' : ''), 'data-f': 'allocated',
						  text: GL.fmtInt(e.allocated)}),
					el('td', {text: e.serves ? 'yes' : 'no'}),
					el('td', {'data-f': 'state', text: over
						? 'over capacity by ' + GL.fmtInt(e.allocated - e.capacity)
						: e.serves ? 'ok' : 'not serving'})));
			});
		}
		if (rows.length === 0)
			rows.push(el('tr', {}, el('td', {colspan: 6, text: onlyOver
				? 'No node is allocated beyond its capacity.' : 'No nodes.'})));
		$('n-table').tBodies[0].replaceChildren(...rows);
	}

	/* ---------------------------------------------------------------- */
	/* History. */

	const DAY_MS = 86400000;
	const isoDay = (ms) => new Date(ms).toISOString().slice(0, 10);

	function fillHistoryForm() {
		const sel = $('h-tenant');
		const names = (S.tenants || []).map((t) => t.namespace).sort();
		const cur = sel.value;
		if (sel.options.length !== names.length ||
		    names.some((n, i) => sel.options[i].value !== n))
			sel.replaceChildren(...names.map((n) => el('option', {value: n, text: n})));
		sel.value = names.indexOf(cur) >= 0 ? cur : names[0] || '';
		if (!$('h-to').value && S.horizon) {
			/* The last three days the ledger knows of (its horizon,
			 * not the last verdict's time). */
			const end = Math.floor(Date.parse(S.horizon) / DAY_MS) * DAY_MS + DAY_MS;
			$('h-to').value = isoDay(end);
			$('h-from').value = isoDay(end - 3 * DAY_MS);
		}
	}

	async function loadHistory(timer) {
		fillHistoryForm();
		const ns = $('h-tenant').value;
		const from = Date.parse($('h-from').value + 'T00:00:00Z');
		const to = Date.parse($('h-to').value + 'T00:00:00Z');
		/* The timer redraws only a drawn range the ledger is still
		 * filling (it ends after the horizon): the past does not
		 * change, and an export is not a cheap read. */
		if (timer && (!S.hist.loaded || to <= Date.parse(S.horizon)))
			return;
		const step = $('h-step').value;
		if (!ns || !(from < to)) {
			$('h-caption').textContent = 'Choose a tenant and a range whose end is after its start.';
			return;
		}
		let text;
		try {
			/* tenant=: the rows of its subtree only, not everyone's.
			 * FOCUS 1.2's rows: each names its tenant in
			 * SubAccountId (1.3 names the shared class pool there,
			 * the tenant only among its allocation columns). */
			text = await api('/v1/export?format=json&focusVersion=1.2&rollup=subtree&tenant=' +
					 encodeURIComponent(ns) + '&step=' + step +
					 '&from=' + isoDay(from) + 'T00:00:00Z&to=' +
					 isoDay(to) + 'T00:00:00Z', true);
		} catch (e) {
			if (e instanceof ApiError && e.status === 401)
				throw e;
			$('h-chart').replaceChildren();
			$('h-table').tBodies[0].replaceChildren();
			$('h-caption').textContent = refusal(e, 'the billing export');
			$('h-caption').className = 'error';
			return;
		}
		S.hist.loaded = true;
		const rows = GL.parseNdjson(text);
		const stepMs = step === 'day' ? DAY_MS : GL.HOUR_MS;
		const h = GL.historySeries(rows, ns, from, to, stepMs);
		const t = (S.tenants || []).find((x) => x.namespace === ns);
		drawChart(h, GL.budgetLines(t, S.classes), ns, step);
	}

	function drawChart(h, budgets, ns, step) {
		const W = 960, H = 360;
		const m = GL.chartModel(h, budgets, W, H);
		const root = svg('svg', {viewBox: '0 0 ' + W + ' ' + H, width: W, height: H,
					 role: 'img', 'aria-labelledby': 'h-caption'});
		for (const v of m.ticks) {
			root.append(svg('line', {'class': 'gridline', x1: m.pad.l, x2: W - m.pad.r,
						 y1: m.y(v), y2: m.y(v)}));
			root.append(svg('text', {x: m.pad.l - 6, y: m.y(v) + 4, 'text-anchor': 'end'},
					GL.fmtFixed(v, v % 1 ? 1 : 0)));
		}
		const days = Math.max(1, Math.round((m.t1 - m.t0) / DAY_MS));
		const every = Math.max(1, Math.ceil(days / 8)) * DAY_MS;
		for (let t = m.t0; t <= m.t1; t += every) {
			root.append(svg('line', {'class': 'axis', x1: m.x(t), x2: m.x(t),
						 y1: H - m.pad.b, y2: H - m.pad.b + 4}));
			root.append(svg('text', {x: m.x(t), y: H - 8, 'text-anchor': 'middle'},
					isoDay(t).slice(5)));
		}
		root.append(svg('line', {'class': 'axis', x1: m.pad.l, x2: m.pad.l, y1: m.pad.t, y2: H - m.pad.b}));
		root.append(svg('line', {'class': 'axis', x1: m.pad.l, x2: W - m.pad.r,
					 y1: H - m.pad.b, y2: H - m.pad.b}));
		const colour = (c) => {
			const i = S.classes.indexOf(c);
			return i < 0 ? 'T' : String(i % 6);
		};
		let ly = m.pad.t + 10;
		for (const c of h.classes) {
			root.append(svg('polyline', {'class': 'series s' + colour(c), points: m.lines[c],
						     'data-cls': c}));
			root.append(svg('rect', {'class': 'f' + colour(c), x: W - m.pad.r + 8, y: ly - 8, width: 10, height: 10}));
			root.append(svg('text', {x: W - m.pad.r + 22, y: ly + 1}, c));
			ly += 16;
		}
		if (m.total) {
			root.append(svg('polyline', {'class': 'series total sT', points: m.total,
						     'data-cls': 'total'}));
			root.append(svg('rect', {'class': 'fT', x: W - m.pad.r + 8, y: ly - 8, width: 10, height: 10}));
			root.append(svg('text', {x: W - m.pad.r + 22, y: ly + 1}, 'all classes'));
			ly += 16;
		}
		for (const b of m.budgets) {
			const c = b.label.replace(/ budget$/, '');
			root.append(svg('line', {'class': 'budget s' + (c === 'total' ? 'T' : colour(c)),
						 x1: m.pad.l, x2: W - m.pad.r, y1: b.y, y2: b.y,
						 'data-budget': b.label}));
			root.append(svg('text', {x: W - m.pad.r + 8, y: Math.max(b.y + 4, ly)},
					b.label + ' ' + GL.fmtInt(b.value)));
			ly = Math.max(b.y + 4, ly) + 14;
		}
		$('h-chart').replaceChildren(root);
		const cap = $('h-caption');
		cap.className = '';
		cap.textContent = h.classes.length
			? 'Mean devices reserved per ' + step + ' in the subtree of ' + ns + ', ' +
			  isoDay(m.t0) + ' to ' + isoDay(m.t1) + ' (UTC)' +
			  (m.budgets.length ? '; dashed: budgets today.' : '; no budget declared.')
			: 'No usage in the subtree of ' + ns + ' in this range.';
		$('h-table').tBodies[0].replaceChildren(...h.classes.map((c) =>
			el('tr', {'data-cls': c},
			   el('th', {scope: 'row', text: c}),
			   el('td', {'class': 'num', 'data-f': 'hours', text: GL.fmtGpuHours(h.deviceMs[c])}),
			   el('td', {'class': 'num', 'data-f': 'peak',
				     text: GL.fmtFixed(Math.max(...h.series[c]), 2)}))));
	}

	/* ---------------------------------------------------------------- */
	/* Verdicts: GET /v1/verdicts, newest first, filtered by the server
	 * (tenant subtree, reason, answer); "next" is the cursor for "Load
	 * older", and a refresh asks for the verdicts after the newest shown. */

	function verdictFilter() {
		return {tenant: $('v-tenant').value, reason: $('v-reason').value,
			allowed: $('v-allowed').value};
	}

	/* A select of "any" (value '') and names, keeping the choice while
	 * it is still offered; rebuilt only when the names changed. */
	function fillSelect(sel, names, any) {
		const cur = sel.value;
		if (sel.options.length !== names.length + 1 ||
		    names.some((n, i) => sel.options[i + 1].value !== n))
			sel.replaceChildren(el('option', {value: '', text: any}),
					    ...names.map((n) => el('option', {value: n, text: n})));
		sel.value = cur === '' || names.indexOf(cur) >= 0 ? cur : '';
	}

	/* The filter's choices: the tenants the token sees, every reason. */
	function fillVerdictForm() {
		fillSelect($('v-tenant'), (S.tenants || []).map((t) => t.namespace).sort(),
			   'any (whole tree)');
		fillSelect($('v-reason'), GL.REASONS, 'any');
	}

	async function loadVerdicts() {
		fillVerdictForm();
		fillSelect($('r-tenant'), (S.tenants || []).map((t) => t.namespace).sort(),
			   'all this token may see');
		/* The first time the view shows, the reconciliation runs too,
		 * on its own: the verdicts do not wait for it. */
		if (!S.r.started)
			runReconcile();
		const f = verdictFilter();
		const key = JSON.stringify(f);
		try {
			if (key !== S.v.key || S.v.list.length === 0) {
				/* A new filter (or nothing yet): the newest page. */
				const d = await api(GL.verdictsPath(f, {}, VPAGE));
				S.v.list = GL.verdictsOfListing(d);
				S.v.next = d.next;
				S.v.key = key;
			} else {
				/* A refresh: what was recorded since, in id order. */
				let after = S.v.list[0].id;
				for (let i = 0; i < VNEWER && after !== null; i++) {
					const d = await api(GL.verdictsPath(f, {after: after}, VPAGE));
					S.v.list = GL.mergeVerdicts(S.v.list, GL.verdictsOfListing(d));
					after = d.next;
				}
			}
		} catch (e) {
			if (e instanceof ApiError && e.status === 401)
				throw e;
			S.v.key = null;
			$('v-table').tBodies[0].replaceChildren(el('tr', {},
				el('td', {colspan: 8, 'class': 'error', text: refusal(e, 'the verdicts')})));
			$('v-older').disabled = true;
			$('v-scan').textContent = '';
			return;
		}
		keepingFocus(renderVerdicts);
	}

	async function loadOlder() {
		const key = JSON.stringify(verdictFilter());
		if (S.v.next === null || S.v.key !== key)
			return;
		try {
			const d = await api(GL.verdictsPath(verdictFilter(), {before: S.v.next}, VPAGE));
			if (S.v.key !== key)
				return; /* the filter changed meanwhile: a new list */
			S.v.list = GL.mergeVerdicts(S.v.list, GL.verdictsOfListing(d));
			S.v.next = d.next;
		} catch (e) {
			setStatus(refusal(e, 'the verdicts'), true);
		}
		keepingFocus(renderVerdicts);
	}

	function renderVerdicts() {
		const rows = S.v.list.map((v) => {
			const r = v.record;
			const who = GL.requesterText(r);
			return el('tr', {tabindex: 0, id: 'vr-' + v.id, 'data-id': v.id,
					 'aria-current': S.v.open === v.id ? 'true' : null},
				el('td', {'class': 'num', text: String(v.id)}),
				el('td', {'class': 'nowrap', text: GL.fmtTime(v.time)}),
				el('td', {text: r.type}),
				el('td', {text: GL.verdictSubject(r)}),
				el('td', {'data-f': 'requester',
					  text: who || 'not recorded'}),
				el('td', {'class': r.allowed ? 'allowed' : 'denied',
					  text: r.allowed ? 'allowed' : 'denied'}),
				el('td', {text: r.reason}),
				el('td', {'data-f': 'audit', 'class': auditClass(S.audit.get(v.id)),
					  text: S.audit.get(v.id) || 'not re-derived'}));
		});
		if (rows.length === 0)
			rows.push(el('tr', {}, el('td', {colspan: 8, text: S.v.next !== null
				? 'No verdict matches the filter among the newest read; Load older reads on.'
				: 'No verdict matches the filter.'})));
		$('v-table').tBodies[0].replaceChildren(...rows);
		$('v-older').disabled = S.v.next === null;
		$('v-scan').textContent = S.v.list.length + ' verdicts, newest first' +
			(S.v.next !== null ? '; older ones remain (Load older).' : '; that is all of them.');
	}

	/* Opens verdict v ({id, seq, time, record}) in the record panel. */
	function openVerdict(v) {
		const id = v.id;
		S.v.open = id;
		const r = v.record;
		$('v-record').hidden = false;
		$('v-record-h').textContent = 'Verdict ' + id + ' (' + r.type + ', seq ' + v.seq + ')';
		const who = GL.requesterText(r);
		$('v-message').textContent = (r.allowed ? 'Allowed' : 'Denied') + ', ' + r.reason +
			': ' + r.message + '. Judged on the state at seq ' + r.basisSeq + '.' +
			(who ? ' Asked by ' + who + ' (review ' + (r.requester.uid || '?') + ').' : '');
		$('v-checks').tBodies[0].replaceChildren(...(r.checks || []).map((c) =>
			el('tr', {'class': c.ok ? null : 'over'},
			   el('td', {text: c.tenant}), el('td', {text: c.key}),
			   el('td', {'class': 'num', text: GL.fmtInt(c.budget)}),
			   el('td', {'class': 'num', text: GL.fmtInt(c.used)}),
			   el('td', {'class': 'num', text: GL.fmtInt(c.growth)}),
			   el('td', {'class': 'num', text: GL.fmtInt(c.remaining)}),
			   el('td', {text: c.ok ? 'yes' : 'no'}))));
		$('v-json').textContent = JSON.stringify(r, null, 2);
		$('v-verify-out').textContent = '';
		$('v-prove-out').textContent = '';
		$('v-proof-details').hidden = true;
		for (const tr of $('v-table').tBodies[0].rows)
			if (tr.getAttribute('data-id') === String(id))
				tr.setAttribute('aria-current', 'true');
			else
				tr.removeAttribute('aria-current');
	}

	function onVerdictRow(ev) {
		if (ev.type === 'keydown' && ev.key !== 'Enter' && ev.key !== ' ')
			return;
		const tr = ev.target.closest('tr[data-id]');
		if (!tr)
			return;
		ev.preventDefault();
		const id = Number(tr.getAttribute('data-id'));
		const v = S.v.list.find((x) => x.id === id);
		if (v)
			openVerdict(v);
	}

	function auditClass(a) {
		return a === 'reproduced' ? 'allowed' : a ? 'denied' : null;
	}

	/* GET ?verify=1 for verdict id: the server recomputes it from the
	 * state at its basisSeq. Remembers the outcome for the list. */
	async function verifyOne(id) {
		try {
			const d = await api('/v1/verdicts/' + id + '?verify=1');
			S.audit.set(id, d.verified ? 'reproduced' : 'DIFFERS');
			return d;
		} catch (e) {
			S.audit.set(id, 'error');
			throw e;
		}
	}

	async function reDerive() {
		const out = $('v-verify-out');
		out.className = '';
		out.textContent = 'Re-deriving…';
		try {
			const d = await verifyOne(S.v.open);
			out.className = d.verified ? 'allowed' : 'denied';
			out.textContent = d.verified
				? 'Re-derived from the log up to seq ' + d.basisSeq + ': the same verdict, byte for byte.'
				: 'Re-derived from the log up to seq ' + d.basisSeq + ': it DIFFERS from the stored record.';
		} catch (e) {
			out.className = 'error';
			out.textContent = refusal(e, 'this verdict');
		}
		keepingFocus(renderVerdicts);
	}

	/* Re-derives every verdict the filter shows, one request at a time
	 * (each rebuilds a past state on the server). */
	async function auditShown() {
		const ids = S.v.list.map((v) => v.id);
		let bad = 0;
		for (let i = 0; i < ids.length; i++) {
			setStatus('Re-deriving ' + (i + 1) + ' of ' + ids.length + '…');
			try {
				await verifyOne(ids[i]);
			} catch (e) {
				if (e instanceof ApiError && e.status === 401)
					return;
			}
			if (S.audit.get(ids[i]) !== 'reproduced')
				bad++;
		}
		keepingFocus(renderVerdicts);
		setStatus('Re-derived ' + ids.length + ' verdicts: ' +
			  (bad ? bad + ' NOT reproduced.' : 'all reproduced byte for byte.'), bad > 0);
	}

	async function prove() {
		const out = $('v-prove-out');
		out.className = '';
		out.textContent = 'Asking for the inclusion proof…';
		$('v-proof-details').hidden = true;
		let d;
		try {
			d = await api('/v1/verdicts/' + S.v.open + '?proof=1');
		} catch (e) {
			out.className = 'error';
			out.textContent = e instanceof ApiError && e.status === 404
				? 'This server has no proofs (GET /v1/verdicts/' + S.v.open + '?proof=1 answered 404: ' + e.message + ').'
				: refusal(e, 'the proof');
			return;
		}
		/* DESIGN 7: the verdict with its inclusion proof (as "proof";
		 * a bare proof object is taken too). */
		const proof = d.proof || (d.type === 'inclusion' ? d : null);
		if (!proof) {
			out.className = 'error';
			out.textContent = 'This server answered without an inclusion proof: it does not make proofs yet.';
			return;
		}
		$('v-proof').textContent = JSON.stringify(proof, null, 2);
		$('v-proof-details').hidden = false;
		if (!window.crypto || !crypto.subtle) {
			out.className = 'error';
			out.textContent = 'This browser context has no Web Crypto (not a secure context): check the proof with gpuledger check-proof.';
			return;
		}
		const res = await GL.checkInclusion(GL.webSha256, proof);
		let msg = (res.ok ? 'Proved: ' : 'NOT proved: ') + res.reason + '.';
		let ok = res.ok;
		const keyText = $('v-key').value.trim();
		if (res.ok && keyText) {
			const key = GL.parseVerifierKey(keyText);
			if (!key) {
				ok = false;
				msg += ' The verifier key is not name+id+key.';
			} else {
				try {
					const s = await GL.checkSignature(GL.webSha256, GL.webEd25519Verify,
									  GL.parseCheckpoint(proof.checkpoint), key);
					ok = s.ok;
					msg += ' Checkpoint: ' + s.reason + '.';
				} catch (e) {
					ok = false;
					msg += ' This browser cannot check Ed25519 signatures (' + e.message + ').';
				}
			}
		} else if (res.ok) {
			msg += ' Give the verifier key to check the checkpoint\'s signature here.';
		}
		out.className = ok ? 'allowed' : 'denied';
		out.textContent = msg;
	}

	/* ---------------------------------------------------------------- */
	/* Reconciliation: GET /v1/reconcile (DESIGN 3.6) is a heavy read, one
	 * pass over the whole log on the server, so it runs when the view
	 * first opens and on Reconcile, never on the timer, and says that it
	 * is reading meanwhile. The answer of a run that a newer run or
	 * another token (forgetReconcile) has replaced is dropped. */

	function reconcileForm() {
		return {tenant: $('r-tenant').value, from: $('r-from').value, to: $('r-to').value,
			since: $('r-since').value, window: $('r-window').value};
	}

	function forgetReconcile() {
		S.r.gen++;
		S.r.started = false;
		S.r.view = null;
		clearInterval(S.r.timer);
		S.r.timer = null;
		$('r-section').setAttribute('aria-busy', 'false');
	}

	async function runReconcile() {
		const gen = ++S.r.gen;
		const t0 = Date.now();
		const st = $('r-status');
		const upTo = S.seq !== null ? ' up to seq ' + GL.fmtInt(S.seq) : '';
		const tick = () => {
			const secs = Math.floor((Date.now() - t0) / 1000);
			st.textContent = 'Reconciling: the server reads the whole log' + upTo +
				(secs > 0 ? ' (' + secs + ' s so far)' : '') + '…';
		};
		S.r.started = true;
		clearInterval(S.r.timer);
		st.className = 'busy';
		tick();
		S.r.timer = setInterval(tick, 1000);
		$('r-section').setAttribute('aria-busy', 'true');
		$('r-link-out').textContent = '';
		let d = null, err = null;
		try {
			d = await api(GL.reconcilePath(reconcileForm()));
		} catch (e) {
			err = e;
		}
		if (gen !== S.r.gen)
			return;
		clearInterval(S.r.timer);
		S.r.timer = null;
		$('r-section').setAttribute('aria-busy', 'false');
		if (err) {
			const status = err instanceof ApiError ? err.status : 0;
			$('r-result').hidden = true;
			/* A 401 has brought the sign-in form already. */
			st.className = status === 401 ? '' : 'error';
			st.textContent = status === 401 ? ''
				: status === 400 ? 'The server refused these parameters (400: ' + err.message + ').'
				: refusal(err, 'the reconciliation');
			return;
		}
		st.className = '';
		st.textContent = 'Reconciled at ' + new Date().toISOString().slice(11, 19) + ' UTC.';
		renderReconcile(d);
	}

	function renderReconcile(d) {
		const v = GL.reconcileView(d, RMAX);
		S.r.view = v;
		$('r-range').textContent = GL.reconcileRangeText(d.range);
		for (const td of $('r-counts').querySelectorAll('td[data-f]'))
			td.textContent = GL.fmtInt(v.counts[td.dataset.f], '?');
		$('r-nothing').hidden = !v.nothing;
		$('r-nothing').textContent = v.nothing ? GL.nothingText(d.range) : '';

		const brows = v.bypasses.map((b) => el('tr', {id: 'rb-' + b.seq, tabindex: -1, 'data-seq': b.seq},
			el('td', {'class': 'num', 'data-f': 'seq', text: GL.fmtInt(b.seq)}),
			el('td', {'class': 'nowrap', 'data-f': 'time', text: GL.fmtTime(b.time)}),
			el('td', {'data-f': 'object', text: GL.objectText(b)}),
			el('td', {'data-f': 'class', text: b.class}),
			el('td', {'class': 'num', 'data-f': 'units',
				  text: GL.fmtInt(b.before) + ' → ' + GL.fmtInt(b.after)}),
			el('td', {'data-f': 'previous', text: b.previousSeq === null
				? 'none (first observation)' : 'seq ' + GL.fmtInt(b.previousSeq)})));
		if (brows.length === 0)
			brows.push(el('tr', {}, el('td', {colspan: 6, text: GL.bypassNoneText(d.range)})));
		$('r-bypasses').tBodies[0].replaceChildren(...brows);
		$('r-b-note').textContent = GL.listNote(v.bypasses.length, v.bypassesMore, 'newest');

		const orows = v.overshoots.map((o) => el('tr', {'class': o.open ? 'over' : null,
				'data-from': o.fromSeq, 'data-tenant': o.tenant, 'data-key': o.key},
			el('th', {scope: 'row', 'data-f': 'tenant', text: o.tenant}),
			el('td', {'data-f': 'key', title: o.key, text: o.keyShort}),
			el('td', {'data-f': 'from', text: o.from}),
			el('td', {'data-f': 'to', 'class': o.open ? 'neg' : null, text: o.to}),
			el('td', {'data-f': 'start', text: o.start}),
			el('td', {'data-f': 'peak', text: o.peak}),
			el('td', {'data-f': 'trigger', text: o.trigger}),
			el('td', {'data-f': 'causes'}, causesList(o, v))));
		if (orows.length === 0)
			orows.push(el('tr', {}, el('td', {colspan: 8,
				text: 'None: no tenant\'s subtree used more than a budget it declares in this range.'})));
		$('r-overshoots').tBodies[0].replaceChildren(...orows);
		$('r-o-note').textContent = GL.listNote(v.overshoots.length, v.overshootsMore, 'newest');

		const n = v.pre.length + v.preMore;
		$('r-pre-h').textContent = GL.fmtInt(n) + (n === 1 ? ' object' : ' objects') +
			' observed before admission was in force' + (n ? ' (open to list them)' : '');
		$('r-pre-table').tBodies[0].replaceChildren(...v.pre.map((p) =>
			el('tr', {id: 'rp-' + p.seq, tabindex: -1, 'data-seq': p.seq},
			   el('td', {'class': 'num', 'data-f': 'seq', text: GL.fmtInt(p.seq)}),
			   el('td', {'class': 'nowrap', text: GL.fmtTime(p.time)}),
			   el('td', {'data-f': 'object', text: GL.objectText(p)}),
			   el('td', {text: p.uid || '—'}))));
		$('r-p-note').textContent = GL.listNote(v.pre.length, v.preMore, 'first');
		$('r-result').hidden = false;
	}

	/* An overshoot's causes: a race names its verdicts (each opens in
	 * the record panel), a bypass and an object observed before admission
	 * lead to their rows when listed, a lowered budget gives its seq. */
	function causesList(o, v) {
		const ul = el('ul', {'class': 'causes'});
		const at = (c) => c.label + ' at seq ' + GL.fmtInt(c.seq);
		for (const c of o.causes) {
			const li = el('li', {'data-type': c.type, 'data-seq': c.seq});
			if (c.type === 'race') {
				li.append(at(c) + ': ');
				c.verdicts.forEach((id, i) => {
					if (i > 0)
						li.append(', ');
					li.append(el('button', {type: 'button', 'class': 'link',
								'data-verdict': id, text: 'verdict ' + id}));
				});
			} else if (c.type === 'bypass' && v.shownBypass.has(c.seq)) {
				li.append(el('button', {type: 'button', 'class': 'link', 'data-bypass': c.seq,
							text: at(c)}));
			} else if (c.type === 'preExisting' && v.shownPre.has(c.seq)) {
				li.append(el('button', {type: 'button', 'class': 'link', 'data-pre': c.seq,
							text: at(c)}));
			} else {
				li.append(at(c) + (c.type === 'bypass' || c.type === 'preExisting'
					? ' (not in the lists here)' : ''));
			}
			ul.append(li);
		}
		if (o.omitted > 0)
			ul.append(el('li', {text: 'and ' + GL.fmtInt(o.omitted) + ' more the server did not list'}));
		if (o.causes.length === 0 && o.omitted === 0)
			ul.append(el('li', {text: 'none named'}));
		return ul;
	}

	/* Moves to a row of the reconciliation and marks it. */
	function goToRow(id) {
		const tr = document.getElementById(id);
		if (!tr)
			return;
		for (const x of $('r-section').querySelectorAll('tr[aria-current]'))
			x.removeAttribute('aria-current');
		tr.setAttribute('aria-current', 'true');
		tr.scrollIntoView({block: 'center'});
		tr.focus({preventScroll: true});
	}

	/* Opens verdict id in the record panel: from the list when it is
	 * there, else GET /v1/verdicts/{id} (the list may be filtered, or not
	 * read that far). A refusal is said next to the overshoots. */
	async function showVerdict(id) {
		const out = $('r-link-out');
		let v = S.v.list.find((x) => x.id === id);
		out.className = '';
		out.textContent = '';
		if (!v) {
			/* An answer to a token replaced meanwhile shows nothing. */
			const t = token();
			try {
				const r = await api('/v1/verdicts/' + id);
				v = {id: id, seq: r.seq, time: r.time, record: r};
			} catch (e) {
				if (t === token() && !(e instanceof ApiError && e.status === 401)) {
					out.className = 'error';
					out.textContent = refusal(e, 'verdict ' + id);
				}
				return;
			}
			if (t !== token())
				return;
		}
		openVerdict(v);
		$('v-record').scrollIntoView({block: 'start'});
		$('v-record-h').focus({preventScroll: true});
	}

	function onReconcileClick(ev) {
		const b = ev.target.closest('button[data-verdict], button[data-bypass], button[data-pre]');
		if (!b)
			return;
		if (b.dataset.verdict !== undefined) {
			showVerdict(Number(b.dataset.verdict));
		} else if (b.dataset.bypass !== undefined) {
			goToRow('rb-' + b.dataset.bypass);
		} else {
			$('r-pre').open = true;
			goToRow('rp-' + b.dataset.pre);
		}
	}

	/* ---------------------------------------------------------------- */

	/* Shows the views and loads the current one with the token in use,
	 * or none: a 401 brings the form (api). */
	function start() {
		$('login').hidden = true;
		$('login-error').textContent = '';
		showSession();
		const v = location.hash.replace(/^#/, '');
		selectView(VIEWS.indexOf(v) >= 0 ? v : S.view, false);
		startTimer();
	}

	function init() {
		$('login-form').addEventListener('submit', onLogin);
		$('signout').addEventListener('click', signOut);
		$('signin').addEventListener('click', () => showLogin(''));
		$('refresh').addEventListener('change', startTimer);
		const tabs = $('tabs');
		tabs.addEventListener('click', (ev) => {
			const b = ev.target.closest('[role="tab"]');
			if (b)
				selectView(b.getAttribute('data-view'), false);
		});
		tabs.addEventListener('keydown', onTabKey);
		$('t-table').addEventListener('click', onTenantClick);
		$('t-filter').addEventListener('input', renderTenants);
		$('t-status').addEventListener('change', renderTenants);
		$('t-busy').addEventListener('change', renderTenants);
		$('t-expand').addEventListener('click', () => expandAll(true));
		$('t-collapse').addEventListener('click', () => expandAll(false));
		$('n-only-over').addEventListener('change', () => loadView(false));
		$('h-form').addEventListener('submit', (ev) => {
			ev.preventDefault();
			S.hist.loaded = true;
			loadView(false);
		});
		for (const id of ['v-tenant', 'v-reason', 'v-allowed'])
			$(id).addEventListener('change', () => loadView(false));
		$('v-older').addEventListener('click', loadOlder);
		$('v-table').addEventListener('click', onVerdictRow);
		$('v-table').addEventListener('keydown', onVerdictRow);
		$('v-verify').addEventListener('click', reDerive);
		$('v-audit').addEventListener('click', auditShown);
		$('v-prove').addEventListener('click', prove);
		$('r-form').addEventListener('submit', (ev) => {
			ev.preventDefault();
			runReconcile();
		});
		$('r-section').addEventListener('click', onReconcileClick);
		window.addEventListener('hashchange', () => {
			const v = location.hash.replace(/^#/, '');
			if (v !== S.view && VIEWS.indexOf(v) >= 0)
				selectView(v, false);
		});
		$('no-token').addEventListener('click', onNoToken);
		/* No sign-in first: the views load with the token of this tab,
		 * or none, and a 401 asks for one. */
		start();
	}

	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', init);
	else
		init();
})();
