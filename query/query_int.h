/*
 * query internals shared between the files of query/. Not part of the
 * public API: tools/ includes only query/query.h.
 *
 * Who owns what: the server (struct query_server) owns the loop, the
 * ledger handle, the token table, the metrics, the verdict index, the
 * caches, the queue of verdicts waiting for the next group commit and every
 * connection. A connection owns its input buffers; a request borrows them
 * until its handler returns (a deferred verdict copies what it needs).
 */
#ifndef GPULEDGER_QUERY_INT_H
#define GPULEDGER_QUERY_INT_H

#include "query/query.h"

#include <http_parser.h>
#include <jansson.h>
#include <uv.h>

#include <stdarg.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------------- */
/* Used by query/ (and its tests) only. */

/* Asks the loop of query_server_run to stop; safe from any thread. */
void query__server_stop(query_server_t *qs);

/* Defaults of struct query_opts. */
#define QUERY_MAX_BODY_DEFAULT	   (1u << 20)
/* The /metrics page grows with tenants and classes, some 400 bytes per
 * tenant and class over its families: 64 MiB is some 150,000 of them,
 * far beyond a cluster, and still a scrape Prometheus takes. */
#define QUERY_MAX_METRICS_DEFAULT  ((size_t)64 << 20)
#define QUERY_MAX_URL_DEFAULT	   (8u << 10)
#define QUERY_MAX_HEADER_DEFAULT   (16u << 10)
#define QUERY_MAX_HEADERS_DEFAULT  64
#define QUERY_IDLE_MS_DEFAULT	   30000
#define QUERY_REQUEST_MS_DEFAULT   10000
#define QUERY_POLL_MS_DEFAULT	   50
#define QUERY_MAX_CONNS_DEFAULT	   4096
#define QUERY_HANDSHAKE_MS_DEFAULT 2000
#define QUERY_PROBE_CONNS_DEFAULT  64

/* A connection whose responses queue beyond HIGH bytes stops being read
 * until they drain below LOW: a client that pipelines without reading
 * cannot make the server buffer without bound. */
#define QUERY_WRITE_HIGH_BYTES (4u << 20)
#define QUERY_WRITE_LOW_BYTES  (1u << 20)
/* After an error answer, what the client still sends is read and dropped
 * for at most this long, so that the answer is not lost to a reset. */
#define QUERY_LINGER_MS 2000

/* jansson lookups that tolerate absent members and wrong types. */
static inline const char *qjstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static inline const char *qjstr_or(const json_t *o, const char *k,
				   const char *dflt)
{
	const char *s = qjstr(o, k);

	return s ? s : dflt;
}

uint64_t query__now_ns(void); /* CLOCK_MONOTONIC */

/* ---------------------------------------------------------------------- */
/* Authentication and roles (query/auth.c).                                */

enum role {
	ROLE_NONE = 0,
	ROLE_ADMIN,
	ROLE_ADMISSION,
	ROLE_AUDITOR,
	ROLE_PEER, /* a member forwarding verdicts (DESIGN 11) */
	ROLE_TENANT,
	ROLE_MAX
};
#define ROLE_BIT(r) (1u << (r))

#define AUTH_TOKEN_MAX	    256	 /* bytes of one token */
#define AUTH_TOKENS_MAX	    4096 /* lines of a token file */
#define AUTH_FILE_MAX_BYTES (4u << 20)

struct principal {
	enum role role;
	char ns[DNS1123_SUBDOMAIN_MAX + 1]; /* ROLE_TENANT: its namespace */
};

struct auth_entry {
	uint8_t token[AUTH_TOKEN_MAX]; /* zero-padded; cert: the CN */
	size_t len;
	bool cert; /* a `cert:<CN> ROLE` line: never matches a token */
	struct principal who;
};

struct auth {
	bool enabled; /* a token file was given */
	size_t n;
	struct auth_entry *e; /* owned */
};

const char *query__role_name(enum role r);
/* "admin", "admission", "auditor", "tenant:<ns>" (ns a tenant name). */
int query__role_parse(const char *s, size_t len, struct principal *p,
		      struct lg_error *err);
/* Parses a token file's text: `TOKEN ROLE` per line, blank lines and lines
 * starting with # ignored. a is filled (release with auth_release). */
int query__auth_parse(struct auth *a, const char *text, size_t len,
		      struct lg_error *err);
/* Reads and parses path, refusing a file that group or others may read or
 * write. */
int query__auth_load(struct auth *a, const char *path, struct lg_error *err);
void query__auth_release(struct auth *a);
/* The principal of an Authorization header value ("Bearer TOKEN"), or NULL
 * when it is missing, malformed or unknown. Every token is compared, in
 * time independent of where (or whether) a match is. Borrowed from a. */
const struct principal *query__auth_lookup(const struct auth *a,
					   const char *hdr, size_t len);
/* The principal of a verified client certificate whose subject CN is cn
 * (a `cert:<CN> ROLE` line), or NULL. Borrowed from a. */
const struct principal *query__auth_lookup_cert(const struct auth *a,
						const char *cn);
/* True when ns is root or lies in root's subtree (DESIGN 2.1, by name). */
bool query__ns_in_subtree(const char *root, const char *ns);
/* The replay tenant objects of all (a JSON array) that who may see: every
 * one for no principal (no token file) and the cluster-wide roles, those
 * of its subtree for tenant:<ns>. A new array of borrowed members; caller
 * decrefs. */
json_t *query__tenants_visible(const json_t *all, const struct principal *who);

/* ---------------------------------------------------------------------- */
/* Routes (query/routes.c).                                                */

enum route_id {
	R_HEALTHZ,
	R_READYZ,
	R_UI,
	R_UI_ASSET,
	R_METRICS,
	R_TENANTS,
	R_TENANT,
	R_REMAINING,
	R_ADMISSION,
	R_HOLDS,
	R_DECLARATIONS,
	R_PEER_VERDICTS,
	R_VERDICT,
	R_VERDICTS,
	R_STATE,
	R_EVENTS,
	R_EXPORT,
	R_RECONCILE,
	R_CLASSES,
	R_CAPACITY,
	R_CHECKPOINT,
	R_PROOF_INCLUSION,
	R_PROOF_CONSISTENCY,
	R_MAX,
	R_NONE = R_MAX /* no route matched (metrics label "none") */
};

/* How a tenant:<ns> principal may use a route. */
enum tenant_scope {
	TS_DENY = 0, /* never */
	TS_PARAM,    /* when the {ns} path parameter is in its subtree */
	TS_FILTER    /* always; the handler shows only its subtree */
};

struct query_server;
struct conn;

#define ROUTE_SEGS_MAX 5
#define ROUTE_PARAMS   2

/* A request handed to a handler. Strings are borrowed from the connection
 * until the handler returns. */
struct request {
	struct conn *c;
	enum route_id route;
	const char *param[ROUTE_PARAMS]; /* decoded path captures */
	const char *query;		 /* raw query string ("" if none) */
	size_t query_len;
	const char *body;
	size_t body_len;
	const struct principal *who; /* NULL when auth is off */
	uint64_t t0_ns;
	/* The Idempotency-Key header's value (not NUL-terminated), NULL
	 * when absent; bad: repeated or longer than its bound. */
	const char *idempotency_key;
	size_t idempotency_len;
	bool idempotency_bad;
};

typedef void route_fn(struct query_server *qs, struct request *rq);

struct route_row {
	const char *name;		      /* metrics label */
	unsigned method;		      /* enum http_method */
	const char *segs[ROUTE_SEGS_MAX + 1]; /* "*" captures; NULL ends */
	route_fn *fn;
	unsigned roles; /* ROLE_BITs allowed; 0 with public */
	enum tenant_scope tenant;
	bool public;	     /* no token needed (probes, the console's files) */
	const char *headers; /* extra header lines of every answer, or NULL */
};

extern const struct route_row query__routes[R_MAX];

/* Matches method and path (already split) against the table. Returns the
 * route, or R_NONE with *status 404 (no such path) or 405 (path known,
 * method not). params are filled for a match. */
enum route_id query__route_match(unsigned method, char *const *seg, size_t n,
				 const char **params, int *status);
/* The path and query of a request target ([off, off + len) of url; a query
 * absent has len 0): what http_parser_parse_url gives, without running it
 * for the origin form ("/path?query", no fragment) that every client
 * sends, whose characters the request parser has already checked (issue
 * 11: it was a tenth of serve's user time). -1 when malformed. */
int query__target_split(const char *url, size_t len, size_t *path_off,
			size_t *path_len, size_t *query_off, size_t *query_len);
/* Splits and percent-decodes a URL path into out (cap bytes); -1 when it is
 * malformed (no leading /, bad escape, NUL, too many segments). */
int query__path_split(const char *path, size_t len, char **seg, size_t *n,
		      char *out, size_t cap);
/* 0 when who may use route r with path parameter ns (may be NULL); else
 * the status to answer: 401 without a known token, 403 out of scope. */
int query__route_access(const struct route_row *r, bool auth_on,
			const struct principal *who, const char *ns);
/* The value of query parameter key (decoded into out, cap bytes; the
 * first of a repeated key). Returns its length, -1 when absent, -2 when
 * malformed or too long. */
long query__param(const char *q, size_t qlen, const char *key, char *out,
		  size_t cap);
/* The query's pairs one by one from *pos (0 at first): 1 with the raw
 * name [*name, *name + *nlen) and value [*val, *val + *vlen) (*val NULL
 * for a pair without '='), 0 at the end. Empty pairs are skipped. */
int query__param_next(const char *q, size_t qlen, size_t *pos,
		      const char **name, size_t *nlen, const char **val,
		      size_t *vlen);
/* A raw value decoded into out (cap bytes), as query__param returns it. */
long query__param_decode(const char *val, size_t len, char *out, size_t cap);

/* Typed query parameters (query/params.c), what every handler reads its
 * parameters with. Each returns QP_OK with *out set when the parameter is
 * there and good, QP_ABSENT when it is not there (*out untouched: the
 * caller's default), QP_BAD when it is there but malformed (*out
 * untouched). A repeated parameter: the first counts. */
enum {
	QP_BAD = -1,
	QP_ABSENT = 0,
	QP_OK = 1
};
/* A decimal integer (lg_parse_u64). */
int query__param_u64(const struct request *rq, const char *key, uint64_t *out);
/* 1 or true, 0 or false. */
int query__param_flag(const struct request *rq, const char *key, bool *out);
/* A time as every time parameter takes it (time_parse_user_ns: RFC 3339
 * or a date, 1970 to TIME_LAST_TEXT). */
int query__param_time(const struct request *rq, const char *key, int64_t *out);
/* Text that fits out (cap bytes with the NUL; may be empty). */
int query__param_text(const struct request *rq, const char *key, char *out,
		      size_t cap);
/* One of names (NULL-terminated): *out is its index. */
int query__param_enum(const struct request *rq, const char *key,
		      const char *const *names, int *out);

/* ---------------------------------------------------------------------- */
/* Answers (query/http.c). Each ends the request: exactly one per request. */

/* body is canonical JSON of v (v is stolen). */
void query__reply_json(struct query_server *qs, struct request *rq, int status,
		       json_t *v);
void query__reply_error(struct query_server *qs, struct request *rq, int status,
			const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* {"error": the message}, shown as printable ASCII (new reference). */
json_t *query__error_doc(const char *fmt, va_list ap)
	__attribute__((format(printf, 1, 0)));
/* body is taken (malloc'ed). */
void query__reply_raw(struct query_server *qs, struct request *rq, int status,
		      const char *content_type, char *body, size_t len);
/* reply_raw with more header lines (extra: each ends in CRLF, at most
 * QUERY_EXTRA_HEADER_MAX bytes in all; borrowed). */
#define QUERY_EXTRA_HEADER_MAX 512
void query__reply_raw_headers(struct query_server *qs, struct request *rq,
			      int status, const char *content_type, char *body,
			      size_t len, const char *extra);
/* body is borrowed (not freed): for cached answers. */
void query__reply_borrowed(struct query_server *qs, struct request *rq,
			   int status, const char *content_type,
			   const char *body, size_t len);
/* Called when a deferred connection closes before its answer was given
 * (with the arg given to reply_defer): the application drops what refers
 * to c, which is about to be freed. */
typedef void conn_gone_fn(struct conn *c, void *arg);
/* The handler keeps the request open: the connection stops reading until
 * conn_answer_deferred gives the answer. gone (may be NULL) is the close
 * hook of the application that will answer: called at most once, never
 * after the answer. */
void query__reply_defer(struct query_server *qs, struct request *rq,
			conn_gone_fn *gone, void *arg);
/* Answers a deferred request of c (c may already be closed: NULL) with
 * JSON text (taken; NULL answers 500). */
void query__conn_answer_deferred(struct query_server *qs, struct conn *c,
				 enum route_id route, uint64_t t0_ns,
				 int status, char *text);
const char *query__http_reason(int status);

/* Streamed answers of heavy reads (query/stream.c drives them). */
struct heavy;
/* Defers rq: h streams its answer. */
void query__conn_stream_begin(struct query_server *qs, struct request *rq,
			      struct heavy *h);
size_t query__conn_write_queue(const struct conn *c);
bool query__conn_usable(const struct conn *c);
void query__conn_stream_watch(struct conn *c);
/* The head of a 200 answer of unknown length (extra: header lines, each
 * ending in CRLF, or NULL), then its body in pieces. */
void query__conn_stream_head(struct conn *c, const char *ctype, enum route_id r,
			     const char *extra);
void query__conn_stream_data(struct conn *c, const char *p, size_t n);
/* Ends the stream: complete, the last chunk (with trailer lines, or NULL);
 * else the connection is cut. The connection then reads its next request.
 */
void query__conn_stream_end(struct query_server *qs, struct conn *c,
			    enum route_id r, uint64_t t0_ns, bool complete,
			    const char *trailer);
/* 503 with Retry-After: retry_s. */
void query__reply_busy(struct query_server *qs, struct request *rq,
		       unsigned retry_s, const char *msg);

/* The connection layer (query/http.c). */
void query__http_settings(http_parser_settings *s);
void query__conn_accept(struct query_server *qs, uv_stream_t *listener);
void query__conn_close_all(struct query_server *qs);

/* ---------------------------------------------------------------------- */
/* Connection budgets (query/budget.c; DESIGN 7, "No client can starve the
 * probes or the admission path"). Each listener has one: how many
 * connections it holds, how many of them are half-open (no TLS handshake
 * and first request head yet) and how many each peer address holds. The
 * peer table is open addressing sized at init for every connection the
 * budget can hold, so it never grows and never fills. The connection
 * layer (query/http.c) keeps the list of the connections it may shed, in
 * the order they came, and decides which to close.                       */

enum shed_reason {
	SHED_HALF_OPEN, /* over max_half_open */
	SHED_PEER,	/* over max_conns_per_peer */
	SHED_FULL,	/* over max_conns (probe_max_conns) */
	SHED_DEADLINE,	/* half-open past handshake_ms */
	SHED_MAX
};

/* A peer's address: IPv4 as v4-mapped IPv6; the port is not part of it. */
struct peer_key {
	uint8_t a[16];
};

struct peer_slot {
	struct peer_key k;
	unsigned n; /* connections; 0: the slot is free */
};

struct conn_budget {
	const char *listener; /* "api" or "probe": the metrics label */
	unsigned max, max_half_open, max_per_peer; /* set at init */
	/* Every connection may be shed, not only half-open ones (the probe
	 * listener: a probe is answered at once, so the oldest connection
	 * is the one that matters least). */
	bool shed_any;
	unsigned n, n_half_open;
	/* The connections that may be shed, oldest first (query/http.c). */
	struct conn *oldest, *newest;
	struct peer_slot *peers; /* mask + 1 slots, owned */
	size_t mask;
	uint64_t shed[SHED_MAX];    /* old connections closed, by reason */
	uint64_t refused[SHED_MAX]; /* new ones closed at once, by reason */
};

/* The metrics label of a reason ("max_half_open", ...). */
const char *query__shed_reason_name(enum shed_reason r);
void query__budget_init(struct conn_budget *b, const char *listener,
			unsigned max, unsigned max_half_open,
			unsigned max_per_peer, bool shed_any);
void query__budget_release(struct conn_budget *b);
/* The key of a socket address (AF_INET or AF_INET6; anything else is the
 * zero key, one peer). */
void query__peer_key(const struct sockaddr_storage *ss, struct peer_key *k);
/* Connections the peer holds. */
unsigned query__peer_count(const struct conn_budget *b,
			   const struct peer_key *k);
/* One more or one fewer connection of the peer; a peer that has none left
 * leaves the table. Adding beyond max connections in all is a programmer
 * error, as is removing one that is not there. */
void query__peer_add(struct conn_budget *b, const struct peer_key *k);
void query__peer_del(struct conn_budget *b, const struct peer_key *k);

/* ---------------------------------------------------------------------- */
/* TLS (query/tls.c): OpenSSL through memory BIOs; no I/O of its own.      */

struct tls;
struct tls_conn;

#define TLS_RELOAD_MS_DEFAULT 1000
#define TLS_CN_MAX	      256

/* Loads cert (a PEM chain) and key, and ca when not NULL (then client
 * certificates are required and verified). Caller closes with tls_close. */
int query__tls_open(struct tls **t, const char *cert, const char *key,
		    const char *ca, struct lg_error *err);
void query__tls_close(struct tls *t);
/* Reloads the files if they changed: 1 reloaded, 0 unchanged, -1 the new
 * files did not load (logged; the old certificate stays). */
int query__tls_reload(struct tls *t);
/* A server-side session on the current certificate; freed with
 * tls_conn_free (accepts NULL). */
struct tls_conn *query__tls_conn_new(struct tls *t);
void query__tls_conn_free(struct tls_conn *tc);
/* Bytes from the socket (copied). */
void query__tls_conn_input(struct tls_conn *tc, const char *p, size_t n);
/* 1 established, 0 needs more bytes, -1 failed (send the output, close). */
int query__tls_conn_handshake(struct tls_conn *tc);
/* Plaintext: > 0 bytes, 0 needs more bytes, -1 closed or failed. */
long query__tls_conn_read(struct tls_conn *tc, char *buf, size_t cap);
/* Encrypts n bytes into the output; -1 when the session has failed. */
int query__tls_conn_write(struct tls_conn *tc, const char *p, size_t n);
/* What must be sent now, NULL when nothing: borrowed until
 * tls_conn_output_done, which empties it (no other tls_conn call between). */
const char *query__tls_conn_output(struct tls_conn *tc, size_t *len);
void query__tls_conn_output_done(struct tls_conn *tc);
/* Queues a close_notify (when the session is up). */
void query__tls_conn_shutdown(struct tls_conn *tc);
/* The subject CN of the client's verified certificate; false when there
 * is none, or more than one (such a certificate gets no role). */
bool query__tls_conn_peer_cn(struct tls_conn *tc, char *cn, size_t cap);

struct tls_stats {
	uint64_t handshakes, handshake_errors; /* completed, failed */
	uint64_t reloads, reload_errors;       /* new pairs taken, refused */
	int64_t not_after_s; /* the certificate in use expires (Unix s) */
};
void query__tls_stats_get(const struct tls *t, struct tls_stats *st);

/* ---------------------------------------------------------------------- */
/* Metrics (query/metrics.c).                                              */

#define METRIC_LAT_BUCKETS 12

struct metrics {
	uint64_t requests[R_MAX + 1][16]; /* route x code slot */
	uint64_t lat[R_MAX + 1][METRIC_LAT_BUCKETS + 1];
	double lat_sum[R_MAX + 1];
	uint64_t lat_count[R_MAX + 1];
	uint64_t verdicts[VERDICT_KIND_MAX][16]; /* type x reason slot */
	uint64_t batches, batch_events, append_errors;
	uint64_t verdict_repeats; /* reviews answered from their record (rule 3) */
	uint64_t refreshes, refresh_errors, followed_events;
	uint64_t conns_accepted, conns_refused, conns_timed_out;
	uint64_t bad_requests;
	uint64_t heavy_started, heavy_refused;
};

void query__metrics_request(struct metrics *m, enum route_id r, int status,
			    uint64_t ns);
void query__metrics_verdict(struct metrics *m, enum verdict_kind type, const char *reason);
/* The Prometheus text exposition (format 0.0.4). Caller frees; NULL when
 * it would pass o.max_metrics_bytes. tenants is the replay tenant list of
 * the server's cache (borrowed for the call): the caller hands it in,
 * metrics does not reach into the handlers. */
char *query__metrics_render(struct query_server *qs, const json_t *tenants,
			    size_t *len);

/* ---------------------------------------------------------------------- */
/* Verdicts (query/verdict.c).                                             */

/* The number of verdicts and what following the log has seen; the id ->
 * seq index itself is the ledger's (ledger_verdict_seq). */
struct vindex {
	uint64_t n;	      /* verdicts in the log up to scanned */
	uint64_t scanned;     /* the log is indexed up to this seq */
	uint64_t content_seq; /* last event that changed the state's content
				 (not VERDICT, NOTE or TICK) */
};

/* A verdict waiting for the next group commit. */
struct fwd;
struct pending {
	struct conn *c;	   /* NULL once the client has gone */
	struct verdict_request vr; /* as judged and recorded; owned */
	enum route_id route;
	uint64_t t0_ns;
	/* A member's: the body as its client sent it (owned; NULL when not
	 * kept), what a door forwards to the sequencer (DESIGN 11). */
	char *body;
	size_t body_len;
	/* An item of a door's forward (answered into it, not to c), its
	 * slot there and its bound (CLOCK_MONOTONIC ms). */
	struct fwd *fwd;
	size_t slot;
	int64_t bound_ms;
};

struct pending_q {
	struct pending *p; /* owned */
	size_t n, cap;
	/* The array of the batch before, kept for the next one: growing a
	 * fresh array every batch went through malloc's large-chunk path. */
	struct pending *spare; /* owned */
	size_t spare_cap;
};

void query__vindex_release(struct vindex *v);
/* Starts from the ledger's verdict index, then indexes the tail up to the
 * handle's last seq: a start reads no history. */
int query__vindex_open(ledger_t *lg, struct vindex *v, struct lg_error *err);
/* Indexes the log from v->scanned + 1 up to `to`. */
int query__vindex_catch_up(ledger_t *lg, struct vindex *v, uint64_t to,
			   struct lg_error *err);
/* The handlers of POST /v1/admission and /v1/declarations and GET
 * /v1/verdicts/{id}; and POST /v1/peer/verdicts, a door's forward to the
 * sequencer (DESIGN 11; cluster/forward.c writes its body). */
route_fn query__handle_admission, query__handle_declaration,
	query__handle_verdict, query__handle_verdicts,
	query__handle_peer_verdicts;
/* Appends and answers every queued verdict (the group commit). */
void query__verdict_batch_run(struct query_server *qs);
void query__pending_q_release(struct pending_q *q);
/* A member's verdict path: whether a call with nothing queued is due
 * (rule 2's resolution of an unknown outcome), and starting one. */
void query__verdict_member_tick(struct query_server *qs);
/* A connection with a request in a member's group in flight closed. */
void query__verdict_forget_conn(struct query_server *qs, struct conn *c);
/* Requests are read, judged and recorded by model/vrequest.c (DESIGN
 * 3.5), which every caller that judges shares. */

/* ---------------------------------------------------------------------- */
/* Read handlers (query/handlers.c).                                       */

route_fn query__handle_healthz, query__handle_readyz, query__handle_metrics,
	query__handle_tenants, query__handle_tenant, query__handle_remaining,
	query__handle_state, query__handle_events, query__handle_export,
	query__handle_classes, query__handle_capacity, query__handle_holds;
/* GET /v1/reconcile (query/reconcile.c). */
route_fn query__handle_reconcile;

/* Transparency (query/proof.c). */
route_fn query__handle_checkpoint, query__handle_proof_inclusion,
	query__handle_proof_consistency;
/* Adds "proof": the inclusion proof of the verdict's seq to v. */
int query__verdict_proof(struct query_server *qs, json_t *v, uint64_t seq,
			 struct lg_error *err);
/* Signs a checkpoint when --sign-key is given, the tree grew and
 * --sign-every has passed since the last one. */
void query__sign_due(struct query_server *qs);

/* The replay tenant list and the children of each tenant, rebuilt when
 * the state's content changes (verdicts do not change it). */
struct tenant_cache {
	uint64_t content_seq; /* what it was built from; UINT64_MAX: none */
	uint64_t holds_gen;   /* and state_holds_gen then (DESIGN 3.7) */
	json_t *doc;	      /* state_to_json(st, NULL); owned */
	json_t *children;     /* {ns: [child, ...]}; owned */
};
void query__tenant_cache_release(struct tenant_cache *tc);

/* Answers of GET /v1/tenants/{ns}/remaining by namespace, valid for one
 * content_seq: the hot read of the admission backend is a table lookup
 * while nothing changes. Bounded: emptied when full. */
#define RCACHE_SLOTS 4096
struct rcache_entry {
	char *ns, *text; /* owned; ns NULL: empty slot */
	size_t len;
};
struct rcache {
	uint64_t content_seq;
	uint64_t holds_gen; /* state_holds_gen when built */
	size_t n;
	struct rcache_entry *slot; /* RCACHE_SLOTS; owned */
};
void query__rcache_release(struct rcache *rc);
/* The cache for the current state (borrowed until the state changes). */
const struct tenant_cache *query__tenant_cache_get(struct query_server *qs);

/* ---------------------------------------------------------------------- */
/* Heavy reads (query/stream.c): a thread of their own against a ledger
 * snapshot, the body streamed with backpressure. */

#define QUERY_MAX_HEAVY_DEFAULT 16
#define HEAVY_CHUNK_BYTES	(64u << 10)  /* the producer's buffer */
#define HEAVY_QUEUE_BYTES	(256u << 10) /* produced, not yet sent */
#define HEAVY_WRITE_HIGH_BYTES	(256u << 10) /* the socket's queue */

/* Turns to compute (query/stream.c): at most `free + taken` heavy reads
 * compute at once, whatever their number, so that with fewer cores than
 * reads the loop keeps one; a read takes a turn in arrival order (a FIFO
 * of waiters) and gives it back at every chunk it hands over and while it
 * waits for its client, so a stalled client holds none and every read
 * makes progress. A turn given back goes straight to the first waiter,
 * and only that thread is woken. */
struct heavy_turn_waiter {
	uv_cond_t cv;
	bool granted;			/* under the turns' mu */
	struct heavy_turn_waiter *next; /* the FIFO */
};
struct heavy_turns {
	uv_mutex_t mu;
	unsigned free; /* turns not taken */
	struct heavy_turn_waiter *head, *tail; /* waiting, in arrival order */
	uint64_t waiting; /* threads waiting for a turn (for /metrics) */
	_Atomic int loop_cpu; /* the core the loop last ran on, -1 unknown: the
				 loop writes it, the reads keep off it */
};
void query__heavy_turns_init(struct heavy_turns *t, unsigned n);
void query__heavy_turns_release(struct heavy_turns *t);
/* The loop notes the core it runs on (every iteration). */
void query__heavy_turns_note_loop(struct heavy_turns *t);

/* Runs on the thread; writes the body with heavy_emit, or fails. */
typedef void heavy_fn(struct heavy *h, void *arg);
/* Starts fn(h, arg) on a thread against a snapshot of the ledger (with
 * load_state, its state is loaded there first) and streams what it emits
 * as the answer to rq, of type ctype; arg is freed with arg_free (may be
 * NULL) on the loop when it is done. Beyond o.max_heavy in flight, or
 * without a thread, rq is answered 503 with Retry-After. */
void query__heavy_start(struct query_server *qs, struct request *rq,
			const char *ctype, bool load_state, heavy_fn *fn,
			void *arg, void (*arg_free)(void *));
/* The thread's side: the snapshot (borrowed for the call of fn); bytes of
 * the body (waits while the queue is full; LG_EIO once the client is gone:
 * stop); a failure (an error answer if nothing was sent yet, else the
 * connection is cut). */
ledger_t *query__heavy_ledger(struct heavy *h);
/* A header line (ending in CRLF, < QUERY_EXTRA_HEADER_MAX) learnt while
 * producing (an export's Warning, known at its end; a state's, known
 * before it): in the head when given before the first chunk was handed
 * over or when the body ended before its first chunk was sent, else a
 * trailer of the last chunk (HTTP/1.0: lost). The first call counts. */
void query__heavy_late_header(struct heavy *h, const char *line);
int query__heavy_emit(struct heavy *h, const char *p, size_t n);
void query__heavy_fail(struct heavy *h, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The loop's side: sends what can be sent (a write completed, a chunk
 * came); the connection is gone. */
void query__heavy_pump(struct heavy *h);
void query__heavy_conn_gone(struct heavy *h);
/* Bytes the heavy reads in flight hold for their clients: produced and
 * queued, and queued on their sockets (the kernel's buffers aside). */
size_t query__heavy_buffered_bytes(struct query_server *qs);
/* Heavy reads waiting for a turn to compute. */
unsigned query__heavy_waiting(struct query_server *qs);

/* ---------------------------------------------------------------------- */
/* The web console (query/ui.c, DESIGN 7): static files from query/ui/,
 * compiled in by the Makefile (tools/embed-ui.sh writes ui_assets.c). They
 * hold no data, so they need no token; the page reads the API with the
 * token its user gives it. */

struct ui_asset {
	const char *name; /* file name under query/ui/ */
	const unsigned char *data;
	size_t len;
};
/* Defined by the generated ui_assets.c, so already under their internal
 * names; the short names are aliases until the renames of ISSUE 15. */
extern const struct ui_asset query__ui_assets[];
extern const size_t query__ui_assets_n;

/* The header lines of every /ui answer: CSP (nothing but this origin),
 * no framing, no sniffing, no referrer, no caching. */
extern const char query__ui_headers[];

/* The asset named name, or NULL. Borrowed (static). */
const struct ui_asset *query__ui_asset_find(const char *name);
/* Its Content-Type by extension (text/plain when unknown). */
const char *query__ui_content_type(const char *name);
route_fn query__handle_ui, query__handle_ui_asset;

/* ---------------------------------------------------------------------- */
/* The server (query/server.c).                                            */

struct conn_list {
	struct conn *head;
	unsigned n;
};

/* The billing file of `serve --rates FILE` (query/billing.c): checked on
 * every follow tick and read again when its device, inode, size or
 * modification time changed (a ConfigMap update swaps a symlink); a file
 * that does not parse leaves the rates in force and is reported once. */
struct billing_file {
	const char *path; /* borrowed from the options; NULL: none */
	struct bill_rates rates;
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	bool failed; /* the last change did not load */
};

/* Loads the file at open (an error fails the start); release with
 * billing_release. */
int query__billing_open(struct billing_file *b, const char *path,
			struct lg_error *err);
/* Reloads when the file changed; returns true when new rates took force. */
bool query__billing_check(struct billing_file *b);
void query__billing_release(struct billing_file *b);

struct query_server {
	struct query_opts o;
	uv_loop_t loop;
	uv_tcp_t listener;
	uv_tcp_t probe_listener; /* with o.probe_listen */
	uv_timer_t follow;
	uv_check_t batch_check;
	uv_idle_t batch_idle; /* keeps the loop from sleeping while queued */
	uv_async_t stop_async;
	uv_signal_t sig_int, sig_term;
	uv_timer_t tls_timer; /* checks the TLS files for changes */
	struct tls *tls;      /* NULL: plain HTTP; owned */
	http_parser_settings settings;
	ledger_t *lg;
	int lock_fd;
	int port, probe_port;
	struct auth auth;
	struct metrics m;
	struct vindex vix;
	struct pending_q q;
	struct tenant_cache cache;
	struct rcache rcache;
	struct billing_file billing;
	struct conn_list conns;
	struct conn_budget api_budget, probe_budget;
	struct heavy *heavies; /* in flight; owned */
	unsigned heavy_n;
	struct heavy_turns turns; /* shared with the heavy reads' threads */
	uint64_t signed_size, signed_ns; /* the last signed checkpoint */
	bool ready;			 /* caught up with the log */
	/* The seq of the log's first NOTE Synced (ledger_synced_seq), 0 until
	 * the log holds a complete list; once set it stays. */
	uint64_t synced_seq;
	bool stopping;
	uint64_t caught_up_ns;	   /* last refresh that reached the end */
	int64_t caught_up_real_ns; /* the same, wall clock */
	char rbuf[64 << 10];	   /* read buffer shared by connections */
	/* A member's (o.member): its status at the last follow, and the
	 * header line GETs carry while etcd cannot be reached ("" else). */
	struct query_member_status member_st;
	bool member_st_read; /* member_st was read at least once */
	char stale_hdr[64];
	/* A member's verdict groups in flight on worker threads, at most
	 * query_member.inflight() of them (1 but on the sequencer, whose
	 * verdict path pipelines its txns: DESIGN 11), no two holding the
	 * same review uid or idempotency key (rule 3); and what their calls
	 * counted. */
	struct vjob *vjobs[QUERY_VJOBS_MAX];
	size_t n_vjobs, vjobs_peak;
	struct query_vstats vstats;
	/* After a group is answered, the next waits up to a short linger for
	 * as many requests as the group answered (its clients, coming back),
	 * so that one txn carries them all instead of the first alone. */
	uint64_t door_n; /* door keys made (query_member.door_id) */
	uv_timer_t vlinger;
	size_t vwant;	 /* requests that end the linger early */
	bool vlingering; /* the timer runs; no group starts meanwhile */
};

/* One review, one verdict (DESIGN 11 rule 3) on lg: 0 when r is no review
 * or its uid was never judged; 1 when it was, with *status and either
 * *again (the recorded answer, caller frees) or msg (cap bytes) saying why
 * not (409: another request under that uid; 503: the index cannot be
 * read). */
int query__verdict_repeat(ledger_t *lg, const struct verdict_request *r,
			 int *status, char **again, char *msg, size_t cap);

/* Follows the log once: ledger_refresh and index the new events. */
int query__server_follow(struct query_server *qs, struct lg_error *err);
/* Ready to judge (DESIGN 7): NULL, or why not (a static string). */
const char *query__unready_reason(const struct query_server *qs);
/* Hex of the chain head after seq (zeros at 0). */
int query__server_head_at(struct query_server *qs, uint64_t seq, char *hex,
			  struct lg_error *err);
void query__hex(const uint8_t *head, char *out);

#endif
