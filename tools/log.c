/*
 * gpuledger log: events as NDJSON, one canonical line each (DESIGN 6), the
 * form `import` reads back. --follow polls for new events so that a
 * consumer can tail the ledger; a consumer that goes away (`| head`) ends
 * the command quietly, because that is how pipelines stop.
 */
#include "tools/tools.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* How often --follow looks for new events. */
#define FOLLOW_POLL_MS 200

static const char log_usage[] =
	"usage: gpuledger log --db DIR [--from SEQ] [--limit N] [--follow]\n"
	"  prints events as NDJSON, one canonical JSON object per line, in "
	"the\n"
	"  form `gpuledger import` reads.\n";

static const char log_after[] =
	"  A reader that stops reading (`| head`) ends the command with\n"
	"  status 0. Damage (a record that is not what was written, a broken\n"
	"  chain, damaged storage) ends it after the events before it with\n"
	"  \"corrupt at seq N: ...\" or \"damaged storage ...\" on stderr and\n"
	"  status 1. SIGINT or SIGTERM end --follow as they end other\n"
	"  programs (status 128 + the signal), also as PID 1 of a container.\n";

/* Set by the signal handler: a signal handler can reach nothing else. */
static volatile sig_atomic_t log_stop;

/* The kernel gives PID 1 (a container's first process) no default action
 * for SIGTERM: without a handler `docker stop` or a pod's deletion waits
 * out the grace period and kills. With one (tool_catch_stop), every PID
 * stops the same way: the poll is interrupted, the loop sees log_stop,
 * stdout is flushed, and die_by_signal ends the process as the signal
 * would have. */
static void on_signal(int sig)
{
	log_stop = sig;
}

struct log_out {
	uint64_t next; /* the seq to print next */
	uint64_t left; /* events still allowed by --limit (UINT64_MAX: all) */
	int werr;      /* errno of a failed write */
};

static int print_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct log_out *o = ctx;
	char *text = event_jcs(ev);

	o->werr = text != NULL ? tool_puts(text) : EILSEQ;
	free(text);
	o->next = ev->seq + 1;
	o->left--;
	return o->werr != 0 || o->left == 0;
}

/* Prints the events from o->next to the end of the log. The handle is
 * forensic (nothing replayed) and the scan checks the chain, so the events
 * up to damage are printed, then the damage is named (exit 1). */
static int print_available(ledger_t *lg, struct log_out *o)
{
	struct lg_error err = {0};
	int rc;

	if (o->left == 0)
		return 0;
	rc = ledger_scan_checked(lg, o->next,
				 o->left == UINT64_MAX ? 0 : o->left,
				 print_event, o, &err);
	if (rc == LG_ECORRUPT)
		return fflush(stdout), tool_damage("log", &err);
	if (rc < 0) {
		tool_error("log: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	return 0;
}

/* Waits one poll interval; true when the reader of stdout has gone away,
 * so that `log --follow | head -n 5` ends even while no event comes. poll
 * with no requested events reports only errors and hang-ups, and for a
 * file or a terminal nothing at all: then it is a plain sleep. */
static bool reader_gone_after_wait(void)
{
	struct pollfd p = {.fd = fileno(stdout), .events = 0};

	return poll(&p, 1, FOLLOW_POLL_MS) > 0 &&
	       (p.revents & (POLLERR | POLLHUP)) != 0;
}

/* Ends the process by sig, so that a shell sees 128 + sig as before the
 * handler; PID 1, where the default action does nothing, exits with it. */
static int die_by_signal(int sig)
{
	fflush(stdout);
	signal(sig, SIG_DFL);
	raise(sig);
	return 128 + sig;
}

static int follow(ledger_t *lg, struct log_out *o)
{
	int rc;

	tool_catch_stop(on_signal);
	while (o->werr == 0 && o->left > 0) {
		if (log_stop)
			return die_by_signal(log_stop);
		if (fflush(stdout) != 0)
			return tool_flush("log", errno ? errno : EIO);
		if (reader_gone_after_wait())
			return EXIT_OK;
		if (log_stop)
			return die_by_signal(log_stop);
		if ((rc = print_available(lg, o)) != 0)
			return rc;
	}
	return 0;
}

/* Nothing was printed from --from: when the log ends before it, say so
 * (stderr, exit 0: an empty answer, not damage), as replay --at does past
 * the last event. */
static int say_past_end(ledger_t *lg, uint64_t from)
{
	struct ledger_stats st;
	struct lg_error err = {0};

	if (ledger_stats(lg, &st, &err) != 0) {
		tool_error("log: %s", err.msg[0] ? err.msg : "stats");
		return EXIT_USAGE;
	}
	if (st.last_seq < from)
		fprintf(stderr,
			"gpuledger: log: the log ends at seq %llu: nothing "
			"from seq %llu\n",
			(unsigned long long)st.last_seq,
			(unsigned long long)from);
	return 0;
}

int cmd_log(int argc, char **argv)
{
	const char *db = NULL;
	uint64_t from = 1, limit = 0;
	bool follow_on = false;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--from", OPT_U64, &from, "SEQ",
		 "the first event (default 1)"},
		{"--limit", OPT_U64, &limit, "N",
		 "at most N events (default: all)"},
		{"--follow", OPT_FLAG, &follow_on, NULL,
		 "after the last event, keep printing new ones as they are "
		 "appended (polling every 200 ms) until killed or until the "
		 "reader of the output goes away"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("log", log_usage, opts, log_after);
	const struct ledger_opts lo = {.read_only = true, .forensic = true};
	struct log_out o;
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = tool_open_ledger("log", db, &lo, &lg)) != 0)
		return status;
	o.next = from > 0 ? from : 1;
	o.left = limit > 0 ? limit : UINT64_MAX;
	o.werr = 0;
	status = print_available(lg, &o);
	if (status == 0 && !follow_on && o.next == from && from > 1)
		status = say_past_end(lg, from);
	if (status == 0 && follow_on)
		status = follow(lg, &o);
	if (status == 0)
		status = tool_flush("log", o.werr);
	ledger_close(lg);
	return status;
}
