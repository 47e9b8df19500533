/*
 * One bounded HTTP GET (libcurl's easy interface), for clients outside the
 * watch loop: `gpuledger witness` following a server's checkpoints. CURL*
 * stays in this file.
 */
#include "ingest/ingest_int.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

size_t ingest__curl_to_buf(char *data, size_t size, size_t n, void *buf)
{
	size_t k = size * n;

	/* 0 makes libcurl stop with CURLE_WRITE_ERROR; buf remembers why. */
	return lg_buf_add(buf, data, k) == 0 ? k : 0;
}

int ingest_http_get(const char *url, const char *bearer, size_t max_bytes,
		    long timeout_ms, char **body, long *status,
		    struct lg_error *err)
{
	struct lg_buf b; /* at most max_bytes */
	struct curl_slist *h = NULL;
	char auth[1024];
	CURL *e = curl_easy_init();
	CURLcode rc;

	LG_ASSERT(url != NULL && body != NULL && status != NULL);
	*body = NULL;
	lg_buf_init(&b, max_bytes);
	if (e == NULL) /* libcurl allocates through lg_xmalloc: not memory */
		return lg_error_set(err, LG_EIO, "libcurl would not start");
	if (bearer != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", bearer);
		h = curl_slist_append(h, auth);
	}
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, ingest__curl_to_buf);
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
		bool over = lg_buf_failed(&b);

		lg_buf_release(&b);
		return lg_error_set(
			err, over ? LG_ELIMIT : LG_EIO, "%s: %s", url,
			over ? "answer too large" : curl_easy_strerror(rc));
	}
	*body = lg_buf_detach(&b, NULL);
	return 0;
}
