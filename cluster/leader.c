/*
 * The leader's watcher (DESIGN 11; rules 1, 4, 5, 6): while a member holds
 * P/leader it runs the live watcher of `gpuledger watch` (ingest's engine
 * and kube_watch_run) with the engine's flushes going to etcd's log
 * through the append txn instead of to the member's LMDB, which only its
 * applier writes.
 *
 * A term, from ELECTED to any step-down:
 *  - rule 4: one txn reads P/epoch, P/head, P/leader, P/open and P/pos/
 *    at one revision (>= the fence: it is read after winning); the applier
 *    applies the log up to that head; the engine's cache is built from the
 *    member's state there (ingest_new on a shared handle of the member's
 *    ledger: its object table is not kept in a cluster, so the cache comes
 *    from the state, then the relist gives back what the state cannot
 *    know); the writer's (s, h, state) are that state's; a NOTE
 *    LeaderChanged (old, new, seq) is the term's first append;
 *  - every flush is built on a copy of the writer's state
 *    (ledger_logval_build checks every event as every member's append
 *    will) and appended with the leader compare (rule 5); a conflict over
 *    VERDICTs only is re-chained on the failure branch's head; an
 *    intervening observation means another writer of observations: the
 *    term ends (rule 4);
 *  - rule 1: an outcome that etcd did not give is re-sent, identical, as
 *    long as the lease is held; once it is not, the term ends without
 *    re-chaining (the next leader reads where the log is);
 *  - rule 6: a flush that needs several txns puts P/open in its first and
 *    deletes it in its last; a P/open found at the start of a term (a
 *    leader died inside a batch) is deleted with the flush that carries the
 *    relist's NOTE Synced: the relist has then given the rest of that
 *    batch;
 *  - the term ends on renewal-late, deposed, lost or resigned (the lease's
 *    thread sets the engine's stop), on a deposed append (rule 5: the
 *    module steps down), and on any error of the engine or the sink (the
 *    member resigns, so another takes over).
 */
#include "cluster/member_int.h"
#include "ingest/ingest.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + 64)
/* A value of observations, as the feed bounds its values. */
#define VALUE_MAX_BYTES (1400000 - 4096)
/* P/pos/ keys: the watched resources, the stream and "leader". */
#define POS_MAX 12
#define POS_VALUE_MAX 4096
/* How long one wait (for the applier, for the lease) naps. */
#define NAP_MS 20

struct saved_pos {
	char source[32];
	char value[POS_VALUE_MAX];
	size_t len;
};

struct cluster_leader {
	struct cluster_leader_opts o;
	cluster_lease_t *lease;
	ledger_t *lg; /* a ledger_share of the member's: this thread's */
	struct kube_config kc;
	bool kc_loaded;
	etcd_t *etcd;
	/* The term (this thread's, but stop is set by the lease's). */
	volatile sig_atomic_t term_stop;
	atomic_bool quit;
	int64_t fence;
	struct cluster_writer w;
	state_t *st; /* the writer's state at w.seq */
	bool open_found; /* P/open was there when the term started */
	char old_leader[CLUSTER_NAME_MAX + 64];
	struct saved_pos pos[POS_MAX];
	size_t n_pos;
	atomic_llong leading; /* the fence while a term runs, else 0 */
	uint64_t next_compact; /* rule 11: retention runs at this seq */
	pthread_mutex_t mu; /* last_warn */
	int64_t last_warn_ms;
};

static void nap(void)
{
	nanosleep(&(struct timespec){0, NAP_MS * 1000000L}, NULL);
}

static void leader_say(struct cluster_leader *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void leader_say(struct cluster_leader *l, const char *fmt, ...)
{
	char msg[LG_ERRMSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "member %s: %s\n", l->o.name, msg);
}

/* The lease's transitions (on its thread). */
static void on_transition(void *ctx, const struct cluster_lease_transition *t)
{
	struct cluster_leader *l = ctx;

	switch (t->event) {
	case CLUSTER_LEASE_ELECTED:
		leader_say(l, "elected leader (fence %lld)",
			   (long long)t->create_revision);
		break;
	case CLUSTER_LEASE_FOLLOWER:
		leader_say(l, "following %s (fence %lld)",
			   t->leader ? t->leader : "?",
			   (long long)t->create_revision);
		break;
	default:
		/* Rule 5: the watcher stops at once. */
		l->term_stop = 1;
		leader_say(l, "%s (fence %lld)%s%s",
			   cluster_lease_event_name(t->event),
			   (long long)t->create_revision, t->why ? ": " : "",
			   t->why ? t->why : "");
		break;
	}
}

static void on_warn(void *ctx, const char *msg)
{
	struct cluster_leader *l = ctx;

	leader_say(l, "%s", msg);
}

int cluster__leader_new(cluster_leader_t **out,
			const struct cluster_leader_opts *o,
			struct lg_error *err)
{
	struct cluster_leader *l;
	struct cluster_lease_opts lo;
	int rc;

	LG_ASSERT(out != NULL && o != NULL && o->lg != NULL && o->ap != NULL);
	*out = NULL;
	l = lg_xcalloc(1, sizeof(*l));
	l->o = *o;
	if (l->o.max_value == 0)
		l->o.max_value = VALUE_MAX_BYTES;
	pthread_mutex_init(&l->mu, NULL);
	l->w.prefix = o->prefix;
	rc = o->observe
		     ? 0
		     : kube_config_load(&l->kc, o->kubeconfig, o->context, err);
	l->kc_loaded = rc == 0 && !o->observe;
	if (rc == 0)
		rc = ledger_share(o->lg, &l->lg, err);
	if (rc == 0)
		rc = etcd_open(&l->etcd, &o->eo, err);
	if (rc == 0) {
		l->w.etcd = l->etcd;
		lo = (struct cluster_lease_opts){.etcd = o->eo,
						 .prefix = o->prefix,
						 .name = o->name,
						 .ttl_s = o->ttl_s,
						 .applied =
							 ledger_last_seq(l->lg),
						 .observer = o->observe,
						 .peer_url = o->peer_url,
						 .on_transition = on_transition,
						 .warn = on_warn,
						 .ctx = l};
		rc = cluster_lease_open(&l->lease, &lo, err);
	}
	if (rc != 0) {
		cluster__leader_free(l);
		return rc;
	}
	*out = l;
	return 0;
}

void cluster__leader_stop(cluster_leader_t *l)
{
	LG_ASSERT(l != NULL);
	atomic_store(&l->quit, true);
	l->term_stop = 1;
}

enum cluster_sequencer cluster__leader_sequencer(cluster_leader_t *l,
						 char *url, size_t cap)
{
	LG_ASSERT(l != NULL);
	return cluster__lease_sequencer(l->lease, url, cap);
}

bool cluster__leader_leading(cluster_leader_t *l, int64_t *fence)
{
	int64_t f = atomic_load(&l->leading);

	LG_ASSERT(l != NULL);
	if (fence != NULL)
		*fence = f;
	return f != 0;
}

void cluster__leader_free(cluster_leader_t *l)
{
	if (l == NULL)
		return;
	cluster_lease_close(l->lease);
	etcd_close(l->etcd);
	ledger_close(l->lg);
	if (l->kc_loaded)
		kube_config_release(&l->kc);
	state_free(l->st);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* ---------------------------------------------------------------------- */
/* The sink: the engine's flushes into etcd's log */

static bool still_leading(struct cluster_leader *l)
{
	int64_t fence = 0;

	return !l->term_stop && cluster_lease_holding(l->lease, &fence) &&
	       fence == l->fence;
}

/* Keeps a position for the next append that carries events (a flush of
 * positions alone writes nothing: a later position covers the same). */
static void keep_pos(struct cluster_leader *l, const char *source,
		     const char *value, size_t len)
{
	size_t i;

	if (len > POS_VALUE_MAX || strlen(source) >= sizeof(l->pos[0].source))
		return;
	for (i = 0; i < l->n_pos; i++)
		if (strcmp(l->pos[i].source, source) == 0)
			break;
	if (i == l->n_pos) {
		if (l->n_pos == POS_MAX)
			return;
		l->n_pos++;
	}
	snprintf(l->pos[i].source, sizeof(l->pos[i].source), "%s", source);
	memcpy(l->pos[i].value, value, len);
	l->pos[i].len = len;
}

static bool carries_synced(const struct event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (evs[i].type == EV_NOTE && evs[i].key != NULL &&
		    strcmp(evs[i].key, "Synced") == 0)
			return true;
	return false;
}

/* A test's pause between the lease check and the send: while the file
 * $GPULEDGER_TEST_LEADER_PAUSE.<name> exists (the moment a leader that
 * stalls there, a GC pause or a SIGSTOP, has checked its lease and not yet
 * sent; the fence must refuse what it then sends), and, before each part
 * after the first of a batch in parts, while $GPULEDGER_TEST_LEADER_PAUSE.
 * <name>.inside exists (a leader to be killed inside a batch, P/open put:
 * rule 6's crash). Inert unless the variable is set. */
static bool pause_file(const char *f, const char *name, const char *suffix)
{
	char path[4096];
	FILE *fp;

	if ((size_t)snprintf(path, sizeof(path), "%s.%s%s", f, name,
			     suffix) >= sizeof(path) ||
	    (fp = fopen(path, "r")) == NULL)
		return false;
	fclose(fp);
	return true;
}

static void test_pause(struct cluster_leader *l, bool inside)
{
	const char *f = getenv("GPULEDGER_TEST_LEADER_PAUSE");

	if (f == NULL || f[0] == '\0')
		return;
	while (pause_file(f, l->o.name, "") ||
	       (inside && pause_file(f, l->o.name, ".inside"))) {
		if (atomic_load(&l->quit))
			return;
		nap();
	}
}

/* The leader's part of the append loop: evs[0..n) of a batch, the first
 * part of it or a later one. */
struct leader_txn {
	struct cluster_leader *l;
	struct event *evs;
	size_t n;
	bool whole_first, synced;
	bool last; /* the txn being sent ends the batch */
	struct cluster_pos pos[POS_MAX];
};

static int leader_build(void *ctx, state_t *copy, const uint8_t *head,
			struct ledger_logval *v, size_t *taken,
			struct lg_error *err)
{
	struct leader_txn *lt = ctx;

	return ledger_logval_build(copy, head, lt->evs, lt->n,
				   lt->l->o.max_value, v, taken, err);
}

/* Rule 5 before each send; the positions and rule 6's P/open with the
 * batch's last part. */
static int leader_before(void *ctx, struct cluster_append_req *rq,
			 size_t taken, struct lg_error *err)
{
	struct leader_txn *lt = ctx;
	struct cluster_leader *l = lt->l;
	bool last = lt->last = taken == lt->n;

	if (!still_leading(l))
		return lg_error_set(err, LG_EIO,
				    "no longer the leader (fence %lld): the "
				    "batch is not sent (DESIGN 11 rule 5)",
				    (long long)l->fence);
	if (last)
		for (size_t i = 0; i < l->n_pos; i++)
			lt->pos[rq->n_pos++] = (struct cluster_pos){
				l->pos[i].source, l->pos[i].value,
				l->pos[i].len};
	rq->pos = lt->pos;
	rq->deadline_ms = etcd_mono_ms() + (int64_t)l->o.request_ms;
	/* Rule 6: one logical batch, one txn, or P/open around its parts. A
	 * P/open left by a leader that died inside a batch goes with the
	 * relist that gave the rest of it. */
	if (lt->whole_first && !last)
		rq->open = CLUSTER_OPEN_PUT;
	else if (last && (!lt->whole_first || l->open_found) &&
		 (!l->open_found || lt->synced))
		rq->open = CLUSTER_OPEN_DELETE;
	test_pause(l, !lt->whole_first);
	return 0;
}

/* The leader's policy: a conflict over VERDICTs only is caught up (they
 * change no state); over an observation the term ends (rule 4); deposed,
 * it ends (rule 5); not applied, or unknown, the identical txn again
 * while the lease holds (rule 1). */
static int leader_after(void *ctx, const struct cluster_append_req *rq,
			const struct cluster_append_result *res,
			enum cluster_next *next, struct lg_error *err)
{
	struct leader_txn *lt = ctx;
	struct cluster_leader *l = lt->l;

	switch (res->outcome) {
	case CLUSTER_APPEND_COMMITTED:
		if (lt->last) {
			/* The batch's positions are in etcd, and P/open is
			 * gone if this part deleted it. */
			l->n_pos = 0;
			if (rq->open == CLUSTER_OPEN_DELETE)
				l->open_found = false;
		}
		*next = CLUSTER_NEXT_DONE;
		return 0;
	case CLUSTER_APPEND_CONFLICT:
		if (!res->only_verdicts)
			return lg_error_set(
				err, LG_EMISMATCH,
				"%s/head moved to seq %llu over an observation "
				"another writer appended (DESIGN 11 rule 4): "
				"this term ends",
				l->o.prefix, (unsigned long long)res->now.seq);
		*next = CLUSTER_NEXT_REBUILD;
		return 0;
	case CLUSTER_APPEND_DEPOSED:
		cluster_lease_deposed(l->lease, l->fence);
		return lg_error_set(err, LG_EIO, "deposed: %s", res->why);
	case CLUSTER_APPEND_NOT_APPLIED:
		if (res->other_history)
			return lg_error_set(err, LG_EEXIST, "%s", res->why);
		/* Definitely not applied: the same txn again while the
		 * lease holds. */
		nap();
		*next = CLUSTER_NEXT_AGAIN;
		return 0;
	case CLUSTER_APPEND_UNKNOWN:
		/* Rule 1: still unknown; the identical txn again (the value
		 * and the writer are unchanged), never a re-chain. Once the
		 * lease is gone the term ends and the next leader starts
		 * where the log is. */
		*next = CLUSTER_NEXT_AGAIN;
		return 0;
	}
	return lg_error_set(err, LG_EINVAL, "an append outcome of %d",
			    (int)res->outcome);
}

/* One txn of evs[0..n): *taken of them committed. */
static int leader_append(struct cluster_leader *l, struct event *evs, size_t n,
		      bool whole_first, bool synced, size_t *taken,
		      struct lg_error *err)
{
	struct leader_txn lt = {.l = l,
				.evs = evs,
				.n = n,
				.whole_first = whole_first,
				.synced = synced};

	return cluster__append_loop(
		&(struct cluster_append_loop){.w = &l->w,
					      .st = &l->st,
					      .ctx = &lt,
					      .build = leader_build,
					      .before = leader_before,
					      .after = leader_after},
		taken, err);
}

/* DESIGN 11 rule 11: retention while leading, every keep/4 seqs (at least
 * 64; with --keep 0, every 25,000), after a flush (the compaction's delete
 * carries the fence, rule 5). A failure is said and left to the next
 * time: etcd keeps more meanwhile, no member loses anything. The pass,
 * with its defragmentations, runs on the watcher's thread: the next flush
 * waits for it. */
static void retain(struct cluster_leader *l)
{
	const struct cluster_retention *rt = &l->o.rt;
	struct cluster_compact c;
	struct lg_error err = {0};
	uint64_t every = rt->keep == 0	     ? 25000
			 : rt->keep / 4 > 64 ? rt->keep / 4
					     : 64;
	int rc;

	if ((rt->keep == 0 && rt->keep_bytes == 0) ||
	    l->w.seq < l->next_compact)
		return;
	l->next_compact = l->w.seq + every;
	rc = cluster__compact(&l->w, rt, &c, &err);
	if (c.deleted > 0)
		leader_say(
			l,
			"retention: deleted %llu %s/log/ keys below seq %llu "
			"(%s; the lowest applied seq of %zu members is %llu, "
			"--keep %llu); the oldest left is seq %llu, etcd "
			"compacted "
			"at revision %lld (DESIGN 11 rule 11)",
			(unsigned long long)c.deleted, l->o.prefix,
			(unsigned long long)c.cut,
			c.by_bytes
				? "by --keep-bytes: members below join from a "
				  "peer"
				: "by --keep",
			c.members, (unsigned long long)c.low,
			(unsigned long long)rt->keep,
			(unsigned long long)c.oldest, (long long)c.compact_rev);
	for (size_t i = 0; i < c.n_defrag; i++)
		leader_say(l,
			   "retention: defragmented etcd member %s: %lld bytes "
			   "-> %lld",
			   c.defrag[i].endpoint, (long long)c.defrag[i].before,
			   (long long)c.defrag[i].after);
	if (rc != 0)
		leader_say(l, "retention: %s", err.msg);
}

static int term_sink_append(void *ctx, struct event *evs, size_t n,
			    const struct ingest_sink_pos *pos, size_t n_pos,
			    struct lg_error *err)
{
	struct cluster_leader *l = ctx;
	bool synced = carries_synced(evs, n);
	size_t off = 0;
	unsigned parts = 0;
	struct cluster_applier_status as;

	/* P/members/<name>'s applied seq goes on while leading too: it pins
	 * retention (rule 11), the leader's as every member's. */
	cluster__applier_status(l->o.ap, &as);
	cluster_lease_applied(l->lease, as.applied);
	for (size_t i = 0; i < n_pos; i++)
		keep_pos(l, pos[i].source, pos[i].value, pos[i].len);
	while (off < n) {
		size_t taken = 0;
		int rc = leader_append(l, evs + off, n - off, off == 0, synced,
				    &taken, err);

		if (rc != 0)
			return rc;
		off += taken;
		parts++;
	}
	if (parts > 1)
		leader_say(
			l,
			"a flush of %zu events in %u txns, seqs %llu to %llu, "
			"%s/open around them (DESIGN 11 rule 6)",
			n, parts, (unsigned long long)evs[0].seq,
			(unsigned long long)evs[n - 1].seq, l->o.prefix);
	retain(l);
	return 0;
}

static const state_t *sink_state(void *ctx)
{
	struct cluster_leader *l = ctx;

	return l->st;
}

/* ---------------------------------------------------------------------- */
/* A term */

/* Rule 4: P/epoch, P/head, P/leader, P/open and P/pos/leader at one
 * revision, read after winning. */
struct term_start {
	struct cluster_head head;
	int64_t head_rev, revision;
	bool ours, open;
};

static int read_start(struct cluster_leader *l, struct term_start *ts,
		      struct lg_error *err)
{
	char k[5][KEY_MAX];
	static const char *const tails[5] = {"epoch", "head", "leader",
					     "open", "pos/leader"};
	struct etcd_op ops[5];
	struct etcd_txn t = {.success = ops, .n_success = 5};
	struct etcd_txn_result r;
	int rc;

	for (int i = 0; i < 5; i++) {
		cluster__key(k[i], KEY_MAX, l->o.prefix, tails[i]);
		ops[i] = (struct etcd_op){
			.kind = ETCD_OP_RANGE,
			.range = {.key = k[i], .key_len = strlen(k[i])}};
	}
	memset(ts, 0, sizeof(*ts));
	rc = etcd_txn(l->etcd, &t, &r, err);
	if (rc == 0 && (r.ops[0].range.n_kvs != 1 || r.ops[1].range.n_kvs != 1))
		rc = lg_error_set(err, LG_ENOENT, "%s has no head",
				  l->o.prefix);
	if (rc == 0) {
		const struct etcd_kv *e = &r.ops[0].range.kvs[0],
				     *h = &r.ops[1].range.kvs[0];

		snprintf(l->w.epoch, sizeof(l->w.epoch), "%.*s",
			 (int)e->value_len, (const char *)e->value);
		ts->head_rev = h->mod_revision;
		ts->revision = r.header.revision;
		if (!cluster__head_parse(h->value, h->value_len, &ts->head))
			rc = lg_error_set(err, LG_ECORRUPT, "%s/head is not a "
					  "head", l->o.prefix);
		ts->ours = r.ops[2].range.n_kvs == 1 &&
			   r.ops[2].range.kvs[0].create_revision == l->fence;
		ts->open = r.ops[3].range.n_kvs > 0;
		snprintf(l->old_leader, sizeof(l->old_leader), "%s", "none");
		if (r.ops[4].range.n_kvs == 1) {
			json_t *doc = json_loadb(
				(const char *)r.ops[4].range.kvs[0].value,
				r.ops[4].range.kvs[0].value_len, 0, NULL);
			const char *name = json_string_value(
				json_object_get(doc, "name"));

			snprintf(l->old_leader, sizeof(l->old_leader),
				 "%s (fence %lld)", name ? name : "?",
				 (long long)etcd_i64(doc, "fence"));
			json_decref(doc);
		}
	}
	etcd_txn_result_release(&r);
	return rc;
}

/* Rule 4: the log applied up to the head read after winning. */
static bool caught_up(uint64_t applied, uint64_t head_seq)
{
	return applied >= head_seq;
}

/* Rule 4, then the state the term's writer starts from. */
static int begin_term(struct cluster_leader *l, struct lg_error *err)
{
	struct term_start ts;
	struct cluster_applier_status as;
	int rc;

	if ((rc = read_start(l, &ts, err)) != 0)
		return rc;
	if (!ts.ours || ts.revision < l->fence)
		return lg_error_set(err, LG_EIO,
				    "%s/leader is no longer ours at revision "
				    "%lld",
				    l->o.prefix, (long long)ts.revision);
	/* The applier applies the log up to that head first: the cache is
	 * built on the state there, never before it. */
	for (;;) {
		cluster__applier_status(l->o.ap, &as);
		if (as.refused[0])
			return lg_error_set(err, LG_EEXIST, "%s", as.refused);
		if (caught_up(as.applied, ts.head.seq))
			break;
		if (!still_leading(l))
			return lg_error_set(err, LG_EIO, "the term ended while "
					    "the applier caught up");
		nap();
	}
	if ((rc = ledger_refresh(l->lg, err)) != 0)
		return rc;
	if (!caught_up(ledger_last_seq(l->lg), ts.head.seq))
		return lg_error_set(err, LG_EIO, "the ledger is at seq %llu, "
				    "%s/head at %llu",
				    (unsigned long long)ledger_last_seq(l->lg),
				    l->o.prefix,
				    (unsigned long long)ts.head.seq);
	state_free(l->st);
	l->st = state_clone(ledger_state(l->lg));
	l->w.seq = ledger_last_seq(l->lg);
	memcpy(l->w.head, ledger_head(l->lg), LEDGER_HEAD_BYTES);
	/* Past the head read (verdicts applied since): P/head's
	 * mod_revision is not known there; the first append's conflict reads
	 * it (and re-chains over those VERDICTs only). */
	l->w.head_rev = l->w.seq == ts.head.seq ? ts.head_rev : 0;
	l->w.leader_rev = l->fence;
	l->open_found = ts.open;
	l->n_pos = 0;
	return 0;
}

/* --holds (DESIGN 3.7): the mode is an event of the log, appended by the
 * one writer of observations when the log's mode differs from the
 * member's, at the log's own time (no clock moves it). */
static int term_holds_mode(struct cluster_leader *l, struct lg_error *err)
{
	struct state_holds_stats hs;
	struct event ev = {.type = EV_HOLDS};

	if (!l->o.holds_set)
		return 0;
	state_holds_stats(l->st, &hs);
	if (hs.ttl_ms == l->o.holds_ttl_ms)
		return 0;
	ev.time_ns = state_time_ns(l->st);
	ev.value = l->o.holds_ttl_ms;
	leader_say(
		l,
		"holds: the log's TTL is %lld ms, --holds %lld ms: appending "
		"the HOLDS event",
		(long long)hs.ttl_ms, (long long)l->o.holds_ttl_ms);
	return term_sink_append(l, &ev, 1, NULL, 0, err);
}

static void term(struct cluster_leader *l)
{
	struct lg_error err = {0};
	struct ingest_opts io = {.classes = l->o.classes,
				 .tick_ns = l->o.tick_ns,
				 .sink = {.append = term_sink_append,
					  .state = sink_state,
					  .ctx = l}};
	struct kube_watch_opts wo = {.tick_ns = l->o.tick_ns,
				     .stop = &l->term_stop};
	ingest_t *in = NULL;
	char msg[512], pv[CLUSTER_NAME_MAX + 64];
	int rc;

	rc = begin_term(l, &err);
	if (rc == 0)
		rc = ingest_new(&in, l->lg, &io, &err);
	if (rc == 0) {
		/* The gap in observation, in the log: NOTE LeaderChanged
		 * (old, new, seq), with P/pos/leader naming this term. */
		snprintf(pv, sizeof(pv), "{\"fence\":\"%lld\",\"name\":\"%s\"}",
			 (long long)l->fence, l->o.name);
		keep_pos(l, "leader", pv, strlen(pv));
		snprintf(msg, sizeof(msg),
			 "the watcher's leader changed from %s to %s (fence "
			 "%lld) after seq %llu",
			 l->old_leader, l->o.name, (long long)l->fence,
			 (unsigned long long)l->w.seq);
		rc = ingest_note(in, "LeaderChanged", msg, &err);
	}
	if (rc == 0)
		rc = term_holds_mode(l, &err);
	if (rc == 0) {
		atomic_store(&l->leading, l->fence);
		leader_say(l, "watching as leader from seq %llu (fence %lld)",
			   (unsigned long long)l->w.seq, (long long)l->fence);
		rc = kube_watch_run(in, &l->kc, &wo, &err);
	}
	atomic_store(&l->leading, 0);
	ingest_free(in);
	if (rc != 0 && !atomic_load(&l->quit)) {
		leader_say(l, "the watcher stopped: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
	} else {
		leader_say(l, "the watcher stopped (fence %lld)",
			   (long long)l->fence);
	}
}

void cluster__leader_run(cluster_leader_t *l)
{
	LG_ASSERT(l != NULL);
	while (!atomic_load(&l->quit)) {
		struct cluster_applier_status as;
		int64_t fence = 0;

		cluster__applier_status(l->o.ap, &as);
		cluster_lease_applied(l->lease, as.applied);
		if (!cluster_lease_holding(l->lease, &fence)) {
			nap();
			continue;
		}
		l->fence = fence;
		l->term_stop = 0;
		/* A transition between the check and the reset above would
		 * be lost: look again. */
		if (!still_leading(l))
			continue;
		term(l);
		/* The watcher ended while this fence still holds (it
		 * returned without a stop): another member takes over. */
		if (!atomic_load(&l->quit) &&
		    cluster_lease_holding(l->lease, &fence) &&
		    fence == l->fence)
			cluster_lease_resign(l->lease);
	}
}
