/*
 * Small helpers of the query layer: memory that aborts when it runs out
 * (STYLE "Errors and memory": the daemon does not test every allocation),
 * a growable text buffer, the monotonic clock and hex.
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *q_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

void *q_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		abort();
	return p;
}

char *q_xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;

	return memcpy(q_xmalloc(n), s, n);
}

uint64_t q_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void q_hex(const uint8_t *head, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < LEDGER_HEAD_BYTES; i++) {
		out[2 * i] = digits[head[i] >> 4];
		out[2 * i + 1] = digits[head[i] & 15];
	}
	out[2 * LEDGER_HEAD_BYTES] = '\0';
}

void sbuf_init(struct sbuf *b)
{
	memset(b, 0, sizeof(*b));
}

void sbuf_release(struct sbuf *b)
{
	free(b->p);
	sbuf_init(b);
}

static void sbuf_reserve(struct sbuf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 1024;

	if (b->len + more + 1 <= b->cap)
		return;
	while (cap < b->len + more + 1)
		cap *= 2;
	b->p = q_xrealloc(b->p, cap);
	b->cap = cap;
}

void sbuf_add(struct sbuf *b, const char *s, size_t len)
{
	sbuf_reserve(b, len);
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void sbuf_printf(struct sbuf *b, const char *fmt, ...)
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

char *sbuf_take(struct sbuf *b, size_t *len)
{
	char *p;

	sbuf_reserve(b, 0);
	p = b->p;
	if (len != NULL)
		*len = b->len;
	sbuf_init(b);
	return p;
}

/* ---------------------------------------------------------------------- */
/* Canonical JSON without jansson's generic dumper.
 *
 * json_dumps with JSON_SORT_KEYS spends most of its time on bookkeeping
 * that canonical text of a tree does not need: a hash table of the
 * containers on the path (with a "%p" key per container) to detect cycles,
 * a malloc'ed key array and a lookup per member, and snprintf per integer.
 * A verdict is built by us and has no cycles, so it is written here
 * directly. The bytes are json_dumps' (jansson 2.14, dump.c and utf.c):
 * keys sorted by memcmp then length, no spaces, '"', '\\' and control
 * characters escaped (\b \f \n \r \t, else \u00XX in upper-case hex),
 * everything else, '/' and valid UTF-8 included, copied; text that is not
 * valid UTF-8 fails the whole dump. Reals, rare in a verdict, are left to
 * jansson, whose formatting of doubles is its own. */

/* sbuf_add without the terminating NUL, which q_canonical adds once. */
static inline void put(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap)
		sbuf_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

/* Members of an object: sorted in place, the values beside their keys. */
struct canon_member {
	const char *key;
	size_t len;
	const json_t *v;
};

#define CANON_STACK_MEMBERS 16

static int member_cmp(const void *a, const void *b)
{
	const struct canon_member *x = a, *y = b;
	int r = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);

	if (r != 0)
		return r;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void sort_members(struct canon_member *m, size_t n)
{
	if (n > CANON_STACK_MEMBERS) {
		qsort(m, n, sizeof(*m), member_cmp);
		return;
	}
	/* Keys of an object are distinct, so any correct sort gives
	 * qsort's order; objects are small. */
	for (size_t i = 1; i < n; i++) {
		struct canon_member t = m[i];
		size_t j = i;

		for (; j > 0 && member_cmp(&m[j - 1], &t) > 0; j--)
			m[j] = m[j - 1];
		m[j] = t;
	}
}

/* The length of the valid UTF-8 sequence at s (at most n bytes, s[0] >=
 * 0x80), or 0: jansson's utf8_check_first and utf8_check_full. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
		cp = (cp << 6) + (s[i] & 0x3F);
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ||
	    (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && cp < 0x10000))
		return 0;
	return len;
}

static int canon_string(struct sbuf *b, const char *str, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, run = 0;

	sbuf_reserve(b, n + 2);
	b->p[b->len++] = '"';
	while (i < n) {
		unsigned char c = s[i];
		char esc[6] = {'\\', 0, '0', '0', 0, 0};
		size_t el = 2, k;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			/* The common case: a run of plain ASCII. */
			for (i++; i < n && s[i] >= 0x20 && s[i] < 0x80 &&
				  s[i] != '"' && s[i] != '\\';
			     i++)
				;
			continue;
		}
		if (c >= 0x80) {
			if ((k = utf8_seq(s + i, n - i)) == 0)
				return -1;
			i += k;
			continue;
		}
		put(b, str + run, i - run);
		switch (c) {
		case '"':
		case '\\':
			esc[1] = (char)c;
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			esc[1] = 'u';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			el = 6;
		}
		put(b, esc, el);
		run = ++i;
	}
	put(b, str + run, n - run);
	put(b, "\"", 1);
	return 0;
}

static void canon_integer(struct sbuf *b, json_int_t v)
{
	char tmp[24], *p = tmp + sizeof(tmp);
	unsigned long long u =
		v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--p = '-';
	put(b, p, (size_t)(tmp + sizeof(tmp) - p));
}

static int canon_value(struct sbuf *b, const json_t *v, size_t max);

static int canon_object(struct sbuf *b, const json_t *v, size_t max)
{
	struct canon_member stack[CANON_STACK_MEMBERS], *m = stack;
	size_t n = json_object_size(v), i = 0;
	int rc = 0;

	if (n > CANON_STACK_MEMBERS)
		m = q_xmalloc(n * sizeof(*m));
	for (void *it = json_object_iter((json_t *)v); it != NULL && i < n;
	     it = json_object_iter_next((json_t *)v, it), i++)
		m[i] = (struct canon_member){json_object_iter_key(it),
					     json_object_iter_key_len(it),
					     json_object_iter_value(it)};
	sort_members(m, i);
	put(b, "{", 1);
	for (size_t k = 0; k < i && rc == 0; k++) {
		if (k > 0)
			put(b, ",", 1);
		rc = canon_string(b, m[k].key, m[k].len);
		if (rc == 0) {
			put(b, ":", 1);
			rc = canon_value(b, m[k].v, max);
		}
	}
	put(b, "}", 1);
	if (m != stack)
		free(m);
	return rc;
}

static int canon_value(struct sbuf *b, const json_t *v, size_t max)
{
	char *text;
	int rc = 0;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rc = canon_object(b, v, max);
		break;
	case JSON_ARRAY:
		put(b, "[", 1);
		for (size_t i = 0, n = json_array_size(v); i < n && rc == 0;
		     i++) {
			if (i > 0)
				put(b, ",", 1);
			rc = canon_value(b, json_array_get(v, i), max);
		}
		put(b, "]", 1);
		break;
	case JSON_STRING:
		rc = canon_string(b, json_string_value(v),
				  json_string_length(v));
		break;
	case JSON_INTEGER:
		canon_integer(b, json_integer_value(v));
		break;
	case JSON_TRUE:
		put(b, "true", 4);
		break;
	case JSON_FALSE:
		put(b, "false", 5);
		break;
	case JSON_NULL:
		put(b, "null", 4);
		break;
	default: /* JSON_REAL */
		text = json_dumps(v, JSON_ENCODE_ANY);
		if (text == NULL)
			return -1;
		put(b, text, strlen(text));
		free(text);
		break;
	}
	return rc == 0 && b->len <= max ? 0 : -1;
}

int q_canonical(struct sbuf *b, const json_t *v, size_t max_bytes)
{
	int rc = v != NULL ? canon_value(b, v, max_bytes) : -1;

	sbuf_reserve(b, 0);
	b->p[b->len] = '\0';
	return rc;
}

char *q_canonical_text(const json_t *v, size_t max_bytes, struct sbuf *scratch)
{
	struct sbuf own;
	struct sbuf *b = scratch != NULL ? scratch : &own;
	char *text = NULL;

	if (scratch == NULL)
		sbuf_init(&own);
	b->len = 0;
	if (q_canonical(b, v, max_bytes) == 0)
		text = memcpy(q_xmalloc(b->len + 1), b->p, b->len + 1);
	if (scratch == NULL)
		sbuf_release(&own);
	return text;
}

bool q_parse_u64(const char *s, uint64_t *out)
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
