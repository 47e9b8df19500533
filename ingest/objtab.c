/*
 * The engine's persisted object table (DESIGN 4.2, 9; ledger "objects").
 *
 * A restart must find the engine that was killed, and the log alone cannot
 * give it: it holds what objects contributed, not what mapping them again
 * needs (their extracts), nor the objects that contribute nothing yet (a
 * dormant pod, a Namespace, a Tenant with a NOTE). So every object the
 * cache holds has a record in the ledger, written by ingest__flush in the
 * transaction of the events derived with it and of the positions they came
 * from: the table, the events and the positions never disagree. A start
 * reads the table and the state (latest checkpoint + tail, which the
 * ledger handle already holds), O(live objects), never the history.
 *
 * What is persisted and what is derived: a record holds the object (its
 * identity, the ledger's units and node for a holder, a VMInstance's cover
 * names, a Node's capacities and existence, a Tenant's governed namespace,
 * the last NOTE's hash, the extract `doc` as JSON text). The tenant nodes
 * (struct tnode) are not persisted: which exist, their parents, budgets
 * and raw keys are the state's (state_walk); why they exist (a Namespace,
 * a governing Tenant, holders) is counted from the loaded objects. The
 * claim cover index is rebuilt from the VMInstances' cover names. One
 * record, "~", holds the engine's own clock (its time may be ahead of the
 * last event: lines move it without events).
 *
 * Dirty tracking: every object a flush may have changed is named in
 * in->dirty (ingest__obj_add, ingest__obj_del, and every handler call on a
 * cached object touch it); the flush encodes each one and writes it when its
 * bytes differ from what was last written (a 64-bit hash per object), or
 * deletes it when the object is gone.
 *
 * A ledger from before the table (events but no LEDGER_OBJECTS_SEQ_KEY),
 * or one whose table is stale (a content event after the seq the table
 * was written at: another writer changed the state), gets a cache built
 * from the state: holders, nodes, tenant nodes and, as reasons, a
 * Namespace per existing tenant node and a Tenant per node with budgets.
 * Such a cache has no extracts (a class table change cannot map those
 * objects again until they are seen again) and no objects that hold
 * nothing (dormant pods, invalid objects' NOTE hashes): the first relist
 * or sighting of each restores it, as before the table existed.
 *
 * Record format, version OBJTAB_VERSION, little endian:
 *   u8 version, u8 resource, u8 kind, u8 flags (1 exists, 2 governed,
 *   4 doc), u64 note, str ns, str name, str uid, str node,
 *   [str governed], u16 n_units {str8 cls, i64 reserved, i64 allocated},
 *   u16 n_covers {str8 name}, u16 n_caps {str8 cls, i64 capacity,
 *   u8 serves}, [str doc]
 * where str is u32 length + bytes and str8 is u8 length + bytes (a class
 * or claim name: a DNS-1123 label). Every field is checked when read; a
 * bad record is LG_ECORRUPT naming its key. The doc's JSON text is
 * checked for syntax only (doc_text_ok) and parsed when first needed
 * (ingest__obj_doc), so that a start does not build a million extracts it will
 * not map; one that passes the check but that jansson refuses (a number out of
 * its range) reads then as no extract: the object is mapped again when next
 * seen, as a migrated one is.
 */
#include "ingest/ingest_int.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJTAB_VERSION	  1
#define OBJTAB_ENGINE_KEY "~"
#define ENGINE_REC_BYTES  (1 + 8 + 8)
/* Longest key kept whole; a longer one is cut and given a hash. */
#define KEY_WHOLE_MAX (LEDGER_OBJECT_KEY_MAX - 24)
/* More entries than any object can have (classes ever interned). */
#define OBJTAB_MAX_ITEMS 4096

enum {
	F_EXISTS = 1,
	F_GOVERNED = 2,
	F_DOC = 4
};

/* Whether r is a holder resource. */
static bool kind_res_any(unsigned r)
{
	for (int k = HK_NONE + 1; k < HK_MAX; k++)
		if (ingest__kind_res((enum holder_kind)k) == (enum resource)r)
			return true;
	return false;
}

/* The table key of dirty-set key d, into buf (LEDGER_OBJECT_KEY_MAX + 1). */
static void table_key(const char *d, char *buf)
{
	size_t n = strlen(d);

	if (n <= KEY_WHOLE_MAX) {
		memcpy(buf, d, n + 1);
		return;
	}
	memcpy(buf, d, KEY_WHOLE_MAX - 17);
	snprintf(buf + KEY_WHOLE_MAX - 17, 18, "#%016llx",
		 (unsigned long long)ingest__hash(d, n));
}

/* ---------------------------------------------------------------------- */
/* Encoding */

/* Records are built in an lg_buf of at most LEDGER_OBJECT_MAX_BYTES, what
 * the ledger stores; the adds are unchecked (a refusal sticks) and encode
 * tests once. */
static void put(struct lg_buf *w, const void *p, size_t n)
{
	lg_buf_add(w, p, n);
}

static void put_u8(struct lg_buf *w, unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(w, &b, 1);
}

static void put_u64(struct lg_buf *w, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(w, b, 8);
}

static void put_u16(struct lg_buf *w, size_t v)
{
	put_u8(w, v & 0xff);
	put_u8(w, (v >> 8) & 0xff);
}

static void put_str(struct lg_buf *w, const char *s, size_t n)
{
	uint8_t b[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)(n >> 16),
			(uint8_t)(n >> 24)};

	put(w, b, 4);
	put(w, s, n);
}

static void put_s(struct lg_buf *w, const char *s)
{
	put_str(w, s, strlen(s));
}

static void put_s8(struct lg_buf *w, const char *s)
{
	size_t n = strlen(s);

	put_u8(w, n);
	put(w, s, n);
}

/* 0, or LG_ELIMIT when the record would pass w's bound. */
static int encode(struct lg_buf *w, enum resource r, const struct obj *o)
{
	char *doc = o->doc_text ? o->doc_text
		    : o->doc	? json_dumps(o->doc, JSON_COMPACT)
				: NULL;
	unsigned flags = (o->exists ? F_EXISTS : 0) |
			 (o->governed ? F_GOVERNED : 0) | (doc ? F_DOC : 0);

	lg_buf_reset(w);
	put_u8(w, OBJTAB_VERSION);
	put_u8(w, (unsigned)r);
	put_u8(w, (unsigned)o->kind);
	put_u8(w, flags);
	put_u64(w, o->note);
	put_s(w, o->ns);
	put_s(w, o->name);
	put_s(w, o->uid);
	put_s(w, o->node);
	if (o->governed)
		put_s(w, o->governed);
	put_u16(w, o->n_units);
	for (size_t i = 0; i < o->n_units; i++) {
		put_s8(w, o->units[i].cls);
		put_u64(w, (uint64_t)o->units[i].reserved);
		put_u64(w, (uint64_t)o->units[i].allocated);
	}
	put_u16(w, o->n_covers);
	for (size_t i = 0; i < o->n_covers; i++)
		put_s8(w, o->covers[i]);
	put_u16(w, o->n_caps);
	for (size_t i = 0; i < o->n_caps; i++) {
		put_s8(w, o->caps[i].cls);
		put_u64(w, (uint64_t)o->caps[i].capacity);
		put_u8(w, o->caps[i].serves);
	}
	if (doc)
		put_s(w, doc);
	if (doc != o->doc_text)
		free(doc);
	return lg_buf_failed(w) ? LG_ELIMIT : 0;
}

/* ---------------------------------------------------------------------- */
/* Decoding: every length and value checked; nothing is trusted. */

struct rbuf {
	const uint8_t *p;
	size_t n, at;
	const char *why; /* the first problem, NULL while sound */
};

static bool need(struct rbuf *b, size_t n, const char *what)
{
	if (b->why == NULL && b->n - b->at < n)
		b->why = what;
	return b->why == NULL;
}

static uint64_t get_u(struct rbuf *b, size_t n, const char *what)
{
	uint64_t v = 0;

	if (!need(b, n, what))
		return 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)b->p[b->at + i] << (8 * i);
	b->at += n;
	return v;
}

/* A string of len bytes without NUL, copied into a new allocation. */
static char *get_bytes(struct rbuf *b, size_t len, const char *what)
{
	char *s;

	if (!need(b, len, what))
		return NULL;
	if (memchr(b->p + b->at, '\0', len) != NULL) {
		b->why = what;
		return NULL;
	}
	s = lg_xmalloc(len + 1);
	memcpy(s, b->p + b->at, len);
	s[len] = '\0';
	b->at += len;
	return s;
}

static char *get_s(struct rbuf *b, const char *what)
{
	size_t len = (size_t)get_u(b, 4, what);

	return b->why ? NULL : get_bytes(b, len, what);
}

/* The same, borrowed: the bytes in the record and their length, checked
 * for a NUL (a start decodes a million records: each malloc counts). */
static const char *get_view(struct rbuf *b, size_t *len, const char *what)
{
	const char *s;

	*len = (size_t)get_u(b, 4, what);
	if (b->why || !need(b, *len, what))
		return NULL;
	s = (const char *)b->p + b->at;
	if (memchr(s, '\0', *len) != NULL) {
		b->why = what;
		return NULL;
	}
	b->at += *len;
	return s;
}

/* A DNS-1123 label (a class or claim name) into out, or a class name ""
 * when empty_ok. */
static void get_label(struct rbuf *b, char *out, bool empty_ok,
		      const char *what)
{
	size_t len = (size_t)get_u(b, 1, what);
	const char *s = b->why || !need(b, len, what)
				? NULL
				: (const char *)b->p + b->at;

	/* A label has no NUL: dns1123_label refuses one. */
	if (s != NULL && len <= DNS1123_LABEL_MAX &&
	    ((empty_ok && len == 0) || dns1123_label(s, len))) {
		memcpy(out, s, len);
		out[len] = '\0';
		b->at += len;
	} else if (b->why == NULL) {
		b->why = what;
	}
}

static int64_t get_units(struct rbuf *b, const char *what)
{
	int64_t v = (int64_t)get_u(b, 8, what);

	if (b->why == NULL && v < 0)
		b->why = what;
	return v;
}

static size_t get_count(struct rbuf *b, const char *what)
{
	size_t n = (size_t)get_u(b, 2, what);

	if (b->why == NULL && n > OBJTAB_MAX_ITEMS)
		b->why = what;
	return b->why ? 0 : n;
}

static void decode_lists(struct rbuf *b, struct obj *o)
{
	o->n_units = get_count(b, "unit count");
	o->units =
		o->n_units ? lg_xcalloc(o->n_units, sizeof(*o->units)) : NULL;
	for (size_t i = 0; i < o->n_units && !b->why; i++) {
		get_label(b, o->units[i].cls, false, "unit class");
		o->units[i].reserved = get_units(b, "reserved units");
		o->units[i].allocated = get_units(b, "allocated units");
		if (!b->why && i > 0 &&
		    strcmp(o->units[i - 1].cls, o->units[i].cls) >= 0)
			b->why = "unit classes out of order";
	}
	o->n_covers = get_count(b, "cover count");
	o->covers = o->n_covers ? lg_xcalloc(o->n_covers, sizeof(*o->covers))
				: NULL;
	for (size_t i = 0; i < o->n_covers && !b->why; i++)
		get_label(b, o->covers[i], false, "cover name");
	o->n_caps = get_count(b, "capacity count");
	o->caps = o->n_caps ? lg_xcalloc(o->n_caps, sizeof(*o->caps)) : NULL;
	for (size_t i = 0; i < o->n_caps && !b->why; i++) {
		unsigned sv;

		get_label(b, o->caps[i].cls, false, "capacity class");
		o->caps[i].capacity = get_units(b, "capacity");
		sv = (unsigned)get_u(b, 1, "serving");
		if (!b->why && sv > 1)
			b->why = "serving";
		o->caps[i].serves = sv == 1;
	}
}

/* A syntax check of a doc's JSON text without building it (a start reads
 * many and maps few): RFC 8259 values, strings without control bytes and
 * with well-formed escapes and UTF-8 sequences, nesting bounded. What
 * jansson would still refuse (a number out of range, an escaped NUL)
 * reads as no extract when the doc is first needed (ingest__obj_doc). */
#define DOC_DEPTH_MAX 256

struct jscan {
	const unsigned char *p, *end;
};

static void jws(struct jscan *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool jlit(struct jscan *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return false;
	j->p += n;
	return true;
}

static bool jdigits(struct jscan *j)
{
	const unsigned char *at = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > at;
}

static bool jnumber(struct jscan *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (!jdigits(j))
		return false;
	if (j->p < j->end && *j->p == '.' && (j->p++, !jdigits(j)))
		return false;
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		return jdigits(j);
	}
	return true;
}

static bool jstring(struct jscan *j)
{
	if (j->p >= j->end || *j->p++ != '"')
		return false;
	while (j->p < j->end) {
		unsigned c = *j->p++, k;

		if (c == '"')
			return true;
		if (c < 0x20)
			return false;
		if (c == '\\') {
			if (j->p >= j->end)
				return false;
			c = *j->p++;
			if (c == 'u') {
				for (k = 0; k < 4; k++, j->p++)
					if (j->p >= j->end || !isxdigit(*j->p))
						return false;
			} else if (strchr("\"\\/bfnrt", (int)c) == NULL ||
				   c == 0) {
				return false;
			}
			continue;
		}
		k = c < 0x80		    ? 0
		    : c >= 0xc2 && c < 0xe0 ? 1
		    : c >= 0xe0 && c < 0xf0 ? 2
		    : c >= 0xf0 && c < 0xf5 ? 3
					    : 4;
		if (k == 4 || (size_t)(j->end - j->p) < k)
			return false;
		for (; k > 0; k--)
			if ((*j->p++ & 0xc0) != 0x80)
				return false;
	}
	return false;
}

static bool jvalue(struct jscan *j, unsigned depth);

/* An object's members or an array's elements, after the opening byte. */
static bool jitems(struct jscan *j, unsigned depth, bool object)
{
	jws(j);
	if (j->p < j->end && *j->p == (object ? '}' : ']'))
		return j->p++, true;
	for (;;) {
		jws(j);
		if (object) {
			if (!jstring(j))
				return false;
			jws(j);
			if (j->p >= j->end || *j->p++ != ':')
				return false;
		}
		if (!jvalue(j, depth + 1))
			return false;
		jws(j);
		if (j->p >= j->end)
			return false;
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		return *j->p++ == (object ? '}' : ']');
	}
}

static bool jvalue(struct jscan *j, unsigned depth)
{
	jws(j);
	if (j->p >= j->end || depth > DOC_DEPTH_MAX)
		return false;
	switch (*j->p) {
	case '{':
		j->p++;
		return jitems(j, depth, true);
	case '[':
		j->p++;
		return jitems(j, depth, false);
	case '"':
		return jstring(j);
	case 't':
		return jlit(j, "true");
	case 'f':
		return jlit(j, "false");
	case 'n':
		return jlit(j, "null");
	default:
		return jnumber(j);
	}
}

static bool doc_text_ok(const char *s)
{
	struct jscan j = {(const unsigned char *)s,
			  (const unsigned char *)s + strlen(s)};

	jws(&j);
	if (j.p >= j.end || *j.p != '{' || !jvalue(&j, 0))
		return false;
	jws(&j);
	return j.p == j.end;
}

/* The object of record (key, val) into *out (a new object not yet in any
 * map), or the reason it is not one. */
/* check_doc false leaves the doc's syntax to the caller (doc_text_ok). */
static const char *decode(const char *key, size_t klen, const uint8_t *val,
			  size_t vlen, bool check_doc, enum resource *rp,
			  struct obj **out)
{
	struct rbuf b = {.p = val, .n = vlen};
	struct obj *o = lg_xcalloc(1, sizeof(*o));
	unsigned version, r, kind, flags;
	char tk[LEDGER_OBJECT_KEY_MAX + 1];
	char *d = NULL, *doc = NULL;
	const char *ns, *name;
	size_t ns_len, name_len;

	*out = NULL;
	version = (unsigned)get_u(&b, 1, "version");
	if (!b.why && version != OBJTAB_VERSION)
		b.why = "unknown format version";
	r = (unsigned)get_u(&b, 1, "resource");
	kind = (unsigned)get_u(&b, 1, "kind");
	flags = (unsigned)get_u(&b, 1, "flags");
	if (!b.why && (r >= RES_MAX || kind >= HK_MAX || flags > 7))
		b.why = "resource, kind or flags";
	if (!b.why &&
	    (kind == HK_NONE ? kind_res_any(r)
			     : ingest__kind_res((enum holder_kind)kind) != r))
		b.why = "kind is not the resource's";
	o->kind = (enum holder_kind)kind;
	o->note = get_u(&b, 8, "note");
	ns = get_view(&b, &ns_len, "namespace");
	name = get_view(&b, &name_len, "name");
	if (ns != NULL && name != NULL)
		ingest__obj_set_names_n(o, ns, ns_len, name, name_len);
	o->uid = get_s(&b, "uid");
	o->node = get_s(&b, "node");
	if (flags & F_GOVERNED)
		o->governed = get_s(&b, "governed namespace");
	decode_lists(&b, o);
	o->exists = (flags & F_EXISTS) != 0;
	if (flags & F_DOC) {
		/* Parsed when first needed (ingest__obj_doc): a start must not
		 * pay for extracts it will not map. */
		doc = get_s(&b, "doc");
		if (doc != NULL && check_doc && !doc_text_ok(doc))
			b.why = "doc is not a JSON object";
		if (!b.why) {
			o->doc_text = doc;
			doc = NULL;
		}
	}
	if (!b.why && b.at != b.n)
		b.why = "trailing bytes";
	if (!b.why && *o->name == '\0')
		b.why = "empty name";
	if (!b.why) {
		d = ingest__obj_dirty_key((enum resource)r, o->key);
		table_key(d, tk);
		if (strlen(tk) != klen || memcmp(tk, key, klen) != 0)
			b.why = "key does not name its object";
	}
	free(d);
	free(doc);
	if (b.why) {
		ingest__obj_free(o);
		return b.why;
	}
	*rp = (enum resource)r;
	*out = o;
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* Flush */

/* A digest of a record, to know whether it changed since it was written:
 * eight bytes at a time (records are hashed at every start), never 0. */
static uint64_t digest(const uint8_t *p, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ n;

	for (; n >= 8; p += 8, n -= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdULL;
		h ^= h >> 32;
	}
	for (; n > 0; p++, n--)
		h = (h ^ *p) * 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 29;
	return h | 1;
}

int ingest__objtab_collect(ingest_t *in, struct ledger_batch *b,
			   struct lg_error *err)
{
	struct lg_buf w;
	size_t n = 0, cap = in->dirty.n + 1;
	struct ledger_meta *m = lg_xcalloc(cap, sizeof(*m));
	int rc = 0;

	lg_buf_init(&w, LEDGER_OBJECT_MAX_BYTES);

	for (size_t i = 0; i < in->dirty.cap && rc == 0; i++) {
		const char *d = in->dirty.vals[i];
		enum resource r;
		struct obj *o;
		char *tk;

		if (in->dirty.hashes[i] == 0)
			continue;
		r = (enum resource)(d[0] - 'a');
		o = (unsigned)r < RES_MAX
			    ? ingest__smap_get(&in->objs[r], d + 1)
			    : NULL;
		tk = lg_xmalloc(LEDGER_OBJECT_KEY_MAX + 1);
		table_key(d, tk);
		m[n] = (struct ledger_meta){.key = tk};
		if (o != NULL) {
			uint64_t h;

			/* The ledger would refuse the record (as it did
			 * before the buffer was bounded). */
			if (encode(&w, r, o) != 0) {
				rc = lg_error_set(err, LG_ELIMIT,
						  "object %.64s: record of "
						  "more than %u bytes",
						  tk, LEDGER_OBJECT_MAX_BYTES);
				free(tk);
				break;
			}
			h = digest((const uint8_t *)w.p, w.len);
			if (h == o->tab_hash) {
				free(tk);
				continue;
			}
			o->tab_hash = h;
			m[n].val = lg_xmalloc(w.len);
			memcpy((void *)m[n].val, w.p, w.len);
			m[n].len = w.len;
		}
		n++;
	}
	if (rc == 0 && (in->time_ns != in->tab_time_ns ||
			in->time_back_noted != in->tab_time_back)) {
		lg_buf_reset(&w);
		put_u8(&w, OBJTAB_VERSION);
		put_u64(&w, (uint64_t)in->time_ns);
		put_u64(&w, (uint64_t)in->time_back_noted);
		m[n].key = lg_xstrdup(OBJTAB_ENGINE_KEY);
		m[n].val = lg_xmalloc(w.len);
		memcpy((void *)m[n].val, w.p, w.len);
		m[n++].len = w.len;
		in->tab_time_ns = in->time_ns;
		in->tab_time_back = in->time_back_noted;
	}
	lg_buf_release(&w);
	b->objects = true;
	b->objs = m;
	b->n_objs = n;
	return rc;
}

void ingest__objtab_release(ingest_t *in, struct ledger_batch *b,
			    bool committed)
{
	for (size_t i = 0; i < b->n_objs; i++) {
		free((void *)b->objs[i].key);
		free((void *)b->objs[i].val);
	}
	free((void *)b->objs);
	b->objs = NULL;
	b->n_objs = 0;
	if (!committed)
		return;
	for (size_t i = 0; i < in->dirty.cap; i++)
		if (in->dirty.hashes[i] != 0)
			free(in->dirty.vals[i]);
	ingest__smap_release(&in->dirty);
	ingest__smap_init(&in->dirty, ingest__dirty_key);
}

/* ---------------------------------------------------------------------- */
/* Load */

struct load {
	ingest_t *in;
	struct lg_error *err;
	uint64_t n;
	bool keys_only; /* a stale table: only mark its records for deletion */
};

static int load_engine(struct load *l, const uint8_t *val, size_t vlen)
{
	struct rbuf b = {.p = val, .n = vlen};
	unsigned v = (unsigned)get_u(&b, 1, "version");
	int64_t t = (int64_t)get_u(&b, 8, "time");
	int64_t back = (int64_t)get_u(&b, 8, "time noted");

	if (!b.why && (v != OBJTAB_VERSION || b.at != b.n))
		b.why = "version or length";
	if (b.why)
		return lg_error_set(l->err, LG_ECORRUPT,
				    "object table: record \"%s\": %s",
				    OBJTAB_ENGINE_KEY, b.why);
	if (t > l->in->time_ns)
		l->in->time_ns = t;
	l->in->time_back_noted = back;
	l->in->tab_time_ns = t;
	l->in->tab_time_back = back;
	return 0;
}

/* LG_ECORRUPT naming the record's table key. */
static int load_bad(struct lg_error *err, const void *key, size_t klen,
		    const char *why)
{
	return lg_error_set(err, LG_ECORRUPT,
			    "object table: record \"%.*s\": %s",
			    (int)(klen > 200 ? 200 : klen), (const char *)key,
			    why);
}

/* The same, for a decoded object (its table key again). */
static int load_bad_obj(struct load *l, enum resource r, const struct obj *o,
			const char *why)
{
	char tk[LEDGER_OBJECT_KEY_MAX + 1];
	char *d = ingest__obj_dirty_key(r, o->key);

	table_key(d, tk);
	free(d);
	return load_bad(l->err, tk, strlen(tk), why);
}

/* Files a decoded record; LG_ECORRUPT for a second one of an object. */
static int load_insert(struct load *l, enum resource r, struct obj *o)
{
	int rc = 0;

	if (ingest__smap_get(&l->in->objs[r], o->key) != NULL) {
		rc = load_bad_obj(l, r, o, "a second record of the same object");
		ingest__obj_free(o);
	} else {
		ingest__smap_put(&l->in->objs[r], o);
	}
	return rc;
}

static int load_one(void *ctx, const void *key, size_t klen, const void *val,
		    size_t vlen)
{
	struct load *l = ctx;
	ingest_t *in = l->in;
	enum resource r;
	struct obj *o;
	const char *why;

	l->n++;
	if (klen == 1 && memcmp(key, OBJTAB_ENGINE_KEY, 1) == 0)
		return l->keys_only ? 0 : load_engine(l, val, vlen);
	if (l->keys_only) {
		/* A stale table's records go at the next flush: a dirty key
		 * whose object is not cached is deleted. Keys are ours, so
		 * they are text. */
		char *k = lg_xmalloc(klen + 1);

		memcpy(k, key, klen);
		k[klen] = '\0';
		if (klen > 0 && memchr(k, '\0', klen) == NULL &&
		    ingest__smap_get(&in->dirty, k) == NULL)
			ingest__smap_put(&in->dirty, k);
		else
			free(k);
		return 0;
	}
	if ((why = decode(key, klen, val, vlen, true, &r, &o)) != NULL)
		return load_bad(l->err, key, klen, why);
	o->tab_hash = digest(val, vlen);
	return load_insert(l, r, o);
}

/* A table of many records is decoded on a second thread while this one
 * files the objects (issue 11: a start with a million pods spent most of
 * its time decoding). The reader runs the scan, and with it the read
 * transaction, alone until it is joined; the map holds still meanwhile
 * (nothing appends). Errors are the plain loop's, in its order: the
 * reader stops at its first bad record and passes the error on after the
 * objects before it; the filer stops at the first duplicate and lets the
 * reader drain. */
#define LOAD_PIPE_BATCH 512
#define LOAD_PIPE_DEPTH 4

size_t ingest__objtab_pipe_min = 65536;

struct load_item {
	enum resource r;
	struct obj *o;
};

struct load_batch {
	size_t n;
	struct load_item it[LOAD_PIPE_BATCH];
};

struct load_pipe {
	ingest_t *in;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct load_batch *b; /* LOAD_PIPE_DEPTH of them, a ring */
	uint64_t filled, taken;
	bool stop, done;
	/* The reader's: the records it read, its engine record, its error. */
	uint64_t n;
	bool engine;
	uint8_t engine_rec[ENGINE_REC_BYTES + 1]; /* a longer one: too long */
	size_t engine_len;
	int rc;
	struct lg_error err;
	struct load_batch *cur; /* being filled */
};

static bool pipe_hand_over(struct load_pipe *p)
{
	bool stop;

	pthread_mutex_lock(&p->mu);
	p->filled++;
	pthread_cond_broadcast(&p->cv);
	while (p->filled - p->taken == LOAD_PIPE_DEPTH && !p->stop)
		pthread_cond_wait(&p->cv, &p->mu);
	stop = p->stop;
	pthread_mutex_unlock(&p->mu);
	/* Told to stop, the ring may be full: no slot is taken. */
	p->cur = stop ? NULL : &p->b[p->filled % LOAD_PIPE_DEPTH];
	if (p->cur != NULL)
		p->cur->n = 0;
	return !stop;
}

static int pipe_decode(void *ctx, const void *key, size_t klen,
		       const void *val, size_t vlen)
{
	struct load_pipe *p = ctx;
	struct load_item *it;
	const char *why;

	p->n++;
	if (klen == 1 && memcmp(key, OBJTAB_ENGINE_KEY, 1) == 0) {
		/* Checked by load_engine on the other thread. */
		p->engine = true;
		p->engine_len = vlen < sizeof(p->engine_rec)
					? vlen
					: sizeof(p->engine_rec);
		memcpy(p->engine_rec, val, p->engine_len);
		return 0;
	}
	it = &p->cur->it[p->cur->n];
	if ((why = decode(key, klen, val, vlen, false, &it->r, &it->o)) !=
	    NULL) {
		p->rc = load_bad(&p->err, key, klen, why);
		return p->rc;
	}
	it->o->tab_hash = digest(val, vlen);
	if (++p->cur->n == LOAD_PIPE_BATCH && !pipe_hand_over(p))
		return 1; /* told to stop */
	return 0;
}

static void *pipe_reader(void *arg)
{
	struct load_pipe *p = arg;
	struct lg_error err = {0};
	int rc = ledger_objects_scan(p->in->lg, pipe_decode, p, &err);

	if (rc != 0 && rc != 1 && p->rc == 0) {
		p->rc = rc;
		p->err = err;
	}
	pthread_mutex_lock(&p->mu);
	if (p->cur != NULL)
		p->filled++; /* the last batch, full or not */
	p->done = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Files the reader's batches in order; 1 when there is no pipe to use. */
static int load_piped(struct load *l)
{
	struct load_pipe p = {.in = l->in};
	pthread_t t;
	int rc = 0;

	if (ledger_objects_count(l->in->lg) < ingest__objtab_pipe_min)
		return 1;
	p.b = lg_xmalloc(LOAD_PIPE_DEPTH * sizeof(*p.b));
	p.cur = &p.b[0];
	p.cur->n = 0;
	pthread_mutex_init(&p.mu, NULL);
	pthread_cond_init(&p.cv, NULL);
	if (pthread_create(&t, NULL, pipe_reader, &p) != 0) {
		pthread_cond_destroy(&p.cv);
		pthread_mutex_destroy(&p.mu);
		free(p.b);
		return 1;
	}
	for (;;) {
		struct load_batch *b;
		bool done;

		pthread_mutex_lock(&p.mu);
		while (p.filled == p.taken && !p.done)
			pthread_cond_wait(&p.cv, &p.mu);
		done = p.filled == p.taken;
		pthread_mutex_unlock(&p.mu);
		if (done)
			break;
		b = &p.b[p.taken % LOAD_PIPE_DEPTH];
		for (size_t i = 0; i < b->n; i++) {
			struct obj *o = b->it[i].o;

			/* The doc's syntax here: the reader has the rest. */
			if (rc == 0 && o->doc_text != NULL &&
			    !doc_text_ok(o->doc_text))
				rc = load_bad_obj(l, b->it[i].r, o,
						  "doc is not a JSON object");
			if (rc != 0)
				ingest__obj_free(o);
			else
				rc = load_insert(l, b->it[i].r, o);
		}
		pthread_mutex_lock(&p.mu);
		p.taken++;
		if (rc != 0)
			p.stop = true;
		pthread_cond_broadcast(&p.cv);
		pthread_mutex_unlock(&p.mu);
	}
	pthread_join(t, NULL);
	l->n = p.n;
	if (rc == 0 && p.rc != 0) {
		rc = p.rc;
		if (l->err != NULL)
			*l->err = p.err;
	}
	if (rc == 0 && p.engine)
		rc = load_engine(l, p.engine_rec, p.engine_len);
	pthread_cond_destroy(&p.cv);
	pthread_mutex_destroy(&p.mu);
	free(p.b);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* From the state: tenant nodes always; holders and nodes when there is no
 * table to load. */

static int walk_tenant(void *ctx, const struct state_tenant_view *v)
{
	ingest_t *in = ctx;
	struct tnode *t = ingest__tnode_get(in, v->ns, true);

	t->exists = true;
	for (size_t i = 0; i < v->n_budgets; i++)
		ingest__tnode_budget_set(t, v->budgets[i].key, true,
					 v->budgets[i].value);
	for (size_t i = 0; i < v->n_raw; i++)
		ingest__tnode_raw_set(t, v->raw[i], true);
	if (v->parent != NULL)
		ingest__tnode_get(in, v->parent, true)->n_children++;
	return 0;
}

static int walk_holder(void *ctx, const struct state_holder_view *v)
{
	ingest_t *in = ctx;
	enum resource r = ingest__kind_res(v->kind);
	struct obj *o;

	if (r == RES_MAX)
		return 0;
	o = ingest__obj_add(in, r, v->ns, v->name, v->uid);
	for (size_t i = 0; i < v->n; i++) {
		struct ucls *u = ingest__obj_units(o, v->units[i].cls);

		u->reserved = v->units[i].reserved;
		u->allocated = v->units[i].allocated;
		if (v->units[i].node != NULL && v->units[i].allocated > 0 &&
		    *o->node == '\0') {
			free(o->node);
			o->node = lg_xstrdup(v->units[i].node);
		}
	}
	return 0;
}

static int walk_node(void *ctx, const struct state_node_view *v)
{
	ingest_t *in = ctx;
	struct obj *o = ingest__obj_add(in, RES_NODE, "", v->name, NULL);

	o->exists = v->exists;
	o->n_caps = v->n;
	o->caps = v->n ? lg_xcalloc(v->n, sizeof(*o->caps)) : NULL;
	for (size_t i = 0; i < v->n; i++) {
		snprintf(o->caps[i].cls, sizeof(o->caps[i].cls), "%s",
			 v->caps[i].cls);
		o->caps[i].capacity = v->caps[i].capacity;
		o->caps[i].serves = v->caps[i].serves;
	}
	/* caps are kept sorted by class (nodes.c cap_get). */
	for (size_t i = 1; i < o->n_caps; i++)
		for (size_t j = i;
		     j > 0 && strcmp(o->caps[j - 1].cls, o->caps[j].cls) > 0;
		     j--) {
			struct ncap c = o->caps[j];

			o->caps[j] = o->caps[j - 1];
			o->caps[j - 1] = c;
		}
	return 0;
}
/* The Tenant that governs namespace g, by the inverse of DESIGN 2.2. */
static void tenant_of(const char *g, char *p, const char **x)
{
	const char *dash = strrchr(g, '-');

	if (strcmp(g, "tenant-root") == 0 || !ns_parent(g, p)) {
		snprintf(p, DNS1123_SUBDOMAIN_MAX + 1, "tenant-root");
		*x = "root";
		return;
	}
	*x = dash ? dash + 1 : g;
}

/*
 * What the ledger cannot say: existing tenant nodes are assumed to have
 * their Namespace, and declared budgets their Tenant, so that the first
 * relist of those resources removes exactly what is gone.
 */
static void assumed_reasons(ingest_t *in)
{
	size_t n;
	void **ts = ingest__smap_sorted(&in->tnodes, &n);

	for (size_t i = 0; i < n; i++) {
		struct tnode *t = ts[i];
		char p[DNS1123_SUBDOMAIN_MAX + 1];
		const char *x;
		struct obj *o;

		if (!t->exists)
			continue;
		if (ingest__obj_get(in, RES_NAMESPACE, "", t->ns) == NULL)
			ingest__obj_add(in, RES_NAMESPACE, "", t->ns, NULL);
		t->ns_present = true;
		if (t->n_budgets == 0 && t->n_raw == 0)
			continue;
		tenant_of(t->ns, p, &x);
		o = ingest__obj_get(in, RES_TENANT, p, x);
		if (o == NULL)
			o = ingest__obj_add(in, RES_TENANT, p, x, NULL);
		free(o->governed);
		o->governed = lg_xstrdup(t->ns);
		t->governor = o;
	}
	free(ts);
}

/* Why each tenant node exists, from the objects (the counts tree.c and
 * holders.c keep as objects change), and the claim cover index. */
static void derive(ingest_t *in)
{
	for (int r = 0; r < RES_MAX; r++) {
		struct smap *m = &in->objs[r];

		for (size_t i = 0; i < m->cap; i++) {
			struct obj *o = m->vals[i];

			if (m->hashes[i] == 0)
				continue;
			if (r == RES_NAMESPACE && ns_is_tenant(o->name))
				ingest__tnode_get(in, o->name, true)
					->ns_present = true;
			else if (r == RES_TENANT && o->governed != NULL)
				ingest__tnode_get(in, o->governed, true)
					->governor = o;
			else if (ingest__kind_res(o->kind) == (enum resource)r)
				ingest__holder_count(in, o);
			if (r == RES_VMINSTANCE)
				ingest__covers_restore(in, o);
		}
	}
}

static int migrate(ingest_t *in, struct lg_error *err)
{
	static const struct state_walk_fns fns = {.holder = walk_holder,
						  .node = walk_node};
	int rc = state_walk(ledger_state(in->lg), &fns, in);

	(void)err;
	if (rc == 0)
		assumed_reasons(in);
	return rc;
}

int ingest__objtab_load(ingest_t *in, struct lg_error *err)
{
	static const struct state_walk_fns tenants = {.tenant = walk_tenant};
	const state_t *st = ledger_state(in->lg);
	struct ledger_vindex vi;
	struct load l = {.in = in, .err = err};
	uint64_t at;
	bool present;
	int rc;

	ingest__table_copy(&in->table, state_classes(st));
	in->time_ns = state_time_ns(st);
	rc = ledger_objects_seq(in->lg, &at, &present, err);
	if (rc == 0 && present)
		rc = ledger_verdict_index(in->lg, &vi, err);
	if (rc != 0)
		return rc;
	/* Another writer's content events after the table: it is stale. */
	l.keys_only = present && vi.content_seq > at;
	if (present && (l.keys_only || (rc = load_piped(&l)) == 1))
		rc = ledger_objects_scan(in->lg, load_one, &l, err);
	if (rc == 0 && !l.keys_only) {
		/* What was loaded is what the ledger holds. */
		for (size_t i = 0; i < in->dirty.cap; i++)
			if (in->dirty.hashes[i] != 0)
				free(in->dirty.vals[i]);
		ingest__smap_release(&in->dirty);
		ingest__smap_init(&in->dirty, ingest__dirty_key);
	}
	if (rc == 0)
		rc = state_walk(st, &tenants, in);
	if (rc == 0 && (!present || l.keys_only))
		rc = migrate(in, err);
	if (rc == 0)
		derive(in);
	/* What this start cost: the table's records, and the event records
	 * and checkpoint the ledger handle read to build the state. */
	in->c.start_records = l.n + ledger_records_read(in->lg) +
			      (ledger_checkpoint_seq(in->lg) > 0);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The whole cache as text (tests: a loaded engine must equal the live one
 * it continues). */

static void dump_str(struct lg_buf *w, const char *s)
{
	put(w, s, strlen(s));
}

/* A dump is for tests, of small caches: the bound stops a runaway only. */
#define DUMP_MAX_BYTES ((size_t)1 << 30)

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *ingest__objtab_dump(const ingest_t *in)
{
	struct lg_buf w, rec;
	size_t n;
	void **vs;

	lg_buf_init(&w, DUMP_MAX_BYTES);
	lg_buf_init(&rec, LEDGER_OBJECT_MAX_BYTES);
	lg_buf_addf(&w, "time %lld back %lld\n", (long long)in->time_ns,
		    (long long)in->time_back_noted);
	for (size_t i = 0; i < in->table.n; i++) {
		json_t *j = gpu_class_to_json(&in->table.classes[i]);
		char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

		lg_buf_addf(&w, "class ");
		dump_str(&w, s);
		dump_str(&w, "\n");
		free(s);
		json_decref(j);
	}
	for (int r = 0; r < RES_MAX; r++) {
		vs = ingest__smap_sorted(&in->objs[r], &n);
		for (size_t i = 0; i < n; i++) {
			const struct obj *o = vs[i];

			int bad = encode(&rec, (enum resource)r, o);

			lg_buf_addf(&w, "obj %d %s holding %d rec ", r, o->key,
				    o->holding);
			for (size_t k = 0; k < rec.len && bad == 0; k++)
				lg_buf_addf(&w, "%02x",
					    (unsigned char)rec.p[k]);
			if (bad != 0)
				dump_str(&w, "too-large");
			dump_str(&w, "\n");
		}
		free(vs);
	}
	vs = ingest__smap_sorted(&in->tnodes, &n);
	for (size_t i = 0; i < n; i++) {
		const struct tnode *t = vs[i];

		if (!t->exists && !t->ns_present && !t->governor &&
		    !t->n_holding && !t->n_children && !t->n_budgets &&
		    !t->n_raw)
			continue; /* forgotten at the next check */
		lg_buf_addf(&w,
			    "tnode %s exists %d ns %d gov %s hold %zu kids %zu",
			    t->ns, t->exists, t->ns_present,
			    t->governor ? t->governor->key : "-", t->n_holding,
			    t->n_children);
		for (size_t k = 0; k < t->n_budgets; k++)
			lg_buf_addf(&w, " %s=%lld", t->budgets[k].key,
				    (long long)t->budgets[k].value);
		for (size_t k = 0; k < t->n_raw; k++)
			lg_buf_addf(&w, " +%s", t->raw[k]);
		dump_str(&w, "\n");
	}
	free(vs);
	vs = ingest__smap_sorted(&in->covers, &n);
	for (size_t i = 0; i < n; i++) {
		const struct cover *c = vs[i];
		const char **keys = lg_xcalloc(c->n + 1, sizeof(*keys));

		for (size_t k = 0; k < c->n; k++)
			keys[k] = c->vmis[k]->key;
		qsort(keys, c->n, sizeof(*keys), cmp_str);
		lg_buf_addf(&w, "cover %s", c->key);
		for (size_t k = 0; k < c->n; k++)
			lg_buf_addf(&w, " %s", keys[k]);
		dump_str(&w, "\n");
		free(keys);
	}
	free(vs);
	lg_buf_release(&rec);
	return lg_buf_detach(&w, NULL);
}
