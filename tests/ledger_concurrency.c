/*
 * Several processes at once (DESIGN 1, 4.2): a watcher-like writer appends
 * observation batches, a query-like writer appends VERDICT events, and
 * readers follow the log; afterwards the log verifies, holds every event of
 * both writers exactly once, and every reader saw seqs only grow.
 */
#include "tests/ledger_gen.h"
#include "tests/ledger_tests.h"

#include <pthread.h>
#include <sys/wait.h>

#define T0	    1767225600000000000LL
#define OBS_BATCHES 60
#define OBS_BATCH   50
#define VERDICTS    300

static ledger_t *open_rw(const char *dir)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.map_size_bytes = 128 << 10,
				.checkpoint_every = 700,
				.checkpoint_secs = -1};
	ledger_t *lg;

	if (ledger_open(&lg, &o, NULL) != 0)
		_exit(3);
	return lg;
}

static void observer(const char *dir)
{
	ledger_t *lg = open_rw(dir);
	struct gen *g = gen_new(9, T0);
	struct event evs[OBS_BATCH];

	for (int b = 0; b < OBS_BATCHES; b++) {
		/* The generator's events must see only their own kind of
		 * state: VERDICTs change no units, so they always fit. */
		struct lg_error err = {0};

		gen_next(g, evs, OBS_BATCH);
		if (ledger_append(lg, evs, OBS_BATCH, NULL, 0, NULL, &err) !=
		    0) {
			fprintf(stderr, "observer: %s\n", err.msg);
			_exit(4);
		}
	}
	ledger_close(lg);
	gen_free(g);
	_exit(0);
}

static void judge(const char *dir)
{
	ledger_t *lg = open_rw(dir);

	for (int i = 0; i < VERDICTS; i++) {
		char rec[64];
		struct event ev = {
			.type = EV_VERDICT, .time_ns = T0, .text = rec};

		struct lg_error err = {0};

		snprintf(rec, sizeof(rec), "{\"id\":%d}", i);
		if (ledger_append(lg, &ev, 1, NULL, 0, NULL, &err) != 0) {
			fprintf(stderr, "judge: %s\n", err.msg);
			_exit(5);
		}
	}
	ledger_close(lg);
	_exit(0);
}

static void reader(const char *dir)
{
	struct ledger_opts o = {.dir = dir, .read_only = true};
	uint64_t last = 0;
	ledger_t *lg = NULL;

	while (ledger_open(&lg, &o, NULL) != 0)
		usleep(1000);
	for (int i = 0; i < 400; i++) {
		state_t *st;
		uint64_t now;

		if (ledger_refresh(lg, NULL) != 0)
			_exit(6);
		now = ledger_last_seq(lg);
		if (now < last)
			_exit(7);
		if (now > 0 && ledger_state_at(lg, now / 2, &st, NULL, NULL))
			_exit(8);
		if (now > 0)
			state_free(st);
		last = now;
	}
	ledger_close(lg);
	_exit(0);
}

static int verdicts_seen(void *ctx, const struct event *ev, const uint8_t *head)
{
	int *seen = ctx;
	int id;

	/* The generator's own VERDICTs carry no id. */
	if (ev->type == EV_VERDICT &&
	    sscanf(ev->text, "{\"id\":%d}", &id) == 1) {
		ck_assert(id >= 0 && id < VERDICTS);
		ck_assert_int_eq(seen[id], 0);
		seen[id] = 1;
	}
	return 0;
}

START_TEST(concurrency_writers_and_readers)
{
	char *dir = fresh_dir();
	void (*roles[])(const char *) = {observer, judge, reader, reader};
	pid_t pids[4];
	int seen[VERDICTS] = {0};
	struct lg_error err = {0};
	ledger_t *lg;
	uint64_t bad = 1;

	ledger_close(open_rw(dir));
	for (int i = 0; i < 4; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0)
			roles[i](dir);
	}
	for (int i = 0; i < 4; i++) {
		int status;

		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "process %d ended with status %d", i, status);
	}
	lg = open_rw(dir);
	ck_assert_uint_eq(ledger_last_seq(lg),
			  OBS_BATCHES * OBS_BATCH + VERDICTS);
	ck_assert_int_eq(ledger__verify(lg, &bad, &err), 0);
	ck_assert_int_eq(ledger_scan(lg, 1, 0, verdicts_seen, seen, &err), 0);
	for (int i = 0; i < VERDICTS; i++)
		ck_assert_int_eq(seen[i], 1);
	ck_assert_uint_eq(state_classes(ledger_state(lg))->n, 2);
	ledger_close(lg);
	rm_tree(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Snapshots on other threads while their parent appends and hands the
 * map's pages back after every commit (issue 11): a snapshot's state and
 * events are those of the moment it was taken, byte for byte. */

struct snap_job {
	ledger_t *snap;
	uint8_t *want; /* the parent's state encoded when it was taken */
	size_t want_n;
	uint64_t seq;
	uint8_t head[LEDGER_HEAD_BYTES];
	int ok;
};

static int last_head(void *ctx, const struct event *ev, const uint8_t *head)
{
	memcpy(ctx, head, LEDGER_HEAD_BYTES);
	return 0;
}

static void *snap_check(void *arg)
{
	struct snap_job *j = arg;
	uint8_t head[LEDGER_HEAD_BYTES] = {0}, *got;
	size_t n;

	if (ledger_snapshot_enter(j->snap, true, NULL) != 0 ||
	    ledger_last_seq(j->snap) != j->seq ||
	    state_encode(ledger_state(j->snap), &got, &n) != 0)
		return NULL;
	j->ok = n == j->want_n && memcmp(got, j->want, n) == 0 &&
		(j->seq == 0 || /* a limit of 0 is no limit */
		 ledger_scan(j->snap, 1, j->seq, last_head, head, NULL) == 0) &&
		memcmp(head, j->head, LEDGER_HEAD_BYTES) == 0;
	free(got);
	return NULL;
}

START_TEST(concurrency_snapshots_while_trimming)
{
	char *dir = fresh_dir();
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.map_trim_bytes = 4096,
				.checkpoint_secs = -1};
	struct gen *g = gen_new(11, T0);
	struct event *evs = calloc(5000, sizeof(*evs));
	ledger_t *lg;

	ck_assert_int_eq(ledger_open(&lg, &o, NULL), 0);
	for (int b = 0; b < 24; b++) {
		struct snap_job j = {.seq = ledger_last_seq(lg)};
		pthread_t t;

		ck_assert_int_eq(ledger_snapshot_new(lg, &j.snap, NULL), 0);
		ck_assert_int_eq(state_encode(ledger_state(lg), &j.want,
					      &j.want_n),
				 0);
		memcpy(j.head, ledger_head(lg), LEDGER_HEAD_BYTES);
		ck_assert_int_eq(pthread_create(&t, NULL, snap_check, &j), 0);
		gen_next(g, evs, 5000);
		ck_assert_int_eq(
			ledger_append(lg, evs, 5000, NULL, 0, NULL, NULL), 0);
		pthread_join(t, NULL);
		ck_assert_msg(j.ok, "snapshot at seq %llu differs",
			      (unsigned long long)j.seq);
		ledger_close(j.snap);
		free(j.want);
	}
	ledger_close(lg);
	free(evs);
	gen_free(g);
	rm_tree(dir);
}
END_TEST

void ledger_tests_concurrency(Suite *s)
{
	TCase *tc = tcase_create("concurrency");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, concurrency_writers_and_readers, 0, 2);
	tcase_add_test(tc, concurrency_snapshots_while_trimming);
	suite_add_tcase(s, tc);
}
