/*
 * gpuledger replay: the state at a seq or an instant (DESIGN 6). --json
 * prints the replay JSON, which every other reader of the ledger (serve,
 * audit) produces from the same model function, so that their answers can
 * be compared byte for byte. Without --json the same JSON is laid out as
 * aligned tables for an operator.
 */
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

static const char replay_usage[] =
	"usage: gpuledger replay --db DIR [--at SEQ|RFC3339] [--tenant NS]\n"
	"       [--format text|json]\n"
	"  the state of the ledger at --at (default: the last event).\n";

static const char replay_after[] =
	"  As text: per tenant and class its budget, own and subtree\n"
	"  reserved units, subtree allocated units and the remaining budget,\n"
	"  then the classes and the nodes.\n";

/* ---------------------------------------------------------------------- */
/* Cells from the replay JSON. */

static const char *fmt_int(char *buf, size_t cap, const json_t *v)
{
	if (!json_is_integer(v))
		return "-";
	snprintf(buf, cap, "%lld", (long long)json_integer_value(v));
	return buf;
}

/* The remaining budget, clamped for display as DESIGN 3.3 says clients do;
 * an overrun is shown with its size instead of a negative number. */
static const char *fmt_remaining(char *buf, size_t cap, const json_t *rem)
{
	const json_t *v = json_object_get(rem, "remaining");
	long long n;

	if (json_is_true(json_object_get(rem, "blocked")))
		return "blocked";
	if (!json_is_integer(v))
		return "-";
	n = (long long)json_integer_value(v);
	if (n < 0)
		snprintf(buf, cap, "0 (over by %lld)", -n);
	else
		snprintf(buf, cap, "%lld", n);
	return buf;
}

static const char *limited_by(const json_t *rem)
{
	const char *t = json_string_value(
		json_object_get(json_object_get(rem, "limitedBy"), "tenant"));

	if (json_is_true(json_object_get(rem, "blocked")))
		return "a raw GPU key";
	return t ? t : "-";
}

static long long sum_counts(const json_t *counts)
{
	const char *k;
	json_t *v;
	long long s = 0;

	json_object_foreach ((json_t *)counts, k, v)
		s += (long long)json_integer_value(v);
	return s;
}

static void tenant_class_row(struct tool_grid *g, const json_t *t, const char *cls,
			     bool first)
{
	char key[128], b[32], own[32], sub[32], al[32], rem[64];
	const json_t *r = json_object_get(json_object_get(t, "remaining"), cls);

	snprintf(key, sizeof(key), "%s%s", cls, GPU_CLASS_KEY_SUFFIX);
	const char *row[] = {
		first ? json_string_value(json_object_get(t, "namespace")) : "",
		cls,
		fmt_int(b, sizeof(b),
			json_object_get(json_object_get(t, "budgets"), key)),
		fmt_int(own, sizeof(own),
			json_object_get(json_object_get(t, "reserved"), cls)),
		fmt_int(sub, sizeof(sub),
			json_object_get(json_object_get(t, "subtreeReserved"),
					cls)),
		fmt_int(al, sizeof(al),
			json_object_get(json_object_get(t, "subtreeAllocated"),
					cls)),
		fmt_remaining(rem, sizeof(rem), r),
		limited_by(r),
	};
	/* Absent counts are zero in the replay JSON (zero entries are
	 * omitted); only a missing budget is "-". */
	if (row[3][0] == '-')
		row[3] = "0";
	if (row[4][0] == '-')
		row[4] = "0";
	if (row[5][0] == '-')
		row[5] = "0";
	tool_grid_row(g, row);
}

static void tenant_total_row(struct tool_grid *g, const json_t *t, bool first)
{
	char b[32], own[32], sub[32], al[32], rem[64];
	const json_t *r = json_object_get(t, "remainingTotal");

	snprintf(own, sizeof(own), "%lld",
		 sum_counts(json_object_get(t, "reserved")));
	snprintf(sub, sizeof(sub), "%lld",
		 sum_counts(json_object_get(t, "subtreeReserved")));
	snprintf(al, sizeof(al), "%lld",
		 sum_counts(json_object_get(t, "subtreeAllocated")));
	const char *row[] = {
		first ? json_string_value(json_object_get(t, "namespace")) : "",
		"(all)",
		fmt_int(b, sizeof(b),
			json_object_get(json_object_get(t, "budgets"),
					GPU_TOTAL_KEY)),
		own,
		sub,
		al,
		fmt_remaining(rem, sizeof(rem), r),
		limited_by(r),
	};
	tool_grid_row(g, row);
}

static int print_tenants(const json_t *doc)
{
	static const char *const head[] = {
		"TENANT",  "CLASS",	"BUDGET",    "OWN",
		"SUBTREE", "ALLOCATED", "REMAINING", "LIMITED BY",
	};
	const json_t *classes = json_object_get(doc, "classes");
	const json_t *t, *c;
	size_t i, j;
	struct tool_grid g;
	int werr;

	tool_grid_init(&g, 8, "llrrrrrl");
	tool_grid_row(&g, head);
	json_array_foreach (json_object_get(doc, "tenants"), i, t) {
		json_array_foreach (classes, j, c)
			tenant_class_row(
				&g, t,
				json_string_value(json_object_get(c, "name")),
				j == 0);
		tenant_total_row(&g, t, json_array_size(classes) == 0);
	}
	werr = tool_grid_print(&g);
	tool_grid_release(&g);
	return werr;
}

/* Raw keys and overcommitment, one sentence each, below the tenant table. */
static int print_tenant_notes(const json_t *doc)
{
	const json_t *t, *v;
	size_t i, j;
	char line[1024];
	int werr = 0;

	json_array_foreach (json_object_get(doc, "tenants"), i, t) {
		const char *ns =
			json_string_value(json_object_get(t, "namespace"));

		json_array_foreach (json_object_get(t, "rawKeys"), j, v) {
			snprintf(line, sizeof(line),
				 "%s declares the raw GPU key %s", ns,
				 json_string_value(v));
			werr = werr ? werr : tool_puts(line);
		}
		json_array_foreach (json_object_get(t, "overcommitted"), j, v) {
			snprintf(line, sizeof(line),
				 "%s is overcommitted on %s: budget %lld, "
				 "used %lld, carved out %lld",
				 ns,
				 json_string_value(json_object_get(v, "key")),
				 (long long)json_integer_value(
					 json_object_get(v, "budget")),
				 (long long)json_integer_value(
					 json_object_get(v, "used")),
				 (long long)json_integer_value(
					 json_object_get(v, "carved")));
			werr = werr ? werr : tool_puts(line);
		}
	}
	return werr;
}

static int print_classes(const json_t *doc)
{
	static const char *const head[] = {"CLASS", "DEVICE CLASS", "CAPACITY",
					   "FREE", "RESOURCE NAMES"};
	const json_t *c, *r;
	size_t i, j;
	struct tool_grid g;
	int werr;

	tool_grid_init(&g, 5, "llrrl");
	tool_grid_row(&g, head);
	json_array_foreach (json_object_get(doc, "classes"), i, c) {
		char cap[32], fr[32], names[TOOL_CELL_MAX] = "";
		size_t n = 0;

		json_array_foreach (json_object_get(c, "resourceNames"), j, r)
			n += (size_t)snprintf(
				names + n,
				n < sizeof(names) ? sizeof(names) - n : 0,
				"%s%s", j ? " " : "", json_string_value(r));
		const char *row[] = {
			json_string_value(json_object_get(c, "name")),
			json_string_value(
				json_object_get(c, "deviceClassName")),
			fmt_int(cap, sizeof(cap),
				json_object_get(c, "capacity")),
			fmt_int(fr, sizeof(fr), json_object_get(c, "free")),
			names,
		};
		tool_grid_row(&g, row);
	}
	werr = tool_grid_print(&g);
	tool_grid_release(&g);
	return werr;
}

static int print_nodes(const json_t *doc)
{
	static const char *const head[] = {"NODE", "CLASS", "CAPACITY",
					   "ALLOCATED", "SERVES"};
	const json_t *nd, *v;
	const char *cls;
	size_t i;
	struct tool_grid g;
	int werr;

	tool_grid_init(&g, 5, "llrrl");
	tool_grid_row(&g, head);
	json_array_foreach (json_object_get(doc, "nodes"), i, nd) {
		bool first = true;

		json_object_foreach (json_object_get(nd, "classes"), cls, v) {
			char cap[32], al[32];
			const char *row[] = {
				first ? json_string_value(
						json_object_get(nd, "name"))
				      : "",
				cls,
				fmt_int(cap, sizeof(cap),
					json_object_get(v, "capacity")),
				fmt_int(al, sizeof(al),
					json_object_get(v, "allocated")),
				json_is_true(json_object_get(v, "serves"))
					? "yes"
					: "no",
			};
			tool_grid_row(&g, row);
			first = false;
		}
	}
	werr = tool_grid_print(&g);
	tool_grid_release(&g);
	return werr;
}

/* The alive holds (DESIGN 3.7), when holds are on: one row per class
 * held. */
static int print_holds(const json_t *doc)
{
	static const char *const head[] = {"HOLD",   "NAMESPACE", "KIND",
					   "NAME",   "CLASS",	  "HELD",
					   "EXPIRES"};
	const json_t *holds = json_object_get(doc, "holds"), *h, *v;
	const char *cls;
	char line[96];
	size_t i;
	struct tool_grid g;
	int werr;

	snprintf(line, sizeof(line), "holds on, TTL %lld ms: %zu alive",
		 (long long)json_integer_value(json_object_get(holds, "ttlMs")),
		 json_array_size(json_object_get(holds, "alive")));
	if ((werr = tool_puts(line)) != 0 ||
	    json_array_size(json_object_get(holds, "alive")) == 0)
		return werr;
	tool_grid_init(&g, 7, "rllllrl");
	tool_grid_row(&g, head);
	json_array_foreach (json_object_get(holds, "alive"), i, h) {
		char id[32], n[32];

		fmt_int(id, sizeof(id), json_object_get(h, "verdictId"));
		json_object_foreach (json_object_get(h, "units"), cls, v) {
			const char *row[] = {
				id,
				json_string_value(
					json_object_get(h, "namespace")),
				json_string_value(json_object_get(h, "kind")),
				json_string_value(json_object_get(h, "name")),
				cls,
				fmt_int(n, sizeof(n), v),
				json_string_value(
					json_object_get(h, "expiresAt")),
			};
			tool_grid_row(&g, row);
		}
	}
	werr = tool_grid_print(&g);
	tool_grid_release(&g);
	return werr;
}

static int print_table(const json_t *doc)
{
	char line[256];
	int werr;

	snprintf(line, sizeof(line), "seq %lld  time %s  chainHead %s",
		 (long long)json_integer_value(json_object_get(doc, "seq")),
		 json_string_value(json_object_get(doc, "time")),
		 json_string_value(json_object_get(doc, "chainHead")));
	werr = tool_puts(line);
	werr = werr ? werr
		    : tool_puts("(OWN and SUBTREE are reserved units, what "
				"budgets cap; ALLOCATED is the subtree's units "
				"bound to devices;\n REMAINING is the least "
				"budget minus subtree use over the tenant and "
				"its ancestors, - = unbounded)\n");
	werr = werr ? werr : print_tenants(doc);
	werr = werr ? werr : print_tenant_notes(doc);
	werr = werr ? werr : tool_puts("");
	werr = werr ? werr : print_classes(doc);
	if (json_array_size(json_object_get(doc, "nodes")) > 0) {
		werr = werr ? werr : tool_puts("");
		werr = werr ? werr : print_nodes(doc);
	}
	if (json_object_get(doc, "holds") != NULL) {
		werr = werr ? werr : tool_puts("");
		werr = werr ? werr : print_holds(doc);
	}
	return werr;
}

/* ---------------------------------------------------------------------- */

/* The chain head after event seq as hex (ledger_head_at), or the error
 * printed. */
static int head_at(ledger_t *lg, uint64_t seq, char *hex)
{
	uint8_t head[LEDGER_HEAD_BYTES];
	struct lg_error err = {0};
	int rc = ledger_head_at(lg, seq, head, &err);

	if (rc != 0) {
		tool_error("replay: chain head at seq %llu: %s",
			   (unsigned long long)seq,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	tool_hex(head, hex);
	return EXIT_OK;
}

struct replay_args {
	const char *db, *at, *tenant, *format;
	bool json;
};

/* The seq --at names. Outside the log it is no error (the state before
 * the first event is empty, after the last one it is the latest, and an
 * operator scripting a sweep of dates wants that state, exit 0), but the
 * state shown is then not what the ledger knew at that instant, so stderr
 * says where --at falls, naming the first or last event. */
static int resolve_at(ledger_t *lg, const char *at, uint64_t *seq)
{
	struct lg_error err = {0};
	struct ledger_at a;
	char note[256];
	int rc = ledger_at_resolve(lg, at, &a, &err);

	*seq = a.seq;
	if (rc != 0) {
		tool_error("replay: --at %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	if (ledger_at_note(&a, note, sizeof(note)) > 0)
		tool_error("replay: --at %s %s", at, note);
	return EXIT_OK;
}

static int replay_print(ledger_t *lg, const struct replay_args *a)
{
	char hex[TOOL_HEX_LEN];
	state_t *st = NULL;
	json_t *doc = NULL;
	uint64_t seq;
	int status, werr = 0;

	if ((status = resolve_at(lg, a->at, &seq)) != 0 ||
	    (status = head_at(lg, seq, hex)) != 0 ||
	    (status = tool_state_at("replay", lg, seq, &st)) != 0)
		goto out;
	doc = state_to_json(st, a->tenant);
	if (a->tenant != NULL &&
	    json_array_size(json_object_get(doc, "tenants")) == 0) {
		tool_error("replay: no tenant \"%s\" at seq %llu", a->tenant,
			   (unsigned long long)seq);
		status = EXIT_USAGE;
		goto out;
	}
	json_object_set_new(doc, "chainHead", json_string(hex));
	if (a->json) {
		char *text = json_canonical(doc);

		werr = tool_puts(text);
		free(text);
	} else {
		werr = print_table(doc);
	}
	status = tool_flush("replay", werr);
out:
	json_decref(doc);
	state_free(st);
	return status;
}

int cmd_replay(int argc, char **argv)
{
	struct replay_args a = {0};
	const struct opt opts[] = {
		OPT_DB(&a.db),
		{"--at", OPT_STR, &a.at, "SEQ|TIME",
		 "the state after event SEQ (0: empty), or after the last "
		 "event at or before TIME (RFC 3339, e.g. "
		 "2026-03-01T12:00:00Z, or a date). A TIME before the first "
		 "event gives the empty state, a SEQ past the last event or a "
		 "TIME after it the latest state: stderr says so, naming that "
		 "event, and the exit status is 0"},
		{"--tenant", OPT_STR, &a.tenant, "NS",
		 "only this tenant (an unknown tenant is an error)"},
		{"--format", OPT_STR, &a.format, "text|json",
		 "text (default): aligned tables; json: canonical JSON on one "
		 "line, as DESIGN 6 describes, plus \"chainHead\", the hash "
		 "chain head at that seq (--json is the old spelling of "
		 "--format json)"},
		OPT_ALIAS("--json", OPT_FLAG, &a.json),
	};
	const struct cmd_spec spec =
		CMD_SPEC("replay", replay_usage, opts, replay_after);
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = tool_format_json("replay", a.format, &a.json)) != 0)
		return status;
	if ((status = tool_open_ledger("replay", a.db, NULL, &lg)) != 0)
		return status;
	status = replay_print(lg, &a);
	ledger_close(lg);
	return status;
}
