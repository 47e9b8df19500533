/*
 * ingest internals shared by the engine's files (engine.c, tree.c,
 * holders.c, nodes.c, stream.c, smap.c). Not part of the public API: the
 * live client (ingest/kube*.c) uses only ingest/ingest.h.
 *
 * The engine's cache mirrors, per watched object, what that object last
 * contributed to the ledger (the ledger's view: units with their uid and
 * node, a node's capacity and serving, a Tenant's budgets), plus what is
 * needed to map it again when the class table changes (a small JSON
 * extract). Diffs are always taken against the ledger's view, so an event
 * is emitted exactly when the ledger would change.
 */
#ifndef GPULEDGER_INGEST_INT_H
#define GPULEDGER_INGEST_INT_H

#include "ingest/ingest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defaults of struct ingest_opts. */
#define INGEST_MAX_OBJECT_DEFAULT (4u << 20)
#define INGEST_BATCH_DEFAULT	  10000
#define INGEST_TICK_DEFAULT	  (60LL * 1000000000LL)
/* The ledger takes at most this many events per append. */
#define INGEST_APPEND_MAX (1u << 20)
/* Longest position value (a resourceVersion or a stream position). */
#define INGEST_POSITION_MAX 4096
/* Longest NOTE message. */
#define INGEST_NOTE_MAX 400

/* ---------------------------------------------------------------------- */
/* A string-keyed hash map of pointers (ingest/smap.c): open addressing with
 * linear probing; the key of a value is read through key(). Values are
 * borrowed: the map never frees them. */

typedef const char *smap_key_fn(const void *v);

struct smap {
	size_t cap, n;	  /* cap: 0 or a power of two */
	uint64_t *hashes; /* 0: empty slot */
	void **vals;
	smap_key_fn *key;
};

void smap_init(struct smap *m, smap_key_fn *key);
void smap_release(struct smap *m);
void *smap_get(const struct smap *m, const char *key);
void *smap_getn(const struct smap *m, const char *key, size_t len);
/* Inserts v, whose key must not be in the map yet. */
void smap_put(struct smap *m, void *v);
void smap_del(struct smap *m, const void *v);
/* The values sorted by key (caller frees the array; NULL when empty). */
void **smap_sorted(const struct smap *m, size_t *n);

/* Strings of the pending events live in an arena reset at every flush. */
struct arena {
	struct ablock *head;
};
void arena_init(struct arena *a);
char *arena_strdup(struct arena *a, const char *s);
void arena_reset(struct arena *a);
void arena_release(struct arena *a);

void *ing_xmalloc(size_t n);
void *ing_xcalloc(size_t n, size_t size);
void *ing_xrealloc(void *p, size_t n);
char *ing_xstrdup(const char *s);
uint64_t ing_hash(const void *p, size_t n);

/* ---------------------------------------------------------------------- */
/* Cached objects. */

/* Units of one class as the ledger holds them for a holder. */
struct ucls {
	char cls[DNS1123_LABEL_MAX + 1];
	int64_t reserved, allocated;
};

/* A node's capacity and serving of one class as the ledger holds them. */
struct ncap {
	char cls[DNS1123_LABEL_MAX + 1];
	int64_t capacity;
	bool serves;
};

/* One watched object. Every string is owned. */
struct obj {
	char *key; /* "ns/name", or "name" for cluster-scoped objects */
	char *ns;  /* "" for cluster-scoped objects */
	char *name;
	char *uid;     /* "" when none */
	json_t *doc;   /* what mapping it again needs; NULL when seeded */
	uint64_t note; /* hash of the last NOTE about it (0: none) */
	bool seen;     /* listed during the relist in progress */
	/* Holders: the ledger's view. */
	enum holder_kind kind;
	size_t n_units;
	struct ucls *units; /* sorted by class name */
	char *node;	    /* where the allocations are ("" none) */
	bool holding;	    /* counted in its tenant node's n_holding */
	/* VMInstance: the claim names its class entries would cover. */
	size_t n_covers;
	char (*covers)[DNS1123_LABEL_MAX + 1];
	/* Node: the ledger's per-class capacity and serving, and whether the
	 * ledger knows the Node exists (a NODE_EXISTS_CLASS event). */
	size_t n_caps;
	struct ncap *caps;
	bool exists;
	/* Tenant: the namespace it governs and contributes to ("" none). */
	char *governed;
};

/* A tenant node: why it exists, and what the ledger holds for it. */
struct tnode {
	char *ns;
	bool exists;	      /* TENANT emitted and not GONE */
	bool ns_present;      /* its Namespace object exists */
	struct obj *governor; /* the Tenant object governing it */
	size_t n_holding;     /* holders with units in it */
	size_t n_children;    /* existing child nodes */
	size_t n_budgets;
	struct budget_entry *budgets; /* keys owned, sorted */
	size_t n_raw;
	char **raw; /* owned, sorted */
};

/* Claims a VMInstance's class entries would cover, by "ns/claimname". */
struct cover {
	char *key;
	size_t n;
	struct obj **vmis;
};

/* ---------------------------------------------------------------------- */
/* The engine. */

struct ingest {
	ledger_t *lg;
	struct ingest_opts o;
	struct class_table table; /* owned copy of the table in force */
	/* The table's raw resource names as JSON strings ("\"name\""), for
	 * the pod fast path. */
	size_t n_needles;
	char **needles;
	size_t *needle_len;
	struct smap objs[RES_MAX];
	struct smap tnodes;
	struct smap covers;
	/* Pending events and their strings. */
	struct event *evs;
	size_t n_evs, cap_evs;
	struct arena arena;
	char *pos_pending[RES_MAX + 1];
	char *pos_committed[RES_MAX + 1];
	bool quiet;
	bool broken; /* a flush failed: the cache is ahead of the ledger */
	int64_t time_ns;
	int64_t time_back_noted; /* time_ns when TimeWentBack was last noted */
	bool relisting[RES_MAX];
	struct ingest_counters c;
	struct ingest_note_count note_counts[INGEST_NOTE_CODES];
	/* The pod projection of the current line (stream.c). */
	char *proj;
	size_t proj_cap;
};

/* engine.c: before any input (flushes a full batch; refuses input after a
 * failed flush), and the event time. */
int input_begin(ingest_t *in, struct lg_error *err);
void advance_time(ingest_t *in, int64_t time_ns);
/* engine.c: emitting (copies every string; nothing in quiet mode). */
void emit(ingest_t *in, const struct event *ev);
void emit_note(ingest_t *in, struct obj *o, const char *code,
	       enum holder_kind kind, const char *ns, const char *name,
	       const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* Objects. */
struct obj *obj_get(ingest_t *in, enum resource r, const char *ns,
		    const char *name);
struct obj *obj_add(ingest_t *in, enum resource r, const char *ns,
		    const char *name, const char *uid);
void obj_del(ingest_t *in, enum resource r, struct obj *o);
void obj_set_uid(struct obj *o, const char *uid);
void obj_set_doc(struct obj *o, json_t *doc); /* takes the reference */
/* The units of class cls of holder o (added as 0 when absent). */
struct ucls *obj_units(struct obj *o, const char *cls);
/* Drops units that are 0 in both measures. */
void obj_trim(struct obj *o);
/* Deep copy of a member (NULL when absent). */
json_t *jcopy(const json_t *o, const char *key);
/* Metadata strings, NULL when absent or not strings. */
const char *meta_str(const json_t *obj, const char *key);

/* Handlers of one resource: upsert maps obj (ADDED, MODIFIED, or a cached
 * doc when the class table changes) against o, the cached object or NULL;
 * it may delete o but no other object. del releases what o contributed and
 * deletes it. */
typedef int upsert_fn(ingest_t *in, enum resource r, const json_t *obj,
		      struct obj *o);
typedef void delete_fn(ingest_t *in, enum resource r, struct obj *o);

/* tree.c: tenant nodes, Namespaces, Tenants. */
struct tnode *tnode_get(ingest_t *in, const char *ns, bool create);
void tnode_ensure(ingest_t *in, const char *ns);
void tnode_check(ingest_t *in, const char *ns);
void tnode_free(struct tnode *t);
void tnode_budget_set(struct tnode *t, const char *key, bool present,
		      int64_t value);
void tnode_raw_set(struct tnode *t, const char *res, bool present);
upsert_fn ns_upsert, tenant_upsert;
delete_fn ns_delete, tenant_delete;

/* holders.c: VMInstance, KubernetesNodes, Pod, ResourceClaim. */
upsert_fn holder_upsert;
delete_fn holder_delete;
/* Sets a holder's units (by class name) to want[0..n), node for the
 * allocations, under uid; emits the differences in a safe order. Returns
 * whether anything changed. */
bool holder_apply(ingest_t *in, struct obj *o, const char *uid,
		  const struct ucls *want, size_t n, const char *node);
/* Counts o in its tenant node while it holds units. */
void holder_count(ingest_t *in, struct obj *o);
void cover_free(struct cover *c);
/* A pod that holds nothing but must stay cached, because a later class
 * table could map it: it names an extended resource and is not terminal. */
bool pod_dormant(const json_t *pod);

/* nodes.c: Nodes and the class table. */
upsert_fn node_upsert, configmap_upsert;
delete_fn node_delete, configmap_delete;
void needles_rebuild(ingest_t *in);
void needles_free(ingest_t *in);
int table_copy(struct class_table *dst, const struct class_table *src);

/* project.c: the members of a Pod watch event that the mapping reads,
 * copied into out (room for len + 1 bytes) as a small JSON text. Returns
 * its length, or 0 when the line must be parsed whole. The spans point
 * into line: the strings type, time, object apiVersion and kind, metadata
 * name and namespace (the last occurrence; p NULL when absent or not a
 * string). */
enum {
	PP_TYPE,
	PP_TIME,
	PP_API,
	PP_KIND,
	PP_NAME,
	PP_NS,
	PP_MAX
};
struct pp_span {
	const char *p;
	size_t n;
	bool escaped; /* holds a backslash escape */
};
struct pod_proj {
	struct pp_span span[PP_MAX];
};
size_t pod_project(const char *line, size_t len, char *out,
		   struct pod_proj *pp);

/* stream.c: a line in two halves. ingest_prep_line does what depends only
 * on the line's bytes (the blank test, the pod projection into proj, which
 * has room for len + 1 bytes, and jansson's parse), so it may run on any
 * thread; ingest_line_prepared does the rest on the engine's thread, and
 * the pair does exactly what ingest_line does. The line and proj are
 * borrowed until ingest_line_prepared returns; the doc is owned until
 * ingest_prep_release (any thread). */
struct ingest_prep {
	const char *line;
	size_t len;
	bool blank;
	bool pod;      /* proj is the projection of a v1 Pod */
	bool may_skip; /* the skip's line conditions hold: not parsed yet */
	int64_t time_ns; /* the line's time, with may_skip */
	struct pod_proj pp;
	const char *proj;
	size_t proj_n;
	json_t *doc;	   /* the parsed projection or line (NULL: failed) */
	json_error_t jerr; /* why the line did not parse */
};
void ingest_prep_line(struct ingest_prep *p, const char *line, size_t len,
		      char *proj);
/* ingest_prep_line in two steps: the scan (blank, projection, the skip's
 * line conditions; doc NULL), then the parse when the line needs one. */
void ingest_prep_scan(struct ingest_prep *p, const char *line, size_t len,
		      char *proj);
void ingest_prep_parse(struct ingest_prep *p);
int ingest_line_prepared(ingest_t *in, struct ingest_prep *p,
			 struct lg_error *err);
void ingest_prep_release(struct ingest_prep *p);

#endif
