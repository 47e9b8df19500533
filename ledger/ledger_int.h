/*
 * ledger internals shared with the ledger's own tests: raw access to stored
 * records, so that tests can tamper with them the way a disk or an attacker
 * would. Not for other layers.
 */
#ifndef GPULEDGER_LEDGER_INT_H
#define GPULEDGER_LEDGER_INT_H

#include "ledger/ledger.h"

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
int ledger_raw_get(ledger_t *lg, enum ledger_db db, uint64_t key, uint8_t **val,
		   size_t *len, struct lg_error *err);
/* Overwrites (or creates, or with val NULL deletes) a raw record. */
int ledger_raw_put(ledger_t *lg, enum ledger_db db, uint64_t key,
		   const uint8_t *val, size_t len, struct lg_error *err);

/* Empties the Merkle tree (its nodes and meta "merkle.size"), as a ledger
 * from before the tree has it: tests and the benchmark of building it. */
int ledger_raw_tree_drop(ledger_t *lg, struct lg_error *err);

/* Checkpoint record layout: "GLCP", u32 version, u64 seq, head, u64 n,
 * n state bytes, then SHA-256 of everything before it. Little endian. */
#define LEDGER_CP_MAGIC	  "GLCP"
#define LEDGER_CP_VERSION 1
#define LEDGER_CP_HEADER  (4 + 4 + 8 + LEDGER_HEAD_BYTES + 8)

#endif
