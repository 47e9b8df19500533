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
	const char *kind;	 /* "Namespace", ... */
	const char *path;	 /* list/watch path of DESIGN 2 */
};
/* Static table, indexed by enum resource. */
const struct resource_info *resource_info(enum resource r);
/* The resource of an object by apiVersion and kind; RES_MAX if not ours. */
enum resource resource_of(const char *api_version, const char *kind);

enum watch_type {
	WATCH_ADDED,
	WATCH_MODIFIED,
	WATCH_DELETED,
	WATCH_BOOKMARK
};

typedef struct ingest ingest_t;

struct ingest_opts {
	/* The class table at start (--classes); NULL: the state's table. */
	const struct class_table *classes;
	size_t max_object_bytes; /* 0: 4 MiB */
	size_t batch_events; /* flush when this many are pending (0: 10000) */
	int64_t tick_ns;     /* TICK after this much quiet (0: 60 s) */
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
/* A NOTE with no object, with code (a static string) and message (copied;
 * printable ASCII is kept, the rest becomes '?'), dated like the next
 * event; for what the sources see themselves (ClockStep, ApiAbsent). */
int ingest_note(ingest_t *in, const char *code, const char *msg,
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
int64_t ingest_clock_read(struct ingest_clock *c, int64_t mono_ns,
			  int64_t wall_ns, int64_t floor_ns, int64_t *step_ns);
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

/* NOTEs emitted since ingest_new, by code (at most INGEST_NOTE_CODES
 * codes; later new codes count under "other"). Copies up to cap entries
 * into out and returns how many; code strings are borrowed from in. */
#define INGEST_NOTE_CODES 24
struct ingest_note_count {
	const char *code;
	uint64_t n;
};
size_t ingest_note_counts(const ingest_t *in, struct ingest_note_count *out,
			  size_t cap);

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
	/* Lines are parsed ahead by parse_threads worker threads (0: 1; at
	 * most INGEST_PIPE_THREADS_MAX), or on the calling thread with
	 * parse_inline. The log is the same either way. */
	unsigned parse_threads;
	bool parse_inline;
};

struct ingest_follow_result {
	bool resumed;	   /* a committed position was found */
	uint64_t offset;   /* where reading ended */
	uint64_t replayed; /* lines replayed quietly */
	struct ingest_counters c;
};

/* Errors: LG_ENOENT (no such file), LG_EEXIST (the ledger follows another
 * source, or stdin again), LG_ECORRUPT (the file is shorter than the
 * committed position or starts differently; the class table differs from
 * the ledger's), LG_EIO, and the ledger's errors. res may be NULL. */
int ingest_follow(ledger_t *lg, const struct ingest_follow_opts *o,
		  struct ingest_follow_result *res, struct lg_error *err);

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
 * skipped as too long, the end, or an error (< 0, err set). *tag is given
 * back with the line when it is fed (a stream: the offset after it). */
enum {
	INGEST_SRC_END = 0,
	INGEST_SRC_LINE = 1,
	INGEST_SRC_OVERSIZED = 2
};
typedef int ingest_source_fn(void *ctx, const char **line, uint64_t *len,
			     uint64_t *tag, struct lg_error *err);

#define INGEST_PIPE_THREADS_MAX	    16
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
int ingest_pipe_new(ingest_pipe_t **out, const struct ingest_pipe_opts *o,
		    ingest_source_fn *src, void *ctx, struct lg_error *err);
/* Feeds the next line to in (ingest_line's work, or ingest_oversized):
 * 1 with its *tag; 0 at the source's end; < 0 on an error of the engine,
 * or of the source once every line before the error was fed. Reads ahead
 * up to the ring's bound. */
int ingest_pipe_feed(ingest_pipe_t *p, ingest_t *in, uint64_t *tag,
		     struct lg_error *err);
/* Stops and joins the workers; lines read ahead and not fed are dropped.
 * Accepts NULL. */
void ingest_pipe_free(ingest_pipe_t *p);

/* ---------------------------------------------------------------------- */
/* Read replicas (ingest/replicate.c, DESIGN 7): lg follows the primary's
 * GET /v1/events and holds the identical events (same seqs, same heads).
 * Each page starts at the replica's last seq, whose head must be the
 * primary's; each new event's head is computed here and must be the one
 * the primary sent before anything is appended. */
struct replica_opts {
	const char *url;   /* the primary, "https://host:port" (no /v1) */
	const char *token; /* bearer token; NULL: none */
	const char *ca_file, *cert_file, *key_file; /* TLS; NULL: defaults */
	unsigned page;	  /* events per request [1000] */
	unsigned poll_ms; /* wait when caught up [500] */
	bool once;	  /* return when caught up (and on network errors) */
	/* Stop when *stop becomes non-zero; may be NULL. */
	const volatile sig_atomic_t *stop;
};

struct replica_result {
	uint64_t appended;     /* events appended by this run */
	uint64_t last_seq;     /* the replica's last seq */
	uint64_t diverged_seq; /* with LG_ECORRUPT: the first seq at which
				  the primary's log departs from ours */
};

/* Runs until *stop, or with once until caught up. LG_ECORRUPT when the
 * logs differ (res->diverged_seq, err names it): nothing of the differing
 * page is appended. LG_EIO for the network only with once (otherwise it
 * waits and retries). */
int ingest_replicate(ledger_t *lg, const struct replica_opts *o,
		     struct replica_result *res, struct lg_error *err);

/* ====================================================================== */
/* The live source (ingest/kube*.c): configuration like kubectl, a libcurl
 * list+watch client per watched resource, and the pure pieces it is built
 * from (a line framer for chunked watch streams, backoff arithmetic).
 *
 * Invariants:
 *  - Every resource is listed before it is watched, also at start: the
 *    engine reconciles the listed objects against the ledger state
 *    (ingest_relist_begin/end), so a stored resourceVersion is never trusted
 *    to mean that the engine's view is complete. A watch then starts from
 *    the list's resourceVersion; an ERROR event or a 410 relists.
 *  - The resourceVersion of a resource is handed to the engine
 *    (ingest_set_position) only after every event it covers has been given
 *    to the engine, so it is committed with them or after them.
 *  - Bounded: one transfer per resource, one object (line or list item) of
 *    at most max_object_bytes, one list page of at most max_list_bytes,
 *    backoff at most backoff_max_ms.
 *  - CURL* types stay in ingest/kube.c.
 */

/* ---------------------------------------------------------------------- */
/* Configuration (ingest/kube_config.c).                                   */

/* Where to find the API server and how to authenticate. Every string is
 * owned (kube_config_release frees it) and NULL when not configured.
 * Inline *_data fields hold the decoded bytes (PEM) with their length. */
struct kube_config {
	char *server;  /* "https://host:port", no trailing '/' */
	char *context; /* the context used; NULL in-cluster */
	char *ca_file; /* certificate-authority */
	char *ca_data; /* certificate-authority-data, decoded */
	size_t ca_data_len;
	char *cert_file; /* client-certificate */
	char *cert_data; /* client-certificate-data, decoded */
	size_t cert_data_len;
	char *key_file; /* client-key */
	char *key_data; /* client-key-data, decoded */
	size_t key_data_len;
	char *token;	  /* token */
	char *token_file; /* tokenFile, or the service-account token in-cluster;
			     re-read for every request (it rotates) */
	bool insecure;	  /* insecure-skip-tls-verify */
	bool in_cluster;
};

/* Bounds of what configuration files may hold. */
#define KUBE_CONFIG_MAX_BYTES (4u << 20)
#define KUBE_TOKEN_MAX_BYTES  (64u << 10)

/* Fills c (which it first zeroes) from kubeconfig_path, or when that is
 * NULL from $KUBECONFIG (its first file when it is a ':'-separated list),
 * else ~/.kube/config when it exists, else the in-cluster service account
 * (KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/
 * serviceaccount/{token,ca.crt}). context NULL: the current-context.
 * Relative file names in a kubeconfig are relative to its directory.
 * Errors: LG_ENOENT (no file, no such context/cluster/user, not in a
 * cluster), LG_EINVAL (malformed YAML or fields, with line numbers),
 * LG_EIO. On error c holds nothing (no release needed, but allowed). */
int kube_config_load(struct kube_config *c, const char *kubeconfig_path,
		     const char *context, struct lg_error *err);
/* The same from a kubeconfig held in memory (tests); dir resolves relative
 * file names (NULL: the current directory). */
int kube_config_parse(struct kube_config *c, const char *yaml, size_t len,
		      const char *dir, const char *context,
		      struct lg_error *err);
/* In-cluster configuration with the service-account directory sa_dir (NULL:
 * the standard one) and the host/port from the environment. */
int kube_config_in_cluster(struct kube_config *c, const char *sa_dir,
			   struct lg_error *err);
void kube_config_release(struct kube_config *c);

/* The bearer token to send now: c->token, else the trimmed content of
 * c->token_file (read again on every call, so rotation is seen). *out is
 * NULL when there is none; caller frees it with free(). */
int kube_config_token(const struct kube_config *c, char **out,
		      struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* The line framer (ingest/kube_frame.c): pure and incremental. A watch     */
/* response is a stream of JSON objects each ended by '\n', in chunks that  */
/* may end anywhere.                                                        */

struct kube_frame {
	char *buf;	  /* caller's storage of cap bytes (borrowed) */
	size_t cap;	  /* the longest line kept: the max object size */
	size_t len;	  /* bytes of the current partial line in buf */
	bool skipping;	  /* the current line is too long: discard to its end */
	uint64_t skipped; /* bytes of the current too-long line so far */
};

enum kube_frame_result {
	KUBE_FRAME_MORE = 0,	 /* every byte consumed, no complete line */
	KUBE_FRAME_LINE = 1,	 /* a line (without "\n" or "\r\n") */
	KUBE_FRAME_OVERSIZED = 2 /* a line longer than cap was skipped */
};

struct kube_frame_out {
	const char *line; /* LINE: borrowed until the next call (it points
			     into buf or into the caller's data) */
	size_t len;	  /* LINE: its length; OVERSIZED: the skipped size */
};

void kube_frame_init(struct kube_frame *f, char *buf, size_t cap);
/* Consumes bytes of data[0..len) up to the end of at most one line and
 * stores how many in *used. Empty lines (also "\r\n") are skipped. A line
 * longer than cap is never buffered: its first cap bytes are dropped when
 * the bound is passed, the rest as it arrives, and OVERSIZED is reported
 * once at its end. Call again with data + *used until MORE. */
enum kube_frame_result kube_frame_push(struct kube_frame *f, const char *data,
				       size_t len, size_t *used,
				       struct kube_frame_out *out);
/* At the end of the stream: a last line without "\n" (LINE), a too-long
 * unterminated one (OVERSIZED), or MORE when nothing is left. Resets f. */
enum kube_frame_result kube_frame_finish(struct kube_frame *f,
					 struct kube_frame_out *out);
/* Drops any partial line (a new response starts). */
void kube_frame_reset(struct kube_frame *f);

/* ---------------------------------------------------------------------- */
/* Backoff (ingest/kube_backoff.c): pure arithmetic; randomness comes in.   */

/* The delay before retry number attempt (0 = first retry): "equal jitter"
 * exponential backoff, half of min(cap, base * 2^attempt) plus a random
 * part of the other half chosen by rnd (any 32-bit value). Never more than
 * cap_ms, never less than min(base_ms, cap_ms) / 2. */
int64_t kube_backoff_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms,
			uint32_t rnd);
/* A Retry-After header value: delta-seconds ("120") or an HTTP-date
 * ("Wed, 21 Oct 2015 07:28:00 GMT", also the RFC 850 and asctime forms)
 * read against now_s (Unix seconds). *delay_ms is clamped to [0, max_ms].
 * LG_EINVAL when the value is neither. */
int kube_retry_after_ms(const char *value, int64_t now_s, int64_t max_ms,
			int64_t *delay_ms);
/* The delay after a failed request: the larger of the backoff and a
 * Retry-After (retry_after_ms < 0: none) clamped to retry_max_ms. */
int64_t kube_retry_delay_ms(unsigned attempt, int64_t base_ms, int64_t cap_ms,
			    int64_t retry_after_ms, int64_t retry_max_ms,
			    uint32_t rnd);
/* Whether a watch ERROR event whose Status has this code waits with backoff
 * before the relist it calls for. 410 (Gone/Expired: the history moved on)
 * is routine and relists at once; anything else may repeat, so it waits
 * like a failed request. */
bool kube_error_waits(long long code);
/* The watch timeoutSeconds: min_s plus a random part of [0, min_s), like
 * client-go, so that the watches of many clients do not end together. */
unsigned kube_watch_timeout_s(unsigned min_s, uint32_t rnd);

/* ---------------------------------------------------------------------- */
/* The watch loop (ingest/kube.c).                                          */

struct kube_watch_opts {
	const char *record_path;    /* --record FILE: tee received events as
				       NDJSON with "time" (NULL: none) */
	int64_t tick_ns;	    /* TICK after this much quiet (0: 60 s) */
	size_t max_object_bytes;    /* one object or watch line (0: 4 MiB) */
	size_t max_list_bytes;	    /* one list page (0: 256 MiB) */
	unsigned page_limit;	    /* list ?limit= (0: 500) */
	unsigned watch_timeout_s;   /* minimum watch timeoutSeconds (0: 300) */
	int64_t backoff_base_ms;    /* first retry delay (0: 500 ms) */
	int64_t backoff_max_ms;	    /* backoff cap (0: 30 s) */
	int64_t retry_after_max_ms; /* cap on a Retry-After (0: 5 min) */
	int64_t connect_timeout_ms; /* (0: 10 s) */
	/* A resource whose API is not served is skipped (NOTE ApiAbsent) and
	 * discovered again after this long (0: 60 s). */
	int64_t api_recheck_ms;
	/* --metrics-listen HOST:PORT: Prometheus text on GET /metrics (NULL:
	 * none; port 0 picks one, logged to stderr). */
	const char *metrics_listen;
	/* Stop when *stop becomes non-zero (a signal handler sets it); may
	 * be NULL. */
	const volatile sig_atomic_t *stop;
	/* Stop at this CLOCK_MONOTONIC time (tests; 0: never). */
	int64_t deadline_ns;
	uint32_t seed; /* jitter seed (0: from the clock and pid) */
	bool verbose;  /* log each request and retry to stderr */
};

/* Lists and watches every resource of ingest.h until *o->stop or the
 * deadline, feeding in; on a stop it flushes (committing events and
 * resourceVersions) and returns 0. Transient API errors are retried with
 * backoff and never returned; operating errors (the ledger, the record
 * file, the configuration) end the run with their code. in and c are
 * borrowed for the call. */
int kube_watch_run(ingest_t *in, const struct kube_config *c,
		   const struct kube_watch_opts *o, struct lg_error *err);

/* One GET of url (http or https) with an optional bearer token; the body
 * (at most max_bytes, NUL-terminated) into *body (caller frees) and the
 * HTTP status into *status. LG_EIO when there is no answer, LG_ELIMIT when
 * it is larger (ingest/fetch.c). */
int ingest_http_get(const char *url, const char *bearer, size_t max_bytes,
		    long timeout_ms, char **body, long *status,
		    struct lg_error *err);

#endif
