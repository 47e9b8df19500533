/*
 * The log in etcd (DESIGN 11): the bytes of one P/log/<s+1> value, built
 * by a writer at the state it judged on, and appended by a member's
 * applier to its LMDB.
 *
 * Why the writer checks so much: a value that some member cannot apply
 * would stop every member at that seq, for good (the log in etcd is never
 * rewritten). So the builder runs, on each event, every check that the
 * applier's append will run (the state, the bound, the decoding, the
 * Merkle leaf's text), on the state the writer judged on, before a byte
 * of the value goes to etcd. The applier checks again what it reads, and
 * its chain head against P/head, before its LMDB transaction begins.
 */
#include "ledger/store.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t logval_magic[4] = {'G', 'L', 'V', 1};

static void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void ledger_logval_release(struct ledger_logval *v)
{
	if (v == NULL)
		return;
	free(v->bytes);
	memset(v, 0, sizeof(*v));
}

/* The checks of one encoded event that the applier's append makes: it
 * decodes back (so it is canonical and valid) and its text is UTF-8. */
static int encoded_check(struct lg_buf *jbuf, const struct event *ev,
			 const uint8_t *p, size_t n, size_t i,
			 struct lg_error *err)
{
	uint8_t leaf[MERKLE_HASH_BYTES];
	struct event back;

	if (ledger__event_decode(&back, p, n, err) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "event %zu (seq %llu): does not decode "
				    "back: %s",
				    i, (unsigned long long)ev->seq,
				    err ? err->msg : "");
	if (ledger__store_leaf_hash(jbuf, ev, leaf) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "event %zu (seq %llu): text is not UTF-8",
				    i, (unsigned long long)ev->seq);
	return 0;
}

static int build(state_t *st, const uint8_t *head, struct event *evs,
		 size_t n, ledger_logval_fill_fn *fill, void *ctx,
		 size_t max_bytes, struct ledger_logval *out, size_t *taken,
		 struct lg_error *err)
{
	struct lg_buf jbuf;
	uint8_t h[LEDGER_HEAD_BYTES], *buf = NULL;
	uint64_t s;
	size_t used = LEDGER_LOGVAL_HEADER_BYTES, k = 0;
	int rc = 0;

	LG_ASSERT(st != NULL && head != NULL && out != NULL && taken != NULL);
	LG_ASSERT(n == 0 || evs != NULL);
	memset(out, 0, sizeof(*out));
	*taken = 0;
	if (n == 0)
		return lg_error_set(err, LG_EINVAL, "a value holds events");
	s = state_seq(st);
	memcpy(h, head, LEDGER_HEAD_BYTES);
	lg_buf_init(&jbuf, LEDGER_LEAF_TEXT_MAX_BYTES);
	for (; k < n && k < LEDGER_BATCH_MAX; k++) {
		struct event *ev = &evs[k];
		size_t need;

		ev->seq = s + 1 + k;
		/* DESIGN 11: a verdict's record names the head before it,
		 * which depends on the bytes of the events before it in the
		 * same value: the caller writes it here, one event at a
		 * time. */
		if (fill != NULL && (rc = fill(ctx, k, ev, h, err)) != 0)
			break;
		/* Time never goes back: the clamp of ledger_append, made
		 * here, so that the bytes chained are the bytes stored. */
		if (ev->time_ns < state_time_ns(st))
			ev->time_ns = state_time_ns(st);
		need = ledger__event_encode(ev, NULL, 0);
		if (need > LEDGER_EVENT_MAX_BYTES) {
			rc = lg_error_set(err, LG_ELIMIT,
					  "event %zu (seq %llu): %zu bytes, "
					  "more than %u",
					  k, (unsigned long long)ev->seq, need,
					  LEDGER_EVENT_MAX_BYTES);
			break;
		}
		if (used + 4 + need > max_bytes) {
			if (k == 0)
				rc = lg_error_set(
					err, LG_ELIMIT,
					"event 0 (seq %llu): %zu bytes do not "
					"fit a value of at most %zu bytes",
					(unsigned long long)ev->seq, need,
					max_bytes);
			break;
		}
		if ((rc = state_apply(st, ev, err)) != 0) {
			char msg[LG_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
			rc = lg_error_set(err, rc,
					  "event %zu does not fit the state: "
					  "%s",
					  k, msg);
			break;
		}
		buf = lg_xrealloc(buf, used + 4 + need);
		le32_put(buf + used, (uint32_t)need);
		LG_ASSERT(ledger__event_encode(ev, buf + used + 4, need) ==
			  need);
		if ((rc = encoded_check(&jbuf, ev, buf + used + 4, need, k,
					err)) != 0)
			break;
		ledger__chain_step(h, buf + used + 4, need, h);
		used += 4 + need;
	}
	lg_buf_release(&jbuf);
	if (rc != 0) {
		free(buf);
		*taken = k; /* the event that failed */
		return rc;
	}
	memcpy(buf, logval_magic, 4);
	ledger__store_le64_put(buf + 4, s + 1);
	le32_put(buf + 12, (uint32_t)k);
	memcpy(buf + 16, h, LEDGER_HEAD_BYTES);
	*out = (struct ledger_logval){.bytes = buf,
				      .len = used,
				      .first_seq = s + 1,
				      .last_seq = s + k,
				      .n = k,
				      .time_ns = evs[k - 1].time_ns};
	memcpy(out->head, h, LEDGER_HEAD_BYTES);
	*taken = k;
	return 0;
}

static int bad(struct lg_error *err, uint64_t first, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct lg_error *err, uint64_t first, const char *fmt, ...)
{
	char msg[160];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return lg_error_set(err, LG_ECORRUPT, "the value of P/log/%llu: %s",
			    (unsigned long long)first, msg);
}

int ledger_logval_read(const uint8_t *v, size_t len, uint64_t first_seq,
		       const uint8_t *head_prev, ledger_logval_fn *fn,
		       void *ctx, struct ledger_logval *info,
		       struct lg_error *err)
{
	uint8_t h[LEDGER_HEAD_BYTES];
	uint64_t first;
	uint32_t n;
	size_t pos = LEDGER_LOGVAL_HEADER_BYTES;
	int64_t t = INT64_MIN;
	int rc;

	LG_ASSERT(v != NULL || len == 0);
	if (info != NULL)
		memset(info, 0, sizeof(*info));
	if (len < LEDGER_LOGVAL_HEADER_BYTES || memcmp(v, logval_magic, 4))
		return bad(err, first_seq, "not a log value (%zu bytes)", len);
	first = ledger__store_le64_get(v + 4);
	n = le32_get(v + 12);
	if (first_seq != 0 && first != first_seq)
		return bad(err, first_seq, "it says first seq %llu, not %llu",
			   (unsigned long long)first,
			   (unsigned long long)first_seq);
	if (first == 0 || n == 0 || n > LEDGER_BATCH_MAX ||
	    first + n - 1 < first)
		return bad(err, first, "first seq %llu and %u events",
			   (unsigned long long)first, (unsigned)n);
	if (head_prev != NULL)
		memcpy(h, head_prev, LEDGER_HEAD_BYTES);
	for (uint32_t i = 0; i < n; i++) {
		struct event ev;
		uint64_t seq = first + i;
		size_t k;

		if (len - pos < 4 ||
		    (k = le32_get(v + pos)) > LEDGER_EVENT_MAX_BYTES ||
		    k > len - pos - 4)
			return bad(err, first,
				   "seq %llu: its record runs past "
				   "the value's %llu bytes",
				   (unsigned long long)seq,
				   (unsigned long long)len);
		if (ledger__event_decode(&ev, v + pos + 4, k, err) != 0) {
			char msg[LG_ERRMSG_MAX];

			snprintf(msg, sizeof(msg), "%s", err ? err->msg : "");
			return lg_error_set(err, LG_ECORRUPT,
					    "the value of P/log/%llu: seq "
					    "%llu: %s",
					    (unsigned long long)first,
					    (unsigned long long)seq, msg);
		}
		if (ev.seq != seq)
			return bad(err, first, "record %llu says seq %llu",
				   (unsigned long long)seq,
				   (unsigned long long)ev.seq);
		if (ev.time_ns < t)
			return bad(err, first, "seq %llu: time goes back",
				   (unsigned long long)seq);
		t = ev.time_ns;
		if (head_prev != NULL)
			ledger__chain_step(h, v + pos + 4, k, h);
		if (fn != NULL && (rc = fn(ctx, &ev)) != 0)
			return rc;
		pos += 4 + k;
	}
	if (pos != len)
		return bad(err, first, "%zu bytes after its last record",
			   len - pos);
	if (head_prev != NULL && memcmp(h, v + 16, LEDGER_HEAD_BYTES) != 0)
		return bad(err, first,
			   "its events chain to another head than the one it "
			   "names (seqs %llu..%llu)",
			   (unsigned long long)first,
			   (unsigned long long)(first + n - 1));
	if (info != NULL) {
		info->first_seq = first;
		info->last_seq = first + n - 1;
		info->n = n;
		info->time_ns = t;
		memcpy(info->head, v + 16, LEDGER_HEAD_BYTES);
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* The applier's append */

#define META_ID	      "cluster.id"
#define META_EPOCH    "cluster.epoch"
#define META_PREFIX   "cluster.prefix"
#define META_REVISION "cluster.revision"
#define META_SEQ      "cluster.seq"

struct collect {
	struct event *evs;
	size_t n, cap;
};

static int collect_one(void *ctx, const struct event *ev)
{
	struct collect *c = ctx;

	LG_ASSERT(c->n < c->cap);
	c->evs[c->n++] = *ev;
	return 0;
}

static void hex(const uint8_t *h, char *out)
{
	lg_hex(h, LEDGER_HEAD_BYTES, out);
}

int ledger_append_logval(ledger_t *lg, const uint8_t *v, size_t len,
			 const uint8_t *expect_head,
			 const struct ledger_cluster_meta *cm,
			 uint8_t *head_out, struct lg_error *err)
{
	struct ledger_logval info;
	struct collect c = {0};
	char id[24], rev[24], seq[24];
	struct ledger_meta meta[5];
	struct ledger_batch b = {.meta = meta, .n_meta = 5};
	uint64_t last;
	int rc;

	LG_ASSERT(lg != NULL && cm != NULL);
	if ((rc = ledger_refresh(lg, err)) != 0)
		return rc;
	last = lg->seq;
	/* The frame's first seq and count, before a record is read: the
	 * value must be the next one, and its count bounds the array. */
	if (len >= LEDGER_LOGVAL_HEADER_BYTES &&
	    memcmp(v, logval_magic, 4) == 0) {
		uint32_t n = le32_get(v + 12);
		uint64_t first = ledger__store_le64_get(v + 4);

		if (first != last + 1)
			return lg_error_set(err, LG_EMISMATCH,
					    "P/log/%llu is not the next value: "
					    "the ledger is at seq %llu",
					    (unsigned long long)first,
					    (unsigned long long)last);
		c.cap = n > 0 && n <= LEDGER_BATCH_MAX ? n : 0;
		c.evs = lg_xcalloc(c.cap ? c.cap : 1, sizeof(*c.evs));
	}
	rc = ledger_logval_read(v, len, last + 1, lg->head,
				c.evs ? collect_one : NULL, &c, &info, err);
	if (rc == 0 && c.evs[0].time_ns < state_time_ns(lg->st))
		rc = lg_error_set(err, LG_EMISMATCH,
				  "seq %llu: time goes back from the ledger's",
				  (unsigned long long)info.first_seq);
	if (rc == 0 && expect_head != NULL &&
	    memcmp(info.head, expect_head, LEDGER_HEAD_BYTES) != 0) {
		char mine[2 * LEDGER_HEAD_BYTES + 1],
			theirs[2 * LEDGER_HEAD_BYTES + 1];

		hex(info.head, mine);
		hex(expect_head, theirs);
		rc = lg_error_set(err, LG_EMISMATCH,
				  "seqs %llu..%llu: the chain head after seq "
				  "%llu would be %s, P/head says %s",
				  (unsigned long long)info.first_seq,
				  (unsigned long long)info.last_seq,
				  (unsigned long long)info.last_seq, mine,
				  theirs);
	}
	if (rc != 0)
		goto out;
	snprintf(id, sizeof(id), "%016" PRIx64, cm->cluster_id);
	snprintf(rev, sizeof(rev), "%" PRId64, cm->revision);
	snprintf(seq, sizeof(seq), "%" PRIu64, info.last_seq);
	meta[0] = (struct ledger_meta){META_ID, id, strlen(id)};
	meta[1] =
		(struct ledger_meta){META_EPOCH, cm->epoch, strlen(cm->epoch)};
	meta[2] = (struct ledger_meta){META_PREFIX, cm->prefix,
				       strlen(cm->prefix)};
	meta[3] = (struct ledger_meta){META_REVISION, rev, strlen(rev)};
	meta[4] = (struct ledger_meta){META_SEQ, seq, strlen(seq)};
	rc = ledger__store_append_at(lg, c.evs, c.n, &b, last, err);
	/* The bytes appended are the value's: the encoding is canonical
	 * (codec.c), so the append chained to the same head. */
	if (rc == 0)
		LG_ASSERT(memcmp(lg->head, info.head, LEDGER_HEAD_BYTES) == 0);
	if (rc == 0 && head_out != NULL)
		memcpy(head_out, lg->head, LEDGER_HEAD_BYTES);
out:
	free(c.evs);
	return rc;
}

/* One meta text into buf (cap bytes, NUL-terminated); *present false when
 * absent. */
static int meta_text(ledger_t *lg, const char *key, char *buf, size_t cap,
		     bool *present, struct lg_error *err)
{
	size_t len = 0;
	int rc = ledger_meta_get(lg, key, buf, cap - 1, &len, err);

	*present = rc == 0;
	buf[rc == 0 ? len : 0] = '\0';
	if (rc == LG_ENOENT)
		return 0;
	if (rc == LG_ERANGE)
		return lg_error_set(err, LG_ECORRUPT, "meta %s: too long", key);
	return rc;
}

int ledger_cluster_meta_get(ledger_t *lg, struct ledger_cluster_meta *cm,
			    bool *present, struct lg_error *err)
{
	char id[24], rev[24], seq[24], *end;
	bool p[5];
	int rc;

	LG_ASSERT(lg != NULL && cm != NULL && present != NULL);
	memset(cm, 0, sizeof(*cm));
	*present = false;
	if ((rc = meta_text(lg, META_EPOCH, cm->epoch, sizeof(cm->epoch), &p[0],
			    err)) != 0 ||
	    (rc = meta_text(lg, META_ID, id, sizeof(id), &p[1], err)) != 0 ||
	    (rc = meta_text(lg, META_PREFIX, cm->prefix, sizeof(cm->prefix),
			    &p[2], err)) != 0 ||
	    (rc = meta_text(lg, META_REVISION, rev, sizeof(rev), &p[3], err)) !=
		    0 ||
	    (rc = meta_text(lg, META_SEQ, seq, sizeof(seq), &p[4], err)) != 0)
		return rc;
	if (!p[0] && !p[1] && !p[2] && !p[3] && !p[4])
		return 0;
	if (!(p[0] && p[1] && p[2] && p[3] && p[4]))
		return lg_error_set(err, LG_ECORRUPT,
				    "meta cluster.*: some of the keys only");
	cm->cluster_id = strtoull(id, &end, 16);
	if (*end != '\0' || id[0] == '\0')
		return lg_error_set(err, LG_ECORRUPT, "meta %s: \"%s\"",
				    META_ID, id);
	cm->revision = strtoll(rev, &end, 10);
	if (*end != '\0' || rev[0] == '\0' || cm->revision < 0)
		return lg_error_set(err, LG_ECORRUPT, "meta %s: \"%s\"",
				    META_REVISION, rev);
	cm->seq = strtoull(seq, &end, 10);
	if (*end != '\0' || seq[0] == '\0')
		return lg_error_set(err, LG_ECORRUPT, "meta %s: \"%s\"",
				    META_SEQ, seq);
	*present = true;
	return 0;
}

int ledger_logval_build(state_t *st, const uint8_t *head, struct event *evs,
			size_t n, size_t max_bytes, struct ledger_logval *out,
			size_t *taken, struct lg_error *err)
{
	return build(st, head, evs, n, NULL, NULL, max_bytes, out, taken, err);
}

int ledger_logval_build_each(state_t *st, const uint8_t *head,
			     struct event *evs, size_t n,
			     ledger_logval_fill_fn *fill, void *ctx,
			     size_t max_bytes, struct ledger_logval *out,
			     size_t *taken, struct lg_error *err)
{
	LG_ASSERT(fill != NULL);
	return build(st, head, evs, n, fill, ctx, max_bytes, out, taken, err);
}
