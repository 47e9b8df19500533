/*
 * Read replicas (DESIGN 7, "Read replicas"): follow a primary's
 * GET /v1/events and append the identical events here.
 *
 * Every page is asked from the replica's own last seq, so its first event
 * is one the replica already holds: the primary's head there must equal
 * ours, which catches a primary whose log was rewritten behind the
 * replica's back even when nothing new has come. The new events are then
 * encoded here exactly as the ledger will encode them and chained from our
 * head; each must give the head the primary sent, or nothing of the page is
 * appended. Only then is the page appended, in one transaction, and the
 * ledger's own head must again be the primary's.
 *
 * On a difference the replica stops, naming the first seq at which the
 * primary's log departs from its own: heads are chained, so "our head at s
 * equals the primary's" holds up to that seq and fails from it on, and a
 * binary search over single-event pages finds it.
 *
 * The primary going away (a restart, a network fault) is not a
 * difference: the replica waits and asks again, with backoff.
 */
#include "ingest/ingest_int.h"

#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPLICA_PAGE_DEFAULT	1000
#define REPLICA_POLL_MS_DEFAULT 500
#define REPLICA_BODY_MAX_BYTES	(64u << 20)
#define REPLICA_BACKOFF_MAX_MS	5000

struct replica {
	ledger_t *lg;
	const struct replica_opts *o;
	CURL *curl;
	struct curl_slist *headers;
	struct lg_buf body; /* one page (REPLICA_BODY_MAX_BYTES) */
};

static void backoff_sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* GET /v1/events?from&limit: the parsed answer, or NULL with err set
 * (LG_EIO for the network and HTTP, LG_ECORRUPT for a malformed answer). */
static json_t *fetch(struct replica *r, uint64_t from, unsigned limit,
		     struct lg_error *err)
{
	char url[2048];
	long code = 0;
	CURLcode cc;
	json_t *v;

	snprintf(url, sizeof(url), "%s/v1/events?from=%llu&limit=%u", r->o->url,
		 (unsigned long long)from, limit);
	lg_buf_reset(&r->body);
	curl_easy_setopt(r->curl, CURLOPT_URL, url);
	cc = curl_easy_perform(r->curl);
	if (cc != CURLE_OK) {
		lg_error_set(err, LG_EIO, "%s: %s", url,
			     lg_buf_failed(&r->body) ? "the answer is too large"
						     : curl_easy_strerror(cc));
		return NULL;
	}
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200) {
		lg_error_set(err, LG_EIO, "%s: HTTP %ld: %.200s", url, code,
			     r->body.p ? r->body.p : "");
		return NULL;
	}
	v = json_loadb(r->body.p ? r->body.p : "", r->body.len, 0, NULL);
	if (!json_is_array(json_object_get(v, "events")) ||
	    !json_is_integer(json_object_get(v, "lastSeq"))) {
		json_decref(v);
		lg_error_set(err, LG_ECORRUPT,
			     "%s: not an events page of gpuledger serve", url);
		return NULL;
	}
	return v;
}

static bool hex_head(const char *hex, uint8_t *out)
{
	for (size_t i = 0; hex != NULL && i < LEDGER_HEAD_BYTES; i++) {
		unsigned b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return false;
		out[i] = (uint8_t)b;
	}
	return hex != NULL && strlen(hex) == 2 * LEDGER_HEAD_BYTES;
}

/* 1 when the primary's head at seq equals ours, 0 when not (or the primary
 * has no seq), < 0 on an error. */
static int same_head(struct replica *r, uint64_t seq, struct lg_error *err)
{
	uint8_t ours[LEDGER_HEAD_BYTES], theirs[LEDGER_HEAD_BYTES];
	json_t *page = fetch(r, seq, 1, err), *ev;
	int rc;

	if (page == NULL)
		return err->code;
	ev = json_array_get(json_object_get(page, "events"), 0);
	rc = ev != NULL &&
	     json_integer_value(json_object_get(ev, "seq")) ==
		     (json_int_t)seq &&
	     hex_head(json_string_value(json_object_get(ev, "head")), theirs);
	json_decref(page);
	if (!rc)
		return 0;
	if ((rc = ledger_head_at(r->lg, seq, ours, err)) != 0)
		return rc;
	return memcmp(ours, theirs, LEDGER_HEAD_BYTES) == 0;
}

/* The first seq in 1..hi at which the logs differ, given that they differ
 * at hi (or that the primary lacks it); hi when all before it agree. */
static int first_difference(struct replica *r, uint64_t hi, uint64_t *seq,
			    struct lg_error *err)
{
	uint64_t lo = 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		int same = same_head(r, mid, err);

		if (same < 0)
			return same;
		if (same)
			lo = mid + 1;
		else
			hi = mid;
	}
	*seq = hi;
	return 0;
}

static int diverged(struct replica *r, uint64_t at, uint64_t *bad_seq,
		    const char *why, struct lg_error *err)
{
	uint64_t seq = at;
	struct lg_error e2 = {0};
	int rc = first_difference(r, at, &seq, &e2);

	if (rc != 0 && rc != LG_ECORRUPT)
		return lg_error_set(err, rc, "%s", e2.msg);
	*bad_seq = seq;
	return lg_error_set(err, LG_ECORRUPT,
			    "the primary's log departs from this replica at "
			    "seq %llu (%s)",
			    (unsigned long long)seq, why);
}

struct page {
	struct event *evs;
	char **scratch;
	size_t n;
};

static void page_release(struct page *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->scratch[i]);
	free(p->evs);
	free(p->scratch);
	memset(p, 0, sizeof(*p));
}

/* Reads the events after seq `last` of a page and checks each head, from
 * ours at `last`. *bad is the seq of a head that does not follow (0: all
 * do). */
static int page_read(struct replica *r, const json_t *list, size_t skip,
		     uint64_t last, struct page *p, uint64_t *bad,
		     struct lg_error *err)
{
	uint8_t head[LEDGER_HEAD_BYTES], want[LEDGER_HEAD_BYTES];
	size_t n = json_array_size(list) - skip;
	int rc = 0;

	*bad = 0;
	memcpy(head, ledger_head(r->lg), LEDGER_HEAD_BYTES);
	p->evs = lg_xmalloc((n + 1) * sizeof(*p->evs));
	p->scratch = lg_xmalloc((n + 1) * sizeof(*p->scratch));
	for (size_t i = 0; i < n && rc == 0; i++) {
		const json_t *v = json_array_get(list, skip + i);
		struct event *ev = &p->evs[i];

		p->scratch[i] = NULL;
		p->n = i + 1;
		rc = event_from_json(ev, v, &p->scratch[i], err);
		if (rc == 0 && ev->seq != last + 1 + i)
			rc = lg_error_set(err, LG_ECORRUPT,
					  "the primary sent seq %llu where "
					  "%llu was due",
					  (unsigned long long)ev->seq,
					  (unsigned long long)(last + 1 + i));
		if (rc != 0)
			break;
		ledger_event_head(head, ev, head);
		if (!hex_head(json_string_value(json_object_get(v, "head")),
			      want) ||
		    memcmp(head, want, LEDGER_HEAD_BYTES) != 0) {
			*bad = ev->seq;
			break;
		}
	}
	return rc;
}

/* One page: verify our last event against the primary, then append what
 * follows it. *got is the number of events appended. */
static int step(struct replica *r, uint64_t *got, uint64_t *bad_seq,
		struct lg_error *err)
{
	uint64_t last, first = 0, bad = 0;
	unsigned limit = r->o->page ? r->o->page : REPLICA_PAGE_DEFAULT;
	struct page p = {0};
	json_t *page, *list;
	size_t skip = 0;
	int rc;

	*got = 0;
	if ((rc = ledger_refresh(r->lg, err)) != 0)
		return rc;
	last = ledger_last_seq(r->lg);
	if ((page = fetch(r, last ? last : 1, limit + (last > 0), err)) == NULL)
		return err->code;
	list = json_object_get(page, "events");
	if (last > 0) {
		const json_t *e0 = json_array_get(list, 0);
		uint8_t theirs[LEDGER_HEAD_BYTES];

		skip = 1;
		if (e0 == NULL || json_integer_value(json_object_get(
					  e0, "seq")) != (json_int_t)last) {
			json_decref(page);
			return diverged(r, last, bad_seq,
					"the primary does not have it", err);
		}
		if (!hex_head(json_string_value(json_object_get(e0, "head")),
			      theirs) ||
		    memcmp(theirs, ledger_head(r->lg), LEDGER_HEAD_BYTES)) {
			json_decref(page);
			return diverged(r, last, bad_seq,
					"a different chain head", err);
		}
	}
	rc = page_read(r, list, skip, last, &p, &bad, err);
	if (rc == 0 && bad != 0) {
		*bad_seq = bad;
		rc = lg_error_set(err, LG_ECORRUPT,
				  "the primary's log departs from this "
				  "replica at seq %llu (its head does not "
				  "follow from the event)",
				  (unsigned long long)bad);
	}
	if (rc == 0 && p.n > 0)
		rc = ledger_append(r->lg, p.evs, p.n, NULL, 0, &first, err);
	if (rc == 0 && p.n > 0) {
		const json_t *e = json_array_get(list, skip + p.n - 1);
		uint8_t want[LEDGER_HEAD_BYTES];

		if (first != last + 1 ||
		    !hex_head(json_string_value(json_object_get(e, "head")),
			      want) ||
		    memcmp(want, ledger_head(r->lg), LEDGER_HEAD_BYTES) != 0)
			rc = lg_error_set(err, LG_ECORRUPT,
					  "another process appended to the "
					  "replica at seq %llu",
					  (unsigned long long)(last + 1));
		*got = p.n;
	}
	page_release(&p);
	json_decref(page);
	return rc;
}

static int replica_init(struct replica *r, ledger_t *lg,
			const struct replica_opts *o, struct lg_error *err)
{
	char auth[512];

	memset(r, 0, sizeof(*r));
	/* The bound counts the terminating NUL, as it always has. */
	lg_buf_init(&r->body, REPLICA_BODY_MAX_BYTES - 1);
	r->lg = lg;
	r->o = o;
	if (o->url == NULL || (strncmp(o->url, "http://", 7) != 0 &&
			       strncmp(o->url, "https://", 8) != 0))
		return lg_error_set(err, LG_EINVAL,
				    "--from: an http:// or https:// URL");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK ||
	    (r->curl = curl_easy_init()) == NULL)
		return lg_error_set(err, LG_EIO, "libcurl would not start");
	if (o->token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
			 o->token);
		r->headers = curl_slist_append(NULL, auth);
		curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, r->headers);
	}
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, ingest__curl_to_buf);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(r->curl, CURLOPT_USERAGENT, "gpuledger-replicate");
	curl_easy_setopt(r->curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(r->curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT_MS, 60000L);
	curl_easy_setopt(r->curl, CURLOPT_SSLVERSION,
			 (long)CURL_SSLVERSION_TLSv1_2);
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (o->ca_file != NULL)
		curl_easy_setopt(r->curl, CURLOPT_CAINFO, o->ca_file);
	if (o->cert_file != NULL)
		curl_easy_setopt(r->curl, CURLOPT_SSLCERT, o->cert_file);
	if (o->key_file != NULL)
		curl_easy_setopt(r->curl, CURLOPT_SSLKEY, o->key_file);
	return 0;
}

static void replica_release(struct replica *r)
{
	if (r->curl != NULL) {
		curl_easy_cleanup(r->curl);
		curl_global_cleanup();
	}
	curl_slist_free_all(r->headers);
	lg_buf_release(&r->body);
}

int ingest_replicate(ledger_t *lg, const struct replica_opts *o,
		     struct replica_result *res, struct lg_error *err)
{
	unsigned poll, backoff = 0;
	struct replica r;
	int rc;

	LG_ASSERT(lg != NULL && o != NULL && res != NULL);
	poll = o->poll_ms ? o->poll_ms : REPLICA_POLL_MS_DEFAULT;
	memset(res, 0, sizeof(*res));
	if ((rc = replica_init(&r, lg, o, err)) != 0) {
		replica_release(&r);
		return rc;
	}
	while (o->stop == NULL || !*o->stop) {
		uint64_t got = 0;

		rc = step(&r, &got, &res->diverged_seq, err);
		if (rc == LG_EIO && !o->once) {
			/* The primary is away: wait and ask again. */
			if (backoff == 0)
				fprintf(stderr,
					"gpuledger replicate: %s; retrying\n",
					err->msg);
			backoff = backoff ? 2 * backoff : 100;
			if (backoff > REPLICA_BACKOFF_MAX_MS)
				backoff = REPLICA_BACKOFF_MAX_MS;
			backoff_sleep_ms(backoff);
			/* A stop while the primary is away is a stop, not
			 * the error of the last try. */
			rc = 0;
			continue;
		}
		if (rc != 0)
			break;
		backoff = 0;
		res->appended += got;
		res->last_seq = ledger_last_seq(lg);
		if (got == 0 && o->once)
			break;
		if (got == 0)
			backoff_sleep_ms(poll);
	}
	replica_release(&r);
	return rc;
}
