/* Tests of model/vfilter.c: the filter of GET /v1/verdicts and `gpuledger
 * verdicts` (DESIGN 3.5, 6): every parameter's values, taken and refused
 * with the words both callers show, and what a filter takes. */
#include "tests/model_tests.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* A value each parameter refuses, and the phrase that must say why. */
static const struct {
	const char *name, *value, *why;
} refused[] = {
	{"tenant", "", "is not a tenant namespace"},
	{"tenant", "default", "\"default\" is not a tenant namespace"},
	{"tenant", "tenant-", "is not a tenant namespace"},
	{"tenant", "tenant-Acme", "is not a tenant namespace"},
	{"requester", "", "\"\" is not a user name of 1 to 255 bytes"},
	{"reason", "", "is not a reason of 1 to 255 bytes"},
	{"allowed", "maybe", "\"maybe\" is not true or false"},
	{"allowed", "", "\"\" is not true or false"},
	{"allowed", "TRUE", "is not true or false"},
	{"from", "yesterday", "\"yesterday\" is not an RFC 3339 time"},
	{"from", "1969-12-31", "is before 1970-01-01T00:00:00Z"},
	{"to", "2262-04-12", "is beyond what the ledger can date"},
	{"to", "", "is not an RFC 3339 time"},
	{"after", "-1", "\"-1\" is not a verdict id (0 or more)"},
	{"after", "1e3", "is not a verdict id"},
	{"after", "12345678901234567890", "is not a verdict id"},
	{"before", "0", "\"0\" is not a verdict id (1 or more)"},
	{"before", "x", "is not a verdict id"},
	{"order", "up", "\"up\" is not asc or desc"},
	{"order", "", "is not asc or desc"},
	{"limit", "0", "\"0\" is not 1 to 1000"},
	{"limit", "1001", "is not 1 to 1000"},
	{"limit", " 5", "is not 1 to 1000"},
};

START_TEST(vfilter_refuses)
{
	struct verdict_filter f, before;
	struct lg_error err = {0};
	int rc;

	verdict_filter_init(&f);
	before = f;
	rc = verdict_filter_set(&f, refused[_i].name, refused[_i].value, &err);
	ck_assert_int_eq(rc, LG_EINVAL);
	ck_assert_msg(strstr(err.msg, refused[_i].why) != NULL,
		      "%s=%s: \"%s\" lacks \"%s\"", refused[_i].name,
		      refused[_i].value, err.msg, refused[_i].why);
	/* A refused value leaves the filter as it was. */
	ck_assert_int_eq(f.has_tenant || f.has_requester || f.has_reason, 0);
	ck_assert(f.allowed == before.allowed && f.limit == before.limit &&
		  f.after == before.after && f.before == before.before &&
		  f.desc == before.desc);
}
END_TEST

/* Values too long for the filter are refused, named by their start. */
START_TEST(vfilter_bounds)
{
	struct verdict_filter f;
	struct lg_error err = {0};
	char big[VERDICT_FILTER_TEXT_MAX + 2];

	verdict_filter_init(&f);
	memset(big, 'u', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(verdict_filter_set(&f, "requester", big, &err),
			 LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "...\" is not a user name"));
	big[VERDICT_FILTER_TEXT_MAX] = '\0';
	ck_assert_int_eq(verdict_filter_set(&f, "requester", big, &err), 0);
	ck_assert(f.has_requester && strlen(f.requester) == 255);
	ck_assert_int_eq(verdict_filter_set(&f, "reason", big, &err), 0);
	ck_assert_int_eq(verdict_filter_set(&f, "nope", "1", &err), LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "no verdict filter \"nope\""));
}
END_TEST

/* Values taken, and what they set. */
START_TEST(vfilter_takes)
{
	struct verdict_filter f;
	struct lg_error err = {0};

	verdict_filter_init(&f);
	ck_assert(f.allowed == -1 && !f.desc && f.limit == 100 &&
		  f.after == 0 && f.before == UINT64_MAX &&
		  f.from_ns == INT64_MIN && f.to_ns == INT64_MAX);
	ck_assert_int_eq(verdict_filter_set(&f, "allowed", "true", &err), 0);
	ck_assert_int_eq(f.allowed, 1);
	ck_assert_int_eq(verdict_filter_set(&f, "allowed", "0", &err), 0);
	ck_assert_int_eq(f.allowed, 0);
	ck_assert_int_eq(verdict_filter_set(&f, "allowed", "1", &err), 0);
	ck_assert_int_eq(f.allowed, 1);
	ck_assert_int_eq(verdict_filter_set(&f, "allowed", "false", &err), 0);
	ck_assert_int_eq(f.allowed, 0);
	ck_assert_int_eq(verdict_filter_set(&f, "order", "desc", &err), 0);
	ck_assert(f.desc);
	ck_assert_int_eq(verdict_filter_set(&f, "order", "asc", &err), 0);
	ck_assert(!f.desc);
	ck_assert_int_eq(verdict_filter_set(&f, "limit", "1000", &err), 0);
	ck_assert_uint_eq(f.limit, 1000);
	ck_assert_int_eq(verdict_filter_set(&f, "limit", "1", &err), 0);
	ck_assert_uint_eq(f.limit, 1);
	ck_assert_int_eq(verdict_filter_set(&f, "after", "0", &err), 0);
	ck_assert_int_eq(
		verdict_filter_set(&f, "before", "9999999999999999999", &err),
		0);
	ck_assert_uint_eq(f.before, 9999999999999999999ull);
	ck_assert_int_eq(verdict_filter_set(&f, "from", "2026-03-01", &err), 0);
	ck_assert_int_eq(f.from_ns, 1772323200LL * 1000000000LL);
	ck_assert_int_eq(
		verdict_filter_set(&f, "to", "2026-03-01T00:00:01Z", &err), 0);
	ck_assert_int_eq(f.to_ns, 1772323201LL * 1000000000LL);
	ck_assert_int_eq(verdict_filter_set(&f, "tenant", "tenant-root", &err),
			 0);
	ck_assert_int_eq(verdict_filter_set(&f, "tenant", "tenant-a-b", &err),
			 0);
	ck_assert_str_eq(f.tenant, "tenant-a-b");
	ck_assert(f.has_tenant);
	/* Every name the callers loop over is one the filter knows. */
	for (const char *const *p = verdict_filter_params; *p; p++)
		ck_assert_int_ne(verdict_filter_set(&f, *p, "", &err),
				 LG_ENOENT);
}
END_TEST

static json_t *record(const char *ns, const char *user, bool allowed,
		      const char *reason)
{
	json_t *v = json_pack("{s:b, s:s, s:{s:s}}", "allowed", allowed,
			      "reason", reason, "request", "namespace", ns);

	if (user != NULL)
		json_object_set_new(v, "requester",
				    json_pack("{s:s, s:s, s:s}", "username",
					      user, "uid", "review-1",
					      "userUid", "user-1"));
	return v;
}

/* What one filter takes, each parameter alone. */
START_TEST(vfilter_match_each)
{
	struct verdict_filter f;
	json_t *dev = record("tenant-acme-dev", "alice", false, "Denied");
	json_t *ab = record("tenant-acmeb", NULL, true, "WithinBudget");

	verdict_filter_init(&f);
	ck_assert(verdict_filter_match(&f, 0, dev));
	ck_assert(verdict_filter_match(&f, INT64_MIN, ab));
	verdict_filter_set(&f, "tenant", "tenant-acme", NULL);
	ck_assert(verdict_filter_match(&f, 0, dev));
	ck_assert(!verdict_filter_match(&f, 0, ab)); /* a name, no subtree */
	verdict_filter_set(&f, "tenant", "tenant-root", NULL);
	ck_assert(verdict_filter_match(&f, 0, ab));
	verdict_filter_init(&f);
	/* The username, never the review's uid nor the user's. */
	verdict_filter_set(&f, "requester", "alice", NULL);
	ck_assert(verdict_filter_match(&f, 0, dev));
	ck_assert(!verdict_filter_match(&f, 0, ab));
	verdict_filter_set(&f, "requester", "review-1", NULL);
	ck_assert(!verdict_filter_match(&f, 0, dev));
	verdict_filter_set(&f, "requester", "user-1", NULL);
	ck_assert(!verdict_filter_match(&f, 0, dev));
	verdict_filter_set(&f, "requester", "alic", NULL);
	ck_assert(!verdict_filter_match(&f, 0, dev));
	verdict_filter_init(&f);
	verdict_filter_set(&f, "allowed", "false", NULL);
	ck_assert(verdict_filter_match(&f, 0, dev));
	ck_assert(!verdict_filter_match(&f, 0, ab));
	verdict_filter_init(&f);
	verdict_filter_set(&f, "reason", "WithinBudget", NULL);
	ck_assert(!verdict_filter_match(&f, 0, dev));
	ck_assert(verdict_filter_match(&f, 0, ab));
	/* [from, to): from inclusive, to exclusive. */
	verdict_filter_init(&f);
	verdict_filter_set(&f, "from", "1970-01-01T00:00:01Z", NULL);
	verdict_filter_set(&f, "to", "1970-01-01T00:00:02Z", NULL);
	ck_assert(!verdict_filter_match(&f, 999999999, dev));
	ck_assert(verdict_filter_match(&f, 1000000000, dev));
	ck_assert(verdict_filter_match(&f, 1999999999, dev));
	ck_assert(!verdict_filter_match(&f, 2000000000, dev));
	json_decref(dev);
	json_decref(ab);
}
END_TEST

/* A property over random records and filters: a filter takes a record
 * exactly when each of its parameters alone takes it (they combine as
 * "and", none hides or widens another). */
#define PROP_N 20000

static unsigned prop_seed(void)
{
	const char *s = getenv("SEED");
	unsigned seed = s ? (unsigned)strtoul(s, NULL, 10)
			  : (unsigned)time(NULL) ^ (unsigned)getpid();

	fprintf(stderr, "vfilter_match_and: seed %u (SEED=%u reruns it)\n",
		seed, seed);
	return seed;
}

START_TEST(vfilter_match_and)
{
	static const char *const nss[] = {"tenant-a", "tenant-a-b", "tenant-ab",
					  "default", "tenant-root"};
	static const char *const users[] = {"alice", "bob", NULL};
	static const char *const reasons[] = {"WithinBudget", "Invalid"};
	static const char *const times[] = {"1970-01-01T00:00:01Z",
					    "1970-01-01T00:00:03Z"};
	unsigned seed = prop_seed();

	srand(seed);
	for (int n = 0; n < PROP_N; n++) {
		json_t *v = record(nss[rand() % 5], users[rand() % 3],
				   rand() % 2, reasons[rand() % 2]);
		int64_t t = (int64_t)(rand() % 5) * 1000000000;
		struct verdict_filter all, one;
		bool each = true;

		verdict_filter_init(&all);
		for (int k = 0; k < 5; k++) {
			const char *name = NULL, *val = NULL;

			if (rand() % 2)
				continue;
			switch (k) {
			case 0:
				name = "tenant", val = nss[rand() % 5];
				if (strcmp(val, "default") == 0)
					val = "tenant-a";
				break;
			case 1:
				name = "requester", val = users[rand() % 2];
				break;
			case 2:
				name = "allowed",
				val = rand() % 2 ? "true" : "false";
				break;
			case 3:
				name = "reason", val = reasons[rand() % 2];
				break;
			default:
				name = rand() % 2 ? "from" : "to";
				val = times[rand() % 2];
				break;
			}
			ck_assert_int_eq(
				verdict_filter_set(&all, name, val, NULL), 0);
			verdict_filter_init(&one);
			verdict_filter_set(&one, name, val, NULL);
			each = each && verdict_filter_match(&one, t, v);
		}
		ck_assert_msg(verdict_filter_match(&all, t, v) == each,
			      "seed %u, case %d", seed, n);
		json_decref(v);
	}
}
END_TEST

MODEL_PART(vfilter)
{
	TCase *tc = tcase_create("vfilter");

	/* The property's 20,000 cases take seconds under the sanitizers on
	 * a loaded machine: more than Check's default of 4. */
	tcase_set_timeout(tc, 60);

	tcase_add_loop_test(tc, vfilter_refuses, 0, (int)N(refused));
	tcase_add_test(tc, vfilter_bounds);
	tcase_add_test(tc, vfilter_takes);
	tcase_add_test(tc, vfilter_match_each);
	tcase_add_test(tc, vfilter_match_and);
	suite_add_tcase(s, tc);
}
