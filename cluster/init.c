/*
 * `gpuledger cluster init` and `cluster status` (DESIGN 6, 11): the head of
 * a ledger written to etcd once, and what etcd says about the cluster.
 */
#include "cluster/cluster_int.h"
#include "ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + 64)
/* At most this many P/pos/ keys: one per watched resource and the stream,
 * with room; the txn stays far below etcd's 128 operations. */
#define POS_MAX 16
/* How many members `cluster status` lists. */
#define MEMBERS_MAX 1000

static void head_of(ledger_t *lg, struct cluster_head *h)
{
	static const uint8_t zero[LEDGER_HEAD_BYTES];

	memset(h, 0, sizeof(*h));
	h->seq = lg ? ledger_last_seq(lg) : 0;
	lg_hex(lg ? ledger_head(lg) : zero, LEDGER_HEAD_BYTES, h->chain_head);
	time_format_ns(lg ? state_time_ns(ledger_state(lg)) : 0, h->time,
		       sizeof(h->time));
}

/* P/head's value: canonical JSON (sorted keys, no space). */
char *cluster__head_json(const struct cluster_head *h)
{
	json_t *o = json_object();
	char *s;

	LG_ASSERT(h != NULL);
	json_object_set_new(o, "chainHead", json_string(h->chain_head));
	json_object_set_new(o, "seq", json_integer((json_int_t)h->seq));
	json_object_set_new(o, "time", json_string(h->time));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* Reads P/head's value into h; false when it is not a head. */
bool cluster__head_parse(const uint8_t *v, size_t n, struct cluster_head *h)
{
	json_t *o = json_loadb((const char *)v, n, 0, NULL);
	const char *ch = json_string_value(json_object_get(o, "chainHead"));
	const char *t = json_string_value(json_object_get(o, "time"));
	const json_t *seq = json_object_get(o, "seq");
	bool ok = ch != NULL && t != NULL && json_is_integer(seq) &&
		  json_integer_value(seq) >= 0;

	LG_ASSERT((v != NULL || n == 0) && h != NULL);
	memset(h, 0, sizeof(*h));
	if (ok) {
		h->seq = (uint64_t)json_integer_value(seq);
		snprintf(h->chain_head, sizeof(h->chain_head), "%s", ch);
		snprintf(h->time, sizeof(h->time), "%s", t);
	}
	json_decref(o);
	return ok;
}

struct positions {
	char *src[POS_MAX], *key[POS_MAX], *val[POS_MAX];
	size_t len[POS_MAX], n;
	const char *prefix;
};

static int add_position(void *ctx, const char *source, const char *value,
			size_t len)
{
	struct positions *p = ctx;
	char key[KEY_MAX];

	if (p->n == POS_MAX)
		return LG_ELIMIT;
	snprintf(key, sizeof(key), "pos/%s", source);
	p->key[p->n] = lg_xmalloc(KEY_MAX);
	if (cluster__key(p->key[p->n], KEY_MAX, p->prefix, key) == 0) {
		free(p->key[p->n]);
		return LG_ELIMIT;
	}
	p->src[p->n] = lg_xstrdup(source);
	p->val[p->n] = lg_xmalloc(len + 1);
	memcpy(p->val[p->n], value, len);
	p->val[p->n][len] = '\0';
	p->len[p->n] = len;
	p->n++;
	return 0;
}

static void positions_release(struct positions *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->src[i]);
		free(p->key[i]);
		free(p->val[i]);
	}
	p->n = 0;
}

static void new_epoch(char *out)
{
	uint8_t id[16];

	if (getrandom(id, sizeof(id), 0) != (ssize_t)sizeof(id)) {
		/* getrandom(2) does not fail for 16 bytes once the pool is
		 * up; a clock is the fallback all the same (an epoch must
		 * differ between inits, not be secret). */
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		memcpy(id, &ts,
		       sizeof(ts) < sizeof(id) ? sizeof(ts) : sizeof(id));
	}
	lg_hex(id, sizeof(id), out);
}

/* What the failure branch of init's txn read: the head and epoch there. */
static void existing(const struct etcd_txn_result *r,
		     struct cluster_init_result *res)
{
	const struct etcd_range_result *h = &r->ops[0].range,
				       *ep = &r->ops[1].range;

	memset(&res->head, 0, sizeof(res->head));
	res->epoch[0] = '\0';
	if (h->n_kvs == 1 &&
	    !cluster__head_parse(h->kvs[0].value, h->kvs[0].value_len,
				 &res->head))
		snprintf(res->head.time, sizeof(res->head.time),
			 "(not a head)");
	if (ep->n_kvs == 1)
		snprintf(res->epoch, sizeof(res->epoch), "%.*s",
			 (int)ep->kvs[0].value_len,
			 (const char *)ep->kvs[0].value);
}

/* Sends the init txn t until its outcome is known (rule 1: an outcome we
 * do not know is learnt by sending the identical txn again; the epoch is
 * fresh, so finding it there means that an earlier copy committed). */
static int init_send(etcd_t *e, const struct etcd_txn *t, const char *epoch,
		     size_t n_pos, int64_t deadline, const char *k_head,
		     struct cluster_init_result *res, struct lg_error *err)
{
	bool unknown = false;
	int rc = 0;

	for (;;) {
		struct etcd_txn_result r;

		res->attempts++;
		rc = etcd_txn(e, t, &r, err);
		if (rc == 0 && r.outcome == ETCD_COMMITTED) {
			res->cluster_id = r.header.cluster_id;
			res->revision = r.header.revision;
			snprintf(res->epoch, sizeof(res->epoch), "%s", epoch);
			res->n_positions = n_pos;
			etcd_txn_result_release(&r);
			break;
		}
		if (rc == 0) {
			struct cluster_head mine = res->head;

			existing(&r, res);
			res->cluster_id = r.header.cluster_id;
			res->revision = r.header.revision;
			etcd_txn_result_release(&r);
			if (unknown && strcmp(res->epoch, epoch) == 0) {
				/* Ours, from an attempt whose answer was
				 * lost. */
				res->head = mine;
				res->n_positions = n_pos;
				break;
			}
			rc = lg_error_set(err, LG_EEXIST,
					  "%s already holds a head", k_head);
			break;
		}
		etcd_txn_result_release(&r);
		if (r.outcome == ETCD_INDETERMINATE)
			unknown = true;
		else if (!unknown)
			break; /* definitely not applied, and never was */
		if (etcd_mono_ms() >= deadline) {
			if (unknown)
				lg_error_set(err, LG_EIO,
					     "the outcome is unknown after %u "
					     "attempts (the last: %s); run "
					     "`cluster status` to see whether "
					     "the head is there",
					     res->attempts,
					     err ? err->msg : "");
			rc = LG_EIO;
			break;
		}
		cluster__sleep_ms(100);
	}
	return rc;
}

int cluster_init(const struct etcd_opts *eo, const char *prefix, ledger_t *lg,
		 struct cluster_init_result *res, struct lg_error *err)
{
	char k_head[KEY_MAX], k_epoch[KEY_MAX], epoch[33];
	struct positions pos = {.prefix = prefix};
	struct etcd_op succ[2 + POS_MAX], fail[2];
	struct etcd_cmp cmp;
	struct etcd_txn t;
	etcd_t *e = NULL;
	char *hv = NULL;
	int64_t deadline;
	int rc;

	LG_ASSERT(eo != NULL && res != NULL);
	memset(res, 0, sizeof(*res));
	rc = cluster_prefix_check(prefix, err);
	if (rc != 0)
		return rc;
	cluster__key(k_head, sizeof(k_head), prefix, "head");
	cluster__key(k_epoch, sizeof(k_epoch), prefix, "epoch");
	if (lg != NULL) {
		rc = ingest_positions_scan(lg, add_position, &pos, err);
		if (rc == LG_ELIMIT)
			lg_error_set(err, rc, "more than %d positions",
				     POS_MAX);
		if (rc != 0)
			goto out;
	}
	head_of(lg, &res->head);
	new_epoch(epoch);
	hv = cluster__head_json(&res->head);
	rc = etcd_open(&e, eo, err);
	if (rc != 0)
		goto out;

	/* Rule 8: the txn writes only where no head was ever written. */
	cmp = (struct etcd_cmp){.key = k_head,
				.key_len = strlen(k_head),
				.target = ETCD_CMP_CREATE,
				.result = ETCD_EQUAL,
				.number = 0};
	succ[0] = (struct etcd_op){
		.kind = ETCD_OP_PUT,
		.range = {.key = k_epoch, .key_len = strlen(k_epoch)},
		.value = epoch,
		.value_len = strlen(epoch)};
	succ[1] = (struct etcd_op){
		.kind = ETCD_OP_PUT,
		.range = {.key = k_head, .key_len = strlen(k_head)},
		.value = hv,
		.value_len = strlen(hv)};
	for (size_t i = 0; i < pos.n; i++)
		succ[2 + i] = (struct etcd_op){
			.kind = ETCD_OP_PUT,
			.range = {.key = pos.key[i],
				  .key_len = strlen(pos.key[i])},
			.value = pos.val[i],
			.value_len = pos.len[i]};
	fail[0] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_head, .key_len = strlen(k_head)}};
	fail[1] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_epoch, .key_len = strlen(k_epoch)}};
	t = (struct etcd_txn){.cmp = &cmp,
			      .n_cmp = 1,
			      .success = succ,
			      .n_success = 2 + pos.n,
			      .failure = fail,
			      .n_failure = 2};
	deadline = etcd_mono_ms() +
		   4 * (int64_t)(eo->timeout_ms ? eo->timeout_ms
						: ETCD_TIMEOUT_DEFAULT);
	rc = init_send(e, &t, epoch, pos.n, deadline, k_head, res, err);
out:
	etcd_close(e);
	positions_release(&pos);
	free(hv);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Status */

void cluster_status_release(struct cluster_status *st)
{
	if (st == NULL)
		return;
	for (size_t i = 0; i < st->n_members; i++)
		free(st->members[i].name);
	free(st->members);
	free(st->leader);
	st->members = NULL;
	st->n_members = 0;
	st->leader = NULL;
}

/* A member's or the leader's value: JSON {"name", "applied", ...}, or
 * bare text. */
void cluster__member_parse(const struct etcd_kv *kv,
			   struct cluster_status_member *m)
{
	json_t *o = json_loadb((const char *)kv->value, kv->value_len, 0, NULL);
	const json_t *a = json_object_get(o, "applied");

	LG_ASSERT(kv != NULL && m != NULL);
	if (json_is_integer(a) && json_integer_value(a) >= 0) {
		m->has_applied = true;
		m->applied = (uint64_t)json_integer_value(a);
	} else if (json_is_integer(o) && json_integer_value(o) >= 0) {
		m->has_applied = true;
		m->applied = (uint64_t)json_integer_value(o);
	}
	m->lease = kv->lease;
	json_decref(o);
}

static char *leader_name(const struct etcd_kv *kv)
{
	json_t *o = json_loadb((const char *)kv->value, kv->value_len, 0, NULL);
	const char *n = json_string_value(json_object_get(o, "name"));
	char *s = lg_xstrdup(n ? n : (const char *)kv->value);

	json_decref(o);
	return s;
}

int cluster_status(const struct etcd_opts *eo, const char *prefix,
		   struct cluster_status *st, struct lg_error *err)
{
	char k_head[KEY_MAX], k_epoch[KEY_MAX], k_leader[KEY_MAX],
		k_members[KEY_MAX];
	struct etcd_op ops[4];
	struct etcd_txn t;
	struct etcd_txn_result r = {0};
	struct etcd_status es;
	etcd_t *e = NULL;
	size_t stem;
	int rc;

	LG_ASSERT(eo != NULL && st != NULL);
	memset(st, 0, sizeof(*st));
	rc = cluster_prefix_check(prefix, err);
	if (rc != 0)
		return rc;
	cluster__key(k_head, sizeof(k_head), prefix, "head");
	cluster__key(k_epoch, sizeof(k_epoch), prefix, "epoch");
	cluster__key(k_leader, sizeof(k_leader), prefix, "leader");
	stem = cluster__key(k_members, sizeof(k_members), prefix, "members/");
	rc = etcd_open(&e, eo, err);
	if (rc != 0)
		return rc;
	/* One txn of reads: every key at one revision. */
	ops[0] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_head, .key_len = strlen(k_head)}};
	ops[1] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_epoch, .key_len = strlen(k_epoch)}};
	ops[2] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_leader, .key_len = strlen(k_leader)}};
	ops[3] = (struct etcd_op){.kind = ETCD_OP_RANGE,
				  .range = {.key = k_members,
					    .key_len = stem,
					    .prefix = true,
					    .limit = MEMBERS_MAX}};
	t = (struct etcd_txn){.success = ops, .n_success = 4};
	rc = etcd_txn(e, &t, &r, err);
	if (rc != 0)
		goto out;
	snprintf(st->endpoint, sizeof(st->endpoint), "%s", etcd_endpoint(e));
	st->cluster_id = r.header.cluster_id;
	st->member_id = r.header.member_id;
	st->revision = r.header.revision;
	if (r.ops[0].range.n_kvs == 1) {
		const struct etcd_kv *kv = &r.ops[0].range.kvs[0];

		st->has_head = true;
		if (!cluster__head_parse(kv->value, kv->value_len, &st->head)) {
			rc = lg_error_set(
				err, LG_ECORRUPT, "%s is not a head: \"%.*s\"",
				k_head,
				(int)(kv->value_len > 80 ? 80 : kv->value_len),
				(const char *)kv->value);
			goto out;
		}
	}
	if (r.ops[1].range.n_kvs == 1)
		snprintf(st->epoch, sizeof(st->epoch), "%.*s",
			 (int)r.ops[1].range.kvs[0].value_len,
			 (const char *)r.ops[1].range.kvs[0].value);
	if (r.ops[2].range.n_kvs == 1) {
		st->leader = leader_name(&r.ops[2].range.kvs[0]);
		st->leader_lease = r.ops[2].range.kvs[0].lease;
	}
	st->n_members = r.ops[3].range.n_kvs;
	st->members = lg_xcalloc(st->n_members ? st->n_members : 1,
				 sizeof(*st->members));
	for (size_t i = 0; i < st->n_members; i++) {
		const struct etcd_kv *kv = &r.ops[3].range.kvs[i];

		st->members[i].name = lg_xstrdup((const char *)kv->key + stem);
		cluster__member_parse(kv, &st->members[i]);
	}
	/* The etcd leader and version, from the member that answered. */
	if (etcd_status(e, &es, NULL, NULL) == 0) {
		st->etcd_leader = es.leader;
		snprintf(st->etcd_version, sizeof(st->etcd_version), "%s",
			 es.version);
	}
out:
	etcd_txn_result_release(&r);
	etcd_close(e);
	return rc;
}

static json_t *hex_id(uint64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%016llx", (unsigned long long)id);
	return json_string(s);
}

/* A name from etcd as a JSON string; one that is not UTF-8 as "?". */
static json_t *text(const char *s)
{
	json_t *v = json_string(s);

	return v ? v : json_string("?");
}

char *cluster_status_json(const struct cluster_status *st, const char *prefix)
{
	json_t *o = json_object(), *etcd = json_object(),
	       *members = json_array();
	char *s;

	LG_ASSERT(st != NULL && prefix != NULL);
	json_object_set_new(etcd, "clusterId", hex_id(st->cluster_id));
	json_object_set_new(etcd, "memberId", hex_id(st->member_id));
	json_object_set_new(etcd, "leader", hex_id(st->etcd_leader));
	json_object_set_new(etcd, "revision", json_integer(st->revision));
	json_object_set_new(etcd, "endpoint", json_string(st->endpoint));
	json_object_set_new(etcd, "version", json_string(st->etcd_version));
	json_object_set_new(o, "etcd", etcd);
	json_object_set_new(o, "prefix", json_string(prefix));
	if (st->has_head) {
		json_t *h = json_object();

		json_object_set_new(h, "seq",
				    json_integer((json_int_t)st->head.seq));
		json_object_set_new(h, "chainHead",
				    json_string(st->head.chain_head));
		json_object_set_new(h, "time", json_string(st->head.time));
		json_object_set_new(o, "head", h);
	} else {
		json_object_set_new(o, "head", json_null());
	}
	json_object_set_new(o, "epoch",
			    st->epoch[0] ? json_string(st->epoch)
					 : json_null());
	if (st->leader != NULL) {
		json_t *l = json_object();

		json_object_set_new(l, "name", text(st->leader));
		json_object_set_new(l, "lease",
				    hex_id((uint64_t)st->leader_lease));
		json_object_set_new(o, "leader", l);
	} else {
		json_object_set_new(o, "leader", json_null());
	}
	for (size_t i = 0; i < st->n_members; i++) {
		const struct cluster_status_member *m = &st->members[i];
		json_t *j = json_object();

		json_object_set_new(j, "name", text(m->name));
		json_object_set_new(
			j, "applied",
			m->has_applied ? json_integer((json_int_t)m->applied)
				       : json_null());
		json_object_set_new(
			j, "lag",
			m->has_applied && st->has_head
				? json_integer((json_int_t)st->head.seq -
					       (json_int_t)m->applied)
				: json_null());
		json_object_set_new(j, "lease", hex_id((uint64_t)m->lease));
		json_array_append_new(members, j);
	}
	json_object_set_new(o, "members", members);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}
