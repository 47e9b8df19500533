/*
 * The ingest engine (DESIGN 2, 4.1, 9): watch events in, differences out.
 *
 * Every handler maps an object with model/ and diffs the result against
 * what the cache says the ledger holds for it; emit() queues the events,
 * and ingest_flush() appends them with the positions they came from in one
 * transaction. The cache is changed as events are queued, so a failed flush
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

#define API_COZY "apps.cozystack.io/v1alpha1"

static const struct resource_info resources[RES_MAX] = {
	[RES_NAMESPACE] = {"v1", "Namespace", "/api/v1/namespaces"},
	[RES_TENANT] = {API_COZY, "Tenant", "/apis/" API_COZY "/tenants"},
	[RES_VMINSTANCE] = {API_COZY, "VMInstance",
			    "/apis/" API_COZY "/vminstances"},
	[RES_KUBERNETESNODES] = {API_COZY, "KubernetesNodes",
				 "/apis/" API_COZY "/kubernetesnodeses"},
	[RES_POD] = {"v1", "Pod", "/api/v1/pods"},
	[RES_RESOURCECLAIM] = {"resource.k8s.io/v1", "ResourceClaim",
			       "/apis/resource.k8s.io/v1/resourceclaims"},
	[RES_NODE] = {"v1", "Node", "/api/v1/nodes"},
	[RES_CONFIGMAP] = {"v1", "ConfigMap",
			   "/api/v1/namespaces/cozy-system/configmaps"
			   "?fieldSelector=metadata.name=gpu-classes"},
};

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
	[RES_NAMESPACE] = {ns_upsert, ns_delete},
	[RES_TENANT] = {tenant_upsert, tenant_delete},
	[RES_VMINSTANCE] = {holder_upsert, holder_delete},
	[RES_KUBERNETESNODES] = {holder_upsert, holder_delete},
	[RES_POD] = {holder_upsert, holder_delete},
	[RES_RESOURCECLAIM] = {holder_upsert, holder_delete},
	[RES_NODE] = {node_upsert, node_delete},
	[RES_CONFIGMAP] = {configmap_upsert, configmap_delete},
};

static const enum holder_kind res_kind[RES_MAX] = {
	[RES_VMINSTANCE] = HK_VMINSTANCE,
	[RES_KUBERNETESNODES] = HK_KUBERNETESNODES,
	[RES_POD] = HK_POD,
	[RES_RESOURCECLAIM] = HK_RESOURCECLAIM,
};

const struct resource_info *resource_info(enum resource r)
{
	if ((unsigned)r >= RES_MAX)
		return NULL;
	return &resources[r];
}

enum resource resource_of(const char *api_version, const char *kind)
{
	if (api_version == NULL || kind == NULL)
		return RES_MAX;
	for (int r = 0; r < RES_MAX; r++)
		if (strcmp(resources[r].api_version, api_version) == 0 &&
		    strcmp(resources[r].kind, kind) == 0)
			return (enum resource)r;
	return RES_MAX;
}

const char *ingest_position_key(enum resource r)
{
	if ((unsigned)r > RES_MAX)
		return NULL;
	return position_keys[r];
}

/* ---------------------------------------------------------------------- */
/* Objects */

static const char *obj_key(const void *v)
{
	return ((const struct obj *)v)->key;
}

static const char *tnode_key(const void *v)
{
	return ((const struct tnode *)v)->ns;
}

static const char *cover_key(const void *v)
{
	return ((const struct cover *)v)->key;
}

/* o's key, ns and name in one block (they never change): key first, so
 * that freeing o->key frees all three. */
void obj_set_names(struct obj *o, const char *ns, const char *name)
{
	size_t a = strlen(ns), b = strlen(name);
	size_t k = a > 0 ? a + 1 + b : b;
	char *p = ing_xmalloc(k + 1 + a + 1 + b + 1);

	if (a > 0) {
		memcpy(p, ns, a);
		p[a] = '/';
	}
	memcpy(p + (a > 0 ? a + 1 : 0), name, b + 1);
	memcpy(p + k + 1, ns, a + 1);
	memcpy(p + k + 1 + a + 1, name, b + 1);
	o->key = p;
	o->ns = p + k + 1;
	o->name = p + k + 1 + a + 1;
}

static char *make_key(const char *ns, const char *name)
{
	size_t a = strlen(ns), b = strlen(name);
	char *k = ing_xmalloc(a + b + 2);

	if (a > 0) {
		memcpy(k, ns, a);
		k[a++] = '/';
	}
	memcpy(k + a, name, b + 1);
	return k;
}

void obj_free(struct obj *o)
{
	if (o == NULL)
		return;
	free(o->key); /* and ns and name */
	free(o->uid);
	json_decref(o->doc);
	free(o->doc_text);
	free(o->units);
	free(o->node);
	free(o->covers);
	free(o->caps);
	free(o->governed);
	free(o);
}

struct obj *obj_get(ingest_t *in, enum resource r, const char *ns,
		    const char *name)
{
	char buf[512];
	size_t a = strlen(ns), b = strlen(name);

	/* Names are short; only a hostile object needs the heap. */
	if (a + b + 2 > sizeof(buf)) {
		char *k = make_key(ns, name);
		struct obj *o = smap_get(&in->objs[r], k);

		free(k);
		return o;
	}
	memcpy(buf, ns, a);
	if (a > 0)
		buf[a++] = '/';
	memcpy(buf + a, name, b + 1);
	return smap_get(&in->objs[r], buf);
}

struct obj *obj_add(ingest_t *in, enum resource r, const char *ns,
		    const char *name, const char *uid)
{
	struct obj *o = ing_xcalloc(1, sizeof(*o));

	obj_set_names(o, ns, name);
	o->uid = ing_xstrdup(uid ? uid : "");
	o->node = ing_xstrdup("");
	o->kind = res_kind[r];
	o->seen = true;
	smap_put(&in->objs[r], o);
	obj_touch(in, r, o);
	return o;
}

void obj_del(ingest_t *in, enum resource r, struct obj *o)
{
	obj_touch(in, r, o);
	smap_del(&in->objs[r], o);
	obj_free(o);
}

void obj_set_uid(struct obj *o, const char *uid)
{
	if (strcmp(o->uid, uid) == 0)
		return;
	free(o->uid);
	o->uid = ing_xstrdup(uid);
}

void obj_set_doc(struct obj *o, json_t *doc)
{
	json_decref(o->doc);
	free(o->doc_text);
	o->doc_text = NULL;
	o->doc = doc;
}

json_t *obj_doc(struct obj *o)
{
	if (o->doc_text != NULL) {
		/* Checked to be an object when written; a record damaged
		 * since reads as no extract (not mapped again until seen). */
		json_t *d = json_loads(o->doc_text, 0, NULL);

		free(o->doc_text);
		o->doc_text = NULL;
		o->doc = json_is_object(d) ? d : (json_decref(d), NULL);
	}
	return o->doc;
}

bool obj_has_doc(const struct obj *o)
{
	return o->doc != NULL || o->doc_text != NULL;
}

json_t *jcopy(const json_t *o, const char *key)
{
	return json_deep_copy(json_object_get(o, key));
}

const char *meta_str(const json_t *obj, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(obj, "metadata"), key));
}

/* ---------------------------------------------------------------------- */
/* Emitting */

static const char *keep(ingest_t *in, const char *s)
{
	return s ? arena_strdup(&in->arena, s) : NULL;
}

/* NOTEs by code, for the watcher's metrics: the codes are few, fixed and
 * static strings (every emit_note passes a literal), so a small table of
 * pointers suffices; a code past its end is counted under "other". */
static void count_note(ingest_t *in, const char *code)
{
	struct ingest_note_count *t = in->note_counts;
	size_t i = 0;

	while (i < INGEST_NOTE_CODES - 1 && t[i].code != NULL &&
	       strcmp(t[i].code, code) != 0)
		i++;
	if (t[i].code == NULL)
		t[i].code = i < INGEST_NOTE_CODES - 1 ? code : "other";
	t[i].n++;
}

void emit(ingest_t *in, const struct event *ev)
{
	struct event *e;

	if (in->n_evs == in->cap_evs) {
		in->cap_evs = in->cap_evs ? 2 * in->cap_evs : 256;
		in->evs = ing_xrealloc(in->evs, in->cap_evs * sizeof(*in->evs));
	}
	e = &in->evs[in->n_evs++];
	*e = *ev;
	e->seq = 0;
	e->time_ns = in->time_ns;
	e->ns = keep(in, ev->ns);
	e->parent = keep(in, ev->parent);
	e->key = keep(in, ev->key);
	e->cls = keep(in, ev->cls);
	e->text = keep(in, ev->text);
	e->node = keep(in, ev->node);
	e->name = keep(in, ev->name);
	e->uid = keep(in, ev->uid);
	if (ev->type == EV_NOTE) {
		in->c.notes++;
		count_note(in, ev->key);
	}
}

/* NOTE strings are printed as JSON by `log`: keep them printable ASCII
 * (names from the input may hold anything) and bounded. */
static void sanitize(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	for (; src != NULL && src[i] != '\0' && i + 1 < cap; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[i] = '\0';
}

void emit_note(ingest_t *in, struct obj *o, const char *code,
	       enum holder_kind kind, const char *ns, const char *name,
	       const char *fmt, ...)
{
	char raw[INGEST_NOTE_MAX], msg[INGEST_NOTE_MAX];
	char sns[DNS1123_SUBDOMAIN_MAX + 1], sname[DNS1123_SUBDOMAIN_MAX + 1];
	uint64_t h;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	sanitize(msg, sizeof(msg), raw);
	h = ing_hash(msg, strlen(msg)) ^ ing_hash(code, strlen(code));
	if (o != NULL) {
		if (o->note == h)
			return;
		o->note = h;
	}
	sanitize(sns, sizeof(sns), ns);
	sanitize(sname, sizeof(sname), name);
	emit(in, &(struct event){.type = EV_NOTE,
				 .key = code,
				 .kind = kind,
				 .ns = ns && *ns ? sns : NULL,
				 .name = name && *name ? sname : NULL,
				 .text = msg});
}

/* ---------------------------------------------------------------------- */
/* Units */

enum resource kind_res(enum holder_kind k)
{
	for (int r = 0; r < RES_MAX; r++)
		if (res_kind[r] == k && k != HK_NONE)
			return (enum resource)r;
	return RES_MAX;
}

struct ucls *obj_units(struct obj *o, const char *cls)
{
	size_t i = 0;

	while (i < o->n_units && strcmp(o->units[i].cls, cls) < 0)
		i++;
	if (i < o->n_units && strcmp(o->units[i].cls, cls) == 0)
		return &o->units[i];
	o->units = ing_xrealloc(o->units, (o->n_units + 1) * sizeof(*o->units));
	memmove(o->units + i + 1, o->units + i,
		(o->n_units - i) * sizeof(*o->units));
	memset(&o->units[i], 0, sizeof(o->units[i]));
	snprintf(o->units[i].cls, sizeof(o->units[i].cls), "%s", cls);
	o->n_units++;
	return &o->units[i];
}

void obj_trim(struct obj *o)
{
	size_t k = 0;

	for (size_t i = 0; i < o->n_units; i++)
		if (o->units[i].reserved != 0 || o->units[i].allocated != 0)
			o->units[k++] = o->units[i];
	o->n_units = k;
}

static int load_positions(ingest_t *in, struct lg_error *err)
{
	char *buf = ing_xmalloc(INGEST_POSITION_MAX + 1);
	int rc = 0;

	for (int r = 0; r <= RES_MAX && rc == 0; r++) {
		size_t len = 0;

		rc = ledger_meta_get(in->lg, position_keys[r], buf,
				     INGEST_POSITION_MAX, &len, err);
		if (rc == LG_ENOENT) {
			rc = 0;
			continue;
		}
		if (rc == 0) {
			buf[len] = '\0';
			in->pos_committed[r] = ing_xstrdup(buf);
		}
	}
	free(buf);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Life cycle */

int ingest_new(ingest_t **out, ledger_t *lg, const struct ingest_opts *o,
	       struct lg_error *err)
{
	ingest_t *in = ing_xcalloc(1, sizeof(*in));
	int rc;

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
	for (int r = 0; r < RES_MAX; r++)
		smap_init(&in->objs[r], obj_key);
	smap_init(&in->tnodes, tnode_key);
	smap_init(&in->covers, cover_key);
	arena_init(&in->arena);
	smap_init(&in->dirty, dirty_key);
	rc = load_positions(in, err);
	if (rc == 0)
		rc = objtab_load(in, err);
	if (rc == 0) {
		needles_rebuild(in);
		if (o != NULL && o->classes != NULL)
			rc = ingest_set_classes(in, o->classes, err);
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
	smap_release(m);
}

static void obj_free_v(void *v)
{
	obj_free(v);
}

static void tnode_free_v(void *v)
{
	tnode_free(v);
}

static void cover_free_v(void *v)
{
	cover_free(v);
}

void ingest_free(ingest_t *in)
{
	if (in == NULL)
		return;
	for (int r = 0; r < RES_MAX; r++)
		free_map(&in->objs[r], obj_free_v);
	free_map(&in->tnodes, tnode_free_v);
	free_map(&in->covers, cover_free_v);
	free_map(&in->dirty, free);
	class_table_release(&in->table);
	needles_free(in);
	free(in->evs);
	free(in->proj);
	arena_release(&in->arena);
	for (int r = 0; r <= RES_MAX; r++) {
		free(in->pos_pending[r]);
		free(in->pos_committed[r]);
	}
	free(in);
}

int64_t ingest_time_ns(const ingest_t *in)
{
	return in->time_ns;
}

const struct class_table *ingest_classes(const ingest_t *in)
{
	return &in->table;
}

void ingest_counters(const ingest_t *in, struct ingest_counters *c)
{
	*c = in->c;
}

size_t ingest_note_counts(const ingest_t *in, struct ingest_note_count *out,
			  size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < INGEST_NOTE_CODES && n < cap; i++)
		if (in->note_counts[i].code != NULL)
			out[n++] = in->note_counts[i];
	return n;
}

int ingest_note(ingest_t *in, const char *code, const char *msg,
		struct lg_error *err)
{
	int rc = input_begin(in, err);

	if (rc != 0)
		return rc;
	emit_note(in, NULL, code, HK_NONE, NULL, NULL, "%s", msg);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Positions, flush, tick */

void ingest_set_position(ingest_t *in, enum resource r, const char *value)
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
	in->pos_pending[r] = ing_xstrdup(value);
}

const char *ingest_position(ingest_t *in, enum resource r)
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

/* One transaction: the pending events, the positions they came with and
 * the object table's changed records (DESIGN 4.2). */
int ingest_flush(ingest_t *in, struct lg_error *err)
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
	objtab_collect(in, &b);
	if (in->n_evs == 0 && b.n_meta == 0 && b.n_objs == 0) {
		objtab_release(in, &b, true);
		return 0;
	}
	rc = append_all(in, &b, err);
	objtab_release(in, &b, rc == 0);
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
	arena_reset(&in->arena);
	return 0;
}

int ingest_tick(ingest_t *in, int64_t time_ns, struct lg_error *err)
{
	struct event ev = {.type = EV_TICK};
	int rc = ingest_flush(in, err);

	if (rc != 0)
		return rc;
	if (time_ns > in->time_ns)
		in->time_ns = time_ns;
	if (time_ns <= state_horizon_ns(ledger_state(in->lg)))
		return 0;
	ev.time_ns = time_ns;
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

void advance_time(ingest_t *in, int64_t time_ns)
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
	emit_note(in, NULL, "TimeWentBack", HK_NONE, NULL, NULL,
		  "input time %s is %lld.%09lld s before the ledger's time %s; "
		  "clamped (times never go back): events are dated later "
		  "than they happened until the input catches up",
		  got, (long long)((in->time_ns - time_ns) / 1000000000),
		  (long long)((in->time_ns - time_ns) % 1000000000), have);
}

/* Flushes before taking new input once a batch is full, so that the
 * position set after the previous input is committed with its events. */
int input_begin(ingest_t *in, struct lg_error *err)
{
	if (in->broken)
		return broken(err);
	if (in->n_evs >= in->o.batch_events)
		return ingest_flush(in, err);
	return 0;
}

static bool cluster_scoped(enum resource r)
{
	return r == RES_NAMESPACE || r == RES_NODE;
}

static void on_deleted(ingest_t *in, enum resource r, const json_t *object,
		       struct obj *o)
{
	const char *uid = meta_str(object, "uid");

	/* DELETED of an unknown object does nothing (Appendix A); neither
	 * does that of an older incarnation of a cached name. */
	if (o == NULL || (uid != NULL && *uid != '\0' && *o->uid != '\0' &&
			  strcmp(uid, o->uid) != 0))
		return;
	handlers[r].del(in, r, o);
}

int ingest_event(ingest_t *in, enum watch_type type, const json_t *object,
		 int64_t time_ns, struct lg_error *err)
{
	const char *ns, *name;
	enum resource r;
	struct obj *o;
	int rc = input_begin(in, err);

	if (rc != 0)
		return rc;
	advance_time(in, time_ns);
	in->c.events_in++;
	if (type == WATCH_BOOKMARK)
		return 0;
	if (!json_is_object(object)) {
		emit_note(in, NULL, "MalformedLine", HK_NONE, NULL, NULL,
			  "watch event object is not a JSON object");
		return 0;
	}
	r = resource_of(
		json_string_value(json_object_get(object, "apiVersion")),
		json_string_value(json_object_get(object, "kind")));
	ns = meta_str(object, "namespace");
	name = meta_str(object, "name");
	if (r == RES_MAX) {
		emit_note(in, NULL, "UnknownKind", HK_NONE, ns, name,
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
		emit_note(in, NULL, "InvalidObject", res_kind[r], ns, name,
			  "%s: metadata.name%s missing or not a string",
			  resources[r].kind,
			  cluster_scoped(r) ? " is" : " or namespace is");
		return 0;
	}
	o = obj_get(in, r, ns, name);
	if (o != NULL)
		obj_touch(in, r, o);
	if (type == WATCH_DELETED) {
		on_deleted(in, r, object, o);
		return 0;
	}
	rc = handlers[r].upsert(in, r, object, o);
	if (rc == 0 && in->relisting[r] && (o = obj_get(in, r, ns, name)))
		o->seen = true;
	return rc;
}

int ingest_oversized(ingest_t *in, uint64_t len, struct lg_error *err)
{
	int rc = input_begin(in, err);

	if (rc != 0)
		return rc;
	in->c.lines++;
	emit_note(in, NULL, "Oversized", HK_NONE, NULL, NULL,
		  "input of %llu bytes skipped: more than %zu",
		  (unsigned long long)len, in->o.max_object_bytes);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Relists */

int ingest_relist_begin(ingest_t *in, enum resource r, struct lg_error *err)
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

int ingest_relist_end(ingest_t *in, enum resource r, struct lg_error *err)
{
	size_t n;
	void **os;
	int rc;

	if ((unsigned)r >= RES_MAX)
		return lg_error_set(err, LG_EINVAL, "relist: bad resource");
	if ((rc = input_begin(in, err)) != 0)
		return rc;
	os = smap_sorted(&in->objs[r], &n);
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

	emit(in, &(struct event){.type = EV_CLASS, .cls = name, .text = text});
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
		void **os = smap_sorted(&in->objs[r], &n);

		for (size_t i = 0; i < n && rc == 0; i++) {
			struct obj *o = os[i];
			json_t *doc = json_incref(obj_doc(o));

			obj_touch(in, r, o);
			if (doc != NULL)
				rc = handlers[r].upsert(in, r, doc, o);
			json_decref(doc);
		}
		free(os);
	}
	return rc;
}

int ingest_set_classes(ingest_t *in, const struct class_table *t,
		       struct lg_error *err)
{
	struct class_table copy;

	if (in->broken)
		return broken(err);
	if (t == NULL || t->n > HOLDER_MAX_CLASSES)
		return lg_error_set(err, LG_EINVAL, "bad class table");
	if (!diff_classes(in, t))
		return 0;
	table_copy(&copy, t);
	class_table_release(&in->table);
	in->table = copy;
	needles_rebuild(in);
	return remap_all(in);
}
