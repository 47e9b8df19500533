/*
 * Typed query parameters (query_int.h): the one small set every handler
 * reads its parameters with, so that "absent", "malformed" and each type's
 * syntax mean the same on every route. Each reads the value into a buffer
 * of its own, bounded by what its type can hold: a longer value is
 * malformed, never cut. The export's parameters go through the export's
 * own parser instead (ledger_export_parse_*), shared with the CLI.
 */
#include "query/query_int.h"

#include <string.h>

/* Longest value a number or a flag can have (a u64 has 20 digits). */
#define QP_WORD_MAX 32
/* Longest time: what every time parameter took before (RFC 3339 with
 * nanoseconds and an offset is 35 characters). */
#define QP_TIME_MAX 96

static long get(const struct request *rq, const char *key, char *out,
		size_t cap)
{
	return query__param(rq->query, rq->query_len, key, out, cap);
}

int query__param_text(const struct request *rq, const char *key, char *out,
		      size_t cap)
{
	long n = get(rq, key, out, cap);

	return n == -1 ? QP_ABSENT : n < 0 ? QP_BAD : QP_OK;
}

int query__param_u64(const struct request *rq, const char *key, uint64_t *out)
{
	char v[QP_WORD_MAX];
	int rc = query__param_text(rq, key, v, sizeof(v));

	if (rc != QP_OK)
		return rc;
	return lg_parse_u64(v, out) ? QP_OK : QP_BAD;
}

int query__param_enum(const struct request *rq, const char *key,
		      const char *const *names, int *out)
{
	char v[QP_WORD_MAX];
	int rc = query__param_text(rq, key, v, sizeof(v));

	if (rc != QP_OK)
		return rc;
	for (int i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], v) == 0) {
			*out = i;
			return QP_OK;
		}
	return QP_BAD;
}

int query__param_flag(const struct request *rq, const char *key, bool *out)
{
	static const char *const names[] = {"0", "1", "false", "true", NULL};
	int i, rc = query__param_enum(rq, key, names, &i);

	if (rc == QP_OK)
		*out = i % 2 == 1;
	return rc;
}

int query__param_time(const struct request *rq, const char *key, int64_t *out)
{
	char v[QP_TIME_MAX];
	int rc = query__param_text(rq, key, v, sizeof(v));

	if (rc != QP_OK)
		return rc;
	/* As every time parameter: 1970 to the last nanosecond the ledger
	 * can date (DESIGN 7). */
	return time_parse_user_ns(v, out) == 0 ? QP_OK : QP_BAD;
}
