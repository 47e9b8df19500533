/*
 * The log in etcd (DESIGN 11), the parts that need no etcd: the values of
 * P/log/ as a writer builds them and a member's applier appends them
 * (byte-identical events, heads, Merkle roots and checkpoints on every
 * member, equal to a single-pod ledger of the same events, over random
 * histories and random splits; seeded, printed, CLUSTER_SEED=N reruns
 * one), every damaged byte of a value refused, rule 7's filter, the
 * applier's head check, and the append txn's rule 1 against a scripted
 * etcd (an answer lost, then our own value in the failure branch).
 */
#include "cluster/applier_int.h"
#include "etcd/etcd_int.h"
#include "ledger/ledger_int.h"
#include "tests/cluster_tests.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t seed_of(int i)
{
	const char *s = getenv("CLUSTER_SEED");

	return s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) * 1000 + i;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static char *fresh(void)
{
	char *d = strdup("/tmp/gpuledger-cluster-XXXXXX");

	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void rm_dir(char *d)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	ck_assert_int_eq(system(cmd), 0);
	free(d);
}

static ledger_t *open_ledger(const char *dir, uint64_t cp_every)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.map_size_bytes = SIZE_MAX,
				.map_max_bytes = (size_t)1 << 30,
				.checkpoint_every = cp_every,
				.checkpoint_secs = -1};
	struct lg_error err = {0};
	ledger_t *lg = NULL;

	ck_assert_msg(ledger_open(&lg, &o, &err) == 0, "%s", err.msg);
	return lg;
}

/* A random history that fits: tenants, budgets, notes, ticks; times that
 * sometimes step back (the clamp). Strings live in names[]. */
#define HIST_MAX 400
struct hist {
	struct event ev[HIST_MAX];
	char names[HIST_MAX][48];
	size_t n;
};

static void history(struct hist *h, uint64_t *s, size_t n)
{
	int64_t t = 1700000000000000000, budget = -1;
	size_t tenants = 0;

	memset(h, 0, sizeof(*h));
	for (size_t i = 0; i < n; i++) {
		struct event *e = &h->ev[i];
		uint64_t r = rnd(s) % 10;

		t += (int64_t)(rnd(s) % 3000000000u) - 500000000;
		e->time_ns = t;
		if (i == 0) {
			e->type = EV_TENANT;
			e->ns = "tenant-root";
		} else if (r < 3) {
			snprintf(h->names[i], sizeof(h->names[i]),
				 "tenant-t%zu", i);
			e->type = EV_TENANT;
			e->ns = h->names[i];
			e->parent = "tenant-root";
			tenants++;
		} else if (r < 6 && tenants > 0) {
			e->type = EV_BUDGET;
			e->ns = "tenant-root";
			e->key = GPU_TOTAL_KEY;
			e->present = true;
			e->value = (int64_t)(rnd(s) % 1000);
			if (e->value == budget)
				e->value++;
			budget = e->value;
		} else if (r < 9) {
			snprintf(h->names[i], sizeof(h->names[i]),
				 "note %zu: \xc3\xa9t\xc3\xa9 %llu", i,
				 (unsigned long long)rnd(s));
			e->type = EV_NOTE;
			e->key = "Test";
			e->text = h->names[i];
		} else {
			e->type = EV_TICK;
		}
	}
	h->n = n;
}

/* Builds the values of h in random splits (as a writer would: on a copy
 * of the state at the writer's head), each handed to fn. */
typedef void value_fn(void *ctx, const struct ledger_logval *v);
static size_t split(struct hist *h, uint64_t *s, value_fn *fn, void *ctx)
{
	state_t *st = state_new();
	uint8_t head[LEDGER_HEAD_BYTES] = {0};
	struct lg_error err = {0};
	size_t off = 0, values = 0;

	while (off < h->n) {
		struct ledger_logval v;
		size_t taken,
			want = 1 + rnd(s) % 40,
			max = LEDGER_LOGVAL_HEADER_BYTES + 64 + rnd(s) % 4000;
		state_t *copy = state_clone(st);

		if (want > h->n - off)
			want = h->n - off;
		ck_assert_msg(ledger_logval_build(copy, head, h->ev + off, want,
						  max, &v, &taken, &err) == 0,
			      "%s", err.msg);
		ck_assert_uint_ge(taken, 1);
		ck_assert_uint_le(taken, want);
		ck_assert_uint_le(v.len, max);
		ck_assert_uint_eq(v.first_seq, off + 1);
		fn(ctx, &v);
		memcpy(head, v.head, LEDGER_HEAD_BYTES);
		state_free(st);
		st = copy;
		off += taken;
		values++;
		ledger_logval_release(&v);
	}
	state_free(st);
	return values;
}

struct members {
	ledger_t *m[2];
};

static void apply_both(void *ctx, const struct ledger_logval *v)
{
	struct members *ms = ctx;
	struct ledger_cluster_meta cm = {.cluster_id = 7, .revision = 9};
	struct lg_error err = {0};

	snprintf(cm.epoch, sizeof(cm.epoch), "e");
	snprintf(cm.prefix, sizeof(cm.prefix), "/p");
	for (int i = 0; i < 2; i++) {
		uint8_t head[LEDGER_HEAD_BYTES];

		ck_assert_msg(ledger_append_logval(ms->m[i], v->bytes, v->len,
						   v->head, &cm, head,
						   &err) == 0,
			      "%s", err.msg);
		ck_assert_mem_eq(head, v->head, LEDGER_HEAD_BYTES);
		cm.revision++;
	}
}

static void same_ledgers(ledger_t *a, ledger_t *b, bool checkpoints)
{
	uint8_t ra[MERKLE_HASH_BYTES], rb[MERKLE_HASH_BYTES];
	struct lg_error err = {0};
	uint64_t n = ledger_last_seq(a);

	ck_assert_uint_eq(n, ledger_last_seq(b));
	ck_assert_mem_eq(ledger_head(a), ledger_head(b), LEDGER_HEAD_BYTES);
	ck_assert_int_eq(ledger_tree_root(a, n, ra, &err), 0);
	ck_assert_int_eq(ledger_tree_root(b, n, rb, &err), 0);
	ck_assert_mem_eq(ra, rb, MERKLE_HASH_BYTES);
	for (uint64_t s = 1; s <= n; s++) {
		uint8_t *va, *vb;
		size_t la, lb;

		ck_assert_int_eq(
			ledger__raw_get(a, LEDGER_DB_EVENTS, s, &va, &la, &err),
			0);
		ck_assert_int_eq(
			ledger__raw_get(b, LEDGER_DB_EVENTS, s, &vb, &lb, &err),
			0);
		ck_assert_uint_eq(la, lb);
		ck_assert_mem_eq(va, vb, la);
		free(va);
		free(vb);
		if (!checkpoints)
			continue;
		int ca = ledger__raw_get(a, LEDGER_DB_CHECKPOINTS, s, &va, &la,
					 NULL),
		    cb = ledger__raw_get(b, LEDGER_DB_CHECKPOINTS, s, &vb, &lb,
					 NULL);
		ck_assert_int_eq(ca, cb);
		if (ca == 0) {
			ck_assert_uint_eq(la, lb);
			ck_assert_mem_eq(va, vb, la);
			free(va);
			free(vb);
		}
	}
}

/* Two members applying the values of random splits, and a single-pod
 * ledger_append of the same events in other batches: byte-identical. */
START_TEST(log_members_equal_single_pod)
{
	uint64_t seed = seed_of(_i), s = seed | 1;
	char *d[3] = {fresh(), fresh(), fresh()};
	struct members ms = {{open_ledger(d[0], 7), open_ledger(d[1], 7)}};
	ledger_t *single = open_ledger(d[2], 1000000);
	struct hist *h = malloc(sizeof(*h)), *h2 = malloc(sizeof(*h2));
	struct ledger_cluster_meta cm;
	struct lg_error err = {0};
	size_t n = 1 + rnd(&s) % HIST_MAX, off = 0;
	bool present;

	printf("log_members_equal_single_pod: seed %llu\n",
	       (unsigned long long)seed);
	history(h, &s, n);
	*h2 = *h;
	for (size_t i = 0; i < n; i++) {
		/* The copy's strings point into its own names. */
		if (h2->ev[i].ns == h->names[i])
			h2->ev[i].ns = h2->names[i];
		if (h2->ev[i].text == h->names[i])
			h2->ev[i].text = h2->names[i];
	}
	split(h, &s, apply_both, &ms);
	while (off < n) {
		size_t k = 1 + rnd(&s) % 100;

		if (k > n - off)
			k = n - off;
		ck_assert_msg(ledger_append(single, h2->ev + off, k, NULL, 0,
					    NULL, &err) == 0,
			      "%s", err.msg);
		off += k;
	}
	same_ledgers(ms.m[0], ms.m[1], true);
	same_ledgers(ms.m[0], single, false);
	ck_assert_uint_eq(ledger_checkpoint_seq(ms.m[0]),
			  ledger_checkpoint_seq(ms.m[1]));
	ck_assert_int_eq(ledger_cluster_meta_get(ms.m[0], &cm, &present, &err),
			 0);
	ck_assert(present);
	ck_assert_uint_eq(cm.seq, n);
	ck_assert_uint_eq(cm.cluster_id, 7);
	ck_assert_str_eq(cm.epoch, "e");
	ck_assert_str_eq(cm.prefix, "/p");
	ck_assert_int_eq(ledger_cluster_meta_get(single, &cm, &present, &err),
			 0);
	ck_assert(!present);
	for (int i = 0; i < 3; i++) {
		ledger_close(i < 2 ? ms.m[i] : single);
		rm_dir(d[i]);
	}
	free(h);
	free(h2);
}
END_TEST

static void keep_first(void *ctx, const struct ledger_logval *v)
{
	struct ledger_logval *out = ctx;

	if (out->bytes == NULL) {
		*out = *v;
		out->bytes = malloc(v->len);
		memcpy(out->bytes, v->bytes, v->len);
	}
}

/* Every byte of a value, changed, is refused by a reader that checks
 * the chain from the head before it. */
START_TEST(log_value_any_damage)
{
	uint64_t seed = seed_of(_i), s = seed | 1;
	struct hist *h = malloc(sizeof(*h));
	struct ledger_logval v = {0};
	static const uint8_t zero[LEDGER_HEAD_BYTES];
	struct lg_error err = {0};

	printf("log_value_any_damage: seed %llu\n", (unsigned long long)seed);
	history(h, &s, 20);
	split(h, &s, keep_first, &v);
	ck_assert_int_eq(ledger_logval_read(v.bytes, v.len, 1, zero, NULL, NULL,
					    NULL, &err),
			 0);
	for (size_t i = 0; i < v.len; i++) {
		uint8_t keep = v.bytes[i];

		v.bytes[i] ^= (uint8_t)(1 + rnd(&s) % 255);
		ck_assert_msg(ledger_logval_read(v.bytes, v.len, 1, zero, NULL,
						 NULL, NULL, &err) != 0,
			      "byte %zu of %zu changed, still read", i, v.len);
		v.bytes[i] = keep;
	}
	ck_assert_int_ne(ledger_logval_read(v.bytes, v.len - 1, 1, zero, NULL,
					    NULL, NULL, &err),
			 0);
	ck_assert_int_ne(ledger_logval_read(v.bytes, v.len, 2, zero, NULL, NULL,
					    NULL, &err),
			 0);
	free(v.bytes);
	free(h);
}
END_TEST

/* The writer refuses what no member could apply, naming the event. */
START_TEST(log_build_refuses)
{
	state_t *st = state_new();
	uint8_t head[LEDGER_HEAD_BYTES] = {0};
	struct event evs[3] = {
		{.type = EV_TENANT, .ns = "tenant-root", .time_ns = 5},
		{.type = EV_TENANT, .ns = "tenant-root", .time_ns = 6},
		{.type = EV_TICK, .time_ns = 7},
	};
	struct ledger_logval v;
	struct lg_error err = {0};
	size_t taken = 99;

	ck_assert_int_eq(ledger_logval_build(st, head, evs, 3, 1 << 20, &v,
					     &taken, &err),
			 LG_EMISMATCH);
	ck_assert_uint_eq(taken, 1);
	ck_assert_ptr_nonnull(strstr(err.msg, "event 1 does not fit"));
	ck_assert_ptr_null(v.bytes);
	state_free(st);
	st = state_new();
	ck_assert_int_eq(ledger_logval_build(st, head, evs, 1,
					     LEDGER_LOGVAL_HEADER_BYTES + 4, &v,
					     &taken, &err),
			 LG_ELIMIT);
	/* A value of one event, then the rest: a split. */
	evs[1] = evs[2];
	evs[1].time_ns = 1; /* before the first: clamped */
	evs[0].seq = 1;
	ck_assert_int_eq(
		ledger_logval_build(
			st, head, evs, 2,
			LEDGER_LOGVAL_HEADER_BYTES + 4 +
				ledger__event_encode(&evs[0], NULL, 0) + 3,
			&v, &taken, &err),
		0);
	ck_assert_uint_eq(taken, 1);
	ledger_logval_release(&v);
	ck_assert_int_eq(ledger_logval_build(st, v.head, evs + 1, 1, 1 << 20,
					     &v, &taken, &err),
			 0);
	ck_assert_uint_eq(v.first_seq, 2);
	ck_assert_int_eq(evs[1].time_ns, 5);
	ledger_logval_release(&v);
	state_free(st);
}
END_TEST

/* Rule 7's filter. */
START_TEST(log_check_rule7)
{
	static const struct {
		const char *key;
		bool put;
		int64_t version;
		uint64_t applied;
		enum cluster_log_check want;
	} cases[] = {
		{"/p/log/00000000000000000005", true, 1, 4, CLUSTER_LOG_APPLY},
		{"/p/log/00000000000000000005", true, 2, 4,
		 CLUSTER_LOG_REWRITE},
		{"/p/log/00000000000000000005", true, 1, 5, CLUSTER_LOG_REPEAT},
		{"/p/log/00000000000000000005", true, 1, 9, CLUSTER_LOG_REPEAT},
		{"/p/log/00000000000000000005", true, 1, 3, CLUSTER_LOG_GAP},
		{"/p/log/00000000000000000005", false, 0, 4, CLUSTER_LOG_OTHER},
		{"/p/head", true, 1, 4, CLUSTER_LOG_OTHER},
		{"/p/log/5", true, 1, 4, CLUSTER_LOG_OTHER},
		{"/q/log/00000000000000000005", true, 1, 4, CLUSTER_LOG_OTHER},
		{"/p/log/0000000000000000000x", true, 1, 4, CLUSTER_LOG_OTHER},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct etcd_kv kv = {.key = (uint8_t *)cases[i].key,
				     .key_len = strlen(cases[i].key),
				     .version = cases[i].version};
		uint64_t s;

		ck_assert_msg(cluster__log_check(&kv, cases[i].put, "/p",
						 cases[i].applied,
						 &s) == cases[i].want,
			      "case %zu", i);
	}
}
END_TEST

/* The applier appends a value only with P/head's chain head (rule 7). */
START_TEST(log_applier_head_check)
{
	char *d = fresh();
	ledger_t *lg = open_ledger(d, 0);
	struct etcd_opts eo = {.endpoints = "http://127.0.0.1:1",
			       .timeout_ms = 500};
	cluster_applier_t *a = NULL;
	state_t *st = state_new();
	uint8_t zero[LEDGER_HEAD_BYTES] = {0}, other[LEDGER_HEAD_BYTES];
	struct event ev = {.type = EV_TENANT, .ns = "tenant-root"};
	struct ledger_logval v;
	struct lg_error err = {0};
	char key[64];
	struct etcd_kv kv;
	size_t taken;

	ck_assert_int_eq(cluster__applier_new(&a, lg, &eo, "/p", &err), 0);
	ck_assert_int_eq(ledger_logval_build(st, zero, &ev, 1, 1 << 20, &v,
					     &taken, &err),
			 0);
	cluster__log_key(key, sizeof(key), "/p", 1);
	kv = (struct etcd_kv){.key = (uint8_t *)key,
			      .key_len = strlen(key),
			      .value = v.bytes,
			      .value_len = v.len,
			      .version = 1,
			      .mod_revision = 12};
	memcpy(other, v.head, LEDGER_HEAD_BYTES);
	other[0] ^= 1;
	ck_assert_int_eq(cluster__applier_apply(a, &kv, other, 3, &err),
			 LG_EMISMATCH);
	ck_assert_ptr_nonnull(strstr(err.msg, "P/head says"));
	ck_assert_uint_eq(ledger_last_seq(lg), 0);
	ck_assert_int_eq(cluster__applier_apply(a, &kv, v.head, 3, &err), 0);
	ck_assert_uint_eq(ledger_last_seq(lg), 1);
	ck_assert_mem_eq(ledger_head(lg), v.head, LEDGER_HEAD_BYTES);
	/* The same value again is not the next one. */
	ck_assert_int_eq(cluster__applier_apply(a, &kv, v.head, 3, &err),
			 LG_EMISMATCH);
	ck_assert_uint_eq(ledger_last_seq(lg), 1);
	ledger_logval_release(&v);
	state_free(st);
	cluster__applier_free(a);
	ledger_close(lg);
	rm_dir(d);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The append txn against a scripted etcd */

enum step {
	S_COMMIT,
	S_LOST,	      /* indeterminate */
	S_REFUSED,    /* not applied */
	S_FAIL_OURS,  /* compare failed, P/log/<s+1> is ours */
	S_FAIL_OTHER, /* compare failed, another writer's value */
	S_FAIL_LEADER,
	S_FAIL_EPOCH,
};

struct script {
	enum step steps[16];
	size_t n, at;
	char *bodies[16];
	const struct ledger_logval *ours, *theirs;
};

static void kv_set(struct etcd_kv *kv, const char *key, const void *val,
		   size_t len, int64_t create, int64_t mod)
{
	kv->key = (uint8_t *)strdup(key);
	kv->key_len = strlen(key);
	kv->value = malloc(len + 1);
	memcpy(kv->value, val, len);
	kv->value[len] = 0;
	kv->value_len = len;
	kv->create_revision = create;
	kv->mod_revision = mod;
	kv->version = 1;
}

static void range_one(struct etcd_op_result *op, const char *key,
		      const void *val, size_t len, int64_t create)
{
	op->kind = ETCD_OP_RANGE;
	if (val == NULL)
		return;
	op->range.kvs = calloc(1, sizeof(*op->range.kvs));
	op->range.n_kvs = 1;
	op->range.count = 1;
	kv_set(&op->range.kvs[0], key, val, len, create, 40);
}

static int scripted(void *ctx, const struct etcd_txn *t,
		    struct etcd_txn_result *r, struct lg_error *err)
{
	struct script *sc = ctx;
	enum step st;
	char head[200];

	memset(r, 0, sizeof(*r));
	if (t->n_cmp == 0) {
		/* A read of P/log/ values between (the conflict's): the
		 * other writer's value. */
		r->outcome = ETCD_COMMITTED;
		r->ops = calloc(1, sizeof(*r->ops));
		r->n_ops = 1;
		range_one(&r->ops[0], "/p/log/00000000000000000001",
			  sc->theirs->bytes, sc->theirs->len, 41);
		return 0;
	}
	ck_assert_uint_lt(sc->at, sc->n);
	sc->bodies[sc->at] = etcd__txn_body(t, err);
	st = sc->steps[sc->at++];
	r->header.revision = 50;
	switch (st) {
	case S_COMMIT:
		r->outcome = ETCD_COMMITTED;
		r->ops = calloc(t->n_success, sizeof(*r->ops));
		r->n_ops = t->n_success;
		return 0;
	case S_LOST:
		r->outcome = ETCD_INDETERMINATE;
		return lg_error_set(err, LG_EIO, "answer lost");
	case S_REFUSED:
		r->outcome = ETCD_NOT_APPLIED;
		return lg_error_set(err, LG_EIO, "could not connect");
	default:
		break;
	}
	r->outcome = ETCD_COMPARE_FAILED;
	r->ops = calloc(5, sizeof(*r->ops));
	r->n_ops = 5;
	snprintf(head, sizeof(head),
		 "{\"chainHead\":\"%064d\",\"seq\":%llu,\"time\":\"x\"}", 0,
		 (unsigned long long)sc->theirs->last_seq);
	range_one(&r->ops[0], "/p/head", head, strlen(head), 2);
	if (st == S_FAIL_OURS)
		range_one(&r->ops[1], "/p/log/00000000000000000001",
			  sc->ours->bytes, sc->ours->len, 40);
	else
		range_one(&r->ops[1], "/p/log/00000000000000000001",
			  sc->theirs->bytes, sc->theirs->len, 41);
	range_one(&r->ops[2], "/p/epoch", st == S_FAIL_EPOCH ? "other" : "ep",
		  st == S_FAIL_EPOCH ? 5 : 2, 1);
	range_one(&r->ops[3], "/p/leader", "{}", 2,
		  st == S_FAIL_LEADER ? 33 : 30);
	range_one(&r->ops[4], "/p/open", NULL, 0, 0);
	return 0;
}

static const struct {
	enum step steps[4];
	size_t n;
	enum cluster_append_outcome want;
	unsigned attempts;
	bool found;
} append_cases[] = {
	{{S_COMMIT}, 1, CLUSTER_APPEND_COMMITTED, 1, false},
	/* Rule 1: the answer lost, the identical txn again, ours there. */
	{{S_LOST, S_FAIL_OURS}, 2, CLUSTER_APPEND_COMMITTED, 2, true},
	{{S_LOST, S_LOST, S_COMMIT}, 3, CLUSTER_APPEND_COMMITTED, 3, false},
	/* Lost, then not applied: the first may have committed; on. */
	{{S_LOST, S_REFUSED, S_FAIL_OURS},
	 3,
	 CLUSTER_APPEND_COMMITTED,
	 3,
	 true},
	{{S_LOST, S_FAIL_OTHER}, 2, CLUSTER_APPEND_CONFLICT, 2, false},
	{{S_REFUSED}, 1, CLUSTER_APPEND_NOT_APPLIED, 1, false},
	{{S_FAIL_OTHER}, 1, CLUSTER_APPEND_CONFLICT, 1, false},
	{{S_FAIL_LEADER}, 1, CLUSTER_APPEND_DEPOSED, 1, false},
	{{S_FAIL_EPOCH}, 1, CLUSTER_APPEND_NOT_APPLIED, 1, false},
};

START_TEST(log_append_rule1)
{
	state_t *a = state_new(), *b = state_new();
	uint8_t zero[LEDGER_HEAD_BYTES] = {0};
	struct event ea = {.type = EV_TENANT, .ns = "tenant-root"},
		     eb[2] = {{.type = EV_TENANT, .ns = "tenant-root"},
			      {.type = EV_VERDICT, .text = "{\"id\":1}"}};
	struct ledger_logval ours, theirs;
	struct script sc = {.n = append_cases[_i].n};
	struct cluster_writer w = {.prefix = "/p",
				   .send = scripted,
				   .send_ctx = &sc,
				   .head_rev = 2,
				   .leader_rev = 30,
				   .retry_ms = 1};
	struct cluster_append_req rq = {.v = &ours};
	struct cluster_append_result res;
	struct lg_error err = {0};
	size_t taken;

	memcpy(sc.steps, append_cases[_i].steps, sizeof(sc.steps[0]) * sc.n);
	snprintf(w.epoch, sizeof(w.epoch), "ep");
	ck_assert_int_eq(ledger_logval_build(a, zero, &ea, 1, 1 << 20, &ours,
					     &taken, &err),
			 0);
	ck_assert_int_eq(ledger_logval_build(b, zero, eb, 2, 1 << 20, &theirs,
					     &taken, &err),
			 0);
	sc.ours = &ours;
	sc.theirs = &theirs;
	rq.deadline_ms = INT64_MAX;
	ck_assert_int_eq(cluster__append(&w, &rq, &res, &err), 0);
	ck_assert_msg(res.outcome == append_cases[_i].want, "case %d: %s", _i,
		      cluster__append_outcome_name(res.outcome));
	ck_assert_uint_eq(res.attempts, append_cases[_i].attempts);
	ck_assert_uint_eq(res.found, append_cases[_i].found);
	/* Every re-send is the identical txn. */
	for (size_t i = 1; i < sc.at; i++)
		ck_assert_str_eq(sc.bodies[i], sc.bodies[0]);
	if (res.outcome == CLUSTER_APPEND_COMMITTED) {
		ck_assert_uint_eq(w.seq, 1);
		ck_assert_mem_eq(w.head, ours.head, LEDGER_HEAD_BYTES);
	} else {
		ck_assert_uint_eq(w.seq, 0);
	}
	if (res.outcome == CLUSTER_APPEND_CONFLICT) {
		ck_assert_uint_eq(res.now.seq, 2);
		ck_assert(!res.only_verdicts); /* a TENANT intervened */
	}
	for (size_t i = 0; i < sc.at; i++)
		free(sc.bodies[i]);
	ledger_logval_release(&ours);
	ledger_logval_release(&theirs);
	state_free(a);
	state_free(b);
}
END_TEST

/* A conflict over the verdict path's events only (VERDICTs, NOTEs
 * VerdictUnanswered a door appended) is caught up over; over any other
 * event it is another writer's observation (DESIGN 11 rule 4). */
static const struct {
	enum event_type type;
	const char *code;
	bool only;
} between_cases[] = {
	{EV_VERDICT, NULL, true},
	{EV_NOTE, CLUSTER_NOTE_UNANSWERED, true},
	{EV_NOTE, "Synced", false},
	{EV_NOTE, "LeaderChanged", false},
	{EV_TENANT, NULL, false},
};

START_TEST(log_append_conflict_between)
{
	state_t *a = state_new(), *b = state_new();
	uint8_t zero[LEDGER_HEAD_BYTES] = {0};
	struct event ea = {.type = EV_TENANT, .ns = "tenant-root"},
		     eb[2] = {{.type = EV_VERDICT, .text = "{\"id\":1}"},
			      {.type = between_cases[_i].type}};
	struct ledger_logval ours, theirs;
	struct script sc = {.n = 1, .steps = {S_FAIL_OTHER}};
	struct cluster_writer w = {.prefix = "/p",
				   .send = scripted,
				   .send_ctx = &sc,
				   .head_rev = 2,
				   .leader_rev = 30,
				   .retry_ms = 1};
	struct cluster_append_req rq = {.v = &ours, .deadline_ms = INT64_MAX};
	struct cluster_append_result res;
	struct lg_error err = {0};
	size_t taken;

	switch (eb[1].type) {
	case EV_VERDICT:
		eb[1].text = "{\"id\":2}";
		break;
	case EV_NOTE:
		eb[1].key = between_cases[_i].code;
		eb[1].text = "a message";
		eb[1].name = "1";
		break;
	default:
		eb[1].ns = "tenant-root";
		break;
	}
	ck_assert(cluster__verdict_path_event(&eb[1]) ==
		  between_cases[_i].only);
	snprintf(w.epoch, sizeof(w.epoch), "ep");
	ck_assert_int_eq(ledger_logval_build(a, zero, &ea, 1, 1 << 20, &ours,
					     &taken, &err),
			 0);
	ck_assert_msg(ledger_logval_build(b, zero, eb, 2, 1 << 20, &theirs,
					  &taken, &err) == 0,
		      "%s", err.msg);
	sc.ours = &ours;
	sc.theirs = &theirs;
	ck_assert_int_eq(cluster__append(&w, &rq, &res, &err), 0);
	ck_assert_int_eq(res.outcome, CLUSTER_APPEND_CONFLICT);
	ck_assert_uint_eq(res.now.seq, 2);
	ck_assert_msg(res.only_verdicts == between_cases[_i].only, "case %d",
		      _i);
	for (size_t i = 0; i < sc.at; i++)
		free(sc.bodies[i]);
	ledger_logval_release(&ours);
	ledger_logval_release(&theirs);
	state_free(a);
	state_free(b);
}
END_TEST

/* Unknown at the deadline: never reported as anything else. */
START_TEST(log_append_deadline)
{
	state_t *a = state_new();
	uint8_t zero[LEDGER_HEAD_BYTES] = {0};
	struct event ea = {.type = EV_TENANT, .ns = "tenant-root"};
	struct ledger_logval v;
	struct script sc = {.n = 16};
	struct cluster_writer w = {.prefix = "/p",
				   .send = scripted,
				   .send_ctx = &sc,
				   .retry_ms = 1};
	struct cluster_append_req rq = {.v = &v};
	struct cluster_append_result res;
	struct lg_error err = {0};
	size_t taken;

	for (size_t i = 0; i < sc.n; i++)
		sc.steps[i] = S_LOST;
	snprintf(w.epoch, sizeof(w.epoch), "ep");
	ck_assert_int_eq(
		ledger_logval_build(a, zero, &ea, 1, 1 << 20, &v, &taken, &err),
		0);
	sc.ours = sc.theirs = &v;
	rq.deadline_ms = 0; /* already past: after the first attempt */
	ck_assert_int_eq(cluster__append(&w, &rq, &res, &err), 0);
	ck_assert_int_eq(res.outcome, CLUSTER_APPEND_UNKNOWN);
	ck_assert_uint_eq(w.seq, 0);
	free(sc.bodies[0]);
	ledger_logval_release(&v);
	state_free(a);
}
END_TEST

void cluster_tests_log(Suite *s)
{
	TCase *tc = tcase_create("log");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, log_members_equal_single_pod, 0, 20);
	tcase_add_loop_test(tc, log_value_any_damage, 0, 10);
	tcase_add_test(tc, log_build_refuses);
	tcase_add_test(tc, log_check_rule7);
	tcase_add_test(tc, log_applier_head_check);
	tcase_add_loop_test(tc, log_append_rule1, 0,
			    sizeof(append_cases) / sizeof(append_cases[0]));
	tcase_add_loop_test(tc, log_append_conflict_between, 0,
			    sizeof(between_cases) / sizeof(between_cases[0]));
	tcase_add_test(tc, log_append_deadline);
	suite_add_tcase(s, tc);
}
