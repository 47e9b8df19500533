/*
 * model internals shared between the files of model/. Not part of the public
 * API: other layers include only model/model.h.
 */
#ifndef GPULEDGER_MODEL_INT_H
#define GPULEDGER_MODEL_INT_H

#include "model/model.h"

/* ---------------------------------------------------------------------- */
/* Used by model/ (and its tests) only. */

/* A fixed-width decimal field inside a text (the year, month, hour of a
 * time or a billing month; model/base.c, beside lg_parse_u64): the n bytes
 * at s, 0 < n <= 9, are all ASCII digits. True and *out their value, or
 * false and *out untouched. */
bool model__digits(const char *s, int n, int *out);

/* ---------------------------------------------------------------------- */
/* Quantities (DESIGN 5.1). Exact decimal, no floating point.              */

/* Magnitude limbs: enough for any value a quantity string of sane length
 * can denote; parsing something larger fails with LG_ERANGE. */
#define QUANTITY_LIMBS 40

/* A parsed quantity. The fields are private to model/quantity.c; the struct
 * is in a header only so that callers can keep quantities on the stack.
 * The value is stored rounded up (away from zero) to nano units, as
 * upstream does. */
struct quantity {
	int8_t sign;	 /* -1, 0, +1 */
	uint8_t binary;	 /* the string used a binary suffix (Ki, Mi, ...) */
	uint16_t nlimbs; /* used limbs of mag */
	uint32_t mag[QUANTITY_LIMBS]; /* |value| in nano units, little endian */
};

/* Parses s[0..len) with the apimachinery grammar: sign, digits, optional
 * fraction, then a suffix (n u m "" k M G T P E, Ki Mi Gi Ti Pi Ei) or an
 * e/E exponent. No trimming. Binary-suffix values are capped at 2^63-1 like
 * upstream. LG_EINVAL on bad syntax, LG_ERANGE when too large to represent. */
int model__quantity_parse(struct quantity *q, const char *s, size_t len,
			  struct lg_error *err);
/* Value(): the ceiling of q as an integer; LG_ERANGE outside int64. */
int model__quantity_value(const struct quantity *q, int64_t *out);
/* MilliValue(): the ceiling of q*1000; LG_ERANGE outside int64. */
int model__quantity_milli_value(const struct quantity *q, int64_t *out);
/* acc += b; LG_ERANGE when the result does not fit the representation. */
int model__quantity_add(struct quantity *acc, const struct quantity *b);
/* <0, 0, >0 like strcmp. */
int model__quantity_cmp(const struct quantity *a, const struct quantity *b);
bool model__quantity_is_negative(const struct quantity *q);
void model__quantity_zero(struct quantity *q);
/* Prints q exactly with the smallest of the suffixes "" m u n that keeps an
 * integer ("2", "1500m", "1n", "-3"). Returns the length it needs (like
 * snprintf), writing at most cap bytes including the NUL. */
size_t model__quantity_format(const struct quantity *q, char *buf, size_t cap);
/* The exact integer value of a quantity that must be a non-negative integer:
 * LG_EINVAL when negative or fractional, LG_ERANGE above 2^63-1. */
int model__quantity_exact_uint(const struct quantity *q, int64_t *out);
/* A budget value or a count given in JSON (Appendix A "Keys and values"): a
 * string is parsed as a quantity without trimming; a JSON number is read from
 * its value (integers exactly; reals only when integral and exactly
 * representable); booleans, null, objects and arrays are LG_EINVAL. The
 * result must be an exact non-negative integer (see
 * model__quantity_exact_uint). */
int model__quantity_json_uint(const json_t *v, int64_t *out,
			      struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* Effective pod requests (DESIGN 5.2).                                    */

/* A small resource list. Names are borrowed from the JSON the list was built
 * from and live as long as it; the array is owned (model__reslist_release). */
struct resitem {
	const char *name;
	struct quantity q;
};
struct reslist {
	size_t n, cap;
	struct resitem *items; /* sorted by name */
};

void model__reslist_init(struct reslist *l);
void model__reslist_release(struct reslist *l);
const struct quantity *model__reslist_get(const struct reslist *l,
					  const char *name);

/* The upstream PodRequests helper (component-helpers), no defaulting:
 * max(sum of containers + sidecars, max over init containers), pod-level
 * spec.resources.requests replaces cpu, memory and hugepages-*, then
 * spec.overhead is added. When defaults is true, the API server's defaulting
 * is applied first: a container limit with no request counts as the request.
 * LG_EINVAL (with detail) for a wrong type or an unparsable quantity;
 * LG_ERANGE for a sum too large. out must be initialised. */
int model__pod_requests(const json_t *pod, bool defaults, struct reslist *out,
			struct lg_error *err);

/* Budget keys (DESIGN 2.2): the kind of a key (model__budget_key_classify). */
enum key_kind {
	KEY_OTHER = 0,
	KEY_CLASS,   /* <class>.gpuclass.cozystack.io/devices */
	KEY_TOTAL,   /* gpuclass.cozystack.io/devices */
	KEY_INVALID, /* another key in the GPU domain */
	KEY_RAW	     /* a resourceNames entry of some class (prefix stripped) */
};

/* Errors. */
const char *model__errname(int code);

/* Tolerations and taints. */
bool model__toleration_tolerates(const struct toleration *tol,
				 const struct taint *taint);
/* Reads a toleration/taint object; its strings are borrowed from v. Non-string
 * fields are LG_EINVAL. */
int model__toleration_from_json(struct toleration *tol, const json_t *v,
				struct lg_error *err);
int model__taint_from_json(struct taint *taint, const json_t *v,
			   struct lg_error *err);

/* The class table. */
const struct gpu_class *
model__class_table_by_resource(const struct class_table *t,
			       const char *resource);
const struct gpu_class *
model__class_table_by_device_class(const struct class_table *t,
				   const char *device_class);
/* True when a node serves class c (DESIGN 2.4): not cordoned (only JSON true
 * in spec.unschedulable), first Ready condition "True", and every NoSchedule/
 * NoExecute taint (bar the three node.kubernetes.io ones) tolerated by one of
 * c's tolerations. */
bool model__node_serves(const json_t *node, const struct gpu_class *c);

/* Budget keys. */
/* Classifies key. For KEY_CLASS, *cls is the class label (pointing into key,
 * *cls_len its length); for KEY_RAW the owning class's name (borrowed from t)
 * and *resource the stripped resource name (pointing into key). t may be NULL
 * (then no key is raw). Output pointers may be NULL. */
enum key_kind model__budget_key_classify(const char *key,
					 const struct class_table *t,
					 const char **cls, size_t *cls_len,
					 const char **resource);
const char *model__key_kind_name(enum key_kind k); /* "class", "total", ... */

/* Holder mapping. */
const char *model__holder_kind_name(enum holder_kind k); /* "VMInstance", ... */
enum holder_kind
model__holder_kind_parse(const char *s); /* HK_NONE if unknown */
/* Maps a bare spec (admission requests carry specs, not objects). */
int model__holder_map_spec(enum holder_kind kind, const json_t *spec,
			   const struct class_table *t, struct holder_map *hm,
			   struct lg_error *err);
/* Units of class index cls in hm (0 when absent). */
int64_t model__holder_map_units(const struct holder_map *hm, uint32_t cls);

/* Events. */
enum event_type model__event_type_parse(const char *s); /* EV_NONE if unknown */
/* DESIGN 3.6 "one observation is one watch event": the events the watcher
 * derives from one watch event of an object (RESERVE..FREE of several
 * classes) lie at consecutive seqs with one time. Whether ev, an event of
 * the object whose last event was at (last_seq, last_ns), continues that
 * observation (last_seq 0: none yet). The one definition of it: reconcile
 * reads "the previous observation" by it, and a hold ends at the first
 * event of its object's first observation after it (model/holds.c), the
 * observation's seq reconcile names. */
bool model__observation_continues(uint64_t last_seq, int64_t last_ns,
				  const struct event *ev);
/* Appends JCS of v to b; -1 on failure or once b holds more than max_bytes
 * or refuses an add (b's content is then undefined). */
int model__jcs_write(struct lg_buf *b, const json_t *v, unsigned flags,
		     size_t max_bytes);
/* A text built in a caller's scratch (emptied) or, when scratch is NULL, in
 * own (of at most max_bytes, or JCS_TEXT_MAX_BYTES if less): begin gives
 * the buffer to write; end copies it out when ok (caller frees; NULL
 * otherwise) and releases own. */
struct lg_buf *model__jcs_begin(struct lg_buf *scratch, struct lg_buf *own,
				size_t max_bytes);
char *model__jcs_end(struct lg_buf *b, struct lg_buf *own, bool ok);
/* Whether the len bytes at s are known to be their own canonical text:
 * jansson reads them (json_loads, json_loadb_doubles) and JCS, with or
 * without JCS_INT_STRINGS, writes them back byte for byte. Conservative:
 * false says nothing (a real, an integer of more than 15 digits, an escaped
 * name, space), and the caller parses. */
bool model__jcs_own_form(const char *s, size_t len);
/* model__jcs_own_form, finding on the way the member name of the outer
 * object: *at and *vlen its value's text within s (*vlen 0 when there is
 * none). */
bool model__jcs_own_form_member(const char *s, size_t len, const char *name,
				size_t *at, size_t *vlen);
/* Compares names by UTF-16 code units (RFC 8785 3.2.3); both valid UTF-8. */
int model__jcs_key_cmp(const char *a, size_t alen, const char *b, size_t blen);
/* ECMAScript Number::toString of a finite d into out (>= 32 bytes); returns
 * the length. */
size_t model__jcs_format_double(double d, char *out);

/* The Merkle tree of the log. */
void model__merkle_node_hash(const uint8_t *left, const uint8_t *right,
			     uint8_t *out);
/* MTH of the whole tree (SHA-256 of nothing for the empty tree). */
void model__merkle_edge_root(const struct merkle_edge *e, uint8_t *out);
/* RFC 9162 2.1.3.2: the root the proof gives for leaf at index, or
 * LG_EINVAL when the proof has the wrong shape for (index, size). */
int model__merkle_root_from_inclusion(uint64_t index, uint64_t size,
				      const uint8_t *leaf,
				      const struct merkle_proof *p,
				      uint8_t *root);

/* The projection: state + event -> state. */
/* Self-check: every subtree total equals a from-scratch recomputation and
 * every per-namespace total equals the sum of its holders. */
int model__state_check(const state_t *st, struct lg_error *err);

/* Billing. */
const char *model__bill_step_name(enum bill_step s);   /* "hour", "day" */
const char *model__bill_basis_name(enum bill_basis b); /* "reserved", ... */
/* The first UTC hour or day boundary strictly after t_ms. */
int64_t model__bill_period_end(int64_t t_ms, enum bill_step step);
/* "Z", "+HH:MM" or "-HH:MM" (|offset| <= 14:00) into seconds; LG_EINVAL
 * otherwise. */
int model__bill_offset_parse(const char *s, int32_t *offset_s);
/* x_TenantPath: "tenant-root/tenant-a/tenant-a-b" for a tenant, the name
 * itself for any other namespace. Returns the length it needs (like
 * snprintf), writing at most cap bytes including the NUL. */
size_t model__bill_tenant_path(const char *ns, char *buf, size_t cap);
/* num/den with exactly 9 decimals, truncated ("1.500000000"); num >= 0,
 * den > 0. ConsumedQuantity is model__bill_format_ratio(device_ms, 3600000). */
size_t model__bill_format_ratio(int64_t num, int64_t den, char *buf,
				size_t cap);
/* A nano-unit amount with 9 decimals ("2.500000000"). */
size_t model__bill_format_nano(int64_t nano, char *buf, size_t cap);
/* A non-negative decimal string with at most 9 fraction digits ("2.5",
 * "3", "0.000000001") into nano units. No sign, exponent or space; LG_EINVAL
 * otherwise, LG_ERANGE above int64. */
int model__bill_decimal_parse(const char *s, int64_t *nano);

/* eval functions (DESIGN 6.1), one per name, dispatched by model/eval.c.
 * Each returns 0 with *out a new reference, or an LG_* code with err set. */
typedef int eval_fn(const struct eval_ctx *ctx, const json_t *input,
		    json_t **out, struct lg_error *err);

eval_fn model__eval_parse_quantity;    /* model/quantity.c */
eval_fn model__eval_pod_requests;      /* model/podreq.c */
eval_fn model__eval_tolerates_taint;   /* model/taint.c */
eval_fn model__eval_node_serves;       /* model/taint.c */
eval_fn model__eval_dns1123_label;     /* model/names.c */
eval_fn model__eval_dns1123_subdomain; /* model/names.c */
eval_fn model__eval_claim_name;	       /* model/names.c */
eval_fn model__eval_budget_key;	       /* model/keys.c */
eval_fn model__eval_admission;	       /* model/verdict.c */
eval_fn model__eval_declaration;       /* model/verdict.c */
eval_fn model__eval_remaining;	       /* model/verdict.c */

/* dns1123_label and dns1123_subdomain of a NUL-terminated string (NULL:
 * false) in one pass, without measuring it first: event validation runs
 * on every event read, and the strlen was a fifth of it. */
bool model__dns1123_label_cstr(const char *s);
bool model__dns1123_subdomain_cstr(const char *s);

/* Hard-wired upper bound for any JSON array a mapper walks (containers, gpus,
 * requests, taints, ...): beyond it the object is invalid. */
#define MODEL_MAX_ITEMS 4096

/* jansson helpers that tolerate absent members and wrong types. */
static inline const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* ---------------------------------------------------------------------- */
/* Pointer tables: open addressing keyed by a 64-bit hash, equality by a
 * callback. Used for namespaces, holders, nodes and class names. */
struct ptab {
	size_t cap, n;	  /* cap is a power of two or 0 */
	uint64_t *hashes; /* 0 = empty slot (hashes are forced non-zero) */
	void **vals;
};
uint64_t model__hash_bytes(uint64_t h, const void *p,
			   size_t n); /* FNV-1a step */
uint64_t model__hash_str(const char *s);
void *model__ptab_find(const struct ptab *t, uint64_t h,
		       bool (*eq)(const void *val, const void *key),
		       const void *key);
/* The key of val must not be in the table yet: the table does not compare
 * keys (the same val twice is asserted). */
void model__ptab_insert(struct ptab *t, uint64_t h, void *val);
void model__ptab_remove(struct ptab *t, uint64_t h, const void *val);
void model__ptab_release(struct ptab *t);

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
	/* Holds (DESIGN 3.7, model/holds.c): units held here by alive holds,
	 * and over the subtree (kept like sub_reserved; a namespace without
	 * a node counts in its nearest node's subtree). All zero while holds
	 * are off. */
	int64_t *held, *sub_held; /* [cls_cap] */
	int64_t sub_held_total;
	size_t n_holds; /* alive holds of objects in this namespace */
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
struct holder *model__holder_new(enum holder_kind kind, struct nsrec *ns,
				 const char *name, size_t name_len,
				 const char *uid, size_t uid_len);
void model__holder_free(struct holder *h);

struct noderec {
	char *name;	    /* owned */
	int64_t *capacity;  /* [cls_cap], from NODE events */
	int64_t *allocated; /* [cls_cap], from ALLOC/FREE naming it */
	bool *serves;	    /* [cls_cap] */
};

/* Holds (DESIGN 3.7; model/holds.c). A hold is one heap block: the
 * record, its units (classes with units > 0, by class id), then the
 * object's name, NUL-terminated. */
struct hold_unit {
	uint32_t cls;
	uint32_t units; /* <= HOLDER_UNITS_MAX */
};
struct hold {
	struct nsrec *ns;
	uint64_t verdict_id;
	int64_t expires_ns;
	uint32_t heap_i; /* its place in holds.heap */
	uint8_t kind;	 /* enum holder_kind */
	uint8_t n;	 /* <= HOLDER_MAX_CLASSES */
	struct hold_unit u[];
};

static inline const char *hold_name(const struct hold *h)
{
	return (const char *)(h->u + h->n);
}

struct holds {
	int64_t ttl_ms; /* 0: off */
	bool ever;	/* a HOLDS event was applied: checkpoints carry them */
	struct ptab index;  /* (kind, ns, name) -> struct hold * */
	struct hold **heap; /* min-heap by expires_ns */
	size_t n, cap;
	size_t n_orphan; /* alive holds in namespaces without a node */
	uint64_t made, ended[HOLD_END_MAX];
	/* What a spec text maps to under the class table (model/holds.c):
	 * a cache, never copied or written; NULL until used. */
	struct hold_cache *cache;
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
	struct holds holds;
};

/* Lookups; NULL when absent. */
struct nsrec *model__state_ns(const state_t *st, const char *name);
/* The record of name, created (no node, no units) when absent. */
struct nsrec *model__state_ns_get(state_t *st, const char *name);
/* The holder (kind, ns, name). */
const struct holder *model__state_holder(const state_t *st,
					 enum holder_kind kind, const char *ns,
					 const char *name);
struct noderec *model__state_node(const state_t *st, const char *name);
/* Class id of a name; -1 when never interned. */
int32_t model__state_cls_id(const state_t *st, const char *name);
/* Budget of key declared by ns, or NULL. */
const struct budget *model__nsrec_budget(const struct nsrec *ns,
					 const char *key);
bool model__nsrec_has_raw(const struct nsrec *ns, const char *resource);
/* The billing accumulator of (ns, cls) carried forward to t_ms; LG_ERANGE
 * (outputs untouched) when it does not fit int64. */
int model__nsrec_bill_at(const struct nsrec *ns, uint32_t cls, int64_t t_ms,
			 int64_t *reserved_ms, int64_t *allocated_ms);
/* Every namespace record, sorted by name (caller frees the array). */
struct nsrec **model__state_ns_sorted(const state_t *st, size_t *n);
struct noderec **model__state_nodes_sorted(const state_t *st, size_t *n);

/* model/verdict.c, used by state_to_json: the "remaining", "remainingTotal"
 * and "overcommitted" members of a tenant in the replay JSON. New refs. */
json_t *model__tenant_remaining_json(const state_t *st, const struct nsrec *ns);
json_t *model__tenant_remaining_total_json(const state_t *st,
					   const struct nsrec *ns);
json_t *model__tenant_overcommit_json(const state_t *st,
				      const struct nsrec *ns);
/* U(T, key): tenant ns's subtree reserved units that budget key measures
 * (DESIGN 3.1) -- the "used" of the checks and of "overcommitted". */
int64_t model__tenant_key_used(const state_t *st, const struct nsrec *ns,
			       const char *key);

/* Holds (model/holds.c), called by the projection. */
void model__holds_release(state_t *st);
/* HOLDS: the mode changes (LG_EMISMATCH when it does not). */
int model__holds_mode(state_t *st, const struct event *ev,
		      struct lg_error *err);
/* A VERDICT just applied (st->n_verdicts counts it): makes or replaces
 * the hold its record makes, if any. Never fails: a record that makes
 * none is no error. */
void model__holds_verdict(state_t *st, const struct event *ev);
/* After an event that moves the log's time to now_ns: ends every hold
 * that expires at or before it. */
void model__holds_expire(state_t *st, int64_t now_ns);
/* After a RESERVE or RELEASE: its object's hold, if any, ends. */
void model__holds_observed(state_t *st, const struct event *ev);
/* After a CLASS event: what specs map to may change. */
void model__holds_table_changed(state_t *st);
/* Before TENANT_GONE unlinks ns, and after TENANT linked a node. */
void model__holds_ns_gone(state_t *st, struct nsrec *ns);
void model__holds_tree_changed(state_t *st);
/* The alive hold of an object, or NULL. */
const struct hold *model__hold_find(const state_t *st, enum holder_kind kind,
				    const char *ns, const char *name);
/* Whether applying a VERDICT of record (len bytes) to st makes or
 * replaces a hold: holds on, an allowed admission with growth whose object
 * can hold (a valid name and new spec). */
bool model__verdict_makes_hold(const state_t *st, const char *record,
			       size_t len);
/* state_apply of the VERDICT of record as st's next event (seq + 1, at
 * st's time); *made (may be NULL): it made or replaced a hold (the
 * tests' and the model's shorthand of the sequence model/model.h gives). */
int model__apply_verdict(state_t *st, const char *record, bool *made,
			 struct lg_error *err);
/* Units of class id cls a hold holds (0 when none). */
int64_t model__hold_units(const struct hold *h, uint32_t cls);
/* Copies s's holds into d (whose namespaces are s's, copied). */
void model__holds_clone(state_t *d, const state_t *s);
/* A hold block (units and name copied in; heap_i unset); inserted into
 * st's index, heap and totals by model__holds_insert. */
struct hold *model__hold_new(struct nsrec *ns, enum holder_kind kind,
			     const char *name, uint64_t verdict_id,
			     int64_t expires_ns, const struct hold_unit *u,
			     size_t n);
void model__holds_insert(state_t *st, struct hold *h);
/* Every alive hold, sorted by (namespace, kind, name) (caller frees). */
struct hold **model__holds_sorted(const state_t *st, size_t *n);
/* Self-check: the held totals equal a recount of the holds, and the
 * heap and the index agree. */
int model__holds_check(const state_t *st, struct lg_error *err);
/* State construction for model/statecodec.c (defined in model/state.c):
 * ptab_reserve grows t so that n entries fit without rehashing, and
 * state_holder_hash is the key under which st->holder_index files a holder. */
void model__ptab_reserve(struct ptab *t, size_t n);
uint64_t model__state_holder_hash(enum holder_kind kind, const char *ns,
				  const char *name);

/* Builds a fresh state from a JSON array of events in the form of
 * event_from_json (model/event.c); used by eval's inline states. */
int model__state_from_events_json(const json_t *events, state_t **out,
				  struct lg_error *err);

/* Pieces of the JCS writer (model/jcs.c) for writers of known shapes
 * (event_jcs): a string (-1 when not UTF-8), an integer; raw bytes are
 * lg_buf_add. A refused add shows in lg_buf_failed(b). */
int model__jcs_put_string(struct lg_buf *b, const char *str, size_t n);
void model__jcs_put_integer(struct lg_buf *b, json_int_t v, unsigned flags);

/* ---------------------------------------------------------------------- */
/* One class table entry (model/classes.c; the table is in model.h). */

/* Parses and validates one class entry (not the cross-class rules). c is
 * filled with owned copies; release with gpu_class_release. */
int model__gpu_class_parse(struct gpu_class *c, const json_t *entry,
			   struct lg_error *err);
void model__gpu_class_release(struct gpu_class *c);

/* verdict_request_read from a document already read by
 * json_loadb_doubles (borrowed): eval's input (model/vrequest.c). */
int model__verdict_request_from_json(enum verdict_kind kind, const json_t *doc,
				     struct verdict_request *out,
				     struct lg_error *err);

/* Admission (3.1). req is {namespace, kind, name, old, new}. On success
 * *verdict is the verdict object without id/seq/basisSeq/chainHead (new
 * reference). A malformed request (unknown kind, no namespace) is LG_EINVAL
 * with err set and no verdict. */
int model__verdict_admission(const state_t *st, const json_t *req,
			     json_t **verdict, struct lg_error *err);
/* Declaration (3.2). req is {namespace, old, new}. */
int model__verdict_declaration(const state_t *st, const json_t *req,
			       json_t **verdict, struct lg_error *err);

/* The namespace a Tenant named x in namespace p governs (DESIGN 2.2). */
int model__tenant_governed_ns(const char *p, const char *x, char *out,
			      size_t cap);

/* The judgements of model/verdict.c into a typed verdict (DESIGN 3.1,
 * 3.2); *v is released by verdict_release, also after an error. */
int model__judge_admission(const state_t *st, const json_t *req,
			   struct verdict *v, struct lg_error *err);
int model__judge_declaration(const state_t *st, const json_t *req,
			     struct verdict *v, struct lg_error *err);

/* v as JSON with the members of what, as its text reads back (new
 * reference): eval's output and the model's tests (model/vrequest.c). */
json_t *model__verdict_to_json(const struct verdict *v, unsigned what);

#endif
