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

void query__sbuf_init(struct sbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void query__sbuf_release(struct sbuf *b)
{
	free(b->p);
	query__sbuf_init(b);
}

static void sbuf_reserve(struct sbuf *b, size_t more)
{
	b->p = lg_xgrow(b->p, &b->cap, b->len + more + 1, 1024);
}

void query__sbuf_add(struct sbuf *b, const char *s, size_t len)
{
	sbuf_reserve(b, len);
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void query__sbuf_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	sbuf_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

char *query__sbuf_take(struct sbuf *b, size_t *len)
{
	char *p;

	sbuf_reserve(b, 0);
	p = b->p;
	if (len != NULL)
		*len = b->len;
	query__sbuf_init(b);
	return p;
}

bool query__parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	/* At most 19 digits: every such number fits in 64 bits. */
	if (s[0] == '\0' || strlen(s) > 19)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}
