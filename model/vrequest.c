/*
 * Verdict requests and records (DESIGN 3.5): what is judged is what is
 * recorded.
 *
 * Every caller that judges (serve's POST /v1/admission and
 * /v1/declarations, `eval`, and a future cluster member) reads a request
 * here, and every caller that re-derives a record (`audit`, `?verify=1`)
 * reads the record here. A request is read the way its record will be read
 * back: as JCS reads JSON (json_loadb_doubles: every number an IEEE double,
 * duplicate keys refused), so the tree that is judged is the one the
 * record's text parses to, and re-deriving it cannot judge anything else.
 * A record is written by one writer (verdict_record_text: JCS, integers
 * beyond +-(2^53-1) as the doubles JCS gives them), so it always parses
 * back.
 *
 * Pure: JSON in, JSON out; the state is the caller's snapshot.
 */
#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Plain requests. */

static const char *const adm_members[] = {"namespace", "kind", "name",
					  "old",       "new",  NULL};
static const char *const decl_members[] = {"namespace", "old", "new", NULL};

/* The request members of body, and nothing else. */
static json_t *normalise(enum verdict_kind kind, const json_t *body)
{
	const char *const *m =
		kind == VERDICT_ADMISSION ? adm_members : decl_members;
	json_t *r;

	if (!json_is_object(body))
		return NULL;
	r = json_object();
	for (; *m != NULL; m++) {
		json_t *v = json_object_get(body, *m);

		if (v != NULL)
			json_object_set(r, *m, v);
	}
	return r;
}

/* ---------------------------------------------------------------------- */
/* AdmissionReview v1 (DESIGN 7, "As a Kubernetes admission webhook"). */

/* The spec of an object in a review: null when the object is absent. */
static json_t *spec_of(const json_t *obj)
{
	json_t *s = json_object_get(obj, "spec");

	if (obj == NULL || json_is_null(obj))
		return json_null();
	return s ? json_incref(s) : json_object();
}

static const char *review_name(const json_t *rq)
{
	const char *n = jstr(rq, "name");

	if (n == NULL || n[0] == '\0')
		n = jstr(json_object_get(json_object_get(rq, "object"),
					 "metadata"),
			 "name");
	if (n == NULL)
		n = jstr(json_object_get(json_object_get(rq, "oldObject"),
					 "metadata"),
			 "name");
	return n;
}

static bool review_is_tenant(const json_t *rq)
{
	const char *kind = jstr(json_object_get(rq, "kind"), "kind");

	return kind != NULL && strcmp(kind, "Tenant") == 0;
}

/* Who asked (DESIGN 3.5): recorded beside the judgement. Two uids, named
 * apart: "uid" is the AdmissionReview's (request.uid, one per review; the
 * name records have always had), "userUid" the user's own
 * (request.userInfo.uid, the same for every request of that user). A
 * user without one (absent, not a string, or "", which Go's omitempty
 * never sends) has no "userUid" member, so that records from before it
 * are what such a request still records. userInfo, uid included, is
 * bounded by review_bounds. */
static json_t *review_requester(const json_t *rq)
{
	const json_t *ui = json_object_get(rq, "userInfo"), *g;
	const char *user = jstr(ui, "username"), *uid = jstr(rq, "uid");
	const char *user_uid = jstr(ui, "uid");
	const char *op = jstr(rq, "operation");
	json_t *groups = json_array(), *who;
	size_t i;

	json_array_foreach (json_object_get(ui, "groups"), i, g)
		if (json_is_string(g))
			json_array_append(groups, (json_t *)g);
	who = json_pack("{s:s, s:o, s:s, s:s}", "username", user ? user : "",
			"groups", groups, "uid", uid ? uid : "", "operation",
			op ? op : "");
	if (user_uid != NULL && user_uid[0] != '\0')
		json_object_set_new(who, "userUid", json_string(user_uid));
	return who;
}

/* spec.resourceQuotas of a Tenant in a review: null when the object is
 * absent, {} when it declares none. */
static json_t *quotas_of(const json_t *obj)
{
	json_t *q =
		json_object_get(json_object_get(obj, "spec"), "resourceQuotas");

	if (obj == NULL || json_is_null(obj))
		return json_null();
	return json_is_object(q) ? json_incref(q) : json_object();
}

/* A Tenant review as a declaration request (DESIGN 2.2, 3.2). */
static int tenant_review(const json_t *rq, const char *op, json_t **req,
			 struct lg_error *err)
{
	const char *p = jstr(rq, "namespace"), *x = review_name(rq);
	char governed[DNS1123_SUBDOMAIN_MAX + 1];

	if (strcmp(op, "DELETE") == 0)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: a Tenant DELETE declares "
				    "nothing to judge");
	if (p == NULL || x == NULL ||
	    model__tenant_governed_ns(p, x, governed, sizeof(governed)) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: a Tenant needs "
				    "request.namespace and a name that give "
				    "the namespace it governs");
	*req = json_pack("{s:s, s:o, s:o}", "namespace", governed, "old",
			 strcmp(op, "CREATE") == 0
				 ? json_null()
				 : quotas_of(json_object_get(rq, "oldObject")),
			 "new", quotas_of(json_object_get(rq, "object")));
	if (json_is_null(json_object_get(*req, "new")))
		json_object_set_new(*req, "new", json_object());
	return 0;
}

/* A VMInstance or KubernetesNodes review as an admission request. */
static json_t *workload_review(const json_t *rq, const char *op,
			       const char *kind)
{
	const char *ns = jstr(rq, "namespace"), *name = review_name(rq);
	json_t *r = json_pack("{s:s}", "kind", kind);

	if (r == NULL)
		return NULL;
	if (ns != NULL)
		json_object_set_new(r, "namespace", json_string(ns));
	if (name != NULL)
		json_object_set_new(r, "name", json_string(name));
	json_object_set_new(
		r, "old",
		strcmp(op, "CREATE") == 0
			? json_null()
			: spec_of(json_object_get(rq, "oldObject")));
	json_object_set_new(r, "new",
			    strcmp(op, "DELETE") == 0
				    ? json_null()
				    : spec_of(json_object_get(rq, "object")));
	return r;
}

/* The bounds of what a review may carry into a record (DESIGN 7): a uid
 * and a userInfo larger than these would grow the log per request. */
static int review_bounds(const json_t *rq, struct lg_error *err)
{
	const json_t *dry = json_object_get(rq, "dryRun");
	const json_t *ui = json_object_get(rq, "userInfo");
	char *text;
	size_t n;

	if (strlen(jstr(rq, "uid")) > VERDICT_REVIEW_UID_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.uid is longer "
				    "than %d bytes",
				    VERDICT_REVIEW_UID_MAX);
	/* Go's *bool: true, false, or absent (null is absent). */
	if (dry != NULL && !json_is_boolean(dry) && !json_is_null(dry))
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.dryRun must be "
				    "a boolean");
	if (ui != NULL && !json_is_null(ui) && !json_is_object(ui))
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.userInfo must "
				    "be an object");
	if (ui == NULL || json_is_null(ui))
		return 0;
	text = jcs_text(ui, 0, VERDICT_REVIEW_USERINFO_MAX, NULL);
	n = text ? strlen(text) : VERDICT_REVIEW_USERINFO_MAX + 1;
	free(text);
	if (n > VERDICT_REVIEW_USERINFO_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.userInfo is "
				    "larger than %d bytes",
				    VERDICT_REVIEW_USERINFO_MAX);
	return 0;
}

/* What a review must be shaped like beyond its required members: a uid
 * that names it (rule 3 keys on it; "" would name every such review
 * alike), and objects that are objects. A review whose object or
 * oldObject is a string, a number or a list is malformed, not an empty
 * object (which would judge NoGrowth and be recorded); null or absent is
 * no object (a DELETE's object, a CREATE's oldObject). */
static int review_shape(const json_t *rq, struct lg_error *err)
{
	static const char *const objects[] = {"object", "oldObject"};

	if (jstr(rq, "uid")[0] == '\0')
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.uid must not "
				    "be empty");
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		const json_t *o = json_object_get(rq, objects[i]);

		if (o != NULL && !json_is_null(o) && !json_is_object(o))
			return lg_error_set(err, LG_EINVAL,
					    "AdmissionReview: request.%s must "
					    "be an object or null",
					    objects[i]);
	}
	return 0;
}

static int review_request(enum verdict_kind kind, const json_t *review,
			  struct verdict_request *out, struct lg_error *err)
{
	const json_t *rq = json_object_get(review, "request");
	const char *op, *k;
	int rc;

	if (!json_is_object(rq))
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: no request object");
	if (jstr(review, "apiVersion") == NULL ||
	    strcmp(jstr(review, "apiVersion"), "admission.k8s.io/v1") != 0)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: apiVersion must be "
				    "admission.k8s.io/v1");
	op = jstr(rq, "operation");
	k = jstr(json_object_get(rq, "kind"), "kind");
	if (jstr(rq, "uid") == NULL || op == NULL || k == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: request.uid, "
				    "request.operation and request.kind.kind "
				    "are required");
	if (review_is_tenant(rq) != (kind == VERDICT_DECLARATION))
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: a Tenant goes to "
				    "/v1/declarations, a VMInstance or "
				    "KubernetesNodes to /v1/admission");
	if (strcmp(op, "CREATE") != 0 && strcmp(op, "UPDATE") != 0 &&
	    strcmp(op, "DELETE") != 0)
		return lg_error_set(err, LG_EINVAL,
				    "AdmissionReview: operation %.32s is not "
				    "CREATE, UPDATE or DELETE",
				    op);
	if ((rc = review_shape(rq, err)) != 0 ||
	    (rc = review_bounds(rq, err)) != 0)
		return rc;
	if (kind == VERDICT_DECLARATION)
		rc = tenant_review(rq, op, &out->req, err);
	else if ((out->req = workload_review(rq, op, k)) == NULL)
		rc = lg_error_set(err, LG_EINVAL, "AdmissionReview: bad kind");
	if (rc != 0)
		return rc;
	out->review_uid = lg_xstrdup(jstr(rq, "uid"));
	out->requester = review_requester(rq);
	out->dry_run = json_is_true(json_object_get(rq, "dryRun"));
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Reading requests. */

int model__verdict_request_from_json(enum verdict_kind kind, const json_t *doc,
				     struct verdict_request *out,
				     struct lg_error *err)
{
	const char *k = jstr(doc, "kind");
	int rc = 0;

	LG_ASSERT(out != NULL);
	LG_ASSERT(kind == VERDICT_ADMISSION || kind == VERDICT_DECLARATION);
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	if (k != NULL && strcmp(k, "AdmissionReview") == 0)
		rc = review_request(kind, doc, out, err);
	else if ((out->req = normalise(kind, doc)) == NULL)
		rc = lg_error_set(err, LG_EINVAL,
				  "the request must be a JSON object");
	if (rc != 0)
		verdict_request_release(out);
	return rc;
}

int verdict_request_read(enum verdict_kind kind, const char *body, size_t len,
			 struct verdict_request *out, struct lg_error *err)
{
	json_error_t e;
	json_t *doc = json_loadb_doubles(body, len, 0, &e);
	int rc;

	memset(out, 0, sizeof(*out));
	if (doc == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "malformed JSON: %s (line %d)", e.text,
				    e.line);
	rc = model__verdict_request_from_json(kind, doc, out, err);
	json_decref(doc);
	return rc;
}

void verdict_request_release(struct verdict_request *r)
{
	if (r == NULL)
		return;
	json_decref(r->req);
	json_decref(r->requester);
	free(r->review_uid);
	free(r->idempotency_key);
	memset(r, 0, sizeof(*r));
}

bool verdict_idempotency_key_valid(const char *s, size_t len)
{
	if (s == NULL || len == 0 || len > VERDICT_IDEMPOTENCY_KEY_MAX ||
	    s[0] == ' ' || s[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

void verdict_request_key(const struct verdict_request *r,
			 struct verdict_key *k)
{
	const char *s = NULL;

	LG_ASSERT(r != NULL && k != NULL);
	k->kind = VERDICT_KEY_NONE;
	k->s[0] = '\0';
	if (r->dry_run)
		return;
	if (r->review_uid != NULL) {
		k->kind = VERDICT_KEY_REVIEW;
		s = r->review_uid;
	} else if (r->idempotency_key != NULL) {
		k->kind = VERDICT_KEY_IDEMPOTENCY;
		s = r->idempotency_key;
	}
	/* Both are bounded when read (review_bounds, the header's check). */
	if (s != NULL) {
		LG_ASSERT(strlen(s) < sizeof(k->s));
		memcpy(k->s, s, strlen(s) + 1);
	}
}

int verdict_judge(const state_t *st, const struct verdict_request *r,
		  struct verdict *out, struct lg_error *err)
{
	int rc;

	LG_ASSERT(st != NULL && r != NULL && r->req != NULL && out != NULL);
	rc = r->kind == VERDICT_ADMISSION
		     ? model__judge_admission(st, r->req, out, err)
		     : model__judge_declaration(st, r->req, out, err);
	/* Who asked is recorded beside the judgement, not part of it; so is
	 * a plain request's Idempotency-Key. */
	if (rc == 0 && r->requester != NULL)
		out->requester = json_incref(r->requester);
	if (rc == 0 && r->idempotency_key != NULL)
		snprintf(out->idempotency_key, sizeof(out->idempotency_key),
			 "%s", r->idempotency_key);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The one writer. */

static const char *const kind_names[VERDICT_KIND_MAX] = {
	[VERDICT_ADMISSION] = "admission",
	[VERDICT_DECLARATION] = "declaration",
};

/* "key": (a member name; the caller writes the comma). */
static void put_key(struct lg_buf *b, const char *key)
{
	lg_buf_add(b, "\"", 1);
	lg_buf_add(b, key, strlen(key));
	lg_buf_add(b, "\":", 2);
}

/* ,"key": (a member after the first). */
static void put_next(struct lg_buf *b, const char *key)
{
	lg_buf_add(b, ",", 1);
	put_key(b, key);
}

static int put_str(struct lg_buf *b, const char *s)
{
	return model__jcs_put_string(b, s, strlen(s));
}

static void put_u64(struct lg_buf *b, uint64_t u, unsigned flags)
{
	LG_ASSERT(u <= INT64_MAX);
	model__jcs_put_integer(b, (json_int_t)u, flags);
}

static void put_bool(struct lg_buf *b, bool v)
{
	lg_buf_add(b, v ? "true" : "false", v ? 4 : 5);
}

/* One check, members in JCS order. */
static int put_check(struct lg_buf *b, const struct verdict_check *c,
		     unsigned flags)
{
	int rc;

	lg_buf_add(b, "{", 1);
	put_key(b, "budget");
	if (c->has_budget)
		model__jcs_put_integer(b, c->budget, flags);
	else
		lg_buf_add(b, "null", 4);
	put_next(b, "growth");
	model__jcs_put_integer(b, c->growth, flags);
	if (c->has_held) {
		put_next(b, "held");
		model__jcs_put_integer(b, c->held, flags);
	}
	put_next(b, "key");
	rc = put_str(b, c->key);
	put_next(b, "ok");
	put_bool(b, c->ok);
	put_next(b, "remaining");
	if (c->has_budget)
		model__jcs_put_integer(b, c->remaining, flags);
	else
		lg_buf_add(b, "null", 4);
	put_next(b, "tenant");
	rc |= put_str(b, c->tenant);
	put_next(b, "used");
	model__jcs_put_integer(b, c->used, flags);
	lg_buf_add(b, "}", 1);
	return rc;
}

int verdict_write(struct lg_buf *b, const struct verdict *v, unsigned what,
		  unsigned int_flags, size_t max_bytes)
{
	unsigned f = int_flags & JCS_INT_DOUBLES;
	int rc = 0;

	LG_ASSERT(b != NULL && v != NULL && v->reason != NULL &&
		  v->message != NULL && v->request != NULL);
	LG_ASSERT(v->kind == VERDICT_ADMISSION ||
		  v->kind == VERDICT_DECLARATION);
	/* Members in JCS order (RFC 8785 3.2.3: all ASCII, so byte order). */
	lg_buf_add(b, "{", 1);
	put_key(b, "allowed");
	put_bool(b, v->allowed);
	/* DESIGN 11: a member's wall clock, only when set, so that a
	 * single-pod record stays byte for byte what it was. */
	if (v->answered_at[0] != '\0') {
		put_next(b, "answeredAt");
		rc |= put_str(b, v->answered_at);
	}
	if (what & VERDICT_W_BASIS) {
		put_next(b, "basisSeq");
		put_u64(b, v->basis_seq, f);
		put_next(b, "chainHead");
		rc |= put_str(b, v->chain_head);
	}
	put_next(b, "checks");
	lg_buf_add(b, "[", 1);
	for (size_t i = 0; i < v->n_checks; i++) {
		if (i > 0)
			lg_buf_add(b, ",", 1);
		rc |= put_check(b, &v->checks[i], f);
	}
	lg_buf_add(b, "]", 1);
	if (what & VERDICT_W_ID) {
		put_next(b, "id");
		put_u64(b, v->id, f);
	}
	/* Only when set: a record without a key stays what it was. */
	if (v->idempotency_key[0] != '\0') {
		put_next(b, "idempotencyKey");
		rc |= put_str(b, v->idempotency_key);
	}
	put_next(b, "message");
	rc |= put_str(b, v->message);
	put_next(b, "reason");
	rc |= put_str(b, v->reason);
	put_next(b, "request");
	rc |= model__jcs_write(b, v->request, f, max_bytes);
	if (v->requester != NULL) {
		put_next(b, "requester");
		rc |= model__jcs_write(b, v->requester, f, max_bytes);
	}
	if (what & VERDICT_W_SEQ) {
		put_next(b, "seq");
		put_u64(b, v->seq, f);
	}
	put_next(b, "type");
	rc |= put_str(b, kind_names[v->kind]);
	put_next(b, "warnings");
	lg_buf_add(b, "[", 1);
	for (size_t i = 0; i < v->n_warnings; i++) {
		if (i > 0)
			lg_buf_add(b, ",", 1);
		rc |= put_str(b, v->warnings[i]);
	}
	lg_buf_add(b, "]}", 2);
	return rc == 0 && b->len <= max_bytes && !lg_buf_failed(b) ? 0 : -1;
}

char *verdict_record_text(const struct verdict *v, size_t max_bytes,
			  struct lg_buf *scratch)
{
	struct lg_buf own, *b = model__jcs_begin(scratch, &own, max_bytes);

	return model__jcs_end(b, &own,
			      verdict_write(b, v, VERDICT_W_RECORD,
					    JCS_INT_DOUBLES, max_bytes) == 0);
}

json_t *model__verdict_to_json(const struct verdict *v, unsigned what)
{
	struct lg_buf b;
	json_t *j = NULL;

	lg_buf_init(&b, JCS_TEXT_MAX_BYTES);
	if (verdict_write(&b, v, what, JCS_INT_DOUBLES, SIZE_MAX) == 0)
		j = json_loadb_doubles(b.p, b.len, 0, NULL);
	lg_buf_release(&b);
	LG_ASSERT(j != NULL);
	return j;
}

static json_t *verdict_error_json(const char *msg)
{
	json_t *v = json_pack("{s:s}", "error", msg);

	/* A message quoting invalid UTF-8 cannot be packed. */
	return v ? v : json_pack("{s:s}", "error", "invalid request");
}

json_t *verdict_review_response(const char *uid, const struct verdict *v,
				bool recorded)
{
	json_t *resp, *warn = json_array(), *notes;
	char id[32], seq[32], msg[1024];

	snprintf(id, sizeof(id), "%llu", (unsigned long long)v->id);
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)v->seq);
	notes = recorded ? json_pack("{s:s, s:s}",
				     "gpuledger.cozystack.io/verdict-id", id,
				     "gpuledger.cozystack.io/verdict-seq", seq)
			 : json_pack("{s:s}", "gpuledger.cozystack.io/dry-run",
				     "not recorded");
	snprintf(msg, sizeof(msg), "%s: %s", v->reason, v->message);
	for (size_t i = 0; i < v->n_warnings; i++)
		json_array_append_new(warn, json_string(v->warnings[i]));
	resp = json_pack("{s:s, s:b, s:{s:i, s:s, s:s}, s:o, s:o}", "uid", uid,
			 "allowed", v->allowed, "status", "code",
			 v->allowed ? 200 : 403, "message", msg, "reason",
			 v->reason, "auditAnnotations", notes, "warnings",
			 warn);
	return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1",
			 "kind", "AdmissionReview", "response", resp);
}

static bool is_hex64(const char *s)
{
	size_t i;

	for (i = 0; s != NULL && s[i] != '\0'; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s != NULL && i == VERDICT_HEAD_HEX;
}

int verdict_record_parse(const char *record, size_t len,
			 struct verdict_ref *ref, struct lg_error *err)
{
	json_t *v = json_loadb_doubles(record, len, 0, NULL);
	const json_t *id = json_object_get(v, "id");
	const json_t *basis = json_object_get(v, "basisSeq");
	const char *head = jstr(v, "chainHead");
	int rc = 0;

	memset(ref, 0, sizeof(*ref));
	if (!json_is_object(v) || !json_is_integer(id) ||
	    json_integer_value(id) < 1 || !json_is_integer(basis) ||
	    json_integer_value(basis) < 0 || !is_hex64(head)) {
		rc = lg_error_set(err, LG_ECORRUPT,
				  "not a verdict record (id, basisSeq and "
				  "chainHead are required)");
	} else {
		ref->id = (uint64_t)json_integer_value(id);
		ref->basis_seq = (uint64_t)json_integer_value(basis);
		memcpy(ref->chain_head, head, sizeof(ref->chain_head));
	}
	json_decref(v);
	return rc;
}

/* Whether v, written as a record, is the stored record. Records written
 * before verdict_record_text wrote integers beyond +-(2^53-1) by their
 * exact digits; such a record still matches its re-derivation written the
 * old way. */
static bool same_record(const struct verdict *v, const char *text,
			const char *record, size_t len)
{
	struct lg_buf b;
	bool same;

	if (text != NULL && strlen(text) == len &&
	    memcmp(text, record, len) == 0)
		return true;
	lg_buf_init(&b, JCS_TEXT_MAX_BYTES);
	same = verdict_write(&b, v, VERDICT_W_RECORD, 0, SIZE_MAX) == 0 &&
	       b.len == len && memcmp(b.p, record, len) == 0;
	lg_buf_release(&b);
	return same;
}

int verdict_record_recompute(const state_t *basis, const char *head_hex,
			     const char *record, size_t len, char **recomputed,
			     bool *match, struct lg_error *err)
{
	json_t *v = json_loadb_doubles(record, len, 0, NULL);
	const char *type = jstr(v, "type"), *head = head_hex;
	struct verdict_ref ref;
	struct verdict_request r = {0};
	struct verdict out = {0};
	struct lg_error why = {0};
	int rc;

	*recomputed = NULL;
	*match = false;
	if (type == NULL || !json_is_object(json_object_get(v, "request")) ||
	    (strcmp(type, "admission") != 0 &&
	     strcmp(type, "declaration") != 0) ||
	    verdict_record_parse(record, len, &ref, NULL) != 0) {
		json_decref(v);
		return lg_error_set(err, LG_ECORRUPT,
				    "not a verdict record (type, request, id, "
				    "basisSeq and chainHead are required)");
	}
	/* The recorded request is judged as it was: canonical already. */
	r.kind = strcmp(type, "admission") == 0 ? VERDICT_ADMISSION
						: VERDICT_DECLARATION;
	r.req = json_incref(json_object_get(v, "request"));
	r.requester = json_incref(json_object_get(v, "requester"));
	rc = verdict_judge(basis, &r, &out, &why);
	verdict_request_release(&r);
	if (rc == 0) {
		const char *at = jstr(v, "answeredAt");
		const char *key = jstr(v, "idempotencyKey");

		out.id = ref.id;
		out.basis_seq = ref.basis_seq;
		/* Copied like the requester: when it was answered is part
		 * of the record, not of the judgement. */
		if (at != NULL)
			snprintf(out.answered_at, sizeof(out.answered_at),
				 "%s", at);
		if (key != NULL)
			snprintf(out.idempotency_key,
				 sizeof(out.idempotency_key), "%s", key);
		snprintf(out.chain_head, sizeof(out.chain_head), "%s", head);
		*recomputed = verdict_record_text(&out, SIZE_MAX, NULL);
		*match = same_record(&out, *recomputed, record, len);
	} else {
		/* A stored request that is now refused cannot match: the
		 * answer is the refusal, shown in place of the verdict. */
		json_t *e = verdict_error_json(why.msg);

		*recomputed = json_canonical(e);
		json_decref(e);
	}
	verdict_release(&out);
	json_decref(v);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* One review, one verdict (DESIGN 11 rule 3): a review's uid found in a
 * stored record is answered from that record.                             */

/* Whether the n bytes of s occur in the len bytes of p (memmem is not
 * POSIX). */
static bool contains(const char *p, size_t len, const char *s, size_t n)
{
	const char *end = p + len;

	while ((size_t)(end - p) >= n) {
		const char *q = memchr(p, s[0], (size_t)(end - p) - n + 1);

		if (q == NULL)
			return false;
		if (memcmp(q, s, n) == 0)
			return true;
		p = q + 1;
	}
	return false;
}

/* Sets *k to the key u (n bytes) of kind, when it is one: not empty, and
 * within its kind's bound. */
static void record_key_take(struct verdict_key *k, enum verdict_key_kind kind,
			    const char *u, size_t n)
{
	if (u != NULL && n > 0 && n < sizeof(k->s) && memchr(u, 0, n) == NULL &&
	    n <= (kind == VERDICT_KEY_REVIEW ? VERDICT_REVIEW_UID_MAX
					      : VERDICT_IDEMPOTENCY_KEY_MAX)) {
		memcpy(k->s, u, n);
		k->s[n] = '\0';
		k->kind = kind;
	}
}

/* The string member name of the canonical object text at p (n bytes), when
 * it is one without escapes: true with *u and *ulen set (*u NULL when there
 * is no such string). False when the text is not known canonical, or the
 * string has an escape: the caller parses. */
static bool own_form_string(const char *p, size_t n, const char *name,
			    const char **u, size_t *ulen)
{
	size_t at, vlen;

	*u = NULL;
	*ulen = 0;
	if (!model__jcs_own_form_member(p, n, name, &at, &vlen))
		return false;
	if (vlen < 2 || p[at] != '"')
		return true;
	if (memchr(p + at, '\\', vlen) != NULL)
		return false;
	*u = p + at + 1;
	*ulen = vlen - 2;
	return true;
}

/* verdict_record_key of a record known canonical, without a tree: false
 * when it is not known so. */
static bool record_key_own_form(const char *record, size_t len,
				struct verdict_key *k)
{
	const char *u = NULL;
	size_t at, vlen, n = 0;

	if (!model__jcs_own_form_member(record, len, "requester", &at, &vlen))
		return false;
	if (vlen > 0 && record[at] == '{' &&
	    !own_form_string(record + at, vlen, "uid", &u, &n))
		return false;
	if (u != NULL) {
		record_key_take(k, VERDICT_KEY_REVIEW, u, n);
		return true;
	}
	if (!own_form_string(record, len, "idempotencyKey", &u, &n))
		return false;
	record_key_take(k, VERDICT_KEY_IDEMPOTENCY, u, n);
	return true;
}

int verdict_record_key(const char *record, size_t len, struct verdict_key *k)
{
	static const char member[] = "\"requester\":{";
	static const char key_member[] = "\"idempotencyKey\":\"";
	json_t *v;
	const char *u;
	enum verdict_key_kind kind = VERDICT_KEY_REVIEW;

	LG_ASSERT(record != NULL && k != NULL);
	k->kind = VERDICT_KEY_NONE;
	k->s[0] = '\0';
	/* Every append of a verdict asks, most of them plain requests: a
	 * record without either member's text anywhere (a string cannot
	 * hold it unescaped) has no key, and is not parsed. */
	if (!contains(record, len, member, sizeof(member) - 1) &&
	    !contains(record, len, key_member, sizeof(key_member) - 1))
		return 0;
	/* Reviews have one: a record stored canonical is read in place. */
	if (record_key_own_form(record, len, k))
		return k->kind != VERDICT_KEY_NONE;
	v = json_loadb_doubles(record, len, 0, NULL);
	u = jstr(json_object_get(v, "requester"), "uid");
	if (u == NULL) {
		u = jstr(v, "idempotencyKey");
		kind = VERDICT_KEY_IDEMPOTENCY;
	}
	if (u != NULL)
		record_key_take(k, kind, u, strlen(u));
	json_decref(v);
	return k->kind != VERDICT_KEY_NONE;
}

json_t *verdict_record_review_again(const char *record, size_t len,
				    uint64_t seq,
				    const struct verdict_request *r,
				    struct lg_error *err)
{
	json_t *v = json_loadb_doubles(record, len, 0, NULL), *out = NULL;
	const char *type = jstr(v, "type"), *reason = jstr(v, "reason");
	const char *message = jstr(v, "message");
	const json_t *allowed = json_object_get(v, "allowed");
	const json_t *warns = json_object_get(v, "warnings");
	struct verdict_ref ref;
	/* Borrowed from v: only read by verdict_review_response. */
	struct verdict again = {0};
	size_t i;
	const json_t *w;

	LG_ASSERT(record != NULL && r != NULL &&
		  (r->review_uid != NULL || r->idempotency_key != NULL));
	if (verdict_record_parse(record, len, &ref, NULL) != 0 ||
	    type == NULL || reason == NULL || message == NULL ||
	    !json_is_boolean(allowed) ||
	    (warns != NULL && !json_is_array(warns))) {
		lg_error_set(err, LG_ECORRUPT,
			     "the record at seq %llu is not a verdict record",
			     (unsigned long long)seq);
		goto out;
	}
	if (strcmp(type, r->kind == VERDICT_ADMISSION ? "admission"
						       : "declaration") != 0 ||
	    !json_equal(json_object_get(v, "request"), r->req)) {
		lg_error_set(err, LG_EEXIST,
			     "%s \"%s\" was judged for another request "
			     "(verdict %llu at seq %llu)",
			     r->review_uid != NULL ? "review uid"
						   : "Idempotency-Key",
			     r->review_uid != NULL ? r->review_uid
						   : r->idempotency_key,
			     (unsigned long long)ref.id,
			     (unsigned long long)seq);
		goto out;
	}
	if (r->review_uid == NULL) {
		/* A plain request was answered with its record and seq. */
		json_object_set_new(v, "seq", json_integer((json_int_t)seq));
		out = json_incref(v);
		goto out;
	}
	again.allowed = json_is_true(allowed);
	again.reason = reason;
	again.message = (char *)message;
	again.id = ref.id;
	again.seq = seq;
	again.n_warnings = json_array_size(warns);
	again.warnings = lg_xcalloc(again.n_warnings + 1, sizeof(char *));
	json_array_foreach (warns, i, w)
		again.warnings[i] = (char *)(json_is_string(w)
						     ? json_string_value(w)
						     : "");
	out = verdict_review_response(r->review_uid, &again, true);
	free(again.warnings);
out:
	json_decref(v);
	return out;
}
