/*
 * model internals shared between the files of model/. Not part of the public
 * API: other layers include only model/model.h.
 */
#ifndef GPULEDGER_MODEL_INT_H
#define GPULEDGER_MODEL_INT_H

#include "model/model.h"

/* eval functions (DESIGN 6.1), one per name, dispatched by model/eval.c.
 * Each returns 0 with *out a new reference, or an LG_* code with err set. */
typedef int eval_fn(const struct eval_ctx *ctx, const json_t *input,
		    json_t **out, struct lg_error *err);

eval_fn eval_parse_quantity;	/* model/quantity.c */
eval_fn eval_pod_requests;	/* model/podreq.c */
eval_fn eval_tolerates_taint;	/* model/taint.c */
eval_fn eval_node_serves;	/* model/taint.c */
eval_fn eval_dns1123_label;	/* model/names.c */
eval_fn eval_dns1123_subdomain; /* model/names.c */
eval_fn eval_claim_name;	/* model/names.c */
eval_fn eval_budget_key;	/* model/keys.c */
eval_fn eval_admission;		/* model/verdict.c */
eval_fn eval_declaration;	/* model/verdict.c */
eval_fn eval_remaining;		/* model/verdict.c */

/* dns1123_label and dns1123_subdomain of a NUL-terminated string (NULL:
 * false) in one pass, without measuring it first: event validation runs
 * on every event read, and the strlen was a fifth of it. */
bool dns1123_label_cstr(const char *s);
bool dns1123_subdomain_cstr(const char *s);

/* Hard-wired upper bound for any JSON array a mapper walks (containers, gpus,
 * requests, taints, ...): beyond it the object is invalid. */
#define MODEL_MAX_ITEMS 4096

/* jansson helpers that tolerate absent members and wrong types. */
static inline const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* ---------------------------------------------------------------------- */
/* Memory: running out aborts (STYLE "Errors and memory"); call sites do not
 * test for NULL. Defined in model/state.c. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

/* ---------------------------------------------------------------------- */
/* Pointer tables: open addressing keyed by a 64-bit hash, equality by a
 * callback. Used for namespaces, holders, nodes and class names. */
struct ptab {
	size_t cap, n;	  /* cap is a power of two or 0 */
	uint64_t *hashes; /* 0 = empty slot (hashes are forced non-zero) */
	void **vals;
};
uint64_t hash_bytes(uint64_t h, const void *p, size_t n); /* FNV-1a step */
uint64_t hash_str(const char *s);
void *ptab_find(const struct ptab *t, uint64_t h,
		bool (*eq)(const void *val, const void *key), const void *key);
void ptab_insert(struct ptab *t, uint64_t h,
		 void *val); /* no duplicate check */
void ptab_remove(struct ptab *t, uint64_t h, const void *val);
void ptab_release(struct ptab *t);

/* ---------------------------------------------------------------------- */
/* The projection state (model/state.c). Per-class arrays are indexed by a
 * class id: class names are interned for the life of the state (ids are
 * never reused, so an event may name a class that has left the table), and
 * every per-class array has st->cls_cap entries. */

struct bill {
	int64_t cum_reserved_ms; /* device-ms integrated up to since_ms */
	int64_t cum_allocated_ms;
	int64_t since_ms;
};

struct budget {
	char *key; /* owned; a class or the total key */
	int64_t value;
};

/* A namespace seen by the state: a tenant node (node == true) or any
 * namespace that holds units (for billing and capacity). */
struct nsrec {
	char *name;  /* owned */
	bool tenant; /* ns_is_tenant(name) */
	bool node;   /* a tenant node exists (TENANT applied, not GONE) */
	struct nsrec *parent, *child, *sibling; /* tree links while node */
	size_t n_children;
	size_t n_budgets;
	struct budget *budgets; /* sorted by key */
	size_t n_raw;
	char **raw; /* declared raw resources, sorted, owned */
	int64_t *reserved, *allocated; /* own, [cls_cap] */
	int64_t *sub_reserved,
		*sub_allocated;	    /* subtree incl. own, [cls_cap] */
	int64_t sub_reserved_total; /* sum over classes */
	struct bill *bill;	    /* [cls_cap] */
	size_t n_holders;	    /* holders with units here */
};

struct hunits {
	uint32_t cls;
	int64_t reserved, allocated;
	struct noderec *node; /* where allocated (NULL when none) */
};

/* A holder is one heap block (DESIGN 10: memory per holder): the record,
 * then its name and uid as two NUL-terminated strings. Most holders hold
 * one class, whose units live inline; only n > 1 puts them in a separate
 * array. Read the units through holder_u, the strings through holder_name
 * and holder_uid. */
struct holder {
	struct nsrec *ns;
	union {
		struct hunits one;   /* n <= 1 */
		struct hunits *many; /* n > 1: owned, [n] */
	} u;
	uint32_t n;	 /* unit slots, sorted by cls */
	uint8_t kind;	 /* enum holder_kind */
	uint16_t uid_at; /* offset of the uid in str */
	char str[];	 /* name, NUL, uid, NUL */
};

static inline struct hunits *holder_u(const struct holder *h)
{
	return h->n > 1 ? h->u.many : (struct hunits *)&h->u.one;
}

static inline const char *holder_name(const struct holder *h)
{
	return h->str;
}

static inline const char *holder_uid(const struct holder *h)
{
	return h->str + h->uid_at;
}

/* A holder block with its strings copied in; n = 0, no units. Caller frees
 * with holder_free. */
struct holder *holder_new(enum holder_kind kind, struct nsrec *ns,
			  const char *name, size_t name_len, const char *uid,
			  size_t uid_len);
void holder_free(struct holder *h);

struct noderec {
	char *name;	    /* owned */
	int64_t *capacity;  /* [cls_cap], from NODE events */
	int64_t *allocated; /* [cls_cap], from ALLOC/FREE naming it */
	bool *serves;	    /* [cls_cap] */
};

struct state {
	uint64_t seq;
	int64_t time_ns;
	int64_t horizon_ns;
	uint64_t n_verdicts; /* VERDICT events applied (the last verdict id) */
	uint64_t n_notes;
	struct class_table table; /* the class table in force, sorted by name */
	uint32_t *table_ids;	  /* class id of table.classes[i] */
	char **cls_names;	  /* interned class names by id, owned */
	uint32_t n_cls, cls_cap;
	struct ptab cls_index;	  /* name -> (id + 1) cast to pointer */
	struct ptab ns_index;	  /* name -> struct nsrec * */
	struct ptab holder_index; /* (kind, ns, name) -> struct holder * */
	size_t n_holders;
	struct ptab node_index; /* name -> struct noderec * */
	struct nsrec *root;	/* tenant-root while its node exists */
};

/* Lookups; NULL when absent. */
struct nsrec *state_ns(const state_t *st, const char *name);
struct noderec *state_node(const state_t *st, const char *name);
/* Class id of a name; -1 when never interned. */
int32_t state_cls_id(const state_t *st, const char *name);
/* Budget of key declared by ns, or NULL. */
const struct budget *nsrec_budget(const struct nsrec *ns, const char *key);
bool nsrec_has_raw(const struct nsrec *ns, const char *resource);
/* The billing accumulator of (ns, cls) carried forward to t_ms; LG_ERANGE
 * (outputs untouched) when it does not fit int64. */
int nsrec_bill_at(const struct nsrec *ns, uint32_t cls, int64_t t_ms,
		  int64_t *reserved_ms, int64_t *allocated_ms);
/* Every namespace record, sorted by name (caller frees the array). */
struct nsrec **state_ns_sorted(const state_t *st, size_t *n);
struct noderec **state_nodes_sorted(const state_t *st, size_t *n);

/* model/verdict.c, used by state_to_json: the "remaining", "remainingTotal"
 * and "overcommitted" members of a tenant in the replay JSON. New refs. */
json_t *tenant_remaining_json(const state_t *st, const struct nsrec *ns);
json_t *tenant_remaining_total_json(const state_t *st, const struct nsrec *ns);
json_t *tenant_overcommit_json(const state_t *st, const struct nsrec *ns);

/* State construction for model/statecodec.c (defined in model/state.c):
 * ptab_reserve grows t so that n entries fit without rehashing, and
 * state_holder_hash is the key under which st->holder_index files a holder. */
void ptab_reserve(struct ptab *t, size_t n);
uint64_t state_holder_hash(enum holder_kind kind, const char *ns,
			   const char *name);

/* Builds a fresh state from a JSON array of events in the form of
 * event_from_json (model/event.c); used by eval's inline states. */
int state_from_events_json(const json_t *events, state_t **out,
			   struct lg_error *err);

/* Pieces of the JCS writer (model/jcs.c) for writers of known shapes
 * (event_jcs): raw bytes, a string (-1 when not UTF-8), an integer. */
void jcs_put_raw(struct jcs_buf *b, const char *s, size_t n);
int jcs_put_string(struct jcs_buf *b, const char *str, size_t n);
void jcs_put_integer(struct jcs_buf *b, json_int_t v, unsigned flags);

#endif
