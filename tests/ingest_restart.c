/*
 * Exactly once across restarts (DESIGN 4.2, 9): a child follows a generated
 * stream and is killed with SIGKILL at random moments, then restarted, until
 * a run finishes; the log must equal, event for event and time for time,
 * the log of an uninterrupted run. Also: what a resumed run refuses (another
 * source, stdin again, a changed file or class table), that a finished
 * stream adds nothing when run again and continues when it grows, and
 * relists (a restarted engine seeded from the ledger emits exactly the
 * differences). And the object table (ingest/objtab.c): after any flush, a
 * new engine loaded from the ledger holds exactly the cache of the live
 * engine (random streams, printed seeds).
 */
#include "ingest/ingest_int.h"
#include "tests/ingest_tests.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#define T0_S 1767225600LL /* 2026-01-01T00:00:00Z */
#define ADD_NS_A                                                          \
	"{\"type\":\"ADDED\",\"object\":{\"apiVersion\":\"v1\",\"kind\":" \
	"\"Namespace\",\"metadata\":{\"name\":\"tenant-a\"}}}\n"

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---------------------------------------------------------------------- */
/* A generated stream: tenants, budgets, VMs with claims, GPU and plain
 * pods, nodes, a class table change and back, and some bad lines. */

struct gen {
	FILE *f;
	uint64_t s;
	long t;
};

static void g_time(struct gen *g, char *buf, size_t cap)
{
	uint64_t r = rnd(&g->s) % 10;
	time_t t;
	struct tm tm;

	g->t += (long)(rnd(&g->s) % 3);
	if (r < 2) {
		buf[0] = '\0'; /* keeps the previous time */
		return;
	}
	t = (time_t)(T0_S + g->t - (r == 2 ? 5 : 0)); /* 2: earlier */
	gmtime_r(&t, &tm);
	strftime(buf, cap, "\"time\":\"%Y-%m-%dT%H:%M:%SZ\",", &tm);
}

static void g_line(struct gen *g, const char *type, const char *obj)
{
	char t[64];

	g_time(g, t, sizeof(t));
	fprintf(g->f, "{%s\"type\":\"%s\",\"object\":%s}\n", t, type, obj);
}

/* nvidia.com/A100 is in no class of CLASSES: a pod naming it is dormant
 * (it holds nothing but stays cached) until the second table maps it. */
static const char *const g_res[] = {"nvidia.com/H100", "nvidia.com/L40S",
				    "nvidia.com/L40S_SHARED",
				    "nvidia.com/A100"};

static void g_pod(struct gen *g, uint64_t i)
{
	char obj[1024], name[32];
	uint64_t k = rnd(&g->s) % 40, gpu = rnd(&g->s) % 5 == 0;
	const char *type = rnd(&g->s) % 6 == 0 ? "DELETED" : "ADDED";
	const char *phase = rnd(&g->s) % 8 == 0 ? "Succeeded" : "Running";
	const char *res = gpu ? g_res[rnd(&g->s) % 4] : "memory";

	/* A dormant pod is seen once: only the cache (and after a restart,
	 * the object table) remembers it when the table changes. */
	if (strcmp(res, "nvidia.com/A100") == 0)
		snprintf(name, sizeof(name), "d%llu", (unsigned long long)i);
	else
		snprintf(name, sizeof(name), "p%llu", (unsigned long long)k);
	snprintf(
		obj, sizeof(obj),
		"{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
		"\"namespace\":\"tenant-t%llu\",\"name\":\"%s\",\"uid\":"
		"\"u%llu\",\"labels\":{\"app\":\"web\"}},\"spec\":{"
		"\"nodeName\":\"n%llu\",\"containers\":[{\"name\":\"c\","
		"\"resources\":{\"limits\":{\"cpu\":\"1\",\"%s\":\"%llu\"}}}]},"
		"\"status\":{\"phase\":\"%s\"}}",
		(unsigned long long)(k % 4), name,
		(unsigned long long)(k + 100 * (i / 500)),
		(unsigned long long)(rnd(&g->s) % 3), res,
		(unsigned long long)(1 + rnd(&g->s) % 3),
		*name == 'd' ? "Running" : phase);
	g_line(g, *name == 'd' ? "ADDED" : type, obj);
}

static void g_vm(struct gen *g)
{
	char obj[1024];
	uint64_t k = rnd(&g->s) % 10, c = 1 + rnd(&g->s) % 2;
	const char *cls = rnd(&g->s) % 2 ? "h100" : "l40s";
	const char *type = rnd(&g->s) % 5 == 0 ? "DELETED" : "MODIFIED";

	snprintf(obj, sizeof(obj),
		 "{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":"
		 "\"VMInstance\",\"metadata\":{\"namespace\":\"tenant-t%llu\","
		 "\"name\":\"vm%llu\",\"uid\":\"v%llu\"},\"spec\":{\"gpus\":"
		 "[{\"class\":\"%s\",\"count\":%llu}]}}",
		 (unsigned long long)(k % 4), (unsigned long long)k,
		 (unsigned long long)k, cls, (unsigned long long)c);
	g_line(g, type, obj);
	snprintf(obj, sizeof(obj),
		 "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
		 "\"ResourceClaim\",\"metadata\":{\"namespace\":\"tenant-t%"
		 "llu\","
		 "\"name\":\"vm-instance-vm%llu-gpu1\",\"uid\":\"c%llu\"},"
		 "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\","
		 "\"exactly\":{\"deviceClassName\":\"h100.nvidia.com\","
		 "\"count\":1}}]}},\"status\":%s}",
		 (unsigned long long)(k % 4), (unsigned long long)k,
		 (unsigned long long)k,
		 rnd(&g->s) % 2 ? "{\"allocation\":{\"nodeSelector\":{"
				  "\"nodeSelectorTerms\":[{\"matchFields\":[{"
				  "\"key\":\"metadata.name\",\"operator\":"
				  "\"In\",\"values\":[\"n1\"]}]}]}}}"
				: "{}");
	g_line(g, rnd(&g->s) % 4 == 0 ? "DELETED" : "ADDED", obj);
}

static void g_other(struct gen *g)
{
	char obj[1024];
	uint64_t r = rnd(&g->s) % 6, k = rnd(&g->s) % 4;

	switch (r) {
	case 0:
		snprintf(obj, sizeof(obj),
			 "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
			 "\"metadata\":{\"name\":\"tenant-t%llu\"}}",
			 (unsigned long long)k);
		g_line(g, rnd(&g->s) % 3 ? "ADDED" : "DELETED", obj);
		break;
	case 1:
		snprintf(obj, sizeof(obj),
			 "{\"apiVersion\":\"apps.cozystack.io/v1alpha1\","
			 "\"kind\":\"Tenant\",\"metadata\":{\"namespace\":"
			 "\"tenant-root\",\"name\":\"t%llu\"},\"spec\":{"
			 "\"resourceQuotas\":{\"h100.gpuclass.cozystack.io/"
			 "devices\":\"%llu\",\"limits.nvidia.com/"
			 "L40S\":\"1\"}}}",
			 (unsigned long long)k,
			 (unsigned long long)(rnd(&g->s) % 20));
		g_line(g, rnd(&g->s) % 4 ? "MODIFIED" : "DELETED", obj);
		break;
	case 2:
		snprintf(
			obj, sizeof(obj),
			"{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":"
			"{\"name\":\"n%llu\"},\"spec\":{\"unschedulable\":%s},"
			"\"status\":{\"allocatable\":{\"nvidia.com/H100\":"
			"\"%llu\",\"nvidia.com/L40S\":\"4\"},\"conditions\":[{"
			"\"type\":\"Ready\",\"status\":\"True\"}]}}",
			(unsigned long long)(k % 3),
			rnd(&g->s) % 4 ? "false" : "true",
			(unsigned long long)(rnd(&g->s) % 9));
		g_line(g, "MODIFIED", obj);
		break;
	case 3:
		fputs(rnd(&g->s) % 2 ? "{\"type\":\"ADDED\",\"object\":\n"
				     : "{\"type\":\"ADDED\",\"object\":{"
				       "\"apiVersion\":\"v1\",\"kind\":"
				       "\"Secret\"}}\n",
		      g->f);
		break;
	default:
		snprintf(
			obj, sizeof(obj),
			"{\"apiVersion\":\"apps.cozystack.io/v1alpha1\","
			"\"kind\":\"KubernetesNodes\",\"metadata\":{"
			"\"namespace\":\"tenant-t%llu\",\"name\":\"k\",\"uid\":"
			"\"k%llu\"},\"spec\":{\"maxReplicas\":%llu,\"gpus\":["
			"{\"class\":\"l40s\"}]}}",
			(unsigned long long)k, (unsigned long long)k,
			(unsigned long long)(rnd(&g->s) % 4));
		g_line(g, "MODIFIED", obj);
		break;
	}
}

static void g_table(struct gen *g, bool second)
{
	char *t = h_dq(second ? "{'classes':[{'name':'h100','deviceClassName':"
				"'h100.nvidia.com','resourceNames':["
				"'nvidia.com/H100','nvidia.com/L40S']},"
				"{'name':'a100','resourceNames':["
				"'nvidia.com/L40S_SHARED','nvidia.com/A100']}]}"
			      : CLASSES);
	json_t *o =
		json_pack("{ss s{ss ss s{ss ss} s{ss}}}", "type", "MODIFIED",
			  "object", "apiVersion", "v1", "kind", "ConfigMap",
			  "metadata", "namespace", "cozy-system", "name",
			  "gpu-classes", "data", "classes.json", t);
	char *s = json_dumps(o, JSON_COMPACT);

	fprintf(g->f, "%s\n", s);
	free(s);
	json_decref(o);
	free(t);
}

/* Writes n lines into path. */
static void gen_stream(const char *path, uint64_t seed, size_t n)
{
	struct gen g = {.f = fopen(path, "w"), .s = seed * 2654435761u + 1};

	ck_assert_ptr_nonnull(g.f);
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rnd(&g.s) % 10;

		if (i == n / 3 || i == 2 * n / 3)
			g_table(&g, i == n / 3);
		else if (r < 5)
			g_pod(&g, i);
		else if (r < 8)
			g_vm(&g);
		else
			g_other(&g);
	}
	ck_assert_int_eq(fclose(g.f), 0);
}

/* ---------------------------------------------------------------------- */

static int follow(const char *dir, const char *path, size_t batch,
		  struct ingest_follow_result *res, struct lg_error *err)
{
	return h_follow(dir,
			(struct ingest_follow_opts){.path = path,
						    .batch_events = batch},
			res, err);
}

/* The whole log with times, for comparing runs. */
static int timed_fn(void *ctx, const struct event *ev, const uint8_t *head)
{
	char line[600], t[48];
	size_t n;

	(void)head;
	n = time_format_ns(ev->time_ns, t, sizeof(t));
	memcpy(line, t, n);
	line[n] = ' ';
	h_format(ev, line + n + 1, sizeof(line) - n - 1);
	h_put(ctx, line);
	return 0;
}

static char *timed_log(const char *dir)
{
	struct h_buf b = {0};
	struct lg_error err = {0};
	ledger_t *lg = h_ledger(dir);
	uint64_t bad = 0;

	ck_assert_msg(ledger__verify(lg, &bad, &err) == 0, "verify: %s",
		      err.msg);
	h_put(&b, "");
	b.len = 0;
	ck_assert_int_eq(ledger_scan(lg, 1, 0, timed_fn, &b, &err), 0);
	ledger_close(lg);
	return b.s;
}

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#define STREAM_LINES 3000
#define BATCH	     17
#define ATTEMPTS     60

/* Kills a following child at random moments until a run finishes. */
static unsigned killed_runs(const char *dir, const char *path, uint64_t seed,
			    int64_t span_us)
{
	uint64_t s = seed * 7919 + 3;
	unsigned kills = 0;

	for (int i = 0; i < ATTEMPTS; i++) {
		int status;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			_exit(follow(dir, path, BATCH, NULL, NULL) == 0 ? 0
									: 3);
		usleep((useconds_t)(rnd(&s) % (uint64_t)(span_us + 1)));
		if (kill(pid, SIGKILL) == 0)
			kills++;
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (WIFEXITED(status)) {
			ck_assert_msg(WEXITSTATUS(status) == 0,
				      "child failed: %d", WEXITSTATUS(status));
			return kills;
		}
	}
	/* Then one run to the end. */
	ck_assert_int_eq(follow(dir, path, BATCH, NULL, NULL), 0);
	return kills;
}

START_TEST(restart_sigkill_same_log)
{
	char *whole = fresh_dir(), *killed = fresh_dir(), path[300];
	struct ingest_follow_result res;
	struct lg_error err = {0};
	char *a, *b;
	int64_t t0, span;

	snprintf(path, sizeof(path), "%s/stream.ndjson", whole);
	gen_stream(path, (uint64_t)_i + 1, STREAM_LINES);
	t0 = now_us();
	ck_assert_msg(follow(whole, path, BATCH, &res, &err) == 0,
		      "uninterrupted: %s", err.msg);
	span = now_us() - t0;
	ck_assert(!res.resumed);
	ck_assert_uint_gt(res.c.events_out, 100);
	/* The ledger exists before the first child, so that no kill lands
	 * in its creation. */
	ledger_close(h_ledger(killed));
	killed_runs(killed, path, (uint64_t)_i + 1, span);
	a = timed_log(whole);
	b = timed_log(killed);
	ck_assert_msg(strcmp(a, b) == 0, "seed %d: logs differ", _i + 1);
	free(a);
	free(b);
	rm_tree(whole);
	rm_tree(killed);
}
END_TEST

/* The first line where a and b differ, for the failure message. */
static void first_diff(const char *a, const char *b, char *out, size_t cap)
{
	size_t i = 0, line = 0;

	while (a[i] != '\0' && a[i] == b[i])
		i++;
	while (line < i && a[i - line - 1] != '\n')
		line++;
	snprintf(out, cap, "live: %.300s\nloaded: %.300s", a + i - line,
		 b + i - line);
}

/* A new engine on lg must hold exactly the cache of in, just flushed. */
static void check_loaded(ingest_t *in, ledger_t *lg, uint64_t seed, size_t line)
{
	struct lg_error err = {0};
	ingest_t *again = NULL;
	char *a, *b, diff[700];

	ck_assert_msg(ingest_new(&again, lg, NULL, &err) == 0, "load: %s",
		      err.msg);
	a = ingest__objtab_dump(in);
	b = ingest__objtab_dump(again);
	if (strcmp(a, b) != 0)
		first_diff(a, b, diff, sizeof(diff));
	ck_assert_msg(strcmp(a, b) == 0,
		      "seed %llu, line %zu: the loaded cache differs\n%s",
		      (unsigned long long)seed, line, diff);
	free(a);
	free(b);
	ingest_free(again);
}

#define TABLE_LINES 1500

/* Property: after every flush the table is the cache. Random streams
 * (tenants, budgets, VMs with claims they cover, GPU, plain and dormant
 * pods, nodes, class table changes, bad lines), random batch sizes and
 * flush points. */
START_TEST(restart_table_is_cache)
{
	uint64_t seed = 5000 + (uint64_t)_i, s = seed * 31 + 7;
	char *dir = fresh_dir(), path[300], *line = NULL;
	struct class_table t;
	struct ingest_opts o = {.batch_events = 1 + seed % 40};
	struct lg_error err = {0};
	ledger_t *lg = h_ledger(dir);
	ingest_t *in = NULL;
	size_t cap = 0, n = 0;
	ssize_t len;
	FILE *f;

	printf("restart_table_is_cache: seed %llu\n", (unsigned long long)seed);
	snprintf(path, sizeof(path), "%s/stream.ndjson", dir);
	gen_stream(path, seed, TABLE_LINES);
	h_table(&t, CLASSES);
	o.classes = &t;
	ck_assert_int_eq(ingest_new(&in, lg, &o, &err), 0);
	class_table_release(&t);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while ((len = getline(&line, &cap, f)) > 0) {
		ck_assert_msg(ingest__line(in, line, (size_t)len - 1, &err) ==
				      0,
			      "seed %llu line %zu: %s",
			      (unsigned long long)seed, n, err.msg);
		n++;
		if (rnd(&s) % 29 == 0) {
			ck_assert_int_eq(ingest__flush(in, &err), 0);
			check_loaded(in, lg, seed, n);
		}
	}
	ck_assert_int_eq(ingest__tick(in, ingest__time_ns(in), &err), 0);
	check_loaded(in, lg, seed, n);
	free(line);
	fclose(f);
	ingest_free(in);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* A finished stream adds nothing when run again, and goes on from where it
 * was when it grows. */
START_TEST(restart_rerun_and_grow)
{
	char *dir = fresh_dir(), path[300];
	struct ingest_follow_result res;
	struct lg_error err = {0};
	FILE *f;
	uint64_t last, synced;
	ledger_t *lg;

	snprintf(path, sizeof(path), "%s/s.ndjson", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("{\"type\":\"ADDED\",\"time\":\"2026-01-01T00:00:00Z\","
	      "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	      "\"metadata\":{\"name\":\"tenant-a\"}}}\n",
	      f);
	fclose(f);
	ck_assert_int_eq(follow(dir, path, 0, &res, &err), 0);
	lg = h_ledger(dir);
	last = ledger_last_seq(lg);
	ck_assert_int_eq(ledger_synced_seq(lg, &synced, &err), 0);
	ledger_close(lg);
	ck_assert_uint_eq(last, 5); /* 2 CLASS, 2 TENANT, NOTE Synced */
	ck_assert_uint_eq(synced, 5); /* the end of the stream: its list */
	ck_assert_int_eq(follow(dir, path, 0, &res, &err), 0);
	ck_assert(res.resumed);
	ck_assert_uint_eq(res.c.lines, 0); /* nothing re-read */
	ck_assert_uint_eq(res.c.events_out, 0);
	f = fopen(path, "a");
	fputs("{\"type\":\"ADDED\",\"time\":\"2026-01-01T00:01:00Z\","
	      "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
	      "\"metadata\":{\"name\":\"tenant-b\"}}}\n",
	      f);
	fclose(f);
	ck_assert_int_eq(follow(dir, path, 0, &res, &err), 0);
	ck_assert_uint_eq(res.c.events_out, 1); /* no second NOTE Synced */
	lg = h_ledger(dir);
	ck_assert_int_eq(ledger_synced_seq(lg, &synced, &err), 0);
	ck_assert_uint_eq(synced, 5);
	ledger_close(lg);
	{
		char *log = timed_log(dir);

		ck_assert_str_eq(
			strstr(log, "2026-01-01T00:01:00.000000000Z TENANT"),
			"2026-01-01T00:01:00.000000000Z TENANT tenant-b");
		free(log);
	}
	rm_tree(dir);
}
END_TEST

/* What a resumed run refuses. */
START_TEST(restart_refusals)
{
	char *dir = fresh_dir(), path[300], other[300];
	struct lg_error err = {0};
	struct class_table t;
	struct ingest_follow_opts fo = {0};
	ledger_t *lg;
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "%s/s.ndjson", dir);
	snprintf(other, sizeof(other), "%s/o.ndjson", dir);
	gen_stream(path, 9, 50);
	gen_stream(other, 10, 50);
	ck_assert_int_eq(follow(dir, path, 0, NULL, &err), 0);
	/* Another file. */
	ck_assert_int_eq(follow(dir, other, 0, NULL, &err), LG_EEXIST);
	/* No such file. */
	ck_assert_int_eq(follow(dir, "/nonexistent/x", 0, NULL, &err),
			 LG_ENOENT);
	/* Another class table. */
	lg = h_ledger(dir);
	class_table_init(&t);
	fo.path = path;
	fo.classes = &t;
	rc = ingest_follow(lg, &fo, NULL, &err);
	ck_assert_msg(rc == LG_ECORRUPT, "table: %d %s", rc, err.msg);
	ledger_close(lg);
	/* The same name, other bytes. */
	f = fopen(path, "r+");
	fputs("[", f);
	fclose(f);
	ck_assert_int_eq(follow(dir, path, 0, NULL, &err), LG_ECORRUPT);
	/* Shorter than the position. */
	ck_assert_int_eq(truncate(path, 100), 0);
	ck_assert_int_eq(follow(dir, path, 0, NULL, &err), LG_ECORRUPT);
	rm_tree(dir);
}
END_TEST

/* Standard input cannot be resumed: a second stdin run is refused before
 * it reads anything. */
START_TEST(restart_stdin_refused)
{
	char *dir = fresh_dir();
	struct lg_error err = {0};
	int fds[2], status;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fds[0], STDIN_FILENO);
		close(fds[1]);
		_exit(follow(dir, "-", 0, NULL, NULL) == 0 ? 0 : 3);
	}
	close(fds[0]);
	ck_assert_int_gt(write(fds[1], ADD_NS_A, strlen(ADD_NS_A)), 0);
	close(fds[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(follow(dir, "-", 0, NULL, &err), LG_EEXIST);
	ck_assert_ptr_nonnull(strstr(err.msg, "standard input"));
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Relists: a restarted engine is seeded from the ledger, so a relist of
 * the same objects emits nothing and one without an object releases it. */

static void event_q(ingest_t *in, enum watch_type t, const char *q)
{
	struct lg_error err = {0};
	char *s = h_dq(q);
	json_t *o = json_loads(s, 0, NULL);

	ck_assert_ptr_nonnull(o);
	ck_assert_msg(ingest__event(in, t, o, 0, &err) == 0, "%s", err.msg);
	json_decref(o);
	free(s);
}

#define R_NS   NSOBJ("tenant-a")
#define R_TEN  TEN("tenant-root", "a", "{'gpuclass.cozystack.io/devices':'4'}")
#define R_VM   VMI("tenant-a", "vm", "v1", "[{'class':'h100'}]")
#define R_POD  GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/L40S", "1")
#define R_NODE NODE("n1", "{'nvidia.com/L40S':'2'}", "")

static const struct {
	enum resource r;
	const char *obj;
} relist_objs[] = {
	{RES_NAMESPACE, R_NS}, {RES_TENANT, R_TEN}, {RES_VMINSTANCE, R_VM},
	{RES_POD, R_POD},      {RES_NODE, R_NODE},
};

#define N_RELIST (sizeof(relist_objs) / sizeof(relist_objs[0]))

/* Relists every resource; skip names the one resource listed empty. */
static void relist_all(struct h *h, int skip)
{
	struct lg_error err = {0};

	for (size_t i = 0; i < N_RELIST; i++) {
		ck_assert_int_eq(
			ingest__relist_begin(h->in, relist_objs[i].r, &err), 0);
		if ((int)i != skip)
			event_q(h->in, WATCH_ADDED, relist_objs[i].obj);
		ck_assert_int_eq(
			ingest__relist_end(h->in, relist_objs[i].r, &err), 0);
	}
}

static const char *const relist_want[N_RELIST] = {
	"", /* the namespace: the Tenant still governs tenant-a */
	"BUDGET tenant-a gpuclass.cozystack.io/devices=null",
	"RELEASE VMInstance tenant-a/vm#v1 h100 1>0",
	"FREE Pod tenant-a/p#u1 l40s 1>0 @n1; RELEASE Pod tenant-a/p#u1 l40s "
	"1>0",
	"NODE n1 l40s 0 -; NODE n1 gone",
};

START_TEST(restart_relist_seeded)
{
	struct lg_error err = {0};
	struct h h;
	char *first;

	h_open(&h, CLASSES);
	relist_all(&h, -1);
	first = h_take(&h);
	ck_assert_ptr_nonnull(strstr(first, "RESERVE VMInstance"));
	free(first);
	/* A new engine on the same ledger: seeded, then the same relist. */
	ingest_free(h.in);
	ck_assert_int_eq(ingest_new(&h.in, h.lg, NULL, &err), 0);
	relist_all(&h, -1);
	h_expect(&h, "", "same objects");
	ingest_free(h.in);
	ck_assert_int_eq(ingest_new(&h.in, h.lg, NULL, &err), 0);
	relist_all(&h, (int)_i);
	h_expect(&h, relist_want[_i],
		 ingest__resource_info(relist_objs[_i].r)->kind);
	h_close(&h);
}
END_TEST

/* Within one engine: objects not listed are deleted at the end. */
START_TEST(restart_relist_deletes)
{
	struct lg_error err = {0};
	struct h h;

	h_open(&h, CLASSES);
	event_q(h.in, WATCH_ADDED,
		GPOD("ns", "a", "ua", "n1", "nvidia.com/H100", "1"));
	event_q(h.in, WATCH_ADDED,
		GPOD("ns", "b", "ub", "n1", "nvidia.com/H100", "1"));
	free(h_take(&h));
	ck_assert_int_eq(ingest__relist_begin(h.in, RES_POD, &err), 0);
	event_q(h.in, WATCH_ADDED,
		GPOD("ns", "b", "ub", "n1", "nvidia.com/H100", "2"));
	ck_assert_int_eq(ingest__relist_end(h.in, RES_POD, &err), 0);
	h_expect(
		&h,
		"RESERVE Pod ns/b#ub h100 1>2; ALLOC Pod ns/b#ub h100 1>2 @n1; "
		"FREE Pod ns/a#ua h100 1>0 @n1; RELEASE Pod ns/a#ua h100 1>0",
		"relist");
	ck_assert_int_eq(ingest__relist_end(h.in, RES_MAX, &err), LG_EINVAL);
	h_close(&h);
}
END_TEST

/* Positions are committed with the events and read back by a new engine. */
START_TEST(restart_positions)
{
	struct lg_error err = {0};
	struct h h;

	h_open(&h, CLASSES);
	ck_assert_ptr_null(ingest__position(h.in, RES_POD));
	event_q(h.in, WATCH_ADDED,
		GPOD("ns", "a", "ua", "n1", "nvidia.com/H100", "1"));
	ingest__set_position(h.in, RES_POD, "12345");
	ck_assert_ptr_null(ingest__position(h.in, RES_POD));
	ck_assert_int_eq(ingest__flush(h.in, &err), 0);
	ck_assert_str_eq(ingest__position(h.in, RES_POD), "12345");
	ingest_free(h.in);
	ck_assert_int_eq(ingest_new(&h.in, h.lg, NULL, &err), 0);
	ck_assert_str_eq(ingest__position(h.in, RES_POD), "12345");
	ck_assert_ptr_null(ingest__position(h.in, RES_NODE));
	ck_assert_str_eq(ingest__position_key(RES_MAX),
			 "ingest.position.stream");
	ck_assert_int_eq(ingest__resource_of("v1", "Pod"), RES_POD);
	ck_assert_int_eq(ingest__resource_of("v1beta1", "Pod"), RES_MAX);
	ck_assert_int_eq(
		ingest__resource_of("resource.k8s.io/v1", "ResourceClaim"),
		RES_RESOURCECLAIM);
	ck_assert_str_eq(ingest__resource_info(RES_KUBERNETESNODES)->path,
			 "/apis/apps.cozystack.io/v1alpha1/kubernetesnodeses");
	h_close(&h);
}
END_TEST

INGEST_PART(restart)
{
	TCase *tc = tcase_create("restart_sigkill");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, restart_sigkill_same_log, 0, 4);
	suite_add_tcase(s, tc);
	tc = tcase_create("restart_resume");
	tcase_add_test(tc, restart_rerun_and_grow);
	tcase_add_test(tc, restart_refusals);
	tcase_add_test(tc, restart_stdin_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("restart_relist");
	tcase_add_loop_test(tc, restart_relist_seeded, 0, N_RELIST);
	tcase_add_test(tc, restart_relist_deletes);
	tcase_add_test(tc, restart_positions);
	suite_add_tcase(s, tc);
	tc = tcase_create("restart_table");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, restart_table_is_cache, 0, 8);
	suite_add_tcase(s, tc);
}
