/*
 * The ingest engine (DESIGN 2, 4.1, 9): watch events in, differences out.
 *
 * Every handler maps an object with model/ and diffs the result against
 * what the cache says the ledger holds for it; emit() queues the events,
 * and ingest__flush() appends them with the positions they came from in one
 * transaction. This file only dispatches (the handlers table, relists, the
 * class table, which dispatches again); the handlers are holders.c, nodes.c
 * and tree.c, and what they share, the object cache and the event queue, is
 * cache.c, below all of them.
 *
 * The cache is changed as events are queued, so a failed flush
 * leaves it ahead of the ledger: the engine then refuses further input
 * (in->broken) and the caller must start again from the ledger.
 *
 * NOTE codes (DESIGN 4.1 "NOTE"):
 *   MalformedLine      a stream line that is not a watch event (bad JSON,
 *                      type, object or time)
 *   Oversized          a line or object larger than max_object_bytes
 *   UnknownKind        an object whose apiVersion and kind are not watched
 *   InvalidObject      an object that cannot be mapped (it holds nothing)
 *   UnitsTooLarge      a holder with more than 2^31-1 units of a class
 *                      (DESIGN 2.3 "Bounds"; it holds nothing)
 *   UnknownClass       a VMInstance/KubernetesNodes entry names a class not
 *                      in the table (that entry reserves nothing)
 *   LabelMismatch      a Namespace's tenant.cozystack.io labels disagree
 *                      with the name rule (the name rule wins)
 *   InvalidBudget      a Tenant's quota key or value is invalid (binds
 *                      nothing)
 *   NotATenant         a Tenant governs a namespace that is not a tenant
 *   TenantConflict     a second Tenant governs an already governed
 *                      namespace (ignored while the first exists)
 *   InvalidClassTable  a gpu-classes ConfigMap whose table is invalid (the
 *                      table in force stays)
 *   ApiAbsent          the live watcher found a resource's API not served
 *                      (kube.c: it is skipped and re-checked, the other
 *                      resources go on)
 *   ClockStep          the live watcher saw the wall clock step more than
 *                      1 s away from its time (ingest/clock.c)
 *   TimeWentBack       an input time more than 1 s before the ledger's
 *                      (DESIGN 4.1 "Time that cannot be trusted"): it is
 *                      clamped; the NOTE gives both times and the step,
 *                      once per ledger time (a line dated a year ahead
 *                      makes one NOTE, not one per later line)
 * A NOTE about an object is emitted when what is wrong with it changes, so
 * that re-observing the same object adds nothing; line-level NOTEs have no
 * object to remember and repeat.
 */
#include "ingest/ingest_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLASSES_NAMESPACE "cozy-system"
#define CLASSES_NAME	  "gpu-classes"
#define CLASSES_KEY	  "classes.json"

static const char *const position_keys[RES_MAX + 1] = {
	[RES_NAMESPACE] = "ingest.position.Namespace",
	[RES_TENANT] = "ingest.position.Tenant",
	[RES_VMINSTANCE] = "ingest.position.VMInstance",
	[RES_KUBERNETESNODES] = "ingest.position.KubernetesNodes",
	[RES_POD] = "ingest.position.Pod",
	[RES_RESOURCECLAIM] = "ingest.position.ResourceClaim",
	[RES_NODE] = "ingest.position.Node",
	[RES_CONFIGMAP] = "ingest.position.ConfigMap",
	[RES_MAX] = "ingest.position.stream",
};

static const struct handler {
	upsert_fn *upsert;
	delete_fn *del;
} handlers[RES_MAX] = {
	[RES_NAMESPACE] = {ingest__ns_upsert, ingest__ns_delete},
	[RES_TENANT] = {ingest__tenant_upsert, ingest__tenant_delete},
	[RES_VMINSTANCE] = {ingest__holder_upsert, ingest__holder_delete},
	[RES_KUBERNETESNODES] = {ingest__holder_upsert, ingest__holder_delete},
	[RES_POD] = {ingest__holder_upsert, ingest__holder_delete},
	[RES_RESOURCECLAIM] = {ingest__holder_upsert, ingest__holder_delete},
	[RES_NODE] = {ingest__node_upsert, ingest__node_delete},
	[RES_CONFIGMAP] = {ingest__configmap_upsert, ingest__configmap_delete},
};

const char *ingest__position_key(enum resource r)
{
	if ((unsigned)r > RES_MAX)
		return NULL;
	return position_keys[r];
}

/* Calls fn for each stored position, by resource (RES_MAX: a recorded
 * stream's), in that order; the value is a C string of len bytes,
 * borrowed for the call. fn returns non-zero to stop (returned). */
typedef int position_read_fn(void *ctx, int r, const char *value, size_t len);
static int positions_read(ledger_t *lg, position_read_fn *fn, void *ctx,
			  struct lg_error *err)
{
	char *buf = lg_xmalloc(INGEST_POSITION_MAX + 1);
	int rc = 0;

	for (int r = 0; r <= RES_MAX && rc == 0; r++) {
		size_t len = 0;

		rc = ledger_meta_get(lg, position_keys[r], buf,
				     INGEST_POSITION_MAX, &len, err);
		if (rc == LG_ENOENT) {
			rc = 0;
			continue;
		}
		if (rc == 0) {
			buf[len] = '\0';
			rc = fn(ctx, r, buf, len);
		}
	}
	free(buf);
	return rc;
}

struct scan_ctx {
	ingest_position_fn *fn;
	void *ctx;
};

/* ingest_positions_scan names the source: the key after its stem. */
static int scan_one(void *ctx, int r, const char *value, size_t len)
{
	static const char stem[] = "ingest.position.";
	const struct scan_ctx *s = ctx;

	return s->fn(s->ctx, position_keys[r] + sizeof(stem) - 1, value, len);
}

int ingest_positions_scan(ledger_t *lg, ingest_position_fn *fn, void *ctx,
			  struct lg_error *err)
{
	struct scan_ctx s = {fn, ctx};

	return positions_read(lg, scan_one, &s, err);
}

/* ---------------------------------------------------------------------- */
/* Tenant nodes and covers (their maps are the engine's) */

static const char *tnode_key(const void *v)
{
	return ((const struct tnode *)v)->ns;
}

static const char *cover_key(const void *v)
{
	return ((const struct cover *)v)->key;
}

/* The engine starts from the positions the ledger committed. */
static int keep_position(void *ctx, int r, const char *value, size_t len)
{
	ingest_t *in = ctx;

	in->pos_committed[r] = lg_xstrdup(value);
	return 0;
}

static int load_positions(ingest_t *in, struct lg_error *err)
{
	return positions_read(in->lg, keep_position, in, err);
}

/* ---------------------------------------------------------------------- */
/* Life cycle */

int ingest_new(ingest_t **out, ledger_t *lg, const struct ingest_opts *o,
	       struct lg_error *err)
{
	ingest_t *in;
	int rc;

	LG_ASSERT(out != NULL && lg != NULL);
	LG_ASSERT(o == NULL || o->sink.append == NULL || o->sink.state != NULL);
	in = lg_xcalloc(1, sizeof(*in));
	*out = NULL;
	in->lg = lg;
	if (o != NULL)
		in->o = *o;
	if (in->o.max_object_bytes == 0)
		in->o.max_object_bytes = INGEST_MAX_OBJECT_DEFAULT;
	if (in->o.batch_events == 0)
		in->o.batch_events = INGEST_BATCH_DEFAULT;
	if (in->o.tick_ns == 0)
		in->o.tick_ns = INGEST_TICK_DEFAULT;
	in->o.classes = NULL;
	class_table_init(&in->table);
	ingest__cache_init(in);
	ingest__smap_init(&in->tnodes, tnode_key);
	ingest__smap_init(&in->covers, cover_key);
	ingest__arena_init(&in->arena);
	ingest__smap_init(&in->dirty, ingest__dirty_key);
	rc = load_positions(in, err);
	if (rc == 0)
		rc = ingest__objtab_load(in, err);
	if (rc == 0) {
		ingest__needles_rebuild(in);
		if (o != NULL && o->classes != NULL)
			rc = ingest__set_classes(in, o->classes, err);
	}
	if (rc != 0) {
		ingest_free(in);
		return rc;
	}
	*out = in;
	return 0;
}

static void free_map(struct smap *m, void (*fn)(void *))
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->hashes[i] != 0)
			fn(m->vals[i]);
	ingest__smap_release(m);
}

static void tnode_free_v(void *v)
{
	ingest__tnode_free(v);
}

static void cover_free_v(void *v)
{
	ingest__cover_free(v);
}

void ingest_free(ingest_t *in)
{
	if (in == NULL)
		return;
	ingest__cache_release(in);
	free_map(&in->tnodes, tnode_free_v);
	free_map(&in->covers, cover_free_v);
	free_map(&in->dirty, free);
	class_table_release(&in->table);
	ingest__needles_free(in);
	free(in->evs);
	free(in->proj);
	ingest__arena_release(&in->arena);
	for (int r = 0; r <= RES_MAX; r++) {
		free(in->pos_pending[r]);
		free(in->pos_committed[r]);
	}
	free(in);
}

int64_t ingest__time_ns(const ingest_t *in)
{
	return in->time_ns;
}

const struct class_table *ingest__classes(const ingest_t *in)
{
	return &in->table;
}

void ingest__counters(const ingest_t *in, struct ingest_counters *c)
{
	*c = in->c;
}

size_t ingest__note_counts(const ingest_t *in, struct ingest_note_count *out,
			   size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < INGEST_NOTE_CODES && n < cap; i++)
		if (in->note_counts[i].code != NULL)
			out[n++] = in->note_counts[i];
	return n;
}

int ingest__note(ingest_t *in, const char *code, const char *msg,
		 struct lg_error *err)
{
	int rc = ingest__input_begin(in, err);

	if (rc != 0)
		return rc;
	ingest__emit_note(in, NULL, code, HK_NONE, NULL, NULL, "%s", msg);
	return 0;
}

int ingest_note(ingest_t *in, const char *code, const char *msg,
		struct lg_error *err)
{
	int rc;

	LG_ASSERT(in != NULL && code != NULL && msg != NULL);
	rc = ingest__note(in, code, msg, err);
	return rc != 0 ? rc : ingest__flush(in, err);
}

/* ---------------------------------------------------------------------- */
/* Positions, flush, tick */

void ingest__set_position(ingest_t *in, enum resource r, const char *value)
{
	size_t len;

	if ((unsigned)r > RES_MAX || value == NULL)
		return;
	len = strlen(value);
	if (len > INGEST_POSITION_MAX)
		return;
	if (in->pos_pending[r] != NULL && strlen(in->pos_pending[r]) >= len) {
		memcpy(in->pos_pending[r], value, len + 1);
		return;
	}
	free(in->pos_pending[r]);
	in->pos_pending[r] = lg_xstrdup(value);
}

const char *ingest__position(ingest_t *in, enum resource r)
{
	if ((unsigned)r > RES_MAX)
		return NULL;
	return in->pos_committed[r];
}

static int broken(struct lg_error *err)
{
	return lg_error_set(err, LG_EINVAL,
			    "ingest: an earlier append failed; the engine "
			    "must be restarted from the ledger");
}

/* Appends evs[0..n) (split at the ledger's batch bound) with b (the
 * positions and object records) on the last part. */
static int append_all(ingest_t *in, const struct ledger_batch *b,
		      struct lg_error *err)
{
	size_t off = 0;

	do {
		size_t k = in->n_evs - off;
		bool last = k <= INGEST_APPEND_MAX;
		int rc;

		if (!last)
			k = INGEST_APPEND_MAX;
		rc = ledger_append_batch(in->lg, in->evs + off, k,
					 last ? b : NULL, NULL, err);
		if (rc != 0)
			return rc;
		off += k;
	} while (off < in->n_evs);
	return 0;
}

/* The state the log holds after the last flush. */
static const state_t *log_state(const ingest_t *in)
{
	if (in->o.sink.append != NULL)
		return in->o.sink.state(in->o.sink.ctx);
	return ledger_state(in->lg);
}

int64_t ingest__tick_ns(const ingest_t *in, int64_t tick_ns)
{
	const state_t *st = log_state(in);
	struct state_holds_stats hs;

	if (st == NULL)
		return tick_ns;
	state_holds_stats(st, &hs);
	/* DESIGN 3.7: holds expire by the log's time, which a quiet cluster
	 * moves only by TICKs: with holds on, one at least every TTL/4. */
	if (hs.on && hs.ttl_ms * 250000 < tick_ns)
		return hs.ttl_ms * 250000;
	return tick_ns;
}

/* A sink's flush: the events and the positions by source name (DESIGN
 * 11: P/pos/<source>); the object table is not the sink's. */
static int sink_append(ingest_t *in, const struct ledger_batch *b,
		       struct lg_error *err)
{
	static const char stem[] = "ingest.position.";
	struct ingest_sink_pos pos[RES_MAX + 1];

	for (size_t i = 0; i < b->n_meta; i++)
		pos[i] = (struct ingest_sink_pos){
			b->meta[i].key + sizeof(stem) - 1, b->meta[i].val,
			b->meta[i].len};
	return in->o.sink.append(in->o.sink.ctx, in->evs, in->n_evs, pos,
				 b->n_meta, err);
}

/* One transaction: the pending events, the positions they came with and
 * the object table's changed records (DESIGN 4.2). */
int ingest__flush(ingest_t *in, struct lg_error *err)
{
	struct ledger_meta meta[RES_MAX + 1];
	struct ledger_batch b = {.meta = meta};
	int rc;

	if (in->broken)
		return broken(err);
	for (int r = 0; r <= RES_MAX; r++)
		if (in->pos_pending[r] != NULL)
			meta[b.n_meta++] = (struct ledger_meta){
				position_keys[r], in->pos_pending[r],
				strlen(in->pos_pending[r])};
	if (in->n_evs == 0 && b.n_meta == 0 && in->dirty.n == 0 &&
	    in->time_ns == in->tab_time_ns &&
	    in->time_back_noted == in->tab_time_back)
		return 0;
	rc = ingest__objtab_collect(in, &b, err);
	if (rc == 0 && in->n_evs == 0 && b.n_meta == 0 && b.n_objs == 0) {
		ingest__objtab_release(in, &b, true);
		return 0;
	}
	if (rc == 0 && in->o.sink.append != NULL)
		rc = sink_append(in, &b, err);
	else if (rc == 0)
		rc = append_all(in, &b, err);
	ingest__objtab_release(in, &b, rc == 0);
	if (rc != 0) {
		in->broken = true;
		return rc;
	}
	for (int r = 0; r <= RES_MAX; r++) {
		if (in->pos_pending[r] == NULL)
			continue;
		free(in->pos_committed[r]);
		in->pos_committed[r] = in->pos_pending[r];
		in->pos_pending[r] = NULL;
	}
	in->c.events_out += in->n_evs;
	in->n_evs = 0;
	ingest__arena_reset(&in->arena);
	return 0;
}

int ingest__tick(ingest_t *in, int64_t time_ns, struct lg_error *err)
{
	struct event ev = {.type = EV_TICK};
	int rc = ingest__flush(in, err);

	if (rc != 0)
		return rc;
	if (time_ns > in->time_ns)
		in->time_ns = time_ns;
	if (time_ns <= state_horizon_ns(log_state(in)))
		return 0;
	ev.time_ns = time_ns;
	if (in->o.sink.append != NULL)
		rc = in->o.sink.append(in->o.sink.ctx, &ev, 1, NULL, 0, err);
	else
		rc = ledger_append(in->lg, &ev, 1, NULL, 0, NULL, err);
	if (rc != 0)
		in->broken = true;
	else
		in->c.events_out++;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Input */

/* A step back of more than this is recorded (DESIGN 4.1). */
#define TIME_BACK_NOTE_NS 1000000000LL

void ingest__advance_time(ingest_t *in, int64_t time_ns)
{
	char got[48], have[48];

	if (time_ns > in->time_ns) {
		in->time_ns = time_ns;
		return;
	}
	/* 0 is "no time" (a line without one keeps the previous time). */
	if (time_ns == 0 || in->time_ns - time_ns <= TIME_BACK_NOTE_NS ||
	    in->time_back_noted == in->time_ns)
		return;
	in->time_back_noted = in->time_ns;
	time_format_ns(time_ns, got, sizeof(got));
	time_format_ns(in->time_ns, have, sizeof(have));
	ingest__emit_note(
		in, NULL, "TimeWentBack", HK_NONE, NULL, NULL,
		"input time %s is %lld.%09lld s before the ledger's time %s; "
		"clamped (times never go back): events are dated later "
		"than they happened until the input catches up",
		got, (long long)((in->time_ns - time_ns) / 1000000000),
		(long long)((in->time_ns - time_ns) % 1000000000), have);
}

/* Flushes before taking new input once a batch is full, so that the
 * position set after the previous input is committed with its events. */
int ingest__input_begin(ingest_t *in, struct lg_error *err)
{
	if (in->broken)
		return broken(err);
	if (in->n_evs >= in->o.batch_events)
		return ingest__flush(in, err);
	return 0;
}

static bool cluster_scoped(enum resource r)
{
	return r == RES_NAMESPACE || r == RES_NODE;
}

static void on_deleted(ingest_t *in, enum resource r, const json_t *object,
		       struct obj *o)
{
	const char *uid = ingest__meta_str(object, "uid");

	/* DELETED of an unknown object does nothing (Appendix A); neither
	 * does that of an older incarnation of a cached name. */
	if (o == NULL || (uid != NULL && *uid != '\0' && *o->uid != '\0' &&
			  strcmp(uid, o->uid) != 0))
		return;
	handlers[r].del(in, r, o);
}

int ingest__event(ingest_t *in, enum watch_type type, const json_t *object,
		  int64_t time_ns, struct lg_error *err)
{
	const char *ns, *name;
	enum resource r;
	struct obj *o;
	int rc = ingest__input_begin(in, err);

	if (rc != 0)
		return rc;
	ingest__advance_time(in, time_ns);
	in->c.events_in++;
	if (type == WATCH_BOOKMARK)
		return 0;
	if (!json_is_object(object)) {
		ingest__emit_note(in, NULL, "MalformedLine", HK_NONE, NULL,
				  NULL,
				  "watch event object is not a JSON object");
		return 0;
	}
	r = ingest__resource_of(
		json_string_value(json_object_get(object, "apiVersion")),
		json_string_value(json_object_get(object, "kind")));
	ns = ingest__meta_str(object, "namespace");
	name = ingest__meta_str(object, "name");
	if (r == RES_MAX) {
		ingest__emit_note(
			in, NULL, "UnknownKind", HK_NONE, ns, name,
			"not a watched kind: %.64s %.64s",
			json_string_value(
				json_object_get(object, "apiVersion")),
			json_string_value(json_object_get(object, "kind")));
		return 0;
	}
	if (cluster_scoped(r))
		ns = "";
	if (name == NULL || *name == '\0' || ns == NULL ||
	    (!cluster_scoped(r) && *ns == '\0')) {
		ingest__emit_note(
			in, NULL, "InvalidObject", ingest__res_kind(r), ns,
			name, "%s: metadata.name%s missing or not a string",
			ingest__resource_info(r)->kind,
			cluster_scoped(r) ? " is" : " or namespace is");
		return 0;
	}
	o = ingest__obj_get(in, r, ns, name);
	if (o != NULL)
		ingest__obj_touch(in, r, o);
	if (type == WATCH_DELETED) {
		on_deleted(in, r, object, o);
		return 0;
	}
	rc = handlers[r].upsert(in, r, object, o);
	if (rc == 0 && in->relisting[r] &&
	    (o = ingest__obj_get(in, r, ns, name)))
		o->seen = true;
	return rc;
}

int ingest__oversized(ingest_t *in, uint64_t len, struct lg_error *err)
{
	int rc = ingest__input_begin(in, err);

	if (rc != 0)
		return rc;
	in->c.lines++;
	ingest__emit_note(in, NULL, "Oversized", HK_NONE, NULL, NULL,
			  "input of %llu bytes skipped: more than %zu",
			  (unsigned long long)len, in->o.max_object_bytes);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Relists */

int ingest__relist_begin(ingest_t *in, enum resource r, struct lg_error *err)
{
	struct smap *m;

	if ((unsigned)r >= RES_MAX)
		return lg_error_set(err, LG_EINVAL, "relist: bad resource");
	m = &in->objs[r];
	for (size_t i = 0; i < m->cap; i++)
		if (m->hashes[i] != 0)
			((struct obj *)m->vals[i])->seen = false;
	in->relisting[r] = true;
	in->c.relists++;
	return 0;
}

int ingest__relist_end(ingest_t *in, enum resource r, struct lg_error *err)
{
	size_t n;
	void **os;
	int rc;

	if ((unsigned)r >= RES_MAX)
		return lg_error_set(err, LG_EINVAL, "relist: bad resource");
	if ((rc = ingest__input_begin(in, err)) != 0)
		return rc;
	os = ingest__smap_sorted(&in->objs[r], &n);
	/* Each delete removes only its own object, so the rest of the
	 * sorted array stays valid. */
	for (size_t i = 0; i < n; i++)
		if (!((struct obj *)os[i])->seen)
			handlers[r].del(in, r, os[i]);
	free(os);
	in->relisting[r] = false;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The class table */

static void emit_class(ingest_t *in, const struct gpu_class *c,
		       const char *name)
{
	json_t *def = c ? gpu_class_to_json(c) : NULL;
	char *text = def ? json_canonical(def) : NULL;

	ingest__emit(in, &(struct event){
				 .type = EV_CLASS, .cls = name, .text = text});
	free(text);
	json_decref(def);
}

/* CLASS events from the table in force to t: removals first, so that the
 * ledger's table never holds more classes than either table. Returns
 * whether anything changed. */
static bool diff_classes(ingest_t *in, const struct class_table *t)
{
	const struct class_table *old = &in->table;
	bool changed = false;

	for (size_t i = 0; i < old->n; i++)
		if (class_table_find(t, old->classes[i].name) == NULL) {
			emit_class(in, NULL, old->classes[i].name);
			changed = true;
		}
	for (size_t i = 0; i < t->n; i++) {
		const struct gpu_class *c = &t->classes[i];
		const struct gpu_class *was = class_table_find(old, c->name);

		if (was != NULL && gpu_class_equal(was, c))
			continue;
		emit_class(in, c, c->name);
		changed = true;
	}
	return changed;
}

/* Maps every cached object again, in a fixed order: VMInstances before
 * the claims they cover, then everything else, each sorted by key. */
static int remap_all(ingest_t *in)
{
	static const enum resource order[] = {
		RES_VMINSTANCE, RES_KUBERNETESNODES, RES_RESOURCECLAIM, RES_POD,
		RES_NODE,	RES_TENANT};
	int rc = 0;

	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
		enum resource r = order[k];
		size_t n;
		void **os = ingest__smap_sorted(&in->objs[r], &n);

		for (size_t i = 0; i < n && rc == 0; i++) {
			struct obj *o = os[i];
			json_t *doc = json_incref(ingest__obj_doc(o));

			ingest__obj_touch(in, r, o);
			if (doc != NULL)
				rc = handlers[r].upsert(in, r, doc, o);
			json_decref(doc);
		}
		free(os);
	}
	return rc;
}

int ingest__set_classes(ingest_t *in, const struct class_table *t,
			struct lg_error *err)
{
	struct class_table copy;

	if (in->broken)
		return broken(err);
	if (t == NULL || t->n > HOLDER_MAX_CLASSES)
		return lg_error_set(err, LG_EINVAL, "bad class table");
	if (!diff_classes(in, t))
		return 0;
	ingest__table_copy(&copy, t);
	class_table_release(&in->table);
	in->table = copy;
	ingest__needles_rebuild(in);
	return remap_all(in);
}

/* The gpu-classes ConfigMap is the one handler that dispatches again (a
 * new table re-maps every object), so it lives here with the dispatch
 * table rather than among the handlers it calls. */

/* The table of a gpu-classes ConfigMap into t; NOTE and false when it is
 * invalid. */
static bool configmap_table(ingest_t *in, struct obj *o, const json_t *obj,
			    struct class_table *t)
{
	const json_t *v =
		json_object_get(json_object_get(obj, "data"), CLASSES_KEY);
	struct lg_error e = {0};
	json_error_t jerr;
	json_t *doc;
	int rc;

	if (!json_is_string(v)) {
		ingest__emit_note(
			in, o, "InvalidClassTable", HK_NONE, o->ns, o->name,
			"data[\"" CLASSES_KEY "\"] is missing or not a "
			"string; the class table in force stays");
		return false;
	}
	doc = json_loadb(json_string_value(v), json_string_length(v), 0, &jerr);
	if (doc == NULL) {
		ingest__emit_note(
			in, o, "InvalidClassTable", HK_NONE, o->ns, o->name,
			CLASSES_KEY " is not JSON (line %d: %s); the class "
				    "table in force stays",
			jerr.line, jerr.text);
		return false;
	}
	rc = class_table_parse(t, doc, &e);
	json_decref(doc);
	if (rc != 0) {
		ingest__emit_note(in, o, "InvalidClassTable", HK_NONE, o->ns,
				  o->name, "%s; the class table in force stays",
				  e.msg);
		return false;
	}
	return true;
}

int ingest__configmap_upsert(ingest_t *in, enum resource r, const json_t *obj,
			     struct obj *o)
{
	const char *ns = ingest__meta_str(obj, "namespace"),
		   *name = ingest__meta_str(obj, "name");
	struct class_table t;
	int rc;

	/* Only one ConfigMap is watched; a recorded stream may hold others. */
	if (ns == NULL || name == NULL || strcmp(ns, CLASSES_NAMESPACE) != 0 ||
	    strcmp(name, CLASSES_NAME) != 0)
		return 0;
	if (o == NULL)
		o = ingest__obj_add(in, r, ns, name,
				    ingest__meta_str(obj, "uid"));
	if (!configmap_table(in, o, obj, &t))
		return 0;
	o->note = 0;
	rc = ingest__set_classes(in, &t, NULL);
	class_table_release(&t);
	return rc;
}

void ingest__configmap_delete(ingest_t *in, enum resource r, struct obj *o)
{
	ingest__obj_del(in, r, o);
}
