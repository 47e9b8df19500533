/*
 * A member's verdicts (DESIGN 11 "Verdicts in a cluster", "One sequencer,
 * every member a door", rules 1, 2, 3, 6 and 9): the group commit of
 * query/verdict.c, judged on the member's applied state and recorded in
 * etcd's log before it is answered.
 *
 * Calls run on worker threads of the server (never the loop's: the loop
 * goes on answering while etcd is asked): one at a time on a door or a
 * member without --watch, up to --pipeline K at once on the sequencer
 * (cluster__verdicts_inflight). Each call takes a lane: a ledger handle and
 * an etcd client of its own, so each txn in flight has its own connection
 * (cluster/etcd.c is synchronous).
 *
 * The chain. The member's verdict txns not yet known committed form one
 * chain, in the order they were built (one builder at a time: the build
 * token, handed out in the order the calls asked for it, so that a group
 * built again after a failure goes before the groups that came after it):
 *
 *  - the first txn of a chain is built on the carry, the log this member
 *    last saw committed (its own last txn while the applier has not got
 *    there, else a snapshot of its ledger, rule 9), and compares P/head's
 *    mod_revision as read there;
 *  - every later one is built on the state the txn before it will produce
 *    and compares P/head's value on the exact bytes that txn puts (copied,
 *    never made again): within an epoch a head value never repeats, so it
 *    can only commit on top of its predecessor;
 *  - a txn that committed proves every txn before it committed (rule 1
 *    per txn): they leave the chain together, and the carry becomes the
 *    log after it;
 *  - a txn whose compare failed before its predecessor was known committed
 *    reached etcd first (etcd orders nothing across connections): it is
 *    sent again, identical, once its predecessor committed;
 *  - a txn that failed (another writer moved P/head: the watcher, a door's
 *    fallback) leaves the chain and dooms every txn chained on it (their
 *    compare can never hold): each is built again, in order, from the
 *    failure branch's head, re-numbered when only VERDICTs intervened
 *    (the judgement stands), judged again after an observation;
 *  - a txn whose outcome is unknown at its deadline (rule 1) stays in the
 *    chain, answered 503 (rule 2); while one does, no txn is built: the
 *    next call re-sends them identical, in order, once no other is in
 *    flight; one that turns out committed owes a NOTE VerdictUnanswered
 *    for each of its ids (a forwarded item's excepted: its door answers
 *    its client, and a door that answered 503 an item it had offered to
 *    the sequencer owes the NOTE for whatever verdict of its key its log
 *    then shows, for a minute).
 *
 * An answer leaves only once its own txn committed, and so every txn
 * before it. Rule 3: the server never gives two calls in flight the same
 * review uid or idempotency key; the keys committed here that the ledger's
 * uid index does not hold yet are kept (the carry's keys), and an item
 * that repeats one waits for the applier to get there (the chain drained,
 * a snapshot taken).
 *
 * Each item's bound is --verdict-timeout-ms from its arrival (rule 2):
 * an item past it is answered 503 unjudged, every etcd request is capped
 * at the nearest bound of its call, and an item committed only after its
 * bound is answered 503 and owed a NOTE.
 */
#include "cluster/member_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Conflicts one batch may meet before it is answered 503. Members that
 * share a load conflict often (one commit per etcd round trip among all of
 * them, and the member that just committed chains its next batch on its
 * carry at once): a conflict costs two round trips, so 64 of them stay well
 * inside the verdict timeout and make a batch that loses every race rare
 * (at 8, about 4% of the verdicts of 8 connections over 3 members were
 * answered 503 in `make bench`). */
#define ROUNDS_MAX 64
/* A value of verdicts, as the feed bounds its values (etcd's request
 * limit, 1.5 MiB by default, with room for the txn around it). */
#define VALUE_MAX_BYTES (1400000 - 4096)
/* How long one wait for the applier naps. */
#define NAP_MS 5
/* NOTEs VerdictUnanswered in one txn. */
#define NOTES_MAX 1000
/* Verdict keys kept for rule 3 over the carry: past this many, the next
 * batch waits for the applier instead. */
#define KEYS_MAX 16384
/* A door's keys answered 503 after it offered them to the sequencer, kept
 * this long (after the answer) for the NOTE their record is owed, at most
 * this many (the oldest go first). */
#define OFFERED_KEEP_MS 60000
#define OFFERED_MAX 1024
/* The chain: up to CLUSTER_PIPELINE_MAX txns in flight, as many left
 * unknown, and a txn of NOTEs. */
#define CHAIN_MAX (2 * CLUSTER_PIPELINE_MAX + 1)
/* A txn that reached etcd before a predecessor whose outcome is unknown is
 * sent again this often, until its own bound. */
#define EARLY_RETRY_MS 20
/* The longest one wait on the chain's condition sleeps (bounds are
 * looked at again after it). */
#define WAIT_SLICE_MS 50

/* (s, h), the state at s, the verdicts up to s and P/head's mod_revision
 * at s: one snapshot of the log (rule 9). */
struct snap {
	state_t *st; /* owned: the state at s (advanced by re-numbering over
			VERDICTs) */
	uint64_t seq, verdicts;
	uint8_t head[LEDGER_HEAD_BYTES];
	int64_t head_rev, time_ns;
};

/* A verdict key recorded at seq (rule 3 over the carry). */
struct seq_key {
	uint64_t seq;
	struct verdict_key key;
};


/* A lane: what one call in flight uses alone. */
struct lane {
	ledger_t *lg; /* a ledger_share of the applier's */
	etcd_t *etcd; /* its own connection: one txn in flight per lane */
	bool busy;
	uint64_t want; /* the ticket waiting for the build token (0: none) */
};

enum ptx_state {
	PT_FLIGHT = 0, /* sent, or about to be; its call waits */
	PT_COMMITTED,  /* in the log (its answer, or a later txn's) */
	PT_UNKNOWN     /* unknown at its call's bound (rule 1): the chain's */
};

/* A verdict txn of the chain. */
struct ptx {
	uint64_t serial;
	/* The txn it is chained on (0: none, compared on w.head_rev). */
	uint64_t pred;
	struct cluster_writer w;
	/* The predecessor's P/head value, byte for byte (owned; NULL: the
	 * first of a chain): w.head_value points here. */
	char *cmp;
	size_t cmp_len;
	struct ledger_logval v; /* P/log/<s+1>'s value (owned) */
	char *hv;		/* P/head's value it puts (owned) */
	size_t hv_len;
	state_t *after; /* the state after it (owned until it commits: then
			   the carry's) */
	uint64_t verdicts_after;
	int64_t revision;
	enum ptx_state st;
	/* A txn before it failed: its compare can never hold. */
	bool doomed;
	/* Pipelined: its predecessor was still in flight when it was sent. */
	bool piped;
	/* UNKNOWN: what it records, owed a NOTE if it committed (notes: a
	 * txn of NOTEs, n_ids of the owed ids). */
	uint64_t *ids;
	size_t n_ids;
	bool notes;
};

struct cluster_verdicts {
	pthread_mutex_t mu; /* everything below but the lanes' handles */
	pthread_cond_t cond;
	struct lane lanes[CLUSTER_PIPELINE_MAX];
	size_t n_lanes; /* --pipeline */
	cluster_applier_t *ap; /* borrowed: its status */
	const char *prefix;    /* borrowed */
	uint64_t timeout_ms;
	char epoch[65]; /* P/epoch ("" until read; by the token's holder) */
	/* The seq the last txn we saw committed reached: the next snapshot
	 * waits for the applier to get there. */
	uint64_t known_seq;
	/* Rule 2: ids committed but answered 503, owed a NOTE. */
	uint64_t *owed;
	size_t n_owed, cap_owed;
	/* The carry: the log at the end of this member's last committed
	 * verdict txn, or a snapshot (carry.st NULL: none). The first txn of
	 * a chain is built on it (VERDICTs change no state, so a batch is
	 * judged and chained on it at once instead of after a wait for the
	 * applier). carry_serial: the txn whose state it is (0: none). Only
	 * the token's holder reads it while the chain is empty; a commit
	 * replaces it. keys: the verdict keys recorded at seqs the ledger's
	 * uid index may not hold yet (ours, and those re-numbering read), so
	 * that rule 3 sees them. */
	struct snap carry;
	uint64_t carry_serial;
	/* Moves whenever the carry is a new snapshot: a judgement made
	 * before is made again (an observation may lie between). */
	uint64_t gen;
	struct seq_key *keys;
	size_t n_keys, cap_keys;
	bool keys_full; /* a key could not be kept: drain, then snapshot */
	struct ptx *chain[CHAIN_MAX];
	size_t n_chain;
	uint64_t serial;
	/* The build token and its tickets. */
	bool building;
	uint64_t tickets;
	/* The state the token's holder judges on outside the lock: a txn
	 * that leaves the chain does not free it (tip_orphan, freed when the
	 * token is given back). */
	const state_t *tip_st;
	state_t *tip_orphan;
	atomic_bool pending; /* read by the loop's thread */
	/* A door's forward to the sequencer (DESIGN 11): NULL when off; one
	 * forward at a time. */
	pthread_mutex_t door_mu;
	struct cluster_forward *fwd;
	cluster_leader_t *ld; /* borrowed: who the sequencer is */
	char name[CLUSTER_NAME_MAX + 1];
	uint64_t forward_timeout_ms;
	int64_t fwd_warned_ms; /* the last forward failure said */
	/* The pipeline runs only while this member is the sequencer (NULL:
	 * never). */
	cluster_leader_t *seq_ld;
	/* Rule 2 for a door (mu): the keys it answered 503 after offering
	 * them to the sequencer, which may record them after all and owes
	 * no NOTE (the door answers the client): a NOTE names whatever
	 * verdict of the key this member's log shows, until until_ms.
	 * own_id: the id this member's own txn gave it, NOTEd as its own if
	 * that txn commits (0: none, or that txn never committed). */
	struct offered {
		struct verdict_key key;
		uint64_t own_id;
		int64_t until_ms;
	} *offered;
	size_t n_offered;
};

static void nap_ms(int64_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void cv_nap(void)
{
	nap_ms(NAP_MS);
}

static void cv_lock(struct cluster_verdicts *cv)
{
	LG_ASSERT(pthread_mutex_lock(&cv->mu) == 0);
}

static void cv_unlock(struct cluster_verdicts *cv)
{
	LG_ASSERT(pthread_mutex_unlock(&cv->mu) == 0);
}

/* Waits on the chain's condition (mu held) at most WAIT_SLICE_MS; false
 * once deadline_ms has passed. */
static bool cv_wait(struct cluster_verdicts *cv, int64_t deadline_ms)
{
	int64_t now = etcd_mono_ms(), ms = WAIT_SLICE_MS;
	struct timespec ts;

	if (now >= deadline_ms)
		return false;
	if (deadline_ms - now < ms)
		ms = deadline_ms - now;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&cv->cond, &cv->mu, &ts);
	return true;
}

int cluster__verdicts_new(struct cluster_verdicts **out, ledger_t *lg,
			  cluster_applier_t *ap,
			  const struct etcd_opts *eo,
			  const char *prefix, uint64_t timeout_ms,
			  unsigned pipeline, struct lg_error *err)
{
	struct cluster_verdicts *cv = lg_xcalloc(1, sizeof(*cv));
	pthread_condattr_t ca;
	int rc = 0;

	*out = NULL;
	LG_ASSERT(pipeline <= CLUSTER_PIPELINE_MAX);
	cv->ap = ap;
	cv->prefix = prefix;
	cv->timeout_ms = timeout_ms ? timeout_ms : CLUSTER_VERDICT_TIMEOUT_MS;
	atomic_init(&cv->pending, false);
	LG_ASSERT(pthread_mutex_init(&cv->mu, NULL) == 0);
	LG_ASSERT(pthread_mutex_init(&cv->door_mu, NULL) == 0);
	LG_ASSERT(pthread_condattr_init(&ca) == 0);
	LG_ASSERT(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0);
	LG_ASSERT(pthread_cond_init(&cv->cond, &ca) == 0);
	pthread_condattr_destroy(&ca);
	cv->n_lanes = pipeline ? pipeline : 1;
	for (size_t i = 0; i < cv->n_lanes && rc == 0; i++)
		if ((rc = ledger_share(lg, &cv->lanes[i].lg, err)) == 0)
			rc = etcd_open(&cv->lanes[i].etcd, eo, err);
	if (rc != 0) {
		cluster__verdicts_free(cv);
		return rc;
	}
	*out = cv;
	return 0;
}

static void ptx_free_now(struct ptx *pt)
{
	if (pt == NULL)
		return;
	state_free(pt->after);
	ledger_logval_release(&pt->v);
	free(pt->hv);
	free(pt->cmp);
	free(pt->ids);
	free(pt);
}

void cluster__verdicts_free(struct cluster_verdicts *cv)
{
	if (cv == NULL)
		return;
	for (size_t i = 0; i < cv->n_chain; i++)
		ptx_free_now(cv->chain[i]); /* only unknown ones are left */
	cluster__forward_free(cv->fwd);
	free(cv->owed);
	free(cv->offered);
	state_free(cv->carry.st);
	state_free(cv->tip_orphan);
	free(cv->keys);
	for (size_t i = 0; i < cv->n_lanes; i++) {
		etcd_close(cv->lanes[i].etcd);
		ledger_close(cv->lanes[i].lg);
	}
	pthread_cond_destroy(&cv->cond);
	pthread_mutex_destroy(&cv->mu);
	pthread_mutex_destroy(&cv->door_mu);
	free(cv);
}

void cluster__verdicts_doors(struct cluster_verdicts *cv,
			     struct cluster_forward *fwd,
			     cluster_leader_t *ld, const char *name,
			     uint64_t forward_timeout_ms)
{
	LG_ASSERT(cv != NULL && cv->fwd == NULL && (fwd == NULL || ld != NULL));
	cv->fwd = fwd;
	cv->ld = ld;
	snprintf(cv->name, sizeof(cv->name), "%s", name ? name : "");
	cv->forward_timeout_ms = forward_timeout_ms ? forward_timeout_ms
						    : CLUSTER_FORWARD_TIMEOUT_MS;
}

void cluster__verdicts_sequencer(struct cluster_verdicts *cv,
				 cluster_leader_t *ld)
{
	cv->seq_ld = ld;
}

size_t cluster__verdicts_inflight(struct cluster_verdicts *cv)
{
	/* DESIGN 11: only the member holding P/leader pipelines; a member
	 * that loses it drains (no call starts until every one has ended). */
	if (cv->n_lanes > 1 && cv->seq_ld != NULL &&
	    cluster__leader_sequencer(cv->seq_ld, NULL, 0) == CLUSTER_SEQ_SELF)
		return cv->n_lanes;
	return 1;
}

bool cluster__verdicts_pending(struct cluster_verdicts *cv)
{
	return atomic_load(&cv->pending);
}

/* (mu held) */
static void update_pending(struct cluster_verdicts *cv)
{
	atomic_store(&cv->pending,
		     cv->n_chain > 0 || cv->n_owed > 0 || cv->n_offered > 0);
}

/* ---------------------------------------------------------------------- */
/* The snapshot (rule 9) */

/* A state that leaves the chain or the carry (mu held): freed, unless the
 * token's holder reads it (then when the token is given back). */
static void drop_state(struct cluster_verdicts *cv, state_t *st)
{
	if (st == NULL)
		return;
	if (st == cv->tip_st) {
		LG_ASSERT(cv->tip_orphan == NULL);
		cv->tip_orphan = st;
	} else {
		state_free(st);
	}
}

static void carry_drop(struct cluster_verdicts *cv)
{
	drop_state(cv, cv->carry.st);
	memset(&cv->carry, 0, sizeof(cv->carry));
	cv->carry_serial = 0;
}

/* P/epoch, once. */
static int read_epoch(struct cluster_verdicts *cv, struct lane *ln,
		      struct lg_error *err)
{
	if (cv->epoch[0] != '\0')
		return 0;
	return cluster__epoch_read(ln->etcd, cv->prefix, cv->epoch,
				   sizeof(cv->epoch), err);
}

/* P/head's mod_revision when the ledger holds no cluster meta at s yet (a
 * copy of the ledger `cluster init --db` read, or a member that joined
 * from a peer): P/head read now, when it is still at s with head h. 1:
 * P/head has moved (wait for the applier). */
static int head_rev_from_etcd(struct cluster_verdicts *cv, struct lane *ln,
			      struct snap *s, struct lg_error *err)
{
	char key[CLUSTER_PREFIX_MAX + 16];
	struct etcd_range_result r = {0};
	struct cluster_head h;
	uint8_t hb[LEDGER_HEAD_BYTES];
	struct etcd_range rg = {
		.key = key,
		.key_len = cluster__key(key, sizeof(key), cv->prefix, "head")};
	int rc = etcd_range(ln->etcd, &rg, &r, NULL, err);

	if (rc == 0 && (r.n_kvs != 1 ||
			!cluster__head_parse(r.kvs[0].value,
					     r.kvs[0].value_len, &h) ||
			!cluster__head_bytes(&h, hb)))
		rc = lg_error_set(err, LG_ECORRUPT, "%s/head is not a head",
				  cv->prefix);
	if (rc == 0 && (h.seq != s->seq ||
			memcmp(hb, s->head, LEDGER_HEAD_BYTES) != 0))
		rc = 1;
	if (rc == 0)
		s->head_rev = r.kvs[0].mod_revision;
	etcd_range_result_release(&r);
	return rc;
}


/* (s, h), the state, the verdicts up to s and P/head's mod_revision at s,
 * all of one seq s >= cv->known_seq: the handle is refreshed until the
 * meta and the index read describe the seq its state is at (the applier
 * may append between the reads: the log only grows, so equal seqs are one
 * snapshot). 0, LG_EIO at the deadline, or the ledger's error. By the
 * token's holder, mu not held. */
static int snapshot(struct cluster_verdicts *cv, struct lane *ln,
		    struct snap *s, int64_t deadline_ms, struct lg_error *err)
{
	memset(s, 0, sizeof(*s));
	for (;;) {
		struct ledger_cluster_meta cm;
		struct ledger_vindex vi;
		bool present;
		int rc = ledger_refresh(ln->lg, err);

		if (rc == 0)
			rc = ledger_cluster_meta_get(ln->lg, &cm, &present,
						     err);
		if (rc == 0)
			rc = ledger_verdict_index(ln->lg, &vi, err);
		if (rc != 0)
			return rc;
		s->seq = ledger_last_seq(ln->lg);
		memcpy(s->head, ledger_head(ln->lg), LEDGER_HEAD_BYTES);
		if (s->seq >= cv->known_seq && vi.upto == s->seq) {
			if (present && cm.seq == s->seq) {
				s->head_rev = cm.revision;
			} else {
				/* No meta at s: a ledger `cluster init --db`
				 * read, or one that joined from a peer (the
				 * copied events carry none) and has nothing
				 * newer from etcd yet. */
				rc = head_rev_from_etcd(cv, ln, s, err);
				if (rc < 0)
					return rc;
			}
			if (rc == 0) {
				if (present && cv->epoch[0] == '\0')
					memcpy(cv->epoch, cm.epoch,
					       sizeof(cv->epoch));
				s->verdicts = vi.count;
				s->st = state_clone(ledger_state(ln->lg));
				s->time_ns = state_time_ns(s->st);
				return read_epoch(cv, ln, err);
			}
		}
		if (etcd_mono_ms() >= deadline_ms)
			return lg_error_set(err, LG_EIO,
					    "the applier is at seq %llu, the "
					    "log at %llu or later",
					    (unsigned long long)s->seq,
					    (unsigned long long)cv->known_seq);
		cv_nap();
	}
}

/* ---------------------------------------------------------------------- */
/* The carry's keys */

/* Keeps key (if any) as recorded at seq, for rule 3 over the carry; when
 * the bound is reached it is not kept, and the next build waits for the
 * applier instead (keys_full). Takes mu. */
static void key_add_locked(struct cluster_verdicts *cv, uint64_t seq,
			   const struct verdict_key *key)
{
	if (key->kind == VERDICT_KEY_NONE)
		return;
	if (cv->n_keys >= KEYS_MAX) {
		cv->keys_full = true;
		return;
	}
	if (cv->n_keys == cv->cap_keys) {
		cv->cap_keys = cv->cap_keys ? 2 * cv->cap_keys : 64;
		cv->keys =
			lg_xrealloc(cv->keys, cv->cap_keys * sizeof(*cv->keys));
	}
	cv->keys[cv->n_keys++] = (struct seq_key){.seq = seq, .key = *key};
}

static void key_add(struct cluster_verdicts *cv, uint64_t seq,
		    const struct verdict_key *key)
{
	cv_lock(cv);
	key_add_locked(cv, seq, key);
	cv_unlock(cv);
}

static int value_key(void *ctx, const struct event *ev)
{
	struct verdict_key key;

	if (ev->type == EV_VERDICT &&
	    verdict_record_key(ev->text, strlen(ev->text), &key) == 1)
		key_add_locked(ctx, ev->seq, &key);
	return 0;
}

/* The keys a txn of this member recorded whose items no call answers
 * any more: one left unknown and then found committed (rule 1). Its run
 * has returned, so committed() never kept them, and the carry now lies
 * past them, perhaps past the ledger: without them a forward of the same
 * key (its door fell back and answered from the record meanwhile) would
 * be judged again (mu held). */
static void keys_of_value(struct cluster_verdicts *cv,
			  const struct ledger_logval *v)
{
	if (ledger_logval_read(v->bytes, v->len, v->first_seq, NULL,
			       value_key, cv, NULL, NULL) != 0)
		cv->keys_full = true; /* not known: the ledger decides */
}

/* The keys the ledger's uid index holds by now (upto): dropped (mu
 * held). */
static void keys_trim(struct cluster_verdicts *cv, uint64_t upto)
{
	size_t j = 0;

	for (size_t i = 0; i < cv->n_keys; i++)
		if (cv->keys[i].seq > upto)
			cv->keys[j++] = cv->keys[i];
	cv->n_keys = j;
}

/* (mu held) */
static void owe(struct cluster_verdicts *cv, const uint64_t *ids, size_t n)
{
	if (n == 0)
		return; /* e.g. a txn of forwarded items only: their doors' */
	if (cv->n_owed + n > cv->cap_owed) {
		cv->cap_owed = 2 * (cv->n_owed + n);
		cv->owed = lg_xrealloc(cv->owed,
				       cv->cap_owed * sizeof(*cv->owed));
	}
	memcpy(cv->owed + cv->n_owed, ids, n * sizeof(*ids));
	cv->n_owed += n;
}

/* An unknown txn of ours that never committed (mu held): a key this door
 * offered to the sequencer is then recorded, if at all, by another
 * member's txn, whose verdict may even carry our id (the same seq). */
static void offered_not_ours(struct cluster_verdicts *cv, const struct ptx *e)
{
	for (size_t k = 0; k < e->n_ids; k++)
		for (size_t j = 0; j < cv->n_offered; j++)
			if (cv->offered[j].own_id == e->ids[k])
				cv->offered[j].own_id = 0;
}

/* The id of the VERDICT at seq (the index maps ids to seqs, in order). */
static int verdict_id_at(ledger_t *lg, uint64_t seq, uint64_t *id,
			 struct lg_error *err)
{
	struct ledger_vindex vi;
	uint64_t lo = 1, hi, at;
	int rc = ledger_verdict_index(lg, &vi, err);

	for (hi = vi.count; rc == 0 && lo <= hi;) {
		*id = lo + (hi - lo) / 2;
		if ((rc = ledger_verdict_seq(lg, *id, &at, err)) != 0)
			break;
		if (at == seq)
			return 0;
		if (at < seq)
			lo = *id + 1;
		else
			hi = *id - 1;
	}
	return rc != 0 ? rc : LG_ENOENT;
}

/* Owes a NOTE for the verdict the lane's ledger shows of each key this
 * door answered 503 after offering it to the sequencer (unless it is its
 * own, NOTEd as such); a key is forgotten then, or once kept long enough
 * (mu held). */
static void offered_settle(struct cluster_verdicts *cv, ledger_t *lg)
{
	struct lg_error err = {0};
	int64_t now = etcd_mono_ms();
	size_t kept = 0;

	if (cv->n_offered == 0 || ledger_refresh(lg, &err) != 0)
		return;
	for (size_t k = 0; k < cv->n_offered; k++) {
		struct offered *o = &cv->offered[k];
		uint64_t seq, id;
		int rc = ledger_verdict_by_key(lg, &o->key, &seq, &err);

		if (rc == 0 && verdict_id_at(lg, seq, &id, &err) == 0) {
			if (id != o->own_id)
				owe(cv, &id, 1);
			continue;
		}
		if (rc == LG_ENOENT && now >= o->until_ms)
			continue;
		cv->offered[kept++] = *o;
	}
	cv->n_offered = kept;
}

/* ---------------------------------------------------------------------- */
/* The chain (mu held) */

static size_t chain_find(const struct cluster_verdicts *cv, uint64_t serial)
{
	for (size_t i = 0; i < cv->n_chain; i++)
		if (cv->chain[i]->serial == serial)
			return i;
	return SIZE_MAX;
}

static void ptx_free(struct cluster_verdicts *cv, struct ptx *pt)
{
	if (pt == NULL)
		return;
	drop_state(cv, pt->after);
	pt->after = NULL;
	ptx_free_now(pt);
}

/* pt leaves the chain without committing (it failed, never will, or is
 * not ours): every txn chained after it is doomed, since its value never
 * becomes P/head. */
static void chain_remove(struct cluster_verdicts *cv, struct ptx *pt)
{
	size_t i = chain_find(cv, pt->serial), k;

	if (i == SIZE_MAX)
		return;
	/* One left unknown behind it has no call any more: it never
	 * committed (nothing owed), so it goes now. */
	k = i;
	for (size_t j = i + 1; j < cv->n_chain; j++) {
		struct ptx *e = cv->chain[j];

		if (e->st == PT_UNKNOWN) {
			offered_not_ours(cv, e);
			ptx_free(cv, e);
			continue;
		}
		e->doomed = true;
		cv->chain[k++] = e;
	}
	cv->n_chain = k;
	pthread_cond_broadcast(&cv->cond);
}

/* pt committed (its own answer, or a later txn that did): it and every
 * txn before it are in the log (each later one compares the one before's
 * head value). They leave the chain; an unknown one among them was
 * recorded and answered 503 (rule 2: owed NOTEs); the carry becomes the
 * log after pt. revision: pt's txn's (0: not known). */
static void chain_committed(struct cluster_verdicts *cv, struct ptx *pt,
			    int64_t revision)
{
	size_t i = chain_find(cv, pt->serial);

	if (revision != 0)
		pt->revision = revision;
	if (pt->v.last_seq > cv->known_seq)
		cv->known_seq = pt->v.last_seq;
	if (i == SIZE_MAX) {
		pt->st = PT_COMMITTED;
		return; /* a later txn proved it already */
	}
	/* (pt itself may be an unknown one: resolved by its re-send.) */
	for (size_t j = 0; j <= i; j++) {
		struct ptx *e = cv->chain[j];

		if (e->st == PT_UNKNOWN && e->notes) {
			/* The NOTEs are in the log: those ids are paid. */
			size_t k = e->n_ids < cv->n_owed ? e->n_ids : cv->n_owed;

			memmove(cv->owed, cv->owed + k,
				(cv->n_owed - k) * sizeof(*cv->owed));
			cv->n_owed -= k;
		} else if (e->st == PT_UNKNOWN) {
			/* DESIGN 11 rule 2: recorded, never answered. */
			owe(cv, e->ids, e->n_ids);
			keys_of_value(cv, &e->v);
		}
		if (e->v.last_seq > cv->known_seq)
			cv->known_seq = e->v.last_seq;
		if (e != pt && e->st == PT_UNKNOWN) {
			ptx_free(cv, e); /* its call has returned */
			continue;
		}
		e->st = PT_COMMITTED;
	}
	carry_drop(cv);
	if (pt->after != NULL && pt->revision != 0) {
		cv->carry = (struct snap){.st = pt->after,
					  .seq = pt->v.last_seq,
					  .verdicts = pt->verdicts_after,
					  .head_rev = pt->revision,
					  .time_ns = state_time_ns(pt->after)};
		memcpy(cv->carry.head, pt->v.head, LEDGER_HEAD_BYTES);
		cv->carry_serial = pt->serial;
		pt->after = NULL;
	}
	memmove(cv->chain, cv->chain + i + 1,
		(cv->n_chain - i - 1) * sizeof(*cv->chain));
	cv->n_chain -= i + 1;
	pthread_cond_broadcast(&cv->cond);
}

enum pred_state {
	PRED_FLIGHT,
	PRED_COMMITTED,
	PRED_UNKNOWN
};

/* Where pt's predecessor is. One that left the chain committed: a
 * failure dooms pt (the caller looks at doomed first). */
static enum pred_state pred_state(const struct cluster_verdicts *cv,
				  const struct ptx *pt)
{
	size_t i = pt->pred ? chain_find(cv, pt->pred) : SIZE_MAX;

	if (i == SIZE_MAX || cv->chain[i]->st == PT_COMMITTED)
		return PRED_COMMITTED;
	return cv->chain[i]->st == PT_UNKNOWN ? PRED_UNKNOWN : PRED_FLIGHT;
}

/* Adds pt, built on the txn tip_serial (0: on the carry, the chain
 * empty), at the chain's end: false when that txn failed meanwhile (build
 * again). */
static bool chain_push(struct cluster_verdicts *cv, struct ptx *pt,
		       uint64_t tip_serial)
{
	if (tip_serial != 0) {
		size_t i = chain_find(cv, tip_serial);

		if (i == SIZE_MAX ? cv->n_chain != 0 ||
					    cv->carry_serial != tip_serial
				  : i != cv->n_chain - 1 ||
					    cv->chain[i]->doomed ||
					    cv->chain[i]->st != PT_FLIGHT)
			return false;
	} else if (cv->n_chain != 0) {
		return false;
	}
	LG_ASSERT(cv->n_chain < CHAIN_MAX);
	pt->serial = ++cv->serial;
	pt->pred = tip_serial;
	pt->piped = pred_state(cv, pt) == PRED_FLIGHT;
	cv->chain[cv->n_chain++] = pt;
	return true;
}

/* ---------------------------------------------------------------------- */
/* One batch */

struct run {
	struct cluster_verdicts *cv;
	struct lane *ln;
	struct query_vgroup g; /* the verdict path: judging, numbering,
				  rule 3, recording (query/vpath.c) */
	int64_t t0_ms;	       /* when the call began: the bound of an item
				  with no arrival time */
	int64_t deadline_ms;   /* the nearest bound of the items left */
	uint64_t ticket;       /* its place in the build order */
	bool judged;	       /* judged on the carry of gen */
	uint64_t gen;
	bool *offered; /* item i went to the sequencer (a door's) */
	uint64_t *own; /* item i's id in a txn of ours answered 503 (0: none) */
};

static void own_set(struct run *r, size_t i, uint64_t id)
{
	if (r->own == NULL)
		r->own = lg_xcalloc(r->g.n, sizeof(*r->own));
	r->own[i] = id;
}

/* DESIGN 11 rule 2's bound of item i: --verdict-timeout-ms from its
 * arrival, so that time spent queued behind an earlier batch (or frozen:
 * SIGSTOP, a throttled cgroup) counts. */
static int64_t bound_ms(const struct run *r, size_t i)
{
	int64_t t0 = r->g.it[i].t0_ms != 0 ? r->g.it[i].t0_ms : r->t0_ms;
	int64_t b = t0 + (int64_t)r->cv->timeout_ms;

	/* A forwarded request has what its door had left, at most. */
	if (r->g.it[i].bound_ms != 0 && r->g.it[i].bound_ms < b)
		b = r->g.it[i].bound_ms;
	return b;
}

/* DESIGN 11 "One sequencer, every member a door": while another member
 * holds P/leader, the group goes to it first. Each item's budget there is
 * what is left of its bound, at most --forward-timeout-ms: the door waits
 * no longer, and judges here whatever the sequencer did not answer, under
 * the same key (rule 3 then finds the sequencer's verdict if it committed
 * after all). */
static void door(struct run *r)
{
	struct cluster_verdicts *cv = r->cv;
	char url[CLUSTER_URL_MAX];
	struct lg_error err = {0};
	int64_t *budget, now, tmo = 0;
	int rc;

	if (cv->fwd == NULL ||
	    cluster__leader_sequencer(cv->ld, url, sizeof(url)) !=
		    CLUSTER_SEQ_OTHER ||
	    url[0] == '\0' ||
	    query_vgroup_count(&r->g, QUERY_V_DONE) == r->g.n)
		return;
	budget = lg_xcalloc(r->g.n, sizeof(*budget));
	now = etcd_mono_ms();
	for (size_t i = 0; i < r->g.n; i++) {
		int64_t left = bound_ms(r, i) - now;

		budget[i] = left < (int64_t)cv->forward_timeout_ms
				    ? left
				    : (int64_t)cv->forward_timeout_ms;
		if (budget[i] > tmo)
			tmo = budget[i];
	}
	r->offered = lg_xcalloc(r->g.n, sizeof(*r->offered));
	for (size_t i = 0; i < r->g.n; i++)
		r->offered[i] = r->g.state[i] != QUERY_V_DONE &&
				!r->g.it[i].forwarded &&
				r->g.it[i].body != NULL && budget[i] > 0;
	/* One forward at a time: the client is one handle. */
	LG_ASSERT(pthread_mutex_lock(&cv->door_mu) == 0);
	rc = cluster__forward_run(cv->fwd, url, cv->name, &r->g, budget,
				  (uint64_t)tmo, &err);
	if (rc > 0 && r->g.st != NULL)
		r->g.st->forwarded += (uint64_t)rc;
	if (rc < 0) {
		if (r->g.st != NULL)
			r->g.st->fallbacks++;
		if (now - cv->fwd_warned_ms >= 1000) {
			cv->fwd_warned_ms = now;
			fprintf(stderr,
				"gpuledger member: %s; judging here (DESIGN "
				"11: forwarding is a speed-up)\n",
				err.msg);
		}
	}
	LG_ASSERT(pthread_mutex_unlock(&cv->door_mu) == 0);
	free(budget);
}


/* Rule 2: every item whose bound has passed is answered 503 unjudged (no
 * txn of the run is outstanding when this is called, so none of them is
 * recorded); the run's deadline, and every etcd request's, becomes the
 * nearest bound of the rest. false when no item is left. */
static bool expire(struct run *r)
{
	int64_t now = etcd_mono_ms(), d = 0;
	bool any = false;

	for (size_t i = 0; i < r->g.n; i++) {
		int64_t b;

		if (r->g.state[i] == QUERY_V_DONE)
			continue;
		b = bound_ms(r, i);
		if (b <= now) {
			query_vgroup_fail(&r->g, i, 503,
					  "the verdict could not be recorded "
					  "within --verdict-timeout-ms (DESIGN "
					  "11 rule 2)");
		} else if (!any || b < d) {
			d = b;
			any = true;
		}
	}
	if (any) {
		r->deadline_ms = d;
		etcd_deadline(r->ln->etcd, d);
	}
	return any;
}


/* What lies between the failed txn's s and P/head now, read to re-number
 * over it: the state is advanced by each VERDICT (so that it is at the new
 * s), and a review uid among them answers our item from that record (rule
 * 3, after every conflict). */
struct between {
	struct run *r;
	struct snap *s;
	int rc;
	bool held; /* a VERDICT between made or replaced a hold */
};

static int between_event(void *ctx, const struct event *ev)
{
	struct between *b = ctx;
	struct run *r = b->r;
	struct verdict_key key;
	struct lg_error err = {0};

	uint64_t gen = state_holds_gen(b->s->st);

	/* DESIGN 11: only VERDICTs change no state; anything else between
	 * means judge again. */
	if (ev->type != EV_VERDICT ||
	    state_apply(b->s->st, ev, &err) != 0)
		return b->rc = LG_EMISMATCH;
	/* With holds on (DESIGN 3.7), a VERDICT that made or replaced a hold
	 * changed what a judgement reads: judge again (its key is checked
	 * first: it may be our own request's verdict, rule 3). */
	if (state_holds_gen(b->s->st) != gen)
		b->held = true;
	if (verdict_record_key(ev->text, strlen(ev->text), &key) != 1)
		return 0;
	/* Rule 3 over the carry: a later batch may repeat this key before
	 * the applier has it. */
	key_add(r->cv, ev->seq, &key);
	for (size_t i = 0; i < r->g.n; i++) {
		struct verdict_key mine;

		verdict_request_key(r->g.it[i].vr, &mine);
		if (r->g.state[i] == QUERY_V_JUDGED &&
		    verdict_key_equal(&mine, &key))
			query_vgroup_repeat_of(&r->g, i, ev->text, ev->seq);
	}
	return 0;
}

static int between_value(void *ctx, const struct etcd_kv *kv, uint64_t seq)
{
	struct between *b = ctx;
	int rc = ledger_logval_read(kv->value, kv->value_len, seq, NULL,
				    between_event, b, NULL, NULL);

	return b->rc != 0 ? b->rc : rc;
}

/* Re-numbers the snapshot onto the conflict's head, over VERDICTs only
 * (DESIGN 11: the judgement stands; id, seq, basisSeq, chainHead and time
 * come from the failure branch's reads). 0, or non-zero: judge again. */
static int renumber(struct run *r, struct snap *s,
		    const struct cluster_append_result *res)
{
	struct between b = {.r = r, .s = s};
	struct cluster_writer w = {.prefix = r->cv->prefix,
				   .etcd = r->ln->etcd};
	struct lg_error err = {0};
	uint8_t hb[LEDGER_HEAD_BYTES];
	uint64_t from;
	int rc;

	if (!cluster__head_bytes(&res->now, hb))
		return LG_ECORRUPT;
	if (res->now.seq <= s->seq)
		return LG_EMISMATCH;
	/* The values the failure branch read first (most conflicts need no
	 * more), then the rest from etcd. */
	from = s->seq + 1;
	rc = 0;
	for (size_t i = 0;
	     i < res->n_between && rc == 0 && from <= res->now.seq; i++) {
		struct etcd_kv kv = {.value = res->between[i].value,
				     .value_len = res->between[i].len};
		struct ledger_logval info;

		if (res->between[i].seq != from)
			break;
		rc = between_value(&b, &kv, from);
		if (rc == 0 && ledger_logval_read(kv.value, kv.value_len, from,
						  NULL, NULL, NULL, &info,
						  NULL) != 0)
			rc = LG_ECORRUPT;
		if (rc == 0)
			from = info.last_seq + 1;
	}
	if (rc == 0 && from <= res->now.seq)
		rc = cluster__log_read(&w, from, res->now.seq, 0,
				       between_value, &b, &err);
	if (rc != 0 || state_seq(s->st) != res->now.seq)
		return rc ? rc : LG_EMISMATCH;
	if (b.held)
		return LG_EMISMATCH; /* DESIGN 3.7: judge again */
	/* Only VERDICTs lie between: each one more verdict. */
	s->verdicts += res->now.seq - s->seq;
	s->seq = res->now.seq;
	memcpy(s->head, hb, LEDGER_HEAD_BYTES);
	s->head_rev = res->now_rev;
	s->time_ns = state_time_ns(s->st);
	return 0;
}


/* The items of a committed txn (the first taken of the value built). */
static void committed(struct run *r, const struct ledger_logval *v,
		      size_t taken)
{
	int64_t now = etcd_mono_ms();

	for (size_t k = 0; k < taken; k++) {
		struct verdict_key key;

		verdict_request_key(r->g.it[r->g.of[k]].vr, &key);
		key_add(r->cv, v->first_seq + k, &key);
	}
	query_vgroup_recorded(&r->g, v->first_seq, taken);
	for (size_t k = 0; k < taken; k++) {
		size_t i = r->g.of[k];
		struct query_vitem *it = &r->g.it[i];

		if (now < bound_ms(r, i))
			continue;
		/* Rule 2: committed only after its bound (the member was
		 * frozen, or etcd slow), when the webhook has given up:
		 * answered 503, and a NOTE VerdictUnanswered names it --
		 * unless a door forwarded it: the door answers its client,
		 * having judged it itself under the same key, where rule 3
		 * found this record (a NOTE would say an answered verdict
		 * was not). */
		cv_lock(r->cv);
		if (!it->forwarded)
			owe(r->cv, &it->v.id, 1);
		cv_unlock(r->cv);
		own_set(r, i, it->v.id);
		it->recorded = false;
		query_vgroup_fail(&r->g, i, 503,
				  "the verdict was recorded only after "
				  "--verdict-timeout-ms: a NOTE "
				  "VerdictUnanswered names it (DESIGN 11 rule "
				  "2)");
	}
}

/* ---------------------------------------------------------------------- */
/* The build token */

/* Waits for the token, given to the smallest ticket asking; false at the
 * run's deadline. */
static bool token_take(struct run *r)
{
	struct cluster_verdicts *cv = r->cv;
	bool got = false;

	cv_lock(cv);
	r->ln->want = r->ticket;
	for (;;) {
		uint64_t min = UINT64_MAX;

		for (size_t i = 0; i < cv->n_lanes; i++)
			if (cv->lanes[i].want != 0 && cv->lanes[i].want < min)
				min = cv->lanes[i].want;
		if (!cv->building && min == r->ticket) {
			cv->building = got = true;
			break;
		}
		if (!cv_wait(cv, r->deadline_ms))
			break;
	}
	r->ln->want = 0;
	pthread_cond_broadcast(&cv->cond);
	cv_unlock(cv);
	return got;
}

static void token_give(struct cluster_verdicts *cv)
{
	cv_lock(cv);
	cv->building = false;
	cv->tip_st = NULL;
	state_free(cv->tip_orphan);
	cv->tip_orphan = NULL;
	pthread_cond_broadcast(&cv->cond);
	cv_unlock(cv);
}

/* ---------------------------------------------------------------------- */
/* Rule 1 and rule 2's aftermath: by the token's holder, with no txn in
 * flight (only unknown ones in the chain). */

/* Re-sends each unknown txn identical, in order (rule 1). true when none
 * is left unknown. */
static bool resolve(struct cluster_verdicts *cv, struct lane *ln,
		    int64_t deadline_ms)
{
	for (;;) {
		struct cluster_append_result res;
		struct lg_error err = {0};
		struct ptx *e;

		cv_lock(cv);
		if (cv->n_chain == 0) {
			cv_unlock(cv);
			return true;
		}
		e = cv->chain[0];
		LG_ASSERT(e->st == PT_UNKNOWN);
		cv_unlock(cv);
		e->w.etcd = ln->etcd;
		cluster__append(&e->w,
				&(struct cluster_append_req){
					.v = &e->v,
					.verdicts = true,
					.deadline_ms = deadline_ms,
					.head_put = e->hv,
					.head_put_len = e->hv_len},
				&res, &err);
		cluster__append_result_release(&res);
		if (res.outcome == CLUSTER_APPEND_UNKNOWN ||
		    res.outcome == CLUSTER_APPEND_NOT_APPLIED)
			return false; /* still unknown: a send may commit */
		fprintf(stderr,
			"gpuledger member: the txn of seqs %llu..%llu left "
			"unknown: %s after %u txns%s\n",
			(unsigned long long)e->v.first_seq,
			(unsigned long long)e->v.last_seq,
			cluster__append_outcome_name(res.outcome), res.attempts,
			res.found ? ", found ours" : "");
		cv_lock(cv);
		if (res.outcome == CLUSTER_APPEND_COMMITTED) {
			chain_committed(cv, e, res.revision);
			ptx_free(cv, e);
		} else {
			/* CONFLICT: P/log/<s+1> holds another value: ours
			 * never was, nor any txn chained on it. */
			if (res.now.seq > cv->known_seq)
				cv->known_seq = res.now.seq;
			while (cv->n_chain > 0) {
				struct ptx *x = cv->chain[cv->n_chain - 1];

				cv->n_chain--;
				offered_not_ours(cv, x);
				ptx_free(cv, x);
			}
			carry_drop(cv);
		}
		update_pending(cv);
		cv_unlock(cv);
	}
}

/* What a txn of NOTEs VerdictUnanswered (taken of them, value v, taken
 * over when it stays unknown) came to; true: build it again (another
 * writer appended). */
static bool notes_outcome(struct cluster_verdicts *cv,
			  const struct cluster_writer *w,
			  struct ledger_logval *v,
			  const struct cluster_append_result *res,
			  size_t taken, struct query_vstats *st)
{
	bool again = false;

	cv_lock(cv);
	if (res->outcome == CLUSTER_APPEND_COMMITTED) {
		st->unanswered += taken;
		fprintf(stderr,
			"gpuledger member: NOTE VerdictUnanswered at seqs "
			"%llu..%llu\n",
			(unsigned long long)v->first_seq,
			(unsigned long long)v->last_seq);
		cv->known_seq = v->last_seq;
		memmove(cv->owed, cv->owed + taken,
			(cv->n_owed - taken) * sizeof(*cv->owed));
		cv->n_owed -= taken;
		carry_drop(cv);
	} else if (res->outcome == CLUSTER_APPEND_CONFLICT) {
		if (res->now.seq > cv->known_seq)
			cv->known_seq = res->now.seq;
		again = true;
	} else if (res->outcome == CLUSTER_APPEND_UNKNOWN) {
		/* Rule 1 again: resolved by the next call; the owed ids stay
		 * until it says committed. */
		struct ptx *pt = lg_xcalloc(1, sizeof(*pt));

		pt->w = *w;
		pt->v = *v;
		memset(v, 0, sizeof(*v));
		pt->st = PT_UNKNOWN;
		pt->notes = true;
		pt->n_ids = taken;
		LG_ASSERT(chain_push(cv, pt, 0));
	}
	update_pending(cv);
	cv_unlock(cv);
	return again;
}

/* DESIGN 11 rule 2: one NOTE VerdictUnanswered per owed id, in one txn of
 * the verdict kind (it changes no state). Its form, which
 * tests/cluster/history.py accepts: code "VerdictUnanswered", no object
 * kind or namespace, name the verdict id in decimal, message "verdict id
 * N was answered 503: its outcome was unknown within the webhook's time
 * (DESIGN 11 rule 2)". Its time is the log's, as a VERDICT's. */

static void append_notes(struct cluster_verdicts *cv, struct lane *ln,
			 int64_t deadline_ms, struct query_vstats *st)
{
	for (unsigned round = 0; round < ROUNDS_MAX && cv->n_owed > 0;
	     round++) {
		size_t n;
		uint64_t *ids;
		struct event *evs;
		char (*names)[24], (*msgs)[128];
		struct cluster_append_result res = {0};
		struct ledger_logval v = {0};
		struct lg_error err = {0};
		struct cluster_writer w;
		struct snap s;
		size_t taken = 0;
		bool again = false;

		/* Other calls may owe more meanwhile: a copy. */
		cv_lock(cv);
		n = cv->n_owed < NOTES_MAX ? cv->n_owed : NOTES_MAX;
		ids = lg_xcalloc(n ? n : 1, sizeof(*ids));
		memcpy(ids, cv->owed, n * sizeof(*ids));
		cv_unlock(cv);
		evs = lg_xcalloc(n ? n : 1, sizeof(*evs));
		names = lg_xcalloc(n ? n : 1, sizeof(*names));
		msgs = lg_xcalloc(n ? n : 1, sizeof(*msgs));

		if (snapshot(cv, ln, &s, deadline_ms, &err) == 0) {
			for (size_t i = 0; i < n; i++) {
				snprintf(names[i], sizeof(names[i]), "%llu",
					 (unsigned long long)ids[i]);
				snprintf(msgs[i], sizeof(msgs[i]),
					 "verdict id %llu was answered 503: "
					 "its outcome was unknown within the "
					 "webhook's time (DESIGN 11 rule 2)",
					 (unsigned long long)ids[i]);
				evs[i] = (struct event){
					.type = EV_NOTE,
					.time_ns = s.time_ns,
					.key = CLUSTER_NOTE_UNANSWERED,
					.kind = HK_NONE,
					.name = names[i],
					.text = msgs[i]};
			}
			if (ledger_logval_build(s.st, s.head, evs, n,
						VALUE_MAX_BYTES, &v, &taken,
						&err) == 0) {
				w = (struct cluster_writer){
					.prefix = cv->prefix,
					.etcd = ln->etcd,
					.seq = s.seq,
					.head_rev = s.head_rev};
				snprintf(w.epoch, sizeof(w.epoch), "%s",
					 cv->epoch);
				memcpy(w.head, s.head, LEDGER_HEAD_BYTES);
				cluster__append(
					&w,
					&(struct cluster_append_req){
						.v = &v,
						.verdicts = true,
						.deadline_ms = deadline_ms},
					&res, &err);
				cluster__append_result_release(&res);
				again = notes_outcome(cv, &w, &v, &res, taken,
						      st);
			} else {
				fprintf(stderr,
					"gpuledger member: NOTE "
					"VerdictUnanswered: %s\n",
					err.msg);
			}
			state_free(s.st);
		}
		ledger_logval_release(&v);
		free(ids);
		free(evs);
		free(names);
		free(msgs);
		if (!again)
			break;
	}
}

/* Waits (token held) until no txn is in flight, then resolves what is
 * unknown and appends the NOTEs owed. 0, or non-zero with msg: the
 * group's items are answered 503. */
static int settle(struct run *r, const char **msg)
{
	struct cluster_verdicts *cv = r->cv;
	bool unknown = false;

	cv_lock(cv);
	for (;;) {
		bool flight = false;

		unknown = false;
		for (size_t i = 0; i < cv->n_chain; i++) {
			flight |= cv->chain[i]->st == PT_FLIGHT;
			unknown |= cv->chain[i]->st == PT_UNKNOWN;
		}
		if (!flight)
			break;
		if (!cv_wait(cv, r->deadline_ms)) {
			cv_unlock(cv);
			*msg = "the verdict could not be recorded within "
			       "--verdict-timeout-ms (DESIGN 11 rule 2)";
			return LG_EIO;
		}
	}
	cv_unlock(cv);
	if (unknown && !resolve(cv, r->ln, r->deadline_ms)) {
		*msg = "the outcome of an earlier verdict txn is still unknown "
		       "(DESIGN 11 rule 1)";
		return LG_EIO;
	}
	cv_lock(cv);
	offered_settle(cv, r->ln->lg);
	cv_unlock(cv);
	if (cv->n_owed > 0)
		append_notes(cv, r->ln, r->deadline_ms, r->g.st);
	cv_lock(cv);
	unknown = cv->n_chain > 0;
	cv_unlock(cv);
	if (unknown) {
		*msg = "the outcome of an earlier txn is still unknown (DESIGN "
		       "11 rule 1)";
		return LG_EIO;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Where the next txn goes */

/* The tip: the state the next txn is built on and judged against. */
struct tip {
	const state_t *st; /* borrowed: cv->tip_st until the token is given */
	uint64_t seq, verdicts;
	uint8_t head[LEDGER_HEAD_BYTES];
	int64_t head_rev; /* on the carry: P/head's mod_revision at seq */
	uint64_t serial;  /* the txn it is the state after (0: the carry) */
	char *cmp;	  /* a copy of that txn's P/head value (NULL: the
			     carry's; the caller takes it over) */
	size_t cmp_len;
};

/* A failed txn of the run, to build again from. */
struct conflict {
	bool have;
	uint64_t seq; /* where it was built */
	uint8_t head[LEDGER_HEAD_BYTES];
	struct cluster_append_result res; /* owned */
};

/* Whether an item to judge has a key recorded beyond the ledger's uid
 * index (then rule 3 needs the ledger: the chain drains, a snapshot).
 * mu held. */
static bool carry_clash(const struct run *r)
{
	for (size_t i = 0; i < r->g.n; i++) {
		struct verdict_key mine;

		if (r->g.state[i] == QUERY_V_DONE)
			continue;
		verdict_request_key(r->g.it[i].vr, &mine);
		for (size_t k = 0; k < r->cv->n_keys; k++)
			if (verdict_key_equal(&mine, &r->cv->keys[k].key))
				return true;
	}
	return false;
}

/* The conflict a txn of this run met, settled with the token: re-numbered
 * on the carry when only VERDICTs intervened, else judged again. */
static void conflict_settle(struct run *r, struct conflict *cf)
{
	struct cluster_verdicts *cv = r->cv;
	bool at, renumbered = false;

	cv_lock(cv);
	at = cv->n_chain == 0 && cv->carry.st != NULL &&
	     cv->carry.seq == cf->seq &&
	     memcmp(cv->carry.head, cf->head, LEDGER_HEAD_BYTES) == 0;
	cv_unlock(cv);
	/* Only VERDICTs intervened (renumber reads each event between and
	 * refuses any other): the judgement stands, re-numbered on the carry
	 * (no other thread touches it while the chain is empty and the token
	 * held). */
	if (at && !cf->res.open)
		renumbered = renumber(r, &cv->carry, &cf->res) == 0;
	cv_lock(cv);
	if (renumbered) {
		r->g.st->renumbered++;
		cv->carry_serial = 0;
	} else {
		/* An observation (or a half-applied batch, rule 6)
		 * intervened: judge again once the applier has it. */
		r->g.st->rejudged++;
		r->judged = false;
		carry_drop(cv);
	}
	cv_unlock(cv);
	if (!renumbered && cf->res.open)
		cv_nap();
	cluster__append_result_release(&cf->res);
	cf->have = false;
}

/* With the token: waits until no doomed txn is left in the chain (and,
 * when the run must build on the log itself, until no txn is in flight),
 * settles what rule 1 and 2 left, builds again from a conflict, and says
 * where the next txn goes. 0; 1 when the run's deadline came first; else
 * an error with *msg (the items left are answered 503). */
static int tip_take(struct run *r, struct tip *t, struct conflict *cf,
		    const char **msg, struct lg_error *err)
{
	struct cluster_verdicts *cv = r->cv;
	struct lane *ln = r->ln;
	struct ledger_vindex vi;
	bool settle_due = false, fresh;
	uint64_t upto;
	int rc = ledger_refresh(ln->lg, err);

	if (rc == 0)
		rc = ledger_verdict_index(ln->lg, &vi, err);
	if (rc != 0) {
		*msg = err->msg;
		return rc;
	}
	upto = vi.upto < ledger_last_seq(ln->lg) ? vi.upto
						 : ledger_last_seq(ln->lg);
	memset(t, 0, sizeof(*t));
	cv_lock(cv);
	keys_trim(cv, upto);
again:
	for (;;) {
		bool doomed = false, flight = false, unknown = false;

		for (size_t i = 0; i < cv->n_chain; i++) {
			doomed |= cv->chain[i]->doomed;
			flight |= cv->chain[i]->st == PT_FLIGHT;
			unknown |= cv->chain[i]->st == PT_UNKNOWN;
		}
		settle_due = unknown || cv->n_owed > 0;
		if (!doomed && !(flight && (cf->have || settle_due ||
					    cv->keys_full || carry_clash(r))))
			break;
		if (!cv_wait(cv, r->deadline_ms)) {
			cv_unlock(cv);
			return 1;
		}
	}
	cv_unlock(cv);
	if (settle_due && (rc = settle(r, msg)) != 0)
		return rc;
	if (cf->have)
		conflict_settle(r, cf);
	cv_lock(cv);
	if (cv->n_chain > 0) {
		/* Chained on the last txn in flight: its state after, its
		 * head value's very bytes. */
		struct ptx *tail = cv->chain[cv->n_chain - 1];

		if (tail->st != PT_FLIGHT || tail->doomed)
			goto again; /* it failed, or its bound passed */
		t->st = tail->after;
		t->seq = tail->v.last_seq;
		memcpy(t->head, tail->v.head, LEDGER_HEAD_BYTES);
		t->verdicts = tail->verdicts_after;
		t->serial = tail->serial;
		t->cmp = lg_xstrdup(tail->hv);
		t->cmp_len = strlen(t->cmp);
		cv->tip_st = t->st;
		cv_unlock(cv);
		return 0;
	}
	/* The carry, when it is the newest log this member knows (at
	 * known_seq, ahead of the applier) and rule 3 can be checked without
	 * the ledger's index for the seqs the ledger lacks; else a snapshot
	 * of the ledger, once the applier has reached known_seq. */
	fresh = cv->carry.st == NULL || cv->carry.seq < cv->known_seq ||
		cv->carry.seq <= ledger_last_seq(ln->lg) ||
		cv->epoch[0] == '\0' || cv->keys_full || carry_clash(r);
	if (fresh)
		carry_drop(cv);
	cv_unlock(cv);
	if (fresh) {
		struct snap s;

		if ((rc = snapshot(cv, ln, &s, r->deadline_ms, err)) != 0) {
			*msg = err->msg;
			return rc;
		}
		cv_lock(cv);
		cv->carry = s;
		cv->carry_serial = 0;
		cv->gen++;
		cv->keys_full = false;
		keys_trim(cv, s.seq);
		cv_unlock(cv);
	}
	cv_lock(cv);
	t->st = cv->carry.st;
	t->seq = cv->carry.seq;
	memcpy(t->head, cv->carry.head, LEDGER_HEAD_BYTES);
	t->verdicts = cv->carry.verdicts;
	t->head_rev = cv->carry.head_rev;
	cv->tip_st = t->st;
	cv_unlock(cv);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Sending a txn of the chain */

enum sent {
	SENT_COMMITTED, /* its own answer, or a later txn's commit */
	SENT_EARLY,	/* compare failed before its predecessor committed */
	SENT_DOOMED,	/* chained on a txn that failed */
	SENT_CONFLICT,	/* another writer moved P/head */
	SENT_UNKNOWN,	/* unknown at the deadline (rule 1) */
	SENT_FAILED	/* definitely not applied */
};

/* What a send of pt came to (mu held). The order matters: committed
 * (ours, or proved by a later txn of the chain) first; then a txn chained
 * on one that failed, whose compare can never hold; then a failed compare
 * sent before its predecessor was known committed: it reached etcd first
 * (etcd orders nothing across connections), not applied yet. */
static enum sent classify(const struct ptx *pt,
			  const struct cluster_append_result *res,
			  bool after_pred)
{
	if (res->outcome == CLUSTER_APPEND_COMMITTED || pt->st == PT_COMMITTED)
		return SENT_COMMITTED;
	if (pt->doomed)
		return SENT_DOOMED;
	if (res->outcome == CLUSTER_APPEND_CONFLICT && !after_pred)
		return SENT_EARLY;
	if (res->outcome == CLUSTER_APPEND_CONFLICT)
		return SENT_CONFLICT;
	if (res->outcome == CLUSTER_APPEND_UNKNOWN)
		return SENT_UNKNOWN;
	return SENT_FAILED;
}

/* Rule 1: pt, whose outcome is unknown at the run's bound, stays in the
 * chain (the next call re-sends it identical); its items are answered 503
 * (mu held). */
static void keep_unknown(struct run *r, struct ptx *pt, size_t taken,
			 const char *why)
{
	pt->st = PT_UNKNOWN;
	pt->ids = lg_xcalloc(taken ? taken : 1, sizeof(*pt->ids));
	/* Owed a NOTE if it commits: not a door's (its door answers its
	 * client, as in committed()). */
	for (size_t k = 0; k < taken; k++) {
		own_set(r, r->g.of[k], r->g.it[r->g.of[k]].v.id);
		if (!r->g.it[r->g.of[k]].forwarded)
			pt->ids[pt->n_ids++] = r->g.it[r->g.of[k]].v.id;
	}
	fprintf(stderr,
		"gpuledger member: verdicts at seqs %llu..%llu: the outcome "
		"is unknown at the deadline, answered 503 (DESIGN 11 rule "
		"2)\n",
		(unsigned long long)pt->v.first_seq,
		(unsigned long long)pt->v.last_seq);
	r->g.st->unknown++;
	query_vgroup_fail_rest(&r->g, 503, why);
}

/* pt committed (mu held; released): answered only now, the txn and every
 * one before it quorum-durable. */
static void sent_committed(struct run *r, struct ptx *pt,
			   struct cluster_append_result *res, size_t taken,
			   bool early_seen)
{
	struct cluster_verdicts *cv = r->cv;
	bool piped;

	chain_committed(cv, pt,
			res->outcome == CLUSTER_APPEND_COMMITTED ? res->revision
								 : 0);
	piped = pt->piped;
	update_pending(cv);
	cv_unlock(cv);
	committed(r, &pt->v, taken);
	if (res->attempts > 1 || early_seen)
		fprintf(stderr,
			"gpuledger member: verdicts at seqs %llu..%llu "
			"committed after %u txns%s%s (DESIGN 11 rule 1)\n",
			(unsigned long long)pt->v.first_seq,
			(unsigned long long)pt->v.last_seq, res->attempts,
			res->found ? ", found ours in the failure branch" : "",
			early_seen ? ", sent again after its predecessor" : "");
	r->g.st->txns++;
	r->g.st->pipelined += piped;
	cv_lock(cv);
	ptx_free(cv, pt);
	cv_unlock(cv);
	cluster__append_result_release(res);
}

/* pt reached etcd before its predecessor committed (mu held; released):
 * waits for the predecessor. true: send pt again (or see it doomed or
 * committed); false: the run's bound passed, every item answered. */
static bool sent_early(struct run *r, struct ptx *pt, size_t taken,
		       bool ever_unknown)
{
	struct cluster_verdicts *cv = r->cv;

	while (!pt->doomed && pt->st != PT_COMMITTED &&
	       pred_state(cv, pt) == PRED_FLIGHT &&
	       cv_wait(cv, r->deadline_ms))
		;
	if (pt->doomed || pt->st == PT_COMMITTED) {
		cv_unlock(cv);
		return true;
	}
	if (etcd_mono_ms() >= r->deadline_ms) {
		if (ever_unknown) {
			keep_unknown(r, pt, taken,
				     "the outcome is unknown at the deadline");
		} else {
			/* Never applied: every send was refused. */
			chain_remove(cv, pt);
			ptx_free(cv, pt);
			query_vgroup_fail_rest(&r->g, 503,
					       "the verdict could not be "
					       "recorded within "
					       "--verdict-timeout-ms (DESIGN 11 "
					       "rule 2)");
		}
		update_pending(cv);
		cv_unlock(cv);
		return false;
	}
	if (pred_state(cv, pt) == PRED_UNKNOWN) {
		/* It may still commit: again, identical. */
		cv_unlock(cv);
		nap_ms(EARLY_RETRY_MS);
	} else {
		cv_unlock(cv);
	}
	return true;
}

/* Sends pt (its first taken items) until its outcome is known. true: the
 * run goes on (the rest of the group, or this part built again); false:
 * every item is answered. pt is freed or handed to the chain. */
static bool send(struct run *r, struct ptx *pt, size_t taken,
		 struct conflict *cf, unsigned *rounds)
{
	struct cluster_verdicts *cv = r->cv;
	bool ever_unknown = false, early_seen = false;

	for (;;) {
		struct cluster_append_result res = {0};
		struct lg_error err = {0};
		bool after_pred;
		enum sent o;

		cv_lock(cv);
		after_pred = pred_state(cv, pt) == PRED_COMMITTED;
		if (pt->st != PT_COMMITTED && !pt->doomed) {
			cv_unlock(cv);
			cluster__append(&pt->w,
					&(struct cluster_append_req){
						.v = &pt->v,
						.verdicts = true,
						.deadline_ms = r->deadline_ms,
						.head_put = pt->hv,
						.head_put_len = pt->hv_len},
					&res, &err);
			cv_lock(cv);
			ever_unknown |= res.indeterminate;
		} else {
			res.outcome = CLUSTER_APPEND_NOT_APPLIED;
		}
		o = classify(pt, &res, after_pred);
		switch (o) {
		case SENT_COMMITTED:
			sent_committed(r, pt, &res, taken, early_seen);
			return true;
		case SENT_DOOMED:
			chain_remove(cv, pt);
			ptx_free(cv, pt);
			cv_unlock(cv);
			cluster__append_result_release(&res);
			r->g.st->chain_failed++;
			break;
		case SENT_EARLY:
			if (!early_seen)
				r->g.st->early++;
			early_seen = true;
			cluster__append_result_release(&res);
			if (!sent_early(r, pt, taken, ever_unknown))
				return false;
			continue;
		case SENT_CONFLICT:
			if (res.now.seq > cv->known_seq)
				cv->known_seq = res.now.seq;
			chain_remove(cv, pt);
			cf->have = true;
			cf->seq = pt->w.seq;
			memcpy(cf->head, pt->w.head, LEDGER_HEAD_BYTES);
			cf->res = res; /* taken over */
			ptx_free(cv, pt);
			cv_unlock(cv);
			break;
		case SENT_UNKNOWN:
			keep_unknown(r, pt, taken, res.why);
			update_pending(cv);
			cv_unlock(cv);
			cluster__append_result_release(&res);
			return false;
		case SENT_FAILED:
			/* Definitely not applied (or deposed, which a
			 * verdict txn cannot be): at once. */
			chain_remove(cv, pt);
			ptx_free(cv, pt);
			cv_unlock(cv);
			query_vgroup_fail_rest(&r->g, 503,
					       res.why[0] ? res.why : err.msg);
			cluster__append_result_release(&res);
			return false;
		}
		/* Doomed or in conflict: built again, a bounded number of
		 * times. */
		if (++*rounds >= ROUNDS_MAX) {
			r->g.st->exhausted++;
			query_vgroup_fail_rest(&r->g, 503,
					       "the log moved under every attempt "
					       "to record the verdict");
			return false;
		}
		return true;
	}
}

/* The txn of v (taken items, built on t; v and after taken over):
 * chained on the tip, with P/head's value made once, so that the next txn
 * compares these very bytes. */
static struct ptx *ptx_make(struct run *r, struct tip *t,
			    struct ledger_logval *v, state_t *after,
			    size_t taken)
{
	struct cluster_verdicts *cv = r->cv;
	struct ptx *pt = lg_xcalloc(1, sizeof(*pt));
	struct cluster_head nh = {.seq = v->last_seq};

	pt->v = *v;
	pt->after = after;
	pt->verdicts_after = t->verdicts + taken;
	pt->cmp = t->cmp;
	pt->cmp_len = t->cmp_len;
	pt->w = (struct cluster_writer){.prefix = cv->prefix,
					.etcd = r->ln->etcd,
					.seq = t->seq,
					.head_rev = t->head_rev,
					.head_value = pt->cmp,
					.head_value_len = pt->cmp_len};
	snprintf(pt->w.epoch, sizeof(pt->w.epoch), "%s", cv->epoch);
	memcpy(pt->w.head, t->head, LEDGER_HEAD_BYTES);
	lg_hex(v->head, LEDGER_HEAD_BYTES, nh.chain_head);
	time_format_ns(v->time_ns, nh.time, sizeof(nh.time));
	pt->hv = cluster__head_json(&nh);
	pt->hv_len = strlen(pt->hv);
	return pt;
}

/* Rule 3 over items already judged: whether any of them is now found
 * recorded (then answered from its record). */
static bool repeats_found(struct query_vgroup *g, ledger_t *lg)
{
	size_t judged = query_vgroup_count(g, QUERY_V_JUDGED);

	query_vgroup_repeats(g, lg);
	return query_vgroup_count(g, QUERY_V_JUDGED) != judged;
}

/* Rule 3 and the judgement of one round, with the token, on tip t. */
static int judge_round(struct run *r, const struct tip *t,
		       struct lg_error *err)
{
	struct cluster_verdicts *cv = r->cv;
	ledger_t *lg = r->ln->lg;
	int rc;

	/* DESIGN 11 rule 3, every round, on the ledger as it is now (no key
	 * leaves the carry's keys while the token is held, and none of them
	 * is this run's: tip_take checked those). A txn built again on
	 * another tip (the one it was chained on failed) may now sit after a
	 * verdict of its key that another member recorded meanwhile; that
	 * the ledger's index holds by now. */
	if ((rc = ledger_refresh(lg, err)) != 0)
		return rc;
	if (r->judged && r->gen == cv->gen && repeats_found(&r->g, lg))
		r->judged = false; /* the rest judged again without them */
	if (!r->judged || r->gen != cv->gen) {
		/* Before judging, and after every conflict (renumber checks
		 * the verdicts between). */
		query_vgroup_unjudge(&r->g);
		query_vgroup_repeats(&r->g, lg);
		query_vgroup_judge(&r->g, t->st, t->seq, t->head);
		r->judged = true;
		r->gen = cv->gen;
	}
	return 0;
}

/* The judge-build-send loop of one batch. */
static void run_batch(struct run *r)
{
	struct cluster_verdicts *cv = r->cv;
	struct conflict cf = {0};
	unsigned rounds = 0;

	cv_lock(cv);
	r->ticket = ++cv->tickets;
	cv_unlock(cv);
	for (;;) {
		struct ledger_logval v = {0};
		struct lg_error err = {0};
		const char *msg = NULL;
		state_t *after = NULL;
		struct ptx *pt;
		struct tip t;
		size_t taken = 0;
		bool ok;
		int rc;

		/* DESIGN 11 rule 2: no txn of this run is in flight here,
		 * so an item past its bound is not recorded. */
		if (!expire(r))
			break;
		if (!token_take(r))
			continue;
		if ((rc = tip_take(r, &t, &cf, &msg, &err)) != 0) {
			token_give(cv);
			if (rc == 1)
				continue;
			query_vgroup_fail_rest(&r->g, 503,
					       msg && msg[0] ? msg : "error");
			break;
		}
		if (judge_round(r, &t, &err) != 0) {
			free(t.cmp);
			token_give(cv);
			query_vgroup_fail_rest(&r->g, 503, err.msg);
			break;
		}
		if (query_vgroup_count(&r->g, QUERY_V_JUDGED) == 0) {
			free(t.cmp);
			token_give(cv);
			break;
		}
		if (query_vgroup_build(&r->g, t.st, t.head, t.verdicts,
				       VALUE_MAX_BYTES, &after, &v, &taken,
				       &err) != 0) {
			/* A record that does not fit its state or a value:
			 * that item is refused, the rest judged again without
			 * it (with holds on, it may have made one they
			 * saw). */
			free(t.cmp);
			token_give(cv);
			query_vgroup_fail(&r->g,
					  r->g.of[taken < r->g.m ? taken : 0],
					  500, err.msg);
			r->judged = false;
			continue;
		}
		pt = ptx_make(r, &t, &v, after, taken);
		cv_lock(cv);
		ok = chain_push(cv, pt, t.serial);
		if (!ok)
			ptx_free(cv, pt);
		cv_unlock(cv);
		token_give(cv);
		if (!ok) {
			/* The txn it was built on failed meanwhile. */
			r->g.st->chain_failed++;
			if (++rounds >= ROUNDS_MAX) {
				r->g.st->exhausted++;
				query_vgroup_fail_rest(&r->g, 503,
					   "the log moved under every attempt "
					   "to record the verdict");
				break;
			}
			continue;
		}
		if (!send(r, pt, taken, &cf, &rounds))
			break;
	}
	if (cf.have)
		cluster__append_result_release(&cf.res);
}

/* ---------------------------------------------------------------------- */

/* A door's 503s for items it offered to the sequencer (mu held): their
 * keys, kept for the NOTE (cluster_verdicts.offered). */
static void offered_keep(struct cluster_verdicts *cv, const struct run *r)
{
	int64_t until = etcd_mono_ms() + OFFERED_KEEP_MS;

	for (size_t i = 0; r->offered != NULL && i < r->g.n; i++) {
		const struct query_vitem *it = &r->g.it[i];
		struct verdict_key key;
		struct offered *o;

		if (!r->offered[i] || it->status != 503)
			continue;
		verdict_request_key(it->vr, &key);
		if (key.kind == VERDICT_KEY_NONE)
			continue;
		if (cv->offered == NULL)
			cv->offered = lg_xcalloc(OFFERED_MAX,
						 sizeof(*cv->offered));
		if (cv->n_offered == OFFERED_MAX)
			memmove(cv->offered, cv->offered + 1,
				--cv->n_offered * sizeof(*cv->offered));
		o = &cv->offered[cv->n_offered++];
		o->key = key;
		o->own_id = r->own != NULL ? r->own[i] : 0;
		o->until_ms = until;
	}
}

void cluster__verdicts_run(struct cluster_verdicts *cv, struct query_vitem *it,
			   size_t n, struct query_vstats *st)
{
	struct cluster_applier_status as;
	struct run r = {.cv = cv};
	bool live;

	cv_lock(cv);
	for (size_t i = 0; i < cv->n_lanes && r.ln == NULL; i++)
		if (!cv->lanes[i].busy)
			r.ln = &cv->lanes[i];
	/* The server runs at most cluster__verdicts_inflight calls. */
	LG_ASSERT(r.ln != NULL);
	r.ln->busy = true;
	cv_unlock(cv);
	/* A call without items (NOTEs owed, a txn to resolve) has the
	 * timeout from now; one with items, their nearest bound. */
	query_vgroup_init(&r.g, it, n, st);
	r.t0_ms = etcd_mono_ms();
	r.deadline_ms = r.t0_ms + (int64_t)cv->timeout_ms;
	etcd_deadline(r.ln->etcd, r.deadline_ms);
	live = n == 0 || expire(&r);
	cluster__applier_status(cv->ap, &as);
	if (!live) {
		/* Every item waited past its bound: nothing to do. */
	} else if (as.refused[0] != '\0') {
		query_vgroup_fail_rest(&r.g, 503, as.refused);
	} else if (!as.reachable) {
		/* DESIGN 11: no etcd quorum, 503 at once. */
		query_vgroup_fail_rest(&r.g, 503,
			   "this member cannot reach an etcd quorum: it "
			   "records no verdict (DESIGN 11)");
	} else if (n == 0) {
		const char *msg;

		cv_lock(cv);
		r.ticket = ++cv->tickets;
		cv_unlock(cv);
		if (token_take(&r)) {
			(void)settle(&r, &msg);
			token_give(cv);
		}
	} else {
		door(&r);
		run_batch(&r);
	}
	etcd_deadline(r.ln->etcd, 0);
	cv_lock(cv);
	offered_keep(cv, &r);
	r.ln->busy = false;
	update_pending(cv);
	cv_unlock(cv);
	free(r.offered);
	free(r.own);
	query_vgroup_release(&r.g);
}
