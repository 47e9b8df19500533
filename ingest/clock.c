/*
 * The live watcher's clock (DESIGN 4.1 "Time that cannot be trusted").
 *
 * Events of a live cluster are dated by the watcher, and CLOCK_REALTIME can
 * step (an NTP correction, an operator, a VM resumed from a snapshot): a
 * step forward would bill the hours that never passed, a step back would
 * freeze the ledger's time. So elapsed time comes from CLOCK_MONOTONIC, and
 * the wall clock only steers: the ledger's time runs at the monotonic rate,
 * corrected toward the wall clock by at most 1/INGEST_CLOCK_SLEW_DIV of the
 * elapsed time (6.25%: a 1 h step is absorbed in 16 h), and never by more
 * than 1 s between two readings. Between two readings the ledger's time
 * therefore advances by at least 15/16 and at most 17/16 of the real
 * elapsed time, and never more than that time plus 1 s, whatever the wall
 * clock does; it never goes back. A step is the wall clock moving more than
 * 1 s away from the elapsed time between two readings (or, at the first
 * reading, a ledger already more than 1 s ahead of it); each is reported,
 * so that the watcher records a NOTE ClockStep.
 */
#include "ingest/ingest_int.h"

#define NS_PER_SEC 1000000000LL

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* a - b, saturating: a wall clock near the ends of int64 must not wrap. */
static int64_t diff(int64_t a, int64_t b)
{
	int64_t d;

	if (__builtin_sub_overflow(a, b, &d))
		return a < b ? INT64_MIN : INT64_MAX;
	return d;
}

int64_t ingest__clock_read(struct ingest_clock *c, int64_t mono_ns,
			   int64_t wall_ns, int64_t floor_ns, int64_t *step_ns)
{
	int64_t d, pred, err, slew, step;

	*step_ns = 0;
	if (!c->started) {
		c->started = true;
		c->mono_ns = mono_ns;
		c->wall_ns = wall_ns;
		c->ledger_ns = wall_ns > floor_ns ? wall_ns : floor_ns;
		/* A ledger already ahead of the wall clock is a step too. */
		if (diff(wall_ns, floor_ns) < -NS_PER_SEC)
			*step_ns = diff(wall_ns, floor_ns);
		return c->ledger_ns;
	}
	d = mono_ns > c->mono_ns ? mono_ns - c->mono_ns : 0;
	if (__builtin_add_overflow(c->ledger_ns, d, &pred))
		pred = INT64_MAX;
	err = diff(wall_ns, pred);
	slew = d / INGEST_CLOCK_SLEW_DIV;
	slew = clamp(err, -slew, slew < NS_PER_SEC ? slew : NS_PER_SEC);
	step = diff(diff(wall_ns, c->wall_ns), d);
	if (step > NS_PER_SEC || step < -NS_PER_SEC)
		*step_ns = step;
	c->mono_ns = mono_ns;
	c->wall_ns = wall_ns;
	if (__builtin_add_overflow(pred, slew, &c->ledger_ns))
		c->ledger_ns = INT64_MAX;
	return c->ledger_ns;
}
