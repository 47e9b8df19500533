/*
 * The engine's object table (ingest/objtab.c, DESIGN 4.2, 9): what a
 * restart loads. A dormant pod seen before a restart is mapped by a class
 * table change after it; a restart reads O(live objects) records however
 * long the history; a damaged record is LG_ECORRUPT naming its key; a
 * ledger without the table, or with a stale one, gets a cache built from
 * its state; names too long for an LMDB key still round-trip.
 */
#include "ingest/ingest_int.h"
#include "tests/ingest_tests.h"

#define CLASSES_FPGA                                                        \
	"{'classes':[{'name':'fpga','resourceNames':['example.com/fpga']}," \
	"{'name':'h100','deviceClassName':'h100.nvidia.com',"               \
	"'resourceNames':['nvidia.com/H100']}]}"
#define DORMANT GPOD("tenant-a", "dp", "ud", "n1", "example.com/fpga", "2")

static void restart(struct h *h)
{
	struct lg_error err = {0};

	ingest_free(h->in);
	h->in = NULL;
	ck_assert_msg(ingest_new(&h->in, h->lg, NULL, &err) == 0, "load: %s",
		      err.msg);
}

static char *set_classes(struct h *h, const char *q)
{
	struct class_table t;
	struct lg_error err = {0};

	h_table(&t, q);
	ck_assert_int_eq(ingest__set_classes(h->in, &t, &err), 0);
	class_table_release(&t);
	return h_take(h);
}

/* Drops the mark of the table, as a ledger from before it has none. */
static void forget_table(struct h *h)
{
	struct ledger_meta m = {LEDGER_OBJECTS_SEQ_KEY, NULL, 0};
	struct lg_error err = {0};

	ck_assert_int_eq(ledger_append(h->lg, NULL, 0, &m, 1, NULL, &err), 0);
}

/* mode 0: no restart; 1: a restart between; 2: a restart on a ledger
 * without the table (the limit of a migrated cache). */
static char *dormant_then_table(int mode)
{
	struct h h;
	char *got;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(DORMANT));
	h_expect(&h, "", "a dormant pod holds nothing");
	if (mode == 2)
		forget_table(&h);
	if (mode > 0)
		restart(&h);
	got = set_classes(&h, CLASSES_FPGA);
	h_close(&h);
	return got;
}

START_TEST(objtab_dormant_after_restart)
{
	char *whole = dormant_then_table(0), *restarted = dormant_then_table(1);
	char *migrated = dormant_then_table(2);

	ck_assert_ptr_nonnull(
		strstr(whole, "RESERVE Pod tenant-a/dp#ud fpga 0>2; ALLOC Pod "
			      "tenant-a/dp#ud fpga 0>2 @n1"));
	ck_assert_str_eq(restarted, whole);
	/* Without the table the pod is not known until it is seen again. */
	ck_assert_ptr_null(strstr(migrated, "RESERVE Pod"));
	ck_assert_ptr_nonnull(strstr(migrated, "CLASS fpga"));
	free(whole);
	free(restarted);
	free(migrated);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* O(live objects): the same live pods after 10x more history. */

#define LIVE 40

static uint64_t restart_cost(size_t churn, uint64_t *history)
{
	struct ledger_opts lo = {.create = true,
				 .no_sync = true,
				 .checkpoint_every = 100,
				 .checkpoint_secs = -1};
	struct ingest_counters c;
	struct lg_error err = {0};
	struct class_table t;
	struct ingest_opts io = {.classes = &t};
	struct h h = {.dir = fresh_dir()};
	char line[512], name[16];

	lo.dir = h.dir;
	ck_assert_int_eq(ledger_open(&h.lg, &lo, &err), 0);
	h_table(&t, CLASSES);
	ck_assert_int_eq(ingest_new(&h.in, h.lg, &io, &err), 0);
	class_table_release(&t);
	for (size_t i = 0; i < LIVE + churn; i++) {
		/* Every pod is created, then one at a time has its units
		 * changed: the history grows, the live objects do not. */
		snprintf(name, sizeof(name), "p%zu", i % LIVE);
		snprintf(line, sizeof(line),
			 ADD(GPOD("tenant-a", "%s", "u%s", "n1",
				  "nvidia.com/H100", "%zu")),
			 name, name, 1 + i % 3 + (i / LIVE) % 2);
		h_feed(&h, line);
		if (i % 25 == 0)
			free(h_take(&h));
	}
	free(h_take(&h));
	*history = ledger_last_seq(h.lg);
	ingest_free(h.in);
	ledger_close(h.lg);
	ck_assert_int_eq(ledger_open(&h.lg, &lo, &err), 0);
	ck_assert_int_eq(ingest_new(&h.in, h.lg, NULL, &err), 0);
	ingest__counters(h.in, &c);
	h_close(&h);
	return c.start_records;
}

START_TEST(objtab_restart_reads_live_objects)
{
	uint64_t short_h, long_h;
	uint64_t a = restart_cost(300, &short_h),
		 b = restart_cost(3300, &long_h);

	printf("objtab: %llu events -> %llu records read at start; %llu "
	       "events -> %llu\n",
	       (unsigned long long)short_h, (unsigned long long)a,
	       (unsigned long long)long_h, (unsigned long long)b);
	ck_assert_uint_ge(long_h, 8 * short_h);
	/* The table (LIVE pods, the engine's record) plus a tail shorter
	 * than the checkpoint interval and one batch, and the checkpoint. */
	ck_assert_uint_ge(a, LIVE);
	ck_assert_uint_le(b, LIVE + 1 + 100 + 80 + 10);
	ck_assert_uint_le(b, a + 200);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Damaged records */

struct grab {
	const char *key;
	uint8_t *val;
	size_t len;
};

static int grab_fn(void *ctx, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	struct grab *g = ctx;

	if (strlen(g->key) == klen && memcmp(g->key, key, klen) == 0) {
		g->val = malloc(vlen + 8);
		memcpy(g->val, val, vlen);
		g->len = vlen;
	}
	return 0;
}

enum mutation {
	M_EMPTY,
	M_VERSION,
	M_TRUNCATED,
	M_TRAILING,
	M_RESOURCE,
	M_KEY,
	M_DOC_FLAG,
	M_CLASS,
	M_ENGINE,
	M_DOC_SYNTAX,
	M_MAX
};

static const char *const mutation_name[M_MAX] = {
	"empty",       "version",  "truncated",	 "trailing byte", "resource",
	"another key", "doc flag", "class name", "engine record", "doc syntax"};

/* _i below M_MAX: the plain loop; above, the same through the pipe. */
START_TEST(objtab_damaged_record)
{
	/* The pod's record: 'a' + RES_POD, then its key. */
	struct grab g = {.key = "etenant-a/p"};
	struct ledger_meta rec = {g.key, NULL, 0};
	struct ledger_batch b = {.objects = true, .objs = &rec, .n_objs = 1};
	struct lg_error err = {0};
	ingest_t *in = NULL;
	struct h h;
	int rc;

	ingest__objtab_pipe_min = _i < M_MAX ? SIZE_MAX : 1;
	h_open(&h, CLASSES);
	h_feed(&h,
	       ADD(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/H100", "1")));
	free(h_take(&h));
	ck_assert_int_eq(ledger_objects_scan(h.lg, grab_fn, &g, &err), 0);
	ck_assert_ptr_nonnull(g.val);
	ck_assert_uint_gt(g.len, 40);
	switch (_i % M_MAX) {
	case M_EMPTY:
		g.len = 0;
		break;
	case M_VERSION:
		g.val[0] = 9;
		break;
	case M_TRUNCATED:
		g.len--;
		break;
	case M_TRAILING:
		g.val[g.len++] = 0;
		break;
	case M_RESOURCE:
		g.val[1] = RES_MAX;
		break;
	case M_KEY:
		rec.key = "etenant-a/q";
		break;
	case M_DOC_FLAG:
		g.val[3] ^= 4;
		break;
	case M_CLASS: {
		/* The unit's class "h100" is after the four strings. */
		size_t k = 0;

		while (k + 5 <= g.len && memcmp(g.val + k, "\004h100", 5))
			k++;
		ck_assert_uint_lt(k + 5, g.len);
		g.val[k + 1] = 'H';
		break;
	}
	case M_DOC_SYNTAX: {
		/* The doc is the record's end: its last ':' becomes ','. */
		size_t k = g.len;

		while (k > 0 && g.val[k - 1] != ':')
			k--;
		ck_assert_uint_gt(k, 0);
		g.val[k - 1] = ',';
		break;
	}
	case M_ENGINE:
		rec.key = "~";
		g.len = 3;
		break;
	}
	rec.val = g.val;
	rec.len = g.len;
	ck_assert_int_eq(ledger_append_batch(h.lg, NULL, 0, &b, NULL, &err), 0);
	rc = ingest_new(&in, h.lg, NULL, &err);
	ck_assert_msg(rc == LG_ECORRUPT, "%s: %d %s", mutation_name[_i % M_MAX],
		      rc, err.msg);
	ck_assert_ptr_null(in);
	ck_assert_msg(strstr(err.msg, rec.key) != NULL, "%s: %s",
		      mutation_name[_i % M_MAX], err.msg);
	free(g.val);
	h_close(&h);
}
END_TEST

/* A table of many records loads the same through the pipe as through the
 * plain loop (batches, the ring's wrap, the engine record last); a bad doc
 * early (found by the filing thread while the reader may wait on a full
 * ring) or a bad record late (found by the reader) is the same error both
 * ways, and nothing leaks (the sanitizer run). _i: 0 sound, 1 an early
 * doc, 2 a late record. */
START_TEST(objtab_pipe_equals_loop)
{
	static const char *const bad[] = {NULL, "etenant-a/p0005",
					  "etenant-a/p2990"};
	struct h h;
	struct lg_error err = {0};
	char line[512], *dump[2] = {NULL, NULL}, *msg[2] = {NULL, NULL};
	int rc[2];

	h_open(&h, CLASSES);
	for (int i = 0; i < 3000; i++) {
		snprintf(line, sizeof(line),
			 ADD(GPOD("tenant-a", "p%04d", "u%d", "n%d",
				  "nvidia.com/H100", "1")),
			 i, i, i % 7);
		h_feed(&h, line);
		if (i % 500 == 0)
			free(h_take(&h));
	}
	free(h_take(&h));
	if (bad[_i] != NULL) {
		struct grab g = {.key = bad[_i]};
		struct ledger_meta rec = {g.key, NULL, 0};
		struct ledger_batch b = {
			.objects = true, .objs = &rec, .n_objs = 1};

		ck_assert_int_eq(ledger_objects_scan(h.lg, grab_fn, &g, &err),
				 0);
		ck_assert_ptr_nonnull(g.val);
		if (_i == 1) {
			/* The doc's last ':' becomes ',' (its syntax). */
			size_t k = g.len;

			while (k > 0 && g.val[k - 1] != ':')
				k--;
			ck_assert_uint_gt(k, 0);
			g.val[k - 1] = ',';
		} else {
			g.val[0] = 9; /* the version */
		}
		rec.val = g.val;
		rec.len = g.len;
		ck_assert_int_eq(
			ledger_append_batch(h.lg, NULL, 0, &b, NULL, &err), 0);
		free(g.val);
	}
	for (int m = 0; m < 2; m++) {
		ingest_t *in = NULL;

		ingest__objtab_pipe_min = m == 0 ? SIZE_MAX : 1;
		memset(&err, 0, sizeof(err));
		rc[m] = ingest_new(&in, h.lg, NULL, &err);
		if (rc[m] == 0) {
			dump[m] = ingest__objtab_dump(in);
			ingest_free(in);
		} else {
			ck_assert_ptr_null(in);
			msg[m] = strdup(err.msg);
		}
	}
	ck_assert_int_eq(rc[0], rc[1]);
	if (bad[_i] == NULL) {
		ck_assert_int_eq(rc[0], 0);
		ck_assert_ptr_nonnull(strstr(dump[0], "p2999"));
		ck_assert_str_eq(dump[0], dump[1]);
	} else {
		ck_assert_int_eq(rc[0], LG_ECORRUPT);
		ck_assert_msg(strstr(msg[0], bad[_i]) != NULL, "%s", msg[0]);
		ck_assert_str_eq(msg[0], msg[1]);
	}
	for (int m = 0; m < 2; m++) {
		free(dump[m]);
		free(msg[m]);
	}
	h_close(&h);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Migration: no table, or a stale one. */

/* A Namespace, its Tenant with a budget, a GPU pod, its Node. */
static void feed_objects(struct h *h)
{
	h_feed(h, ADD(NSOBJ("tenant-a")));
	h_feed(h, ADD(TEN("tenant-root", "a",
			  "{'gpuclass.cozystack.io/devices':'4'}")));
	h_feed(h,
	       ADD(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/H100", "1")));
	h_feed(h, ADD(NODE("n1", "{'nvidia.com/H100':'2'}", "")));
}

START_TEST(objtab_migrated_from_state)
{
	struct lg_error err = {0};
	struct h h;

	h_open(&h, CLASSES);
	feed_objects(&h);
	free(h_take(&h));
	forget_table(&h);
	restart(&h);
	/* The same objects listed again: nothing new. */
	feed_objects(&h);
	h_expect(&h, "", "a migrated cache is the ledger's view");
	/* The first flush wrote the table: now it loads. */
	restart(&h);
	h_feed(&h,
	       DEL(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/H100", "1")));
	h_expect(&h,
		 "FREE Pod tenant-a/p#u1 h100 1>0 @n1; RELEASE Pod "
		 "tenant-a/p#u1 h100 1>0",
		 "loaded after migration");
	(void)err;
	h_close(&h);
}
END_TEST

static int keys_fn(void *ctx, const void *key, size_t klen, const void *val,
		   size_t vlen)
{
	char k[600];

	(void)val;
	(void)vlen;
	snprintf(k, sizeof(k), "%.*s", (int)klen, (const char *)key);
	h_put(ctx, k);
	return 0;
}

/* Another writer changed the state after the table: the table is stale,
 * the cache comes from the state, and the stale records go. */
START_TEST(objtab_stale_table)
{
	struct event ev = {
		.type = EV_TENANT, .ns = "tenant-z", .parent = "tenant-root"};
	struct lg_error err = {0};
	struct h_buf keys = {0};
	char *dump;
	struct h h;

	h_open(&h, CLASSES);
	h_feed(&h, ADD(NSOBJ("tenant-root")));
	h_feed(&h, ADD(DORMANT));
	free(h_take(&h));
	ev.time_ns = state_time_ns(ledger_state(h.lg));
	ck_assert_int_eq(ledger_append(h.lg, &ev, 1, NULL, 0, NULL, &err), 0);
	restart(&h);
	dump = ingest__objtab_dump(h.in);
	ck_assert_ptr_nonnull(strstr(dump, "tnode tenant-z exists 1 ns 1"));
	ck_assert_ptr_null(strstr(dump, "tenant-a/dp"));
	free(dump);
	ck_assert_int_eq(ingest__flush(h.in, &err), 0);
	restart(&h);
	dump = ingest__objtab_dump(h.in);
	ck_assert_ptr_nonnull(strstr(dump, "tnode tenant-z exists 1 ns 1"));
	ck_assert_ptr_null(strstr(dump, "tenant-a/dp"));
	free(dump);
	/* The Namespaces the state implies; the pod's record is gone. */
	ck_assert_int_eq(ledger_objects_scan(h.lg, keys_fn, &keys, &err), 0);
	ck_assert_str_eq(keys.s, "atenant-root; atenant-z");
	free(keys.s);
	h_close(&h);
}
END_TEST

/* An invalid pod with a name longer than an LMDB key is cached (so that
 * its NOTE is not repeated) and round-trips through a hashed key. */
START_TEST(objtab_long_name)
{
	char name[700], line[1200];
	struct h h;
	char *got;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(
		line, sizeof(line),
		ADD(GPOD("tenant-a", "%s", "u1", "n1", "nvidia.com/H100", "1")),
		name);
	h_open(&h, CLASSES);
	h_feed(&h, line);
	got = h_take(&h);
	ck_assert_msg(strstr(got, "NOTE InvalidObject") != NULL, "%s", got);
	free(got);
	restart(&h);
	h_feed(&h, line);
	h_expect(&h, "", "the NOTE is remembered across the restart");
	h_close(&h);
}
END_TEST

INGEST_PART(objtab)
{
	TCase *tc = tcase_create("objtab");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, objtab_dormant_after_restart);
	tcase_add_test(tc, objtab_restart_reads_live_objects);
	tcase_add_loop_test(tc, objtab_damaged_record, 0, 2 * M_MAX);
	tcase_add_loop_test(tc, objtab_pipe_equals_loop, 0, 3);
	tcase_add_test(tc, objtab_migrated_from_state);
	tcase_add_test(tc, objtab_stale_table);
	tcase_add_test(tc, objtab_long_name);
	suite_add_tcase(s, tc);
}
