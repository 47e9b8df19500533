/*
 * The base of every layer: the assertion that is never compiled out, and the
 * one allocation family (STYLE "Errors and memory", "Code").
 *
 * Running out of memory aborts instead of travelling up as LG_ENOMEM: the
 * daemons cannot do anything useful without memory, and an error path that
 * is never taken is never tested. Both failures write one line to the
 * unbuffered stderr, which needs no allocation (the heap may be what failed).
 */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *lg_xgrow(void *p, size_t *cap, size_t need, size_t first)
{
	size_t c;

	if (need <= *cap)
		return p;
	c = *cap ? *cap : first;
	while (c < need)
		c *= 2;
	*cap = c;
	return lg_xrealloc(p, c);
}

void lg_hex(const uint8_t *p, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void lg_assert_fail(const char *cond, const char *file, int line,
		    const char *func)
{
	fprintf(stderr, "gpuledger: %s:%d: %s: assertion failed: %s\n", file,
		line, func, cond);
	abort();
}

static _Noreturn void oom(size_t n)
{
	fprintf(stderr, "gpuledger: out of memory (%zu bytes)\n", n);
	abort();
}

void *lg_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom(n);
	return p;
}

void *lg_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom(n * size);
	return p;
}

/* n == 0 keeps a one-byte block rather than freeing p: the callers use the
 * result as an empty array and free it later. */
void *lg_xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (q == NULL)
		oom(n);
	return q;
}

char *lg_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(lg_xmalloc(n), s, n);
}
