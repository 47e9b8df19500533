/*
 * Verification (DESIGN 4.3): storage, then meaning, in one read
 * transaction (ledger.h says what each pass checks). The storage pass reads
 * records as stored, with the checks every reader makes
 * (ledger__store_record_check); the meaning pass replays them from genesis.
 */
#include "ledger/store.h"

#include <stdlib.h>
#include <string.h>

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
		rc = ledger__store_record_check(v->lg, rc, k, &key, &val, &ev,
						v->head, err);
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
			rc = ledger__store_record_check(v->lg, rc, k, &key,
							&val, &ev, NULL, err);
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
