/*
 * Small helpers of the query layer: a growable text buffer, the monotonic
 * clock and hex. (Memory is model's lg_xmalloc family, which aborts when it
 * runs out.)
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t query__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void query__hex(const uint8_t *head, char *out)
{
	lg_hex(head, LEDGER_HEAD_BYTES, out);
}
