/*
 * What the parts of the query suite share (see tests/query_tests.h). Not a
 * part itself: it adds no TCases.
 */
#include "tests/query_tests.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

json_t *qt_json(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

	ck_assert_msg(v != NULL, "bad test JSON: %s: %s", e.text, text);
	return v;
}

/* Appends every line of ndjson to the ledger at db; returns 0 or the
 * ledger's error code. */
static int append_ndjson(const char *db, const char *ndjson, bool create)
{
	struct ledger_opts o = {.dir = db, .create = create, .no_sync = true};
	struct lg_error err = {0};
	ledger_t *lg = NULL;
	size_t n = 0, cap = 64;
	struct event *evs = calloc(cap, sizeof(*evs));
	json_t **docs = calloc(cap, sizeof(*docs));
	char **scratch = calloc(cap, sizeof(*scratch));
	const char *p = ndjson;
	int rc = ledger_open(&lg, &o, &err);

	while (rc == 0 && *p != '\0') {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len > 0) {
			if (n == cap) {
				cap *= 2;
				evs = realloc(evs, cap * sizeof(*evs));
				docs = realloc(docs, cap * sizeof(*docs));
				scratch = realloc(scratch,
						  cap * sizeof(*scratch));
			}
			docs[n] = json_loadb(p, len, 0, NULL);
			scratch[n] = NULL;
			rc = docs[n] ? event_from_json(&evs[n], docs[n],
						       &scratch[n], &err)
				     : LG_EINVAL;
			n++;
		}
		p += len + (nl != NULL);
	}
	if (rc == 0 && n > 0)
		rc = ledger_append(lg, evs, n, NULL, 0, NULL, &err);
	if (rc != 0)
		fprintf(stderr, "append_ndjson: %s\n", err.msg);
	for (size_t i = 0; i < n; i++) {
		json_decref(docs[i]);
		free(scratch[i]);
	}
	free(evs);
	free(docs);
	free(scratch);
	ledger_close(lg);
	return rc;
}

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "%s: run the tests from the repository root",
		      path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return buf;
}

void qt_init(struct qt *t, bool fixture)
{
	char *text;

	memset(t, 0, sizeof(*t));
	strcpy(t->dir, "/tmp/gpuledger-qtest-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	snprintf(t->db, sizeof(t->db), "%s/db", t->dir);
	snprintf(t->tokens, sizeof(t->tokens), "%s/tokens", t->dir);
	text = fixture ? read_file(QT_FIXTURE) : strdup("");
	ck_assert_int_eq(append_ndjson(t->db, text, true), 0);
	free(text);
}

/* The writer runs as a new program (this binary, re-executed): a child
 * that only forked would share a copy of a process whose server thread may
 * have held a lock at the fork, and could hang holding the ledger's write
 * lock. */
static pid_t spawn_writer(const char *db, const char *mode, const char *arg,
			  int *in)
{
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		execl("/proc/self/exe", "test_query", mode, db, arg,
		      (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	return pid;
}

static void wait_writer(pid_t pid)
{
	int status = 0;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the writer process failed (status %d)", status);
}

void qt_append_child(struct qt *t, const char *ndjson)
{
	int in;
	pid_t pid = spawn_writer(t->db, "--append", "", &in);
	size_t n = strlen(ndjson);

	ck_assert_int_eq(write(in, ndjson, n), (ssize_t)n);
	close(in);
	wait_writer(pid);
}

pid_t qt_writer_start(struct qt *t, unsigned rounds)
{
	char arg[16];
	int in;
	pid_t pid;

	snprintf(arg, sizeof(arg), "%u", rounds);
	pid = spawn_writer(t->db, "--append-rounds", arg, &in);
	close(in);
	return pid;
}

void qt_writer_wait(pid_t pid)
{
	wait_writer(pid);
}

/* RESERVE/RELEASE of one pod in tenant-acme-dev, one commit each. */
static int append_rounds(const char *db, unsigned rounds)
{
	char line[512];
	int rc = 0;

	for (unsigned i = 0; i < rounds && rc == 0; i++) {
		snprintf(line, sizeof(line),
			 "{\"type\":\"%s\",\"namespace\":\"tenant-acme-dev\","
			 "\"class\":\"h100\",\"kind\":\"Pod\",\"name\":\"p\","
			 "\"uid\":\"u-p\",\"before\":%u,\"after\":%u}\n",
			 i % 2 ? "RELEASE" : "RESERVE", i % 2, 1 - i % 2);
		rc = append_ndjson(db, line, false);
	}
	return rc;
}

int qt_helper_main(int argc, char **argv)
{
	char *text;
	size_t n = 0, cap = 1 << 16;
	ssize_t r;
	int rc;

	if (argc != 4)
		return -1;
	if (strcmp(argv[1], "--append-rounds") == 0)
		return append_rounds(argv[2], (unsigned)atoi(argv[3])) ? 1 : 0;
	if (strcmp(argv[1], "--append") != 0)
		return -1;
	text = malloc(cap);
	while ((r = read(0, text + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap)
			text = realloc(text, cap *= 2);
	}
	text[n] = '\0';
	rc = append_ndjson(argv[2], text, false);
	free(text);
	return rc ? 1 : 0;
}

static void *run_server(void *arg)
{
	struct qt *t = arg;

	query_server_run(t->qs, NULL);
	return NULL;
}

static void write_tokens(const char *path)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs("# test tokens\n" TOK_ADMIN " admin\n" TOK_ADMISSION
	      " admission\n" TOK_AUDITOR " auditor\n" TOK_ACME
	      " tenant:tenant-acme\n\n" TOK_BETA " tenant:tenant-beta\n",
	      f);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0600), 0);
}

void qt_start(struct qt *t, struct query_opts *o, bool auth)
{
	struct query_opts dflt = {0};
	struct lg_error err = {0};
	int rc;

	if (o == NULL)
		o = &dflt;
	o->db = t->db;
	o->listen = "127.0.0.1:0";
	if (auth) {
		write_tokens(t->tokens);
		o->token_file = t->tokens;
	}
	rc = query_server_open(&t->qs, o, &err);
	ck_assert_msg(rc == 0, "query_server_open: %s", err.msg);
	t->port = query_server_port(t->qs);
	ck_assert_int_gt(t->port, 0);
	ck_assert_int_eq(pthread_create(&t->thread, NULL, run_server, t), 0);
	t->running = true;
}

void qt_stop(struct qt *t)
{
	if (!t->running)
		return;
	query__server_stop(t->qs);
	pthread_join(t->thread, NULL);
	query_server_close(t->qs);
	t->qs = NULL;
	t->running = false;
}

void qt_done(struct qt *t)
{
	char cmd[160];

	qt_stop(t);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---------------------------------------------------------------------- */
/* libcurl */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct qt_resp *r = ctx;

	r->body = realloc(r->body, r->len + size * n + 1);
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

void qt_http(const struct qt *t, const char *method, const char *path,
	     const char *token, const char *body, struct qt_resp *r)
{
	CURL *c;
	struct curl_slist *h = NULL;
	char url[4096], auth[512];
	CURLcode rc;

	pthread_once(&curl_once, curl_init);
	memset(r, 0, sizeof(*r));
	r->body = calloc(1, 1);
	c = curl_easy_init();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", t->port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	if (token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	}
	rc = curl_easy_perform(c);
	ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, path,
		      curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	r->json = json_loadb_doubles(r->body, r->len, 0, NULL);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

void qt_resp_free(struct qt_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

long qt_status(const struct qt *t, const char *method, const char *path,
	       const char *token, const char *body)
{
	struct qt_resp r;
	long s;

	qt_http(t, method, path, token, body, &r);
	s = r.status;
	/* Every answer, errors included, is JSON (metrics is text). */
	if (strcmp(path, "/metrics") != 0 || s != 200)
		ck_assert_msg(r.json != NULL, "%s %s: %ld not JSON: %s", method,
			      path, s, r.body);
	if (s >= 400)
		ck_assert_msg(json_is_string(json_object_get(r.json, "error")),
			      "%s %s: %ld without an error member", method,
			      path, s);
	qt_resp_free(&r);
	return s;
}

/* ---------------------------------------------------------------------- */
/* Raw sockets */

int qt_connect(const struct qt *t)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)t->port)};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

size_t qt_read_all(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < cap) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t r;

		if (poll(&p, 1, timeout_ms) <= 0)
			break;
		r = read(fd, buf + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

/* ---------------------------------------------------------------------- */
/* The audit, in the test: every verdict recomputed on its basis state. */

struct vrec {
	uint64_t seq;
	char *text;
};

struct vrecs {
	struct vrec *v;
	size_t n, cap;
};

static int take_verdict(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct vrecs *r = ctx;

	if (ev->type != EV_VERDICT)
		return 0;
	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 64;
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n].seq = ev->seq;
	r->v[r->n++].text = strdup(ev->text);
	return 0;
}

static int head_at(void *ctx, const struct event *ev, const uint8_t *head)
{
	query__hex(head, ctx);
	return 0;
}

size_t qt_audit(const char *db, uint64_t *ids, size_t cap)
{
	struct ledger_opts o = {.dir = db, .read_only = true};
	struct lg_error err = {0};
	struct vrecs r = {0};
	ledger_t *lg;

	ck_assert_int_eq(ledger_open(&lg, &o, &err), 0);
	ck_assert_int_eq(ledger_scan(lg, 1, 0, take_verdict, &r, &err), 0);
	for (size_t i = 0; i < r.n; i++) {
		struct verdict_ref ref;
		char hex[2 * LEDGER_HEAD_BYTES + 1], *re = NULL;
		state_t *st = NULL;
		bool match = false;
		size_t len = strlen(r.v[i].text);

		/* Exact JCS as a reader of doubles reads it (DESIGN 3.5): the
		 * record is its own canonical form. */
		{
			json_t *back =
				json_loadb_doubles(r.v[i].text, len, 0, NULL);
			char *again =
				jcs_text(back, JCS_INT_DOUBLES, SIZE_MAX, NULL);

			ck_assert_msg(again != NULL &&
					      strcmp(again, r.v[i].text) == 0,
				      "verdict %zu is not exact JCS:\n%s\n%s",
				      i + 1, r.v[i].text, again);
			free(again);
			json_decref(back);
		}
		ck_assert_int_eq(
			verdict_record_parse(r.v[i].text, len, &ref, &err), 0);
		ck_assert_uint_eq(ref.id, i + 1);
		ck_assert_uint_lt(ref.basis_seq, r.v[i].seq);
		memset(hex, '0', 64);
		hex[64] = '\0';
		if (ref.basis_seq > 0)
			ck_assert_int_eq(ledger_scan(lg, ref.basis_seq, 1,
						     head_at, hex, &err),
					 0);
		if (ref.basis_seq == 0)
			st = state_new();
		else
			ck_assert_int_eq(ledger_state_at(lg, ref.basis_seq, &st,
							 NULL, &err),
					 0);
		ck_assert_int_eq(verdict_record_recompute(st, hex, r.v[i].text,
							  len, &re, &match,
							  &err),
				 0);
		ck_assert_msg(match, "verdict %zu differs:\n%s\n%s", i + 1,
			      r.v[i].text, re);
		if (ids != NULL && i < cap)
			ids[i] = ref.id;
		free(re);
		state_free(st);
		free(r.v[i].text);
	}
	free(r.v);
	ledger_close(lg);
	return r.n;
}

int qt_judge(const state_t *st, enum verdict_kind kind, const json_t *req,
	     json_t **verdict)
{
	struct verdict_request vr;
	struct verdict v = {0};
	char *text = json_dumps(req, JSON_ENCODE_ANY);
	int rc = verdict_request_read(kind, text, strlen(text), &vr, NULL);

	if (rc == 0)
		rc = verdict_judge(st, &vr, &v, NULL);
	if (rc == 0) {
		struct lg_buf b;

		lg_buf_init(&b, JCS_TEXT_MAX_BYTES);
		ck_assert_int_eq(
			verdict_write(&b, &v, 0, JCS_INT_DOUBLES, SIZE_MAX), 0);
		*verdict = json_loadb_doubles(b.p, b.len, 0, NULL);
		lg_buf_release(&b);
	} else {
		*verdict = NULL;
	}
	verdict_release(&v);
	verdict_request_release(&vr);
	free(text);
	return rc;
}
