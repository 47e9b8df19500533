/*
 * Reading: past states, time lookups, scans, statistics and backups
 * (verification is ledger/verify.c). Every function runs in one read
 * transaction, so it sees one consistent snapshot while writers go on.
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

/* The head is the record's last LEDGER_HEAD_BYTES: read in place, so that
 * a head costs one lookup and no decoding. */
int ledger__store_head_at(ledger_t *lg, MDB_txn *txn, uint64_t seq,
			  uint8_t *head, struct event *ev, struct lg_error *err)
{
	MDB_val key = ledger__store_key(&seq), val;
	const uint8_t *h;
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
	if (ev != NULL) {
		if ((rc = ledger__store_record_decode(&val, seq, ev, &h, err)))
			return rc;
	} else if (val.mv_size <= LEDGER_HEAD_BYTES) {
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: record too short",
				    (unsigned long long)seq);
	}
	memcpy(head,
	       (const uint8_t *)val.mv_data + val.mv_size - LEDGER_HEAD_BYTES,
	       LEDGER_HEAD_BYTES);
	return 0;
}

int ledger_head_at(ledger_t *lg, uint64_t seq, uint8_t *head_out,
		   struct lg_error *err)
{
	uint64_t last = 0;
	MDB_txn *txn;
	int rc;

	memset(head_out, 0, LEDGER_HEAD_BYTES);
	if (seq == 0)
		return 0;
	/* The handle's own head needs no read (a forensic handle has none:
	 * its last seq is 0). */
	if (seq == lg->seq) {
		memcpy(head_out, lg->head, LEDGER_HEAD_BYTES);
		return 0;
	}
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0 && seq > last)
		rc = lg_error_set(err, LG_ENOENT,
				  "seq %llu is past the log (last %llu)",
				  (unsigned long long)seq,
				  (unsigned long long)last);
	else if (rc == 0)
		rc = ledger__store_head_at(lg, txn, seq, head_out, NULL, err);
	mdb_txn_abort(txn);
	return rc;
}

/* The checks of every reader (store.h), here because scans make them
 * first; verify's storage pass makes them too. */
int ledger__store_record_check(ledger_t *lg, int rc, uint64_t k,
			       const MDB_val *key, const MDB_val *val,
			       struct event *ev, uint8_t *head,
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
	/* A start past the end of the log is the end, not damage: nothing
	 * to scan (`log --from N` beyond the last seq, or --follow waiting
	 * for it). A gap before the last key is still named below. */
	if (rc == 0 && k > 1 && k - 1 > lg->seq) {
		uint64_t last = 0;

		rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last,
					    err);
		if (rc == 0 && last < k - 1) {
			mdb_txn_abort(txn);
			return 0;
		}
	}
	if (rc == 0 && checked)
		rc = ledger__store_head_at(lg, txn, k - 1, head, NULL, err);
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
		if ((rc = ledger__store_record_check(lg, rc, k, &key, &val, &ev,
						     checked ? head : NULL,
						     err)) != 0 ||
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
