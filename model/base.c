/*
 * The base of every layer: the assertion that is never compiled out, and the
 * one allocation family (STYLE "Errors and memory", "Code").
 *
 * Running out of memory aborts instead of travelling up as LG_ENOMEM: the
 * daemons cannot do anything useful without memory, and an error path that
 * is never taken is never tested. Both failures write one line to the
 * unbuffered stderr, which needs no allocation (the heap may be what failed).
 */
#include "model/model_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first block of a buffer: small enough for the many short texts (a
 * leaf, a key), and doubling reaches a large one in a few moves. */
#define LG_BUF_FIRST_BYTES 256

void lg_buf_init(struct lg_buf *b, size_t max_bytes)
{
	/* SIZE_MAX (an unchecked option, say) would wrap cap = max + 1. */
	*b = (struct lg_buf){.max = max_bytes < SIZE_MAX ? max_bytes
							 : SIZE_MAX - 1};
}

void lg_buf_release(struct lg_buf *b)
{
	if (b == NULL)
		return;
	free(b->p);
	lg_buf_init(b, b->max);
}

/* Makes room for n more bytes and the NUL, within max: 0 or LG_ELIMIT
 * (which marks b failed). The capacity doubles, from LG_BUF_FIRST_BYTES,
 * and stops at max + 1, so that a full buffer holds no more than it may. */
static int room(struct lg_buf *b, size_t n)
{
	size_t need, cap;

	if (b->failed || n > b->max - b->len) {
		b->failed = true;
		return LG_ELIMIT;
	}
	need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : LG_BUF_FIRST_BYTES;
	while (cap < need)
		cap = cap > (b->max + 1) / 2 ? b->max + 1 : 2 * cap;
	if (cap > b->max + 1)
		cap = b->max + 1;
	b->p = lg_xrealloc(b->p, cap);
	b->cap = cap;
	return 0;
}

int lg_buf_grow_add(struct lg_buf *b, const void *p, size_t n)
{
	int rc = room(b, n);

	if (rc != 0)
		return rc;
	if (n > 0)
		memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int lg_buf_addf(struct lg_buf *b, const char *fmt, ...)
{
	size_t left = b->cap - b->len;
	va_list ap;
	int n, rc;

	if (b->failed)
		return LG_ELIMIT;
	/* Straight into the room left; a second pass only when it is short. */
	va_start(ap, fmt);
	n = vsnprintf(left > 0 ? b->p + b->len : NULL, left, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < left) {
		b->len += (size_t)n;
		return 0;
	}
	rc = n < 0 ? LG_EINVAL : room(b, (size_t)n);
	if (rc != 0) {
		if (b->p != NULL)
			b->p[b->len] = '\0'; /* undo a truncated first pass */
		return rc;
	}
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *lg_buf_detach(struct lg_buf *b, size_t *len)
{
	char *p;

	if (b->failed) {
		lg_buf_release(b);
		return NULL;
	}
	if (b->p == NULL)
		lg_buf_grow_add(b, "", 0); /* max >= 0: always fits */
	p = b->p;
	if (len != NULL)
		*len = b->len;
	b->p = NULL;
	lg_buf_release(b);
	return p;
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

long lg_read_line(FILE *f, char *buf, size_t cap)
{
	size_t n = 0;
	int c;
	bool over = false;

	LG_ASSERT(f != NULL && buf != NULL && cap > 0); /* room for the NUL */
	while ((c = getc(f)) != EOF && c != '\n') {
		if (n + 1 < cap)
			buf[n++] = (char)c;
		else
			over = true;
	}
	if (c == EOF && n == 0 && !over)
		return -1;
	buf[n] = '\0';
	return over ? -2 : (long)n;
}

bool lg_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = strlen(s);

	/* 19 digits at most: every such number fits in 64 bits, so no digit
	 * needs an overflow test. */
	if (n == 0 || n > LG_U64_DIGITS_MAX)
		return false;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

bool model__digits(const char *s, int n, int *out)
{
	int v = 0;

	LG_ASSERT(n > 0 && n <= 9);
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
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
