/*
 * sim internals that its tests read (tests/test_sim.c); not part of the
 * public API, sim/sim.h.
 */
#ifndef GPULEDGER_SIM_INT_H
#define GPULEDGER_SIM_INT_H

#include "sim/sim.h"

#include <stdint.h>

/* Lines yielded so far. */
uint64_t sim__lines(const sim_t *s);

#endif
