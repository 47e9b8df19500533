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
 *    so the same input twice produces nothing new. The cache is persisted
 *    in the ledger's object table in the transaction of every flush, and
 *    a new engine loads it (O(live objects)): a restart continues the
 *    engine that was stopped or killed.
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

typedef struct ingest ingest_t;

/* Where the engine's flushes go (DESIGN 11). By default (no append) a
 * flush is one LMDB transaction of lg: the events, the positions and the
 * object table's records (DESIGN 4.2), exactly as `gpuledger watch`
 * writes. A member's leader hands them to etcd's log instead: append gets
 * every pending event of one flush (the sink splits it into txns) with
 * the positions committed with them, each named by its source as
 * ingest_positions_scan names it ("Namespace", ..., "stream"), and state
 * says what the log holds after the last append (the tick's horizon). A
 * sink's ledger is only read (at ingest_new, for the cache), and its
 * object table is not written: a member's cache is built from the state
 * (the path for a stale table). A failed append breaks the engine, as a
 * failed LMDB transaction does. */
struct ingest_sink_pos {
	const char *source;
	const char *value;
	size_t len;
};
struct ingest_sink {
	int (*append)(void *ctx, struct event *evs, size_t n,
		      const struct ingest_sink_pos *pos, size_t n_pos,
		      struct lg_error *err);
	const state_t *(*state)(void *ctx);
	void *ctx;
};

struct ingest_opts {
	/* The class table at start (--classes); NULL: the state's table. */
	const struct class_table *classes;
	size_t max_object_bytes; /* 0: 4 MiB */
	size_t batch_events; /* flush when this many are pending (0: 10000) */
	int64_t tick_ns;     /* TICK after this much quiet (0: 60 s) */
	struct ingest_sink sink; /* copied; append NULL: lg itself */
};

/* An engine appending to lg (which it borrows; lg must outlive it). Its
 * cache is loaded from the ledger's object table and state (ingest/
 * objtab.c): the cache of the engine that last flushed to lg, read in
 * O(live objects); a ledger without the table gets one built from the
 * state. LG_ECORRUPT names a damaged table record. */
int ingest_new(ingest_t **out, ledger_t *lg, const struct ingest_opts *o,
	       struct lg_error *err);
void ingest_free(ingest_t *in);
/* A NOTE of the program that runs the engine (DESIGN 11: a member's
 * LeaderChanged), with no object, dated like the next event, committed at
 * once with what is pending: code is a static string, msg is copied
 * (printable ASCII kept). */
int ingest_note(ingest_t *in, const char *code, const char *msg,
		struct lg_error *err);

struct ingest_counters {
	uint64_t lines, events_in, events_out, notes, skipped_fast, relists;
	/* Records the start read (ingest_new): the object table's, plus the
	 * event records and the checkpoint the ledger handle read to build
	 * its state; O(live objects), not O(history). */
	uint64_t start_records;
};
/* ---------------------------------------------------------------------- */
/* Following a recorded stream (ingest/follow.c), exactly once across
 * restarts. After every line the position {"classes", "head", "offset",
 * "seedSeq", "source"} is handed to the engine and committed with the
 * events of the lines before it (and the engine's object table). A run on
 * a ledger whose position names the same file (by real path) loads the
 * engine (ingest_new), checks that the --classes table is the first run's
 * (its fingerprint "classes"), that the file still starts with the same
 * bytes ("head", a fingerprint of its first 4 KiB) and that a line ends at
 * offset, and goes on from offset without reading what is before it.
 * seedSeq is the last seq when the first run started (kept for the
 * record). At the end of the input the engine
 * is flushed and a TICK is appended at the last line's time when that is
 * later than the horizon. Standard input ("-") cannot be resumed, so a
 * ledger that already holds a stdin position is refused (LG_EEXIST), as is
 * one whose position names another source.
 *
 * A source that can make a read wait (a pipe, FIFO, terminal or socket,
 * standard input included) is live: a line is fed as soon as its newline
 * has arrived, and when the input pauses, what was read is committed
 * (events, position and object table, as at a batch boundary) once the
 * input has been idle for idle_ms, counted from the first pause after the
 * last commit. A regular file never waits and is committed every
 * batch_events only. A live source cannot be read again from an offset,
 * so a ledger whose position names one is refused like stdin
 * (LG_EEXIST), before the source is opened (which, for a FIFO, would wait
 * for a writer). */

/* The default idle bound. Long enough that a burst a writer hands over in
 * pieces (kubectl writes an event at a time; a pipe's 64 KiB refill in
 * microseconds) is one commit and one fsync, not one per piece; short
 * enough that what the watcher has read is in the ledger, and in what
 * serve answers, about a tenth of a second after the cluster's stream
 * pauses. */
#define INGEST_IDLE_MS_DEFAULT 100
/* The longest idle bound ingest_follow_opts.idle_ms may ask for. */
#define INGEST_IDLE_MS_MAX 60000

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
	/* A live source's idle bound (0: INGEST_IDLE_MS_DEFAULT; at most
	 * INGEST_IDLE_MS_MAX). */
	unsigned idle_ms;
};

/* The most parse threads ingest_follow_opts.parse_threads may ask for. */
#define INGEST_PIPE_THREADS_MAX 16

struct ingest_follow_result {
	bool resumed;		  /* a committed position was found */
	uint64_t offset;	  /* where reading ended */
	struct ingest_counters c; /* c.start_records: what the start read */
	/* CLOCK_MONOTONIC when the engine was ready to read the first new
	 * line (loaded, and the file checked and positioned); 0 if never. */
	int64_t ready_mono_ns;
};

/* Errors: LG_ENOENT (no such file), LG_EEXIST (the ledger follows another
 * source, or stdin or another live source again), LG_EINVAL (idle_ms out
 * of range), LG_ECORRUPT (the file is shorter than the
 * committed position or starts differently; the class table differs from
 * the ledger's), LG_EIO, and the ledger's errors. res may be NULL. */
int ingest_follow(ledger_t *lg, const struct ingest_follow_opts *o,
		  struct ingest_follow_result *res, struct lg_error *err);

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
void kube_config_release(struct kube_config *c);

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

/* Lists and watches every resource of DESIGN 2 until *o->stop or the
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

/* The watcher's committed positions in lg (DESIGN 4.2), as `cluster init`
 * copies them to P/pos/<source> (DESIGN 11): fn gets each stored one, in a
 * fixed order, with its source ("Namespace", "Tenant", ... per watched
 * resource, its resourceVersion; "stream" for a recorded stream, the JSON
 * position of ingest_follow) and its value (len bytes, borrowed for the
 * call). fn returns non-zero to stop (returned). */
typedef int ingest_position_fn(void *ctx, const char *source, const char *value,
			       size_t len);
int ingest_positions_scan(ledger_t *lg, ingest_position_fn *fn, void *ctx,
			  struct lg_error *err);

/* Starts libcurl for the process with model's lg_xmalloc family as its
 * allocator (ingest/global.c). Call it once at the start of main, before
 * anything else uses curl; later curl_global_init calls only count. LG_EIO
 * when libcurl does not start. */
int ingest_global_init(struct lg_error *err);

#endif
