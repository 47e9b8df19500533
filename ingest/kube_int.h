/*
 * ingest internals of the live watcher (ingest/kube*.c and their tests):
 * the pieces kube.c is built from (configuration parsing, the line framer,
 * backoff) and its metrics (ingest/kube_metrics.c). No CURL* here: kube.c
 * fills the view.
 */
#ifndef GPULEDGER_KUBE_INT_H
#define GPULEDGER_KUBE_INT_H

#include "ingest/ingest_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------- */
/* Used by ingest/kube*.c (and the tests) only. */

/* ---------------------------------------------------------------------- */
/* The line framer (ingest/kube_frame.c): pure and incremental. A watch     */
/* response is a stream of JSON objects each ended by '\n', in chunks that  */
/* may end anywhere.                                                        */

struct kube_frame {
	char *buf;	  /* caller's storage of cap bytes (borrowed) */
	size_t cap;	  /* the longest line kept: the max object size */
	size_t len;	  /* bytes of the current partial line in buf */
	bool skipping;	  /* the current line is too long: discard to its end */
	uint64_t skipped; /* bytes of the current too-long line so far */
};

enum kube_frame_result {
	KUBE_FRAME_MORE = 0,	 /* every byte consumed, no complete line */
	KUBE_FRAME_LINE = 1,	 /* a line (without "\n" or "\r\n") */
	KUBE_FRAME_OVERSIZED = 2 /* a line longer than cap was skipped */
};

struct kube_frame_out {
	const char *line; /* LINE: borrowed until the next call (it points
			     into buf or into the caller's data) */
	size_t len;	  /* LINE: its length; OVERSIZED: the skipped size */
};

void ingest__kube_frame_init(struct kube_frame *f, char *buf, size_t cap);
/* Consumes bytes of data[0..len) up to the end of at most one line and
 * stores how many in *used. Empty lines (also "\r\n") are skipped. A line
 * longer than cap is never buffered: its first cap bytes are dropped when
 * the bound is passed, the rest as it arrives, and OVERSIZED is reported
 * once at its end. Call again with data + *used until MORE. */
enum kube_frame_result ingest__kube_frame_push(struct kube_frame *f,
					       const char *data, size_t len,
					       size_t *used,
					       struct kube_frame_out *out);
/* At the end of the stream: a last line without "\n" (LINE), a too-long
 * unterminated one (OVERSIZED), or MORE when nothing is left. Resets f. */
enum kube_frame_result ingest__kube_frame_finish(struct kube_frame *f,
						 struct kube_frame_out *out);
/* Drops any partial line (a new response starts). */
void ingest__kube_frame_reset(struct kube_frame *f);

/* ---------------------------------------------------------------------- */
/* Backoff (ingest/kube_backoff.c): pure arithmetic; randomness comes in.   */

/* The delay before retry number attempt (0 = first retry): "equal jitter"
 * exponential backoff, half of min(cap, base * 2^attempt) plus a random
 * part of the other half chosen by rnd (any 32-bit value). Never more than
 * cap_ms, never less than min(base_ms, cap_ms) / 2. */
int64_t ingest__kube_backoff_ms(unsigned attempt, int64_t base_ms,
				int64_t cap_ms, uint32_t rnd);
/* A Retry-After header value: delta-seconds ("120") or an HTTP-date
 * ("Wed, 21 Oct 2015 07:28:00 GMT", also the RFC 850 and asctime forms)
 * read against now_s (Unix seconds). *delay_ms is clamped to [0, max_ms].
 * LG_EINVAL when the value is neither. */
int ingest__kube_retry_after_ms(const char *value, int64_t now_s,
				int64_t max_ms, int64_t *delay_ms);
/* The delay after a failed request: the larger of the backoff and a
 * Retry-After (retry_after_ms < 0: none) clamped to retry_max_ms. */
int64_t ingest__kube_retry_delay_ms(unsigned attempt, int64_t base_ms,
				    int64_t cap_ms, int64_t retry_after_ms,
				    int64_t retry_max_ms, uint32_t rnd);
/* Whether a watch ERROR event whose Status has this code waits with backoff
 * before the relist it calls for. 410 (Gone/Expired: the history moved on)
 * is routine and relists at once; anything else may repeat, so it waits
 * like a failed request. */
bool ingest__kube_error_waits(long long code);
/* The watch timeoutSeconds: min_s plus a random part of [0, min_s), like
 * client-go, so that the watches of many clients do not end together. */
unsigned ingest__kube_watch_timeout_s(unsigned min_s, uint32_t rnd);

/* Configuration. */
/* The same from a kubeconfig held in memory (tests); dir resolves relative
 * file names (NULL: the current directory). */
int ingest__kube_config_parse(struct kube_config *c, const char *yaml,
			      size_t len, const char *dir, const char *context,
			      struct lg_error *err);
/* In-cluster configuration with the service-account directory sa_dir (NULL:
 * the standard one) and the host/port from the environment. */
int ingest__kube_config_in_cluster(struct kube_config *c, const char *sa_dir,
				   struct lg_error *err);
/* The bearer token to send now: c->token, else the trimmed content of
 * c->token_file (read again on every call, so rotation is seen). *out is
 * NULL when there is none; caller frees it with free(). */
int ingest__kube_config_token(const struct kube_config *c, char **out,
			      struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* The watcher's /metrics (ingest/kube_metrics.c): a small HTTP server that
 * kube.c's loop polls alongside its transfers (one thread, no libuv), and
 * the rendering of what kube.c reports. */

struct kube_res_stats {
	uint64_t relists; /* lists started (at start, 410, ERROR, classes) */
	uint64_t errors;  /* failed requests (each retried after a backoff) */
	uint64_t events;  /* objects received (list items and watch events) */
	int64_t last_list_ns; /* CLOCK_REALTIME of the last complete list */
	int64_t last_seen_ns; /* ... of the last object, bookmark or list */
};

struct kube_res_view {
	const char *name;    /* the kind */
	const char *group;   /* the API group ("" core) */
	const char *version; /* the version in use, NULL: none yet */
	bool up;	     /* listed and watching, no failure pending */
	bool absent;	     /* the API is not served (skipped) */
	double backoff_s;    /* time until the next retry, 0: none */
	struct kube_res_stats st;
};

struct kube_metrics_view {
	struct kube_res_view res[RES_MAX];
	int64_t now_ns;	    /* CLOCK_REALTIME */
	int64_t horizon_ns; /* the engine's time (0: none yet) */
	bool healthy;	    /* every served resource up: TICKs are written */
	struct ingest_counters c;
	struct ingest_note_count notes[INGEST_NOTE_CODES];
	size_t n_notes;
};

/* The exposition (build, process and watch metrics); caller frees. NULL
 * when it would pass its bound (KUBE_METRICS_MAX_BYTES, 1 MiB). */
char *ingest__kube_metrics_render(const struct kube_metrics_view *v,
				  size_t *len);

typedef struct metrics_srv metrics_srv_t;
/* Listens on "HOST:PORT" (IPv4 or a name; port 0 picks one), non-blocking.
 * Errors: LG_EINVAL (malformed address), LG_EIO (bind/listen, with the
 * address and errno). */
int ingest__metrics_srv_open(metrics_srv_t **out, const char *hostport,
			     struct lg_error *err);
void ingest__metrics_srv_close(metrics_srv_t *m);
/* The bound port. */
unsigned ingest__metrics_srv_port(const metrics_srv_t *m);
/* The descriptors to poll (POLLIN or POLLOUT in events), at most cap. */
size_t ingest__metrics_srv_fds(const metrics_srv_t *m, int *fds, short *events,
			       size_t cap);
#define METRICS_SRV_FDS 9
/* Accepts, reads and answers what is ready, never blocking: GET /metrics
 * gets render(ctx) (which returns a malloc'd text, caller of the callback
 * frees), GET /healthz "ok", anything else 404/405. At most 8 connections;
 * one that sends no request within 5 s is closed. */
typedef char *metrics_render_fn(void *ctx, size_t *len);
void ingest__metrics_srv_serve(metrics_srv_t *m, metrics_render_fn *render,
			       void *ctx);

#endif
