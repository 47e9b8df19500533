/*
 * ledger — the append-only, hash-chained event log in LMDB (DESIGN 4).
 *
 * Invariants:
 *  - Events have gap-free sequence numbers 1, 2, ... and non-decreasing times.
 *    Every event record stores the chain head after it:
 *    head(n) = SHA-256(head(n-1) || canonical bytes of event n), head(0) = 0.
 *  - An append is one LMDB write transaction: the events of a batch, their
 *    heads, and the caller's meta values (watch resourceVersions) commit
 *    together or not at all. Commits are durable (fsync) unless opened with
 *    no_sync.
 *  - Every event is checked against the state before it is written (the
 *    handle keeps the state at the last seq it has seen) and decoded records
 *    are validated again when read; a bad record is reported with its seq.
 *  - A checkpoint is the full state at a seq, with the head at that seq and a
 *    digest of its own bytes. Rebuilding the state at s = the latest sound
 *    checkpoint <= s, then the events up to s.
 *  - Any number of processes may read while one writes; LMDB serialises
 *    writers across processes.
 *  - MDB_* types never leave this module.
 */
#ifndef GPULEDGER_LEDGER_H
#define GPULEDGER_LEDGER_H

#include "model/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEDGER_SCHEMA_VERSION 1
#define LEDGER_HEAD_BYTES     32

/* Encoded size bounds: an event record is at most this large. */
#define LEDGER_EVENT_MAX_BYTES (1u << 20)

typedef struct ledger ledger_t;

struct ledger_opts {
	const char *dir;       /* the LMDB environment directory */
	bool read_only;	       /* open for reading only (no lock on writers) */
	bool create;	       /* create dir and the databases when missing */
	bool no_sync;	       /* --no-sync: commits are not fsynced */
	size_t map_size_bytes; /* initial map size (0: 64 MiB; above the
				  bound, e.g. SIZE_MAX: the bound, so that
				  the map never has to grow) */
	size_t map_max_bytes;  /* growth bound (0: 1 TiB) */
	/* The pages of the map this process has read are handed back to the
	 * page cache (unmapped from it, not evicted) each time the log's file
	 * has grown by this much, so that its resident set follows what it
	 * works on, not the size of the log (0: 64 MiB; SIZE_MAX: never,
	 * and long reads keep what they read mapped too). */
	size_t map_trim_bytes;
	uint64_t checkpoint_every; /* events between automatic checkpoints
				      (0: 1,000,000); only for writers */
	int64_t checkpoint_secs;   /* seconds between them (0: 3600; <0 off) */
	/* Forensic reading (verify, log, audit; implies read_only): the
	 * state is not rebuilt at open, so that damage cannot stop the open
	 * before it can be named (ledger_state is NULL, ledger_last_seq 0
	 * and ledger_refresh does nothing: scan to the end instead); the
	 * meta pages are checked against the file first, every key and value
	 * LMDB returns is checked to lie inside the file, and a SIGSEGV or
	 * SIGBUS inside an LMDB read becomes LG_ECORRUPT "damaged storage"
	 * instead of ending the process (a process-wide handler, installed
	 * while such a handle is open: single-threaded tools only). */
	bool forensic;
};

/* Opens (and with create, initialises) the ledger in o->dir and brings its
 * state up to the last seq (latest checkpoint + tail). Caller closes. */
int ledger_open(ledger_t **lg, const struct ledger_opts *o,
		struct lg_error *err);
void ledger_close(ledger_t *lg);

/* The state at the last seq this handle has seen. Borrowed until the next
 * call that changes the ledger handle. */
const state_t *ledger_state(const ledger_t *lg);
/* Reads events appended since (by any process) into the state. */
int ledger_refresh(ledger_t *lg, struct lg_error *err);
uint64_t ledger_last_seq(const ledger_t *lg);
/* The chain head at the last seq seen (LEDGER_HEAD_BYTES). */
const uint8_t *ledger_head(const ledger_t *lg);

/* A meta value written in the same transaction as a batch; val NULL
 * deletes the key (absent or not). Keys starting with "vid" are the
 * ledger's own (the verdict index). */
struct ledger_meta {
	const char *key;
	const void *val;
	size_t len;
};

/* Appends evs[0..n) in one durable transaction with meta[0..n_meta). Seqs
 * are assigned here (evs[i].seq is set on success); times must not go back.
 * A time earlier than the last one is clamped to it (time never decreases;
 * writers in several processes race). Each event must fit the state, else
 * nothing is written and LG_EMISMATCH names the event. LG_EFULL when the disk
 * or the map bound is reached (nothing written). On success *first_seq (may be
 * NULL) is the first seq. */
int ledger_append(ledger_t *lg, struct event *evs, size_t n,
		  const struct ledger_meta *meta, size_t n_meta,
		  uint64_t *first_seq, struct lg_error *err);
/* ledger_append of a writer that built evs on the log at seq expect_last
 * (its records name that seq and the chain head there, a verdict's
 * basisSeq and chainHead): LG_EMISMATCH, nothing written, when another
 * writer (the watcher, in a process of its own) appended meanwhile, so
 * that the caller judges again on the log as it is. */
int ledger_append_at(ledger_t *lg, struct event *evs, size_t n,
		     uint64_t expect_last, uint64_t *first_seq,
		     struct lg_error *err);

/* Reads a meta value into buf (cap bytes); *len is its length. LG_ENOENT
 * when absent, LG_ERANGE when buf is too small. */
int ledger_meta_get(ledger_t *lg, const char *key, void *buf, size_t cap,
		    size_t *len, struct lg_error *err);

/* Receives key/value records in key order, as committed (e.g. a cache
 * kept with the events that built it); key and val are borrowed for the
 * call. Returns non-zero to stop the scan (which returns it). */
typedef int ledger_meta_fn(void *ctx, const void *key, size_t klen,
			   const void *val, size_t vlen);

/* The watcher's object table (DESIGN 4.2; the "objects" database): per
 * watched object the small extract its cache needs, under keys and in a
 * format of the watcher's own (opaque here), written in the transaction
 * of the events derived with it. A batch with objects also records, in
 * meta LEDGER_OBJECTS_SEQ_KEY, its last seq: the table is the watcher's
 * view of the log up to that seq (a later content event means someone
 * else changed the state and the table is stale). */
#define LEDGER_OBJECT_KEY_MAX	480
#define LEDGER_OBJECT_MAX_BYTES (16u << 20)
#define LEDGER_OBJECTS_SEQ_KEY	"objects.seq"

/* What an append writes besides its events; every member may be 0/NULL.
 * objs[i].val NULL deletes the record (absent or not); keys are 1 to
 * LEDGER_OBJECT_KEY_MAX bytes, values at most LEDGER_OBJECT_MAX_BYTES
 * (LG_ELIMIT before anything is written). objs are written only with
 * objects set, which marks the table written even when n_objs is 0. */
struct ledger_batch {
	const struct ledger_meta *meta;
	size_t n_meta;
	bool objects;
	const struct ledger_meta *objs;
	size_t n_objs;
};

/* ledger_append with object records: one transaction, even with n == 0
 * (then only the meta values and records are written). b may be NULL. */
int ledger_append_batch(ledger_t *lg, struct event *evs, size_t n,
			const struct ledger_batch *b, uint64_t *first_seq,
			struct lg_error *err);
/* Every record of the object table in key order, as committed (none for a
 * ledger from before the table); key and val are borrowed for the call.
 * fn returns non-zero to stop (returned). */
int ledger_objects_scan(ledger_t *lg, ledger_meta_fn *fn, void *ctx,
			struct lg_error *err);
/* How many records the object table holds (0 also when it cannot be
 * read: a scan then says why). */
uint64_t ledger_objects_count(ledger_t *lg);
/* The last seq of the batch that last wrote the table; *present false
 * (and *seq 0) when no batch ever did. */
int ledger_objects_seq(ledger_t *lg, uint64_t *seq, bool *present,
		       struct lg_error *err);

/* Ready to judge (DESIGN 7): a watcher start writes NOTE
 * LEDGER_SYNCED_NOTE when its first list of every watched resource is
 * complete (a recorded stream: at its end). Every append records the seq
 * of the log's first such NOTE in meta LEDGER_SYNCED_KEY. *seq is that
 * seq, 0 when the log holds none. */
#define LEDGER_SYNCED_NOTE "Synced"
#define LEDGER_SYNCED_KEY  "synced"
int ledger_synced_seq(ledger_t *lg, uint64_t *seq, struct lg_error *err);
/* The seq of the checkpoint the handle's state was last rebuilt from or
 * written at (0: none). */
uint64_t ledger_checkpoint_seq(const ledger_t *lg);

/* Writes a checkpoint of the current state now. */
int ledger_checkpoint(ledger_t *lg, struct lg_error *err);

/* The state at seq (0 <= seq <= last): from the latest sound checkpoint <=
 * seq plus the events after it. Caller frees with state_free. *skipped (may
 * be NULL) counts damaged checkpoints passed over. */
int ledger_state_at(ledger_t *lg, uint64_t seq, state_t **out,
		    unsigned *skipped, struct lg_error *err);

/* One point of the log as an operator names it (ledger/at.c): replay
 * --at, GET /v1/state?at=, eval --at. All digits are a seq; anything else
 * a time as time_parse_user_ns reads it, resolved to the last event at or
 * before it. Where it falls says whether the state shown is what was
 * asked for: before the first event (a time earlier than seq 1's: the
 * state is empty), after the last one (a time later than its, or a seq
 * past it: the state is the latest), or a ledger with no event. */
enum ledger_at_place {
	LEDGER_AT_INSIDE = 0,
	LEDGER_AT_BEFORE_FIRST,
	LEDGER_AT_AFTER_LAST,
	LEDGER_AT_EMPTY
};
struct ledger_at {
	uint64_t seq;  /* the state to show: after event seq (0: empty) */
	bool by_seq;   /* at was a seq (asked_seq), else a time (asked_ns) */
	uint64_t asked_seq;
	int64_t asked_ns;
	enum ledger_at_place place;
	uint64_t edge_seq; /* BEFORE_FIRST: 1; AFTER_LAST: the last seq */
	int64_t edge_ns;   /* and that event's time */
};
/* Resolves at (NULL: the last seq, inside) into *out. A seq is 1 to 19
 * digits (lg_parse_u64); anything else is read as a time
 * (time_parse_user_ns). LG_EINVAL when it is neither a seq nor a time the
 * ledger can date; err then says why ("\"X\" is not a seq, and is ..."). */
int ledger_at_resolve(ledger_t *lg, const char *at, struct ledger_at *out,
		      struct lg_error *err);
/* The note a reader of the state at a owes, a phrase to follow the at as
 * given ("--at X ", "at=X "): "is before the first event (seq 1 at T); the
 * state is empty", "is after the last event (seq N at T); the state is the
 * latest". Into buf, without a newline; 0 inside, else its length (like
 * snprintf). */
size_t ledger_at_note(const struct ledger_at *a, char *buf, size_t cap);

/* Iterates events from seq `from` (>= 1) for at most limit events (0: no
 * limit), calling fn for each; the event's strings are borrowed for the
 * call only. fn returns non-zero to stop (that value is returned). */
typedef int ledger_event_fn(void *ctx, const struct event *ev,
			    const uint8_t *head);
int ledger_scan(ledger_t *lg, uint64_t from, uint64_t limit,
		ledger_event_fn *fn, void *ctx, struct lg_error *err);

/* The same, checking the chain as it goes: each record's stored head must
 * be SHA-256(the previous record's stored head || its bytes) (head(0) = 0
 * before seq 1), so fn never sees a record that verify would refuse on
 * storage grounds; a bad one stops the scan with LG_ECORRUPT naming its
 * seq. For readers that print what they can up to the damage (log, audit).
 */
int ledger_scan_checked(ledger_t *lg, uint64_t from, uint64_t limit,
			ledger_event_fn *fn, void *ctx, struct lg_error *err);

/* The chain head stored with event seq (LEDGER_HEAD_BYTES into head_out),
 * read without decoding the event: what a scan of that one event would
 * hand its callback. head(0) is 32 zero bytes; the last seq the handle has
 * seen gives ledger_head without a read. LG_ENOENT when seq is past the
 * log's last record; LG_ECORRUPT naming the seq when its record is missing
 * or too short to hold a head. */
int ledger_head_at(ledger_t *lg, uint64_t seq, uint8_t *head_out,
		   struct lg_error *err);

/* Verification (DESIGN 4.3) checks storage before meaning, in two passes
 * over one snapshot, so that no damage can hide behind another:
 *  1. storage: every record read as stored, in key order, without any
 *     state: keys 1, 2, ... gap-free (a missing record, a re-keyed one or
 *     a swap is named at the first seq out of place), each record decodes
 *     and carries its own seq, each head is the chain step of the one
 *     before; every checkpoint's frame, digest and head (against the
 *     chain at its seq), and none past the end; the databases' entry
 *     counts match what was walked; LMDB's own errors and faults are
 *     "damaged storage".
 *  2. meaning: the events before the first storage damage are replayed
 *     from genesis, each must fit the state, and every checkpoint there
 *     must equal the replay.
 * The first bad seq of either pass is the answer. */
struct ledger_verify_result {
	uint64_t bad_seq;     /* first bad seq (0: sound, or not known) */
	bool storage;	      /* the damage is in storage (pass 1) */
	uint64_t events;      /* events checked (the last seq when sound) */
	uint64_t checkpoints; /* checkpoints checked */
	uint8_t head[LEDGER_HEAD_BYTES]; /* the head after the last event */
};
/* Returns 0 when sound, LG_ECORRUPT when not (err says what, res which
 * seq), other codes on operating errors. */
int ledger_verify_run(ledger_t *lg, struct ledger_verify_result *res,
		      struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* The Merkle tree (DESIGN 4.4; ledger/tree.c). The tree of size N covers
 * seqs 1..N (leaf index = seq - 1) and grows in the transaction of every
 * append. A ledger from before the tree gets it built when a writer opens
 * it; until then proofs fail with LG_EVERSION naming that command. */

/* The root of the tree of size (<= the last seq; 0: the empty tree). */
int ledger_tree_root(ledger_t *lg, uint64_t size, uint8_t *root,
		     struct lg_error *err);
/* The inclusion proof of seq in the tree of size (1 <= seq <= size). */
int ledger_prove_inclusion(ledger_t *lg, uint64_t seq, uint64_t size,
			   struct merkle_proof *p, struct lg_error *err);
/* The consistency proof from size `from` to size `to` (1 <= from <= to). */
int ledger_prove_consistency(ledger_t *lg, uint64_t from, uint64_t to,
			     struct merkle_proof *p, struct lg_error *err);
/* verify's part for the tree: every leaf recomputed from its event and
 * every stored subtree from the leaves. *bad_seq is the first seq whose
 * leaf or completed subtree differs (0 when sound). LG_ECORRUPT when not
 * sound, LG_EVERSION when the ledger has no tree yet. */
int ledger_verify_tree(ledger_t *lg, uint64_t *bad_seq, struct lg_error *err);

/* Signed notes (C2SP tlog-checkpoint) of tree sizes, in meta: copies the
 * note of size (0: the latest) into *text (caller frees) and its size into
 * *size_out (may be NULL). LG_ENOENT when there is none. */
int ledger_note_get(ledger_t *lg, uint64_t size, char **text,
		    uint64_t *size_out, struct lg_error *err);
/* Signs a C2SP checkpoint of the tree at the last seq this handle has seen
 * (origin = the key's name) and stores it; *size is its tree size. */
int ledger_sign_checkpoint(ledger_t *lg, const struct note_signer *s,
			   uint64_t *size, struct lg_error *err);
/* The same for the tree of size (<= the last seq): a note that depends on
 * nothing but the key and the log (Ed25519 is deterministic), so every
 * member of a cluster signing size with one key writes the same bytes. */
int ledger_sign_checkpoint_at(ledger_t *lg, const struct note_signer *s,
			      uint64_t size, struct lg_error *err);

struct ledger_stats {
	uint64_t events, checkpoints, last_seq;
	int64_t first_time_ns, last_time_ns;
	size_t map_size_bytes, used_bytes, page_size_bytes;
	size_t event_bytes;	 /* sum of event record sizes */
	size_t checkpoint_bytes; /* sum of checkpoint record sizes */
	uint64_t last_checkpoint_seq;
	unsigned readers;
};
int ledger_stats(ledger_t *lg, struct ledger_stats *st, struct lg_error *err);

/* A compacted, consistent copy into an empty or new directory while writers
 * may run. */
int ledger_backup(ledger_t *lg, const char *dir, struct lg_error *err);

/* The chain head after ev (DESIGN 4.3): SHA-256(head_prev || the bytes
 * the ledger stores for ev), as a reader checks another ledger's heads
 * (replicas). head_out may alias head_prev. */
void ledger_event_head(const uint8_t *head_prev, const struct event *ev,
		       uint8_t *head_out);

/* ---------------------------------------------------------------------- */
/* The verdict index (ledger/vindex.c). Every append records, in its own
 * transaction, the seq of each VERDICT event it carries under its id (ids
 * count the VERDICT events from 1 in log order), the number of verdicts
 * and the last event that changed the state's content (not VERDICT, NOTE
 * or TICK): a server starting up learns them without reading the log. A
 * log written before the index existed is indexed once, by the first
 * writer that appends or asks. */
struct ledger_vindex {
	uint64_t count;	      /* verdicts among events 1..upto */
	uint64_t upto;	      /* the index covers events 1..upto */
	uint64_t content_seq; /* last content change <= upto (0: none) */
};
/* The index as committed; a writer handle first fills a gap (upto short of
 * the log's end), a read-only one returns it as it is. */
int ledger_verdict_index(ledger_t *lg, struct ledger_vindex *vi,
			 struct lg_error *err);
/* The seq of verdict id (1..count); LG_ENOENT when not indexed. */
int ledger_verdict_seq(ledger_t *lg, uint64_t id, uint64_t *seq,
		       struct lg_error *err);
/* The seq of the first VERDICT recorded for key k (an AdmissionReview uid,
 * its record's requester.uid, or a plain request's idempotencyKey; DESIGN
 * 11 rule 3), from the index every append writes with its events.
 * LG_ENOENT when there is none (or k is VERDICT_KEY_NONE). */
int ledger_verdict_by_key(ledger_t *lg, const struct verdict_key *k,
			  uint64_t *seq, struct lg_error *err);
/* Recorded verdicts, filtered (ledger/vlist.c; DESIGN 3.5, 6, 7): one
 * function serves GET /v1/verdicts and `gpuledger verdicts`. Of the
 * verdicts with ids 1..count (those the caller knows of), those with
 * f->after < id < f->before that f takes, in id order or with f->desc
 * newest first, at most f->limit, reading at most LEDGER_VLIST_SCAN_MAX
 * records: *text is the canonical JSON {"next": the id to go on from (as
 * after ascending, as before descending) or null at the end, "verdicts":
 * [each record with its "seq" and "time"]}; caller frees. */
#define LEDGER_VLIST_SCAN_MAX 100000
int ledger_verdicts_list(ledger_t *lg, const struct verdict_filter *f,
			 uint64_t count, char **text, struct lg_error *err);
/* Event records this handle has fetched from storage since it was opened
 * (what a start or a query cost; for tests and benchmarks). */
uint64_t ledger_records_read(const ledger_t *lg);

/* Snapshots: heavy reads on other threads. ledger_snapshot_new (on the
 * thread that owns lg) makes a read-only handle fixed at lg's last seq and
 * head, sharing lg's environment; it must be closed (ledger_close) before
 * lg. It is then used by one other thread only: ledger_snapshot_enter
 * first (with load_state, its ledger_state is the state at that seq, built
 * there from a checkpoint and the tail), then ledger_scan, ledger_state_at,
 * ledger_at_resolve, ledger_export, and ledger_close on that same thread.
 * While any snapshot is entered, a growth of lg's map waits for it. */
int ledger_snapshot_new(ledger_t *lg, ledger_t **snap, struct lg_error *err);
int ledger_snapshot_enter(ledger_t *snap, bool load_state,
			  struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* Billing export (DESIGN 8; ledger/export.c). One function serves the CLI
 * (`gpuledger export`) and the query process (`GET /v1/export`): it walks
 * the log once, from the state at --from (a checkpoint plus a tail) to the
 * end of the range, and hands over rows as it goes without keeping them. */

struct export_opts {
	/* The range [from, to), each truncated to the millisecond; from >= 0.
	 * to_ns = INT64_MAX: up to the horizon. Billing stops at
	 * min(to, horizon): the ledger never bills time it has not seen. */
	int64_t from_ns, to_ns;
	enum bill_step step;
	enum bill_basis basis;
	bool rollup_subtree;		/* add each tenant's subtree rows */
	/* The billing file (prices, names, billing period offset); borrowed.
	 * NULL: the defaults, every price an explicit 0. Priced rates must
	 * cover every class the ledger knows (LG_ENOENT otherwise). */
	const struct bill_rates *rates;
	/* BillingCurrency. With priced rates: one of theirs (NULL: their only
	 * one); else any three capital letters (NULL: "USD"). */
	const char *currency;
	/* The FOCUS version of the rows (the zero value is 1.2). With 1.3
	 * each namespace row carries its share of its class's pool for the
	 * period (bill_row.ratio_pico), which takes a first pass over the
	 * period's usage. */
	enum bill_focus focus;
};

/* What an export covers, known before the first row; the TimeWentBack
 * count is final when ledger_export returns. */
struct export_range {
	/* [from, min(to, horizon)), both floored to a whole second; may be
	 * empty. The milliseconds after end_ms are the next export's. */
	int64_t start_ms, end_ms;
	uint64_t last_seq;	  /* the last seq the handle has seen */
	/* The horizon, and the end asked for (INT64_MAX: none, "up to the
	 * horizon"): an answer shorter than asked owes its reader a note. */
	int64_t horizon_ms, asked_end_ms;
	/* NOTEs TimeWentBack among the events the range is computed from
	 * (DESIGN 4.1: the export warns), and the seq of the first. */
	uint64_t time_went_back, time_went_back_seq;
};

/* The warning an export over r owes its reader, one line without a
 * newline, into buf; 0 when there is none, else its length (like
 * snprintf): clamped event times in the range (DESIGN 4.1), and a range
 * shorter than asked: empty because it starts at or after the horizon, or
 * cut at the horizon before the --to or --month end asked for (each names
 * what was billed and why). */
size_t ledger_export_warning(const struct export_range *r, char *buf,
			    size_t cap);

/* Receives one row; its strings are borrowed for the call. Returns 0 to go
 * on, or a negative LG_* code to stop the export (ledger_export then
 * returns that code and leaves err alone: the callback says why itself).
 * Errors of other domains (errno) are translated by the callback. */
typedef int ledger_export_fn(void *ctx, const struct bill_row *row);

/* Computes the rows of DESIGN 8 over the events this handle has seen
 * (ledger_refresh first for newer ones), in order of period, then the
 * namespaces' rows by namespace and class, then (with rollup) the subtree
 * rows by tenant and class. Bad options fail with LG_EINVAL (LG_ENOENT for a
 * currency the rates lack) before fn is ever called; range (may be NULL) is
 * filled before the first row. LG_ECORRUPT when the log does not replay. */
int ledger_export(ledger_t *lg, const struct export_opts *o,
		  ledger_export_fn *fn, void *ctx, struct export_range *range,
		  struct lg_error *err);

/* The export's options (ledger/exportopts.c): one parser for `gpuledger
 * export`'s options and GET /v1/export's query parameters, driven by one
 * const table, so that the same values give the same options and the same
 * error text in both. It does no I/O: the CLI feeds it its argv values, the
 * server its decoded parameters, as name/value pairs (names without
 * "--"); each reads the billing file itself. The callers differ only where
 * the table says: the options each has (rates is the CLI's, tenant the
 * server's, as is the value opencost-csv of format the CLI's), the default
 * step (hour in the CLI, day over HTTP), and how a name is spelt in a
 * message ("--step" or "parameter step"; "--from" or "from" where another
 * option is cited). Messages name no command: callers prefix "export: ". */

enum export_caller {
	EXPORT_CLI,
	EXPORT_HTTP,
	EXPORT_CALLERS
};
#define EXPORT_BY(c) (1u << (c))
#define EXPORT_ALL   (EXPORT_BY(EXPORT_CLI) | EXPORT_BY(EXPORT_HTTP))

enum export_format {
	EXPORT_FOCUS_CSV,
	EXPORT_NDJSON,
	EXPORT_OPENCOST_CSV
};

/* The options, in the order of the table (and of the CLI's --help). */
enum export_opt_id {
	EXPORT_OPT_FROM,
	EXPORT_OPT_TO,
	EXPORT_OPT_MONTH,
	EXPORT_OPT_STEP,
	EXPORT_OPT_BASIS,
	EXPORT_OPT_FORMAT,
	EXPORT_OPT_ROLLUP,
	EXPORT_OPT_RATES,
	EXPORT_OPT_CURRENCY,
	EXPORT_OPT_TENANT,
	EXPORT_OPT_FOCUS_VERSION,
	EXPORT_OPT_N
};

enum export_opt_type {
	EXPORT_TIME,  /* time_parse_user_ns, into an int64_t */
	EXPORT_MONTH, /* bill_month_parse at the rates' offset: from and to */
	EXPORT_ENUM,  /* one of values, into an int-sized enum */
	EXPORT_TEXT,  /* the value itself, a borrowed const char * */
	EXPORT_TENANT /* a tenant namespace, stored as TEXT */
};

/* A name an EXPORT_ENUM option takes. */
struct export_value {
	const char *name;
	int value;
	unsigned callers; /* EXPORT_BY bits of those who accept it */
	bool alias;	  /* an old spelling: listed as "(or name)" */
};

/* One option (git's parse-options shape). */
struct export_opt_spec {
	const char *name; /* "step": --step, step= */
	/* HTTP's spelling when it differs ("focusVersion" for
	 * --focus-version); NULL: name. ledger_export_opt_name picks. */
	const char *http_name;
	enum export_opt_type type;
	size_t target; /* offsetof in struct export_request */
	const char *dflt[EXPORT_CALLERS];  /* parsed like a value; NULL: none */
	size_t max_bytes;		   /* longest value */
	const struct export_value *values; /* EXPORT_ENUM: NULL-terminated */
	unsigned callers; /* EXPORT_BY bits of those who have it */
	const char *arg;  /* the value's name in --help ("TIME") */
	const char *help; /* the CLI's --help text */
};
extern const struct export_opt_spec ledger_export_opt_table[EXPORT_OPT_N];
/* The option's name as caller spells it (without "--"); borrowed from the
 * table. */
const char *ledger_export_opt_name(const struct export_opt_spec *o,
				   enum export_caller c);

/* The pairs given so far: caller's storage, values borrowed until the
 * request made from them is no longer used. */
struct export_parse {
	enum export_caller caller;
	const char *val[EXPORT_OPT_N];
};

/* What the options say. */
struct export_request {
	struct export_opts o; /* for ledger_export; strings borrowed */
	enum export_format format;
	int rollup;		/* 1: rollup=subtree (also o.rollup_subtree) */
	const char *rates_file; /* the CLI's billing file to read, or NULL */
	const char *tenant;	/* the server's tenant=, or NULL */
};

void ledger_export_parse_init(struct export_parse *p, enum export_caller c);
/* One pair. LG_EINVAL when the caller has no option name ("unknown
 * parameter ... (known: ...)") or value is longer than its bound; a
 * repeated name: the last one counts. */
int ledger_export_parse_set(struct export_parse *p, const char *name,
			    const char *value, struct lg_error *err);
/* The value given for option id, or NULL (the CLI reads --rates' file with
 * it before parse_finish, which dates a month in the file's offset). */
const char *ledger_export_parse_value(const struct export_parse *p,
				      enum export_opt_id id);
/* Every option's value (given, or the caller's default) parsed in table
 * order, then the rules between them, into r; rates (may be NULL: the
 * defaults) become r->o.rates. LG_EINVAL with the message. */
int ledger_export_parse_finish(const struct export_parse *p,
			       const struct bill_rates *rates,
			       struct export_request *r, struct lg_error *err);

/* Reads a billing file (bill_rates_parse's JSON) into r (release with
 * bill_rates_release); on error r holds the defaults and err says which
 * line or member and why. */
int ledger_billing_load(const char *path, struct bill_rates *r,
			struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* The build and the process (ledger/build.c), for every /metrics. */

/* The version and the git commit baked in at build time (static strings;
 * "0.0.0-dev" and "unknown" when built outside the Makefile). */
/* The reconciliation audit (ledger/reconcile.c, DESIGN 3.6). */

/* What an operator typed (NULL: the default): from/to/since a seq or a
 * time; window a duration (RECONCILE_WINDOW_DEFAULT); tenant a subtree. */
struct reconcile_args {
	const char *from, *to, *since, *window, *tenant;
};
/* Resolves a into o: from (default 1) and since are the first seq at or
 * after a time, to (default: the last seq) the last seq at or before it;
 * since defaults to the seq of the first recorded admission verdict (0:
 * none, so every object is older than admission). o->tenant borrows
 * a->tenant. LG_EINVAL with err naming the parameter ("from", "window"
 * ...) for a value that is not one. */
int ledger_reconcile_resolve(ledger_t *lg, const struct reconcile_args *a,
			     struct reconcile_opts *o, struct lg_error *err);

/* Receives the parts of the answer in order: begin once (the range:
 * {"fromSeq", "fromTime", "toSeq", "toTime", "since" {"seq", "time"} |
 * null, "windowMs", "tenant"?}), item per finding with the lists in the
 * order of enum reconcile_list (preExisting, bypasses, overshoots), end
 * once (reconcile_finish's summary). Values are borrowed for the call; a
 * non-zero return stops the pass and is returned. */
struct ledger_reconcile_sink {
	int (*begin)(void *ctx, const json_t *range);
	int (*item)(void *ctx, enum reconcile_list list, const json_t *item);
	int (*end)(void *ctx, const json_t *summary);
};
/* Two passes over events 1..o->to_seq of lg from genesis (findings only
 * in o's range; the first hands over preExisting and bypasses, the second
 * the overshoots), in memory bounded as model/reconcile.c says: neither
 * the log's length nor the number of findings makes it grow. */
int ledger_reconcile(ledger_t *lg, const struct reconcile_opts *o,
		     const struct ledger_reconcile_sink *sink, void *ctx,
		     struct lg_error *err);
/* The JSON answer, shared by `gpuledger reconcile` and GET /v1/reconcile:
 * {"range", "preExisting", "bypasses", "overshoots", "counts"} with each
 * value canonical JSON and a final newline, written through write as it
 * is found. ctx of the sink is a struct ledger_reconcile_json. */
struct ledger_reconcile_json {
	int (*write)(void *ctx, const char *p, size_t n); /* non-zero stops */
	void *ctx;
	int list; /* the writer's place (an enum reconcile_list; 3: done) */
	size_t n;
};
extern const struct ledger_reconcile_sink ledger_reconcile_json_sink;

const char *lg_version(void);
const char *lg_commit(void);
/* Writes gpuledger_build_info and the process_* metrics (CPU, memory,
 * start time, file descriptors) in the Prometheus text format into buf,
 * at most cap bytes with a terminating NUL (2 KiB are enough). Returns the
 * length it needed, like snprintf. */
#define LG_METRICS_COMMON_MAX 2048
size_t lg_metrics_common(char *buf, size_t cap);

/* ---------------------------------------------------------------------- */
/* The log in etcd (DESIGN 11; ledger/logval.c). A writer turns a batch of
 * events into the bytes of one P/log/<s+1> value at a known (s, h, state);
 * a member's applier appends such a value to its LMDB. The events are
 * encoded and chained exactly as ledger_append does, so every member holds
 * byte-identical events, heads, Merkle roots and checkpoints, equal to a
 * single-pod ledger of the same events.
 *
 * A value: "GLV" 0x01, u64 first seq, u32 n (1..LEDGER_BATCH_MAX), the
 * chain head after its last event (LEDGER_HEAD_BYTES), then n times u32
 * length and that many bytes: the event's canonical encoding (the bytes
 * the chain hashes, with its seq and time). Integers little endian. */
#define LEDGER_LOGVAL_HEADER_BYTES (4 + 8 + 4 + LEDGER_HEAD_BYTES)

struct ledger_logval {
	uint8_t *bytes; /* the value (built: caller frees with
			   ledger_logval_release; read: NULL) */
	size_t len;
	uint64_t first_seq, last_seq;
	size_t n;
	uint8_t head[LEDGER_HEAD_BYTES]; /* the chain head after last_seq */
	int64_t time_ns;		 /* the last event's time */
};
void ledger_logval_release(struct ledger_logval *v);

/* Builds the value of events evs[0..n) at state st (its seq s =
 * state_seq(st)) whose chain head is head: seqs s+1, ... are assigned
 * into evs, a time earlier than the state's is clamped to it (as
 * ledger_append does), and every event is checked exactly as the
 * applier's append will check it before it is taken: it fits the state
 * (state_apply, which advances st), its encoding is within
 * LEDGER_EVENT_MAX_BYTES, decodes back and its text is UTF-8 (the Merkle
 * leaf). So a value built here is one that every member can apply: a value
 * no member can apply would poison them all. Takes as many events as fit
 * max_bytes of value (a batch too large for one txn splits: *taken says
 * how many, the rest go into the next value); LG_ELIMIT when not even the
 * first fits. On error nothing is built, err names the event (its index
 * and seq; *taken is that index), and st holds the events before it:
 * callers build on a copy of the state they judged on (state_clone) and
 * keep it only once the value committed. */
int ledger_logval_build(state_t *st, const uint8_t *head, struct event *evs,
			size_t n, size_t max_bytes, struct ledger_logval *out,
			size_t *taken, struct lg_error *err);

/* ledger_logval_build with fill called before each event k is checked
 * and encoded: ev->seq is set, head_prev is the chain head after seq - 1
 * (borrowed for the call), and fill may write the event (its text, its
 * time); non-zero stops the build with that error. For a cluster's
 * verdicts (DESIGN 11): verdict k's record names basisSeq = seq - 1 and
 * the head there, which depends on the bytes of verdict k - 1. */
typedef int ledger_logval_fill_fn(void *ctx, size_t k, struct event *ev,
				  const uint8_t *head_prev,
				  struct lg_error *err);
int ledger_logval_build_each(state_t *st, const uint8_t *head,
			     struct event *evs, size_t n,
			     ledger_logval_fill_fn *fill, void *ctx,
			     size_t max_bytes, struct ledger_logval *out,
			     size_t *taken, struct lg_error *err);

/* Reads a value (pure): its frame, each event decodes and carries the
 * seqs first_seq, first_seq + 1, ... (first_seq 0: the value's own), times
 * never go back within it; with head_prev (may be NULL) the events' chain
 * from head_prev must end at the value's head. fn (may be NULL) gets every
 * event (borrowed: its strings point into v) and returns non-zero to stop
 * (returned). *info (may be NULL) gets the frame's seqs, head and last
 * time (bytes NULL). LG_ECORRUPT says what is wrong and where. */
typedef int ledger_logval_fn(void *ctx, const struct event *ev);
int ledger_logval_read(const uint8_t *v, size_t len, uint64_t first_seq,
		       const uint8_t *head_prev, ledger_logval_fn *fn,
		       void *ctx, struct ledger_logval *info,
		       struct lg_error *err);

/* What a member's ledger stores of the cluster (meta "cluster.*", text),
 * in the transaction of the events it applied: etcd's cluster id, the
 * prefix and its P/epoch, the etcd revision of the last value applied
 * and the last seq. */
#define LEDGER_CLUSTER_PREFIX_MAX 255
struct ledger_cluster_meta {
	uint64_t cluster_id;
	char epoch[65];
	char prefix[LEDGER_CLUSTER_PREFIX_MAX + 1];
	int64_t revision;
	uint64_t seq;
};
/* *present false (cm zeroed) when the ledger holds none (a single-pod
 * ledger, or a member that never applied a value). LG_ECORRUPT for a
 * value that is not one. */
int ledger_cluster_meta_get(ledger_t *lg, struct ledger_cluster_meta *cm,
			    bool *present, struct lg_error *err);

/* The applier's append (DESIGN 11 rule 7): the events of value v (the
 * value of P/log/<the ledger's last seq + 1>) appended in one transaction
 * together with cm (its seq is set here to the value's last seq), after
 * checking the value as ledger_logval_read does against the ledger's last
 * seq and head, that its first time does not go back, and, when
 * expect_head is not NULL, that the chain head after its last event equals
 * expect_head (P/head at the value's revision). Nothing is written when a
 * check fails: LG_EMISMATCH (another seq, a time back, another head: err
 * names the seqs and both heads) or LG_ECORRUPT (not a value), or when
 * another writer appended meanwhile (LG_EMISMATCH). head_out (may be NULL)
 * gets the head after the value. */
int ledger_append_logval(ledger_t *lg, const uint8_t *v, size_t len,
			 const uint8_t *expect_head,
			 const struct ledger_cluster_meta *cm,
			 uint8_t *head_out, struct lg_error *err);

/* A second handle on lg's environment, for another thread (gpuledger
 * member: its applier writes through lg, its server reads through this
 * one): read-only, with a state of its own rebuilt here, followed with
 * ledger_refresh like a handle of its own, and ledger_snapshot_new works
 * on it. It never remaps the map, so lg must never have to either: open
 * lg with map_size_bytes SIZE_MAX (the whole bound mapped at once) and
 * write it from this process only. Used by one thread at a time; closed
 * (ledger_close) before lg. */
int ledger_share(ledger_t *lg, ledger_t **out, struct lg_error *err);

#endif
