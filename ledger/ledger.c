/*
 * The LMDB store behind the ledger (DESIGN 4.2, 4.3).
 *
 * Layout: one environment, three named databases. "events" maps the seq
 * (MDB_INTEGERKEY) to the event's canonical bytes followed by the chain head
 * after it, so that verify can name the first bad seq exactly. "checkpoints"
 * maps a seq to a checkpoint record (ledger_int.h). "meta" holds the schema
 * version and the callers' values (watch resourceVersions), written in the
 * same transaction as the events they belong to.
 *
 * The handle keeps the projection state at the last seq it has seen. An
 * append first catches up with what other processes wrote, then checks each
 * event against the state (state_apply) before anything is written: a batch
 * that does not fit is refused whole. When LMDB then fails (a full disk), the
 * state holds events the log does not, so it is rebuilt from disk.
 */
#include "ledger/store.h"

#include <errno.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *const store_db_names[LEDGER_DB_MAX] = {
	[LEDGER_DB_EVENTS] = "events",
	[LEDGER_DB_CHECKPOINTS] = "checkpoints",
	[LEDGER_DB_META] = "meta",
	[LEDGER_DB_TREE] = "tree",
};

/* ---------------------------------------------------------------------- */
/* Errors: translate LMDB's once, here. */

int store_error(struct lg_error *err, int rc, const char *what)
{
	int code = LG_EIO;

	if (rc == MDB_MAP_FULL || rc == ENOSPC || rc == EDQUOT)
		code = LG_EFULL;
	else if (rc == MDB_NOTFOUND || rc == ENOENT)
		code = LG_ENOENT;
	else if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
		 rc == MDB_INVALID || rc == MDB_BAD_VALSIZE)
		code = LG_ECORRUPT;
	else if (rc == MDB_VERSION_MISMATCH)
		code = LG_EVERSION;
	else if (rc == ENOMEM)
		code = LG_ENOMEM;
	return lg_error_set(err, code, "%s: %s", what, mdb_strerror(rc));
}

MDB_val store_key(uint64_t *k)
{
	return (MDB_val){.mv_size = sizeof(*k), .mv_data = k};
}

uint64_t store_keyval(const MDB_val *v)
{
	uint64_t k;

	memcpy(&k, v->mv_data, sizeof(k));
	return k;
}

/* Begins a transaction, adopting a map another process has grown. */
int store_txn_begin(ledger_t *lg, unsigned flags, MDB_txn **txn,
		    struct lg_error *err)
{
	int rc = mdb_txn_begin(lg->env, NULL, flags, txn);

	/* Another process grew the map: adopt its size. It may grow it again
	 * meanwhile, so try a bounded number of times. */
	for (int i = 0; rc == MDB_MAP_RESIZED && i < 64; i++) {
		rc = mdb_env_set_mapsize(lg->env, 0);
		if (rc == 0)
			rc = mdb_txn_begin(lg->env, NULL, flags, txn);
	}
	return rc ? store_error(err, rc, "begin transaction") : 0;
}

/* ---------------------------------------------------------------------- */
/* Records */

/* Decodes an event record (bytes + head) at seq. */
int store_record_decode(const MDB_val *v, uint64_t seq, struct event *ev,
			const uint8_t **head, struct lg_error *err)
{
	int rc;

	if (v->mv_size <= LEDGER_HEAD_BYTES)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: record too short",
				    (unsigned long long)seq);
	rc = ledger_event_decode(ev, v->mv_data, v->mv_size - LEDGER_HEAD_BYTES,
				 err);
	if (rc != 0) {
		char msg[LG_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		return lg_error_set(err, LG_ECORRUPT, "seq %llu: %s",
				    (unsigned long long)seq, msg);
	}
	if (ev->seq != seq)
		return lg_error_set(
			err, LG_ECORRUPT, "seq %llu: record says seq %llu",
			(unsigned long long)seq, (unsigned long long)ev->seq);
	*head = (const uint8_t *)v->mv_data + v->mv_size - LEDGER_HEAD_BYTES;
	return 0;
}

void store_le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t store_le64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Builds a checkpoint record of st (caller frees *out). */
int store_cp_build(const state_t *st, const uint8_t *head, uint8_t **out,
		   size_t *len)
{
	uint8_t *sbuf, *rec;
	size_t slen, n;

	if (state_encode(st, &sbuf, &slen) != 0)
		return LG_ENOMEM;
	n = LEDGER_CP_HEADER + slen + SHA256_DIGEST_LENGTH;
	rec = malloc(n);
	if (rec == NULL) {
		free(sbuf);
		return LG_ENOMEM;
	}
	memcpy(rec, LEDGER_CP_MAGIC, 4);
	rec[4] = LEDGER_CP_VERSION;
	rec[5] = rec[6] = rec[7] = 0;
	store_le64_put(rec + 8, state_seq(st));
	memcpy(rec + 16, head, LEDGER_HEAD_BYTES);
	store_le64_put(rec + 16 + LEDGER_HEAD_BYTES, slen);
	memcpy(rec + LEDGER_CP_HEADER, sbuf, slen);
	SHA256(rec, LEDGER_CP_HEADER + slen, rec + LEDGER_CP_HEADER + slen);
	free(sbuf);
	*out = rec;
	*len = n;
	return 0;
}

/* Checks a checkpoint record's frame; on success sbytes and slen are the
 * state encoding inside it and *head the chain head it claims. */
int store_cp_open(const MDB_val *v, uint64_t seq, const uint8_t **sbytes,
		  size_t *slen, const uint8_t **head, struct lg_error *err)
{
	const uint8_t *p = v->mv_data;
	uint8_t digest[SHA256_DIGEST_LENGTH];
	uint64_t n;

	if (v->mv_size < LEDGER_CP_HEADER + SHA256_DIGEST_LENGTH ||
	    memcmp(p, LEDGER_CP_MAGIC, 4) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: bad frame",
				    (unsigned long long)seq);
	if (p[4] != LEDGER_CP_VERSION || p[5] || p[6] || p[7])
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: version %u",
				    (unsigned long long)seq, p[4]);
	n = store_le64_get(p + 16 + LEDGER_HEAD_BYTES);
	if (store_le64_get(p + 8) != seq ||
	    n != v->mv_size - LEDGER_CP_HEADER - SHA256_DIGEST_LENGTH)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: bad header",
				    (unsigned long long)seq);
	SHA256(p, LEDGER_CP_HEADER + n, digest);
	if (memcmp(digest, p + LEDGER_CP_HEADER + n, sizeof(digest)) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: digest mismatch",
				    (unsigned long long)seq);
	*head = p + 16;
	*sbytes = p + LEDGER_CP_HEADER;
	*slen = n;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Loading state */

/* Applies events (from, to] read in txn to st; head tracks the stored head
 * of the last one. */
int store_apply_range(ledger_t *lg, MDB_txn *txn, state_t *st, uint64_t to,
		      uint8_t *head, struct lg_error *err)
{
	uint64_t k = state_seq(st) + 1;
	MDB_val key = store_key(&k), val;
	MDB_cursor *cur;
	int rc, op = MDB_SET_KEY;

	if (k > to)
		return 0;
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &cur);
	if (rc != 0)
		return store_error(err, rc, "open cursor");
	for (; k <= to; k++, op = MDB_NEXT) {
		struct event ev;
		const uint8_t *h;

		rc = mdb_cursor_get(cur, &key, &val, op);
		if (rc != 0 || store_keyval(&key) != k) {
			rc = lg_error_set(err, LG_ECORRUPT,
					  "seq %llu: missing from the log",
					  (unsigned long long)k);
			break;
		}
		if ((rc = store_record_decode(&val, k, &ev, &h, err)) != 0 ||
		    (rc = state_apply_validated(st, &ev, err)) != 0)
			break;
		memcpy(head, h, LEDGER_HEAD_BYTES);
	}
	mdb_cursor_close(cur);
	return rc;
}

int store_last_key(ledger_t *lg, MDB_txn *txn, enum ledger_db db, uint64_t *out,
		   struct lg_error *err)
{
	MDB_cursor *cur;
	MDB_val key, val;
	int rc = mdb_cursor_open(txn, lg->dbi[db], &cur);

	if (rc != 0)
		return store_error(err, rc, "open cursor");
	rc = mdb_cursor_get(cur, &key, &val, MDB_LAST);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND) {
		*out = 0;
		return 0;
	}
	if (rc != 0)
		return store_error(err, rc, "last key");
	*out = store_keyval(&key);
	return 0;
}

/* The state at seq from the latest sound checkpoint <= seq, in txn. */
int store_state_at(ledger_t *lg, MDB_txn *txn, uint64_t seq, state_t **out,
		   uint8_t *head, unsigned *skipped, struct lg_error *err)
{
	uint64_t k = seq;
	MDB_val key = store_key(&k), val;
	MDB_cursor *cur;
	state_t *st = NULL;
	int rc, op = MDB_SET_RANGE;

	uint64_t last;

	*skipped = 0;
	memset(head, 0, LEDGER_HEAD_BYTES);
	if ((rc = store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err)) != 0)
		return rc;
	if (seq > last)
		return lg_error_set(
			err, LG_ENOENT, "seq %llu is past the log (last %llu)",
			(unsigned long long)seq, (unsigned long long)last);
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_CHECKPOINTS], &cur);
	if (rc != 0)
		return store_error(err, rc, "open cursor");
	rc = mdb_cursor_get(cur, &key, &val, op);
	if (rc == MDB_NOTFOUND)
		rc = mdb_cursor_get(cur, &key, &val, MDB_LAST);
	for (; rc == 0; rc = mdb_cursor_get(cur, &key, &val, MDB_PREV)) {
		const uint8_t *sb, *h;
		size_t sl;
		uint64_t at = store_keyval(&key);

		if (at > seq)
			continue;
		if (store_cp_open(&val, at, &sb, &sl, &h, NULL) == 0 &&
		    state_decode(&st, sb, sl, NULL) == 0) {
			if (state_seq(st) == at) {
				memcpy(head, h, LEDGER_HEAD_BYTES);
				break;
			}
			state_free(st);
			st = NULL;
		}
		(*skipped)++;
	}
	mdb_cursor_close(cur);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_error(err, rc, "read checkpoints");
	if (st == NULL)
		st = state_new();
	rc = store_apply_range(lg, txn, st, seq, head, err);
	if (rc == 0 && state_seq(st) != seq)
		rc = lg_error_set(err, LG_ENOENT, "seq %llu is past the log",
				  (unsigned long long)seq);
	if (rc != 0) {
		state_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

/* Rebuilds the handle's state at the last seq of the log. */
int store_reload(ledger_t *lg, struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t last;
	unsigned skipped;
	state_t *st;
	int rc = store_txn_begin(lg, MDB_RDONLY, &txn, err);

	if (rc != 0)
		return rc;
	rc = store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0)
		rc = store_state_at(lg, txn, last, &st, lg->head, &skipped,
				    err);
	if (rc == 0) {
		uint64_t cp;

		if (store_last_key(lg, txn, LEDGER_DB_CHECKPOINTS, &cp, NULL) ==
		    0)
			lg->cp_seq = cp;
		state_free(lg->st);
		lg->st = st;
		lg->seq = last;
		lg->dirty = false;
	}
	mdb_txn_abort(txn);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Open and close */

static int open_dbs(ledger_t *lg, struct lg_error *err)
{
	MDB_txn *txn;
	unsigned flags = lg->o.read_only ? MDB_RDONLY : 0;
	uint32_t version = LEDGER_SCHEMA_VERSION, stored;
	MDB_val key = {.mv_size = 6, .mv_data = "schema"}, val;
	int rc = store_txn_begin(lg, flags, &txn, err);

	if (rc != 0)
		return rc;
	for (int i = 0; i < LEDGER_DB_MAX && rc == 0; i++) {
		unsigned f = i == LEDGER_DB_META ? 0 : MDB_INTEGERKEY;

		if (!lg->o.read_only)
			f |= MDB_CREATE;
		rc = mdb_dbi_open(txn, store_db_names[i], f, &lg->dbi[i]);
		/* A ledger from before the Merkle tree has no "tree"
		 * database; a reader sees a tree of size 0. */
		if (rc == MDB_NOTFOUND && i == LEDGER_DB_TREE) {
			lg->no_tree = true;
			rc = 0;
		}
	}
	if (rc == MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return lg_error_set(err, LG_ENOENT,
				    "%s: not a gpuledger database", lg->dir);
	}
	if (rc == 0)
		rc = mdb_get(txn, lg->dbi[LEDGER_DB_META], &key, &val);
	if (rc == MDB_NOTFOUND && !lg->o.read_only) {
		val = (MDB_val){.mv_size = sizeof(version),
				.mv_data = &version};
		rc = mdb_put(txn, lg->dbi[LEDGER_DB_META], &key, &val, 0);
		if (rc == 0)
			return (rc = mdb_txn_commit(txn))
				       ? store_error(err, rc, "create")
				       : 0;
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc == MDB_NOTFOUND
			       ? lg_error_set(err, LG_ENOENT,
					      "%s: not a gpuledger database",
					      lg->dir)
			       : store_error(err, rc, "open databases");
	}
	memcpy(&stored, val.mv_data, sizeof(stored));
	/* Committing keeps the database handles opened in this transaction
	 * (an abort would close them). */
	rc = mdb_txn_commit(txn);
	if (rc != 0)
		return store_error(err, rc, "open databases");
	if (val.mv_size != sizeof(stored) || stored != LEDGER_SCHEMA_VERSION)
		return lg_error_set(err, LG_EVERSION,
				    "%s: schema version %u, this gpuledger "
				    "reads version %u",
				    lg->dir, val.mv_size == 4 ? stored : 0,
				    LEDGER_SCHEMA_VERSION);
	return 0;
}

static int env_open(ledger_t *lg, struct lg_error *err)
{
	unsigned flags = MDB_NOTLS | (lg->o.no_sync ? MDB_NOSYNC : 0) |
			 (lg->o.read_only ? MDB_RDONLY : 0);
	struct stat sb;
	int rc, dead;

	if (stat(lg->dir, &sb) != 0) {
		if (!lg->o.create || errno != ENOENT)
			return lg_error_set(err, LG_ENOENT, "%s: %s", lg->dir,
					    strerror(errno));
		if (mkdir(lg->dir, 0775) != 0)
			return lg_error_set(err, LG_EIO, "mkdir %s: %s",
					    lg->dir, strerror(errno));
	} else if (!S_ISDIR(sb.st_mode)) {
		return lg_error_set(err, LG_EINVAL, "%s: not a directory",
				    lg->dir);
	}
	if ((rc = mdb_env_create(&lg->env)) != 0)
		return store_error(err, rc, "create environment");
	mdb_env_set_maxdbs(lg->env, LEDGER_DB_MAX);
	mdb_env_set_maxreaders(lg->env, 510);
	mdb_env_set_mapsize(lg->env, lg->o.map_size_bytes);
	rc = mdb_env_open(lg->env, lg->dir, flags, 0664);
	if (rc != 0)
		return store_error(err, rc, lg->dir);
	/* A file grown by an earlier run is bigger than our initial size;
	 * adopt it. Stale reader slots of dead processes are freed. */
	mdb_env_set_mapsize(lg->env, 0);
	mdb_reader_check(lg->env, &dead);
	return 0;
}

int ledger_open(ledger_t **out, const struct ledger_opts *o,
		struct lg_error *err)
{
	ledger_t *lg = calloc(1, sizeof(*lg));
	int rc;

	*out = NULL;
	if (lg == NULL)
		return lg_error_set(err, LG_ENOMEM, "out of memory");
	lg->o = *o;
	if (lg->o.map_size_bytes == 0)
		lg->o.map_size_bytes = DEFAULT_MAP_BYTES;
	if (lg->o.map_max_bytes == 0)
		lg->o.map_max_bytes = DEFAULT_MAP_MAX_BYTES;
	if (lg->o.checkpoint_every == 0)
		lg->o.checkpoint_every = DEFAULT_CP_EVERY;
	if (lg->o.checkpoint_secs == 0)
		lg->o.checkpoint_secs = DEFAULT_CP_SECS;
	lg->dir = strdup(o->dir ? o->dir : "");
	clock_gettime(CLOCK_MONOTONIC, &lg->cp_time);
	lg->edge.size = UINT64_MAX;
	if (o->dir == NULL || o->dir[0] == '\0')
		rc = lg_error_set(err, LG_EINVAL, "no ledger directory");
	else if ((rc = env_open(lg, err)) == 0 && (rc = open_dbs(lg, err)) == 0)
		rc = store_reload(lg, err);
	/* A writer builds what the tree lacks (a ledger from before it). */
	if (rc == 0 && !lg->o.read_only)
		rc = store_tree_build(lg, err);
	if (rc != 0) {
		ledger_close(lg);
		return rc;
	}
	*out = lg;
	return 0;
}

void ledger_close(ledger_t *lg)
{
	if (lg == NULL)
		return;
	if (lg->env != NULL)
		mdb_env_close(lg->env);
	state_free(lg->st);
	free(lg->buf);
	free(lg->offs);
	free(lg->leaf);
	jcs_buf_release(&lg->jbuf);
	free(lg->dir);
	free(lg);
}

const state_t *ledger_state(const ledger_t *lg)
{
	return lg->st;
}

uint64_t ledger_last_seq(const ledger_t *lg)
{
	return lg->seq;
}

const uint8_t *ledger_head(const ledger_t *lg)
{
	return lg->head;
}

/* Catches up with events other processes appended, inside txn. */
int store_catch_up(ledger_t *lg, MDB_txn *txn, struct lg_error *err)
{
	uint64_t last;
	int rc = store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);

	if (rc != 0 || last == lg->seq)
		return rc;
	if (last < lg->seq)
		return lg_error_set(err, LG_ECORRUPT,
				    "the log shrank from seq %llu to %llu",
				    (unsigned long long)lg->seq,
				    (unsigned long long)last);
	rc = store_apply_range(lg, txn, lg->st, last, lg->head, err);
	if (rc != 0) {
		lg->dirty = true;
		return rc;
	}
	lg->seq = last;
	return 0;
}

int ledger_refresh(ledger_t *lg, struct lg_error *err)
{
	MDB_txn *txn;
	int rc;

	if (lg->dirty)
		return store_reload(lg, err);
	if ((rc = store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = store_catch_up(lg, txn, err);
	mdb_txn_abort(txn);
	return rc;
}
