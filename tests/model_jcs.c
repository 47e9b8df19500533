/*
 * The canonical JSON writer (model/jcs.c) against RFC 8785: the examples of
 * the RFC and of its reference implementation's test data
 * (cyberphone/json-canonicalization testdata/input and output), the number
 * samples of RFC 8785 Appendix B, and a randomized round trip: for random
 * trees, parsing the text gives the tree back and writing it again gives
 * the same bytes. The seed is printed; GPULEDGER_SEED=N repeats a run.
 */
#include "tests/model_tests.h"

#include <math.h>
#include <stdio.h>
#include <time.h>

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

static const struct {
	const char *in, *out;
} jcs_rows[] = {
	/* RFC 8785 3.2.2 (testdata values.json). */
	{"{\"numbers\": [333333333.33333329, 1E30, 4.50, 2e-3, "
	 "0.000000000000000000000000001], \"string\": "
	 "\"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\", "
	 "\"literals\": [null, true, false]}",
	 "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,"
	 "1e+30,4.5,0.002,1e-27],\"string\":\"\xe2\x82\xac$\\u000f\\nA'B"
	 "\\\"\\\\\\\\\\\"/\"}"},
	/* testdata structures.json */
	{"{\"1\": {\"f\": {\"f\": \"hi\",\"F\": 5} ,\"\\n\": 56.0}, \"10\": { "
	 "}, \"\": \"empty\", \"a\": { }, \"111\": [ { } ], \"A\": { }}",
	 "{\"\":\"empty\",\"1\":{\"\\n\":56,\"f\":{\"F\":5,\"f\":\"hi\"}},"
	 "\"10\":{},\"111\":[{}],\"A\":{},\"a\":{}}"},
	/* testdata weird.json: UTF-16 order puts the surrogate pair of
	 * U+1F602 before U+FB33, which UTF-8 byte order would not. */
	{"{\"\\u20ac\": \"Euro Sign\", \"1\": \"One\", \"\\u0080\": "
	 "\"Control\\u007f\", \"\\ud83d\\ude02\": \"Smiley\", \"\\u00f6\": "
	 "\"Latin Small Letter O With Diaeresis\", \"\\ufb33\": \"Hebrew "
	 "Letter Dalet With Dagesh\", \"</script>\": \"Browser Challenge\"}",
	 "{\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\xc2\x80\":"
	 "\"Control\x7f\",\"\xc3\xb6\":\"Latin Small Letter O With "
	 "Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x82\":"
	 "\"Smiley\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet With Dagesh\"}"},
	/* testdata arrays.json */
	{"[56, {\"d\": true, \"10\": null, \"1\": [ ]}]",
	 "[56,{\"1\":[],\"10\":null,\"d\":true}]"},
	/* RFC 8785 3.2.3: sorting by UTF-16 code units. */
	{"{\"\\u20ac\": \"Euro Sign\", \"\\r\": \"Carriage Return\", "
	 "\"\\ufb33\": \"Hebrew Letter Dalet With Dagesh\", \"1\": "
	 "\"One\", \"\\ud83d\\ude00\": \"Emoji: Grinning Face\", "
	 "\"\\u0080\": \"Control\", \"\\u00f6\": \"Latin Small Letter O "
	 "With Diaeresis\"}",
	 "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":"
	 "\"Control\",\"\xc3\xb6\":\"Latin Small Letter O With "
	 "Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":"
	 "\"Emoji: Grinning Face\",\"\xef\xac\xb3\":\"Hebrew Letter Dalet "
	 "With Dagesh\"}"},
	/* Escapes: only the required ones, lower-case hex. */
	{"\"\\u0000\\u001F\\b\\f\\n\\r\\t/\\u007f\"",
	 "\"\\u0000\\u001f\\b\\f\\n\\r\\t/\x7f\""},
	{"[-0.0, 0, -9223372036854775808, 9223372036854775807]",
	 "[0,0,-9223372036854775808,9223372036854775807]"},
};

START_TEST(jcs_examples)
{
	json_t *v = json_loads(jcs_rows[_i].in,
			       JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	char *got;

	ck_assert_ptr_nonnull(v);
	got = json_canonical(v);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, jcs_rows[_i].out);
	free(got);
	json_decref(v);
}
END_TEST

/* RFC 8785 Appendix B: IEEE 754 bit patterns and their JCS text. */
static const struct {
	uint64_t bits;
	const char *text;
} num_rows[] = {
	{0x0000000000000000ULL, "0"},
	{0x8000000000000000ULL, "0"},
	{0x0000000000000001ULL, "5e-324"},
	{0x8000000000000001ULL, "-5e-324"},
	{0x7fefffffffffffffULL, "1.7976931348623157e+308"},
	{0xffefffffffffffffULL, "-1.7976931348623157e+308"},
	{0x4340000000000000ULL, "9007199254740992"},
	{0xc340000000000000ULL, "-9007199254740992"},
	{0x4430000000000000ULL, "295147905179352830000"},
	{0x44b52d02c7e14af5ULL, "9.999999999999997e+22"},
	{0x44b52d02c7e14af6ULL, "1e+23"},
	{0x44b52d02c7e14af7ULL, "1.0000000000000001e+23"},
	{0x444b1ae4d6e2ef4eULL, "999999999999999700000"},
	{0x444b1ae4d6e2ef4fULL, "999999999999999900000"},
	{0x444b1ae4d6e2ef50ULL, "1e+21"},
	{0x3eb0c6f7a0b5ed8cULL, "9.999999999999997e-7"},
	{0x3eb0c6f7a0b5ed8dULL, "0.000001"},
	{0x41b3de4355555553ULL, "333333333.3333332"},
	{0x41b3de4355555554ULL, "333333333.33333325"},
	{0x41b3de4355555555ULL, "333333333.3333333"},
	{0x41b3de4355555556ULL, "333333333.3333334"},
	{0x41b3de4355555557ULL, "333333333.33333343"},
	{0xbecbf647612f3696ULL, "-0.0000033333333333333333"},
	{0x43143ff3c1cb0959ULL, "1424953923781206.2"},
};

START_TEST(jcs_numbers)
{
	double d;
	char out[40];

	memcpy(&d, &num_rows[_i].bits, sizeof(d));
	model__jcs_format_double(d, out);
	ck_assert_str_eq(out, num_rows[_i].text);
	{ /* and the same through a tree */
		json_t *v = json_real(d);
		char *t = json_canonical(v);

		ck_assert_str_eq(t, num_rows[_i].text);
		free(t);
		json_decref(v);
	}
}
END_TEST

START_TEST(jcs_refuses)
{
	json_t *v = json_object();
	struct lg_buf b;
	char *t;

	/* NaN and Infinity are errors (RFC 8785 3.2.2.2); so is text that
	 * is not UTF-8, in a value or in a name. */
	json_object_set_new(v, "k", json_stringn_nocheck("\xff\xfe", 2));
	ck_assert_ptr_null(json_canonical(v));
	json_object_clear(v);
	json_object_set_new_nocheck(v, "\xc0\x80", json_true());
	ck_assert_ptr_null(json_canonical(v));
	json_object_clear(v);
	json_object_set_new(v, "k", json_stringn_nocheck("\xed\xa0\x80", 3));
	ck_assert_ptr_null(json_canonical(v));
	json_decref(v);
	/* A bound is kept. */
	v = json_pack("{s:s}", "k", "0123456789");
	ck_assert_ptr_null(jcs_text(v, 0, 10, NULL));
	lg_buf_init(&b, 1 << 10);
	ck_assert_int_eq(model__jcs_write(&b, v, 0, 1 << 10), 0);
	ck_assert_str_eq(b.p, "{\"k\":\"0123456789\"}");
	lg_buf_release(&b);
	/* So is the buffer's own: 18 bytes fit in 18, not in 17, whatever
	 * the caller's bound, and a scratch keeps its max across texts. */
	lg_buf_init(&b, 17);
	ck_assert_int_eq(model__jcs_write(&b, v, 0, 1 << 10), -1);
	ck_assert_ptr_null(jcs_text(v, 0, SIZE_MAX, &b));
	lg_buf_release(&b);
	lg_buf_init(&b, 18);
	t = jcs_text(v, 0, SIZE_MAX, &b);
	ck_assert_str_eq(t, "{\"k\":\"0123456789\"}");
	free(t);
	t = jcs_text(v, 0, SIZE_MAX, &b); /* the scratch was emptied */
	ck_assert_str_eq(t, "{\"k\":\"0123456789\"}");
	free(t);
	lg_buf_release(&b);
	json_decref(v);
}
END_TEST

START_TEST(jcs_int_strings)
{
	json_t *v = json_pack("[I,I,I,I,I]", (json_int_t)9007199254740991LL,
			      (json_int_t)-9007199254740991LL,
			      (json_int_t)9007199254740992LL,
			      (json_int_t)-9007199254740992LL,
			      (json_int_t)INT64_MAX);
	char *a = jcs_text(v, JCS_INT_STRINGS, SIZE_MAX, NULL);
	char *b = json_canonical(v);

	ck_assert_str_eq(a, "[9007199254740991,-9007199254740991,"
			    "\"9007199254740992\",\"-9007199254740992\","
			    "\"9223372036854775807\"]");
	ck_assert_str_eq(b, "[9007199254740991,-9007199254740991,"
			    "9007199254740992,-9007199254740992,"
			    "9223372036854775807]");
	free(a);
	free(b);
	json_decref(v);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Randomized round trip */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A random string of code points from every range that matters: ASCII
 * with the escapes, controls, two- and three-byte forms around U+E000,
 * and astral ones (surrogate pairs in UTF-16). */
static json_t *rnd_string(uint64_t *s, char *buf, bool key)
{
	size_t n = rnd(s) % 8, len = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned long cp;

		switch (rnd(s) % 6) {
		case 0:
			cp = rnd(s) % 0x20 + key; /* names hold no NUL */
			break;
		case 1:
			cp = "\"\\/az AZ09"[rnd(s) % 10];
			break;
		case 2:
			cp = 0x80 + rnd(s) % 0x780;
			break;
		case 3:
			cp = 0xE000 + rnd(s) % 0x2000;
			break;
		case 4:
			cp = 0x10000 + rnd(s) % 0x100000;
			break;
		default:
			cp = 0x800 + rnd(s) % 0xD000;
		}
		if (cp < 0x80) {
			buf[len++] = (char)cp;
		} else if (cp < 0x800) {
			buf[len++] = (char)(0xC0 | cp >> 6);
			buf[len++] = (char)(0x80 | (cp & 0x3F));
		} else if (cp < 0x10000) {
			buf[len++] = (char)(0xE0 | cp >> 12);
			buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
			buf[len++] = (char)(0x80 | (cp & 0x3F));
		} else {
			buf[len++] = (char)(0xF0 | cp >> 18);
			buf[len++] = (char)(0x80 | ((cp >> 12) & 0x3F));
			buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3F));
			buf[len++] = (char)(0x80 | (cp & 0x3F));
		}
	}
	buf[len] = '\0';
	return json_stringn(buf, len);
}

/* A finite double that is not an integer (an integral one reads back as a
 * jansson integer, equal in JSON but not to json_equal). */
static double rnd_double(uint64_t *s)
{
	uint64_t bits = rnd(s);
	double d;

	memcpy(&d, &bits, sizeof(d));
	if (!isfinite(d) || d == floor(d))
		d = (double)(int64_t)(rnd(s) % 2000000) / 64.0 + 1.0 / 128;
	return d;
}

static json_t *rnd_value(uint64_t *s, int depth)
{
	char buf[64];
	unsigned k = (unsigned)(rnd(s) % (depth > 3 ? 6 : 8));
	json_t *v;

	switch (k) {
	case 0:
		return json_null();
	case 1:
		return json_boolean(rnd(s) % 2);
	case 2:
		return json_integer((json_int_t)rnd(s) >> (rnd(s) % 64));
	case 3:
		return json_real(rnd_double(s));
	case 4:
	case 5:
		return rnd_string(s, buf, false);
	case 6:
		v = json_array();
		for (int i = (int)(rnd(s) % 5); i > 0; i--)
			json_array_append_new(v, rnd_value(s, depth + 1));
		return v;
	default:
		v = json_object();
		for (int i = (int)(rnd(s) % 7); i > 0; i--) {
			json_t *key = rnd_string(s, buf, true);

			json_object_setn_new(v, json_string_value(key),
					     json_string_length(key),
					     rnd_value(s, depth + 1));
			json_decref(key);
		}
		return v;
	}
}

/* The seed of a randomized test (GPULEDGER_SEED or fallback), printed. */
static uint64_t test_seed(const char *test, uint64_t fallback)
{
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e != NULL ? strtoull(e, NULL, 0) : fallback;

	fprintf(stderr, "%s: seed %llu\n", test, (unsigned long long)seed);
	return seed;
}

START_TEST(jcs_round_trip)
{
	uint64_t seed = test_seed("jcs_round_trip",
				  0x5eed0000ULL + (uint64_t)time(NULL)),
		 s;

	s = seed | 1;
	for (int i = 0; i < 3000; i++) {
		json_t *v = rnd_value(&s, 0), *back;
		char *a = json_canonical(v), *b;

		ck_assert_msg(a != NULL, "seed %llu: tree %d not written",
			      (unsigned long long)seed, i);
		json_error_t je;

		back = json_loads(a, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		ck_assert_msg(back != NULL && json_equal(back, v),
			      "seed %llu: %s does not read back (%s)",
			      (unsigned long long)seed, a,
			      back ? "differs" : je.text);
		b = json_canonical(back);
		ck_assert_msg(strcmp(a, b) == 0, "seed %llu: %s then %s",
			      (unsigned long long)seed, a, b);
		/* Members are in strictly increasing UTF-16 order (jansson
		 * keeps the order of the text). */
		if (json_is_object(back)) {
			const char *pk = NULL;
			size_t pl = 0;

			for (void *it = json_object_iter(back); it != NULL;
			     it = json_object_iter_next(back, it)) {
				const char *k = json_object_iter_key(it);
				size_t kl = json_object_iter_key_len(it);

				ck_assert_msg(pk == NULL || model__jcs_key_cmp(
								    pk, pl, k,
								    kl) < 0,
					      "seed %llu: %s out of order",
					      (unsigned long long)seed, a);
				pk = k;
				pl = kl;
			}
		}
		free(a);
		free(b);
		json_decref(back);
		json_decref(v);
	}
}
END_TEST

/* Every double: the text is the shortest that reads back as it. */
START_TEST(jcs_double_round_trip)
{
	uint64_t seed = test_seed("jcs_double_round_trip",
				  0xd0b1e000ULL + (uint64_t)time(NULL)),
		 s;

	s = seed | 1;
	for (int i = 0; i < 50000; i++) {
		uint64_t bits = rnd(&s);
		double d;
		char out[40], shorter[40];

		memcpy(&d, &bits, sizeof(d));
		if (!isfinite(d))
			continue;
		model__jcs_format_double(d, out);
		ck_assert_msg(strtod(out, NULL) == d || (d == 0),
			      "seed %llu: %a gives %s",
			      (unsigned long long)seed, d, out);
		/* One digit fewer never reads back. */
		{
			char sig[40];
			int n = 0, digits;

			for (const char *p = out; *p && *p != 'e'; p++)
				if (*p >= '0' && *p <= '9' && (n > 0 || *p != '0'))
					sig[n++] = *p;
			while (n > 0 && sig[n - 1] == '0')
				n--;
			digits = n;
			if (digits > 1) {
				snprintf(shorter, sizeof(shorter), "%.*e",
					 digits - 2, d);
				ck_assert_msg(strtod(shorter, NULL) != d,
					      "seed %llu: %s is shorter "
					      "than %s",
					      (unsigned long long)seed,
					      shorter, out);
			}
		}
	}
}
END_TEST

/* The event JSON writes integers beyond 2^53-1 as strings (DESIGN 4.4),
 * and reads them back (import of `log` output). */
/* model__jcs_put_string against a writer of one byte at a time, for long random
 * strings (the writer tests eight bytes at once): ASCII, the escapes,
 * controls, DEL and UTF-8 of every length at every offset; a broken UTF-8
 * sequence anywhere is refused. */
static size_t ref_escape(const unsigned char *s, size_t n, char *out)
{
	size_t o = 0;

	out[o++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			o += (size_t)sprintf(out + o, "\\%c", c);
		else if (c == '\b')
			o += (size_t)sprintf(out + o, "\\b");
		else if (c == '\f')
			o += (size_t)sprintf(out + o, "\\f");
		else if (c == '\n')
			o += (size_t)sprintf(out + o, "\\n");
		else if (c == '\r')
			o += (size_t)sprintf(out + o, "\\r");
		else if (c == '\t')
			o += (size_t)sprintf(out + o, "\\t");
		else if (c < 0x20)
			o += (size_t)sprintf(out + o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o++] = '"';
	return o;
}

START_TEST(jcs_string_reference)
{
	static const char *const pieces[] = {
		"a", "Z", " ", "~", "\x7f", "\"", "\\", "\n", "\t", "\x01",
		"\x1f", "/", "\xc3\xa9", "\xe2\x82\xac", "\xee\x80\x80",
		"\xf0\x9f\x98\x80", "abcdefgh", "0123456"};
	static const char *const broken[] = {"\xc3", "\x80", "\xed\xa0\x80",
					     "\xf5\x80\x80\x80", "\xc0\xaf"};
	uint64_t seed = test_seed("jcs_string_reference",
				  (uint64_t)time(NULL) | 1);
	uint64_t st = seed;
	unsigned char in[512];
	char want[4096];
	struct lg_buf b;

	lg_buf_init(&b, sizeof(want));
	for (int r = 0; r < 20000; r++) {
		size_t n = 0, pieces_n = rnd(&st) % 40, w;
		bool bad = r % 4 == 3;

		for (size_t i = 0; i < pieces_n; i++) {
			const char *p = pieces[rnd(&st) % NROWS(pieces)];

			memcpy(in + n, p, strlen(p));
			n += strlen(p);
		}
		if (bad) {
			const char *p = broken[rnd(&st) % NROWS(broken)];
			size_t at = n ? rnd(&st) % (n + 1) : 0;

			/* Inserted between whole pieces only where it stays
			 * broken: at the end, or before ASCII. */
			while (at < n && in[at] >= 0x80)
				at++;
			memmove(in + at + strlen(p), in + at, n - at);
			memcpy(in + at, p, strlen(p));
			n += strlen(p);
		}
		lg_buf_reset(&b);
		if (bad) {
			ck_assert_msg(model__jcs_put_string(
					      &b, (const char *)in, n) == -1,
				      "seed %llu run %d: broken UTF-8 accepted",
				      (unsigned long long)seed, r);
			continue;
		}
		ck_assert_int_eq(model__jcs_put_string(&b, (const char *)in, n),
				 0);
		w = ref_escape(in, n, want);
		ck_assert_msg(b.len == w && memcmp(b.p, want, w) == 0,
			      "seed %llu run %d: %.*s, want %.*s",
			      (unsigned long long)seed, r, (int)b.len, b.p,
			      (int)w, want);
	}
	lg_buf_release(&b);
}
END_TEST

START_TEST(jcs_event_big_ints)
{
	struct event ev = {.seq = 3,
			   .time_ns = 1767225600000000000LL,
			   .type = EV_BUDGET,
			   .ns = "tenant-a",
			   .key = "gpuclass.cozystack.io/devices",
			   .present = true,
			   .value = INT64_MAX},
		     back;
	char *text = event_jcs(&ev), *scratch = NULL;
	json_t *v;

	ck_assert_ptr_nonnull(strstr(text, "\"value\":\"9223372036854775807\""));
	v = json_loads(text, 0, NULL);
	ck_assert_int_eq(event_from_json(&back, v, &scratch, NULL), 0);
	ck_assert_int_eq(back.value, INT64_MAX);
	json_decref(v);
	/* A string in the safe range, or not a number, is refused. */
	v = json_loads("{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\","
		       "\"key\":\"gpuclass.cozystack.io/devices\","
		       "\"value\":\"12\"}",
		       0, NULL);
	ck_assert_int_ne(event_from_json(&back, v, &scratch, NULL), 0);
	json_decref(v);
	v = json_loads("{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\","
		       "\"key\":\"gpuclass.cozystack.io/devices\","
		       "\"value\":\"99999999999999999x\"}",
		       0, NULL);
	ck_assert_int_ne(event_from_json(&back, v, &scratch, NULL), 0);
	json_decref(v);
	free(scratch);
	free(text);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* model__jcs_own_form: what it accepts is its own canonical text.       */

/* Whether every part of v is one model__jcs_own_form must know: no reals,
 * integers of at most 15 digits, names with nothing to escape, no NUL,
 * shallow. */
static bool own_simple(const json_t *v, int depth)
{
	const char *k;
	const json_t *m;
	size_t i;

	if (depth >= 64)
		return false;
	switch (json_typeof(v)) {
	case JSON_REAL:
		return false;
	case JSON_INTEGER:
		return json_integer_value(v) > -1000000000000000LL &&
		       json_integer_value(v) < 1000000000000000LL;
	case JSON_STRING:
		return memchr(json_string_value(v), 0,
			      json_string_length(v)) == NULL;
	case JSON_ARRAY:
		json_array_foreach (v, i, m)
			if (!own_simple(m, depth + 1))
				return false;
		return true;
	case JSON_OBJECT:
		json_object_foreach ((json_t *)v, k, m) {
			for (const char *p = k; *p; p++)
				if ((unsigned char)*p < 0x20 || *p == '"' ||
				    *p == '\\')
					return false;
			if (!own_simple(m, depth + 1))
				return false;
		}
		return true;
	default:
		return true;
	}
}

/* Checks that an accepted text is what both readers read and both writers
 * write back; returns whether it was accepted. */
static bool own_check(uint64_t seed, const char *t, size_t n)
{
	json_t *a, *d;
	char *w0, *w1;

	if (!model__jcs_own_form(t, n))
		return false;
	a = json_loadb(t, n, JSON_DECODE_ANY, NULL);
	d = json_loadb_doubles(t, n, JSON_DECODE_ANY, NULL);
	ck_assert_msg(a != NULL && d != NULL && json_equal(a, d),
		      "seed %llu: %.*s accepted, but not read alike",
		      (unsigned long long)seed, (int)n, t);
	w0 = jcs_text(a, 0, JCS_TEXT_MAX_BYTES, NULL);
	w1 = jcs_text(a, JCS_INT_STRINGS, JCS_TEXT_MAX_BYTES, NULL);
	ck_assert_msg(w0 != NULL && w1 != NULL && strlen(w0) == n &&
			      memcmp(w0, t, n) == 0 && strcmp(w0, w1) == 0,
		      "seed %llu: %.*s accepted, but written %s",
		      (unsigned long long)seed, (int)n, t, w1 ? w1 : "(none)");
	free(w0);
	free(w1);
	json_decref(a);
	json_decref(d);
	return true;
}

/* Random trees, written canonically, then broken a byte at a time with the
 * bytes that matter (signs, digits, escapes, space, UTF-8 lead and trail
 * bytes, brackets): whatever is accepted writes back as itself, and every
 * simple tree's own text is accepted. */
START_TEST(jcs_own_form_property)
{
	static const char edits[] = "-09.eE\\u\"/ ,:{}[]Aaf1\x7f\xc3\xa9\xed"
				    "\xa0\x80\xf0\xc0";
	uint64_t seed = test_seed("jcs_own_form_property",
				  0x0f0e0000ULL + (uint64_t)time(NULL)),
		 s = seed | 1;
	int simple = 0, taken = 0, broken_taken = 0;

	for (int i = 0; i < 6000; i++) {
		json_t *v = rnd_value(&s, 0);
		char *t = jcs_text(v, (i & 1) ? JCS_INT_STRINGS : 0,
				   JCS_TEXT_MAX_BYTES, NULL);
		char buf[8192];
		size_t n;

		ck_assert_ptr_nonnull(t);
		n = strlen(t);
		if (own_simple(v, 0)) {
			simple++;
			ck_assert_msg(own_check(seed, t, n),
				      "seed %llu: %s not known canonical",
				      (unsigned long long)seed, t);
		} else {
			taken += own_check(seed, t, n);
		}
		for (int e = 0; e < 8 && n + 4 < sizeof(buf); e++) {
			size_t m = n, at;

			memcpy(buf, t, n);
			for (int k = 1 + (int)(rnd(&s) % 3); k > 0; k--) {
				char c = edits[rnd(&s) % (sizeof(edits) - 1)];

				at = m ? rnd(&s) % m : 0;
				switch (rnd(&s) % 3) {
				case 0: /* replace */
					if (m > 0)
						buf[at] = c;
					break;
				case 1: /* insert */
					memmove(buf + at + 1, buf + at, m - at);
					buf[at] = c;
					m++;
					break;
				default: /* delete */
					if (m > 0) {
						memmove(buf + at, buf + at + 1,
							m - at - 1);
						m--;
					}
				}
			}
			broken_taken += own_check(seed, buf, m);
		}
		free(t);
		json_decref(v);
	}
	fprintf(stderr,
		"jcs_own_form_property: %d simple trees, %d others and %d "
		"edited texts known canonical\n",
		simple, taken, broken_taken);
	ck_assert_int_gt(simple, 1000);
	ck_assert_int_gt(broken_taken, 100);
}
END_TEST

/* The texts each rule of model__jcs_own_form is about, one by one. */
static const struct {
	const char *t;
	bool own;
} own_rows[] = {
	{"{}", true},
	{"[]", true},
	{"null", true},
	{"\"\"", true},
	{"{\"a\":1,\"b\":[true,false,null]}", true},
	{"{\"b\":1,\"a\":2}", false},	   /* out of order */
	{"{\"a\":1,\"a\":1}", false},	   /* a duplicate */
	{"{\"a\": 1}", false},		   /* space */
	{" {}", false},
	{"{}x", false},
	{"-0", false},			   /* written 0 */
	{"0", true},
	{"-1", true},
	{"01", false},
	{"1.0", false},			   /* a real */
	{"1e5", false},
	{"999999999999999", true},	   /* 15 digits */
	{"1000000000000000", false},	   /* 16 */
	{"\"\\u0000\"", false},		   /* jansson refuses it */
	{"\"\\u001f\"", true},
	{"\"\\u001F\"", false},		   /* upper-case hex */
	{"\"\\u0008\"", false},		   /* written \b */
	{"\"\\b\\f\\n\\r\\t\\\"\\\\\"", true},
	{"\"\\/\"", false},		   /* written / */
	{"\"\\u0041\"", false},		   /* written A */
	{"\"\x7f\xc3\xa9\"", true},
	{"\"\xc0\xaf\"", false},	   /* overlong */
	{"\"\xed\xa0\x80\"", false},	   /* a surrogate */
	{"\"\x01\"", false},		   /* a raw control */
	{"{\"\\n\":1}", false},		   /* an escaped name */
	/* UTF-16 order: U+1F600 (a surrogate pair) before U+FB33. */
	{"{\"\xf0\x9f\x98\x80\":1,\"\xef\xac\xb3\":2}", true},
	{"{\"\xef\xac\xb3\":2,\"\xf0\x9f\x98\x80\":1}", false},
	{"[1,]", false},
	{"{\"a\"}", false},
	{"tru", false},
	{"", false},
};

START_TEST(jcs_own_form_rows)
{
	const char *t = own_rows[_i].t;

	ck_assert_msg(own_check(0, t, strlen(t)) == own_rows[_i].own,
		      "%s: known canonical %d, want %d", t, !own_rows[_i].own,
		      own_rows[_i].own);
}
END_TEST

/* Depth: 64 levels are known, 65 are not (and both are canonical). */
START_TEST(jcs_own_form_depth)
{
	char t[200];

	for (int d = 63; d <= 65; d++) {
		memset(t, '[', (size_t)d);
		memset(t + d, ']', (size_t)d);
		ck_assert_int_eq(own_check(0, t, 2 * (size_t)d), d <= 64);
	}
}
END_TEST

/* The member found is the member's own canonical text, for every name of
 * random objects, and nothing for a name they lack. */
START_TEST(jcs_own_form_member_finds)
{
	uint64_t seed = test_seed("jcs_own_form_member_finds",
				  0x0f0f0000ULL + (uint64_t)time(NULL)),
		 s = seed | 1;
	int found = 0;

	for (int i = 0; i < 8000; i++) {
		json_t *v = rnd_value(&s, 0), *m;
		char *t = json_canonical(v);
		const char *k;
		size_t at, len;

		if (!json_is_object(v) || !model__jcs_own_form(t, strlen(t))) {
			free(t);
			json_decref(v);
			continue;
		}
		json_object_foreach (v, k, m) {
			char *want = json_canonical(m);

			ck_assert(model__jcs_own_form_member(t, strlen(t), k, &at,
						      &len));
			ck_assert_msg(len == strlen(want) &&
					      memcmp(t + at, want, len) == 0,
				      "seed %llu: %s in %s: %.*s, want %s",
				      (unsigned long long)seed, k, t, (int)len,
				      t + at, want);
			free(want);
			found++;
		}
		ck_assert(model__jcs_own_form_member(t, strlen(t), "\x01none", &at,
					      &len));
		ck_assert_uint_eq(len, 0);
		free(t);
		json_decref(v);
	}
	ck_assert_int_gt(found, 100);
}
END_TEST

MODEL_PART(jcs)
{
	TCase *tc = tcase_create("jcs");

	tcase_set_timeout(tc, 60);

	tcase_add_loop_test(tc, jcs_examples, 0, NROWS(jcs_rows));
	tcase_add_loop_test(tc, jcs_numbers, 0, NROWS(num_rows));
	tcase_add_test(tc, jcs_refuses);
	tcase_add_test(tc, jcs_int_strings);
	tcase_add_test(tc, jcs_round_trip);
	tcase_add_test(tc, jcs_double_round_trip);
	tcase_add_test(tc, jcs_event_big_ints);
	tcase_add_test(tc, jcs_string_reference);
	tcase_add_test(tc, jcs_own_form_property);
	tcase_add_loop_test(tc, jcs_own_form_rows, 0, NROWS(own_rows));
	tcase_add_test(tc, jcs_own_form_depth);
	tcase_add_test(tc, jcs_own_form_member_finds);
	suite_add_tcase(s, tc);
}
