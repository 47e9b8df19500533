/*
 * Event encoding, version 1 (DESIGN 4.2, 4.3): the canonical bytes of an
 * event, which the hash chain covers, and one step of that chain.
 *
 * Because the chain hashes these bytes, an event must have exactly one
 * encoding: varints are minimal, booleans are 0 or 1, every string ends in
 * one NUL byte and holds none, and nothing may follow the last field. The
 * decoder refuses everything else, so that encode(decode(b)) == b for every
 * record it accepts and a flipped byte can never go unnoticed by verify.
 *
 * Layout: version byte, type byte, varint seq, varint zigzag(time_ns), then
 * the fields of the type in the order of the layout table below. Encoder and
 * decoder walk the same table, so they cannot disagree on the order.
 */
#include "ledger/ledger_int.h"

#include <stddef.h>
#include <string.h>

/* The low-level SHA-256 calls are deprecated in OpenSSL 3 but are the only
 * way to hash without allocating a context per call (EVP_Digest and the
 * one-shot SHA256() create and fetch one each time). The chain step runs
 * once per appended event, so the allocation matters; silence the warning
 * here only. */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

#define CODEC_VERSION	 1
#define VARINT_MAX_BYTES 10

/* ---------------------------------------------------------------------- */
/* The layout table: per event type, its fields in encoding order. */

enum op {
	OP_END = 0,	  /* end of the list (zero-initialised rows) */
	OP_STR,		  /* const char *: varint len, bytes, NUL */
	OP_OSTR,	  /* const char * or NULL: varint len + 1 (0 = NULL) */
	OP_PRESENT,	  /* ev->present as one byte 0/1 */
	OP_ZZ,		  /* int64_t: varint zigzag */
	OP_ZZ_IF_PRESENT, /* int64_t, only when ev->present is set */
	OP_KIND,	  /* ev->kind as one byte < HK_MAX */
};

struct field {
	enum op op;
	size_t off;	  /* offset of the member in struct event */
	const char *what; /* the field's name in error messages */
};

#define F(o, m, w)                              \
	{                                       \
		o, offsetof(struct event, m), w \
	}
#define STR(m, w)  F(OP_STR, m, w)
#define OSTR(m, w) F(OP_OSTR, m, w)
#define ZZ(m, w)   F(OP_ZZ, m, w)
#define PRESENT(w) F(OP_PRESENT, present, w)
#define KIND	   F(OP_KIND, kind, "kind")
#define LAYOUT_MAX 9 /* fields of the longest layout (ALLOC), plus end */
#define HOLDER_FIELDS                                              \
	STR(ns, "ns"), STR(cls, "class"), KIND, STR(name, "name"), \
		STR(uid, "uid"), ZZ(before, "before"), ZZ(after, "after")

static const struct field layout[EV_MAX][LAYOUT_MAX] = {
	[EV_TENANT] = {STR(ns, "ns"), OSTR(parent, "parent")},
	[EV_TENANT_GONE] = {STR(ns, "ns"), OSTR(parent, "parent")},
	[EV_BUDGET] = {STR(ns, "ns"), STR(key, "key"), PRESENT("present"),
		       F(OP_ZZ_IF_PRESENT, value, "value")},
	[EV_RAWKEY] = {STR(ns, "ns"), STR(key, "resource"), PRESENT("present")},
	[EV_CLASS] = {STR(cls, "class"), OSTR(text, "definition")},
	[EV_NODE] = {STR(node, "node"), STR(cls, "class"),
		     ZZ(value, "capacity"), PRESENT("serves")},
	[EV_RESERVE] = {HOLDER_FIELDS},
	[EV_RELEASE] = {HOLDER_FIELDS},
	[EV_ALLOC] = {HOLDER_FIELDS, STR(node, "node")},
	[EV_FREE] = {HOLDER_FIELDS, STR(node, "node")},
	[EV_VERDICT] = {STR(text, "record")},
	[EV_NOTE] = {STR(key, "code"), OSTR(ns, "ns"), KIND, OSTR(name, "name"),
		     STR(text, "message")},
	[EV_TICK] = {{OP_END, 0, NULL}},
	[EV_HOLDS] = {ZZ(value, "ttl")},
};

/* Members are reached through their offsets; the lvalue has the member's
 * own type, so this is ordinary access, not type punning. */
static const char *const *cstr_at(const struct event *ev, size_t off)
{
	return (const char *const *)(const void *)((const char *)ev + off);
}

static const char **str_at(struct event *ev, size_t off)
{
	return (const char **)(void *)((char *)ev + off);
}

static const int64_t *cint_at(const struct event *ev, size_t off)
{
	return (const int64_t *)(const void *)((const char *)ev + off);
}

static int64_t *int_at(struct event *ev, size_t off)
{
	return (int64_t *)(void *)((char *)ev + off);
}

/* Zigzag maps small magnitudes of either sign to small unsigned numbers;
 * done in unsigned arithmetic so that INT64_MIN needs no special case. */
static uint64_t zigzag(int64_t v)
{
	uint64_t u = (uint64_t)v;

	return (u << 1) ^ (0 - (u >> 63));
}

static int64_t unzigzag(uint64_t u)
{
	uint64_t v = (u >> 1) ^ (0 - (u & 1));
	int64_t s;

	memcpy(&s, &v, sizeof(s)); /* two's complement, no overflow */
	return s;
}

/* ---------------------------------------------------------------------- */
/* Encoding. The writer counts every byte but stores only those below cap,
 * so one pass both measures and writes, and never overruns. */

struct writer {
	uint8_t *buf;
	size_t cap, pos;
};

static void put_byte(struct writer *w, uint8_t b)
{
	if (w->pos < w->cap)
		w->buf[w->pos] = b;
	w->pos++;
}

static void put_bytes(struct writer *w, const void *p, size_t n)
{
	if (w->pos <= w->cap && n <= w->cap - w->pos && n > 0)
		memcpy(w->buf + w->pos, p, n);
	w->pos += n;
}

static void put_varint(struct writer *w, uint64_t v)
{
	while (v >= 0x80) {
		put_byte(w, (uint8_t)(v | 0x80));
		v >>= 7;
	}
	put_byte(w, (uint8_t)v);
}

/* A NULL where a string is required cannot come from a valid event; it is
 * written as "" rather than crashing, and event_validate will refuse it. */
static void put_str(struct writer *w, const char *s, bool optional)
{
	size_t n;

	if (s == NULL && optional) {
		put_varint(w, 0);
		return;
	}
	n = s != NULL ? strlen(s) : 0;
	put_varint(w, (uint64_t)n + (optional ? 1 : 0));
	put_bytes(w, s, n);
	put_byte(w, 0);
}

static void put_field(struct writer *w, const struct event *ev,
		      const struct field *f)
{
	switch (f->op) {
	case OP_STR:
	case OP_OSTR:
		put_str(w, *cstr_at(ev, f->off), f->op == OP_OSTR);
		break;
	case OP_PRESENT:
		put_byte(w, ev->present ? 1 : 0);
		break;
	case OP_ZZ_IF_PRESENT:
		if (ev->present)
			put_varint(w, zigzag(*cint_at(ev, f->off)));
		break;
	case OP_ZZ:
		put_varint(w, zigzag(*cint_at(ev, f->off)));
		break;
	case OP_KIND:
		put_byte(w, (uint8_t)ev->kind);
		break;
	case OP_END:
		break;
	}
}

size_t ledger__event_encode(const struct event *ev, uint8_t *buf, size_t cap)
{
	struct writer w = {buf, cap, 0};

	put_byte(&w, CODEC_VERSION);
	put_byte(&w, (uint8_t)ev->type);
	put_varint(&w, ev->seq);
	put_varint(&w, zigzag(ev->time_ns));
	if ((unsigned)ev->type < EV_MAX)
		for (const struct field *f = layout[ev->type];
		     f < layout[ev->type] + LAYOUT_MAX && f->op != OP_END; f++)
			put_field(&w, ev, f);
	return w.pos;
}

/* ---------------------------------------------------------------------- */
/* Decoding. The reader never looks at buf[len] or beyond: every length is
 * checked against what is left before it is used. */

struct reader {
	const uint8_t *buf;
	size_t len, pos;
	struct lg_error *err;
};

static int corrupt(struct reader *r, size_t at, const char *what,
		   const char *why)
{
	return lg_error_set(r->err, LG_ECORRUPT,
			    "event record: %s: %s at byte %zu", what, why, at);
}

/* The careful reader: byte by byte, with the exact error for every way a
 * varint can be wrong. get_varint below takes it for anything unusual. */
static int get_varint_slow(struct reader *r, const char *what, uint64_t *out)
{
	size_t at = r->pos;
	uint64_t v = 0;

	for (unsigned i = 0; i < VARINT_MAX_BYTES; i++) {
		uint8_t b;

		if (r->pos >= r->len)
			return corrupt(r, at, what, "truncated varint");
		b = r->buf[r->pos++];
		/* The tenth byte carries bit 63 only. */
		if (i == VARINT_MAX_BYTES - 1 && b > 1)
			return corrupt(r, at, what, "varint exceeds 64 bits");
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if ((b & 0x80) == 0) {
			if (b == 0 && i > 0)
				return corrupt(r, at, what, "overlong varint");
			*out = v;
			return 0;
		}
	}
	return corrupt(r, at, what, "varint longer than 10 bytes");
}

/* Eight bytes as a little-endian word. */
static uint64_t le64(const uint8_t *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

/* The 7-bit groups of the low k bytes of w (k <= 8), packed. The groups are
 * merged pairwise: bytes into 14-bit halves of 16, those into 28 of 32,
 * those into 56 of 64. */
static uint64_t varint_pack(uint64_t w, unsigned k)
{
	if (k < 8)
		w &= ((uint64_t)1 << (8 * k)) - 1;
	w &= 0x7f7f7f7f7f7f7f7fULL;
	w = (w & 0x007f007f007f007fULL) | (w & 0x7f007f007f007f00ULL) >> 1;
	w = (w & 0x00003fff00003fffULL) | (w & 0x3fff00003fff0000ULL) >> 2;
	return (w & 0x000000000fffffffULL) | (w & 0x0fffffff00000000ULL) >> 4;
}

/* Most varints are one byte (string lengths, small units) or, for event
 * times, nine. With eight bytes left, a varint of up to nine bytes is read
 * a word at a time; a tenth byte, a zero last byte (overlong) or a short
 * tail goes to get_varint_slow, which finds the same value or error. */
static int get_varint(struct reader *r, const char *what, uint64_t *out)
{
	const uint8_t *p = r->buf + r->pos;
	size_t left = r->len - r->pos;
	uint64_t w, stop;
	unsigned k;

	if (left > 0 && p[0] < 0x80) {
		*out = p[0];
		r->pos++;
		return 0;
	}
	if (left < 8)
		return get_varint_slow(r, what, out);
	w = le64(p);
	stop = ~w & 0x8080808080808080ULL; /* bytes without continuation */
	if (stop != 0) {
		k = (unsigned)__builtin_ctzll(stop) / 8 + 1;
		if (p[k - 1] == 0)
			return get_varint_slow(r, what, out);
		*out = varint_pack(w, k);
		r->pos += k;
		return 0;
	}
	if (left < 9 || p[8] >= 0x80 || p[8] == 0)
		return get_varint_slow(r, what, out);
	*out = varint_pack(w, 8) | (uint64_t)p[8] << 56;
	r->pos += 9;
	return 0;
}

/* A string of n bytes at r->pos is valid when the first NUL among its n + 1
 * bytes is the last: one scan finds both a NUL inside and a missing one. */
static int get_str(struct reader *r, const char *what, bool optional,
		   const char **out)
{
	size_t at = r->pos;
	const uint8_t *p, *nul;
	uint64_t n;
	int rc = get_varint(r, what, &n);

	if (rc < 0)
		return rc;
	if (optional) {
		if (n == 0) {
			*out = NULL;
			return 0;
		}
		n--;
	}
	/* The string and its NUL must both fit in what is left. */
	if (n >= r->len - r->pos)
		return corrupt(r, at, what, "string runs past the end");
	p = r->buf + r->pos;
	nul = memchr(p, 0, (size_t)n + 1);
	if (nul == NULL)
		return corrupt(r, r->pos + (size_t)n, what,
			       "string not NUL-terminated");
	if (nul != p + n)
		return corrupt(r, r->pos + (size_t)(nul - p), what,
			       "NUL byte inside string");
	*out = (const char *)p;
	r->pos += (size_t)n + 1;
	return 0;
}

static int get_byte(struct reader *r, const char *what, unsigned below,
		    uint8_t *out)
{
	if (r->pos >= r->len)
		return corrupt(r, r->pos, what, "truncated");
	if (r->buf[r->pos] >= below)
		return corrupt(r, r->pos, what, "value out of range");
	*out = r->buf[r->pos++];
	return 0;
}

static int get_zz(struct reader *r, const char *what, int64_t *out)
{
	uint64_t u;
	int rc = get_varint(r, what, &u);

	if (rc == 0)
		*out = unzigzag(u);
	return rc;
}

static int get_field(struct reader *r, struct event *ev, const struct field *f)
{
	uint8_t b = 0;
	int rc;

	switch (f->op) {
	case OP_STR:
	case OP_OSTR:
		return get_str(r, f->what, f->op == OP_OSTR,
			       str_at(ev, f->off));
	case OP_PRESENT:
		rc = get_byte(r, f->what, 2, &b);
		ev->present = b == 1;
		return rc;
	case OP_ZZ_IF_PRESENT:
		return ev->present ? get_zz(r, f->what, int_at(ev, f->off)) : 0;
	case OP_ZZ:
		return get_zz(r, f->what, int_at(ev, f->off));
	case OP_KIND:
		rc = get_byte(r, f->what, HK_MAX, &b);
		ev->kind = (enum holder_kind)b;
		return rc;
	case OP_END:
		break;
	}
	return 0;
}

/* Header and fields; the structural half of decoding. */
static int decode_fields(struct reader *r, struct event *ev)
{
	uint64_t t;
	int rc;

	if (r->len < 2)
		return corrupt(r, r->len, "header", "truncated");
	if (r->buf[0] != CODEC_VERSION)
		return lg_error_set(r->err, LG_EVERSION,
				    "event record: unknown format version %u "
				    "at byte 0",
				    (unsigned)r->buf[0]);
	if (r->buf[1] <= EV_NONE || r->buf[1] >= EV_MAX)
		return lg_error_set(r->err, LG_ECORRUPT,
				    "event record: unknown type %u at byte 1",
				    (unsigned)r->buf[1]);
	ev->type = (enum event_type)r->buf[1];
	r->pos = 2;
	if ((rc = get_varint(r, "seq", &ev->seq)) < 0 ||
	    (rc = get_varint(r, "time", &t)) < 0)
		return rc;
	ev->time_ns = unzigzag(t);
	for (const struct field *f = layout[ev->type];
	     f < layout[ev->type] + LAYOUT_MAX && f->op != OP_END; f++)
		if ((rc = get_field(r, ev, f)) < 0)
			return rc;
	if (r->pos != r->len)
		return corrupt(r, r->pos, "record", "trailing bytes");
	return 0;
}

int ledger__event_decode(struct event *ev, const uint8_t *buf, size_t len,
			 struct lg_error *err)
{
	struct reader r = {buf, len, 0, err};
	struct lg_error verr; /* event_validate fills it when it fails */
	int rc;

	verr.code = 0;
	verr.msg[0] = '\0';
	memset(ev, 0, sizeof(*ev));
	if (len > LEDGER_EVENT_MAX_BYTES)
		rc = lg_error_set(err, LG_ECORRUPT,
				  "event record: %zu bytes exceed the bound of "
				  "%u at byte 0",
				  len, LEDGER_EVENT_MAX_BYTES);
	else if ((rc = decode_fields(&r, ev)) == 0 &&
		 event_validate(ev, &verr) < 0)
		rc = lg_error_set(
			err, LG_ECORRUPT,
			"event record: invalid %s event at byte 0: %s",
			event_type_name(ev->type), verr.msg);
	/* A refused record leaves no half-filled event behind. */
	if (rc < 0)
		memset(ev, 0, sizeof(*ev));
	return rc;
}

/* ---------------------------------------------------------------------- */
/* The chain. */

void ledger__chain_step(const uint8_t *head_prev, const uint8_t *bytes,
			size_t len, uint8_t *head_out)
{
	uint8_t md[SHA256_DIGEST_LENGTH];
	SHA256_CTX c;

	/* Hashed into md first, so that head_out may alias head_prev. */
	SHA256_Init(&c);
	SHA256_Update(&c, head_prev, LEDGER_HEAD_BYTES);
	if (len > 0)
		SHA256_Update(&c, bytes, len);
	SHA256_Final(md, &c);
	memcpy(head_out, md, sizeof(md));
}

void ledger_event_head(const uint8_t *head_prev, const struct event *ev,
		       uint8_t *head_out)
{
	uint8_t room[1024], *p = room;
	size_t n;

	LG_ASSERT(head_prev != NULL && ev != NULL && head_out != NULL);
	n = ledger__event_encode(ev, room, sizeof(room));
	/* Most events fit the stack; a larger one is encoded again on the
	 * heap (running out of memory aborts, STYLE "Errors and memory"). */
	if (n > sizeof(room)) {
		p = lg_xmalloc(n);
		ledger__event_encode(ev, p, n);
	}
	ledger__chain_step(head_prev, p, n, head_out);
	if (p != room)
		free(p);
}
