/*
 * The verdict index kept in meta.
 *
 * A server starting up needs the number of verdicts (the next id) and, for
 * lookups, the seq of each; counting them by reading the log made every
 * start O(history). So every append writes, in its own transaction, "vid"
 * + big-endian id -> seq for each VERDICT event, and one "vidx" record
 * (count, upto, content seq): the index and the events can never disagree.
 * A log written before the index existed has a gap (upto < last); a writer
 * fills it once, in one transaction.
 *
 * The same transaction indexes each VERDICT's AdmissionReview uid (DESIGN
 * 11 rule 3: one review, one verdict): "vid" 0xff + uid -> the seq of the
 * first record judged for it, "vid" 0xfd + key the same for a plain
 * request's Idempotency-Key, and "vid" 0xfe -> the last seq so indexed
 * (its own gap, filled the same way, for logs from before it). An id's key
 * is "vid" + 8 big-endian bytes of an id below 2^63, whose first byte is at
 * most 0x7f: the four kinds of key cannot meet.
 */
#include "ledger/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIDX_KEY     "vidx"
#define VID_PREFIX   "vid"
#define VID_KEY_BYTES (3 + 8)
#define VUID_MARK     0xff /* "vid" 0xff + review uid -> seq */
#define VUIDX_MARK    0xfe /* "vid" 0xfe -> last seq indexed by uid */
#define VKEY_MARK     0xfd /* "vid" 0xfd + Idempotency-Key -> seq */
#define VUID_KEY_MAX  (4 + sizeof(((struct verdict_key *)0)->s))

static void vid_key(uint64_t id, uint8_t *k)
{
	memcpy(k, VID_PREFIX, 3);
	for (int i = 0; i < 8; i++)
		k[3 + i] = (uint8_t)(id >> (56 - 8 * i));
}

static int vidx_read(ledger_t *lg, MDB_txn *txn, struct ledger_vindex *vi)
{
	MDB_val k = {.mv_size = 4, .mv_data = VIDX_KEY}, v;
	int rc = ledger__store_get(lg, txn, LEDGER_DB_META, &k, &v);

	memset(vi, 0, sizeof(*vi));
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc == 0 && v.mv_size != 24)
		return MDB_CORRUPTED;
	if (rc == 0) {
		const uint8_t *p = v.mv_data;

		vi->count = ledger__store_le64_get(p);
		vi->upto = ledger__store_le64_get(p + 8);
		vi->content_seq = ledger__store_le64_get(p + 16);
	}
	return rc;
}

static int vidx_write(ledger_t *lg, MDB_txn *txn,
		      const struct ledger_vindex *vi)
{
	uint8_t b[24];
	MDB_val k = {.mv_size = 4, .mv_data = VIDX_KEY},
		v = {.mv_size = sizeof(b), .mv_data = b};

	ledger__store_le64_put(b, vi->count);
	ledger__store_le64_put(b + 8, vi->upto);
	ledger__store_le64_put(b + 16, vi->content_seq);
	return mdb_put(txn, lg->dbi[LEDGER_DB_META], &k, &v, 0);
}

/* Adds one event of type `type` at seq to the index (and its entry). */
static int vidx_add(ledger_t *lg, MDB_txn *txn, struct ledger_vindex *vi,
		    enum event_type type, uint64_t seq)
{
	int rc = 0;

	if (type == EV_VERDICT) {
		uint8_t kb[VID_KEY_BYTES], vb[8];
		MDB_val k = {.mv_size = sizeof(kb), .mv_data = kb},
			v = {.mv_size = sizeof(vb), .mv_data = vb};

		vid_key(++vi->count, kb);
		ledger__store_le64_put(vb, seq);
		rc = mdb_put(txn, lg->dbi[LEDGER_DB_META], &k, &v, 0);
	} else if (type != EV_NOTE && type != EV_TICK) {
		vi->content_seq = seq;
	}
	vi->upto = seq;
	return rc;
}

/* Both indexes catch up with a log older than they are the same way: fn
 * for each stored event from .. to, read in txn. Returns an LMDB code (or
 * fn's); a record that does not decode is MDB_CORRUPTED (verify names
 * it). */
typedef int fill_fn(ledger_t *lg, MDB_txn *txn, void *ctx,
		    const struct event *ev, uint64_t seq);
static int fill_from_log(ledger_t *lg, MDB_txn *txn, uint64_t from, uint64_t to,
			 fill_fn *fn, void *ctx)
{
	uint64_t k = from;
	MDB_val key = ledger__store_key(&k), val;
	MDB_cursor *cur;
	int rc, op = MDB_SET_KEY;

	if (from > to)
		return 0;
	if ((rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_EVENTS], &cur)) != 0)
		return rc;
	for (; rc == 0 && k <= to; k++, op = MDB_NEXT) {
		struct event ev;
		const uint8_t *h;

		rc = ledger__store_cursor_get(lg, cur, LEDGER_DB_EVENTS, &key,
					      &val, op);
		if (rc == 0 &&
		    (ledger__store_keyval(&key) != k ||
		     ledger__store_record_decode(&val, k, &ev, &h, NULL) != 0))
			rc = MDB_CORRUPTED;
		if (rc == 0)
			rc = fn(lg, txn, ctx, &ev, k);
	}
	mdb_cursor_close(cur);
	return rc;
}

static int vidx_fill_one(ledger_t *lg, MDB_txn *txn, void *ctx,
			 const struct event *ev, uint64_t seq)
{
	return vidx_add(lg, txn, ctx, ev->type, seq);
}

/* Indexes the stored events vi->upto + 1 .. to (a log older than the
 * index). */
static int vidx_fill(ledger_t *lg, MDB_txn *txn, struct ledger_vindex *vi,
		     uint64_t to)
{
	return fill_from_log(lg, txn, vi->upto + 1, to, vidx_fill_one, vi);
}

/* The uid index's key of uid into k; its length. */
/* A review uid's key is "vid" 0xff + uid, an Idempotency-Key's "vid" 0xfd +
 * key: a key names only its own kind. */
static size_t vuid_key(const struct verdict_key *vk, uint8_t *k)
{
	size_t n = strlen(vk->s);

	LG_ASSERT(vk->kind == VERDICT_KEY_REVIEW ||
		  vk->kind == VERDICT_KEY_IDEMPOTENCY);
	LG_ASSERT(n >= 1 && n < sizeof(vk->s));
	memcpy(k, VID_PREFIX, 3);
	k[3] = vk->kind == VERDICT_KEY_REVIEW ? VUID_MARK : VKEY_MARK;
	memcpy(k + 4, vk->s, n);
	return 4 + n;
}

static int vuidx_read(ledger_t *lg, MDB_txn *txn, uint64_t *upto)
{
	uint8_t kb[4] = {'v', 'i', 'd', VUIDX_MARK};
	MDB_val k = {.mv_size = sizeof(kb), .mv_data = kb}, v;
	int rc = ledger__store_get(lg, txn, LEDGER_DB_META, &k, &v);

	*upto = 0;
	if (rc == MDB_NOTFOUND)
		return 0;
	if (rc == 0 && v.mv_size != 8)
		return MDB_CORRUPTED;
	if (rc == 0)
		*upto = ledger__store_le64_get(v.mv_data);
	return rc;
}

static int vuidx_write(ledger_t *lg, MDB_txn *txn, uint64_t upto)
{
	uint8_t kb[4] = {'v', 'i', 'd', VUIDX_MARK}, b[8];
	MDB_val k = {.mv_size = sizeof(kb), .mv_data = kb},
		v = {.mv_size = sizeof(b), .mv_data = b};

	ledger__store_le64_put(b, upto);
	return mdb_put(txn, lg->dbi[LEDGER_DB_META], &k, &v, 0);
}

/* Indexes the review uid of a VERDICT at seq (text: its record); the first
 * record of a uid keeps it (a log from before rule 3 may repeat one). */
static int vuid_add(ledger_t *lg, MDB_txn *txn, const struct event *ev,
		    uint64_t seq)
{
	struct verdict_key vk;
	uint8_t kb[VUID_KEY_MAX], vb[8];
	MDB_val k = {.mv_data = kb}, v = {.mv_size = sizeof(vb), .mv_data = vb};
	int rc;

	if (ev->type != EV_VERDICT || ev->text == NULL ||
	    verdict_record_key(ev->text, strlen(ev->text), &vk) != 1)
		return 0;
	k.mv_size = vuid_key(&vk, kb);
	ledger__store_le64_put(vb, seq);
	rc = mdb_put(txn, lg->dbi[LEDGER_DB_META], &k, &v, MDB_NOOVERWRITE);
	return rc == MDB_KEYEXIST ? 0 : rc;
}

static int vuid_fill_one(ledger_t *lg, MDB_txn *txn, void *ctx,
			 const struct event *ev, uint64_t seq)
{
	return vuid_add(lg, txn, ev, seq);
}

/* Indexes the review uids of the stored events from .. to. */
static int vuid_fill(ledger_t *lg, MDB_txn *txn, uint64_t from, uint64_t to)
{
	return fill_from_log(lg, txn, from, to, vuid_fill_one, NULL);
}

/* Brings the uid index to `to`, then adds evs (seqs first..). */
static int vuid_put(ledger_t *lg, MDB_txn *txn, const struct event *evs,
		    uint64_t first, size_t n, uint64_t to)
{
	uint64_t upto;
	int rc = vuidx_read(lg, txn, &upto);

	if (rc == 0 && upto < to)
		rc = vuid_fill(lg, txn, upto + 1, to);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vuid_add(lg, txn, &evs[i], first + i);
	if (rc == 0 && (n > 0 || upto < to))
		rc = vuidx_write(lg, txn, n > 0 ? first + n - 1 : to);
	return rc;
}

int ledger__store_vidx_put(ledger_t *lg, MDB_txn *txn, const struct event *evs,
			   uint64_t first, size_t n)
{
	struct ledger_vindex vi;
	int rc = vidx_read(lg, txn, &vi);

	if (rc == 0 && vi.upto + 1 < first)
		rc = vidx_fill(lg, txn, &vi, first - 1);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = vidx_add(lg, txn, &vi, evs[i].type, first + i);
	if (rc == 0 && n > 0)
		rc = vidx_write(lg, txn, &vi);
	if (rc == 0 && n > 0)
		rc = vuid_put(lg, txn, evs, first, n, first - 1);
	return rc;
}

int ledger_verdict_index(ledger_t *lg, struct ledger_vindex *vi,
			 struct lg_error *err)
{
	MDB_txn *txn;
	uint64_t last = 0;
	int rc;

	LG_ASSERT(lg != NULL && vi != NULL);
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	uint64_t uid_upto = 0;

	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0 && ((rc = vidx_read(lg, txn, vi)) != 0 ||
			(rc = vuidx_read(lg, txn, &uid_upto)) != 0))
		rc = ledger__store_read_error(lg, err, rc, 0,
					      "read the verdict index");
	mdb_txn_abort(txn);
	if (rc != 0 || (vi->upto >= last && uid_upto >= last) ||
	    lg->o.read_only)
		return rc;
	/* A gap: fill it once, under the writers' lock. */
	if ((rc = ledger__store_txn_begin(lg, 0, &txn, err)) != 0)
		return rc;
	rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last, err);
	if (rc == 0) {
		rc = vidx_read(lg, txn, vi);
		if (rc == 0 && vi->upto < last &&
		    (rc = vidx_fill(lg, txn, vi, last)) == 0)
			rc = vidx_write(lg, txn, vi);
		if (rc == 0)
			rc = vuid_put(lg, txn, NULL, last + 1, 0, last);
		if (rc == 0)
			rc = mdb_txn_commit(txn);
		else
			mdb_txn_abort(txn);
		if (rc != 0)
			rc = ledger__store_read_error(
				lg, err, rc, 0, "write the verdict index");
	} else {
		mdb_txn_abort(txn);
	}
	return rc;
}

int ledger_verdict_seq(ledger_t *lg, uint64_t id, uint64_t *seq,
		       struct lg_error *err)
{
	MDB_txn *txn;
	uint8_t kb[VID_KEY_BYTES];
	MDB_val k = {.mv_size = sizeof(kb), .mv_data = kb}, v;
	int rc;

	LG_ASSERT(lg != NULL && seq != NULL);
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	vid_key(id, kb);
	rc = ledger__store_get(lg, txn, LEDGER_DB_META, &k, &v);
	if (rc == 0 && v.mv_size == 8)
		*seq = ledger__store_le64_get(v.mv_data);
	else if (rc == 0)
		rc = lg_error_set(err, LG_ECORRUPT,
				  "verdict %llu: bad index entry",
				  (unsigned long long)id);
	else if (rc == MDB_NOTFOUND)
		rc = lg_error_set(err, LG_ENOENT, "no verdict %llu",
				  (unsigned long long)id);
	else
		rc = ledger__store_read_error(lg, err, rc, 0,
					      "read the verdict index");
	mdb_txn_abort(txn);
	return rc;
}

int ledger_verdict_by_key(ledger_t *lg, const struct verdict_key *vk,
			  uint64_t *seq, struct lg_error *err)
{
	MDB_txn *txn;
	uint8_t kb[VUID_KEY_MAX];
	MDB_val k = {.mv_data = kb}, v;
	const char *what = vk->kind == VERDICT_KEY_REVIEW ? "review uid"
							  : "Idempotency-Key";
	int rc;

	LG_ASSERT(lg != NULL && vk != NULL && seq != NULL);
	if (vk->kind == VERDICT_KEY_NONE || vk->s[0] == '\0')
		return lg_error_set(err, LG_ENOENT, "no verdict for no key");
	if ((rc = ledger__store_txn_begin(lg, MDB_RDONLY, &txn, err)) != 0)
		return rc;
	k.mv_size = vuid_key(vk, kb);
	rc = ledger__store_get(lg, txn, LEDGER_DB_META, &k, &v);
	if (rc == 0 && v.mv_size == 8)
		*seq = ledger__store_le64_get(v.mv_data);
	else if (rc == 0)
		rc = lg_error_set(err, LG_ECORRUPT,
				  "%s \"%s\": bad index entry", what, vk->s);
	else if (rc == MDB_NOTFOUND)
		rc = lg_error_set(err, LG_ENOENT, "no verdict for %s \"%s\"",
				  what, vk->s);
	else
		rc = ledger__store_read_error(lg, err, rc, 0,
					      "read the verdict index");
	mdb_txn_abort(txn);
	return rc;
}

/* Whether k is a key of the uid index ("vid" 0xfd + key, "vid" 0xfe or
 * "vid" 0xff + uid). */
static bool vuid_owned(const MDB_val *k)
{
	return k->mv_size >= 4 && memcmp(k->mv_data, VID_PREFIX, 3) == 0 &&
	       ((const uint8_t *)k->mv_data)[3] >= VKEY_MARK;
}

int ledger__raw_vuid_drop(ledger_t *lg, struct lg_error *err)
{
	uint8_t first[4] = {'v', 'i', 'd', VKEY_MARK};
	MDB_cursor *cur = NULL;
	MDB_txn *txn;
	int rc = ledger__store_txn_begin(lg, 0, &txn, err);

	if (rc != 0)
		return rc;
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_META], &cur);
	while (rc == 0) {
		MDB_val k = {.mv_size = sizeof(first), .mv_data = first}, v;

		rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
		if (rc != 0 || !vuid_owned(&k))
			break;
		rc = mdb_cursor_del(cur, 0);
	}
	if (rc == MDB_NOTFOUND || rc == 0)
		rc = 0;
	if (cur != NULL)
		mdb_cursor_close(cur);
	rc = rc ? (mdb_txn_abort(txn), rc) : mdb_txn_commit(txn);
	return rc ? ledger__store_error(err, rc, "drop the uid index") : 0;
}
