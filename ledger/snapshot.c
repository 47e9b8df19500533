/*
 * Snapshots for readers on other threads.
 *
 * LMDB read transactions of an environment opened MDB_NOTLS may live on
 * any thread, but a ledger handle may not be shared. A snapshot is a
 * second, read-only handle on the same environment, fixed at the seq its
 * parent had seen: its state is loaded on the thread that uses it. The one
 * thing that breaks a read transaction of another thread is a remap of the
 * environment (mdb_env_set_mapsize munmaps the old map), so the parent
 * takes a write lock around every remap, and a snapshot holds the read
 * lock from its load to its close: a map growth waits for the readers in
 * flight (it doubles the map, so it is rare).
 */
#include "ledger/store.h"

#include <stdlib.h>
#include <string.h>

int ledger_snapshot_new(ledger_t *lg, ledger_t **out, struct lg_error *err)
{
	ledger_t *s;

	LG_ASSERT(lg != NULL && out != NULL);
	*out = NULL;
	if (lg->o.forensic || lg->dirty)
		return lg_error_set(err, LG_EINVAL,
				    "no snapshot of this handle");
	s = lg_xcalloc(1, sizeof(*s));
	s->env = lg->env;
	memcpy(s->dbi, lg->dbi, sizeof(s->dbi));
	s->o = lg->o;
	s->o.read_only = true;
	s->parent = lg;
	s->remap = lg->remap;
	s->seq = lg->seq;
	memcpy(s->head, lg->head, LEDGER_HEAD_BYTES);
	s->cp_seq = lg->cp_seq;
	s->bad_page = (size_t)-1;
	s->dir = lg_xstrdup(lg->dir);
	*out = s;
	return 0;
}

int ledger_snapshot_enter(ledger_t *s, bool load_state, struct lg_error *err)
{
	MDB_txn *txn;
	uint8_t head[LEDGER_HEAD_BYTES];
	unsigned skipped;
	int rc;

	LG_ASSERT(s != NULL);
	if (s->parent == NULL || s->locked)
		return lg_error_set(err, LG_EINVAL, "not a fresh snapshot");
	pthread_rwlock_rdlock(s->remap);
	s->locked = true;
	if (!load_state)
		return 0;
	if ((rc = ledger__store_txn_begin(s, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = ledger__store_state_at(s, txn, s->seq, &s->st, head, &skipped,
				    err);
	mdb_txn_abort(txn);
	return rc;
}

/* A shared handle is a snapshot that follows the log: the same fields,
 * with parent set so that it never remaps (its read transactions run on
 * another thread than lg's), and its own state, rebuilt here and advanced
 * by ledger_refresh. It takes no remap lock: lg's map never grows (the
 * caller maps the whole bound at open). */
int ledger_share(ledger_t *lg, ledger_t **out, struct lg_error *err)
{
	ledger_t *s;
	int rc = ledger_snapshot_new(lg, &s, err);

	if (rc != 0)
		return rc;
	s->shared = true;
	s->edge.size = UINT64_MAX;
	lg_buf_init(&s->jbuf, LEDGER_LEAF_TEXT_MAX_BYTES);
	if ((rc = ledger__store_reload(s, err)) != 0) {
		ledger_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void ledger__store_snapshot_free(ledger_t *s)
{
	if (s->locked)
		pthread_rwlock_unlock(s->remap);
	state_free(s->st);
	free(s->buf);
	free(s->offs);
	free(s->leaf);
	lg_buf_release(&s->jbuf);
	free(s->dir);
	free(s);
}
