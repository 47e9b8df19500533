/*
 * gpuledger reconcile: the reconciliation audit (DESIGN 3.6). The JSON is
 * ledger/reconcile.c's, the same bytes as GET /v1/reconcile; the text
 * layout is for an operator reading a scheduled job's output. Exit 1 when
 * a bypass or an overshoot is found, so that the job can alert on it.
 */
#include "tools/tools.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char reconcile_usage[] =
	"usage: gpuledger reconcile --db DIR [--from SEQ|TIME] [--to SEQ|TIME]\n"
	"       [--since SEQ|TIME] [--window DUR] [--tenant NS]\n"
	"       [--format json|text]\n"
	"  matches what the watcher observed with what admission answered:\n"
	"  bypasses (a VMInstance or KubernetesNodes reserving more than any\n"
	"  allowed admission verdict recorded for it within the window),\n"
	"  objects observed before admission was in force, and overshoots\n"
	"  (intervals in which a tenant's subtree used more than a budget it\n"
	"  declares) with their causes.\n";

static const char reconcile_after[] =
	"  Exit status: 0 when nothing was found, 1 when a bypass or an\n"
	"  overshoot was, 2 on a usage or operating error.\n";

/* Text layout: the lists as they come, one line per finding. */
#define TEXT_PRE_MAX 20 /* objects older than admission listed as text */

struct text_out {
	int werr;
	uint64_t n_pre, n_bypass, n_over;
	bool pre_done; /* the objects older than admission are listed */
};

static void say(struct text_out *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void say(struct text_out *t, const char *fmt, ...)
{
	va_list ap;

	if (t->werr != 0)
		return;
	va_start(ap, fmt);
	if (vprintf(fmt, ap) < 0)
		t->werr = errno != 0 ? errno : EIO;
	va_end(ap);
}

static const char *s_or(const json_t *o, const char *k, const char *d)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL ? s : d;
}

static long long i_of(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static int text_begin(void *ctx, const json_t *r)
{
	struct text_out *t = ctx;
	const json_t *since = json_object_get(r, "since");

	say(t, "range: seq %lld..%lld (%s .. %s)\n", i_of(r, "fromSeq"),
	    i_of(r, "toSeq"), s_or(r, "fromTime", "-"), s_or(r, "toTime", "-"));
	if (json_is_object(since))
		say(t, "admission in force from seq %lld (%s)\n",
		    i_of(since, "seq"), s_or(since, "time", "-"));
	else
		say(t, "admission never in force: no admission verdict is "
		       "recorded (give --since to set it)\n");
	say(t, "window: %lld ms\n", i_of(r, "windowMs"));
	return t->werr;
}

/* Once the list of objects older than admission is over: how many more
 * there were than the summary printed. */
static void text_pre_done(struct text_out *t)
{
	if (t->pre_done)
		return;
	t->pre_done = true;
	if (t->n_pre > TEXT_PRE_MAX)
		say(t, "  ... and %llu more (--format json lists them all)\n",
		    (unsigned long long)(t->n_pre - TEXT_PRE_MAX));
}

static void text_causes(struct text_out *t, const json_t *causes);

static void text_overshoot(struct text_out *t, const json_t *o)
{
	const json_t *pk = json_object_get(o, "peak");

	if (t->n_over++ == 0)
		say(t, "\nOVERSHOOTS (subtree usage above a declared budget):\n");
	say(t, "  %s %s: seq %lld..", s_or(o, "tenant", ""), s_or(o, "key", ""),
	    i_of(o, "fromSeq"));
	if (json_is_integer(json_object_get(o, "toSeq")))
		say(t, "%lld", i_of(o, "toSeq"));
	else
		say(t, "(still over)");
	say(t, ", peak %lld of %lld at seq %lld\n", i_of(pk, "used"),
	    i_of(pk, "budget"), i_of(pk, "seq"));
	text_causes(t, json_object_get(o, "causes"));
}

static int text_item(void *ctx, enum reconcile_list l, const json_t *it)
{
	struct text_out *t = ctx;

	if (l != RECONCILE_PRE_EXISTING)
		text_pre_done(t);
	if (l == RECONCILE_OVERSHOOT) {
		text_overshoot(t, it);
		return t->werr;
	}
	if (l == RECONCILE_PRE_EXISTING) {
		if (t->n_pre++ == 0)
			say(t, "\nobserved before admission was in force:\n");
		if (t->n_pre <= TEXT_PRE_MAX)
			say(t, "  seq %lld  %s  %s %s/%s\n", i_of(it, "seq"),
			    s_or(it, "time", ""), s_or(it, "kind", ""),
			    s_or(it, "namespace", ""), s_or(it, "name", ""));
		return t->werr;
	}
	if (t->n_bypass++ == 0)
		say(t, "\nBYPASSES (reserved with no admission verdict that "
		       "covers it):\n");
	say(t, "  seq %lld  %s  %s %s/%s  %s %lld -> %lld\n", i_of(it, "seq"),
	    s_or(it, "time", ""), s_or(it, "kind", ""),
	    s_or(it, "namespace", ""), s_or(it, "name", ""),
	    s_or(it, "class", ""), i_of(it, "before"), i_of(it, "after"));
	return t->werr;
}

static void text_causes(struct text_out *t, const json_t *causes)
{
	size_t i, j;
	const json_t *c, *id;

	json_array_foreach (causes, i, c) {
		say(t, "      %s at seq %lld", s_or(c, "type", ""),
		    i_of(c, "seq"));
		if (json_object_get(c, "verdicts") != NULL) {
			say(t, ": verdicts");
			json_array_foreach (json_object_get(c, "verdicts"), j, id)
				say(t, " %lld", (long long)json_integer_value(id));
		}
		/* DESIGN 3.7: the hold that expired before the observation. */
		if (json_object_get(c, "verdictId") != NULL)
			say(t, ": verdict %lld's hold expired at %s",
			    i_of(c, "verdictId"), s_or(c, "expiresAt", ""));
		say(t, "\n");
	}
}

static int text_end(void *ctx, const json_t *s)
{
	struct text_out *t = ctx;
	const json_t *n = json_object_get(s, "counts");

	text_pre_done(t);
	say(t, "\n%lld events, %lld admission verdicts: %lld bypasses, %lld "
	       "overshoots, %lld objects older than admission\n",
	    i_of(n, "events"), i_of(n, "admissionVerdicts"),
	    i_of(n, "bypasses"), i_of(n, "overshoots"), i_of(n, "preExisting"));
	return t->werr;
}

static const struct ledger_reconcile_sink text_sink = {
	.begin = text_begin,
	.item = text_item,
	.end = text_end,
};

/* The JSON sink's output and what the exit status needs from it. */
struct json_out {
	struct ledger_reconcile_json w;
	int werr;
	uint64_t found;
};

static int json_write(void *ctx, const char *p, size_t n)
{
	struct json_out *o = ctx;

	if (o->werr == 0 && fwrite(p, 1, n, stdout) != n)
		o->werr = errno != 0 ? errno : EIO;
	return o->werr;
}

/* Counts bypasses and overshoots on the way to the JSON writer. */
struct found_sink {
	const struct ledger_reconcile_sink *inner;
	void *ctx;
	uint64_t found;
};

static int found_begin(void *ctx, const json_t *r)
{
	struct found_sink *f = ctx;

	return f->inner->begin(f->ctx, r);
}

static int found_item(void *ctx, enum reconcile_list l, const json_t *it)
{
	struct found_sink *f = ctx;

	return f->inner->item(f->ctx, l, it);
}

static int found_end(void *ctx, const json_t *s)
{
	struct found_sink *f = ctx;
	const json_t *n = json_object_get(s, "counts");

	f->found = (uint64_t)i_of(n, "bypasses") + (uint64_t)i_of(n, "overshoots");
	return f->inner->end(f->ctx, s);
}

static const struct ledger_reconcile_sink found_sink_fns = {
	.begin = found_begin,
	.item = found_item,
	.end = found_end,
};

int cmd_reconcile(int argc, char **argv)
{
	struct reconcile_args ra = {0};
	const char *db = NULL, *format = NULL;
	bool json = true;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--from", OPT_STR, &ra.from, "SEQ|TIME",
		 "findings from this seq, or from the first event at or after "
		 "TIME (default: the first event)"},
		{"--to", OPT_STR, &ra.to, "SEQ|TIME",
		 "up to this seq, or the last event at or before TIME "
		 "(default: the last event)"},
		{"--since", OPT_STR, &ra.since, "SEQ|TIME",
		 "admission counts as in force from here (default: the first "
		 "recorded admission verdict); objects first observed before "
		 "it are listed as preExisting, not as bypasses"},
		{"--window", OPT_STR, &ra.window, "DUR",
		 "how long before an observation an admission verdict still "
		 "covers it (default " RECONCILE_WINDOW_DEFAULT
		 "; e.g. 90s, 1h30m)"},
		{"--tenant", OPT_STR, &ra.tenant, "NS",
		 "only this tenant's subtree"},
		{"--format", OPT_STR, &format, "json|text",
		 "json (default): one canonical JSON document, as GET "
		 "/v1/reconcile answers; text: a summary for an operator"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("reconcile", reconcile_usage, opts, reconcile_after);
	struct reconcile_opts ro;
	struct lg_error err = {0};
	struct json_out jo = {.w = {.write = json_write}};
	struct text_out to = {0};
	struct found_sink fs = {0};
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (format != NULL &&
	    (status = tool_format_json("reconcile", format, &json)) != 0)
		return status;
	if ((status = tool_open_ledger("reconcile", db, NULL, &lg)) != 0)
		return status;
	rc = ledger_reconcile_resolve(lg, &ra, &ro, &err);
	if (rc != 0) {
		tool_error("reconcile: --%s", err.msg);
		ledger_close(lg);
		return EXIT_USAGE;
	}
	jo.w.ctx = &jo;
	fs.inner = json ? &ledger_reconcile_json_sink : &text_sink;
	fs.ctx = json ? (void *)&jo.w : (void *)&to;
	rc = ledger_reconcile(lg, &ro, &found_sink_fns, &fs, &err);
	ledger_close(lg);
	if (rc < 0) {
		tool_error("reconcile: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	status = tool_flush("reconcile", json ? jo.werr : to.werr);
	if (status == EXIT_OK && fs.found > 0)
		status = EXIT_NEGATIVE;
	return status;
}
