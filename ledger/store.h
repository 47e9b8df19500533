/*
 * Private to ledger/: the handle and the LMDB helpers its files share.
 * MDB_* types stay behind this header.
 */
#ifndef GPULEDGER_LEDGER_STORE_H
#define GPULEDGER_LEDGER_STORE_H

#include "ledger/ledger_int.h"

#include <lmdb.h>
#include <pthread.h>
#include <time.h>

#define DEFAULT_MAP_BYTES     ((size_t)64 << 20)
#define DEFAULT_MAP_MAX_BYTES ((size_t)1 << 40)
#define DEFAULT_MAP_TRIM_BYTES ((size_t)64 << 20)
#define DEFAULT_CP_EVERY      1000000
#define DEFAULT_CP_SECS	      3600
/* Most events one append may carry. */
#define LEDGER_BATCH_MAX (1u << 20)

struct ledger {
	MDB_env *env;
	MDB_dbi dbi[LEDGER_DB_MAX];
	struct ledger_opts o;
	char *dir;
	state_t *st;  /* state at seq */
	uint64_t seq; /* last seq applied to st */
	uint8_t head[LEDGER_HEAD_BYTES];
	bool dirty;	 /* st may hold events the log lacks: rebuild */
	uint64_t cp_seq; /* seq of the newest checkpoint */
	struct timespec cp_time;
	/* Batch scratch: encoded records, bounded by LEDGER_BATCH_MAX events.
	 */
	uint8_t *buf;
	size_t buf_cap;
	size_t *offs;
	size_t offs_cap;
	/* Forensic handles (ledger/guard.c): the part of the map the file
	 * holds, as of the last transaction begun, and the last damage. */
	const void *map_lo, *map_hi;
	size_t map_bytes, psize;
	size_t bad_page; /* (size_t)-1: not known */
	const char *bad_what;
	/* Event records fetched (ledger_records_read). */
	uint64_t records_read;
	/* The file's last page at the last ledger__store_map_grown trim. */
	size_t trim_pgno;
	/* Remaps of the environment exclude readers on other threads: the
	 * parent write-locks around mdb_env_set_mapsize, a snapshot holds
	 * the read lock (ledger/snapshot.c). Owned by the parent. */
	pthread_rwlock_t *remap;
	ledger_t *parent; /* a snapshot's; NULL for a handle of its own */
	bool locked;	  /* a snapshot holds remap for reading */
	bool shared;	  /* ledger_share's handle: a parent, yet it follows
			     the log (ledger_refresh) */
	/* Merkle leaves of the batch (one per event, offs_cap of them) and
	 * the right edge of the stored tree (size UINT64_MAX: reload). */
	uint8_t (*leaf)[MERKLE_HASH_BYTES];
	struct merkle_edge edge;
	struct lg_buf jbuf;  /* leaf texts (LEDGER_LEAF_TEXT_MAX_BYTES) */
	bool no_tree;	     /* read-only open of a ledger without a tree */
	bool no_objects;     /* read-only open of one without an object table */
};

extern const char *const ledger__store_db_names[LEDGER_DB_MAX];

/* Translates an LMDB or errno code once, here; returns the LG_* code. */
int ledger__store_error(struct lg_error *err, int rc, const char *what);
MDB_val ledger__store_key(uint64_t *k);
uint64_t ledger__store_keyval(const MDB_val *v);
/* Begins a transaction, adopting a map another process has grown. */
int ledger__store_txn_begin(ledger_t *lg, unsigned flags, MDB_txn **txn,
			    struct lg_error *err);
/* Reading damaged storage (ledger/guard.c). With lg->o.forensic the reads
 * are guarded: a key or value outside the file gives STORE_EBOUNDS, a fault
 * inside LMDB STORE_EFAULT (lg->bad_page, lg->bad_what say where and what);
 * without, they are plain mdb_get and mdb_cursor_get. */
#define STORE_EFAULT  (-30600)
#define STORE_EBOUNDS (-30601)
int ledger__store_get(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
		      MDB_val *key, MDB_val *val);
int ledger__store_cursor_get(ledger_t *lg, MDB_cursor *cur, enum ledger_db db,
			     MDB_val *key, MDB_val *val, MDB_cursor_op op);
int ledger__store_dbi_open(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
			   unsigned flags);
/* Loads the bounds above for a new transaction; STORE_EBOUNDS when the
 * snapshot's last page is beyond the file. */
int ledger__store_bounds_load(ledger_t *lg);
/* Both meta pages of data.mdb checked against the file before LMDB maps
 * it; LG_ECORRUPT "damaged storage: meta page N: why". */
int ledger__store_meta_check(ledger_t *lg, struct lg_error *err);
/* The map's pages handed back (issue 11). The map is shared and read-only,
 * so MADV_DONTNEED only unmaps the pages from this process: they stay in
 * the page cache, and a later read faults them back in unchanged (a reader
 * on another thread pays that fault, nothing else). Without it every page
 * this process ever read, wrote through or was shown by a fault around one
 * stays in its resident set: after one export, or a day of appends, the
 * size of the log. Nothing without /proc/self/maps.
 *
 * map_trim unmaps the whole map now; map_grown does that when the file has
 * grown by o.map_trim_bytes since the last time (after a commit and a
 * refresh); a long read notes the bytes it reads and trims every
 * o.map_trim_bytes and, once past `after` bytes, at its end. */
void ledger__store_map_trim(ledger_t *lg);
void ledger__store_map_grown(ledger_t *lg);
struct store_reading {
	ledger_t *lg;
	size_t read, since; /* bytes read, and since the last trim */
};
static inline void ledger__store_reading_note(struct store_reading *r,
					      size_t bytes)
{
	r->read += bytes;
	r->since += bytes;
	if (r->since >= r->lg->o.map_trim_bytes) {
		r->since = 0;
		ledger__store_map_trim(r->lg);
	}
}
void ledger__store_reading_end(struct store_reading *r, size_t after);
/* The `after` of scans: a short read makes no system call. */
#define STORE_TRIM_AFTER ((size_t)1 << 20)
/* Installs (first user) or removes (last) the fault handler. */
void ledger__store_trap_install(void);
/* A forensic handle's mdb_env_set_assert callback: an assertion of
 * liblmdb's inside a guarded read (a page a flipped bit left inconsistent,
 * say "IS_LEAF(mp)") ends that read as damaged storage instead of the
 * abort liblmdb makes of it; outside one it returns (liblmdb aborts). */
void ledger__store_on_assert(MDB_env *env, const char *msg);
void ledger__store_trap_remove(void);
/* Writes the detail of a STORE_E* code; 0 for any other code. */
int ledger__store_damage_detail(const ledger_t *lg, int rc, char *buf,
				size_t cap);
/* The error of a failed read at seq (0: none known): damage of the LMDB
 * structure (its own MDB_CORRUPTED, MDB_PAGE_NOTFOUND, ..., and STORE_E*)
 * is LG_ECORRUPT "seq N: damaged storage: ...", anything else
 * ledger__store_error.
 */
int ledger__store_read_error(const ledger_t *lg, struct lg_error *err, int rc,
			     uint64_t seq, const char *what);

/* One record of the events database at the expected seq k, as stored:
 * the cursor's result rc, its key and value. Gap-free keys, a record that
 * decodes and carries its seq, and (with head, the previous stored head,
 * advanced on success) the chain step: the checks every reader of the log
 * makes before it looks at an event's meaning (ledger/read.c; scans and
 * verify). */
int ledger__store_record_check(ledger_t *lg, int rc, uint64_t k,
			       const MDB_val *key, const MDB_val *val,
			       struct event *ev, uint8_t *head,
			       struct lg_error *err);
/* The chain head stored with the record at seq, read in txn (head(0) = 32
 * zero bytes); with ev, the record is decoded into it too, and must
 * decode. LG_ECORRUPT naming the seq when the record is missing or too
 * short (ledger_head_at tells the end of the log from a missing record). */
int ledger__store_head_at(ledger_t *lg, MDB_txn *txn, uint64_t seq,
			  uint8_t *head, struct event *ev, struct lg_error *err);
/* Decodes an event record (bytes + head) stored at seq. */
int ledger__store_record_decode(const MDB_val *v, uint64_t seq,
				struct event *ev, const uint8_t **head,
				struct lg_error *err);
void ledger__store_le64_put(uint8_t *p, uint64_t v);
uint64_t ledger__store_le64_get(const uint8_t *p);
/* A checkpoint record of st (caller frees *out). Never fails: memory runs
 * out by aborting. */
void ledger__store_cp_build(const state_t *st, const uint8_t *head,
			    uint8_t **out, size_t *len);
/* Checks a checkpoint record's frame and digest. */
int ledger__store_cp_open(const MDB_val *v, uint64_t seq,
			  const uint8_t **sbytes, size_t *slen,
			  const uint8_t **head, struct lg_error *err);
/* Applies the stored events after state_seq(st) up to `to` to st. */
int ledger__store_apply_range(ledger_t *lg, MDB_txn *txn, state_t *st,
			      uint64_t to, uint8_t *head, struct lg_error *err);
/* The same, with the reading and decoding of a long range on a thread of
 * its own (ledger/read.c); txn is a read transaction the caller does not
 * use meanwhile. */
int ledger__store_apply_fast(ledger_t *lg, MDB_txn *txn, state_t *st,
			     uint64_t to, uint8_t *head, struct lg_error *err);
/* The last key of db (0 when empty). */
int ledger__store_last_key(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
			   uint64_t *out, struct lg_error *err);
/* The state at seq from the latest sound checkpoint <= seq. */
int ledger__store_state_at(ledger_t *lg, MDB_txn *txn, uint64_t seq,
			   state_t **out, uint8_t *head, unsigned *skipped,
			   struct lg_error *err);
/* Records the VERDICT events evs[0..n) (seqs first..) in the verdict
 * index, inside the batch's write transaction; an LMDB code. */
int ledger__store_vidx_put(ledger_t *lg, MDB_txn *txn, const struct event *evs,
			   uint64_t first, size_t n);
/* Frees a snapshot (ledger_close of one). */
void ledger__store_snapshot_free(ledger_t *s);

/* ledger_append_batch, writing only when the log's last seq is
 * expect_last inside the write transaction (after catching up with other
 * writers); else LG_EMISMATCH and nothing is written (ledger/logval.c). */
int ledger__store_append_at(ledger_t *lg, struct event *evs, size_t n,
			    const struct ledger_batch *b, uint64_t expect_last,
			    struct lg_error *err);

/* Rebuilds the handle's state at the last seq. */
int ledger__store_reload(ledger_t *lg, struct lg_error *err);
/* Applies what other processes appended since the handle's seq. */
int ledger__store_catch_up(ledger_t *lg, MDB_txn *txn, struct lg_error *err);

/* The Merkle tree (ledger/tree.c). */
/* The bound of a leaf text (an event's canonical JSON, DESIGN 4.4), for
 * the buffers it is built in: each byte of an event of at most
 * LEDGER_EVENT_MAX_BYTES is at most six of its text (a control character
 * as \u00xx; a number such as 1e20 grows about five times), plus the
 * member names. */
#define LEDGER_LEAF_TEXT_MAX_BYTES (8 * (size_t)LEDGER_EVENT_MAX_BYTES)

/* The Merkle leaf of ev, its text built in scratch. */
int ledger__store_leaf_hash(struct lg_buf *scratch, const struct event *ev,
			    uint8_t *out);
/* The number of leaves the stored tree covers; an LMDB code. */
int ledger__store_tree_size(ledger_t *lg, MDB_txn *txn, uint64_t *size);
/* Extends the stored tree (of size first - 1) by n leaves; an LMDB code. */
int ledger__store_tree_append(ledger_t *lg, MDB_txn *txn, uint64_t first,
			      const uint8_t (*leaf)[MERKLE_HASH_BYTES],
			      size_t n);
/* Builds the tree of events the stored tree lacks (older ledgers). */
int ledger__store_tree_build(ledger_t *lg, struct lg_error *err);
/* Doubles the map up to the operator's bound. */
int ledger__store_grow_map(ledger_t *lg, struct lg_error *err);

#endif
