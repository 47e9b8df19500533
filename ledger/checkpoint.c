/*
 * Checkpoints (DESIGN 4.3): the record that holds the full state at a seq,
 * and the rebuild of the state at any seq from the latest sound one plus
 * the events after it.
 *
 * A record is a frame (ledger_int.h: magic, version, seq, the chain head
 * at seq, the state's length), the state's encoding and a SHA-256 digest
 * of both. The digest only catches accidents: anyone who edits a
 * checkpoint can recompute it, so a checkpoint is trusted only when the
 * head it claims is the one the chain stores at its seq.
 */
#include "ledger/store.h"

#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>

/* Builds a checkpoint record of st (caller frees *out). */
void ledger__store_cp_build(const state_t *st, const uint8_t *head,
			    uint8_t **out, size_t *len)
{
	uint8_t *sbuf, *rec;
	size_t slen, n;
	/* state_encode fails only when jansson cannot allocate, and running
	 * out of memory aborts (one policy, STYLE "Errors and memory"). */
	int rc = state_encode(st, &sbuf, &slen);

	LG_ASSERT(rc == 0);
	n = LEDGER_CP_HEADER + slen + SHA256_DIGEST_LENGTH;
	rec = lg_xmalloc(n);
	memcpy(rec, LEDGER_CP_MAGIC, 4);
	rec[4] = LEDGER_CP_VERSION;
	rec[5] = rec[6] = rec[7] = 0;
	ledger__store_le64_put(rec + 8, state_seq(st));
	memcpy(rec + 16, head, LEDGER_HEAD_BYTES);
	ledger__store_le64_put(rec + 16 + LEDGER_HEAD_BYTES, slen);
	memcpy(rec + LEDGER_CP_HEADER, sbuf, slen);
	SHA256(rec, LEDGER_CP_HEADER + slen, rec + LEDGER_CP_HEADER + slen);
	free(sbuf);
	*out = rec;
	*len = n;
}

/* Checks a checkpoint record's frame; on success sbytes and slen are the
 * state encoding inside it and *head the chain head it claims. */
int ledger__store_cp_open(const MDB_val *v, uint64_t seq,
			  const uint8_t **sbytes, size_t *slen,
			  const uint8_t **head, struct lg_error *err)
{
	const uint8_t *p = v->mv_data;
	uint8_t digest[SHA256_DIGEST_LENGTH];
	uint64_t n;

	if (v->mv_size < LEDGER_CP_HEADER + SHA256_DIGEST_LENGTH ||
	    memcmp(p, LEDGER_CP_MAGIC, 4) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: bad frame",
				    (unsigned long long)seq);
	if (p[4] != LEDGER_CP_VERSION || p[5] || p[6] || p[7])
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: version %u",
				    (unsigned long long)seq, p[4]);
	n = ledger__store_le64_get(p + 16 + LEDGER_HEAD_BYTES);
	if (ledger__store_le64_get(p + 8) != seq ||
	    n != v->mv_size - LEDGER_CP_HEADER - SHA256_DIGEST_LENGTH)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: bad header",
				    (unsigned long long)seq);
	SHA256(p, LEDGER_CP_HEADER + n, digest);
	if (memcmp(digest, p + LEDGER_CP_HEADER + n, sizeof(digest)) != 0)
		return lg_error_set(err, LG_ECORRUPT,
				    "checkpoint %llu: digest mismatch",
				    (unsigned long long)seq);
	*head = p + 16;
	*sbytes = p + LEDGER_CP_HEADER;
	*slen = n;
	return 0;
}

/* The checkpoint in val, stored at seq at, when it is sound: its frame and
 * digest, its state's seq, and the head it claims equal to the head the
 * chain stores at that seq (the digest is plain SHA-256 that anyone who
 * edits a checkpoint can recompute; the chain is what binds it). */
static state_t *sound_checkpoint(ledger_t *lg, MDB_txn *txn, uint64_t at,
				 const MDB_val *val, uint8_t *head)
{
	const uint8_t *sb, *h;
	uint8_t chain[LEDGER_HEAD_BYTES];
	size_t sl;
	struct event ev;
	state_t *st = NULL;

	/* The head of a record that decodes: a checkpoint at a damaged
	 * record is passed over. */
	if (ledger__store_cp_open(val, at, &sb, &sl, &h, NULL) != 0 ||
	    ledger__store_head_at(lg, txn, at, chain, &ev, NULL) != 0 ||
	    memcmp(h, chain, LEDGER_HEAD_BYTES) != 0 ||
	    state_decode(&st, sb, sl, NULL) != 0)
		return NULL;
	if (state_seq(st) != at) {
		state_free(st);
		return NULL;
	}
	memcpy(head, h, LEDGER_HEAD_BYTES);
	return st;
}

/* The state at seq from the latest sound checkpoint <= seq, in txn. A
 * checkpoint whose state the tail does not apply to (a state edited along
 * with its digest) is skipped too, and the next older one tried; a state
 * edit the tail never touches is found only by verify's replay. */
int ledger__store_state_at(ledger_t *lg, MDB_txn *txn, uint64_t seq,
			   state_t **out, uint8_t *head, unsigned *skipped,
			   struct lg_error *err)
{
	uint64_t k = seq, last;
	MDB_val key = ledger__store_key(&k), val;
	MDB_cursor *cur;
	state_t *st = NULL;
	int rc, crc;

	*skipped = 0;
	memset(head, 0, LEDGER_HEAD_BYTES);
	if ((rc = ledger__store_last_key(lg, txn, LEDGER_DB_EVENTS, &last,
					 err)) != 0)
		return rc;
	if (seq > last)
		return lg_error_set(
			err, LG_ENOENT, "seq %llu is past the log (last %llu)",
			(unsigned long long)seq, (unsigned long long)last);
	rc = mdb_cursor_open(txn, lg->dbi[LEDGER_DB_CHECKPOINTS], &cur);
	if (rc != 0)
		return ledger__store_error(err, rc, "open cursor");
	crc = ledger__store_cursor_get(lg, cur, LEDGER_DB_CHECKPOINTS, &key,
				       &val, MDB_SET_RANGE);
	if (crc == MDB_NOTFOUND)
		crc = ledger__store_cursor_get(lg, cur, LEDGER_DB_CHECKPOINTS,
					       &key, &val, MDB_LAST);
	for (;;) {
		uint64_t at = 0;

		st = NULL;
		for (; crc == 0; crc = ledger__store_cursor_get(
					 lg, cur, LEDGER_DB_CHECKPOINTS, &key,
					 &val, MDB_PREV)) {
			at = ledger__store_keyval(&key);
			if (at > seq)
				continue;
			if ((st = sound_checkpoint(lg, txn, at, &val, head)))
				break;
			(*skipped)++;
		}
		if (crc != 0 && crc != MDB_NOTFOUND) {
			rc = ledger__store_read_error(lg, err, crc, 0,
						      "read checkpoints");
			break;
		}
		if (st == NULL) {
			memset(head, 0, LEDGER_HEAD_BYTES);
			st = state_new();
		}
		rc = ledger__store_apply_fast(lg, txn, st, seq, head, err);
		if (rc == 0 && state_seq(st) != seq)
			rc = lg_error_set(err, LG_ENOENT,
					  "seq %llu is past the log",
					  (unsigned long long)seq);
		if (rc == 0 || crc != 0 || rc != LG_EMISMATCH)
			break;
		/* From genesis the same tail would tell the truth. */
		state_free(st);
		st = NULL;
		(*skipped)++;
		crc = ledger__store_cursor_get(lg, cur, LEDGER_DB_CHECKPOINTS,
					       &key, &val, MDB_PREV);
	}
	mdb_cursor_close(cur);
	if (rc != 0) {
		state_free(st);
		return rc;
	}
	*out = st;
	return 0;
}

uint64_t ledger_checkpoint_seq(const ledger_t *lg)
{
	LG_ASSERT(lg != NULL);
	return lg->cp_seq;
}
