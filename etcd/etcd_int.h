/*
 * Internals of etcd/: rule 1's table (etcd/codec.c) and the attempt it
 * reads, the endpoint list, the JSON bodies and the parsing of answers,
 * the framing of a watch stream. All pure, so that the unit suite holds
 * every rule against them; etcd/etcd.c does the I/O.
 */
#ifndef GPULEDGER_ETCD_INT_H
#define GPULEDGER_ETCD_INT_H

#include "etcd/etcd.h"

#include <jansson.h>

/* "committed", "compare-failed", "indeterminate", "not-applied". */
const char *etcd__outcome_name(enum etcd_outcome o);

/* What one HTTP attempt came to, as etcd.c saw it (libcurl's result
 * translated once, at the edge). */
enum etcd_transport {
	ETCD_T_OK = 0,	   /* an HTTP answer was read in full */
	ETCD_T_NO_CONNECT, /* could not resolve, connect, or finish TLS */
	ETCD_T_TIMEOUT,	   /* the timeout struck */
	ETCD_T_BROKEN,	   /* reset, or closed before the answer ended */
	ETCD_T_TOO_BIG,	   /* the answer exceeded our bound */
	ETCD_T_OTHER	   /* anything else libcurl reports */
};

struct etcd_attempt {
	enum etcd_transport transport;
	bool sent;	   /* the whole body was handed to the connection */
	long http_status;  /* with ETCD_T_OK */
	const char *error; /* the gateway's "error" text, or NULL */
};

/* Rule 1 applied to one attempt: the outcome, the LG_E* code to return
 * (0 for an answer to read) and a phrase saying why. */
struct etcd_rule1 {
	enum etcd_outcome outcome;
	int code;
	const char *why;
};
struct etcd_rule1 etcd__classify(const struct etcd_attempt *a);

/* ---------------------------------------------------------------------- */
/* Endpoints */

/* Splits "URL[,URL...]" into at most ETCD_ENDPOINTS_MAX URLs of at most
 * ETCD_URL_MAX bytes, each http:// or https://host[:port] with no path
 * (a trailing '/' is dropped). urls[i] point into buf (cap bytes), which
 * holds copies. LG_EINVAL says what is wrong. */
int etcd__endpoints_parse(const char *list, char *buf, size_t cap,
			  const char **urls, size_t *n, struct lg_error *err);

/* ---------------------------------------------------------------------- */
/* Bodies and answers */

/* The JSON bodies (pure; caller frees with free()): NULL and LG_ELIMIT or
 * LG_EINVAL in err for a request that cannot be sent (too many ops, too
 * large). */
char *etcd__range_body(const struct etcd_range *r, struct lg_error *err);
char *etcd__txn_body(const struct etcd_txn *t, struct lg_error *err);
/* Parses answers (pure). LG_ECORRUPT for a body that is not one. */
int etcd__header_parse(const json_t *doc, struct etcd_header *h);
int etcd__range_parse(const json_t *doc, struct etcd_range_result *out,
		      struct lg_error *err);
int etcd__txn_parse(const json_t *doc, const struct etcd_txn *t,
		    struct etcd_txn_result *out, struct lg_error *err);
/* An int64 as the gateway writes one: a JSON string of its decimal. */
json_t *etcd__i64_json(int64_t v);
/* Base64 into a fresh NUL-terminated buffer (caller frees); NULL when s is
 * not base64. */
uint8_t *etcd__b64_decode(const char *s, size_t *len);

/* ---------------------------------------------------------------------- */
/* A watch stream's framing: JSON messages separated by newlines, in
 * chunks of any size. Incremental and bounded: the buffer (cap bytes) is
 * allocated once; fn gets each complete message (borrowed for the call);
 * a message longer than cap is LG_ELIMIT. fn returns non-zero to stop
 * (returned by feed). */
typedef int etcd_line_fn(void *ctx, const char *line, size_t len);
struct etcd_lines {
	char *buf;
	size_t len, cap;
};
void etcd__lines_init(struct etcd_lines *l, size_t cap);
void etcd__lines_release(struct etcd_lines *l);
int etcd__lines_feed(struct etcd_lines *l, const char *data, size_t n,
		     etcd_line_fn *fn, void *ctx);

/* A delete request (the shell's; cluster/ deletes inside txns), as the
 * requests of etcd/etcd.h. */
int etcd__delete(etcd_t *e, const struct etcd_range *r, int64_t *deleted,
		 enum etcd_outcome *outcome, struct lg_error *err);

#endif
