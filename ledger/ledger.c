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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

const char *const ledger__store_db_names[LEDGER_DB_MAX] = {
	[LEDGER_DB_EVENTS] = "events",
	[LEDGER_DB_CHECKPOINTS] = "checkpoints",
	[LEDGER_DB_META] = "meta",
	[LEDGER_DB_TREE] = "tree",
	[LEDGER_DB_OBJECTS] = "objects",
};

/* ---------------------------------------------------------------------- */
/* Errors: translate LMDB's once, here. */

int ledger__store_error(struct lg_error *err, int rc, const char *what)
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

/* LMDB's own findings about its pages, and ours (ledger/guard.c). */
static bool damaged_storage(const ledger_t *lg, int rc)
{
	/* A file that is not LMDB at all, or of another format version, is
	 * damage only to a forensic reader, who was told it is a ledger. */
	if (rc == MDB_INVALID || rc == MDB_INCOMPATIBLE ||
	    rc == MDB_VERSION_MISMATCH)
		return lg->o.forensic;
	/* A read transaction LMDB marked failed (a page it found broken
	 * earlier in it, whatever the reader made of that) refuses every
	 * later read: to a forensic reader, more of the same damage. */
	if (rc == MDB_BAD_TXN)
		return lg->o.forensic;
	return rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND ||
	       rc == MDB_BAD_VALSIZE || rc == STORE_EFAULT ||
	       rc == STORE_EBOUNDS;
}

int ledger__store_read_error(const ledger_t *lg, struct lg_error *err, int rc,
			     uint64_t seq, const char *what)
{
	char detail[160], at[32] = "";

	if (!damaged_storage(lg, rc))
		return ledger__store_error(err, rc, what);
	if (rc == MDB_BAD_TXN)
		/* LMDB failed the read transaction itself: the first read of
		 * a database found the page that leads to it broken (the
		 * tree of named databases, which LMDB reads on its own). */
		snprintf(detail, sizeof(detail),
			 "the tree of databases holds a broken page (%s)",
			 mdb_strerror(rc));
	else if (!ledger__store_damage_detail(lg, rc, detail, sizeof(detail)))
		snprintf(detail, sizeof(detail), "%s", mdb_strerror(rc));
	if (seq != 0)
		snprintf(at, sizeof(at), "seq %llu: ", (unsigned long long)seq);
	return lg_error_set(err, LG_ECORRUPT, "%sdamaged storage: %s: %s", at,
			    what, detail);
}

MDB_val ledger__store_key(uint64_t *k)
{
	return (MDB_val){.mv_size = sizeof(*k), .mv_data = k};
}

uint64_t ledger__store_keyval(const MDB_val *v)
{
	uint64_t k;

	memcpy(&k, v->mv_data, sizeof(k));
	return k;
}

/* Begins a transaction, adopting a map another process has grown. */
int ledger__store_txn_begin(ledger_t *lg, unsigned flags, MDB_txn **txn,
			    struct lg_error *err)
{
	int rc = mdb_txn_begin(lg->env, NULL, flags, txn);

	/* Another process grew the map: adopt its size. It may grow it again
	 * meanwhile, so try a bounded number of times. A snapshot may not
	 * remap (its parent's thread does, on its next transaction). */
	for (int i = 0; rc == MDB_MAP_RESIZED && lg->parent == NULL && i < 64;
	     i++) {
		if (lg->remap != NULL)
			pthread_rwlock_wrlock(lg->remap);
		rc = mdb_env_set_mapsize(lg->env, 0);
		if (lg->remap != NULL)
			pthread_rwlock_unlock(lg->remap);
		if (rc == 0)
			rc = mdb_txn_begin(lg->env, NULL, flags, txn);
	}
	if (rc == 0 && (rc = ledger__store_bounds_load(lg)) != 0) {
		mdb_txn_abort(*txn);
		*txn = NULL;
		return ledger__store_read_error(lg, err, rc, 0,
						"begin transaction");
	}
	/* LMDB registers a reader by locking the byte of lock.mdb at the
	 * process's PID. Only a process with the same PID in another PID
	 * namespace can hold it: two containers of one pod that do not share
	 * their process namespace, each running as PID 1. */
	if (rc == EAGAIN || rc == EACCES)
		return lg_error_set(err, LG_EIO,
				    "begin transaction: the ledger's reader "
				    "lock for PID %ld is held by a process "
				    "with the same PID in another PID "
				    "namespace; every process of one ledger "
				    "must share a PID namespace (Kubernetes: "
				    "shareProcessNamespace: true in the pod)",
				    (long)getpid());
	return rc ? ledger__store_read_error(lg, err, rc, 0,
					     "begin transaction")
		  : 0;
}

/* ---------------------------------------------------------------------- */
/* Records */

/* Decodes an event record (bytes + head) at seq. */
int ledger__store_record_decode(const MDB_val *v, uint64_t seq,
				struct event *ev, const uint8_t **head,
				struct lg_error *err)
{
	int rc;

	if (v->mv_size <= LEDGER_HEAD_BYTES)
		return lg_error_set(err, LG_ECORRUPT,
				    "seq %llu: record too short",
				    (unsigned long long)seq);
	rc = ledger__event_decode(ev, v->mv_data,
				  v->mv_size - LEDGER_HEAD_BYTES, err);
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

void ledger__store_le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t ledger__store_le64_get(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* ---------------------------------------------------------------------- */
/* Loading state */

/* Applies events (from, to] read in txn to st; head tracks the stored head
 * of the last one. */
int ledger__store_apply_range(ledger_t *lg, MDB_txn *txn, state_t *st,
			      uint64_t to, uint8_t *head, struct lg_error *err)
{
	uint64_t k = state_seq(st) + 1;
	MDB_val key = ledger__store_key(&k), val;
	MDB_cursor *cur;
	int rc, op = MDB_SET_KEY;

	if (k > to)
		return 0;
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &cur);
	if (rc != 0)
		return ledger__store_error(err, rc, "open cursor");
	for (; k <= to; k++, op = MDB_NEXT) {
		struct event ev;
		const uint8_t *h;

		rc = ledger__store_cursor_get(lg, cur, LEDGER_DB_EVENTS, &key,
					      &val, op);
		if (rc != 0 && rc != MDB_NOTFOUND) {
			rc = ledger__store_read_error(lg, err, rc, k,
						      "read event");
			break;
		}
		if (rc != 0 || ledger__store_keyval(&key) != k) {
			rc = lg_error_set(err, LG_ECORRUPT,
					  "seq %llu: missing from the log",
					  (unsigned long long)k);
			break;
		}
		if ((rc = ledger__store_record_decode(&val, k, &ev, &h, err)) !=
			    0 ||
		    (rc = state_apply_validated(st, &ev, err)) != 0)
			break;
		memcpy(head, h, LEDGER_HEAD_BYTES);
	}
	mdb_cursor_close(cur);
	return rc;
}

int ledger__store_last_key(ledger_t *lg, MDB_txn *txn, enum ledger_db db,
			   uint64_t *out, struct lg_error *err)
{
	MDB_cursor *cur;
	MDB_val key, val;
	int rc = mdb_cursor_open(txn, lg->dbi[db], &cur);

	if (rc != 0)
		return ledger__store_error(err, rc, "open cursor");
	rc = ledger__store_cursor_get(lg, cur, db, &key, &val, MDB_LAST);
	mdb_cursor_close(cur);
	if (rc == MDB_NOTFOUND) {
		*out = 0;
		return 0;
	}
	if (rc != 0)
		return ledger__store_read_error(lg, err, rc, 0, "last key");
	*out = ledger__store_keyval(&key);
	return 0;
}

/* Rebuilds the handle's state at the last seq of the log. */
int ledger__store_reload(ledger_t *lg, struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t last;
	unsigned skipped;
	state_t *st;
	int rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err);

	if (rc != 0)
		return rc;
	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0)
		rc = ledger__store_state_at(lg, txn, last, &st, lg->head,
					    &skipped, err);
	if (rc == 0) {
		uint64_t cp;

		if (ledger__store_last_key(lg, txn, LEDGER_DB_CHECKPOINTS, &cp,
					   NULL) == 0)
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
	int rc = ledger__store_txn_begin(lg, flags, &txn, err);

	int found = 0;

	if (rc != 0)
		return rc;
	for (int i = 0; i < LEDGER_DB_MAX && (rc == 0 || rc == MDB_NOTFOUND);
	     i++) {
		unsigned f = i == LEDGER_DB_META || i == LEDGER_DB_OBJECTS
				     ? 0
				     : MDB_INTEGERKEY;
		int r;

		if (!lg->o.read_only)
			f |= MDB_CREATE;
		r = ledger__store_dbi_open(lg, txn, (enum ledger_db)i, f);
		/* A ledger from before the Merkle tree has no "tree"
		 * database; a reader sees a tree of size 0. */
		if (r == MDB_NOTFOUND && i == LEDGER_DB_TREE) {
			lg->no_tree = true;
			r = 0;
		} else if (r == MDB_NOTFOUND && i == LEDGER_DB_OBJECTS) {
			/* Nor from before the object table: a reader sees
			 * an empty one. */
			lg->no_objects = true;
			r = 0;
		} else if (i != LEDGER_DB_OBJECTS) {
			found += r == 0;
		}
		rc = rc ? rc : r;
	}
	/* Some of the databases but not all: not another program's
	 * environment, but a ledger whose main page lost a name. */
	if (rc == MDB_NOTFOUND && found > 0) {
		mdb_txn_abort(txn);
		return lg_error_set(err, LG_ECORRUPT,
				    "damaged storage: %s: %d of %d databases",
				    lg->dir, found, LEDGER_DB_MAX);
	}
	if (rc == MDB_NOTFOUND) {
		mdb_txn_abort(txn);
		return lg_error_set(err, LG_ENOENT,
				    "%s: not a gpuledger database", lg->dir);
	}
	if (rc == 0)
		rc = ledger__store_get(lg, txn, LEDGER_DB_META, &key, &val);
	if (rc == MDB_NOTFOUND && !lg->o.read_only) {
		val = (MDB_val){.mv_size = sizeof(version),
				.mv_data = &version};
		rc = mdb_put(txn, lg->dbi[LEDGER_DB_META], &key, &val, 0);
		if (rc == 0)
			return (rc = mdb_txn_commit(txn))
				       ? ledger__store_error(err, rc, "create")
				       : 0;
	}
	if (rc == MDB_NOTFOUND && lg->o.forensic) {
		/* Every database is there: a ledger that lost its version. */
		mdb_txn_abort(txn);
		return lg_error_set(err, LG_ECORRUPT,
				    "damaged storage: %s: no schema version",
				    lg->dir);
	}
	if (rc != 0) {
		mdb_txn_abort(txn);
		return rc == MDB_NOTFOUND
			       ? lg_error_set(err, LG_ENOENT,
					      "%s: not a gpuledger database",
					      lg->dir)
			       : ledger__store_read_error(lg, err, rc, 0,
							  "open databases");
	}
	memcpy(&stored, val.mv_data, sizeof(stored));
	/* Committing keeps the database handles opened in this transaction
	 * (an abort would close them). */
	rc = mdb_txn_commit(txn);
	if (rc != 0)
		return ledger__store_error(err, rc, "open databases");
	/* Forensic reads (verify, log, audit) cannot tell a newer
	 * gpuledger's ledger from a flipped bit in the version: either way
	 * nothing here can be vouched for, which is their "no" (exit 1),
	 * named as the damage it may be. */
	if (lg->o.forensic &&
	    (val.mv_size != sizeof(stored) || stored != LEDGER_SCHEMA_VERSION))
		return lg_error_set(
			err, LG_ECORRUPT,
			"damaged storage: %s: schema version %u in the meta "
			"page of the databases, %s; this gpuledger reads "
			"version %u",
			lg->dir, val.mv_size == 4 ? stored : 0,
			val.mv_size == 4 && stored > LEDGER_SCHEMA_VERSION &&
					stored <= LEDGER_SCHEMA_VERSION + 16
				? "a newer gpuledger's ledger or damage"
				: "not one any gpuledger wrote",
			LEDGER_SCHEMA_VERSION);
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
	MDB_envinfo info;
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
		return ledger__store_error(err, rc, "create environment");
	mdb_env_set_maxdbs(lg->env, LEDGER_DB_MAX);
	mdb_env_set_maxreaders(lg->env, 510);
	mdb_env_set_mapsize(lg->env, lg->o.map_size_bytes);
	/* A forensic reader checks the meta pages before LMDB trusts them,
	 * and LMDB's own assertions on a damaged page end its read like a
	 * fault does (ledger/guard.c). */
	if (lg->o.forensic) {
		mdb_env_set_assert(lg->env, ledger__store_on_assert);
		if ((rc = ledger__store_meta_check(lg, err)) != 0)
			return rc;
	}
	rc = mdb_env_open(lg->env, lg->dir, flags, 0664);
	/* A data.mdb with no meta pages yet: its creator was stopped (or is
	 * still) between creating the file and its first write. LMDB takes
	 * such a file for a new environment and, read-only, fails writing
	 * the meta pages through its read-only descriptor (EBADF). Nothing
	 * was ever committed: no ledger, as when there is no data.mdb. */
	if (rc == EBADF && lg->o.read_only)
		return lg_error_set(err, LG_ENOENT,
				    "%s: not a gpuledger database (data.mdb "
				    "has no meta pages yet)",
				    lg->dir);
	if (rc != 0)
		return ledger__store_read_error(lg, err, rc, 0, lg->dir);
	/* A file grown by an earlier run is bigger than our initial size;
	 * adopt it, but never beyond the operator's bound (LMDB keeps at
	 * least the pages in use); asked for the whole bound, take it.
	 * Stale reader slots of dead processes are freed. */
	mdb_env_set_mapsize(lg->env, 0);
	mdb_env_info(lg->env, &info);
	if (info.me_mapsize > lg->o.map_max_bytes ||
	    (lg->o.map_size_bytes == lg->o.map_max_bytes &&
	     info.me_mapsize < lg->o.map_max_bytes))
		mdb_env_set_mapsize(lg->env, lg->o.map_max_bytes);
	mdb_reader_check(lg->env, &dead);
	return 0;
}

int ledger_open(ledger_t **out, const struct ledger_opts *o,
		struct lg_error *err)
{
	ledger_t *lg;
	int rc;

	LG_ASSERT(out != NULL && o != NULL);
	lg = lg_xcalloc(1, sizeof(*lg));
	*out = NULL;
	lg->o = *o;
	if (lg->o.map_size_bytes == 0)
		lg->o.map_size_bytes = DEFAULT_MAP_BYTES;
	if (lg->o.map_max_bytes == 0)
		lg->o.map_max_bytes = DEFAULT_MAP_MAX_BYTES;
	if (lg->o.map_size_bytes > lg->o.map_max_bytes)
		lg->o.map_size_bytes = lg->o.map_max_bytes;
	if (lg->o.map_trim_bytes == 0)
		lg->o.map_trim_bytes = DEFAULT_MAP_TRIM_BYTES;
	if (lg->o.checkpoint_every == 0)
		lg->o.checkpoint_every = DEFAULT_CP_EVERY;
	if (lg->o.checkpoint_secs == 0)
		lg->o.checkpoint_secs = DEFAULT_CP_SECS;
	lg->dir = lg_xstrdup(o->dir ? o->dir : "");
	lg_buf_init(&lg->jbuf, LEDGER_LEAF_TEXT_MAX_BYTES);
	lg->bad_page = (size_t)-1;
	lg->remap = lg_xmalloc(sizeof(*lg->remap));
	pthread_rwlock_init(lg->remap, NULL);
	clock_gettime(CLOCK_MONOTONIC, &lg->cp_time);
	if (o->forensic) {
		lg->o.read_only = true;
		ledger__store_trap_install();
	}
	lg->edge.size = UINT64_MAX;
	if (o->dir == NULL || o->dir[0] == '\0')
		rc = lg_error_set(err, LG_EINVAL, "no ledger directory");
	else if ((rc = env_open(lg, err)) == 0 &&
		 (rc = open_dbs(lg, err)) == 0 && !o->forensic)
		rc = ledger__store_reload(lg, err);
	/* A writer builds what the tree lacks (a ledger from before it). */
	if (rc == 0 && !lg->o.read_only)
		rc = ledger__store_tree_build(lg, err);
	if (rc != 0) {
		ledger_close(lg);
		return rc;
	}
	/* What the rebuild read (the file's size, from genesis). */
	if (!o->forensic)
		ledger__store_map_grown(lg);
	*out = lg;
	return 0;
}

void ledger_close(ledger_t *lg)
{
	if (lg == NULL)
		return;
	if (lg->parent != NULL) {
		ledger__store_snapshot_free(lg);
		return;
	}
	if (lg->env != NULL)
		mdb_env_close(lg->env);
	pthread_rwlock_destroy(lg->remap);
	free(lg->remap);
	if (lg->o.forensic)
		ledger__store_trap_remove();
	state_free(lg->st);
	free(lg->buf);
	free(lg->offs);
	free(lg->leaf);
	lg_buf_release(&lg->jbuf);
	free(lg->dir);
	free(lg);
}

const state_t *ledger_state(const ledger_t *lg)
{
	LG_ASSERT(lg != NULL);
	return lg->st;
}

uint64_t ledger_last_seq(const ledger_t *lg)
{
	LG_ASSERT(lg != NULL);
	return lg->seq;
}

const uint8_t *ledger_head(const ledger_t *lg)
{
	LG_ASSERT(lg != NULL);
	return lg->head;
}

uint64_t ledger_records_read(const ledger_t *lg)
{
	LG_ASSERT(lg != NULL);
	return lg->records_read;
}

/* Catches up with events other processes appended, inside txn. */
int ledger__store_catch_up(ledger_t *lg, MDB_txn *txn, struct lg_error *err)
{
	uint64_t last;
	int rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);

	if (rc != 0 || last == lg->seq)
		return rc;
	if (last < lg->seq)
		return lg_error_set(err, LG_ECORRUPT,
				    "the log shrank from seq %llu to %llu",
				    (unsigned long long)lg->seq,
				    (unsigned long long)last);
	rc = ledger__store_apply_range(lg, txn, lg->st, last, lg->head, err);
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

	LG_ASSERT(lg != NULL);
	if (lg->o.forensic || (lg->parent != NULL && !lg->shared))
		return 0;
	if (lg->dirty)
		return ledger__store_reload(lg, err);
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	rc = ledger__store_catch_up(lg, txn, err);
	mdb_txn_abort(txn);
	if (rc == 0)
		ledger__store_map_grown(lg);
	return rc;
}
