/*
 * `gpuledger cluster etcd`, a debugging aid: the etcd client driven by
 * NDJSON on standard input, one answer a line, so that an operator (and
 * tests/cluster_cli.sh) can see exactly what the client sends, what etcd
 * answers and how rule 1 classifies it. Keys and values are text; lease
 * ids are hex, as etcdctl prints them. cluster/README.md lists the ops.
 */
#include "etcd/etcd_int.h"
#include "model/tlog.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The longest input line. */
#define SHELL_LINE_MAX (4u << 20)
/* The most operations of a txn branch or compares the shell takes (etcd's
 * own bound is checked by the codec). */
#define SHELL_OPS_MAX (2 * ETCD_TXN_OPS_MAX)

struct shell {
	etcd_t *e;
	FILE *out;
	int werr;
};

static void put_line(struct shell *sh, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (s == NULL)
		return;
	errno = 0;
	if (fputs(s, sh->out) == EOF || fputc('\n', sh->out) == EOF ||
	    fflush(sh->out) != 0)
		sh->werr = errno ? errno : EIO;
	free(s);
}

static json_t *bytes(const uint8_t *p, size_t n)
{
	return json_stringn((const char *)p, n);
}

static json_t *hex64(int64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%llx", (unsigned long long)v);
	return json_string(s);
}

/* A cluster or member id as etcdctl prints it: 16 hex digits. */
static json_t *id16(uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "%016llx", (unsigned long long)v);
	return json_string(s);
}

static int64_t get_i64(const json_t *o, const char *name)
{
	return etcd_i64(o, name);
}

static int64_t get_hex(const json_t *o, const char *name)
{
	const char *s = json_string_value(json_object_get(o, name));

	return s ? (int64_t)strtoull(s, NULL, 16) : 0;
}

static void put_kv(json_t *arr, const struct etcd_kv *kv)
{
	json_t *o = json_object(), *v = bytes(kv->value, kv->value_len);

	json_object_set_new(o, "key", bytes(kv->key, kv->key_len));
	if (v != NULL) {
		json_object_set_new(o, "value", v);
	} else {
		char *b = lg_xmalloc(4 * ((kv->value_len + 2) / 3) + 1);

		note_b64_encode(kv->value, kv->value_len, b);
		json_object_set_new(o, "value64", json_string(b));
		free(b);
	}
	json_object_set_new(o, "createRevision",
			    json_integer(kv->create_revision));
	json_object_set_new(o, "modRevision", json_integer(kv->mod_revision));
	json_object_set_new(o, "version", json_integer(kv->version));
	if (kv->lease)
		json_object_set_new(o, "lease", hex64(kv->lease));
	json_array_append_new(arr, o);
}

static json_t *range_out(const struct etcd_range_result *r)
{
	json_t *o = json_object(), *kvs = json_array();

	for (size_t i = 0; i < r->n_kvs; i++)
		put_kv(kvs, &r->kvs[i]);
	json_object_set_new(o, "kvs", kvs);
	json_object_set_new(o, "count", json_integer(r->count));
	json_object_set_new(o, "more", json_boolean(r->more));
	return o;
}

/* The common part of an answer. */
static json_t *shell_answer(struct shell *sh, const char *op, int rc,
			    enum etcd_outcome oc, const struct lg_error *err)
{
	json_t *o = json_object();

	json_object_set_new(o, "op", json_string(op));
	json_object_set_new(o, "outcome", json_string(etcd__outcome_name(oc)));
	json_object_set_new(o, "endpoint", json_string(etcd_endpoint(sh->e)));
	if (rc != 0) {
		json_object_set_new(o, "error", json_string(err->msg));
		json_object_set_new(o, "code", json_string(lg_strerror(rc)));
	}
	return o;
}

/* A range from {"key", "prefix", "end", "revision", "limit", "keysOnly",
 * "countOnly", "serializable"} (key under name); borrowed from o. */
static bool range_in(const json_t *o, const char *name, struct etcd_range *r)
{
	const char *k = json_string_value(json_object_get(o, name));
	const char *end = json_string_value(json_object_get(o, "end"));

	memset(r, 0, sizeof(*r));
	if (k == NULL)
		return false;
	r->key = k;
	r->key_len = strlen(k);
	r->prefix = json_is_true(json_object_get(o, "prefix"));
	if (end != NULL) {
		r->end = end;
		r->end_len = strlen(end);
	}
	r->revision = get_i64(o, "revision");
	r->limit = get_i64(o, "limit");
	r->keys_only = json_is_true(json_object_get(o, "keysOnly"));
	r->count_only = json_is_true(json_object_get(o, "countOnly"));
	r->serializable = json_is_true(json_object_get(o, "serializable"));
	return true;
}

static bool cmp_in(const json_t *o, struct etcd_cmp *c)
{
	static const struct {
		const char *name;
		enum etcd_cmp_target t;
	} targets[] = {{"version", ETCD_CMP_VERSION},
		       {"create", ETCD_CMP_CREATE},
		       {"mod", ETCD_CMP_MOD},
		       {"value", ETCD_CMP_VALUE},
		       {"lease", ETCD_CMP_LEASE}};
	static const struct {
		const char *name;
		enum etcd_cmp_result r;
	} results[] = {{"=", ETCD_EQUAL},
		       {">", ETCD_GREATER},
		       {"<", ETCD_LESS},
		       {"!=", ETCD_NOT_EQUAL}};
	const char *k = json_string_value(json_object_get(o, "key"));
	const char *t = json_string_value(json_object_get(o, "target"));
	const char *r = json_string_value(json_object_get(o, "result"));
	const char *v = json_string_value(json_object_get(o, "value"));
	bool tt = false, rr = false;

	memset(c, 0, sizeof(*c));
	if (k == NULL || t == NULL || r == NULL)
		return false;
	c->key = k;
	c->key_len = strlen(k);
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		if (strcmp(t, targets[i].name) == 0) {
			c->target = targets[i].t;
			tt = true;
		}
	for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
		if (strcmp(r, results[i].name) == 0) {
			c->result = results[i].r;
			rr = true;
		}
	if (c->target == ETCD_CMP_VALUE) {
		if (v == NULL)
			return false;
		c->value = v;
		c->value_len = strlen(v);
	} else if (c->target == ETCD_CMP_LEASE) {
		c->number = get_hex(o, "number");
	} else {
		c->number = get_i64(o, "number");
	}
	return tt && rr;
}

static bool op_in(const json_t *o, struct etcd_op *op)
{
	const char *v = json_string_value(json_object_get(o, "value"));

	memset(op, 0, sizeof(*op));
	if (json_object_get(o, "put") != NULL) {
		op->kind = ETCD_OP_PUT;
		if (!range_in(o, "put", &op->range) || v == NULL)
			return false;
		op->value = v;
		op->value_len = strlen(v);
		op->lease = get_hex(o, "lease");
		return true;
	}
	if (json_object_get(o, "range") != NULL) {
		op->kind = ETCD_OP_RANGE;
		return range_in(o, "range", &op->range);
	}
	op->kind = ETCD_OP_DELETE;
	return range_in(o, "delete", &op->range);
}

static void do_txn(struct shell *sh, const json_t *in)
{
	const json_t *jc = json_object_get(in, "compare"),
		     *js = json_object_get(in, "success"),
		     *jf = json_object_get(in, "failure");
	struct etcd_cmp cmp[SHELL_OPS_MAX];
	struct etcd_op succ[SHELL_OPS_MAX], fail[SHELL_OPS_MAX];
	struct etcd_txn t = {.cmp = cmp, .success = succ, .failure = fail};
	struct etcd_txn_result r;
	struct lg_error err = {0};
	json_t *o, *resp;
	int rc;

	if (json_array_size(jc) > SHELL_OPS_MAX ||
	    json_array_size(js) > SHELL_OPS_MAX ||
	    json_array_size(jf) > SHELL_OPS_MAX) {
		lg_error_set(&err, LG_ELIMIT, "more than %d in a list",
			     SHELL_OPS_MAX);
		put_line(sh, shell_answer(sh, "txn", LG_ELIMIT,
					  ETCD_NOT_APPLIED, &err));
		return;
	}
	for (size_t i = 0; i < json_array_size(jc); i++)
		if (!cmp_in(json_array_get(jc, i), &cmp[t.n_cmp++]))
			goto bad;
	for (size_t i = 0; i < json_array_size(js); i++)
		if (!op_in(json_array_get(js, i), &succ[t.n_success++]))
			goto bad;
	for (size_t i = 0; i < json_array_size(jf); i++)
		if (!op_in(json_array_get(jf, i), &fail[t.n_failure++]))
			goto bad;
	rc = etcd_txn(sh->e, &t, &r, &err);
	o = shell_answer(sh, "txn", rc, r.outcome, &err);
	if (rc == 0) {
		json_object_set_new(o, "clusterId", id16(r.header.cluster_id));
		json_object_set_new(o, "revision",
				    json_integer(r.header.revision));
		resp = json_array();
		for (size_t i = 0; i < r.n_ops; i++) {
			json_t *x = json_object();

			if (r.ops[i].kind == ETCD_OP_RANGE) {
				json_decref(x);
				x = range_out(&r.ops[i].range);
			} else if (r.ops[i].kind == ETCD_OP_DELETE) {
				json_object_set_new(
					x, "deleted",
					json_integer(r.ops[i].deleted));
			}
			json_array_append_new(resp, x);
		}
		json_object_set_new(o, "responses", resp);
	}
	etcd_txn_result_release(&r);
	put_line(sh, o);
	return;
bad:
	lg_error_set(&err, LG_EINVAL, "a compare or an operation is not one");
	put_line(sh,
		 shell_answer(sh, "txn", LG_EINVAL, ETCD_NOT_APPLIED, &err));
}

struct watch_out {
	struct shell *sh;
	int64_t want, seen, compact;
};

static int on_watch(void *ctx, const struct etcd_watch_msg *m)
{
	struct watch_out *w = ctx;

	if (m->compact_revision)
		w->compact = m->compact_revision;
	for (size_t i = 0; i < m->n_events; i++) {
		json_t *o = json_object();
		const struct etcd_kv *kv = &m->events[i].kv;

		json_object_set_new(o, "event",
				    json_string(m->events[i].type == ETCD_EV_PUT
							? "put"
							: "delete"));
		json_object_set_new(o, "key", bytes(kv->key, kv->key_len));
		json_object_set_new(o, "value",
				    bytes(kv->value, kv->value_len));
		json_object_set_new(o, "modRevision",
				    json_integer(kv->mod_revision));
		put_line(w->sh, o);
		w->seen++;
		if (w->want && w->seen >= w->want)
			return 1;
	}
	return 0;
}

static void do_watch(struct shell *sh, const json_t *in)
{
	struct etcd_watch w = {0};
	struct watch_out wo = {.sh = sh};
	struct lg_error err = {0};
	json_t *o;
	int rc;

	if (!range_in(in, "key", &w.range)) {
		lg_error_set(&err, LG_EINVAL, "a watch needs a \"key\"");
		put_line(sh, shell_answer(sh, "watch", LG_EINVAL,
					  ETCD_NOT_APPLIED, &err));
		return;
	}
	w.start_revision = get_i64(in, "startRevision");
	w.timeout_ms = (uint64_t)get_i64(in, "timeoutMs");
	wo.want = get_i64(in, "events");
	rc = etcd_watch(sh->e, &w, on_watch, &wo, &err);
	if (rc == 1)
		rc = 0;
	o = shell_answer(sh, "watch", rc,
			 rc == 0 ? ETCD_COMMITTED : ETCD_INDETERMINATE, &err);
	json_object_set_new(o, "events", json_integer(wo.seen));
	if (wo.compact)
		json_object_set_new(o, "compactRevision",
				    json_integer(wo.compact));
	put_line(sh, o);
}

static void do_one(struct shell *sh, const json_t *in)
{
	const char *op = json_string_value(json_object_get(in, "op"));
	enum etcd_outcome oc = ETCD_NOT_APPLIED;
	struct lg_error err = {0};
	struct etcd_range r;
	json_t *o;
	int rc;

	if (op == NULL)
		op = "";
	if (strcmp(op, "txn") == 0) {
		do_txn(sh, in);
		return;
	}
	if (strcmp(op, "watch") == 0) {
		do_watch(sh, in);
		return;
	}
	if (strcmp(op, "range") == 0 && range_in(in, "key", &r)) {
		struct etcd_range_result res;

		rc = etcd_range(sh->e, &r, &res, &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
		if (rc == 0) {
			json_t *x = range_out(&res);

			json_object_update(o, x);
			json_decref(x);
			json_object_set_new(o, "revision",
					    json_integer(res.header.revision));
		}
		etcd_range_result_release(&res);
	} else if (strcmp(op, "put") == 0 && range_in(in, "key", &r) &&
		   json_is_string(json_object_get(in, "value"))) {
		const char *v = json_string_value(json_object_get(in, "value"));
		int64_t rev = 0;

		rc = etcd_put(sh->e, r.key, r.key_len, v, strlen(v),
			      get_hex(in, "lease"), &rev, &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
		if (rc == 0)
			json_object_set_new(o, "revision", json_integer(rev));
	} else if (strcmp(op, "delete") == 0 && range_in(in, "key", &r)) {
		int64_t n = 0;

		rc = etcd__delete(sh->e, &r, &n, &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
		if (rc == 0)
			json_object_set_new(o, "deleted", json_integer(n));
	} else if (strcmp(op, "grant") == 0) {
		int64_t id = get_hex(in, "id"), ttl = 0;

		rc = etcd_lease_grant(sh->e, get_i64(in, "ttl"), &id, &ttl, &oc,
				      &err);
		o = shell_answer(sh, op, rc, oc, &err);
		if (rc == 0) {
			json_object_set_new(o, "id", hex64(id));
			json_object_set_new(o, "ttl", json_integer(ttl));
		}
	} else if (strcmp(op, "keepalive") == 0) {
		int64_t ttl = 0;

		rc = etcd_lease_keepalive(sh->e, get_hex(in, "id"), &ttl, &oc,
					  &err);
		o = shell_answer(sh, op, rc, oc, &err);
		json_object_set_new(o, "ttl", json_integer(ttl));
	} else if (strcmp(op, "revoke") == 0) {
		rc = etcd_lease_revoke(sh->e, get_hex(in, "id"), &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
	} else if (strcmp(op, "status") == 0) {
		struct etcd_status st;

		rc = etcd_status(sh->e, &st, &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
		if (rc == 0) {
			json_object_set_new(o, "clusterId",
					    id16(st.header.cluster_id));
			json_object_set_new(o, "memberId",
					    id16(st.header.member_id));
			json_object_set_new(o, "leader", id16(st.leader));
			json_object_set_new(o, "revision",
					    json_integer(st.header.revision));
			json_object_set_new(o, "version",
					    json_string(st.version));
		}
	} else if (strcmp(op, "compact") == 0) {
		rc = etcd_compact(sh->e, get_i64(in, "revision"),
				  json_is_true(json_object_get(in, "physical")),
				  &oc, &err);
		o = shell_answer(sh, op, rc, oc, &err);
	} else {
		lg_error_set(&err, LG_EINVAL,
			     "\"op\": \"%s\" is not one of txn, range, put, "
			     "delete, watch, grant, keepalive, revoke, status, "
			     "compact (or a field is missing)",
			     op);
		o = shell_answer(sh, op, LG_EINVAL, ETCD_NOT_APPLIED, &err);
	}
	put_line(sh, o);
}

int etcd_shell(const struct etcd_opts *eo, FILE *in, FILE *out,
	       struct lg_error *err)
{
	struct shell sh = {.out = out};
	char *line = lg_xmalloc(SHELL_LINE_MAX);
	int rc;

	LG_ASSERT(eo != NULL && in != NULL && out != NULL);
	rc = etcd_open(&sh.e, eo, err);
	while (rc == 0 && sh.werr == 0 &&
	       fgets(line, (int)SHELL_LINE_MAX, in) != NULL) {
		size_t n = strlen(line);
		json_t *doc;

		if (n > 0 && line[n - 1] != '\n' && !feof(in)) {
			int c;

			while ((c = getc(in)) != EOF && c != '\n')
				;
			put_line(&sh, json_pack("{s:s,s:s}", "error",
						"the line is too long",
						"outcome", "not-applied"));
			continue;
		}
		if (strspn(line, " \t\r\n") == n)
			continue;
		doc = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(doc))
			put_line(&sh, json_pack("{s:s,s:s}", "error",
						"the line is not a JSON object",
						"outcome", "not-applied"));
		else
			do_one(&sh, doc);
		json_decref(doc);
	}
	if (rc == 0 && sh.werr != 0)
		rc = lg_error_set(err, LG_EIO, "writing the answers failed");
	etcd_close(sh.e);
	free(line);
	return rc;
}
