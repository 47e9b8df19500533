/* The billing file of `serve --rates FILE` (query/billing.c): loaded at
 * start, read again when it changes (a rewrite, or a rename over it as a
 * ConfigMap update does), and kept when a change does not parse. */
#include "tests/query_tests.h"

#include <unistd.h>

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

#define ONE_RATE                                                        \
	"{\"rates\": [{\"class\": \"h100\", \"currency\": \"USD\", "    \
	"\"listUnitPrice\": \"1\"}]}"
#define TWO_RATES                                                       \
	"{\"rates\": [{\"class\": \"h100\", \"currency\": \"USD\", "    \
	"\"listUnitPrice\": \"2\"}, {\"class\": \"a10\", \"currency\": " \
	"\"USD\", \"listUnitPrice\": \"0\"}], \"providerName\": \"Acme\"}"

START_TEST(billing_reload)
{
	char dir[] = "/tmp/gpuledger-billing-XXXXXX", path[64], tmp[80];
	struct billing_file b;
	struct lg_error err = {0};

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/rates.json", dir);
	snprintf(tmp, sizeof(tmp), "%s/rates.new", dir);
	/* No file: the defaults, unpriced, never reloaded. */
	ck_assert_int_eq(query__billing_open(&b, NULL, &err), 0);
	ck_assert(!b.rates.priced);
	ck_assert_str_eq(b.rates.provider, "Cozystack");
	ck_assert(!query__billing_check(&b));
	query__billing_release(&b);

	put(path, ONE_RATE);
	ck_assert_int_eq(query__billing_open(&b, path, &err), 0);
	ck_assert_uint_eq(b.rates.n, 1);
	ck_assert(!query__billing_check(&b)); /* unchanged */
	put(path, TWO_RATES);
	ck_assert(query__billing_check(&b));
	ck_assert_uint_eq(b.rates.n, 2);
	ck_assert_str_eq(b.rates.provider, "Acme");
	ck_assert(!query__billing_check(&b));
	/* A broken change keeps the rates in force, until a good one. */
	put(path, "{\"rates\": [");
	ck_assert(!query__billing_check(&b));
	ck_assert(b.failed);
	ck_assert_uint_eq(b.rates.n, 2);
	put(path, "{\"rates\": [], \"providerName\": \"x\"}");
	ck_assert(query__billing_check(&b));
	ck_assert(!b.failed);
	ck_assert_uint_eq(b.rates.n, 0);
	ck_assert(b.rates.priced);
	/* A rename over the file, as the kubelet swaps a ConfigMap. */
	put(tmp, ONE_RATE);
	ck_assert_int_eq(rename(tmp, path), 0);
	ck_assert(query__billing_check(&b));
	ck_assert_uint_eq(b.rates.n, 1);
	/* A file that goes away keeps what was loaded. */
	ck_assert_int_eq(unlink(path), 0);
	ck_assert(!query__billing_check(&b));
	ck_assert_uint_eq(b.rates.n, 1);
	query__billing_release(&b);

	/* At start, a missing or bad file is an error naming it. */
	ck_assert_int_eq(query__billing_open(&b, path, &err), LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "rates.json"));
	query__billing_release(&b);
	put(path, "{\"rates\": [{\"class\": \"h100\"}]}");
	ck_assert_int_eq(query__billing_open(&b, path, &err), LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "currency"));
	query__billing_release(&b);
	unlink(path);
	rmdir(dir);
}
END_TEST

QUERY_PART(billing)
{
	TCase *tc = tcase_create("billing_file");

	tcase_add_test(tc, billing_reload);
	suite_add_tcase(s, tc);
}
