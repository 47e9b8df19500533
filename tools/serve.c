/*
 * gpuledger serve: the query process (DESIGN 7). The server itself is
 * query/; this file reads the options, makes libuv abort on out-of-memory
 * like the rest of the daemon, and runs the loop until SIGINT or SIGTERM.
 * The server's options that `member` takes too (OPT_SERVER, tools.h) are
 * set here for both.
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
	"       [--holds DUR]\n"
	"  the query process: HTTP/1.1 JSON API under /v1 (DESIGN 7).\n"
	"  Rebuilds the state from the latest checkpoint and the tail, then\n"
	"  follows the log as the watcher appends; /readyz answers 200 once\n"
	"  caught up with a log that holds a complete list (the watcher's\n"
	"  NOTE Synced; until then 503 with the reason). Verdicts are\n"
	"  recorded as VERDICT events before they are answered. Prints\n"
	"  \"listening on HOST:PORT\" when ready to accept; SIGINT or\n"
	"  SIGTERM stop it after answering what is queued.\n";

/* The bounds given in ms or counts must fit an unsigned. */
static bool fits(const char *cmd, const char *name, uint64_t v)
{
	if (v <= 0xffffffffu)
		return true;
	tool_error("%s: %s %llu is too large", cmd, name,
		   (unsigned long long)v);
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

int tool_server_opts(const char *cmd, const struct server_limits *l,
		     struct query_opts *q)
{
	raise_nofile();
	if (!fits(cmd, "--max-conns", l->conns) ||
	    !fits(cmd, "--max-heavy", l->heavy) ||
	    !fits(cmd, "--max-half-open", l->half_open) ||
	    !fits(cmd, "--max-conns-per-peer", l->per_peer) ||
	    !fits(cmd, "--handshake-ms", l->handshake) ||
	    !fits(cmd, "--idle-ms", l->idle) ||
	    !fits(cmd, "--request-ms", l->request) ||
	    !fits(cmd, "--poll-ms", l->poll) ||
	    !fits(cmd, "--tls-reload-ms", l->tls_reload))
		return EXIT_USAGE;
	q->max_body_bytes = (size_t)l->body;
	q->max_conns = (unsigned)l->conns;
	q->max_half_open = (unsigned)l->half_open;
	q->max_conns_per_peer = (unsigned)l->per_peer;
	q->handshake_ms = (unsigned)l->handshake;
	q->max_heavy = (unsigned)l->heavy;
	q->idle_ms = (unsigned)l->idle;
	q->request_ms = (unsigned)l->request;
	q->poll_ms = (unsigned)l->poll;
	q->tls_reload_ms = (unsigned)l->tls_reload;
	return EXIT_OK;
}

void tool_server_listening(const struct query_opts *q, int port, int probe_port)
{
	/* The address as given with the port the kernel chose (for 0). */
	const char *listen = q->listen ? q->listen : QUERY_LISTEN_DEFAULT;

	printf("listening on %.*s:%d\n", (int)(strrchr(listen, ':') - listen),
	       listen, port);
	if (q->probe_listen != NULL)
		printf("probes on %.*s:%d\n",
		       (int)(strrchr(q->probe_listen, ':') - q->probe_listen),
		       q->probe_listen, probe_port);
	fflush(stdout);
}

/* The ledger directory (made with --create: the server's lock file lives
 * in it) and the signer of --sign-key. 0 or EXIT_USAGE, the error printed. */
static int serve_prepare(struct query_opts *o, const char *sign_key,
			 uint64_t every, struct note_signer *signer)
{
	int rc;

	if (tool_check_db("serve", o->db, o->create) != 0)
		return EXIT_USAGE;
	if (o->create && mkdir(o->db, 0775) != 0 && errno != EEXIST) {
		tool_error("serve: %s: %s", o->db, strerror(errno));
		return EXIT_USAGE;
	}
	if (every == 0 || every > 86400) {
		tool_error("serve: --sign-every is 1 to 86400 seconds");
		return EXIT_USAGE;
	}
	if (sign_key != NULL) {
		if ((rc = tlog_load_signer("serve", sign_key, signer)) != 0)
			return rc;
		o->signer = signer;
		o->sign_every_ms = (unsigned)every * 1000;
	}
	return EXIT_OK;
}

int cmd_serve(int argc, char **argv)
{
	struct query_opts o = {.handle_signals = true};
	struct server_limits lim = {0};
	uint64_t every = 10;
	const char *sign_key = NULL, *holds = NULL;
	struct note_signer signer;
	/* serve's options beyond OPT_SERVER, none of which a member takes
	 * as serve means it (tests/shared_opts_cli.sh lists them): a
	 * member's --db is made when missing, so it has no --create; it
	 * records verdicts, so it is no --read-only replica with a
	 * --primary; and its --sign-key signs at multiples of --sign-every
	 * seqs (DESIGN 11 rule 10), where serve signs on a timer. */
	const struct opt opts[] = {
		{"--db", OPT_STR, &o.db, "DIR",
		 "the ledger (one server per ledger); a directory that holds "
		 "none is refused, unless --create"},
		{"--create", OPT_FLAG, &o.create, NULL,
		 "make an empty ledger in DIR when there is none (a pod whose "
		 "watcher has not started yet)"},
		OPT_SERVER(&o, &lim),
		{"--read-only", OPT_FLAG, &o.read_only, NULL,
		 "a replica (gpuledger replicate): GETs answer, other methods "
		 "503"},
		{"--primary", OPT_STR, &o.primary, "URL",
		 "named in those 503 answers"},
		{"--sign-key", OPT_STR, &sign_key, "FILE",
		 "sign a C2SP checkpoint of the Merkle tree with this key "
		 "(gpuledger keygen) while the tree grows; GET /v1/checkpoint "
		 "serves the latest"},
		{"--sign-every", OPT_U64, &every, "SECS",
		 "at most this often (default 10)"},
		OPT_HOLDS(&holds),
	};
	const struct cmd_spec spec = CMD_SPEC("serve", serve_usage, opts, NULL);
	struct lg_error err = {0};
	query_server_t *qs;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	tool_no_dumps();
	if (holds != NULL) {
		if (tool_holds_parse("serve", holds, &o.holds_ttl_ms) != 0)
			return EXIT_USAGE;
		o.holds_set = true;
	}
	if ((status = tool_server_opts("serve", &lim, &o)) != 0 ||
	    (status = serve_prepare(&o, sign_key, every, &signer)) != 0)
		return status;
	if ((rc = query_server_open(&qs, &o, &err)) != 0) {
		tool_error("serve: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	tool_server_listening(&o, query_server_port(qs),
			      query_server_probe_port(qs));
	rc = query_server_run(qs, &err);
	query_server_close(qs);
	if (rc != 0) {
		tool_error("serve: %s", err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
