/*
 * Leadership (DESIGN 11 rule 5): a member's lease, kept alive on its own
 * thread, the election on P/leader, and P/members/<name>.
 *
 * Two threads, each with its own etcd client (a client is used from one
 * thread only):
 *  - the keepalive thread renews the lease every TTL/3, writes
 *    P/members/<name>, and while this member leads reads P/leader after each
 *    renewal (still ours?). It only records what etcd answered;
 *  - the campaign thread does the rest: it grants a lease, campaigns,
 *    follows P/leader with a watch, steps down, and reports every
 *    transition. While it leads it makes no request at all: it waits on a
 *    condition variable until the instant holding would end, so that a
 *    renewal that never came is noticed on time even when etcd answers
 *    nothing (a blackholed link), and the keepalive thread or a caller wakes
 *    it for anything else.
 * Holding itself is computed from the clock whenever it is asked
 * (cluster_lease_holding), so it turns false on time whatever the threads
 * are doing.
 */
#include "cluster/lease_int.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + CLUSTER_NAME_MAX + 16)
/* A follower's watch is renewed (with a read of P/leader) every this many
 * TTLs, so that a watch stream that stalls without breaking (a member
 * that died behind a proxy, a half-open connection) delays a campaign by
 * no more than that. */
#define FOLLOW_WATCH_TTLS 2
/* Backoff after a request that failed in the campaign thread. */
#define BACKOFF_MS 200
/* Revocations tried at a step-down before the lease is left to expire. */
#define REVOKE_TRIES 3

/* ---------------------------------------------------------------------- */
/* The pure half (cluster_int.h) */

int64_t cluster__lease_deadline(const struct cluster_lease_clock *c)
{
	LG_ASSERT(c != NULL);
	/* DESIGN 11 rule 5: etcd keeps the lease at least ttl_ms from when
	 * the renewal it answered was sent; half of that is our margin. */
	return c->renewed_ms + c->ttl_ms / 2;
}

bool cluster__lease_holding(const struct cluster_lease_clock *c, int64_t now_ms)
{
	LG_ASSERT(c != NULL);
	return c->ttl_ms > 0 && now_ms < cluster__lease_deadline(c);
}

int64_t cluster__lease_next_keepalive(const struct cluster_lease_clock *c)
{
	LG_ASSERT(c != NULL);
	if (c->failed)
		return c->tried_ms + CLUSTER_RETRY_MS;
	return c->renewed_ms + c->ttl_ms / 3;
}

void cluster__lease_timeouts(int64_t ttl_ms, uint64_t etcd_ms,
			     uint64_t *keepalive_ms, uint64_t *request_ms)
{
	uint64_t cap = etcd_ms ? etcd_ms : ETCD_TIMEOUT_DEFAULT;
	uint64_t ka = ttl_ms / 8 > 100 ? (uint64_t)ttl_ms / 8 : 100;
	uint64_t rq = ttl_ms / 3 > 250 ? (uint64_t)ttl_ms / 3 : 250;

	LG_ASSERT(keepalive_ms != NULL && request_ms != NULL);
	*keepalive_ms = ka < cap ? ka : cap;
	*request_ms = rq < cap ? rq : cap;
}

int64_t cluster__members_next(const struct cluster_members_clock *m,
			      uint64_t applied, int64_t interval_ms)
{
	LG_ASSERT(m != NULL);
	if (m->tried_ms != 0)
		return m->tried_ms + CLUSTER_RETRY_MS;
	if (!m->registered)
		return INT64_MIN;
	if (applied != m->seq)
		return m->put_ms + interval_ms;
	return INT64_MAX;
}

enum cluster_campaign cluster__campaign_resolve(const struct etcd_kv *leader,
						int64_t lease, int64_t *fence)
{
	LG_ASSERT(fence != NULL);
	if (leader == NULL)
		return CLUSTER_CAMPAIGN_VACANT;
	/* Ours by lease id, never by name: a name survives its process. */
	if (lease != 0 && leader->lease == lease) {
		*fence = leader->create_revision;
		return CLUSTER_CAMPAIGN_WON;
	}
	return CLUSTER_CAMPAIGN_LOST;
}

enum cluster_campaign cluster__campaign_decide(int rc, enum etcd_outcome oc,
					       const struct etcd_kv *leader,
					       int64_t lease, int64_t revision,
					       int64_t *fence)
{
	LG_ASSERT(fence != NULL);
	switch (oc) {
	case ETCD_COMMITTED:
		if (rc != 0)
			return CLUSTER_CAMPAIGN_UNKNOWN; /* an answer we cannot
							    read */
		/* The put created P/leader in this txn: its create_revision
		 * is the txn's revision. */
		*fence = revision;
		return CLUSTER_CAMPAIGN_WON;
	case ETCD_COMPARE_FAILED:
		if (rc != 0)
			return CLUSTER_CAMPAIGN_UNKNOWN;
		/* Rule 1: a failed compare may meet our own earlier txn. */
		return cluster__campaign_resolve(leader, lease, fence);
	case ETCD_INDETERMINATE:
		return CLUSTER_CAMPAIGN_UNKNOWN;
	case ETCD_NOT_APPLIED:
		break;
	}
	return rc == LG_ENOENT ? CLUSTER_CAMPAIGN_LEASE_GONE
			       : CLUSTER_CAMPAIGN_RETRY;
}

enum cluster_watched cluster__follower_watched(const struct etcd_event *ev,
					       int64_t known)
{
	LG_ASSERT(ev != NULL);
	if (ev->type == ETCD_EV_DELETE)
		return CLUSTER_WATCHED_VACANT_NOW;
	return ev->kv.create_revision != known ? CLUSTER_WATCHED_NEW_LEADER
					       : CLUSTER_WATCHED_SAME;
}

bool cluster__leader_ours(const struct etcd_kv *leader, int64_t fence,
			  int64_t lease)
{
	return leader != NULL && lease != 0 && leader->lease == lease &&
	       leader->create_revision == fence;
}

char *cluster__leader_value(const char *name, const char *peer_url)
{
	json_t *o = json_object();
	char *s;

	LG_ASSERT(name != NULL);
	json_object_set_new(o, "name", json_string(name));
	/* DESIGN 11: the sequencer's URL, where doors forward verdicts. */
	if (peer_url != NULL && peer_url[0] != '\0')
		json_object_set_new(o, "peer", json_string(peer_url));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

void cluster__leader_name(const uint8_t *v, size_t n, char *buf, size_t cap)
{
	cluster__leader_parse(v, n, buf, cap, NULL, 0);
}

void cluster__leader_parse(const uint8_t *v, size_t n, char *name,
			   size_t name_cap, char *url, size_t url_cap)
{
	json_t *o = json_loadb((const char *)v, n, 0, NULL);
	const char *nm = json_string_value(json_object_get(o, "name"));
	const char *u = json_string_value(json_object_get(o, "peer"));

	LG_ASSERT((v != NULL || n == 0) && name != NULL && name_cap > 0 &&
		  (url != NULL || url_cap == 0));
	snprintf(name, name_cap, "%s", nm ? nm : "?");
	/* A URL that does not fit is no URL (forwards then fall back). */
	if (url != NULL && url_cap > 0)
		snprintf(url, url_cap, "%s",
			 u != NULL && strlen(u) < url_cap ? u : "");
	json_decref(o);
}

char *cluster__member_value(uint64_t applied)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "applied", json_integer((json_int_t)applied));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

int cluster_name_check(const char *name, struct lg_error *err)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0)
		return lg_error_set(err, LG_EINVAL, "a member needs a --name");
	if (n > CLUSTER_NAME_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "the name is longer than %d bytes",
				    CLUSTER_NAME_MAX);
	for (size_t i = 0; i < n; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' ||
		      ch == '-'))
			return lg_error_set(err, LG_EINVAL,
					    "the name \"%s\" has a character "
					    "other than A-Z a-z 0-9 . _ -",
					    name);
	}
	return 0;
}

static const char *const event_names[] = {
	[CLUSTER_LEASE_ELECTED] = "elected",
	[CLUSTER_LEASE_FOLLOWER] = "follower",
	[CLUSTER_LEASE_RENEWAL_LATE] = "renewal-late",
	[CLUSTER_LEASE_DEPOSED] = "deposed",
	[CLUSTER_LEASE_LOST] = "lost",
	[CLUSTER_LEASE_RESIGNED] = "resigned",
};

const char *cluster_lease_event_name(enum cluster_lease_event ev)
{
	return (size_t)ev < sizeof(event_names) / sizeof(event_names[0])
		       ? event_names[ev]
		       : "?";
}

/* ---------------------------------------------------------------------- */
/* The handle */

enum role {
	ROLE_NONE,	/* no lease */
	ROLE_CANDIDATE, /* a lease, P/leader not known to be anyone's */
	ROLE_LEADER,
	ROLE_FOLLOWER,
	ROLE_DONE
};

struct cluster_lease {
	/* Copies of the options. */
	char *endpoints, *cacert, *cert, *key;
	char name[CLUSTER_NAME_MAX + 1];
	char k_leader[KEY_MAX], k_member[KEY_MAX];
	size_t k_leader_len, k_member_len;
	char *leader_value;
	char peer_url[CLUSTER_URL_MAX];
	int64_t ttl_s, ttl_ms;
	cluster_lease_fn *on_transition;
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
	etcd_t *ec, *ek; /* the campaign thread's, the keepalive thread's */

	pthread_mutex_t mu;
	pthread_cond_t cond; /* broadcast on every change under mu */
	pthread_mutex_t warn_mu;
	int64_t warned_ms; /* under warn_mu */
	pthread_t tc, tk;
	bool tc_started, tk_started;
	/* Ends the campaign thread's watch early (libcurl's progress
	 * callback reads it); set under mu, cleared by that thread. */
	volatile sig_atomic_t interrupt;

	/* Under mu. */
	int64_t lease; /* 0: none */
	uint64_t gen;  /* one more for every lease granted */
	struct cluster_lease_clock clk;
	bool gone; /* etcd said the lease of gen is gone */
	bool leader;
	int64_t fence;
	bool stop, resign, deposed;
	const char *deposed_why;
	uint64_t applied;
	struct cluster_members_clock mem;
	/* The holder of P/leader as last seen: the sequencer (DESIGN 11). */
	enum cluster_sequencer seq_is;
	char seq_name[CLUSTER_NAME_MAX + 8];
	char seq_url[CLUSTER_URL_MAX];

	/* The campaign thread's own. */
	enum role role;
	int64_t known;	    /* the leader's create_revision last reported */
	int64_t holdoff_ms; /* no campaign before this */
	bool observer;	    /* never campaigns (opts) */
};

static void lock(struct cluster_lease *l)
{
	pthread_mutex_lock(&l->mu);
}

static void unlock(struct cluster_lease *l)
{
	pthread_mutex_unlock(&l->mu);
}

/* With mu held: waits for a broadcast or until at_ms (monotonic). */
static void wait_until(struct cluster_lease *l, int64_t at_ms)
{
	struct timespec ts;

	if (at_ms == INT64_MAX) {
		pthread_cond_wait(&l->cond, &l->mu);
		return;
	}
	ts.tv_sec = at_ms / 1000;
	ts.tv_nsec = (at_ms % 1000) * 1000000L;
	pthread_cond_timedwait(&l->cond, &l->mu, &ts);
}

/* Sleeps ms, or less when something changes (a stop, a step-down). */
static void nap_unless_woken(struct cluster_lease *l, int64_t ms)
{
	lock(l);
	if (!l->stop && !l->gone && !l->deposed && !l->resign)
		wait_until(l, etcd_mono_ms() + ms);
	unlock(l);
}

/* Wakes the campaign thread (mu held). */
static void poke(struct cluster_lease *l)
{
	l->interrupt = 1;
	pthread_cond_broadcast(&l->cond);
}

static void warnf(struct cluster_lease *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void warnf(struct cluster_lease *l, const char *fmt, ...)
{
	char msg[LG_ERRMSG_MAX + 128];
	int64_t now = etcd_mono_ms();
	va_list ap;

	if (l->warn == NULL)
		return;
	pthread_mutex_lock(&l->warn_mu);
	if (l->warned_ms == 0 || now - l->warned_ms >= 1000) {
		l->warned_ms = now;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		l->warn(l->ctx, msg);
	}
	pthread_mutex_unlock(&l->warn_mu);
}

static void emit_transition(struct cluster_lease *l,
			    enum cluster_lease_event ev, int64_t fence,
			    int64_t lease, const char *leader, const char *why)
{
	struct cluster_lease_transition t = {.event = ev,
					     .create_revision = fence,
					     .lease = lease,
					     .leader = leader,
					     .why = why};

	if (l->on_transition != NULL)
		l->on_transition(l->ctx, &t);
}

static bool stopping(struct cluster_lease *l)
{
	bool s;

	lock(l);
	s = l->stop;
	unlock(l);
	return s;
}

/* ---------------------------------------------------------------------- */
/* The keepalive thread */

static void member_put(struct cluster_lease *l, int64_t lease, uint64_t gen,
		       uint64_t seq)
{
	struct lg_error err = {0};
	char *v = cluster__member_value(seq);
	int64_t t0 = etcd_mono_ms();
	int rc;

	/* DESIGN 11 rule 11: bound to the lease, so that a dead member's
	 * key goes with it and cannot pin compaction. */
	rc = etcd_put(l->ek, l->k_member, l->k_member_len, v, strlen(v), lease,
		      NULL, NULL, &err);
	free(v);
	lock(l);
	if (gen == l->gen) {
		if (rc == 0) {
			l->mem = (struct cluster_members_clock){
				.registered = true, .seq = seq, .put_ms = t0};
		} else if (rc == LG_ENOENT) {
			l->gone = true;
			poke(l);
		} else {
			l->mem.tried_ms = t0;
		}
	}
	unlock(l);
	if (rc != 0 && rc != LG_ENOENT)
		warnf(l, "%.*s: %s", (int)l->k_member_len, l->k_member,
		      err.msg);
}

/* While leading: is P/leader still ours (deleted by hand, or another's)?
 * A read that fails proves nothing. */
static void leader_check(struct cluster_lease *l, int64_t lease, uint64_t gen,
			 int64_t fence)
{
	struct etcd_range r = {.key = l->k_leader, .key_len = l->k_leader_len};
	struct etcd_range_result res;
	struct lg_error err = {0};
	int rc;

	rc = etcd_range(l->ek, &r, &res, NULL, &err);
	if (rc == 0 && !cluster__leader_ours(res.n_kvs ? &res.kvs[0] : NULL,
					     fence, lease)) {
		lock(l);
		if (gen == l->gen && l->leader && l->fence == fence) {
			/* DESIGN 11 rule 5: not ours any more: step down. */
			l->deposed = true;
			l->deposed_why = res.n_kvs ? "P/leader is another's"
						   : "P/leader is gone";
			poke(l);
		}
		unlock(l);
	}
	etcd_range_result_release(&res);
}

static void keepalive_once(struct cluster_lease *l, int64_t lease, uint64_t gen)
{
	struct lg_error err = {0};
	int64_t t0 = etcd_mono_ms(), ttl_s = 0, fence = 0;
	bool leading = false;
	int rc;

	rc = etcd_lease_keepalive(l->ek, lease, &ttl_s, NULL, &err);
	lock(l);
	if (gen == l->gen) {
		if (rc == 0) {
			l->clk.renewed_ms = t0;
			l->clk.failed = false;
			if (ttl_s * 1000 < l->clk.ttl_ms)
				l->clk.ttl_ms = ttl_s * 1000;
			leading = l->leader;
			fence = l->fence;
		} else if (rc == LG_ENOENT) {
			/* Lost for good: the campaign thread grants another. */
			l->gone = true;
			poke(l);
		} else {
			l->clk.failed = true;
			l->clk.tried_ms = t0;
		}
		pthread_cond_broadcast(&l->cond);
	}
	unlock(l);
	if (rc != 0 && rc != LG_ENOENT)
		warnf(l, "lease keepalive: %s", err.msg);
	if (leading)
		leader_check(l, lease, gen, fence);
}

static void *keepalive_main(void *arg)
{
	struct cluster_lease *l = arg;

	lock(l);
	while (!l->stop) {
		int64_t now = etcd_mono_ms(), ka_at, mem_at, lease;
		uint64_t gen, seq;

		if (l->lease == 0 || l->gone) {
			wait_until(l, INT64_MAX);
			continue;
		}
		/* DESIGN 11 rule 5: keepalive every TTL/3, on this thread. */
		ka_at = cluster__lease_next_keepalive(&l->clk);
		mem_at = cluster__members_next(&l->mem, l->applied,
					       CLUSTER_MEMBERS_INTERVAL_MS);
		if (now < ka_at && now < mem_at) {
			wait_until(l, ka_at < mem_at ? ka_at : mem_at);
			continue;
		}
		lease = l->lease;
		gen = l->gen;
		seq = l->applied;
		unlock(l);
		if (mem_at <= now)
			member_put(l, lease, gen, seq);
		if (ka_at <= now)
			keepalive_once(l, lease, gen);
		lock(l);
	}
	unlock(l);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The campaign thread */

static int grant(struct cluster_lease *l)
{
	struct lg_error err = {0};
	int64_t id = 0, granted = 0, t0 = etcd_mono_ms();
	int rc;

	rc = etcd_lease_grant(l->ec, l->ttl_s, &id, &granted, NULL, &err);
	if (rc != 0) {
		/* A grant whose answer was lost leaves a lease nobody uses:
		 * it expires on its own. */
		warnf(l, "lease grant: %s", err.msg);
		return rc;
	}
	lock(l);
	l->lease = id;
	l->gen++;
	l->gone = false;
	l->deposed = false;
	l->clk = (struct cluster_lease_clock){
		.ttl_ms = granted > 0 && granted * 1000 < l->ttl_ms
				  ? granted * 1000
				  : l->ttl_ms,
		.renewed_ms = t0};
	l->mem = (struct cluster_members_clock){0};
	pthread_cond_broadcast(&l->cond);
	unlock(l);
	return 0;
}

/* Revokes lease, trying a few times; LG_ENOENT when etcd no longer knew
 * it. */
static int revoke(struct cluster_lease *l, int64_t lease)
{
	struct lg_error err = {0};
	int rc = LG_EIO;

	for (int i = 0; i < REVOKE_TRIES; i++) {
		rc = etcd_lease_revoke(l->ec, lease, NULL, &err);
		if (rc == 0 || rc == LG_ENOENT)
			return rc;
	}
	warnf(l, "lease revoke: %s (it expires within its TTL)", err.msg);
	return rc;
}

/* Steps down for ev (DESIGN 11 rule 5: every step-down revokes the
 * lease, which takes P/leader and P/members/<name> with it). */
static void step_down(struct cluster_lease *l, enum cluster_lease_event ev,
		      const char *why)
{
	int64_t fence, lease;
	bool gone;
	int rc = LG_ENOENT;

	lock(l);
	fence = l->leader ? l->fence : 0;
	lease = l->lease;
	gone = l->gone;
	/* Holding is false from here on. */
	l->leader = false;
	l->seq_is = CLUSTER_SEQ_UNKNOWN;
	unlock(l);
	if (ev != CLUSTER_LEASE_RESIGNED)
		emit_transition(l, ev, fence, lease, NULL, why);
	if (lease != 0 && !gone)
		rc = revoke(l, lease);
	lock(l);
	l->lease = 0;
	l->gone = false;
	l->deposed = false;
	l->resign = false;
	unlock(l);
	if (ev == CLUSTER_LEASE_RESIGNED)
		emit_transition(
			l, ev, fence, lease, NULL,
			rc == 0 || rc == LG_ENOENT
				? "the lease is revoked"
				: "the revocation was not confirmed: the lease "
				  "expires within its TTL");
	else if (ev != CLUSTER_LEASE_LOST && lease != 0 && rc == LG_ENOENT)
		emit_transition(l, CLUSTER_LEASE_LOST, fence, lease, NULL,
				"the lease had expired in etcd");
	if (ev == CLUSTER_LEASE_DEPOSED || ev == CLUSTER_LEASE_RESIGNED)
		l->holdoff_ms = etcd_mono_ms() + l->ttl_ms;
	l->known = 0;
	l->role = ROLE_NONE;
}

static void won(struct cluster_lease *l, int64_t fence)
{
	int64_t lease;

	lock(l);
	l->leader = true;
	l->fence = fence;
	l->deposed = false;
	l->seq_is = CLUSTER_SEQ_SELF;
	snprintf(l->seq_name, sizeof(l->seq_name), "%s", l->name);
	snprintf(l->seq_url, sizeof(l->seq_url), "%s", l->peer_url);
	lease = l->lease;
	unlock(l);
	l->known = fence;
	l->role = ROLE_LEADER;
	emit_transition(l, CLUSTER_LEASE_ELECTED, fence, lease, NULL, NULL);
}

/* Reads P/leader until etcd answers (or a stop); *leader into out. */
static int read_leader(struct cluster_lease *l, struct etcd_range_result *out)
{
	struct etcd_range r = {.key = l->k_leader, .key_len = l->k_leader_len};
	struct lg_error err = {0};
	int rc;

	rc = etcd_range(l->ec, &r, out, NULL, &err);
	if (rc != 0)
		warnf(l, "%.*s: %s", (int)l->k_leader_len, l->k_leader,
		      err.msg);
	return rc;
}

static void campaign(struct cluster_lease *l)
{
	struct etcd_cmp cmp = {.key = l->k_leader,
			       .key_len = l->k_leader_len,
			       .target = ETCD_CMP_CREATE,
			       .result = ETCD_EQUAL,
			       .number = 0};
	struct etcd_op put = {
		.kind = ETCD_OP_PUT,
		.range = {.key = l->k_leader, .key_len = l->k_leader_len},
		.value = l->leader_value,
		.value_len = strlen(l->leader_value)};
	struct etcd_op get = {
		.kind = ETCD_OP_RANGE,
		.range = {.key = l->k_leader, .key_len = l->k_leader_len}};
	struct etcd_txn t = {.cmp = &cmp,
			     .n_cmp = 1,
			     .success = &put,
			     .n_success = 1,
			     .failure = &get,
			     .n_failure = 1};
	struct etcd_txn_result r;
	struct lg_error err = {0};
	enum cluster_campaign d;
	int64_t fence = 0;
	int rc;

	lock(l);
	put.lease = l->lease;
	unlock(l);
	/* DESIGN 11 rule 5: win = create_revision(P/leader) == 0; the fence
	 * is that create_revision. */
	rc = etcd_txn(l->ec, &t, &r, &err);
	d = cluster__campaign_decide(rc, r.outcome,
				     rc == 0 && r.n_ops == 1 &&
						     r.ops[0].range.n_kvs == 1
					     ? &r.ops[0].range.kvs[0]
					     : NULL,
				     put.lease, r.header.revision, &fence);
	etcd_txn_result_release(&r);
	/* DESIGN 11 rule 1: an answer that did not come is learnt by
	 * reading P/leader (bound to our lease?) before deciding. */
	while (d == CLUSTER_CAMPAIGN_UNKNOWN && !stopping(l)) {
		struct etcd_range_result rr;

		if (read_leader(l, &rr) == 0)
			d = cluster__campaign_resolve(rr.n_kvs ? &rr.kvs[0]
							       : NULL,
						      put.lease, &fence);
		else
			nap_unless_woken(l, BACKOFF_MS);
		etcd_range_result_release(&rr);
	}
	switch (d) {
	case CLUSTER_CAMPAIGN_WON:
		won(l, fence);
		break;
	case CLUSTER_CAMPAIGN_LOST:
		l->role = ROLE_FOLLOWER;
		break;
	case CLUSTER_CAMPAIGN_LEASE_GONE:
		lock(l);
		l->gone = true;
		unlock(l);
		break;
	case CLUSTER_CAMPAIGN_VACANT:
	case CLUSTER_CAMPAIGN_RETRY:
	case CLUSTER_CAMPAIGN_UNKNOWN:
		if (rc != 0 && d == CLUSTER_CAMPAIGN_RETRY)
			warnf(l, "campaign: %s", err.msg);
		nap_unless_woken(l, BACKOFF_MS);
		break;
	}
}

/* Leading: no request at all, only a wait until holding would end or
 * something changes. Returns false to go on leading, true after a
 * step-down. */
static bool lead(struct cluster_lease *l)
{
	enum cluster_lease_event ev;
	const char *why;

	lock(l);
	for (;;) {
		int64_t now = etcd_mono_ms();

		if (l->stop || l->resign) {
			ev = CLUSTER_LEASE_RESIGNED;
			why = NULL;
		} else if (l->deposed) {
			ev = CLUSTER_LEASE_DEPOSED;
			why = l->deposed_why;
		} else if (!cluster__lease_holding(&l->clk, now)) {
			/* DESIGN 11 rule 5: no renewal within TTL/2. */
			ev = CLUSTER_LEASE_RENEWAL_LATE;
			why = "no renewal within half the TTL";
		} else if (l->gone) {
			ev = CLUSTER_LEASE_LOST;
			why = "etcd says the lease is gone";
		} else {
			wait_until(l, cluster__lease_deadline(&l->clk));
			continue;
		}
		break;
	}
	unlock(l);
	if (ev == CLUSTER_LEASE_RESIGNED && stopping(l))
		return true; /* the thread's exit steps down */
	step_down(l, ev, why);
	return true;
}

struct follow_ctx {
	struct cluster_lease *l;
	bool vacant;
};

static void report_leader(struct cluster_lease *l, const struct etcd_kv *kv)
{
	char name[CLUSTER_NAME_MAX + 8];

	if (kv->create_revision == l->known)
		return;
	l->known = kv->create_revision;
	cluster__leader_name(kv->value, kv->value_len, name, sizeof(name));
	lock(l);
	cluster__leader_parse(kv->value, kv->value_len, l->seq_name,
			      sizeof(l->seq_name), l->seq_url,
			      sizeof(l->seq_url));
	/* Our own name under a lease this process does not hold: a term
	 * that ended, or the lease of this member's previous process, alive
	 * until its TTL. No sequencer answers at that URL: judge here. */
	l->seq_is = strcmp(l->seq_name, l->name) == 0 ? CLUSTER_SEQ_UNKNOWN
						      : CLUSTER_SEQ_OTHER;
	unlock(l);
	emit_transition(l, CLUSTER_LEASE_FOLLOWER, kv->create_revision,
			l->lease, name, NULL);
}

/* P/leader is vacant: no sequencer until the next holder is seen. */
static void seq_vacant(struct cluster_lease *l)
{
	lock(l);
	l->seq_is = CLUSTER_SEQ_UNKNOWN;
	unlock(l);
}

static int follow_event(void *ctx, const struct etcd_watch_msg *m)
{
	struct follow_ctx *f = ctx;

	for (size_t i = 0; i < m->n_events; i++) {
		switch (cluster__follower_watched(&m->events[i], f->l->known)) {
		case CLUSTER_WATCHED_VACANT_NOW:
			seq_vacant(f->l);
			f->vacant = true;
			return 1;
		case CLUSTER_WATCHED_NEW_LEADER:
			report_leader(f->l, &m->events[i].kv);
			break;
		case CLUSTER_WATCHED_SAME:
			break;
		}
	}
	return 0;
}

/* Following (or waiting out a hold-off): read P/leader, report its
 * holder, watch it until it is deleted. */
static void follow_leader(struct cluster_lease *l)
{
	struct etcd_range_result rr;
	struct follow_ctx f = {.l = l};
	struct lg_error err = {0};
	struct etcd_watch w = {
		.range = {.key = l->k_leader, .key_len = l->k_leader_len},
		.timeout_ms = (uint64_t)(FOLLOW_WATCH_TTLS * l->ttl_ms),
		.stop = &l->interrupt};
	int64_t fence = 0, t0;
	int rc;

	lock(l);
	l->interrupt = 0;
	if (l->stop || l->gone) {
		unlock(l);
		return;
	}
	unlock(l);
	if (read_leader(l, &rr) != 0) {
		etcd_range_result_release(&rr);
		nap_unless_woken(l, BACKOFF_MS);
		return;
	}
	switch (cluster__campaign_resolve(rr.n_kvs ? &rr.kvs[0] : NULL,
					  l->lease, &fence)) {
	case CLUSTER_CAMPAIGN_VACANT:
		seq_vacant(l);
		f.vacant = true;
		break;
	case CLUSTER_CAMPAIGN_WON:
		/* Bound to our lease: a campaign we took for lost was ours. */
		etcd_range_result_release(&rr);
		won(l, fence);
		return;
	default:
		report_leader(l, &rr.kvs[0]);
		w.start_revision = rr.header.revision + 1;
		break;
	}
	etcd_range_result_release(&rr);
	if (!f.vacant) {
		t0 = etcd_mono_ms();
		rc = etcd_watch(l->ec, &w, follow_event, &f, &err);
		if (rc != 0 && rc != 1 && etcd_mono_ms() - t0 < BACKOFF_MS)
			nap_unless_woken(l, BACKOFF_MS);
	}
	if (!f.vacant)
		return;
	/* Vacant: campaign, once a hold-off (after a deposition or a
	 * resignation, so that another member wins) has passed. */
	if (etcd_mono_ms() < l->holdoff_ms)
		nap_unless_woken(l, l->holdoff_ms - etcd_mono_ms());
	if (etcd_mono_ms() >= l->holdoff_ms)
		l->role = ROLE_CANDIDATE;
}

static void *campaign_main(void *arg)
{
	struct cluster_lease *l = arg;

	while (!stopping(l)) {
		bool gone;

		lock(l);
		gone = l->gone && l->lease != 0;
		unlock(l);
		if (gone) {
			/* Lost for good: a new lease, a new campaign. */
			step_down(l, CLUSTER_LEASE_LOST,
				  "etcd says the lease is gone");
			continue;
		}
		switch (l->role) {
		case ROLE_NONE:
			if (grant(l) == 0)
				l->role = ROLE_CANDIDATE;
			else
				nap_unless_woken(l, BACKOFF_MS);
			break;
		case ROLE_CANDIDATE:
			if (l->observer)
				nap_unless_woken(
					l, l->ttl_ms); /* P/members/ alone */
			else if (etcd_mono_ms() < l->holdoff_ms)
				l->role = ROLE_FOLLOWER;
			else
				campaign(l);
			break;
		case ROLE_LEADER:
			lead(l);
			break;
		case ROLE_FOLLOWER:
			follow_leader(l);
			break;
		case ROLE_DONE:
			break;
		}
	}
	/* DESIGN 11 rule 5: the lease is revoked at the end (SIGTERM). */
	step_down(l, CLUSTER_LEASE_RESIGNED, NULL);
	l->role = ROLE_DONE;
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The API (cluster.h) */

static char *dup_or_null(const char *s)
{
	return s ? lg_xstrdup(s) : NULL;
}

static void lease_free(struct cluster_lease *l)
{
	etcd_close(l->ec);
	etcd_close(l->ek);
	free(l->endpoints);
	free(l->cacert);
	free(l->cert);
	free(l->key);
	free(l->leader_value);
	pthread_mutex_destroy(&l->mu);
	pthread_mutex_destroy(&l->warn_mu);
	pthread_cond_destroy(&l->cond);
	free(l);
}

static int lease_init(struct cluster_lease *l,
		      const struct cluster_lease_opts *o, struct lg_error *err)
{
	struct etcd_opts eo;
	uint64_t ka_ms, rq_ms;
	char tail[CLUSTER_NAME_MAX + 16];
	int rc;

	if ((rc = cluster_prefix_check(o->prefix, err)) != 0 ||
	    (rc = cluster_name_check(o->name, err)) != 0)
		return rc;
	if (o->ttl_s > CLUSTER_LEASE_TTL_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "--lease-ttl is at most %d seconds",
				    CLUSTER_LEASE_TTL_MAX);
	l->ttl_s = o->ttl_s ? (int64_t)o->ttl_s : CLUSTER_LEASE_TTL_DEFAULT;
	l->ttl_ms = l->ttl_s * 1000;
	snprintf(l->name, sizeof(l->name), "%s", o->name);
	snprintf(tail, sizeof(tail), "members/%s", o->name);
	l->k_leader_len = cluster__key(l->k_leader, sizeof(l->k_leader),
				       o->prefix, "leader");
	l->k_member_len =
		cluster__key(l->k_member, sizeof(l->k_member), o->prefix, tail);
	if (o->peer_url != NULL && strlen(o->peer_url) >= CLUSTER_URL_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "--advertise-url: at most %d bytes",
				    CLUSTER_URL_MAX - 1);
	snprintf(l->peer_url, sizeof(l->peer_url), "%s",
		 o->peer_url ? o->peer_url : "");
	l->leader_value = cluster__leader_value(o->name, l->peer_url);
	l->applied = o->applied;
	l->observer = o->observer;
	l->on_transition = o->on_transition;
	l->warn = o->warn;
	l->ctx = o->ctx;
	l->endpoints = dup_or_null(o->etcd.endpoints);
	l->cacert = dup_or_null(o->etcd.cacert);
	l->cert = dup_or_null(o->etcd.cert);
	l->key = dup_or_null(o->etcd.key);
	/* Each thread's client times out soon enough for its job. */
	cluster__lease_timeouts(l->ttl_ms, o->etcd.timeout_ms, &ka_ms, &rq_ms);
	eo = (struct etcd_opts){.endpoints = l->endpoints,
				.cacert = l->cacert,
				.cert = l->cert,
				.key = l->key,
				.timeout_ms = rq_ms};
	if ((rc = etcd_open(&l->ec, &eo, err)) != 0)
		return rc;
	eo.timeout_ms = ka_ms;
	return etcd_open(&l->ek, &eo, err);
}

int cluster_lease_open(cluster_lease_t **out,
		       const struct cluster_lease_opts *o, struct lg_error *err)
{
	struct cluster_lease *l = lg_xcalloc(1, sizeof(*l));
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	LG_ASSERT(out != NULL && o != NULL);
	*out = NULL;
	pthread_mutex_init(&l->mu, NULL);
	pthread_mutex_init(&l->warn_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = lease_init(l, o, err);
	if (rc != 0) {
		lease_free(l);
		return rc;
	}
	/* Signals go to the caller's threads, not to these. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	l->tk_started = pthread_create(&l->tk, NULL, keepalive_main, l) == 0;
	l->tc_started = l->tk_started &&
			pthread_create(&l->tc, NULL, campaign_main, l) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!l->tc_started) {
		cluster_lease_close(l);
		return lg_error_set(err, LG_EIO,
				    "could not start the lease's threads");
	}
	*out = l;
	return 0;
}

enum cluster_sequencer cluster__lease_sequencer(cluster_lease_t *l,
					       char *url, size_t cap)
{
	enum cluster_sequencer is;

	LG_ASSERT(l != NULL && (url != NULL || cap == 0));
	lock(l);
	is = l->seq_is;
	if (is == CLUSTER_SEQ_SELF &&
	    !(l->leader && !l->deposed && !l->resign && !l->stop &&
	      !l->gone))
		is = CLUSTER_SEQ_UNKNOWN;
	if (url != NULL && cap > 0)
		snprintf(url, cap, "%s", is != CLUSTER_SEQ_UNKNOWN ? l->seq_url
								 : "");
	unlock(l);
	return is;
}

bool cluster_lease_holding(cluster_lease_t *l, int64_t *fence)
{
	bool h;

	LG_ASSERT(l != NULL);
	lock(l);
	h = l->leader && !l->deposed && !l->resign && !l->stop && !l->gone &&
	    cluster__lease_holding(&l->clk, etcd_mono_ms());
	if (fence != NULL)
		*fence = h ? l->fence : 0;
	unlock(l);
	return h;
}

void cluster_lease_deposed(cluster_lease_t *l, int64_t fence)
{
	LG_ASSERT(l != NULL);
	lock(l);
	if (l->leader && l->fence == fence && !l->deposed) {
		l->deposed = true;
		l->deposed_why = "a txn comparing the fence failed";
		poke(l);
	}
	unlock(l);
}

void cluster_lease_resign(cluster_lease_t *l)
{
	LG_ASSERT(l != NULL);
	lock(l);
	if (l->leader) {
		l->resign = true;
		poke(l);
	}
	unlock(l);
}

void cluster_lease_applied(cluster_lease_t *l, uint64_t seq)
{
	LG_ASSERT(l != NULL);
	lock(l);
	if (seq != l->applied) {
		l->applied = seq;
		pthread_cond_broadcast(&l->cond);
	}
	unlock(l);
}

void cluster_lease_close(cluster_lease_t *l)
{
	if (l == NULL)
		return;
	/* Not from on_transition or warn: closing joins the thread that calls
	 * them, which would wait for itself. */
	LG_ASSERT(!l->tc_started || !pthread_equal(pthread_self(), l->tc));
	LG_ASSERT(!l->tk_started || !pthread_equal(pthread_self(), l->tk));
	lock(l);
	l->stop = true;
	poke(l);
	unlock(l);
	/* The campaign thread revokes the lease before it ends. */
	if (l->tc_started)
		pthread_join(l->tc, NULL);
	if (l->tk_started)
		pthread_join(l->tk, NULL);
	lease_free(l);
}
