/*
 * sim — a synthetic Cozystack cluster history as a recorded stream (DESIGN
 * 6): NDJSON watch events {"type", "object", "time"} of the watched
 * resources of DESIGN 2, one line at a time. `gpuledger simulate` writes it
 * out; benchmarks and tests read it in-process.
 *
 * Invariants:
 *  - Deterministic: the same struct sim_opts give the same lines, byte for
 *    byte (one seeded PRNG; no clock, addresses or hash-table order).
 *  - Exactly opts.events lines, each one complete JSON object ending in
 *    "\n", with times that never decrease and lie in [start_ns, end_ns].
 *  - Bounded: a line is at most SIM_LINE_MAX bytes; the simulator keeps only
 *    the live objects, in pools sized from the tenant count and fixed caps.
 *  - Depends on model/ only (names, time text); no I/O.
 *  - Errors are LG_* codes with detail in a struct lg_error (model/model.h).
 */
#ifndef GPULEDGER_SIM_H
#define GPULEDGER_SIM_H

#include "model/model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds of the options, checked by sim_new. */
#define SIM_TENANTS_MAX 20000u
#define SIM_DEPTH_MAX	6u
#define SIM_EVENTS_MAX	1000000000ull
#define SIM_DAYS_MAX	36500ull
/* Times are int64 nanoseconds, which end in 2262: 2200-01-01T00:00:00Z is
 * late enough for anyone's simulation. */
#define SIM_TIME_MAX_NS (7258118400ll * 1000000000ll)
/* The longest line sim_next yields, newline included. */
#define SIM_LINE_MAX (64u << 10)

struct sim_opts {
	uint64_t seed;
	uint64_t events;  /* lines to yield, 0..SIM_EVENTS_MAX */
	uint32_t tenants; /* including tenant-root, 1..SIM_TENANTS_MAX */
	uint32_t depth;	  /* deepest level below the root, 1..SIM_DEPTH_MAX */
	int64_t start_ns; /* the span of the times, 0 <= start <= end */
	int64_t end_ns;	  /* <= SIM_TIME_MAX_NS */
	uint32_t gpu_share_ppm; /* pods that request GPUs, 0..1000000 */
	bool all_gpu;		/* every pod requests GPUs */
	bool invalid;		/* one tenant in 37 gets an invalid quota */
	bool churn;		/* class-table changes, plugins, recreations */
};

/* The defaults of `gpuledger simulate` (seed 1, 100000 events, 24 tenants,
 * depth 3, 30 days from 2026-01-01, 2% GPU pods, invalid quotas on). */
void sim_opts_default(struct sim_opts *o);

typedef struct sim sim_t;

/* A new simulator for o (copied). LG_EINVAL with err set when an option is
 * out of its range. Caller frees with sim_free. */
int sim_new(const struct sim_opts *o, sim_t **out, struct lg_error *err);
/* The next line: 1 with *line (borrowed until the next sim_next or
 * sim_free) and *len (bytes, the final '\n' included; not NUL-terminated),
 * 0 once opts.events lines were yielded, LG_ELIMIT when a line would exceed
 * SIM_LINE_MAX (a bug of the simulator; the stream then ends). */
int sim_next(sim_t *s, const char **line, size_t *len, struct lg_error *err);
/* Accepts NULL. */
void sim_free(sim_t *s);

/* The reconciliation cases (sim/cases.c, DESIGN 3.6): a short history in
 * which each finding of `gpuledger reconcile` happens once -- an object
 * older than admission, an admitted one, a bypass, a race of two
 * admissions and a budget lowered under usage. Lines in order: a recorded
 * stream line (review false) or an AdmissionReview v1 (review true) that
 * "the webhook" sends once the stream lines before it are observed. Each
 * text is one line of JSON without a newline. Caller frees with
 * sim_cases_free. LG_EINVAL for a start outside 1970..2199. */
struct sim_case_line {
	bool review;
	char *text; /* owned */
};
int sim_cases(int64_t start_ns, struct sim_case_line **lines, size_t *n,
	      struct lg_error *err);
void sim_cases_free(struct sim_case_line *lines, size_t n);

#endif
