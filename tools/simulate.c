/*
 * gpuledger simulate: the command around sim/ (sim/sim.h), which makes the
 * history. Here are only its options, read into a struct sim_opts with an
 * error naming the option, and the output file: large writes, and a reader
 * that went away (`| head`) is not an error of ours.
 */
#include "tools/tools.h"

#include "sim/sim.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_START "2026-01-01T00:00:00Z"
#define DEFAULT_DAYS  30u
#define OUT_BUF_BYTES (1u << 20)

static const char sim_usage[] =
	"usage: gpuledger simulate [--seed N] [--events N] [--tenants N]\n"
	"         [--depth D] [--days N | --start T --end T]\n"
	"         [--gpu-pod-share P] [--all-gpu-pods] [--no-invalid]\n"
	"         [--churn] [--out FILE]\n"
	"       gpuledger simulate --cases --reviews FILE [--start T] [--out "
	"FILE]\n"
	"  writes a synthetic Cozystack cluster history as a recorded\n"
	"  stream (NDJSON watch events with \"type\", \"object\" and\n"
	"  \"time\") that `gpuledger watch --from FILE` reads. The same\n"
	"  options give the same bytes.\n";

/* The options as typed; sim_args turns them into a struct sim_opts. */
struct sim_args {
	uint64_t seed, events, tenants, depth, days;
	const char *start, *end, *share, *out, *reviews;
	bool all_gpu, valid_only, churn, cases;
};

/* --gpu-pod-share: a plain decimal fraction in [0, 1], to parts per
 * million. */
static bool parse_share(const char *v, uint32_t *ppm)
{
	char *end;
	double d;

	if (!((v[0] >= '0' && v[0] <= '9') || v[0] == '.'))
		return false;
	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || *end != '\0' || !(d >= 0.0 && d <= 1.0))
		return false;
	*ppm = (uint32_t)lround(d * 1e6);
	return true;
}

static int sim_time_opt(const char *name, const char *v, int64_t *out)
{
	if (time_parse_user_ns(v, out) != 0 || *out < 0 ||
	    *out > SIM_TIME_MAX_NS) {
		tool_error("simulate: %s \"%s\" is not an RFC 3339 time or a "
			   "date in 1970..2199",
			   name, v);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The ranges of the numeric options (--days unset is UINT64_MAX). */
static const struct sim_limit {
	const char *name;
	size_t offset; /* of the uint64_t in struct sim_args */
	uint64_t lo, hi;
} sim_limits[] = {
	{"--tenants", offsetof(struct sim_args, tenants), 1, SIM_TENANTS_MAX},
	{"--depth", offsetof(struct sim_args, depth), 1, SIM_DEPTH_MAX},
	{"--events", offsetof(struct sim_args, events), 0, SIM_EVENTS_MAX},
	{"--days", offsetof(struct sim_args, days), 0, SIM_DAYS_MAX},
};

static int sim_check_limits(const struct sim_args *a)
{
	for (size_t i = 0; i < sizeof(sim_limits) / sizeof(sim_limits[0]);
	     i++) {
		const struct sim_limit *l = &sim_limits[i];
		uint64_t v = *(const uint64_t *)((const char *)a + l->offset);

		if ((v >= l->lo && v <= l->hi) ||
		    (l->offset == offsetof(struct sim_args, days) &&
		     v == UINT64_MAX))
			continue;
		tool_error("simulate: %s must be %llu..%llu", l->name,
			   (unsigned long long)l->lo,
			   (unsigned long long)l->hi);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The span [start, end]: --start (default DEFAULT_START), then --end or
 * --days (default DEFAULT_DAYS), not both. */
static int sim_span(struct sim_opts *o, const struct sim_args *a)
{
	int64_t span;

	if (a->days != UINT64_MAX && a->end != NULL) {
		tool_error("simulate: give --days or --end, not both");
		return EXIT_USAGE;
	}
	if (sim_time_opt("--start", a->start, &o->start_ns) != 0)
		return EXIT_USAGE;
	if (a->end != NULL) {
		if (sim_time_opt("--end", a->end, &o->end_ns) != 0)
			return EXIT_USAGE;
		if (o->end_ns >= o->start_ns)
			return EXIT_OK;
		tool_error("simulate: --end is before --start");
		return EXIT_USAGE;
	}
	span = (int64_t)(a->days == UINT64_MAX ? DEFAULT_DAYS : a->days) *
	       86400 * 1000000000ll;
	if (o->start_ns > SIM_TIME_MAX_NS - span) {
		tool_error("simulate: --start plus --days is after 2199");
		return EXIT_USAGE;
	}
	o->end_ns = o->start_ns + span;
	return EXIT_OK;
}

/* Checks the options as typed and fills o. */
static int sim_args(struct sim_opts *o, const struct sim_args *a)
{
	sim_opts_default(o);
	if (sim_check_limits(a) != 0)
		return EXIT_USAGE;
	if (a->share != NULL && !parse_share(a->share, &o->gpu_share_ppm)) {
		tool_error("simulate: --gpu-pod-share \"%s\" is not a number "
			   "in 0..1",
			   a->share);
		return EXIT_USAGE;
	}
	o->seed = a->seed;
	o->events = a->events;
	o->tenants = (uint32_t)a->tenants;
	o->depth = (uint32_t)a->depth;
	o->all_gpu = a->all_gpu;
	o->invalid = !a->valid_only;
	o->churn = a->churn;
	return sim_span(o, a);
}

static FILE *sim_open_out(const char *path)
{
	FILE *f;

	if (path == NULL || strcmp(path, "-") == 0)
		return stdout;
	f = fopen(path, "w");
	if (f == NULL)
		tool_error("simulate: %s: %s", path, strerror(errno));
	return f;
}

/* Writes every line of s to f; 0, an errno of the writes, or -1 after
 * sim_next's error (printed). */
static int sim_write(sim_t *s, FILE *f)
{
	struct lg_error err = {0};
	const char *line;
	size_t len;
	int rc;

	while ((rc = sim_next(s, &line, &len, &err)) == 1) {
		errno = 0;
		if (fwrite(line, 1, len, f) != len)
			return errno ? errno : EIO;
	}
	if (rc == 0)
		return 0;
	tool_error("%s", err.msg[0] ? err.msg : lg_strerror(rc));
	return -1;
}

/* Flushes and closes the output; a reader that went away (`| head`) is
 * not an error of ours. */
static int sim_finish(FILE *f, int werr, const char *path)
{
	if (werr == 0 && fflush(f) != 0)
		werr = errno ? errno : EIO;
	if (f != stdout && fclose(f) != 0 && werr == 0)
		werr = errno ? errno : EIO;
	if (werr < 0)
		return EXIT_USAGE;
	if (werr == 0 || werr == EPIPE)
		return EXIT_OK;
	tool_error("simulate: writing %s failed: %s",
		   path ? path : "the output", strerror(werr));
	return EXIT_USAGE;
}

/* --cases: the stream to --out, and each review, as {"after": N, "review":
 * {...}} with N the stream lines it follows, to --reviews. */
static int sim_cases_main(const struct sim_args *a)
{
	struct sim_case_line *lines = NULL;
	struct lg_error err = {0};
	int64_t start;
	size_t n = 0, after = 0;
	FILE *f, *r;
	int werr = 0, rc;

	if (a->reviews == NULL) {
		tool_error("simulate: --cases needs --reviews FILE for the "
			   "admission reviews");
		return EXIT_USAGE;
	}
	if (sim_time_opt("--start", a->start, &start) != 0)
		return EXIT_USAGE;
	if ((rc = sim_cases(start, &lines, &n, &err)) != 0) {
		tool_error("simulate: %s", err.msg);
		return EXIT_USAGE;
	}
	if ((f = sim_open_out(a->out)) == NULL) {
		sim_cases_free(lines, n);
		return EXIT_USAGE;
	}
	if ((r = fopen(a->reviews, "w")) == NULL) {
		tool_error("simulate: %s: %s", a->reviews, strerror(errno));
		sim_finish(f, 0, a->out);
		sim_cases_free(lines, n);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < n && werr == 0; i++) {
		errno = 0;
		if (lines[i].review
			    ? fprintf(r, "{\"after\":%zu,\"review\":%s}\n",
				      after, lines[i].text) < 0
			    : fprintf(f, "%s\n", lines[i].text) < 0)
			werr = errno ? errno : EIO;
		after += lines[i].review ? 0 : 1;
	}
	sim_cases_free(lines, n);
	rc = sim_finish(r, werr, a->reviews);
	return sim_finish(f, 0, a->out) != EXIT_OK ? EXIT_USAGE : rc;
}

static int sim_main(const struct sim_args *a)
{
	struct sim_opts o;
	struct lg_error err = {0};
	sim_t *s = NULL;
	FILE *f;
	int rc;

	if (sim_args(&o, a) != 0)
		return EXIT_USAGE;
	if ((rc = sim_new(&o, &s, &err)) != 0) {
		tool_error("%s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	if ((f = sim_open_out(a->out)) == NULL) {
		sim_free(s);
		return EXIT_USAGE;
	}
	/* Large writes: stdio's buffer, set before the first write. */
	setvbuf(f, NULL, _IOFBF, OUT_BUF_BYTES);
	rc = sim_finish(f, sim_write(s, f), a->out);
	sim_free(s);
	return rc;
}

int cmd_simulate(int argc, char **argv)
{
	struct sim_args a = {.seed = 1,
			     .events = 100000,
			     .tenants = 24,
			     .depth = 3,
			     .days = UINT64_MAX,
			     .start = DEFAULT_START};
	const struct opt opts[] = {
		{"--seed", OPT_U64, &a.seed, "N", "PRNG seed (default 1)"},
		{"--events", OPT_U64, &a.events, "N",
		 "exactly N lines (default 100000)"},
		{"--tenants", OPT_U64, &a.tenants, "N",
		 "tenants including tenant-root, 1..20000 (default 24)"},
		{"--depth", OPT_U64, &a.depth, "D",
		 "deepest tenant level below tenant-root, 1..6 (default 3)"},
		{"--days", OPT_U64, &a.days, "N",
		 "span of the event times (default 30)"},
		{"--start", OPT_STR, &a.start, "T",
		 "the span's start, an RFC 3339 time (default " DEFAULT_START
		 ")"},
		{"--end", OPT_STR, &a.end, "T",
		 "the span's end, instead of --days"},
		{"--gpu-pod-share", OPT_STR, &a.share, "P",
		 "fraction 0..1 of pods that request GPUs (default 0.02)"},
		{"--all-gpu-pods", OPT_FLAG, &a.all_gpu, NULL,
		 "every pod requests GPUs (benchmark case)"},
		{"--no-invalid", OPT_FLAG, &a.valid_only, NULL,
		 "leave out the deliberately invalid quota keys and values "
		 "(one tenant in 37 has one, each a NOTE)"},
		{"--churn", OPT_FLAG, &a.churn, NULL,
		 "also class-table changes, device plugins leaving and "
		 "returning, recreated objects and claims whose coverage "
		 "changes"},
		{"--out", OPT_STR, &a.out, "FILE",
		 "write to FILE instead of stdout"},
		{"--cases", OPT_FLAG, &a.cases, NULL,
		 "instead, the short history in which each finding of "
		 "`gpuledger reconcile` happens once (an object older than "
		 "admission, a bypass, a race of two admissions, a budget "
		 "lowered under usage), from --start; the admission reviews "
		 "that go with it are written to --reviews"},
		{"--reviews", OPT_STR, &a.reviews, "FILE",
		 "with --cases: the AdmissionReviews, one JSON line each "
		 "{\"after\": N, \"review\": {...}}: send it to serve's POST "
		 "/v1/admission once the first N stream lines are observed"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("simulate", sim_usage, opts, NULL);
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	return a.cases ? sim_cases_main(&a) : sim_main(&a);
}
