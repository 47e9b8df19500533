/*
 * The reconciliation audit over a ledger (DESIGN 3.6): the range and the
 * moment admission came into force resolved from what an operator typed,
 * then two passes from genesis (an object's previous observation may lie
 * before the range), each applying every event to a state and handing it to
 * model/reconcile.c, and the one JSON writer that `gpuledger reconcile`
 * and GET /v1/reconcile share, so that both give the same bytes.
 */
#include "ledger/ledger_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* SEQ or a time, read as replay --at reads them (ledger_at_resolve), and
 * refused in the same words, after the option's name: a seq as typed (past
 * the last is an error here), a time the first seq at or after it (first)
 * or the last at or before it (what --at shows). */
static int seq_or_time(ledger_t *lg, const char *name, const char *s,
		       bool first, uint64_t *seq, struct lg_error *err)
{
	uint64_t last = ledger_last_seq(lg);
	struct ledger_at at;
	struct lg_error e = {0};
	int rc = ledger_at_resolve(lg, s, &at, &e);

	if (rc == LG_EINVAL)
		return lg_error_set(err, rc, "%s %s", name, e.msg);
	if (rc != 0)
		return lg_error_set(err, rc, "%s", e.msg);
	if (at.by_seq) {
		if (at.asked_seq > last || (at.asked_seq == 0 && first))
			return lg_error_set(err, LG_EINVAL,
					    "%s %s is not a seq of the log "
					    "(1..%llu)",
					    name, s, (unsigned long long)last);
		*seq = at.asked_seq;
		return 0;
	}
	if (!first) {
		*seq = at.seq;
		return 0;
	}
	/* A time the ledger can date is >= 0, so t - 1 cannot overflow. */
	rc = ledger__seq_at_time(lg, at.asked_ns - 1, seq, err);
	if (rc == 0)
		*seq += 1;
	return rc;
}

/* The seq of the first recorded admission verdict; 0 when there is none. */
struct first_admission {
	bool admission;
};

static int is_admission(void *ctx, const struct event *ev,
			const uint8_t *head)
{
	struct first_admission *f = ctx;

	json_t *rec = ev->type == EV_VERDICT && ev->text != NULL
			      ? json_loads(ev->text, 0, NULL)
			      : NULL;
	const json_t *type = json_object_get(rec, "type");

	f->admission = json_is_string(type) &&
		       strcmp(json_string_value(type), "admission") == 0;
	json_decref(rec);
	return 1;
}

static int first_admission_seq(ledger_t *lg, uint64_t *seq,
			       struct lg_error *err)
{
	struct ledger_vindex vi;
	int rc = ledger_verdict_index(lg, &vi, err);

	*seq = 0;
	for (uint64_t id = 1; rc == 0 && id <= vi.count; id++) {
		struct first_admission f = {false};
		uint64_t s;

		rc = ledger_verdict_seq(lg, id, &s, err);
		if (rc == 0)
			rc = ledger_scan(lg, s, 1, is_admission, &f, err);
		if (rc == 1)
			rc = 0;
		if (rc == 0 && f.admission) {
			*seq = s;
			break;
		}
	}
	return rc;
}

int ledger_reconcile_resolve(ledger_t *lg, const struct reconcile_args *a,
			     struct reconcile_opts *o, struct lg_error *err)
{
	uint64_t last = ledger_last_seq(lg);
	int rc = 0;

	LG_ASSERT(lg != NULL && a != NULL && o != NULL);
	memset(o, 0, sizeof(*o));
	o->from_seq = 1;
	o->to_seq = last;
	o->tenant = a->tenant;
	if (a->tenant != NULL && !ns_is_tenant(a->tenant))
		return lg_error_set(err, LG_EINVAL,
				    "tenant \"%s\" is not a tenant namespace",
				    a->tenant);
	if (reconcile_window_parse(a->window ? a->window
					     : RECONCILE_WINDOW_DEFAULT,
				   &o->window_ns) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "window \"%s\" is not a duration such as "
				    "10m, 90s or 1h30m",
				    a->window);
	if (a->from != NULL)
		rc = seq_or_time(lg, "from", a->from, true, &o->from_seq, err);
	if (rc == 0 && a->to != NULL)
		rc = seq_or_time(lg, "to", a->to, false, &o->to_seq, err);
	if (rc == 0 && a->since != NULL)
		rc = seq_or_time(lg, "since", a->since, true, &o->since_seq,
				 err);
	else if (rc == 0)
		rc = first_admission_seq(lg, &o->since_seq, err);
	if (rc == 0 && a->from != NULL && a->to != NULL &&
	    o->from_seq > o->to_seq)
		return lg_error_set(err, LG_EINVAL,
				    "from (seq %llu) is after to (seq %llu)",
				    (unsigned long long)o->from_seq,
				    (unsigned long long)o->to_seq);
	/* A time past the last event: nothing at or after it. */
	if (rc == 0 && o->since_seq > last)
		o->since_seq = 0;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The pass.                                                               */

struct pass {
	state_t *st;
	reconcile_t *rc;
	uint64_t from, to;
	struct lg_error *err;
};

static int pass_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct pass *p = ctx;
	int rc = state_apply_validated(p->st, ev, p->err);

	if (rc != 0)
		return rc;
	return reconcile_event(p->rc, p->st, ev);
}

static json_t *time_or_null(bool set, int64_t t_ns)
{
	char buf[64];

	if (!set)
		return json_null();
	time_format_ns(t_ns, buf, sizeof(buf));
	return json_string(buf);
}

struct sink_ctx {
	const struct ledger_reconcile_sink *sink;
	void *ctx;
};

static int sink_item(void *ctx, enum reconcile_list l, const json_t *item)
{
	const struct sink_ctx *s = ctx;

	return s->sink->item(s->ctx, l, item);
}

/* The time of event seq (null when seq is 0). */
static json_t *seq_time(ledger_t *lg, uint64_t seq)
{
	int64_t t_ns = 0;

	if (seq == 0 || seq > ledger_last_seq(lg) ||
	    ledger__event_time(lg, seq, &t_ns, NULL) != 0)
		return json_null();
	return time_or_null(true, t_ns);
}

static json_t *since_json(ledger_t *lg, uint64_t since)
{
	if (since == 0)
		return json_null();
	return json_pack("{s:I, s:o}", "seq", (json_int_t)since, "time",
			 seq_time(lg, since));
}

/* One pass from genesis to o->to_seq handing lists (a reconcile_opts
 * bit set) to the sink; *summary (may be NULL) gets the counts. */
static int one_pass(ledger_t *lg, const struct reconcile_opts *o,
		    unsigned lists, struct sink_ctx *sc, json_t **summary,
		    struct lg_error *err)
{
	struct reconcile_opts po = *o;
	struct pass p = {.from = o->from_seq, .to = o->to_seq, .err = err};
	json_t *sum = NULL;
	int rc = 0;

	po.lists = lists;
	p.st = state_new();
	p.rc = reconcile_new(&po, sink_item, sc);
	if (o->to_seq > 0)
		rc = ledger_scan(lg, 1, o->to_seq, pass_event, &p, err);
	if (rc == 0)
		rc = reconcile_finish(p.rc, &sum);
	if (rc == 0 && summary != NULL)
		*summary = sum;
	else
		json_decref(sum);
	reconcile_free(p.rc);
	state_free(p.st);
	return rc;
}

int ledger_reconcile(ledger_t *lg, const struct reconcile_opts *o,
		     const struct ledger_reconcile_sink *sink, void *ctx,
		     struct lg_error *err)
{
	struct sink_ctx sc = {sink, ctx};
	json_t *range, *summary = NULL;
	int rc;

	LG_ASSERT(lg != NULL && o != NULL && sink != NULL);
	range = json_pack("{s:I, s:o, s:I, s:o, s:o, s:I, s:s*}", "fromSeq",
			  (json_int_t)o->from_seq, "fromTime",
			  seq_time(lg, o->from_seq), "toSeq",
			  (json_int_t)o->to_seq, "toTime",
			  seq_time(lg, o->to_seq), "since",
			  since_json(lg, o->since_seq), "windowMs",
			  (json_int_t)(o->window_ns / 1000000), "tenant",
			  o->tenant);
	rc = sink->begin(ctx, range);
	/* Bypasses and overshoots are found interleaved, and a document
	 * lists one after the other: two passes keep memory bounded by what
	 * is live (a pass costs what it reads; the second does not follow
	 * objects older than admission into a list). */
	if (rc == 0)
		rc = one_pass(lg, o,
			      1u << RECONCILE_PRE_EXISTING |
				      1u << RECONCILE_BYPASS,
			      &sc, NULL, err);
	if (rc == 0)
		rc = one_pass(lg, o, 1u << RECONCILE_OVERSHOOT, &sc, &summary,
			      err);
	if (rc == 0)
		rc = sink->end(ctx, summary);
	json_decref(summary);
	json_decref(range);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The JSON writer: {"range", "preExisting", "bypasses", "overshoots",
 * "counts"}, each value canonical JSON, the lists written as they come.  */

static int put(struct ledger_reconcile_json *w, const char *s, size_t n)
{
	return w->write(w->ctx, s, n);
}

static int put_json(struct ledger_reconcile_json *w, const json_t *v)
{
	char *text = json_canonical(v);
	int rc;

	if (text == NULL)
		return LG_EINVAL;
	rc = put(w, text, strlen(text));
	free(text);
	return rc;
}

static int json_begin(void *ctx, const json_t *range)
{
	struct ledger_reconcile_json *w = ctx;
	int rc = put(w, "{\"range\":", 9);

	w->list = 0;
	w->n = 0;
	if (rc == 0)
		rc = put_json(w, range);
	if (rc == 0)
		rc = put(w, ",\"preExisting\":[", 16);
	return rc;
}

/* Moves the writer on to list l (closing those before it). */
static int json_to_list(struct ledger_reconcile_json *w, int l)
{
	int rc = 0;

	static const char *const next[] = {"],\"bypasses\":[",
					   "],\"overshoots\":[", "]"};

	LG_ASSERT(l <= 3);
	while (rc == 0 && w->list < l) {
		rc = put(w, next[w->list], strlen(next[w->list]));
		w->list++;
		w->n = 0;
	}
	return rc;
}

static int json_item(void *ctx, enum reconcile_list l, const json_t *item)
{
	struct ledger_reconcile_json *w = ctx;
	int rc;

	/* The lists come in document order (ledger_reconcile's passes). */
	LG_ASSERT((int)l >= w->list);
	rc = json_to_list(w, (int)l);

	if (rc == 0 && w->n++ > 0)
		rc = put(w, ",", 1);
	return rc != 0 ? rc : put_json(w, item);
}

static int json_end(void *ctx, const json_t *summary)
{
	struct ledger_reconcile_json *w = ctx;
	int rc = json_to_list(w, 3);

	if (rc == 0)
		rc = put(w, ",\"counts\":", 10);
	if (rc == 0)
		rc = put_json(w, json_object_get(summary, "counts"));
	return rc != 0 ? rc : put(w, "}\n", 2);
}

const struct ledger_reconcile_sink ledger_reconcile_json_sink = {
	.begin = json_begin,
	.item = json_item,
	.end = json_end,
};
