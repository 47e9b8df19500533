/*
 * ledger internals shared with the ledger's own tests: raw access to stored
 * records, so that tests can tamper with them the way a disk or an attacker
 * would. Not for other layers.
 */
#ifndef GPULEDGER_LEDGER_INT_H
#define GPULEDGER_LEDGER_INT_H

#include "ledger/ledger.h"

/* ---------------------------------------------------------------------- */
/* Used by ledger/ (and its tests) only. */

/* Event encoding (ledger/codec.c): the canonical bytes the chain hashes.
 * ledger__event_encode writes at most cap bytes and returns the size needed
 * (> cap: nothing usable was written). ledger__event_decode reads a whole
 * record; strings point into buf, which must stay alive and unchanged. */
size_t ledger__event_encode(const struct event *ev, uint8_t *buf, size_t cap);
int ledger__event_decode(struct event *ev, const uint8_t *buf, size_t len,
			 struct lg_error *err);
/* head_out = SHA-256(head_prev || bytes). */
void ledger__chain_step(const uint8_t *head_prev, const uint8_t *bytes,
			size_t len, uint8_t *head_out);

/* The last seq whose event time is <= t_ns (0 when none), by binary search
 * over the log (times never decrease): ledger_at_resolve and the export. */
int ledger__seq_at_time(ledger_t *lg, int64_t t_ns, uint64_t *seq,
			struct lg_error *err);
/* The time of event seq into *t_ns (untouched when the log has no seq):
 * ledger_at_resolve and the reconciliation's output. */
int ledger__event_time(ledger_t *lg, uint64_t seq, int64_t *t_ns,
		       struct lg_error *err);
/* Calls fn for every meta key starting with prefix (ledger_meta_fn). */
int ledger__meta_scan(ledger_t *lg, const char *prefix, ledger_meta_fn *fn,
		      void *ctx, struct lg_error *err);
/* ledger_verify_run with only the first bad seq (0 when sound). */
int ledger__verify(ledger_t *lg, uint64_t *bad_seq, struct lg_error *err);
/* Stores the signed note text (a writer only) under tree size `size`
 * (ledger_note_get reads it). */
int ledger__note_put(ledger_t *lg, uint64_t size, const char *text,
		     struct lg_error *err);

enum ledger_db {
	LEDGER_DB_EVENTS,
	LEDGER_DB_CHECKPOINTS,
	LEDGER_DB_META,
	LEDGER_DB_TREE,	   /* Merkle subtrees by post-order position */
	LEDGER_DB_OBJECTS, /* the watcher's object table, by its own keys */
	LEDGER_DB_MAX
};

/* Reads the raw record stored under integer key `key` of db into a malloc'ed
 * buffer (caller frees). LG_ENOENT when absent. */
int ledger__raw_get(ledger_t *lg, enum ledger_db db, uint64_t key,
		    uint8_t **val, size_t *len, struct lg_error *err);
/* Overwrites (or creates, or with val NULL deletes) a raw record. */
int ledger__raw_put(ledger_t *lg, enum ledger_db db, uint64_t key,
		    const uint8_t *val, size_t len, struct lg_error *err);

/* Empties the Merkle tree (its nodes and meta "merkle.size"), as a ledger
 * from before the tree has it: tests and the benchmark of building it. */
int ledger__raw_tree_drop(ledger_t *lg, struct lg_error *err);
/* Empties the index of review uids (DESIGN 11 rule 3), as a ledger from
 * before it: tests of filling it. */
int ledger__raw_vuid_drop(ledger_t *lg, struct lg_error *err);

/* Checkpoint record layout: "GLCP", u32 version, u64 seq, head, u64 n,
 * n state bytes, then SHA-256 of everything before it. Little endian. */
#define LEDGER_CP_MAGIC	  "GLCP"
#define LEDGER_CP_VERSION 1
#define LEDGER_CP_HEADER  (4 + 4 + 8 + LEDGER_HEAD_BYTES + 8)

#endif
