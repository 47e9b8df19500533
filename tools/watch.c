/*
 * gpuledger watch: the only writer of observations (DESIGN 1, 6). It follows
 * a recorded NDJSON stream (--from FILE, or - for standard input) or a live
 * cluster, and appends the differences it observes to the ledger.
 *
 * The work is in ingest/: ingest_follow for streams (exactly once across
 * restarts), kube_watch_run for a cluster. This file parses options, loads
 * --classes, opens the ledger and turns SIGINT/SIGTERM into a clean stop.
 */
#include "ingest/ingest.h"
#include "tools/tools.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char watch_usage[] =
	"usage: gpuledger watch --db DIR --from FILE|- [--classes FILE]\n"
	"                       [--idle-ms N]\n"
	"       gpuledger watch --db DIR [--kubeconfig FILE] [--context NAME]\n"
	"                       [--classes FILE] [--record FILE] [--tick S]\n"
	"  appends what it observes to the ledger in DIR (created when\n"
	"  missing): TENANT, BUDGET, RAWKEY, CLASS, NODE, RESERVE, RELEASE,\n"
	"  ALLOC, FREE and NOTE events, only differences, in group commits.\n";

static const char watch_after[] =
	"  Exit status: 0 when the input ended or SIGINT/SIGTERM stopped it\n"
	"  (what was read is committed), 2 on a usage or operating error.\n";

/* Set by the signal handler: a signal handler can reach nothing else. */
static volatile sig_atomic_t watch_stop;

static void on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* How a recorded stream is read (--from and the options that go with it). */
struct stream_opts {
	const char *from;
	uint64_t max_object, batch, parse_threads, idle_ms;
	bool verbose;
};

static int watch_stream(ledger_t *lg, const struct class_table *t,
			const struct stream_opts *so, int64_t begin_ns)
{
	struct ingest_follow_opts fo = {
		.path = so->from,
		.classes = t->n ? t : NULL,
		.max_object_bytes = (size_t)so->max_object,
		.batch_events = (size_t)so->batch,
		.stop = &watch_stop,
		.parse_threads = (unsigned)so->parse_threads,
		.parse_inline = so->parse_threads == 0,
		.idle_ms = (unsigned)so->idle_ms};
	struct ingest_follow_result res;
	struct lg_error err = {0};
	char line[256];
	int rc = ingest_follow(lg, &fo, &res, &err);

	if (rc != 0) {
		tool_error("watch: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	snprintf(line, sizeof(line),
		 "watch: %s%llu lines, %llu events, %llu "
		 "notes, %llu pods without GPUs skipped (no class's resource "
		 "named, so not parsed; normal); last seq %llu; start read "
		 "%llu records",
		 res.resumed ? "resumed; " : "",
		 (unsigned long long)res.c.lines,
		 (unsigned long long)res.c.events_out,
		 (unsigned long long)res.c.notes,
		 (unsigned long long)res.c.skipped_fast,
		 (unsigned long long)ledger_last_seq(lg),
		 (unsigned long long)res.c.start_records);
	if (so->verbose && res.ready_mono_ns > 0)
		fprintf(stderr,
			"watch: ready in %.1f ms (ledger open, object table "
			"loaded, %s positioned)\n",
			(double)(res.ready_mono_ns - begin_ns) / 1e6, so->from);
	return tool_flush("watch", tool_puts(line));
}

struct live_opts {
	const char *kubeconfig, *context, *record, *metrics_listen;
	uint64_t tick_s, max_object, batch, api_recheck_s;
	bool verbose;
};

static int watch_live(ledger_t *lg, const struct class_table *t,
		      const struct live_opts *lo)
{
	struct kube_config kc;
	struct ingest_opts io = {.classes = t->n ? t : NULL,
				 .max_object_bytes = (size_t)lo->max_object,
				 .batch_events = (size_t)lo->batch,
				 .tick_ns = (int64_t)lo->tick_s * 1000000000LL};
	struct kube_watch_opts wo = {.record_path = lo->record,
				     .tick_ns = io.tick_ns,
				     .max_object_bytes = io.max_object_bytes,
				     .stop = &watch_stop,
				     .metrics_listen = lo->metrics_listen,
				     .api_recheck_ms =
					     (int64_t)lo->api_recheck_s * 1000,
				     .verbose = lo->verbose};
	struct lg_error err = {0};
	ingest_t *in = NULL;
	int rc = kube_config_load(&kc, lo->kubeconfig, lo->context, &err);

	if (rc == 0) {
		rc = ingest_new(&in, lg, &io, &err);
		if (rc == 0)
			rc = kube_watch_run(in, &kc, &wo, &err);
		ingest_free(in);
		kube_config_release(&kc);
	}
	if (rc != 0) {
		tool_error("watch: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* What the command line gives. */
struct watch_args {
	const char *db, *from, *classes;
	struct live_opts live;
	struct ledger_opts lo;
	uint64_t parse_threads, idle_ms;
};

/* Checks a's bounds, loads --classes, opens the ledger and follows the
 * stream or the cluster until it ends or a signal stops it. */
static int watch_run(const struct watch_args *a, int64_t begin_ns)
{
	const struct live_opts *live = &a->live;
	struct class_table t;
	ledger_t *lg;
	int status;

	if (live->batch > 1000000 || live->tick_s == 0 ||
	    live->max_object > (1ULL << 30) || live->api_recheck_s == 0 ||
	    live->api_recheck_s > 86400 ||
	    a->parse_threads > INGEST_PIPE_THREADS_MAX || a->idle_ms == 0 ||
	    a->idle_ms > INGEST_IDLE_MS_MAX) {
		tool_error("watch: --batch is at most 1000000, --tick at least "
			   "1, --max-object-bytes at most 1 GiB, --api-recheck "
			   "1..86400, --parse-threads 0..%d, --idle-ms 1..%d",
			   INGEST_PIPE_THREADS_MAX, INGEST_IDLE_MS_MAX);
		return EXIT_USAGE;
	}
	if ((status = tool_load_classes("watch", a->classes, &t)) != 0)
		return status;
	if ((status = tool_open_ledger("watch", a->db, &a->lo, &lg)) != 0) {
		class_table_release(&t);
		return status;
	}
	tool_catch_stop(on_signal);
	if (a->from != NULL) {
		const struct stream_opts so = {.from = a->from,
					       .max_object = live->max_object,
					       .batch = live->batch,
					       .parse_threads =
						       a->parse_threads,
					       .idle_ms = a->idle_ms,
					       .verbose = live->verbose};

		status = watch_stream(lg, &t, &so, begin_ns);
	} else
		status = watch_live(lg, &t, live);
	ledger_close(lg);
	class_table_release(&t);
	return status;
}

int cmd_watch(int argc, char **argv)
{
	int64_t begin_ns = mono_ns();
	struct watch_args a = {.live = {.tick_s = 60, .api_recheck_s = 60},
			       .lo = {.create = true},
			       .parse_threads = 1,
			       .idle_ms = INGEST_IDLE_MS_DEFAULT};
	const struct opt opts[] = {
		OPT_DB(&a.db),
		{"--from", OPT_STR, &a.from, "FILE|-",
		 "a recorded stream: one Kubernetes watch event per line, "
		 "{\"type\", \"object\", \"time\"?}; a line's RFC 3339 "
		 "\"time\" is its event time (lines without one keep the "
		 "previous time). The position in FILE is committed with the "
		 "events, so a run that was stopped or killed resumes where it "
		 "left off when started again with the same FILE (and "
		 "--classes): nothing is lost or repeated. At the end a TICK "
		 "carries the last line's time, and the first end of a stream "
		 "is its complete list (NOTE Synced: serve is ready from "
		 "then on). - is standard input, which "
		 "cannot be read twice and so cannot be resumed: a ledger that "
		 "already holds a stdin stream is refused (exit 2); use a "
		 "file, or a new --db. A pipe, FIFO, terminal or socket (stdin "
		 "included) is read live: each line is taken when its newline "
		 "arrives and committed when the input pauses (--idle-ms); "
		 "the end is when the last writer closes it. Such an input "
		 "cannot be read again from an offset, so a restart on a "
		 "ledger that holds its stream is refused the same way (exit "
		 "2): lines read after the last commit would be lost."},
		{"--classes", OPT_STR, &a.classes, "FILE",
		 "the class table at start ({\"classes\": [...]}); the "
		 "cozy-system/gpu-classes ConfigMap replaces it"},
		{"--no-sync", OPT_FLAG, &a.lo.no_sync, NULL, OPT_NO_SYNC_HELP},
		{"--batch", OPT_U64, &a.live.batch, "N",
		 "events per commit (default 10000)"},
		{"--max-object-bytes", OPT_U64, &a.live.max_object, "N",
		 "longest line or object (default 4 MiB); longer ones are "
		 "skipped and recorded as a NOTE"},
		{"--idle-ms", OPT_U64, &a.idle_ms, "N",
		 "with a live --from (a pipe, FIFO, terminal or socket): "
		 "commit every complete line read so far once the input has "
		 "paused for N ms, counted from its first pause after the "
		 "last commit, so that a trickle is committed too (default "
		 "100; 1..60000). A regular file is committed every --batch "
		 "events only."},
		{"--parse-threads", OPT_U64, &a.parse_threads, "N",
		 "threads that parse --from lines ahead of the engine "
		 "(default 1; 0: parse on the engine's thread); the log is "
		 "the same"},
		{"--kubeconfig", OPT_STR, &a.live.kubeconfig, "FILE",
		 "without --from: the live cluster (default $KUBECONFIG, "
		 "~/.kube/config, else in-cluster)"},
		{"--context", OPT_STR, &a.live.context, "NAME",
		 "the kubeconfig's context (default: its current-context)"},
		{"--record", OPT_STR, &a.live.record, "FILE",
		 "tee the received events as a recorded stream"},
		{"--tick", OPT_U64, &a.live.tick_s, "S",
		 "a TICK after S seconds of quiet (default 60)"},
		{"--verbose", OPT_FLAG, &a.live.verbose, NULL,
		 "log each request and retry to stderr (with --from: how "
		 "long the start took)"},
		{"--metrics-listen", OPT_STR, &a.live.metrics_listen,
		 "HOST:PORT",
		 "Prometheus metrics on GET /metrics (per-resource watch "
		 "health, lag, relists, errors; events appended; NOTEs by "
		 "code; port 0 picks one)"},
		{"--api-recheck", OPT_U64, &a.live.api_recheck_s, "S",
		 "a resource whose API is not served (e.g. no "
		 "resource.k8s.io/v1 before Kubernetes 1.34: v1beta2 or "
		 "v1beta1 is read instead; no Cozystack CRDs) is skipped with "
		 "a NOTE ApiAbsent and discovered again every S seconds "
		 "(default 60); the other resources go on."},
	};
	const struct cmd_spec spec =
		CMD_SPEC("watch", watch_usage, opts, watch_after);
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	tool_no_dumps();
	return watch_run(&a, begin_ns);
}
