/*
 * The read endpoints (DESIGN 7). Tenant objects, classes and nodes are the
 * ones `replay --json` prints (state_to_json), so that a client can compare
 * the server with the tool byte for byte.
 *
 * The full replay document is built once per change of the state's
 * content and kept (struct tenant_cache): verdicts, notes and ticks do not
 * change it, so a server busy with verdicts does not rebuild it per read.
 */
#include "query/query_int.h"

#include <stdlib.h>
#include <string.h>

/* GET /v1/events: the most events, and bytes, one answer carries. */
#define EVENTS_LIMIT_DEFAULT 100
#define EVENTS_LIMIT_MAX     10000
#define EVENTS_MAX_BYTES     (8u << 20)

/* ---------------------------------------------------------------------- */
/* The cache. */

void tenant_cache_release(struct tenant_cache *tc)
{
	json_decref(tc->doc);
	json_decref(tc->children);
	tc->doc = tc->children = NULL;
	tc->content_seq = UINT64_MAX;
}

static json_t *children_of(const json_t *tenants)
{
	json_t *ch = json_object(), *t;
	size_t i;

	json_array_foreach (tenants, i, t) {
		const char *parent = qjstr(t, "parent");
		json_t *list;

		if (parent == NULL)
			continue;
		list = json_object_get(ch, parent);
		if (list == NULL) {
			list = json_array();
			json_object_set_new(ch, parent, list);
		}
		json_array_append(list, json_object_get(t, "namespace"));
	}
	return ch;
}

const struct tenant_cache *tenant_cache_get(struct query_server *qs)
{
	struct tenant_cache *tc = &qs->cache;

	if (tc->doc != NULL && tc->content_seq == qs->vix.content_seq)
		return tc;
	tenant_cache_release(tc);
	tc->doc = state_to_json(ledger_state(qs->lg), NULL);
	tc->children = children_of(json_object_get(tc->doc, "tenants"));
	tc->content_seq = qs->vix.content_seq;
	return tc;
}

/* The tenant object of ns in the sorted list, or NULL. */
static json_t *find_tenant(const json_t *tenants, const char *ns)
{
	size_t lo = 0, hi = json_array_size(tenants);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		json_t *t = json_array_get(tenants, mid);
		int c = strcmp(qjstr_or(t, "namespace", ""), ns);

		if (c == 0)
			return t;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static json_t *time_json(int64_t t_ns)
{
	char buf[64];

	time_format_ns(t_ns, buf, sizeof(buf));
	return json_string(buf);
}

/* ---------------------------------------------------------------------- */
/* Probes and metrics. */

void handle_healthz(struct query_server *qs, struct request *rq)
{
	reply_json(qs, rq, 200, json_pack("{s:s}", "status", "ok"));
}

void handle_readyz(struct query_server *qs, struct request *rq)
{
	uint64_t limit_ns = 20ull * qs->o.poll_ms * 1000000u;
	uint64_t age = q_now_ns() - qs->caught_up_ns;

	if (limit_ns < 1000000000u)
		limit_ns = 1000000000u;
	if (qs->ready && age <= limit_ns)
		reply_json(qs, rq, 200,
			   json_pack("{s:b, s:I}", "ready", 1, "seq",
				     (json_int_t)ledger_last_seq(qs->lg)));
	else
		reply_json(qs, rq, 503,
			   json_pack("{s:s, s:b}", "error",
				     "not caught up with the log", "ready", 0));
}

void handle_metrics(struct query_server *qs, struct request *rq)
{
	size_t len;
	char *text = metrics_render(qs, &len);

	reply_raw(qs, rq, 200, "text/plain; version=0.0.4; charset=utf-8", text,
		  len);
}

/* ---------------------------------------------------------------------- */
/* Tenants. */

static bool valid_ns(const char *ns)
{
	return dns1123_label(ns, strlen(ns));
}

void handle_tenants(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = tenant_cache_get(qs);
	const json_t *all = json_object_get(tc->doc, "tenants"), *t;
	json_t *list = json_array();
	size_t i;

	json_array_foreach (all, i, t) {
		if (rq->who != NULL && rq->who->role == ROLE_TENANT &&
		    !ns_in_subtree(rq->who->ns, qjstr_or(t, "namespace", "")))
			continue;
		json_array_append(list, (json_t *)t);
	}
	reply_json(qs, rq, 200,
		   json_pack("{s:I, s:o, s:o}", "seq",
			     (json_int_t)ledger_last_seq(qs->lg), "time",
			     time_json(state_time_ns(ledger_state(qs->lg))),
			     "tenants", list));
}

void handle_tenant(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = tenant_cache_get(qs);
	const char *ns = rq->param[0];
	json_t *t, *out, *ch;

	if (!valid_ns(ns)) {
		reply_error(qs, rq, 400, "not a namespace name");
		return;
	}
	t = find_tenant(json_object_get(tc->doc, "tenants"), ns);
	if (t == NULL) {
		reply_error(qs, rq, 404, "no tenant %s", ns);
		return;
	}
	out = json_copy(t);
	ch = json_object_get(tc->children, ns);
	json_object_set_new(out, "children", ch ? json_copy(ch) : json_array());
	reply_json(qs, rq, 200, out);
}

void rcache_release(struct rcache *rc)
{
	for (size_t i = 0; rc->slot != NULL && i < RCACHE_SLOTS; i++) {
		free(rc->slot[i].ns);
		free(rc->slot[i].text);
	}
	free(rc->slot);
	memset(rc, 0, sizeof(*rc));
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot of ns: its entry, or the empty slot where it goes. */
static struct rcache_entry *rcache_slot(struct rcache *rc, const char *ns)
{
	size_t i = (size_t)(fnv1a(ns) % RCACHE_SLOTS);

	while (rc->slot[i].ns != NULL && strcmp(rc->slot[i].ns, ns) != 0)
		i = (i + 1) % RCACHE_SLOTS;
	return &rc->slot[i];
}

/* The cached answer for ns, computing it when absent. */
static const struct rcache_entry *remaining_cached(struct query_server *qs,
						   const char *ns)
{
	struct rcache *rc = &qs->rcache;
	struct rcache_entry *e;
	json_t *v;

	/* A new content, or a full table (at most 3/4 used, so probes end),
	 * empties it. */
	if (rc->slot == NULL || rc->content_seq != qs->vix.content_seq ||
	    rc->n >= RCACHE_SLOTS / 4 * 3) {
		rcache_release(rc);
		rc->slot = calloc(RCACHE_SLOTS, sizeof(*rc->slot));
		if (rc->slot == NULL)
			abort();
		rc->content_seq = qs->vix.content_seq;
	}
	e = rcache_slot(rc, ns);
	if (e->ns != NULL)
		return e;
	v = state_remaining_json(ledger_state(qs->lg), ns);
	e->text = v ? json_canonical(v) : NULL;
	json_decref(v);
	if (e->text == NULL)
		return NULL;
	e->ns = q_xstrdup(ns);
	e->len = strlen(e->text);
	rc->n++;
	return e;
}

void handle_remaining(struct query_server *qs, struct request *rq)
{
	const char *ns = rq->param[0];
	const struct rcache_entry *e;

	if (!valid_ns(ns)) {
		reply_error(qs, rq, 400, "not a namespace name");
		return;
	}
	e = remaining_cached(qs, ns);
	if (e == NULL)
		reply_error(qs, rq, 500, "the answer could not be built");
	else
		reply_borrowed(qs, rq, 200, "application/json", e->text,
			       e->len);
}

/* ---------------------------------------------------------------------- */
/* State and events. */

/* ?at=SEQ|RFC3339 -> seq; an error message when it cannot be. */
static const char *resolve_at(struct query_server *qs, struct request *rq,
			      uint64_t *seq)
{
	char at[96];
	long n = query_param(rq->query, rq->query_len, "at", at, sizeof(at));
	int64_t t_ns;

	*seq = ledger_last_seq(qs->lg);
	if (n == -1)
		return NULL;
	if (n < 0)
		return "at: malformed";
	if (q_parse_u64(at, seq))
		return *seq <= ledger_last_seq(qs->lg)
			       ? NULL
			       : "at: past the last seq";
	if (time_parse_ns(at, &t_ns) != 0)
		return "at: neither a seq nor an RFC 3339 time";
	if (ledger_seq_at_time(qs->lg, t_ns, seq, NULL) != 0)
		return "at: the log cannot be searched";
	return NULL;
}

void handle_state(struct query_server *qs, struct request *rq)
{
	struct lg_error err = {0};
	char hex[2 * LEDGER_HEAD_BYTES + 1];
	const char *why;
	state_t *st = NULL;
	const state_t *use;
	uint64_t seq;
	json_t *doc;

	if ((why = resolve_at(qs, rq, &seq)) != NULL) {
		reply_error(qs, rq, 400, "%s", why);
		return;
	}
	if (seq == ledger_last_seq(qs->lg))
		use = ledger_state(qs->lg);
	else if (seq == 0)
		use = st = state_new();
	else if (ledger_state_at(qs->lg, seq, &st, NULL, &err) == 0)
		use = st;
	else
		use = NULL;
	if (use == NULL || server_head_at(qs, seq, hex, &err) != 0) {
		state_free(st);
		reply_error(qs, rq, 500, "state at seq %llu: %s",
			    (unsigned long long)seq, err.msg);
		return;
	}
	doc = state_to_json(use, NULL);
	json_object_set_new(doc, "chainHead", json_string(hex));
	state_free(st);
	reply_json(qs, rq, 200, doc);
}

struct events_out {
	json_t *list;
	size_t bytes;
	uint64_t next;
};

static int add_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct events_out *o = ctx;
	json_t *v = event_to_json(ev);
	char *text = json_canonical(v);

	o->bytes += text ? strlen(text) : 0;
	free(text);
	json_array_append_new(o->list, v);
	o->next = ev->seq + 1;
	/* Stop after the event that crosses the byte bound: a client always
	 * gets at least one event, so it can make progress. */
	return o->bytes >= EVENTS_MAX_BYTES;
}

/* A query parameter that must be a decimal integer (dflt when absent). */
static bool u64_param(const struct request *rq, const char *key, uint64_t dflt,
		      uint64_t *out)
{
	char buf[32];
	long n = query_param(rq->query, rq->query_len, key, buf, sizeof(buf));

	*out = dflt;
	return n == -1 || (n >= 0 && q_parse_u64(buf, out));
}

void handle_events(struct query_server *qs, struct request *rq)
{
	struct lg_error err = {0};
	struct events_out o = {0};
	uint64_t from, limit, last = ledger_last_seq(qs->lg);
	int rc = 0;

	if (!u64_param(rq, "from", 1, &from) || from == 0 ||
	    !u64_param(rq, "limit", EVENTS_LIMIT_DEFAULT, &limit) ||
	    limit == 0 || limit > EVENTS_LIMIT_MAX) {
		reply_error(qs, rq, 400,
			    "from must be a seq >= 1 and limit 1..%d",
			    EVENTS_LIMIT_MAX);
		return;
	}
	o.list = json_array();
	o.next = from;
	if (from <= last)
		rc = ledger_scan(qs->lg, from, limit, add_event, &o, &err);
	if (rc < 0) {
		json_decref(o.list);
		reply_error(qs, rq, 500, "%s", err.msg);
		return;
	}
	reply_json(qs, rq, 200,
		   json_pack("{s:o, s:I, s:I}", "events", o.list, "next",
			     (json_int_t)o.next, "lastSeq", (json_int_t)last));
}

/* ---------------------------------------------------------------------- */
/* Billing export (DESIGN 8): the CLI's rows over HTTP, costs 0 (rates are
 * the CLI's --rates FILE). The body is bounded: a range too large for one
 * answer is 413, to be split by the client. */

#define EXPORT_MAX_BYTES (64u << 20)

struct export_out {
	char *buf;
	size_t len, cap;
	bool json, scope, over;
};

static bool out_put(struct export_out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > EXPORT_MAX_BYTES) {
		o->over = true;
		return false;
	}
	if (o->len + n + 1 > o->cap) {
		o->cap = o->cap ? o->cap * 2 : 1 << 16;
		while (o->cap < o->len + n + 1)
			o->cap *= 2;
		o->buf = q_xrealloc(o->buf, o->cap);
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len++] = '\n';
	return true;
}

static int export_row(void *ctx, const struct bill_row *row)
{
	struct export_out *o = ctx;
	bool ok;

	if (o->json) {
		json_t *v = bill_row_json(row);
		char *text = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);

		ok = text != NULL && out_put(o, text, strlen(text));
		free(text);
		json_decref(v);
	} else {
		size_t n = bill_row_csv(row, o->scope, NULL, 0);
		char *line = q_xmalloc(n + 1);

		bill_row_csv(row, o->scope, line, n + 1);
		ok = out_put(o, line, n);
		free(line);
	}
	return ok ? 0 : 1;
}

/* Reads the export's query parameters; false (and a 400 sent) when bad. */
static bool export_params(struct query_server *qs, struct request *rq,
			  struct export_opts *eo, struct export_out *o)
{
	char from[64], to[64], step[16], basis[16], fmt[16], rollup[16];
	bool ok = true;

	memset(eo, 0, sizeof(*eo));
	eo->to_ns = INT64_MAX;
	if (query_param(rq->query, rq->query_len, "from", from, sizeof(from)) <
		    0 ||
	    time_parse_ns(from, &eo->from_ns) != 0)
		ok = false;
	if (query_param(rq->query, rq->query_len, "to", to, sizeof(to)) >= 0 &&
	    time_parse_ns(to, &eo->to_ns) != 0)
		ok = false;
	if (query_param(rq->query, rq->query_len, "step", step, sizeof(step)) <
	    0)
		strcpy(step, "day");
	if (query_param(rq->query, rq->query_len, "basis", basis,
			sizeof(basis)) < 0)
		strcpy(basis, "reserved");
	if (query_param(rq->query, rq->query_len, "format", fmt, sizeof(fmt)) <
	    0)
		strcpy(fmt, "focus-csv");
	if (query_param(rq->query, rq->query_len, "rollup", rollup,
			sizeof(rollup)) < 0)
		rollup[0] = '\0';
	ok = ok && bill_step_parse(step, &eo->step) == 0 &&
	     bill_basis_parse(basis, &eo->basis) == 0 &&
	     (strcmp(fmt, "focus-csv") == 0 || strcmp(fmt, "json") == 0) &&
	     (rollup[0] == '\0' || strcmp(rollup, "subtree") == 0);
	if (!ok) {
		reply_error(qs, rq, 400,
			    "export takes from=RFC3339 (required), to=RFC3339, "
			    "step=hour|day, basis=reserved|allocated, "
			    "format=focus-csv|json, rollup=subtree");
		return false;
	}
	eo->rollup_subtree = rollup[0] != '\0';
	o->json = strcmp(fmt, "json") == 0;
	o->scope = eo->rollup_subtree;
	return true;
}

void handle_export(struct query_server *qs, struct request *rq)
{
	struct export_opts eo;
	struct export_out o = {0};
	struct export_range range;
	struct lg_error err = {0};
	char warning[QUERY_EXTRA_HEADER_MAX], text[QUERY_EXTRA_HEADER_MAX - 40];
	int rc;

	if (!export_params(qs, rq, &eo, &o))
		return;
	if (!o.json) {
		const char *h = bill_csv_header(o.scope);

		out_put(&o, h, strlen(h));
	}
	rc = ledger_export(qs->lg, &eo, export_row, &o, &range, &err);
	if (rc == 1 && o.over) {
		free(o.buf);
		reply_error(qs, rq, 413,
			    "the export is larger than %u bytes: ask for a "
			    "shorter range",
			    EXPORT_MAX_BYTES);
	} else if (rc != 0) {
		free(o.buf);
		reply_error(qs, rq, rc == LG_EINVAL ? 400 : 500, "%s", err.msg);
	} else {
		if (o.buf == NULL)
			o.buf = q_xstrdup("");
		/* DESIGN 4.1: RFC 7234 warn-code 199, "miscellaneous". */
		bool warn = ledger_export_warning(&range, text, sizeof(text)) > 0;

		snprintf(warning, sizeof(warning),
			 "Warning: 199 gpuledger \"%s\"\r\n", text);
		reply_raw_headers(qs, rq, 200,
				  o.json ? "application/x-ndjson" : "text/csv",
				  o.buf, o.len, warn ? warning : NULL);
	}
}

/* ---------------------------------------------------------------------- */
/* Classes. */

void handle_classes(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = tenant_cache_get(qs);

	reply_json(qs, rq, 200,
		   json_pack("{s:O}", "classes",
			     json_object_get(tc->doc, "classes")));
}

/* The nodes with capacity or allocation of class c. */
static json_t *class_nodes(const json_t *nodes, const char *c)
{
	json_t *out = json_array(), *n;
	size_t i;

	json_array_foreach (nodes, i, n) {
		const json_t *e =
			json_object_get(json_object_get(n, "classes"), c);

		if (e == NULL)
			continue;
		json_array_append_new(
			out,
			json_pack("{s:O, s:O, s:O, s:O}", "name",
				  json_object_get(n, "name"), "capacity",
				  json_object_get(e, "capacity"), "allocated",
				  json_object_get(e, "allocated"), "serves",
				  json_object_get(e, "serves")));
	}
	return out;
}

void handle_capacity(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = tenant_cache_get(qs);
	const json_t *classes = json_object_get(tc->doc, "classes"), *c;
	const char *name = rq->param[0];
	size_t i;

	if (!dns1123_label(name, strlen(name))) {
		reply_error(qs, rq, 404, "no such class");
		return;
	}
	json_array_foreach (classes, i, c) {
		if (strcmp(qjstr_or(c, "name", ""), name) != 0)
			continue;
		reply_json(
			qs, rq, 200,
			json_pack("{s:s, s:O, s:O, s:o}", "class", name,
				  "capacity", json_object_get(c, "capacity"),
				  "free", json_object_get(c, "free"), "nodes",
				  class_nodes(json_object_get(tc->doc, "nodes"),
					      name)));
		return;
	}
	reply_error(qs, rq, 404, "no class %s", name);
}
