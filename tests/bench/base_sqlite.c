/*
 * The SQLite baseline (libsqlite3, in-process like the ledger).
 *
 * Schema: `events` keyed by seq (INTEGER PRIMARY KEY, so seq is the rowid
 * and appends go to the end of the b-tree), one column per event field;
 * `totals` (ns, cls) -> reserved, allocated, the materialised per-namespace
 * totals, updated from the batch's rows by one INSERT ... SELECT ... ON
 * CONFLICT in the batch's transaction; `tenants` (ns, parent) with an index
 * on parent for the subtree recursion; `budgets` (ns, key) -> value;
 * `classes` (name). The side tables are kept by one prepared statement per
 * TENANT, BUDGET or CLASS event. The queries are base_sql.c's.
 *
 * Tuning, as sqlite.org advises:
 *  - journal_mode=WAL ("WAL is significantly faster in most scenarios");
 *  - synchronous=FULL, not NORMAL: in WAL mode NORMAL "might roll back"
 *    the last transactions after a power loss, while the ledger fsyncs
 *    every commit, so FULL (the WAL is synced at every commit) is the fair
 *    match in durability;
 *  - one transaction per batch (BEGIN IMMEDIATE ... COMMIT) and statements
 *    prepared once and reset, the FAQ's advice for fast inserts;
 *  - a 256 MiB page cache (cache_size) and temp_store=MEMORY so that the
 *    GROUP BY of the totals never spills to a temporary file;
 *  - WITHOUT ROWID for the small tables keyed by text;
 *  - ANALYZE after a bulk load ("PRAGMA optimize" documentation).
 * Like PostgreSQL, it checks nothing an event says (no before/after check,
 * no hash chain): the ledger does more work per event than either.
 */
#include "tests/bench/bench.h"

#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const sq_schema[] = {
	"PRAGMA journal_mode = WAL",
	"PRAGMA synchronous = FULL",
	"PRAGMA cache_size = -262144",
	"PRAGMA temp_store = MEMORY",
	"CREATE TABLE events (seq INTEGER PRIMARY KEY,"
	" time_ns INTEGER NOT NULL, etype INTEGER NOT NULL, ns TEXT,"
	" parent TEXT, key TEXT, present INTEGER NOT NULL,"
	" value INTEGER NOT NULL, cls TEXT, body TEXT,"
	" node TEXT, kind INTEGER NOT NULL, name TEXT, uid TEXT,"
	" u_before INTEGER NOT NULL, u_after INTEGER NOT NULL)",
	"CREATE TABLE totals (ns TEXT NOT NULL, cls TEXT NOT NULL,"
	" reserved INTEGER NOT NULL, allocated INTEGER NOT NULL,"
	" PRIMARY KEY (ns, cls)) WITHOUT ROWID",
	"CREATE TABLE tenants (ns TEXT PRIMARY KEY, parent TEXT) WITHOUT ROWID",
	"CREATE INDEX tenants_parent ON tenants (parent)",
	"CREATE TABLE budgets (ns TEXT NOT NULL, key TEXT NOT NULL,"
	" value INTEGER NOT NULL, PRIMARY KEY (ns, key)) WITHOUT ROWID",
	"CREATE TABLE classes (name TEXT PRIMARY KEY) WITHOUT ROWID",
};

enum sq_stmt {
	SQ_BEGIN,
	SQ_COMMIT,
	SQ_EVENT,
	SQ_TENANT,
	SQ_TENANT_GONE,
	SQ_BUDGET_SET,
	SQ_BUDGET_DEL,
	SQ_CLASS_SET,
	SQ_CLASS_DEL,
	SQ_TOTALS,
	SQ_REMAINING,
	SQ_MAX
};

static const char *const sq_sql[SQ_MAX] = {
	[SQ_BEGIN] = "BEGIN IMMEDIATE",
	[SQ_COMMIT] = "COMMIT",
	[SQ_EVENT] = "INSERT INTO events VALUES"
		     " (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
		     " ?14, ?15, ?16)",
	[SQ_TENANT] =
		"INSERT INTO tenants (ns, parent) VALUES (?1, ?2)"
		" ON CONFLICT (ns) DO UPDATE SET parent = excluded.parent",
	[SQ_TENANT_GONE] = "DELETE FROM tenants WHERE ns = ?1",
	[SQ_BUDGET_SET] =
		"INSERT INTO budgets (ns, key, value) VALUES (?1, ?2, ?3)"
		" ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value",
	[SQ_BUDGET_DEL] = "DELETE FROM budgets WHERE ns = ?1 AND key = ?2",
	[SQ_CLASS_SET] = "INSERT OR IGNORE INTO classes (name) VALUES (?1)",
	[SQ_CLASS_DEL] = "DELETE FROM classes WHERE name = ?1",
	[SQ_TOTALS] = bench_sql_totals_batch,
	[SQ_REMAINING] = bench_sql_remaining,
};

struct sq {
	sqlite3 *db;
	sqlite3_stmt *st[SQ_MAX];
	uint64_t events; /* rows in events; the next seq is events + 1 */
	char path[PATH_MAX];
};

static int sq_fail(struct sq *s, const char *what)
{
	fprintf(stderr, "sqlite: %s: %s\n", what, sqlite3_errmsg(s->db));
	return -1;
}

/* Steps a prepared statement to its end and resets it. */
static int sq_run(struct sq *s, enum sq_stmt k)
{
	int rc = sqlite3_step(s->st[k]);

	sqlite3_reset(s->st[k]);
	sqlite3_clear_bindings(s->st[k]);
	return rc == SQLITE_DONE ? 0 : sq_fail(s, sq_sql[k]);
}

static int sq_exec(struct sq *s, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return 0;
	fprintf(stderr, "sqlite: %s: %s\n", sql, msg ? msg : "?");
	sqlite3_free(msg);
	return -1;
}

static void sq_close(void *h)
{
	struct sq *s = h;
	char p[PATH_MAX + 8];

	if (s == NULL)
		return;
	for (int k = 0; k < SQ_MAX; k++)
		sqlite3_finalize(s->st[k]);
	sqlite3_close(s->db);
	unlink(s->path);
	snprintf(p, sizeof(p), "%s-wal", s->path);
	unlink(p);
	snprintf(p, sizeof(p), "%s-shm", s->path);
	unlink(p);
	free(s);
}

static void *sq_open(const char *where)
{
	struct sq *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	snprintf(s->path, sizeof(s->path), "%s/baseline.sqlite", where);
	unlink(s->path);
	if (sqlite3_open(s->path, &s->db) != SQLITE_OK) {
		sq_fail(s, s->path);
		goto fail;
	}
	for (size_t i = 0; i < sizeof(sq_schema) / sizeof(sq_schema[0]); i++)
		if (sq_exec(s, sq_schema[i]) != 0)
			goto fail;
	for (int k = 0; k < SQ_MAX; k++)
		if (sqlite3_prepare_v3(s->db, sq_sql[k], -1,
				       SQLITE_PREPARE_PERSISTENT, &s->st[k],
				       NULL) != SQLITE_OK) {
			sq_fail(s, sq_sql[k]);
			goto fail;
		}
	return s;
fail:
	sq_close(s);
	return NULL;
}

static void bind_text(sqlite3_stmt *st, int i, const char *v)
{
	if (v == NULL)
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC);
}

static int sq_insert_event(struct sq *s, const struct event *ev, uint64_t seq)
{
	sqlite3_stmt *st = s->st[SQ_EVENT];

	sqlite3_bind_int64(st, 1, (sqlite3_int64)seq);
	sqlite3_bind_int64(st, 2, ev->time_ns);
	sqlite3_bind_int(st, 3, (int)ev->type);
	bind_text(st, 4, ev->ns);
	bind_text(st, 5, ev->parent);
	bind_text(st, 6, ev->key);
	sqlite3_bind_int(st, 7, ev->present);
	sqlite3_bind_int64(st, 8, ev->value);
	bind_text(st, 9, ev->cls);
	bind_text(st, 10, ev->text);
	bind_text(st, 11, ev->node);
	sqlite3_bind_int(st, 12, (int)ev->kind);
	bind_text(st, 13, ev->name);
	bind_text(st, 14, ev->uid);
	sqlite3_bind_int64(st, 15, ev->before);
	sqlite3_bind_int64(st, 16, ev->after);
	return sq_run(s, SQ_EVENT);
}

/* Keeps tenants, budgets and classes current for one event. */
static int sq_side(struct sq *s, const struct event *ev)
{
	sqlite3_stmt *st;
	enum sq_stmt k;

	switch (ev->type) {
	case EV_TENANT:
		k = SQ_TENANT;
		break;
	case EV_TENANT_GONE:
		k = SQ_TENANT_GONE;
		break;
	case EV_BUDGET:
		k = ev->present ? SQ_BUDGET_SET : SQ_BUDGET_DEL;
		break;
	case EV_CLASS:
		k = ev->text != NULL ? SQ_CLASS_SET : SQ_CLASS_DEL;
		st = s->st[k];
		bind_text(st, 1, ev->cls);
		return sq_run(s, k);
	default:
		return 0;
	}
	st = s->st[k];
	bind_text(st, 1, ev->ns);
	if (k == SQ_TENANT)
		bind_text(st, 2, ev->parent);
	else if (k != SQ_TENANT_GONE)
		bind_text(st, 2, ev->key);
	if (k == SQ_BUDGET_SET)
		sqlite3_bind_int64(st, 3, ev->value);
	return sq_run(s, k);
}

static int sq_append(void *h, struct event *evs, size_t n)
{
	struct sq *s = h;
	uint64_t first = s->events + 1;

	if (sq_run(s, SQ_BEGIN) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (sq_insert_event(s, &evs[i], first + i) != 0 ||
		    sq_side(s, &evs[i]) != 0)
			goto fail;
	sqlite3_bind_int64(s->st[SQ_TOTALS], 1, (sqlite3_int64)first);
	sqlite3_bind_int64(s->st[SQ_TOTALS], 2, (sqlite3_int64)(first + n - 1));
	if (sq_run(s, SQ_TOTALS) != 0 || sq_run(s, SQ_COMMIT) != 0)
		goto fail;
	s->events += n;
	return 0;
fail:
	sq_exec(s, "ROLLBACK");
	return -1;
}

static int sq_rebuild(void *h, uint64_t *events)
{
	struct sq *s = h;

	if (sq_exec(s, "BEGIN IMMEDIATE") != 0)
		return -1;
	if (sq_exec(s, bench_sql_rebuild_delete) != 0 ||
	    sq_exec(s, bench_sql_rebuild_insert) != 0 ||
	    sq_exec(s, "COMMIT") != 0) {
		sq_exec(s, "ROLLBACK");
		return -1;
	}
	*events = s->events;
	return 0;
}

static int sq_remaining(void *h, const char *ns, int64_t *sum)
{
	struct sq *s = h;
	sqlite3_stmt *st = s->st[SQ_REMAINING];
	int rc;

	*sum = 0;
	bind_text(st, 1, ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			*sum += sqlite3_column_int64(st, 1) *
				bench_weight((const char *)sqlite3_column_text(
					st, 0));
	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : sq_fail(s, "remaining");
}

static int sq_analyze(void *h)
{
	return sq_exec(h, "ANALYZE");
}

const struct backend_ops backend_sqlite = {
	.name = "sqlite",
	.detail = "WAL, synchronous=FULL",
	.open = sq_open,
	.close = sq_close,
	.append = sq_append,
	.rebuild = sq_rebuild,
	.remaining = sq_remaining,
	.analyze = sq_analyze,
};
