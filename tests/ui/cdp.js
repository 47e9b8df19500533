/*
 * A minimal Chrome DevTools Protocol client for the console's browser test:
 * Debian's chromium over --remote-debugging-pipe (NUL-separated JSON on
 * file descriptors 3 and 4), so no port is opened and no websocket or npm
 * package is needed.
 */
'use strict';
const {spawn} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/* Starts chromium headless with a fresh profile. Every host name but
 * 127.0.0.1 resolves to nothing, so even a request the test failed to
 * catch cannot leave the machine. */
function launch(opts) {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpuledger-ui-'));
	const args = [
		'--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
		'--no-first-run', '--no-default-browser-check',
		'--disable-background-networking', '--disable-component-update',
		'--disable-sync', '--disable-extensions', '--disable-default-apps',
		'--metrics-recording-only', '--disable-domain-reliability',
		'--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
		'--user-data-dir=' + dir, '--remote-debugging-pipe',
		'--window-size=' + opts.width + ',' + opts.height, 'about:blank',
	];
	const child = spawn(opts.chromium || '/usr/bin/chromium', args,
			    {stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe']});
	let stderr = '';
	child.stdio[2].on('data', (d) => {
		stderr = (stderr + d).slice(-4000);
	});
	const b = new Browser(child, dir);
	b.stderr = () => stderr;
	return b;
}

class Browser {
	constructor(child, dir) {
		this.child = child;
		this.dir = dir;
		this.id = 0;
		this.waiting = new Map();
		this.handlers = [];
		this.buf = '';
		this.exited = false;
		child.stdio[4].on('data', (d) => this.onData(d));
		child.on('exit', () => {
			this.exited = true;
			for (const w of this.waiting.values())
				w.reject(new Error('chromium exited: ' + this.stderr()));
			this.waiting.clear();
		});
	}

	onData(d) {
		this.buf += d.toString('utf8');
		let i;
		while ((i = this.buf.indexOf('\0')) >= 0) {
			const msg = JSON.parse(this.buf.slice(0, i));
			this.buf = this.buf.slice(i + 1);
			if (msg.id !== undefined && this.waiting.has(msg.id)) {
				const w = this.waiting.get(msg.id);
				this.waiting.delete(msg.id);
				if (msg.error)
					w.reject(new Error(w.method + ': ' + msg.error.message));
				else
					w.resolve(msg.result);
			} else if (msg.method) {
				for (const h of this.handlers)
					h(msg);
			}
		}
	}

	/* Sends a command (to a page when sessionId is given). */
	send(method, params, sessionId) {
		const id = ++this.id;
		const m = {id: id, method: method, params: params || {}};
		if (sessionId)
			m.sessionId = sessionId;
		return new Promise((resolve, reject) => {
			if (this.exited)
				return reject(new Error('chromium is not running: ' + this.stderr()));
			this.waiting.set(id, {resolve, reject, method});
			this.child.stdio[3].write(JSON.stringify(m) + '\0');
		});
	}

	on(fn) {
		this.handlers.push(fn);
	}

	/* A new page in a fresh browser context (its own session storage). */
	async page() {
		const {browserContextId} = await this.send('Target.createBrowserContext');
		const {targetId} = await this.send('Target.createTarget',
						   {url: 'about:blank', browserContextId});
		const {sessionId} = await this.send('Target.attachToTarget',
						    {targetId, flatten: true});
		return new Page(this, sessionId);
	}

	async close() {
		try {
			await Promise.race([this.send('Browser.close'),
					    new Promise((r) => setTimeout(r, 3000))]);
		} catch (e) { /* already gone */ }
		if (!this.exited) {
			const gone = new Promise((r) => this.child.once('exit', r));
			const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
			await gone;
			clearTimeout(t);
		}
		fs.rmSync(this.dir, {recursive: true, force: true, maxRetries: 5, retryDelay: 100});
	}
}

class Page {
	constructor(b, sessionId) {
		this.b = b;
		this.s = sessionId;
	}

	send(method, params) {
		return this.b.send(method, params, this.s);
	}

	/* Evaluates an expression (a function body's value) in the page;
	 * returns its value (JSON), throws what the page threw. */
	async eval(expr) {
		const r = await this.send('Runtime.evaluate',
					  {expression: expr, returnByValue: true, awaitPromise: true});
		if (r.exceptionDetails)
			throw new Error('page: ' + (r.exceptionDetails.exception
				? r.exceptionDetails.exception.description : r.exceptionDetails.text));
		return r.result.value;
	}

	/* Waits until expr is truthy (polled), returning its value. An
	 * exception (the page still loading) counts as not yet. */
	async until(expr, what, ms) {
		const end = Date.now() + (ms || 15000);
		let last, err = '';
		for (;;) {
			try {
				last = await this.eval(expr);
				err = '';
			} catch (e) {
				last = null;
				err = e.message;
			}
			if (last)
				return last;
			if (Date.now() > end)
				throw new Error('timed out waiting for ' + what +
						(err ? ' (' + err + ')' : ''));
			await new Promise((r) => setTimeout(r, 50));
		}
	}

	async key(key, code, keyCode) {
		for (const type of ['keyDown', 'keyUp'])
			await this.send('Input.dispatchKeyEvent',
					{type, key, code: code || key,
					 windowsVirtualKeyCode: keyCode || 0});
	}

	async screenshot(file) {
		const r = await this.send('Page.captureScreenshot', {format: 'png'});
		fs.writeFileSync(file, Buffer.from(r.data, 'base64'));
	}
}

module.exports = {launch};
