/*
 * The verdict path (DESIGN 3.5, 3.7, 11): judging, numbering, rule 3 and
 * recording of one group of requests, written once for both back ends.
 * The single pod's group commit (query/verdict.c) and a member's etcd txn
 * (cluster/verdicts.c) differ only in how the value built here is
 * appended and in what they do when the log moved under it.
 *
 * The rules every record follows, whichever back end writes it:
 *  - verdict k of a group lands at seq s+1+k of the log at (s, h); its
 *    basisSeq is seq - 1 and its chainHead the head there, so every
 *    recorded verdict was judged on exactly the log before it;
 *  - its id is one more than the verdicts before it in the log;
 *  - its event time is its basis event's time (no process's clock moves
 *    the log's time: billing and the horizon follow observations only);
 *    the answering process's clock goes in answeredAt.
 */
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A record fits one ledger event with room for its framing. */
#define RECORD_MAX_BYTES (LEDGER_EVENT_MAX_BYTES - 4096)

void query_vgroup_init(struct query_vgroup *g, struct query_vitem *it,
		       size_t n, struct query_vstats *st)
{
	struct timespec ts;
	size_t c = n ? n : 1;

	LG_ASSERT(g != NULL && (n == 0 || it != NULL));
	memset(g, 0, sizeof(*g));
	g->it = it;
	g->n = n;
	g->st = st;
	g->state = lg_xcalloc(c, sizeof(*g->state));
	g->of = lg_xcalloc(c, sizeof(*g->of));
	g->evs = lg_xcalloc(c, sizeof(*g->evs));
	g->text = lg_xcalloc(c, sizeof(*g->text));
	lg_buf_init(&g->scratch, JCS_TEXT_MAX_BYTES);
	clock_gettime(CLOCK_REALTIME, &ts);
	time_format_ns((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec,
		       g->answered_at, sizeof(g->answered_at));
}

static void free_texts(struct query_vgroup *g)
{
	for (size_t k = 0; k < g->m; k++) {
		free(g->text[k]);
		g->text[k] = NULL;
	}
	g->m = 0;
}

void query_vgroup_release(struct query_vgroup *g)
{
	if (g == NULL || g->state == NULL)
		return;
	free_texts(g);
	free(g->state);
	free(g->of);
	free(g->evs);
	free(g->text);
	lg_buf_release(&g->scratch);
	memset(g, 0, sizeof(*g));
}

void query_vgroup_fail(struct query_vgroup *g, size_t i, int status,
		       const char *msg)
{
	struct query_vitem *it = &g->it[i];

	LG_ASSERT(i < g->n && status != 200);
	verdict_release(&it->v);
	it->status = status;
	snprintf(it->error, sizeof(it->error), "%s", msg);
	g->state[i] = QUERY_V_DONE;
}

void query_vgroup_fail_rest(struct query_vgroup *g, int status,
			    const char *msg)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->state[i] != QUERY_V_DONE)
			query_vgroup_fail(g, i, status, msg);
}

size_t query_vgroup_count(const struct query_vgroup *g, enum query_vstate s)
{
	size_t c = 0;

	for (size_t i = 0; i < g->n; i++)
		c += g->state[i] == s;
	return c;
}

void query_vgroup_repeats(struct query_vgroup *g, ledger_t *lg)
{
	for (size_t i = 0; i < g->n; i++) {
		struct query_vitem *it = &g->it[i];
		char msg[LG_ERRMSG_MAX];

		if (g->state[i] == QUERY_V_DONE)
			continue;
		if (query__verdict_repeat(lg, it->vr, &it->status, &it->again,
					 msg, sizeof(msg)) == 0)
			continue;
		if (it->status != 200) {
			query_vgroup_fail(g, i, it->status, msg);
			continue;
		}
		if (g->st != NULL)
			g->st->repeats++;
		verdict_release(&it->v);
		g->state[i] = QUERY_V_DONE;
	}
}

void query_vgroup_repeat_of(struct query_vgroup *g, size_t i,
			    const char *record, uint64_t seq)
{
	struct query_vitem *it = &g->it[i];
	struct lg_error err = {0};
	json_t *again;

	LG_ASSERT(i < g->n && g->state[i] != QUERY_V_DONE);
	again = verdict_record_review_again(record, strlen(record), seq,
					    it->vr, &err);
	if (again == NULL) {
		query_vgroup_fail(g, i, err.code == LG_EEXIST ? 409 : 500,
				  err.msg);
		return;
	}
	verdict_release(&it->v);
	it->again = jcs_text(again, 0, SIZE_MAX, &g->scratch);
	json_decref(again);
	if (it->again == NULL) {
		query_vgroup_fail(g, i, 500,
				  "the recorded answer cannot be written");
		return;
	}
	it->status = 200;
	g->state[i] = QUERY_V_DONE;
	if (g->st != NULL)
		g->st->repeats++;
}

/* With holds on (DESIGN 3.7) a verdict changes the state: the next one is
 * judged on the state after it. ws gets the VERDICT of text. */
static int apply_judged(state_t *ws, const char *text, struct lg_error *err)
{
	struct event ev = {.type = EV_VERDICT,
			   .seq = state_seq(ws) + 1,
			   .time_ns = state_time_ns(ws),
			   .text = text};

	return state_apply(ws, &ev, err);
}

void query_vgroup_judge(struct query_vgroup *g, const state_t *st,
			uint64_t seq, const uint8_t *head)
{
	char hex[2 * LEDGER_HEAD_BYTES + 1];
	/* Holds off: VERDICTs change nothing a judgement reads, and the
	 * group is judged on st itself. */
	state_t *ws = state_holds_on(st) ? state_clone(st) : NULL;
	const state_t *on = ws != NULL ? ws : st;

	lg_hex(head, LEDGER_HEAD_BYTES, hex);
	for (size_t i = 0; i < g->n; i++) {
		struct query_vitem *it = &g->it[i];
		struct lg_error err = {0};
		char *text;

		if (g->state[i] == QUERY_V_DONE)
			continue;
		verdict_release(&it->v);
		if (verdict_judge(on, it->vr, &it->v, &err) != 0) {
			/* A judgement fails only on the request (running
			 * out of memory aborts): a 400. */
			query_vgroup_fail(g, i, 400,
					  err.msg[0] ? err.msg
						     : "invalid request");
			continue;
		}
		it->v.basis_seq = seq;
		snprintf(it->v.chain_head, sizeof(it->v.chain_head), "%s", hex);
		if (it->vr->dry_run) {
			/* Answered from the same state, not recorded. */
			it->status = 200;
			g->state[i] = QUERY_V_DONE;
			continue;
		}
		/* The record's size does not depend on where it lands but
		 * for its numbers: one trial with the largest. */
		snprintf(it->v.answered_at, sizeof(it->v.answered_at), "%s",
			 g->answered_at);
		it->v.id = (uint64_t)INT64_MAX;
		it->v.basis_seq = (uint64_t)INT64_MAX;
		text = verdict_record_text(&it->v, RECORD_MAX_BYTES,
					   &g->scratch);
		if (text == NULL) {
			query_vgroup_fail(g, i, 413,
					  "the verdict record would be larger "
					  "than a ledger event may be");
			continue;
		}
		if (ws != NULL && apply_judged(ws, text, &err) != 0) {
			free(text);
			query_vgroup_fail(g, i, 500,
					  err.msg[0] ? err.msg
						     : "the verdict does not fit "
						       "the state");
			continue;
		}
		free(text);
		g->state[i] = QUERY_V_JUDGED;
	}
	state_free(ws);
}

void query_vgroup_unjudge(struct query_vgroup *g)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->state[i] == QUERY_V_JUDGED)
			g->state[i] = QUERY_V_TODO;
}

/* ledger_logval_build_each's fill: verdict k of the value, numbered where
 * it lands. */
static int fill(void *ctx, size_t k, struct event *ev,
		const uint8_t *head_prev, struct lg_error *err)
{
	struct query_vgroup *g = ctx;
	struct verdict *v = &g->it[g->of[k]].v;

	v->id = g->base_id + 1 + k;
	/* DESIGN 3.5, 11: basisSeq = seq - 1, on exactly the log before. */
	v->basis_seq = ev->seq - 1;
	lg_hex(head_prev, LEDGER_HEAD_BYTES, v->chain_head);
	free(g->text[k]);
	g->text[k] = verdict_record_text(v, RECORD_MAX_BYTES, &g->scratch);
	if (g->text[k] == NULL)
		return lg_error_set(err, LG_ELIMIT, "a record too large");
	ev->text = g->text[k];
	return 0;
}

int query_vgroup_build(struct query_vgroup *g, const state_t *st,
		       const uint8_t *head, uint64_t verdicts,
		       size_t max_bytes, state_t **after,
		       struct ledger_logval *v, size_t *taken,
		       struct lg_error *err)
{
	state_t *ws = state_clone(st);
	/* DESIGN 3.7, 11: a VERDICT's time is its basis event's. */
	int64_t t = state_time_ns(st);
	int rc;

	LG_ASSERT(g != NULL && st != NULL && head != NULL && v != NULL &&
		  taken != NULL);
	free_texts(g);
	for (size_t i = 0; i < g->n; i++)
		if (g->state[i] == QUERY_V_JUDGED) {
			g->of[g->m] = i;
			g->evs[g->m] =
				(struct event){.type = EV_VERDICT, .time_ns = t};
			g->m++;
		}
	g->base_id = verdicts;
	*taken = 0;
	rc = ledger_logval_build_each(ws, head, g->evs, g->m, fill, g,
				      max_bytes, v, taken, err);
	if (rc != 0) {
		state_free(ws);
		return rc;
	}
	if (after != NULL)
		*after = ws;
	else
		state_free(ws);
	return 0;
}

void query_vgroup_recorded(struct query_vgroup *g, uint64_t first_seq,
			   size_t taken)
{
	LG_ASSERT(taken <= g->m);
	for (size_t k = 0; k < taken; k++) {
		struct query_vitem *it = &g->it[g->of[k]];

		LG_ASSERT(g->state[g->of[k]] == QUERY_V_JUDGED);
		it->v.seq = first_seq + k;
		it->recorded = true;
		it->status = 200;
		g->state[g->of[k]] = QUERY_V_DONE;
	}
}
