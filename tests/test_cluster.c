/*
 * The Check suite of cluster/: the pure half of the etcd client. Rule 1's
 * table (DESIGN 11) case by case, the endpoint list, the JSON bodies as
 * etcd's gateway reads them (base64 keys, int64s as strings, the prefix
 * range end), answers as the gateway writes them (zero fields left out),
 * the framing of a watch stream over random chunkings (seeded, printed;
 * CLUSTER_SEED=N reruns one), the key layout and the prefix rules. The
 * client against a real etcd is tests/cluster_cli.sh.
 */
#include "cluster/cluster_int.h"
#include "etcd/etcd_int.h"
#include "tests/cluster_tests.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t seed_base;

/* Parts of the suite in tests/cluster_<part>.c. */
void cluster_tests_lease(Suite *s);

/* ---------------------------------------------------------------- rule 1 */

static const struct {
	struct etcd_attempt a;
	enum etcd_outcome want;
	int code;
} rule1_cases[] = {
	/* Nothing reached etcd. */
	{{ETCD_T_NO_CONNECT, false, 0, NULL}, ETCD_NOT_APPLIED, LG_EIO},
	{{ETCD_T_NO_CONNECT, true, 0, NULL}, ETCD_NOT_APPLIED, LG_EIO},
	{{ETCD_T_TIMEOUT, false, 0, NULL}, ETCD_NOT_APPLIED, LG_EIO},
	{{ETCD_T_BROKEN, false, 0, NULL}, ETCD_NOT_APPLIED, LG_EIO},
	/* Sent, and then no answer: it may have committed. */
	{{ETCD_T_TIMEOUT, true, 0, NULL}, ETCD_INDETERMINATE, LG_EIO},
	{{ETCD_T_BROKEN, true, 0, NULL}, ETCD_INDETERMINATE, LG_EIO},
	{{ETCD_T_TOO_BIG, true, 0, NULL}, ETCD_INDETERMINATE, LG_ELIMIT},
	{{ETCD_T_OTHER, true, 0, NULL}, ETCD_INDETERMINATE, LG_EIO},
	/* Answers. */
	{{ETCD_T_OK, true, 200, NULL}, ETCD_COMMITTED, 0},
	{{ETCD_T_OK, true, 503, "etcdserver: request timed out"},
	 ETCD_INDETERMINATE,
	 LG_EIO},
	{{ETCD_T_OK, true, 500, NULL}, ETCD_INDETERMINATE, LG_EIO},
	{{ETCD_T_OK, true, 504, "context deadline exceeded"},
	 ETCD_INDETERMINATE,
	 LG_EIO},
	{{ETCD_T_OK, true, 408, NULL}, ETCD_INDETERMINATE, LG_EIO},
	{{ETCD_T_OK, true, 400, "etcdserver: request is too large"},
	 ETCD_NOT_APPLIED,
	 LG_ELIMIT},
	{{ETCD_T_OK, true, 429,
	  "grpc: received message larger than max (2600009 vs. 2097152)"},
	 ETCD_NOT_APPLIED,
	 LG_ELIMIT},
	{{ETCD_T_OK, true, 400,
	  "etcdserver: too many operations in txn "
	  "request"},
	 ETCD_NOT_APPLIED,
	 LG_ELIMIT},
	{{ETCD_T_OK, true, 429, "etcdserver: mvcc: database space exceeded"},
	 ETCD_NOT_APPLIED,
	 LG_EFULL},
	{{ETCD_T_OK, true, 401, "etcdserver: invalid auth token"},
	 ETCD_NOT_APPLIED,
	 LG_EINVAL},
	{{ETCD_T_OK, true, 403, "etcdserver: permission denied"},
	 ETCD_NOT_APPLIED,
	 LG_EINVAL},
	{{ETCD_T_OK, true, 404, "etcdserver: requested lease not found"},
	 ETCD_NOT_APPLIED,
	 LG_ENOENT},
	{{ETCD_T_OK, true, 400, "invalid character 'b'"},
	 ETCD_NOT_APPLIED,
	 LG_EINVAL},
	/* An HTTP answer whose body never fully left us is still an answer:
	 * etcd read it. */
	{{ETCD_T_OK, false, 503, NULL}, ETCD_INDETERMINATE, LG_EIO},
	/* Something no row foresees: the side that loses nothing. */
	{{ETCD_T_OK, true, 302, NULL}, ETCD_INDETERMINATE, LG_EIO},
};

START_TEST(rule1_table)
{
	struct etcd_rule1 v = etcd__classify(&rule1_cases[_i].a);

	ck_assert_msg(v.outcome == rule1_cases[_i].want,
		      "case %d: %s, want %s (%s)", _i,
		      etcd__outcome_name(v.outcome),
		      etcd__outcome_name(rule1_cases[_i].want), v.why);
	ck_assert_int_eq(v.code, rule1_cases[_i].code);
	ck_assert_ptr_nonnull(v.why);
}
END_TEST

/* Over every combination: a request whose body left in full and got no
 * answer of etcd's is never "not applied", and one that did not reach
 * etcd is never anything else. */
START_TEST(rule1_never_loses)
{
	for (int t = ETCD_T_OK; t <= ETCD_T_OTHER; t++)
		for (int sent = 0; sent <= 1; sent++) {
			struct etcd_attempt a = {(enum etcd_transport)t, sent,
						 0, NULL};
			struct etcd_rule1 v;

			if (t == ETCD_T_OK)
				continue;
			v = etcd__classify(&a);
			if (t == ETCD_T_NO_CONNECT || !sent)
				ck_assert_int_eq(v.outcome, ETCD_NOT_APPLIED);
			else
				ck_assert_int_eq(v.outcome, ETCD_INDETERMINATE);
		}
	for (long s = 500; s <= 599; s++) {
		struct etcd_attempt a = {ETCD_T_OK, true, s, "x"};

		ck_assert_int_eq(etcd__classify(&a).outcome,
				 ETCD_INDETERMINATE);
	}
}
END_TEST

/* ------------------------------------------------------------- endpoints */

START_TEST(endpoints_parse)
{
	char buf[ETCD_ENDPOINTS_MAX * (ETCD_URL_MAX + 1)];
	const char *urls[ETCD_ENDPOINTS_MAX];
	struct lg_error err = {0};
	size_t n = 0;

	ck_assert_int_eq(etcd__endpoints_parse(
				 "http://127.0.0.1:2379,https://etcd-1:2379/",
				 buf, sizeof(buf), urls, &n, &err),
			 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(urls[0], "http://127.0.0.1:2379");
	ck_assert_str_eq(urls[1], "https://etcd-1:2379");
}
END_TEST

static const struct {
	const char *list, *says;
} bad_endpoints[] = {
	{"", "required"},
	{"http://a:1,,http://b:2", "an empty URL"},
	{"ftp://a:1", "is not an http:// or https:// URL"},
	{"127.0.0.1:2379", "is not an http:// or https:// URL"},
	{"http://a:1/v3", "is not SCHEME://HOST[:PORT]"},
	{"http://", "is not SCHEME://HOST[:PORT]"},
	{"https:///", "is not SCHEME://HOST[:PORT]"},
	{"http:/", "is not an http:// or https:// URL"},
	{"http://a:1,http://a:2,http://a:3,http://a:4,http://a:5,http://a:6,"
	 "http://a:7,http://a:8,http://a:9,http://a:10,http://a:11,"
	 "http://a:12,http://a:13,http://a:14,http://a:15,http://a:16,"
	 "http://a:17",
	 "more than 16 URLs"},
};

START_TEST(endpoints_bad)
{
	char buf[ETCD_ENDPOINTS_MAX * (ETCD_URL_MAX + 1)];
	const char *urls[ETCD_ENDPOINTS_MAX];
	struct lg_error err = {0};
	size_t n = 0;

	ck_assert_int_eq(etcd__endpoints_parse(bad_endpoints[_i].list, buf,
					       sizeof(buf), urls, &n, &err),
			 LG_EINVAL);
	ck_assert_msg(strstr(err.msg, bad_endpoints[_i].says) != NULL,
		      "case %d: \"%s\"", _i, err.msg);
}
END_TEST

START_TEST(endpoints_long_url)
{
	char buf[ETCD_ENDPOINTS_MAX * (ETCD_URL_MAX + 1)],
		url[ETCD_URL_MAX + 8];
	const char *urls[ETCD_ENDPOINTS_MAX];
	struct lg_error err = {0};
	size_t n = 0;

	memset(url, 'a', sizeof(url) - 1);
	url[sizeof(url) - 1] = '\0';
	memcpy(url, "http://", 7);
	ck_assert_int_eq(
		etcd__endpoints_parse(url, buf, sizeof(buf), urls, &n, &err),
		LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "longer than"));
}
END_TEST

/* ------------------------------------------------------------------ codec */

static const char *b64s(const json_t *v)
{
	static char out[256];
	size_t n = 0;
	uint8_t *p = etcd__b64_decode(json_string_value(v), &n);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(n, sizeof(out));
	memcpy(out, p, n);
	out[n] = '\0';
	free(p);
	return out;
}

START_TEST(codec_txn_body)
{
	static const char head[] = "/p/head";
	struct etcd_cmp cmp[2] = {
		{.key = head,
		 .key_len = 7,
		 .target = ETCD_CMP_CREATE,
		 .result = ETCD_EQUAL,
		 .number = 0},
		{.key = "/p/epoch",
		 .key_len = 8,
		 .target = ETCD_CMP_VALUE,
		 .result = ETCD_NOT_EQUAL,
		 .value = "e1",
		 .value_len = 2},
	};
	struct etcd_op succ[1] = {{.kind = ETCD_OP_PUT,
				   .range = {.key = head, .key_len = 7},
				   .value = "{}",
				   .value_len = 2,
				   .lease = 7587880000000000001ll}};
	struct etcd_op fail[2] = {
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = "/p/log/",
			   .key_len = 7,
			   .prefix = true,
			   .limit = 3,
			   .keys_only = true}},
		{.kind = ETCD_OP_DELETE,
		 .range = {.key = "/p/pos/", .key_len = 7, .prefix = true}},
	};
	struct etcd_txn t = {cmp, 2, succ, fail, 1, 2};
	struct lg_error err = {0};
	char *body = etcd__txn_body(&t, &err);
	json_t *doc, *c, *p, *r;

	ck_assert_ptr_nonnull(body);
	doc = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(doc);
	c = json_array_get(json_object_get(doc, "compare"), 0);
	ck_assert_str_eq(b64s(json_object_get(c, "key")), "/p/head");
	ck_assert_str_eq(json_string_value(json_object_get(c, "target")),
			 "CREATE");
	ck_assert_str_eq(json_string_value(json_object_get(c, "result")),
			 "EQUAL");
	/* int64s are strings, as proto3 JSON writes them. */
	ck_assert_str_eq(
		json_string_value(json_object_get(c, "create_revision")), "0");
	c = json_array_get(json_object_get(doc, "compare"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(c, "target")),
			 "VALUE");
	ck_assert_str_eq(b64s(json_object_get(c, "value")), "e1");
	p = json_object_get(json_array_get(json_object_get(doc, "success"), 0),
			    "request_put");
	ck_assert_str_eq(b64s(json_object_get(p, "value")), "{}");
	ck_assert_str_eq(json_string_value(json_object_get(p, "lease")),
			 "7587880000000000001");
	r = json_object_get(json_array_get(json_object_get(doc, "failure"), 0),
			    "request_range");
	/* The end of a prefix range: its last byte plus one. */
	ck_assert_str_eq(b64s(json_object_get(r, "range_end")), "/p/log0");
	ck_assert_str_eq(json_string_value(json_object_get(r, "limit")), "3");
	ck_assert(json_is_true(json_object_get(r, "keys_only")));
	r = json_object_get(json_array_get(json_object_get(doc, "failure"), 1),
			    "request_delete_range");
	ck_assert_str_eq(b64s(json_object_get(r, "range_end")), "/p/pos0");
	json_decref(doc);
	free(body);
}
END_TEST

START_TEST(codec_prefix_end_ff)
{
	static const uint8_t k[] = {'a', 0xff, 0xff};
	struct etcd_range r = {.key = k, .key_len = 3, .prefix = true};
	char *body = etcd__range_body(&r, NULL);
	json_t *doc = json_loads(body, 0, NULL);
	size_t n = 0;
	uint8_t *end = etcd__b64_decode(
		json_string_value(json_object_get(doc, "range_end")), &n);

	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(end[0], 'b');
	free(end);
	json_decref(doc);
	free(body);
}
END_TEST

START_TEST(codec_txn_limits)
{
	static struct etcd_op ops[ETCD_TXN_OPS_MAX + 1];
	struct etcd_txn t = {.success = ops, .n_success = ETCD_TXN_OPS_MAX + 1};
	struct lg_error err = {0};
	char *body;

	for (size_t i = 0; i < ETCD_TXN_OPS_MAX + 1; i++)
		ops[i] = (struct etcd_op){.kind = ETCD_OP_PUT,
					  .range = {.key = "k", .key_len = 1},
					  .value = "v",
					  .value_len = 1};
	ck_assert_ptr_null(etcd__txn_body(&t, &err));
	ck_assert_int_eq(err.code, LG_ELIMIT);
	t.n_success = ETCD_TXN_OPS_MAX;
	body = etcd__txn_body(&t, &err);
	ck_assert_ptr_nonnull(body);
	free(body);
}
END_TEST

START_TEST(codec_request_bound)
{
	size_t n = ETCD_REQUEST_MAX / 4 * 3 + 16;
	char *v = lg_xmalloc(n);
	struct etcd_op op = {.kind = ETCD_OP_PUT,
			     .range = {.key = "k", .key_len = 1},
			     .value = v,
			     .value_len = n};
	struct etcd_txn t = {.success = &op, .n_success = 1};
	struct lg_error err = {0};

	memset(v, 'x', n);
	ck_assert_ptr_null(etcd__txn_body(&t, &err));
	ck_assert_int_eq(err.code, LG_ELIMIT);
	free(v);
}
END_TEST

/* Answers as etcd 3.4's gateway wrote them (tests/cluster_cli.sh talks to
 * the real one): zeros are left out, "succeeded" too when false. */
static const char txn_failed[] =
	"{\"header\":{\"cluster_id\":\"324952591200643719\",\"member_id\":"
	"\"3319814642761637952\",\"revision\":\"2\",\"raft_term\":\"2\"},"
	"\"responses\":[{\"response_range\":{\"header\":{\"revision\":\"2\"},"
	"\"kvs\":[{\"key\":\"Zm9v\",\"create_revision\":\"2\",\"mod_revision\":"
	"\"2\",\"version\":\"1\",\"value\":\"YmFy\"}],\"count\":\"1\"}},"
	"{\"response_range\":{\"header\":{\"revision\":\"2\"}}}]}";
static const char txn_ok[] =
	"{\"header\":{\"cluster_id\":\"324952591200643719\",\"member_id\":"
	"\"3319814642761637952\",\"revision\":\"3\",\"raft_term\":\"2\"},"
	"\"succeeded\":true,\"responses\":[{\"response_put\":{\"header\":"
	"{\"revision\":\"3\"}}},{\"response_delete_range\":{\"header\":"
	"{\"revision\":\"3\"},\"deleted\":\"1\"}}]}";

START_TEST(codec_txn_parse)
{
	struct etcd_op succ[2] = {{.kind = ETCD_OP_PUT},
				  {.kind = ETCD_OP_DELETE}};
	struct etcd_op fail[2] = {{.kind = ETCD_OP_RANGE},
				  {.kind = ETCD_OP_RANGE}};
	struct etcd_txn t = {NULL, 0, succ, fail, 2, 2};
	struct etcd_txn_result r;
	struct lg_error err = {0};
	json_t *doc = json_loads(txn_failed, 0, NULL);

	ck_assert_int_eq(etcd__txn_parse(doc, &t, &r, &err), 0);
	ck_assert_int_eq(r.outcome, ETCD_COMPARE_FAILED);
	ck_assert_uint_eq(r.header.cluster_id, 324952591200643719ull);
	ck_assert_uint_eq(r.header.member_id, 3319814642761637952ull);
	ck_assert_int_eq(r.header.revision, 2);
	ck_assert_uint_eq(r.n_ops, 2);
	ck_assert_uint_eq(r.ops[0].range.n_kvs, 1);
	ck_assert_str_eq((const char *)r.ops[0].range.kvs[0].key, "foo");
	ck_assert_str_eq((const char *)r.ops[0].range.kvs[0].value, "bar");
	ck_assert_int_eq(r.ops[0].range.kvs[0].create_revision, 2);
	ck_assert_int_eq(r.ops[0].range.kvs[0].version, 1);
	ck_assert_int_eq(r.ops[0].range.kvs[0].lease, 0);
	ck_assert_int_eq(r.ops[0].range.count, 1);
	ck_assert_uint_eq(r.ops[1].range.n_kvs, 0);
	etcd_txn_result_release(&r);
	json_decref(doc);

	doc = json_loads(txn_ok, 0, NULL);
	ck_assert_int_eq(etcd__txn_parse(doc, &t, &r, &err), 0);
	ck_assert_int_eq(r.outcome, ETCD_COMMITTED);
	ck_assert_int_eq(r.ops[1].deleted, 1);
	etcd_txn_result_release(&r);
	json_decref(doc);
}
END_TEST

/* An answer that does not match the txn sent is no answer: it may have
 * committed, and the caller must not read anything into it. */
static const char *const bad_txn_answers[] = {
	"[]",
	"{}",
	"{\"header\":{},\"succeeded\":true}",
	"{\"header\":{},\"succeeded\":true,\"responses\":[{\"response_put\":"
	"{}}]}",
	"{\"header\":{},\"succeeded\":true,\"responses\":[{\"response_range\":"
	"{}},{\"response_delete_range\":{}}]}",
	"{\"header\":{},\"responses\":[{\"response_range\":{\"kvs\":[{"
	"\"key\":\"!!\"}]}},{\"response_range\":{}}]}",
	"{\"header\":{},\"responses\":[{\"response_range\":{\"kvs\":7}},"
	"{\"response_range\":{}}]}",
};

START_TEST(codec_txn_parse_bad)
{
	struct etcd_op succ[2] = {{.kind = ETCD_OP_PUT},
				  {.kind = ETCD_OP_DELETE}};
	struct etcd_op fail[2] = {{.kind = ETCD_OP_RANGE},
				  {.kind = ETCD_OP_RANGE}};
	struct etcd_txn t = {NULL, 0, succ, fail, 2, 2};
	struct etcd_txn_result r;
	struct lg_error err = {0};
	json_t *doc = json_loads(bad_txn_answers[_i], 0, NULL);

	ck_assert_int_eq(etcd__txn_parse(doc, &t, &r, &err), LG_ECORRUPT);
	ck_assert_int_eq(r.outcome, ETCD_INDETERMINATE);
	ck_assert_uint_eq(r.n_ops, 0);
	ck_assert_ptr_null(r.ops);
	json_decref(doc);
}
END_TEST

START_TEST(codec_i64)
{
	json_t *o = json_loads("{\"a\":\"-5\",\"b\":7,\"c\":\"x\",\"d\":\"\","
			       "\"e\":\"18446744073709551615\"}",
			       0, NULL);

	ck_assert_int_eq(etcd_i64(o, "a"), -5);
	ck_assert_int_eq(etcd_i64(o, "b"), 7);
	ck_assert_int_eq(etcd_i64(o, "c"), 0);
	ck_assert_int_eq(etcd_i64(o, "d"), 0);
	ck_assert_int_eq(etcd_i64(o, "absent"), 0);
	ck_assert_uint_eq((uint64_t)etcd_i64(o, "e"), UINT64_MAX);
	json_decref(o);
}
END_TEST

/* -------------------------------------------------------- stream framing */

struct collect {
	char out[8192];
	size_t len, lines;
	int stop_at;
};

static int collect_line(void *ctx, const char *line, size_t len)
{
	struct collect *c = ctx;

	ck_assert_ptr_null(memchr(line, '\n', len));
	ck_assert_uint_lt(c->len + len + 1, sizeof(c->out));
	memcpy(c->out + c->len, line, len);
	c->len += len;
	c->out[c->len++] = '|';
	c->lines++;
	return c->stop_at && (int)c->lines == c->stop_at ? 42 : 0;
}

/* Any chunking of a stream gives the same messages, and a message at the
 * bound fits while one byte more is LG_ELIMIT. */
START_TEST(lines_any_chunking)
{
	static const char stream[] = "{\"result\":{\"created\":true}}\n"
				     "{\"result\":{\"events\":[1]}}\n\n"
				     "{\"result\":{\"events\":[2,3]}}\n";
	static const char want[] = "{\"result\":{\"created\":true}}|"
				   "{\"result\":{\"events\":[1]}}|"
				   "{\"result\":{\"events\":[2,3]}}|";
	unsigned seed = (unsigned)(seed_base + (uint64_t)_i);
	struct etcd_lines l;
	struct collect c = {0};
	size_t n = sizeof(stream) - 1, off = 0;

	srand(seed);
	etcd__lines_init(&l, 64);
	while (off < n) {
		size_t k = 1 + (size_t)rand() % 9;

		if (k > n - off)
			k = n - off;
		ck_assert_int_eq(
			etcd__lines_feed(&l, stream + off, k, collect_line, &c),
			0);
		off += k;
	}
	c.out[c.len] = '\0';
	ck_assert_msg(strcmp(c.out, want) == 0, "seed %u: %s", seed, c.out);
	etcd__lines_release(&l);
}
END_TEST

START_TEST(lines_bound)
{
	struct etcd_lines l;
	struct collect c = {0};
	char msg[17];

	memset(msg, 'x', 16);
	msg[16] = '\n';
	etcd__lines_init(&l, 16);
	ck_assert_int_eq(etcd__lines_feed(&l, msg, 17, collect_line, &c), 0);
	ck_assert_uint_eq(c.lines, 1);
	ck_assert_int_eq(etcd__lines_feed(&l, msg, 16, collect_line, &c), 0);
	ck_assert_int_eq(etcd__lines_feed(&l, "y", 1, collect_line, &c),
			 LG_ELIMIT);
	etcd__lines_release(&l);
	/* A callback's stop is returned as it is. */
	c = (struct collect){.stop_at = 1};
	etcd__lines_init(&l, 16);
	ck_assert_int_eq(etcd__lines_feed(&l, "a\nb\n", 4, collect_line, &c),
			 42);
	ck_assert_uint_eq(c.lines, 1);
	etcd__lines_release(&l);
}
END_TEST

/* ------------------------------------------------------------------- keys */

START_TEST(keys_layout)
{
	char buf[64];

	ck_assert_uint_eq(cluster__log_key(buf, sizeof(buf), "/g/prod", 1),
			  strlen("/g/prod/log/00000000000000000001"));
	ck_assert_str_eq(buf, "/g/prod/log/00000000000000000001");
	cluster__log_key(buf, sizeof(buf), "/g", UINT64_MAX);
	ck_assert_str_eq(buf, "/g/log/18446744073709551615");
	ck_assert_uint_eq(cluster__key(buf, sizeof(buf), "/g", "head"), 7);
	ck_assert_str_eq(buf, "/g/head");
	ck_assert_uint_eq(cluster__key(buf, 7, "/g", "head"), 0);
}
END_TEST

/* Seqs sort as their keys do. */
START_TEST(keys_sort_as_seqs)
{
	char a[64], b[64];
	uint64_t x = seed_base * 2654435761u + (uint64_t)_i, y = x / 3;

	cluster__log_key(a, sizeof(a), "/p", x);
	cluster__log_key(b, sizeof(b), "/p", y);
	ck_assert_int_eq(strcmp(a, b) > 0, x > y);
}
END_TEST

static const struct {
	const char *p;
	int rc;
} prefixes[] = {
	{"/gpuledger/prod", 0}, {"g", 0},	  {"", LG_EINVAL},
	{"/g/", LG_EINVAL},	{"/", LG_EINVAL}, {"/a\nb", LG_EINVAL},
};

START_TEST(prefix_rules)
{
	struct lg_error err = {0};
	char longp[CLUSTER_PREFIX_MAX + 2];

	ck_assert_int_eq(cluster_prefix_check(prefixes[_i].p, &err),
			 prefixes[_i].rc);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	ck_assert_int_eq(cluster_prefix_check(longp, &err), LG_EINVAL);
	longp[CLUSTER_PREFIX_MAX] = '\0';
	ck_assert_int_eq(cluster_prefix_check(longp, &err), 0);
}
END_TEST

int main(void)
{
	const char *e = getenv("CLUSTER_SEED");
	Suite *su = suite_create("cluster");
	TCase *rule1 = tcase_create("rule1"), *codec = tcase_create("codec"),
	      *keys = tcase_create("keys");
	SRunner *sr;
	int failed;

	seed_base = e ? strtoull(e, NULL, 10) : (uint64_t)time(NULL);
	printf("test_cluster: seed %llu (CLUSTER_SEED=%llu reruns it)\n",
	       (unsigned long long)seed_base, (unsigned long long)seed_base);
	fflush(stdout);
	tcase_add_loop_test(
		rule1, rule1_table, 0,
		(int)(sizeof(rule1_cases) / sizeof(rule1_cases[0])));
	tcase_add_test(rule1, rule1_never_loses);
	suite_add_tcase(su, rule1);
	tcase_add_test(codec, endpoints_parse);
	tcase_add_loop_test(
		codec, endpoints_bad, 0,
		(int)(sizeof(bad_endpoints) / sizeof(bad_endpoints[0])));
	tcase_add_test(codec, endpoints_long_url);
	tcase_add_test(codec, codec_txn_body);
	tcase_add_test(codec, codec_prefix_end_ff);
	tcase_add_test(codec, codec_txn_limits);
	tcase_add_test(codec, codec_request_bound);
	tcase_add_test(codec, codec_txn_parse);
	tcase_add_loop_test(
		codec, codec_txn_parse_bad, 0,
		(int)(sizeof(bad_txn_answers) / sizeof(bad_txn_answers[0])));
	tcase_add_test(codec, codec_i64);
	tcase_add_loop_test(codec, lines_any_chunking, 0, 200);
	tcase_add_test(codec, lines_bound);
	suite_add_tcase(su, codec);
	tcase_add_test(keys, keys_layout);
	tcase_add_loop_test(keys, keys_sort_as_seqs, 0, 100);
	tcase_add_loop_test(keys, prefix_rules, 0,
			    (int)(sizeof(prefixes) / sizeof(prefixes[0])));
	suite_add_tcase(su, keys);
	cluster_tests_lease(su);
	cluster_tests_log(su);
	cluster_tests_contract(su);
	sr = srunner_create(su);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
