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
	int rc = store_txn_begin(lg, MDB_RDONLY, &txn, err);

	*out = NULL;
	if (rc != 0)
		return rc;
	rc = store_state_at(lg, txn, seq, out, head, &sk, err);
	mdb_txn_abort(txn);
	if (skipped != NULL)
		*skipped = sk;
	return rc;
}

/* The time of the event at seq. */
static int time_at(ledger_t *lg, MDB_txn *txn, uint64_t seq, int64_t *t,
		   struct lg_error *err)
{
	MDB_val key = store_key(&seq), val;
	struct event ev;
	const uint8_t *head;
	int rc = mdb_get(txn, lg->dbi[LEDGER_DB_EVENTS], &key, &val);

	if (rc != 0)
		return store_error(err, rc, "read event");
	rc = store_record_decode(&val, seq, &ev, &head, err);
	*t = ev.time_ns;
	return rc;
}

int ledger_seq_at_time(ledger_t *lg, int64_t t_ns, uint64_t *seq,
		       struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t lo = 0, hi; /* invariant: time(lo) <= t (0: none), hi > lo */
	int rc = store_txn_begin(lg, MDB_RDONLY, &txn, err);

	if (rc != 0)
		return rc;
	rc = store_last_key(lg, txn, LEDGER_DB_EVENTS, &hi, err);
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

int ledger_scan(ledger_t *lg, uint64_t from, uint64_t limit,
		ledger_event_fn *fn, void *ctx, struct lg_error *err)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	uint64_t k = from ? from : 1, n = 0;
	MDB_val key = store_key(&k), val;
	int rc = store_txn_begin(lg, MDB_RDONLY, &txn, err), op = MDB_SET_KEY;

	if (rc != 0)
		return rc;
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &cur);
	if (rc != 0) {
		mdb_txn_abort(txn);
		return store_error(err, rc, "open cursor");
	}
	for (; limit == 0 || n < limit; n++, k++, op = MDB_NEXT) {
		struct event ev;
		const uint8_t *head;

		rc = mdb_cursor_get(cur, &key, &val, op);
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
		if (rc != 0) {
			rc = store_error(err, rc, "scan");
			break;
		}
		if (store_keyval(&key) != k) {
			rc = lg_error_set(err, LG_ECORRUPT,
					  "seq %llu: missing from the log",
					  (unsigned long long)k);
			break;
		}
		if ((rc = store_record_decode(&val, k, &ev, &head, err)) != 0 ||
		    (rc = fn(ctx, &ev, head)) != 0)
			break;
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(txn);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Verification */

struct verify {
	ledger_t *lg;
	MDB_txn *txn;
	state_t *st;
	uint8_t head[LEDGER_HEAD_BYTES];
	uint64_t *bad;
	uint64_t n_cp;
};

/* Checks the checkpoint stored at seq (if any) against the replay. */
static int verify_checkpoint(struct verify *v, uint64_t seq,
			     struct lg_error *err)
{
	MDB_val key = store_key(&seq), val;
	const uint8_t *sb, *h;
	uint8_t *mine = NULL;
	size_t sl, ml = 0;
	int rc = mdb_get(v->txn, v->lg->dbi[LEDGER_DB_CHECKPOINTS], &key, &val);

	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc != 0)
		return store_error(err, rc, "read checkpoint");
	v->n_cp++;
	*v->bad = seq;
	if ((rc = store_cp_open(&val, seq, &sb, &sl, &h, err)) != 0)
		return rc;
	if (memcmp(h, v->head, LEDGER_HEAD_BYTES) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: head differs from the "
				    "chain",
				    (unsigned long long)seq);
	if (state_encode(v->st, &mine, &ml) != 0)
		return lg_error_set(err, LG_ENOMEM, "out of memory");
	rc = ml == sl && memcmp(mine, sb, sl) == 0
		     ? 0
		     : lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: state differs from the "
				    "replay",
				    (unsigned long long)seq);
	free(mine);
	if (rc == 0)
		*v->bad = 0;
	return rc;
}

static int verify_event(struct verify *v, uint64_t k, const MDB_val *val,
			struct lg_error *err)
{
	struct event ev;
	const uint8_t *stored;
	int rc;

	*v->bad = k;
	if ((rc = store_record_decode(val, k, &ev, &stored, err)) != 0)
		return rc;
	ledger_chain_step(v->head, val->mv_data,
			  val->mv_size - LEDGER_HEAD_BYTES, v->head);
	if (memcmp(stored, v->head, LEDGER_HEAD_BYTES) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: chain head mismatch",
				    (unsigned long long)k);
	if ((rc = state_apply_validated(v->st, &ev, err)) != 0) {
		char msg[LG_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: does not fit the state: %s",
				    (unsigned long long)k, msg);
	}
	*v->bad = 0;
	return verify_checkpoint(v, k, err);
}

/* Checkpoints must sit on seqs of the log (or at 0). */
static int verify_cp_keys(struct verify *v, uint64_t last, struct lg_error *err)
{
	uint64_t cp;
	int rc = store_last_key(v->lg, v->txn, LEDGER_DB_CHECKPOINTS, &cp, err);

	if (rc == 0 && cp > last) {
		*v->bad = cp;
		rc = lg_error_set(err, LG_ECORRUPT,
				  "checkpoint %llu: past the end of the log",
				  (unsigned long long)cp);
	}
	return rc ? rc : verify_checkpoint(v, 0, err);
}

int ledger_verify(ledger_t *lg, uint64_t *bad_seq, struct lg_error *err)
{
	struct verify v = {.lg = lg, .bad = bad_seq};
	MDB_cursor *cur = NULL;
	uint64_t k = 1, last = 0;
	MDB_val key, val;
	int rc = store_txn_begin(lg, MDB_RDONLY, &v.txn, err), op = MDB_FIRST;

	*bad_seq = 0;
	if (rc != 0)
		return rc;
	v.st = state_new();
	rc = store_last_key(lg, v.txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0)
		rc = verify_cp_keys(&v, last, err);
	if (rc == 0 &&
	    (rc = mdb_cursor_open(v.txn, lg->dbi[LEDGER_DB_EVENTS], &cur)) != 0)
		rc = store_error(err, rc, "open cursor");
	for (; rc == 0; k++, op = MDB_NEXT) {
		rc = mdb_cursor_get(cur, &key, &val, op);
		if (rc == MDB_NOTFOUND) {
			rc = 0;
			break;
		}
		if (rc != 0) {
			*bad_seq = k;
			rc = store_error(err, rc, "read event");
		} else if (store_keyval(&key) != k) {
			*bad_seq = k;
			rc = lg_error_set(err, LG_ECORRUPT,
					  "seq %llu: missing from the log",
					  (unsigned long long)k);
		} else {
			rc = verify_event(&v, k, &val, err);
		}
	}
	mdb_cursor_close(cur);
	mdb_txn_abort(v.txn);
	state_free(v.st);
	if (rc != 0 && rc != LG_ECORRUPT && *bad_seq != 0)
		rc = LG_ECORRUPT;
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
	int rc = store_txn_begin(lg, MDB_RDONLY, &txn, err);

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
	rc = store_last_key(lg, txn, LEDGER_DB_EVENTS, &s->last_seq, err);
	if (rc == 0)
		rc = store_last_key(lg, txn, LEDGER_DB_CHECKPOINTS,
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

	if (stat(dir, &sb) != 0) {
		if (errno != ENOENT || mkdir(dir, 0775) != 0)
			return lg_error_set(err, LG_EIO, "%s: %s", dir,
					    strerror(errno));
	} else if (!S_ISDIR(sb.st_mode)) {
		return lg_error_set(err, LG_EINVAL, "%s: not a directory", dir);
	}
	/* A compacting copy runs in a read transaction: writers go on. */
	rc = mdb_env_copy2(lg->env, dir, MDB_CP_COMPACT);
	return rc ? store_error(err, rc, dir) : 0;
}
