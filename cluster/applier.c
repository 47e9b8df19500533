/*
 * The applier (DESIGN 11 rule 7): the only writer of a member's LMDB. It
 * follows P/head, P/leader and P/log/ (the keys [P/head, P/log0)) with a
 * watch from the revision after the one its ledger stored, and appends
 * each committed value in one LMDB transaction with {etcd cluster id,
 * P/epoch, revision, seq}.
 *
 * It trusts nothing it has not checked, because Debian's etcd 3.4.23 has
 * known watch bugs (duplicated or skipped events around compaction): a
 * value is applied only when it is a version-1 put of P/log/<applied + 1>
 * and its chain head equals P/head at its revision (the same txn put
 * both); on anything else (a gap, a repeat, a value without its head, a
 * start revision compacted or in the future) it falls back to range reads
 * at one revision and then watches from the next. Each watch is short
 * (WATCH_MS): after it a quorum read of P/epoch and P/head checks rule 8,
 * says whether etcd can be reached, and catches a watch that went quiet
 * while the head moved.
 */
#include "cluster/applier_int.h"
#include "ingest/ingest.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + 64)
/* How long one watch runs before the probe (ms). */
#define WATCH_MS 1000
/* A pause after etcd could not be reached, or would not let it go on. */
#define NAP_MS 300
/* The watch callback's "stop, and read ranges" (not an LG_E* code). */
#define STOP_RANGE 1
/* Rule 8, or a head that differs: write no more. */
#define STOP_REFUSED 2

struct cluster_applier {
	ledger_t *lg;
	etcd_t *e;
	struct cluster_writer rd; /* reads of P/log/ values through e */
	char prefix[CLUSTER_PREFIX_MAX + 1];
	char k_epoch[KEY_MAX], k_head[KEY_MAX], k_end[KEY_MAX];
	struct ledger_cluster_meta cm; /* the ledger's, or adopted */
	bool have_meta;
	int64_t rev; /* the last revision processed (0: read ranges) */
	bool need_range;
	const volatile sig_atomic_t *stop;
	pthread_mutex_t mu;
	struct cluster_applier_status st;
	struct replica_opts peer; /* url NULL: no peer to join from */
	/* Rule 10: signed checkpoints at every multiple of sign_every
	 * (signer NULL: none). */
	const struct note_signer *signer;
	uint64_t sign_every, signed_size;
};

/* What a quorum read of P/epoch and P/head says. */
struct probe {
	struct etcd_header header;
	bool has_epoch, has_head;
	char epoch[65];
	struct cluster_head head;
	uint8_t head_bytes[LEDGER_HEAD_BYTES];
	int64_t head_rev;
};

static void pause_unless_stopped(const struct cluster_applier *a, unsigned ms)
{
	for (unsigned i = 0; i < ms / 50 && !*a->stop; i++) {
		struct timespec ts = {0, 50 * 1000000L};

		nanosleep(&ts, NULL);
	}
}

static void applier_say(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void applier_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("gpuledger member: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---------------------------------------------------------------------- */
/* Status, shared with the server's thread */

static void status_reach(struct cluster_applier *a, bool reachable)
{
	pthread_mutex_lock(&a->mu);
	a->st.reachable = reachable;
	pthread_mutex_unlock(&a->mu);
}

static void status_progress(struct cluster_applier *a, uint64_t head_seq,
			    bool fresh)
{
	pthread_mutex_lock(&a->mu);
	a->st.reachable = true;
	a->st.applied = ledger_last_seq(a->lg);
	if (head_seq > a->st.head_seq || fresh)
		a->st.head_seq = head_seq;
	if (fresh) {
		a->st.fresh_ns = cluster__mono_ns();
		a->st.stuck[0] = '\0';
	}
	pthread_mutex_unlock(&a->mu);
}

static void set_status_text(struct cluster_applier *a, char *field,
			    const char *msg)
{
	pthread_mutex_lock(&a->mu);
	snprintf(field, CLUSTER_MSG_MAX, "%s", msg);
	pthread_mutex_unlock(&a->mu);
}

void cluster__applier_status(cluster_applier_t *a,
			     struct cluster_applier_status *st)
{
	LG_ASSERT(a != NULL && st != NULL);
	pthread_mutex_lock(&a->mu);
	*st = a->st;
	pthread_mutex_unlock(&a->mu);
}

/* ---------------------------------------------------------------------- */
/* Rule 7's filter */

enum cluster_log_check cluster__log_check(const struct etcd_kv *kv, bool put,
					  const char *prefix, uint64_t applied,
					  uint64_t *first_seq)
{
	uint64_t s = cluster__log_key_seq(kv->key, kv->key_len, prefix);

	LG_ASSERT(kv != NULL && prefix != NULL && first_seq != NULL);
	*first_seq = s;
	/* Deletes are the leader's retention (below every member's applied
	 * seq); anything but P/log/<20 digits> is not a value. */
	if (s == 0 || !put)
		return CLUSTER_LOG_OTHER;
	/* DESIGN 11 rule 7: only a value's first write (version 1) is ever
	 * applied; nothing but the append txn writes P/log/, once. */
	if (kv->version != 1)
		return CLUSTER_LOG_REWRITE;
	if (s <= applied)
		return CLUSTER_LOG_REPEAT;
	if (s > applied + 1)
		return CLUSTER_LOG_GAP;
	return CLUSTER_LOG_APPLY;
}

/* ---------------------------------------------------------------------- */
/* Rule 8 */

static int probe(struct cluster_applier *a, struct probe *p,
		 struct lg_error *err)
{
	struct etcd_op ops[2] = {
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = a->k_epoch, .key_len = strlen(a->k_epoch)}},
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = a->k_head, .key_len = strlen(a->k_head)}},
	};
	struct etcd_txn t = {.success = ops, .n_success = 2};
	struct etcd_txn_result r;
	int rc = etcd_txn(a->e, &t, &r, err);

	memset(p, 0, sizeof(*p));
	if (rc == 0) {
		const struct etcd_range_result *ep = &r.ops[0].range,
					       *hd = &r.ops[1].range;

		p->header = r.header;
		if (ep->n_kvs == 1) {
			p->has_epoch = true;
			snprintf(p->epoch, sizeof(p->epoch), "%.*s",
				 (int)ep->kvs[0].value_len,
				 (const char *)ep->kvs[0].value);
		}
		if (hd->n_kvs == 1) {
			p->has_head = true;
			p->head_rev = hd->kvs[0].mod_revision;
			if (!cluster__head_parse(hd->kvs[0].value,
						 hd->kvs[0].value_len,
						 &p->head) ||
			    !cluster__head_bytes(&p->head, p->head_bytes))
				rc = lg_error_set(err, LG_ECORRUPT,
						  "%s is not a head",
						  a->k_head);
		}
	}
	etcd_txn_result_release(&r);
	return rc;
}

/* DESIGN 11 rule 8: no second history. LG_EEXIST (refuse) with why. */
static int history_check(struct cluster_applier *a, const struct probe *p,
			 struct lg_error *err)
{
	uint64_t applied = ledger_last_seq(a->lg);
	char mine[2 * LEDGER_HEAD_BYTES + 1];

	if (!p->has_epoch || !p->has_head)
		return lg_error_set(err, LG_ENOENT,
				    "%s has no %s: run `gpuledger cluster "
				    "init` first",
				    a->prefix, p->has_epoch ? "head" : "epoch");
	if (a->have_meta && strcmp(a->cm.prefix, a->prefix) != 0)
		return lg_error_set(err, LG_EEXIST,
				    "the ledger follows prefix %s, not %s",
				    a->cm.prefix, a->prefix);
	if (a->have_meta && strcmp(a->cm.epoch, p->epoch) != 0)
		return lg_error_set(err, LG_EEXIST,
				    "%s is %s, the ledger's epoch is %s: "
				    "another history (recover with `cluster "
				    "init --db` from the most advanced member)",
				    a->k_epoch, p->epoch, a->cm.epoch);
	if (a->have_meta && a->cm.cluster_id != p->header.cluster_id)
		return lg_error_set(err, LG_EEXIST,
				    "etcd's cluster id is %016llx, the "
				    "ledger's is %016llx: another etcd",
				    (unsigned long long)p->header.cluster_id,
				    (unsigned long long)a->cm.cluster_id);
	if (applied > p->head.seq)
		return lg_error_set(err, LG_EEXIST,
				    "the ledger is at seq %llu, past %s's seq "
				    "%llu",
				    (unsigned long long)applied, a->k_head,
				    (unsigned long long)p->head.seq);
	if (applied == p->head.seq &&
	    memcmp(ledger_head(a->lg), p->head_bytes, LEDGER_HEAD_BYTES) != 0) {
		lg_hex(ledger_head(a->lg), LEDGER_HEAD_BYTES, mine);
		return lg_error_set(err, LG_EEXIST,
				    "seq %llu: the ledger's chain head %s is "
				    "not %s's %s",
				    (unsigned long long)applied, mine,
				    a->k_head, p->head.chain_head);
	}
	if (!a->have_meta) {
		/* A ledger that never followed etcd (a copy of the one
		 * `cluster init --db` read): it takes this history, stored
		 * with the first value it applies. */
		snprintf(a->cm.epoch, sizeof(a->cm.epoch), "%s", p->epoch);
		snprintf(a->cm.prefix, sizeof(a->cm.prefix), "%s", a->prefix);
		a->cm.cluster_id = p->header.cluster_id;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Applying */

void cluster__applier_signer(cluster_applier_t *a, const struct note_signer *s,
			     uint64_t every)
{
	LG_ASSERT(a != NULL && a->stop == NULL);
	a->signer = s;
	a->sign_every = every ? every : CLUSTER_SIGN_EVERY_DEFAULT;
}

/* DESIGN 11 rule 10: checkpoints every N seqs, never on a timer. The
 * newest multiple of N the ledger holds is signed once it is applied; one
 * key and one log give every member the same note, so a witness behind a
 * Service sees one tree whichever member answers (and a member behind the
 * cluster's newest checkpoint answers 503, query's side). */
static void sign_due(struct cluster_applier *a)
{
	struct lg_error err = {0};
	uint64_t at;
	char *note = NULL;

	if (a->signer == NULL)
		return;
	at = ledger_last_seq(a->lg) / a->sign_every * a->sign_every;
	if (at == 0 || at <= a->signed_size)
		return;
	if (ledger_note_get(a->lg, at, &note, NULL, NULL) == 0) {
		free(note); /* signed before a restart */
	} else if (ledger_sign_checkpoint_at(a->lg, a->signer, at, &err) !=
		   0) {
		applier_say("signing the checkpoint of size %llu: %s",
			    (unsigned long long)at, err.msg);
		return;
	}
	a->signed_size = at;
}

/* A test's slow applier: while the file named by
 * GPULEDGER_TEST_APPLY_PAUSE exists, nothing is applied (the tests of
 * DESIGN 11 rule 4 make a member lag behind P/head this way, its lease and
 * its reads unaffected). */
static void apply_pause(const cluster_applier_t *a)
{
	const char *f = getenv("GPULEDGER_TEST_APPLY_PAUSE");
	FILE *fp;

	while (f != NULL && f[0] != '\0' && (fp = fopen(f, "r")) != NULL) {
		fclose(fp);
		if (a->stop != NULL && *a->stop)
			return;
		nanosleep(&(struct timespec){0, 20 * 1000000L}, NULL);
	}
}

int cluster__applier_apply(cluster_applier_t *a, const struct etcd_kv *kv,
			   const uint8_t *expect_head, uint64_t cluster_id,
			   struct lg_error *err)
{
	struct ledger_cluster_meta cm = a->cm;
	int rc;

	LG_ASSERT(a != NULL && kv != NULL);
	apply_pause(a);
	cm.cluster_id = cluster_id;
	cm.revision = kv->mod_revision;
	/* DESIGN 11 rule 7: the chain head after the value must be P/head's
	 * at that revision; a member is also a witness. */
	rc = ledger_append_logval(a->lg, kv->value, kv->value_len, expect_head,
				  &cm, NULL, err);
	if (rc == 0) {
		a->cm = cm;
		a->cm.seq = ledger_last_seq(a->lg);
		a->have_meta = true;
		sign_due(a);
	}
	return rc;
}

/* An error applying a value: another head or seq is a refusal (the log
 * departs from this ledger), anything else (a full disk) a pause. */
static int apply_failed(struct cluster_applier *a, int rc,
			const struct lg_error *err)
{
	char msg[CLUSTER_MSG_MAX];

	if (rc == LG_EMISMATCH || rc == LG_ECORRUPT) {
		snprintf(msg, sizeof(msg), "refusing to write: %s", err->msg);
		applier_say("%s", msg);
		set_status_text(a, a->st.refused, msg);
		return STOP_REFUSED;
	}
	snprintf(msg, sizeof(msg), "cannot apply: %s", err->msg);
	applier_say("%s", msg);
	set_status_text(a, a->st.stuck, msg);
	a->need_range = true;
	return STOP_RANGE;
}

struct range_ctx {
	struct cluster_applier *a;
	const struct probe *p;
	int stop; /* STOP_* */
};

static int range_value(void *ctx, const struct etcd_kv *kv, uint64_t s)
{
	struct range_ctx *rc = ctx;
	struct cluster_applier *a = rc->a;
	struct lg_error err = {0};
	uint64_t first;
	enum cluster_log_check c = cluster__log_check(
		kv, true, a->prefix, ledger_last_seq(a->lg), &first);
	int r;

	if (c == CLUSTER_LOG_REWRITE) {
		lg_error_set(&err, LG_ECORRUPT,
			     "%s/log/%020llu was written %lld times: the log "
			     "in etcd was rewritten",
			     a->prefix, (unsigned long long)s,
			     (long long)kv->version);
		rc->stop = apply_failed(a, LG_ECORRUPT, &err);
		return rc->stop;
	}
	if (c != CLUSTER_LOG_APPLY) {
		rc->stop = STOP_RANGE;
		return rc->stop;
	}
	r = cluster__applier_apply(
		a, kv,
		kv->mod_revision == rc->p->head_rev ? rc->p->head_bytes : NULL,
		rc->p->header.cluster_id, &err);
	if (r != 0) {
		rc->stop = apply_failed(a, r, &err);
		return rc->stop;
	}
	status_progress(a, rc->p->head.seq, false);
	return 0;
}

void cluster__applier_peer(cluster_applier_t *a, const char *url,
			   const char *token, const char *cacert,
			   const char *cert, const char *key)
{
	LG_ASSERT(a != NULL && a->stop == NULL);
	a->peer = (struct replica_opts){.url = url,
					.token = token,
					.ca_file = cacert,
					.cert_file = cert,
					.key_file = key,
					.once = true};
}

/* Joining from a peer (DESIGN 11 "Compaction and members joining"): what
 * etcd no longer holds, copied from a ready member's GET /v1/events
 * (ingest_replicate: every event's head computed here and checked against
 * the peer's before it is appended), up to the peer's seq; then range
 * reads go on from there. The events copied carry no etcd revision: the
 * next value applied from etcd stores it. How many were copied. */
static uint64_t join(struct cluster_applier *a)
{
	struct replica_opts ro = a->peer;
	struct replica_result res = {0};
	struct lg_error err = {0};
	uint64_t from = ledger_last_seq(a->lg);
	int rc;

	ro.stop = a->stop;
	rc = ingest_replicate(a->lg, &ro, &res, &err);
	sign_due(a);
	applier_say("joining from %s: %llu events copied after seq %llu, now "
		    "at seq "
		    "%llu%s%s",
		    a->peer.url, (unsigned long long)res.appended,
		    (unsigned long long)from,
		    (unsigned long long)ledger_last_seq(a->lg), rc ? ": " : "",
		    rc ? err.msg : "");
	return res.appended;
}

/* Range reads at the probe's revision: every value after applied up to
 * P/head there, then the watch goes on from the next revision. */
static int catch_up(struct cluster_applier *a, const struct probe *p)
{
	struct range_ctx ctx = {a, p, 0};
	struct lg_error err = {0};
	uint64_t applied = ledger_last_seq(a->lg);
	int rc = 0;

	if (p->head.seq > applied)
		rc = cluster__log_read(&a->rd, applied + 1, p->head.seq,
				       p->header.revision, range_value, &ctx,
				       &err);
	if (ctx.stop != 0)
		return ctx.stop;
	/* Below the oldest key left: from the peer, then etcd again. */
	if (rc == LG_ENOENT && a->peer.url != NULL && join(a) > 0)
		return STOP_RANGE;
	if (rc != 0) {
		char msg[CLUSTER_MSG_MAX];

		/* Below the oldest key left (rule 11's retention): etcd
		 * cannot bring this member up; a ready member's ledger can. */
		snprintf(msg, sizeof(msg),
			 "range reads at revision %lld from seq %llu: %s%s",
			 (long long)p->header.revision,
			 (unsigned long long)applied + 1, err.msg,
			 rc != LG_ENOENT ? ""
			 : a->peer.url != NULL
				 ? ": etcd no longer holds the log after this "
				   "member's seq (the leader's --keep), and "
				   "--peer gave nothing after it"
				 : ": etcd no longer holds the log after this "
				   "member's seq (the leader's --keep); start "
				   "it with --peer (a ready member) or seed "
				   "its --db from a ready member's ledger "
				   "(docs/operations.md)");
		applier_say("%s", msg);
		set_status_text(a, a->st.stuck, msg);
		return STOP_RANGE;
	}
	a->rev = p->header.revision;
	a->need_range = false;
	status_progress(a, p->head.seq, true);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The watch */

/* One revision's events (one txn's): its value and its P/head. */
static int revision(struct cluster_applier *a, const struct etcd_event *ev,
		    size_t n, uint64_t cluster_id)
{
	const struct etcd_kv *log = NULL, *head = NULL;
	int64_t r = ev[0].kv.mod_revision;
	struct cluster_head h;
	uint8_t hb[LEDGER_HEAD_BYTES];
	struct ledger_logval info;
	struct lg_error err = {0};
	uint64_t s;
	int rc;

	if (r <= a->rev) {
		applier_say("the watch repeated revision %lld: reading ranges",
			    (long long)r);
		return STOP_RANGE;
	}
	for (size_t i = 0; i < n; i++) {
		const struct etcd_kv *kv = &ev[i].kv;
		bool put = ev[i].type == ETCD_EV_PUT;

		if (kv->key_len == strlen(a->k_head) &&
		    memcmp(kv->key, a->k_head, kv->key_len) == 0) {
			head = put ? kv : NULL;
			continue;
		}
		switch (cluster__log_check(kv, put, a->prefix,
					   ledger_last_seq(a->lg), &s)) {
		case CLUSTER_LOG_OTHER:
			break;
		case CLUSTER_LOG_APPLY:
			if (log != NULL)
				return STOP_RANGE;
			log = kv;
			break;
		default:
			applier_say(
				"revision %lld: %s/log/%020llu is not the next "
				"value after seq %llu (or was rewritten): "
				"reading "
				"ranges",
				(long long)r, a->prefix, (unsigned long long)s,
				(unsigned long long)ledger_last_seq(a->lg));
			return STOP_RANGE;
		}
	}
	if (log == NULL) {
		a->rev = r;
		return 0;
	}
	if (head == NULL ||
	    !cluster__head_parse(head->value, head->value_len, &h) ||
	    !cluster__head_bytes(&h, hb) ||
	    ledger_logval_read(log->value, log->value_len, 0, NULL, NULL, NULL,
			       &info, &err) != 0 ||
	    info.last_seq != h.seq) {
		applier_say("revision %lld: a value without its head: reading "
			    "ranges",
			    (long long)r);
		return STOP_RANGE;
	}
	rc = cluster__applier_apply(a, log, hb, cluster_id, &err);
	if (rc != 0)
		return apply_failed(a, rc, &err);
	a->rev = r;
	status_progress(a, h.seq, true);
	return 0;
}

static int on_log_watch(void *ctx, const struct etcd_watch_msg *m)
{
	struct cluster_applier *a = ctx;

	if (m->compact_revision != 0 || m->n_events == 0)
		return 0;
	if (m->header.cluster_id != 0 && a->have_meta &&
	    m->header.cluster_id != a->cm.cluster_id)
		return STOP_RANGE; /* the probe names it */
	for (size_t i = 0; i < m->n_events;) {
		size_t j = i + 1;
		int rc;

		while (j < m->n_events && m->events[j].kv.mod_revision ==
						  m->events[i].kv.mod_revision)
			j++;
		rc = revision(a, &m->events[i], j - i, m->header.cluster_id);
		if (rc != 0) {
			a->need_range = a->need_range || rc == STOP_RANGE;
			return rc;
		}
		i = j;
	}
	return 0;
}

static int watch(struct cluster_applier *a)
{
	struct etcd_watch w = {
		.range = {.key = a->k_head,
			  .key_len = strlen(a->k_head),
			  .end = a->k_end,
			  .end_len = strlen(a->k_end)},
		.start_revision = a->rev + 1,
		.timeout_ms = WATCH_MS,
		.stop = a->stop,
	};
	struct lg_error err = {0};
	int rc = etcd_watch(a->e, &w, on_log_watch, a, &err);

	if (rc == LG_ERANGE) {
		applier_say("the watch from revision %lld: %s: reading ranges",
			    (long long)a->rev + 1, err.msg);
		a->need_range = true;
	}
	return rc == STOP_REFUSED ? STOP_REFUSED : 0;
}

/* ---------------------------------------------------------------------- */

void cluster__applier_run(cluster_applier_t *a,
			  const volatile sig_atomic_t *stop)
{
	LG_ASSERT(a != NULL && stop != NULL && a->stop == NULL);
	a->stop = stop;
	while (!*stop) {
		struct probe p;
		struct lg_error err = {0};
		int rc = probe(a, &p, &err);

		if (rc == 0)
			rc = history_check(a, &p, &err);
		if (rc == LG_EEXIST) {
			char msg[CLUSTER_MSG_MAX];

			snprintf(msg, sizeof(msg),
				 "refusing to write (DESIGN 11 rule 8): %s",
				 err.msg);
			applier_say("%s", msg);
			set_status_text(a, a->st.refused, msg);
			break;
		}
		if (rc != 0) {
			status_reach(a, rc != LG_EIO);
			set_status_text(a, a->st.stuck, err.msg);
			pause_unless_stopped(a, NAP_MS);
			continue;
		}
		status_progress(a, p.head.seq, false);
		if (a->need_range || a->rev == 0 ||
		    a->rev > p.header.revision ||
		    (p.head.seq > ledger_last_seq(a->lg) &&
		     p.head_rev <= a->rev)) {
			rc = catch_up(a, &p);
			if (rc == STOP_REFUSED)
				break;
			if (rc != 0) {
				pause_unless_stopped(a, NAP_MS);
				continue;
			}
		} else if (p.head.seq == ledger_last_seq(a->lg)) {
			status_progress(a, p.head.seq, true);
		}
		if (watch(a) == STOP_REFUSED)
			break;
	}
	/* Refused: reads go on from what the ledger holds; nothing more is
	 * written. */
	while (!*stop)
		pause_unless_stopped(a, NAP_MS);
}

int cluster__applier_new(cluster_applier_t **out, ledger_t *lg,
			 const struct etcd_opts *eo, const char *prefix,
			 struct lg_error *err)
{
	cluster_applier_t *a;
	struct probe p;
	int rc;

	LG_ASSERT(out != NULL && lg != NULL && eo != NULL);
	*out = NULL;
	if ((rc = cluster_prefix_check(prefix, err)) != 0)
		return rc;
	a = lg_xcalloc(1, sizeof(*a));
	a->lg = lg;
	pthread_mutex_init(&a->mu, NULL);
	snprintf(a->prefix, sizeof(a->prefix), "%s", prefix);
	cluster__key(a->k_epoch, KEY_MAX, prefix, "epoch");
	cluster__key(a->k_head, KEY_MAX, prefix, "head");
	/* The watch's keys: P/head, P/leader and P/log/... ("0" follows
	 * "/"). */
	cluster__key(a->k_end, KEY_MAX, prefix, "log0");
	a->rd.prefix = a->prefix;
	a->st.applied = ledger_last_seq(lg);
	if ((rc = ledger_cluster_meta_get(lg, &a->cm, &a->have_meta, err)) !=
		    0 ||
	    (rc = etcd_open(&a->e, eo, err)) != 0) {
		cluster__applier_free(a);
		return rc;
	}
	a->rd.etcd = a->e;
	a->rev = a->have_meta ? a->cm.revision : 0;
	if (a->have_meta)
		applier_say("resuming after seq %llu from revision %lld "
			    "(stored with "
			    "it)",
			    (unsigned long long)ledger_last_seq(lg),
			    (long long)a->rev + 1);
	/* Rule 8 at the start: a ledger of another history never starts. */
	if (probe(a, &p, err) == 0) {
		a->st.reachable = true;
		a->st.head_seq = p.head.seq;
		rc = history_check(a, &p, err);
		if (rc == LG_EEXIST) {
			cluster__applier_free(a);
			return rc;
		}
	}
	if (err != NULL)
		*err = (struct lg_error){0};
	*out = a;
	return 0;
}

void cluster__applier_free(cluster_applier_t *a)
{
	if (a == NULL)
		return;
	etcd_close(a->e);
	pthread_mutex_destroy(&a->mu);
	free(a);
}
