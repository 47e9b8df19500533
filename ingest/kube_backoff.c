/*
 * Backoff arithmetic of the watch client, kept pure (randomness and the
 * clock come in as arguments) so that the tests can check every bound.
 *
 * The jitter is "equal jitter": half of the exponential delay is fixed, the
 * other half random. Full jitter could retry at once after a 429, which is
 * what an overloaded API server least wants; no jitter would make every
 * watcher that lost the server at the same moment come back together.
 */
/* strptime is X/Open. */
#define _XOPEN_SOURCE 700

#include "ingest/kube_int.h"

#include <ctype.h>
#include <string.h>
#include <time.h>

int64_t ingest__kube_backoff_ms(unsigned attempt, int64_t base_ms,
				int64_t cap_ms, uint32_t rnd)
{
	int64_t d, half;

	if (base_ms < 1)
		base_ms = 1;
	if (cap_ms < 1)
		cap_ms = 1;
	d = base_ms < cap_ms ? base_ms : cap_ms;
	/* Doubling stops at the cap, so this runs at most 63 times. */
	for (unsigned i = 0; i < attempt && d < cap_ms; i++)
		d = d > cap_ms / 2 ? cap_ms : d * 2;
	half = d / 2;
	return half + (int64_t)((uint64_t)rnd % (uint64_t)(d - half + 1));
}

/* delta-seconds: 1*DIGIT (RFC 9110 10.2.3). */
static bool parse_seconds(const char *s, int64_t max_ms, int64_t *out)
{
	int64_t v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return false;
		/* Past the clamp, more digits change nothing. */
		if (v <= max_ms)
			v = v * 10 + (*s - '0');
	}
	*out = v > max_ms / 1000 ? max_ms : v * 1000;
	return true;
}

/* The three HTTP-date forms of RFC 9110 5.6.7, always in GMT. */
static const char *const http_date_formats[] = {
	"%a, %d %b %Y %H:%M:%S GMT", /* IMF-fixdate */
	"%A, %d-%b-%y %H:%M:%S GMT", /* RFC 850 */
	"%a %b %e %H:%M:%S %Y",	     /* asctime */
};

static bool parse_http_date(const char *s, int64_t *out_s)
{
	for (size_t i = 0;
	     i < sizeof(http_date_formats) / sizeof(http_date_formats[0]);
	     i++) {
		struct tm tm;
		const char *end;

		memset(&tm, 0, sizeof(tm));
		end = strptime(s, http_date_formats[i], &tm);
		if (end != NULL && *end == '\0') {
			*out_s = (int64_t)timegm(&tm);
			return true;
		}
	}
	return false;
}

int ingest__kube_retry_after_ms(const char *value, int64_t now_s,
				int64_t max_ms, int64_t *delay_ms)
{
	int64_t at_s, d;

	if (max_ms < 0)
		max_ms = 0;
	if (value == NULL)
		return LG_EINVAL;
	if (parse_seconds(value, max_ms, delay_ms))
		return 0;
	if (!parse_http_date(value, &at_s))
		return LG_EINVAL;
	d = at_s - now_s;
	if (d <= 0)
		*delay_ms = 0;
	else
		*delay_ms = d > max_ms / 1000 ? max_ms : d * 1000;
	return 0;
}

int64_t ingest__kube_retry_delay_ms(unsigned attempt, int64_t base_ms,
				    int64_t cap_ms, int64_t retry_after_ms,
				    int64_t retry_max_ms, uint32_t rnd)
{
	int64_t d = ingest__kube_backoff_ms(attempt, base_ms, cap_ms, rnd);

	if (retry_after_ms > retry_max_ms)
		retry_after_ms = retry_max_ms;
	return retry_after_ms > d ? retry_after_ms : d;
}

bool ingest__kube_error_waits(long long code)
{
	return code != 410;
}

unsigned ingest__kube_watch_timeout_s(unsigned min_s, uint32_t rnd)
{
	if (min_s == 0)
		min_s = 1;
	return min_s + rnd % min_s;
}
