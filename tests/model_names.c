/* Tests of model/names.c: DNS-1123 names, vmi/claim names, tenant tree. */
#include "model/model_int.h"
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Fills buf (at least n + 1 bytes) with n copies of c; returns buf. */
static char *rep(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = '\0';
	return buf;
}

/* Upstream TestIsDNS1123Label rows (apimachinery validation_test.go). */
static const char *const label_good[] = {
	"a", "ab", "abc", "a1", "a-1", "a--1--2--b",
	"0", "01", "012", "1a", "1-a", "1--a--b--2",
};
static const char *const label_bad[] = {
	"",    "A",  "ABC", "aBc", "A1",  "A-1", "1-A", "-",   "a-",
	"-a",  "1-", "-1",  "_",   "a_",  "_a",	 "a_b", "1_",  "_1",
	"1_2", ".",  "a.",  ".a",  "a.b", "1.",	 ".1",	"1.2", " ",
	"a ",  " a", "a b", "1 ",  " 1",  "1 2", "a\n", "\na",
};

START_TEST(label_upstream_good)
{
	const char *s = label_good[_i];

	ck_assert_msg(dns1123_label(s, strlen(s)), "'%s' should be valid", s);
}
END_TEST

START_TEST(label_upstream_bad)
{
	const char *s = label_bad[_i];

	ck_assert_msg(!dns1123_label(s, strlen(s)), "'%s' should be invalid",
		      s);
}
END_TEST

START_TEST(label_lengths)
{
	char buf[65];

	ck_assert(dns1123_label(rep(buf, 'a', 63), 63));
	ck_assert(!dns1123_label(rep(buf, 'a', 64), 64));
	/* The length is given: a NUL inside is an invalid character. */
	ck_assert(!dns1123_label("a\0b", 3));
	ck_assert(dns1123_label("a\0b", 1));
	ck_assert(!dns1123_label(NULL, 0));
}
END_TEST

/* Upstream TestIsDNS1123Subdomain rows. */
static const char *const sub_good[] = {
	"a",	     "ab",
	"abc",	     "a1",
	"a-1",	     "a--1--2--b",
	"0",	     "01",
	"012",	     "1a",
	"1-a",	     "1--a--b--2",
	"a.a",	     "ab.a",
	"abc.a",     "a1.a",
	"a-1.a",     "a--1--2--b.a",
	"a.1",	     "ab.1",
	"abc.1",     "a1.1",
	"a-1.1",     "a--1--2--b.1",
	"0.a",	     "01.a",
	"012.a",     "1a.a",
	"1-a.a",     "1--a--b--2",
	"0.1",	     "01.1",
	"012.1",     "1a.1",
	"1-a.1",     "1--a--b--2.1",
	"a.b.c.d.e", "aa.bb.cc.dd.ee",
	"1.2.3.4.5", "11.22.33.44.55",
};
static const char *const sub_bad[] = {
	"",
	"A",
	"ABC",
	"aBc",
	"A1",
	"A-1",
	"1-A",
	"-",
	"a-",
	"-a",
	"1-",
	"-1",
	"_",
	"a_",
	"_a",
	"a_b",
	"1_",
	"_1",
	"1_2",
	".",
	"a.",
	".a",
	"a..b",
	"1.",
	".1",
	"1..2",
	" ",
	"a ",
	" a",
	"a b",
	"1 ",
	" 1",
	"1 2",
	"A.a",
	"aB.a",
	"ab.A",
	"A1.a",
	"a1.A",
	"A.1",
	"aB.1",
	"A1.1",
	"1A.1",
	"0.A",
	"01.A",
	"012.A",
	"1A.a",
	"1a.A",
	"A.B.C.D.E",
	"AA.BB.CC.DD.EE",
	"a.B.c.d.e",
	"aa.bB.cc.dd.ee",
	"a@b",
	"a,b",
	"a_b",
	"a;b",
	"a:b",
	"a%b",
	"a?b",
	"a$b",
	"a.b\n",
	"a-.b",
	"a.-b",
};

START_TEST(sub_upstream_good)
{
	const char *s = sub_good[_i];

	ck_assert_msg(dns1123_subdomain(s, strlen(s)), "'%s' should be valid",
		      s);
}
END_TEST

START_TEST(sub_upstream_bad)
{
	const char *s = sub_bad[_i];

	ck_assert_msg(!dns1123_subdomain(s, strlen(s)),
		      "'%s' should be invalid", s);
}
END_TEST

START_TEST(sub_lengths)
{
	char buf[256], *s;

	/* Upstream checks only the total, not each segment. */
	ck_assert(dns1123_subdomain(rep(buf, 'a', 253), 253));
	ck_assert(!dns1123_subdomain(rep(buf, 'a', 254), 254));
	s = rep(buf, 'a', 253);
	s[63] = '.';
	ck_assert(dns1123_subdomain(s, 253));
	ck_assert(!dns1123_subdomain("a.\0b", 4));
	ck_assert(!dns1123_subdomain(NULL, 0));
}
END_TEST

struct vmi_row {
	const char *x, *want;
};

static const struct vmi_row vmi_rows[] = {
	{"a", "vm-instance-a"},
	{"", "vm-instance"},
	/* 12 + 51 = exactly 63. */
	{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	 "vm-instance-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
	/* Cut to 63. */
	{"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyzzzz",
	 "vm-instance-yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"},
	/* The cut ends on dashes: they go. */
	{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa--bbb",
	 "vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
	{"my-vm-", "vm-instance-my-vm"},
};

/* The one-pass checks of C strings against the checks of explicit
 * lengths, over random strings from the bytes that matter (alphanumerics,
 * dash, dot, an invalid byte) at every length around the bounds; seeded
 * from GPULEDGER_SEED (or a fixed default), printed. */
START_TEST(cstr_matches_lengths)
{
	static const char alphabet[] = "ab09-.-.A_";
	const char *e = getenv("GPULEDGER_SEED");
	unsigned long long seed = e != NULL ? strtoull(e, NULL, 0) : 20261201;
	uint64_t x = seed * 2654435761u + 1;
	char buf[300];

	fprintf(stderr, "cstr_matches_lengths: seed %llu\n", seed);
	for (int round = 0; round < 200000; round++) {
		size_t len;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		len = (size_t)(x % 260);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Mostly valid bytes, so that long valid names occur. */
			buf[i] = x % 16 < 13 ? "abc019"[x % 6]
					     : alphabet[(x >> 8) % 10];
		}
		buf[len] = '\0';
		ck_assert_msg(model__dns1123_label_cstr(buf) ==
				      dns1123_label(buf, len),
			      "label \"%s\" (seed %llu)", buf, seed);
		ck_assert_msg(model__dns1123_subdomain_cstr(buf) ==
				      dns1123_subdomain(buf, len),
			      "subdomain \"%s\" (seed %llu)", buf, seed);
	}
	ck_assert(!model__dns1123_label_cstr(NULL));
	ck_assert(!model__dns1123_subdomain_cstr(NULL));
}
END_TEST

START_TEST(vmi_table)
{
	const struct vmi_row *r = &vmi_rows[_i];
	char out[DNS1123_LABEL_MAX + 1];
	size_t n = vmi_name(r->x, out);

	ck_assert_str_eq(out, r->want);
	ck_assert_uint_eq(n, strlen(r->want));
	ck_assert_uint_le(n, DNS1123_LABEL_MAX);
}
END_TEST

struct claim_row {
	const char *vmi, *dev, *want; /* want NULL: LG_EINVAL */
};

/* Hash prefixes computed with `printf %s VMI | sha256sum | cut -c1-8`. */
static const struct claim_row claim_rows[] = {
	{"vm-instance-a", "gpu1", "vm-instance-a-gpu1"},
	/* Exactly 63 without the hash. */
	{"vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "gpu1",
	 "vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-gpu1"},
	/* 64 needs the hash; the prefix fills the 63. */
	{"vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "gpu1",
	 "vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-78841b7a-gpu1"},
	/* The prefix ends in '-': trimmed. */
	{"vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-"
	 "bbbbbbbbbbbbbbbbbbbb",
	 "gpu1",
	 "vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-4bd28ee0-gpu1"},
	/* The prefix ends in ".-": both trimmed. */
	{"vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.-"
	 "bbbbbbbbbbbbbbbbbbbb",
	 "gpu1",
	 "vm-instance-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-e45da595-gpu1"},
	{"vm-instance-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	 "gpu12",
	 "vm-instance-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-0c5f940a-gpu12"},
	/* The longest device that still leaves a one-character prefix. */
	{"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	 "v",
	 "dddddddddddddddddddddddddddddddddddddddddddddddddddd",
	 "v-a5912ccf-dddddddddddddddddddddddddddddddddddddddddddddddddddd"},
	/* One more character and no prefix is left. */
	{"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	 "v",
	 "ddddddddddddddddddddddddddddddddddddddddddddddddddddd", NULL},
	/* A prefix of dashes trims to nothing. */
	{"------------------------------------------------------------------",
	 "gpu1", NULL},
	{"vm-instance-a", "", NULL},
	{"vm-instance-a", "GPU1", NULL},
	{"vm-instance-a", "gpu1-", NULL},
	{"vm-instance-a", "gpu 1", NULL},
	{"", "gpu1", NULL},
	{"Vm-instance-a", "gpu1", NULL},
	{"vm-instance-a", "gpu1\n", NULL},
	{NULL, "gpu1", NULL},
	{"vm-instance-a", NULL, NULL},
};

START_TEST(claim_table)
{
	const struct claim_row *r = &claim_rows[_i];
	char out[DNS1123_LABEL_MAX + 1];
	int rc = claim_name(r->vmi, r->dev, out);

	if (r->want == NULL) {
		ck_assert_int_eq(rc, LG_EINVAL);
		ck_assert_str_eq(out, "");
		return;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, r->want);
	ck_assert(dns1123_subdomain(out, strlen(out)));
	ck_assert_uint_le(strlen(out), DNS1123_LABEL_MAX);
}
END_TEST

START_TEST(claim_of_vmi_name)
{
	char vmi[DNS1123_LABEL_MAX + 1], out[DNS1123_LABEL_MAX + 1];
	char again[DNS1123_LABEL_MAX + 1];

	vmi_name("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", vmi);
	ck_assert_int_eq(claim_name(vmi, "gpu12", out), 0);
	ck_assert_str_eq(out, "vm-instance-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			      "-0c5f940a-gpu12");
	/* Deterministic. */
	ck_assert_int_eq(claim_name(vmi, "gpu12", again), 0);
	ck_assert_str_eq(again, out);
}
END_TEST

struct ns_row {
	const char *ns;
	bool tenant;
	const char *parent; /* NULL: none */
};

static const struct ns_row ns_rows[] = {
	{"tenant-root", true, NULL},
	{"tenant-a", true, "tenant-root"},
	{"tenant-a-b", true, "tenant-a"},
	{"tenant-a-b-c", true, "tenant-a-b"},
	{"tenant-root-x", true, "tenant-root"},
	{"tenant-", true, "tenant-root"},
	{"tenant", false, NULL},
	{"tenants-a", false, NULL},
	{"default", false, NULL},
	{"kube-system", false, NULL},
	{"", false, NULL},
	{"Tenant-a", false, NULL},
	{NULL, false, NULL},
};

START_TEST(ns_table)
{
	const struct ns_row *r = &ns_rows[_i];
	char out[DNS1123_SUBDOMAIN_MAX + 1] = "unchanged";

	ck_assert_int_eq(ns_is_tenant(r->ns), r->tenant);
	ck_assert_int_eq(ns_parent(r->ns, out), r->parent != NULL);
	if (r->parent != NULL)
		ck_assert_str_eq(out, r->parent);
}
END_TEST

struct gov_row {
	const char *p, *x;
	size_t cap;
	int rc;
	const char *want;
};

static const struct gov_row gov_rows[] = {
	{"tenant-root", "root", 64, 0, "tenant-root"},
	{"tenant-root", "acme", 64, 0, "tenant-acme"},
	{"tenant-acme", "dev", 64, 0, "tenant-acme-dev"},
	{"tenant-acme-dev", "x", 64, 0, "tenant-acme-dev-x"},
	/* "root" is special only under tenant-root. */
	{"tenant-acme", "root", 64, 0, "tenant-acme-root"},
	/* Exactly fits: 15 characters and the NUL. */
	{"tenant-acme", "dev", 16, 0, "tenant-acme-dev"},
	{"tenant-acme", "dev", 15, LG_ERANGE, NULL},
	{"tenant-root", "root", 11, LG_ERANGE, NULL},
	{"tenant-root", "acme", 0, LG_EINVAL, NULL},
	{NULL, "acme", 64, LG_EINVAL, NULL},
	{"tenant-root", NULL, 64, LG_EINVAL, NULL},
};

START_TEST(gov_table)
{
	const struct gov_row *r = &gov_rows[_i];
	char out[64];

	ck_assert_int_eq(model__tenant_governed_ns(r->p, r->x, out, r->cap), r->rc);
	if (r->rc == 0)
		ck_assert_str_eq(out, r->want);
}
END_TEST

static const struct eval_row eval_rows[] = {
	{model__eval_dns1123_label, "\"abc\"", "{\"valid\":true}"},
	{model__eval_dns1123_label, "\"a.b\"", "{\"valid\":false}"},
	{model__eval_dns1123_label, "5", NULL},
	{model__eval_dns1123_label, "null", NULL},
	{model__eval_dns1123_subdomain, "\"a.b\"", "{\"valid\":true}"},
	{model__eval_dns1123_subdomain, "\"a.b\\n\"", "{\"valid\":false}"},
	{model__eval_dns1123_subdomain, "[\"a\"]", NULL},
	{model__eval_claim_name,
	 "{\"vmi\": \"vm-instance-a\", \"device\": \"gpu1\"}",
	 "{\"name\":\"vm-instance-a-gpu1\"}"},
	{model__eval_claim_name, "{\"vmi\": \"vm-instance-a\"}", NULL},
	{model__eval_claim_name, "{\"vmi\": 1, \"device\": \"gpu1\"}", NULL},
	{model__eval_claim_name,
	 "{\"vmi\": \"vm-instance-a\", \"device\": \"\"}", NULL},
	{model__eval_claim_name, "\"vm-instance-a\"", NULL},
};

START_TEST(eval_table)
{
	check_eval_row(&eval_rows[_i]);
}
END_TEST

/* Strings with NUL bytes (tj cannot build them): a NUL is an invalid
 * character, never the end of a name. */
START_TEST(eval_nul)
{
	struct eval_ctx ctx = {0};
	json_t *in = json_stringn("a\0b", 3), *out = NULL;

	ck_assert_int_eq(model__eval_dns1123_label(&ctx, in, &out, NULL), 0);
	ck_assert(json_is_false(json_object_get(out, "valid")));
	json_decref(out);
	out = NULL;
	json_decref(in);
	in = json_pack("{s:s%,s:s}", "vmi", "vm-instance-a\0b", (size_t)15,
		       "device", "gpu1");
	ck_assert_int_eq(model__eval_claim_name(&ctx, in, &out, NULL),
			 LG_EINVAL);
	ck_assert_ptr_null(out);
	json_decref(in);
}
END_TEST

static const struct {
	const char *obj;
	int rc;
	bool tenant, has_parent, agree;
	const char *parent;
} nsobj_rows[] = {
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'tenant-"
	 "root'}}",
	 0, true, false, true, ""},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'tenant-a-b'"
	 ","
	 "'labels':{'tenant.cozystack.io/tenant-a':'','tenant.cozystack.io/"
	 "tenant-root':'','tenant.cozystack.io/tenant-a-b':'','other':'x'}}}",
	 0, true, true, true, "tenant-a"},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'tenant-a-b'"
	 ","
	 "'labels':{'tenant.cozystack.io/tenant-c':''}}}",
	 0, true, true, false, "tenant-a"},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'default',"
	 "'labels':{'tenant.cozystack.io/tenant-root':''}}}",
	 0, false, false, false, ""},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'kube-"
	 "system',"
	 "'labels':7}}",
	 0, false, false, true, ""},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'Bad'}}",
	 LG_EINVAL, false, false, false, NULL},
	{"{'apiVersion':'v1','kind':'Namespace','metadata':{}}", LG_EINVAL,
	 false, false, false, NULL},
	{"{'apiVersion':'v2','kind':'Namespace','metadata':{'name':'a'}}",
	 LG_EUNKNOWN, false, false, false, NULL},
	{"{'kind':'Namespace','metadata':{'name':'a'}}", LG_EUNKNOWN, false,
	 false, false, NULL},
	{"[]", LG_EUNKNOWN, false, false, false, NULL},
};

START_TEST(namespace_map_rows)
{
	json_t *obj = tq(nsobj_rows[_i].obj);
	struct namespace_map nm;
	struct lg_error err = {0};
	int rc = namespace_map_object(obj, &nm, &err);

	ck_assert_msg(rc == nsobj_rows[_i].rc, "%s: rc %d", nsobj_rows[_i].obj,
		      rc);
	if (rc == 0) {
		ck_assert_int_eq(nm.tenant, nsobj_rows[_i].tenant);
		ck_assert_int_eq(nm.has_parent, nsobj_rows[_i].has_parent);
		ck_assert_int_eq(nm.labels_agree, nsobj_rows[_i].agree);
		if (nm.has_parent)
			ck_assert_str_eq(nm.parent, nsobj_rows[_i].parent);
		if (!nm.labels_agree)
			ck_assert_ptr_nonnull(
				strstr(err.msg, "names no ancestor"));
		else
			ck_assert_int_eq(err.code, 0);
	} else {
		ck_assert_str_ne(err.msg, "");
	}
	json_decref(obj);
}
END_TEST

void model_tests_names(Suite *s)
{
	TCase *tc;

	tc = tcase_create("names_namespace");
	tcase_add_loop_test(tc, namespace_map_rows, 0,
			    sizeof(nsobj_rows) / sizeof(nsobj_rows[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("names_label");
	tcase_add_loop_test(tc, label_upstream_good, 0, N(label_good));
	tcase_add_loop_test(tc, label_upstream_bad, 0, N(label_bad));
	tcase_add_test(tc, label_lengths);
	suite_add_tcase(s, tc);

	tc = tcase_create("names_subdomain");
	tcase_add_loop_test(tc, sub_upstream_good, 0, N(sub_good));
	tcase_add_loop_test(tc, sub_upstream_bad, 0, N(sub_bad));
	tcase_add_test(tc, sub_lengths);
	tcase_add_test(tc, cstr_matches_lengths);
	suite_add_tcase(s, tc);

	tc = tcase_create("names_claim");
	tcase_add_loop_test(tc, vmi_table, 0, N(vmi_rows));
	tcase_add_loop_test(tc, claim_table, 0, N(claim_rows));
	tcase_add_test(tc, claim_of_vmi_name);
	suite_add_tcase(s, tc);

	tc = tcase_create("names_tenant");
	tcase_add_loop_test(tc, ns_table, 0, N(ns_rows));
	tcase_add_loop_test(tc, gov_table, 0, N(gov_rows));
	suite_add_tcase(s, tc);

	tc = tcase_create("names_eval");
	tcase_add_loop_test(tc, eval_table, 0, N(eval_rows));
	tcase_add_test(tc, eval_nul);
	suite_add_tcase(s, tc);
}
