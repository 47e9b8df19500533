/*
 * Crash safety (DESIGN 4.2, 9): a child appends batches (with a meta value
 * counting them and object table records naming the batch, written in the
 * same transaction) and is killed with
 * SIGKILL at random moments, hundreds of times across seeds. After each
 * kill the log reopens, verify passes, the last seq is a batch boundary,
 * the meta value and the object table (its records and objects.seq) agree
 * with it, and the state equals a replay of the
 * generator up to that seq; the next child resumes from there.
 *
 * Half of the kills come at a random moment after the fork (inside open,
 * before the first commit, ...), half at a random moment after the child
 * has committed at least once, which it reports through a pipe: those
 * prove the log grows between kills however slow the machine is.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T0    1767225600000000000LL
#define BATCH 40
#define KILLS 60

/* Appends batches until killed; writes one byte to fd after its first
 * commit. */
static void child(const char *dir, uint64_t seed, int fd)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.checkpoint_every = 150,
				.checkpoint_secs = -1,
				.map_size_bytes = 256 << 10};
	struct event evs[BATCH];
	struct gen *g = gen_new(seed, T0);
	ledger_t *lg;
	uint64_t batches;

	if (ledger_open(&lg, &o, NULL) != 0)
		_exit(3);
	/* Skip what earlier children wrote. */
	for (uint64_t i = 0; i < ledger_last_seq(lg); i++)
		gen_next(g, evs, 1);
	for (batches = ledger_last_seq(lg) / BATCH;; batches++) {
		struct ledger_meta m = {"batches", &batches, sizeof(batches)};
		uint64_t next = batches + 1;
		/* Object records: "last" holds the batch count, "b<k>" is
		 * put at batch k and deleted at batch k + 3. */
		char put[24], del[24];
		struct ledger_meta objs[3] = {{"last", &next, sizeof(next)},
					      {put, &next, sizeof(next)},
					      {del, NULL, 0}};
		struct ledger_batch b = {.meta = &m,
					 .n_meta = 1,
					 .objects = true,
					 .objs = objs,
					 .n_objs = next > 3 ? 3 : 2};

		snprintf(put, sizeof(put), "b%llu", (unsigned long long)next);
		snprintf(del, sizeof(del), "b%llu",
			 (unsigned long long)(next - 3));
		m.val = &next;
		gen_next(g, evs, BATCH);
		if (ledger_append_batch(lg, evs, BATCH, &b, NULL, NULL) != 0)
			_exit(4);
		if (fd >= 0 && (write(fd, "c", 1) != 1 || close(fd) != 0))
			_exit(5);
		fd = -1;
	}
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct objs_seen {
	uint64_t last, n, lo, hi;
};

static int objs_fn(void *ctx, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	struct objs_seen *o = ctx;
	uint64_t v, k;

	ck_assert_uint_eq(vlen, sizeof(v));
	memcpy(&v, val, sizeof(v));
	if (klen == 4 && memcmp(key, "last", 4) == 0) {
		o->last = v;
		return 0;
	}
	char buf[24];

	ck_assert(klen > 1 && klen < sizeof(buf) &&
		  ((const char *)key)[0] == 'b');
	memcpy(buf, (const char *)key + 1, klen - 1);
	buf[klen - 1] = '\0';
	k = strtoull(buf, NULL, 10);
	ck_assert_uint_eq(k, v);
	o->n++;
	o->lo = o->n == 1 || k < o->lo ? k : o->lo;
	o->hi = k > o->hi ? k : o->hi;
	return 0;
}

/* The object table is the one of batch `batches`: "last" is it, and
 * exactly the records b(batches-2)..b(batches) are there. */
static void check_objects(ledger_t *lg, uint64_t batches)
{
	struct objs_seen o = {0};
	struct lg_error err = {0};
	uint64_t at = 1;
	bool present = true;

	ck_assert_int_eq(ledger_objects_seq(lg, &at, &present, &err), 0);
	ck_assert(present == (batches > 0));
	ck_assert_uint_eq(at, batches * BATCH);
	ck_assert_int_eq(ledger_objects_scan(lg, objs_fn, &o, &err), 0);
	ck_assert_uint_eq(o.last, batches);
	ck_assert_uint_eq(o.n, batches < 3 ? batches : 3);
	if (batches > 0) {
		ck_assert_uint_eq(o.hi, batches);
		ck_assert_uint_eq(o.lo, batches < 3 ? 1 : batches - 2);
	}
}

static uint64_t check_after_kill(const char *dir, uint64_t seed)
{
	struct ledger_opts o = {.dir = dir, .read_only = true};
	struct lg_error err = {0};
	ledger_t *lg;
	uint64_t bad = 1, batches = 0, last;
	size_t len = 0;
	int rc = ledger_open(&lg, &o, &err);

	if (rc == LG_ENOENT) /* killed before the first commit */
		return 0;
	ck_assert_msg(rc == 0, "reopen: %s", err.msg);
	last = ledger_last_seq(lg);
	ck_assert_msg(ledger__verify(lg, &bad, &err) == 0, "verify: %s at %llu",
		      err.msg, (unsigned long long)bad);
	ck_assert_uint_eq(last % BATCH, 0);
	if (last > 0) {
		ck_assert_int_eq(ledger_meta_get(lg, "batches", &batches,
						 sizeof(batches), &len, &err),
				 0);
		ck_assert_uint_eq(batches * BATCH, last);
	}
	check_objects(lg, last / BATCH);
	/* The state loaded at open equals a replay of the generator. */
	{
		struct gen *g = gen_new(seed, T0);
		state_t *ref = state_new();
		uint8_t *a, *b;
		size_t na, nb;

		for (uint64_t i = 1; i <= last; i++) {
			struct event ev;

			gen_next(g, &ev, 1);
			ev.seq = i;
			ck_assert_int_eq(state_apply(ref, &ev, &err), 0);
		}
		ck_assert_int_eq(state_encode(ref, &a, &na), 0);
		ck_assert_int_eq(state_encode(ledger_state(lg), &b, &nb), 0);
		ck_assert_msg(na == nb && memcmp(a, b, na) == 0,
			      "state at %llu differs from the replay",
			      (unsigned long long)last);
		free(a);
		free(b);
		state_free(ref);
		gen_free(g);
	}
	ledger_close(lg);
	return last;
}

START_TEST(crash_sigkill_any_moment)
{
	char *dir = fresh_dir();
	uint64_t seed = 1000 + (uint64_t)_i, r = seed * 7919 + 1;
	uint64_t last = 0;

	for (int k = 0; k < KILLS; k++) {
		bool wait_commit = k % 2 == 1;
		struct timespec ts = {0, (long)(rnd(&r) % 8000000)};
		int status, p[2];
		ssize_t got = 0;
		char c;
		pid_t pid;

		ck_assert_int_eq(pipe(p), 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			close(p[0]);
			child(dir, seed, p[1]);
		}
		close(p[1]);
		/* Until the child has committed (EOF: it died, which the
		 * status below reports). */
		if (wait_commit)
			got = read(p[0], &c, 1);
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		close(p[0]);
		ck_assert_int_ge(got, 0);
		/* It must have been killed, not have failed on its own. */
		ck_assert_msg(WIFSIGNALED(status), "child exited %d",
			      WEXITSTATUS(status));
		uint64_t now = check_after_kill(dir, seed);

		ck_assert_uint_ge(now, last);
		/* The child got work done before this kill, not only died. */
		if (wait_commit)
			ck_assert_msg(now > last,
				      "kill %d: the log did not grow past %llu "
				      "after the child committed",
				      k, (unsigned long long)last);
		last = now;
	}
	rm_tree(dir);
}
END_TEST

/* What a creator killed between creating data.mdb and its first write
 * leaves: an empty file. A reader finds no ledger there (LMDB, read-only,
 * used to fail with EBADF trying to write the meta pages itself), and the
 * next writer starts the log in it. */
START_TEST(crash_before_first_write)
{
	char *dir = fresh_dir(), path[300];
	struct ledger_opts ro = {.dir = dir, .read_only = true};
	struct ledger_opts fo = {.dir = dir, .forensic = true};
	struct ledger_opts rw = {.dir = dir, .create = true};
	struct lg_error err = {0};
	struct event evs[BATCH];
	struct gen *g = gen_new(7, T0);
	ledger_t *lg = NULL;
	uint64_t bad = 1;
	int fd;

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0664);
	ck_assert_int_ge(fd, 0);
	close(fd);
	/* verify's forensic open gives the same answer, not damage. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(ledger_open(&lg, i == 2 ? &fo : &ro, &err),
				 LG_ENOENT);
		ck_assert_ptr_null(lg);
		ck_assert_msg(strstr(err.msg, "no meta pages") != NULL, "%s",
			      err.msg);
	}
	ck_assert_int_eq(ledger_open(&lg, &rw, &err), 0);
	gen_next(g, evs, BATCH);
	ck_assert_int_eq(ledger_append(lg, evs, BATCH, NULL, 0, NULL, &err), 0);
	ledger_close(lg);
	ck_assert_int_eq(ledger_open(&lg, &ro, &err), 0);
	ck_assert_uint_eq(ledger_last_seq(lg), BATCH);
	ck_assert_int_eq(ledger__verify(lg, &bad, &err), 0);
	ledger_close(lg);
	gen_free(g);
	rm_tree(dir);
}
END_TEST

void ledger_tests_crash(Suite *s)
{
	TCase *tc = tcase_create("crash");

	tcase_set_timeout(tc, 300);
	/* 4 seeds x 60 kills = 240 kills at random moments. */
	tcase_add_loop_test(tc, crash_sigkill_any_moment, 0, 4);
	tcase_add_test(tc, crash_before_first_write);
	suite_add_tcase(s, tc);
}
