/*
 * gpuledger import: NDJSON events (the form `log` prints) from stdin into a
 * ledger. DESIGN 6 does not list it: the watcher is the ledger's only
 * writer of observations in production. This tool exists for tests,
 * migrations and `log | import` copies.
 *
 * Each event is applied to a local copy of the state as it is read, so a
 * line that does not fit is found and named before anything of it reaches
 * the ledger; the events before it are then committed and the import stops.
 */
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

#define IMPORT_BATCH_DEFAULT 10000
#define IMPORT_BATCH_MAX     1000000

static const char import_usage[] =
	"usage: gpuledger import --db DIR [--create] [--no-sync] [--batch N]\n"
	"  reads events as NDJSON on stdin, in the form `gpuledger log` "
	"prints,\n"
	"  and appends them to the ledger in batches of N (default 10000),\n"
	"  each batch one durable transaction.\n"
	"  Not part of DESIGN 6: the watcher is the only writer of observed\n"
	"  events in production; this is a tool for tests, migrations and\n"
	"  `gpuledger log --db A | gpuledger import --db B --create` copies.\n"
	"  A line with \"seq\" must carry exactly the next seq; a line "
	"without\n"
	"  \"time\" takes the previous event's time. Lines are at most 4 MiB;\n"
	"  empty lines are skipped.\n"
	"  A line that is not an event, or an event that does not fit the\n"
	"  state, stops the import with exit status 2 and an error naming the\n"
	"  line: the events before that line are committed and stay, nothing\n"
	"  from it on is written.\n";

/* The events read but not yet appended, and what their strings borrow. */
struct import {
	ledger_t *lg;
	state_t *st;	 /* the state after the pending events */
	size_t batch, n; /* batch size; pending events */
	struct event *evs;
	json_t **docs;	/* evs[i]'s strings point into docs[i] ... */
	char **scratch; /* ... and scratch[i] */
	unsigned long long first_line; /* line of evs[0] */
	uint64_t appended;
};

static void import_init(struct import *im, ledger_t *lg, size_t batch)
{
	memset(im, 0, sizeof(*im));
	im->lg = lg;
	/* An empty ledger's state is a new state; cloning it would also copy
	 * its empty arrays, which nothing needs. */
	im->st = ledger_last_seq(lg) == 0 ? state_new()
					  : state_clone(ledger_state(lg));
	im->batch = batch;
	im->evs = lg_xcalloc(batch, sizeof(*im->evs));
	im->docs = lg_xcalloc(batch, sizeof(*im->docs));
	im->scratch = lg_xcalloc(batch, sizeof(*im->scratch));
}

static void drop_pending(struct import *im)
{
	for (size_t i = 0; i < im->n; i++) {
		json_decref(im->docs[i]);
		free(im->scratch[i]);
		im->docs[i] = NULL;
		im->scratch[i] = NULL;
	}
	im->n = 0;
}

static void import_release(struct import *im)
{
	drop_pending(im);
	free(im->evs);
	free(im->docs);
	free(im->scratch);
	state_free(im->st);
}

/* Appends the pending events in one transaction. */
static int import_flush(struct import *im, unsigned long long last_line)
{
	struct lg_error err = {0};
	int rc;

	if (im->n == 0)
		return EXIT_OK;
	rc = ledger_append(im->lg, im->evs, im->n, NULL, 0, NULL, &err);
	if (rc != 0)
		tool_error("import: lines %llu-%llu: %s", im->first_line,
			   last_line, err.msg[0] ? err.msg : lg_strerror(rc));
	else
		im->appended += im->n;
	drop_pending(im);
	return rc == 0 ? EXIT_OK : EXIT_USAGE;
}

/* Reads one event line into the pending batch after checking that it fits
 * the state. On error *why says what is wrong with the line. */
static int take_event(struct import *im, json_t *doc, struct lg_error *why)
{
	struct event *ev = &im->evs[im->n];
	uint64_t next = state_seq(im->st) + 1;
	char *scratch = NULL;
	int rc = event_from_json(ev, doc, &scratch, why);

	if (rc == 0 && ev->seq != 0 && ev->seq != next)
		rc = lg_error_set(why, LG_EMISMATCH, "seq %llu, expected %llu",
				  (unsigned long long)ev->seq,
				  (unsigned long long)next);
	if (rc == 0) {
		ev->seq = next;
		if (json_object_get(doc, "time") == NULL)
			ev->time_ns = state_time_ns(im->st);
		rc = state_apply(im->st, ev, why);
	}
	if (rc != 0) {
		free(scratch);
		return rc;
	}
	im->docs[im->n] = doc;
	im->scratch[im->n] = scratch;
	im->n++;
	return 0;
}

static int import_line(struct import *im, const char *line, size_t len,
		       unsigned long long lineno)
{
	struct lg_error why = {0};
	json_error_t jerr;
	json_t *doc;

	if (len == 0)
		return EXIT_OK;
	doc = json_loadb(line, len, 0, &jerr);
	if (doc == NULL) {
		lg_error_set(&why, LG_EINVAL, "malformed JSON: %s", jerr.text);
	} else if (take_event(im, doc, &why) != 0) {
		json_decref(doc);
		doc = NULL;
	}
	if (doc == NULL) {
		/* Commit what came before (a failure there prints its own
		 * error), then name the line. */
		import_flush(im, lineno - 1);
		tool_error("import: line %llu: %s", lineno, why.msg);
		return EXIT_USAGE;
	}
	if (im->n == 1)
		im->first_line = lineno;
	return im->n == im->batch ? import_flush(im, lineno) : EXIT_OK;
}

static int import_stream(struct import *im, FILE *in)
{
	char *line = lg_xmalloc(TOOL_LINE_MAX);
	unsigned long long lineno = 0;
	long len;
	int status = EXIT_OK;

	while (status == EXIT_OK &&
	       (len = lg_read_line(in, line, TOOL_LINE_MAX)) != -1) {
		lineno++;
		if (len == -2) {
			import_flush(im, lineno - 1);
			tool_error("import: line %llu: longer than %u bytes",
				   lineno, TOOL_LINE_MAX - 1);
			status = EXIT_USAGE;
		} else {
			status = import_line(im, line, (size_t)len, lineno);
		}
	}
	if (status == EXIT_OK && ferror(in)) {
		tool_error("import: reading stdin failed");
		status = EXIT_USAGE;
	}
	if (status == EXIT_OK)
		status = import_flush(im, lineno);
	free(line);
	return status;
}

int cmd_import(int argc, char **argv)
{
	const char *db = NULL;
	uint64_t batch = IMPORT_BATCH_DEFAULT;
	struct ledger_opts lo = {0};
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--create", OPT_FLAG, &lo.create, NULL,
		 "create DIR and the ledger when missing"},
		{"--no-sync", OPT_FLAG, &lo.no_sync, NULL, OPT_NO_SYNC_HELP},
		{"--batch", OPT_U64, &batch, "N",
		 "events per transaction (1..1000000)"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("import", import_usage, opts, NULL);
	struct import im;
	char line[96];
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (batch < 1 || batch > IMPORT_BATCH_MAX) {
		tool_error("import: --batch %llu is outside 1..%d",
			   (unsigned long long)batch, IMPORT_BATCH_MAX);
		return EXIT_USAGE;
	}
	if ((status = tool_open_ledger("import", db, &lo, &lg)) != 0)
		return status;
	import_init(&im, lg, (size_t)batch);
	status = import_stream(&im, stdin);
	if (status == EXIT_OK) {
		snprintf(line, sizeof(line),
			 "imported %llu events, last seq %llu",
			 (unsigned long long)im.appended,
			 (unsigned long long)ledger_last_seq(lg));
		status = tool_flush("import", tool_puts(line));
	} else {
		tool_error("import: %llu events were committed before the "
			   "error and stay; last seq %llu",
			   (unsigned long long)im.appended,
			   (unsigned long long)ledger_last_seq(lg));
	}
	import_release(&im);
	ledger_close(lg);
	return status;
}
