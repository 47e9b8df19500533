/*
 * The Merkle tree of the log (DESIGN 4.4) and the signed notes kept beside
 * it.
 *
 * Storage: the "tree" database maps merkle_node_pos(level, index) to the
 * 32-byte hash of every complete subtree. Positions are post-order, the
 * order in which a growing tree completes its subtrees, so an append writes
 * its nodes with MDB_APPEND, about two per event, in the same transaction as
 * the events; meta "merkle.size" is the number of leaves the tree covers.
 * Any root and any proof is then O(log N) lookups of stored subtrees.
 *
 * A ledger written before the tree existed has no "merkle.size" (or one
 * behind its log): a writer that opens it builds the missing part, in
 * transactions of TREE_BUILD_CHUNK events, before anything else; a reader
 * refuses proofs past the tree and names the command that builds it.
 *
 * Signed notes (C2SP tlog-checkpoint) are meta values "note/<size, 20
 * digits>" so that the latest is the last key with that prefix.
 */
#include "ledger/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TREE_SIZE_KEY	 "merkle.size"
#define NOTE_PREFIX	 "note/"
#define TREE_BUILD_CHUNK 65536

struct tree_txn {
	ledger_t *lg;
	MDB_txn *txn;
	int mdb_rc; /* an LMDB failure inside a callback */
	MDB_cursor *put; /* appends: kept across the batch, at the end */
};

static int tree_get(void *ctx, unsigned level, uint64_t index, uint8_t *out)
{
	struct tree_txn *t = ctx;
	uint64_t pos = merkle_node_pos(level, index);
	MDB_val key = ledger__store_key(&pos), val;
	/* Guarded on a forensic handle: verify reads damaged trees. */
	int rc = ledger__store_get(t->lg, t->txn, LEDGER_DB_TREE, &key, &val);

	if (rc != 0 || val.mv_size != MERKLE_HASH_BYTES) {
		t->mdb_rc = rc ? rc : MDB_CORRUPTED;
		return rc == MDB_NOTFOUND ? LG_ENOENT : LG_ECORRUPT;
	}
	memcpy(out, val.mv_data, MERKLE_HASH_BYTES);
	return 0;
}

static void tree_put(void *ctx, unsigned level, uint64_t index,
		     const uint8_t *hash)
{
	struct tree_txn *t = ctx;
	uint64_t pos = merkle_node_pos(level, index);
	MDB_val key = ledger__store_key(&pos),
		val = {.mv_size = MERKLE_HASH_BYTES, .mv_data = (void *)hash};

	/* A cursor at the last key appends without a search from the root
	 * (mdb_put opens one per call). */
	if (t->mdb_rc == 0)
		t->mdb_rc = mdb_cursor_put(t->put, &key, &val, MDB_APPEND);
}

/* The size the stored tree covers (0 when it has none). */
int ledger__store_tree_size(ledger_t *lg, MDB_txn *txn, uint64_t *size)
{
	MDB_val key = {.mv_size = strlen(TREE_SIZE_KEY),
		       .mv_data = TREE_SIZE_KEY},
		val;
	int rc;

	*size = 0;
	if (lg->no_tree)
		return 0;
	rc = ledger__store_get(lg, txn, LEDGER_DB_META, &key, &val);
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return rc;
	if (val.mv_size != 8)
		return MDB_CORRUPTED;
	*size = ledger__store_le64_get(val.mv_data);
	return 0;
}

static int put_tree_size(ledger_t *lg, MDB_txn *txn, uint64_t size)
{
	uint8_t b[8];
	MDB_val key = {.mv_size = strlen(TREE_SIZE_KEY),
		       .mv_data = TREE_SIZE_KEY},
		val = {.mv_size = 8, .mv_data = b};

	ledger__store_le64_put(b, size);
	return mdb_put(txn, lg->dbi[LEDGER_DB_META], &key, &val, 0);
}

int ledger__store_leaf_hash(struct lg_buf *scratch, const struct event *ev,
			    uint8_t *out)
{
	lg_buf_reset(scratch);
	if (event_jcs_write(scratch, ev) != 0)
		return LG_EINVAL;
	merkle_leaf_hash(scratch->p, scratch->len, out);
	return 0;
}

/* Extends the stored tree of size first - 1 by the n leaves, in txn.
 * Returns an LMDB code. */
int ledger__store_tree_append(ledger_t *lg, MDB_txn *txn, uint64_t first,
			      const uint8_t (*leaf)[MERKLE_HASH_BYTES],
			      size_t n)
{
	struct tree_txn t = {lg, txn, 0, NULL};
	struct merkle_edge *e = &lg->edge;
	uint64_t have;
	int rc = ledger__store_tree_size(lg, txn, &have);

	if (rc != 0)
		return rc;
	if (have != first - 1)
		return MDB_CORRUPTED; /* the tree must be built first */
	if (e->size != have &&
	    merkle_edge_load(e, have, tree_get, &t) != 0) {
		e->size = UINT64_MAX;
		return t.mdb_rc ? t.mdb_rc : MDB_CORRUPTED;
	}
	t.mdb_rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_TREE], &t.put);
	for (size_t i = 0; i < n && t.mdb_rc == 0; i++)
		merkle_edge_push(e, leaf[i], tree_put, &t);
	if (t.put != NULL)
		mdb_cursor_close(t.put);
	if (t.mdb_rc == 0)
		t.mdb_rc = put_tree_size(lg, txn, first - 1 + n);
	/* Whether or not the transaction commits, the cached edge is only
	 * trusted again after a reload from what did. */
	if (t.mdb_rc != 0)
		e->size = UINT64_MAX;
	return t.mdb_rc;
}

/* ---------------------------------------------------------------------- */
/* Building the tree of a ledger written before it existed */

struct build {
	struct lg_buf jb;
	uint8_t (*leaf)[MERKLE_HASH_BYTES];
	size_t n;
	struct lg_error *err;
};

static int build_leaf(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct build *b = ctx;

	if (ledger__store_leaf_hash(&b->jb, ev, b->leaf[b->n]) != 0)
		return lg_error_set(b->err, LG_ECORRUPT,
				    "seq %llu: event text is not UTF-8",
				    (unsigned long long)ev->seq);
	b->n++;
	return 0;
}

/* One chunk: the leaves of the events after the stored tree are computed
 * from a read of the log, then written in a write transaction that still
 * finds the tree where the read did (else nothing is written and the
 * chunk is read again). Returns an LMDB code, or an LG_* code with err
 * set; *done when the tree covers the log. */
static int build_chunk(ledger_t *lg, struct build *b, bool *done,
		       struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t have, now;
	int rc;

	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = ledger__store_tree_size(lg, txn, &have);
	mdb_txn_abort(txn);
	if (rc != 0)
		return ledger__store_error(err, rc, "build tree");
	b->n = 0;
	rc = ledger_scan(lg, have + 1, TREE_BUILD_CHUNK, build_leaf, b, err);
	if (rc != 0 || b->n == 0) {
		*done = rc == 0;
		return rc;
	}
	if ((rc = ledger__store_txn_begin(lg, 0, &txn, err)) != 0)
		return rc;
	rc = ledger__store_tree_size(lg, txn, &now);
	if (rc == 0 && now == have)
		rc = ledger__store_tree_append(
			lg, txn, have + 1,
			(const uint8_t(*)[MERKLE_HASH_BYTES])b->leaf, b->n);
	rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	if (rc != 0)
		lg->edge.size = UINT64_MAX;
	return rc;
}

int ledger__store_tree_build(ledger_t *lg, struct lg_error *err)
{
	struct build b = {{NULL, 0, 0, 0, false},
			  lg_xmalloc(TREE_BUILD_CHUNK * MERKLE_HASH_BYTES),
			  0,
			  err};
	bool done = false;
	int rc = 0;

	lg_buf_init(&b.jb, LEDGER_LEAF_TEXT_MAX_BYTES);
	while (!done && rc == 0) {
		rc = build_chunk(lg, &b, &done, err);
		if (rc == MDB_MAP_FULL)
			rc = ledger__store_grow_map(lg, err);
		else if (rc > 0 || rc < LG_ERR_MIN) /* LMDB or errno */
			rc = ledger__store_error(err, rc, "build tree");
	}
	free(b.leaf);
	lg_buf_release(&b.jb);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Roots and proofs */

/* Opens a read transaction whose tree covers size. */
static int read_tree(ledger_t *lg, uint64_t size, MDB_txn **txn,
		     struct lg_error *err)
{
	uint64_t have;
	int rc = ledger__store_txn_begin(lg, MDB_RDONLY, txn, err);

	if (rc != 0)
		return rc;
	rc = ledger__store_tree_size(lg, *txn, &have);
	if (rc != 0) {
		mdb_txn_abort(*txn);
		return ledger__store_error(err, rc, "read tree");
	}
	if (size > have) {
		uint64_t last = 0;

		ledger__store_last_key(lg, *txn, LEDGER_DB_EVENTS, &last, NULL);
		mdb_txn_abort(*txn);
		if (size <= last)
			return lg_error_set(
				err, LG_EVERSION,
				"the Merkle tree covers %llu of %llu events "
				"(a ledger from before the tree): open it "
				"once with a writer to build it, e.g. "
				"`gpuledger checkpoint --db %s`",
				(unsigned long long)have,
				(unsigned long long)last, lg->dir);
		return lg_error_set(err, LG_ENOENT,
				    "tree size %llu is past the log (%llu)",
				    (unsigned long long)size,
				    (unsigned long long)last);
	}
	return 0;
}

static int tree_result(struct tree_txn *t, int rc, struct lg_error *err)
{
	if (rc == 0)
		return 0;
	if (rc == LG_ELIMIT || rc == LG_EINVAL)
		return lg_error_set(err, rc, "bad proof request");
	return lg_error_set(err, LG_ECORRUPT, "tree node missing or damaged%s",
			    t->mdb_rc == MDB_NOTFOUND ? "" : " (storage)");
}

enum tree_op { TREE_ROOT, TREE_INCLUSION, TREE_CONSISTENCY };

/* One read of the tree of size events in its own read transaction: the root
 * into out (uint8_t[32]), or the proof of leaf index (0-based) or of the
 * older size `from` into out (struct merkle_proof). */
static int tree_query(ledger_t *lg, enum tree_op op, uint64_t from,
		      uint64_t size, void *out, struct lg_error *err)
{
	struct tree_txn t = {lg, NULL, 0, NULL};
	int rc = read_tree(lg, size, &t.txn, err);

	LG_ASSERT(out != NULL);
	if (rc != 0)
		return rc;
	switch (op) {
	case TREE_ROOT:
		rc = merkle_root(tree_get, &t, size, out);
		break;
	case TREE_INCLUSION:
		rc = merkle_inclusion_proof(tree_get, &t, from, size, out);
		break;
	case TREE_CONSISTENCY:
		rc = merkle_consistency_proof(tree_get, &t, from, size, out);
		break;
	}
	rc = tree_result(&t, rc, err);
	mdb_txn_abort(t.txn);
	return rc;
}

int ledger_tree_root(ledger_t *lg, uint64_t size, uint8_t *root,
		     struct lg_error *err)
{
	LG_ASSERT(lg != NULL);
	return tree_query(lg, TREE_ROOT, 0, size, root, err);
}

int ledger_prove_inclusion(ledger_t *lg, uint64_t seq, uint64_t size,
			   struct merkle_proof *p, struct lg_error *err)
{
	LG_ASSERT(lg != NULL && p != NULL);
	if (seq == 0 || seq > size)
		return lg_error_set(err, LG_EINVAL,
				    "seq %llu is not in the tree of size %llu",
				    (unsigned long long)seq,
				    (unsigned long long)size);
	return tree_query(lg, TREE_INCLUSION, seq - 1, size, p, err);
}

int ledger_prove_consistency(ledger_t *lg, uint64_t from, uint64_t to,
			     struct merkle_proof *p, struct lg_error *err)
{
	LG_ASSERT(lg != NULL && p != NULL);
	if (from == 0 || from > to)
		return lg_error_set(err, LG_EINVAL,
				    "a consistency proof needs 1 <= from <= to "
				    "(from %llu, to %llu)",
				    (unsigned long long)from,
				    (unsigned long long)to);
	return tree_query(lg, TREE_CONSISTENCY, from, to, p, err);
}

/* ---------------------------------------------------------------------- */
/* verify: the tree recomputed from the events */

struct tverify {
	struct lg_buf jb;
	struct merkle_edge edge;
	uint64_t bad, cur;
	unsigned bad_level;
	struct tree_txn t;
	struct lg_error *err;
};

static void verify_node(void *ctx, unsigned level, uint64_t index,
			const uint8_t *hash)
{
	struct tverify *v = ctx;
	uint8_t stored[MERKLE_HASH_BYTES];

	if (level == 0 || v->bad)
		return;
	if (tree_get(&v->t, level, index, stored) != 0 ||
	    memcmp(stored, hash, MERKLE_HASH_BYTES) != 0) {
		v->bad = v->cur;
		v->bad_level = level;
	}
}

static int verify_leaf(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct tverify *v = ctx;
	uint8_t leaf[MERKLE_HASH_BYTES], stored[MERKLE_HASH_BYTES];

	if (ledger__store_leaf_hash(&v->jb, ev, leaf) != 0 ||
	    tree_get(&v->t, 0, ev->seq - 1, stored) != 0 ||
	    memcmp(leaf, stored, MERKLE_HASH_BYTES) != 0) {
		v->bad = ev->seq;
		if (v->t.mdb_rc != 0 && v->t.mdb_rc != MDB_NOTFOUND)
			return ledger__store_read_error(v->t.lg, v->err,
							v->t.mdb_rc, ev->seq,
							"Merkle tree");
		return lg_error_set(v->err, LG_ECORRUPT,
				    "seq %llu: Merkle leaf does not match the "
				    "event",
				    (unsigned long long)ev->seq);
	}
	/* Every stored subtree this leaf completes must be the recomputed
	 * one. */
	v->cur = ev->seq;
	merkle_edge_push(&v->edge, leaf, verify_node, v);
	return v->bad ? lg_error_set(v->err, LG_ECORRUPT,
				     "seq %llu: stored Merkle node (level %u) "
				     "does not match",
				     (unsigned long long)v->bad, v->bad_level)
		      : 0;
}

int ledger_verify_tree(ledger_t *lg, uint64_t *bad_seq, struct lg_error *err)
{
	struct tverify *v;
	uint64_t have, last;
	int rc;

	LG_ASSERT(lg != NULL && bad_seq != NULL);
	v = lg_xcalloc(1, sizeof(*v));
	*bad_seq = 0;
	lg_buf_init(&v->jb, LEDGER_LEAF_TEXT_MAX_BYTES);
	v->t.lg = lg;
	v->err = err;
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &v->t.txn, err)) != 0)
		goto out_free;
	if ((rc = ledger__store_tree_size(lg, v->t.txn, &have)) != 0) {
		rc = ledger__store_read_error(lg, err, rc, 0, "read tree");
		goto out_txn;
	}
	if ((rc = ledger__store_last_key(lg, v->t.txn, LEDGER_DB_EVENTS, &last,
					 err)) != 0)
		goto out_txn;
	if (have == 0 && last > 0) {
		rc = lg_error_set(err, LG_EVERSION,
				  "no Merkle tree (a ledger from before it): "
				  "open it once with a writer to build it, "
				  "e.g. `gpuledger checkpoint --db %s`",
				  lg->dir);
		goto out_txn;
	}
	if (have != last) {
		*bad_seq = have < last ? have + 1 : last + 1;
		rc = lg_error_set(err, LG_ECORRUPT,
				  "the Merkle tree covers %llu events, the "
				  "log %llu",
				  (unsigned long long)have,
				  (unsigned long long)last);
		goto out_txn;
	}
	/* Stored subtrees never change once written, so the events may be
	 * read in a transaction of their own, up to the size seen here. */
	if (last > 0)
		rc = ledger_scan(lg, 1, last, verify_leaf, v, err);
	*bad_seq = v->bad;
out_txn:
	mdb_txn_abort(v->t.txn);
out_free:
	lg_buf_release(&v->jb);
	free(v);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Signed notes */

int ledger_sign_checkpoint(ledger_t *lg, const struct note_signer *s,
			   uint64_t *size, struct lg_error *err)
{
	LG_ASSERT(lg != NULL && s != NULL && size != NULL);
	*size = ledger_last_seq(lg);
	return ledger_sign_checkpoint_at(lg, s, *size, err);
}

int ledger_sign_checkpoint_at(ledger_t *lg, const struct note_signer *s,
			      uint64_t size, struct lg_error *err)
{
	uint8_t root[MERKLE_HASH_BYTES];
	char *body, *note;
	int rc;

	LG_ASSERT(lg != NULL && s != NULL);
	if (size > ledger_last_seq(lg))
		return lg_error_set(err, LG_EINVAL,
				    "a checkpoint of size %llu past seq %llu",
				    (unsigned long long)size,
				    (unsigned long long)ledger_last_seq(lg));
	if ((rc = ledger_tree_root(lg, size, root, err)) != 0)
		return rc;
	body = tlog_checkpoint_text(s->name, size, root);
	note = note_sign(s, body);
	free(body);
	if (note == NULL)
		return lg_error_set(err, LG_EINVAL, "cannot sign");
	rc = ledger__note_put(lg, size, note, err);
	free(note);
	return rc;
}

static void note_key(char *buf, uint64_t size)
{
	snprintf(buf, 40, NOTE_PREFIX "%020llu", (unsigned long long)size);
}

int ledger__note_put(ledger_t *lg, uint64_t size, const char *text,
		     struct lg_error *err)
{
	char key[40];
	struct ledger_meta m = {key, text, strlen(text)};

	note_key(key, size);
	return ledger_append(lg, NULL, 0, &m, 1, NULL, err);
}

/* Copies the note stored under key (cursor op on the meta database). */
static void note_copy(const MDB_val *v, char **text)
{
	*text = lg_xmalloc(v->mv_size + 1);
	memcpy(*text, v->mv_data, v->mv_size);
	(*text)[v->mv_size] = '\0';
}

int ledger_note_get(ledger_t *lg, uint64_t size, char **text,
		    uint64_t *size_out, struct lg_error *err)
{
	char kbuf[40];
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val key, val;
	int rc;

	LG_ASSERT(lg != NULL && text != NULL);
	rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);
	*text = NULL;
	if (rc != 0)
		return rc;
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_META], &cur);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return ledger__store_error(err, rc, "read notes");
	}
	if (size != 0) {
		note_key(kbuf, size);
		key = (MDB_val){.mv_size = strlen(kbuf), .mv_data = kbuf};
		rc = mdb_cursor_get(cur, &key, &val, MDB_SET_KEY);
	} else {
		/* The latest: the last key of the prefix, found from just
		 * past it ("note0" follows every "note/..."). */
		key = (MDB_val){.mv_size = 5, .mv_data = "note0"};
		rc = mdb_cursor_get(cur, &key, &val, MDB_SET_RANGE);
		rc = rc == 0 ? mdb_cursor_get(cur, &key, &val, MDB_PREV)
			     : mdb_cursor_get(cur, &key, &val, MDB_LAST);
		if (rc == 0 &&
		    (key.mv_size != strlen(NOTE_PREFIX) + 20 ||
		     memcmp(key.mv_data, NOTE_PREFIX, strlen(NOTE_PREFIX))))
			rc = MDB_NOTFOUND;
	}
	if (rc == 0) {
		if (size_out != NULL)
			*size_out = strtoull((const char *)key.mv_data +
						     strlen(NOTE_PREFIX),
					     NULL, 10);
		note_copy(&val, text);
	} else if (rc == MDB_NOTFOUND) {
		rc = lg_error_set(err, LG_ENOENT, "no signed checkpoint%s",
				  size ? " of that size" : "");
	} else {
		rc = ledger__store_error(err, rc, "read notes");
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

int ledger__raw_tree_drop(ledger_t *lg, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_val key = {.mv_size = strlen(TREE_SIZE_KEY),
		       .mv_data = TREE_SIZE_KEY};
	int rc = ledger__store_txn_begin(lg, 0, &txn, err);

	if (rc != 0)
		return rc;
	rc = mdb_drop(txn, lg->dbi[LEDGER_DB_TREE], 0);
	if (rc == 0) {
		rc = mdb_del(txn, lg->dbi[LEDGER_DB_META], &key, NULL);
		rc = rc == MDB_NOTFOUND ? 0 : rc;
	}
	rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	lg->edge.size = UINT64_MAX;
	return rc ? ledger__store_error(err, rc, "drop tree") : 0;
}
