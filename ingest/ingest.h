/*
 * ingest — from what the cluster says to events in the log (DESIGN 2, 4.1,
 * 6, 9).
 *
 * Two halves meet here:
 *  - the engine (ingest/engine.c and friends) turns Kubernetes watch events
 *    of the watched resources into TENANT/BUDGET/RAWKEY/CLASS/NODE/RESERVE/
 *    RELEASE/ALLOC/FREE/NOTE/TICK events, emitting only differences, and
 *    group-commits them to the ledger together with the resourceVersions
 *    (or, for a recorded stream, the input position) they came from;
 *  - the sources feed it: a recorded NDJSON stream (ingest/stream.c) or a
 *    live API server through libcurl (ingest/kube*.c).
 *
 * Invariants:
 *  - The engine's cache of mapped objects is always consistent with the
 *    ledger state after a flush; it diffs new mappings against the cache,
 *    so the same input twice produces nothing new.
 *  - A relist (start, 410, ERROR) reconciles: exactly the differences
 *    between the listed objects and what the engine holds become events;
 *    objects that vanished are released.
 *  - A position (resourceVersions, stream offset) is committed in the same
 *    transaction as the events derived from what came before it: a crash
 *    loses and repeats nothing.
 *  - Bounded: an object or line larger than max_object_bytes is a NOTE.
 *  - CURL* types never leave this layer.
 */
#ifndef GPULEDGER_INGEST_H
#define GPULEDGER_INGEST_H

#include "ledger/ledger.h"
#include "model/model.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

struct resource_info {
	const char *api_version; /* "v1", "apps.cozystack.io/v1alpha1", ... */
	const char *kind;        /* "Namespace", ... */
	const char *path;        /* list/watch path of DESIGN 2 */
};
/* Static table, indexed by enum resource. */
const struct resource_info *resource_info(enum resource r);
/* The resource of an object by apiVersion and kind; RES_MAX if not ours. */
enum resource resource_of(const char *api_version, const char *kind);

enum watch_type { WATCH_ADDED, WATCH_MODIFIED, WATCH_DELETED, WATCH_BOOKMARK };

typedef struct ingest ingest_t;

struct ingest_opts {
	/* The class table at start (--classes); NULL: the state's table. */
	const struct class_table *classes;
	size_t max_object_bytes; /* 0: 4 MiB */
	size_t batch_events;     /* flush when this many are pending (0: 10000) */
	int64_t tick_ns;         /* TICK after this much quiet (0: 60 s) */
	/* Seeding (ingest_new): by default the cache starts as the whole
	 * ledger state. With seed_bounded, only the events 1..seed_seq are
	 * read (0: an empty cache): a recorded stream that resumes rebuilds
	 * its cache by replaying its prefix quietly on top of the state it
	 * started from (see ingest_set_quiet). */
	bool seed_bounded;
	uint64_t seed_seq;
};

/* An engine appending to lg (which it borrows; lg must outlive it). Its
 * cache is seeded from the ledger state. */
int ingest_new(ingest_t **out, ledger_t *lg, const struct ingest_opts *o,
	       struct lg_error *err);
void ingest_free(ingest_t *in);

/* One watch event of resource r (object may be NULL for BOOKMARK).
 * time_ns is the event time (0: keep the last time; earlier: clamped).
 * Invalid input becomes a NOTE; only operating errors (the ledger) fail. */
int ingest_event(ingest_t *in, enum watch_type type, const json_t *object,
		 int64_t time_ns, struct lg_error *err);
/* One line of a recorded stream: {"type", "object", "time"?}. Malformed
 * lines, unknown kinds and oversized lines are NOTEs. */
int ingest_line(ingest_t *in, const char *line, size_t len,
		struct lg_error *err);

/* A relist of resource r: begin, then every listed object with
 * ingest_event(WATCH_ADDED), then end, which deletes what was not listed. */
int ingest_relist_begin(ingest_t *in, enum resource r, struct lg_error *err);
int ingest_relist_end(ingest_t *in, enum resource r, struct lg_error *err);

/* The position to commit with the next flush: the resourceVersion of r, or
 * for a recorded stream its byte offset (resource RES_MAX). */
void ingest_set_position(ingest_t *in, enum resource r, const char *value);
/* The committed position (NULL when none), borrowed. */
const char *ingest_position(ingest_t *in, enum resource r);

/* Appends what is pending (events and positions) in one transaction. */
int ingest_flush(ingest_t *in, struct lg_error *err);
/* Appends a TICK at time_ns if it is later than the horizon. */
int ingest_tick(ingest_t *in, int64_t time_ns, struct lg_error *err);

/* Makes t the class table (copied): CLASS events for the classes removed
 * (definition null) and for the new or changed ones, then every cached
 * object is mapped again and the differences are events. */
int ingest_set_classes(ingest_t *in, const struct class_table *t,
		       struct lg_error *err);
/* The table in force, borrowed until the next call that changes it. */
const struct class_table *ingest_classes(const ingest_t *in);
/* Quiet mode: input updates the cache as usual but no event is appended
 * (the ledger already holds them: a resumed stream replays its prefix). */
void ingest_set_quiet(ingest_t *in, bool quiet);
/* The current event time (the last input time, never decreasing). */
int64_t ingest_time_ns(const ingest_t *in);
/* An input line or object of len bytes was larger than max_object_bytes
 * and skipped by the source: a NOTE. */
int ingest_oversized(ingest_t *in, uint64_t len, struct lg_error *err);
/* The meta key under which the position of r (RES_MAX: the stream) is
 * committed. Static string. */
const char *ingest_position_key(enum resource r);

struct ingest_counters {
	uint64_t lines, events_in, events_out, notes, skipped_fast, relists;
};
void ingest_counters(const ingest_t *in, struct ingest_counters *c);

/* ---------------------------------------------------------------------- */
/* Following a recorded stream (ingest/follow.c), exactly once across
 * restarts. After every line the position {"classes", "head", "offset",
 * "seedSeq", "source"} is handed to the engine and committed with the
 * events of the lines before it. A run on a ledger whose position names the
 * same file (by real path) seeds the cache from the events 1..seedSeq (what
 * the first run started from), applies the same --classes table (checked by
 * its fingerprint "classes"), replays lines [0, offset) quietly, checks
 * that the file still starts with the same bytes ("head", a fingerprint of
 * its first 4 KiB) and that the class table agrees with the ledger's, and
 * goes on from offset. At the end of the input the engine
 * is flushed and a TICK is appended at the last line's time when that is
 * later than the horizon. Standard input ("-") cannot be replayed, so a
 * ledger that already holds a stdin position is refused (LG_EEXIST), as is
 * one whose position names another source. */

struct ingest_follow_opts {
	const char *path; /* the stream; "-" for standard input */
	/* The class table at start (--classes), may be NULL. */
	const struct class_table *classes;
	size_t max_object_bytes; /* 0: 4 MiB */
	size_t batch_events;	 /* 0: 10000 */
	/* Stop (flushing what was read) when *stop becomes non-zero; may be
	 * NULL. Then no TICK is appended: the stream did not end. */
	const volatile sig_atomic_t *stop;
};

struct ingest_follow_result {
	bool resumed;	     /* a committed position was found */
	uint64_t offset;     /* where reading ended */
	uint64_t replayed;   /* lines replayed quietly */
	struct ingest_counters c;
};

/* Errors: LG_ENOENT (no such file), LG_EEXIST (the ledger follows another
 * source, or stdin again), LG_ECORRUPT (the file is shorter than the
 * committed position or starts differently; the class table differs from
 * the ledger's), LG_EIO, and the ledger's errors. res may be NULL. */
int ingest_follow(ledger_t *lg, const struct ingest_follow_opts *o,
		  struct ingest_follow_result *res, struct lg_error *err);

#endif
