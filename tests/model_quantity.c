/*
 * Tests of model/quantity.c (DESIGN 5.1). Most rows come from upstream
 * apimachinery quantity_test.go (TestQuantityParse, TestParseQuantityString,
 * TestQuantityParseEmit, TestQuantityCmp, TestQuantityRoundUp); the expected
 * text is our canonical form: exact, with the largest of "" m u n that keeps
 * an integer.
 */
#include "tests/model_tests.h"

#include "model/model_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NROWS(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int parse(struct quantity *q, const char *s)
{
	return model__quantity_parse(q, s, strlen(s), NULL);
}

static void must_parse(struct quantity *q, const char *s)
{
	struct lg_error err = {0};
	int rc = model__quantity_parse(q, s, strlen(s), &err);

	ck_assert_msg(rc == 0, "parse \"%s\": %d %s", s, rc, err.msg);
}

static const char *fmt(const struct quantity *q, char *buf, size_t cap)
{
	size_t n = model__quantity_format(q, buf, cap);

	ck_assert_uint_lt(n, cap);
	ck_assert_uint_eq(strlen(buf), n);
	return buf;
}

/* ---------------------------------------------------------------------- */
/* Valid strings and their exact canonical value. */

static const struct {
	const char *in, *out;
} valid[] = {
	/* TestQuantityParse: zeros. */
	{"0", "0"},
	{"0n", "0"},
	{"0u", "0"},
	{"0m", "0"},
	{"0Ki", "0"},
	{"0k", "0"},
	{"0Mi", "0"},
	{"0M", "0"},
	{"0Gi", "0"},
	{"0G", "0"},
	{"0Ti", "0"},
	{"0T", "0"},
	{"1", "1"},
	/* Binary suffixes. */
	{"1Ki", "1024"},
	{"8Ki", "8192"},
	{"7Mi", "7340032"},
	{"6Gi", "6442450944"},
	{"5Ti", "5497558138880"},
	{"4Pi", "4503599627370496"},
	{"3Ei", "3458764513820540928"},
	{"10Ti", "10995116277760"},
	{"100Ti", "109951162777600"},
	/* Decimal suffixes. */
	{"5n", "5n"},
	{"4u", "4u"},
	{"3m", "3m"},
	{"9", "9"},
	{"8k", "8000"},
	{"50k", "50000"},
	{"7M", "7000000"},
	{"6G", "6000000000"},
	{"5T", "5000000000000"},
	{"40T", "40000000000000"},
	{"300T", "300000000000000"},
	{"2P", "2000000000000000"},
	{"1E", "1000000000000000000"},
	/* Decimal exponents. */
	{"1E-3", "1m"},
	{"1e3", "1000"},
	{"1E6", "1000000"},
	{"1e9", "1000000000"},
	{"1E12", "1000000000000"},
	{"1e15", "1000000000000000"},
	{"1E18", "1000000000000000000"},
	{"1e14", "100000000000000"},
	{"1e13", "10000000000000"},
	{"100.035k", "100035"},
	/* Things that look like floating point. */
	{"0.001", "1m"},
	{"0.0005k", "500m"},
	{"0.005", "5m"},
	{"0.05", "50m"},
	{"0.5", "500m"},
	{"0.00050k", "500m"},
	{"0.00500", "5m"},
	{"0.05000", "50m"},
	{"0.50000", "500m"},
	{"0.5e0", "500m"},
	{"0.5e-1", "50m"},
	{"0.5e-2", "5m"},
	{"10.035M", "10035000"},
	{"1.2e3", "1200"},
	{"1.3E+6", "1300000"},
	{"1.40e9", "1400000000"},
	{"1.53E12", "1530000000000"},
	{"1.6e15", "1600000000000000"},
	{"1.7E18", "1700000000000000000"},
	{"9.01", "9010m"},
	{"8.1k", "8100"},
	{"7.123456M", "7123456"},
	{"6.987654321G", "6987654321"},
	{"5.444T", "5444000000000"},
	{"40.1T", "40100000000000"},
	{"300.2T", "300200000000000"},
	{"2.5P", "2500000000000000"},
	{"1.01E", "1010000000000000000"},
	/* Things that saturate or round up to the nano. */
	{"3.001n", "4n"},
	{"1.1E-9", "2n"},
	{"0.0000000001", "1n"},
	{"0.0000000005", "1n"},
	{"0.00000000050", "1n"},
	{"0.5e-9", "1n"},
	{"0.9n", "1n"},
	{"0.00000012345", "124n"},
	{"0.00000012354", "124n"},
	{"9Ei", "9223372036854775807"},
	{"9223372036854775807Ki", "9223372036854775807"},
	{"8Ei", "9223372036854775807"},
	{"12E", "12000000000000000000"},
	/* Fractional binary. */
	{"100.035Ki", "102435840m"},
	{"0.5Mi", "524288"},
	{"0.05Gi", "53687091200m"},
	{"0.025Ti", "27487790694400m"},
	{"1.5Ki", "1536"},
	{"1.1Ki", "1126400m"},
	/* Things written by trolls, and TestQuantityParseEmit. */
	{"0.000000000001Ki", "2n"},
	{".001", "1m"},
	{".0001k", "100m"},
	{"1.", "1"},
	{"1.G", "1000000000"},
	{".001Ki", "1024m"},
	{".000001Ki", "1024u"},
	{".000000001Ki", "1024n"},
	/* Signs and the edges of the grammar. */
	{"+5", "5"},
	{"-5", "-5"},
	{".5", "500m"},
	{"5.", "5"},
	{"0.1m", "100u"},
	{"1E3", "1000"},
	{"1e+3", "1000"},
	{"1e03", "1000"},
	{"1e-0", "1"},
	{"-0", "0"},
	{"+0", "0"},
	{"000", "0"},
	{"007", "7"},
	{"-1.5", "-1500m"},
	{"-9Ei", "-9223372036854775807"},
	{"-0.9n", "-1n"},
	{"-3.001n", "-4n"},
	{"1E", "1000000000000000000"},
	{"1Ei", "1152921504606846976"},
	/* Upstream's scanner accepts a number without digits as zero
	 * (TestParseQuantityString: "." and "-."). */
	{".", "0"},
	{"-.", "0"},
	{"-", "0"},
	{"+", "0"},
	{"k", "0"},
	{"Ki", "0"},
	{"e3", "0"},
	{"-.m", "0"},
	/* Decimal values are not capped. */
	{"18446744073709551616", "18446744073709551616"},
	{"9223372036854775808", "9223372036854775808"},
	{"1e30", "1000000000000000000000000000000"},
	{"1000E", "1000000000000000000000"},
	/* Exponents far away: zero stays zero, tiny rounds up to 1n. */
	{"0e999999999", "0"},
	{"0e9223372036854775807", "0"},
	{"1e-999999999", "1n"},
	{"1e-9223372036854775808", "1n"},
	{"-1e-9223372036854775808", "-1n"},
	{"1.000000001e-18", "1n"},
};

START_TEST(parse_valid)
{
	struct quantity q;
	char buf[512];

	must_parse(&q, valid[_i].in);
	ck_assert_msg(strcmp(fmt(&q, buf, sizeof(buf)), valid[_i].out) == 0,
		      "%s: got %s, want %s", valid[_i].in, buf, valid[_i].out);
}
END_TEST

/* format(parse(s)) parses back to an equal quantity and formats the same. */
START_TEST(format_round_trip)
{
	struct quantity q, r;
	char a[512], b[512];

	must_parse(&q, valid[_i].in);
	must_parse(&r, fmt(&q, a, sizeof(a)));
	ck_assert_int_eq(model__quantity_cmp(&q, &r), 0);
	ck_assert_str_eq(fmt(&r, b, sizeof(b)), a);
	/* The sign and the magnitude are canonical: equal values are equal
	 * bytes apart from the binary flag. */
	r.binary = q.binary;
	ck_assert(memcmp(&q, &r, sizeof(q)) == 0);
}
END_TEST

/* The negative and explicitly positive versions of every valid row. */
START_TEST(parse_signs)
{
	struct quantity q, neg, pos;
	char in[128], buf[512], want[512];
	const char *s = valid[_i].in;

	if (s[0] == '-' || s[0] == '+')
		return;
	must_parse(&q, s);
	snprintf(in, sizeof(in), "-%s", s);
	must_parse(&neg, in);
	snprintf(want, sizeof(want), "%s%s", q.sign != 0 ? "-" : "",
		 valid[_i].out);
	ck_assert_str_eq(fmt(&neg, buf, sizeof(buf)), want);
	ck_assert_int_eq(model__quantity_is_negative(&neg), q.sign != 0);
	ck_assert_int_eq(model__quantity_cmp(&neg, &q), q.sign != 0 ? -1 : 0);
	snprintf(in, sizeof(in), "+%s", s);
	must_parse(&pos, in);
	ck_assert_int_eq(model__quantity_cmp(&pos, &q), 0);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Invalid strings. */

static const struct {
	const char *in;
	int rc;
} invalid[] = {
	/* TestQuantityParse. */
	{"", LG_EINVAL},
	{"1.1.M", LG_EINVAL},
	{"1+1.0M", LG_EINVAL},
	{"0.1mi", LG_EINVAL},
	{"0.1am", LG_EINVAL},
	{"aoeu", LG_EINVAL},
	{".5i", LG_EINVAL},
	{"1i", LG_EINVAL},
	{"-3.01i", LG_EINVAL},
	{"-3.01e-", LG_EINVAL},
	{" 1", LG_EINVAL},
	{"1 ", LG_EINVAL},
	{"Non-Numeric", LG_EINVAL},
	/* No trimming at all (Appendix A). */
	{" 8", LG_EINVAL},
	{"8 ", LG_EINVAL},
	{"\t8", LG_EINVAL},
	{"8\n", LG_EINVAL},
	/* Suffixes: only the table or e/E with a signed integer. */
	{"1e", LG_EINVAL},
	{"e", LG_EINVAL},
	{"i", LG_EINVAL},
	{"1ki", LG_EINVAL},
	{"1KI", LG_EINVAL},
	{"1K", LG_EINVAL},
	{"1kK", LG_EINVAL},
	{"1e3.5", LG_EINVAL},
	{"1m3", LG_EINVAL},
	{"1e+", LG_EINVAL},
	{"1e-", LG_EINVAL},
	{"1ee3", LG_EINVAL},
	{"1E+-3", LG_EINVAL},
	{"1EE", LG_EINVAL},
	{"1Ei3", LG_EINVAL},
	{"1e3k", LG_EINVAL},
	{"1mm", LG_EINVAL},
	{"1nm", LG_EINVAL},
	{"1-", LG_EINVAL},
	{"1+", LG_EINVAL},
	/* Numbers. */
	{"--1", LG_EINVAL},
	{"+-1", LG_EINVAL},
	{"0x10", LG_EINVAL},
	{"1,5", LG_EINVAL},
	{"1_000", LG_EINVAL},
	{"1..", LG_EINVAL},
	{"..1", LG_EINVAL},
	{"\xe2\x88\x9e", LG_EINVAL},
	{"1e3_0", LG_EINVAL},
	/* An exponent that is not an int64 (strconv.ParseInt fails). */
	{"1e9223372036854775808", LG_EINVAL},
	{"1e-9223372036854775809", LG_EINVAL},
	{"0e99999999999999999999", LG_EINVAL},
	/* Too large for the representation. */
	{"1e377", LG_ERANGE},
	{"3e376", LG_ERANGE},
	{"1e9223372036854775807", LG_ERANGE},
	{"-1e999999999", LG_ERANGE},
	{"1e999999999P", LG_EINVAL},
};

START_TEST(parse_invalid)
{
	struct quantity q;
	struct lg_error err = {0};
	int rc;

	memset(&q, 0x5a, sizeof(q));
	rc = model__quantity_parse(&q, invalid[_i].in, strlen(invalid[_i].in),
				   &err);
	ck_assert_msg(rc == invalid[_i].rc, "\"%s\": got %d, want %d",
		      invalid[_i].in, rc, invalid[_i].rc);
	ck_assert_int_eq(err.code, rc);
	ck_assert(err.msg[0] != '\0');
	/* A failed parse leaves a valid zero, never garbage. */
	ck_assert_int_eq(q.sign, 0);
	ck_assert_int_eq(q.nlimbs, 0);
	ck_assert(model__quantity_parse(&q, invalid[_i].in,
					strlen(invalid[_i].in),
					NULL) == invalid[_i].rc);
}
END_TEST

/* Length-delimited input: bytes past len are not read, a NUL inside is an
 * invalid character, and the largest representable values still parse. */
START_TEST(parse_edges)
{
	struct quantity q;
	char buf[512], big[1200];
	size_t n;

	ck_assert_int_eq(model__quantity_parse(&q, "12k", 2, NULL), 0);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "12");
	ck_assert_int_eq(model__quantity_parse(&q, "1\0", 2, NULL), LG_EINVAL);
	ck_assert_int_eq(model__quantity_parse(&q, NULL, 0, NULL), LG_EINVAL);
	ck_assert_int_eq(model__quantity_parse(&q, "1Kix", 3, NULL), 0);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "1024");

	/* 1.000...0001 with 500 zeros: exact, rounds up to the next nano. */
	n = (size_t)snprintf(big, sizeof(big), "1.");
	memset(big + n, '0', 500);
	strcpy(big + n + 500, "1");
	must_parse(&q, big);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "1000000001n");
	/* 0.000...0001 with 1000 zeros and a binary suffix is 1n. */
	n = (size_t)snprintf(big, sizeof(big), "0.");
	memset(big + n, '0', 1000);
	strcpy(big + n + 1000, "1Ki");
	ck_assert_int_eq(parse(&q, big), 0);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "1n");
	/* Trailing fraction zeros never overflow. */
	n = (size_t)snprintf(big, sizeof(big), "3.");
	memset(big + n, '0', 1000);
	strcpy(big + n + 1000, "Ki");
	must_parse(&q, big);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "3072");
	/* 400 significant digits do not fit. */
	memset(big, '9', 400);
	big[400] = '\0';
	ck_assert_int_eq(parse(&q, big), LG_ERANGE);
	/* ...but 400 integer digits with a binary suffix are capped. */
	strcpy(big + 400, "Ki");
	must_parse(&q, big);
	ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "9223372036854775807");

	/* A far exponent against as many digits: 10^150004 * 10^-150000. */
	{
		char *huge = malloc(150100);

		ck_assert_ptr_nonnull(huge);
		huge[0] = '1';
		memset(huge + 1, '0', 150004);
		strcpy(huge + 150005, "e-150000");
		must_parse(&q, huge);
		ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "10000");
		strcpy(huge + 150005, "e-150014");
		must_parse(&q, huge);
		ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "1n");
		strcpy(huge + 150005, "e-150013");
		must_parse(&q, huge);
		ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "1n");
		strcpy(huge + 150005, "e-150012");
		must_parse(&q, huge);
		ck_assert_str_eq(fmt(&q, buf, sizeof(buf)), "10n");
		free(huge);
	}

	/* 10^376 is the largest power of ten that fits; it prints in full. */
	must_parse(&q, "1e376");
	n = model__quantity_format(&q, buf, sizeof(buf));
	ck_assert_uint_eq(n, 377);
	ck_assert_int_eq(buf[0], '1');
	ck_assert_uint_eq(strspn(buf + 1, "0"), 376);
	must_parse(&q, "-2e376");
	ck_assert_uint_eq(model__quantity_format(&q, buf, sizeof(buf)), 378);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Value() and MilliValue(): ceilings, LG_ERANGE outside int64. */

static const struct {
	const char *in;
	int vrc;
	int64_t value;
	int mrc;
	int64_t milli;
} values[] = {
	{"0", 0, 0, 0, 0},
	{"-0", 0, 0, 0, 0},
	{"1", 0, 1, 0, 1000},
	{"1.5", 0, 2, 0, 1500},
	{"-1.5", 0, -1, 0, -1500},
	{"1m", 0, 1, 0, 1},
	{"0.1m", 0, 1, 0, 1},
	{"-0.1m", 0, 0, 0, 0},
	{"1n", 0, 1, 0, 1},
	{"-1n", 0, 0, 0, 0},
	{"999999999n", 0, 1, 0, 1000},
	{"1000000001n", 0, 2, 0, 1001},
	/* TestQuantityRoundUp rows, rounded to units and to milli. */
	{"9.01", 0, 10, 0, 9010},
	{"-9.01", 0, -9, 0, -9010},
	{"9.0001", 0, 10, 0, 9001},
	{"-9.0001", 0, -9, 0, -9000},
	{"1Ki", 0, 1024, 0, 1024000},
	{"1Mi", 0, 1048576, 0, 1048576000},
	{"0.000000000001Ki", 0, 1, 0, 1},
	{"9223372036854775807", 0, INT64_MAX, LG_ERANGE, 0},
	{"9223372036854775806.5", 0, INT64_MAX, LG_ERANGE, 0},
	{"9223372036854775807.5", LG_ERANGE, 0, LG_ERANGE, 0},
	{"9223372036854775808", LG_ERANGE, 0, LG_ERANGE, 0},
	{"-9223372036854775808", 0, INT64_MIN, LG_ERANGE, 0},
	{"-9223372036854775808.5", 0, INT64_MIN, LG_ERANGE, 0},
	{"-9223372036854775809", LG_ERANGE, 0, LG_ERANGE, 0},
	{"9223372036854775.807", 0, 9223372036854776, 0, INT64_MAX},
	{"9223372036854775.8069", 0, 9223372036854776, 0, INT64_MAX},
	{"9223372036854775.8071", 0, 9223372036854776, LG_ERANGE, 0},
	{"-9223372036854775.808", 0, -9223372036854775, 0, INT64_MIN},
	{"-9223372036854775.809", 0, -9223372036854775, LG_ERANGE, 0},
	{"9Ei", 0, INT64_MAX, LG_ERANGE, 0},
	{"-9Ei", 0, -INT64_MAX, LG_ERANGE, 0},
	{"8E", 0, 8000000000000000000, LG_ERANGE, 0},
	{"1e30", LG_ERANGE, 0, LG_ERANGE, 0},
	{"-1e30", LG_ERANGE, 0, LG_ERANGE, 0},
	{"1e376", LG_ERANGE, 0, LG_ERANGE, 0},
};

START_TEST(value_milli)
{
	struct quantity q;
	int64_t v = 42, m = 42;
	int rv, rm;

	must_parse(&q, values[_i].in);
	rv = model__quantity_value(&q, &v);
	rm = model__quantity_milli_value(&q, &m);
	ck_assert_msg(rv == values[_i].vrc, "%s: value rc %d", values[_i].in,
		      rv);
	ck_assert_msg(rm == values[_i].mrc, "%s: milli rc %d", values[_i].in,
		      rm);
	if (rv == 0)
		ck_assert_int_eq(v, values[_i].value);
	else
		ck_assert_int_eq(v, 42); /* untouched on error */
	if (rm == 0)
		ck_assert_int_eq(m, values[_i].milli);
	else
		ck_assert_int_eq(m, 42);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Add, compare, sign. */

static const struct {
	const char *a, *b, *sum;
} sums[] = {
	{"1", "1", "2"},
	{"1", "-1", "0"},
	{"-1", "500m", "-500m"},
	{"500m", "-1", "-500m"},
	{"0", "-3", "-3"},
	{"-3", "0", "-3"},
	{"0", "0", "0"},
	{"1n", "999999999n", "1"},
	{"-1n", "-999999999n", "-1"},
	{"2", "-1n", "1999999999n"},
	{"-2", "1n", "-1999999999n"},
	{"4294967296n", "-1n", "4294967295n"},
	{"18446744073709551616n", "-1n", "18446744073709551615n"},
	{"-18446744073709551616n", "18446744073709551617n", "1n"},
	{"9Ei", "9Ei", "18446744073709551614"},
	{"-2", "-3", "-5"},
	{"100m", "1Gi", "1073741824100m"},
	{"1e30", "-1e30", "0"},
	{"2e376", "-1e376", "1e376"},
	{"1e376", "1e376", "2e376"},
	{"1e30", "1n", "1000000000000000000000000000000000000001n"},
};

START_TEST(add)
{
	struct quantity a, b, want, back, nb;
	char buf[512], neg[128];

	must_parse(&a, sums[_i].a);
	must_parse(&b, sums[_i].b);
	must_parse(&want, sums[_i].sum);
	ck_assert_int_eq(model__quantity_add(&a, &b), 0);
	ck_assert_msg(model__quantity_cmp(&a, &want) == 0, "%s + %s = %s",
		      sums[_i].a, sums[_i].b, fmt(&a, buf, sizeof(buf)));
	/* Commutative, and subtracting b again gives a back. */
	must_parse(&back, sums[_i].b);
	must_parse(&nb, sums[_i].a);
	ck_assert_int_eq(model__quantity_add(&back, &nb), 0);
	ck_assert_int_eq(model__quantity_cmp(&back, &want), 0);
	if (sums[_i].b[0] == '-')
		snprintf(neg, sizeof(neg), "%s", sums[_i].b + 1);
	else
		snprintf(neg, sizeof(neg), "-%s", sums[_i].b);
	must_parse(&nb, neg);
	ck_assert_int_eq(model__quantity_add(&a, &nb), 0);
	must_parse(&back, sums[_i].a);
	ck_assert_int_eq(model__quantity_cmp(&a, &back), 0);
}
END_TEST

START_TEST(add_overflow)
{
	struct quantity a, b, before;

	must_parse(&a, "2e376");
	must_parse(&b, "2e376");
	before = a;
	ck_assert_int_eq(model__quantity_add(&a, &b), LG_ERANGE);
	ck_assert(memcmp(&a, &before, sizeof(a)) == 0);
	must_parse(&a, "-2e376");
	must_parse(&b, "-2e376");
	before = a;
	ck_assert_int_eq(model__quantity_add(&a, &b), LG_ERANGE);
	ck_assert(memcmp(&a, &before, sizeof(a)) == 0);
	/* Opposite signs never overflow. */
	must_parse(&b, "2e376");
	ck_assert_int_eq(model__quantity_add(&a, &b), 0);
	ck_assert_int_eq(a.sign, 0);
	/* A zeroed struct is zero and adds like one. */
	model__quantity_zero(&a);
	must_parse(&b, "-7m");
	ck_assert_int_eq(model__quantity_add(&a, &b), 0);
	ck_assert_int_eq(model__quantity_cmp(&a, &b), 0);
	ck_assert(model__quantity_is_negative(&a));
}
END_TEST

static const struct {
	const char *a, *b;
	int cmp;
} cmps[] = {
	/* TestQuantityCmp and TestQuantityCmpInt64AndDec. */
	{"0", "0", 0},
	{"100m", "50m", 1},
	{"10000T", "100Gi", 1},
	{"9.01", "9.01", 0},
	{"9", "9.01", -1},
	{"9.01", "9", 1},
	{"800m", "1", -1},
	{"800m", "790m", 1},
	{"0", "-0", 0},
	{"1Ki", "1024", 0},
	{"1k", "1Ki", -1},
	{"1000000000n", "1", 0},
	{"-1", "1", -1},
	{"-2", "-1", -1},
	{"-1n", "0", -1},
	{"1n", "0", 1},
	{"1e30", "9Ei", 1},
	{"-1e30", "-9Ei", -1},
	{"9223372036854775807", "9Ei", 0},
	{"4294967296n", "4294967295n", 1},
	{"18446744073709551616n", "18446744073709551617n", -1},
};

START_TEST(cmp)
{
	struct quantity a, b;

	must_parse(&a, cmps[_i].a);
	must_parse(&b, cmps[_i].b);
	ck_assert_msg(model__quantity_cmp(&a, &b) == cmps[_i].cmp, "%s <=> %s",
		      cmps[_i].a, cmps[_i].b);
	ck_assert_int_eq(model__quantity_cmp(&b, &a), -cmps[_i].cmp);
	ck_assert_int_eq(model__quantity_cmp(&a, &a), 0);
}
END_TEST

START_TEST(sign)
{
	static const struct {
		const char *in;
		bool neg;
	} rows[] = {
		{"-1", true},  {"-0", false},	{"0", false},
		{"1n", false}, {"-1n", true},	{"-0.0000000001", true},
		{"-.", false}, {"-1e30", true},
	};
	struct quantity q;

	for (int i = 0; i < NROWS(rows); i++) {
		must_parse(&q, rows[i].in);
		ck_assert_msg(model__quantity_is_negative(&q) == rows[i].neg,
			      "%s", rows[i].in);
	}
	memset(&q, 0x5a, sizeof(q));
	model__quantity_zero(&q);
	ck_assert(!model__quantity_is_negative(&q));
	ck_assert_int_eq(q.nlimbs, 0);
	ck_assert_int_eq(q.binary, 0);
}
END_TEST

/* model__quantity_format behaves like snprintf when the buffer is short. */
START_TEST(format_truncation)
{
	struct quantity q;
	char buf[8];

	must_parse(&q, "-1.5");
	memset(buf, 'x', sizeof(buf));
	ck_assert_uint_eq(model__quantity_format(&q, buf, 3), 6);
	ck_assert_str_eq(buf, "-1");
	ck_assert_int_eq(buf[3], 'x');
	ck_assert_uint_eq(model__quantity_format(&q, buf, 1), 6);
	ck_assert_str_eq(buf, "");
	ck_assert_uint_eq(model__quantity_format(&q, NULL, 0), 6);
	ck_assert_uint_eq(model__quantity_format(&q, buf, 7), 6);
	ck_assert_str_eq(buf, "-1500m");
	model__quantity_zero(&q);
	ck_assert_uint_eq(model__quantity_format(&q, buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "0");
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Exact non-negative integers. */

static const struct {
	const char *in;
	int rc;
	int64_t v;
} exacts[] = {
	{"8", 0, 8},
	{"1k", 0, 1000},
	{"2Ki", 0, 2048},
	{"9Ei", 0, INT64_MAX},
	{"0", 0, 0},
	{"-0", 0, 0},
	{"1.0", 0, 1},
	{"1000m", 0, 1},
	{"0.5Ki", 0, 512},
	{"1e3", 0, 1000},
	{"9223372036854775807", 0, INT64_MAX},
	{"1e19", LG_ERANGE, 0},
	{"9223372036854775808", LG_ERANGE, 0},
	{"1e30", LG_ERANGE, 0},
	{"1.5", LG_EINVAL, 0},
	{"500m", LG_EINVAL, 0},
	{"1n", LG_EINVAL, 0},
	{"0.1Ki", LG_EINVAL, 0},
	{"-1", LG_EINVAL, 0},
	{"-1e30", LG_EINVAL, 0},
	{"-1n", LG_EINVAL, 0},
};

START_TEST(exact_uint)
{
	struct quantity q;
	int64_t v = 42;
	int rc;

	must_parse(&q, exacts[_i].in);
	rc = model__quantity_exact_uint(&q, &v);
	ck_assert_msg(rc == exacts[_i].rc, "%s: rc %d", exacts[_i].in, rc);
	ck_assert_int_eq(v, rc == 0 ? exacts[_i].v : 42);
}
END_TEST

static const struct {
	const char *json;
	int rc;
	int64_t v;
	const char *msg; /* a part of the message, or NULL */
} jsons[] = {
	{"\"8\"", 0, 8, NULL},
	{"\"2Ki\"", 0, 2048, NULL},
	{"\"9Ei\"", 0, INT64_MAX, NULL},
	{"\"1k\"", 0, 1000, NULL},
	{"\" 8\"", LG_EINVAL, 0, "\" 8\""},
	{"\"8 \"", LG_EINVAL, 0, NULL},
	{"\"\"", LG_EINVAL, 0, NULL},
	{"\"eight\"", LG_EINVAL, 0, "eight"},
	{"\"1.5\"", LG_EINVAL, 0, "quantity \"1.5\" is not an integer"},
	{"\"500m\"", LG_EINVAL, 0, "not an integer"},
	{"\"-1\"", LG_EINVAL, 0, "quantity \"-1\" is negative"},
	{"\"1e19\"", LG_ERANGE, 0, "above 2^63-1"},
	{"\"1e999\"", LG_ERANGE, 0, "too large"},
	{"8", 0, 8, NULL},
	{"0", 0, 0, NULL},
	{"9223372036854775807", 0, INT64_MAX, NULL},
	{"-1", LG_EINVAL, 0, "negative"},
	{"8.0", 0, 8, NULL},
	{"-0.0", 0, 0, NULL},
	{"1e3", 0, 1000, NULL},
	{"9007199254740992.0", 0, 9007199254740992, NULL},
	{"9007199254740994.0", LG_EINVAL, 0, "exactly"},
	{"2.5", LG_EINVAL, 0, "number 2.5 is not an integer"},
	{"-1.0", LG_EINVAL, 0, "negative"},
	{"-2.5", LG_EINVAL, 0, "not an integer"},
	{"1e19", LG_ERANGE, 0, "above 2^63-1"},
	{"1e300", LG_ERANGE, 0, NULL},
	{"true", LG_EINVAL, 0, "boolean"},
	{"false", LG_EINVAL, 0, "boolean"},
	{"null", LG_EINVAL, 0, "null"},
	{"{}", LG_EINVAL, 0, "object"},
	{"{\"a\": 1}", LG_EINVAL, 0, "object"},
	{"[]", LG_EINVAL, 0, "array"},
	{"[8]", LG_EINVAL, 0, "array"},
};

START_TEST(json_uint)
{
	json_t *v = tj(jsons[_i].json);
	struct lg_error err = {0};
	int64_t out = 42;
	int rc = model__quantity_json_uint(v, &out, &err);

	ck_assert_msg(rc == jsons[_i].rc, "%s: rc %d (%s)", jsons[_i].json, rc,
		      err.msg);
	if (rc == 0) {
		ck_assert_int_eq(out, jsons[_i].v);
	} else {
		ck_assert_int_eq(out, 42);
		ck_assert_int_eq(err.code, rc);
		ck_assert(err.msg[0] != '\0');
	}
	if (jsons[_i].msg != NULL)
		ck_assert_msg(strstr(err.msg, jsons[_i].msg) != NULL,
			      "%s: message \"%s\" lacks \"%s\"", jsons[_i].json,
			      err.msg, jsons[_i].msg);
	/* err may be NULL. */
	ck_assert_int_eq(model__quantity_json_uint(v, &out, NULL), rc);
	json_decref(v);
}
END_TEST

START_TEST(json_uint_null)
{
	struct lg_error err = {0};
	int64_t out = 42;

	ck_assert_int_eq(model__quantity_json_uint(NULL, &out, &err),
			 LG_EINVAL);
	ck_assert_int_eq(out, 42);
	ck_assert(err.msg[0] != '\0');
}
END_TEST

/* ---------------------------------------------------------------------- */
/* eval ParseQuantity. */

static const struct {
	const char *input;
	int rc;
	const char *output;
} evals[] = {
	{"\"1Ki\"", 0, "{\"value\": 1024, \"milli\": 1024000}"},
	{"\"1e30\"", 0, "{\"value\": null, \"milli\": null}"},
	{"\"1e999\"", 0, "{\"value\": null, \"milli\": null}"},
	{"\"-1e999\"", 0, "{\"value\": null, \"milli\": null}"},
	{"\"1.5\"", 0, "{\"value\": 2, \"milli\": 1500}"},
	{"\"-1.5\"", 0, "{\"value\": -1, \"milli\": -1500}"},
	{"\"0.1m\"", 0, "{\"value\": 1, \"milli\": 1}"},
	{"\"0\"", 0, "{\"value\": 0, \"milli\": 0}"},
	{"\"9223372036854775807\"", 0,
	 "{\"value\": 9223372036854775807, \"milli\": null}"},
	{"\"9Ei\"", 0, "{\"value\": 9223372036854775807, \"milli\": null}"},
	{"\"9223372036854775.807\"", 0,
	 "{\"value\": 9223372036854776, \"milli\": 9223372036854775807}"},
	{"5", LG_EINVAL, NULL},
	{"5.5", LG_EINVAL, NULL},
	{"null", LG_EINVAL, NULL},
	{"[\"1\"]", LG_EINVAL, NULL},
	{"{\"q\": \"1\"}", LG_EINVAL, NULL},
	{"\"abc\"", LG_EINVAL, NULL},
	{"\" 1\"", LG_EINVAL, NULL},
	{"\"\"", LG_EINVAL, NULL},
};

START_TEST(eval_rows)
{
	json_t *in = tj(evals[_i].input), *out = NULL, *want;
	struct lg_error err = {0};
	int rc = model__eval_parse_quantity(NULL, in, &out, &err);

	ck_assert_msg(rc == evals[_i].rc, "%s: rc %d (%s)", evals[_i].input, rc,
		      err.msg);
	if (rc == 0) {
		want = tj(evals[_i].output);
		ck_assert_msg(json_equal(out, want), "%s: got %s",
			      evals[_i].input,
			      json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS));
		ck_assert_int_eq(json_object_size(out), 2);
		json_decref(want);
		json_decref(out);
	} else {
		ck_assert_ptr_null(out);
		ck_assert_int_eq(err.code, rc);
		ck_assert(err.msg[0] != '\0');
	}
	json_decref(in);
}
END_TEST

/* ---------------------------------------------------------------------- */

static void add_loop(Suite *s, const char *name, const TTest *t, int n)
{
	TCase *tc = tcase_create(name);

	tcase_add_loop_test(tc, t, 0, n);
	suite_add_tcase(s, tc);
}

void model_tests_quantity(Suite *s)
{
	TCase *tc;

	add_loop(s, "quantity_parse_valid", parse_valid, NROWS(valid));
	add_loop(s, "quantity_parse_signs", parse_signs, NROWS(valid));
	add_loop(s, "quantity_format_round_trip", format_round_trip,
		 NROWS(valid));
	add_loop(s, "quantity_parse_invalid", parse_invalid, NROWS(invalid));
	add_loop(s, "quantity_value_milli", value_milli, NROWS(values));
	add_loop(s, "quantity_add", add, NROWS(sums));
	add_loop(s, "quantity_cmp", cmp, NROWS(cmps));
	add_loop(s, "quantity_exact_uint", exact_uint, NROWS(exacts));
	add_loop(s, "quantity_json_uint", json_uint, NROWS(jsons));
	add_loop(s, "quantity_eval", eval_rows, NROWS(evals));

	tc = tcase_create("quantity_misc");
	tcase_add_test(tc, parse_edges);
	tcase_add_test(tc, add_overflow);
	tcase_add_test(tc, sign);
	tcase_add_test(tc, format_truncation);
	tcase_add_test(tc, json_uint_null);
	suite_add_tcase(s, tc);
}
