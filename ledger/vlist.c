/*
 * Recorded verdicts, filtered (DESIGN 3.5, 6, 7): one function serves GET
 * /v1/verdicts and `gpuledger verdicts`, so that the same filter over the
 * same log gives the same bytes from both.
 *
 * Verdicts with after < id < before are read in id order (ascending, from
 * after + 1 up: one forward scan of the log from that verdict's seq) or
 * newest first (descending, from before - 1 down: one record at a time
 * through the verdict index, since the log is read forwards only). At most
 * LEDGER_VLIST_SCAN_MAX records are read per answer, so that a filter that
 * matches little cannot make one request read the whole log: "next" is the
 * id to go on from (as after when ascending, as before when descending).
 */
#include "ledger/ledger.h"

#include <stdlib.h>
#include <string.h>

struct vlist {
	const struct verdict_filter *f;
	json_t *out;
	uint64_t id;   /* of the last verdict read */
	uint64_t read; /* records read */
	uint64_t left; /* verdicts not yet read, from id + 1 */
};

/* Adds the verdict ev to the answer when the filter takes it, with its seq
 * and its event's time (when it was recorded). */
static void vlist_take(struct vlist *l, const struct event *ev)
{
	char when[64];
	json_t *v = json_loadb_doubles(ev->text, strlen(ev->text), 0, NULL);

	if (v != NULL && verdict_filter_match(l->f, ev->time_ns, v)) {
		json_object_set_new(v, "seq",
				    json_integer((json_int_t)ev->seq));
		time_format_ns(ev->time_ns, when, sizeof(when));
		json_object_set_new(v, "time", json_string(when));
		json_array_append_new(l->out, v);
	} else {
		json_decref(v);
	}
}

static bool full(const struct vlist *l)
{
	return json_array_size(l->out) >= l->f->limit ||
	       l->read >= LEDGER_VLIST_SCAN_MAX;
}

/* Ascending: one scan from the first verdict on. */
static int asc_event(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct vlist *l = ctx;

	if (ev->type != EV_VERDICT || ev->text == NULL)
		return 0;
	if (l->left == 0)
		return 1; /* appended after the count was taken, or at before */
	l->id++;
	l->read++;
	l->left--;
	vlist_take(l, ev);
	return full(l) ? 1 : 0;
}

static int asc(ledger_t *lg, struct vlist *l, uint64_t hi, struct lg_error *err)
{
	uint64_t seq = 0;
	int rc;

	l->id = l->f->after;
	l->left = hi > l->f->after ? hi - l->f->after : 0;
	if (l->left == 0)
		return 0;
	rc = ledger_verdict_seq(lg, l->f->after + 1, &seq, err);
	if (rc == 0)
		rc = ledger_scan(lg, seq, 0, asc_event, l, err);
	return rc < 0 ? rc : 0;
}

/* Descending: the record of one verdict. */
static int desc_one(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct vlist *l = ctx;

	if (ev->type == EV_VERDICT && ev->text != NULL)
		vlist_take(l, ev);
	return 1;
}

/* Reads verdicts hi down to after + 1; l->id ends at the last one read,
 * l->left counts those not read. */
static int desc(ledger_t *lg, struct vlist *l, uint64_t hi,
		struct lg_error *err)
{
	uint64_t seq;
	int rc = 0;

	l->left = hi > l->f->after ? hi - l->f->after : 0;
	for (l->id = hi + 1; l->left > 0 && !full(l) && rc >= 0;) {
		l->id--;
		l->read++;
		l->left--;
		rc = ledger_verdict_seq(lg, l->id, &seq, err);
		if (rc == 0)
			rc = ledger_scan(lg, seq, 1, desc_one, l, err);
	}
	return rc < 0 ? rc : 0;
}

int ledger_verdicts_list(ledger_t *lg, const struct verdict_filter *f,
			 uint64_t count, char **text, struct lg_error *err)
{
	struct vlist l = {.f = f, .out = json_array()};
	uint64_t hi = f->before - 1 < count ? f->before - 1 : count;
	json_t *doc;
	int rc;

	LG_ASSERT(f->before >= 1 && f->limit >= 1);
	*text = NULL;
	rc = f->desc ? desc(lg, &l, hi, err) : asc(lg, &l, hi, err);
	if (rc != 0) {
		json_decref(l.out);
		return rc;
	}
	doc = json_pack("{s:o, s:o}", "verdicts", l.out, "next",
			l.left > 0 ? json_integer((json_int_t)l.id)
				   : json_null());
	*text = json_canonical(doc);
	json_decref(doc);
	/* A record that is not UTF-8 cannot be written back out. */
	if (*text == NULL)
		return lg_error_set(err, LG_ECORRUPT,
				    "a verdict record cannot be written as "
				    "JSON");
	return 0;
}
