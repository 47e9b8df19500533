/*
 * The one canonical JSON writer of gpuledger: RFC 8785 (JSON Canonicalization
 * Scheme, JCS). Verdict records, audit, `log`, the Merkle leaves and every
 * other canonical text come from here, so that the bytes an auditor
 * recomputes with any JCS library are the bytes the ledger hashed.
 *
 * JCS in short: no insignificant space; object members sorted by the UTF-16
 * code units of their names; strings escaped as ECMAScript's JSON.stringify
 * does (only '"', '\\' and the control characters, as \b \t \n \f \r or
 * \u00xx in lower-case hex; everything else, '/' and DEL included, is
 * written as UTF-8); numbers as ECMAScript's Number.prototype.toString (the
 * shortest text that reads back as the same double).
 *
 * Integers: jansson keeps 64-bit integers exactly, JCS reads every number as
 * a double. An integer within +-(2^53-1) is the same either way. Beyond it
 * JCS_INT_STRINGS writes the decimal digits as a string (I-JSON, RFC 7493
 * 2.2), which is what the event JSON and the leaves use; without the flag
 * the exact digits are written as a number (json_canonical, for the replay
 * and eval outputs whose integers DESIGN fixes as numbers).
 *
 * The writer walks a tree we built, without cycle detection (jansson's
 * dumper keeps a hash table of the path for that, most of its cost).
 */
#include "model/model_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* UTF-8 */

/* The code point of the valid UTF-8 sequence at s (n bytes available) and
 * its length in *len, or -1 when the bytes are not valid UTF-8. */
static long utf8_decode(const unsigned char *s, size_t n, size_t *len)
{
	size_t l;
	unsigned long cp;

	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		l = 2, cp = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		l = 3, cp = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		l = 4, cp = s[0] & 0x07;
	else
		return -1;
	if (l > n)
		return -1;
	for (size_t i = 1; i < l; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ||
	    (l == 3 && cp < 0x800) || (l == 4 && cp < 0x10000))
		return -1;
	*len = l;
	return (long)cp;
}

/* The next UTF-16 code unit of the text (valid UTF-8), keeping a
 * pending low surrogate in *low; -1 at the end, so that a name sorts before
 * the names it is a prefix of. *i is the byte position. */
static long utf16_next(const unsigned char *s, size_t n, size_t *i,
		       unsigned long *low)
{
	size_t l;
	long cp;

	if (*low != 0) {
		unsigned long u = *low;

		*low = 0;
		return (long)u;
	}
	if (*i >= n)
		return -1;
	cp = utf8_decode(s + *i, n - *i, &l);
	if (cp < 0) { /* not reached: keys are checked first */
		(*i)++;
		return s[*i - 1];
	}
	*i += l;
	if (cp < 0x10000)
		return cp;
	cp -= 0x10000;
	*low = 0xDC00 | ((unsigned long)cp & 0x3FF);
	return (long)(0xD800 | ((unsigned long)cp >> 10));
}

/* Compares two names by their UTF-16 code units (RFC 8785 3.2.3). For text
 * below U+10000 that is the byte order of UTF-8; it differs where a
 * surrogate pair meets U+E000..U+FFFF. */
int model__jcs_key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;
	size_t i = 0, j = 0;
	unsigned long lx = 0, ly = 0;

	for (;;) {
		long u = utf16_next(x, alen, &i, &lx);
		long v = utf16_next(y, blen, &j, &ly);

		if (u != v)
			return u < v ? -1 : 1;
		if (u < 0)
			return 0;
	}
}

/* ---------------------------------------------------------------------- */
/* Strings */

/* Written as it is: ASCII from space on (DEL too) but '"' and '\\'. */
static bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* plain() of all eight bytes of x at once. Each term is nonzero exactly
 * when some byte has the high bit, is below 0x20, is '"', is '\\'
 * (Hacker's Delight 6-1: haszero and hasless). */
static bool plain8(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ull,
		       high = 0x8080808080808080ull;
	uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');

	return ((x & high) | ((x - ones * 0x20) & ~x & high) |
		((q - ones) & ~q & high) | ((bs - ones) & ~bs & high)) == 0;
}

/* One pass: plain runs are copied in one piece (escapes and UTF-8 checks
 * are the rare path), since every Merkle leaf of an append is written
 * here. A refused add leaves b failed, which the caller tests. */
int model__jcs_put_string(struct lg_buf *b, const char *str, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	lg_buf_addc(b, '"');
	while (i < n) {
		size_t run = i, k;
		unsigned char c;
		char esc[6], *o = esc;

		while (i + 8 <= n) {
			uint64_t x;

			memcpy(&x, s + i, 8);
			if (!plain8(x))
				break;
			i += 8;
		}
		while (i < n && plain(s[i]))
			i++;
		lg_buf_add(b, str + run, i - run);
		if (i == n)
			break;
		c = s[i];
		if (c >= 0x80) {
			if (utf8_decode(s + i, n - i, &k) < 0)
				return -1;
			lg_buf_add(b, str + i, k);
			i += k;
			continue;
		}
		/* One byte becomes up to six. */
		*o++ = '\\';
		switch (c) {
		case '"':
		case '\\':
			*o++ = (char)c;
			break;
		case '\b':
			*o++ = 'b';
			break;
		case '\f':
			*o++ = 'f';
			break;
		case '\n':
			*o++ = 'n';
			break;
		case '\r':
			*o++ = 'r';
			break;
		case '\t':
			*o++ = 't';
			break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
		lg_buf_add(b, esc, (size_t)(o - esc));
		i++;
	}
	lg_buf_addc(b, '"');
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Numbers */

/* The largest integer a double holds exactly with all below it. */
#define JCS_SAFE_INT 9007199254740991LL

void model__jcs_put_integer(struct lg_buf *b, json_int_t v, unsigned flags)
{
	/* The digits end one before the end, where a closing quote fits. */
	char tmp[24], *end = tmp + sizeof(tmp) - 1, *p = end;
	unsigned long long u =
		v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
	bool quote = (flags & JCS_INT_STRINGS) &&
		     (v > JCS_SAFE_INT || v < -JCS_SAFE_INT);

	/* As JCS writes the double a reader will read (DESIGN 3.5). */
	if ((flags & JCS_INT_DOUBLES) &&
	    (v > JCS_SAFE_INT || v < -JCS_SAFE_INT)) {
		char num[40];

		lg_buf_add(b, num, model__jcs_format_double((double)v, num));
		return;
	}

	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		*--p = '-';
	if (quote) {
		*--p = '"';
		tmp[sizeof(tmp) - 1] = '"';
		end++;
	}
	lg_buf_add(b, p, (size_t)(end - p));
}

size_t model__jcs_format_double(double d, char *out)
{
	char sci[40], digits[20], *o = out;
	int k = 0, e, n;

	if (d == 0) { /* 0 and -0 */
		strcpy(out, "0");
		return 1;
	}
	/* The shortest correctly rounded digits that read back as d: the
	 * digits ECMAScript's Number::toString chooses. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(sci, sizeof(sci), "%.*e", prec - 1, d);
		if (strtod(sci, NULL) == d)
			break;
	}
	{
		const char *p = sci;

		if (*p == '-') {
			*o++ = '-';
			p++;
		}
		for (; *p != 'e'; p++)
			if (*p != '.')
				digits[k++] = *p;
		e = atoi(p + 1);
	}
	while (k > 1 && digits[k - 1] == '0')
		k--;
	digits[k] = '\0';
	n = e + 1; /* d = 0.digits * 10^n */
	if (k <= n && n <= 21) {
		memcpy(o, digits, (size_t)k);
		o += k;
		for (int i = k; i < n; i++)
			*o++ = '0';
	} else if (0 < n && n <= 21) {
		memcpy(o, digits, (size_t)n);
		o += n;
		*o++ = '.';
		memcpy(o, digits + n, (size_t)(k - n));
		o += k - n;
	} else if (-6 < n && n <= 0) {
		*o++ = '0';
		*o++ = '.';
		for (int i = 0; i < -n; i++)
			*o++ = '0';
		memcpy(o, digits, (size_t)k);
		o += k;
	} else {
		*o++ = digits[0];
		if (k > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, (size_t)(k - 1));
			o += k - 1;
		}
		o += sprintf(o, "e%c%d", n - 1 < 0 ? '-' : '+', abs(n - 1));
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* ---------------------------------------------------------------------- */
/* Values */

struct member {
	const char *key;
	size_t len;
	const json_t *v;
};

#define STACK_MEMBERS 16

static int member_cmp(const void *a, const void *b)
{
	const struct member *x = a, *y = b;

	return model__jcs_key_cmp(x->key, x->len, y->key, y->len);
}

static void sort_members(struct member *m, size_t n)
{
	if (n > STACK_MEMBERS) {
		qsort(m, n, sizeof(*m), member_cmp);
		return;
	}
	/* Names of an object are distinct; objects are small. */
	for (size_t i = 1; i < n; i++) {
		struct member t = m[i];
		size_t j = i;

		for (; j > 0 && member_cmp(&m[j - 1], &t) > 0; j--)
			m[j] = m[j - 1];
		m[j] = t;
	}
}

static int put_value(struct lg_buf *b, const json_t *v, unsigned flags,
		     size_t max, int depth);

static int put_object(struct lg_buf *b, const json_t *v, unsigned flags,
		      size_t max, int depth)
{
	struct member stack[STACK_MEMBERS], *m = stack;
	size_t n = json_object_size(v), i = 0;
	int rc = 0;

	if (n > STACK_MEMBERS)
		m = lg_xmalloc(n * sizeof(*m));
	for (void *it = json_object_iter((json_t *)v); it != NULL && i < n;
	     it = json_object_iter_next((json_t *)v, it), i++) {
		size_t l = 0; /* read by k += l after a failed decode too */

		m[i] = (struct member){json_object_iter_key(it),
				       json_object_iter_key_len(it),
				       json_object_iter_value(it)};
		/* Names are compared as UTF-16: check them first. */
		for (size_t k = 0; k < m[i].len && rc == 0; k += l)
			if (utf8_decode((const unsigned char *)m[i].key + k,
					m[i].len - k, &l) < 0)
				rc = -1;
	}
	if (rc == 0)
		sort_members(m, i);
	lg_buf_add(b, "{", 1);
	for (size_t k = 0; k < i && rc == 0; k++) {
		if (k > 0)
			lg_buf_add(b, ",", 1);
		rc = model__jcs_put_string(b, m[k].key, m[k].len);
		if (rc == 0) {
			lg_buf_add(b, ":", 1);
			rc = put_value(b, m[k].v, flags, max, depth + 1);
		}
	}
	lg_buf_add(b, "}", 1);
	if (m != stack)
		free(m);
	return rc;
}

/* Deeper trees than this are refused (the writer recurses). */
#define JCS_MAX_DEPTH 512

static int put_value(struct lg_buf *b, const json_t *v, unsigned flags,
		     size_t max, int depth)
{
	char num[40];
	int rc = 0;

	if (depth > JCS_MAX_DEPTH)
		return -1;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		rc = put_object(b, v, flags, max, depth);
		break;
	case JSON_ARRAY:
		lg_buf_add(b, "[", 1);
		for (size_t i = 0, n = json_array_size(v); i < n && rc == 0;
		     i++) {
			if (i > 0)
				lg_buf_add(b, ",", 1);
			rc = put_value(b, json_array_get(v, i), flags, max,
				       depth + 1);
		}
		lg_buf_add(b, "]", 1);
		break;
	case JSON_STRING:
		rc = model__jcs_put_string(b, json_string_value(v),
					   json_string_length(v));
		break;
	case JSON_INTEGER:
		model__jcs_put_integer(b, json_integer_value(v), flags);
		break;
	case JSON_REAL:
		if (!isfinite(json_real_value(v)))
			return -1; /* RFC 8785 3.2.2.2: NaN and Infinity */
		lg_buf_add(b, num,
			   model__jcs_format_double(json_real_value(v), num));
		break;
	case JSON_TRUE:
		lg_buf_add(b, "true", 4);
		break;
	case JSON_FALSE:
		lg_buf_add(b, "false", 5);
		break;
	default:
		lg_buf_add(b, "null", 4);
		break;
	}
	return rc == 0 && b->len <= max && !lg_buf_failed(b) ? 0 : -1;
}

int model__jcs_write(struct lg_buf *b, const json_t *v, unsigned flags,
		     size_t max_bytes)
{
	int rc = v != NULL ? put_value(b, v, flags, max_bytes, 0) : -1;

	lg_buf_add(b, "", 0); /* b->p is a string even when v wrote nothing */
	return rc;
}

char *jcs_text(const json_t *v, unsigned flags, size_t max_bytes,
	       struct lg_buf *scratch)
{
	struct lg_buf own, *b = model__jcs_begin(scratch, &own, max_bytes);

	return model__jcs_end(b, &own,
			      model__jcs_write(b, v, flags, max_bytes) == 0);
}

struct lg_buf *model__jcs_begin(struct lg_buf *scratch, struct lg_buf *own,
				size_t max_bytes)
{
	if (scratch == NULL) {
		lg_buf_init(own, max_bytes < JCS_TEXT_MAX_BYTES
					 ? max_bytes
					 : JCS_TEXT_MAX_BYTES);
		return own;
	}
	lg_buf_reset(scratch);
	return scratch;
}

char *model__jcs_end(struct lg_buf *b, struct lg_buf *own, bool ok)
{
	char *text = NULL;

	if (ok)
		text = memcpy(lg_xmalloc(b->len + 1), b->p, b->len + 1);
	if (b == own)
		lg_buf_release(own);
	return text;
}

char *json_canonical(const json_t *v)
{
	return jcs_text(v, 0, JCS_TEXT_MAX_BYTES, NULL);
}

/* ---------------------------------------------------------------------- */
/* Text that is its own canonical form. Every append writes each event's
 * Merkle leaf, and a verdict's record (or a class's definition) is stored
 * as canonical text already: parsing it and writing it again gives the same
 * bytes, at most of an append's cost. This reading proves that without a
 * tree, for a strict subset of JSON (no space; names without escapes, in
 * strictly increasing UTF-16 order; strings valid UTF-8 with only the
 * escapes JCS writes, never \u0000, which jansson refuses; integers of at
 * most 15 digits, within +-(2^53-1), so written alike with or without
 * JCS_INT_STRINGS, never -0; no reals; at most OWN_DEPTH deep). What it
 * accepts, jansson reads (json_loads and json_loadb_doubles alike) and
 * model__jcs_write writes back byte for byte; the rest is "not known", and
 * the caller takes the long way. tests/model_jcs.c checks both over random
 * and broken texts. */

#define OWN_DEPTH 64
#define OWN_INT_DIGITS 15

struct own_scan {
	const unsigned char *s;
	size_t n, i;
	const char *want; /* a member of the outer object to find, or NULL */
	size_t want_len, at, len;
};

/* One escape at s (s[0] is '\', n bytes available) as JCS writes it: its
 * length, or 0. */
static size_t own_escape(const unsigned char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const char *lo;
	unsigned c;

	if (n >= 2 && strchr("\"\\bfnrt", s[1]) != NULL && s[1] != '\0')
		return 2;
	if (n < 6 || s[1] != 'u' || s[2] != '0' || s[3] != '0' ||
	    (s[4] != '0' && s[4] != '1') || s[5] == '\0' ||
	    (lo = strchr(hex, s[5])) == NULL)
		return 0;
	c = (unsigned)(s[4] - '0') * 16 + (unsigned)(lo - hex);
	/* \u0000 is refused by jansson; the rest have a short form. */
	if (c == 0 || c == '\b' || c == '\t' || c == '\n' || c == '\f' ||
	    c == '\r')
		return 0;
	return 6;
}

static bool own_string(struct own_scan *c, bool name)
{
	const unsigned char *s = c->s;

	if (c->i >= c->n || s[c->i] != '"')
		return false;
	for (c->i++; c->i < c->n;) {
		unsigned char ch = s[c->i];
		size_t l = 0;

		if (ch == '"') {
			c->i++;
			return true;
		}
		if (ch >= 0x20 && ch < 0x80 && ch != '\\')
			l = 1;
		else if (ch == '\\' && !name)
			l = own_escape(s + c->i, c->n - c->i);
		else if (ch >= 0x80 &&
			 utf8_decode(s + c->i, c->n - c->i, &l) < 0)
			l = 0;
		if (l == 0)
			return false;
		c->i += l;
	}
	return false;
}

static bool own_digit(const struct own_scan *c)
{
	return c->i < c->n && c->s[c->i] >= '0' && c->s[c->i] <= '9';
}

static bool own_number(struct own_scan *c)
{
	bool neg = c->s[c->i] == '-';
	size_t from;

	c->i += neg;
	from = c->i;
	if (!own_digit(c))
		return false;
	if (c->s[c->i] == '0') {
		c->i++;
		/* -0 is written 0; a digit after a leading 0 is not JSON. */
		if (neg || own_digit(c))
			return false;
	}
	while (own_digit(c))
		c->i++;
	if (c->i - from > OWN_INT_DIGITS)
		return false;
	/* A real or an exponent: not known here. */
	return c->i == c->n ||
	       (c->s[c->i] != '.' && c->s[c->i] != 'e' && c->s[c->i] != 'E');
}

static bool own_value(struct own_scan *c, int depth);

/* The members of an object or the items of an array, from its opening
 * bracket on. */
static bool own_container(struct own_scan *c, int depth)
{
	bool object = c->s[c->i] == '{';
	char close = object ? '}' : ']';
	size_t prev = 0, prev_len = 0;

	if (depth >= OWN_DEPTH)
		return false;
	if (++c->i < c->n && c->s[c->i] == (unsigned char)close) {
		c->i++;
		return true;
	}
	for (bool first = true;; first = false) {
		size_t name = c->i + 1, name_len = 0, at;

		if (object) {
			if (!own_string(c, true))
				return false;
			name_len = c->i - 1 - name;
			if (!first &&
			    model__jcs_key_cmp((const char *)c->s + prev,
					       prev_len,
					       (const char *)c->s + name,
					       name_len) >= 0)
				return false;
			prev = name, prev_len = name_len;
			if (c->i >= c->n || c->s[c->i++] != ':')
				return false;
		}
		at = c->i;
		if (!own_value(c, depth + 1))
			return false;
		if (object && depth == 0 && c->want != NULL &&
		    name_len == c->want_len &&
		    memcmp(c->s + name, c->want, name_len) == 0)
			c->at = at, c->len = c->i - at;
		if (c->i >= c->n)
			return false;
		if (c->s[c->i] == (unsigned char)close) {
			c->i++;
			return true;
		}
		if (c->s[c->i++] != ',')
			return false;
	}
}

static bool own_value(struct own_scan *c, int depth)
{
	static const char *const lit[] = {"true", "false", "null"};

	if (c->i >= c->n)
		return false;
	switch (c->s[c->i]) {
	case '{':
	case '[':
		return own_container(c, depth);
	case '"':
		return own_string(c, false);
	case 't':
	case 'f':
	case 'n':
		for (size_t k = 0; k < 3; k++) {
			size_t l = strlen(lit[k]);

			if (c->n - c->i >= l &&
			    memcmp(c->s + c->i, lit[k], l) == 0) {
				c->i += l;
				return true;
			}
		}
		return false;
	default:
		return own_number(c);
	}
}

bool model__jcs_own_form_member(const char *s, size_t len, const char *name,
				size_t *at, size_t *vlen)
{
	struct own_scan c = {(const unsigned char *)s, len, 0, name,
			     name ? strlen(name) : 0, 0, 0};
	bool ok;

	LG_ASSERT(s != NULL || len == 0);
	ok = own_value(&c, 0) && c.i == len;
	if (at != NULL)
		*at = ok ? c.at : 0;
	if (vlen != NULL)
		*vlen = ok ? c.len : 0;
	return ok;
}

bool model__jcs_own_form(const char *s, size_t len)
{
	return model__jcs_own_form_member(s, len, NULL, NULL, NULL);
}

/* ---------------------------------------------------------------------- */
/* Reading as JCS reads (DESIGN 3.5). */

/* The integer an integral real within +-(2^53-1) is; NULL for any other
 * value. */
static json_t *safe_int(const json_t *v)
{
	double x = json_is_real(v) ? json_real_value(v) : 0.5;

	if (x != trunc(x) || x > (double)JCS_SAFE_INT ||
	    x < -(double)JCS_SAFE_INT)
		return NULL;
	return json_integer((json_int_t)x);
}

/* Integral reals within the safe range become integers, in place. */
static void ints_from_doubles(json_t *v, int depth)
{
	const char *k;
	json_t *m, *n;
	size_t i;

	if (depth > JCS_MAX_DEPTH)
		return;
	if (json_is_object(v)) {
		json_object_foreach (v, k, m)
			if ((n = safe_int(m)) != NULL)
				json_object_set_new_nocheck(v, k, n);
			else
				ints_from_doubles(m, depth + 1);
	} else if (json_is_array(v)) {
		json_array_foreach (v, i, m)
			if ((n = safe_int(m)) != NULL)
				json_array_set_new(v, i, n);
			else
				ints_from_doubles(m, depth + 1);
	}
}

json_t *json_loadb_doubles(const char *buf, size_t len, size_t flags,
			   json_error_t *e)
{
	json_t *v = json_loadb(
		buf, len,
		flags | JSON_DECODE_INT_AS_REAL | JSON_REJECT_DUPLICATES, e);
	json_t *n = safe_int(v);

	if (n != NULL) { /* a bare number (JSON_DECODE_ANY) */
		json_decref(v);
		return n;
	}
	ints_from_doubles(v, 0);
	return v;
}
