/*
 * The pure half of the etcd client: what an attempt's outcome is (DESIGN 11
 * rule 1), the endpoint list, the JSON bodies of requests and the parsing
 * of answers, the framing of a watch stream, and the key layout. Nothing
 * here does I/O, so the unit suite can hold every rule against it.
 */
#include "etcd/etcd_int.h"
#include "model/tlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Rule 1: a timeout is not a failure */

const char *etcd__outcome_name(enum etcd_outcome o)
{
	static const char *const names[] = {
		[ETCD_COMMITTED] = "committed",
		[ETCD_COMPARE_FAILED] = "compare-failed",
		[ETCD_INDETERMINATE] = "indeterminate",
		[ETCD_NOT_APPLIED] = "not-applied",
	};

	return (unsigned)o < sizeof(names) / sizeof(names[0]) ? names[o] : "?";
}

#define ANY_T	 (-1)
#define ANY_SENT (-1)

/* DESIGN 11 rule 1 as a table, read top to bottom, the first matching row
 * deciding. A request may have been applied as soon as its whole body has
 * left us: from then on, anything but an answer from etcd that says
 * otherwise is INDETERMINATE (a timeout, a reset, an end of stream, a
 * gateway 5xx: etcd may have committed the txn and lost only the answer),
 * and the caller must re-send the identical txn until it learns the
 * outcome. Only what cannot have reached etcd's apply is NOT_APPLIED: no
 * connection (resolution, TCP or TLS failed), a body that did not leave in
 * full (the gateway decodes nothing less), and etcd's own refusals before
 * it proposes anything (too large, too many operations, no space, auth, a
 * malformed request). An answer we cannot read (too big for our bound,
 * not JSON) may say "committed": INDETERMINATE. The last row makes
 * anything unforeseen INDETERMINATE, the side that loses nothing. */
/* One row a line or two, as a table reads. */
/* clang-format off */
static const struct rule1_row {
	int transport; /* enum etcd_transport, or ANY_T */
	int sent;      /* 0, 1, or ANY_SENT */
	long http_lo, http_hi;
	const char *error; /* a phrase of the gateway's error, or NULL */
	struct etcd_rule1 v;
} rule1[] = {
	/* Nothing reached etcd. */
	{ETCD_T_NO_CONNECT, ANY_SENT, 0, 0, NULL,
	 {ETCD_NOT_APPLIED, LG_EIO, "could not connect"}},
	/* etcd answered. */
	{ETCD_T_OK, ANY_SENT, 200, 299, NULL, {ETCD_COMMITTED, 0, "answered"}},
	{ETCD_T_OK, ANY_SENT, 408, 408, NULL,
	 {ETCD_INDETERMINATE, LG_EIO, "etcd gave up waiting (408)"}},
	{ETCD_T_OK, ANY_SENT, 500, 599, NULL,
	 {ETCD_INDETERMINATE, LG_EIO, "gateway error"}},
	{ETCD_T_OK, ANY_SENT, 400, 499, "request is too large",
	 {ETCD_NOT_APPLIED, LG_ELIMIT, "the request is too large"}},
	{ETCD_T_OK, ANY_SENT, 400, 499, "larger than max",
	 {ETCD_NOT_APPLIED, LG_ELIMIT, "the request is too large"}},
	{ETCD_T_OK, ANY_SENT, 400, 499, "too many operations",
	 {ETCD_NOT_APPLIED, LG_ELIMIT, "too many operations in the txn"}},
	{ETCD_T_OK, ANY_SENT, 400, 499, "database space exceeded",
	 {ETCD_NOT_APPLIED, LG_EFULL, "etcd has no space (NOSPACE alarm)"}},
	{ETCD_T_OK, ANY_SENT, 401, 401, NULL,
	 {ETCD_NOT_APPLIED, LG_EINVAL, "authentication failed"}},
	{ETCD_T_OK, ANY_SENT, 403, 403, NULL,
	 {ETCD_NOT_APPLIED, LG_EINVAL, "permission denied"}},
	{ETCD_T_OK, ANY_SENT, 404, 404, NULL,
	 {ETCD_NOT_APPLIED, LG_ENOENT, "not found"}},
	{ETCD_T_OK, ANY_SENT, 400, 499, NULL,
	 {ETCD_NOT_APPLIED, LG_EINVAL, "etcd refused the request"}},
	/* No answer: what matters is whether the body left in full. */
	{ANY_T, 0, 0, 0, NULL,
	 {ETCD_NOT_APPLIED, LG_EIO, "the request was not sent in full"}},
	{ETCD_T_TIMEOUT, 1, 0, 0, NULL,
	 {ETCD_INDETERMINATE, LG_EIO, "timed out after the request was sent"}},
	{ETCD_T_BROKEN, 1, 0, 0, NULL,
	 {ETCD_INDETERMINATE, LG_EIO,
	  "the connection was reset or closed before the answer"}},
	{ETCD_T_TOO_BIG, 1, 0, 0, NULL,
	 {ETCD_INDETERMINATE, LG_ELIMIT, "the answer exceeds our bound"}},
	/* Anything unforeseen. */
	{ANY_T, ANY_SENT, 0, 0, NULL,
	 {ETCD_INDETERMINATE, LG_EIO, "an answer we cannot place"}},
};
/* clang-format on */

static bool row_matches(const struct rule1_row *r, const struct etcd_attempt *a)
{
	if (r->transport != ANY_T && r->transport != (int)a->transport)
		return false;
	if (r->sent != ANY_SENT && r->sent != (int)a->sent)
		return false;
	if (r->http_lo != 0 &&
	    (a->http_status < r->http_lo || a->http_status > r->http_hi))
		return false;
	if (r->error != NULL &&
	    (a->error == NULL || strstr(a->error, r->error) == NULL))
		return false;
	return true;
}

struct etcd_rule1 etcd__classify(const struct etcd_attempt *a)
{
	size_t n = sizeof(rule1) / sizeof(rule1[0]);

	LG_ASSERT(a != NULL);
	for (size_t i = 0; i < n; i++)
		if (row_matches(&rule1[i], a))
			return rule1[i].v;
	return rule1[n - 1].v;
}

/* ---------------------------------------------------------------------- */
/* Endpoints */

int etcd__endpoints_parse(const char *list, char *buf, size_t cap,
			  const char **urls, size_t *n, struct lg_error *err)
{
	size_t used = 0;
	const char *p = list;

	LG_ASSERT(buf != NULL && urls != NULL && n != NULL);
	*n = 0;
	if (list == NULL || list[0] == '\0')
		return lg_error_set(err, LG_EINVAL,
				    "--etcd URL[,URL...] is "
				    "required");
	for (;;) {
		size_t len = strcspn(p, ","), sl, hl;
		const char *host;

		if (len == 0)
			return lg_error_set(err, LG_EINVAL,
					    "--etcd: an empty URL in \"%s\"",
					    list);
		if (*n == ETCD_ENDPOINTS_MAX)
			return lg_error_set(err, LG_EINVAL,
					    "--etcd: more than %d URLs",
					    ETCD_ENDPOINTS_MAX);
		if (len >= 7 && strncmp(p, "http://", 7) == 0)
			sl = 7;
		else if (len >= 8 && strncmp(p, "https://", 8) == 0)
			sl = 8;
		else
			return lg_error_set(err, LG_EINVAL,
					    "--etcd: \"%.*s\" is not an "
					    "http:// or https:// URL",
					    (int)(len > 80 ? 80 : len), p);
		if (len > sl && p[len - 1] == '/')
			len--;
		if (len > ETCD_URL_MAX || used + len + 1 > cap)
			return lg_error_set(err, LG_EINVAL,
					    "--etcd: a URL longer than %d "
					    "bytes",
					    ETCD_URL_MAX);
		host = p + sl;
		hl = len - sl;
		if (hl == 0 || memchr(host, '/', hl) != NULL ||
		    memchr(host, '?', hl) != NULL ||
		    memchr(host, ' ', hl) != NULL)
			return lg_error_set(err, LG_EINVAL,
					    "--etcd: \"%.*s\" is not "
					    "SCHEME://HOST[:PORT]",
					    (int)len, p);
		memcpy(buf + used, p, len);
		buf[used + len] = '\0';
		urls[(*n)++] = buf + used;
		used += len + 1;
		p += strcspn(p, ",");
		if (*p == '\0')
			break;
		p++;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Bodies */

static json_t *b64_json(const void *p, size_t n)
{
	char *s = lg_xmalloc(4 * ((n + 2) / 3) + 1);
	json_t *v;

	note_b64_encode(p, n, s);
	v = json_string(s);
	free(s);
	return v;
}

json_t *etcd__i64_json(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%lld", (long long)v);
	return json_string(s);
}

/* The end of the range of every key that starts with key: key with its
 * last byte below 0xff incremented and what follows dropped; "\0" (every
 * key from key on) when there is none. */
static json_t *prefix_end(const uint8_t *key, size_t n)
{
	uint8_t *end = lg_xmalloc(n + 1);
	json_t *v;
	size_t i = n;

	memcpy(end, key, n);
	while (i > 0 && end[i - 1] == 0xff)
		i--;
	if (i == 0) {
		end[0] = 0;
		v = b64_json(end, 1);
	} else {
		end[i - 1]++;
		v = b64_json(end, i);
	}
	free(end);
	return v;
}

static void range_keys(json_t *o, const struct etcd_range *r)
{
	json_object_set_new(o, "key", b64_json(r->key, r->key_len));
	if (r->prefix)
		json_object_set_new(o, "range_end",
				    prefix_end(r->key, r->key_len));
	else if (r->end != NULL)
		json_object_set_new(o, "range_end",
				    b64_json(r->end, r->end_len));
}

static json_t *range_json(const struct etcd_range *r)
{
	json_t *o = json_object();

	range_keys(o, r);
	if (r->revision)
		json_object_set_new(o, "revision", etcd__i64_json(r->revision));
	if (r->limit)
		json_object_set_new(o, "limit", etcd__i64_json(r->limit));
	if (r->keys_only)
		json_object_set_new(o, "keys_only", json_true());
	if (r->count_only)
		json_object_set_new(o, "count_only", json_true());
	if (r->serializable)
		json_object_set_new(o, "serializable", json_true());
	return o;
}

static char *dump(json_t *doc, struct lg_error *err)
{
	char *s = json_dumps(doc, JSON_COMPACT);

	json_decref(doc);
	if (s != NULL && strlen(s) > ETCD_REQUEST_MAX) {
		lg_error_set(err, LG_ELIMIT,
			     "the request is %zu bytes, above our bound of %zu",
			     strlen(s), ETCD_REQUEST_MAX);
		free(s);
		return NULL;
	}
	if (s == NULL)
		lg_error_set(err, LG_EINVAL, "the request cannot be written");
	return s;
}

char *etcd__range_body(const struct etcd_range *r, struct lg_error *err)
{
	LG_ASSERT(r != NULL);
	return dump(range_json(r), err);
}

static const char *const targets[] = {
	[ETCD_CMP_VERSION] = "VERSION", [ETCD_CMP_CREATE] = "CREATE",
	[ETCD_CMP_MOD] = "MOD",		[ETCD_CMP_VALUE] = "VALUE",
	[ETCD_CMP_LEASE] = "LEASE",
};
/* The compare's operand field for each target (rpc.proto's oneof). */
static const char *const operands[] = {
	[ETCD_CMP_VERSION] = "version",	 [ETCD_CMP_CREATE] = "create_revision",
	[ETCD_CMP_MOD] = "mod_revision", [ETCD_CMP_VALUE] = "value",
	[ETCD_CMP_LEASE] = "lease",
};
static const char *const results[] = {
	[ETCD_EQUAL] = "EQUAL",
	[ETCD_GREATER] = "GREATER",
	[ETCD_LESS] = "LESS",
	[ETCD_NOT_EQUAL] = "NOT_EQUAL",
};

static json_t *cmp_json(const struct etcd_cmp *c)
{
	json_t *o = json_object();

	json_object_set_new(o, "key", b64_json(c->key, c->key_len));
	json_object_set_new(o, "target", json_string(targets[c->target]));
	json_object_set_new(o, "result", json_string(results[c->result]));
	if (c->target == ETCD_CMP_VALUE)
		json_object_set_new(o, operands[c->target],
				    b64_json(c->value, c->value_len));
	else
		json_object_set_new(o, operands[c->target],
				    etcd__i64_json(c->number));
	return o;
}

static json_t *op_json(const struct etcd_op *op)
{
	json_t *o = json_object(), *req;

	switch (op->kind) {
	case ETCD_OP_PUT:
		req = json_object();
		json_object_set_new(req, "key",
				    b64_json(op->range.key, op->range.key_len));
		json_object_set_new(req, "value",
				    b64_json(op->value, op->value_len));
		if (op->lease)
			json_object_set_new(req, "lease",
					    etcd__i64_json(op->lease));
		json_object_set_new(o, "request_put", req);
		break;
	case ETCD_OP_RANGE:
		json_object_set_new(o, "request_range", range_json(&op->range));
		break;
	case ETCD_OP_DELETE:
		req = json_object();
		range_keys(req, &op->range);
		json_object_set_new(o, "request_delete_range", req);
		break;
	}
	return o;
}

static bool txn_valid(const struct etcd_txn *t, struct lg_error *err)
{
	if (t->n_success > ETCD_TXN_OPS_MAX ||
	    t->n_failure > ETCD_TXN_OPS_MAX || t->n_cmp > ETCD_TXN_OPS_MAX) {
		lg_error_set(err, LG_ELIMIT,
			     "a txn of %zu compares, %zu and %zu operations: "
			     "etcd takes at most %d in each",
			     t->n_cmp, t->n_success, t->n_failure,
			     ETCD_TXN_OPS_MAX);
		return false;
	}
	for (size_t i = 0; i < t->n_cmp; i++)
		if ((unsigned)t->cmp[i].target > ETCD_CMP_LEASE ||
		    (unsigned)t->cmp[i].result > ETCD_NOT_EQUAL) {
			lg_error_set(err, LG_EINVAL, "compare %zu is not one",
				     i);
			return false;
		}
	return true;
}

char *etcd__txn_body(const struct etcd_txn *t, struct lg_error *err)
{
	json_t *doc, *cmp, *succ, *fail;

	LG_ASSERT(t != NULL);
	if (!txn_valid(t, err))
		return NULL;
	doc = json_object();
	cmp = json_array();
	succ = json_array();
	fail = json_array();
	for (size_t i = 0; i < t->n_cmp; i++)
		json_array_append_new(cmp, cmp_json(&t->cmp[i]));
	for (size_t i = 0; i < t->n_success; i++)
		json_array_append_new(succ, op_json(&t->success[i]));
	for (size_t i = 0; i < t->n_failure; i++)
		json_array_append_new(fail, op_json(&t->failure[i]));
	json_object_set_new(doc, "compare", cmp);
	json_object_set_new(doc, "success", succ);
	json_object_set_new(doc, "failure", fail);
	return dump(doc, err);
}

/* ---------------------------------------------------------------------- */
/* Answers */

int64_t etcd_i64(const json_t *obj, const char *name)
{
	const json_t *v = json_object_get(obj, name);
	const char *s;
	char *end;
	long long n;

	LG_ASSERT(name != NULL);
	if (json_is_integer(v))
		return (int64_t)json_integer_value(v);
	s = json_string_value(v);
	if (s == NULL || s[0] == '\0')
		return 0;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0') {
		/* uint64 fields (cluster and member ids) above INT64_MAX. */
		unsigned long long u;

		errno = 0;
		u = strtoull(s, &end, 10);
		return errno == 0 && *end == '\0' ? (int64_t)u : 0;
	}
	return (int64_t)n;
}

uint8_t *etcd__b64_decode(const char *s, size_t *len)
{
	size_t n = strlen(s), cap = n / 4 * 3 + 3;
	uint8_t *out = lg_xmalloc(cap + 1);

	LG_ASSERT(s != NULL && len != NULL);
	if (note_b64_decode(s, n, out, cap, len) != 0) {
		free(out);
		return NULL;
	}
	out[*len] = '\0';
	return out;
}

int etcd__header_parse(const json_t *doc, struct etcd_header *h)
{
	const json_t *hd = json_object_get(doc, "header");

	LG_ASSERT(h != NULL);
	memset(h, 0, sizeof(*h));
	if (!json_is_object(hd))
		return LG_ECORRUPT;
	h->cluster_id = (uint64_t)etcd_i64(hd, "cluster_id");
	h->member_id = (uint64_t)etcd_i64(hd, "member_id");
	h->revision = etcd_i64(hd, "revision");
	h->raft_term = (uint64_t)etcd_i64(hd, "raft_term");
	return 0;
}

static int kv_parse(const json_t *o, struct etcd_kv *kv)
{
	const char *k = json_string_value(json_object_get(o, "key"));
	const char *v = json_string_value(json_object_get(o, "value"));

	memset(kv, 0, sizeof(*kv));
	if (!json_is_object(o) || k == NULL)
		return LG_ECORRUPT;
	kv->key = etcd__b64_decode(k, &kv->key_len);
	kv->value = etcd__b64_decode(v ? v : "", &kv->value_len);
	if (kv->key == NULL || kv->value == NULL)
		return LG_ECORRUPT;
	kv->create_revision = etcd_i64(o, "create_revision");
	kv->mod_revision = etcd_i64(o, "mod_revision");
	kv->version = etcd_i64(o, "version");
	kv->lease = etcd_i64(o, "lease");
	return 0;
}

static void kv_release(struct etcd_kv *kv)
{
	free(kv->key);
	free(kv->value);
}

void etcd_range_result_release(struct etcd_range_result *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_kvs; i++)
		kv_release(&r->kvs[i]);
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

/* A range answer; inside a txn its header holds the revision only. */
static int range_parse(const json_t *doc, struct etcd_range_result *out)
{
	const json_t *kvs = json_object_get(doc, "kvs");

	memset(out, 0, sizeof(*out));
	etcd__header_parse(doc, &out->header);
	if (kvs != NULL && !json_is_array(kvs))
		return LG_ECORRUPT;
	out->n_kvs = json_array_size(kvs);
	out->kvs = lg_xcalloc(out->n_kvs ? out->n_kvs : 1, sizeof(*out->kvs));
	for (size_t i = 0; i < out->n_kvs; i++)
		if (kv_parse(json_array_get(kvs, i), &out->kvs[i]) != 0) {
			out->n_kvs = i + 1;
			return LG_ECORRUPT;
		}
	out->more = json_is_true(json_object_get(doc, "more"));
	out->count = etcd_i64(doc, "count");
	return 0;
}

int etcd__range_parse(const json_t *doc, struct etcd_range_result *out,
		      struct lg_error *err)
{
	LG_ASSERT(out != NULL);
	if (!json_is_object(doc) || etcd__header_parse(doc, &out->header) ||
	    range_parse(doc, out) != 0) {
		etcd_range_result_release(out);
		return lg_error_set(err, LG_ECORRUPT,
				    "etcd's range answer is not one");
	}
	return 0;
}

void etcd_txn_result_release(struct etcd_txn_result *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->n_ops; i++)
		etcd_range_result_release(&r->ops[i].range);
	free(r->ops);
	r->ops = NULL;
	r->n_ops = 0;
}

static const char *const response_names[] = {
	[ETCD_OP_PUT] = "response_put",
	[ETCD_OP_RANGE] = "response_range",
	[ETCD_OP_DELETE] = "response_delete_range",
};

int etcd__txn_parse(const json_t *doc, const struct etcd_txn *t,
		    struct etcd_txn_result *out, struct lg_error *err)
{
	const json_t *resp = json_object_get(doc, "responses");
	const struct etcd_op *ops;
	size_t n;
	bool ok;

	LG_ASSERT(t != NULL && out != NULL);
	out->ops = NULL;
	out->n_ops = 0;
	if (!json_is_object(doc) ||
	    etcd__header_parse(doc, &out->header) != 0 ||
	    (resp != NULL && !json_is_array(resp)))
		goto bad;
	ok = json_is_true(json_object_get(doc, "succeeded"));
	out->outcome = ok ? ETCD_COMMITTED : ETCD_COMPARE_FAILED;
	ops = ok ? t->success : t->failure;
	n = ok ? t->n_success : t->n_failure;
	if (json_array_size(resp) != n)
		goto bad;
	out->ops = lg_xcalloc(n ? n : 1, sizeof(*out->ops));
	out->n_ops = n;
	for (size_t i = 0; i < n; i++) {
		const json_t *r = json_object_get(json_array_get(resp, i),
						  response_names[ops[i].kind]);

		out->ops[i].kind = ops[i].kind;
		if (!json_is_object(r))
			goto bad;
		if (ops[i].kind == ETCD_OP_RANGE &&
		    range_parse(r, &out->ops[i].range) != 0)
			goto bad;
		if (ops[i].kind == ETCD_OP_DELETE)
			out->ops[i].deleted = etcd_i64(r, "deleted");
	}
	return 0;
bad:
	etcd_txn_result_release(out);
	out->outcome = ETCD_INDETERMINATE;
	return lg_error_set(err, LG_ECORRUPT,
			    "etcd's txn answer is not one (the txn may have "
			    "committed)");
}

/* ---------------------------------------------------------------------- */
/* Framing of a watch stream */

void etcd__lines_init(struct etcd_lines *l, size_t cap)
{
	LG_ASSERT(l != NULL && cap > 0);
	l->buf = lg_xmalloc(cap);
	l->len = 0;
	l->cap = cap;
}

void etcd__lines_release(struct etcd_lines *l)
{
	if (l == NULL)
		return;
	free(l->buf);
	l->buf = NULL;
	l->len = l->cap = 0;
}

int etcd__lines_feed(struct etcd_lines *l, const char *data, size_t n,
		     etcd_line_fn *fn, void *ctx)
{
	LG_ASSERT(l != NULL && l->buf != NULL && fn != NULL &&
		  (data != NULL || n == 0));
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		int rc;

		if (l->len + take > l->cap)
			return LG_ELIMIT;
		memcpy(l->buf + l->len, data, take);
		l->len += take;
		data += take;
		n -= take;
		if (nl == NULL)
			break;
		data++;
		n--;
		if (l->len > 0) {
			size_t len = l->len;

			l->len = 0;
			rc = fn(ctx, l->buf, len);
			if (rc != 0)
				return rc;
		}
	}
	return 0;
}
