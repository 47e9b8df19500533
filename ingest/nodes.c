/*
 * Nodes (DESIGN 2.4) and the class table (DESIGN 2, Appendix A "Class
 * table").
 *
 * A NODE event is emitted for a class the node has capacity of, before or
 * after the change, when its capacity or serving changes (Appendix A
 * "Nodes"); the cache keeps exactly what the ledger holds per node and
 * class, so serving that flips while the capacity stays 0 is not an event,
 * and is one as soon as capacity appears.
 *
 * The class table comes from --classes at start and from the
 * cozy-system/gpu-classes ConfigMap (its handler is in engine.c, since a new
 * table dispatches every object again); an invalid or deleted ConfigMap
 * leaves the table in force. Here: the table's copy and its raw names as
 * the fast path looks for them.
 */
#include "ingest/ingest_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* What mapping a node again needs. */
static json_t *node_extract(const json_t *obj)
{
	json_t *d = json_object(), *st = json_object();
	const json_t *status = json_object_get(obj, "status");

	json_object_set_new(
		d, "metadata",
		json_pack("{ss}", "name", ingest__meta_str(obj, "name")));
	if (json_object_get(obj, "spec") != NULL)
		json_object_set_new(d, "spec", ingest__jcopy(obj, "spec"));
	if (json_object_get(status, "allocatable") != NULL)
		json_object_set_new(st, "allocatable",
				    ingest__jcopy(status, "allocatable"));
	if (json_object_get(status, "conditions") != NULL)
		json_object_set_new(st, "conditions",
				    ingest__jcopy(status, "conditions"));
	json_object_set_new(d, "status", st);
	return d;
}

_Static_assert(offsetof(struct ncap, cls) == 0 &&
		       sizeof(((struct ncap *)0)->cls) == DNS1123_LABEL_MAX + 1,
	       "ingest__cls_slot: an ncap begins with its class name");

static struct ncap *cap_get(struct obj *o, const char *cls)
{
	void *a = o->caps;
	size_t i = ingest__cls_slot(&a, &o->n_caps, sizeof(*o->caps), cls);

	o->caps = a;
	return &o->caps[i];
}

static void set_cap(ingest_t *in, struct obj *o, const char *cls,
		    int64_t capacity, bool serves)
{
	struct ncap *c = cap_get(o, cls);

	/* Serving of a class the node has no capacity of is never an event
	 * (Appendix A "Nodes"), so the ledger cannot follow it: it records
	 * such a class as not served, whatever order the node's changes came
	 * in (DESIGN 2.3 "Order independence"; a capacity-0 entry shows up in
	 * replay when units stay bound to the node). */
	if (capacity == 0)
		serves = false;
	if (c->capacity == 0 && capacity == 0)
		return;
	if (c->capacity == capacity && c->serves == serves)
		return;
	ingest__emit(in, &(struct event){.type = EV_NODE,
					 .node = o->name,
					 .cls = cls,
					 .value = capacity,
					 .present = serves});
	c->capacity = capacity;
	c->serves = serves;
}

static const struct node_class *
nm_find(const ingest_t *in, const struct node_map *nm, const char *cls)
{
	for (size_t i = 0; i < nm->n; i++)
		if (strcmp(in->table.classes[nm->classes[i].cls].name, cls) ==
		    0)
			return &nm->classes[i];
	return NULL;
}

/* The NODE event of the node's existence, when the ledger's differs. */
static void set_exists(ingest_t *in, struct obj *o, bool exists)
{
	if (o->exists == exists)
		return;
	ingest__emit(in, &(struct event){.type = EV_NODE,
					 .node = o->name,
					 .cls = NODE_EXISTS_CLASS,
					 .present = exists});
	o->exists = exists;
}

/* The node's classes become nm (NULL: the node is gone). A node appears
 * before its capacities and goes after them. */
static void diff_caps(ingest_t *in, struct obj *o, const struct node_map *nm)
{
	size_t k = 0;

	if (nm != NULL)
		set_exists(in, o, true);
	/* Classes the ledger has for the node but nm lacks go to 0. */
	for (size_t i = 0; i < o->n_caps; i++)
		if (nm == NULL || nm_find(in, nm, o->caps[i].cls) == NULL)
			set_cap(in, o, o->caps[i].cls, 0, false);
	for (size_t i = 0; nm != NULL && i < nm->n; i++)
		set_cap(in, o, in->table.classes[nm->classes[i].cls].name,
			nm->classes[i].capacity, nm->classes[i].serves);
	/* Entries equal to "never seen" need no memory. */
	for (size_t i = 0; i < o->n_caps; i++)
		if (o->caps[i].capacity != 0 || o->caps[i].serves)
			o->caps[k++] = o->caps[i];
	o->n_caps = k;
	if (nm == NULL)
		set_exists(in, o, false);
}

int ingest__node_upsert(ingest_t *in, enum resource r, const json_t *obj,
			struct obj *o)
{
	struct node_map nm;
	struct lg_error e = {0};
	const char *name = ingest__meta_str(obj, "name"),
		   *uid = ingest__meta_str(obj, "uid");
	int rc = node_map_object(obj, &in->table, &nm, &e);

	if (rc == 0 && !dns1123_subdomain(name, strlen(name)))
		rc = lg_error_set(&e, LG_EINVAL,
				  "name is not a DNS-1123 subdomain");
	if (o == NULL)
		o = ingest__obj_add(in, r, "", name, uid);
	ingest__obj_set_uid(o, uid ? uid : "");
	if (rc != 0) {
		ingest__emit_note(in, o, "InvalidObject", HK_NONE, NULL, name,
				  "Node %s: %s", name, e.msg);
		return 0;
	}
	if (obj != o->doc)
		ingest__obj_set_doc(o, node_extract(obj));
	diff_caps(in, o, &nm);
	if (e.code != 0)
		ingest__emit_note(in, o, "InvalidObject", HK_NONE, NULL, name,
				  "%s", e.msg);
	else
		o->note = 0;
	return 0;
}

void ingest__node_delete(ingest_t *in, enum resource r, struct obj *o)
{
	diff_caps(in, o, NULL);
	ingest__obj_del(in, r, o);
}

/* ---------------------------------------------------------------------- */
/* The class table */

void ingest__table_copy(struct class_table *dst, const struct class_table *src)
{
	class_table_init(dst);
	if (src->n == 0)
		return;
	dst->classes = lg_xcalloc(src->n, sizeof(*dst->classes));
	for (size_t i = 0; i < src->n; i++)
		gpu_class_copy(&dst->classes[i], &src->classes[i]);
	dst->n = src->n;
}

void ingest__needles_free(ingest_t *in)
{
	for (size_t i = 0; i < in->n_needles; i++)
		free(in->needles[i]);
	free(in->needles);
	free(in->needle_len);
	in->needles = NULL;
	in->needle_len = NULL;
	in->n_needles = 0;
}

/* The raw names as they appear in a line: a JSON string. A name with a
 * character JSON would escape never matches literally; such a line then
 * takes the full path only if something else sends it there, which is
 * fine: a raw name with '"' or '\\' cannot be a Kubernetes resource name. */
void ingest__needles_rebuild(ingest_t *in)
{
	size_t n = 0, k = 0;

	ingest__needles_free(in);
	for (size_t i = 0; i < in->table.n; i++)
		n += in->table.classes[i].n_resource_names;
	if (n == 0)
		return;
	in->needles = lg_xcalloc(n, sizeof(*in->needles));
	in->needle_len = lg_xcalloc(n, sizeof(*in->needle_len));
	for (size_t i = 0; i < in->table.n; i++) {
		const struct gpu_class *c = &in->table.classes[i];

		for (size_t j = 0; j < c->n_resource_names; j++) {
			size_t len = strlen(c->resource_names[j]);
			char *s = lg_xmalloc(len + 3);

			s[0] = '"';
			memcpy(s + 1, c->resource_names[j], len);
			s[len + 1] = '"';
			s[len + 2] = '\0';
			in->needles[k] = s;
			in->needle_len[k++] = len + 2;
		}
	}
	in->n_needles = k;
}
