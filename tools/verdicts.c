/*
 * gpuledger verdicts: the recorded verdicts of a ledger, filtered, offline
 * (DESIGN 6): "who asked for these GPUs, when, and what was answered" for
 * an auditor who holds only a copy of the ledger. The options are the
 * parameters of GET /v1/verdicts, read by the same parser
 * (verdict_filter_set) and listed by the same function
 * (ledger_verdicts_list), so that --format json prints the bytes the
 * server answers for the same filter, and a bad value is refused with the
 * same words.
 */
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

static const char verdicts_usage[] =
	"usage: gpuledger verdicts --db DIR [--tenant NS]\n"
	"       [--requester USER] [--reason REASON]\n"
	"       [--allowed true|false] [--from TIME] [--to TIME]\n"
	"       [--after ID] [--before ID] [--order asc|desc]\n"
	"       [--limit N] [--format text|json]\n"
	"  the recorded verdicts (admission and declaration answers)\n"
	"  with who asked, filtered as GET /v1/verdicts filters them:\n"
	"  each option is the query parameter of the same name.\n";

static const char verdicts_after[] =
	"  --format json prints what GET /v1/verdicts answers for the\n"
	"  same filter, byte for byte: {\"next\", \"verdicts\"}, each\n"
	"  record with its seq and time. As text: one verdict a line.\n"
	"  At most --limit verdicts are listed, reading at most\n"
	"  100,000; when more are left, the last line (\"next\" in\n"
	"  JSON) names the id to go on from with --after (or --before\n"
	"  with --order desc). A malformed value is exit 2, naming the\n"
	"  option.\n";

/* The options, in the order of verdict_filter_params: "--" + its name. */
#define N_FILTERS 10

struct verdicts_args {
	const char *db, *format;
	const char *filter[N_FILTERS];
	bool json;
};

/* ---------------------------------------------------------------------- */
/* The text layout. */

static const char *answer_of(const json_t *v)
{
	return json_is_true(json_object_get(v, "allowed")) ? "allowed"
							   : "denied";
}

/* KIND/NAME of an admission; "-" for a declaration (its namespace is the
 * object). */
static void object_of(const json_t *v, char *buf, size_t cap)
{
	const json_t *rq = json_object_get(v, "request");
	const char *kind = json_string_value(json_object_get(rq, "kind"));
	const char *name = json_string_value(json_object_get(rq, "name"));

	if (kind == NULL)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%s/%s", kind, name ? name : "");
}

static const char *str_or(const json_t *o, const char *k, const char *dflt)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s && s[0] ? s : dflt;
}

/* The most units held by others (DESIGN 3.7) that a check of v counted,
 * or -1 when its record was made with holds off (no "held"). */
static long long held_of(const json_t *v)
{
	const json_t *ck;
	long long most = -1;
	size_t i;

	json_array_foreach (json_object_get(v, "checks"), i, ck) {
		const json_t *h = json_object_get(ck, "held");

		if (json_is_integer(h) && json_integer_value(h) > most)
			most = (long long)json_integer_value(h);
	}
	return most;
}

static int print_text(const json_t *doc, bool desc)
{
	static const char *const head[] = {
		"ID",	     "SEQ",    "TIME",	    "ANSWER",	 "REASON",
		"TYPE",	     "NAMESPACE", "OBJECT", "REQUESTER", "HELD"};
	const json_t *vs = json_object_get(doc, "verdicts"), *v;
	const json_t *next = json_object_get(doc, "next");
	struct tool_grid g;
	char line[128];
	size_t i, cols = 9;
	int werr;

	/* Records judged with holds on say how many units others held in
	 * their checks' subtrees (the most of one check); with holds off the
	 * table is as it was. */
	json_array_foreach (vs, i, v)
		if (held_of(v) >= 0)
			cols = 10;
	tool_grid_init(&g, cols, cols == 10 ? "rrlllllllr" : "rrlllllll");
	tool_grid_row(&g, head);
	json_array_foreach (vs, i, v) {
		char id[32], seq[32], held[32], obj[TOOL_CELL_MAX];
		const json_t *rq = json_object_get(v, "request");
		long long h = held_of(v);

		snprintf(id, sizeof(id), "%lld",
			 (long long)json_integer_value(
				 json_object_get(v, "id")));
		snprintf(seq, sizeof(seq), "%lld",
			 (long long)json_integer_value(
				 json_object_get(v, "seq")));
		if (h >= 0)
			snprintf(held, sizeof(held), "%lld", h);
		else
			snprintf(held, sizeof(held), "-");
		object_of(v, obj, sizeof(obj));
		const char *row[] = {
			id,
			seq,
			str_or(v, "time", "-"),
			answer_of(v),
			str_or(v, "reason", "-"),
			str_or(v, "type", "-"),
			str_or(rq, "namespace", "-"),
			obj,
			str_or(json_object_get(v, "requester"), "username",
			       "-"),
			held,
		};
		tool_grid_row(&g, row);
	}
	werr = tool_grid_print(&g);
	tool_grid_release(&g);
	if (werr == 0 && json_array_size(vs) == 0)
		werr = tool_puts("(no recorded verdict matches)");
	if (werr == 0 && json_is_integer(next)) {
		snprintf(line, sizeof(line), "(more: go on with %s %lld)",
			 desc ? "--before" : "--after",
			 (long long)json_integer_value(next));
		werr = tool_puts(line);
	}
	return werr;
}

/* ---------------------------------------------------------------------- */

/* The filter from the options; exit 2 naming the option on a bad value. */
static int filter_of(const struct verdicts_args *a, struct verdict_filter *f)
{
	struct lg_error err = {0};

	verdict_filter_init(f);
	for (size_t i = 0; i < N_FILTERS; i++) {
		const char *name = verdict_filter_params[i];

		if (a->filter[i] == NULL)
			continue;
		if (verdict_filter_set(f, name, a->filter[i], &err) != 0) {
			tool_error("verdicts: --%s: %s", name, err.msg);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

static int verdicts_print(ledger_t *lg, const struct verdicts_args *a,
			  const struct verdict_filter *f)
{
	struct lg_error err = {0};
	struct ledger_vindex vi;
	char *text = NULL;
	json_t *doc;
	int rc, werr;

	rc = ledger_verdict_index(lg, &vi, &err);
	if (rc == 0 && vi.upto < ledger_last_seq(lg))
		rc = lg_error_set(&err, LG_EVERSION,
				  "the verdict index covers seqs 1..%llu of "
				  "%llu (a ledger from before the index): "
				  "open it once with a writer (gpuledger "
				  "serve or watch) to index it",
				  (unsigned long long)vi.upto,
				  (unsigned long long)ledger_last_seq(lg));
	if (rc == 0)
		rc = ledger_verdicts_list(lg, f, vi.count, &text, &err);
	if (rc != 0) {
		tool_error("verdicts: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	if (a->json) {
		werr = tool_puts(text);
	} else {
		doc = json_loadb_doubles(text, strlen(text), 0, NULL);
		werr = print_text(doc, f->desc);
		json_decref(doc);
	}
	free(text);
	return tool_flush("verdicts", werr);
}

int cmd_verdicts(int argc, char **argv)
{
	struct verdicts_args a = {0};
	const char **v = a.filter;
	const struct opt opts[] = {
		OPT_DB(&a.db),
		{"--tenant", OPT_STR, &v[0], "NS",
		 "verdicts on requests in the subtree of this tenant"},
		{"--requester", OPT_STR, &v[1], "USER",
		 "verdicts asked by this user: requester.username exactly (the "
		 "AdmissionReview's userInfo.username; not the review's uid "
		 "nor the user's, userUid)"},
		{"--reason", OPT_STR, &v[2], "REASON",
		 "verdicts with this reason (WithinBudget, "
		 "ClassBudgetExceeded, ...)"},
		{"--allowed", OPT_STR, &v[3], "true|false",
		 "verdicts with this answer"},
		{"--from", OPT_STR, &v[4], "TIME",
		 "verdicts recorded at or after TIME (RFC 3339 or a date)"},
		{"--to", OPT_STR, &v[5], "TIME",
		 "verdicts recorded before TIME"},
		{"--after", OPT_STR, &v[6], "ID", "ids above ID"},
		{"--before", OPT_STR, &v[7], "ID", "ids below ID"},
		{"--order", OPT_STR, &v[8], "asc|desc",
		 "asc (default): in id order, from --after on; desc: newest "
		 "first, from --before down"},
		{"--limit", OPT_STR, &v[9], "N",
		 "at most N verdicts (1..1000, default 100)"},
		{"--format", OPT_STR, &a.format, "text|json",
		 "text (default): one verdict a line; json: the canonical JSON "
		 "of GET /v1/verdicts (--json, as in replay and stats, is "
		 "--format json)"},
		OPT_ALIAS("--json", OPT_FLAG, &a.json),
	};
	const struct cmd_spec spec =
		CMD_SPEC("verdicts", verdicts_usage, opts, verdicts_after);
	struct verdict_filter f;
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv);

	/* The options above are the filter's parameters, in its order. */
	for (size_t i = 0; i < N_FILTERS; i++)
		LG_ASSERT(strcmp(opts[1 + i].name + 2,
				 verdict_filter_params[i]) == 0);
	LG_ASSERT(verdict_filter_params[N_FILTERS] == NULL);
	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = tool_format_json("verdicts", a.format, &a.json)) != 0 ||
	    (status = filter_of(&a, &f)) != 0)
		return status;
	if ((status = tool_open_ledger("verdicts", a.db, NULL, &lg)) != 0)
		return status;
	status = verdicts_print(lg, &a, &f);
	ledger_close(lg);
	return status;
}
