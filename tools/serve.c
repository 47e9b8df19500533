/*
 * gpuledger serve: the query process (DESIGN 7). The server itself is
 * query/; this file reads the options, makes libuv abort on out-of-memory
 * like the rest of the daemon, and runs the loop until SIGINT or SIGTERM.
 */
#include "query/query.h"
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

static const char serve_usage[] =
	"usage: gpuledger serve --db DIR [--listen HOST:PORT] "
	"[--token-file FILE]\n"
	"       [--rates FILE]\n"
	"       [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
	"       [--read-only [--primary URL]] [--probe-listen HOST:PORT]\n"
	"  the query process: HTTP/1.1 JSON API under /v1 (DESIGN 7).\n"
	"  Rebuilds the state from the latest checkpoint and the tail, then\n"
	"  follows the log as the watcher appends; /readyz answers 200 once\n"
	"  caught up with a log that holds a complete list (the watcher's\n"
	"  NOTE Synced; until then 503 with the reason). Verdicts are\n"
	"  recorded as VERDICT events before they are answered. Prints\n"
	"  \"listening on HOST:PORT\" when ready to accept; SIGINT or\n"
	"  SIGTERM stop it after answering what is queued.\n";

/* The bounds given in ms or counts must fit an unsigned. */
static bool fits(const char *name, uint64_t v)
{
	if (v <= 0xffffffffu)
		return true;
	tool_error("serve: %s %llu is too large", name, (unsigned long long)v);
	return false;
}

/* Every connection is a descriptor: the soft limit (often 1024) would
 * refuse accepts long before --max-conns, so it is raised to the hard one.
 * A limit that cannot be raised is no error: the bounds still hold, and
 * libuv sheds what it cannot accept. */
static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int cmd_serve(int argc, char **argv)
{
	struct query_opts o = {.handle_signals = true};
	uint64_t body = 0, conns = 0, idle = 0, req = 0, poll = 0, reload = 0,
		 heavy = 0, every = 10, half_open = 0, per_peer = 0,
		 handshake = 0;
	const char *sign_key = NULL;
	struct note_signer signer;
	const struct opt opts[] = {
		{"--db", OPT_STR, &o.db, "DIR",
		 "the ledger (one server per ledger); a directory that holds "
		 "none is refused, unless --create"},
		{"--create", OPT_FLAG, &o.create, NULL,
		 "make an empty ledger in DIR when there is none (a pod whose "
		 "watcher has not started yet)"},
		{"--listen", OPT_STR, &o.listen, "HOST:PORT",
		 "numeric address (default 127.0.0.1:8420; port 0 picks a free "
		 "one); without --token-file only a loopback address is "
		 "accepted"},
		{"--token-file", OPT_STR, &o.token_file, "FILE",
		 "`TOKEN ROLE` per line; roles admin, admission, auditor, "
		 "tenant:<ns>; the file must not be readable by group or "
		 "others"},
		{"--rates", OPT_STR, &o.rates_file, "FILE",
		 "the billing file of GET /v1/export (prices, names, billing "
		 "period offset; `gpuledger export --help`); read again when "
		 "it changes, a bad change keeps the previous one"},
		{"--tls-cert", OPT_STR, &o.tls_cert, "FILE",
		 "serve HTTPS (TLS >= 1.2) with this PEM chain;"},
		{"--tls-key", OPT_STR, &o.tls_key, "FILE",
		 "and its key; both are reloaded when they change (open "
		 "connections keep the old one; a pair that does not load is "
		 "logged and ignored)"},
		{"--tls-client-ca", OPT_STR, &o.tls_client_ca, "FILE",
		 "require client certificates signed by it; a token-file line "
		 "`cert:<CN> ROLE` gives a certificate with that subject CN a "
		 "role (a subject with two CNs gets none)"},
		{"--tls-reload-ms", OPT_U64, &reload, "MS",
		 "how often the TLS files are checked (1000)"},
		{"--read-only", OPT_FLAG, &o.read_only, NULL,
		 "a replica (gpuledger replicate): GETs answer, other methods "
		 "503"},
		{"--primary", OPT_STR, &o.primary, "URL",
		 "named in those 503 answers"},
		{"--probe-listen", OPT_STR, &o.probe_listen, "HOST:PORT",
		 "plain HTTP for /healthz and /readyz only (the kubelet "
		 "presents no client certificate); prints \"probes on "
		 "HOST:PORT\""},
		{"--max-body", OPT_U64, &body, "BYTES",
		 "request body bound (default 1048576)"},
		{"--max-conns", OPT_U64, &conns, "N",
		 "open connections (default 4096; the probe listener has 64 "
		 "of its own, at most 32 of one peer address, a new probe "
		 "closing the oldest in its way)"},
		{"--max-half-open", OPT_U64, &half_open, "N",
		 "of those, connections without a TLS handshake and first "
		 "request head yet (default a quarter of --max-conns); a new "
		 "connection over a bound closes the oldest half-open one in "
		 "its way, or is closed at once when there is none"},
		{"--max-conns-per-peer", OPT_U64, &per_peer, "N",
		 "connections of one peer address (default half of "
		 "--max-half-open: one address alone never fills it)"},
		{"--handshake-ms", OPT_U64, &handshake, "MS",
		 "a half-open connection is cut this long after its accept "
		 "(default 2000, at most --request-ms)"},
		{"--max-heavy", OPT_U64, &heavy, "N",
		 "exports, past states and event pages computed at once, each "
		 "on a thread; beyond: 503 with Retry-After (default 16)"},
		{"--idle-ms", OPT_U64, &idle, "MS",
		 "keep-alive idle time (default 30000)"},
		{"--request-ms", OPT_U64, &req, "MS",
		 "a request must arrive whole within (default 10000); slower "
		 "clients get 408 and are cut off"},
		{"--poll-ms", OPT_U64, &poll, "MS",
		 "how often the log is followed (default 50)"},
		{"--sign-key", OPT_STR, &sign_key, "FILE",
		 "sign a C2SP checkpoint of the Merkle tree with this key "
		 "(gpuledger keygen) while the tree grows; GET /v1/checkpoint "
		 "serves the latest"},
		{"--sign-every", OPT_U64, &every, "SECS",
		 "at most this often (default 10)"},
	};
	const struct cmd_spec spec = CMD_SPEC("serve", serve_usage, opts, NULL);
	struct lg_error err = {0};
	query_server_t *qs;
	const char *listen;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	tool_no_dumps();
	raise_nofile();
	if (!fits("--max-conns", conns) || !fits("--max-heavy", heavy) ||
	    !fits("--max-half-open", half_open) ||
	    !fits("--max-conns-per-peer", per_peer) ||
	    !fits("--handshake-ms", handshake) || !fits("--idle-ms", idle) ||
	    !fits("--request-ms", req) || !fits("--poll-ms", poll) ||
	    !fits("--tls-reload-ms", reload))
		return EXIT_USAGE;
	if (tool_check_db("serve", o.db, o.create) != 0)
		return EXIT_USAGE;
	/* The server's lock file lives in the directory: make it first. */
	if (o.create && mkdir(o.db, 0775) != 0 && errno != EEXIST) {
		tool_error("serve: %s: %s", o.db, strerror(errno));
		return EXIT_USAGE;
	}
	if (every == 0 || every > 86400) {
		tool_error("serve: --sign-every is 1 to 86400 seconds");
		return EXIT_USAGE;
	}
	if (sign_key != NULL) {
		if ((status = tlog_load_signer("serve", sign_key, &signer)) != 0)
			return status;
		o.signer = &signer;
		o.sign_every_ms = (unsigned)every * 1000;
	}
	o.max_body_bytes = (size_t)body;
	o.max_conns = (unsigned)conns;
	o.max_half_open = (unsigned)half_open;
	o.max_conns_per_peer = (unsigned)per_peer;
	o.handshake_ms = (unsigned)handshake;
	o.max_heavy = (unsigned)heavy;
	o.idle_ms = (unsigned)idle;
	o.request_ms = (unsigned)req;
	o.poll_ms = (unsigned)poll;
	o.tls_reload_ms = (unsigned)reload;
	if ((rc = query_server_open(&qs, &o, &err)) != 0) {
		tool_error("serve: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	/* The address as given with the port the kernel chose (for 0). */
	listen = o.listen ? o.listen : QUERY_LISTEN_DEFAULT;
	printf("listening on %.*s:%d\n", (int)(strrchr(listen, ':') - listen),
	       listen, query_server_port(qs));
	if (o.probe_listen != NULL)
		printf("probes on %.*s:%d\n",
		       (int)(strrchr(o.probe_listen, ':') - o.probe_listen),
		       o.probe_listen, query_server_probe_port(qs));
	fflush(stdout);
	rc = query_server_run(qs, &err);
	query_server_close(qs);
	if (rc != 0) {
		tool_error("serve: %s", err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
