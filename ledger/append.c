/*
 * Writing: appends (group commit of a batch with its meta values),
 * checkpoints, and raw record access for tests.
 *
 * An append is prepared before the write transaction is retried: every event
 * is validated, applied to the handle's state and encoded with its chain
 * head once; only the LMDB part repeats when the map has to grow. If LMDB
 * finally fails, the state is marked dirty and rebuilt from the log.
 */
#include "ledger/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room an event is first encoded into; a larger one is encoded again. */
#define ENCODE_GUESS 1024
/* What scratch may hold beyond the events: each one's head, and the guess
 * asked for before the last event's size is known. */
#define ENCODE_SLACK (LEDGER_HEAD_BYTES + ENCODE_GUESS)

/* Grows the batch scratch to hold `need` more bytes; never beyond what
 * LEDGER_BATCH_MAX events of LEDGER_EVENT_MAX_BYTES could need. Not an
 * lg_buf: the encoder writes into room reserved before an event's size is
 * known (ENCODE_GUESS), and the bound holds by construction (asserted). */
static uint8_t *scratch(ledger_t *lg, size_t used, size_t need)
{
	LG_ASSERT(used + need <=
		  (size_t)LEDGER_BATCH_MAX *
			  (LEDGER_EVENT_MAX_BYTES + ENCODE_SLACK));
	if (used + need > lg->buf_cap) {
		size_t cap = lg->buf_cap ? lg->buf_cap : 1 << 16;

		while (cap < used + need)
			cap *= 2;
		lg->buf = lg_xrealloc(lg->buf, cap);
		lg->buf_cap = cap;
	}
	return lg->buf + used;
}

/* Encodes one event plus its head at *used; advances *used and head. */
static int encode_one(ledger_t *lg, const struct event *ev, size_t *used,
		      uint8_t *head, struct lg_error *err)
{
	uint8_t *p = scratch(lg, *used, ENCODE_GUESS + LEDGER_HEAD_BYTES);
	/* Most events fit the guess: encoded once, not sized first. */
	size_t n = ledger__event_encode(ev, p, ENCODE_GUESS);

	if (n > LEDGER_EVENT_MAX_BYTES)
		return lg_error_set(
			err, LG_ELIMIT, "event %llu: %zu bytes, more than %u",
			(unsigned long long)ev->seq, n, LEDGER_EVENT_MAX_BYTES);
	if (n > ENCODE_GUESS) {
		p = scratch(lg, *used, n + LEDGER_HEAD_BYTES);
		/* The size asked for is the size written. */
		LG_ASSERT(ledger__event_encode(ev, p, n) == n);
	}
	ledger__chain_step(head, p, n, head);
	memcpy(p + n, head, LEDGER_HEAD_BYTES);
	*used += n + LEDGER_HEAD_BYTES;
	return 0;
}

/* Validates, applies and encodes the batch. On error *applied events of it
 * are in the state (the one that failed left the state unchanged). */
static int prepare(ledger_t *lg, struct event *evs, size_t n, uint8_t *head,
		   size_t *applied, struct lg_error *err)
{
	size_t used = 0;

	if (lg->offs == NULL || n > lg->offs_cap) {
		lg->offs = lg_xrealloc(lg->offs, (n + 1) * sizeof(*lg->offs));
		lg->leaf = lg_xrealloc(lg->leaf, (n + 1) * MERKLE_HASH_BYTES);
		lg->offs_cap = n;
	}
	memcpy(head, lg->head, LEDGER_HEAD_BYTES);
	for (size_t i = 0; i < n; i++) {
		int rc;

		evs[i].seq = lg->seq + 1 + i;
		/* Writers race (the watcher and the query process), and only
		 * here, inside the write transaction, is the last time known:
		 * time never decreases, so an earlier time is clamped. */
		if (evs[i].time_ns < state_time_ns(lg->st))
			evs[i].time_ns = state_time_ns(lg->st);
		rc = state_apply(lg->st, &evs[i], err);
		*applied = i + (rc == 0);
		if (rc == 0) {
			lg->offs[i] = used;
			rc = encode_one(lg, &evs[i], &used, head, err);
		}
		if (rc == 0 && ledger__store_leaf_hash(&lg->jbuf, &evs[i],
						       lg->leaf[i]) != 0)
			rc = lg_error_set(err, LG_EINVAL,
					  "event %zu: text is not UTF-8", i);
		if (rc != 0)
			return rc;
	}
	lg->offs[n] = used;
	return 0;
}

static bool checkpoint_due(ledger_t *lg, uint64_t seq)
{
	struct timespec now;

	if (seq - lg->cp_seq >= lg->o.checkpoint_every)
		return true;
	if (lg->o.checkpoint_secs < 0)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec - lg->cp_time.tv_sec >= lg->o.checkpoint_secs &&
	       seq > lg->cp_seq;
}

/* Writes a checkpoint of the handle's state, whose chain head is head.
 * Returns an LMDB code, like the other writes of a batch. */
static int put_checkpoint(ledger_t *lg, MDB_txn *txn, const uint8_t *head)
{
	uint8_t *rec;
	size_t len;
	uint64_t k = state_seq(lg->st);
	MDB_val key = ledger__store_key(&k), val;
	int rc;

	ledger__store_cp_build(lg->st, head, &rec, &len);
	val = (MDB_val){.mv_size = len, .mv_data = rec};
	rc = mdb_put(txn, lg->dbi[LEDGER_DB_CHECKPOINTS], &key, &val, 0);
	free(rec);
	return rc;
}

/* One attempt at writing the prepared batch. Returns an LMDB code. */
/* The meta pairs or object records kv[0..n) into db; val NULL deletes. */
static int put_pairs(MDB_txn *txn, MDB_dbi dbi, const struct ledger_meta *kv,
		     size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		MDB_val key = {.mv_size = strlen(kv[i].key),
			       .mv_data = (void *)kv[i].key};
		MDB_val val = {.mv_size = kv[i].len,
			       .mv_data = (void *)kv[i].val};

		if (kv[i].val == NULL) {
			rc = mdb_del(txn, dbi, &key, NULL);
			rc = rc == MDB_NOTFOUND ? 0 : rc;
		} else {
			rc = mdb_put(txn, dbi, &key, &val, 0);
		}
	}
	return rc;
}

/* The object table's records of the batch, and the seq it is now written
 * at (DESIGN 4.2: in the transaction of the events derived with it). */
static int put_objects(ledger_t *lg, MDB_txn *txn, uint64_t last,
		       const struct ledger_batch *b)
{
	uint8_t v[8];
	struct ledger_meta at = {LEDGER_OBJECTS_SEQ_KEY, v, sizeof(v)};
	int rc;

	if (b == NULL || !b->objects)
		return 0;
	ledger__store_le64_put(v, last);
	rc = put_pairs(txn, lg->dbi[LEDGER_DB_OBJECTS], b->objs, b->n_objs);
	return rc ? rc : put_pairs(txn, lg->dbi[LEDGER_DB_META], &at, 1);
}

/* The seq of the first NOTE Synced, kept in meta LEDGER_SYNCED_KEY by
 * every writer (watcher, replica, import), so that a reader learns that
 * the log holds a complete list without reading the history. The first
 * one stays. */
static int put_synced(ledger_t *lg, MDB_txn *txn, const struct event *evs,
		      uint64_t first, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (evs[i].type == EV_NOTE && evs[i].key != NULL &&
		    strcmp(evs[i].key, LEDGER_SYNCED_NOTE) == 0) {
			uint8_t v[8];
			uint64_t seq = first + i;
			MDB_val key = {.mv_size = strlen(LEDGER_SYNCED_KEY),
				       .mv_data = (void *)LEDGER_SYNCED_KEY};
			MDB_val val = {.mv_size = sizeof(v), .mv_data = v};
			int rc;

			ledger__store_le64_put(v, seq);
			rc = mdb_put(txn, lg->dbi[LEDGER_DB_META], &key, &val,
				     MDB_NOOVERWRITE);
			return rc == MDB_KEYEXIST ? 0 : rc;
		}
	return 0;
}

static int write_batch(ledger_t *lg, MDB_txn *txn, const struct event *evs,
		       uint64_t first, size_t n, const struct ledger_batch *b)
{
	MDB_cursor *ev = NULL;
	/* One cursor for the batch appends where the last put left it;
	 * mdb_put would search from the root for every event. */
	int rc = n > 0 ? mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &ev)
		       : 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t k = first + i;
		MDB_val key = ledger__store_key(&k);
		MDB_val val = {.mv_size = lg->offs[i + 1] - lg->offs[i],
			       .mv_data = lg->buf + lg->offs[i]};

		rc = mdb_cursor_put(ev, &key, &val, MDB_APPEND);
	}
	if (ev != NULL)
		mdb_cursor_close(ev);
	if (rc == 0 && b != NULL)
		rc = put_pairs(txn, lg->dbi[LEDGER_DB_META], b->meta,
			       b->n_meta);
	if (rc == 0)
		rc = put_objects(lg, txn, first + n - 1, b);
	if (rc == 0)
		rc = ledger__store_vidx_put(lg, txn, evs, first, n);
	if (rc == 0)
		rc = put_synced(lg, txn, evs, first, n);
	/* The Merkle tree grows in the same transaction (DESIGN 4.4). */
	if (rc == 0)
		rc = ledger__store_tree_append(
			lg, txn, first,
			(const uint8_t(*)[MERKLE_HASH_BYTES])lg->leaf, n);
	return rc;
}

/* Doubles the map, up to the operator's bound. */
int ledger__store_grow_map(ledger_t *lg, struct lg_error *err)
{
	MDB_envinfo info;
	size_t next;
	int rc;

	mdb_env_info(lg->env, &info);
	if (info.me_mapsize >= lg->o.map_max_bytes)
		return lg_error_set(err, LG_EFULL,
				    "map full at its bound of %zu bytes",
				    lg->o.map_max_bytes);
	next = info.me_mapsize * 2;
	if (next > lg->o.map_max_bytes)
		next = lg->o.map_max_bytes;
	/* Snapshots on other threads read the map: they finish first. */
	pthread_rwlock_wrlock(lg->remap);
	rc = mdb_env_set_mapsize(lg->env, next);
	pthread_rwlock_unlock(lg->remap);
	if (rc != 0)
		return lg_error_set(err, LG_EFULL, "cannot grow the map");
	return 0;
}

/* Writes the prepared batch in txn and commits, growing the map on
 * MDB_MAP_FULL. A new transaction after growth must find the log where the
 * batch was prepared, else *stale is set (another writer came in between).
 * txn is always consumed. */
static int commit_batch(ledger_t *lg, MDB_txn *txn, const struct event *evs,
			uint64_t first, size_t n, const struct ledger_batch *b,
			const uint8_t *head, bool *stale, struct lg_error *err)
{
	for (;;) {
		uint64_t last;
		bool cp = checkpoint_due(lg, first + n - 1);
		int rc = write_batch(lg, txn, evs, first, n, b);

		if (rc == 0 && cp)
			rc = put_checkpoint(lg, txn, head);
		if (rc == 0)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		if (rc == 0) {
			if (cp) {
				lg->cp_seq = first + n - 1;
				clock_gettime(CLOCK_MONOTONIC, &lg->cp_time);
			}
			ledger__store_map_grown(lg);
			return 0;
		}
		if (rc != MDB_MAP_FULL)
			return ledger__store_error(err, rc, "append");
		if ((rc = ledger__store_grow_map(lg, err)) != 0 ||
		    (rc = ledger__store_txn_begin(lg, 0, &txn, err)) != 0)
			return rc;
		rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last,
					    err);
		if (rc != 0 || last != first - 1) {
			*stale = rc == 0;
			mdb_txn_abort(txn);
			return rc ? rc : LG_EMISMATCH;
		}
	}
}

/* One attempt: in a write transaction (which serialises writers across
 * processes), catch up, prepare and commit. */
static int append_once(ledger_t *lg, struct event *evs, size_t n,
		       const struct ledger_batch *b, uint8_t *head, bool *stale,
		       uint64_t expect_last, struct lg_error *err)
{
	MDB_txn *txn;
	size_t applied = 0;
	int rc;

	if (lg->dirty && (rc = ledger__store_reload(lg, err)) != 0)
		return rc;
	if ((rc = ledger__store_txn_begin(lg, 0, &txn, err)) != 0)
		return rc;
	if ((rc = ledger__store_catch_up(lg, txn, err)) == 0 &&
	    expect_last != UINT64_MAX && lg->seq != expect_last)
		rc = lg_error_set(err, LG_EMISMATCH,
				  "the log is at seq %llu, not %llu: another "
				  "writer appended",
				  (unsigned long long)lg->seq,
				  (unsigned long long)expect_last);
	if (rc != 0 || (rc = prepare(lg, evs, n, head, &applied, err)) != 0) {
		mdb_txn_abort(txn);
		/* An event that does not fit leaves the state as it was;
		 * only the events before it must be undone, by a reload. */
		lg->dirty = lg->dirty || applied > 0;
		return rc;
	}
	rc = commit_batch(lg, txn, evs, lg->seq + 1, n, b, head, stale, err);
	/* The state holds a batch the log lacks; the cached tree edge may
	 * hold its leaves. */
	lg->dirty = lg->dirty || rc != 0;
	if (rc != 0)
		lg->edge.size = UINT64_MAX;
	return rc;
}

int ledger_append(ledger_t *lg, struct event *evs, size_t n,
		  const struct ledger_meta *meta, size_t n_meta,
		  uint64_t *first_seq, struct lg_error *err)
{
	struct ledger_batch b = {.meta = meta, .n_meta = n_meta};

	return ledger_append_batch(lg, evs, n, &b, first_seq, err);
}

/* Object records the ledger can store: LMDB's key bound, the value bound. */
static int check_objects(const struct ledger_batch *b, struct lg_error *err)
{
	for (size_t i = 0; b->objects && i < b->n_objs; i++) {
		size_t k;

		LG_ASSERT(b->objs[i].key != NULL);
		k = strlen(b->objs[i].key);
		if (k == 0 || k > LEDGER_OBJECT_KEY_MAX)
			return lg_error_set(err, LG_ELIMIT,
					    "object key of %zu bytes, not "
					    "1..%u",
					    k, LEDGER_OBJECT_KEY_MAX);
		if (b->objs[i].val != NULL &&
		    b->objs[i].len > LEDGER_OBJECT_MAX_BYTES)
			return lg_error_set(err, LG_ELIMIT,
					    "object %.64s: %zu bytes, more "
					    "than %u",
					    b->objs[i].key, b->objs[i].len,
					    LEDGER_OBJECT_MAX_BYTES);
	}
	return 0;
}

static int append_batch(ledger_t *lg, struct event *evs, size_t n,
			const struct ledger_batch *b, uint64_t expect_last,
			uint64_t *first_seq, struct lg_error *err);

int ledger_append_batch(ledger_t *lg, struct event *evs, size_t n,
			const struct ledger_batch *b, uint64_t *first_seq,
			struct lg_error *err)
{
	return append_batch(lg, evs, n, b, UINT64_MAX, first_seq, err);
}

int ledger_append_at(ledger_t *lg, struct event *evs, size_t n,
		     uint64_t expect_last, uint64_t *first_seq,
		     struct lg_error *err)
{
	LG_ASSERT(expect_last != UINT64_MAX);
	return append_batch(lg, evs, n, NULL, expect_last, first_seq, err);
}

int ledger__store_append_at(ledger_t *lg, struct event *evs, size_t n,
			    const struct ledger_batch *b, uint64_t expect_last,
			    struct lg_error *err)
{
	return append_batch(lg, evs, n, b, expect_last, NULL, err);
}

/* Both: expect_last UINT64_MAX takes the log wherever it is. */
static int append_batch(ledger_t *lg, struct event *evs, size_t n,
			const struct ledger_batch *b, uint64_t expect_last,
			uint64_t *first_seq, struct lg_error *err)
{
	static const struct ledger_batch none;
	uint8_t head[LEDGER_HEAD_BYTES];
	int rc;

	LG_ASSERT(lg != NULL && (n == 0 || evs != NULL));
	if (b == NULL)
		b = &none;
	LG_ASSERT(b->n_meta == 0 || b->meta != NULL);
	LG_ASSERT(!b->objects || b->n_objs == 0 || b->objs != NULL);

	if (lg->o.read_only)
		return lg_error_set(err, LG_EINVAL, "ledger opened read-only");
	if (n > LEDGER_BATCH_MAX)
		return lg_error_set(err, LG_ELIMIT,
				    "batch of %zu events, more than %u", n,
				    LEDGER_BATCH_MAX);
	if ((rc = check_objects(b, err)) != 0)
		return rc;
	if (n == 0 && b->n_meta == 0 && !b->objects)
		return ledger_refresh(lg, err);
	for (int tries = 0;; tries++) {
		bool stale = false;

		rc = append_once(lg, evs, n, b, head, &stale, expect_last, err);
		if (rc == 0)
			break;
		if (!stale || tries > 8 || expect_last != UINT64_MAX)
			return rc;
	}
	if (first_seq != NULL)
		*first_seq = lg->seq + 1;
	lg->seq += n;
	memcpy(lg->head, head, LEDGER_HEAD_BYTES);
	return 0;
}

int ledger_meta_get(ledger_t *lg, const char *key, void *buf, size_t cap,
		    size_t *len, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_val k, v;
	int rc;

	LG_ASSERT(lg != NULL && key != NULL && len != NULL);
	LG_ASSERT(buf != NULL || cap == 0);
	k = (MDB_val){.mv_size = strlen(key), .mv_data = (void *)key};
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = mdb_get(txn, lg->dbi[LEDGER_DB_META], &k, &v);
	if (rc == 0) {
		*len = v.mv_size;
		if (v.mv_size > cap)
			rc = lg_error_set(err, LG_ERANGE,
					  "meta %s: %zu bytes, buffer %zu", key,
					  v.mv_size, cap);
		else
			memcpy(buf, v.mv_data, v.mv_size);
	} else if (rc == MDB_NOTFOUND) {
		rc = lg_error_set(err, LG_ENOENT, "meta %s: absent", key);
	} else {
		rc = ledger__store_error(err, rc, "read meta");
	}
	mdb_txn_abort(txn);
	return rc;
}

int ledger_checkpoint(ledger_t *lg, struct lg_error *err)
{
	LG_ASSERT(lg != NULL);
	for (;;) {
		MDB_txn *txn;
		int rc;

		if (lg->o.read_only)
			return lg_error_set(err, LG_EINVAL,
					    "ledger opened read-only");
		if ((rc = ledger_refresh(lg, err)) != 0)
			return rc;
		if ((rc = ledger__store_txn_begin(lg, 0, &txn, err)) != 0)
			return rc;
		if ((rc = ledger__store_catch_up(lg, txn, err)) != 0) {
			mdb_txn_abort(txn);
			return rc;
		}
		rc = put_checkpoint(lg, txn, lg->head);
		if (rc == 0)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		if (rc == MDB_MAP_FULL && ledger__store_grow_map(lg, err) == 0)
			continue;
		if (rc != 0)
			return ledger__store_error(err, rc,
						   "commit checkpoint");
		lg->cp_seq = lg->seq;
		clock_gettime(CLOCK_MONOTONIC, &lg->cp_time);
		return 0;
	}
}

/* ---------------------------------------------------------------------- */
/* Raw access (ledger_int.h) */

int ledger__raw_get(ledger_t *lg, enum ledger_db db, uint64_t key,
		    uint8_t **val, size_t *len, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_val k = ledger__store_key(&key), v;
	int rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);

	if (rc != 0)
		return rc;
	rc = mdb_get(txn, lg->dbi[db], &k, &v);
	if (rc == 0) {
		*val = lg_xmalloc(v.mv_size + 1);
		memcpy(*val, v.mv_data, v.mv_size);
		*len = v.mv_size;
	} else {
		rc = ledger__store_error(err, rc, "raw get");
	}
	mdb_txn_abort(txn);
	return rc;
}

int ledger__raw_put(ledger_t *lg, enum ledger_db db, uint64_t key,
		    const uint8_t *val, size_t len, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_val k = ledger__store_key(&key),
		v = {.mv_size = len, .mv_data = (void *)val};
	int rc = ledger__store_txn_begin(lg, 0, &txn, err);

	if (rc != 0)
		return rc;
	rc = val ? mdb_put(txn, lg->dbi[db], &k, &v, 0)
		 : mdb_del(txn, lg->dbi[db], &k, NULL);
	rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	return rc ? ledger__store_error(err, rc, "raw put") : 0;
}

/* Calls fn for every key of db starting with prefix, in key order. */
static int db_scan(ledger_t *lg, enum ledger_db db, const char *prefix,
		   ledger_meta_fn *fn, void *ctx, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_cursor *cur = NULL;
	size_t pl = strlen(prefix);
	MDB_val k = {.mv_size = pl, .mv_data = (void *)prefix}, v;
	int rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);
	int op = pl > 0 ? MDB_SET_RANGE : MDB_FIRST;
	/* The object table of a million pods is a long read. */
	struct store_reading reading = {.lg = lg};

	if (rc != 0)
		return rc;
	if ((rc = mdb_cursor_open(txn, lg->dbi[db], &cur)) != 0) {
		mdb_txn_abort(txn);
		return ledger__store_error(err, rc, "open cursor");
	}
	for (;; op = MDB_NEXT) {
		rc = ledger__store_cursor_get(lg, cur, db, &k, &v, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc != 0) {
			rc = ledger__store_read_error(lg, err, rc, 0, "read");
			break;
		}
		if (k.mv_size < pl || memcmp(k.mv_data, prefix, pl) != 0)
			break;
		ledger__store_reading_note(&reading, k.mv_size + v.mv_size);
		if ((rc = fn(ctx, k.mv_data, k.mv_size, v.mv_data,
			     v.mv_size)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	ledger__store_reading_end(&reading, STORE_TRIM_AFTER);
	return rc;
}

int ledger__meta_scan(ledger_t *lg, const char *prefix, ledger_meta_fn *fn,
		      void *ctx, struct lg_error *err)
{
	return db_scan(lg, LEDGER_DB_META, prefix, fn, ctx, err);
}

int ledger_objects_scan(ledger_t *lg, ledger_meta_fn *fn, void *ctx,
			struct lg_error *err)
{
	LG_ASSERT(lg != NULL && fn != NULL);
	if (lg->no_objects)
		return 0;
	return db_scan(lg, LEDGER_DB_OBJECTS, "", fn, ctx, err);
}

uint64_t ledger_objects_count(ledger_t *lg)
{
	MDB_txn *txn;
	MDB_stat st;
	uint64_t n = 0;

	LG_ASSERT(lg != NULL);
	if (lg->no_objects ||
	    ledger__store_txn_begin(lg, MDB_RDONLY, &txn, NULL) != 0)
		return 0;
	if (mdb_stat(txn, lg->dbi[LEDGER_DB_OBJECTS], &st) == 0)
		n = st.ms_entries;
	mdb_txn_abort(txn);
	return n;
}

/* A seq kept in meta under key: 0 and !*present when absent. */
static int meta_seq(ledger_t *lg, const char *key, uint64_t *seq, bool *present,
		    struct lg_error *err)
{
	uint8_t v[8];
	size_t len = 0;
	int rc = ledger_meta_get(lg, key, v, sizeof(v), &len, err);

	*seq = 0;
	*present = rc == 0;
	if (rc == LG_ENOENT)
		return 0;
	if (rc == LG_ERANGE || (rc == 0 && len != sizeof(v)))
		return lg_error_set(err, LG_ECORRUPT, "meta %s: not 8 bytes",
				    key);
	if (rc == 0)
		*seq = ledger__store_le64_get(v);
	return rc;
}

int ledger_objects_seq(ledger_t *lg, uint64_t *seq, bool *present,
		       struct lg_error *err)
{
	LG_ASSERT(lg != NULL && seq != NULL && present != NULL);
	return meta_seq(lg, LEDGER_OBJECTS_SEQ_KEY, seq, present, err);
}

int ledger_synced_seq(ledger_t *lg, uint64_t *seq, struct lg_error *err)
{
	bool present;

	LG_ASSERT(lg != NULL && seq != NULL);
	return meta_seq(lg, LEDGER_SYNCED_KEY, seq, &present, err);
}
