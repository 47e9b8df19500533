/*
 * gpuledger replicate: a read replica of a primary's ledger (DESIGN 7,
 * "Read replicas"). The following itself is ingest/replicate.c; this file
 * reads the options, opens (or creates) the replica's ledger and turns
 * SIGINT/SIGTERM into a clean stop. Serve the replica with
 * `gpuledger serve --read-only`.
 */
#include "ingest/ingest.h"
#include "tools/tools.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char replicate_usage[] =
	"usage: gpuledger replicate --server URL --db DIR [--token-file FILE]\n"
	"       [--tls-ca FILE] [--tls-cert FILE --tls-key FILE] [--once]\n"
	"  follows the primary's GET /v1/events and appends the identical\n"
	"  events to DIR (created when missing): same seqs, same chain\n"
	"  heads, each head checked before anything is appended. Killed or\n"
	"  stopped, it resumes where DIR ends. When the primary's log departs\n"
	"  from DIR it stops and names the first seq that differs (a replica\n"
	"  is also a witness). While the primary is away it waits and "
	"retries.\n";

static const char replicate_after[] =
	"  Exit status: 0 stopped or caught up, 1 the logs differ, 2 errors\n";

/* Set by the signal handler: a signal handler can reach nothing else. */
static volatile sig_atomic_t replicate_stop;

static void on_signal(int sig)
{
	(void)sig;
	replicate_stop = 1;
}

char *tool_read_token(const char *path)
{
	char buf[512], *tok;
	struct stat st;
	FILE *f;
	size_t n;

	/* Whoever can read the token can read the whole ledger. */
	if (stat(path, &st) != 0 || (st.st_mode & 077) != 0 ||
	    (f = fopen(path, "r")) == NULL)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	tok = strtok(buf, " \t\r\n");
	return tok ? lg_xstrdup(tok) : NULL;
}

int cmd_replicate(int argc, char **argv)
{
	const char *db = NULL, *token_file = NULL;
	uint64_t page = 0, poll = 0;
	struct replica_opts ro = {.stop = &replicate_stop};
	const struct opt opts[] = {
		{"--server", OPT_STR, &ro.url, "URL",
		 "the primary, e.g. https://gpuledger:443"},
		OPT_ALIAS("--from", OPT_STR, &ro.url),
		{"--db", OPT_STR, &db, "DIR", "the replica's ledger"},
		{"--token-file", OPT_STR, &token_file, "FILE",
		 "a file holding the bearer token (a reader's: admin or "
		 "auditor); must not be group/other readable"},
		{"--tls-ca", OPT_STR, &ro.ca_file, "FILE",
		 "CA to verify the primary's certificate with"},
		OPT_ALIAS("--cacert", OPT_STR, &ro.ca_file),
		{"--tls-cert", OPT_STR, &ro.cert_file, "FILE",
		 "a client certificate (serve --tls-client-ca)"},
		OPT_ALIAS("--cert", OPT_STR, &ro.cert_file),
		{"--tls-key", OPT_STR, &ro.key_file, "FILE", "and its key"},
		OPT_ALIAS("--key", OPT_STR, &ro.key_file),
		{"--page", OPT_U64, &page, "N",
		 "events per request (default 1000, at most 10000)"},
		{"--poll-ms", OPT_U64, &poll, "MS",
		 "wait when caught up (default 500)"},
		{"--once", OPT_FLAG, &ro.once, NULL,
		 "stop when caught up (and on network errors)"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("replicate", replicate_usage, opts, replicate_after);
	struct ledger_opts lo = {.create = true};
	struct replica_result res;
	struct lg_error err = {0};
	struct sigaction sa;
	char *token = NULL;
	ledger_t *lg = NULL;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	/* A stop asked while the ledger opens (a replica restarted and
	 * stopped at once) is a clean stop too, not a kill by the signal. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	tool_no_dumps();
	if (ro.url == NULL || db == NULL || page > 10000 || poll > 3600000) {
		tool_error("replicate: --server URL and --db DIR are required; "
			   "--page is at most 10000");
		return EXIT_USAGE;
	}
	if (token_file != NULL && (token = tool_read_token(token_file)) == NULL) {
		tool_error("replicate: %s: unreadable, readable by group or "
			   "others (chmod 600), or no token in it",
			   token_file);
		return EXIT_USAGE;
	}
	ro.token = token;
	ro.page = (unsigned)page;
	ro.poll_ms = (unsigned)poll;
	lo.dir = db;
	if ((rc = ledger_open(&lg, &lo, &err)) != 0) {
		tool_error("replicate: %s", err.msg);
		free(token);
		return EXIT_USAGE;
	}
	rc = ingest_replicate(lg, &ro, &res, &err);
	fprintf(stderr,
		"gpuledger replicate: %llu events appended, at seq %llu\n",
		(unsigned long long)res.appended,
		(unsigned long long)ledger_last_seq(lg));
	ledger_close(lg);
	free(token);
	if (rc == LG_ECORRUPT) {
		tool_error("replicate: %s", err.msg);
		return EXIT_NEGATIVE;
	}
	if (rc != 0) {
		tool_error("replicate: %s", err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
