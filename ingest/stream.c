/*
 * Recorded streams (DESIGN 6): one NDJSON watch event per line,
 * {"type", "object", "time"?}, and the pod fast path (DESIGN 10).
 *
 * Most pods hold no GPU, and parsing a 3-4 KB pod into a jansson tree costs
 * more than everything else the engine does with it. A line that mentions
 * "Pod" is first projected (ingest/project.c) onto the few members the pod
 * mapping reads. When the projection names none of the table's raw
 * resource names and the pod is not cached, the pod holds nothing now and
 * held nothing before, so the line cannot change the ledger: only its time
 * is taken. Otherwise jansson parses the projection, a few hundred bytes,
 * instead of the line; the mapping reads the same members either way.
 *
 * A pod that names an extended resource (a '/' in its projection) is never
 * skipped, even when the table in force does not name it: a later table
 * may, and the engine must then map it again (DESIGN 2.3 "Order
 * independence"; ingest/holders.c keeps such pods, "dormant").
 *
 * A line is handled in two halves (ingest__prep_line, then
 * ingest__line_prepared): first what depends only on its bytes, the
 * projection, the skip's conditions on the line and jansson's parse, which
 * ingest/pipeline.c runs on other threads; then, on the engine's thread,
 * the skip's conditions on the engine (the table's names, the cache) and
 * everything else. ingest__line runs both at once.
 *
 * What this path does not see (documented limitations):
 *  - invalid quantities of a pod that names no GPU resource are not
 *    reported (it holds nothing either way), and neither are invalid UTF-8
 *    or bad escapes in members of a pod line that are not projected (the
 *    full parse would reject such a line as malformed).
 */
#define _GNU_SOURCE /* memmem */
#include "ingest/ingest_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool span_is(const struct pp_span *s, const char *lit)
{
	size_t n = strlen(lit);

	return s->p != NULL && !s->escaped && s->n == n &&
	       memcmp(s->p, lit, n) == 0;
}

static bool names_raw(const ingest_t *in, const char *text, size_t len)
{
	for (size_t i = 0; i < in->n_needles; i++)
		if (memmem(text, len, in->needles[i], in->needle_len[i]))
			return true;
	return false;
}

/* What of the skip depends only on the line: the projection can hide no
 * raw name (no escape, no '/'), the type is one that can be skipped, the
 * key fits and the time parses. *time_ns is the line's time (0 when none). */
static bool skip_shape(const struct pod_proj *pp, const char *proj, size_t n,
		       int64_t *time_ns)
{
	const struct pp_span *ns = &pp->span[PP_NS], *name = &pp->span[PP_NAME];
	const struct pp_span *t = &pp->span[PP_TIME];
	char tbuf[64];

	*time_ns = 0;
	/* A raw name could hide behind an escape ("nvidia.com\/gpu"). */
	if (memchr(proj, '\\', n) != NULL || memchr(proj, '/', n) != NULL)
		return false;
	if (!(span_is(&pp->span[PP_TYPE], "ADDED") ||
	      span_is(&pp->span[PP_TYPE], "MODIFIED") ||
	      span_is(&pp->span[PP_TYPE], "DELETED")))
		return false;
	if (ns->p == NULL || name->p == NULL || ns->n == 0 || name->n == 0 ||
	    ns->n + name->n + 1 >= 2 * DNS1123_SUBDOMAIN_MAX + 2)
		return false;
	if (t->p != NULL) {
		if (t->escaped || t->n >= sizeof(tbuf))
			return false;
		memcpy(tbuf, t->p, t->n);
		tbuf[t->n] = '\0';
		if (time_parse_ns(tbuf, time_ns) != 0)
			return false;
	}
	return true;
}

/* What of the skip depends on the engine: the table in force names none
 * of the projection's resources and the pod is not cached. */
static bool skip_state(ingest_t *in, const struct pod_proj *pp,
		       const char *proj, size_t n)
{
	const struct pp_span *ns = &pp->span[PP_NS], *name = &pp->span[PP_NAME];
	char key[2 * DNS1123_SUBDOMAIN_MAX + 2];

	if (names_raw(in, proj, n))
		return false;
	memcpy(key, ns->p, ns->n);
	key[ns->n] = '/';
	memcpy(key + ns->n + 1, name->p, name->n);
	return ingest__smap_getn(&in->objs[RES_POD], key,
				 ns->n + 1 + name->n) == NULL;
}

/* ---------------------------------------------------------------------- */
/* Lines */

/* The one table of watch event types (recorded lines and live watches). */
static const struct {
	const char *name;
	enum watch_type type;
} watch_types[] = {
	{"ADDED", WATCH_ADDED},
	{"MODIFIED", WATCH_MODIFIED},
	{"DELETED", WATCH_DELETED},
	{"BOOKMARK", WATCH_BOOKMARK},
};

bool ingest__watch_type_parse(const char *name, enum watch_type *type)
{
	for (size_t i = 0;
	     name != NULL && i < sizeof(watch_types) / sizeof(watch_types[0]);
	     i++)
		if (strcmp(watch_types[i].name, name) == 0) {
			*type = watch_types[i].type;
			return true;
		}
	return false;
}

static bool blank(const char *line, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (strchr(" \t\r\n", line[i]) == NULL || line[i] == '\0')
			return false;
	return true;
}

/* The watch event of a parsed line; a NOTE and false when it is not one. */
static bool line_event(ingest_t *in, const json_t *doc, enum watch_type *type,
		       int64_t *time_ns)
{
	const char *t = json_string_value(json_object_get(doc, "type"));
	const json_t *tv = json_object_get(doc, "time");

	*time_ns = 0;
	if (!ingest__watch_type_parse(t, type)) {
		ingest__emit_note(
			in, NULL, "MalformedLine", HK_NONE, NULL, NULL,
			"line: \"type\" is not ADDED, MODIFIED, DELETED or "
			"BOOKMARK");
		return false;
	}
	if (tv != NULL &&
	    (!json_is_string(tv) ||
	     time_parse_ns(json_string_value(tv), time_ns) != 0)) {
		ingest__emit_note(in, NULL, "MalformedLine", HK_NONE, NULL,
				  NULL,
				  "line: \"time\" is not an RFC 3339 time");
		return false;
	}
	if (*type != WATCH_BOOKMARK &&
	    !json_is_object(json_object_get(doc, "object"))) {
		ingest__emit_note(
			in, NULL, "MalformedLine", HK_NONE, NULL, NULL,
			"line: \"object\" is missing or not an object");
		return false;
	}
	return true;
}

/* A parsed line: its watch event, or a NOTE. */
static int handle_doc(ingest_t *in, json_t *doc, struct lg_error *err)
{
	enum watch_type type;
	int64_t t;

	if (!line_event(in, doc, &type, &t))
		return 0;
	return ingest__event(in, type, json_object_get(doc, "object"), t, err);
}

/* ---------------------------------------------------------------------- */
/* Preparing a line (any thread) and feeding it (the engine's thread) */

/* The parse of a line that cannot be skipped: its projection when that is
 * an object, else the whole line (which says what is wrong). */
static void prep_parse(struct ingest_prep *p)
{
	if (p->pod) {
		p->doc = json_loadb(p->proj, p->proj_n, 0, NULL);
		if (p->doc != NULL && json_is_object(p->doc))
			return;
		json_decref(p->doc);
	}
	p->doc = json_loadb(p->line, p->len, 0, &p->jerr);
}

void ingest__prep_scan(struct ingest_prep *p, const char *line, size_t len,
		       char *proj)
{
	memset(p, 0, sizeof(*p));
	p->line = line;
	p->len = len;
	p->proj = proj;
	if ((p->blank = blank(line, len)))
		return;
	if (memmem(line, len, "\"Pod\"", 5) != NULL) {
		p->proj_n = ingest__pod_project(line, len, proj, &p->pp);
		p->pod = p->proj_n != 0 && span_is(&p->pp.span[PP_API], "v1") &&
			 span_is(&p->pp.span[PP_KIND], "Pod");
	}
	/* With may_skip the engine decides, and parses only if it must. */
	p->may_skip =
		p->pod && skip_shape(&p->pp, proj, p->proj_n, &p->time_ns);
}

void ingest__prep_parse(struct ingest_prep *p)
{
	if (!p->blank && !p->may_skip)
		prep_parse(p);
}

void ingest__prep_line(struct ingest_prep *p, const char *line, size_t len,
		       char *proj)
{
	ingest__prep_scan(p, line, len, proj);
	ingest__prep_parse(p);
}

void ingest__prep_release(struct ingest_prep *p)
{
	json_decref(p->doc);
	p->doc = NULL;
}

int ingest__line_prepared(ingest_t *in, struct ingest_prep *p,
			  struct lg_error *err)
{
	int rc = ingest__input_begin(in, err);

	if (rc != 0)
		return rc;
	in->c.lines++;
	if (p->len > in->o.max_object_bytes) {
		ingest__emit_note(in, NULL, "Oversized", HK_NONE, NULL, NULL,
				  "line of %zu bytes skipped: more than %zu",
				  p->len, in->o.max_object_bytes);
		return 0;
	}
	if (p->blank)
		return 0;
	if (p->may_skip) {
		if (skip_state(in, &p->pp, p->proj, p->proj_n)) {
			ingest__advance_time(in, p->time_ns);
			in->c.events_in++;
			in->c.skipped_fast++;
			return 0;
		}
		p->may_skip = false;
		prep_parse(p);
	}
	if (p->doc == NULL || !json_is_object(p->doc)) {
		ingest__emit_note(in, NULL, "MalformedLine", HK_NONE, NULL,
				  NULL,
				  "line is not a JSON object: %s (column %d)",
				  p->doc ? "another JSON value" : p->jerr.text,
				  p->doc ? 0 : p->jerr.column);
		return 0;
	}
	return handle_doc(in, p->doc, err);
}

int ingest__line(ingest_t *in, const char *line, size_t len,
		 struct lg_error *err)
{
	struct ingest_prep p;
	int rc;

	if (len > in->o.max_object_bytes) {
		/* Noted unread. */
		memset(&p, 0, sizeof(p));
		p.len = len;
		return ingest__line_prepared(in, &p, err);
	}
	if (in->proj_cap < len + 1) {
		in->proj_cap = len + 1 > 4096 ? len + 1 : 4096;
		free(in->proj);
		in->proj = lg_xmalloc(in->proj_cap);
	}
	ingest__prep_line(&p, line, len, in->proj);
	rc = ingest__line_prepared(in, &p, err);
	ingest__prep_release(&p);
	return rc;
}
