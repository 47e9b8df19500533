/*
 * Holders (DESIGN 2.3): VMInstance, KubernetesNodes, Pod and ResourceClaim
 * objects mapped with holder_map_object and diffed against the units the
 * ledger holds for them.
 *
 * Order matters to the ledger, which checks every event against its state:
 * a new uid releases everything of the old one first; allocations that move
 * to another node are freed on the old node before they are allocated on
 * the new one; within one change decreases come before increases, and a
 * tenant node is created (with its missing ancestors) before the first
 * increase in it and removed only after the last holder in it let go.
 *
 * Coverage (a claim drawing on a VMInstance's reservation) is re-evaluated
 * whenever the claim or a VMInstance that could cover it changes. An index
 * maps "ns/claim name" to the VMInstances whose class entries would form
 * that name, so that neither side scans its namespace.
 */
#include "ingest/ingest_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UID_MAX 128

static void emit_units(ingest_t *in, struct obj *o, enum event_type type,
		       const char *cls, int64_t before, int64_t after)
{
	bool alloc = type == EV_ALLOC || type == EV_FREE;

	ingest__emit(in, &(struct event){.type = type,
					 .ns = o->ns,
					 .cls = cls,
					 .kind = o->kind,
					 .name = o->name,
					 .uid = o->uid,
					 .node = alloc ? o->node : NULL,
					 .before = before,
					 .after = after});
}

void ingest__holder_count(ingest_t *in, struct obj *o)
{
	bool now = o->n_units > 0;
	struct tnode *t;

	if (now == o->holding)
		return;
	o->holding = now;
	if (!ns_is_tenant(o->ns))
		return;
	t = ingest__tnode_get(in, o->ns, true);
	if (now)
		t->n_holding++;
	else
		t->n_holding--;
}

static const struct ucls *find_want(const struct ucls *want, size_t n,
				    const char *cls)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(want[i].cls, cls) == 0)
			return &want[i];
	return NULL;
}

/* Everything o holds goes to 0 (its uid or its node is about to change). */
static void release_all(ingest_t *in, struct obj *o, bool reserved)
{
	for (size_t i = 0; i < o->n_units; i++) {
		struct ucls *u = &o->units[i];

		if (u->allocated > 0)
			emit_units(in, o, EV_FREE, u->cls, u->allocated, 0);
		if (reserved && u->reserved > 0)
			emit_units(in, o, EV_RELEASE, u->cls, u->reserved, 0);
		if (reserved)
			u->reserved = 0;
		u->allocated = 0;
	}
}

static void decrease(ingest_t *in, struct obj *o, const struct ucls *want,
		     size_t n)
{
	for (size_t i = 0; i < o->n_units; i++) {
		struct ucls *u = &o->units[i];
		const struct ucls *w = find_want(want, n, u->cls);
		int64_t r = w ? w->reserved : 0, a = w ? w->allocated : 0;

		if (a < u->allocated) {
			emit_units(in, o, EV_FREE, u->cls, u->allocated, a);
			u->allocated = a;
		}
		if (r < u->reserved) {
			emit_units(in, o, EV_RELEASE, u->cls, u->reserved, r);
			u->reserved = r;
		}
	}
}

static bool grows(struct obj *o, const struct ucls *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ucls *u = ingest__obj_units(o, want[i].cls);

		if (want[i].reserved > u->reserved ||
		    want[i].allocated > u->allocated)
			return true;
	}
	return false;
}

static void increase(ingest_t *in, struct obj *o, const struct ucls *want,
		     size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct ucls *u = ingest__obj_units(o, want[i].cls);

		if (want[i].reserved > u->reserved) {
			emit_units(in, o, EV_RESERVE, u->cls, u->reserved,
				   want[i].reserved);
			u->reserved = want[i].reserved;
		}
		if (want[i].allocated > u->allocated) {
			emit_units(in, o, EV_ALLOC, u->cls, u->allocated,
				   want[i].allocated);
			u->allocated = want[i].allocated;
		}
	}
}

static bool same_units(const struct obj *o, const struct ucls *want, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (want[i].reserved == 0 && want[i].allocated == 0)
			continue;
		if (k >= o->n_units || strcmp(o->units[k].cls, want[i].cls) ||
		    o->units[k].reserved != want[i].reserved ||
		    o->units[k].allocated != want[i].allocated)
			return false;
		k++;
	}
	return k == o->n_units;
}

bool ingest__holder_apply(ingest_t *in, struct obj *o, const char *uid,
			  const struct ucls *want, size_t n, const char *node)
{
	bool moved;

	if (strcmp(o->uid, uid) == 0 && strcmp(o->node, node) == 0 &&
	    same_units(o, want, n))
		return false;
	/* A recreated object is another holder for the ledger. */
	if (o->n_units > 0 && strcmp(o->uid, uid) != 0)
		release_all(in, o, true);
	ingest__obj_set_uid(o, uid);
	moved = strcmp(o->node, node) != 0;
	if (moved) {
		release_all(in, o, false);
		free(o->node);
		o->node = lg_xstrdup(node);
	}
	decrease(in, o, want, n);
	ingest__obj_trim(o);
	if (grows(o, want, n) && ns_is_tenant(o->ns))
		ingest__tnode_ensure(in, o->ns);
	increase(in, o, want, n);
	ingest__obj_trim(o);
	ingest__holder_count(in, o);
	if (!o->holding && ns_is_tenant(o->ns))
		ingest__tnode_check(in, o->ns);
	return true;
}

/* ---------------------------------------------------------------------- */
/* What mapping again needs, per kind. */

static void set_meta(json_t *d, const json_t *obj)
{
	json_t *md = json_object();
	static const char *const keys[] = {"namespace", "name", "uid"};

	json_object_set_new(d, "apiVersion", ingest__jcopy(obj, "apiVersion"));
	json_object_set_new(d, "kind", ingest__jcopy(obj, "kind"));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (ingest__meta_str(obj, keys[i]) != NULL)
			json_object_set_new(
				md, keys[i],
				json_string(ingest__meta_str(obj, keys[i])));
	json_object_set_new(d, "metadata", md);
}

static void set_copy(json_t *d, const json_t *from, const char *key)
{
	if (json_object_get(from, key) != NULL)
		json_object_set_new(d, key, ingest__jcopy(from, key));
}

/* A pod's containers with only what the GPU arithmetic reads. */
static json_t *containers_extract(const json_t *list)
{
	json_t *out = json_array();

	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *c = json_array_get(list, i);
		json_t *e = json_is_object(c) ? json_object() : json_null();

		if (json_is_object(c)) {
			set_copy(e, c, "name");
			set_copy(e, c, "resources");
			set_copy(e, c, "restartPolicy");
		}
		json_array_append_new(out, e);
	}
	return out;
}

static json_t *pod_extract(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *phase = json_string_value(
		json_object_get(json_object_get(pod, "status"), "phase"));
	json_t *d = json_object(), *s = json_object();
	static const char *const lists[] = {"containers", "initContainers"};

	set_meta(d, pod);
	set_copy(s, spec, "nodeName");
	set_copy(s, spec, "overhead");
	set_copy(s, spec, "resources");
	for (size_t i = 0; i < 2; i++)
		if (json_is_array(json_object_get(spec, lists[i])))
			json_object_set_new(s, lists[i],
					    containers_extract(json_object_get(
						    spec, lists[i])));
		else
			set_copy(s, spec, lists[i]);
	json_object_set_new(d, "spec", s);
	if (phase != NULL)
		json_object_set_new(d, "status",
				    json_pack("{ss}", "phase", phase));
	return d;
}

static json_t *holder_extract(enum resource r, const json_t *obj)
{
	json_t *d;

	if (r == RES_POD)
		return pod_extract(obj);
	d = json_object();
	set_meta(d, obj);
	set_copy(d, obj, "spec");
	if (r == RES_RESOURCECLAIM) {
		const json_t *st = json_object_get(obj, "status");

		if (json_object_get(st, "allocation") != NULL) {
			json_t *s = json_object();

			set_copy(s, st, "allocation");
			json_object_set_new(d, "status", s);
		}
	}
	return d;
}

/* ---------------------------------------------------------------------- */
/* Coverage */

void ingest__cover_free(struct cover *c)
{
	if (c == NULL)
		return;
	free(c->key);
	free(c->vmis);
	free(c);
}

static char *cover_key(const char *ns, const char *claim)
{
	size_t a = strlen(ns), b = strlen(claim);
	char *k = lg_xmalloc(a + b + 2);

	memcpy(k, ns, a);
	k[a] = '/';
	memcpy(k + a + 1, claim, b + 1);
	return k;
}

static void cover_link(ingest_t *in, struct obj *vmi, const char *claim,
		       bool add)
{
	char *k = cover_key(vmi->ns, claim);
	struct cover *c = ingest__smap_get(&in->covers, k);
	size_t i = 0;

	if (c == NULL && add) {
		c = lg_xcalloc(1, sizeof(*c));
		c->key = k;
		k = NULL;
		ingest__smap_put(&in->covers, c);
	}
	free(k);
	if (c == NULL)
		return;
	while (i < c->n && c->vmis[i] != vmi)
		i++;
	if (add && i == c->n) {
		c->vmis = lg_xrealloc(c->vmis, (c->n + 1) * sizeof(*c->vmis));
		c->vmis[c->n++] = vmi;
	} else if (!add && i < c->n) {
		c->vmis[i] = c->vmis[--c->n];
	}
	if (c->n == 0) {
		ingest__smap_del(&in->covers, c);
		ingest__cover_free(c);
	}
}

void ingest__covers_restore(ingest_t *in, struct obj *vmi)
{
	for (size_t i = 0; i < vmi->n_covers; i++)
		cover_link(in, vmi, vmi->covers[i], true);
}

/* The claim names a VMInstance's class entries would cover. */
static size_t vmi_covers(const struct holder_map *hm,
			 char (*names)[DNS1123_LABEL_MAX + 1])
{
	char vname[DNS1123_LABEL_MAX + 1], dev[16];
	size_t n = 0;

	if (!hm->valid)
		return 0;
	vmi_name(hm->name, vname);
	for (size_t i = 0; i < hm->n_entries && i < HOLDER_MAX_ENTRIES; i++) {
		if (hm->entry_class[i] < 0)
			continue;
		snprintf(dev, sizeof(dev), "gpu%zu", i + 1);
		if (claim_name(vname, dev, names[n]) == 0)
			n++;
	}
	return n;
}

/* Maps the claims named in names[0..n) again (their coverage changed). */
static int recheck_claims(ingest_t *in, const char *ns,
			  char (*names)[DNS1123_LABEL_MAX + 1], size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		struct obj *c =
			ingest__obj_get(in, RES_RESOURCECLAIM, ns, names[i]);
		json_t *doc = c ? json_incref(ingest__obj_doc(c)) : NULL;

		if (c != NULL)
			ingest__obj_touch(in, RES_RESOURCECLAIM, c);
		if (doc != NULL)
			rc = ingest__holder_upsert(in, RES_RESOURCECLAIM, doc,
						   c);
		json_decref(doc);
	}
	return rc;
}

/* Replaces vmi's cover names with names[0..n) and re-evaluates every claim
 * named before or now. */
static int covers_set(ingest_t *in, struct obj *vmi,
		      char (*names)[DNS1123_LABEL_MAX + 1], size_t n)
{
	size_t old_n = vmi->n_covers;
	char(*old)[DNS1123_LABEL_MAX + 1] = vmi->covers;
	char ns[DNS1123_SUBDOMAIN_MAX + 1];
	int rc;

	for (size_t i = 0; i < old_n; i++)
		cover_link(in, vmi, old[i], false);
	for (size_t i = 0; i < n; i++)
		cover_link(in, vmi, names[i], true);
	vmi->covers = NULL;
	vmi->n_covers = n;
	if (n > 0) {
		vmi->covers = lg_xmalloc(n * sizeof(*vmi->covers));
		memcpy(vmi->covers, names, n * sizeof(*vmi->covers));
	}
	snprintf(ns, sizeof(ns), "%s", vmi->ns);
	rc = recheck_claims(in, ns, old, old_n);
	if (rc == 0)
		rc = recheck_claims(in, ns, names, n);
	free(old);
	return rc;
}

static bool claim_covered(ingest_t *in, const struct holder_map *claim)
{
	struct holder_map *vhm;
	struct cover *c;
	char *k;
	bool yes = false;

	if (!claim->valid || claim->n != 1)
		return false;
	k = cover_key(claim->ns, claim->name);
	c = ingest__smap_get(&in->covers, k);
	free(k);
	if (c == NULL)
		return false;
	vhm = lg_xmalloc(sizeof(*vhm));
	for (size_t i = 0; i < c->n && !yes; i++)
		if (ingest__obj_doc(c->vmis[i]) != NULL &&
		    holder_map_object(c->vmis[i]->doc, &in->table, vhm, NULL) ==
			    0)
			yes = holder_claim_covered(claim, vhm);
	free(vhm);
	return yes;
}

/* ---------------------------------------------------------------------- */
/* Dormant pods (DESIGN 2.3 "Order independence")
 *
 * A pod that holds nothing under the table in force may hold units under a
 * later one, and a class table change must then map it like every other
 * live object, whether it arrived before or after the change and whether
 * the stream fast path (ingest/stream.c) or the full parse read it. Of the
 * two ways to get there, re-reading the live objects is not open to a
 * recorded stream (the lines are gone), so the engine remembers, per pod
 * that holds nothing, only what a table change could need: it keeps such a
 * pod in the cache with its small extract when it names an extended
 * resource (a name with a '/', which is every name a device plugin can
 * advertise) and is not terminal. Most pods name only cpu, memory and the
 * like and are still forgotten, so the fast path stays fast; the few that
 * name some other device cost one cached extract each. A table that names
 * a resource without a '/' (a native resource such as cpu, which the API
 * server never lets a device plugin advertise) does not find pods read
 * before it that held nothing. */

static bool names_extended(const json_t *res)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)res, k, v)
		if (strchr(k, '/') != NULL)
			return true;
	return false;
}

static bool container_extended(const json_t *c)
{
	const json_t *res = json_object_get(c, "resources");

	return names_extended(json_object_get(res, "requests")) ||
	       names_extended(json_object_get(res, "limits"));
}

bool ingest__pod_dormant(const json_t *pod)
{
	const json_t *spec = json_object_get(pod, "spec");
	const char *phase = json_string_value(
		json_object_get(json_object_get(pod, "status"), "phase"));
	static const char *const lists[] = {"containers", "initContainers"};

	if (phase != NULL &&
	    (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
		return false;
	if (names_extended(json_object_get(spec, "overhead")))
		return true;
	for (size_t i = 0; i < 2; i++) {
		const json_t *l = json_object_get(spec, lists[i]);

		for (size_t j = 0; j < json_array_size(l); j++)
			if (container_extended(json_array_get(l, j)))
				return true;
	}
	return false;
}

/* ---------------------------------------------------------------------- */
/* Upsert and delete */

/* The units the ledger should hold for hm, by class name. */
static size_t want_units(ingest_t *in, enum resource r,
			 const struct holder_map *hm, struct ucls *want)
{
	bool covered = r == RES_RESOURCECLAIM && claim_covered(in, hm);

	for (size_t i = 0; i < hm->n; i++) {
		int64_t u = hm->units[i].units;

		snprintf(want[i].cls, sizeof(want[i].cls), "%s",
			 in->table.classes[hm->units[i].cls].name);
		want[i].reserved = covered ? 0 : u;
		want[i].allocated = 0;
		if (r == RES_POD || (r == RES_RESOURCECLAIM && hm->allocated))
			want[i].allocated = u;
	}
	return hm->n;
}

/* Identity the ledger can record; else a message into e. */
static bool identity_ok(const struct holder_map *hm, struct lg_error *e)
{
	if (!dns1123_label(hm->ns, strlen(hm->ns)))
		lg_error_set(e, LG_EINVAL, "namespace is not a DNS-1123 label");
	else if (!dns1123_subdomain(hm->name, strlen(hm->name)))
		lg_error_set(e, LG_EINVAL, "name is not a DNS-1123 subdomain");
	else if (strlen(hm->uid) > UID_MAX)
		lg_error_set(e, LG_EINVAL, "uid longer than %d", UID_MAX);
	else
		return true;
	return false;
}

static void note_holder(ingest_t *in, enum resource r, struct obj *o,
			const struct holder_map *hm, const struct lg_error *e)
{
	const char *kind = ingest__resource_info(r)->kind;

	if (!hm->valid && hm->too_large)
		ingest__emit_note(in, o, "UnitsTooLarge", o->kind, o->ns,
				  o->name, "%s %s/%s: %s; it holds 0", kind,
				  o->ns, o->name, e->msg);
	else if (!hm->valid)
		ingest__emit_note(in, o, "InvalidObject", o->kind, o->ns,
				  o->name, "%s %s/%s: %s", kind, o->ns, o->name,
				  e->msg);
	else if (hm->unknown_class)
		ingest__emit_note(
			in, o, "UnknownClass", o->kind, o->ns, o->name,
			"%s %s/%s: an entry names a class not in the table",
			kind, o->ns, o->name);
	else
		o->note = 0;
}

int ingest__holder_upsert(ingest_t *in, enum resource r, const json_t *obj,
			  struct obj *o)
{
	struct holder_map *hm = lg_xmalloc(sizeof(*hm));
	struct ucls want[HOLDER_MAX_CLASSES];
	struct lg_error e = {0};
	size_t n = 0;
	bool changed, dormant;
	int rc = 0;

	holder_map_object(obj, &in->table, hm, &e);
	if (hm->valid && !identity_ok(hm, &e))
		hm->valid = false, hm->n = 0, hm->n_entries = 0;
	if (hm->valid)
		n = want_units(in, r, hm, want);
	/* Most pods hold nothing and never enter the cache; an invalid one
	 * does, so that its NOTE is not repeated, and so does a dormant one
	 * (above). */
	dormant =
		r == RES_POD && hm->valid && n == 0 && ingest__pod_dormant(obj);
	if (o == NULL && r == RES_POD && hm->valid && n == 0 && !dormant)
		goto out;
	if (o == NULL)
		o = ingest__obj_add(in, r, ingest__meta_str(obj, "namespace"),
				    ingest__meta_str(obj, "name"), hm->uid);
	note_holder(in, r, o, hm, &e);
	changed = ingest__holder_apply(
		in, o, hm->valid ? hm->uid : o->uid, want, n,
		hm->valid && (r == RES_POD || hm->allocated) ? hm->node : "");
	if (r == RES_POD && hm->valid && o->n_units == 0 && !dormant) {
		ingest__obj_del(in, r, o);
		goto out;
	}
	/* A pod's resources never change, so its extract is kept until its
	 * units or node do; other holders are few and rarely change. A
	 * dormant pod's units stay 0 while its node and phase move, so its
	 * extract always follows. */
	if (obj != o->doc &&
	    (r != RES_POD || !ingest__obj_has_doc(o) || changed || dormant))
		ingest__obj_set_doc(o, holder_extract(r, obj));
	if (r == RES_VMINSTANCE) {
		char(*names)[DNS1123_LABEL_MAX + 1] =
			lg_xmalloc(HOLDER_MAX_ENTRIES * sizeof(*names));
		size_t k = vmi_covers(hm, names);

		rc = covers_set(in, o, names, k);
		free(names);
	}
out:
	free(hm);
	return rc;
}

void ingest__holder_delete(ingest_t *in, enum resource r, struct obj *o)
{
	ingest__holder_apply(in, o, o->uid, NULL, 0, "");
	if (r == RES_VMINSTANCE) {
		ingest__obj_set_doc(o, NULL);
		covers_set(in, o, NULL, 0);
	}
	ingest__obj_del(in, r, o);
}
