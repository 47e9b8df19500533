/*
 * `gpuledger cluster feed` (hidden, for tests): NDJSON events appended
 * through the append txn as the writer of observations would, until the
 * leader's watcher exists.
 *
 * It judges as a writer must: on the state at P/head, built from a ledger
 * (--db) and the P/log/ values after it, every batch is built on a copy of
 * that state (ledger_logval_build checks each event as every member's
 * append will), and the copy is kept only once the txn committed. On a
 * conflict it applies what the other writer appended, checking the chain
 * up to the head the conflict named, and builds the batch again there.
 */
#include "cluster/cluster_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Lines of the input (the bound of `gpuledger import`). */
#define LINE_MAX_BYTES (4u << 20)
#define BATCH_DEFAULT  1000
#define BATCH_MAX      100000
/* etcd's --max-request-bytes is 1.5 MiB by default; the value leaves room
 * for P/head, the keys and the compares. */
#define TXN_BYTES_DEFAULT 1400000
#define TXN_OVERHEAD	  4096
#define KEY_MAX		  (CLUSTER_PREFIX_MAX + 64)

struct feed {
	struct cluster_writer w;
	state_t *st; /* the state at w.seq */
	FILE *out;
	size_t batch, max_value;
	uint64_t deadline_span_ms;
	struct event *evs;
	json_t **docs;
	char **scratch;
	unsigned long long *lines;
	size_t n;
};

static void emit(struct feed *f, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

	fprintf(f->out, "%s\n", s ? s : "{}");
	fflush(f->out);
	free(s);
	json_decref(o);
}

/* ---------------------------------------------------------------------- */
/* The state at P/head */

/* P/epoch and P/head in one read, then the state there. */
static int feed_start(struct feed *f, const char *db, struct lg_error *err)
{
	char k_epoch[KEY_MAX], k_head[KEY_MAX];
	struct etcd_op ops[2];
	struct etcd_txn t = {.success = ops, .n_success = 2};
	struct etcd_txn_result r;
	struct cluster_head head;
	int64_t head_rev = 0;
	int rc;

	cluster__key(k_epoch, sizeof(k_epoch), f->w.prefix, "epoch");
	cluster__key(k_head, sizeof(k_head), f->w.prefix, "head");
	ops[0] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_epoch, .key_len = strlen(k_epoch)}};
	ops[1] = (struct etcd_op){
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_head, .key_len = strlen(k_head)}};
	/* Reads change nothing: one whose answer was lost is asked again
	 * (the client goes on to the next endpoint). */
	for (int64_t end = etcd_mono_ms() + (int64_t)f->deadline_span_ms;;) {
		rc = etcd_txn(f->w.etcd, &t, &r, err);
		if (rc != LG_EIO || etcd_mono_ms() >= end)
			break;
		etcd_txn_result_release(&r);
		nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
	}
	if (rc == 0 && (r.ops[0].range.n_kvs != 1 || r.ops[1].range.n_kvs != 1))
		rc = lg_error_set(err, LG_ENOENT,
				  "%s has no head: run `gpuledger cluster "
				  "init` first",
				  f->w.prefix);
	if (rc == 0) {
		const struct etcd_kv *h = &r.ops[1].range.kvs[0];

		snprintf(f->w.epoch, sizeof(f->w.epoch), "%.*s",
			 (int)r.ops[0].range.kvs[0].value_len,
			 (const char *)r.ops[0].range.kvs[0].value);
		head_rev = h->mod_revision;
		if (!cluster__head_parse(h->value, h->value_len, &head))
			rc = lg_error_set(err, LG_ECORRUPT, "%s is not a head",
					  k_head);
	}
	etcd_txn_result_release(&r);
	if (rc != 0)
		return rc;
	if (db != NULL) {
		struct ledger_opts lo = {.dir = db, .read_only = true};
		ledger_t *lg;
		uint64_t s;

		if ((rc = ledger_open(&lg, &lo, err)) != 0)
			return rc;
		s = ledger_last_seq(lg) < head.seq ? ledger_last_seq(lg)
						   : head.seq;
		state_free(f->st);
		f->st = NULL;
		rc = ledger_state_at(lg, s, &f->st, NULL, err);
		if (rc == 0)
			rc = ledger_head_at(lg, s, f->w.head, err);
		ledger_close(lg);
		if (rc != 0)
			return rc;
		f->w.seq = s;
	}
	return cluster__catch_up(&f->w, f->st, &head, head_rev, err);
}

/* ---------------------------------------------------------------------- */
/* Batches */

static void drop(struct feed *f)
{
	for (size_t i = 0; i < f->n; i++) {
		json_decref(f->docs[i]);
		free(f->scratch[i]);
	}
	f->n = 0;
}

static json_t *head_doc(const struct cluster_head *h)
{
	return json_pack("{s:I, s:s, s:s}", "seq", (json_int_t)h->seq,
			 "chainHead", h->chain_head, "time", h->time);
}

/* One txn of events evs[off..n): *taken of them committed. */
/* The feed's part of the append loop: the events from off. */
struct feed_txn {
	struct feed *f;
	size_t off;
};

static int feed_build(void *ctx, state_t *copy, const uint8_t *head,
		      struct ledger_logval *v, size_t *taken,
		      struct lg_error *err)
{
	struct feed_txn *ft = ctx;
	struct feed *f = ft->f;
	int rc = ledger_logval_build(copy, head, f->evs + ft->off,
				     f->n - ft->off, f->max_value, v, taken,
				     err);

	if (rc != 0) {
		char msg[LG_ERRMSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
		return lg_error_set(err, LG_EINVAL, "line %llu: %s",
				    f->lines[ft->off + *taken], msg);
	}
	return 0;
}

static int feed_before(void *ctx, struct cluster_append_req *rq,
		       size_t taken, struct lg_error *err)
{
	struct feed_txn *ft = ctx;

	(void)taken;
	(void)err;
	rq->deadline_ms =
		etcd_mono_ms() + (int64_t)ft->f->deadline_span_ms;
	return 0;
}

/* Each outcome is a line of the feed's report; another writer's append
 * is caught up, anything else ends the feed. */
static int feed_after(void *ctx, const struct cluster_append_req *rq,
		      const struct cluster_append_result *res,
		      enum cluster_next *next, struct lg_error *err)
{
	struct feed *f = ((struct feed_txn *)ctx)->f;
	const struct ledger_logval *v = rq->v;
	char head[2 * LEDGER_HEAD_BYTES + 1];

	if (res->outcome == CLUSTER_APPEND_COMMITTED) {
		lg_hex(v->head, LEDGER_HEAD_BYTES, head);
		emit(f, json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:b, s:s}",
				  "outcome", "committed", "firstSeq",
				  (json_int_t)v->first_seq, "lastSeq",
				  (json_int_t)v->last_seq, "events",
				  (json_int_t)v->n, "revision",
				  (json_int_t)res->revision, "attempts",
				  (json_int_t)res->attempts, "found",
				  res->found, "chainHead", head));
		*next = CLUSTER_NEXT_DONE;
		return 0;
	}
	if (res->outcome != CLUSTER_APPEND_CONFLICT) {
		emit(f, json_pack("{s:s, s:I, s:I, s:s}", "outcome",
				  cluster__append_outcome_name(res->outcome),
				  "firstSeq", (json_int_t)f->w.seq + 1,
				  "attempts", (json_int_t)res->attempts, "why",
				  res->why));
		return lg_error_set(err, LG_EIO, "seq %llu: %s: %s",
				    (unsigned long long)f->w.seq + 1,
				    cluster__append_outcome_name(res->outcome),
				    res->why);
	}
	emit(f, json_pack("{s:s, s:o, s:b, s:b, s:I}", "outcome", "conflict",
			  "head", head_doc(&res->now), "onlyVerdicts",
			  res->only_verdicts, "open", res->open, "attempts",
			  (json_int_t)res->attempts));
	*next = CLUSTER_NEXT_REBUILD;
	return 0;
}

static int feed_append(struct feed *f, size_t off, size_t *taken,
		      struct lg_error *err)
{
	struct feed_txn ft = {.f = f, .off = off};

	return cluster__append_loop(
		&(struct cluster_append_loop){.w = &f->w,
					      .st = &f->st,
					      .ctx = &ft,
					      .build = feed_build,
					      .before = feed_before,
					      .after = feed_after},
		taken, err);
}

static int flush(struct feed *f, struct lg_error *err)
{
	size_t off = 0;
	int rc = 0;

	while (off < f->n && rc == 0) {
		size_t taken = 0;

		rc = feed_append(f, off, &taken, err);
		off += taken;
	}
	drop(f);
	return rc;
}

static int take_line(struct feed *f, const char *line, size_t len,
		     unsigned long long lineno, struct lg_error *err)
{
	struct lg_error why = {0};
	json_error_t jerr;
	json_t *doc;
	char *scratch = NULL;

	if (len == 0)
		return 0;
	doc = json_loadb(line, len, 0, &jerr);
	if (doc == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "line %llu: malformed JSON: %s", lineno,
				    jerr.text);
	if (event_from_json(&f->evs[f->n], doc, &scratch, &why) != 0) {
		json_decref(doc);
		return lg_error_set(err, LG_EINVAL, "line %llu: %s", lineno,
				    why.msg);
	}
	/* The log assigns seqs; a missing time is the previous event's
	 * (the builder's clamp), as import reads it. */
	f->evs[f->n].seq = 0;
	f->docs[f->n] = doc;
	f->scratch[f->n] = scratch;
	f->lines[f->n] = lineno;
	f->n++;
	return f->n == f->batch ? flush(f, err) : 0;
}

int cluster_feed(const struct cluster_feed_opts *o, FILE *in, FILE *out,
		 struct lg_error *err)
{
	struct feed f = {0};
	char *line = lg_xmalloc(LINE_MAX_BYTES);
	long len;
	unsigned long long lineno = 0;
	uint64_t timeout =
		o->eo.timeout_ms ? o->eo.timeout_ms : ETCD_TIMEOUT_DEFAULT;
	int rc;

	LG_ASSERT(o != NULL && in != NULL && out != NULL);
	if ((rc = cluster_prefix_check(o->prefix, err)) != 0)
		return rc;
	if (o->batch > BATCH_MAX)
		return lg_error_set(err, LG_EINVAL, "--batch: 1 to %d",
				    BATCH_MAX);
	if (o->max_txn_bytes != 0 && (o->max_txn_bytes < 2 * TXN_OVERHEAD ||
				      o->max_txn_bytes > ETCD_REQUEST_MAX / 2))
		return lg_error_set(err, LG_EINVAL,
				    "--max-txn-bytes: %d to %zu",
				    2 * TXN_OVERHEAD, ETCD_REQUEST_MAX / 2);
	f.out = out;
	f.batch = o->batch ? (size_t)o->batch : BATCH_DEFAULT;
	f.max_value = (o->max_txn_bytes ? (size_t)o->max_txn_bytes
					: TXN_BYTES_DEFAULT) -
		      TXN_OVERHEAD;
	f.deadline_span_ms = 6 * timeout;
	f.w.prefix = o->prefix;
	f.st = state_new();
	f.evs = lg_xcalloc(f.batch, sizeof(*f.evs));
	f.docs = lg_xcalloc(f.batch, sizeof(*f.docs));
	f.scratch = lg_xcalloc(f.batch, sizeof(*f.scratch));
	f.lines = lg_xcalloc(f.batch, sizeof(*f.lines));
	if ((rc = etcd_open(&f.w.etcd, &o->eo, err)) == 0)
		rc = feed_start(&f, o->db, err);
	while (rc == 0 &&
	       (len = lg_read_line(in, line, LINE_MAX_BYTES)) != -1) {
		lineno++;
		if (len == -2)
			rc = lg_error_set(err, LG_EINVAL,
					  "line %llu: longer than %u bytes",
					  lineno, LINE_MAX_BYTES - 1);
		else
			rc = take_line(&f, line, (size_t)len, lineno, err);
	}
	if (rc == 0 && ferror(in))
		rc = lg_error_set(err, LG_EIO, "reading the input failed");
	if (rc == 0)
		rc = flush(&f, err);
	drop(&f);
	free(line);
	free(f.evs);
	free(f.docs);
	free(f.scratch);
	free(f.lines);
	state_free(f.st);
	etcd_close(f.w.etcd);
	return rc;
}
