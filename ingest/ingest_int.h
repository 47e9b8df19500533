/*
 * ingest internals shared by the files of ingest/: the engine's API as its
 * sources (stream.c, follow.c, kube.c, replicate.c) drive it, and what the
 * engine's own files (engine.c, tree.c, holders.c, nodes.c, smap.c) share.
 * Not part of the public API: tools/ uses only ingest/ingest.h.
 *
 * The engine's cache mirrors, per watched object, what that object last
 * contributed to the ledger (the ledger's view: units with their uid and
 * node, a node's capacity and serving, a Tenant's budgets), plus what is
 * needed to map it again when the class table changes (a small JSON
 * extract). Diffs are always taken against the ledger's view, so an event
 * is emitted exactly when the ledger would change. The cache lives on in
 * the ledger's object table (objtab.c), written with every flush.
 */
#ifndef GPULEDGER_INGEST_INT_H
#define GPULEDGER_INGEST_INT_H

#include "ingest/ingest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------- */
/* Used by ingest/ (and its tests) only. */

/* The watched resources of DESIGN 2, in a fixed order. */
enum resource {
	RES_NAMESPACE = 0,
	RES_TENANT,
	RES_VMINSTANCE,
	RES_KUBERNETESNODES,
	RES_POD,
	RES_RESOURCECLAIM,
	RES_NODE,
	RES_CONFIGMAP, /* cozy-system/gpu-classes only */
	RES_MAX
};

struct ingest__resource_info {
	const char *api_version; /* "v1", "apps.cozystack.io/v1alpha1", ... */
	const char *kind;	 /* "Namespace", ... */
	const char *path;	 /* list/watch path of DESIGN 2 */
};
/* Static table, indexed by enum resource. */
const struct ingest__resource_info *ingest__resource_info(enum resource r);
/* The resource of an object by apiVersion and kind; RES_MAX if not ours. */
enum resource ingest__resource_of(const char *api_version, const char *kind);

enum watch_type {
	WATCH_ADDED,
	WATCH_MODIFIED,
	WATCH_DELETED,
	WATCH_BOOKMARK
};
/* The type named name ("ADDED", ...: the one table, in ingest/stream.c);
 * false when name is NULL or not one of them. */
bool ingest__watch_type_parse(const char *name, enum watch_type *type);

/* The engine, as its sources (stream.c, follow.c, kube.c, replicate.c)
 * drive it. */
/* One watch event of resource r (object may be NULL for BOOKMARK).
 * time_ns is the event time (0: keep the last time; earlier: clamped).
 * Invalid input becomes a NOTE; only operating errors (the ledger) fail. */
int ingest__event(ingest_t *in, enum watch_type type, const json_t *object,
		  int64_t time_ns, struct lg_error *err);
/* One line of a recorded stream: {"type", "object", "time"?}. Malformed
 * lines, unknown kinds and oversized lines are NOTEs. */
int ingest__line(ingest_t *in, const char *line, size_t len,
		 struct lg_error *err);

/* A relist of resource r: begin, then every listed object with
 * ingest__event(WATCH_ADDED), then end, which deletes what was not listed. */
int ingest__relist_begin(ingest_t *in, enum resource r, struct lg_error *err);
int ingest__relist_end(ingest_t *in, enum resource r, struct lg_error *err);

/* The position to commit with the next flush: the resourceVersion of r, or
 * for a recorded stream its byte offset (resource RES_MAX). */
void ingest__set_position(ingest_t *in, enum resource r, const char *value);
/* The committed position (NULL when none), borrowed. */
const char *ingest__position(ingest_t *in, enum resource r);

/* Appends what is pending (events, positions, and the object table's
 * records of the objects changed since the last flush) in one
 * transaction. */
int ingest__flush(ingest_t *in, struct lg_error *err);
/* Appends a TICK at time_ns if it is later than the horizon. */
int ingest__tick(ingest_t *in, int64_t time_ns, struct lg_error *err);

/* Makes t the class table (copied): CLASS events for the classes removed
 * (definition null) and for the new or changed ones, then every cached
 * object is mapped again and the differences are events. */
int ingest__set_classes(ingest_t *in, const struct class_table *t,
			struct lg_error *err);
/* The table in force, borrowed until the next call that changes it. */
const struct class_table *ingest__classes(const ingest_t *in);
/* The current event time (the last input time, never decreasing). */
int64_t ingest__time_ns(const ingest_t *in);
/* How often a quiet watcher ticks: tick_ns (--tick), or with holds on in
 * the log (DESIGN 3.7) at most a quarter of their TTL. */
int64_t ingest__tick_ns(const ingest_t *in, int64_t tick_ns);
/* A NOTE with no object, with code (a static string) and message (copied;
 * printable ASCII is kept, the rest becomes '?'), dated like the next
 * event; for what the sources see themselves (ClockStep, ApiAbsent). */
int ingest__note(ingest_t *in, const char *code, const char *msg,
		 struct lg_error *err);

/* The live watcher's clock (ingest/clock.c, DESIGN 4.1): the time events
 * are dated with, from CLOCK_MONOTONIC readings steered toward the wall
 * clock by at most 1/INGEST_CLOCK_SLEW_DIV of the elapsed time and never
 * more than 1 s between two readings. Zero-initialise. */
#define INGEST_CLOCK_SLEW_DIV 16
struct ingest_clock {
	bool started;
	int64_t mono_ns, wall_ns, ledger_ns; /* at the last reading */
};
/* The ledger time at a reading of both clocks; the first reading starts at
 * max(wall_ns, floor_ns) (floor: the ledger's time). *step_ns is how far
 * the wall clock moved beyond the elapsed time since the last reading when
 * that is more than 1 s either way (at the first reading: wall - floor when
 * the ledger is more than 1 s ahead), else 0: the caller records a NOTE
 * ClockStep. Never decreases. */
int64_t ingest__clock_read(struct ingest_clock *c, int64_t mono_ns,
			   int64_t wall_ns, int64_t floor_ns, int64_t *step_ns);
/* An input line or object of len bytes was larger than max_object_bytes
 * and skipped by the source: a NOTE. */
int ingest__oversized(ingest_t *in, uint64_t len, struct lg_error *err);
/* The meta key under which the position of r (RES_MAX: the stream) is
 * committed. Static string. */
const char *ingest__position_key(enum resource r);

void ingest__counters(const ingest_t *in, struct ingest_counters *c);

/* NOTEs emitted since ingest_new, by code (at most INGEST_NOTE_CODES
 * codes; later new codes count under "other"). Copies up to cap entries
 * into out and returns how many; code strings are borrowed from in. */
#define INGEST_NOTE_CODES 24
struct ingest_note_count {
	const char *code;
	uint64_t n;
};
size_t ingest__note_counts(const ingest_t *in, struct ingest_note_count *out,
			   size_t cap);

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

void ingest__smap_init(struct smap *m, smap_key_fn *key);
void ingest__smap_release(struct smap *m);
void *ingest__smap_get(const struct smap *m, const char *key);
void *ingest__smap_getn(const struct smap *m, const char *key, size_t len);
/* Inserts v, whose key must not be in the map yet (asserted). */
void ingest__smap_put(struct smap *m, void *v);
void ingest__smap_del(struct smap *m, const void *v);
/* The values sorted by key (caller frees the array; NULL when empty). */
void **ingest__smap_sorted(const struct smap *m, size_t *n);

/* Strings of the pending events live in an arena reset at every flush. */
struct arena {
	struct ablock *head;
};
void ingest__arena_init(struct arena *a);
char *ingest__arena_strdup(struct arena *a, const char *s);
void ingest__arena_reset(struct arena *a);
void ingest__arena_release(struct arena *a);

uint64_t ingest__hash(const void *p, size_t n);

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
	char *key;	   /* "ns/name", or "name" for cluster-scoped objects */
	char *ns;	   /* "" for cluster-scoped objects */
	char *name;	   /* key, ns and name: one block (obj_set_names) */
	char *uid;	   /* "" when none */
	json_t *doc;	   /* what mapping it again needs; NULL when seeded */
	char *doc_text;	   /* or the same as JSON text, not parsed yet (a loaded
			      object: most are never mapped again); read both
			      through obj_doc */
	uint64_t note;	   /* hash of the last NOTE about it (0: none) */
	bool seen;	   /* listed during the relist in progress */
	uint64_t tab_hash; /* of its record as last written (0: none) */
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
	bool broken; /* a flush failed: the cache is ahead of the ledger */
	int64_t time_ns;
	int64_t time_back_noted; /* time_ns when TimeWentBack was last noted */
	bool relisting[RES_MAX];
	struct ingest_counters c;
	struct ingest_note_count note_counts[INGEST_NOTE_CODES];
	/* Objects the next flush writes to the object table (objtab.c): the
	 * values are their keys, 'a' + resource then the cache key. */
	struct smap dirty;
	int64_t tab_time_ns, tab_time_back; /* the clock as last written */
	/* The pod projection of the current line (stream.c). */
	char *proj;
	size_t proj_cap;
};

/* engine.c: before any input (flushes a full batch; refuses input after a
 * failed flush), and the event time. */
int ingest__input_begin(ingest_t *in, struct lg_error *err);
void ingest__advance_time(ingest_t *in, int64_t time_ns);
/* cache.c: emitting (copies every string). */
void ingest__emit(ingest_t *in, const struct event *ev);
void ingest__emit_note(ingest_t *in, struct obj *o, const char *code,
		       enum holder_kind kind, const char *ns, const char *name,
		       const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
/* NOTE Synced (LEDGER_SYNCED_NOTE): what was listed is complete; why says
 * what completed it. */
void ingest__emit_synced(ingest_t *in, const char *why);
/* Objects. */
struct obj *ingest__obj_get(ingest_t *in, enum resource r, const char *ns,
			    const char *name);
struct obj *ingest__obj_add(ingest_t *in, enum resource r, const char *ns,
			    const char *name, const char *uid);
void ingest__obj_del(ingest_t *in, enum resource r, struct obj *o);
void ingest__obj_free(struct obj *o);
void ingest__obj_set_names(struct obj *o, const char *ns, const char *name);
/* From this many records on, a start decodes the object table on a second
 * thread (ingest/objtab.c; tests move it to take either path). */
extern size_t ingest__objtab_pipe_min;
/* The same from counted bytes (no NUL among them). */
void ingest__obj_set_names_n(struct obj *o, const char *ns, size_t ns_len,
			     const char *name, size_t name_len);
void ingest__obj_set_uid(struct obj *o, const char *uid);
/* The resource of a holder kind (RES_MAX for HK_NONE). */
enum resource ingest__kind_res(enum holder_kind k);
/* The holder kind of resource r (HK_NONE: not a holder). */
enum holder_kind ingest__res_kind(enum resource r);
void ingest__obj_set_doc(struct obj *o, json_t *doc); /* takes the reference */
/* The extract (parsed on first use; NULL when none or unreadable),
 * borrowed until the next obj_set_doc. */
json_t *ingest__obj_doc(struct obj *o);
bool ingest__obj_has_doc(const struct obj *o);
/* The units of class cls of holder o (added as 0 when absent). */
struct ucls *ingest__obj_units(struct obj *o, const char *cls);
/* The index of class cls in *arr, an array of *n entries of elem bytes each
 * beginning with its class name (char[DNS1123_LABEL_MAX + 1]), sorted by it;
 * when cls is not there, a zeroed entry named cls is inserted at its place
 * (*arr is reallocated, *n counts it). */
size_t ingest__cls_slot(void **arr, size_t *n, size_t elem, const char *cls);

/* A libcurl write callback appending to the struct lg_buf buf: past its
 * bound it stops the transfer, and lg_buf_failed(buf) tells that apart
 * from a network error (ingest/fetch.c). */
size_t ingest__curl_to_buf(char *data, size_t size, size_t n, void *buf);
/* Drops units that are 0 in both measures. */
void ingest__obj_trim(struct obj *o);
/* Deep copy of a member (NULL when absent). */
json_t *ingest__jcopy(const json_t *o, const char *key);
/* Metadata strings, NULL when absent or not strings. */
const char *ingest__meta_str(const json_t *obj, const char *key);

/* Handlers of one resource: upsert maps obj (ADDED, MODIFIED, or a cached
 * doc when the class table changes) against o, the cached object or NULL;
 * it may delete o but no other object. del releases what o contributed and
 * deletes it. */
typedef int upsert_fn(ingest_t *in, enum resource r, const json_t *obj,
		      struct obj *o);
typedef void delete_fn(ingest_t *in, enum resource r, struct obj *o);

/* objtab.c: the persisted object table. obj_touch names o for the next
 * flush (a changed or deleted object; obj_add and obj_del call it);
 * objtab_collect puts the records of the named objects that changed, and
 * of the engine's clock, into b (owned by in until objtab_release, which
 * with committed forgets the names; b is theirs to release even when
 * collect fails: LG_ELIMIT, a record past LEDGER_OBJECT_MAX_BYTES);
 * objtab_load fills the cache at start. */
const char *ingest__dirty_key(const void *v);
/* The dirty-set key of cached object okey of resource r (caller frees). */
char *ingest__obj_dirty_key(enum resource r, const char *okey);
/* The maps of cached objects (ingest/cache.c): init at ingest_new, release
 * (freeing every object) at ingest_free. */
void ingest__cache_init(ingest_t *in);
void ingest__cache_release(ingest_t *in);
void ingest__obj_touch(ingest_t *in, enum resource r, const struct obj *o);
int ingest__objtab_collect(ingest_t *in, struct ledger_batch *b,
			   struct lg_error *err);
void ingest__objtab_release(ingest_t *in, struct ledger_batch *b,
			    bool committed);
int ingest__objtab_load(ingest_t *in, struct lg_error *err);
/* The whole cache as canonical text, for tests (caller frees). */
char *ingest__objtab_dump(const ingest_t *in);

/* tree.c: tenant nodes, Namespaces, Tenants. */
struct tnode *ingest__tnode_get(ingest_t *in, const char *ns, bool create);
void ingest__tnode_ensure(ingest_t *in, const char *ns);
void ingest__tnode_check(ingest_t *in, const char *ns);
void ingest__tnode_free(struct tnode *t);
void ingest__tnode_budget_set(struct tnode *t, const char *key, bool present,
			      int64_t value);
void ingest__tnode_raw_set(struct tnode *t, const char *res, bool present);
upsert_fn ingest__ns_upsert, ingest__tenant_upsert;
delete_fn ingest__ns_delete, ingest__tenant_delete;

/* holders.c: VMInstance, KubernetesNodes, Pod, ResourceClaim. */
upsert_fn ingest__holder_upsert;
delete_fn ingest__holder_delete;
/* Sets a holder's units (by class name) to want[0..n), node for the
 * allocations, under uid; emits the differences in a safe order. Returns
 * whether anything changed. */
bool ingest__holder_apply(ingest_t *in, struct obj *o, const char *uid,
			  const struct ucls *want, size_t n, const char *node);
/* Counts o in its tenant node while it holds units. */
void ingest__holder_count(ingest_t *in, struct obj *o);
void ingest__cover_free(struct cover *c);
/* Links a loaded VMInstance's cover names into the cover index. */
void ingest__covers_restore(ingest_t *in, struct obj *vmi);
/* A pod that holds nothing but must stay cached, because a later class
 * table could map it: it names an extended resource and is not terminal. */
bool ingest__pod_dormant(const json_t *pod);

/* nodes.c: Nodes; engine.c: the class table's ConfigMap (beside the
 * dispatch it calls again). */
upsert_fn ingest__node_upsert, ingest__configmap_upsert;
delete_fn ingest__node_delete, ingest__configmap_delete;
void ingest__needles_rebuild(ingest_t *in);
void ingest__needles_free(ingest_t *in);
void ingest__table_copy(struct class_table *dst, const struct class_table *src);

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
size_t ingest__pod_project(const char *line, size_t len, char *out,
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
void ingest__prep_line(struct ingest_prep *p, const char *line, size_t len,
		       char *proj);
/* ingest_prep_line in two steps: the scan (blank, projection, the skip's
 * line conditions; doc NULL), then the parse when the line needs one. */
void ingest__prep_scan(struct ingest_prep *p, const char *line, size_t len,
		       char *proj);
void ingest__prep_parse(struct ingest_prep *p);
int ingest__line_prepared(ingest_t *in, struct ingest_prep *p,
			  struct lg_error *err);
void ingest__prep_release(struct ingest_prep *p);

/* ---------------------------------------------------------------------- */
/* The parse pipeline (ingest/pipeline.c, DESIGN 10): lines from a source
 * are read on the caller's thread into a bounded ring of batches, worker
 * threads do what depends only on a line's bytes (the pod projection and
 * jansson's parse), and ingest_pipe_feed gives the lines to the engine in
 * source order, doing the rest on the caller's thread: the engine sees
 * what ingest_line would have made of each line, and the log is the same.
 * The engine stays single-threaded; the source is called only from the
 * thread that calls ingest_pipe_feed. */
typedef struct ingest_pipe ingest_pipe_t;

/* What a source returns: the next line (*line borrowed until the next
 * call, *len bytes, at most max_line_bytes), a line of *len bytes it
 * skipped as too long, the end, an error (< 0, err set), or "idle": no
 * complete line can be had without waiting for more input (a pipe whose
 * writer paused; the source is called again later and goes on where it
 * was). *tag is given back with the line when it is fed (a stream: the
 * offset after it). */
enum {
	INGEST_SRC_END = 0,
	INGEST_SRC_LINE = 1,
	INGEST_SRC_OVERSIZED = 2,
	INGEST_SRC_IDLE = 3
};
typedef int ingest_source_fn(void *ctx, const char **line, uint64_t *len,
			     uint64_t *tag, struct lg_error *err);

#define INGEST_PIPE_BATCHES_MAX	    64
#define INGEST_PIPE_BATCH_LINES_MAX (1u << 20)
struct ingest_pipe_opts {
	unsigned threads;      /* workers (0: 1) */
	size_t batches;	       /* batches in the ring, >= 2 (0: threads + 3) */
	size_t batch_lines;    /* lines per batch at most (0: 1024) */
	size_t batch_bytes;    /* a batch is handed over once it holds this
				  much (0: 32 KiB) */
	size_t max_line_bytes; /* the source's longest line (0: 4 MiB) */
	/* The feeding thread waits this long for a worker's batch before it
	 * prepares the batch itself (0: 200; at most 1000000). */
	unsigned steal_after_us;
};

/* Starts the workers. LG_EINVAL (bounds out of range), LG_EIO (no
 * thread). The source is first called by ingest_pipe_feed. */
int ingest__pipe_new(ingest_pipe_t **out, const struct ingest_pipe_opts *o,
		     ingest_source_fn *src, void *ctx, struct lg_error *err);
/* Feeds the next line to in (ingest_line's work, or ingest_oversized):
 * 1 with its *tag; INGEST_PIPE_IDLE once every line the source gave before
 * it said idle was fed (the caller may commit, wait for input and call
 * again); 0 at the source's end; < 0 on an error of the engine, or of the
 * source once every line before the error was fed. Reads ahead up to the
 * ring's bound; a batch is handed over when it is full or the source is
 * idle, so that a line is fed as soon as the source has given it. */
#define INGEST_PIPE_IDLE 2
int ingest__pipe_feed(ingest_pipe_t *p, ingest_t *in, uint64_t *tag,
		      struct lg_error *err);
/* Stops and joins the workers; lines read ahead and not fed are dropped.
 * Accepts NULL. */
void ingest__pipe_free(ingest_pipe_t *p);

#endif
