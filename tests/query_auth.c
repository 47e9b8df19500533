/*
 * Tokens and roles: the role grammar, the token file (syntax, duplicates,
 * bounds, permissions), Bearer header parsing and lookup, and the subtree
 * rule that scopes a tenant:<ns> principal.
 */
#include "tests/query_tests.h"

#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *text;
	enum role role; /* ROLE_NONE: refused */
	const char *ns;
} role_rows[] = {
	{"admin", ROLE_ADMIN, ""},
	{"admission", ROLE_ADMISSION, ""},
	{"auditor", ROLE_AUDITOR, ""},
	{"tenant:tenant-acme", ROLE_TENANT, "tenant-acme"},
	{"tenant:tenant-root", ROLE_TENANT, "tenant-root"},
	{"tenant:tenant-a-b", ROLE_TENANT, "tenant-a-b"},
	{"tenant:default", ROLE_NONE, NULL},
	{"tenant:", ROLE_NONE, NULL},
	{"tenant", ROLE_NONE, NULL},
	{"Admin", ROLE_NONE, NULL},
	{"admins", ROLE_NONE, NULL},
	{"adm", ROLE_NONE, NULL},
	{"", ROLE_NONE, NULL},
	{"tenant:tenant-Acme", ROLE_NONE, NULL},
	{"tenant:tenant-acme.x", ROLE_NONE, NULL},
	{"tenant:tenant-"
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	 ROLE_NONE, NULL},
};

START_TEST(role_grammar)
{
	struct principal p;
	struct lg_error err = {0};
	int rc = query__role_parse(role_rows[_i].text,
				   strlen(role_rows[_i].text), &p, &err);

	if (role_rows[_i].role == ROLE_NONE) {
		ck_assert_int_eq(rc, LG_EINVAL);
		ck_assert_ptr_nonnull(strstr(err.msg, "unknown role"));
	} else {
		ck_assert_int_eq(rc, 0);
		ck_assert_int_eq(p.role, role_rows[_i].role);
		ck_assert_str_eq(p.ns, role_rows[_i].ns);
	}
}
END_TEST

static const struct {
	const char *text;
	int rc;		   /* 0 or the error */
	size_t n;	   /* tokens when accepted */
	const char *words; /* a word of the error message */
} file_rows[] = {
	{"abcdefghijklmnop admin\n", 0, 1, NULL},
	{"# comment\n\n  abcdefghijklmnop   auditor  \r\n"
	 "qrstuvwxyz012345\ttenant:tenant-x\n",
	 0, 2, NULL},
	{"abcdefghijklmnop admin", 0, 1, NULL},
	{"abcdefghijklmnop\n", LG_EINVAL, 0, "TOKEN ROLE"},
	{"abcdefghijklmnop admin extra\n", LG_EINVAL, 0, "TOKEN ROLE"},
	{"short admin\n", LG_EINVAL, 0, "16 to"},
	{"abcdefghijklmnop root\n", LG_EINVAL, 0, "unknown role"},
	{"abcdefghijklmnop admin\nabcdefghijklmnop auditor\n", LG_EEXIST, 0,
	 "twice"},
	{"", LG_EINVAL, 0, "no tokens"},
	{"# only a comment\n\n", LG_EINVAL, 0, "no tokens"},
	{"abcdefghijklmnop admin\nline two is bad\n", LG_EINVAL, 0, "line 2"},
};

START_TEST(token_file_syntax)
{
	struct auth a;
	struct lg_error err = {0};
	int rc = query__auth_parse(&a, file_rows[_i].text,
				   strlen(file_rows[_i].text), &err);

	ck_assert_int_eq(rc, file_rows[_i].rc);
	if (rc == 0) {
		ck_assert(a.enabled);
		ck_assert_uint_eq(a.n, file_rows[_i].n);
	} else {
		ck_assert_msg(strstr(err.msg, file_rows[_i].words) != NULL,
			      "message \"%s\" lacks \"%s\"", err.msg,
			      file_rows[_i].words);
		ck_assert_ptr_null(a.e);
	}
	query__auth_release(&a);
}
END_TEST

START_TEST(token_file_nul_and_long)
{
	static const char nul[] = "abcdefghijklmnop\0x admin\n";
	char *line = malloc(AUTH_TOKEN_MAX + 32);
	struct auth a;
	struct lg_error err = {0};

	ck_assert_int_eq(query__auth_parse(&a, nul, sizeof(nul) - 1, &err),
			 LG_EINVAL);
	memset(line, 'k', AUTH_TOKEN_MAX + 1);
	strcpy(line + AUTH_TOKEN_MAX + 1, " admin\n");
	ck_assert_int_eq(query__auth_parse(&a, line, strlen(line), &err),
			 LG_EINVAL);
	line[AUTH_TOKEN_MAX] = ' ';
	strcpy(line + AUTH_TOKEN_MAX + 1, "admin\n");
	ck_assert_int_eq(query__auth_parse(&a, line, strlen(line), &err), 0);
	/* The longest token is found; a shorter one is not. */
	memmove(line + 7, line, AUTH_TOKEN_MAX);
	memcpy(line, "Bearer ", 7);
	ck_assert_ptr_nonnull(query__auth_lookup(&a, line, 7 + AUTH_TOKEN_MAX));
	ck_assert_ptr_null(query__auth_lookup(&a, line, 6 + AUTH_TOKEN_MAX));
	ck_assert_ptr_null(query__auth_lookup(&a, "Bearer kkkk", 11));
	query__auth_release(&a);
	free(line);
}
END_TEST

static const char lookup_file[] = "abcdefghijklmnop admin\n"
				  "abcdefghijklmnopq auditor\n"
				  "tenant-token-000000 tenant:tenant-acme\n";

static const struct {
	const char *hdr;
	enum role role; /* ROLE_NONE: no principal */
} lookup_rows[] = {
	{"Bearer abcdefghijklmnop", ROLE_ADMIN},
	{"bearer abcdefghijklmnop", ROLE_ADMIN},
	{"BEARER\tabcdefghijklmnop  ", ROLE_ADMIN},
	{"Bearer abcdefghijklmnopq", ROLE_AUDITOR},
	{"Bearer tenant-token-000000", ROLE_TENANT},
	{"Bearer abcdefghijklmno", ROLE_NONE},
	{"Bearer abcdefghijklmnopqr", ROLE_NONE},
	{"Bearer Abcdefghijklmnop", ROLE_NONE},
	{"Basic abcdefghijklmnop", ROLE_NONE},
	{"Bearerabcdefghijklmnop", ROLE_NONE},
	{"Bearer ", ROLE_NONE},
	{"Bearer", ROLE_NONE},
	{"", ROLE_NONE},
	{"abcdefghijklmnop", ROLE_NONE},
};

START_TEST(bearer_lookup)
{
	struct auth a;
	const struct principal *p;

	ck_assert_int_eq(
		query__auth_parse(&a, lookup_file, strlen(lookup_file), NULL),
		0);
	p = query__auth_lookup(&a, lookup_rows[_i].hdr,
			       strlen(lookup_rows[_i].hdr));
	if (lookup_rows[_i].role == ROLE_NONE)
		ck_assert_ptr_null(p);
	else
		ck_assert_msg(p != NULL && p->role == lookup_rows[_i].role,
			      "%s", lookup_rows[_i].hdr);
	ck_assert_ptr_null(query__auth_lookup(&a, NULL, 0));
	/* The length counts too: a token that matches the zero padding of
	 * a shorter one is another token. */
	ck_assert_ptr_null(
		query__auth_lookup(&a, "Bearer abcdefghijklmnop\0", 24));
	ck_assert_ptr_null(
		query__auth_lookup(&a, "Bearer abcdefghijklmnop\0\0", 25));
	query__auth_release(&a);
}
END_TEST

static const struct {
	const char *root, *ns;
	bool in;
} subtree_rows[] = {
	{"tenant-acme", "tenant-acme", true},
	{"tenant-acme", "tenant-acme-dev", true},
	{"tenant-acme", "tenant-acme-dev-x", true},
	{"tenant-acme", "tenant-acmex", false},
	{"tenant-acme", "tenant-acm", false},
	{"tenant-acme", "tenant-beta", false},
	{"tenant-acme", "tenant-root", false},
	{"tenant-acme", "default", false},
	{"tenant-root", "tenant-root", true},
	{"tenant-root", "tenant-anything", true},
	{"tenant-root", "default", false},
	{"tenant-root", "kube-system", false},
	{"tenant-a-b", "tenant-a", false},
};

/* `cert:<CN> ROLE` lines: a CN maps to its role, is never a bearer token
 * (not even "cert:<CN>" sent as one), and may repeat only as a token. */
START_TEST(cert_lines)
{
	static const char text[] = "cert:kube-apiserver admission\n"
				   "cert:ops tenant:tenant-acme\n"
				   "cert:kube-apiserver0123456 admin\n"
				   "kube-apiserver0123456 auditor\n"
				   "bearer-only-0123456789 admin\n";
	struct auth a;
	struct lg_error err = {0};
	const struct principal *p;
	static const char dup[] = "cert:x admin\ncert:x auditor\n";
	static const char empty[] = "cert: admin\n";

	ck_assert_int_eq(query__auth_parse(&a, text, strlen(text), &err), 0);
	ck_assert_uint_eq(a.n, 5);
	p = query__auth_lookup_cert(&a, "kube-apiserver");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->role, ROLE_ADMISSION);
	p = query__auth_lookup_cert(&a, "ops");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->role, ROLE_TENANT);
	ck_assert_str_eq(p->ns, "tenant-acme");
	ck_assert_ptr_null(query__auth_lookup_cert(&a, "kube"));
	ck_assert_ptr_null(query__auth_lookup_cert(&a, "kube-apiserver0"));
	/* The third line's CN, sent as a bearer token, is nothing; the
	 * fourth line is a token, and a CN that equals it is not a cert. */
	ck_assert_ptr_null(query__auth_lookup(
		&a, "Bearer cert:kube-apiserver0123456",
		strlen("Bearer cert:kube-apiserver0123456")));
	p = query__auth_lookup(&a, "Bearer kube-apiserver0123456",
			       strlen("Bearer kube-apiserver0123456"));
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->role, ROLE_AUDITOR);
	p = query__auth_lookup_cert(&a, "kube-apiserver0123456");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->role, ROLE_ADMIN);
	/* A bearer token is no CN: a certificate named after it is nobody. */
	ck_assert_ptr_nonnull(
		query__auth_lookup(&a, "Bearer bearer-only-0123456789",
				   strlen("Bearer bearer-only-0123456789")));
	ck_assert_ptr_null(
		query__auth_lookup_cert(&a, "bearer-only-0123456789"));
	query__auth_release(&a);
	ck_assert_int_eq(query__auth_parse(&a, dup, strlen(dup), &err),
			 LG_EEXIST);
	ck_assert_int_eq(query__auth_parse(&a, empty, strlen(empty), &err),
			 LG_EINVAL);
}
END_TEST

START_TEST(subtree_scope)
{
	ck_assert_msg(query__ns_in_subtree(subtree_rows[_i].root,
					   subtree_rows[_i].ns) ==
			      subtree_rows[_i].in,
		      "%s in %s", subtree_rows[_i].ns, subtree_rows[_i].root);
}
END_TEST

/* The tenant list a principal sees (GET /v1/tenants): everything without
 * a token file or with a cluster-wide role, its own subtree for a tenant
 * (by name, so a prefix that is not an ancestor sees nothing of it). */
static const char *const list_all[] = {
	"tenant-acm",	     "tenant-acme",	 "tenant-acme-dev",
	"tenant-acme-dev-x", "tenant-acme-prod", "tenant-acmex",
	"tenant-beta",	     "tenant-root",
};
static const struct {
	enum role role; /* ROLE_NONE: no principal */
	const char *ns;
	const char *want; /* the namespaces seen, space separated */
} list_rows[] = {
	{ROLE_NONE, "",
	 "tenant-acm tenant-acme tenant-acme-dev tenant-acme-dev-x "
	 "tenant-acme-prod tenant-acmex tenant-beta tenant-root"},
	{ROLE_ADMIN, "",
	 "tenant-acm tenant-acme tenant-acme-dev tenant-acme-dev-x "
	 "tenant-acme-prod tenant-acmex tenant-beta tenant-root"},
	{ROLE_AUDITOR, "",
	 "tenant-acm tenant-acme tenant-acme-dev tenant-acme-dev-x "
	 "tenant-acme-prod tenant-acmex tenant-beta tenant-root"},
	{ROLE_ADMISSION, "",
	 "tenant-acm tenant-acme tenant-acme-dev tenant-acme-dev-x "
	 "tenant-acme-prod tenant-acmex tenant-beta tenant-root"},
	{ROLE_TENANT, "tenant-acme",
	 "tenant-acme tenant-acme-dev tenant-acme-dev-x tenant-acme-prod"},
	{ROLE_TENANT, "tenant-acme-dev", "tenant-acme-dev tenant-acme-dev-x"},
	{ROLE_TENANT, "tenant-acme-dev-x", "tenant-acme-dev-x"},
	{ROLE_TENANT, "tenant-acm", "tenant-acm"},
	{ROLE_TENANT, "tenant-beta", "tenant-beta"},
	{ROLE_TENANT, "tenant-gamma", ""},
	{ROLE_TENANT, "tenant-root",
	 "tenant-acm tenant-acme tenant-acme-dev tenant-acme-dev-x "
	 "tenant-acme-prod tenant-acmex tenant-beta tenant-root"},
};

START_TEST(tenant_list_filter)
{
	json_t *all = json_array(), *seen;
	struct principal who = {.role = list_rows[_i].role};
	char got[512] = "";
	size_t i;
	json_t *t;

	for (size_t k = 0; k < sizeof(list_all) / sizeof(list_all[0]); k++)
		json_array_append_new(all, json_pack("{s:s, s:i}", "namespace",
						     list_all[k], "n", (int)k));
	snprintf(who.ns, sizeof(who.ns), "%s", list_rows[_i].ns);
	seen = query__tenants_visible(all, who.role == ROLE_NONE ? NULL : &who);
	json_array_foreach (seen, i, t) {
		size_t n = strlen(got);

		/* The members are the objects themselves, unchanged. */
		ck_assert_ptr_eq(
			t,
			json_array_get(all, (size_t)json_integer_value(
						    json_object_get(t, "n"))));
		snprintf(got + n, sizeof(got) - n, "%s%s", n ? " " : "",
			 qjstr(t, "namespace"));
	}
	ck_assert_msg(strcmp(got, list_rows[_i].want) == 0,
		      "%s %s: saw \"%s\", want \"%s\"",
		      query__role_name(list_rows[_i].role), list_rows[_i].ns,
		      got, list_rows[_i].want);
	json_decref(seen);
	json_decref(all);
}
END_TEST

static const struct {
	mode_t mode;
	int rc;
} mode_rows[] = {
	{0600, 0},	   {0400, 0},	      {0644, LG_EINVAL},
	{0640, LG_EINVAL}, {0604, LG_EINVAL}, {0620, LG_EINVAL},
	{0602, LG_EINVAL},
};

START_TEST(token_file_permissions)
{
	char dir[] = "/tmp/gpuledger-qauth-XXXXXX", path[64], cmd[96];
	struct auth a;
	struct lg_error err = {0};
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/tokens", dir);
	f = fopen(path, "w");
	fputs("abcdefghijklmnop admin\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(path, mode_rows[_i].mode), 0);
	ck_assert_int_eq(query__auth_load(&a, path, &err), mode_rows[_i].rc);
	if (mode_rows[_i].rc != 0)
		ck_assert_ptr_nonnull(strstr(err.msg, "chmod 600"));
	else
		ck_assert_uint_eq(a.n, 1);
	query__auth_release(&a);
	/* A missing file and a directory are refused too. */
	ck_assert_int_eq(query__auth_load(&a, "/nonexistent/tokens", &err),
			 LG_EIO);
	ck_assert_int_eq(query__auth_load(&a, dir, &err), LG_EINVAL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

QUERY_PART(auth)
{
	TCase *tc = tcase_create("auth_tokens");

	tcase_add_loop_test(tc, role_grammar, 0, NROWS(role_rows));
	tcase_add_loop_test(tc, token_file_syntax, 0, NROWS(file_rows));
	tcase_add_test(tc, token_file_nul_and_long);
	tcase_add_loop_test(tc, bearer_lookup, 0, NROWS(lookup_rows));
	tcase_add_test(tc, cert_lines);
	tcase_add_loop_test(tc, subtree_scope, 0, NROWS(subtree_rows));
	tcase_add_loop_test(tc, tenant_list_filter, 0, NROWS(list_rows));
	tcase_add_loop_test(tc, token_file_permissions, 0, NROWS(mode_rows));
	suite_add_tcase(s, tc);
}
