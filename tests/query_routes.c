/*
 * The route table: path splitting and decoding, matching (404 vs 405),
 * query parameters, and the role matrix of query/routes.c checked against
 * an independent, hand-written copy of the matrix.
 */
#include "tests/query_tests.h"

static const struct {
	const char *path;
	int rc;
	size_t n;
	const char *segs[6];
} split_rows[] = {
	{"/", 0, 0, {NULL}},
	{"/healthz", 0, 1, {"healthz"}},
	{"/v1/tenants/", 0, 2, {"v1", "tenants"}},
	{"/v1/tenants/tenant%2Dacme", 0, 3, {"v1", "tenants", "tenant-acme"}},
	{"/v1/tenants/a+b", 0, 3, {"v1", "tenants", "a+b"}},
	{"//healthz", 0, 2, {"", "healthz"}},
	{"/a/b/c/d/e", 0, 5, {"a", "b", "c", "d", "e"}},
	{"/a/b/c/d/e/f", -1, 0, {NULL}},
	{"/v1/%2F", -1, 0, {NULL}},
	{"/v1/%00", -1, 0, {NULL}},
	{"/v1/%zz", -1, 0, {NULL}},
	{"/v1/%4", -1, 0, {NULL}},
	{"v1/tenants", -1, 0, {NULL}},
	{"", -1, 0, {NULL}},
};

START_TEST(path_split_rows)
{
	char *seg[ROUTE_SEGS_MAX + 1], buf[256];
	size_t n = 99;
	int rc = query__path_split(split_rows[_i].path,
				   strlen(split_rows[_i].path), seg, &n, buf,
				   sizeof(buf));

	ck_assert_int_eq(rc, split_rows[_i].rc);
	if (rc != 0)
		return;
	ck_assert_uint_eq(n, split_rows[_i].n);
	for (size_t i = 0; i < n; i++)
		ck_assert_str_eq(seg[i], split_rows[_i].segs[i]);
}
END_TEST

static const struct {
	unsigned method;
	const char *path;
	enum route_id route;
	int status;
	const char *param;
} match_rows[] = {
	{HTTP_GET, "/healthz", R_HEALTHZ, 200, NULL},
	{HTTP_GET, "/readyz", R_READYZ, 200, NULL},
	{HTTP_GET, "/ui", R_UI, 200, NULL},
	{HTTP_GET, "/ui/", R_UI, 200, NULL},
	{HTTP_GET, "/ui/app.js", R_UI_ASSET, 200, "app.js"},
	{HTTP_POST, "/ui", R_NONE, 405, NULL},
	{HTTP_GET, "/ui/a/b", R_NONE, 404, NULL},
	{HTTP_GET, "/metrics", R_METRICS, 200, NULL},
	{HTTP_GET, "/v1/tenants", R_TENANTS, 200, NULL},
	{HTTP_GET, "/v1/tenants/tenant-acme", R_TENANT, 200, "tenant-acme"},
	{HTTP_GET, "/v1/tenants/tenant-acme/remaining", R_REMAINING, 200,
	 "tenant-acme"},
	{HTTP_GET, "/v1/holds", R_HOLDS, 200, NULL},
	{HTTP_POST, "/v1/admission", R_ADMISSION, 200, NULL},
	{HTTP_POST, "/v1/declarations", R_DECLARATIONS, 200, NULL},
	{HTTP_GET, "/v1/verdicts/17", R_VERDICT, 200, "17"},
	{HTTP_GET, "/v1/verdicts", R_VERDICTS, 200, NULL},
	{HTTP_GET, "/v1/state", R_STATE, 200, NULL},
	{HTTP_GET, "/v1/events", R_EVENTS, 200, NULL},
	{HTTP_GET, "/v1/export", R_EXPORT, 200, NULL},
	{HTTP_GET, "/v1/reconcile", R_RECONCILE, 200, NULL},
	{HTTP_GET, "/v1/classes", R_CLASSES, 200, NULL},
	{HTTP_GET, "/v1/classes/h100/capacity", R_CAPACITY, 200, "h100"},
	{HTTP_POST, "/v1/tenants", R_NONE, 405, NULL},
	{HTTP_GET, "/v1/admission", R_NONE, 405, NULL},
	{HTTP_DELETE, "/v1/tenants/x", R_NONE, 405, NULL},
	{HTTP_HEAD, "/healthz", R_NONE, 405, NULL},
	{HTTP_GET, "/v1", R_NONE, 404, NULL},
	{HTTP_GET, "/v2/tenants", R_NONE, 404, NULL},
	{HTTP_GET, "/v1/tenants/a/b", R_NONE, 404, NULL},
	{HTTP_GET, "/v1/tenants//remaining", R_NONE, 404, NULL},
	{HTTP_GET, "/v1/classes/h100", R_NONE, 404, NULL},
	{HTTP_GET, "/", R_NONE, 404, NULL},
};

START_TEST(route_match_rows)
{
	char *seg[ROUTE_SEGS_MAX + 1], buf[256];
	const char *params[ROUTE_PARAMS] = {NULL, NULL};
	size_t n;
	int status = 0;
	enum route_id r;

	ck_assert_int_eq(query__path_split(match_rows[_i].path,
					   strlen(match_rows[_i].path), seg, &n,
					   buf, sizeof(buf)),
			 0);
	r = query__route_match(match_rows[_i].method, seg, n, params, &status);
	ck_assert_int_eq(r, match_rows[_i].route);
	ck_assert_int_eq(status, match_rows[_i].status);
	if (match_rows[_i].param != NULL)
		ck_assert_str_eq(params[0], match_rows[_i].param);
}
END_TEST

static const struct {
	const char *query, *key;
	long rc;
	const char *value;
} param_rows[] = {
	{"verify=1", "verify", 1, "1"},
	{"a=1&verify=true&b", "verify", 4, "true"},
	{"verify", "verify", 0, ""},
	{"verifyx=1", "verify", -1, NULL},
	{"", "verify", -1, NULL},
	{"at=2026-03-01T12%3A00%3A00Z", "at", 20, "2026-03-01T12:00:00Z"},
	{"at=a+b", "at", 3, "a b"},
	{"at=%zz", "at", -2, NULL},
	{"at=%00", "at", -2, NULL},
	{"from=1&from=2", "from", 1, "1"},
	{"limit=123456789012345678901234567890123", "limit", -2, NULL},
};

START_TEST(query_param_rows)
{
	char out[32];
	const char *q = param_rows[_i].query;
	long rc = query__param(q, strlen(q), param_rows[_i].key, out,
			       sizeof(out));

	ck_assert_int_eq(rc, param_rows[_i].rc);
	if (rc >= 0)
		ck_assert_str_eq(out, param_rows[_i].value);
}
END_TEST

/* The matrix written out by hand: per route the status for admin,
 * admission, auditor, a tenant whose subtree holds the path's {ns}, a
 * tenant whose subtree does not, and no token. */
static const struct {
	enum route_id r;
	const char *ns;
	int admin, admission, auditor, peer, t_in, t_out, none;
} matrix[] = {
	{R_HEALTHZ, NULL, 0, 0, 0, 0, 0, 0, 0},
	{R_READYZ, NULL, 0, 0, 0, 0, 0, 0, 0},
	{R_UI, NULL, 0, 0, 0, 0, 0, 0, 0},
	{R_UI_ASSET, "app.js", 0, 0, 0, 0, 0, 0, 0},
	{R_METRICS, NULL, 0, 403, 0, 403, 403, 403, 401},
	{R_TENANTS, NULL, 0, 403, 0, 403, 0, 0, 401},
	{R_TENANT, "tenant-acme-dev", 0, 403, 0, 403, 0, 403, 401},
	{R_REMAINING, "tenant-acme-dev", 0, 0, 0, 403, 0, 403, 401},
	{R_ADMISSION, NULL, 0, 0, 403, 403, 403, 403, 401},
	{R_DECLARATIONS, NULL, 0, 0, 403, 403, 403, 403, 401},
	{R_PEER_VERDICTS, NULL, 0, 403, 403, 0, 403, 403, 401},
	{R_VERDICT, "1", 0, 403, 0, 403, 403, 403, 401},
	{R_VERDICTS, NULL, 0, 403, 0, 403, 403, 403, 401},
	{R_STATE, NULL, 0, 403, 0, 403, 403, 403, 401},
	/* The peer role reads the log: a member joining from another (--peer). */
	{R_EVENTS, NULL, 0, 403, 0, 0, 403, 403, 401},
	{R_EXPORT, NULL, 0, 403, 0, 403, 0, 0, 401},
	{R_RECONCILE, NULL, 0, 403, 0, 403, 0, 0, 401},
	{R_CLASSES, NULL, 0, 403, 0, 403, 403, 403, 401},
	{R_CAPACITY, "h100", 0, 403, 0, 403, 403, 403, 401},
	{R_CHECKPOINT, NULL, 0, 403, 0, 403, 403, 403, 401},
	{R_PROOF_INCLUSION, NULL, 0, 403, 0, 403, 403, 403, 401},
	{R_PROOF_CONSISTENCY, NULL, 0, 403, 0, 403, 403, 403, 401},
	/* DESIGN 3.7: a tenant sees the holds of its own subtree only. */
	{R_HOLDS, NULL, 0, 0, 0, 403, 0, 0, 401},
};

START_TEST(role_matrix)
{
	const struct route_row *r = &query__routes[matrix[_i].r];
	const char *ns = matrix[_i].ns;
	struct principal admin = {ROLE_ADMIN, ""}, adm = {ROLE_ADMISSION, ""};
	struct principal aud = {ROLE_AUDITOR, ""}, in = {ROLE_TENANT, ""};
	struct principal peer = {ROLE_PEER, ""};
	struct principal out = {ROLE_TENANT, ""};

	strcpy(in.ns, "tenant-acme");
	strcpy(out.ns, "tenant-beta");
	ck_assert_int_eq(query__route_access(r, true, &admin, ns),
			 matrix[_i].admin);
	ck_assert_int_eq(query__route_access(r, true, &adm, ns),
			 matrix[_i].admission);
	ck_assert_int_eq(query__route_access(r, true, &aud, ns),
			 matrix[_i].auditor);
	ck_assert_int_eq(query__route_access(r, true, &peer, ns),
			 matrix[_i].peer);
	ck_assert_int_eq(query__route_access(r, true, &in, ns),
			 matrix[_i].t_in);
	ck_assert_int_eq(query__route_access(r, true, &out, ns),
			 matrix[_i].t_out);
	ck_assert_int_eq(query__route_access(r, true, NULL, ns),
			 matrix[_i].none);
	/* Without a token file every route is open. */
	ck_assert_int_eq(query__route_access(r, false, NULL, ns), 0);
}
END_TEST

START_TEST(matrix_covers_every_route)
{
	bool seen[R_MAX] = {false};

	for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++)
		seen[matrix[i].r] = true;
	for (int r = 0; r < R_MAX; r++) {
		ck_assert_msg(seen[r], "route %s is not in the matrix",
			      query__routes[r].name);
		ck_assert_ptr_nonnull(query__routes[r].fn);
		ck_assert_ptr_nonnull(query__routes[r].name);
	}
}
END_TEST

/* The console's files are compiled in, each with its type, and every
 * /ui/ file the page names is one of them. */
START_TEST(ui_assets_embedded)
{
	const struct ui_asset *index = query__ui_asset_find("index.html");
	const char *p;
	int named = 0;

	ck_assert_ptr_nonnull(index);
	ck_assert_uint_ge(query__ui_assets_n, 4);
	for (size_t i = 0; i < query__ui_assets_n; i++) {
		ck_assert_uint_gt(query__ui_assets[i].len, 0);
		ck_assert_int_eq(
			query__ui_assets[i].data[query__ui_assets[i].len], 0);
		ck_assert_str_ne(
			query__ui_content_type(query__ui_assets[i].name),
			"text/plain; charset=utf-8");
		ck_assert_ptr_eq(query__ui_asset_find(query__ui_assets[i].name),
				 &query__ui_assets[i]);
	}
	ck_assert_ptr_null(query__ui_asset_find("nope.js"));
	ck_assert_ptr_null(query__ui_asset_find(""));
	ck_assert_str_eq(query__ui_content_type("x.css"),
			 "text/css; charset=utf-8");
	ck_assert_str_eq(query__ui_content_type("js"),
			 "text/plain; charset=utf-8");
	for (p = (const char *)index->data; (p = strstr(p, "\"/ui/")) != NULL;
	     p++) {
		char name[64];
		size_t n = strcspn(p + 5, "\"");

		ck_assert_uint_lt(n, sizeof(name));
		memcpy(name, p + 5, n);
		name[n] = '\0';
		ck_assert_msg(query__ui_asset_find(name) != NULL,
			      "index.html names /ui/%s, not compiled in", name);
		named++;
	}
	ck_assert_int_ge(named, 3);
	ck_assert_ptr_nonnull(strstr((const char *)index->data,
				     "<script src=\"/ui/app.js\""));
	/* No inline script or style: the CSP would block them. */
	ck_assert_ptr_null(strstr((const char *)index->data, "<script>"));
	ck_assert_ptr_null(strstr((const char *)index->data, "style=\""));
	ck_assert_ptr_nonnull(strstr(query__ui_headers,
				     "Content-Security-Policy: "
				     "default-src 'none';"));
	ck_assert_ptr_eq(query__routes[R_UI].headers, query__ui_headers);
	ck_assert_ptr_eq(query__routes[R_UI_ASSET].headers, query__ui_headers);
	ck_assert_ptr_null(query__routes[R_TENANTS].headers);
}
END_TEST

/* query__target_split is http_parser_parse_url's path and query for every
 * target the request parser accepts (the only ones dispatch sees): random
 * targets over bytes that matter to either ('/', '?', '#', '%', ':', '@',
 * high bytes...), seeded (GPULEDGER_SEED), each fed to http-parser as a
 * request line first. */
struct target_seen {
	char url[128];
	size_t len;
};

static int target_on_url(http_parser *p, const char *at, size_t len)
{
	struct target_seen *t = p->data;

	if (t->len + len >= sizeof(t->url))
		return -1;
	memcpy(t->url + t->len, at, len);
	t->len += len;
	return 0;
}

START_TEST(target_split_is_parse_url)
{
	static const char alphabet[] = "/?#%:@.-_~aZ09=&+;!$'()*,[]\x80\xff";
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e != NULL ? strtoull(e, NULL, 0) : 20261201, x = seed;
	http_parser_settings set = {.on_url = target_on_url};
	unsigned accepted = 0, origin = 0;

	fprintf(stderr, "target_split_is_parse_url: seed %llu\n",
		(unsigned long long)seed);
	for (int i = 0; i < 200000; i++) {
		char req[256], target[64];
		size_t n, k = 0, po, pl, qo, ql;
		struct target_seen t = {.len = 0};
		struct http_parser_url u;
		http_parser hp;
		int rc, want;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		n = 1 + (size_t)(x >> 59) % 24;
		for (size_t j = 0; j < n; j++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			target[k++] = j == 0 && (x >> 40) % 8 != 0
					      ? '/'
					      : alphabet[(x >> 33) %
							 (sizeof(alphabet) - 1)];
		}
		n = (size_t)snprintf(req, sizeof(req),
				     "GET %.*s HTTP/1.1\r\n\r\n", (int)k,
				     target);
		http_parser_init(&hp, HTTP_REQUEST);
		hp.data = &t;
		if (http_parser_execute(&hp, &set, req, n) != n ||
		    HTTP_PARSER_ERRNO(&hp) != HPE_OK || t.len == 0)
			continue;
		accepted++;
		origin += t.url[0] == '/' && memchr(t.url, '#', t.len) == NULL;
		http_parser_url_init(&u);
		want = http_parser_parse_url(t.url, t.len, 0, &u) == 0 &&
				       (u.field_set & (1 << UF_PATH))
			       ? 0
			       : -1;
		rc = query__target_split(t.url, t.len, &po, &pl, &qo, &ql);
		ck_assert_msg(rc == want, "seed %llu: \"%.*s\": %d, want %d",
			      (unsigned long long)seed, (int)t.len, t.url, rc,
			      want);
		if (rc != 0)
			continue;
		ck_assert_msg(po == u.field_data[UF_PATH].off &&
				      pl == u.field_data[UF_PATH].len,
			      "seed %llu: \"%.*s\": path", (unsigned long long)seed,
			      (int)t.len, t.url);
		if (u.field_set & (1 << UF_QUERY))
			ck_assert_msg(ql == u.field_data[UF_QUERY].len &&
					      (ql == 0 ||
					       qo == u.field_data[UF_QUERY].off),
				      "seed %llu: \"%.*s\": query",
				      (unsigned long long)seed, (int)t.len, t.url);
		else
			ck_assert_msg(ql == 0, "seed %llu: \"%.*s\": query",
				      (unsigned long long)seed, (int)t.len,
				      t.url);
	}
	/* The sample reaches both paths. */
	ck_assert_uint_gt(origin, 1000);
	ck_assert_uint_gt(accepted - origin, 100);
}
END_TEST

#define NROWS(a) (int)(sizeof(a) / sizeof(a[0]))

QUERY_PART(routes)
{
	TCase *tc = tcase_create("routes_table");

	tcase_add_loop_test(tc, path_split_rows, 0, NROWS(split_rows));
	tcase_add_loop_test(tc, route_match_rows, 0, NROWS(match_rows));
	tcase_add_loop_test(tc, query_param_rows, 0, NROWS(param_rows));
	tcase_add_loop_test(tc, role_matrix, 0, NROWS(matrix));
	tcase_add_test(tc, matrix_covers_every_route);
	tcase_add_test(tc, ui_assets_embedded);
	tcase_add_test(tc, target_split_is_parse_url);
	/* 200,000 parses: seconds under AddressSanitizer on a loaded
	 * machine, past Check's default of 4. */
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
}
