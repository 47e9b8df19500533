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

void query__tenant_cache_release(struct tenant_cache *tc)
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

const struct tenant_cache *query__tenant_cache_get(struct query_server *qs)
{
	struct tenant_cache *tc = &qs->cache;

	/* With holds on a VERDICT or a TICK changes what the tenants show
	 * (held, remaining): the holds' generation is part of the key. */
	uint64_t gen = state_holds_gen(ledger_state(qs->lg));

	if (tc->doc != NULL && tc->content_seq == qs->vix.content_seq &&
	    tc->holds_gen == gen)
		return tc;
	query__tenant_cache_release(tc);
	tc->doc = state_to_json(ledger_state(qs->lg), NULL);
	tc->children = children_of(json_object_get(tc->doc, "tenants"));
	tc->content_seq = qs->vix.content_seq;
	tc->holds_gen = gen;
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

void query__handle_healthz(struct query_server *qs, struct request *rq)
{
	query__reply_json(qs, rq, 200, json_pack("{s:s}", "status", "ok"));
}

void query__handle_readyz(struct query_server *qs, struct request *rq)
{
	const char *why = query__unready_reason(qs);

	if (why == NULL)
		query__reply_json(
			qs, rq, 200,
			json_pack("{s:b, s:I}", "ready", 1, "seq",
				  (json_int_t)ledger_last_seq(qs->lg)));
	else
		query__reply_json(
			qs, rq, 503,
			json_pack("{s:s, s:b, s:I}", "error", why, "ready", 0,
				  "seq", (json_int_t)ledger_last_seq(qs->lg)));
}

void query__handle_metrics(struct query_server *qs, struct request *rq)
{
	size_t len;
	char *text = query__metrics_render(
		qs,
		json_object_get(query__tenant_cache_get(qs)->doc, "tenants"),
		&len);

	if (text == NULL) {
		query__reply_json(
			qs, rq, 500,
			json_pack("{s:s, s:I}", "error",
				  "the metrics page would pass its bound",
				  "maxBytes",
				  (json_int_t)qs->o.max_metrics_bytes));
		return;
	}
	query__reply_raw(qs, rq, 200,
			 "text/plain; version=0.0.4; charset=utf-8", text, len);
}

/* ---------------------------------------------------------------------- */
/* Tenants. */

static bool valid_ns(const char *ns)
{
	return dns1123_label(ns, strlen(ns));
}

json_t *query__tenants_visible(const json_t *all, const struct principal *who)
{
	json_t *list = json_array();
	const json_t *t;
	size_t i;

	json_array_foreach (all, i, t) {
		if (who != NULL && who->role == ROLE_TENANT &&
		    !query__ns_in_subtree(who->ns,
					  qjstr_or(t, "namespace", "")))
			continue;
		json_array_append(list, (json_t *)t);
	}
	return list;
}

void query__handle_tenants(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = query__tenant_cache_get(qs);
	json_t *list = query__tenants_visible(
		json_object_get(tc->doc, "tenants"), rq->who);

	/* horizon: how far the ledger knows the cluster (DESIGN 4.1); the
	 * console's history ends there, not at the last verdict's time. */
	query__reply_json(
		qs, rq, 200,
		json_pack("{s:I, s:o, s:o, s:o}", "seq",
			  (json_int_t)ledger_last_seq(qs->lg), "time",
			  time_json(state_time_ns(ledger_state(qs->lg))),
			  "horizon",
			  time_json(state_horizon_ns(ledger_state(qs->lg))),
			  "tenants", list));
}

void query__handle_tenant(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = query__tenant_cache_get(qs);
	const char *ns = rq->param[0];
	json_t *t, *out, *ch;

	if (!valid_ns(ns)) {
		query__reply_error(qs, rq, 400, "not a namespace name");
		return;
	}
	t = find_tenant(json_object_get(tc->doc, "tenants"), ns);
	if (t == NULL) {
		query__reply_error(qs, rq, 404, "no tenant %s", ns);
		return;
	}
	out = json_copy(t);
	ch = json_object_get(tc->children, ns);
	json_object_set_new(out, "children", ch ? json_copy(ch) : json_array());
	query__reply_json(qs, rq, 200, out);
}

/* GET /v1/holds[?tenant=NS] (DESIGN 3.7): the alive holds, of NS's
 * subtree when given; a tenant token sees its own subtree (no tenant
 * given: its own; another outside it: 403). */
void query__handle_holds(struct query_server *qs, struct request *rq)
{
	char tenant[DNS1123_SUBDOMAIN_MAX + 1] = "";
	const state_t *st = ledger_state(qs->lg);
	int p = query__param_text(rq, "tenant", tenant, sizeof(tenant));
	struct state_holds_stats hs;

	if (p == QP_BAD || (p == QP_OK && !valid_ns(tenant))) {
		query__reply_error(qs, rq, 400, "tenant: not a namespace name");
		return;
	}
	if (rq->who != NULL && rq->who->role == ROLE_TENANT) {
		if (p != QP_OK)
			snprintf(tenant, sizeof(tenant), "%s", rq->who->ns);
		else if (!query__ns_in_subtree(rq->who->ns, tenant)) {
			query__reply_error(qs, rq, 403,
					   "holds: tenant %s is outside the "
					   "subtree of %s",
					   tenant, rq->who->ns);
			return;
		}
	}
	state_holds_stats(st, &hs);
	query__reply_json(
		qs, rq, 200,
		json_pack("{s:I, s:o, s:b, s:I, s:o}", "seq",
			  (json_int_t)ledger_last_seq(qs->lg), "horizon",
			  time_json(state_horizon_ns(st)), "on",
			  (int)state_holds_on(st), "ttlMs",
			  (json_int_t)hs.ttl_ms, "holds",
			  state_holds_json(st, tenant[0] ? tenant : NULL)));
}

void query__rcache_release(struct rcache *rc)
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
	uint64_t gen = state_holds_gen(ledger_state(qs->lg));

	if (rc->slot == NULL || rc->content_seq != qs->vix.content_seq ||
	    rc->holds_gen != gen || rc->n >= RCACHE_SLOTS / 4 * 3) {
		query__rcache_release(rc);
		rc->slot = lg_xcalloc(RCACHE_SLOTS, sizeof(*rc->slot));
		rc->content_seq = qs->vix.content_seq;
		rc->holds_gen = gen;
	}
	e = rcache_slot(rc, ns);
	if (e->ns != NULL)
		return e;
	v = state_remaining_json(ledger_state(qs->lg), ns);
	e->text = v ? json_canonical(v) : NULL;
	json_decref(v);
	if (e->text == NULL)
		return NULL;
	e->ns = lg_xstrdup(ns);
	e->len = strlen(e->text);
	rc->n++;
	return e;
}

void query__handle_remaining(struct query_server *qs, struct request *rq)
{
	const char *ns = rq->param[0];
	const struct rcache_entry *e;

	if (!valid_ns(ns)) {
		query__reply_error(qs, rq, 400, "not a namespace name");
		return;
	}
	e = remaining_cached(qs, ns);
	if (e == NULL)
		query__reply_error(qs, rq, 500,
				   "the answer could not be built");
	else
		query__reply_borrowed(qs, rq, 200, "application/json", e->text,
				      e->len);
}

/* ---------------------------------------------------------------------- */
/* State and events. */

/* ?at=SEQ|RFC3339 -> *a (ledger_at_resolve, as replay --at); an error
 * message when it cannot be (in msg). A seq the server has not seen is
 * refused: a client asking for it by number (a replica that runs behind
 * the primary) must not take the latest state for it. A time outside
 * the log is answered, with a Warning (query__handle_state). */
static const char *resolve_at(struct query_server *qs, struct request *rq,
			      struct ledger_at *a, char *msg, size_t cap)
{
	char at[96];
	long n = query__param(rq->query, rq->query_len, "at", at, sizeof(at));
	struct lg_error err = {0};

	if (n == -2) {
		snprintf(msg, cap, "at: malformed or longer than %zu bytes",
			 sizeof(at) - 1);
		return msg;
	}
	if (ledger_at_resolve(qs->lg, n == -1 ? NULL : at, a, &err) != 0) {
		snprintf(msg, cap, "at: %s", err.msg);
		return msg;
	}
	if (a->by_seq && a->asked_seq > ledger_last_seq(qs->lg)) {
		snprintf(msg, cap, "at: %llu is past the last seq %llu",
			 (unsigned long long)a->asked_seq,
			 (unsigned long long)ledger_last_seq(qs->lg));
		return msg;
	}
	return NULL;
}

/* The heavy reads' jobs: what the thread needs, copied off the request. */
struct read_job {
	uint64_t seq;	/* /state: at; /events: from */
	uint64_t limit; /* /events */
	/* /state: the Warning line when at falls outside the log ("" when
	 * inside), as replay --at says it on stderr. */
	char warning[QUERY_EXTRA_HEADER_MAX];
};

/* Emits v's canonical text (v is stolen). */
static void emit_json(struct heavy *h, json_t *v)
{
	char *text = v ? json_canonical(v) : NULL;

	json_decref(v);
	if (text == NULL)
		query__heavy_fail(h, 500, "the answer could not be built");
	else
		query__heavy_emit(h, text, strlen(text));
	free(text);
}

/* On the thread: the state at j->seq with the chain head after it. */
static void state_run(struct heavy *h, void *arg)
{
	const struct read_job *j = arg;
	ledger_t *lg = query__heavy_ledger(h);
	struct lg_error err = {0};
	uint8_t head[LEDGER_HEAD_BYTES] = {0};
	char hex[2 * LEDGER_HEAD_BYTES + 1];
	state_t *st = NULL;
	json_t *doc;
	int rc = 0;

	if (j->seq == 0)
		st = state_new();
	else if ((rc = ledger_state_at(lg, j->seq, &st, NULL, &err)) == 0)
		rc = ledger_head_at(lg, j->seq, head, &err);
	if (rc != 0) {
		state_free(st);
		query__heavy_fail(h, 500, "state at seq %llu: %s",
				  (unsigned long long)j->seq, err.msg);
		return;
	}
	query__hex(head, hex);
	if (j->warning[0] != '\0')
		query__heavy_late_header(h, j->warning);
	doc = state_to_json(st, NULL);
	json_object_set_new(doc, "chainHead", json_string(hex));
	state_free(st);
	emit_json(h, doc);
}

void query__handle_state(struct query_server *qs, struct request *rq)
{
	const char *why;
	char msg[LG_ERRMSG_MAX + 16], note[256], at[96];
	struct read_job *j = lg_xcalloc(1, sizeof(*j));
	struct ledger_at a;

	if ((why = resolve_at(qs, rq, &a, msg, sizeof(msg))) != NULL) {
		free(j);
		query__reply_error(qs, rq, 400, "%s", why);
		return;
	}
	j->seq = a.seq;
	/* RFC 7234 warn-code 199, "miscellaneous", as the export's. The
	 * value parsed as a seq or a time, so it holds no quote. */
	if (ledger_at_note(&a, note, sizeof(note)) > 0 &&
	    query__param(rq->query, rq->query_len, "at", at, sizeof(at)) >= 0)
		snprintf(j->warning, sizeof(j->warning),
			 "Warning: 199 gpuledger \"at=%s %s\"\r\n", at, note);
	query__heavy_start(qs, rq, "application/json", false, state_run, j,
			   free);
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
	char hex[2 * LEDGER_HEAD_BYTES + 1], *text;

	/* The chain head after the event: what a replica checks its own
	 * against (gpuledger replicate). */
	query__hex(head, hex);
	json_object_set_new(v, "head", json_string(hex));
	text = json_canonical(v);

	o->bytes += text ? strlen(text) : 0;
	free(text);
	json_array_append_new(o->list, v);
	o->next = ev->seq + 1;
	/* Stop after the event that crosses the byte bound: a client always
	 * gets at least one event, so it can make progress. */
	return o->bytes >= EVENTS_MAX_BYTES;
}

/* On the thread: one page of events of the snapshot. */
static void events_run(struct heavy *h, void *arg)
{
	const struct read_job *j = arg;
	ledger_t *lg = query__heavy_ledger(h);
	struct lg_error err = {0};
	struct events_out o = {.list = json_array(), .next = j->seq};
	uint64_t last = ledger_last_seq(lg);
	int rc = 0;

	if (j->seq <= last)
		rc = ledger_scan(lg, j->seq, j->limit, add_event, &o, &err);
	if (rc < 0) {
		json_decref(o.list);
		query__heavy_fail(h, 500, "%s", err.msg);
		return;
	}
	emit_json(h,
		  json_pack("{s:o, s:I, s:I}", "events", o.list, "next",
			    (json_int_t)o.next, "lastSeq", (json_int_t)last));
}

void query__handle_events(struct query_server *qs, struct request *rq)
{
	struct read_job *j = lg_xmalloc(sizeof(*j));

	j->seq = 1;
	j->limit = EVENTS_LIMIT_DEFAULT;
	if (query__param_u64(rq, "from", &j->seq) == QP_BAD || j->seq == 0 ||
	    query__param_u64(rq, "limit", &j->limit) == QP_BAD ||
	    j->limit == 0 || j->limit > EVENTS_LIMIT_MAX) {
		free(j);
		query__reply_error(qs, rq, 400,
				   "from must be a seq >= 1 and limit 1..%d",
				   EVENTS_LIMIT_MAX);
		return;
	}
	query__heavy_start(qs, rq, "application/json", false, events_run, j,
			   free);
}

/* ---------------------------------------------------------------------- */
/* Classes. */

void query__handle_classes(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = query__tenant_cache_get(qs);

	query__reply_json(qs, rq, 200,
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

void query__handle_capacity(struct query_server *qs, struct request *rq)
{
	const struct tenant_cache *tc = query__tenant_cache_get(qs);
	const json_t *classes = json_object_get(tc->doc, "classes"), *c;
	const char *name = rq->param[0];
	size_t i;

	if (!dns1123_label(name, strlen(name))) {
		query__reply_error(qs, rq, 404, "no such class");
		return;
	}
	json_array_foreach (classes, i, c) {
		if (strcmp(qjstr_or(c, "name", ""), name) != 0)
			continue;
		query__reply_json(
			qs, rq, 200,
			json_pack("{s:s, s:O, s:O, s:o}", "class", name,
				  "capacity", json_object_get(c, "capacity"),
				  "free", json_object_get(c, "free"), "nodes",
				  class_nodes(json_object_get(tc->doc, "nodes"),
					      name)));
		return;
	}
	query__reply_error(qs, rq, 404, "no class %s", name);
}
