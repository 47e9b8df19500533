/*
 * The pod projector: one pass over a watch-event line whose object may be a
 * Pod, without building a tree, that copies into a small JSON text only the
 * members the pod mapping reads (model/mapping.c, model/podreq.c):
 *
 *   {"type", "time", "object": {"apiVersion", "kind",
 *     "metadata": {"name", "namespace", "uid"},
 *     "spec": {"nodeName", "overhead", "resources",
 *              "containers": [{"name", "resources", "restartPolicy"}],
 *              "initContainers": [...the same...]},
 *     "status": {"phase"}}}
 *
 * Values are copied verbatim (escapes and all), members in input order, so
 * jansson reads from the projection exactly what it would read from the
 * line: duplicate keys stay (the last wins in both), and a member of an
 * unexpected type is copied whole for the model to reject. A typical pod
 * shrinks from 3-4 KB to a few hundred bytes, which is what makes GPU pods
 * cheap to parse and plain pods cheap to recognise.
 *
 * The scan checks the JSON structure (brackets, commas, colons, string
 * ends) but not the bytes inside strings or the exact number grammar: a
 * line jansson would reject only for those reasons in members that are not
 * copied is read as if they were fine. A key with an escape where a member
 * is looked for, nesting deeper than PROJ_DEPTH_MAX, or anything malformed
 * makes the projection fail, and the caller parses the whole line.
 */
#include "ingest/ingest_int.h"

#include <string.h>

#define PROJ_DEPTH_MAX 64

enum pnode {
	P_SKIP,
	P_COPY,
	P_TOP,
	P_POD,
	P_META,
	P_SPEC,
	P_CONTS,
	P_CONT,
	P_STATUS
};

struct member {
	const char *key;
	size_t len;
	enum pnode child;
	int slot; /* index into struct pod_proj's spans, or -1 */
};

#define M(key, child, slot)                       \
	{                                         \
		key, sizeof(key) - 1, child, slot \
	}
static const struct member top_m[] = {
	M("type", P_COPY, PP_TYPE),
	M("time", P_COPY, PP_TIME),
	M("object", P_POD, -1),
};
static const struct member pod_m[] = {
	M("apiVersion", P_COPY, PP_API), M("kind", P_COPY, PP_KIND),
	M("metadata", P_META, -1),	 M("spec", P_SPEC, -1),
	M("status", P_STATUS, -1),
};
static const struct member meta_m[] = {
	M("name", P_COPY, PP_NAME),
	M("namespace", P_COPY, PP_NS),
	M("uid", P_COPY, -1),
};
static const struct member spec_m[] = {
	M("nodeName", P_COPY, -1),	  M("overhead", P_COPY, -1),
	M("resources", P_COPY, -1),	  M("containers", P_CONTS, -1),
	M("initContainers", P_CONTS, -1),
};
static const struct member cont_m[] = {
	M("name", P_COPY, -1),
	M("resources", P_COPY, -1),
	M("restartPolicy", P_COPY, -1),
};
static const struct member status_m[] = {
	M("phase", P_COPY, -1),
};
#undef M

#define MEMBERS(a)                          \
	{                                   \
		a, sizeof(a) / sizeof(a[0]) \
	}
/* The members projected of each kind of object. */
static const struct {
	const struct member *m;
	size_t n;
} node_members[] = {
	[P_TOP] = MEMBERS(top_m),   [P_POD] = MEMBERS(pod_m),
	[P_META] = MEMBERS(meta_m), [P_SPEC] = MEMBERS(spec_m),
	[P_CONT] = MEMBERS(cont_m), [P_STATUS] = MEMBERS(status_m),
};
#undef MEMBERS

enum expect {
	E_VALUE,
	E_VALUE_OR_END,
	E_KEY,
	E_KEY_OR_END,
	E_COLON,
	E_COMMA_OR_END
};

struct level {
	enum pnode node; /* P_SKIP: not projected */
	bool obj;
	bool any; /* something was written at this level (commas) */
};

struct proj {
	const char *p, *end;
	char *out;
	size_t n;
	int depth;
	struct level lv[PROJ_DEPTH_MAX];
	enum expect expect;
	/* The value that comes next: its node and span slot. */
	enum pnode next;
	int slot;
	/* A value being copied verbatim: from copy_from, until the level
	 * copy_depth is closed (containers) or at once (scalars). */
	const char *copy_from;
	int copy_depth;
	struct pod_proj *pp;
};

static bool json_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void put(struct proj *j, const char *s, size_t n)
{
	memcpy(j->out + j->n, s, n);
	j->n += n;
}

/* The closing quote of the string opening at p, or NULL. */
static const char *str_end(const char *p, const char *end)
{
	const char *q = p + 1;

	for (;;) {
		const char *c = memchr(q, '"', (size_t)(end - q));
		const char *b;

		if (c == NULL)
			return NULL;
		b = c;
		while (b > p + 1 && b[-1] == '\\')
			b--;
		if (((c - b) & 1) == 0)
			return c;
		q = c + 1;
	}
}

static const struct member *find_member(enum pnode parent, const char *k,
					size_t n)
{
	const struct member *m = node_members[parent].m;

	for (size_t i = 0; i < node_members[parent].n; i++)
		if (m[i].len == n && memcmp(m[i].key, k, n) == 0)
			return &m[i];
	return NULL;
}

/* Writes the separator and the key of a projected member or element. */
static void put_sep(struct proj *j, const char *key, size_t n)
{
	struct level *l = &j->lv[j->depth - 1];

	if (l->any)
		put(j, ",", 1);
	l->any = true;
	if (key != NULL) {
		put(j, "\"", 1);
		put(j, key, n);
		put(j, "\":", 2);
	}
}

/* The node a value takes, given what its container expects of it. */
static enum pnode value_node(struct proj *j)
{
	enum pnode up = j->depth > 0 ? j->lv[j->depth - 1].node : P_TOP;

	if (j->depth == 0)
		return P_TOP;
	if (up == P_CONTS)
		return P_CONT;
	if (up == P_SKIP || up == P_COPY)
		return up;
	return j->next;
}

static bool open_level(struct proj *j, bool obj)
{
	enum pnode node = value_node(j);
	bool structural = node != P_SKIP && node != P_COPY;

	if (j->depth == PROJ_DEPTH_MAX)
		return false;
	/* An element of an array of containers takes its own separator. */
	if (j->depth > 0 && j->lv[j->depth - 1].node == P_CONTS)
		put_sep(j, NULL, 0);
	/* A structural node of the wrong shape is copied whole. */
	if (structural && obj != (node != P_CONTS)) {
		node = P_COPY;
		structural = false;
	}
	if (node == P_COPY && j->copy_from == NULL) {
		j->copy_from = j->p;
		j->copy_depth = j->depth;
	}
	if (structural)
		put(j, obj ? "{" : "[", 1);
	j->lv[j->depth++] = (struct level){node, obj, false};
	j->next = P_SKIP;
	j->slot = -1;
	j->expect = obj ? E_KEY_OR_END : E_VALUE_OR_END;
	j->p++;
	return true;
}

static bool close_level(struct proj *j, char c)
{
	struct level *l = &j->lv[j->depth - 1];

	if ((c == '}') != l->obj)
		return false;
	j->p++;
	j->depth--;
	if (l->node != P_SKIP && l->node != P_COPY)
		put(j, l->obj ? "}" : "]", 1);
	if (j->copy_from != NULL && j->depth == j->copy_depth) {
		put(j, j->copy_from, (size_t)(j->p - j->copy_from));
		j->copy_from = NULL;
	}
	j->expect = E_COMMA_OR_END;
	return true;
}

/* A scalar or string value ends at j->p: copy it when it is projected. */
static void end_scalar(struct proj *j, const char *from)
{
	enum pnode node = value_node(j);

	if (j->copy_from == NULL && node != P_SKIP) {
		if (j->lv[j->depth - 1].node == P_CONTS)
			put_sep(j, NULL, 0);
		put(j, from, (size_t)(j->p - from));
	}
	j->next = P_SKIP;
	j->slot = -1;
	j->expect = E_COMMA_OR_END;
}

static bool key(struct proj *j)
{
	const char *q = str_end(j->p, j->end), *k = j->p + 1;
	struct level *l = &j->lv[j->depth - 1];
	const struct member *m;
	size_t n;

	if (q == NULL)
		return false;
	n = (size_t)(q - k);
	j->p = q + 1;
	j->expect = E_COLON;
	j->next = P_SKIP;
	j->slot = -1;
	if (l->node == P_SKIP || l->node == P_COPY)
		return true;
	/* An escaped key could spell a member we look for. */
	if (memchr(k, '\\', n) != NULL)
		return false;
	m = find_member(l->node, k, n);
	if (m == NULL)
		return true;
	j->next = m->child;
	j->slot = m->slot;
	put_sep(j, k, n);
	return true;
}

static bool string_value(struct proj *j)
{
	const char *from = j->p, *q = str_end(j->p, j->end);

	if (q == NULL)
		return false;
	j->p = q + 1;
	if (j->slot >= 0 && j->copy_from == NULL) {
		struct pp_span *s = &j->pp->span[j->slot];

		s->p = from + 1;
		s->n = (size_t)(q - from - 1);
		s->escaped = memchr(s->p, '\\', s->n) != NULL;
	}
	end_scalar(j, from);
	return true;
}

/* The characters of numbers and of true, false and null. */
static bool scalar_char(char c)
{
	switch (c) {
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
	case '+':
	case '-':
	case '.':
	case 'e':
	case 'E':
	case 't':
	case 'r':
	case 'u':
	case 'f':
	case 'a':
	case 'l':
	case 's':
	case 'n':
		return true;
	default:
		return false;
	}
}

static bool scalar_text(struct proj *j)
{
	const char *from = j->p;

	while (j->p < j->end && scalar_char(*j->p))
		j->p++;
	if (j->p == from)
		return false;
	end_scalar(j, from);
	return true;
}

static bool value(struct proj *j)
{
	char c = *j->p;

	if (c == '{' || c == '[')
		return open_level(j, c == '{');
	if (c == ']' && j->expect == E_VALUE_OR_END)
		return close_level(j, c);
	if (c == '"')
		return string_value(j);
	return scalar_text(j);
}

static bool step(struct proj *j)
{
	char c = *j->p;

	switch (j->expect) {
	case E_VALUE:
	case E_VALUE_OR_END:
		return value(j);
	case E_KEY_OR_END:
		if (c == '}')
			return close_level(j, c);
		/* fall through */
	case E_KEY:
		return c == '"' && key(j);
	case E_COLON:
		if (c != ':')
			return false;
		j->expect = E_VALUE;
		j->p++;
		return true;
	case E_COMMA_OR_END:
		if (c == ',') {
			j->expect = j->lv[j->depth - 1].obj ? E_KEY : E_VALUE;
			j->p++;
			return true;
		}
		return (c == '}' || c == ']') && close_level(j, c);
	}
	return false;
}

size_t ingest__pod_project(const char *line, size_t len, char *out,
			   struct pod_proj *pp)
{
	struct proj j = {.p = line, .end = line + len, .out = out, .pp = pp};

	memset(pp, 0, sizeof(*pp));
	while (j.p < j.end && json_space(*j.p))
		j.p++;
	if (j.p == j.end || *j.p != '{' || !open_level(&j, true))
		return 0;
	while (j.depth > 0) {
		while (j.p < j.end && json_space(*j.p))
			j.p++;
		if (j.p == j.end || !step(&j))
			return 0;
	}
	while (j.p < j.end && json_space(*j.p))
		j.p++;
	if (j.p != j.end)
		return 0;
	out[j.n] = '\0';
	return j.n;
}
