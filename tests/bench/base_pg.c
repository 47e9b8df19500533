/*
 * The PostgreSQL baseline (libpq over the server's unix socket; the server
 * is Debian's, started by tests/bench/run.sh in a temporary directory).
 *
 * Schema: the same tables as the SQLite baseline (base_sqlite.c): `events`
 * keyed by seq (BIGINT PRIMARY KEY), `totals` (ns, cls) materialised
 * per-namespace totals, `tenants` (ns, parent) with an index on parent,
 * `budgets` (ns, key) and `classes` (name). A batch is one transaction:
 * COPY of its rows into events, then set-based statements over the batch's
 * rows (seq BETWEEN $1 AND $2): the totals upsert of base_sql.c, and, only
 * when the batch has such events, the newest TENANT/BUDGET/CLASS per key
 * applied to the side tables (DISTINCT ON ... ORDER BY seq DESC). Queries are
 * base_sql.c's, as prepared statements.
 *
 * Tuning, as the PostgreSQL manual advises ("Populating a Database",
 * "WAL Configuration", "Resource Consumption"); run.sh sets the server's:
 *  - COPY rather than INSERTs for loading many rows, one transaction per
 *    batch, prepared statements for the rest;
 *  - wal_level=minimal and max_wal_senders=0 (no archiving or replication
 *    to feed), max_wal_size=4GB and checkpoint_timeout=30min so that
 *    checkpoints do not interrupt the load, maintenance_work_mem=256MB;
 *  - shared_buffers=1GB (the manual's "25% of memory" would be 6 GB here;
 *    1 GB already holds the whole data set), work_mem=64MB so that the
 *    GROUP BY of a rebuild is a hash aggregate in memory;
 *  - ANALYZE after a bulk load;
 *  - durability left as the manual's defaults: fsync=on,
 *    synchronous_commit=on, full_page_writes=on (none of its "Non-Durable
 *    Settings"), so every COMMIT waits for its WAL flush like the ledger's
 *    fsync.
 * Like SQLite, it checks nothing an event says (no before/after check, no
 * hash chain): the ledger does more work per event than either.
 */
#include "tests/bench/bench.h"

#include <libpq-fe.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_COPY_CHUNK (256u << 10) /* bytes handed to libpq at once */
#define PG_LINE_MAX   (64u << 10)  /* one escaped event row, at most */

static const char *const pg_schema[] = {
	"SET synchronous_commit = on",
	"SET client_min_messages = warning",
	"DROP TABLE IF EXISTS events, totals, tenants, budgets, classes",
	"CREATE TABLE events (seq BIGINT PRIMARY KEY, time_ns BIGINT NOT NULL,"
	" etype SMALLINT NOT NULL, ns TEXT, parent TEXT, key TEXT,"
	" present SMALLINT NOT NULL, value BIGINT NOT NULL, cls TEXT,"
	" body TEXT,"
	" node TEXT, kind SMALLINT NOT NULL, name TEXT, uid TEXT,"
	" u_before BIGINT NOT NULL, u_after BIGINT NOT NULL)",
	"CREATE TABLE totals (ns TEXT NOT NULL, cls TEXT NOT NULL,"
	" reserved BIGINT NOT NULL, allocated BIGINT NOT NULL,"
	" PRIMARY KEY (ns, cls))",
	"CREATE TABLE tenants (ns TEXT PRIMARY KEY, parent TEXT)",
	"CREATE INDEX tenants_parent ON tenants (parent)",
	"CREATE TABLE budgets (ns TEXT NOT NULL, key TEXT NOT NULL,"
	" value BIGINT NOT NULL, PRIMARY KEY (ns, key))",
	"CREATE TABLE classes (name TEXT PRIMARY KEY)",
};

enum pg_stmt {
	PG_TOTALS,
	PG_TENANTS,
	PG_BUDGETS,
	PG_CLASSES,
	PG_REMAINING,
	PG_MAX
};

static const char *const pg_name[PG_MAX] = {
	[PG_TOTALS] = "totals",	      [PG_TENANTS] = "tenants",
	[PG_BUDGETS] = "budgets",     [PG_CLASSES] = "classes",
	[PG_REMAINING] = "remaining",
};

static const char *const pg_sql[PG_MAX] = {
	[PG_TOTALS] = bench_sql_totals_batch,
	[PG_TENANTS] =
		"WITH last AS (SELECT DISTINCT ON (ns) ns, parent, etype"
		" FROM events WHERE seq BETWEEN $1 AND $2 AND etype IN (1, 2)"
		" ORDER BY ns, seq DESC),"
		" gone AS (DELETE FROM tenants t USING last l"
		" WHERE l.etype = 2 AND t.ns = l.ns)"
		" INSERT INTO tenants (ns, parent)"
		" SELECT ns, parent FROM last WHERE etype = 1"
		" ON CONFLICT (ns) DO UPDATE SET parent = excluded.parent",
	[PG_BUDGETS] =
		"WITH last AS (SELECT DISTINCT ON (ns, key) ns, key, present,"
		" value FROM events WHERE seq BETWEEN $1 AND $2 AND etype = 3"
		" ORDER BY ns, key, seq DESC),"
		" gone AS (DELETE FROM budgets b USING last l"
		" WHERE l.present = 0 AND b.ns = l.ns AND b.key = l.key)"
		" INSERT INTO budgets (ns, key, value)"
		" SELECT ns, key, value FROM last WHERE present = 1"
		" ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value",
	[PG_CLASSES] = "WITH last AS (SELECT DISTINCT ON (cls) cls, body"
		       " FROM events WHERE seq BETWEEN $1 AND $2 AND etype = 5"
		       " ORDER BY cls, seq DESC),"
		       " gone AS (DELETE FROM classes c USING last l"
		       " WHERE l.body IS NULL AND c.name = l.cls)"
		       " INSERT INTO classes (name)"
		       " SELECT cls FROM last WHERE body IS NOT NULL"
		       " ON CONFLICT (name) DO NOTHING",
	[PG_REMAINING] = bench_sql_remaining,
};

struct pg {
	PGconn *c;
	uint64_t events; /* rows in events; the next seq is events + 1 */
	char *buf;	 /* COPY data, PG_COPY_CHUNK + PG_LINE_MAX bytes */
	size_t len;
};

/* Checks a result, reports a failure and frees it. */
static int pg_ok(struct pg *p, PGresult *r, const char *what)
{
	ExecStatusType st = PQresultStatus(r);
	int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;

	if (rc != 0)
		fprintf(stderr, "pg: %s: %s", what, PQerrorMessage(p->c));
	PQclear(r);
	return rc;
}

static int pg_exec(struct pg *p, const char *sql)
{
	return pg_ok(p, PQexec(p->c, sql), sql);
}

/* Runs a batch statement over the rows with seq in [first, last]. */
static int pg_run(struct pg *p, enum pg_stmt k, uint64_t first, uint64_t last)
{
	char a[2][24];
	const char *params[2] = {a[0], a[1]};

	snprintf(a[0], sizeof(a[0]), "%llu", (unsigned long long)first);
	snprintf(a[1], sizeof(a[1]), "%llu", (unsigned long long)last);
	return pg_ok(p,
		     PQexecPrepared(p->c, pg_name[k], 2, params, NULL, NULL, 0),
		     pg_name[k]);
}

static void pg_close(void *h)
{
	struct pg *p = h;

	if (p == NULL)
		return;
	if (p->c != NULL && PQstatus(p->c) == CONNECTION_OK)
		pg_exec(p, "DROP TABLE IF EXISTS events, totals, tenants,"
			   " budgets, classes");
	PQfinish(p->c);
	free(p->buf);
	free(p);
}

static void *pg_open(const char *conninfo)
{
	struct pg *p = calloc(1, sizeof(*p));

	if (p == NULL || (p->buf = malloc(PG_COPY_CHUNK + PG_LINE_MAX)) == NULL)
		goto fail;
	p->c = PQconnectdb(conninfo);
	if (PQstatus(p->c) != CONNECTION_OK) {
		fprintf(stderr, "pg: connect: %s", PQerrorMessage(p->c));
		goto fail;
	}
	for (size_t i = 0; i < sizeof(pg_schema) / sizeof(pg_schema[0]); i++)
		if (pg_exec(p, pg_schema[i]) != 0)
			goto fail;
	for (int k = 0; k < PG_MAX; k++)
		if (pg_ok(p, PQprepare(p->c, pg_name[k], pg_sql[k], 0, NULL),
			  pg_name[k]) != 0)
			goto fail;
	return p;
fail:
	pg_close(p);
	return NULL;
}

/* The characters COPY's text format reserves, and their escapes. */
static const char copy_special[] = "\\\t\n\r", copy_escape[] = "\\tnr";

/* Appends s as one COPY text field: \N for NULL, backslash escapes for the
 * characters COPY's text format reserves. */
static char *copy_str(char *o, const char *s, const char *end)
{
	if (s == NULL) {
		memcpy(o, "\\N", 2);
		return o + 2;
	}
	for (; *s != '\0' && o + 2 < end; s++) {
		const char *e = strchr(copy_special, *s);

		if (e != NULL) {
			*o++ = '\\';
			*o++ = copy_escape[e - copy_special];
		} else {
			*o++ = *s;
		}
	}
	return o;
}

/* One event as a COPY line at the end of p->buf. */
static int copy_line(struct pg *p, const struct event *ev, uint64_t seq)
{
	char *o = p->buf + p->len, *end = o + PG_LINE_MAX - 256;
	const char *strs[] = {ev->ns, ev->parent, ev->key};
	const char *strs2[] = {ev->cls, ev->text, ev->node};

	o += sprintf(o, "%llu\t%lld\t%d\t", (unsigned long long)seq,
		     (long long)ev->time_ns, (int)ev->type);
	for (int i = 0; i < 3; i++) {
		o = copy_str(o, strs[i], end);
		*o++ = '\t';
	}
	o += sprintf(o, "%d\t%lld\t", ev->present, (long long)ev->value);
	for (int i = 0; i < 3; i++) {
		o = copy_str(o, strs2[i], end);
		*o++ = '\t';
	}
	o += sprintf(o, "%d\t", (int)ev->kind);
	o = copy_str(o, ev->name, end);
	*o++ = '\t';
	o = copy_str(o, ev->uid, end);
	if (o + 2 >= end) { /* copy_str stopped short */
		fprintf(stderr, "pg: event %llu too long for a COPY line\n",
			(unsigned long long)seq);
		return -1;
	}
	o += sprintf(o, "\t%lld\t%lld\n", (long long)ev->before,
		     (long long)ev->after);
	p->len = (size_t)(o - p->buf);
	return 0;
}

static int copy_flush(struct pg *p)
{
	int rc = p->len ? PQputCopyData(p->c, p->buf, (int)p->len) : 1;

	p->len = 0;
	if (rc != 1) {
		fprintf(stderr, "pg: COPY: %s", PQerrorMessage(p->c));
		return -1;
	}
	return 0;
}

/* COPYs evs into events; *types gets a bit per event type seen. */
static int pg_copy(struct pg *p, const struct event *evs, size_t n,
		   uint64_t first, unsigned *types)
{
	int rc = 0;
	PGresult *r = PQexec(p->c, "COPY events (seq, time_ns, etype, ns,"
				   " parent, key, present, value, cls, body,"
				   " node, kind, name, uid, u_before, u_after)"
				   " FROM STDIN");

	if (PQresultStatus(r) != PGRES_COPY_IN) {
		fprintf(stderr, "pg: COPY: %s", PQerrorMessage(p->c));
		PQclear(r);
		return -1;
	}
	PQclear(r);
	for (size_t i = 0; i < n && rc == 0; i++) {
		*types |= 1u << evs[i].type;
		rc = copy_line(p, &evs[i], first + i);
		if (rc == 0 && p->len >= PG_COPY_CHUNK)
			rc = copy_flush(p);
	}
	if (rc == 0)
		rc = copy_flush(p);
	if (PQputCopyEnd(p->c, rc == 0 ? NULL : "bench failed") != 1)
		rc = -1;
	if (pg_ok(p, PQgetResult(p->c), "COPY end") != 0)
		rc = -1;
	while (PQgetResult(p->c) != NULL)
		;
	return rc;
}

static int pg_append(void *h, struct event *evs, size_t n)
{
	struct pg *p = h;
	uint64_t first = p->events + 1, last = p->events + n;
	unsigned types = 0;

	if (pg_exec(p, "BEGIN") != 0)
		return -1;
	if (pg_copy(p, evs, n, first, &types) != 0 ||
	    pg_run(p, PG_TOTALS, first, last) != 0)
		goto fail;
	if ((types & (1u << EV_TENANT | 1u << EV_TENANT_GONE)) &&
	    pg_run(p, PG_TENANTS, first, last) != 0)
		goto fail;
	if ((types & 1u << EV_BUDGET) &&
	    pg_run(p, PG_BUDGETS, first, last) != 0)
		goto fail;
	if ((types & 1u << EV_CLASS) && pg_run(p, PG_CLASSES, first, last) != 0)
		goto fail;
	if (pg_exec(p, "COMMIT") != 0)
		goto fail;
	p->events += n;
	return 0;
fail:
	pg_exec(p, "ROLLBACK");
	return -1;
}

static int pg_rebuild(void *h, uint64_t *events)
{
	struct pg *p = h;

	if (pg_exec(p, "BEGIN") != 0)
		return -1;
	if (pg_exec(p, bench_sql_rebuild_delete) != 0 ||
	    pg_exec(p, bench_sql_rebuild_insert) != 0 ||
	    pg_exec(p, "COMMIT") != 0) {
		pg_exec(p, "ROLLBACK");
		return -1;
	}
	*events = p->events;
	return 0;
}

static int pg_remaining(void *h, const char *ns, int64_t *sum)
{
	struct pg *p = h;
	const char *params[1] = {ns};
	PGresult *r = PQexecPrepared(p->c, pg_name[PG_REMAINING], 1, params,
				     NULL, NULL, 0);

	*sum = 0;
	if (PQresultStatus(r) == PGRES_TUPLES_OK)
		for (int i = 0; i < PQntuples(r); i++)
			if (!PQgetisnull(r, i, 1))
				*sum += strtoll(PQgetvalue(r, i, 1), NULL, 10) *
					bench_weight(
						PQgetisnull(r, i, 0)
							? NULL
							: PQgetvalue(r, i, 0));
	return pg_ok(p, r, "remaining");
}

static int pg_analyze(void *h)
{
	return pg_exec(h, "ANALYZE");
}

const struct backend_ops backend_pg = {
	.name = "postgresql",
	.detail = "COPY, synchronous_commit=on",
	.open = pg_open,
	.close = pg_close,
	.append = pg_append,
	.rebuild = pg_rebuild,
	.remaining = pg_remaining,
	.analyze = pg_analyze,
};
