/*
 * Kubernetes quantities (DESIGN 5.1), exact, without floating point.
 *
 * A quantity is kept as a sign and a magnitude in nano units, as a small
 * little-endian bignum of 32-bit limbs. Upstream (apimachinery
 * resource.ParseQuantity) keeps an arbitrary-precision decimal and rounds it
 * up, away from zero, to nano on parse; after that rounding every quantity is
 * an integer number of nano units, so a fixed-size integer is exact.
 *
 * Invariant of every struct quantity this file produces: mag[nlimbs-1] is not
 * zero (nlimbs is 0 for zero), limbs at and above nlimbs are zero, and sign
 * is 0 exactly when the magnitude is zero. Callers may therefore compare
 * quantities bytewise as well as with model__quantity_cmp.
 */
#include "model/model_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define NANO	      1000000000u
#define MICRO_IN_NANO 1000u
#define MILLI_IN_NANO 1000000u

/* Digits of the largest magnitude (2^1280 < 10^386), with room to spare. */
#define QUANTITY_DIGITS_MAX 400

/* How much of a bad quantity string an error message quotes. */
#define QUOTE_MAX 64

struct suffix {
	const char *text;
	int8_t dexp;	/* decimal exponent */
	uint8_t bshift; /* binary exponent; non-zero for binary suffixes */
};

/* The decimal SI and binary SI suffixes of apimachinery's suffixer. */
static const struct suffix suffixes[] = {
	{"n", -9, 0},  {"u", -6, 0},  {"m", -3, 0},  {"", 0, 0},
	{"k", 3, 0},   {"M", 6, 0},   {"G", 9, 0},   {"T", 12, 0},
	{"P", 15, 0},  {"E", 18, 0},  {"Ki", 0, 10}, {"Mi", 0, 20},
	{"Gi", 0, 30}, {"Ti", 0, 40}, {"Pi", 0, 50}, {"Ei", 0, 60},
};

/* The scanned text of a quantity: significant digits and the suffix. */
struct qtext {
	bool neg;
	const char *ip; /* integer digits, leading zeros removed */
	size_t il;
	const char *fp; /* fraction digits, trailing zeros removed */
	size_t fl;
	int64_t dexp;	 /* decimal exponent of the suffix */
	unsigned bshift; /* binary exponent of the suffix (0: decimal) */
};

/* ---------------------------------------------------------------------- */
/* Magnitude arithmetic. */

static void mag_trim(struct quantity *q)
{
	while (q->nlimbs > 0 && q->mag[q->nlimbs - 1] == 0)
		q->nlimbs--;
	if (q->nlimbs == 0)
		q->sign = 0;
}

static bool mag_is_zero(const struct quantity *q)
{
	return q->nlimbs == 0;
}

/* q = q * m + a; LG_ERANGE (q undefined) when the result needs more limbs. */
static int mag_mul_add(struct quantity *q, uint32_t m, uint32_t a)
{
	uint64_t carry = a;

	for (size_t i = 0; i < q->nlimbs; i++) {
		uint64_t t = (uint64_t)q->mag[i] * m + carry;

		q->mag[i] = (uint32_t)t;
		carry = t >> 32;
	}
	if (carry != 0) {
		if (q->nlimbs == QUANTITY_LIMBS)
			return LG_ERANGE;
		q->mag[q->nlimbs++] = (uint32_t)carry;
	}
	return 0;
}

/* q = q / d in place; returns the remainder. d must not be 0. */
static uint32_t mag_div_small(struct quantity *q, uint32_t d)
{
	uint64_t rem = 0;

	for (size_t i = q->nlimbs; i-- > 0;) {
		uint64_t t = (rem << 32) | q->mag[i];

		q->mag[i] = (uint32_t)(t / d);
		rem = t % d;
	}
	mag_trim(q);
	return (uint32_t)rem;
}

/* The remainder of q / d, leaving q alone. */
static uint32_t mag_mod_small(const struct quantity *q, uint32_t d)
{
	uint64_t rem = 0;

	for (size_t i = q->nlimbs; i-- > 0;)
		rem = ((rem << 32) | q->mag[i]) % d;
	return (uint32_t)rem;
}

static int mag_cmp(const struct quantity *a, const struct quantity *b)
{
	if (a->nlimbs != b->nlimbs)
		return a->nlimbs < b->nlimbs ? -1 : 1;
	for (size_t i = a->nlimbs; i-- > 0;)
		if (a->mag[i] != b->mag[i])
			return a->mag[i] < b->mag[i] ? -1 : 1;
	return 0;
}

/* r = a + b (r may be a or b); LG_ERANGE when it does not fit. */
static int mag_add(struct quantity *r, const struct quantity *a,
		   const struct quantity *b)
{
	size_t n = a->nlimbs > b->nlimbs ? a->nlimbs : b->nlimbs;
	uint64_t carry = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t t = carry;

		t += i < a->nlimbs ? a->mag[i] : 0;
		t += i < b->nlimbs ? b->mag[i] : 0;
		r->mag[i] = (uint32_t)t;
		carry = t >> 32;
	}
	r->nlimbs = (uint16_t)n;
	if (carry != 0) {
		if (n == QUANTITY_LIMBS)
			return LG_ERANGE;
		r->mag[r->nlimbs++] = 1;
	}
	return 0;
}

/* r = a - b where a >= b (r may be a or b). */
static void mag_sub(struct quantity *r, const struct quantity *a,
		    const struct quantity *b)
{
	int64_t borrow = 0;
	size_t n = a->nlimbs;

	for (size_t i = 0; i < n; i++) {
		int64_t t = (int64_t)a->mag[i] - borrow -
			    (int64_t)(i < b->nlimbs ? b->mag[i] : 0);

		borrow = t < 0;
		r->mag[i] = (uint32_t)(t + (borrow ? (int64_t)1 << 32 : 0));
	}
	for (size_t i = n; i < QUANTITY_LIMBS; i++)
		r->mag[i] = 0;
	r->nlimbs = (uint16_t)n;
	mag_trim(r);
}

static void mag_set_u64(struct quantity *q, uint64_t v)
{
	memset(q->mag, 0, sizeof(q->mag));
	q->mag[0] = (uint32_t)v;
	q->mag[1] = (uint32_t)(v >> 32);
	q->nlimbs = 2;
	mag_trim(q);
}

/* False when the magnitude needs more than 64 bits. */
static bool mag_to_u64(const struct quantity *q, uint64_t *out)
{
	if (q->nlimbs > 2)
		return false;
	*out = (q->nlimbs > 0 ? q->mag[0] : 0) |
	       (q->nlimbs > 1 ? (uint64_t)q->mag[1] << 32 : 0);
	return true;
}

/* q = q * 10^e, e >= 0. */
static int mag_mul_pow10(struct quantity *q, int64_t e)
{
	if (mag_is_zero(q))
		return 0;
	if (e > QUANTITY_DIGITS_MAX)
		return LG_ERANGE;
	for (; e >= 9; e -= 9)
		if (mag_mul_add(q, NANO, 0) < 0)
			return LG_ERANGE;
	for (; e > 0; e--)
		if (mag_mul_add(q, 10, 0) < 0)
			return LG_ERANGE;
	return 0;
}

/* q = q * 2^k. */
static int mag_shl(struct quantity *q, unsigned k)
{
	for (; k >= 16; k -= 16)
		if (mag_mul_add(q, 1u << 16, 0) < 0)
			return LG_ERANGE;
	return mag_mul_add(q, 1u << k, 0);
}

/* ---------------------------------------------------------------------- */
/* Scanning. */

static size_t span_digits(const char *s, size_t pos, size_t len)
{
	size_t i = pos;

	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	return i - pos;
}

/* Parses a decimal exponent "[eE][+-]?[0-9]+" that must fit int64, as Go's
 * strconv.ParseInt does for upstream. */
static bool scan_exponent(const char *s, size_t len, int64_t *out)
{
	size_t i = 1;
	bool neg = false;
	uint64_t v = 0, lim;

	if (len < 2 || (s[0] != 'e' && s[0] != 'E'))
		return false;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	if (i == len || span_digits(s, i, len) != len - i)
		return false;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (v > (lim - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v)
		   : (int64_t)v;
	return true;
}

/* Interprets the suffix s[0..len): a table entry or an e/E exponent. */
static bool scan_suffix(const char *s, size_t len, struct qtext *t)
{
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		if (strlen(suffixes[i].text) == len &&
		    memcmp(suffixes[i].text, s, len) == 0) {
			t->dexp = suffixes[i].dexp;
			t->bshift = suffixes[i].bshift;
			return true;
		}
	}
	t->bshift = 0;
	return scan_exponent(s, len, &t->dexp);
}

/*
 * Splits s into sign, digits and suffix like upstream's parseQuantityString.
 * Like upstream, the number may have no digit at all: ".", "-", "+.", "k"
 * and "Ki" all parse as zero (TestParseQuantityString accepts "." and "-.").
 */
static int scan(const char *s, size_t len, struct qtext *t)
{
	size_t pos = 0, n;

	memset(t, 0, sizeof(*t));
	if (len == 0)
		return LG_EINVAL;
	if (s[0] == '+' || s[0] == '-')
		t->neg = s[pos++] == '-';
	n = span_digits(s, pos, len);
	t->ip = s + pos;
	t->il = n;
	pos += n;
	while (t->il > 0 && t->ip[0] == '0') {
		t->ip++;
		t->il--;
	}
	if (pos < len && s[pos] == '.') {
		pos++;
		n = span_digits(s, pos, len);
		t->fp = s + pos;
		t->fl = n;
		pos += n;
		while (t->fl > 0 && t->fp[t->fl - 1] == '0')
			t->fl--;
	}
	return scan_suffix(s + pos, len - pos, t) ? 0 : LG_EINVAL;
}

/* The i-th significant digit (integer digits, then fraction digits). */
static unsigned digit_at(const struct qtext *t, size_t i)
{
	return (unsigned)((i < t->il ? t->ip[i] : t->fp[i - t->il]) - '0');
}

/* ---------------------------------------------------------------------- */
/* Building the nano magnitude. */

/*
 * Decimal suffix: nano = ceil(D * 10^e). Digits below the nano place only
 * decide whether to round up, so they are never multiplied in: a long tail
 * like "1.000...0001" stays exact and cannot overflow.
 */
static int build_decimal(struct quantity *q, const struct qtext *t)
{
	int64_t dexp = t->dexp, nd = (int64_t)(t->il + t->fl), e;
	int64_t clamp = nd + QUANTITY_DIGITS_MAX + 9;
	bool sticky = false;

	/* Beyond +clamp every non-zero value overflows, beyond -clamp every
	 * digit lies below the nano place; clamping keeps the outcome and
	 * keeps the exponent arithmetic far from int64 overflow. */
	if (dexp > clamp)
		dexp = clamp;
	if (dexp < -clamp)
		dexp = -clamp;
	e = dexp - (int64_t)t->fl + 9; /* exponent of the last digit */
	for (int64_t i = 0; i < nd; i++) {
		unsigned d = digit_at(t, (size_t)i);

		if (e + (nd - 1 - i) < 0)
			sticky |= d != 0;
		else if (mag_mul_add(q, 10, d) < 0)
			return LG_ERANGE;
	}
	if (e > 0 && mag_mul_pow10(q, e) < 0)
		return LG_ERANGE;
	if (sticky && mag_mul_add(q, 1, 1) < 0)
		return LG_ERANGE;
	return 0;
}

/* Sets q to the binary cap, 2^63-1 units, in nano. */
static void set_binary_cap(struct quantity *q)
{
	mag_set_u64(q, (uint64_t)INT64_MAX);
	(void)mag_mul_add(q, NANO, 0);
}

/*
 * Binary suffix: nano = ceil(D * 2^k * 10^(9 - fl)), then capped at
 * 2^63-1 units as upstream caps BinarySI at maxAllowed. All digits take
 * part (dividing by 10 late keeps the rounding exact); more than about 350
 * significant digits do not fit and are LG_ERANGE.
 */
static int build_binary(struct quantity *q, const struct qtext *t)
{
	struct quantity cap;
	bool sticky = false;
	int64_t e = 9 - (int64_t)t->fl;

	set_binary_cap(&cap);
	if (t->il > 19) { /* at least 10^19 units: above the cap */
		*q = cap;
		return 0;
	}
	for (size_t i = 0; i < t->il + t->fl; i++)
		if (mag_mul_add(q, 10, digit_at(t, i)) < 0)
			return LG_ERANGE;
	if (mag_shl(q, t->bshift) < 0)
		return LG_ERANGE;
	if (e >= 0 && mag_mul_pow10(q, e) < 0)
		return LG_ERANGE;
	for (; e < 0; e++)
		sticky |= mag_div_small(q, 10) != 0;
	if (sticky && mag_mul_add(q, 1, 1) < 0)
		return LG_ERANGE;
	if (mag_cmp(q, &cap) > 0)
		*q = cap;
	return 0;
}

int model__quantity_parse(struct quantity *q, const char *s, size_t len,
			  struct lg_error *err)
{
	struct qtext t;
	struct quantity r;
	int rc;

	model__quantity_zero(q);
	if (s == NULL || scan(s, len, &t) < 0)
		return lg_error_set(
			err, LG_EINVAL, "invalid quantity \"%.*s\"",
			s == NULL ? 0
				  : (int)(len < QUOTE_MAX ? len : QUOTE_MAX),
			s == NULL ? "" : s);
	model__quantity_zero(&r);
	if (t.il + t.fl > 0) {
		rc = t.bshift != 0 ? build_binary(&r, &t)
				   : build_decimal(&r, &t);
		if (rc < 0)
			return lg_error_set(
				err, rc, "quantity \"%.*s\" is too large",
				(int)(len < QUOTE_MAX ? len : QUOTE_MAX), s);
	}
	r.binary = t.bshift != 0;
	r.sign = mag_is_zero(&r) ? 0 : t.neg ? -1 : 1;
	*q = r;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Accessors and arithmetic. */

void model__quantity_zero(struct quantity *q)
{
	memset(q, 0, sizeof(*q));
}

bool model__quantity_is_negative(const struct quantity *q)
{
	return q->sign < 0;
}

/* ceil(q / unit) for unit in nano (NANO for Value, MILLI_IN_NANO for milli). */
static int scaled_value(const struct quantity *q, uint32_t unit, int64_t *out)
{
	struct quantity t = *q;
	uint32_t rem = mag_div_small(&t, unit);
	uint64_t v;

	if (!mag_to_u64(&t, &v))
		return LG_ERANGE;
	if (q->sign >= 0) {
		/* Positive values round up: away from zero. */
		if (rem != 0 && v == UINT64_MAX)
			return LG_ERANGE;
		v += rem != 0;
		if (v > (uint64_t)INT64_MAX)
			return LG_ERANGE;
		*out = (int64_t)v;
		return 0;
	}
	/* Negative values round up too, towards zero (the ceiling,
	 * Appendix A), so the truncated quotient is the answer. */
	if (v > (uint64_t)INT64_MAX + 1)
		return LG_ERANGE;
	*out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
	return 0;
}

int model__quantity_value(const struct quantity *q, int64_t *out)
{
	return scaled_value(q, NANO, out);
}

int model__quantity_milli_value(const struct quantity *q, int64_t *out)
{
	return scaled_value(q, MILLI_IN_NANO, out);
}

int model__quantity_add(struct quantity *acc, const struct quantity *b)
{
	struct quantity r = *acc;

	if (b->sign == 0)
		return 0;
	if (acc->sign == 0) {
		*acc = *b;
		return 0;
	}
	if (acc->sign == b->sign) {
		if (mag_add(&r, acc, b) < 0)
			return LG_ERANGE;
	} else if (mag_cmp(acc, b) >= 0) {
		mag_sub(&r, acc, b);
	} else {
		mag_sub(&r, b, acc);
		r.sign = b->sign;
	}
	mag_trim(&r);
	*acc = r;
	return 0;
}

int model__quantity_cmp(const struct quantity *a, const struct quantity *b)
{
	int c;

	if (a->sign != b->sign)
		return a->sign < b->sign ? -1 : 1;
	c = mag_cmp(a, b);
	return a->sign < 0 ? -c : c;
}

/* ---------------------------------------------------------------------- */
/* Formatting. */

/* Writes the decimal digits of magnitude q into out; returns their count.
 * out must hold QUANTITY_DIGITS_MAX bytes. */
static size_t mag_digits(const struct quantity *q, char *out)
{
	struct quantity t = *q;
	uint32_t chunk[QUANTITY_DIGITS_MAX / 9 + 1];
	size_t nchunk = 0, n;

	if (mag_is_zero(&t)) {
		out[0] = '0';
		return 1;
	}
	while (!mag_is_zero(&t) && nchunk < sizeof(chunk) / sizeof(chunk[0]))
		chunk[nchunk++] = mag_div_small(&t, NANO);
	n = (size_t)snprintf(out, QUANTITY_DIGITS_MAX, "%u",
			     (unsigned)chunk[nchunk - 1]);
	for (size_t i = nchunk - 1; i-- > 0;)
		n += (size_t)snprintf(out + n, QUANTITY_DIGITS_MAX - n, "%09u",
				      (unsigned)chunk[i]);
	return n;
}

size_t model__quantity_format(const struct quantity *q, char *buf, size_t cap)
{
	static const struct {
		uint32_t unit;
		const char *suffix;
	} units[] = {
		{NANO, ""},
		{MILLI_IN_NANO, "m"},
		{MICRO_IN_NANO, "u"},
		{1, "n"},
	};
	char text[QUANTITY_DIGITS_MAX + 8];
	struct quantity t = *q;
	size_t i = 0, n = 0;

	/* The largest unit that divides the value exactly; zero prints "0". */
	while (i + 1 < sizeof(units) / sizeof(units[0]) &&
	       mag_mod_small(&t, units[i].unit) != 0)
		i++;
	(void)mag_div_small(&t, units[i].unit);
	if (q->sign < 0)
		text[n++] = '-';
	n += mag_digits(&t, text + n);
	if (q->sign != 0)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s",
				      units[i].suffix);
	text[n] = '\0';
	if (cap > 0) {
		size_t w = n < cap - 1 ? n : cap - 1;

		memcpy(buf, text, w);
		buf[w] = '\0';
	}
	return n;
}

/* ---------------------------------------------------------------------- */
/* Exact non-negative integers (budget values and counts). */

int model__quantity_exact_uint(const struct quantity *q, int64_t *out)
{
	struct quantity t = *q;
	uint64_t v;

	if (q->sign < 0)
		return LG_EINVAL;
	if (mag_div_small(&t, NANO) != 0)
		return LG_EINVAL;
	if (!mag_to_u64(&t, &v) || v > (uint64_t)INT64_MAX)
		return LG_ERANGE;
	*out = (int64_t)v;
	return 0;
}

static int json_uint_string(const json_t *v, int64_t *out, struct lg_error *err)
{
	const char *s = json_string_value(v);
	size_t len = json_string_length(v);
	int ql = (int)(len < QUOTE_MAX ? len : QUOTE_MAX);
	struct quantity q;
	int rc = model__quantity_parse(&q, s, len, err);

	if (rc < 0)
		return rc;
	rc = model__quantity_exact_uint(&q, out);
	if (rc == LG_ERANGE)
		return lg_error_set(err, rc,
				    "quantity \"%.*s\" is above 2^63-1", ql, s);
	if (rc < 0)
		return lg_error_set(err, rc, "quantity \"%.*s\" is %s", ql, s,
				    q.sign < 0 ? "negative" : "not an integer");
	return 0;
}

/* 2^53: above it a double no longer tells which integer the text said. */
#define EXACT_REAL_MAX 9007199254740992.0

static int json_uint_real(const json_t *v, int64_t *out, struct lg_error *err)
{
	double x = json_real_value(v);

	if (!isfinite(x) || x != trunc(x))
		return lg_error_set(err, LG_EINVAL,
				    "number %g is not an integer", x);
	if (x < 0)
		return lg_error_set(err, LG_EINVAL, "number %g is negative", x);
	if (x >= 9223372036854775808.0)
		return lg_error_set(err, LG_ERANGE, "number %g is above 2^63-1",
				    x);
	if (x > EXACT_REAL_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "number %g is not exactly representable",
				    x);
	*out = (int64_t)x;
	return 0;
}

/* What a JSON value that is not a quantity is, for error messages. */
static const char *json_kind(const json_t *v)
{
	static const char *const kinds[] = {
		[JSON_OBJECT] = "an object", [JSON_ARRAY] = "an array",
		[JSON_STRING] = "a string",  [JSON_INTEGER] = "an integer",
		[JSON_REAL] = "a real",	     [JSON_TRUE] = "a boolean",
		[JSON_FALSE] = "a boolean",  [JSON_NULL] = "null",
	};

	return v == NULL ? "nothing" : kinds[json_typeof(v)];
}

int model__quantity_json_uint(const json_t *v, int64_t *out,
			      struct lg_error *err)
{
	if (json_is_string(v))
		return json_uint_string(v, out, err);
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			return lg_error_set(err, LG_EINVAL,
					    "number %lld is negative",
					    (long long)i);
		*out = (int64_t)i;
		return 0;
	}
	if (json_is_real(v))
		return json_uint_real(v, out, err);
	return lg_error_set(err, LG_EINVAL,
			    "expected a quantity string or a number, got %s",
			    json_kind(v));
}

/* ---------------------------------------------------------------------- */
/* eval ParseQuantity (DESIGN 6.1). */

/* An int64 as JSON, or null when it fell outside int64 (Appendix A). */
static json_t *int_or_null(int rc, int64_t v)
{
	return rc == 0 ? json_integer((json_int_t)v) : json_null();
}

int model__eval_parse_quantity(const struct eval_ctx *ctx, const json_t *input,
			       json_t **out, struct lg_error *err)
{
	struct quantity q;
	struct lg_error perr = {0};
	int64_t value = 0, milli = 0;
	int rc, rv, rm;

	if (!json_is_string(input))
		return lg_error_set(err, LG_EINVAL,
				    "ParseQuantity: input must be a string");
	rc = model__quantity_parse(&q, json_string_value(input),
				   json_string_length(input), &perr);
	if (rc == LG_EINVAL)
		return lg_error_set(err, rc, "%s", perr.msg);
	/* Too large for our magnitude means far outside int64: upstream
	 * parses it, and both accessors overflow. */
	rv = rc < 0 ? LG_ERANGE : model__quantity_value(&q, &value);
	rm = rc < 0 ? LG_ERANGE : model__quantity_milli_value(&q, &milli);
	*out = json_pack("{s:o, s:o}", "value", int_or_null(rv, value), "milli",
			 int_or_null(rm, milli));
	LG_ASSERT(*out != NULL); /* jansson aborts when out of memory */
	return 0;
}
