/*
 * `gpuledger member` (DESIGN 11): the applier on a thread of its own, the
 * only writer of the member's LMDB; serve's routes on the loop of the main
 * thread, reading the same environment through a shared handle (a process
 * holds one LMDB environment: LMDB's locks are per process, and a second
 * open of the same files would break them); and with --watch the lease
 * and, while it holds P/leader, the watcher (cluster/leader.c) on a third
 * thread, appending to etcd's log.
 *
 * POST /v1/admission and /v1/declarations go to the verdict path
 * (cluster/verdicts.c) on the server's worker threads (up to --pipeline
 * groups at once while this member is the sequencer): a verdict is
 * answered only once etcd's log holds it. Other POSTs answer 503. GETs
 * answer from the local state, with X-Gpuledger-Stale while etcd cannot be
 * reached, and /readyz says why the member is not ready.
 */
#include "cluster/member_int.h"

#include <pthread.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* "A few events" of DESIGN 11: a member this close to P/head is ready. */
#define READY_LAG 8

struct cluster_member {
	struct cluster_member_opts o;
	ledger_t *lg; /* the applier's writer handle */
	ledger_t *rd; /* the server's, shared */
	cluster_applier_t *ap;
	cluster_verdicts_t *cv; /* the verdict path (its worker thread's) */
	cluster_leader_t *ld;	/* the lease, and with watch the watcher */
	query_server_t *qs;
	struct query_member qm;
	char url[CLUSTER_URL_MAX]; /* for peers: P/leader's value */
	/* Door keys' prefix (DESIGN 11): the name and this boot. */
	char door_id[CLUSTER_NAME_MAX + 24];
	int64_t start_ns;
	volatile sig_atomic_t stop;
};

/* The server's view of the applier (on the loop's thread). */
static void on_member_status(void *ctx, struct query_member_status *q)
{
	struct cluster_member *m = ctx;
	struct cluster_applier_status st;
	int64_t since;

	cluster__applier_status(m->ap, &st);
	since = st.fresh_ns ? st.fresh_ns : m->start_ns;
	q->reachable = st.reachable;
	q->stale_s = (uint64_t)((cluster__mono_ns() - since) / 1000000000);
	if (m->o.signer != NULL) {
		uint64_t every = m->o.sign_every ? m->o.sign_every
						 : CLUSTER_SIGN_EVERY_DEFAULT;

		q->checkpoint_due = st.head_seq / every * every;
	}
	if (st.refused[0])
		snprintf(q->unready, sizeof(q->unready), "%s", st.refused);
	else if (!st.reachable)
		snprintf(q->unready, sizeof(q->unready),
			 "cannot reach an etcd quorum (DESIGN 11): not ready "
			 "for admission; reads answer from seq %llu, %llu s "
			 "stale",
			 (unsigned long long)st.applied,
			 (unsigned long long)q->stale_s);
	else if (st.stuck[0])
		snprintf(q->unready, sizeof(q->unready), "%s", st.stuck);
	else if (st.head_seq > st.applied + READY_LAG)
		snprintf(q->unready, sizeof(q->unready),
			 "applied seq %llu, %s/head is at seq %llu",
			 (unsigned long long)st.applied, m->o.prefix,
			 (unsigned long long)st.head_seq);
}

/* The server's verdict path (on its worker thread). */
static void member_verdicts(void *ctx, struct query_vitem *it, size_t n,
			    struct query_vstats *st)
{
	struct cluster_member *m = ctx;

	cluster__verdicts_run(m->cv, it, n, st);
}

static bool member_pending(void *ctx)
{
	struct cluster_member *m = ctx;

	return cluster__verdicts_pending(m->cv);
}

static size_t member_inflight(void *ctx)
{
	struct cluster_member *m = ctx;

	return cluster__verdicts_inflight(m->cv);
}

/* How often a start looks again at a P/members/<name> held by another
 * lease. */
#define NAME_POLL_MS 250

/* P/members/<name> as it is now: *lease 0 when there is no such key,
 * *applied the seq its value holds. */
static int name_holder(etcd_t *e, const char *key, size_t key_len,
		       int64_t *lease, uint64_t *applied, struct lg_error *err)
{
	struct etcd_range r = {.key = key, .key_len = key_len};
	struct etcd_range_result res;
	int rc = etcd_range(e, &r, &res, NULL, err);

	*lease = 0;
	*applied = 0;
	if (rc == 0 && res.n_kvs > 0) {
		json_t *v = json_loadb((const char *)res.kvs[0].value,
				       res.kvs[0].value_len, 0, NULL);

		*lease = res.kvs[0].lease;
		*applied = (uint64_t)json_integer_value(
			json_object_get(v, "applied"));
		json_decref(v);
	}
	etcd_range_result_release(&res);
	return rc;
}

/* One member per name (issue 40): P/members/<name> pins retention at its
 * holder's applied seq, so a second process with a live member's --name
 * would hide one of the two from it. A key bound to a lease that is being
 * renewed is a live member: refused, naming the key, its lease and what
 * it has applied. A key whose lease is not renewed is what a member
 * killed before it could revoke leaves behind (a restart after SIGKILL):
 * a live holder renews every TTL/3 and gives up holding after TTL/2
 * without a renewal (rule 5), so a lease seen unrenewed for half its
 * granted TTL and a second (etcd tells whole seconds) is dead, and this
 * member starts; its own put binds the key to its lease. A renewal is
 * seen as the TTL left going up. etcd out of reach decides nothing: the
 * member starts as it always did and says it is not ready. */
static int name_free(const struct cluster_member_opts *o, struct lg_error *err)
{
	char key[CLUSTER_PREFIX_MAX + CLUSTER_NAME_MAX + 16];
	char tail[CLUSTER_NAME_MAX + 16];
	etcd_t *e = NULL;
	struct lg_error why = {0};
	int64_t lease, first, ttl = 0, granted = 0, last = INT64_MAX;
	int64_t until_ms = 0;
	uint64_t applied;
	size_t n;
	int rc;

	snprintf(tail, sizeof(tail), "members/%s", o->name);
	n = cluster__key(key, sizeof(key), o->prefix, tail);
	if ((rc = etcd_open(&e, &o->eo, err)) != 0)
		return rc;
	rc = name_holder(e, key, n, &first, &applied, &why);
	lease = first;
	while (rc == 0 && lease == first && first != 0) {
		rc = etcd_lease_ttl(e, first, &ttl, &granted, NULL, &why);
		if (rc != 0 || ttl > last)
			break; /* gone, unknown, or renewed: a live member */
		last = ttl;
		if (until_ms == 0)
			until_ms = cluster__mono_ns() / 1000000 +
				   granted * 500 + 1000;
		if (cluster__mono_ns() / 1000000 >= until_ms) {
			lease = 0; /* not renewed: its member is dead */
			break;
		}
		cluster__sleep_ms(NAME_POLL_MS);
		rc = name_holder(e, key, n, &lease, &applied, &why);
	}
	etcd_close(e);
	/* etcd out of reach or the lease gone (rc), or the name free. */
	if (rc != 0 || lease == 0)
		return 0;
	return lg_error_set(err, LG_EEXIST,
			    "--name %s is taken: %.*s is held by a live "
			    "member (lease %llx, applied seq %llu); stop it "
			    "or give this member another --name",
			    o->name, (int)n, key, (unsigned long long)lease,
			    (unsigned long long)applied);
}

/* --advertise-url's default: the bound listener, when --listen names a
 * host (a wildcard names none: then no door forwards here, and the
 * member says so). */
static void advertise_default(struct cluster_member *m)
{
	const char *listen = m->o.q.listen ? m->o.q.listen : "127.0.0.1:8420";
	const char *colon = strrchr(listen, ':');
	size_t host_len = colon ? (size_t)(colon - listen) : strlen(listen);

	m->url[0] = '\0';
	if (host_len == 0 || strncmp(listen, "0.0.0.0", host_len) == 0 ||
	    strncmp(listen, "[::]", host_len) == 0 ||
	    strncmp(listen, "::", host_len) == 0) {
		fprintf(stderr,
			"gpuledger member: --listen %s names no host: without "
			"--advertise-url no door forwards verdicts here\n",
			listen);
		return;
	}
	snprintf(m->url, sizeof(m->url), "%s://%.*s:%d",
		 m->o.q.tls_cert != NULL ? "https" : "http", (int)host_len,
		 listen, query_server_port(m->qs));
}

/* Every member holds a lease for P/members/<name> (its applied seq pins
 * retention, rule 11); with --watch it also campaigns and watches while
 * leading, and its URL in P/leader's value makes it the sequencer. */
static int leader_start(struct cluster_member *m, struct lg_error *err)
{
	const struct cluster_member_opts *o = &m->o;
	uint64_t t = o->eo.timeout_ms ? o->eo.timeout_ms : ETCD_TIMEOUT_DEFAULT;
	struct cluster_leader_opts wo = {
		.eo = o->eo,
		.prefix = o->prefix,
		.name = o->name,
		.ttl_s = o->lease_ttl_s,
		.lg = m->lg,
		.ap = m->ap,
		.kubeconfig = o->kubeconfig,
		.context = o->context,
		.classes = o->classes,
		.tick_ns = (int64_t)o->tick_s * 1000000000LL,
		.request_ms = t,
		.max_value = (size_t)o->max_txn_bytes,
		.rt = o->rt,
		.observe = !o->watch,
		.peer_url = m->url,
		.holds_set = o->holds_set,
		.holds_ttl_ms = o->holds_ttl_ms};

	return cluster__leader_new(&m->ld, &wo, err);
}

/* The options a member cannot start with, named. */
static int opts_check(const struct cluster_member_opts *o,
		      struct lg_error *err)
{
	int rc = cluster_prefix_check(o->prefix, err);

	if (rc != 0)
		return rc;
	if (o->name == NULL || o->name[0] == '\0' || strchr(o->name, '/') ||
	    strlen(o->name) > 128)
		return lg_error_set(err, LG_EINVAL,
				    "--name: 1 to 128 bytes without '/'");
	if (o->q.db == NULL)
		return lg_error_set(err, LG_EINVAL, "--db DIR is required");
	if (o->advertise_url != NULL &&
	    (strlen(o->advertise_url) >= CLUSTER_URL_MAX ||
	     (strncmp(o->advertise_url, "http://", 7) != 0 &&
	      strncmp(o->advertise_url, "https://", 8) != 0)))
		return lg_error_set(err, LG_EINVAL,
				    "--advertise-url: an http:// or https:// "
				    "URL of at most %d bytes",
				    CLUSTER_URL_MAX - 1);
	return 0;
}

/* The door's key prefix for keyless requests: the member's name and its
 * boot time, so that no two runs share one. */
static void door_id_make(struct cluster_member *m)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(m->door_id, sizeof(m->door_id), "%.64s.%llx", m->o.name,
		 (unsigned long long)ts.tv_sec * 1000000000ULL +
			 (unsigned long long)ts.tv_nsec);
}

int cluster_member_open(cluster_member_t **out,
			const struct cluster_member_opts *o,
			struct lg_error *err)
{
	struct cluster_member *m;
	struct ledger_opts lo = {0};
	int rc;

	LG_ASSERT(out != NULL && o != NULL);
	*out = NULL;
	if ((rc = opts_check(o, err)) != 0 || (rc = name_free(o, err)) != 0)
		return rc;
	/* jansson seeds its hash once; before the applier's thread. */
	json_object_seed(0);
	m = lg_xcalloc(1, sizeof(*m));
	m->o = *o;
	m->start_ns = cluster__mono_ns();
	/* The whole bound mapped at once: the map never grows, so the
	 * server's shared handle never sees a remap (ledger_share).
	 * Checkpoints every N seqs, never on a timer (rule 10): every
	 * member then writes them at the same seqs. */
	lo = (struct ledger_opts){.dir = o->q.db,
				  .create = true,
				  .map_size_bytes = SIZE_MAX,
				  .map_max_bytes = o->q.map_max_bytes,
				  .checkpoint_every = o->checkpoint_every,
				  .checkpoint_secs = -1};
	if ((rc = ledger_open(&m->lg, &lo, err)) != 0 ||
	    (rc = cluster__applier_new(&m->ap, m->lg, &o->eo, o->prefix,
				       err)) != 0 ||
	    (rc = ledger_share(m->lg, &m->rd, err)) != 0)
		goto fail;
	if (o->signer != NULL)
		cluster__applier_signer(m->ap, o->signer, o->sign_every);
	if (o->peer != NULL)
		cluster__applier_peer(m->ap, o->peer, o->peer_token,
				      o->peer_cacert, o->peer_cert,
				      o->peer_key);
	if ((rc = cluster__verdicts_new(&m->cv, m->lg, m->ap, &m->o.eo,
					m->o.prefix, o->verdict_timeout_ms,
					o->pipeline ? o->pipeline
						    : CLUSTER_PIPELINE_DEFAULT,
					err)) != 0)
		goto fail;
	door_id_make(m);
	m->qm = (struct query_member){.ledger = m->rd,
				      .status = on_member_status,
				      .ctx = m,
				      .verdicts = member_verdicts,
				      .pending = member_pending,
				      .inflight = member_inflight,
				      .door_id = o->no_forward ? NULL
							       : m->door_id};
	m->o.q.member = &m->qm;
	m->o.q.create = false;
	if ((rc = query_server_open(&m->qs, &m->o.q, err)) != 0)
		goto fail;
	/* The server is bound: its URL goes in P/leader's value. */
	if (o->advertise_url == NULL)
		advertise_default(m);
	else
		snprintf(m->url, sizeof(m->url), "%s", o->advertise_url);
	if ((rc = leader_start(m, err)) != 0)
		goto fail;
	/* DESIGN 11: only the member holding P/leader pipelines. */
	if (o->watch)
		cluster__verdicts_sequencer(m->cv, m->ld);
	if (!o->no_forward) {
		struct cluster_forward *fwd;

		if ((rc = cluster__forward_new(&fwd, o->peer_token,
					       o->peer_cacert, o->peer_cert,
					       o->peer_key, err)) != 0)
			goto fail;
		cluster__verdicts_doors(m->cv, fwd, m->ld, o->name,
					o->forward_timeout_ms);
	}
	*out = m;
	return 0;
fail:
	cluster_member_close(m);
	return rc;
}

int cluster_member_port(const cluster_member_t *m)
{
	LG_ASSERT(m != NULL);
	return query_server_port(m->qs);
}

int cluster_member_probe_port(const cluster_member_t *m)
{
	LG_ASSERT(m != NULL);
	return query_server_probe_port(m->qs);
}

static void *applier_main(void *arg)
{
	struct cluster_member *m = arg;

	cluster__applier_run(m->ap, &m->stop);
	return NULL;
}

static void *leader_main(void *arg)
{
	struct cluster_member *m = arg;

	cluster__leader_run(m->ld);
	return NULL;
}

int cluster_member_run(cluster_member_t *m, struct lg_error *err)
{
	sigset_t all, old;
	pthread_t t, tl;
	int rc, rl = 0;

	LG_ASSERT(m != NULL);
	/* Signals go to the loop's thread (SIGTERM stops the member). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t, NULL, applier_main, m);
	if (rc == 0 && m->ld != NULL &&
	    (rl = pthread_create(&tl, NULL, leader_main, m)) != 0) {
		m->stop = 1;
		pthread_join(t, NULL);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0 || rl != 0)
		return lg_error_set(err, LG_EIO, "cannot start the %s",
				    rc != 0 ? "applier" : "watcher's thread");
	/* The verdict calls run on libuv's worker threads (4 by default,
	 * the pool made at its first use): the sequencer's pipeline blocks
	 * one per txn in flight, so the pool has room for all of them and
	 * a spare, unless the operator sized it. */
	if (getenv("UV_THREADPOOL_SIZE") == NULL) {
		unsigned k = m->o.pipeline ? m->o.pipeline
					   : CLUSTER_PIPELINE_DEFAULT;
		char n[16];

		snprintf(n, sizeof(n), "%u", k + 1 > 4 ? k + 1 : 4);
		setenv("UV_THREADPOOL_SIZE", n, 0);
	}
	rc = query_server_run(m->qs, err);
	/* The watcher flushes what it read (while it leads) and stops; the
	 * lease is revoked at close (rule 5: on SIGTERM another member takes
	 * over at once). */
	if (m->ld != NULL) {
		cluster__leader_stop(m->ld);
		pthread_join(tl, NULL);
	}
	/* The applier sees stop within a watch's progress tick or a nap. */
	m->stop = 1;
	pthread_join(t, NULL);
	return rc;
}

void cluster_member_close(cluster_member_t *m)
{
	if (m == NULL)
		return;
	query_server_close(m->qs);
	cluster__leader_free(m->ld);
	cluster__verdicts_free(m->cv);
	ledger_close(m->rd);
	cluster__applier_free(m->ap);
	ledger_close(m->lg);
	free(m);
}
