/*
 * One point of the log as an operator names it (replay --at, GET
 * /v1/state?at=, eval --at): a seq, or an instant resolved to the last
 * event at or before it (DESIGN 6). Both the CLI and the server resolve it
 * here, and say in the same words when it falls outside the log: the state
 * before the first event is empty, after the last one it is the latest,
 * and neither is an error, but an operator who asked for a day the ledger
 * never saw must not take either for what it knew then.
 */
#include "ledger/ledger_int.h"

#include <stdio.h>
#include <string.h>

static int time_of(void *ctx, const struct event *ev, const uint8_t *head)
{
	*(int64_t *)ctx = ev->time_ns;
	return 1;
}

int ledger__event_time(ledger_t *lg, uint64_t seq, int64_t *t_ns,
		       struct lg_error *err)
{
	int rc = ledger_scan(lg, seq, 1, time_of, t_ns, err);

	return rc < 0 ? rc : 0;
}

int ledger_at_resolve(ledger_t *lg, const char *at, struct ledger_at *out,
		      struct lg_error *err)
{
	uint64_t last = ledger_last_seq(lg);
	int64_t t_ns = 0, first_ns = 0, last_ns = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	out->seq = last;
	if (at == NULL)
		return 0;
	out->by_seq = lg_parse_u64(at, &out->asked_seq);
	if (!out->by_seq && time_parse_user_ns(at, &t_ns) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "\"%.96s\" is not a seq, and %s", at,
				    time_user_why(at));
	out->asked_ns = t_ns;
	if (last == 0) {
		/* Seq 0 is the empty state by name; anything else finds a
		 * ledger that holds nothing yet. */
		out->seq = 0;
		out->place = out->by_seq && out->asked_seq == 0
				     ? LEDGER_AT_INSIDE
				     : LEDGER_AT_EMPTY;
		return 0;
	}
	if (out->by_seq && out->asked_seq <= last) {
		out->seq = out->asked_seq;
		return 0;
	}
	if ((rc = ledger__event_time(lg, 1, &first_ns, err)) != 0 ||
	    (rc = ledger__event_time(lg, last, &last_ns, err)) != 0 ||
	    (!out->by_seq &&
	     (rc = ledger__seq_at_time(lg, t_ns, &out->seq, err)) != 0))
		return rc;
	/* A time is inside from the first event's to the last one's, both
	 * included; a seq past the last is after it. */
	if (!out->by_seq && t_ns < first_ns) {
		out->place = LEDGER_AT_BEFORE_FIRST;
		out->edge_seq = 1;
		out->edge_ns = first_ns;
	} else if (out->by_seq || t_ns > last_ns) {
		out->place = LEDGER_AT_AFTER_LAST;
		out->edge_seq = last;
		out->edge_ns = last_ns;
	}
	return 0;
}

size_t ledger_at_note(const struct ledger_at *a, char *buf, size_t cap)
{
	char when[64];
	int n = 0;

	if (cap > 0)
		buf[0] = '\0';
	time_format_ns(a->edge_ns, when, sizeof(when));
	switch (a->place) {
	case LEDGER_AT_INSIDE:
		return 0;
	case LEDGER_AT_BEFORE_FIRST:
		n = snprintf(buf, cap,
			     "is before the first event (seq %llu at %s); the "
			     "state is empty",
			     (unsigned long long)a->edge_seq, when);
		break;
	case LEDGER_AT_AFTER_LAST:
		n = snprintf(buf, cap,
			     "is after the last event (seq %llu at %s); the "
			     "state is the latest",
			     (unsigned long long)a->edge_seq, when);
		break;
	case LEDGER_AT_EMPTY:
		n = snprintf(buf, cap,
			     "finds no event: the ledger is empty, and so is "
			     "the state");
		break;
	}
	return n > 0 ? (size_t)n : 0;
}
