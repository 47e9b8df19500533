/*
 * Part of the cluster suite: the contracts of etcd/etcd.h and of cluster/
 * where threads meet are asserted (LG_ASSERT, always compiled in), so that
 * a caller that breaks one aborts at once (SIGABRT) instead of driving one
 * libcurl handle twice, closing a lease from its own thread, or changing an
 * applier's options under its running thread. The cases allowed next to
 * each broken one still work (contract_allowed). None needs an etcd: the
 * endpoint is a closed port.
 */
#include "cluster/cluster_int.h"
#include "etcd/etcd_int.h"
#include "tests/cluster_tests.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NOWHERE "http://127.0.0.1:1"

static etcd_t *open_nowhere(void)
{
	struct etcd_opts o = {.endpoints = NOWHERE, .timeout_ms = 300};
	struct lg_error err = {0};
	etcd_t *e = NULL;

	ck_assert_msg(etcd_open(&e, &o, &err) == 0, "open: %s", err.msg);
	return e;
}

static int no_line(void *ctx, const char *line, size_t len)
{
	return 0;
}

/* What the contracts allow (not in the aborting tests, where an abort here
 * would pass unnoticed). */
START_TEST(contract_allowed)
{
	etcd_t *e = open_nowhere();
	struct etcd_range r = {.key = "k", .key_len = 1};
	struct etcd_range_result rr;
	struct etcd_txn_result tr;
	struct etcd_txn t = {0};
	struct lg_error err = {0};
	struct etcd_lines l;
	enum etcd_outcome oc;
	char buf[1];

	/* A request that cannot reach etcd is an operating error, not an
	 * abort; results are zeroed and released as the header says. */
	ck_assert_int_ne(etcd_range(e, &r, &rr, &oc, &err), 0);
	ck_assert_int_eq(oc, ETCD_NOT_APPLIED);
	etcd_range_result_release(&rr);
	/* A txn of no ops: arrays may be NULL when empty. */
	ck_assert_int_ne(etcd_txn(e, &t, &tr, &err), 0);
	etcd_txn_result_release(&tr);
	/* The handle is free again after each request. */
	ck_assert_int_ne(etcd_range(e, &r, &rr, NULL, &err), 0);
	etcd_range_result_release(&rr);
	/* Destructors take NULL. */
	etcd_close(e);
	etcd_close(NULL);
	etcd_range_result_release(NULL);
	etcd_txn_result_release(NULL);
	/* An empty chunk needs no data. */
	etcd__lines_init(&l, 16);
	ck_assert_int_eq(etcd__lines_feed(&l, NULL, 0, no_line, NULL), 0);
	etcd__lines_release(&l);
	etcd__lines_release(NULL);
	/* A key into no buffer: nothing fits. */
	ck_assert_uint_eq(cluster__key(NULL, 0, "/p", "head"), 0);
	ck_assert_uint_eq(cluster__key(buf, sizeof(buf), "/p", "head"), 0);
	cluster_lease_close(NULL);
	cluster__applier_free(NULL);
}
END_TEST

START_TEST(contract_txn_without_result)
{
	etcd_t *e = open_nowhere();
	struct etcd_txn t = {0};

	etcd_txn(e, &t, NULL, NULL);
}
END_TEST

START_TEST(contract_txn_ops_without_array)
{
	etcd_t *e = open_nowhere();
	struct etcd_txn t = {.n_success = 1};
	struct etcd_txn_result r;

	etcd_txn(e, &t, &r, NULL);
}
END_TEST

START_TEST(contract_watch_without_callback)
{
	etcd_t *e = open_nowhere();
	struct etcd_watch w = {.range = {.key = "k", .key_len = 1}};

	etcd_watch(e, &w, NULL, NULL, NULL);
}
END_TEST

START_TEST(contract_lines_not_initialised)
{
	struct etcd_lines l = {0};

	etcd__lines_feed(&l, "a\n", 2, no_line, NULL);
}
END_TEST

START_TEST(contract_deadline_negative)
{
	etcd_deadline(open_nowhere(), -1);
}
END_TEST

/* A port that accepts connections (the kernel's backlog) and never
 * answers: a request to it waits until its timeout. */
static int listen_silent(char *url, size_t cap)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, cap, "http://127.0.0.1:%d", ntohs(sa.sin_port));
	return fd;
}

static void *range_once(void *arg)
{
	etcd_t *e = arg;
	struct etcd_range q = {.key = "k", .key_len = 1};
	struct etcd_range_result rr;

	etcd_range(e, &q, &rr, NULL, NULL);
	etcd_range_result_release(&rr);
	return NULL;
}

/* Two threads on one handle: the second request starts while the first
 * waits for an answer. */
START_TEST(contract_two_threads_one_handle)
{
	char url[64];
	int fd = listen_silent(url, sizeof(url));
	struct etcd_opts o = {.endpoints = url, .timeout_ms = 5000};
	struct lg_error err = {0};
	etcd_t *e = NULL;
	pthread_t th;

	ck_assert_int_eq(etcd_open(&e, &o, &err), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, range_once, e), 0);
	nanosleep(&(struct timespec){0, 500 * 1000000L}, NULL);
	range_once(e);
	close(fd);
}
END_TEST

/* The lease's warn callback, on one of the lease's threads, closes the
 * lease: closing joins that very thread. */
struct closer {
	_Atomic(cluster_lease_t *) l;
};

static void close_from_inside(void *ctx, const char *msg)
{
	struct closer *c = ctx;
	cluster_lease_t *l;

	while ((l = atomic_load(&c->l)) == NULL)
		nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
	cluster_lease_close(l);
}

START_TEST(contract_lease_close_from_its_thread)
{
	static struct closer c;
	struct cluster_lease_opts o = {
		.etcd = {.endpoints = NOWHERE, .timeout_ms = 300},
		.prefix = "/t",
		.name = "a",
		.ttl_s = 2,
		.warn = close_from_inside,
		.ctx = &c};
	struct lg_error err = {0};
	cluster_lease_t *l = NULL;

	ck_assert_int_eq(cluster_lease_open(&l, &o, &err), 0);
	atomic_store(&c.l, l);
	/* The first failed grant warns within a second or two. */
	for (int i = 0; i < 100; i++)
		nanosleep(&(struct timespec){0, 100 * 1000000L}, NULL);
}
END_TEST

START_TEST(contract_lease_holding_without_lease)
{
	cluster_lease_holding(NULL, NULL);
}
END_TEST

/* An applier whose run has begun (here: began and ended at once, its stop
 * already set) takes no more options: the run's thread reads them. */
START_TEST(contract_applier_signer_after_run)
{
	char dir[] = "/tmp/gpuledger-contract-XXXXXX";
	struct ledger_opts lo = {.create = true, .no_sync = true};
	struct etcd_opts eo = {.endpoints = NOWHERE, .timeout_ms = 300};
	static const volatile sig_atomic_t stop = 1;
	struct lg_error err = {0};
	cluster_applier_t *a = NULL;
	ledger_t *lg = NULL;
	char cmd[64];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	lo.dir = dir;
	ck_assert_msg(ledger_open(&lg, &lo, &err) == 0, "%s", err.msg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(cluster__applier_new(&a, lg, &eo, "/p", &err) == 0, "%s",
		      err.msg);
	cluster__applier_run(a, &stop);
	cluster__applier_signer(a, NULL, 0);
}
END_TEST

void cluster_tests_contract(Suite *s)
{
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, contract_allowed);
	tcase_add_test_raise_signal(tc, contract_txn_without_result, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_txn_ops_without_array,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_watch_without_callback,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_lines_not_initialised,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_deadline_negative, SIGABRT);
	tcase_add_test_raise_signal(tc, contract_two_threads_one_handle,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_lease_close_from_its_thread,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_lease_holding_without_lease,
				    SIGABRT);
	tcase_add_test_raise_signal(tc, contract_applier_signer_after_run,
				    SIGABRT);
	suite_add_tcase(s, tc);
}
