/*
 * The clocks of cluster/ that etcd's client does not give (etcd_mono_ms):
 * the applier's and the member's freshness in nanoseconds, and a plain
 * sleep. One definition each, so that no two files of the layer hold
 * namesakes.
 */
#include "cluster/cluster_int.h"

#include <time.h>

int64_t cluster__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void cluster__sleep_ms(int64_t ms)
{
	struct timespec ts = {.tv_sec = ms / 1000,
			      .tv_nsec = (ms % 1000) * 1000000L};

	LG_ASSERT(ms >= 0);
	nanosleep(&ts, NULL);
}
