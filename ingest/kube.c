/*
 * The live source: list+watch of every watched resource over libcurl's
 * multi interface, driven by curl_multi_poll in one thread (libuv stays in
 * the query process; one loop of our own keeps CURL* in this file).
 *
 * Each resource runs a small state machine: LIST pages (limit/continue)
 * inside an engine relist, then WATCH from the list's resourceVersion, and
 * again WATCH when the server ends the stream at timeoutSeconds. An ERROR
 * event or a 410 goes back to LIST; other failures wait with backoff (and
 * Retry-After) and retry what failed. We always list first, also at start:
 * the engine's cache holds only what maps to something, so a stored
 * resourceVersion cannot prove that it is complete, and a relist costs one
 * list per resource and emits only differences.
 *
 * The resourceVersion of a resource is handed to the engine after the
 * events before it, so every flush commits a position no later than its
 * events: a crash repeats at most events that re-apply as no change.
 */
#include "ingest/kube_int.h"

#include <curl/curl.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_LIST_DEFAULT     (256u << 20)
#define PAGE_LIMIT_DEFAULT   500
#define WATCH_MIN_DEFAULT    300
#define BACKOFF_BASE_DEFAULT 500
#define BACKOFF_MAX_DEFAULT  30000
#define RETRY_MAX_DEFAULT    300000
#define CONNECT_DEFAULT	     10000
#define API_RECHECK_DEFAULT  60000
/* An error response body is kept only to show its message. */
#define ERROR_BODY_MAX (64u << 10)
/* Commits are grouped: at most one flush per interval while busy. */
#define FLUSH_INTERVAL_NS (100 * (int64_t)1000000)
/* The loop wakes at least this often to see the stop flag. */
#define POLL_MAX_MS 200
/* A list request may take this long (the server pages it). */
#define LIST_TIMEOUT_MS (300 * 1000L)
#define URL_MAX		8192

enum phase {
	PH_DISCOVER, /* GET /apis/<group>: which versions are served */
	PH_LIST,
	PH_WATCH
};

/* The versions of a resource's API group that the watcher can read, most
 * preferred first. Objects of an older version are converted to the first
 * (the only one the engine reads, Appendix A "Claims") before they are fed
 * or recorded. Core resources (no group) need no discovery. */
struct api_versions {
	const char *group;
	const char *versions[4];
};
static const struct api_versions api_versions[RES_MAX] = {
	[RES_TENANT] = {"apps.cozystack.io", {"v1alpha1"}},
	[RES_VMINSTANCE] = {"apps.cozystack.io", {"v1alpha1"}},
	[RES_KUBERNETESNODES] = {"apps.cozystack.io", {"v1alpha1"}},
	[RES_RESOURCECLAIM] = {"resource.k8s.io", {"v1", "v1beta2", "v1beta1"}},
};

struct kube;

/* One watched resource. */
struct res {
	struct kube *k;
	enum resource r;
	enum phase phase;
	CURL *easy; /* the transfer in flight, NULL between them */
	struct curl_slist *headers;
	bool listing;	  /* an engine relist is open */
	bool relist_soon; /* list again at the next turn of the loop */
	bool first_page;  /* the list request in flight has no continue */
	bool listed;	  /* listed at least once */
	char *rv;	  /* resourceVersion to watch from */
	char *cont;	  /* continue token of the list in progress */
	unsigned limit;	  /* page size (halved when a page is too big) */
	unsigned attempt; /* failures in a row */
	int64_t start_ns; /* monotonic time to start the next request */
	/* The response in flight. */
	long status;
	int64_t retry_after_ms;
	bool relist;	  /* the stream said to relist (ERROR event) */
	bool relist_wait; /* ... after a backoff (not a 410) */
	bool got_lines;	  /* the watch delivered something */
	int64_t req_ns;	  /* monotonic start of the request */
	bool too_big;	  /* the list page passed max_list_bytes */
	bool failed;	  /* an operating error ended the transfer */
	struct lg_buf body; /* list page or error body (max_list_bytes) */
	struct kube_frame frame;
	char *frame_buf;
	/* With --record: "ns/name" -> the identity of what the record
	 * holds, so that a relist can write DELETED lines for what vanished
	 * (why not the engine's releases: "The record file" below). */
	json_t *known, *seen;

	/* The API version in use (discovery) and what /metrics shows. */
	char *path;	     /* list/watch path of that version */
	const char *version; /* NULL: core, or not discovered yet */
	bool absent;	     /* the API is not served: skipped, re-checked */
	char *url;	     /* the request in flight (for error messages) */
	struct kube_res_stats st;
};

struct kube {
	ingest_t *in;
	const struct kube_config *c;
	struct kube_watch_opts o;
	CURLM *multi;
	struct res res[RES_MAX];
	FILE *record;
	uint32_t rng;
	bool dirty;		   /* the engine has something to flush */
	int64_t last_flush_ns;	   /* monotonic */
	int64_t last_event_ns;	   /* monotonic: last event or TICK */
	int fatal;		   /* an operating error (code) */
	bool synced;		   /* NOTE Synced written by this start */
	char *classes_rv;	   /* resourceVersion of the class ConfigMap */
	struct ingest_clock clock; /* the time events are dated with */
	struct lg_error *err;
	metrics_srv_t *metrics; /* --metrics-listen, NULL: none */
};

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static uint32_t next_rand(struct kube *k)
{
	/* xorshift32: jitter needs spread, not secrecy. */
	uint32_t x = k->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	k->rng = x;
	return x;
}

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("gpuledger: watch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *res_name(const struct res *s)
{
	return ingest__resource_info(s->r)->kind;
}

/* Records an operating error; the loop ends at its next turn. */
static int fail(struct kube *k, int code, const struct lg_error *e)
{
	if (k->fatal == 0) {
		k->fatal = code;
		if (e != NULL && e != k->err && k->err != NULL)
			*k->err = *e;
	}
	return code;
}

/* ---------------------------------------------------------------------- */
/* The record file (--record): what the watch received, as a recorded      */
/* stream that `watch --from` replays to the same state.                   */

/*
 * A relist's DELETED lines come from the record's own view of what it
 * holds (known, seen; seeded from the file at start), not from what the
 * engine's relist releases, because the record holds what the watcher
 * received and the engine keeps less, and after a crash other things:
 *  - most pods hold nothing and never enter the engine's cache (the fast
 *    path, ingest/holders.c), yet the record has their ADDED lines; one
 *    that a relist no longer lists needs its DELETED line, and the engine
 *    cannot report an object it never kept;
 *  - the record is flushed before each commit (maybe_flush), so that it
 *    never lags the ledger; a watcher killed between the two leaves lines
 *    whose objects the restarted engine never had, and only reading the
 *    record finds them (without their DELETED lines, a replay of the
 *    record keeps objects the ledger does not);
 *  - the engine releases in key order, the record in the order it
 *    learned the objects.
 * So a record written from the engine's releases would lose lines and, after
 * a crash, replay to another state (tests/kube_cli.sh, section 5 and "a
 * record ahead of its ledger"; issue 25 item 6 asked).
 */

/* "namespace/name", or false when the object has no usable name. */
static bool object_key(const json_t *obj, char *buf, size_t cap)
{
	const char *ns = ingest__meta_str(obj, "namespace"),
		   *name = ingest__meta_str(obj, "name");
	int n;

	if (name == NULL || name[0] == '\0')
		return false;
	n = snprintf(buf, cap, "%s/%s", ns ? ns : "", name);
	return n > 0 && (size_t)n < cap;
}

static int record_write(struct kube *k, const char *type, json_t *obj,
			int64_t time_ns)
{
	char t[64];
	json_t *line;
	char *s;
	int rc = 0;

	if (k->record == NULL)
		return 0;
	time_format_ns(time_ns, t, sizeof(t));
	line = json_pack("{s:s, s:O, s:s}", "type", type, "object", obj, "time",
			 t);
	s = json_dumps(line, JSON_COMPACT);
	if (s == NULL || fputs(s, k->record) == EOF ||
	    fputc('\n', k->record) == EOF) {
		struct lg_error e;

		lg_error_set(&e, LG_EIO, "%s: %s", k->o.record_path,
			     strerror(errno));
		rc = fail(k, LG_EIO, &e);
	}
	free(s);
	json_decref(line);
	return rc;
}

/* Keeps the record's view of which objects exist: the identity of obj
 * (name, namespace, uid) under its key, or removed for DELETED. */
static void track(struct res *s, enum watch_type type, const json_t *obj)
{
	char key[512];
	json_t *id;

	if (s->known == NULL || !object_key(obj, key, sizeof(key)))
		return;
	if (type == WATCH_DELETED) {
		json_object_del(s->known, key);
		return;
	}
	id = json_pack("{s:s}", "name", ingest__meta_str(obj, "name"));
	if (ingest__meta_str(obj, "namespace") != NULL)
		json_object_set_new(
			id, "namespace",
			json_string(ingest__meta_str(obj, "namespace")));
	if (ingest__meta_str(obj, "uid") != NULL)
		json_object_set_new(id, "uid",
				    json_string(ingest__meta_str(obj, "uid")));
	if (s->seen != NULL)
		json_object_set(s->seen, key, id);
	json_object_set_new(s->known, key, id);
}

/* At the end of a relist: DELETED lines for what the record holds but the
 * list did not show (what the engine's relist_end released, and more:
 * above). */
static int record_vanished(struct kube *k, struct res *s, int64_t time_ns)
{
	const struct ingest__resource_info *ri = ingest__resource_info(s->r);
	const char *key;
	json_t *id;
	int rc = 0;

	if (s->known == NULL || s->seen == NULL)
		return 0;
	json_object_foreach (s->known, key, id) {
		json_t *obj;

		if (json_object_get(s->seen, key) != NULL)
			continue;
		obj = json_pack("{s:s, s:s, s:O}", "apiVersion",
				ri->api_version, "kind", ri->kind, "metadata",
				id);
		rc = record_write(k, "DELETED", obj, time_ns);
		json_decref(obj);
		if (rc < 0)
			break;
	}
	json_decref(s->known);
	s->known = s->seen;
	s->seen = NULL;
	return rc;
}

/* One line of an existing record file, to seed the known sets. */
static void seed_line(struct kube *k, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL);
	json_t *obj = json_object_get(ev, "object");
	const char *type = json_string_value(json_object_get(ev, "type"));
	enum resource r;
	enum watch_type t;

	r = ingest__resource_of(
		json_string_value(json_object_get(obj, "apiVersion")),
		json_string_value(json_object_get(obj, "kind")));
	if (r != RES_MAX && ingest__watch_type_parse(type, &t) &&
	    t != WATCH_BOOKMARK)
		track(&k->res[r], t, obj);
	json_decref(ev);
}

/* Reads an existing record file into the known sets. Returns the length
 * of its complete lines (up to the last newline). */
static uint64_t record_seed(struct kube *k, FILE *f)
{
	size_t cap = k->o.max_object_bytes + 4096;
	char *buf = lg_xmalloc(cap), *chunk = lg_xmalloc(1 << 16);
	struct kube_frame fr;
	uint64_t total = 0, complete = 0;

	ingest__kube_frame_init(&fr, buf, cap);
	for (size_t n; (n = fread(chunk, 1, 1 << 16, f)) > 0; total += n) {
		for (size_t off = 0, used; off < n; off += used) {
			struct kube_frame_out out;

			if (ingest__kube_frame_push(&fr, chunk + off, n - off,
						    &used,
						    &out) == KUBE_FRAME_LINE)
				seed_line(k, out.line, out.len);
			if (chunk[off + used - 1] == '\n')
				complete = total + off + used;
		}
	}
	free(chunk);
	free(buf);
	return complete;
}

/* A record file that already exists is continued: its lines tell what the
 * record holds, so that the first relist writes the right DELETED lines. A
 * watcher killed in the middle of a line left a partial last line; it is
 * cut off, so that the next line does not run into it. */
static int record_open(struct kube *k, struct lg_error *err)
{
	FILE *f = fopen(k->o.record_path, "rb");
	struct stat st;

	for (int r = 0; r < RES_MAX; r++)
		k->res[r].known = json_object();
	if (f != NULL) {
		uint64_t complete = record_seed(k, f);

		if (fstat(fileno(f), &st) == 0 &&
		    (uint64_t)st.st_size > complete) {
			logmsg("record %s: cut a partial last line of %llu "
			       "bytes",
			       k->o.record_path,
			       (unsigned long long)(st.st_size - complete));
			if (truncate(k->o.record_path, (off_t)complete) != 0) {
				fclose(f);
				return lg_error_set(err, LG_EIO, "%s: %s",
						    k->o.record_path,
						    strerror(errno));
			}
		}
		fclose(f);
	}
	k->record = fopen(k->o.record_path, "ab");
	if (k->record == NULL)
		return lg_error_set(err, LG_EIO, "%s: %s", k->o.record_path,
				    strerror(errno));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Requests.                                                               */

static bool build_url(struct kube *k, struct res *s, char *buf, size_t cap)
{
	const char *path =
		s->path ? s->path : ingest__resource_info(s->r)->path;
	char sep = strchr(path, '?') ? '&' : '?';
	char *esc = NULL;
	int n;

	if (s->phase == PH_DISCOVER) {
		n = snprintf(buf, cap, "%s/apis/%s", k->c->server,
			     api_versions[s->r].group);
	} else if (s->phase == PH_LIST) {
		if (s->cont != NULL)
			esc = curl_easy_escape(NULL, s->cont, 0);
		n = snprintf(buf, cap, "%s%s%climit=%u%s%s", k->c->server, path,
			     sep, s->limit, esc ? "&continue=" : "",
			     esc ? esc : "");
	} else {
		unsigned t = ingest__kube_watch_timeout_s(k->o.watch_timeout_s,
							  next_rand(k));

		esc = curl_easy_escape(NULL, s->rv ? s->rv : "", 0);
		n = snprintf(buf, cap,
			     "%s%s%cwatch=1&allowWatchBookmarks=true&"
			     "resourceVersion=%s&timeoutSeconds=%u",
			     k->c->server, path, sep, esc ? esc : "", t);
	}
	curl_free(esc);
	return n > 0 && (size_t)n < cap;
}

static size_t on_header(char *b, size_t size, size_t nitems, void *data)
{
	struct res *s = data;
	size_t n = size * nitems;
	char v[128];
	size_t i = 12, j = 0;

	if (n <= 2 && (b[0] == '\r' || b[0] == '\n')) {
		/* The end of the headers: an accepted watch is healthy again
		 * (its server may stay quiet for minutes). */
		long status = 0;

		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status == 200 && s->phase == PH_WATCH)
			s->attempt = 0;
		return n;
	}
	if (n < 12 || strncasecmp(b, "Retry-After:", 12) != 0)
		return n;
	while (i < n && (b[i] == ' ' || b[i] == '\t'))
		i++;
	while (i < n && b[i] != '\r' && b[i] != '\n' && j < sizeof(v) - 1)
		v[j++] = b[i++];
	v[j] = '\0';
	if (ingest__kube_retry_after_ms(v, (int64_t)time(NULL),
					s->k->o.retry_after_max_ms,
					&s->retry_after_ms) < 0)
		s->retry_after_ms = -1;
	return n;
}

static int watch_line(struct kube *k, struct res *s, const char *line,
		      size_t len);

/* An object larger than max_object_bytes was skipped: a NOTE and a log
 * line. The object is lost to us, as the API server would lose a write
 * larger than its own limit; the bound keeps one object from taking the
 * watcher's memory. */
static int oversized(struct kube *k, struct res *s, size_t len,
		     const char *what)
{
	struct lg_error e = {0};
	int rc;

	logmsg("%s: skipped a %s of %zu bytes (more than %zu)", res_name(s),
	       what, len, k->o.max_object_bytes);
	k->dirty = true;
	if ((rc = ingest__oversized(k->in, len, &e)) < 0)
		return fail(k, rc, &e);
	return 0;
}

/* Watch bytes through the framer, each complete line to watch_line. */
static bool watch_bytes(struct kube *k, struct res *s, const char *p, size_t n)
{
	for (size_t off = 0, used; off < n; off += used) {
		struct kube_frame_out out;

		switch (ingest__kube_frame_push(&s->frame, p + off, n - off,
						&used, &out)) {
		case KUBE_FRAME_LINE:
			s->got_lines = true;
			if (watch_line(k, s, out.line, out.len) < 0)
				s->failed = true;
			break;
		case KUBE_FRAME_OVERSIZED:
			if (oversized(k, s, out.len, "watch event") < 0)
				s->failed = true;
			break;
		case KUBE_FRAME_MORE:
			break;
		}
		if (s->failed || s->relist)
			return false;
	}
	return true;
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *data)
{
	struct res *s = data;
	struct kube *k = s->k;
	size_t n = size * nmemb;

	if (s->status == 0)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &s->status);
	if (s->status != 200 || s->phase == PH_DISCOVER) {
		/* Only the start of an error body is kept, for its message;
		 * a discovery document is small (a longer one is cut, and
		 * then is not JSON). */
		size_t keep = s->body.len < ERROR_BODY_MAX
				      ? ERROR_BODY_MAX - s->body.len
				      : 0;

		lg_buf_add(&s->body, p, n < keep ? n : keep);
		return n;
	}
	if (s->phase == PH_LIST) {
		if (lg_buf_add(&s->body, p, n) == 0)
			return n;
		s->too_big = true;
		return 0;
	}
	return watch_bytes(k, s, p, n) ? n : 0;
}

/* A PEM item given as a file (file_opt) or as data (blob_opt, copied). */
static void set_pem(CURL *e, CURLoption file_opt, const char *file,
		    CURLoption blob_opt, char *data, size_t len)
{
	struct curl_blob b = {
		.data = data, .len = len, .flags = CURL_BLOB_COPY};

	if (file)
		curl_easy_setopt(e, file_opt, file);
	if (data)
		curl_easy_setopt(e, blob_opt, &b);
}

/* Sets the TLS and identity options of a request. */
static void set_tls(struct kube *k, CURL *e)
{
	const struct kube_config *c = k->c;

	set_pem(e, CURLOPT_CAINFO, c->ca_file, CURLOPT_CAINFO_BLOB, c->ca_data,
		c->ca_data_len);
	set_pem(e, CURLOPT_SSLCERT, c->cert_file, CURLOPT_SSLCERT_BLOB,
		c->cert_data, c->cert_data_len);
	if (c->cert_file || c->cert_data)
		curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	set_pem(e, CURLOPT_SSLKEY, c->key_file, CURLOPT_SSLKEY_BLOB,
		c->key_data, c->key_data_len);
	if (c->insecure) {
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
}

/* Headers of a request: the bearer token is read again each time, so a
 * rotated service-account token is picked up by the next request. */
static int set_headers(struct kube *k, struct res *s, struct lg_error *err)
{
	char *token = NULL;
	int rc = ingest__kube_config_token(k->c, &token, err);

	if (rc < 0)
		return rc;
	s->headers = curl_slist_append(NULL, "Accept: application/json");
	if (token != NULL) {
		size_t n = strlen(token) + 32;
		char *h = lg_xmalloc(n);

		snprintf(h, n, "Authorization: Bearer %s", token);
		s->headers = curl_slist_append(s->headers, h);
		/* The token must not linger in freed memory. */
		memset(h, 0, n);
		memset(token, 0, strlen(token));
		free(h);
		free(token);
	}
	if (s->headers == NULL)
		abort();
	return 0;
}

static void reset_response(struct res *s)
{
	s->status = 0;
	s->retry_after_ms = -1;
	s->relist = s->relist_wait = s->too_big = s->failed = false;
	s->got_lines = false;
	s->req_ns = mono_ns();
	lg_buf_reset(&s->body);
	ingest__kube_frame_reset(&s->frame);
}

static int start_request(struct kube *k, struct res *s, struct lg_error *err)
{
	char url[URL_MAX];
	CURL *e;
	int rc;

	free(s->url);
	s->url = NULL;
	if (!build_url(k, s, url, sizeof(url)))
		return lg_error_set(err, LG_ELIMIT, "request URL too long");
	s->url = lg_xstrdup(url);
	if ((rc = set_headers(k, s, err)) < 0)
		return rc;
	reset_response(s);
	s->first_page = s->phase == PH_LIST && s->cont == NULL;
	e = curl_easy_init();
	if (e == NULL)
		abort();
	s->easy = e;
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, s->headers);
	curl_easy_setopt(e, CURLOPT_PRIVATE, s);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, s);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "gpuledger");
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)k->o.connect_timeout_ms);
	/* A watch ends at the server's timeoutSeconds; this only ends one
	 * that a dead peer keeps open. */
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS,
			 s->phase == PH_LIST
				 ? LIST_TIMEOUT_MS
				 : (long)k->o.watch_timeout_s * 2000L + 30000L);
	set_tls(k, e);
	if (k->o.verbose)
		logmsg("GET %s", url);
	if (curl_multi_add_handle(k->multi, e) != CURLM_OK)
		abort();
	return 0;
}

static void end_request(struct kube *k, struct res *s)
{
	if (s->easy != NULL) {
		curl_multi_remove_handle(k->multi, s->easy);
		curl_easy_cleanup(s->easy);
		s->easy = NULL;
	}
	curl_slist_free_all(s->headers);
	s->headers = NULL;
}

/* ---------------------------------------------------------------------- */
/* What the server sent.                                                   */

static int64_t real_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

/* The time events are dated with (DESIGN 4.1): elapsed time from
 * CLOCK_MONOTONIC, steered toward CLOCK_REALTIME (ingest/clock.c); a step
 * of the wall clock is a NOTE ClockStep. */
static int64_t ledger_now(struct kube *k)
{
	int64_t step, t = ingest__clock_read(&k->clock, mono_ns(), real_ns(),
					     ingest__time_ns(k->in), &step);
	struct lg_error e = {0};
	char msg[200];
	int rc;

	if (step == 0)
		return t;
	snprintf(msg, sizeof(msg),
		 "the wall clock stepped %+lld ms against CLOCK_MONOTONIC; "
		 "events are dated from the monotonic clock, slewing toward "
		 "the wall clock by at most 1/%d of elapsed time",
		 (long long)(step / 1000000), INGEST_CLOCK_SLEW_DIV);
	if ((rc = ingest__note(k->in, "ClockStep", msg, &e)) < 0)
		fail(k, rc, &e);
	logmsg("%s", msg);
	k->dirty = true;
	return t;
}

/* Objects of built-in lists carry no apiVersion and kind; the engine and
 * the record need both, and they are known from the resource. */
static void fill_typemeta(const struct res *s, json_t *obj)
{
	const struct ingest__resource_info *ri = ingest__resource_info(s->r);

	if (!json_is_string(json_object_get(obj, "apiVersion")))
		json_object_set_new(obj, "apiVersion",
				    json_string(ri->api_version));
	if (!json_is_string(json_object_get(obj, "kind")))
		json_object_set_new(obj, "kind", json_string(ri->kind));
}

/* A v1beta1 DeviceRequest keeps deviceClassName, allocationMode, count
 * (and selectors, adminAccess, tolerations) at its top; v1 moved them into
 * "exactly". firstAvailable has the same shape in both. */
static void claim_request_to_v1(json_t *req)
{
	json_t *exactly, *name;

	if (!json_is_object(req) || json_object_get(req, "firstAvailable") ||
	    json_object_get(req, "exactly"))
		return;
	exactly = json_deep_copy(req);
	json_object_del(exactly, "name");
	name = json_incref(json_object_get(req, "name"));
	json_object_clear(req);
	if (name != NULL)
		json_object_set_new(req, "name", name);
	json_object_set_new(req, "exactly", exactly);
}

/* Objects of an older served version are read as the version the engine
 * knows (Appendix A reads only resource.k8s.io/v1 claims): the fields it
 * reads are the same in v1beta2 and mapped from v1beta1. The record gets
 * the converted object, so a replay of it gives the same state. */
static void to_read_version(const struct res *s, json_t *obj)
{
	const struct api_versions *av = &api_versions[s->r];
	json_t *reqs;
	size_t i;
	json_t *req;

	if (s->version == NULL || strcmp(s->version, av->versions[0]) == 0)
		return;
	if (s->r == RES_RESOURCECLAIM && strcmp(s->version, "v1beta1") == 0) {
		reqs = json_object_get(
			json_object_get(json_object_get(obj, "spec"),
					"devices"),
			"requests");
		json_array_foreach (reqs, i, req)
			claim_request_to_v1(req);
	}
	json_object_set_new(
		obj, "apiVersion",
		json_string(ingest__resource_info(s->r)->api_version));
}

/* The engine keeps no pod that holds nothing, so when the class table
 * changes it cannot map such pods again, yet a new raw resource name may
 * make a running pod a holder. So pods are listed again whenever the
 * table's ConfigMap shows a new resourceVersion (a rare event; a relist
 * of the same version changes nothing); the record gets the same ADDED
 * lines, so a replay of it maps the pods again too. */
static void class_table_seen(struct kube *k, const json_t *obj,
			     enum watch_type type)
{
	const char *rv = ingest__meta_str(obj, "resourceVersion");

	if (type == WATCH_DELETED || rv == NULL ||
	    (k->classes_rv != NULL && strcmp(k->classes_rv, rv) == 0))
		return;
	if (k->classes_rv != NULL)
		k->res[RES_POD].relist_soon = true;
	free(k->classes_rv);
	k->classes_rv = lg_xstrdup(rv);
}

/* Hands one object to the engine (recording it first) and, when it has
 * one, advances the resource's position past it. */
static int feed(struct kube *k, struct res *s, enum watch_type type,
		const char *type_name, json_t *obj, bool advance)
{
	struct lg_error e = {0};
	int64_t now = ledger_now(k);
	const char *rv = ingest__meta_str(obj, "resourceVersion");
	int rc;

	if ((rc = record_write(k, type_name, obj, now)) < 0)
		return rc;
	track(s, type, obj);
	if ((rc = ingest__event(k->in, type, obj, now, &e)) < 0)
		return fail(k, rc, &e);
	k->dirty = true;
	if (s->r == RES_CONFIGMAP && type != WATCH_BOOKMARK)
		class_table_seen(k, obj, type);
	if (type != WATCH_BOOKMARK) {
		k->last_event_ns = mono_ns();
		s->st.events++;
	}
	s->st.last_seen_ns = now;
	if (advance && rv != NULL && rv[0] != '\0') {
		free(s->rv);
		s->rv = lg_xstrdup(rv);
		ingest__set_position(k->in, s->r, rv);
	}
	return 0;
}

/* An ERROR event carries a Status; every one of them means the watch
 * cannot go on from where it is, so the resource is listed again. */
static void watch_error(struct res *s, const json_t *status)
{
	json_int_t code = json_integer_value(json_object_get(status, "code"));
	const char *msg = json_string_value(json_object_get(status, "message"));

	logmsg("%s: watch ERROR %lld (%s): relisting", res_name(s),
	       (long long)code, msg ? msg : "no message");
	s->relist = true;
	s->relist_wait = ingest__kube_error_waits((long long)code);
}

static int watch_line(struct kube *k, struct res *s, const char *line,
		      size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL);
	json_t *obj = json_object_get(ev, "object");
	const char *type = json_string_value(json_object_get(ev, "type"));
	enum watch_type t;
	int rc = 0;

	if (!json_is_object(obj) || type == NULL) {
		struct lg_error e = {0};

		/* The engine turns a malformed line into a NOTE. */
		logmsg("%s: malformed watch event (%zu bytes)", res_name(s),
		       len);
		json_decref(ev);
		rc = ingest__line(k->in, line, len, &e);
		k->dirty = true;
		return rc < 0 ? fail(k, rc, &e) : 0;
	}
	if (strcmp(type, "ERROR") == 0) {
		watch_error(s, obj);
		json_decref(ev);
		return 0;
	}
	if (!ingest__watch_type_parse(type, &t)) {
		logmsg("%s: unknown watch event type \"%s\" ignored",
		       res_name(s), type);
		json_decref(ev);
		return 0;
	}
	if (t != WATCH_BOOKMARK)
		fill_typemeta(s, obj);
	to_read_version(s, obj);
	rc = feed(k, s, t, type, obj, true);
	s->attempt = 0;
	json_decref(ev);
	return rc;
}

/* One list item: an ADDED of the relist, unless it is larger than an
 * object may be, which is skipped as an oversized watch line is. */
static int list_item(struct kube *k, struct res *s, json_t *item)
{
	size_t n;

	if (!json_is_object(item)) {
		logmsg("%s: list item that is not an object skipped",
		       res_name(s));
		return 0;
	}
	fill_typemeta(s, item);
	to_read_version(s, item);
	n = json_dumpb(item, NULL, 0, JSON_COMPACT);
	if (n > k->o.max_object_bytes)
		return oversized(k, s, n, "listed object");
	return feed(k, s, WATCH_ADDED, "ADDED", item, false);
}

static int relist_begin(struct kube *k, struct res *s)
{
	struct lg_error e = {0};
	int rc;

	if ((rc = ingest__relist_begin(k->in, s->r, &e)) < 0)
		return fail(k, rc, &e);
	s->listing = true;
	s->st.relists++;
	k->dirty = true;
	if (s->known != NULL) {
		json_decref(s->seen);
		s->seen = json_object();
	}
	return 0;
}

/* Every watched resource the server serves has been listed once by this
 * start. */
static bool all_listed(const struct kube *k)
{
	for (int r = 0; r < RES_MAX; r++)
		if (!k->res[r].absent && !k->res[r].listed)
			return false;
	return true;
}

/* The last page: what was not listed is gone; watch from the list's
 * resourceVersion. */
static int relist_end(struct kube *k, struct res *s, const char *rv)
{
	struct lg_error e = {0};
	int rc;

	if ((rc = ingest__relist_end(k->in, s->r, &e)) < 0)
		return fail(k, rc, &e);
	if ((rc = record_vanished(k, s, ledger_now(k))) < 0)
		return rc;
	s->listing = false;
	s->listed = true;
	if (!k->synced && all_listed(k)) {
		ingest__emit_synced(k->in, "every watched resource listed");
		k->synced = true;
	}
	s->st.last_list_ns = s->st.last_seen_ns = real_ns();
	free(s->rv);
	s->rv = rv && rv[0] ? lg_xstrdup(rv) : NULL;
	if (s->rv != NULL)
		ingest__set_position(k->in, s->r, s->rv);
	s->phase = PH_WATCH;
	return 0;
}

/* A list page arrived whole. Returns < 0 for an operating error, 1 when
 * the page is unusable (retried), else 0. */
static int list_page(struct kube *k, struct res *s)
{
	json_error_t je;
	json_t *doc = json_loadb(s->body.p, s->body.len, 0, &je);
	json_t *items = json_object_get(doc, "items");
	const char *rv = ingest__meta_str(doc, "resourceVersion");
	const char *cont = ingest__meta_str(doc, "continue");
	int rc = 0;

	if (!json_is_object(doc) ||
	    (items && !json_is_array(items) && !json_is_null(items))) {
		logmsg("%s: unusable list response: %s", res_name(s),
		       doc ? "no items list" : je.text);
		json_decref(doc);
		return 1;
	}
	/* A first page (re)starts the relist, also one that an expired
	 * continue token cut short. */
	if (s->first_page)
		rc = relist_begin(k, s);
	for (size_t i = 0; rc == 0 && i < json_array_size(items); i++)
		rc = list_item(k, s, json_array_get(items, i));
	free(s->cont);
	s->cont = NULL;
	if (rc == 0 && cont != NULL && cont[0] != '\0')
		s->cont = lg_xstrdup(cont);
	else if (rc == 0)
		rc = relist_end(k, s, rv);
	json_decref(doc);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* After a request.                                                        */

/* Schedules the next request of s after a backoff that grows with each
 * failure in a row and honours the server's Retry-After. */
static void retry_later(struct kube *k, struct res *s, const char *why)
{
	int64_t d = ingest__kube_retry_delay_ms(
		s->attempt, k->o.backoff_base_ms, k->o.backoff_max_ms,
		s->retry_after_ms, k->o.retry_after_max_ms, next_rand(k));

	if (s->attempt < 64)
		s->attempt++;
	s->st.errors++;
	s->start_ns = mono_ns() + d * 1000000;
	/* Every failure names what was asked of whom: "Couldn't connect to
	 * server" alone does not say which server. */
	if (s->url != NULL)
		logmsg("%s: GET %s: %s; retrying in %lld ms", res_name(s),
		       s->url, why, (long long)d);
	else
		logmsg("%s: %s; retrying in %lld ms", res_name(s), why,
		       (long long)d);
}

static void start_now(struct res *s)
{
	s->start_ns = 0;
}

/* The next request lists from the first page. */
static void to_list(struct res *s)
{
	s->phase = PH_LIST;
	free(s->cont);
	s->cont = NULL;
}

/* The message of an error response (a Status), for the log. */
static void error_message(const struct res *s, long status, char *buf,
			  size_t cap)
{
	json_t *st =
		json_loadb(s->body.p ? s->body.p : "", s->body.len, 0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));

	snprintf(buf, cap, "HTTP %ld%s%.120s", status, msg ? ": " : "",
		 msg ? msg : "");
	json_decref(st);
}

/* The stream ended: a last line without "\n" still counts. */
static void watch_finish(struct kube *k, struct res *s)
{
	struct kube_frame_out out;

	if (ingest__kube_frame_finish(&s->frame, &out) == KUBE_FRAME_LINE &&
	    watch_line(k, s, out.line, out.len) < 0)
		s->failed = true;
}

static void after_ok(struct kube *k, struct res *s)
{
	int rc;

	if (s->phase == PH_LIST) {
		rc = list_page(k, s);
		if (rc == 1)
			retry_later(k, s, "unusable list page");
		else if (rc == 0) {
			s->attempt = 0;
			start_now(s);
		}
		return;
	}
	/* A server that ends every watch at once must not make us spin. */
	if (!s->got_lines && mono_ns() - s->req_ns < 1000000000)
		retry_later(k, s, "watch ended at once");
	else
		start_now(s);
}

/* The resource's API is not served (its group or version is missing, or
 * the list answered 404): skip it with a NOTE when that is news, and look
 * again after api_recheck_ms. The other resources go on, and the watcher
 * stays healthy: a missing API holds no objects to miss. */
static void went_absent(struct kube *k, struct res *s, const char *why)
{
	const char *group = api_versions[s->r].group;
	struct lg_error e = {0};
	char msg[400];
	int rc;

	if (!s->absent) {
		snprintf(msg, sizeof(msg),
			 "%s: API %s not served (%s); skipped, re-checked "
			 "every %lld s",
			 res_name(s), group, why,
			 (long long)(k->o.api_recheck_ms / 1000));
		logmsg("%s", msg);
		if ((rc = ingest__note(k->in, "ApiAbsent", msg, &e)) < 0) {
			fail(k, rc, &e);
			return;
		}
		k->dirty = true;
	}
	s->absent = true;
	s->version = NULL;
	s->phase = PH_DISCOVER;
	free(s->cont);
	s->cont = NULL;
	s->attempt = 0;
	s->start_ns = mono_ns() + k->o.api_recheck_ms * 1000000;
}

/* The served version most preferred of those we read, from an APIGroup
 * document ({"versions": [{"version": "v1"}, ...]}); NULL when none. */
static const char *pick_version(const struct res *s)
{
	json_t *doc =
		json_loadb(s->body.p ? s->body.p : "", s->body.len, 0, NULL);
	json_t *vs = json_object_get(doc, "versions"), *v;
	const char *const *want = api_versions[s->r].versions;
	const char *found = NULL;
	size_t i;

	for (size_t w = 0; found == NULL && w < 4 && want[w] != NULL; w++)
		json_array_foreach (vs, i, v) {
			const char *name = json_string_value(
				json_object_get(v, "version"));

			if (name != NULL && strcmp(name, want[w]) == 0) {
				found = want[w];
				break;
			}
		}
	json_decref(doc);
	return found;
}

/* Discovery answered: list the chosen version, or skip an absent API. */
static void discovered(struct kube *k, struct res *s, CURLcode cc, long status)
{
	const struct api_versions *av = &api_versions[s->r];
	const char *plural =
		strrchr(ingest__resource_info(s->r)->path, '/') + 1;
	char why[200];
	size_t n;

	if (cc != CURLE_OK) {
		retry_later(k, s, curl_easy_strerror(cc));
		return;
	}
	if (status == 404) {
		went_absent(k, s, "HTTP 404 from discovery");
		return;
	}
	if (status != 200) {
		error_message(s, status, why, sizeof(why));
		retry_later(k, s, why);
		return;
	}
	s->version = pick_version(s);
	if (s->version == NULL) {
		snprintf(why, sizeof(why), "no version of %s that is read",
			 av->versions[0]);
		went_absent(k, s, why);
		return;
	}
	if (s->absent || strcmp(s->version, av->versions[0]) != 0)
		logmsg("%s: reading %s/%s%s", res_name(s), av->group,
		       s->version,
		       s->absent ? " (the API is served again)" : "");
	s->absent = false;
	n = strlen(av->group) + strlen(s->version) + strlen(plural) + 16;
	free(s->path);
	s->path = lg_xmalloc(n);
	snprintf(s->path, n, "/apis/%s/%s/%s", av->group, s->version, plural);
	to_list(s);
	s->attempt = 0;
	start_now(s);
}

static void done(struct kube *k, struct res *s, CURLcode cc)
{
	long status = s->status;
	char why[200];

	if (status == 0)
		curl_easy_getinfo(s->easy, CURLINFO_RESPONSE_CODE, &status);
	end_request(k, s);
	if (k->fatal || s->failed)
		return;
	if (s->phase == PH_DISCOVER) {
		discovered(k, s, cc, status);
		return;
	}
	if (s->phase == PH_WATCH && cc == CURLE_OK && status == 200)
		watch_finish(k, s);
	if (k->fatal || s->failed)
		return;
	if (s->relist) {
		to_list(s);
		if (s->relist_wait)
			retry_later(k, s, "relisting after a watch ERROR");
		else
			start_now(s);
	} else if (s->too_big) {
		s->limit = s->limit > 1 ? s->limit / 2 : 1;
		logmsg("%s: list page larger than %zu bytes; limit now %u",
		       res_name(s), k->o.max_list_bytes, s->limit);
		start_now(s);
	} else if (cc != CURLE_OK) {
		retry_later(k, s, curl_easy_strerror(cc));
	} else if (status == 410) {
		logmsg("%s: 410 Gone: relisting", res_name(s));
		to_list(s);
		start_now(s);
	} else if (status == 404 && api_versions[s->r].group != NULL) {
		/* A CRD deleted, an API version switched off. */
		went_absent(k, s, "HTTP 404 from the list or watch");
	} else if (status != 200) {
		error_message(s, status, why, sizeof(why));
		retry_later(k, s, why);
	} else {
		after_ok(k, s);
	}
}

/* ---------------------------------------------------------------------- */
/* The loop.                                                               */

/* Healthy: every resource is listed and its watch is open, so the ledger
 * is as current as the cluster and time may be marked with a TICK. */
static bool healthy(const struct kube *k)
{
	for (int r = 0; r < RES_MAX; r++) {
		const struct res *s = &k->res[r];

		if (s->absent)
			continue;
		if (!s->listed || s->phase != PH_WATCH || s->easy == NULL ||
		    s->attempt > 0)
			return false;
	}
	return true;
}

static void start_one(struct kube *k, struct res *s)
{
	struct lg_error e = {0};

	if (start_request(k, s, &e) == 0)
		return;
	/* Nothing was started: a token file being rotated, or a continue
	 * token or resourceVersion too long for a URL. */
	end_request(k, s);
	if (e.code == LG_ELIMIT)
		to_list(s);
	retry_later(k, s, e.msg);
}

/* Starts what is due. The class table (the ConfigMap) goes first, so that
 * holders are mapped with the cluster's table from the start rather than
 * mapped twice; the rest wait for its first list or first failure. */
static bool may_start(const struct kube *k, int r)
{
	const struct res *cm = &k->res[RES_CONFIGMAP];

	return k->res[r].easy == NULL &&
	       (r == RES_CONFIGMAP || cm->listed || cm->attempt > 0);
}

static void start_due(struct kube *k, int64_t now)
{
	for (int r = 0; r < RES_MAX; r++)
		if (may_start(k, r) && k->res[r].start_ns <= now)
			start_one(k, &k->res[r]);
}

static void reap(struct kube *k)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(k->multi, &left)) != NULL) {
		struct res *s = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &s);
		done(k, s, m->data.result);
	}
}

/* Relists asked for by class_table_seen. Transfers cannot be removed from
 * inside a libcurl callback, so this runs from the loop. */
static void relist_pending(struct kube *k)
{
	for (int r = 0; r < RES_MAX; r++) {
		struct res *s = &k->res[r];

		if (!s->relist_soon)
			continue;
		s->relist_soon = false;
		if (!s->listed && !s->listing)
			continue; /* its first list is still to come */
		if (s->easy != NULL) {
			end_request(k, s);
			start_now(s);
		}
		logmsg("%s: class table changed: relisting", res_name(s));
		to_list(s);
	}
}

static void maybe_tick(struct kube *k, int64_t now)
{
	struct lg_error e = {0};
	int rc;

	if (now - k->last_event_ns < ingest__tick_ns(k->in, k->o.tick_ns) || !healthy(k))
		return;
	if ((rc = ingest__tick(k->in, ledger_now(k), &e)) < 0) {
		fail(k, rc, &e);
		return;
	}
	k->last_event_ns = now;
	k->dirty = true;
}

/* Group commit: one flush per interval at most, and one at the end. The
 * record is flushed first, so that it never lags the ledger by more than
 * what the next relist writes again. */
static void maybe_flush(struct kube *k, int64_t now, bool force)
{
	struct lg_error e = {0};
	int rc;

	if (!k->dirty || (!force && now - k->last_flush_ns < FLUSH_INTERVAL_NS))
		return;
	if (k->record != NULL && fflush(k->record) != 0) {
		lg_error_set(&e, LG_EIO, "%s: %s", k->o.record_path,
			     strerror(errno));
		fail(k, LG_EIO, &e);
		return;
	}
	if ((rc = ingest__flush(k->in, &e)) < 0) {
		fail(k, rc, &e);
		return;
	}
	k->dirty = false;
	k->last_flush_ns = now;
}

static bool stopped(const struct kube *k, int64_t now)
{
	return (k->o.stop != NULL && *k->o.stop) ||
	       (k->o.deadline_ns > 0 && now >= k->o.deadline_ns);
}

/* How long to wait for the network: until the next start, tick, flush or
 * deadline, and never more than POLL_MAX_MS (the stop flag). */
static int wait_ms(const struct kube *k, int64_t now)
{
	int64_t until = now + POLL_MAX_MS * (int64_t)1000000;

	/* Only what can happen counts: a gated resource or an unhealthy
	 * watch would otherwise make a busy loop. */
	for (int r = 0; r < RES_MAX; r++)
		if (may_start(k, r) && k->res[r].start_ns < until)
			until = k->res[r].start_ns;
	if (k->dirty && k->last_flush_ns + FLUSH_INTERVAL_NS < until)
		until = k->last_flush_ns + FLUSH_INTERVAL_NS;
	if (k->last_event_ns + ingest__tick_ns(k->in, k->o.tick_ns) < until && healthy(k))
		until = k->last_event_ns + ingest__tick_ns(k->in, k->o.tick_ns);
	if (k->o.deadline_ns > 0 && k->o.deadline_ns < until)
		until = k->o.deadline_ns;
	return until <= now ? 0 : (int)((until - now + 999999) / 1000000);
}

/* What /metrics shows, from the loop's state. */
static char *render_metrics(void *ctx, size_t *len)
{
	struct kube *k = ctx;
	struct kube_metrics_view v = {.now_ns = real_ns(),
				      .horizon_ns = ingest__time_ns(k->in),
				      .healthy = healthy(k)};
	int64_t now = mono_ns();

	for (int r = 0; r < RES_MAX; r++) {
		const struct res *s = &k->res[r];
		struct kube_res_view *rv = &v.res[r];

		rv->name = res_name(s);
		rv->group = api_versions[r].group ? api_versions[r].group : "";
		rv->version = api_versions[r].group ? s->version : "v1";
		rv->absent = s->absent;
		rv->up = !s->absent && s->listed && s->phase == PH_WATCH &&
			 s->easy != NULL && s->attempt == 0;
		rv->backoff_s = s->easy == NULL && s->start_ns > now
					? (double)(s->start_ns - now) / 1e9
					: 0;
		rv->st = s->st;
	}
	ingest__counters(k->in, &v.c);
	v.n_notes = ingest__note_counts(k->in, v.notes, INGEST_NOTE_CODES);
	return ingest__kube_metrics_render(&v, len);
}

/* Waits for the transfers and the metrics sockets, then answers what the
 * metrics server has ready (it never blocks). */
static void poll_all(struct kube *k, int timeout_ms)
{
	struct curl_waitfd w[METRICS_SRV_FDS];
	int fds[METRICS_SRV_FDS];
	short ev[METRICS_SRV_FDS];
	size_t n =
		ingest__metrics_srv_fds(k->metrics, fds, ev, METRICS_SRV_FDS);

	for (size_t i = 0; i < n; i++)
		w[i] = (struct curl_waitfd){
			.fd = fds[i],
			.events = ev[i] == POLLOUT ? CURL_WAIT_POLLOUT
						   : CURL_WAIT_POLLIN};
	curl_multi_poll(k->multi, w, (unsigned)n, timeout_ms, NULL);
	ingest__metrics_srv_serve(k->metrics, render_metrics, k);
}

static void loop(struct kube *k)
{
	for (;;) {
		int64_t now = mono_ns();
		int running;

		if (stopped(k, now))
			break;
		start_due(k, now);
		curl_multi_perform(k->multi, &running);
		reap(k);
		relist_pending(k);
		now = mono_ns();
		if (!k->fatal)
			maybe_tick(k, now);
		if (!k->fatal)
			maybe_flush(k, now, false);
		if (k->fatal)
			break;
		poll_all(k, wait_ms(k, now));
	}
}

/* ---------------------------------------------------------------------- */

static void set_defaults(struct kube_watch_opts *o)
{
	if (o->tick_ns <= 0)
		o->tick_ns = INGEST_TICK_DEFAULT;
	if (o->max_object_bytes == 0)
		o->max_object_bytes = INGEST_MAX_OBJECT_DEFAULT;
	if (o->max_list_bytes == 0)
		o->max_list_bytes = MAX_LIST_DEFAULT;
	if (o->page_limit == 0)
		o->page_limit = PAGE_LIMIT_DEFAULT;
	if (o->watch_timeout_s == 0)
		o->watch_timeout_s = WATCH_MIN_DEFAULT;
	if (o->backoff_base_ms <= 0)
		o->backoff_base_ms = BACKOFF_BASE_DEFAULT;
	if (o->backoff_max_ms <= 0)
		o->backoff_max_ms = BACKOFF_MAX_DEFAULT;
	if (o->retry_after_max_ms <= 0)
		o->retry_after_max_ms = RETRY_MAX_DEFAULT;
	if (o->connect_timeout_ms <= 0)
		o->connect_timeout_ms = CONNECT_DEFAULT;
	if (o->api_recheck_ms <= 0)
		o->api_recheck_ms = API_RECHECK_DEFAULT;
}

static struct kube *kube_new(ingest_t *in, const struct kube_config *c,
			     const struct kube_watch_opts *o)
{
	struct kube *k = lg_xcalloc(1, sizeof(*k));

	k->in = in;
	k->c = c;
	k->o = *o;
	set_defaults(&k->o);
	k->rng = k->o.seed ? k->o.seed
			   : (uint32_t)(real_ns() ^ ((int64_t)getpid() << 16));
	if (k->rng == 0)
		k->rng = 1;
	k->multi = curl_multi_init();
	if (k->multi == NULL)
		abort();
	k->last_event_ns = k->last_flush_ns = mono_ns();
	for (int r = 0; r < RES_MAX; r++) {
		struct res *s = &k->res[r];

		s->k = k;
		s->r = (enum resource)r;
		s->phase = api_versions[r].group ? PH_DISCOVER : PH_LIST;
		s->limit = k->o.page_limit;
		lg_buf_init(&s->body, k->o.max_list_bytes);
		s->frame_buf = lg_xmalloc(k->o.max_object_bytes);
		ingest__kube_frame_init(&s->frame, s->frame_buf,
					k->o.max_object_bytes);
	}
	return k;
}

static void kube_free(struct kube *k)
{
	for (int r = 0; r < RES_MAX; r++) {
		struct res *s = &k->res[r];

		end_request(k, s);
		free(s->rv);
		free(s->cont);
		free(s->path);
		free(s->url);
		lg_buf_release(&s->body);
		free(s->frame_buf);
		json_decref(s->known);
		json_decref(s->seen);
	}
	curl_multi_cleanup(k->multi);
	ingest__metrics_srv_close(k->metrics);
	free(k->classes_rv);
	if (k->record != NULL)
		fclose(k->record);
	free(k);
}

int kube_watch_run(ingest_t *in, const struct kube_config *c,
		   const struct kube_watch_opts *o, struct lg_error *err)
{
	struct kube *k;
	int rc = 0;

	LG_ASSERT(in != NULL && c != NULL && o != NULL);
	if (c->server == NULL)
		return lg_error_set(err, LG_EINVAL, "no API server configured");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return lg_error_set(err, LG_EIO, "libcurl failed to start");
	k = kube_new(in, c, o);
	k->err = err;
	if (c->insecure)
		logmsg("warning: TLS verification of %s is off "
		       "(insecure-skip-tls-verify)",
		       c->server);
	if (k->o.record_path != NULL)
		rc = record_open(k, err);
	if (rc == 0 && k->o.metrics_listen != NULL &&
	    (rc = ingest__metrics_srv_open(&k->metrics, k->o.metrics_listen,
					   err)) == 0)
		logmsg("metrics on http://%.*s:%u/metrics",
		       (int)(strrchr(k->o.metrics_listen, ':') -
			     k->o.metrics_listen),
		       k->o.metrics_listen,
		       ingest__metrics_srv_port(k->metrics));
	if (rc == 0) {
		loop(k);
		/* Stopping: what was received is committed with its
		 * resourceVersions; an unfinished relist stays open and is
		 * done again at the next start. */
		if (!k->fatal)
			maybe_flush(k, mono_ns(), true);
		rc = k->fatal;
	}
	kube_free(k);
	curl_global_cleanup();
	return rc;
}
