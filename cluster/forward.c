/*
 * A door's forward (DESIGN 11 "One sequencer, every member a door"): the
 * requests of one group commit go to the sequencer in one POST
 * /v1/peer/verdicts with this member's peer credentials, and come back as
 * the answers the sequencer would have given their clients. Forwarding is
 * a speed-up, never a dependency: whatever is not answered (no
 * connection, a reset, no answer within --forward-timeout-ms, a 503, an
 * answer that cannot be read) is left to judge here, under the same
 * idempotency key, so that rule 3 returns the sequencer's verdict if it
 * committed after all.
 *
 * The body: {"from": MEMBER, "items": [{"kind": "admission"|"declaration",
 * "body": the request's body as its client sent it, "key": the door's
 * idempotency key or null, "budgetMs": what is left of the item's bound}]};
 * the answer: {"items": [{"status": N, "body": the answer's text}]}, in
 * the same order.
 */
#include "cluster/member_int.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/* Items in one forward, and the largest answer read back. */
#define FORWARD_ITEMS_MAX   CLUSTER_FORWARD_ITEMS_MAX
#define FORWARD_ANSWER_MAX  ((size_t)64 << 20)

struct cluster_forward {
	CURL *h;
	struct curl_slist *headers;
	char *resp;
	size_t len, cap;
	bool over;
};

static size_t on_reply(char *p, size_t sz, size_t n, void *ctx)
{
	struct cluster_forward *f = ctx;
	size_t k = sz * n;

	if (f->len + k > FORWARD_ANSWER_MAX) {
		f->over = true;
		return 0;
	}
	if (f->len + k + 1 > f->cap) {
		f->cap = 2 * (f->len + k + 1);
		f->resp = lg_xrealloc(f->resp, f->cap);
	}
	memcpy(f->resp + f->len, p, k);
	f->len += k;
	f->resp[f->len] = '\0';
	return k;
}

int cluster__forward_new(struct cluster_forward **out, const char *token,
			 const char *cacert, const char *cert, const char *key,
			 struct lg_error *err)
{
	struct cluster_forward *f = lg_xcalloc(1, sizeof(*f));

	LG_ASSERT(out != NULL);
	*out = NULL;
	if ((cert == NULL) != (key == NULL)) {
		free(f);
		return lg_error_set(err, LG_EINVAL,
				    "--peer-cert and --peer-key go together");
	}
	f->h = curl_easy_init();
	if (f->h == NULL) {
		free(f);
		return lg_error_set(err, LG_EIO, "libcurl failed to start");
	}
	f->headers = curl_slist_append(NULL, "Content-Type: application/json");
	f->headers = curl_slist_append(f->headers, "Expect:");
	if (token != NULL) {
		size_t n = strlen(token) + 32;
		char *h = lg_xmalloc(n);

		snprintf(h, n, "Authorization: Bearer %s", token);
		f->headers = curl_slist_append(f->headers, h);
		free(h);
	}
	curl_easy_setopt(f->h, CURLOPT_HTTPHEADER, f->headers);
	curl_easy_setopt(f->h, CURLOPT_USERAGENT, "gpuledger-door");
	curl_easy_setopt(f->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(f->h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(f->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(f->h, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(f->h, CURLOPT_POST, 1L);
	curl_easy_setopt(f->h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (cacert != NULL)
		curl_easy_setopt(f->h, CURLOPT_CAINFO, cacert);
	if (cert != NULL) {
		curl_easy_setopt(f->h, CURLOPT_SSLCERT, cert);
		curl_easy_setopt(f->h, CURLOPT_SSLKEY, key);
	}
	*out = f;
	return 0;
}

void cluster__forward_free(struct cluster_forward *f)
{
	if (f == NULL)
		return;
	if (f->h != NULL)
		curl_easy_cleanup(f->h);
	curl_slist_free_all(f->headers);
	free(f->resp);
	free(f);
}

static const char *item_kind_name(enum verdict_kind k)
{
	return k == VERDICT_DECLARATION ? "declaration" : "admission";
}

/* The body of the forward of the items of g to judge (their indexes into
 * idx, *n of them); NULL when none can go (no body kept). */
static char *forward_body(const struct query_vgroup *g, const char *from,
			  const int64_t *budget_ms, size_t *idx, size_t *n)
{
	json_t *doc = json_object(), *items = json_array();
	char *s;

	*n = 0;
	for (size_t i = 0; i < g->n && *n < FORWARD_ITEMS_MAX; i++) {
		const struct query_vitem *it = &g->it[i];
		const char *key = it->vr->idempotency_key;

		if (g->state[i] == QUERY_V_DONE || it->forwarded ||
		    it->body == NULL || budget_ms[i] <= 0)
			continue;
		json_array_append_new(
			items, json_pack("{s:s, s:s%, s:o, s:I}", "kind",
					 item_kind_name(it->vr->kind), "body",
					 it->body, it->body_len, "key",
					 key ? json_string(key) : json_null(),
					 "budgetMs", (json_int_t)budget_ms[i]));
		idx[(*n)++] = i;
	}
	if (*n == 0) {
		json_decref(items);
		json_decref(doc);
		return NULL;
	}
	json_object_set_new(doc, "from", json_string(from));
	json_object_set_new(doc, "items", items);
	s = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return s;
}

/* Item idx[k]'s answer from the sequencer: true when it is answered
 * (200, or a request error it would get here too); false to judge here. */
static bool take_answer(struct query_vgroup *g, size_t i, json_t *a)
{
	struct query_vitem *it = &g->it[i];
	json_int_t status = json_integer_value(json_object_get(a, "status"));
	const char *body = json_string_value(json_object_get(a, "body"));
	json_t *e;

	if (body == NULL)
		return false;
	if (status == 200) {
		verdict_release(&it->v);
		it->again = lg_xstrdup(body);
		it->status = 200;
		it->forwarded = true;
		g->state[i] = QUERY_V_DONE;
		return true;
	}
	/* The request's own errors are the same wherever it is judged;
	 * anything else (503: the sequencer could not record it in time, a
	 * 5xx) is judged here. */
	if (status != 400 && status != 409 && status != 413)
		return false;
	e = json_loads(body, 0, NULL);
	query_vgroup_fail(g, i, (int)status,
			  json_string_value(json_object_get(e, "error"))
				  ? json_string_value(
					    json_object_get(e, "error"))
				  : "refused by the sequencer");
	json_decref(e);
	it->forwarded = true;
	return true;
}

int cluster__forward_run(struct cluster_forward *f, const char *url,
			 const char *from, struct query_vgroup *g,
			 const int64_t *budget_ms, uint64_t timeout_ms,
			 struct lg_error *err)
{
	char full[CLUSTER_URL_MAX + 32];
	size_t *idx = lg_xcalloc(g->n ? g->n : 1, sizeof(*idx)), n = 0;
	char *body = forward_body(g, from, budget_ms, idx, &n);
	json_t *doc = NULL, *items;
	long code = 0;
	CURLcode c;
	int answered = 0;

	LG_ASSERT(f != NULL && url != NULL && g != NULL && budget_ms != NULL);
	if (body == NULL) {
		free(idx);
		return 0;
	}
	snprintf(full, sizeof(full), "%s/v1/peer/verdicts", url);
	f->len = 0;
	f->over = false;
	curl_easy_setopt(f->h, CURLOPT_URL, full);
	curl_easy_setopt(f->h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(f->h, CURLOPT_POSTFIELDSIZE_LARGE,
			 (curl_off_t)strlen(body));
	curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(f->h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(timeout_ms < 1000 ? timeout_ms : 1000));
	c = curl_easy_perform(f->h);
	if (c == CURLE_OK)
		curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &code);
	if (c != CURLE_OK || code != 200) {
		answered = lg_error_set(err, LG_EIO, "forward to %s: %s", full,
					c != CURLE_OK ? curl_easy_strerror(c)
						      : "not answered 200");
		if (c == CURLE_OK)
			lg_error_set(err, LG_EIO, "forward to %s: HTTP %ld: %.200s",
				     full, code, f->resp ? f->resp : "");
		goto out;
	}
	doc = json_loadb(f->resp ? f->resp : "", f->len, 0, NULL);
	items = json_object_get(doc, "items");
	if (!json_is_array(items) || json_array_size(items) != n) {
		answered = lg_error_set(err, LG_ECORRUPT,
					"forward to %s: an answer of %zu items, "
					"not %zu",
					full, json_array_size(items), n);
		goto out;
	}
	for (size_t k = 0; k < n; k++)
		answered += take_answer(g, idx[k], json_array_get(items, k));
out:
	json_decref(doc);
	free(body);
	free(idx);
	return answered;
}
