/*
 * The route table and the role matrix (DESIGN 7).
 *
 *   route                           admin admission auditor tenant:<ns>
 *   GET  /healthz, /readyz          (no token needed: probes)
 *   GET  /metrics                     x              x
 *   GET  /v1/tenants                  x              x      its subtree only
 *   GET  /v1/tenants/{ns}             x              x      {ns} in subtree
 *   GET  /v1/tenants/{ns}/remaining   x      x       x      {ns} in subtree
 *   GET  /v1/holds                    x      x       x      its subtree only
 *   POST /v1/admission                x      x
 *   POST /v1/declarations             x      x
 *   POST /v1/peer/verdicts            x   (and peer: a member's door,
 *                                    forwarding to the sequencer)
 *   GET  /v1/verdicts/{id}, /v1/verdicts  x          x
 *   GET  /v1/state                    x              x
 *   GET  /v1/events                   x              x     (and peer: a
 *                                    member joining from another, --peer)
 *   GET  /v1/export                   x              x      its subtree only
 *   GET  /v1/reconcile                x              x      its subtree only
 *   GET  /v1/classes, .../capacity    x              x
 *   GET  /ui, /ui/{file}            (no token needed: static files; the
 *                                    page calls the API with the user's)
 *   GET  /v1/checkpoint, /v1/proof/..  x            x
 *
 * Tenants are read-only and see only their own subtree (an export keeps
 * only its rows: showback), so cluster-wide
 * reads (state, events, classes, metrics with every tenant's gauges) and
 * verdicts (whose requests may name other tenants) are closed to them.
 * Without a token file every route is open to anyone who can reach the
 * loopback address.
 */
#include "query/query_int.h"

#include <string.h>

#define READERS (ROLE_BIT(ROLE_ADMIN) | ROLE_BIT(ROLE_AUDITOR))
#define WRITERS (ROLE_BIT(ROLE_ADMIN) | ROLE_BIT(ROLE_ADMISSION))

/* One row per route: the metrics label, method, path pattern ("*" is a
 * parameter), handler, the roles that may use it and how a tenant may. */
#define ROUTE(id, m, label, h, r, ts, ...) \
	[id] = {.name = label,             \
		.method = m,               \
		.segs = {__VA_ARGS__},     \
		.fn = h,                   \
		.roles = r,                \
		.tenant = ts,              \
		.public = (r) == 0}

const struct route_row query__routes[R_MAX] = {
	ROUTE(R_HEALTHZ, HTTP_GET, "/healthz", query__handle_healthz, 0,
	      TS_DENY, "healthz"),
	ROUTE(R_READYZ, HTTP_GET, "/readyz", query__handle_readyz, 0, TS_DENY,
	      "readyz"),
	[R_UI] = {.name = "/ui",
		  .method = HTTP_GET,
		  .segs = {"ui"},
		  .fn = query__handle_ui,
		  .public = true,
		  .headers = query__ui_headers},
	[R_UI_ASSET] = {.name = "/ui/{file}",
			.method = HTTP_GET,
			.segs = {"ui", "*"},
			.fn = query__handle_ui_asset,
			.public = true,
			.headers = query__ui_headers},
	ROUTE(R_METRICS, HTTP_GET, "/metrics", query__handle_metrics, READERS,
	      TS_DENY, "metrics"),
	ROUTE(R_TENANTS, HTTP_GET, "/v1/tenants", query__handle_tenants,
	      READERS, TS_FILTER, "v1", "tenants"),
	ROUTE(R_TENANT, HTTP_GET, "/v1/tenants/{ns}", query__handle_tenant,
	      READERS, TS_PARAM, "v1", "tenants", "*"),
	ROUTE(R_REMAINING, HTTP_GET, "/v1/tenants/{ns}/remaining",
	      query__handle_remaining, READERS | ROLE_BIT(ROLE_ADMISSION),
	      TS_PARAM, "v1", "tenants", "*", "remaining"),
	ROUTE(R_HOLDS, HTTP_GET, "/v1/holds", query__handle_holds,
	      READERS | ROLE_BIT(ROLE_ADMISSION), TS_FILTER, "v1", "holds"),
	ROUTE(R_ADMISSION, HTTP_POST, "/v1/admission", query__handle_admission,
	      WRITERS, TS_DENY, "v1", "admission"),
	ROUTE(R_DECLARATIONS, HTTP_POST, "/v1/declarations",
	      query__handle_declaration, WRITERS, TS_DENY, "v1",
	      "declarations"),
	ROUTE(R_PEER_VERDICTS, HTTP_POST, "/v1/peer/verdicts",
	      query__handle_peer_verdicts,
	      ROLE_BIT(ROLE_ADMIN) | ROLE_BIT(ROLE_PEER), TS_DENY, "v1", "peer",
	      "verdicts"),
	ROUTE(R_VERDICT, HTTP_GET, "/v1/verdicts/{id}", query__handle_verdict,
	      READERS, TS_DENY, "v1", "verdicts", "*"),
	ROUTE(R_VERDICTS, HTTP_GET, "/v1/verdicts", query__handle_verdicts,
	      READERS, TS_DENY, "v1", "verdicts"),
	ROUTE(R_STATE, HTTP_GET, "/v1/state", query__handle_state, READERS,
	      TS_DENY, "v1", "state"),
	ROUTE(R_EVENTS, HTTP_GET, "/v1/events", query__handle_events,
	      READERS | ROLE_BIT(ROLE_PEER), TS_DENY, "v1", "events"),
	ROUTE(R_EXPORT, HTTP_GET, "/v1/export", query__handle_export, READERS,
	      TS_FILTER, "v1", "export"),
	ROUTE(R_RECONCILE, HTTP_GET, "/v1/reconcile", query__handle_reconcile,
	      READERS, TS_FILTER, "v1", "reconcile"),
	ROUTE(R_CLASSES, HTTP_GET, "/v1/classes", query__handle_classes,
	      READERS, TS_DENY, "v1", "classes"),
	ROUTE(R_CAPACITY, HTTP_GET, "/v1/classes/{c}/capacity",
	      query__handle_capacity, READERS, TS_DENY, "v1", "classes", "*",
	      "capacity"),
	ROUTE(R_CHECKPOINT, HTTP_GET, "/v1/checkpoint",
	      query__handle_checkpoint, READERS, TS_DENY, "v1", "checkpoint"),
	ROUTE(R_PROOF_INCLUSION, HTTP_GET, "/v1/proof/inclusion",
	      query__handle_proof_inclusion, READERS, TS_DENY, "v1", "proof",
	      "inclusion"),
	ROUTE(R_PROOF_CONSISTENCY, HTTP_GET, "/v1/proof/consistency",
	      query__handle_proof_consistency, READERS, TS_DENY, "v1", "proof",
	      "consistency"),
};

/* Whether the pattern matches the segments, capturing "*" into params. */
static bool route_fits(const struct route_row *r, char *const *seg, size_t n,
		       const char **params)
{
	size_t i, np = 0;

	for (i = 0; i < n && r->segs[i] != NULL; i++) {
		if (strcmp(r->segs[i], "*") == 0) {
			if (seg[i][0] == '\0' || np == ROUTE_PARAMS)
				return false;
			params[np++] = seg[i];
		} else if (strcmp(r->segs[i], seg[i]) != 0) {
			return false;
		}
	}
	return i == n && r->segs[i] == NULL;
}

enum route_id query__route_match(unsigned method, char *const *seg, size_t n,
				 const char **params, int *status)
{
	bool path_known = false;

	*status = 404;
	for (int r = 0; r < R_MAX; r++) {
		const char *p[ROUTE_PARAMS] = {NULL, NULL};

		if (!route_fits(&query__routes[r], seg, n, p))
			continue;
		path_known = true;
		if (query__routes[r].method != method)
			continue;
		params[0] = p[0];
		params[1] = p[1];
		*status = 200;
		return (enum route_id)r;
	}
	if (path_known)
		*status = 405;
	return R_NONE;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..len) into out (cap bytes with the NUL); plus is a
 * space only in query strings. Returns the length or -1. */
static long pct_decode(const char *s, size_t len, bool plus, char *out,
		       size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi = i + 2 < len ? hexval(s[i + 1]) : -1;
			int lo = hi >= 0 ? hexval(s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus) {
			c = ' ';
		}
		if (c == 0 || n + 1 >= cap)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return (long)n;
}

int query__target_split(const char *url, size_t len, size_t *path_off,
			size_t *path_len, size_t *query_off, size_t *query_len)
{
	struct http_parser_url u;
	const char *q;

	*query_off = *query_len = 0;
	if (len > 0 && url[0] == '/' && memchr(url, '#', len) == NULL) {
		q = memchr(url, '?', len);
		*path_off = 0;
		*path_len = q != NULL ? (size_t)(q - url) : len;
		if (q != NULL) {
			*query_off = *path_len + 1;
			*query_len = len - *query_off;
		}
		return 0;
	}
	http_parser_url_init(&u);
	if (len == 0 || http_parser_parse_url(url, len, 0, &u) != 0 ||
	    !(u.field_set & (1 << UF_PATH)))
		return -1;
	*path_off = u.field_data[UF_PATH].off;
	*path_len = u.field_data[UF_PATH].len;
	if (u.field_set & (1 << UF_QUERY)) {
		*query_off = u.field_data[UF_QUERY].off;
		*query_len = u.field_data[UF_QUERY].len;
	}
	return 0;
}

int query__path_split(const char *path, size_t len, char **seg, size_t *n,
		      char *out, size_t cap)
{
	size_t i = 1, used = 0;

	*n = 0;
	if (len == 0 || path[0] != '/')
		return -1;
	/* "/" and a trailing slash add no segment: "/v1/tenants/" is
	 * "/v1/tenants". */
	while (i < len) {
		const char *s = path + i, *e = memchr(s, '/', len - i);
		size_t sl = e ? (size_t)(e - s) : len - i;
		long dl;

		i += sl + 1;
		if (sl == 0 && i >= len)
			break;
		if (*n == ROUTE_SEGS_MAX)
			return -1;
		dl = pct_decode(s, sl, false, out + used, cap - used);
		if (dl < 0 || memchr(out + used, '/', (size_t)dl) != NULL)
			return -1;
		seg[(*n)++] = out + used;
		used += (size_t)dl + 1;
	}
	return 0;
}

int query__param_next(const char *q, size_t qlen, size_t *pos,
		      const char **name, size_t *nlen, const char **val,
		      size_t *vlen)
{
	while (*pos < qlen) {
		const char *p = q + *pos, *amp = memchr(p, '&', qlen - *pos);
		size_t pl = amp ? (size_t)(amp - p) : qlen - *pos;
		const char *eq = memchr(p, '=', pl);

		*pos += pl + 1;
		*nlen = eq ? (size_t)(eq - p) : pl;
		if (*nlen == 0)
			continue; /* "a=1&&b=2" */
		*name = p;
		*val = eq ? eq + 1 : NULL;
		*vlen = eq ? pl - *nlen - 1 : 0;
		return 1;
	}
	return 0;
}

long query__param_decode(const char *val, size_t len, char *out, size_t cap)
{
	long n;

	if (val == NULL) {
		out[0] = '\0';
		return 0;
	}
	n = pct_decode(val, len, true, out, cap);
	return n < 0 ? -2 : n;
}

long query__param(const char *q, size_t qlen, const char *key, char *out,
		  size_t cap)
{
	size_t klen = strlen(key), pos = 0, nl, vl;
	const char *n, *v;

	while (query__param_next(q, qlen, &pos, &n, &nl, &v, &vl))
		if (nl == klen && memcmp(n, key, klen) == 0)
			return query__param_decode(v, vl, out, cap);
	return -1;
}

int query__route_access(const struct route_row *r, bool auth_on,
			const struct principal *who, const char *ns)
{
	if (r->public || !auth_on)
		return 0;
	if (who == NULL)
		return 401;
	if (who->role != ROLE_TENANT)
		return (r->roles & ROLE_BIT(who->role)) ? 0 : 403;
	switch (r->tenant) {
	case TS_FILTER:
		return 0;
	case TS_PARAM:
		return ns != NULL && query__ns_in_subtree(who->ns, ns) ? 0
								       : 403;
	case TS_DENY:
		break;
	}
	return 403;
}
