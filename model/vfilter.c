/*
 * Which recorded verdicts to list (DESIGN 3.5: "who asked for these GPUs,
 * when, and what was answered"). GET /v1/verdicts reads its query
 * parameters and `gpuledger verdicts` its options into one filter here,
 * each value through the one parser of its parameter, so that the two give
 * the same answer for the same filter and refuse a bad value with the same
 * words. ledger_verdicts_list (ledger/vlist.c) reads the log with it.
 *
 * Pure: text in, a filter out; a record's JSON in, yes or no out.
 */
#include "model/model_int.h"

#include <stdio.h>
#include <string.h>

void verdict_filter_init(struct verdict_filter *f)
{
	memset(f, 0, sizeof(*f));
	f->allowed = -1;
	f->from_ns = INT64_MIN;
	f->to_ns = INT64_MAX;
	f->before = UINT64_MAX;
	f->limit = VERDICT_FILTER_LIMIT_DEFAULT;
}

/* Every setter gets the value as given and says why it refuses it. */
typedef int set_fn(struct verdict_filter *f, const char *v,
		   struct lg_error *err);

static int filter_refuse(struct lg_error *err, const char *v, const char *takes)
{
	return lg_error_set(err, LG_EINVAL, "\"%.64s%s\" is not %s", v,
			    strlen(v) > 64 ? "..." : "", takes);
}

static int set_text(char *out, size_t cap, bool *has, const char *v,
		    const char *what, struct lg_error *err)
{
	size_t n = strlen(v);

	if (n == 0 || n >= cap)
		return lg_error_set(err, LG_EINVAL,
				    "\"%.64s%s\" is not %s of 1 to %zu bytes",
				    v, n > 64 ? "..." : "", what, cap - 1);
	memcpy(out, v, n + 1);
	*has = true;
	return 0;
}

static int set_tenant(struct verdict_filter *f, const char *v,
		      struct lg_error *err)
{
	/* A namespace that is no tenant would match nothing, silently. */
	if (!ns_is_tenant(v) || !dns1123_subdomain(v, strlen(v)))
		return filter_refuse(
			err, v,
			"a tenant namespace (tenant-root or tenant-...)");
	return set_text(f->tenant, sizeof(f->tenant), &f->has_tenant, v,
			"a tenant namespace", err);
}

static int set_requester(struct verdict_filter *f, const char *v,
			 struct lg_error *err)
{
	return set_text(f->requester, sizeof(f->requester), &f->has_requester,
			v, "a user name", err);
}

static int set_reason(struct verdict_filter *f, const char *v,
		      struct lg_error *err)
{
	return set_text(f->reason, sizeof(f->reason), &f->has_reason, v,
			"a reason", err);
}

static int set_allowed(struct verdict_filter *f, const char *v,
		       struct lg_error *err)
{
	if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)
		f->allowed = 1;
	else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)
		f->allowed = 0;
	else
		return filter_refuse(err, v, "true or false");
	return 0;
}

/* As every time an operator types: 1970 to the last nanosecond the ledger
 * can date (DESIGN 7), and the same phrase saying why not. */
static int set_time(int64_t *out, const char *v, struct lg_error *err)
{
	if (time_parse_user_ns(v, out) != 0)
		return lg_error_set(err, LG_EINVAL, "\"%.64s%s\" %s", v,
				    strlen(v) > 64 ? "..." : "",
				    time_user_why(v));
	return 0;
}

static int set_from(struct verdict_filter *f, const char *v,
		    struct lg_error *err)
{
	return set_time(&f->from_ns, v, err);
}

static int set_to(struct verdict_filter *f, const char *v, struct lg_error *err)
{
	return set_time(&f->to_ns, v, err);
}

static int set_after(struct verdict_filter *f, const char *v,
		     struct lg_error *err)
{
	if (!lg_parse_u64(v, &f->after))
		return filter_refuse(err, v, "a verdict id (0 or more)");
	return 0;
}

static int set_before(struct verdict_filter *f, const char *v,
		      struct lg_error *err)
{
	uint64_t id;

	/* before=0 would leave no id to list: surely a mistake. */
	if (!lg_parse_u64(v, &id) || id == 0)
		return filter_refuse(err, v, "a verdict id (1 or more)");
	f->before = id;
	return 0;
}

static int set_order(struct verdict_filter *f, const char *v,
		     struct lg_error *err)
{
	if (strcmp(v, "asc") != 0 && strcmp(v, "desc") != 0)
		return filter_refuse(err, v, "asc or desc");
	f->desc = v[0] == 'd';
	return 0;
}

static int set_limit(struct verdict_filter *f, const char *v,
		     struct lg_error *err)
{
	uint64_t n;
	char takes[32];

	if (!lg_parse_u64(v, &n) || n < 1 || n > VERDICT_FILTER_LIMIT_MAX) {
		snprintf(takes, sizeof(takes), "1 to %d",
			 VERDICT_FILTER_LIMIT_MAX);
		return filter_refuse(err, v, takes);
	}
	f->limit = n;
	return 0;
}

static const struct {
	const char *name;
	set_fn *set;
} params[] = {
	{"tenant", set_tenant}, {"requester", set_requester},
	{"reason", set_reason}, {"allowed", set_allowed},
	{"from", set_from},	{"to", set_to},
	{"after", set_after},	{"before", set_before},
	{"order", set_order},	{"limit", set_limit},
};

#define N_PARAMS (sizeof(params) / sizeof(params[0]))

const char *const verdict_filter_params[N_PARAMS + 1] = {
	"tenant", "requester", "reason", "allowed", "from", "to",
	"after",  "before",    "order",	 "limit",   NULL};

int verdict_filter_set(struct verdict_filter *f, const char *name,
		       const char *value, struct lg_error *err)
{
	LG_ASSERT(f != NULL && name != NULL && value != NULL);
	for (size_t i = 0; i < N_PARAMS; i++)
		if (strcmp(params[i].name, name) == 0)
			return params[i].set(f, value, err);
	return lg_error_set(err, LG_ENOENT, "no verdict filter \"%.64s\"",
			    name);
}

bool verdict_filter_match(const struct verdict_filter *f, int64_t time_ns,
			  const json_t *v)
{
	const char *ns = jstr(json_object_get(v, "request"), "namespace");
	const char *user = jstr(json_object_get(v, "requester"), "username");
	const char *reason = jstr(v, "reason");

	if (time_ns < f->from_ns || time_ns >= f->to_ns)
		return false;
	if (f->has_tenant && (ns == NULL || !ns_in_subtree(f->tenant, ns)))
		return false;
	/* The user who asked, as the API server named them: not the
	 * review's uid, nor the user's (requester.uid, userUid). */
	if (f->has_requester && (user == NULL || strcmp(user, f->requester)))
		return false;
	if (f->allowed >= 0 &&
	    json_is_true(json_object_get(v, "allowed")) != (f->allowed == 1))
		return false;
	return !f->has_reason ||
	       (reason != NULL && strcmp(reason, f->reason) == 0);
}
