/*
 * The etcd v3 client over the JSON gateway, with libcurl (DESIGN 11): one
 * easy handle per client, so that the connection is kept between requests.
 *
 * Two things here exist for rule 1 (a timeout is not a failure):
 *  - the body is handed to libcurl through a read callback that counts
 *    what left, so that "the whole body was sent" is known exactly;
 *  - libcurl re-sends a request on a fresh connection by itself when a
 *    reused one closes without a byte of answer. For a read that is fine;
 *    for a write it would hide an outcome (the first copy may have
 *    committed), so writes refuse the rewind and the attempt is reported
 *    as INDETERMINATE for the caller to re-send, knowing that it does.
 */
#include "etcd/etcd_int.h"

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct etcd {
	char urlbuf[ETCD_ENDPOINTS_MAX * (ETCD_URL_MAX + 1)];
	const char *urls[ETCD_ENDPOINTS_MAX];
	size_t n_urls;
	size_t cur;  /* where the next request starts */
	size_t last; /* where the last one went */
	size_t pin;  /* the one endpoint the next request may use, else
		      * SIZE_MAX (the maintenance calls of one member) */
	CURL *h;
	struct curl_slist *headers;
	uint64_t timeout_ms;
	/* CLOCK_MONOTONIC ms past which nothing more is sent (0: none): every
	 * attempt is capped at the time left (DESIGN 11 rule 2). */
	int64_t deadline_ms;
	char errbuf[CURL_ERROR_SIZE];
	/* A request or watch is in flight (enter/leave). */
	atomic_bool busy;
	/* The attempt in flight: its body and its answer. */
	const char *body;
	size_t body_len, body_off;
	bool rewindable;
	char *resp;
	size_t resp_len, resp_cap;
	bool resp_over;
	/* A watch's stream instead of resp (NULL otherwise). */
	struct watch_ctx *watch;
};

/* ---------------------------------------------------------------------- */
/* libcurl's result, translated once */

static const struct {
	CURLcode code;
	enum etcd_transport t;
} transports[] = {
	{CURLE_OK, ETCD_T_OK},
	{CURLE_COULDNT_RESOLVE_HOST, ETCD_T_NO_CONNECT},
	{CURLE_COULDNT_RESOLVE_PROXY, ETCD_T_NO_CONNECT},
	{CURLE_COULDNT_CONNECT, ETCD_T_NO_CONNECT},
	/* TLS failures happen in the handshake, before any request byte. */
	{CURLE_SSL_CONNECT_ERROR, ETCD_T_NO_CONNECT},
	{CURLE_PEER_FAILED_VERIFICATION, ETCD_T_NO_CONNECT},
	{CURLE_SSL_CERTPROBLEM, ETCD_T_NO_CONNECT},
	{CURLE_SSL_CIPHER, ETCD_T_NO_CONNECT},
	{CURLE_SSL_CACERT_BADFILE, ETCD_T_NO_CONNECT},
	{CURLE_OPERATION_TIMEDOUT, ETCD_T_TIMEOUT},
	{CURLE_SEND_ERROR, ETCD_T_BROKEN},
	{CURLE_RECV_ERROR, ETCD_T_BROKEN},
	{CURLE_GOT_NOTHING, ETCD_T_BROKEN},
	{CURLE_PARTIAL_FILE, ETCD_T_BROKEN},
	{CURLE_SEND_FAIL_REWIND, ETCD_T_BROKEN},
};

static enum etcd_transport transport_of(CURLcode c, bool over)
{
	if (c == CURLE_WRITE_ERROR && over)
		return ETCD_T_TOO_BIG;
	for (size_t i = 0; i < sizeof(transports) / sizeof(transports[0]); i++)
		if (transports[i].code == c)
			return transports[i].t;
	return ETCD_T_OTHER;
}

/* ---------------------------------------------------------------------- */
/* Callbacks */

static size_t on_send(char *dst, size_t size, size_t nmemb, void *ud)
{
	etcd_t *e = ud;
	size_t n = e->body_len - e->body_off;

	if (n > size * nmemb)
		n = size * nmemb;
	memcpy(dst, e->body + e->body_off, n);
	e->body_off += n;
	return n;
}

static int on_seek(void *ud, curl_off_t offset, int origin)
{
	etcd_t *e = ud;

	if (!e->rewindable || origin != SEEK_SET || offset < 0 ||
	    (size_t)offset > e->body_len)
		return CURL_SEEKFUNC_CANTSEEK;
	e->body_off = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static size_t watch_write(etcd_t *e, const char *p, size_t n);

static size_t on_answer(char *p, size_t size, size_t nmemb, void *ud)
{
	etcd_t *e = ud;
	size_t n = size * nmemb;

	if (e->watch != NULL)
		return watch_write(e, p, n);
	if (e->resp_len + n > ETCD_RESPONSE_MAX) {
		e->resp_over = true;
		return 0;
	}
	if (e->resp_len + n + 1 > e->resp_cap) {
		size_t cap = e->resp_cap ? e->resp_cap : 16384;

		while (cap < e->resp_len + n + 1)
			cap *= 2;
		if (cap > ETCD_RESPONSE_MAX + 1)
			cap = ETCD_RESPONSE_MAX + 1;
		e->resp = lg_xrealloc(e->resp, cap);
		e->resp_cap = cap;
	}
	memcpy(e->resp + e->resp_len, p, n);
	e->resp_len += n;
	e->resp[e->resp_len] = '\0';
	return n;
}

/* ---------------------------------------------------------------------- */
/* Life cycle */

int etcd_open(etcd_t **out, const struct etcd_opts *o, struct lg_error *err)
{
	etcd_t *e = lg_xcalloc(1, sizeof(*e));
	int rc;

	LG_ASSERT(out != NULL && o != NULL);
	*out = NULL;
	e->pin = SIZE_MAX;
	rc = etcd__endpoints_parse(o->endpoints, e->urlbuf, sizeof(e->urlbuf),
				   e->urls, &e->n_urls, err);
	if (rc != 0)
		goto fail;
	if ((o->cert == NULL) != (o->key == NULL)) {
		rc = lg_error_set(err, LG_EINVAL,
				  "--etcd-cert and --etcd-key go together");
		goto fail;
	}
	e->timeout_ms = o->timeout_ms ? o->timeout_ms : ETCD_TIMEOUT_DEFAULT;
	e->h = curl_easy_init();
	if (e->h == NULL) {
		rc = lg_error_set(err, LG_EIO, "libcurl failed to start");
		goto fail;
	}
	/* No "Expect: 100-continue": a body leaves at once, so that what
	 * was sent is what the read callback handed over. */
	e->headers = curl_slist_append(NULL, "Content-Type: application/json");
	e->headers = curl_slist_append(e->headers, "Expect:");
	curl_easy_setopt(e->h, CURLOPT_HTTPHEADER, e->headers);
	curl_easy_setopt(e->h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
	curl_easy_setopt(e->h, CURLOPT_USERAGENT, "gpuledger");
	curl_easy_setopt(e->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(e->h, CURLOPT_ERRORBUFFER, e->errbuf);
	curl_easy_setopt(e->h, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(e->h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->h, CURLOPT_READFUNCTION, on_send);
	curl_easy_setopt(e->h, CURLOPT_READDATA, e);
	curl_easy_setopt(e->h, CURLOPT_SEEKFUNCTION, on_seek);
	curl_easy_setopt(e->h, CURLOPT_SEEKDATA, e);
	curl_easy_setopt(e->h, CURLOPT_POST, 1L);
	curl_easy_setopt(e->h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->cacert != NULL)
		curl_easy_setopt(e->h, CURLOPT_CAINFO, o->cacert);
	if (o->cert != NULL) {
		curl_easy_setopt(e->h, CURLOPT_SSLCERT, o->cert);
		curl_easy_setopt(e->h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(e->h, CURLOPT_SSLKEY, o->key);
	}
	*out = e;
	return 0;
fail:
	etcd_close(e);
	return rc;
}

void etcd_close(etcd_t *e)
{
	if (e == NULL)
		return;
	if (e->h != NULL)
		curl_easy_cleanup(e->h);
	curl_slist_free_all(e->headers);
	free(e->resp);
	free(e);
}

int64_t etcd_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void etcd_deadline(etcd_t *e, int64_t deadline_ms)
{
	LG_ASSERT(e != NULL && deadline_ms >= 0);
	e->deadline_ms = deadline_ms;
}

const char *etcd_endpoint(const etcd_t *e)
{
	LG_ASSERT(e != NULL);
	return e->n_urls ? e->urls[e->last] : "";
}

/* ---------------------------------------------------------------------- */
/* One request */

/* The gateway's error text of a non-2xx answer ({"error", "message",
 * "code"}), into buf. */
static void gateway_error(const etcd_t *e, char *buf, size_t cap)
{
	json_t *doc = json_loadb(e->resp ? e->resp : "", e->resp_len,
				 JSON_DISABLE_EOF_CHECK, NULL);
	const char *msg = json_string_value(json_object_get(doc, "error"));

	if (msg == NULL)
		msg = json_string_value(json_object_get(
			json_object_get(doc, "error"), "message"));
	snprintf(buf, cap, "%s", msg ? msg : "");
	json_decref(doc);
}

static CURLcode attempt(etcd_t *e, const char *url, const char *path,
			uint64_t timeout_ms)
{
	char full[ETCD_URL_MAX + 64];

	snprintf(full, sizeof(full), "%s%s", url, path);
	e->body_off = 0;
	e->resp_len = 0;
	e->resp_over = false;
	e->errbuf[0] = '\0';
	curl_easy_setopt(e->h, CURLOPT_URL, full);
	curl_easy_setopt(e->h, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)e->body_len);
	curl_easy_setopt(e->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(e->h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(timeout_ms < 2000 ? timeout_ms : 2000));
	return curl_easy_perform(e->h);
}

/* Sends body to path, trying the endpoints from e->cur on while nothing
 * was sent. On an answer (0) *doc is its JSON (caller decrefs); else the
 * code of its rule-1 outcome with err saying what happened. */
/* What an attempt at endpoint i that reached no answer said. */
static void transport_error(etcd_t *e, size_t i, const struct etcd_rule1 *v,
			    CURLcode c, struct lg_error *err)
{
	lg_error_set(err, v->code, "%s: %s: %s: %s", e->urls[i],
		     etcd__outcome_name(v->outcome), v->why,
		     e->errbuf[0] ? e->errbuf : curl_easy_strerror(c));
}

/* The answer's JSON object in *doc; one that is not JSON leaves the
 * outcome unknown. */
static int answer_doc(etcd_t *e, json_t **doc, enum etcd_outcome *outcome,
		      struct lg_error *err)
{
	*doc = json_loadb(e->resp ? e->resp : "", e->resp_len,
			  JSON_DISABLE_EOF_CHECK, NULL);
	if (json_is_object(*doc))
		return 0;
	json_decref(*doc);
	*doc = NULL;
	if (outcome != NULL)
		*outcome = ETCD_INDETERMINATE;
	return lg_error_set(err, LG_ECORRUPT,
			    "%s: indeterminate: the answer is not JSON",
			    e->urls[e->last]);
}

static int send_request(etcd_t *e, const char *path, const char *body,
			bool rewindable, uint64_t timeout_ms, json_t **doc,
			enum etcd_outcome *outcome, struct lg_error *err)
{
	struct etcd_rule1 v = {ETCD_NOT_APPLIED, LG_EIO, "no endpoint"};
	char gw[LG_ERRMSG_MAX] = "";
	size_t start = e->cur;

	*doc = NULL;
	e->body = body;
	e->body_len = strlen(body);
	e->rewindable = rewindable;
	size_t tries = e->pin < e->n_urls ? 1 : e->n_urls;

	if (e->pin < e->n_urls)
		start = e->pin;
	for (size_t t = 0; t < tries; t++) {
		size_t i = (start + t) % e->n_urls;
		uint64_t tmo = timeout_ms;
		int64_t t0_ms = etcd_mono_ms(), left_ms;
		CURLcode c;
		struct etcd_attempt a;

		if (e->deadline_ms != 0) {
			/* Rule 2: no request outlives the caller's bound.
			 * Nothing is sent once it has passed. */
			left_ms = e->deadline_ms - t0_ms;
			if (left_ms <= 0) {
				v = (struct etcd_rule1){
					ETCD_NOT_APPLIED, LG_EIO,
					"no time left before the deadline"};
				lg_error_set(
					err, v.code, "%s: %s: %s", e->urls[i],
					etcd__outcome_name(v.outcome), v.why);
				break;
			}
			if ((uint64_t)left_ms < tmo)
				tmo = (uint64_t)left_ms;
		}
		c = attempt(e, e->urls[i], path, tmo);
		a = (struct etcd_attempt){
			.transport = transport_of(c, e->resp_over),
			.sent = e->body_off == e->body_len,
		};
		e->last = i;
		gw[0] = '\0';
		if (a.transport == ETCD_T_OK) {
			curl_easy_getinfo(e->h, CURLINFO_RESPONSE_CODE,
					  &a.http_status);
			if (a.http_status < 200 || a.http_status > 299) {
				gateway_error(e, gw, sizeof(gw));
				a.error = gw;
			}
		}
		v = etcd__classify(&a);
		if (v.outcome == ETCD_NOT_APPLIED && a.transport != ETCD_T_OK) {
			/* Nothing reached etcd there: the next one. */
			transport_error(e, i, &v, c, err);
			continue;
		}
		/* A member that timed out or broke, or answered slowly
		 * (more than half the timeout: a slow link or a member
		 * catching up), is not where the next request starts: one
		 * slow endpoint of three is not a lost quorum. */
		if (e->pin >= e->n_urls)
			e->cur = v.outcome == ETCD_INDETERMINATE ||
						 (uint64_t)(etcd_mono_ms() -
							    t0_ms) >
							 timeout_ms / 2
					 ? (i + 1) % e->n_urls
					 : i;
		if (rewindable && v.outcome == ETCD_INDETERMINATE &&
		    t + 1 < tries) {
			/* A read has no effect to lose: the next endpoint
			 * answers it (a write is re-sent identical by its
			 * caller, rule 1). */
			transport_error(e, i, &v, c, err);
			continue;
		}
		if (v.code != 0) {
			if (a.transport == ETCD_T_OK)
				lg_error_set(err, v.code,
					     "%s: %s: %s (HTTP %ld): %s",
					     e->urls[i],
					     etcd__outcome_name(v.outcome),
					     v.why, a.http_status, gw);
			else
				transport_error(e, i, &v, c, err);
		}
		break;
	}
	if (outcome != NULL)
		*outcome = v.outcome;
	if (v.code != 0)
		return v.code;
	return answer_doc(e, doc, outcome, err);
}

/* A handle is used from one thread at a time, and never from inside a
 * watch's callback: both would drive one easy handle twice at once, and
 * libcurl's handle is not reentrant (the second request would corrupt the
 * first's body offset and answer, and with them rule 1's "was it sent").
 * Asserted, as a programmer's error. */
static void enter(etcd_t *e)
{
	LG_ASSERT(!atomic_exchange(&e->busy, true));
}

static void leave(etcd_t *e)
{
	atomic_store(&e->busy, false);
}

/* A request whose body is built by the caller and whose answer is an
 * object: body is freed here. */
static int call(etcd_t *e, const char *path, char *body, bool rewindable,
		json_t **doc, enum etcd_outcome *outcome, struct lg_error *err)
{
	int rc;

	if (body == NULL) {
		if (outcome != NULL)
			*outcome = ETCD_NOT_APPLIED;
		return err ? err->code : LG_EINVAL;
	}
	enter(e);
	rc = send_request(e, path, body, rewindable, e->timeout_ms, doc,
			  outcome, err);
	leave(e);
	free(body);
	return rc;
}

static char *dumps(json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);

	json_decref(doc);
	return s;
}

/* ---------------------------------------------------------------------- */
/* Operations */

/* A txn of ranges only changes nothing: like a read, it may go to the
 * next endpoint when one does not answer. */
static bool txn_reads_only(const struct etcd_txn *t)
{
	for (size_t i = 0; i < t->n_success; i++)
		if (t->success[i].kind != ETCD_OP_RANGE)
			return false;
	for (size_t i = 0; i < t->n_failure; i++)
		if (t->failure[i].kind != ETCD_OP_RANGE)
			return false;
	return true;
}

int etcd_txn(etcd_t *e, const struct etcd_txn *t, struct etcd_txn_result *out,
	     struct lg_error *err)
{
	json_t *doc = NULL;
	enum etcd_outcome oc = ETCD_NOT_APPLIED;
	int rc;

	LG_ASSERT(e != NULL && t != NULL && out != NULL);
	LG_ASSERT((t->n_cmp == 0 || t->cmp != NULL) &&
		  (t->n_success == 0 || t->success != NULL) &&
		  (t->n_failure == 0 || t->failure != NULL));
	memset(out, 0, sizeof(*out));
	rc = call(e, "/v3/kv/txn", etcd__txn_body(t, err), txn_reads_only(t),
		  &doc, &oc, err);
	out->outcome = oc;
	if (rc != 0)
		return rc;
	rc = etcd__txn_parse(doc, t, out, err);
	json_decref(doc);
	return rc;
}

int etcd_range(etcd_t *e, const struct etcd_range *r,
	       struct etcd_range_result *out, enum etcd_outcome *outcome,
	       struct lg_error *err)
{
	json_t *doc = NULL;
	int rc;

	LG_ASSERT(e != NULL && r != NULL && out != NULL);
	memset(out, 0, sizeof(*out));
	rc = call(e, "/v3/kv/range", etcd__range_body(r, err), true, &doc,
		  outcome, err);
	if (rc != 0)
		return rc;
	rc = etcd__range_parse(doc, out, err);
	json_decref(doc);
	return rc;
}

int etcd_put(etcd_t *e, const void *key, size_t key_len, const void *val,
	     size_t val_len, int64_t lease, int64_t *revision,
	     enum etcd_outcome *outcome, struct lg_error *err)
{
	struct etcd_op op = {.kind = ETCD_OP_PUT,
			     .range = {.key = key, .key_len = key_len},
			     .value = val,
			     .value_len = val_len,
			     .lease = lease};
	struct etcd_txn t = {.success = &op, .n_success = 1};
	struct etcd_txn_result res;
	int rc;

	LG_ASSERT(e != NULL && (key != NULL || key_len == 0) &&
		  (val != NULL || val_len == 0));
	/* A put is a txn without compares: one code path for writes. */
	rc = etcd_txn(e, &t, &res, err);
	if (outcome != NULL)
		*outcome = res.outcome;
	if (rc == 0 && revision != NULL)
		*revision = res.header.revision;
	etcd_txn_result_release(&res);
	return rc;
}

int etcd__delete(etcd_t *e, const struct etcd_range *r, int64_t *deleted,
		 enum etcd_outcome *outcome, struct lg_error *err)
{
	struct etcd_op op = {.kind = ETCD_OP_DELETE, .range = *r};
	struct etcd_txn t = {.success = &op, .n_success = 1};
	struct etcd_txn_result res;
	int rc;

	LG_ASSERT(e != NULL && r != NULL);
	rc = etcd_txn(e, &t, &res, err);
	if (outcome != NULL)
		*outcome = res.outcome;
	if (rc == 0 && deleted != NULL)
		*deleted = res.n_ops ? res.ops[0].deleted : 0;
	etcd_txn_result_release(&res);
	return rc;
}

int etcd_lease_grant(etcd_t *e, int64_t ttl_s, int64_t *id, int64_t *granted_s,
		     enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *req = json_object(), *doc = NULL;
	int rc;

	LG_ASSERT(e != NULL && id != NULL);
	json_object_set_new(req, "TTL", etcd__i64_json(ttl_s));
	json_object_set_new(req, "ID", etcd__i64_json(*id));
	rc = call(e, "/v3/lease/grant", dumps(req), false, &doc, outcome, err);
	if (rc != 0)
		return rc;
	*id = etcd_i64(doc, "ID");
	if (granted_s != NULL)
		*granted_s = etcd_i64(doc, "TTL");
	if (json_object_get(doc, "error") != NULL || *id == 0)
		rc = lg_error_set(
			err, LG_EINVAL, "%s: lease grant: %s", e->urls[e->last],
			json_string_value(json_object_get(doc, "error")));
	json_decref(doc);
	return rc;
}

int etcd_lease_keepalive(etcd_t *e, int64_t id, int64_t *ttl_s,
			 enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *req = json_object(), *doc = NULL, *res;
	int rc;

	LG_ASSERT(e != NULL && ttl_s != NULL);
	json_object_set_new(req, "ID", etcd__i64_json(id));
	/* A stream of one message: {"result": {...}}. */
	rc = call(e, "/v3/lease/keepalive", dumps(req), true, &doc, outcome,
		  err);
	if (rc != 0)
		return rc;
	res = json_object_get(doc, "result");
	*ttl_s = etcd_i64(res, "TTL");
	if (!json_is_object(res))
		rc = lg_error_set(err, LG_ECORRUPT,
				  "%s: the keepalive answer is not one",
				  e->urls[e->last]);
	else if (*ttl_s <= 0)
		rc = lg_error_set(err, LG_ENOENT, "lease %llx is gone",
				  (unsigned long long)id);
	json_decref(doc);
	return rc;
}

int etcd_lease_revoke(etcd_t *e, int64_t id, enum etcd_outcome *outcome,
		      struct lg_error *err)
{
	json_t *req = json_object(), *doc = NULL;
	int rc;

	LG_ASSERT(e != NULL);
	json_object_set_new(req, "ID", etcd__i64_json(id));
	rc = call(e, "/v3/lease/revoke", dumps(req), false, &doc, outcome, err);
	json_decref(doc);
	return rc;
}

int etcd_lease_ttl(etcd_t *e, int64_t id, int64_t *ttl_s, int64_t *granted_s,
		   enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *req = json_object(), *doc = NULL;
	int rc;

	LG_ASSERT(e != NULL && ttl_s != NULL);
	json_object_set_new(req, "ID", etcd__i64_json(id));
	rc = call(e, "/v3/lease/timetolive", dumps(req), false, &doc, outcome,
		  err);
	if (rc != 0)
		return rc;
	/* etcd answers TTL -1 for a lease it does not know (expired). */
	*ttl_s = etcd_i64(doc, "TTL");
	*granted_s = etcd_i64(doc, "grantedTTL");
	json_decref(doc);
	return *ttl_s > 0 ? 0 : LG_ENOENT;
}

size_t etcd_n_endpoints(const etcd_t *e)
{
	LG_ASSERT(e != NULL);
	return e->n_urls;
}

const char *etcd_endpoint_at(const etcd_t *e, size_t i)
{
	LG_ASSERT(e != NULL);
	return i < e->n_urls ? e->urls[i] : "";
}

/* call() at endpoint i alone (any when i is SIZE_MAX), with timeout_ms
 * (0: the handle's). */
static int call_at(etcd_t *e, size_t i, uint64_t timeout_ms, const char *path,
		   char *body, json_t **doc, enum etcd_outcome *outcome,
		   struct lg_error *err)
{
	uint64_t t = e->timeout_ms;
	int rc;

	e->pin = i;
	if (timeout_ms != 0)
		e->timeout_ms = timeout_ms;
	rc = call(e, path, body, true, doc, outcome, err);
	e->pin = SIZE_MAX;
	e->timeout_ms = t;
	return rc;
}

int etcd_status(etcd_t *e, struct etcd_status *st, enum etcd_outcome *outcome,
		struct lg_error *err)
{
	return etcd_status_at(e, SIZE_MAX, st, outcome, err);
}

int etcd_status_at(etcd_t *e, size_t i, struct etcd_status *st,
		   enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *doc = NULL;
	const char *v;
	int rc;

	LG_ASSERT(e != NULL && st != NULL);
	memset(st, 0, sizeof(*st));
	rc = call_at(e, i, 0, "/v3/maintenance/status", lg_xstrdup("{}"), &doc,
		     outcome, err);
	if (rc != 0)
		return rc;
	etcd__header_parse(doc, &st->header);
	st->leader = (uint64_t)etcd_i64(doc, "leader");
	/* The gateway writes these fields in camelCase (3.4). */
	st->db_size = etcd_i64(doc, "dbSize");
	/* 3.4 and later; absent before (0: unknown). */
	st->db_size_in_use = etcd_i64(doc, "dbSizeInUse");
	st->raft_index = (uint64_t)etcd_i64(doc, "raftIndex");
	st->raft_term = (uint64_t)etcd_i64(doc, "raftTerm");
	v = json_string_value(json_object_get(doc, "version"));
	snprintf(st->version, sizeof(st->version), "%s", v ? v : "");
	json_decref(doc);
	return 0;
}

int etcd_defragment_at(etcd_t *e, size_t i, uint64_t timeout_ms,
		       enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *doc = NULL;
	int rc = call_at(e, i, timeout_ms, "/v3/maintenance/defragment",
			 lg_xstrdup("{}"), &doc, outcome, err);

	LG_ASSERT(e != NULL);
	json_decref(doc);
	return rc;
}

int etcd_compact(etcd_t *e, int64_t revision, bool physical,
		 enum etcd_outcome *outcome, struct lg_error *err)
{
	json_t *req = json_object(), *doc = NULL;
	int rc;

	LG_ASSERT(e != NULL);
	json_object_set_new(req, "revision", etcd__i64_json(revision));
	if (physical)
		json_object_set_new(req, "physical", json_true());
	rc = call(e, "/v3/kv/compaction", dumps(req), false, &doc, outcome,
		  err);
	json_decref(doc);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Watches */

struct watch_ctx {
	struct etcd_lines lines;
	etcd_watch_fn *fn;
	void *ctx;
	const volatile sig_atomic_t *stop;
	int rc; /* why the stream was ended from here (0: it ended) */
	struct lg_error *err;
	bool done;
};

static void events_release(struct etcd_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(ev[i].kv.key);
		free(ev[i].kv.value);
	}
	free(ev);
}

static int watch_message(struct watch_ctx *w, const json_t *res)
{
	struct etcd_watch_msg m = {0};
	const json_t *evs = json_object_get(res, "events");
	struct etcd_event *ev;
	size_t n = json_array_size(evs);
	const char *reason =
		json_string_value(json_object_get(res, "cancel_reason"));
	int rc = 0;

	ev = lg_xcalloc(n ? n : 1, sizeof(*ev));
	etcd__header_parse(res, &m.header);
	for (size_t i = 0; i < n; i++) {
		const json_t *e = json_array_get(evs, i), *kv;
		const char *type =
			json_string_value(json_object_get(e, "type"));
		const char *k, *v;

		kv = json_object_get(e, "kv");
		k = json_string_value(json_object_get(kv, "key"));
		v = json_string_value(json_object_get(kv, "value"));
		/* proto3 leaves out the zero value: PUT. */
		ev[i].type = type && strcmp(type, "DELETE") == 0
				     ? ETCD_EV_DELETE
				     : ETCD_EV_PUT;
		ev[i].kv.key =
			k ? etcd__b64_decode(k, &ev[i].kv.key_len) : NULL;
		ev[i].kv.value =
			etcd__b64_decode(v ? v : "", &ev[i].kv.value_len);
		if (ev[i].kv.key == NULL || ev[i].kv.value == NULL) {
			events_release(ev, i + 1);
			return lg_error_set(w->err, LG_ECORRUPT,
					    "a watch event is not one");
		}
		ev[i].kv.create_revision = etcd_i64(kv, "create_revision");
		ev[i].kv.mod_revision = etcd_i64(kv, "mod_revision");
		ev[i].kv.version = etcd_i64(kv, "version");
		ev[i].kv.lease = etcd_i64(kv, "lease");
	}
	m.created = json_is_true(json_object_get(res, "created"));
	m.events = ev;
	m.n_events = n;
	m.compact_revision = etcd_i64(res, "compact_revision");
	m.canceled = json_is_true(json_object_get(res, "canceled"));
	m.cancel_reason = reason ? reason : "";
	rc = w->fn(w->ctx, &m);
	events_release(ev, n);
	if (rc != 0)
		return rc;
	if (m.compact_revision != 0)
		return lg_error_set(w->err, LG_ERANGE,
				    "the watch's start revision was "
				    "compacted (the oldest left is %lld)",
				    (long long)m.compact_revision);
	if (m.canceled)
		return lg_error_set(
			w->err, LG_EIO, "etcd canceled the watch%s%s",
			m.cancel_reason[0] ? ": " : "", m.cancel_reason);
	return 0;
}

static int on_watch_line(void *ud, const char *line, size_t len)
{
	struct watch_ctx *w = ud;
	json_t *doc = json_loadb(line, len, 0, NULL);
	const json_t *res = json_object_get(doc, "result"),
		     *er = json_object_get(doc, "error");
	int rc;

	if (json_is_object(res))
		rc = watch_message(w, res);
	else if (er != NULL)
		rc = lg_error_set(
			w->err, LG_EIO, "the watch failed: %s",
			json_string_value(
				json_is_object(er)
					? json_object_get(er, "message")
					: er));
	else
		rc = lg_error_set(w->err, LG_ECORRUPT,
				  "a watch message is not JSON");
	json_decref(doc);
	return rc;
}

static size_t watch_write(etcd_t *e, const char *p, size_t n)
{
	struct watch_ctx *w = e->watch;
	int rc;

	if (w->done)
		return 0;
	rc = etcd__lines_feed(&w->lines, p, n, on_watch_line, w);
	if (rc == LG_ELIMIT && (w->err == NULL || w->err->code != LG_ELIMIT))
		lg_error_set(w->err, LG_ELIMIT,
			     "a watch message above %zu bytes",
			     ETCD_WATCH_MSG_MAX);
	if (rc != 0) {
		w->rc = rc;
		w->done = true;
		return 0;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
		       curl_off_t un)
{
	const struct watch_ctx *w = ud;

	return w->stop != NULL && *w->stop;
}

int etcd_watch(etcd_t *e, const struct etcd_watch *w, etcd_watch_fn *fn,
	       void *ctx, struct lg_error *err)
{
	struct watch_ctx wc = {.fn = fn, .ctx = ctx, .err = err};
	json_t *req, *cr;
	char *body, *keys, full[ETCD_URL_MAX + 64];
	CURLcode c = CURLE_OK;
	size_t i;
	int rc = 0;

	LG_ASSERT(e != NULL && w != NULL && fn != NULL);
	wc.stop = w->stop;
	/* The keys as a range names them; the rest of the range unused. */
	keys = etcd__range_body(
		&(struct etcd_range){.key = w->range.key,
				     .key_len = w->range.key_len,
				     .prefix = w->range.prefix,
				     .end = w->range.end,
				     .end_len = w->range.end_len},
		err);
	if (keys == NULL)
		return err ? err->code : LG_EINVAL;
	cr = json_loads(keys, 0, NULL);
	free(keys);
	req = json_object();
	if (w->start_revision)
		json_object_set_new(cr, "start_revision",
				    etcd__i64_json(w->start_revision));
	if (w->progress_notify)
		json_object_set_new(cr, "progress_notify", json_true());
	json_object_set_new(req, "create_request", cr);
	body = dumps(req);
	etcd__lines_init(&wc.lines, ETCD_WATCH_MSG_MAX);
	enter(e);
	e->body = body;
	e->body_len = strlen(body);
	e->rewindable = true;
	e->watch = &wc;
	curl_easy_setopt(e->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e->h, CURLOPT_XFERINFODATA, &wc);
	for (size_t t = 0; t < e->n_urls; t++) {
		i = (e->cur + t) % e->n_urls;
		e->last = i;
		e->body_off = 0;
		e->errbuf[0] = '\0';
		snprintf(full, sizeof(full), "%s/v3/watch", e->urls[i]);
		curl_easy_setopt(e->h, CURLOPT_URL, full);
		curl_easy_setopt(e->h, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)e->body_len);
		curl_easy_setopt(e->h, CURLOPT_TIMEOUT_MS, (long)w->timeout_ms);
		curl_easy_setopt(
			e->h, CURLOPT_CONNECTTIMEOUT_MS,
			(long)(e->timeout_ms < 2000 ? e->timeout_ms : 2000));
		c = curl_easy_perform(e->h);
		if (transport_of(c, false) != ETCD_T_NO_CONNECT)
			break;
	}
	e->watch = NULL;
	leave(e);
	curl_easy_setopt(e->h, CURLOPT_NOPROGRESS, 1L);
	curl_easy_setopt(e->h, CURLOPT_XFERINFOFUNCTION, NULL);
	if (wc.done)
		rc = wc.rc;
	else if (c == CURLE_ABORTED_BY_CALLBACK)
		rc = 0; /* *stop */
	else if (c == CURLE_OK)
		rc = lg_error_set(err, LG_EIO, "%s: the watch stream ended",
				  e->urls[e->last]);
	else
		rc = lg_error_set(err, LG_EIO, "%s: the watch failed: %s",
				  e->urls[e->last],
				  e->errbuf[0] ? e->errbuf
					       : curl_easy_strerror(c));
	if (c != CURLE_OK && c != CURLE_ABORTED_BY_CALLBACK && !wc.done &&
	    transport_of(c, false) != ETCD_T_NO_CONNECT)
		e->cur = (e->last + 1) % e->n_urls;
	etcd__lines_release(&wc.lines);
	free(body);
	return rc;
}
