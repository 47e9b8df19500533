/* A generator of random, valid event sequences for the ledger's tests. */
#ifndef GPULEDGER_LEDGER_GEN_H
#define GPULEDGER_LEDGER_GEN_H

#include "model/model.h"

struct gen; /* opaque */

/* A generator seeded with seed whose events start at time t0_ns. */
struct gen *gen_new(uint64_t seed, int64_t t0_ns);
void gen_free(struct gen *g);
/* Fills evs[0..n) with the next n events; their strings live as long as
 * the generator. The sequence is valid: every event fits the state the
 * earlier ones built, and times never decrease. */
void gen_next(struct gen *g, struct event *evs, size_t n);

#endif
