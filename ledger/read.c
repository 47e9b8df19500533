/*
 * Reading: past states, time lookups, scans, verification, statistics and
 * backups. Every function runs in one read transaction, so it sees one
 * consistent snapshot while writers go on.
 */
#include "ledger/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int ledger_state_at(ledger_t *lg, uint64_t seq, state_t **out,
		    unsigned *skipped, struct lg_error *err)
{
	uint8_t head[LEDGER_HEAD_BYTES];
	unsigned sk = 0;
	MDB_txn *txn;
	int rc;

	LG_ASSERT(lg != NULL && out != NULL);
	rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);
	*out = NULL;
	if (rc != 0)
		return rc;
	rc = ledger__store_state_at(lg, txn, seq, out, head, &sk, err);
	mdb_txn_abort(txn);
	if (skipped != NULL)
		*skipped = sk;
	return rc;
}

/* The time of the event at seq. */
static int time_at(ledger_t *lg, MDB_txn *txn, uint64_t seq, int64_t *t,
		   struct lg_error *err)
{
	MDB_val key = ledger__store_key(&seq), val;
	struct event ev;
	const uint8_t *head;
	int rc = ledger__store_get(lg, txn, LEDGER_DB_EVENTS, &key, &val);

	if (rc != 0)
		return ledger__store_read_error(lg, err, rc, seq, "read event");
	rc = ledger__store_record_decode(&val, seq, &ev, &head, err);
	*t = ev.time_ns;
	return rc;
}

int ledger__seq_at_time(ledger_t *lg, int64_t t_ns, uint64_t *seq,
		       struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t lo = 0, hi; /* invariant: time(lo) <= t (0: none), hi > lo */
	int rc;

	LG_ASSERT(lg != NULL && seq != NULL);
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &hi, err);
	hi++;
	/* Times never decrease with seq, so bisect on seq. */
	while (rc == 0 && hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		int64_t t;

		rc = time_at(lg, txn, mid, &t, err);
		if (rc == 0 && t <= t_ns)
			lo = mid;
		else
			hi = mid;
	}
	mdb_txn_abort(txn);
	*seq = lo;
	return rc;
}

/* The head stored with the record at seq (head(0) = 0), for a checked
 * scan that starts after seq 1. */
static int stored_head(ledger_t *lg, MDB_txn *txn, uint64_t seq, uint8_t *head,
		       struct lg_error *err)
{
	MDB_val key = ledger__store_key(&seq), val;
	int rc;

	memset(head, 0, LEDGER_HEAD_BYTES);
	if (seq == 0)
		return 0;
	rc = ledger__store_get(lg, txn, LEDGER_DB_EVENTS, &key, &val);
	if (rc == MDB_NOTFOUND)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: missing from the log",
				    (unsigned long long)seq);
	if (rc != 0)
		return ledger__store_read_error(lg, err, rc, seq, "read event");
	if (val.mv_size <= LEDGER_HEAD_BYTES)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: record too short",
				    (unsigned long long)seq);
	memcpy(head,
	       (const uint8_t *)val.mv_data + val.mv_size - LEDGER_HEAD_BYTES,
	       LEDGER_HEAD_BYTES);
	return 0;
}

/* One record of the events database at the expected seq k, as stored:
 * the cursor's result rc, its key and value. Gap-free keys, a record that
 * decodes and carries its seq, and (with head, the previous stored head,
 * advanced on success) the chain step. The checks every reader of the log
 * makes before it looks at an event's meaning. */
static int storage_record(ledger_t *lg, int rc, uint64_t k, const MDB_val *key,
			  const MDB_val *val, struct event *ev, uint8_t *head,
			  struct lg_error *err)
{
	const uint8_t *stored;
	uint8_t step[LEDGER_HEAD_BYTES];

	if (rc != 0)
		return ledger__store_read_error(lg, err, rc, k, "read event");
	if (ledger__store_keyval(key) != k)
		/* Keys come in order: a larger one leaves k out (a deleted
		 * or re-keyed record: the gap is named, not the record that
		 * moved), a smaller or equal one is a key out of order. */
		return ledger__store_keyval(key) > k
			       ? lg_error_set(err, LG_ECORRUPT,
					      "seq %llu: missing from the log",
					      (unsigned long long)k)
			       : lg_error_set(
					 err, LG_ECORRUPT,
					 "seq %llu: key %llu out of order",
					 (unsigned long long)k,
					 (unsigned long long)
						 ledger__store_keyval(key));
	if ((rc = ledger__store_record_decode(val, k, ev, &stored, err)) != 0)
		return rc;
	if (head == NULL)
		return 0;
	ledger__chain_step(head, val->mv_data, val->mv_size - LEDGER_HEAD_BYTES,
			   step);
	if (memcmp(stored, step, LEDGER_HEAD_BYTES) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: chain head mismatch",
				    (unsigned long long)k);
	memcpy(head, step, LEDGER_HEAD_BYTES);
	return 0;
}

static int scan(ledger_t *lg, uint64_t from, uint64_t limit, bool checked,
		ledger_event_fn *fn, void *ctx, struct lg_error *err)
{
	struct store_reading reading = {.lg = lg};
	MDB_txn *txn;
	MDB_cursor *cur = NULL;
	uint64_t k = from ? from : 1, n = 0;
	uint8_t head[LEDGER_HEAD_BYTES];
	MDB_val key = ledger__store_key(&k), val;
	/* SET_RANGE, not SET_KEY: a missing first record is named, not
	 * taken for the end of the log. */
	int rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err),
	    op = MDB_SET_RANGE;

	LG_ASSERT(fn != NULL);
	if (rc != 0)
		return rc;
	if (checked)
		rc = stored_head(lg, txn, k - 1, head, err);
	if (rc == 0 &&
	    (rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &cur)) != 0)
		rc = ledger__store_error(err, rc, "open cursor");
	for (; rc == 0 && (limit == 0 || n < limit); n++, k++, op = MDB_NEXT) {
		struct event ev;

		rc = ledger__store_cursor_get(lg, cur, LEDGER_DB_EVENTS, &key,
					      &val, op);
		/* The end of the log is the last seq the handle knows; a seq
		 * at or before it that is not found (seq 1 itself, or a cut
		 * tail) is damage, not the end (issue 10, case 5). */
		if (rc == MDB_NOTFOUND && k <= lg->seq) {
			rc = lg_error_set(err, LG_ECORRUPT,
					  "seq %llu: missing from the log",
					  (unsigned long long)k);
			break;
		}
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc == 0)
			ledger__store_reading_note(&reading, val.mv_size);
		if ((rc = storage_record(lg, rc, k, &key, &val, &ev,
					 checked ? head : NULL, err)) != 0 ||
		    (rc = fn(ctx, &ev,
			     (const uint8_t *)val.mv_data + val.mv_size -
				     LEDGER_HEAD_BYTES)) != 0)
			break;
	}
	ledger__store_reading_end(&reading, STORE_TRIM_AFTER);
	if (cur != NULL)
		mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

int ledger_scan(ledger_t *lg, uint64_t from, uint64_t limit,
		ledger_event_fn *fn, void *ctx, struct lg_error *err)
{
	LG_ASSERT(lg != NULL);
	return scan(lg, from, limit, false, fn, ctx, err);
}

int ledger_scan_checked(ledger_t *lg, uint64_t from, uint64_t limit,
			ledger_event_fn *fn, void *ctx, struct lg_error *err)
{
	LG_ASSERT(lg != NULL);
	return scan(lg, from, limit, true, fn, ctx, err);
}

/* ---------------------------------------------------------------------- */
/* Verification: storage, then meaning (ledger.h). */

struct verify {
	ledger_t *lg;
	MDB_txn *txn;
	MDB_cursor *ev, *cp; /* over events and checkpoints */
	struct ledger_verify_result *res;
	uint8_t head[LEDGER_HEAD_BYTES];
	uint64_t walked, n_cp; /* records and checkpoints found in pass 1 */
	uint64_t cp_next; /* key of the next checkpoint (UINT64_MAX: none) */
	MDB_val cp_val;
};

/* Moves to the first checkpoint (first) or the next one. */
static int cp_advance(struct verify *v, bool first, struct lg_error *err)
{
	MDB_val key;
	int rc = ledger__store_cursor_get(v->lg, v->cp, LEDGER_DB_CHECKPOINTS,
					  &key, &v->cp_val,
					  first ? MDB_FIRST : MDB_NEXT);

	if (rc == MDB_NOTFOUND) {
		v->cp_next = UINT64_MAX;
		return 0;
	}
	if (rc != 0)
		return ledger__store_read_error(
			v->lg, err, rc,
			v->cp_next == UINT64_MAX ? 0 : v->cp_next,
			"read checkpoint");
	v->cp_next = ledger__store_keyval(&key);
	return 0;
}

/* Pass 1 for the checkpoint at seq (v->cp_val): frame, digest, and the
 * head against the chain's. */
static int storage_checkpoint(struct verify *v, uint64_t seq,
			      struct lg_error *err)
{
	const uint8_t *sb, *h;
	size_t sl;
	int rc = ledger__store_cp_open(&v->cp_val, seq, &sb, &sl, &h, err);

	if (rc != 0)
		return rc;
	if (memcmp(h, v->head, LEDGER_HEAD_BYTES) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: head differs from the "
				    "chain",
				    (unsigned long long)seq);
	v->n_cp++;
	return 0;
}

/* The entry counts LMDB keeps for a database must be what was walked: a
 * root or a count damaged in the main page shows here. */
static int storage_count(struct verify *v, enum ledger_db db, uint64_t walked,
			 struct lg_error *err)
{
	MDB_stat st;
	int rc = mdb_stat(v->txn, v->lg->dbi[db], &st);

	if (rc != 0)
		return ledger__store_read_error(v->lg, err, rc, 0,
						"database stat");
	if (st.ms_entries != walked)
		return lg_error_set(
			err, LG_ECORRUPT,
			"damaged storage: %s: %zu entries recorded, "
			"%llu found",
			ledger__store_db_names[db], st.ms_entries,
			(unsigned long long)walked);
	return 0;
}

/* Pass 1: every record and checkpoint as stored, no state. On failure
 * res->bad_seq names the first bad seq (0: none known, e.g. a count). */
static int verify_storage(struct verify *v, struct lg_error *err)
{
	uint64_t k = 1, *bad = &v->res->bad_seq;
	int rc = cp_advance(v, true, err), op = MDB_FIRST;

	memset(v->head, 0, sizeof(v->head));
	if (rc == 0 && v->cp_next == 0) {
		*bad = 0;
		if ((rc = storage_checkpoint(v, 0, err)) == 0)
			rc = cp_advance(v, false, err);
	}
	for (; rc == 0; k++, op = MDB_NEXT) {
		struct event ev;
		MDB_val key, val;

		*bad = k;
		rc = ledger__store_cursor_get(v->lg, v->ev, LEDGER_DB_EVENTS,
					      &key, &val, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		rc = storage_record(v->lg, rc, k, &key, &val, &ev, v->head,
				    err);
		/* The Merkle tree (4.4) takes leaf k here. */
		if (rc == 0)
			v->walked = k;
		while (rc == 0 && v->cp_next <= k) {
			/* Only a checkpoint at k can be here: one at a
			 * smaller key would sit on no seq of the log. */
			rc = v->cp_next == k
				     ? storage_checkpoint(v, k, err)
				     : lg_error_set(
					       err, LG_ECORRUPT,
					       "checkpoint %llu: on no "
					       "seq of the log",
					       (unsigned long long)v->cp_next);
			if (rc == 0)
				rc = cp_advance(v, false, err);
		}
	}
	if (rc == 0 && v->cp_next != UINT64_MAX) {
		*bad = v->cp_next;
		rc = lg_error_set(err, LG_ECORRUPT,
				  "checkpoint %llu: past the end of the log",
				  (unsigned long long)v->cp_next);
	}
	if (rc == 0) {
		*bad = 0;
		rc = storage_count(v, LEDGER_DB_EVENTS, v->walked, err);
	}
	if (rc == 0)
		rc = storage_count(v, LEDGER_DB_CHECKPOINTS, v->n_cp, err);
	return rc;
}

/* Pass 2 for the checkpoint at seq: it must be the replay's state. */
static int meaning_checkpoint(struct verify *v, const state_t *st, uint64_t seq,
			      struct lg_error *err)
{
	const uint8_t *sb, *h;
	uint8_t *mine = NULL;
	size_t sl, ml = 0;
	int rc = ledger__store_cp_open(&v->cp_val, seq, &sb, &sl, &h, err);

	if (rc != 0)
		return rc;
	/* state_encode cannot fail on a state (ledger__store_cp_build). */
	rc = state_encode(st, &mine, &ml);
	LG_ASSERT(rc == 0);
	rc = ml == sl && memcmp(mine, sb, sl) == 0
		     ? 0
		     : lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: state differs from the "
				    "replay",
				    (unsigned long long)seq);
	free(mine);
	return rc;
}

/* Pass 2: replays seqs 1..upto (all sound in storage) from genesis. */
static int verify_meaning(struct verify *v, uint64_t upto, struct lg_error *err)
{
	state_t *st = state_new();
	uint64_t *bad = &v->res->bad_seq;
	int rc = cp_advance(v, true, err), op = MDB_FIRST;

	*bad = 0;
	if (rc == 0 && v->cp_next == 0) {
		if ((rc = meaning_checkpoint(v, st, 0, err)) == 0)
			rc = cp_advance(v, false, err);
	}
	for (uint64_t k = 1; rc == 0 && k <= upto; k++, op = MDB_NEXT) {
		struct event ev;
		MDB_val key, val;

		*bad = k;
		rc = ledger__store_cursor_get(v->lg, v->ev, LEDGER_DB_EVENTS,
					      &key, &val, op);
		if (rc == 0)
			rc = storage_record(v->lg, rc, k, &key, &val, &ev, NULL,
					    err);
		if (rc == 0 &&
		    (rc = state_apply_validated(st, &ev, err)) != 0) {
			char msg[LG_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
			rc = lg_error_set(
				err, LG_ECORRUPT,
				"seq %llu: does not fit the state: %s",
				(unsigned long long)k, msg);
		}
		if (rc == 0 && v->cp_next == k) {
			if ((rc = meaning_checkpoint(v, st, k, err)) == 0)
				rc = cp_advance(v, false, err);
		}
	}
	if (rc == 0)
		*bad = 0;
	state_free(st);
	return rc;
}

static void verify_end(struct verify *v)
{
	if (v->ev != NULL)
		mdb_cursor_close(v->ev);
	if (v->cp != NULL)
		mdb_cursor_close(v->cp);
	if (v->txn != NULL)
		mdb_txn_abort(v->txn);
	v->ev = v->cp = NULL;
	v->txn = NULL;
}

/* A read transaction (a new one after an old one) with its cursors. */
static int verify_begin(struct verify *v, struct lg_error *err)
{
	int rc;

	verify_end(v);
	if ((rc = ledger__store_txn_begin(v->lg, MDB_RDONLY, &v->txn, err)) !=
	    0)
		return rc;
	if ((rc = mdb_cursor_open(v->txn, v->lg->dbi[LEDGER_DB_EVENTS],
				  &v->ev)) != 0 ||
	    (rc = mdb_cursor_open(v->txn, v->lg->dbi[LEDGER_DB_CHECKPOINTS],
				  &v->cp)) != 0)
		return ledger__store_error(err, rc, "open cursor");
	return 0;
}

int ledger_verify_run(ledger_t *lg, struct ledger_verify_result *res,
		      struct lg_error *err)
{
	struct verify v = {.lg = lg, .res = res};
	struct lg_error serr = {0};
	uint64_t sbad;
	int rc, src;

	LG_ASSERT(lg != NULL && res != NULL);
	memset(res, 0, sizeof(*res));
	if ((rc = verify_begin(&v, err)) != 0)
		goto out;
	src = verify_storage(&v, &serr);
	sbad = res->bad_seq;
	memcpy(res->head, v.head, sizeof(res->head));
	res->events = v.walked;
	res->checkpoints = v.n_cp;
	/* After an error LMDB refuses the rest of the transaction; the
	 * records before the damage are the same in a new one (the log only
	 * grows). */
	if (src != 0 && (rc = verify_begin(&v, err)) != 0)
		goto out;
	/* Meaning only over what storage vouched for: the events before the
	 * first storage damage (all of them when there is none, or when the
	 * damage has no seq, like a count). */
	rc = verify_meaning(
		&v,
		src != 0 && sbad != 0 && sbad <= v.walked ? sbad - 1 : v.walked,
		err);
	if (rc == 0 && src != 0) {
		rc = src;
		res->bad_seq = sbad;
		res->storage = true;
		if (err != NULL)
			*err = serr;
	}
out:
	verify_end(&v);
	if (rc != 0 && rc != LG_ECORRUPT && res->bad_seq != 0)
		rc = LG_ECORRUPT;
	return rc;
}

int ledger__verify(ledger_t *lg, uint64_t *bad_seq, struct lg_error *err)
{
	struct ledger_verify_result res;
	int rc = ledger_verify_run(lg, &res, err);

	*bad_seq = res.bad_seq;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Statistics and backup */

static size_t db_pages(MDB_txn *txn, MDB_dbi dbi, uint64_t *entries)
{
	MDB_stat s;

	if (mdb_stat(txn, dbi, &s) != 0)
		return 0;
	*entries = s.ms_entries;
	return (size_t)(s.ms_branch_pages + s.ms_leaf_pages +
			s.ms_overflow_pages) *
	       s.ms_psize;
}

int ledger_stats(ledger_t *lg, struct ledger_stats *s, struct lg_error *err)
{
	MDB_envinfo info;
	MDB_stat es;
	MDB_txn *txn;
	int rc;

	LG_ASSERT(lg != NULL && s != NULL);
	rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);
	memset(s, 0, sizeof(*s));
	if (rc != 0)
		return rc;
	mdb_env_info(lg->env, &info);
	mdb_env_stat(lg->env, &es);
	s->map_size_bytes = info.me_mapsize;
	s->page_size_bytes = es.ms_psize;
	s->used_bytes = (info.me_last_pgno + 1) * (size_t)es.ms_psize;
	s->readers = info.me_numreaders;
	s->event_bytes = db_pages(txn, lg->dbi[LEDGER_DB_EVENTS], &s->events);
	s->checkpoint_bytes =
		db_pages(txn, lg->dbi[LEDGER_DB_CHECKPOINTS], &s->checkpoints);
	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &s->last_seq,
				    err);
	if (rc == 0)
		rc = ledger__store_last_key(lg, txn, LEDGER_DB_CHECKPOINTS,
					    &s->last_checkpoint_seq, err);
	if (rc == 0 && s->last_seq > 0)
		rc = time_at(lg, txn, 1, &s->first_time_ns, err);
	if (rc == 0 && s->last_seq > 0)
		rc = time_at(lg, txn, s->last_seq, &s->last_time_ns, err);
	mdb_txn_abort(txn);
	return rc;
}

int ledger_backup(ledger_t *lg, const char *dir, struct lg_error *err)
{
	struct stat sb;
	int rc;

	LG_ASSERT(lg != NULL && dir != NULL);
	if (stat(dir, &sb) != 0) {
		if (errno != ENOENT || mkdir(dir, 0775) != 0)
			return lg_error_set(err, LG_EIO, "%s: %s", dir,
					    strerror(errno));
	} else if (!S_ISDIR(sb.st_mode)) {
		return lg_error_set(err, LG_EINVAL, "%s: not a directory", dir);
	}
	/* A compacting copy runs in a read transaction: writers go on. */
	rc = mdb_env_copy2(lg->env, dir, MDB_CP_COMPACT);
	return rc ? ledger__store_error(err, rc, dir) : 0;
}

/* ---------------------------------------------------------------------- */
/* Rebuild on two cores */

/*
 * A rebuild is half reading and decoding (cursor, varints, validation of
 * every name) and half applying, and applying must be in order on one
 * thread. So a long range is split: a reader thread walks the cursor and
 * decodes into batches of PIPE_BATCH events, the caller's thread applies
 * them, PIPE_DEPTH batches in flight. The events point into the map, which
 * holds still for the read transaction; the transaction and its cursor are
 * used by the reader alone until it is joined (MDB_NOTLS lets a read
 * transaction move between threads, never be used by two at once). Errors
 * are the sequential loop's, in the same order: the reader stops at its
 * first bad record and marks the batch; the applier stops at the first
 * event that does not apply, or at that mark, and the reader, told to
 * stop, ends after the batch it is on.
 */
#define PIPE_MIN   65536 /* shorter ranges: the plain loop */
#define PIPE_BATCH 1024
#define PIPE_DEPTH 4

struct pipe_batch {
	size_t n;
	int rc; /* the reader's error after the n events (0: none) */
	struct lg_error err;
	struct event ev[PIPE_BATCH];
	const uint8_t *head[PIPE_BATCH];
};

struct pipe {
	ledger_t *lg;
	MDB_txn *txn;
	uint64_t from, to;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pipe_batch *b; /* PIPE_DEPTH of them, a ring */
	uint64_t filled, taken; /* batches produced, consumed */
	uint64_t records;	/* read by the reader, added to lg at join */
	bool stop;
};

/* The reader: one batch at a time into the ring, waiting while it is full. */
static void *pipe_read(void *arg)
{
	struct pipe *p = arg;
	uint64_t k = p->from;
	MDB_val key = ledger__store_key(&k), val;
	MDB_cursor *cur = NULL;
	int rc = mdb_cursor_open(p->txn, p->lg->dbi[LEDGER_DB_EVENTS], &cur),
	    op = MDB_SET_KEY;
	uint64_t reads = 0;
	/* The reader trims: the applier is waiting in this handle's call,
	 * so the map holds still (see ledger__store_map_trim). */
	struct store_reading reading = {.lg = p->lg};
	bool end = false;

	while (!end) {
		struct pipe_batch *b;

		pthread_mutex_lock(&p->mu);
		while (p->filled - p->taken == PIPE_DEPTH && !p->stop)
			pthread_cond_wait(&p->cv, &p->mu);
		end = p->stop;
		pthread_mutex_unlock(&p->mu);
		if (end)
			break;
		b = &p->b[p->filled % PIPE_DEPTH];
		b->n = 0;
		b->rc = 0;
		if (rc != 0) {
			b->rc = ledger__store_error(&b->err, rc, "open cursor");
			end = true;
		}
		for (; !end && b->n < PIPE_BATCH && k <= p->to;
		     k++, op = MDB_NEXT) {
			/* Not ledger__store_cursor_get: forensic opens take
			 * the plain loop, and the reader writes nothing the
			 * applier's cache lines share (lg->head is written
			 * there), so it counts on its own. */
			int r = mdb_cursor_get(cur, &key, &val, op);

			reads++;
			if (r == 0)
				ledger__store_reading_note(&reading, val.mv_size);

			if (r != 0 && r != MDB_NOTFOUND)
				b->rc = ledger__store_read_error(
					p->lg, &b->err, r, k, "read event");
			else if (r != 0 || ledger__store_keyval(&key) != k)
				b->rc = lg_error_set(
					&b->err, LG_ECORRUPT,
					"seq %llu: missing from the log",
					(unsigned long long)k);
			else
				b->rc = ledger__store_record_decode(
					&val, k, &b->ev[b->n], &b->head[b->n],
					&b->err);
			if (b->rc != 0)
				end = true;
			else
				b->n++;
		}
		end = end || k > p->to;
		pthread_mutex_lock(&p->mu);
		p->records = reads;
		p->filled++;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	if (cur != NULL)
		mdb_cursor_close(cur);
	return NULL;
}

/* Applies the batches in order; returns the first error. */
static int pipe_apply(struct pipe *p, state_t *st, uint8_t *head,
		      struct lg_error *err)
{
	uint64_t applied = p->from;
	int rc = 0;

	while (rc == 0 && applied <= p->to) {
		struct pipe_batch *b;

		pthread_mutex_lock(&p->mu);
		while (p->filled == p->taken)
			pthread_cond_wait(&p->cv, &p->mu);
		pthread_mutex_unlock(&p->mu);
		b = &p->b[p->taken % PIPE_DEPTH];
		size_t i = 0;

		while (i < b->n && rc == 0)
			if ((rc = state_apply_validated(st, &b->ev[i], err)) ==
			    0)
				i++;
		/* The head of the last event applied; the batch's pointers
		 * into the map are reused once it is handed back. */
		if (i > 0)
			memcpy(head, b->head[i - 1], LEDGER_HEAD_BYTES);
		applied += b->n;
		if (rc == 0 && b->rc != 0) {
			rc = b->rc;
			if (err != NULL)
				*err = b->err;
		}
		pthread_mutex_lock(&p->mu);
		p->taken++;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return rc;
}

int ledger__store_apply_fast(ledger_t *lg, MDB_txn *txn, state_t *st,
			     uint64_t to, uint8_t *head, struct lg_error *err)
{
	struct pipe p = {.lg = lg, .txn = txn, .from = state_seq(st) + 1,
			 .to = to};
	pthread_t t;
	int rc;

	/* Forensic reads catch faults of the map on their own thread. */
	if (to < p.from || to - p.from < PIPE_MIN || lg->o.forensic)
		return ledger__store_apply_range(lg, txn, st, to, head, err);
	p.b = lg_xmalloc(PIPE_DEPTH * sizeof(*p.b));
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	if (pthread_create(&t, NULL, pipe_read, &p) != 0) {
		rc = ledger__store_apply_range(lg, txn, st, to, head, err);
	} else {
		rc = pipe_apply(&p, st, head, err);
		pthread_mutex_lock(&p.mu);
		p.stop = true;
		pthread_cond_signal(&p.cv);
		pthread_mutex_unlock(&p.mu);
		pthread_join(t, NULL);
		lg->records_read += p.records;
		/* Every range the pipe takes is long (PIPE_MIN): what the
		 * reader read since its last trim, and what the applier
		 * faulted back in behind it, goes back too. */
		ledger__store_map_trim(lg);
	}
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	free(p.b);
	return rc;
}
