/*
 * One bounded HTTP GET (libcurl's easy interface), for clients outside the
 * watch loop: `gpuledger witness` following a server's checkpoints. CURL*
 * stays in this file.
 */
#include "ingest/ingest_int.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

struct body {
	struct lg_buf b; /* at most the caller's max_bytes */
	bool over;
};

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t k = size * n;

	if (lg_buf_add(&b->b, data, k) != 0) {
		b->over = true;
		return 0;
	}
	return k;
}

int ingest_http_get(const char *url, const char *bearer, size_t max_bytes,
		    long timeout_ms, char **body, long *status,
		    struct lg_error *err)
{
	struct body b = {.over = false};
	struct curl_slist *h = NULL;
	char auth[1024];
	CURL *e = curl_easy_init();
	CURLcode rc;

	*body = NULL;
	lg_buf_init(&b.b, max_bytes);
	if (e == NULL) /* libcurl allocates through lg_xmalloc: not memory */
		return lg_error_set(err, LG_EIO, "libcurl would not start");
	if (bearer != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	if (h != NULL)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(e);
	if (rc == CURLE_OK)
		curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	curl_slist_free_all(h);
	curl_easy_cleanup(e);
	if (rc != CURLE_OK) {
		lg_buf_release(&b.b);
		return lg_error_set(err, b.over ? LG_ELIMIT : LG_EIO, "%s: %s",
				    url,
				    b.over ? "answer too large"
					   : curl_easy_strerror(rc));
	}
	*body = lg_buf_detach(&b.b, NULL);
	return 0;
}
