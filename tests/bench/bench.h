/*
 * The stores that bench_compare drives with the same work (DESIGN 10): the
 * ledger itself and the SQLite and PostgreSQL baselines a team would
 * otherwise pick. Each is one const table of operations, so the driver
 * measures them with one loop and the language overhead is equal (all are
 * called in-process from C).
 *
 * Ownership: events and their strings are borrowed for the call. A handle
 * from open is the backend's; close frees it and removes the store.
 */
#ifndef GPULEDGER_BENCH_H
#define GPULEDGER_BENCH_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

/* The keys a remaining-budget query compares against (DESIGN 2.2). */
#define BENCH_TOTAL_KEY	   GPU_TOTAL_KEY
#define BENCH_CLASS_SUFFIX GPU_CLASS_KEY_SUFFIX

struct backend_ops {
	const char *name;
	const char *detail; /* how it is set up, for the table */
	/* A fresh, empty store under where (a directory, or for PostgreSQL a
	 * conninfo string). NULL on failure, with the reason on stderr. */
	void *(*open)(const char *where);
	void (*close)(void *h);
	/* evs[0..n) in one durable transaction, with the per-namespace
	 * totals brought up to date in the same transaction. 0 or -1. */
	int (*append)(void *h, struct event *evs, size_t n);
	/* Recomputes every per-namespace total from all stored events;
	 * *events is how many events that read. 0 or -1. */
	int (*rebuild)(void *h, uint64_t *events);
	/* The remaining budget of namespace ns (DESIGN 3.3) for every class
	 * and the total. *sum is the sum over the bounded remainders of
	 * remainder * bench_weight(class or NULL for the total), so that the
	 * driver can check that every store gives the same answer. */
	int (*remaining)(void *h, const char *ns, int64_t *sum);
	/* After a bulk load, before queries: what the store's documentation
	 * advises (ANALYZE). May be NULL. */
	int (*analyze)(void *h);
};

extern const struct backend_ops backend_gpuledger;
extern const struct backend_ops backend_sqlite;
extern const struct backend_ops backend_pg;

/* Shared by the SQL baselines (base_sql.c): the queries, written once so
 * that both run the same SQL (SQLite reads $1 as its first parameter). */
/* A weight per class name (NULL: the total) for the answers' checksum. */
int64_t bench_weight(const char *cls);

extern const char bench_sql_totals_batch[];
extern const char bench_sql_rebuild_delete[];
extern const char bench_sql_rebuild_insert[];
extern const char bench_sql_remaining[];

#endif
