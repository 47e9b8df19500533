/*
 * ingest internals of the live watcher's metrics (ingest/kube_metrics.c),
 * shared with ingest/kube.c only. No CURL* here: kube.c fills the view.
 */
#ifndef GPULEDGER_KUBE_INT_H
#define GPULEDGER_KUBE_INT_H

#include "ingest/ingest.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* kube's memory is model's lg_xmalloc family; aliases until
 * notes/rename.map is applied. */
#define xmalloc lg_xmalloc
#define xstrdup lg_xstrdup

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

/* The exposition (build, process and watch metrics); caller frees. */
char *kube_metrics_render(const struct kube_metrics_view *v, size_t *len);

typedef struct metrics_srv metrics_srv_t;
/* Listens on "HOST:PORT" (IPv4 or a name; port 0 picks one), non-blocking.
 * Errors: LG_EINVAL (malformed address), LG_EIO (bind/listen, with the
 * address and errno). */
int metrics_srv_open(metrics_srv_t **out, const char *hostport,
		     struct lg_error *err);
void metrics_srv_close(metrics_srv_t *m);
/* The bound port. */
unsigned metrics_srv_port(const metrics_srv_t *m);
/* The descriptors to poll (POLLIN or POLLOUT in events), at most cap. */
size_t metrics_srv_fds(const metrics_srv_t *m, int *fds, short *events,
		       size_t cap);
#define METRICS_SRV_FDS 9
/* Accepts, reads and answers what is ready, never blocking: GET /metrics
 * gets render(ctx) (which returns a malloc'd text, caller of the callback
 * frees), GET /healthz "ok", anything else 404/405. At most 8 connections;
 * one that sends no request within 5 s is closed. */
typedef char *metrics_render_fn(void *ctx, size_t *len);
void metrics_srv_serve(metrics_srv_t *m, metrics_render_fn *render, void *ctx);

#endif
