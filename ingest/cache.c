/*
 * The engine's object cache and its output (DESIGN 2, 4.1): what every
 * handler (holders.c, nodes.c, tree.c, objtab.c) builds on, so that the
 * engine (engine.c) only dispatches and the files form a DAG:
 * engine.c -> holders.c, nodes.c, tree.c, objtab.c -> cache.c.
 *
 * - the watched resources (ingest__resource_info, ingest__resource_of);
 * - cached objects by resource and "ns/name" (obj_*), and the set of those
 *   changed since the last flush (ingest__obj_touch), which the object table
 *   persists (objtab.c);
 * - the queue of pending events (emit, ingest__emit_note), whose strings live
 * in the engine's arena until the flush.
 */
#include "ingest/ingest_int.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API_COZY "apps.cozystack.io/v1alpha1"

static const struct ingest__resource_info resources[RES_MAX] = {
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

static const enum holder_kind res_kinds[RES_MAX] = {
	[RES_VMINSTANCE] = HK_VMINSTANCE,
	[RES_KUBERNETESNODES] = HK_KUBERNETESNODES,
	[RES_POD] = HK_POD,
	[RES_RESOURCECLAIM] = HK_RESOURCECLAIM,
};

const struct ingest__resource_info *ingest__resource_info(enum resource r)
{
	if ((unsigned)r >= RES_MAX)
		return NULL;
	return &resources[r];
}

enum resource ingest__resource_of(const char *api_version, const char *kind)
{
	if (api_version == NULL || kind == NULL)
		return RES_MAX;
	for (int r = 0; r < RES_MAX; r++)
		if (strcmp(resources[r].api_version, api_version) == 0 &&
		    strcmp(resources[r].kind, kind) == 0)
			return (enum resource)r;
	return RES_MAX;
}

/* ---------------------------------------------------------------------- */
/* Objects */

static const char *obj_key(const void *v)
{
	return ((const struct obj *)v)->key;
}

void ingest__cache_init(ingest_t *in)
{
	for (int r = 0; r < RES_MAX; r++)
		ingest__smap_init(&in->objs[r], obj_key);
}

void ingest__cache_release(ingest_t *in)
{
	for (int r = 0; r < RES_MAX; r++) {
		struct smap *m = &in->objs[r];

		for (size_t i = 0; i < m->cap; i++)
			if (m->hashes[i] != 0)
				ingest__obj_free(m->vals[i]);
		ingest__smap_release(m);
	}
}

const char *ingest__dirty_key(const void *v)
{
	return v;
}

/* The dirty-set key of an object: 'a' + resource, then its cache key. */
char *ingest__obj_dirty_key(enum resource r, const char *okey)
{
	size_t n = strlen(okey);
	char *k = lg_xmalloc(n + 2);

	k[0] = (char)('a' + r);
	memcpy(k + 1, okey, n + 1);
	return k;
}

void ingest__obj_touch(ingest_t *in, enum resource r, const struct obj *o)
{
	char *k = ingest__obj_dirty_key(r, o->key);

	if (ingest__smap_get(&in->dirty, k) != NULL)
		free(k);
	else
		ingest__smap_put(&in->dirty, k);
}

/* o's key, ns and name in one block (they never change): key first, so
 * that freeing o->key frees all three. */
void ingest__obj_set_names(struct obj *o, const char *ns, const char *name)
{
	ingest__obj_set_names_n(o, ns, strlen(ns), name, strlen(name));
}

void ingest__obj_set_names_n(struct obj *o, const char *ns, size_t a,
			     const char *name, size_t b)
{
	size_t k = a > 0 ? a + 1 + b : b;
	char *p = lg_xmalloc(k + 1 + a + 1 + b + 1);

	if (a > 0) {
		memcpy(p, ns, a);
		p[a] = '/';
	}
	memcpy(p + (a > 0 ? a + 1 : 0), name, b);
	p[k] = '\0';
	memcpy(p + k + 1, ns, a);
	p[k + 1 + a] = '\0';
	memcpy(p + k + 1 + a + 1, name, b);
	p[k + 1 + a + 1 + b] = '\0';
	o->key = p;
	o->ns = p + k + 1;
	o->name = p + k + 1 + a + 1;
}

static char *make_key(const char *ns, const char *name)
{
	size_t a = strlen(ns), b = strlen(name);
	char *k = lg_xmalloc(a + b + 2);

	if (a > 0) {
		memcpy(k, ns, a);
		k[a++] = '/';
	}
	memcpy(k + a, name, b + 1);
	return k;
}

void ingest__obj_free(struct obj *o)
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

struct obj *ingest__obj_get(ingest_t *in, enum resource r, const char *ns,
			    const char *name)
{
	char buf[512];
	size_t a = strlen(ns), b = strlen(name);

	/* Names are short; only a hostile object needs the heap. */
	if (a + b + 2 > sizeof(buf)) {
		char *k = make_key(ns, name);
		struct obj *o = ingest__smap_get(&in->objs[r], k);

		free(k);
		return o;
	}
	memcpy(buf, ns, a);
	if (a > 0)
		buf[a++] = '/';
	memcpy(buf + a, name, b + 1);
	return ingest__smap_get(&in->objs[r], buf);
}

struct obj *ingest__obj_add(ingest_t *in, enum resource r, const char *ns,
			    const char *name, const char *uid)
{
	struct obj *o = lg_xcalloc(1, sizeof(*o));

	ingest__obj_set_names(o, ns, name);
	o->uid = lg_xstrdup(uid ? uid : "");
	o->node = lg_xstrdup("");
	o->kind = res_kinds[r];
	o->seen = true;
	ingest__smap_put(&in->objs[r], o);
	ingest__obj_touch(in, r, o);
	return o;
}

void ingest__obj_del(ingest_t *in, enum resource r, struct obj *o)
{
	ingest__obj_touch(in, r, o);
	ingest__smap_del(&in->objs[r], o);
	ingest__obj_free(o);
}

void ingest__obj_set_uid(struct obj *o, const char *uid)
{
	if (strcmp(o->uid, uid) == 0)
		return;
	free(o->uid);
	o->uid = lg_xstrdup(uid);
}

void ingest__obj_set_doc(struct obj *o, json_t *doc)
{
	json_decref(o->doc);
	free(o->doc_text);
	o->doc_text = NULL;
	o->doc = doc;
}

json_t *ingest__obj_doc(struct obj *o)
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

bool ingest__obj_has_doc(const struct obj *o)
{
	return o->doc != NULL || o->doc_text != NULL;
}

json_t *ingest__jcopy(const json_t *o, const char *key)
{
	return json_deep_copy(json_object_get(o, key));
}

const char *ingest__meta_str(const json_t *obj, const char *key)
{
	return json_string_value(
		json_object_get(json_object_get(obj, "metadata"), key));
}

/* ---------------------------------------------------------------------- */
/* Emitting */

static const char *keep(ingest_t *in, const char *s)
{
	return s ? ingest__arena_strdup(&in->arena, s) : NULL;
}

/* NOTEs by code, for the watcher's metrics: the codes are few, fixed and
 * static strings (every ingest__emit_note passes a literal), so a small table
 * of pointers suffices; a code past its end is counted under "other". */
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

void ingest__emit(ingest_t *in, const struct event *ev)
{
	struct event *e;

	/* The engine emits only the event types the model defines; the
	 * ledger validates the rest of each event against the state. */
	LG_ASSERT(ev->type > 0 && ev->type < EV_MAX);
	if (in->n_evs == in->cap_evs) {
		in->cap_evs = in->cap_evs ? 2 * in->cap_evs : 256;
		in->evs = lg_xrealloc(in->evs, in->cap_evs * sizeof(*in->evs));
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

void ingest__emit_note(ingest_t *in, struct obj *o, const char *code,
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
	h = ingest__hash(msg, strlen(msg)) ^ ingest__hash(code, strlen(code));
	if (o != NULL) {
		if (o->note == h)
			return;
		o->note = h;
	}
	sanitize(sns, sizeof(sns), ns);
	sanitize(sname, sizeof(sname), name);
	ingest__emit(in, &(struct event){.type = EV_NOTE,
					 .key = code,
					 .kind = kind,
					 .ns = ns && *ns ? sns : NULL,
					 .name = name && *name ? sname : NULL,
					 .text = msg});
}

void ingest__emit_synced(ingest_t *in, const char *why)
{
	ingest__emit_note(in, NULL, LEDGER_SYNCED_NOTE, HK_NONE, NULL, NULL,
			  "complete list: %s", why);
}

/* ---------------------------------------------------------------------- */
/* Units */

enum holder_kind ingest__res_kind(enum resource r)
{
	return (unsigned)r < RES_MAX ? res_kinds[r] : HK_NONE;
}

enum resource ingest__kind_res(enum holder_kind k)
{
	for (int r = 0; r < RES_MAX; r++)
		if (res_kinds[r] == k && k != HK_NONE)
			return (enum resource)r;
	return RES_MAX;
}

size_t ingest__cls_slot(void **arr, size_t *n, size_t elem, const char *cls)
{
	char *a = *arr;
	size_t i = 0;

	while (i < *n && strcmp(a + i * elem, cls) < 0)
		i++;
	if (i < *n && strcmp(a + i * elem, cls) == 0)
		return i;
	a = lg_xrealloc(a, (*n + 1) * elem);
	memmove(a + (i + 1) * elem, a + i * elem, (*n - i) * elem);
	memset(a + i * elem, 0, elem);
	snprintf(a + i * elem, DNS1123_LABEL_MAX + 1, "%s", cls);
	(*n)++;
	*arr = a;
	return i;
}

_Static_assert(offsetof(struct ucls, cls) == 0 &&
		       sizeof(((struct ucls *)0)->cls) == DNS1123_LABEL_MAX + 1,
	       "ingest__cls_slot: a ucls begins with its class name");

struct ucls *ingest__obj_units(struct obj *o, const char *cls)
{
	void *a = o->units;
	size_t i = ingest__cls_slot(&a, &o->n_units, sizeof(*o->units), cls);

	o->units = a;
	return &o->units[i];
}

void ingest__obj_trim(struct obj *o)
{
	size_t k = 0;

	for (size_t i = 0; i < o->n_units; i++)
		if (o->units[i].reserved != 0 || o->units[i].allocated != 0)
			o->units[k++] = o->units[i];
	o->n_units = k;
}
