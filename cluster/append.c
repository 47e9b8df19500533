/*
 * The append txn (DESIGN 11 "An append is one txn", rules 1, 5, 6): one
 * P/log/<s+1> value, the new P/head and the watcher's positions, put only
 * where the writer judged: P/epoch as read, P/head's mod_revision as read
 * with (s, h), P/leader's create_revision as won, and, for verdicts, no
 * half-applied batch (P/open absent).
 *
 * Why re-send rather than re-read: a txn whose answer was lost may have
 * committed. Re-chaining then (reading P/head, building s'+1 on it) would
 * append the same events twice, or judge a verdict again on a state that
 * already holds it. The identical txn is sent again instead: if the first
 * one committed, the second's compare fails, and its failure branch shows
 * P/log/<s+1> byte for byte the value sent: ours.
 */
#include "cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + 64)
/* P/pos/ keys one txn puts: the txn stays far below 128 operations. */
#define POS_MAX 16
/* P/log/ values one range asks for: most values are small; a range whose
 * answer would exceed our bound is asked again one value at a time. */
#define RANGE_VALUES 64

static const char *const outcome_names[] = {
	[CLUSTER_APPEND_COMMITTED] = "committed",
	[CLUSTER_APPEND_CONFLICT] = "conflict",
	[CLUSTER_APPEND_DEPOSED] = "deposed",
	[CLUSTER_APPEND_NOT_APPLIED] = "not-applied",
	[CLUSTER_APPEND_UNKNOWN] = "unknown",
};

const char *cluster__append_outcome_name(enum cluster_append_outcome o)
{
	return (unsigned)o < sizeof(outcome_names) / sizeof(outcome_names[0])
		       ? outcome_names[o]
		       : "?";
}

bool cluster__head_bytes(const struct cluster_head *h, uint8_t *out)
{
	for (size_t i = 0; i < LEDGER_HEAD_BYTES; i++) {
		unsigned v = 0;

		for (size_t j = 0; j < 2; j++) {
			char c = h->chain_head[2 * i + j];

			if (c >= '0' && c <= '9')
				v = v * 16 + (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v = v * 16 + (unsigned)(c - 'a' + 10);
			else
				return false;
		}
		out[i] = (uint8_t)v;
	}
	return h->chain_head[2 * LEDGER_HEAD_BYTES] == '\0';
}

uint64_t cluster__log_key_seq(const uint8_t *key, size_t len,
			      const char *prefix)
{
	size_t pl = strlen(prefix);
	uint64_t seq = 0;

	if (len != pl + 5 + 20 || memcmp(key, prefix, pl) != 0 ||
	    memcmp(key + pl, "/log/", 5) != 0)
		return 0;
	for (size_t i = pl + 5; i < len; i++) {
		if (key[i] < '0' || key[i] > '9')
			return 0;
		if (seq > (UINT64_MAX - 9) / 10)
			return 0;
		seq = seq * 10 + (uint64_t)(key[i] - '0');
	}
	return seq;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000),
			      (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static int send_txn(struct cluster_writer *w, const struct etcd_txn *t,
		    struct etcd_txn_result *r, struct lg_error *err)
{
	if (w->send != NULL)
		return w->send(w->send_ctx, t, r, err);
	return etcd_txn(w->etcd, t, r, err);
}

/* ---------------------------------------------------------------------- */
/* Reading P/log/ values */

int cluster__log_read(struct cluster_writer *w, uint64_t from, uint64_t to,
		      int64_t revision, cluster_logval_fn *fn, void *ctx,
		      struct lg_error *err)
{
	char k_from[KEY_MAX], k_end[KEY_MAX];
	int64_t limit = RANGE_VALUES;
	int rc = 0;

	while (from <= to && rc == 0) {
		struct etcd_op op;
		struct etcd_txn t;
		struct etcd_txn_result r;
		const struct etcd_range_result *rr;
		size_t n_from = cluster__log_key(k_from, sizeof(k_from),
						 w->prefix, from),
		       n_end = cluster__log_key(k_end, sizeof(k_end), w->prefix,
						to + 1 > to ? to + 1 : to);

		op = (struct etcd_op){.kind = ETCD_OP_RANGE,
				      .range = {.key = k_from,
						.key_len = n_from,
						.end = k_end,
						.end_len = n_end,
						.revision = revision,
						.limit = limit}};
		t = (struct etcd_txn){.success = &op, .n_success = 1};
		rc = send_txn(w, &t, &r, err);
		if (rc == LG_ELIMIT && limit > 1) {
			/* The answer was too big for our bound: one by one. */
			etcd_txn_result_release(&r);
			limit = 1;
			rc = 0;
			continue;
		}
		if (rc != 0) {
			etcd_txn_result_release(&r);
			break;
		}
		rr = &r.ops[0].range;
		for (size_t i = 0; i < rr->n_kvs && rc == 0; i++) {
			uint64_t s = cluster__log_key_seq(
				rr->kvs[i].key, rr->kvs[i].key_len, w->prefix);

			if (s != from) {
				rc = lg_error_set(err, LG_ENOENT,
						  "%s/log/%020llu is absent "
						  "(the next key is seq %llu)",
						  w->prefix,
						  (unsigned long long)from,
						  (unsigned long long)s);
				break;
			}
			rc = fn(ctx, &rr->kvs[i], s);
			if (rc == 0) {
				struct ledger_logval info;

				if (ledger_logval_read(rr->kvs[i].value,
						       rr->kvs[i].value_len, s,
						       NULL, NULL, NULL, &info,
						       err) != 0)
					rc = LG_ECORRUPT;
				else
					from = info.last_seq + 1;
			}
		}
		if (rc == 0 && rr->n_kvs == 0)
			rc = lg_error_set(err, LG_ENOENT,
					  "%s/log/%020llu is absent", w->prefix,
					  (unsigned long long)from);
		etcd_txn_result_release(&r);
	}
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Catching up a writer's state */

struct chain {
	state_t *st;
	uint8_t head[LEDGER_HEAD_BYTES];
	struct lg_error *err;
};

static int chain_event(void *ctx, const struct event *ev)
{
	struct chain *c = ctx;

	return state_apply(c->st, ev, c->err);
}

static int chain_value(void *ctx, const struct etcd_kv *kv, uint64_t s)
{
	struct chain *c = ctx;
	struct ledger_logval info;
	int rc = ledger_logval_read(kv->value, kv->value_len, s, c->head,
				    chain_event, c, &info, c->err);

	if (rc == 0)
		memcpy(c->head, info.head, LEDGER_HEAD_BYTES);
	return rc;
}

int cluster__catch_up(struct cluster_writer *w, state_t *st,
		      const struct cluster_head *head, int64_t head_rev,
		      struct lg_error *err)
{
	struct chain c = {.st = st, .err = err};
	uint8_t want[LEDGER_HEAD_BYTES];
	int rc = 0;

	LG_ASSERT(w != NULL && st != NULL && head != NULL);
	memcpy(c.head, w->head, LEDGER_HEAD_BYTES);
	if (!cluster__head_bytes(head, want))
		return lg_error_set(err, LG_ECORRUPT, "%s/head is not a head",
				    w->prefix);
	if (head->seq < w->seq)
		return lg_error_set(err, LG_EMISMATCH,
				    "%s/head went back to seq %llu", w->prefix,
				    (unsigned long long)head->seq);
	if (head->seq > w->seq)
		rc = cluster__log_read(w, w->seq + 1, head->seq, 0, chain_value,
				       &c, err);
	if (rc == 0 && memcmp(c.head, want, LEDGER_HEAD_BYTES) != 0)
		rc = lg_error_set(err, LG_EMISMATCH,
				  "the chain head at seq %llu is not %s/head's",
				  (unsigned long long)head->seq, w->prefix);
	if (rc != 0)
		return rc;
	w->seq = head->seq;
	memcpy(w->head, want, LEDGER_HEAD_BYTES);
	w->head_rev = head_rev;
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The txn */

struct keys {
	char epoch[KEY_MAX], head[KEY_MAX], leader[KEY_MAX], open[KEY_MAX],
		log[KEY_MAX], pos[POS_MAX][KEY_MAX];
};

bool cluster__verdict_path_event(const struct event *ev)
{
	return ev->type == EV_VERDICT ||
	       (ev->type == EV_NOTE && ev->key != NULL &&
		strcmp(ev->key, CLUSTER_NOTE_UNANSWERED) == 0);
}

/* Only the verdict path's events between? (the conflict's question) */
static int verdicts_only(void *ctx, const struct event *ev)
{
	bool *only = ctx;

	if (!cluster__verdict_path_event(ev))
		*only = false;
	return 0;
}

static int value_verdicts(void *ctx, const struct etcd_kv *kv, uint64_t s)
{
	return ledger_logval_read(kv->value, kv->value_len, s, NULL,
				  verdicts_only, ctx, NULL, NULL);
}

/* A verdict txn's conflict: P/log/<s+1> and the values after it that the
 * failure branch read (ops 1 and 5), kept while they are contiguous. */
static void keep_between(const struct cluster_writer *w,
			 const struct etcd_txn_result *r,
			 struct cluster_append_result *res)
{
	static const size_t ops[] = {1, 5};
	uint64_t next = w->seq + 1;

	for (size_t o = 0; o < 2 && ops[o] < r->n_ops; o++) {
		const struct etcd_range_result *rr = &r->ops[ops[o]].range;

		for (size_t i = 0; i < rr->n_kvs; i++) {
			const struct etcd_kv *kv = &rr->kvs[i];
			struct ledger_logval info;
			uint64_t s = cluster__log_key_seq(kv->key, kv->key_len,
							  w->prefix);

			if (s != next || res->n_between >= CLUSTER_FAIL_VALUES ||
			    ledger_logval_read(kv->value, kv->value_len, s,
					       NULL, NULL, NULL, &info,
					       NULL) != 0)
				return;
			res->between[res->n_between] = (struct cluster_logcopy){
				.seq = s,
				.value = lg_xmalloc(kv->value_len + 1),
				.len = kv->value_len};
			memcpy(res->between[res->n_between].value, kv->value,
			       kv->value_len + 1);
			res->n_between++;
			next = info.last_seq + 1;
		}
	}
}

void cluster__append_result_release(struct cluster_append_result *res)
{
	for (size_t i = 0; i < res->n_between; i++)
		free(res->between[i].value);
	res->n_between = 0;
}

/* What the failure branch's reads say. The order of the questions
 * matters: our own value there means committed, whatever else changed. */
static void failed(struct cluster_writer *w,
		   const struct cluster_append_req *rq,
		   const struct etcd_txn_result *r,
		   struct cluster_append_result *res, struct lg_error *err)
{
	const struct etcd_range_result *head = &r->ops[0].range,
				       *log = &r->ops[1].range,
				       *epoch = &r->ops[2].range,
				       *leader = &r->ops[3].range,
				       *open = &r->ops[4].range;

	if (log->n_kvs == 1 && log->kvs[0].value_len == rq->v->len &&
	    memcmp(log->kvs[0].value, rq->v->bytes, rq->v->len) == 0) {
		/* Rule 1: P/log/<s+1> is byte for byte what we sent: ours
		 * (an earlier attempt committed and its answer was lost). */
		res->outcome = CLUSTER_APPEND_COMMITTED;
		res->found = true;
		res->revision = log->kvs[0].mod_revision;
		return;
	}
	if (epoch->n_kvs != 1 || epoch->kvs[0].value_len != strlen(w->epoch) ||
	    memcmp(epoch->kvs[0].value, w->epoch, strlen(w->epoch)) != 0) {
		res->outcome = CLUSTER_APPEND_NOT_APPLIED;
		res->other_history = true;
		snprintf(res->why, sizeof(res->why),
			 "%s/epoch is %.64s, not %s (DESIGN 11 rule 8: another "
			 "history)",
			 w->prefix,
			 epoch->n_kvs ? (const char *)epoch->kvs[0].value
				      : "absent",
			 w->epoch);
		return;
	}
	if (!rq->verdicts && w->leader_rev != 0 &&
	    (leader->n_kvs != 1 ||
	     leader->kvs[0].create_revision != w->leader_rev)) {
		res->outcome = CLUSTER_APPEND_DEPOSED;
		snprintf(res->why, sizeof(res->why),
			 "%s/leader's create_revision is %lld, not %lld "
			 "(DESIGN 11 rule 5)",
			 w->prefix,
			 (long long)(leader->n_kvs
					     ? leader->kvs[0].create_revision
					     : 0),
			 (long long)w->leader_rev);
		return;
	}
	res->outcome = CLUSTER_APPEND_CONFLICT;
	res->open = rq->verdicts && open->n_kvs > 0;
	if (head->n_kvs != 1 ||
	    !cluster__head_parse(head->kvs[0].value, head->kvs[0].value_len,
				 &res->now)) {
		res->outcome = CLUSTER_APPEND_NOT_APPLIED;
		snprintf(res->why, sizeof(res->why), "%s/head is %s", w->prefix,
			 head->n_kvs ? "not a head" : "absent");
		return;
	}
	res->now_rev = head->kvs[0].mod_revision;
	if (rq->verdicts) {
		/* The caller re-numbers over what lies between: the values
		 * this answer holds go with the result (no second read). */
		keep_between(w, r, res);
		return;
	}
	res->only_verdicts = true;
	if (res->now.seq > w->seq &&
	    cluster__log_read(w, w->seq + 1, res->now.seq, r->header.revision,
			      value_verdicts, &res->only_verdicts, err) != 0)
		res->only_verdicts = false; /* not known: judge again */
	if (res->now.seq <= w->seq)
		res->only_verdicts = false;
}

/* One txn of cluster__append, as built once and sent identical until its
 * outcome is known (rule 1). */
struct append_txn {
	struct keys k;
	struct etcd_cmp cmp[3];
	struct etcd_op succ[3 + POS_MAX], fail[6];
	char k_next[KEY_MAX], k_end[KEY_MAX];
	char *hv, open_val[48];
	struct etcd_txn t;
};

static struct etcd_op range_op(const char *key)
{
	return (struct etcd_op){.kind = ETCD_OP_RANGE,
				.range = {.key = key, .key_len = strlen(key)}};
}

/* The compares: P/epoch's value, P/head as the writer read it (its
 * mod_revision, or in the pipeline the very bytes the txn before puts),
 * the leadership (rule 5) or P/open absent (rule 6). */
static size_t txn_compares(struct append_txn *a, const struct cluster_writer *w,
			   const struct cluster_append_req *rq)
{
	struct keys *k = &a->k;
	size_t n = 0;

	a->cmp[n++] = (struct etcd_cmp){.key = k->epoch,
					.key_len = strlen(k->epoch),
					.target = ETCD_CMP_VALUE,
					.result = ETCD_EQUAL,
					.value = w->epoch,
					.value_len = strlen(w->epoch)};
	/* DESIGN 11's pipeline: on the bytes the txn before puts. Within an
	 * epoch a head's value never repeats (seq only grows, chainHead
	 * hashes all before it): as strict as the revision. */
	if (w->head_value != NULL)
		a->cmp[n++] = (struct etcd_cmp){.key = k->head,
						.key_len = strlen(k->head),
						.target = ETCD_CMP_VALUE,
						.result = ETCD_EQUAL,
						.value = w->head_value,
						.value_len = w->head_value_len};
	else
		a->cmp[n++] = (struct etcd_cmp){.key = k->head,
						.key_len = strlen(k->head),
						.target = ETCD_CMP_MOD,
						.result = ETCD_EQUAL,
						.number = w->head_rev};
	/* Rule 5: everything but VERDICTs is fenced by the leadership. */
	if (!rq->verdicts && w->leader_rev != 0)
		a->cmp[n++] = (struct etcd_cmp){.key = k->leader,
						.key_len = strlen(k->leader),
						.target = ETCD_CMP_CREATE,
						.result = ETCD_EQUAL,
						.number = w->leader_rev};
	/* Rule 6: no verdict is judged on a half-applied batch. */
	if (rq->verdicts)
		a->cmp[n++] = (struct etcd_cmp){.key = k->open,
						.key_len = strlen(k->open),
						.target = ETCD_CMP_VERSION,
						.result = ETCD_EQUAL,
						.number = 0};
	return n;
}

/* The success branch: P/log/<s+1>, P/head, the positions, P/open. */
static size_t txn_success(struct append_txn *a, const struct cluster_writer *w,
			  const struct cluster_append_req *rq)
{
	struct keys *k = &a->k;
	size_t n = 0;

	if (rq->head_put == NULL) {
		struct cluster_head nh = {.seq = rq->v->last_seq};

		lg_hex(rq->v->head, LEDGER_HEAD_BYTES, nh.chain_head);
		time_format_ns(rq->v->time_ns, nh.time, sizeof(nh.time));
		a->hv = cluster__head_json(&nh);
	}
	a->succ[n++] = (struct etcd_op){
		.kind = ETCD_OP_PUT,
		.range = {.key = k->log, .key_len = strlen(k->log)},
		.value = rq->v->bytes,
		.value_len = rq->v->len};
	a->succ[n++] = (struct etcd_op){
		.kind = ETCD_OP_PUT,
		.range = {.key = k->head, .key_len = strlen(k->head)},
		.value = a->hv != NULL ? a->hv : rq->head_put,
		.value_len = a->hv != NULL ? strlen(a->hv) : rq->head_put_len};
	for (size_t i = 0; i < rq->n_pos; i++) {
		snprintf(k->pos[i], KEY_MAX, "%s/pos/%s", w->prefix,
			 rq->pos[i].source);
		a->succ[n++] = (struct etcd_op){
			.kind = ETCD_OP_PUT,
			.range = {.key = k->pos[i],
				  .key_len = strlen(k->pos[i])},
			.value = rq->pos[i].value,
			.value_len = rq->pos[i].len};
	}
	/* Rule 6: P/open spans the parts of one logical batch; its value
	 * names the first seq of the batch. */
	if (rq->open == CLUSTER_OPEN_PUT) {
		snprintf(a->open_val, sizeof(a->open_val), "{\"seq\":%llu}",
			 (unsigned long long)rq->v->first_seq);
		a->succ[n++] = (struct etcd_op){
			.kind = ETCD_OP_PUT,
			.range = {.key = k->open, .key_len = strlen(k->open)},
			.value = a->open_val,
			.value_len = strlen(a->open_val)};
	} else if (rq->open == CLUSTER_OPEN_DELETE) {
		a->succ[n++] = (struct etcd_op){
			.kind = ETCD_OP_DELETE,
			.range = {.key = k->open, .key_len = strlen(k->open)}};
	}
	return n;
}

/* The failure branch's reads, in the order failed() asks them. */
static size_t txn_failure(struct append_txn *a, const struct cluster_writer *w,
			  const struct cluster_append_req *rq)
{
	struct keys *k = &a->k;
	size_t n = 0;

	a->fail[n++] = range_op(k->head);
	a->fail[n++] = range_op(k->log);
	a->fail[n++] = range_op(k->epoch);
	a->fail[n++] = range_op(k->leader);
	a->fail[n++] = range_op(k->open);
	/* A verdict txn's conflict is re-numbered over the values between:
	 * the ones after P/log/<s+1> come in the same answer. */
	if (rq->verdicts)
		a->fail[n++] = (struct etcd_op){
			.kind = ETCD_OP_RANGE,
			.range = {
				.key = a->k_next,
				.key_len = cluster__log_key(a->k_next, KEY_MAX,
							    w->prefix,
							    rq->v->first_seq +
								    1),
				.end = a->k_end,
				.end_len = cluster__log_key(a->k_end, KEY_MAX,
							    w->prefix,
							    UINT64_MAX),
				.limit = CLUSTER_FAIL_VALUES - 1}};
	return n;
}

static void txn_build(struct append_txn *a, const struct cluster_writer *w,
		      const struct cluster_append_req *rq)
{
	struct keys *k = &a->k;

	cluster__key(k->epoch, KEY_MAX, w->prefix, "epoch");
	cluster__key(k->head, KEY_MAX, w->prefix, "head");
	cluster__key(k->leader, KEY_MAX, w->prefix, "leader");
	cluster__key(k->open, KEY_MAX, w->prefix, "open");
	cluster__log_key(k->log, KEY_MAX, w->prefix, rq->v->first_seq);
	a->t = (struct etcd_txn){.cmp = a->cmp,
				 .n_cmp = txn_compares(a, w, rq),
				 .success = a->succ,
				 .n_success = txn_success(a, w, rq),
				 .failure = a->fail,
				 .n_failure = txn_failure(a, w, rq)};
}

/* Sends t until its outcome is known, or unknown at the caller's deadline
 * (rule 1: one txn outstanding, the identical txn again after a timeout). */
static void send_until_known(struct cluster_writer *w,
			     const struct cluster_append_req *rq,
			     const struct etcd_txn *t,
			     struct cluster_append_result *res,
			     struct lg_error *err)
{
	bool unknown = false;

	for (;;) {
		struct etcd_txn_result r;
		struct lg_error e = {0};
		int src;

		res->attempts++;
		src = send_txn(w, t, &r, &e);
		if (src == 0 && r.outcome == ETCD_COMMITTED) {
			res->outcome = CLUSTER_APPEND_COMMITTED;
			res->revision = r.header.revision;
		} else if (src == 0) {
			failed(w, rq, &r, res, err);
		}
		etcd_txn_result_release(&r);
		if (src == 0)
			return;
		/* DESIGN 11 rule 1: a timeout is not a failure. The answer
		 * did not say: it may have committed, so the identical txn
		 * goes again; never a re-read of P/head and a re-chain
		 * before the outcome is known. */
		if (r.outcome == ETCD_INDETERMINATE)
			unknown = res->indeterminate = true;
		else if (!unknown) {
			/* Definitely not applied, and no earlier attempt
			 * can have been. */
			res->outcome = CLUSTER_APPEND_NOT_APPLIED;
			snprintf(res->why, sizeof(res->why), "%s", e.msg);
			return;
		}
		if (etcd_mono_ms() >= rq->deadline_ms) {
			res->outcome = unknown ? CLUSTER_APPEND_UNKNOWN
					       : CLUSTER_APPEND_NOT_APPLIED;
			snprintf(res->why, sizeof(res->why),
				 "the outcome is unknown after %u txns (the "
				 "last: %.160s)",
				 res->attempts, e.msg);
			return;
		}
		sleep_ms(w->retry_ms ? w->retry_ms : 100);
	}
}

int cluster__append(struct cluster_writer *w,
		    const struct cluster_append_req *rq,
		    struct cluster_append_result *res, struct lg_error *err)
{
	struct append_txn *a;

	LG_ASSERT(w != NULL && rq != NULL && rq->v != NULL && res != NULL);
	memset(res, 0, sizeof(*res));
	if (rq->v->first_seq != w->seq + 1 || rq->n_pos > POS_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "a value of seq %llu at seq %llu, %zu "
				    "positions",
				    (unsigned long long)rq->v->first_seq,
				    (unsigned long long)w->seq, rq->n_pos);
	a = lg_xcalloc(1, sizeof(*a));
	txn_build(a, w, rq);
	send_until_known(w, rq, &a->t, res, err);
	if (res->outcome == CLUSTER_APPEND_COMMITTED) {
		w->seq = rq->v->last_seq;
		memcpy(w->head, rq->v->head, LEDGER_HEAD_BYTES);
		w->head_rev = res->revision;
		w->head_value = NULL;
		w->head_value_len = 0;
	}
	free(a->hv);
	free(a);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* One append loop */

int cluster__append_loop(const struct cluster_append_loop *lp, size_t *taken,
			 struct lg_error *err)
{
	struct ledger_logval v = {0};
	state_t *copy = NULL;
	int rc = 0;

	LG_ASSERT(lp != NULL && lp->w != NULL && lp->st != NULL &&
		  *lp->st != NULL && lp->build != NULL && lp->after != NULL);
	for (;;) {
		struct cluster_append_req rq = {.v = &v};
		struct cluster_append_result res;
		enum cluster_next next = CLUSTER_NEXT_AGAIN;

		if (copy == NULL) {
			copy = state_clone(*lp->st);
			if ((rc = lp->build(lp->ctx, copy, lp->w->head, &v,
					    taken, err)) != 0)
				break;
		}
		if ((lp->before != NULL &&
		     (rc = lp->before(lp->ctx, &rq, *taken, err)) != 0) ||
		    (rc = cluster__append(lp->w, &rq, &res, err)) != 0 ||
		    (rc = lp->after(lp->ctx, &rq, &res, &next, err)) != 0)
			break;
		if (next == CLUSTER_NEXT_DONE) {
			LG_ASSERT(res.outcome == CLUSTER_APPEND_COMMITTED);
			state_free(*lp->st);
			*lp->st = copy;
			copy = NULL;
			break;
		}
		if (next == CLUSTER_NEXT_REBUILD) {
			/* Another writer appended: its events first, then
			 * what is left is built again on the state after
			 * them. */
			LG_ASSERT(res.outcome == CLUSTER_APPEND_CONFLICT);
			state_free(copy);
			copy = NULL;
			ledger_logval_release(&v);
			if ((rc = cluster__catch_up(lp->w, *lp->st, &res.now,
						    res.now_rev, err)) != 0)
				break;
		}
	}
	state_free(copy);
	ledger_logval_release(&v);
	return rc;
}
