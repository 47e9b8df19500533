/*
 * model — the pure domain library of gpuledger (DESIGN sections 2, 3, 5).
 *
 * Invariants:
 *  - No I/O, no LMDB/curl/uv types. Only libc, jansson (at the edges: objects
 *    and canonical JSON in and out) and libcrypto (SHA-256 for claim names).
 *  - Every function is deterministic: the same inputs give the same outputs and
 *    the same bytes of canonical JSON, so that every caller (watcher, query
 *    process, audit, billing, eval) agrees.
 *  - Errors are the negative LG_* codes below; 0 is success. Detail goes into a
 *    caller-provided struct lg_error (which may be NULL).
 *  - Ownership is written on every pointer that crosses this API.
 */
#ifndef GPULEDGER_MODEL_H
#define GPULEDGER_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/base.h"
#include "model/jcs.h"
#include "model/tlog.h"

/* ---------------------------------------------------------------------- */
/* Names (DESIGN 5.4, 5.5).                                                */

#define DNS1123_LABEL_MAX     63
#define DNS1123_SUBDOMAIN_MAX 253

bool dns1123_label(const char *s, size_t len);
bool dns1123_subdomain(const char *s, size_t len);
/* vmi_name(x): "vm-instance-" + x cut to 63 chars, trailing '-' removed.
 * out must hold DNS1123_LABEL_MAX + 1 bytes; returns the length. */
size_t vmi_name(const char *x, char *out);
/* claim_name(vmi, dev) per DESIGN 5.5 into out (DNS1123_LABEL_MAX + 1
 * bytes). LG_EINVAL when no valid name can be formed. */
int claim_name(const char *vmi, const char *dev, char *out);

/* ---------------------------------------------------------------------- */
/* Tolerations and taints (DESIGN 5.3). Strings are borrowed; NULL = "".   */

struct toleration {
	const char *key, *op, *value, *effect;
};
struct taint {
	const char *key, *value, *effect;
};

/* ---------------------------------------------------------------------- */
/* The class table (DESIGN 2, Appendix A "Class table").                   */

/* One class. Every string and array is owned by the table it is in. */
struct gpu_class {
	char *name;
	char *device_class;    /* defaults to name */
	char **resource_names; /* de-duplicated, in the order first given */
	size_t n_resource_names;
	struct toleration *tolerations; /* strings owned by the class */
	size_t n_tolerations;
};

/* A validated class table, sorted by class name. */
struct class_table {
	struct gpu_class *classes;
	size_t n;
};

void class_table_init(struct class_table *t);
void class_table_release(struct class_table *t);
/* Parses {"classes": [...]} and validates the table as a whole. On error t
 * is left empty and err says why. */
int class_table_parse(struct class_table *t, const json_t *doc,
		      struct lg_error *err);
/* Deep copy into dst (filled from scratch; release with
 * model__gpu_class_release). */
void gpu_class_copy(struct gpu_class *dst, const struct gpu_class *src);
/* Canonical definition: {"deviceClassName", "name", "resourceNames",
 * "tolerations"} with defaults filled in. New reference. */
json_t *gpu_class_to_json(const struct gpu_class *c);
bool gpu_class_equal(const struct gpu_class *a, const struct gpu_class *b);
/* Lookups; NULL when absent. Borrowed from t. */
const struct gpu_class *class_table_find(const struct class_table *t,
					 const char *name);

/* ---------------------------------------------------------------------- */
/* Budget keys (DESIGN 2.2).                                               */

#define GPU_TOTAL_KEY	     "gpuclass.cozystack.io/devices"
#define GPU_CLASS_KEY_SUFFIX ".gpuclass.cozystack.io/devices"

/* ---------------------------------------------------------------------- */
/* Namespaces and the tenant tree (DESIGN 2.1).                            */

bool ns_is_tenant(const char *ns);
/* Writes the parent tenant of tenant ns into out (DNS1123_SUBDOMAIN_MAX + 1
 * bytes); returns false for tenant-root and for non-tenants. */
bool ns_parent(const char *ns, char *out);
/* True when ns is root or lies in root's subtree, by name (DESIGN 2.1:
 * tenant-a-b is below tenant-a, tenant-ab is not; every tenant is below
 * tenant-root). */
bool ns_in_subtree(const char *root, const char *ns);

/* A Namespace object (DESIGN 2.1). The name rule decides tenancy and the
 * parent; the tenant.cozystack.io/<X> labels are a cross-check: each must
 * name X in ancestors_inclusive(name). A mismatch is a NOTE, not an error. */
struct namespace_map {
	const char *name; /* borrowed from the object */
	bool tenant;
	bool has_parent; /* false for tenant-root and non-tenants */
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	bool labels_agree; /* false: err of the call says which label */
};
/* LG_EINVAL when the object has no valid name; LG_EUNKNOWN when it is not a
 * v1 Namespace. */
int namespace_map_object(const json_t *obj, struct namespace_map *nm,
			 struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* Holder mapping (DESIGN 2.3, Appendix A).                                */

enum holder_kind {
	HK_NONE = 0,
	HK_VMINSTANCE,
	HK_KUBERNETESNODES,
	HK_POD,
	HK_RESOURCECLAIM,
	HK_MAX
};

/* Classes a table may have (larger tables are rejected), and so the most
 * classes one object may hold. */
#define HOLDER_MAX_CLASSES 64
/* DESIGN 2.3 "Bounds": one holder holds at most this many units of one
 * class; a larger count makes the object invalid (too_large). */
#define HOLDER_UNITS_MAX   2147483647LL
#define HOLDER_MAX_ENTRIES 256 /* spec.gpus entries of one object */
#define NODE_NAME_MAX	   DNS1123_SUBDOMAIN_MAX

/* Units of one class; cls indexes the class table the map was made with. */
struct class_units {
	uint32_t cls;
	int64_t units;
};

/* What one object holds. Fixed size: mapping never allocates. Strings are
 * borrowed from the object JSON. */
struct holder_map {
	enum holder_kind kind;
	const char *ns, *name, *uid;
	/* False when the object is unmappable (it then holds 0); err of the
	 * mapping call says why. */
	bool valid;
	/* Per class units, sorted by cls, units > 0. For VMInstance and
	 * KubernetesNodes: reserved; for a Pod: reserved and allocated; for a
	 * ResourceClaim: its demand (reserved unless covered, allocated when
	 * allocated). */
	size_t n;
	struct class_units units[HOLDER_MAX_CLASSES];
	/* Pod: spec.nodeName; claim: the allocation's single node. "" if none.
	 */
	char node[NODE_NAME_MAX + 1];
	bool allocated;	    /* claim: status.allocation present; pod: always */
	bool unknown_class; /* VMI/KN: an entry names a class not in the table
			     */
	bool too_large;	    /* invalid because some class's units exceed
			       HOLDER_UNITS_MAX (or int64) */
	/* VMInstance/KubernetesNodes: per spec.gpus entry, the class index of a
	 * class entry, -1 for a raw entry or an unknown class. */
	size_t n_entries;
	int16_t entry_class[HOLDER_MAX_ENTRIES];
};

/* Maps a VMInstance, KubernetesNodes, Pod or ResourceClaim object (JSON as
 * the API server stores it) against table t. Returns 0 with hm->valid true,
 * 0 with hm->valid false and err set (the object is invalid and holds 0), or
 * LG_EUNKNOWN for another kind. */
int holder_map_object(const json_t *obj, const struct class_table *t,
		      struct holder_map *hm, struct lg_error *err);
/* True when ResourceClaim claim is covered by VMInstance vmi (DESIGN 2.3,
 * Appendix A "Claims"): same namespace, the claim's units all in one class c,
 * its name equals claim_name(vmi_name(vmi name), "gpu<i+1>") for an entry i
 * of vmi that is a class entry of c, and vmi is mappable. */
bool holder_claim_covered(const struct holder_map *claim,
			  const struct holder_map *vmi);

/* A node's per-class capacity and serving (DESIGN 2.4). */
struct node_class {
	uint32_t cls;
	int64_t capacity;
	bool serves;
};
struct node_map {
	const char *name; /* borrowed */
	size_t n;	  /* one per class of the table, in table order */
	struct node_class classes[HOLDER_MAX_CLASSES];
};
int node_map_object(const json_t *node, const struct class_table *t,
		    struct node_map *nm, struct lg_error *err);

/* A Tenant object's quotas (DESIGN 2.2). Keys and resources are borrowed
 * from the object JSON; arrays are owned (tenant_map_release). */
struct budget_entry {
	const char *key; /* the key as written (class or total key) */
	int64_t value;
};
struct tenant_map {
	char governed[DNS1123_SUBDOMAIN_MAX + 1];
	size_t n_budgets;
	struct budget_entry *budgets; /* sorted by key, valid values only */
	size_t n_raw;
	const char **raw; /* declared raw resources, prefix stripped, sorted,
			     unique */
	size_t n_invalid; /* invalid keys or values seen (each is a NOTE) */
};
int tenant_map_object(const json_t *tenant, const struct class_table *t,
		      struct tenant_map *tm, struct lg_error *err);
void tenant_map_release(struct tenant_map *tm);

/* ---------------------------------------------------------------------- */
/* Events (DESIGN 4.1) as C structs. Strings are borrowed from whoever built
 * the event; the byte encoding belongs to ledger/.                         */

enum event_type {
	EV_NONE = 0,
	EV_TENANT,
	EV_TENANT_GONE,
	EV_BUDGET,
	EV_RAWKEY,
	EV_CLASS,
	EV_NODE, /* class NODE_EXISTS_CLASS: the Node object appears
		    (serves true) or is gone (false), capacity 0 */
	EV_RESERVE,
	EV_RELEASE,
	EV_ALLOC,
	EV_FREE,
	EV_VERDICT,
	EV_NOTE,
	EV_TICK,
	EV_HOLDS, /* the holds mode (DESIGN 3.7): value = TTL in ms, 0 off */
	EV_MAX
};

/* The longest TTL a HOLDS event may carry (a day): a hold is a promise
 * for the time between an admission and its object's first observation,
 * minutes at most; the bound keeps every expiry within int64 time. */
#define HOLDS_TTL_MS_MAX 86400000LL

/* The class of a NODE event that records a Node object's existence
 * (DESIGN 6: replay lists every Node that exists, GPU entries or not). */
#define NODE_EXISTS_CLASS ""

struct event {
	uint64_t seq;	 /* 1, 2, ... (0 = not yet assigned) */
	int64_t time_ns; /* UTC nanoseconds */
	enum event_type type;
	const char *ns;	    /* TENANT*, BUDGET, RAWKEY, RESERVE..FREE, NOTE */
	const char *parent; /* TENANT*: NULL for tenant-root */
	const char *key;    /* BUDGET: key; RAWKEY: resource; NOTE: code */
	bool present;	 /* BUDGET: value set; RAWKEY: declared; NODE: serves */
	int64_t value;	 /* BUDGET value; NODE capacity; HOLDS TTL in ms */
	const char *cls; /* CLASS, NODE, RESERVE..FREE */
	const char *text; /* CLASS: canonical definition JSON or NULL (removed);
			     VERDICT: canonical record JSON; NOTE: message */
	const char *node; /* NODE, ALLOC, FREE ("" = none) */
	enum holder_kind kind; /* RESERVE..FREE; NOTE: object kind or HK_NONE */
	const char *name;      /* RESERVE..FREE; NOTE: object name */
	const char *uid;       /* RESERVE..FREE */
	int64_t before, after; /* RESERVE..FREE */
};

const char *event_type_name(enum event_type t); /* "RESERVE", ... */
/* Checks the fields an event of its type must have (names valid, counts
 * non-negative, direction of before/after right for its type). */
int event_validate(const struct event *ev, struct lg_error *err);
/* JSON form (used by `log` and inline states): {"seq", "time" (RFC 3339 with
 * nanoseconds), "type", fields...}. New reference. */
json_t *event_to_json(const struct event *ev);
/* The canonical text of an event (DESIGN 4.4): JCS of event_to_json with
 * JCS_INT_STRINGS, what `log` prints and what a Merkle leaf hashes. NULL
 * only for text that is not UTF-8. Caller frees. */
char *event_jcs(const struct event *ev);
/* The same appended to b, for callers that hash many; -1 where event_jcs
 * gives NULL or b refuses the text (its max). */
int event_jcs_write(struct lg_buf *b, const struct event *ev);
/* Reads the JSON form. Strings are borrowed from v; CLASS "definition" and
 * VERDICT "record" are objects in JSON: they are rendered canonically into
 * *scratch (caller frees with free()). seq and time are optional (0). */
int event_from_json(struct event *ev, const json_t *v, char **scratch,
		    struct lg_error *err);



/* ---------------------------------------------------------------------- */
/* The projection: state + event -> state (DESIGN 4).                       */

typedef struct state state_t;

state_t *state_new(void);
void state_free(state_t *st);
/* Applies ev after checking that it fits: seq is the next one (when ev->seq
 * is not 0), time does not go back, before matches the state, after moves in
 * the direction of the type, tenants appear and disappear in tree order.
 * On error the state is unchanged and err says why (LG_EMISMATCH). */
int state_apply(state_t *st, const struct event *ev, struct lg_error *err);
/* state_apply for an event that has just passed event_validate (every
 * decoded event has): the same checks against the state, without checking
 * the event's own fields a second time. */
int state_apply_validated(state_t *st, const struct event *ev,
			  struct lg_error *err);
uint64_t state_seq(const state_t *st);
int64_t state_time_ns(const state_t *st);
/* The horizon: time of the last event other than NOTE and VERDICT. */
int64_t state_horizon_ns(const state_t *st);
/* The current class table. Borrowed until the next state_apply. */
const struct class_table *state_classes(const state_t *st);
/* Deep copy (for verdicts on a snapshot while the state moves on). */
state_t *state_clone(const state_t *st);
/* The replay JSON of DESIGN 6 (`replay --json`): new reference. When ns is
 * not NULL, only that tenant. */
json_t *state_to_json(const state_t *st, const char *ns);

/* Walking a state's live records (model/walk.c): tenant nodes that exist,
 * holders with units, Node objects with existence, capacity or serving,
 * each once and in no particular order, as views into the state (borrowed
 * for the call). A NULL callback skips its kind; a non-zero return stops
 * the walk and is returned. */
struct state_tenant_view {
	const char *ns, *parent; /* parent NULL for tenant-root */
	size_t n_budgets;
	const struct budget_entry *budgets; /* sorted by key */
	size_t n_raw;
	const char *const *raw; /* sorted */
};
struct state_units_view {
	const char *cls;
	int64_t reserved, allocated;
	const char *node; /* where allocated; NULL when not */
};
struct state_holder_view {
	enum holder_kind kind;
	const char *ns, *name, *uid;
	size_t n; /* >= 1 */
	const struct state_units_view *units;
};
struct state_cap_view {
	const char *cls;
	int64_t capacity;
	bool serves;
};
struct state_node_view {
	const char *name;
	bool exists; /* a NODE_EXISTS_CLASS event said so */
	size_t n;    /* classes with capacity or serving */
	const struct state_cap_view *caps;
};
struct state_walk_fns {
	int (*tenant)(void *ctx, const struct state_tenant_view *t);
	int (*holder)(void *ctx, const struct state_holder_view *h);
	int (*node)(void *ctx, const struct state_node_view *n);
};
int state_walk(const state_t *st, const struct state_walk_fns *f, void *ctx);

/* Checkpoint bytes (model/statecodec.c): a canonical, versioned
 * serialisation of the whole state. Equal states encode to equal bytes (the
 * order of records is sorted, derived data such as subtree totals is left
 * out and recomputed), so verify can compare a replay with a checkpoint
 * byte for byte. state_encode: *buf is malloc'ed, caller frees; LG_ELIMIT
 * past 1 TiB (more than a ledger's default map holds).
 * state_decode validates everything (lengths, counts, names, enums, that
 * units are non-negative and the tree is consistent) and never crashes on
 * bad bytes: LG_ECORRUPT with detail, LG_EVERSION for another version. */
int state_encode(const state_t *st, uint8_t **buf, size_t *len);
int state_decode(state_t **out, const uint8_t *buf, size_t len,
		 struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* Holds (DESIGN 3.7; model/holds.c): a budget that holds under concurrent
 * admission. Everything here is derived from the log by replay.
 *
 * The mode is the last HOLDS event (off before any): its TTL in ms, 0 off.
 * While on, every VERDICT whose record is an allowed admission with growth
 * (reason WithinBudget; dry runs are never recorded) makes a hold for its
 * object (namespace, kind, name), replacing the object's hold if it has
 * one: per class c of the request's new spec, held units = max(0, new[c] -
 * observed[c]), observed being the object's reserved units in the state
 * the VERDICT is applied to. A verdict without growth (a shrink, a delete)
 * leaves a hold as it is: the API server may still refuse that write, and
 * a promise is not lowered on a write that may not happen. A hold ends
 *  - at the object's first observation after it: the first RESERVE or
 *    RELEASE of the object (the first event of the watch event that
 *    observed it, DESIGN 3.6 "one observation"); a RELEASE to 0 counts as
 *    the object's DELETE, anything else as an observation;
 *  - when replaced, as above;
 *  - when the log's time reaches its expiresAt = the log's time at the
 *    verdict + the TTL in force then. The log's time is the horizon
 *    (4.1): the time of the last event other than NOTE, VERDICT and
 *    HOLDS, so no answering process's clock moves it (a VERDICT's time
 *    is its basis event's, DESIGN 11);
 *  - when the mode is turned off (every hold), or its namespace's tenant
 *    node goes (TENANT_GONE: its objects are gone).
 * A HOLDS event that does not change the mode is refused (LG_EMISMATCH),
 * like every event that changes nothing. Changing the TTL leaves the
 * expiry of alive holds as it was.
 *
 * With holds on, every usage of 3.1-3.3 (admission checks, a declaration's
 * pooled usage, remaining) is observed + held, and each check of a record
 * carries "held"; billing, overcommit (3.4) and reconcile's overshoots stay
 * on observed usage. With holds off nothing of this shows anywhere.
 *
 * A verdict path with holds on judges a batch one verdict after another,
 * each on the state after the ones before it (basisSeq = seq - 1):
 *
 *   ws = state_clone(basis)            (or a state the caller owns)
 *   for each request r, in the order they are appended:
 *       verdict_judge(ws, r, &v, err)
 *       v.id = ...; v.basis_seq = state_seq(ws); v.chain_head = head at it
 *       text = verdict_record_text(&v, max, scratch)
 *       state_apply(ws, &(struct event){.type = EV_VERDICT,
 *                                       .seq = state_seq(ws) + 1,
 *                                       .time_ns = state_time_ns(ws),
 *                                       .text = text}, err)
 *       head = the chain head after that event
 *
 * so that verdict k sees the holds of verdicts 1..k-1 (the VERDICT's time
 * is its basis event's, DESIGN 11; holds read only the log's time, so
 * another stamp changes no hold). A dry run is judged on ws and not
 * applied. With holds off a VERDICT changes nothing a judgement reads, and
 * judging a batch on one state is exact as before.
 *
 * What says whether a VERDICT made or replaced a hold: state_holds_gen
 * before and after applying it differ. In a cluster (DESIGN 11), a verdict
 * whose compare failed over intervening VERDICTs may be re-numbered only
 * when, applying them in order, none changed state_holds_gen (then the
 * state a judgement reads is unchanged); otherwise it is judged again on
 * the new state. A HOLDS event in between, like any observation, means
 * judge again. */

enum hold_end {
	HOLD_END_OBSERVED, /* the object's first observation */
	HOLD_END_REPLACED, /* a later allowed verdict with growth */
	HOLD_END_DELETED,  /* a RELEASE to 0, or its tenant node gone */
	HOLD_END_EXPIRED,  /* the log's time reached expiresAt */
	HOLD_END_OFF,	   /* the mode turned off */
	HOLD_END_MAX
};
/* "observation", "replacement", "delete", "expiry", "off". */
const char *hold_end_name(enum hold_end e);

struct state_holds_stats {
	bool on;
	int64_t ttl_ms;
	size_t alive;
	uint64_t made;		       /* holds made since genesis */
	uint64_t ended[HOLD_END_MAX]; /* holds ended, by how */
};
void state_holds_stats(const state_t *st, struct state_holds_stats *out);
bool state_holds_on(const state_t *st);
/* Every alive hold (of the subtree of tenant, when not NULL), sorted by
 * verdict id: [{"verdictId", "namespace", "kind", "name", "units" {class:
 * n}, "expiresAt"}]. New reference. */
json_t *state_holds_json(const state_t *st, const char *tenant);
/* A number that changes whenever the holds change (one made, one ended):
 * a pure function of the log's position. A VERDICT made or replaced a
 * hold iff applying it changed this number; a cache of anything holds
 * show (remaining, tenant objects) is valid while it and the content it
 * was built from (a HOLDS event is content) are. */
uint64_t state_holds_gen(const state_t *st);

/* ---------------------------------------------------------------------- */
/* Verdicts (DESIGN 3), computed on a state snapshot.                       */

/* Remaining (3.3): {"classes": {...}, "total": {...}} for namespace ns. */
json_t *state_remaining_json(const state_t *st, const char *ns);

/* ---------------------------------------------------------------------- */
/* Verdict requests and records (model/vrequest.c, DESIGN 3.5): what is
 * judged is what is recorded. Every caller that judges reads its request
 * here, as the record will be read back (json_loadb_doubles), and every
 * record is written and re-derived here.                                 */

enum verdict_kind {
	VERDICT_ADMISSION,   /* 3.1: POST /v1/admission, eval Admission */
	VERDICT_DECLARATION, /* 3.2: POST /v1/declarations, eval Declaration */
	VERDICT_KIND_MAX
};

/* The bounds of what an AdmissionReview may bring into a record (DESIGN
 * 7): request.uid and the JCS text of request.userInfo, in bytes. */
#define VERDICT_REVIEW_UID_MAX	    128
#define VERDICT_REVIEW_USERINFO_MAX (16 * 1024)
/* An Idempotency-Key header of a plain POST (DESIGN 11 rule 3): 1 to this
 * many bytes of printable ASCII (0x20-0x7e), no space first or last. */
#define VERDICT_IDEMPOTENCY_KEY_MAX 128

/* One request, in the form that is judged and recorded. */
struct verdict_request {
	enum verdict_kind kind;
	json_t *req;	   /* the request members only; owned */
	json_t *requester; /* AdmissionReview: who asked; NULL; owned */
	char *review_uid;  /* AdmissionReview: answer one; NULL; owned */
	/* A plain request's Idempotency-Key header, or NULL; owned. Set by
	 * the caller after verdict_request_read (a header is not the
	 * body's); never with review_uid (a review's uid governs). */
	char *idempotency_key;
	bool dry_run; /* request.dryRun: judged, not recorded */
};

/* What makes a request a repeat (DESIGN 11 rule 3: one review, one
 * verdict): an AdmissionReview's uid, or a plain request's
 * Idempotency-Key. The two never meet: a key names only its own kind. */
enum verdict_key_kind {
	VERDICT_KEY_NONE,
	VERDICT_KEY_REVIEW,	 /* "requester"."uid" */
	VERDICT_KEY_IDEMPOTENCY, /* "idempotencyKey" */
};
struct verdict_key {
	enum verdict_key_kind kind;
	char s[(VERDICT_REVIEW_UID_MAX > VERDICT_IDEMPOTENCY_KEY_MAX
			? VERDICT_REVIEW_UID_MAX
			: VERDICT_IDEMPOTENCY_KEY_MAX) +
	       1];
};
/* r's key: NONE for a dry run (judged, never recorded) or a request
 * without one. */
void verdict_request_key(const struct verdict_request *r,
			 struct verdict_key *k);
/* Whether a and b are the same key (NONE is no key: equal to none). */
static inline bool verdict_key_equal(const struct verdict_key *a,
				     const struct verdict_key *b)
{
	return a->kind != VERDICT_KEY_NONE && a->kind == b->kind &&
	       strcmp(a->s, b->s) == 0;
}
/* Whether a header value is a valid Idempotency-Key (len bytes). */
bool verdict_idempotency_key_valid(const char *s, size_t len);

/* Reads a request body of kind: a plain request ({namespace, kind, name,
 * old, new} for admission, {namespace, old, new} for a declaration; other
 * members are dropped) or an AdmissionReview v1 for that kind's resources
 * (VMInstance/KubernetesNodes; Tenant), read as json_loadb_doubles reads
 * (duplicate keys and numbers no double holds are errors). LG_EINVAL with
 * err set (a 400): malformed JSON, a review of the other kind, a review
 * whose uid, userInfo or dryRun is out of bounds. *out is released by
 * verdict_request_release, also after an error. */
int verdict_request_read(enum verdict_kind kind, const char *body, size_t len,
			 struct verdict_request *out, struct lg_error *err);
void verdict_request_release(struct verdict_request *r);
#define VERDICT_HEAD_HEX 64 /* a chain head in hex */

/* One budget check of a verdict (DESIGN 3.5 "checks"). */
struct verdict_check {
	char *tenant, *key; /* owned */
	bool has_budget;    /* false: budget and remaining are null */
	int64_t budget, used, growth, remaining; /* clamped to int64 */
	bool ok;
	/* Judged with holds on (DESIGN 3.7): the held units inside used's
	 * subtree, which used excludes; remaining = budget - used - held -
	 * growth. Off: no "held" member, the record as before holds. */
	bool has_held;
	int64_t held;
};

/* A verdict, the one currency between judging, recording, answering and
 * auditing (DESIGN 3.5): what the model decided, the request it decided
 * on, who asked, and where it is recorded. verdict_write is its one
 * canonical writer; every text of it (record, answer, eval output) comes
 * from there. */
struct verdict {
	enum verdict_kind kind;
	bool allowed;
	const char *reason;	      /* static */
	char *message;		      /* owned, valid UTF-8 */
	struct verdict_check *checks; /* owned */
	size_t n_checks;
	char **warnings; /* owned, valid UTF-8 */
	size_t n_warnings;
	json_t *request;   /* the request judged (canonical); a reference */
	json_t *requester; /* AdmissionReview: who asked; a reference, NULL */
	/* A plain request's Idempotency-Key, or "": part of the record (its
	 * "idempotencyKey"), not of the judgement, like the requester. */
	char idempotency_key[VERDICT_IDEMPOTENCY_KEY_MAX + 1];
	/* The record's place, written when asked for (VERDICT_W_*). */
	uint64_t id, seq, basis_seq;
	char chain_head[VERDICT_HEAD_HEX + 1];
	/* A cluster member's wall clock when it answered (DESIGN 11), RFC
	 * 3339 with ns, or "" (single-pod records have none). Part of the
	 * record, not of the judgement: written only when set, copied by
	 * re-derivation like the requester. */
	char answered_at[40];
};
void verdict_release(struct verdict *v);

/* Judges r on st into *out (released by verdict_release, also after an
 * error); LG_EINVAL for a malformed request. */
int verdict_judge(const state_t *st, const struct verdict_request *r,
		  struct verdict *out, struct lg_error *err);

/* What verdict_write writes besides the judgement: basisSeq and
 * chainHead, id, seq. A record is VERDICT_W_RECORD; its answer adds seq. */
#define VERDICT_W_BASIS	 1u
#define VERDICT_W_ID	 2u
#define VERDICT_W_SEQ	 4u
#define VERDICT_W_RECORD (VERDICT_W_BASIS | VERDICT_W_ID)
/* Appends the canonical JSON (RFC 8785) of v with the members of what to
 * b: integers beyond +-(2^53-1) as the doubles JCS gives them (int_flags
 * JCS_INT_DOUBLES; 0 writes their exact digits, as records were written
 * before). -1 (b holds a part) when longer than max_bytes or than b's
 * max. */
int verdict_write(struct lg_buf *b, const struct verdict *v, unsigned what,
		  unsigned int_flags, size_t max_bytes);
/* The record text of v (verdict_write of VERDICT_W_RECORD with
 * JCS_INT_DOUBLES), NULL when longer than max_bytes. Caller frees. */
char *verdict_record_text(const struct verdict *v, size_t max_bytes,
			  struct lg_buf *scratch);
/* The AdmissionReview v1 answering review uid with v (new reference):
 * status, warnings, and as audit annotations the record's id and seq when
 * recorded (recorded false: a dry run, said so instead). */
json_t *verdict_review_response(const char *uid, const struct verdict *v,
				bool recorded);

/* The parts of a stored VERDICT record an audit needs. */
struct verdict_ref {
	uint64_t id;			       /* the record's "id" */
	uint64_t basis_seq;		       /* its "basisSeq" */
	char chain_head[VERDICT_HEAD_HEX + 1]; /* its "chainHead" */
};
/* Reads id, basisSeq and chainHead of a stored record (len bytes of
 * canonical JSON). LG_ECORRUPT when the record is not a verdict. */
int verdict_record_parse(const char *record, size_t len,
			 struct verdict_ref *ref, struct lg_error *err);
/* The key a stored record was judged for into *k: its AdmissionReview uid
 * ("requester"."uid", at most VERDICT_REVIEW_UID_MAX bytes) or its
 * "idempotencyKey"; 1 when it has one that fits, 0 (k->kind NONE) when not
 * (a plain request without a key, or not a record). */
int verdict_record_key(const char *record, size_t len, struct verdict_key *k);
/* One review, one verdict (DESIGN 11 rule 3): the answer r (a review, or a
 * plain request with an Idempotency-Key) had when its stored record (len
 * bytes at seq) was judged, byte for byte the first answer (new
 * reference): an AdmissionReview for a review, the record with its seq
 * for a plain request. NULL with err: LG_EEXIST when the record is of
 * another kind or judged another request (a uid or key reused for a
 * different body), LG_ECORRUPT when it is not a verdict record. */
json_t *verdict_record_review_again(const char *record, size_t len,
				    uint64_t seq,
				    const struct verdict_request *r,
				    struct lg_error *err);
/* Recomputes a stored record on basis, the state at its basisSeq, whose
 * chain head is head_hex: its kind's verdict on its "request", with its
 * requester, id, basisSeq and chain head. *recomputed is the record text
 * (caller frees); *match tells whether it equals the stored record byte for
 * byte. LG_ECORRUPT when the record cannot be read as a verdict. */
int verdict_record_recompute(const state_t *basis, const char *head_hex,
			     const char *record, size_t len, char **recomputed,
			     bool *match, struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* The reconciliation audit (model/reconcile.c, DESIGN 3.6): every event of
 * the log, in order, each handed over with the state after it; findings
 * come out as they are found: objects observed before admission was in
 * force, then bypasses (the first kind only before since_seq, the second
 * only from it, so the first list is complete before the second starts),
 * and each overshoot when the event that ends it has been fed (those one
 * event ends by fromSeq, tenant, key), the ones still open by
 * reconcile_finish in the same order. Bypasses and overshoots interleave:
 * a writer of one document asks for them in two passes (opts.lists).
 * Memory is bounded by the live objects, the open overshoots and the
 * verdicts and observations of one window, never by the log's length or
 * by the findings. */

typedef struct reconcile reconcile_t;

struct reconcile_opts {
	uint64_t from_seq;  /* findings at seqs >= from_seq (>= 1) */
	uint64_t to_seq;    /* and <= to_seq (0: no end) */
	uint64_t since_seq; /* admission in force from here (0: never) */
	int64_t window_ns;  /* a verdict covers observations this soon after */
	const char *tenant; /* only this subtree's findings (NULL: all) */
	unsigned lists;	    /* the lists handed to the emit function, a bit
			       (1u << enum reconcile_list) each (0: all);
			       the others are only counted. Overshoots not
			       asked for are not followed at all. */
};

enum reconcile_list {
	RECONCILE_PRE_EXISTING, /* {"seq", "time", "namespace", "kind",
				   "name", "uid"} */
	RECONCILE_BYPASS,	/* the same and "class", "before", "after",
				   "previousSeq" (null: none) */
	RECONCILE_OVERSHOOT	/* {"tenant", "key", "fromSeq", "fromTime",
				   "toSeq", "toTime", "budget", "used",
				   "peak", "trigger", "causes",
				   "causesOmitted"}; toSeq/toTime null while
				   it lasts */
};
/* Receives one finding (borrowed for the call); non-zero stops the feed:
 * reconcile_event returns it. */
typedef int reconcile_emit_fn(void *ctx, enum reconcile_list list,
			      const json_t *item);

/* opts are copied. Caller frees with reconcile_free (accepts NULL). */
reconcile_t *reconcile_new(const struct reconcile_opts *o,
			   reconcile_emit_fn *fn, void *ctx);
/* ev has just been applied to st (st is the state after it). */
int reconcile_event(reconcile_t *rc, const state_t *st,
		    const struct event *ev);
/* Hands over the overshoots still open (toSeq null), then sets *summary to
 * {"counts": {"events", "admissionVerdicts", "preExisting", "bypasses",
 * "overshoots"}} for what was fed (new reference). Returns the emit
 * function's non-zero answer (then *summary is NULL). Call once, after the
 * last event. */
int reconcile_finish(reconcile_t *rc, json_t **summary);
void reconcile_free(reconcile_t *rc);
/* A Go-style duration ("10m", "1h30m", "90s", "500ms") in ns: LG_EINVAL
 * for anything else, LG_ERANGE beyond int64. */
int reconcile_window_parse(const char *s, int64_t *out_ns);
#define RECONCILE_WINDOW_DEFAULT "10m"
/* Which recorded verdicts to list (model/vfilter.c): the parameters of GET
 * /v1/verdicts and the options of `gpuledger verdicts` (DESIGN 3.5, 6),
 * parsed and matched here for both, so that the same filter gives the same
 * answer and the same bad value the same refusal. ledger_verdicts_list
 * reads the log with it.                                                  */

#define VERDICT_FILTER_LIMIT_DEFAULT 100
#define VERDICT_FILTER_LIMIT_MAX     1000
#define VERDICT_FILTER_TEXT_MAX	     255 /* bytes of requester, reason */

struct verdict_filter {
	char tenant[DNS1123_SUBDOMAIN_MAX + 1]; /* the request's namespace is
						   in its subtree */
	char requester[VERDICT_FILTER_TEXT_MAX + 1]; /* = requester.username */
	char reason[VERDICT_FILTER_TEXT_MAX + 1];    /* = reason */
	bool has_tenant, has_requester, has_reason;
	int allowed; /* -1 either, else the answer asked for (0 or 1) */
	bool desc;   /* newest first */
	int64_t from_ns, to_ns;	       /* the VERDICT event's time in [from, to) */
	uint64_t after, before, limit; /* ids in (after, before); at most limit */
};

/* The parameter names, NULL-terminated: tenant, requester, reason,
 * allowed, from, to, after, before, order, limit. */
extern const char *const verdict_filter_params[];

/* Every verdict, in id order, VERDICT_FILTER_LIMIT_DEFAULT at a time. */
void verdict_filter_init(struct verdict_filter *f);
/* Sets parameter name (one of verdict_filter_params) from its text value.
 * LG_EINVAL when the value is not one the parameter takes: err says why in
 * a phrase that follows the parameter's name (`"maybe" is not true or
 * false`), the same for every caller; LG_ENOENT for an unknown name. */
int verdict_filter_set(struct verdict_filter *f, const char *name,
		       const char *value, struct lg_error *err);
/* Whether f takes the verdict record (its JSON) of a VERDICT event at
 * time_ns; ids are the lister's to bound. */
bool verdict_filter_match(const struct verdict_filter *f, int64_t time_ns,
			  const json_t *record);

/* ---------------------------------------------------------------------- */
/* eval (DESIGN 6.1): one function per name, input JSON -> output JSON.     */

struct eval_ctx {
	const struct class_table *classes; /* --classes, may be NULL */
	const state_t *state;		   /* --db state, may be NULL */
};

/* Evaluates one request line's function on input. On success *out is a new
 * reference to the output value; on error err says why. */
int model_eval(const struct eval_ctx *ctx, const char *function,
	       const json_t *input, json_t **out, struct lg_error *err);
/* Whether function judges a verdict request (Admission, Declaration): its
 * line must then be read as a verdict request is read, by
 * json_loadb_doubles, so that eval and serve judge the same tree. */
bool model_eval_is_verdict(const char *function);

/* ---------------------------------------------------------------------- */
/* Billing (DESIGN 8, Appendix A "Streams and time"): the pure parts of the
 * export. Usage is integer device-milliseconds; money is integer nano units
 * of a currency; nothing here uses floating point.                        */

enum bill_step {
	BILL_STEP_HOUR = 0,
	BILL_STEP_DAY
};
enum bill_basis {
	BILL_BASIS_RESERVED = 0,
	BILL_BASIS_ALLOCATED
};
/* The FOCUS version the rows follow (docs/billing.md). 1.2 is the zero
 * value so that a row built without a version keeps the 1.2 bytes. */
enum bill_focus {
	BILL_FOCUS_1_2 = 0,
	BILL_FOCUS_1_3
};

#define BILL_MS_PER_HOUR 3600000LL
#define BILL_MS_PER_DAY	 86400000LL
#define BILL_HEAD_BYTES	 32 /* a chain head, as ledger/ stores it */

/* The same in the local time of a fixed offset from UTC (offset_s seconds,
 * a whole number of minutes): the first local hour or day boundary strictly
 * after t_ms, in UTC ms. Every local month starts on such a boundary, so no
 * charge period crosses a billing period. */
int64_t bill_boundary_after(int64_t t_ms, enum bill_step step,
			    int32_t offset_s);
/* The calendar month (billing period, DESIGN 8) holding t_ms in the local
 * time of offset_s: [*start_ms, *end_ms) in UTC ms. */
void bill_month_of(int64_t t_ms, int32_t offset_s, int64_t *start_ms,
		   int64_t *end_ms);
/* "YYYY-MM" (year 1970..9999, month 01..12) into that month's bounds in
 * the local time of offset_s; LG_EINVAL for anything else. LG_ERANGE (the
 * bounds still set) when the month does not lie within what the ledger
 * can date, [1970-01-01T00:00:00Z, TIME_LAST_TEXT]: the bounds then do not
 * fit int64 nanoseconds. On 0, start_ms * 1000000 and end_ms * 1000000
 * fit int64. */
int bill_month_parse(const char *s, int32_t offset_s, int64_t *start_ms,
		     int64_t *end_ms);
/* Why bill_month_parse refuses s, a phrase to follow the quoted text; a
 * static string. */
const char *bill_month_why(const char *s, int32_t offset_s);

/* The accumulators of every (namespace, class) of a state at one instant,
 * for one basis. Namespace and class names are borrowed from the state the
 * snapshot was taken of: a state never drops a namespace record or a class
 * name, so they stay valid until that state is freed. */
struct bill_snap;
struct bill_snap *bill_snap_new(void);
void bill_snap_free(struct bill_snap *s);
/* Replaces s with st's accumulators carried forward to t_ms, sorted by
 * namespace then class, zero ones left out. st must be the state after the
 * last event at or before t_ms: LG_EINVAL when some accumulator has already
 * been advanced past t_ms. */
int bill_snap_take(struct bill_snap *s, const state_t *st, int64_t t_ms,
		   enum bill_basis basis, struct lg_error *err);
int64_t bill_snap_time_ms(const struct bill_snap *s);

/* One usage figure of a period: a namespace's, or with subtree set, the
 * sum over a tenant's subtree (ns is then the subtree's root). Strings are
 * borrowed for the call. */
struct bill_usage {
	const char *ns, *cls;
	bool subtree;
	int64_t device_ms; /* > 0 */
};
typedef int bill_usage_fn(void *ctx, const struct bill_usage *u);
/* Calls fn for the usage between snapshots a and b (b later): first every
 * namespace's non-zero usage sorted by namespace and class, then, with
 * rollup, every tenant's subtree sums sorted by tenant and class (tenants
 * by the name rule of DESIGN 2.1; non-tenant namespaces are in no subtree).
 * fn returns non-zero to stop; that value is returned. LG_ECORRUPT when an
 * accumulator went down (the snapshots are not of one history). */
int bill_period_usage(const struct bill_snap *a, const struct bill_snap *b,
		      bool rollup, bill_usage_fn *fn, void *ctx,
		      struct lg_error *err);

/* The billing file (DESIGN 8): prices per GPU-hour by class and currency,
 * and the identity the FOCUS columns name, every member optional:
 *   {"rates": [{"class": "h100", "currency": "USD",
 *               "listUnitPrice": "3.20", "billedUnitPrice": "2.50"}],
 *    "billingAccountId": "cluster", "billingAccountName": "cluster",
 *    "providerName": "Cozystack", "publisherName": <providerName>,
 *    "serviceProviderName": <providerName>,
 *    "hostProviderName": <serviceProviderName>,
 *    "invoiceIssuerName": <providerName>, "serviceName": "GPU Compute",
 *    "regionId": null, "regionName": <regionId>,
 *    "billingPeriodOffset": "Z"}
 * class is a DNS-1123 label, currency three capital letters (ISO 4217),
 * prices decimal strings (model__bill_decimal_parse) or JSON integers; a JSON
 * real is refused, because its decimal text is already lost. billedUnitPrice
 * (ContractedUnitPrice) defaults to listUnitPrice. A (class, currency) pair
 * may appear once. With "rates" present (priced), every class must have a
 * rate in the billing currency (bill_rates_cover): a free class is an
 * explicit "0". Without it every price is an explicit 0. Names are 1 to
 * BILL_NAME_MAX bytes of printable text; billingPeriodOffset is a fixed
 * offset (model__bill_offset_parse): months are calendar months of that local
 * time. */
#define BILL_NAME_MAX 128
struct bill_rate {
	char cls[DNS1123_LABEL_MAX + 1];
	char currency[4];
	int64_t list_nano, billed_nano; /* per GPU-hour */
};
struct bill_rates {
	size_t n;
	struct bill_rate *r; /* owned, sorted by currency then class */
	bool priced;	     /* the file had "rates" */
	int32_t offset_s;    /* billing months in UTC + offset_s */
	char account_id[BILL_NAME_MAX + 1], account_name[BILL_NAME_MAX + 1];
	char provider[BILL_NAME_MAX + 1], publisher[BILL_NAME_MAX + 1];
	char issuer[BILL_NAME_MAX + 1], service[BILL_NAME_MAX + 1];
	/* FOCUS 1.3's ServiceProviderName and HostProviderName. */
	char service_provider[BILL_NAME_MAX + 1];
	char host_provider[BILL_NAME_MAX + 1];
	char region_id[BILL_NAME_MAX + 1]; /* "": no region configured */
	char region_name[BILL_NAME_MAX + 1];
};
/* Empty and unpriced, with the default names and UTC. */
void bill_rates_init(struct bill_rates *r);
void bill_rates_release(struct bill_rates *r);
/* On error r is left as bill_rates_init makes it and err says which entry
 * and why. */
int bill_rates_parse(struct bill_rates *r, const json_t *doc,
		     struct lg_error *err);
/* The rate of (currency, cls), or NULL. Borrowed from r. */
const struct bill_rate *bill_rates_find(const struct bill_rates *r,
					const char *currency, const char *cls);
/* The currency to bill in: want when r has it (LG_ENOENT otherwise), else
 * the only currency of r (LG_EINVAL when there are several). *out is
 * borrowed from want or r. */
int bill_rates_currency(const struct bill_rates *r, const char *want,
			const char **out, struct lg_error *err);
/* For priced rates: LG_ENOENT naming the first class st has ever known
 * that has no rate in currency. 0 when unpriced. */
int bill_rates_cover(const struct bill_rates *r, const char *currency,
		     const state_t *st, struct lg_error *err);
/* cost = price_nano x PricingQuantity as the row prints it (device_ms /
 * 3,600,000 hours truncated to 9 decimals), rounded half up to a whole
 * nano unit: FOCUS's ListCost = ListUnitPrice x PricingQuantity holds
 * exactly at the printed scale (DESIGN 8). The product is exact (128-bit)
 * before the one rounding. LG_ERANGE when it does not fit int64. */
int bill_cost(int64_t device_ms, int64_t price_nano, int64_t *cost_nano);

/* One row of the export (DESIGN 8). Strings are borrowed for the call that
 * hands the row over. Times are ms since the epoch, UTC, whole seconds. */
struct bill_row {
	int64_t billing_start_ms, billing_end_ms; /* the calendar month */
	bool period_open; /* the horizon is before billing_end_ms */
	int64_t charge_start_ms, charge_end_ms; /* the row's period */
	const char *ns;				/* SubAccountId */
	const char *cls;			/* x_DeviceClass */
	bool subtree; /* a --rollup subtree row: ns is the tenant */
	enum bill_basis basis;
	int64_t device_ms;
	const char *currency;	      /* BillingCurrency */
	const struct bill_rates *cfg; /* names and offset; NULL: defaults */
	bool priced;		      /* a rate was found */
	int64_t list_unit_nano, contracted_unit_nano; /* 0 when not priced */
	int64_t list_cost_nano, billed_cost_nano;     /* 0 when not priced */
	/* The log range the row was computed from: the states after seq_start
	 * and seq_end are those at the period's start and end; chain_head is
	 * the head after seq_end. */
	uint64_t seq_start, seq_end;
	uint8_t chain_head[BILL_HEAD_BYTES];
	/* FOCUS 1.3: a namespace row is an allocated charge of its class's
	 * pool for the period (the origin charge), whose usage is
	 * pool_device_ms; ratio_pico is the row's AllocatedRatio in units of
	 * 1e-12, and the ratios of one pool sum to exactly 1e12. Unused for
	 * subtree rows and in 1.2. */
	enum bill_focus focus;
	int64_t pool_device_ms, ratio_pico;
};
#define BILL_RATIO_ONE 1000000000000LL /* AllocatedRatio 1, in 1e-12 */
/* AllocatedMethodId of that split, documented in docs/billing.md. */
#define BILL_ALLOC_METHOD_ID "gpuledger/device-ms-proportional"
/* The ratio_pico of an allocated charge: round_half_up(cum_ms x 1e12 /
 * pool_ms) - round_half_up(prev_ms x 1e12 / pool_ms), where prev_ms and
 * cum_ms are the pool's usage summed over the rows before it and up to it
 * (pool_ms > 0, 0 <= prev_ms <= cum_ms <= pool_ms): the ratios of a pool
 * then sum to BILL_RATIO_ONE exactly, and each is within 1e-12 of its
 * exact share. */
int64_t bill_alloc_ratio(int64_t prev_ms, int64_t cum_ms, int64_t pool_ms);

/* Row formats (FOCUS 1.2 or 1.3 columns, then x_ ones; DESIGN 8 and
 * docs/billing.md). The CSV header
 * and lines carry no newline; with scope, the column x_Scope ("namespace"
 * or "subtree") is appended (--rollup); RegionId and RegionName are there
 * when cfg (may be NULL) configures a region. A null is an empty field;
 * fields holding a comma or a quote are quoted (RFC 4180). Both return
 * the length needed (like snprintf). */
size_t bill_csv_header(bool scope, const struct bill_rates *cfg,
		       enum bill_focus focus, char *buf, size_t cap);
size_t bill_row_csv(const struct bill_row *row, bool scope, char *buf,
		    size_t cap);
/* The row as an object with the CSV column names as keys: decimals, times
 * and JSON-valued columns as strings, nulls as null, x_LedgerSeq* and
 * x_DeviceMilliseconds as integers, x_Scope always present. New
 * reference. */
json_t *bill_row_json(const struct bill_row *row);

/* The opencost-csv view: one line per (day, namespace) with OpenCost's
 * allocation CSV columns that concern GPUs. Rows must arrive grouped by
 * period and namespace (as the export gives them); subtree rows are
 * refused (LG_EINVAL). */
const char *bill_opencost_header(void);
#define BILL_LINE_MAX 1024
struct bill_opencost {
	bool open;
	int64_t start_ms, end_ms, device_ms, cost_nano;
	int32_t offset_s;
	char ns[DNS1123_SUBDOMAIN_MAX + 1];
};
void bill_opencost_init(struct bill_opencost *oc);
/* Adds row. When it starts a new (period, namespace), the finished line is
 * written into line (BILL_LINE_MAX bytes) and 1 is returned; else 0. */
int bill_opencost_add(struct bill_opencost *oc, const struct bill_row *row,
		      char *line, struct lg_error *err);
/* The last line, if any (1) or 0. */
int bill_opencost_flush(struct bill_opencost *oc, char *line);

#endif
