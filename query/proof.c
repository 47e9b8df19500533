/*
 * Transparency over HTTP (DESIGN 4.4, 7): GET /v1/checkpoint (the latest
 * signed note, text/plain), /v1/proof/inclusion?seq=N[&size=M],
 * /v1/proof/consistency?from=M&to=N, the proof of a verdict
 * (/v1/verdicts/{id}?proof=1), and the writer's signing of checkpoints
 * (serve --sign-key, --sign-every).
 *
 * A proof is O(log N) lookups of stored subtrees (about 10 us), so it is
 * answered on the loop like any small read.
 */
#include "query/query_int.h"

#include <stdlib.h>
#include <string.h>

static json_t *hashes_json(const struct merkle_proof *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->n; i++) {
		char b[48];

		note_b64_encode(p->hash[i], MERKLE_HASH_BYTES, b);
		json_array_append_new(a, json_string(b));
	}
	return a;
}

static int event_text(void *ctx, const struct event *ev, const uint8_t *head)
{
	*(char **)ctx = event_jcs(ev);
	return 1;
}

/* Adds member k: the signed note of size, when the ledger has one. */
static void add_note(ledger_t *lg, json_t *o, const char *k, uint64_t size)
{
	char *note = NULL;

	if (ledger_note_get(lg, size, &note, NULL, NULL) == 0)
		json_object_set_new(o, k, json_string(note));
	free(note);
}

json_t *query_proof_inclusion(ledger_t *lg, uint64_t seq, uint64_t size,
			      struct lg_error *err)
{
	struct merkle_proof *p;
	char *ev = NULL;
	json_t *o = NULL, *event;

	LG_ASSERT(lg != NULL);
	p = lg_xmalloc(sizeof(*p));
	if (ledger_prove_inclusion(lg, seq, size, p, err) != 0 ||
	    ledger_scan(lg, seq, 1, event_text, &ev, err) < 0 || ev == NULL)
		goto out;
	event = json_loads(ev, 0, NULL);
	o = json_pack("{s:s,s:I,s:I,s:o,s:o}", "type", "inclusion", "seq",
		      (json_int_t)seq, "treeSize", (json_int_t)size, "hashes",
		      hashes_json(p), "event", event ? event : json_null());
	add_note(lg, o, "checkpoint", size);
out:
	free(ev);
	free(p);
	return o;
}

json_t *query_proof_consistency(ledger_t *lg, uint64_t from, uint64_t to,
				struct lg_error *err)
{
	struct merkle_proof *p;
	json_t *o = NULL;

	LG_ASSERT(lg != NULL);
	p = lg_xmalloc(sizeof(*p));
	if (ledger_prove_consistency(lg, from, to, p, err) == 0) {
		o = json_pack("{s:s,s:I,s:I,s:o}", "type", "consistency",
			      "from", (json_int_t)from, "treeSize",
			      (json_int_t)to, "hashes", hashes_json(p));
		add_note(lg, o, "checkpoint", to);
		add_note(lg, o, "oldCheckpoint", from);
	}
	free(p);
	return o;
}

uint64_t query_proof_size(ledger_t *lg, uint64_t seq)
{
	uint64_t size = 0;
	char *note = NULL;

	LG_ASSERT(lg != NULL);
	if (ledger_note_get(lg, 0, &note, &size, NULL) == 0)
		free(note);
	return size >= seq && size > 0 ? size : ledger_last_seq(lg);
}

/* ---------------------------------------------------------------------- */
/* Handlers */

/* DESIGN 11 rule 10: a member whose newest signed checkpoint is older than
 * the cluster's answers 503 rather than a smaller tree (a witness behind a
 * Service must never see the tree shrink). true when it answered. */
static bool behind(struct query_server *qs, struct request *rq)
{
	uint64_t due = qs->o.member != NULL ? qs->member_st.checkpoint_due : 0,
		 size = 0;
	char *note = NULL;

	if (due == 0)
		return false;
	if (ledger_note_get(qs->lg, 0, &note, &size, NULL) == 0)
		free(note);
	if (size >= due)
		return false;
	query__reply_error(qs, rq, 503,
			   "this member's newest signed checkpoint is of size "
			   "%llu, the cluster's of size %llu: it is catching "
			   "up (DESIGN 11 rule 10)",
			   (unsigned long long)size, (unsigned long long)due);
	return true;
}

void query__handle_checkpoint(struct query_server *qs, struct request *rq)
{
	struct lg_error err = {0};
	char *note = NULL;
	int rc;

	if (behind(qs, rq))
		return;
	rc = ledger_note_get(qs->lg, 0, &note, NULL, &err);
	if (rc == LG_ENOENT)
		query__reply_error(
			qs, rq, 404,
			"no signed checkpoint yet (serve --sign-key)");
	else if (rc != 0)
		query__reply_error(qs, rq, 500, "%s", err.msg);
	else
		query__reply_raw(qs, rq, 200, "text/plain; charset=utf-8", note,
				 strlen(note));
}

static void reply_proof(struct query_server *qs, struct request *rq, json_t *v,
			const struct lg_error *err)
{
	if (v != NULL)
		query__reply_json(qs, rq, 200, v);
	else
		query__reply_error(
			qs, rq,
			err->code == LG_EINVAL || err->code == LG_ENOENT ? 400
			: err->code == LG_EVERSION			 ? 503
									 : 500,
			"%s", err->msg);
}

void query__handle_proof_inclusion(struct query_server *qs, struct request *rq)
{
	struct lg_error err = {0};
	uint64_t seq = 0, size = 0;
	int s1 = query__param_u64(rq, "seq", &seq),
	    s2 = query__param_u64(rq, "size", &size);

	if (s1 != QP_OK || s2 == QP_BAD || seq == 0) {
		query__reply_error(
			qs, rq, 400,
			"seq=N (>= 1) is required; size=M is optional");
		return;
	}
	if (behind(qs, rq))
		return;
	if (s2 == QP_ABSENT)
		size = query_proof_size(qs->lg, seq);
	reply_proof(qs, rq, query_proof_inclusion(qs->lg, seq, size, &err),
		    &err);
}

void query__handle_proof_consistency(struct query_server *qs,
				     struct request *rq)
{
	struct lg_error err = {0};
	uint64_t from = 0, to = 0;

	if (query__param_u64(rq, "from", &from) != QP_OK ||
	    query__param_u64(rq, "to", &to) != QP_OK) {
		query__reply_error(qs, rq, 400, "from=M and to=N are required");
		return;
	}
	if (behind(qs, rq))
		return;
	reply_proof(qs, rq, query_proof_consistency(qs->lg, from, to, &err),
		    &err);
}

int query__verdict_proof(struct query_server *qs, json_t *v, uint64_t seq,
			 struct lg_error *err)
{
	json_t *p = query_proof_inclusion(qs->lg, seq,
					  query_proof_size(qs->lg, seq), err);

	if (p == NULL)
		return err->code ? err->code : LG_EIO;
	json_object_set_new(v, "proof", p);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Signing (serve --sign-key) */

void query__sign_due(struct query_server *qs)
{
	struct lg_error err = {0};
	uint64_t now = query__now_ns(), size;

	if (qs->o.signer == NULL || ledger_last_seq(qs->lg) == qs->signed_size)
		return;
	if (qs->signed_size != UINT64_MAX &&
	    now - qs->signed_ns < (uint64_t)qs->o.sign_every_ms * 1000000)
		return;
	if (ledger_sign_checkpoint(qs->lg, qs->o.signer, &size, &err) != 0) {
		fprintf(stderr, "gpuledger serve: signing a checkpoint: %s\n",
			err.msg);
		return;
	}
	qs->signed_size = size;
	qs->signed_ns = now;
}
