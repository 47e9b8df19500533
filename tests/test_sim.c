/*
 * The Check suite of sim/: the simulator driven in-process through
 * sim_new/sim_next/sim_free. The streams are pinned by digests taken from
 * `gpuledger simulate` before the simulator left tools/ (so the move, and
 * any later change, keeps the bytes), every line is checked to be a watch
 * event, and the same options give the same lines for random seeds
 * (printed; SIM_SEED=N reruns one).
 */
#include "sim/sim_int.h"

#include <check.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 2026-01-01T00:00:00Z and the options of `gpuledger simulate`'s
 * defaults with the given changes. */
#define T0_NS  (1767225600ll * 1000000000ll)
#define DAY_NS (86400ll * 1000000000ll)

static struct sim_opts opts_with(uint64_t seed, uint64_t events)
{
	struct sim_opts o;

	sim_opts_default(&o);
	o.seed = seed;
	o.events = events;
	return o;
}

/* All lines of a simulator for o, hashed; the count in *n. */
static void stream_digest(const struct sim_opts *o, char hex[65], uint64_t *n)
{
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	unsigned char d[32];
	unsigned int dlen = 0;
	struct lg_error err = {0};
	const char *line;
	size_t len;
	sim_t *s;
	int rc;

	ck_assert_int_eq(sim_new(o, &s, &err), 0);
	ck_assert_ptr_nonnull(md);
	ck_assert_int_eq(EVP_DigestInit_ex(md, EVP_sha256(), NULL), 1);
	*n = 0;
	while ((rc = sim_next(s, &line, &len, &err)) == 1) {
		EVP_DigestUpdate(md, line, len);
		(*n)++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(sim__lines(s), *n);
	EVP_DigestFinal_ex(md, d, &dlen);
	EVP_MD_CTX_free(md);
	sim_free(s);
	for (unsigned i = 0; i < dlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* sha256sum of `gpuledger simulate ARGS` as tools/simulate.c wrote it
 * before sim/ existed (commit 6cc8d71). */
static const struct pinned {
	const char *args; /* what pinned_opts(i) builds */
	const char *sha256;
} pinned[] = {
	{"--seed 7 --events 20000",
	 "61a57764345dbce6c8623de3b5e06dda46cc562a17d1a942e36c7682cac2689f"},
	{"--seed 3 --events 30000 --churn",
	 "22411a886d221d349a3a383280c79a392b464deb40a8d4e872e400ee7c24a089"},
	{"--seed 11 --events 20000 --all-gpu-pods",
	 "c0976d24fc3a0bd5fbf2f8478a22e004b349f7d1a8153c6d33d4b2d50c6f4cb3"},
	{"--seed 5 --events 5000 --tenants 300 --depth 6 --days 2",
	 "1336d6ebeb3be5591ac15636181f4b61e2bac8ef0a9023718dc62b26da13a662"},
	{"--seed 9 --events 10000 --gpu-pod-share 0.5 --no-invalid "
	 "--start 2025-03-01 --end 2025-03-04T12:00:00Z",
	 "4cef968375a0d1076a2f0b4b0bced038137589851bfd49f936c2ffdfae46dc01"},
	{"--seed 4 --events 60000 --tenants 20000 --depth 6",
	 "26c68ca4e5adc7eca2eb40236b1693f6e37b71d5f7205083048b5c8810b33cb7"},
};

/* The struct sim_opts of pinned[i].args. */
static struct sim_opts pinned_opts(size_t i)
{
	struct sim_opts o = opts_with(1, 100000);

	switch (i) {
	case 0:
		o = opts_with(7, 20000);
		break;
	case 1:
		o = opts_with(3, 30000);
		o.churn = true;
		break;
	case 2:
		o = opts_with(11, 20000);
		o.all_gpu = true;
		break;
	case 3:
		o = opts_with(5, 5000);
		o.tenants = 300;
		o.depth = 6;
		o.end_ns = o.start_ns + 2 * DAY_NS;
		break;
	case 4:
		o = opts_with(9, 10000);
		o.gpu_share_ppm = 500000;
		o.invalid = false;
		o.start_ns = 1740787200ll * 1000000000ll; /* 2025-03-01 */
		o.end_ns = o.start_ns + 3 * DAY_NS + DAY_NS / 2;
		break;
	case 5:
		o = opts_with(4, 60000);
		o.tenants = 20000;
		o.depth = 6;
		break;
	}
	return o;
}

START_TEST(sim_pinned_digest)
{
	struct sim_opts o = pinned_opts((size_t)_i);
	char hex[65] = "";
	uint64_t n;

	stream_digest(&o, hex, &n);
	ck_assert_uint_eq(n, o.events);
	ck_assert_msg(strcmp(hex, pinned[_i].sha256) == 0,
		      "simulate %s: sha256 %s, pinned %s", pinned[_i].args, hex,
		      pinned[_i].sha256);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Every line a watch event (DESIGN 6's recorded stream). */

static const char *const types[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK"};

static void check_line(const struct sim_opts *o, const char *line, size_t len,
		       uint64_t no, int64_t *last_ns, unsigned long long *rv)
{
	json_error_t jerr;
	json_t *v, *obj, *meta;
	const char *type, *t;
	unsigned long long r;
	int64_t t_ns;
	bool known = false;

	ck_assert_uint_gt(len, 1);
	ck_assert_uint_le(len, SIM_LINE_MAX);
	ck_assert_msg(line[len - 1] == '\n', "line %llu: no newline",
		      (unsigned long long)no);
	ck_assert_msg(memchr(line, '\n', len - 1) == NULL,
		      "line %llu: two lines in one", (unsigned long long)no);
	v = json_loadb(line, len, 0, &jerr);
	ck_assert_msg(v != NULL, "line %llu: %s", (unsigned long long)no,
		      jerr.text);
	ck_assert(json_is_object(v));
	ck_assert_uint_eq(json_object_size(v), 3);
	type = json_string_value(json_object_get(v, "type"));
	ck_assert_ptr_nonnull(type);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		known = known || strcmp(type, types[i]) == 0;
	ck_assert_msg(known, "line %llu: type %s", (unsigned long long)no,
		      type);
	obj = json_object_get(v, "object");
	ck_assert(json_is_object(obj));
	ck_assert_ptr_nonnull(json_string_value(json_object_get(obj, "kind")));
	ck_assert_ptr_nonnull(
		json_string_value(json_object_get(obj, "apiVersion")));
	meta = json_object_get(obj, "metadata");
	ck_assert(json_is_object(meta));
	/* resourceVersions increase by one a line. */
	ck_assert_int_eq(sscanf(json_string_value(json_object_get(
					meta, "resourceVersion")),
				"%llu", &r),
			 1);
	ck_assert_uint_eq(r, *rv + 1);
	*rv = r;
	if (strcmp(type, "BOOKMARK") != 0) {
		ck_assert_ptr_nonnull(
			json_string_value(json_object_get(meta, "name")));
		ck_assert_uint_eq(
			strlen(json_string_value(json_object_get(meta, "uid"))),
			36);
	}
	/* Times: RFC 3339, within the span, never decreasing. */
	t = json_string_value(json_object_get(v, "time"));
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(time_parse_ns(t, &t_ns), 0);
	ck_assert_int_ge(t_ns, o->start_ns);
	ck_assert_int_le(t_ns, o->end_ns);
	ck_assert_msg(t_ns >= *last_ns, "line %llu: time %s goes back",
		      (unsigned long long)no, t);
	*last_ns = t_ns;
	json_decref(v);
}

static void check_stream(const struct sim_opts *o)
{
	struct lg_error err = {0};
	const char *line;
	unsigned long long rv = 0;
	int64_t last_ns = o->start_ns;
	uint64_t n = 0;
	size_t len;
	sim_t *s;
	int rc;

	ck_assert_int_eq(sim_new(o, &s, &err), 0);
	while ((rc = sim_next(s, &line, &len, &err)) == 1)
		check_line(o, line, len, ++n, &last_ns, &rv);
	ck_assert_int_eq(rc, 0);
	ck_assert_uint_eq(n, o->events);
	/* The end stays the end. */
	ck_assert_int_eq(sim_next(s, &line, &len, &err), 0);
	sim_free(s);
}

/* The seed of the random tests: SIM_SEED or the clock, taken once in
 * main before the tests fork, so that one run has one seed to print. */
static uint64_t seed_base;

static uint64_t test_seed(void)
{
	return seed_base;
}

/* Random option sets, each stream checked line by line. */
START_TEST(sim_lines_are_watch_events)
{
	uint64_t seed = test_seed() + (uint64_t)_i * 1000003u;
	struct sim_opts o = opts_with(seed, 4000 + seed % 4000);

	o.tenants = 1 + (uint32_t)(seed % 400);
	o.depth = 1 + (uint32_t)(seed / 7 % SIM_DEPTH_MAX);
	o.churn = seed % 2 == 0;
	o.all_gpu = seed % 3 == 0;
	o.invalid = seed % 5 != 0;
	o.gpu_share_ppm = (uint32_t)(seed % 1000001);
	o.end_ns = o.start_ns + 1 + (int64_t)(seed % (90 * (uint64_t)DAY_NS));
	fprintf(stderr,
		"  stream %d: seed %llu events %llu tenants %u depth %u "
		"churn %d all_gpu %d\n",
		_i, (unsigned long long)o.seed, (unsigned long long)o.events,
		o.tenants, o.depth, o.churn, o.all_gpu);
	check_stream(&o);
}
END_TEST

/* A zero-length span: every time is the start. */
START_TEST(sim_empty_span)
{
	struct sim_opts o = opts_with(2, 3000);

	o.end_ns = o.start_ns;
	check_stream(&o);
}
END_TEST

/* The same options, the same lines; another seed, another stream. Two
 * simulators run side by side, so that no state is shared between them. */
START_TEST(sim_deterministic)
{
	uint64_t seed = test_seed() + (uint64_t)_i;
	struct sim_opts o = opts_with(seed, 20000), p = o;
	struct lg_error err = {0};
	const char *la, *lb;
	size_t na, nb;
	sim_t *a, *b, *c;
	bool differs = false;

	o.churn = _i % 2 == 1;
	p = o;
	p.seed = seed + 1;
	ck_assert_int_eq(sim_new(&o, &a, &err), 0);
	ck_assert_int_eq(sim_new(&o, &b, &err), 0);
	ck_assert_int_eq(sim_new(&p, &c, &err), 0);
	for (uint64_t i = 0; i < o.events; i++) {
		ck_assert_int_eq(sim_next(a, &la, &na, &err), 1);
		ck_assert_int_eq(sim_next(b, &lb, &nb, &err), 1);
		ck_assert_msg(na == nb && memcmp(la, lb, na) == 0,
			      "seed %llu: line %llu differs between two runs",
			      (unsigned long long)seed,
			      (unsigned long long)i + 1);
		ck_assert_int_eq(sim_next(c, &lb, &nb, &err), 1);
		differs = differs || na != nb || memcmp(la, lb, na) != 0;
	}
	ck_assert_msg(differs, "seeds %llu and %llu give the same stream",
		      (unsigned long long)seed, (unsigned long long)seed + 1);
	ck_assert_int_eq(sim_next(a, &la, &na, &err), 0);
	sim_free(a);
	sim_free(b);
	sim_free(c);
}
END_TEST

START_TEST(sim_zero_events)
{
	struct sim_opts o = opts_with(1, 0);
	struct lg_error err = {0};
	const char *line = NULL;
	size_t len = 0;
	sim_t *s;

	ck_assert_int_eq(sim_new(&o, &s, &err), 0);
	ck_assert_int_eq(sim_next(s, &line, &len, &err), 0);
	ck_assert_uint_eq(sim__lines(s), 0);
	sim_free(s);
	sim_free(NULL);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Options out of range: LG_EINVAL, a message naming the option, no handle. */

/* What the message of case i of spoil() names. */
static const char *const bad_what[] = {"tenants", "tenants", "depth",
				       "depth",	  "events",  "span",
				       "span",	  "span",    "share"};

static void spoil(size_t i, struct sim_opts *o)
{
	switch (i) {
	case 0:
		o->tenants = 0;
		break;
	case 1:
		o->tenants = SIM_TENANTS_MAX + 1;
		break;
	case 2:
		o->depth = 0;
		break;
	case 3:
		o->depth = SIM_DEPTH_MAX + 1;
		break;
	case 4:
		o->events = SIM_EVENTS_MAX + 1;
		break;
	case 5:
		o->start_ns = -1;
		break;
	case 6:
		o->end_ns = SIM_TIME_MAX_NS + 1;
		break;
	case 7:
		o->end_ns = o->start_ns - 1;
		break;
	case 8:
		o->gpu_share_ppm = 1000001;
		break;
	}
}

START_TEST(sim_bad_options)
{
	struct sim_opts o = opts_with(1, 10);
	struct lg_error err = {0};
	sim_t *s = (sim_t *)&o;

	spoil((size_t)_i, &o);
	ck_assert_int_eq(sim_new(&o, &s, &err), LG_EINVAL);
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err.msg, bad_what[_i]) != NULL,
		      "case %d: \"%s\" does not name %s", _i, err.msg,
		      bad_what[_i]);
}
END_TEST

int main(void)
{
	const char *e = getenv("SIM_SEED");
	Suite *su = suite_create("sim");
	TCase *tc = tcase_create("sim");
	SRunner *sr;
	int failed;

	seed_base = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL);
	printf("test_sim: seed %llu (SIM_SEED=%llu reruns it)\n",
	       (unsigned long long)seed_base, (unsigned long long)seed_base);
	fflush(stdout);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, sim_pinned_digest, 0,
			    (int)(sizeof(pinned) / sizeof(pinned[0])));
	tcase_add_loop_test(tc, sim_lines_are_watch_events, 0, 8);
	tcase_add_test(tc, sim_empty_span);
	tcase_add_loop_test(tc, sim_deterministic, 0, 2);
	tcase_add_test(tc, sim_zero_events);
	tcase_add_loop_test(tc, sim_bad_options, 0,
			    (int)(sizeof(bad_what) / sizeof(bad_what[0])));
	suite_add_tcase(su, tc);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
