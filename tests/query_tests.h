/* Parts of the query suite; each tests/query_<part>.c adds its TCases.
 * tests/query_harness.c holds what they share: a ledger built from the
 * fixture tests/query/base.ndjson, a real server on an ephemeral loopback
 * port in a thread of the test process, and libcurl requests to it. Tests
 * run from the repository root (as `make unit` runs them), each in its own
 * process (CK_FORK) with a fresh directory. */
#ifndef GPULEDGER_QUERY_TESTS_H
#define GPULEDGER_QUERY_TESTS_H

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "query/query_int.h"

#define QUERY_PART(name) void query_tests_##name(Suite *s)

QUERY_PART(auth);
QUERY_PART(routes);
QUERY_PART(review);
QUERY_PART(server);
QUERY_PART(limits);
QUERY_PART(verdicts);
QUERY_PART(follow);
QUERY_PART(billing);
QUERY_PART(heavy);
QUERY_PART(contract);
QUERY_PART(repeat);

static void (*const query_parts[])(Suite *) = {
	query_tests_auth,   query_tests_routes, query_tests_review,
	query_tests_server, query_tests_limits, query_tests_verdicts,
	query_tests_follow, query_tests_billing, query_tests_heavy,
	query_tests_contract, query_tests_repeat,
};

#define QT_FIXTURE     "tests/query/base.ndjson"
#define QT_FIXTURE_SEQ 37 /* events in the fixture */

/* Tokens of the token file qt_start writes when asked for auth. */
#define TOK_ADMIN     "admin-token-0123456789"
#define TOK_ADMISSION "admission-token-0123456"
#define TOK_AUDITOR   "auditor-token-012345678"
#define TOK_ACME      "tenant-acme-token-01234"
#define TOK_BETA      "tenant-beta-token-01234"

struct qt {
	char dir[64]; /* fresh directory; the ledger is dir/db */
	char db[96];
	char tokens[96]; /* dir/tokens */
	query_server_t *qs;
	pthread_t thread;
	bool running;
	int port;
};

/* Parses a JSON literal for a test; fails the test on a syntax error. */
json_t *qt_json(const char *text);

/* A fresh directory with the fixture ledger in dir/db (events = 0: none,
 * else the whole fixture). */
void qt_init(struct qt *t, bool fixture);
/* Appends NDJSON events (the `log` form) to the ledger at t->db through a
 * child process, as another writer would. */
void qt_append_child(struct qt *t, const char *ndjson);
/* Starts a writer process appending `rounds` RESERVE/RELEASE pairs of one
 * pod in tenant-acme-dev, one commit each; qt_writer_wait waits for it and
 * fails the test unless it succeeded. */
pid_t qt_writer_start(struct qt *t, unsigned rounds);
void qt_writer_wait(pid_t pid);
/* main() of the writer processes (this binary re-executed with --append
 * or --append-rounds); -1 when argv is not such a call. */
int qt_helper_main(int argc, char **argv);
/* Starts a server on 127.0.0.1:0 with o (db and listen are filled in);
 * auth writes the token file and uses it. */
void qt_start(struct qt *t, struct query_opts *o, bool auth);
void qt_stop(struct qt *t);
/* Stops the server and removes the directory. */
void qt_done(struct qt *t);

struct qt_resp {
	long status;
	char *body; /* NUL-terminated; free with qt_resp_free */
	size_t len;
	json_t *json; /* the body parsed, or NULL */
};

/* One request with libcurl (a fresh connection). token may be NULL. */
void qt_http(const struct qt *t, const char *method, const char *path,
	     const char *token, const char *body, struct qt_resp *r);
void qt_resp_free(struct qt_resp *r);
/* GET and the status only. */
long qt_status(const struct qt *t, const char *method, const char *path,
	       const char *token, const char *body);

/* A raw TCP connection to the server (for malformed and slow clients). */
int qt_connect(const struct qt *t);
/* Reads until the peer closes or timeout_ms passes; returns bytes read. */
size_t qt_read_all(int fd, char *buf, size_t cap, int timeout_ms);

/* Every VERDICT event of the ledger recomputed on the state at its
 * basisSeq; returns the number of verdicts, fails the test on a mismatch.
 * ids[i] is set to the id of the i-th (when ids is not NULL). */
size_t qt_audit(const char *db, uint64_t *ids, size_t cap);

/* The verdict serve would judge on st for req (read as serve reads a
 * body): verdict_request_read of its text, then verdict_judge. */
int qt_judge(const state_t *st, enum verdict_kind kind, const json_t *req,
	     json_t **verdict);

#endif
