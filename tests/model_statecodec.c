/*
 * Checkpoint bytes: round trips of states built from events, canonical bytes
 * (two event orders, clones), every single-byte flip and truncation of an
 * encoding, and a table of hand-written corrupt encodings with the message
 * each must be refused with.
 */
#include "tests/model_tests.h"

#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Events, written with single quotes (tq). */

#define T0 "'time':'2026-01-01T00:00:00Z'"
#define T1 "'time':'2026-01-01T01:00:00Z'"
#define T2 "'time':'2026-01-01T02:30:00.5Z'"

#define CLASS_H100                                                    \
	"{'type':'CLASS','class':'h100','definition':{'name':'h100'," \
	"'resourceNames':['nvidia.com/GH100']}," T0 "}"
#define CLASS_A10                                                     \
	"{'type':'CLASS','class':'a10','definition':{'name':'a10',"   \
	"'resourceNames':['nvidia.com/GA102'],'tolerations':[{'key':" \
	"'gpu','operator':'Exists','effect':'NoSchedule'}]}}"
#define TENANT(ns, parent) \
	"{'type':'TENANT','namespace':'" ns "','parent':" parent "}"
#define GONE(ns, parent) \
	"{'type':'TENANT_GONE','namespace':'" ns "','parent':" parent "}"
#define BUDGET(ns, key, v) \
	"{'type':'BUDGET','namespace':'" ns "','key':'" key "','value':" v "}"
#define RAWKEY(ns, res, p)                                            \
	"{'type':'RAWKEY','namespace':'" ns "','resource':'" res "'," \
	"'present':" p "}"
#define NODE(node, cls, cap, serves)                                         \
	"{'type':'NODE','node':'" node "','class':'" cls "','capacity':" cap \
	",'serves':" serves "}"
#define UNITS(type, ns, cls, kind, name, b, a, node)                 \
	"{'type':'" type "','namespace':'" ns "','class':'" cls "'," \
	"'kind':'" kind "','name':'" name "','uid':'u-" name "',"    \
	"'before':" b ",'after':" a ",'node':'" node "'}"
#define UNITS_AT(type, ns, cls, kind, name, b, a, node, t)           \
	"{'type':'" type "','namespace':'" ns "','class':'" cls "'," \
	"'kind':'" kind "','name':'" name "','uid':'u-" name "',"    \
	"'before':" b ",'after':" a ",'node':'" node "'," t "}"

#define H100_KEY  "h100.gpuclass.cozystack.io/devices"
#define TOTAL_KEY "gpuclass.cozystack.io/devices"

static int apply_json(state_t *st, const char *text, struct lg_error *err)
{
	json_t *v = tq(text);
	int rc = apply_event_json(st, v, err);

	json_decref(v);
	return rc;
}

static void apply_all(state_t *st, const char *const *events)
{
	for (size_t i = 0; events[i] != NULL; i++) {
		struct lg_error err = {0};

		ck_assert_msg(apply_json(st, events[i], &err) == 0,
			      "refused %s: %s", events[i], err.msg);
	}
}

static state_t *build(const char *const *events)
{
	state_t *st = state_new();

	apply_all(st, events);
	return st;
}

static char *dump(const state_t *st)
{
	json_t *v = state_to_json(st, NULL);
	char *s = json_canonical(v);

	json_decref(v);
	return s;
}

struct blob {
	uint8_t *p;
	size_t n;
};

static struct blob enc(const state_t *st)
{
	struct blob b = {0};

	ck_assert_int_eq(state_encode(st, &b.p, &b.n), 0);
	ck_assert_ptr_nonnull(b.p);
	return b;
}

static void same_bytes(struct blob a, struct blob b, const char *what)
{
	ck_assert_msg(a.n == b.n && memcmp(a.p, b.p, a.n) == 0,
		      "%s: encodings differ (%zu and %zu bytes)", what, a.n,
		      b.n);
}

static state_t *dec(struct blob b)
{
	struct lg_error err = {0};
	state_t *st = NULL;
	int rc = state_decode(&st, b.p, b.n, &err);

	ck_assert_msg(rc == 0, "decode: %d %s", rc, err.msg);
	ck_assert_ptr_nonnull(st);
	ck_assert_msg(model__state_check(st, &err) == 0, "state_check: %s",
		      err.msg);
	return st;
}

/* ---------------------------------------------------------------------- */
/* Scenarios */

static const char *const ev_empty[] = {NULL};

static const char *const ev_tree[] = {
	CLASS_H100,
	CLASS_A10,
	TENANT("tenant-root", "null"),
	TENANT("tenant-a", "'tenant-root'"),
	TENANT("tenant-a-b", "'tenant-a'"),
	TENANT("tenant-c", "'tenant-root'"),
	BUDGET("tenant-a", H100_KEY, "8"),
	BUDGET("tenant-root", TOTAL_KEY, "100"),
	BUDGET("tenant-a-b", TOTAL_KEY, "3"),
	RAWKEY("tenant-c", "nvidia.com/GA102", "true"),
	RAWKEY("tenant-c", "nvidia.com/GH100", "true"),
	NULL,
};

/* Holders of every kind, allocation on a node and on a node that does not
 * exist, a non-tenant namespace, billing over time, a class removed while
 * units still name it, a class interned only by a NODE event, a tenant that
 * came and went, notes and verdicts. */
static const char *const ev_full[] = {
	CLASS_H100,
	CLASS_A10,
	TENANT("tenant-root", "null"),
	TENANT("tenant-a", "'tenant-root'"),
	TENANT("tenant-a-b", "'tenant-a'"),
	TENANT("tenant-c", "'tenant-root'"),
	TENANT("tenant-x", "'tenant-root'"),
	BUDGET("tenant-a", H100_KEY, "8"),
	RAWKEY("tenant-c", "nvidia.com/GA102", "true"),
	NODE("gpu-1", "h100", "8", "true"),
	NODE("gpu-2.example.com", "a10", "4", "false"),
	NODE("gpu-3", "b200", "2", "true"),
	UNITS_AT("RESERVE", "tenant-a-b", "h100", "VMInstance", "vm1", "0", "2",
		 "", T1),
	UNITS("ALLOC", "tenant-a-b", "h100", "ResourceClaim", "claim1", "0",
	      "2", "gpu-1"),
	UNITS("RESERVE", "tenant-a", "a10", "KubernetesNodes", "kn", "0", "10",
	      ""),
	UNITS("RESERVE", "default", "a10", "Pod", "p1", "0", "1", ""),
	UNITS("ALLOC", "default", "a10", "Pod", "p1", "0", "1", "nowhere"),
	UNITS("ALLOC", "default", "h100", "Pod", "p2", "0", "3", ""),
	UNITS("RESERVE", "tenant-x", "h100", "Pod", "p3", "0", "1", ""),
	UNITS_AT("RELEASE", "tenant-x", "h100", "Pod", "p3", "1", "0", "", T2),
	GONE("tenant-x", "'tenant-root'"),
	"{'type':'CLASS','class':'a10','definition':null}",
	"{'type':'NOTE','code':'Relist','message':'m'}",
	"{'type':'VERDICT','record':{'id':1}}",
	NULL,
};

/* Applied to a state and to its decoded copy alike; some are refused, in
 * both. They exercise what decode derives: tree links (TENANT_GONE), holder
 * counts, per-node allocation (FREE), class interning past the decoded
 * capacity, and the class table ids. */
static const char *const ev_more[] = {
	UNITS_AT("RELEASE", "tenant-a-b", "h100", "VMInstance", "vm1", "2", "0",
		 "", "'time':'2026-01-02T00:00:00Z'"),
	GONE("tenant-a-b", "'tenant-a'"),
	UNITS("FREE", "tenant-a-b", "h100", "ResourceClaim", "claim1", "2", "0",
	      "gpu-1"),
	GONE("tenant-a-b", "'tenant-a'"),
	GONE("tenant-a", "'tenant-root'"),
	TENANT("tenant-a-b", "'tenant-a'"),
	UNITS("FREE", "default", "a10", "Pod", "p1", "1", "0", "nowhere"),
	NODE("gpu-4", "l4", "1", "true"),
	NODE("gpu-4", "l40", "1", "true"),
	NODE("gpu-4", "l40s", "1", "true"),
	NODE("gpu-4", "t4", "1", "true"),
	NODE("gpu-4", "v100", "1", "true"),
	CLASS_A10,
	UNITS("RESERVE", "tenant-c", "a10", "VMInstance", "vm9", "0", "1", ""),
	UNITS("ALLOC", "tenant-c", "v100", "Pod", "p9", "0", "1", "gpu-4"),
	UNITS("ALLOC", "tenant-c", "a10", "Pod", "p9", "0", "1", "gpu-4"),
	"{'type':'CLASS','class':'h100','definition':{'name':'h100',"
	"'resourceNames':['nvidia.com/GH100','nvidia.com/H100b']}}",
	NULL,
};

static const struct scenario {
	const char *name;
	const char *const *events;
} scenarios[] = {
	{"empty", ev_empty},
	{"tree", ev_tree},
	{"full", ev_full},
};

#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

/* Applies more to a and b; each event must be accepted or refused by both,
 * and they must end equal. */
static void continue_both(state_t *a, state_t *b, const char *const *more)
{
	for (size_t i = 0; more[i] != NULL; i++) {
		struct lg_error ea = {0}, eb = {0};
		int ra = apply_json(a, more[i], &ea);
		int rb = apply_json(b, more[i], &eb);

		ck_assert_msg(ra == rb, "%s: %d (%s) vs decoded %d (%s)",
			      more[i], ra, ea.msg, rb, eb.msg);
	}
}

static void assert_equal_states(const state_t *a, const state_t *b,
				const char *what)
{
	struct blob x = enc(a), y = enc(b);
	char *ja = dump(a), *jb = dump(b);
	struct lg_error err = {0};

	same_bytes(x, y, what);
	ck_assert_str_eq(ja, jb);
	ck_assert_msg(model__state_check(b, &err) == 0, "%s: %s", what,
		      err.msg);
	free(ja);
	free(jb);
	free(x.p);
	free(y.p);
}

START_TEST(statecodec_roundtrip)
{
	const struct scenario *sc = &scenarios[_i];
	state_t *st = build(sc->events);
	struct blob b = enc(st), b2;
	state_t *d = dec(b);

	ck_assert_mem_eq(b.p, "GLST\x01", 5);
	ck_assert_uint_eq(state_seq(d), state_seq(st));
	ck_assert_int_eq(state_time_ns(d), state_time_ns(st));
	ck_assert_int_eq(state_horizon_ns(d), state_horizon_ns(st));
	ck_assert_uint_eq(d->n_verdicts, st->n_verdicts);
	ck_assert_uint_eq(d->n_notes, st->n_notes);
	ck_assert_uint_eq(d->n_cls, st->n_cls);
	ck_assert_uint_eq(d->n_holders, st->n_holders);
	b2 = enc(d);
	same_bytes(b, b2, sc->name);
	assert_equal_states(st, d, sc->name);
	continue_both(st, d, ev_more);
	assert_equal_states(st, d, sc->name);
	free(b.p);
	free(b2.p);
	state_free(st);
	state_free(d);
}
END_TEST

/* A clone is the same state: same bytes, before and after both move on; a
 * clone of a decoded state too. */
START_TEST(statecodec_clone)
{
	state_t *st = build(scenarios[_i].events);
	state_t *c = state_clone(st);
	struct blob b = enc(st);
	state_t *d = dec(b);
	state_t *dc = state_clone(d);

	assert_equal_states(st, c, "clone");
	assert_equal_states(st, dc, "clone of decoded");
	continue_both(st, c, ev_more);
	continue_both(d, dc, ev_more);
	assert_equal_states(st, c, "clone, moved on");
	assert_equal_states(st, dc, "clone of decoded, moved on");
	free(b.p);
	state_free(st);
	state_free(c);
	state_free(d);
	state_free(dc);
}
END_TEST

/* Two histories of the same length reaching the same content: tenants,
 * budgets, raw keys, nodes and holders in other orders, and a different
 * transient detour in each. Child lists and hash tables differ inside; the
 * bytes must not. */
static const char *const ev_order_a[] = {
	CLASS_H100,
	CLASS_A10,
	NODE("gpu-1", "h100", "8", "true"),
	TENANT("tenant-root", "null"),
	TENANT("tenant-a", "'tenant-root'"),
	TENANT("tenant-c", "'tenant-root'"),
	TENANT("tenant-a-b", "'tenant-a'"),
	NODE("gpu-2", "a10", "2", "false"),
	BUDGET("tenant-a", H100_KEY, "8"),
	BUDGET("tenant-a", TOTAL_KEY, "9"),
	RAWKEY("tenant-c", "nvidia.com/GA102", "true"),
	RAWKEY("tenant-c", "nvidia.com/GH100", "true"),
	UNITS("RESERVE", "tenant-a-b", "h100", "VMInstance", "vm1", "0", "2",
	      ""),
	UNITS("ALLOC", "tenant-a-b", "h100", "ResourceClaim", "c1", "0", "2",
	      "gpu-1"),
	UNITS("RESERVE", "tenant-c", "a10", "Pod", "p1", "0", "1", ""),
	UNITS("ALLOC", "default", "a10", "Pod", "p2", "0", "1", "gpu-9"),
	BUDGET("tenant-c", TOTAL_KEY, "1"),
	BUDGET("tenant-c", TOTAL_KEY, "null"),
	UNITS_AT("RELEASE", "tenant-a-b", "h100", "VMInstance", "vm1", "2", "1",
		 "", T1),
	UNITS_AT("RELEASE", "tenant-c", "a10", "Pod", "p1", "1", "0", "", T1),
	NULL,
};

static const char *const ev_order_b[] = {
	CLASS_H100,
	CLASS_A10,
	TENANT("tenant-root", "null"),
	TENANT("tenant-c", "'tenant-root'"),
	RAWKEY("tenant-c", "nvidia.com/GH100", "true"),
	RAWKEY("tenant-c", "nvidia.com/GA102", "true"),
	UNITS("ALLOC", "default", "a10", "Pod", "p2", "0", "1", "gpu-9"),
	UNITS("RESERVE", "tenant-c", "a10", "Pod", "p1", "0", "1", ""),
	NODE("gpu-2", "a10", "2", "false"),
	TENANT("tenant-a", "'tenant-root'"),
	BUDGET("tenant-a", TOTAL_KEY, "9"),
	TENANT("tenant-a-b", "'tenant-a'"),
	UNITS("ALLOC", "tenant-a-b", "h100", "ResourceClaim", "c1", "0", "2",
	      "gpu-1"),
	UNITS("RESERVE", "tenant-a-b", "h100", "Pod", "tmp", "0", "5", ""),
	UNITS("RELEASE", "tenant-a-b", "h100", "Pod", "tmp", "5", "0", ""),
	UNITS("RESERVE", "tenant-a-b", "h100", "VMInstance", "vm1", "0", "2",
	      ""),
	NODE("gpu-1", "h100", "8", "true"),
	BUDGET("tenant-a", H100_KEY, "8"),
	UNITS_AT("RELEASE", "tenant-c", "a10", "Pod", "p1", "1", "0", "", T1),
	UNITS_AT("RELEASE", "tenant-a-b", "h100", "VMInstance", "vm1", "2", "1",
		 "", T1),
	NULL,
};

START_TEST(statecodec_order)
{
	state_t *a = build(ev_order_a), *b = build(ev_order_b);
	struct blob x = enc(a);
	state_t *d = dec(x);

	assert_equal_states(a, b, "two orders");
	assert_equal_states(b, d, "other order, decoded");
	free(x.p);
	state_free(a);
	state_free(b);
	state_free(d);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Damaged bytes: every flip is refused with a message, or decodes to a
 * state that passes model__state_check and encodes back to exactly those bytes
 * (decode accepts canonical encodings only). */

static void try_decode(const uint8_t *p, size_t n, const char *what, size_t i)
{
	struct lg_error err = {0};
	state_t *st = (state_t *)&err; /* must be reset to NULL on failure */
	int rc = state_decode(&st, p, n, &err);

	if (rc != 0) {
		ck_assert_msg(rc == LG_ECORRUPT || rc == LG_EVERSION,
			      "%s %zu: rc %d", what, i, rc);
		ck_assert_ptr_null(st);
		ck_assert_int_eq(err.code, rc);
		ck_assert_msg(strstr(err.msg, "at byte") != NULL, "%s %zu: %s",
			      what, i, err.msg);
		return;
	} else {
		struct blob b = enc(st);

		ck_assert_msg(model__state_check(st, &err) == 0, "%s %zu: %s",
			      what, i, err.msg);
		ck_assert_msg(b.n == n && memcmp(b.p, p, n) == 0,
			      "%s %zu: accepted a non-canonical encoding", what,
			      i);
		free(b.p);
		state_free(st);
	}
}

START_TEST(statecodec_flip)
{
	static const uint8_t masks[] = {0x01, 0x02, 0x04, 0x08, 0x10,
					0x20, 0x40, 0x80, 0xff};
	state_t *st = build(scenarios[_i].events);
	struct blob b = enc(st);
	uint8_t *p = malloc(b.n + 1);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < b.n; i++) {
		for (size_t m = 0; m < sizeof(masks); m++) {
			memcpy(p, b.p, b.n);
			p[i] ^= masks[m];
			try_decode(p, b.n, "flip at", i);
		}
	}
	free(p);
	free(b.p);
	state_free(st);
}
END_TEST

START_TEST(statecodec_truncate)
{
	state_t *st = build(scenarios[_i].events);
	struct blob b = enc(st);
	uint8_t *p = malloc(b.n + 1);

	ck_assert_ptr_nonnull(p);
	for (size_t n = 0; n < b.n; n++) {
		struct lg_error err = {0};
		state_t *d = NULL;

		/* A copy of exactly n bytes, so that ASan sees any over-read.
		 */
		uint8_t *q = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(q);
		memcpy(q, b.p, n);
		ck_assert_int_eq(state_decode(&d, q, n, &err), LG_ECORRUPT);
		ck_assert_ptr_null(d);
		ck_assert_ptr_nonnull(strstr(err.msg, "at byte"));
		free(q);
	}
	for (unsigned extra = 0; extra < 256; extra += 85) {
		struct lg_error err = {0};
		state_t *d = NULL;

		memcpy(p, b.p, b.n);
		p[b.n] = (uint8_t)extra;
		ck_assert_int_eq(state_decode(&d, p, b.n + 1, &err),
				 LG_ECORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "trailing"));
	}
	free(p);
	free(b.p);
	state_free(st);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Hand-written encodings. A spec is space-separated tokens: m (magic and
 * version 1), b:N (one byte), u:N (uvarint), z:N (zigzag varint), s:TEXT (a
 * string, no spaces), a:N (a string of N 'a's), x:HEX (raw bytes). */

struct spec_buf {
	uint8_t p[4096];
	size_t n;
};

static void sb_put(struct spec_buf *b, const void *p, size_t n)
{
	ck_assert_uint_le(b->n + n, sizeof(b->p));
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void sb_uv(struct spec_buf *b, unsigned long long v)
{
	uint8_t c;

	do {
		c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		sb_put(b, &c, 1);
	} while (v);
}

static void sb_token(struct spec_buf *b, const char *t, size_t len)
{
	char arg[1024];

	ck_assert_uint_lt(len, sizeof(arg));
	memcpy(arg, t + 2, len > 2 ? len - 2 : 0);
	arg[len > 2 ? len - 2 : 0] = '\0';
	if (len == 1 && t[0] == 'm') {
		sb_put(b, "GLST\x01", 5);
	} else if (t[0] == 'b') {
		uint8_t c = (uint8_t)strtoul(arg, NULL, 0);

		sb_put(b, &c, 1);
	} else if (t[0] == 'u') {
		sb_uv(b, strtoull(arg, NULL, 10));
	} else if (t[0] == 'z') {
		long long v = strtoll(arg, NULL, 10);

		sb_uv(b, v < 0 ? ~((unsigned long long)v << 1)
			       : (unsigned long long)v << 1);
	} else if (t[0] == 's') {
		sb_uv(b, strlen(arg));
		sb_put(b, arg, strlen(arg));
	} else if (t[0] == 'a') {
		size_t n = strtoul(arg, NULL, 10);

		sb_uv(b, n);
		for (size_t i = 0; i < n; i++)
			sb_put(b, "a", 1);
	} else if (t[0] == 'x') {
		for (size_t i = 0; arg[i] && arg[i + 1]; i += 2) {
			char hex[3] = {arg[i], arg[i + 1], 0};
			uint8_t c = (uint8_t)strtoul(hex, NULL, 16);

			sb_put(b, &c, 1);
		}
	} else {
		ck_abort_msg("bad spec token %.*s", (int)len, t);
	}
}

static void spec_bytes(struct spec_buf *b, const char *spec)
{
	b->n = 0;
	while (*spec) {
		size_t len = strcspn(spec, " ");

		if (len > 0)
			sb_token(b, spec, len);
		spec += len;
		spec += strspn(spec, " ");
	}
}

/* A valid state: class h100, node gpu-1 (8, serving), namespace default
 * (empty record) and tenant-root with VMInstance vm1 (2 reserved, 2
 * allocated on gpu-1). Rows below swap one part for a broken one. */
#define HDR   "m u:3 z:5 z:4 u:0 u:0 "
#define NAMES "u:1 s:h100 "
#define DEF                                                                   \
	"s:{\"deviceClassName\":\"h100\",\"name\":\"h100\",\"resourceNames\"" \
	":[\"nvidia.com/GH100\"],\"tolerations\":[]} "
#define TABLE "u:1 " DEF
#define NODES "u:1 s:gpu-1 u:1 u:0 u:8 b:1 "
#define DFLT  "s:default b:0 u:0 u:0 u:0 u:0 "
#define ROOT  "s:tenant-root b:1 u:0 u:0 u:0 "
#define VM1   "b:1 s:vm1 s:uid-1 u:1 u:0 u:2 u:2 u:1 "
#define PRE   HDR NAMES TABLE NODES
#define GOOD  PRE "u:2 u:1 " DFLT ROOT "u:1 " VM1

static const struct corrupt_row {
	const char *spec;
	int rc;
	const char *msg; /* a part of the message */
} corrupt_rows[] = {
	{GOOD, 0, NULL},
	{HDR "u:0 u:0 u:0 u:0 u:0", 0, NULL},
	{"", LG_ECORRUPT, "magic at byte 0"},
	{"s:GLST b:1", LG_ECORRUPT, "magic at byte 0"},
	{"x:474c53", LG_ECORRUPT, "magic"},
	{"x:474c5354", LG_ECORRUPT, "version: truncated at byte 4"},
	/* Version 2 is version 1 with holds (DESIGN 3.7): 3 is unknown. */
	{"x:474c535403", LG_EVERSION, "version 3"},
	{"x:474c535400", LG_EVERSION, "version 0"},
	{"m", LG_ECORRUPT, "seq: truncated at byte 5"},
	{GOOD " b:0", LG_ECORRUPT, "1 trailing bytes"},
	{"m x:8300", LG_ECORRUPT, "seq: overlong varint at byte 5"},
	{"m x:ffffffffffffffffff02", LG_ECORRUPT, "overflows 64 bits"},
	{"m u:3 z:4 z:5 u:0 u:0", LG_ECORRUPT, "horizon after time"},
	{"m u:3 z:5 z:4 u:2 u:2", LG_ECORRUPT, "more verdicts and notes"},
	{"m u:3 z:5 z:4 u:0 u:0 u:2 s:h100 s:h100", LG_ECORRUPT,
	 "class name h100 repeats"},
	{"m u:3 z:5 z:4 u:0 u:0 u:1 s:H100", LG_ECORRUPT, "DNS-1123 label"},
	{"m u:3 z:5 z:4 u:0 u:0 u:1 x:0268", LG_ECORRUPT, "truncated"},
	{"m u:3 z:5 z:4 u:0 u:0 u:1 x:02680031", LG_ECORRUPT, "NUL byte"},
	{"m u:3 z:5 z:4 u:0 u:0 u:50", LG_ECORRUPT, "exceeds the"},
	{HDR "u:1 s:a10 " TABLE, LG_ECORRUPT, "not an interned name"},
	{HDR NAMES "u:1 s:{\"name\":\"h100\"}", LG_ECORRUPT, "not canonical"},
	{HDR NAMES "u:1 s:{\"name\":\"H\"}", LG_ECORRUPT, "not a valid class"},
	{HDR NAMES "u:1 s:[", LG_ECORRUPT, "not a valid class"},
	{HDR "u:2 s:h100 s:a10 u:2 " DEF DEF, LG_ECORRUPT, "not after h100"},
	{HDR NAMES TABLE "u:1 s:gpu-1 u:1 u:1 u:8 b:1", LG_ECORRUPT,
	 "class id 1 out of range"},
	{HDR "u:2 s:h100 s:a10 " TABLE "u:1 s:gpu-1 u:2 u:1 u:8 b:1 u:0 u:8 "
	     "b:1",
	 LG_ECORRUPT, "class id 0 out of order"},
	{HDR NAMES TABLE "u:1 s:gpu-1 u:1 u:0 u:0 b:0", LG_ECORRUPT,
	 "empty entry"},
	{HDR NAMES TABLE "u:1 s:gpu-1 u:1 u:0 u:8 b:2", LG_ECORRUPT,
	 "serves is 2"},
	{HDR NAMES TABLE "u:1 s:gpu-1 u:1 u:0 u:9223372036854775808 b:1",
	 LG_ECORRUPT, "out of range"},
	{HDR NAMES TABLE "u:2 s:gpu-2 u:0 s:gpu-1 u:0", LG_ECORRUPT,
	 "node gpu-1: not after gpu-2"},
	{HDR NAMES TABLE "u:2 s:gpu-1 u:0 s:gpu-1 u:0", LG_ECORRUPT,
	 "not after"},
	{HDR NAMES TABLE "u:1 s:GPU u:0", LG_ECORRUPT, "DNS-1123 subdomain"},
	{PRE "u:2 u:1 " ROOT "u:1 " VM1 DFLT, LG_ECORRUPT,
	 "namespace default: not after tenant-root"},
	{PRE "u:1 u:0 s:Default b:0 u:0 u:0 u:0 u:0", LG_ECORRUPT,
	 "namespace name is not a DNS-1123 label"},
	{PRE "u:1 u:0 s:default b:2 u:0 u:0 u:0 u:0", LG_ECORRUPT,
	 "flags 0x02"},
	{PRE "u:1 u:0 s:default b:1 u:0 u:0 u:0 u:0", LG_ECORRUPT,
	 "a tenant node but not a tenant"},
	{PRE "u:1 u:1 s:tenant-root b:0 u:0 u:0 u:0 u:1 " VM1, LG_ECORRUPT,
	 "holders without its tenant node"},
	{PRE "u:1 u:0 s:tenant-a b:1 u:0 u:0 u:0 u:0", LG_ECORRUPT,
	 "parent tenant-root is not a node"},
	{PRE "u:2 u:0 s:tenant-a b:1 u:0 u:0 u:0 u:0 s:tenant-root b:0 u:0 "
	     "u:0 u:0 u:0",
	 LG_ECORRUPT, "parent tenant-root is not a node"},
	{PRE "u:1 u:0 s:tenant-a b:0 u:1 s:" TOTAL_KEY " u:1 u:0 u:0 u:0",
	 LG_ECORRUPT, "budgets without a tenant node"},
	{PRE "u:1 u:0 s:tenant-root b:1 u:1 s:foo/bar u:1 u:0 u:0 u:0",
	 LG_ECORRUPT, "foo/bar is not a budget key"},
	{PRE "u:1 u:0 s:tenant-root b:1 u:2 s:" H100_KEY " u:1 s:" TOTAL_KEY
	     " u:1 u:0 u:0 u:0",
	 LG_ECORRUPT, "budget " TOTAL_KEY " not after " H100_KEY},
	{PRE "u:1 u:0 s:tenant-root b:1 u:2 s:" TOTAL_KEY " u:1 s:" H100_KEY
	     " u:1 u:0 u:0 u:0",
	 0, NULL},
	{PRE "u:1 u:0 s:tenant-root b:1 u:1 s:" H100_KEY " u:1 u:0 u:0 u:0", 0,
	 NULL},
	{PRE "u:1 u:0 s:tenant-root b:1 u:0 u:2 s:b s:a u:0 u:0", LG_ECORRUPT,
	 "raw key a not after b"},
	{PRE "u:1 u:0 s:tenant-root b:1 u:0 u:1 s: u:0 u:0", LG_ECORRUPT,
	 "empty raw key"},
	{PRE "u:1 u:0 s:default b:0 u:0 u:1 s:x u:0 u:0", LG_ECORRUPT,
	 "raw keys without a tenant node"},
	{PRE "u:1 u:0 "
	     "s:default b:0 u:0 u:0 u:1 u:0 u:0 u:0 z:0 u:0",
	 LG_ECORRUPT, "empty billing entry for h100"},
	{PRE "u:1 u:0 "
	     "s:default b:0 u:0 u:0 u:1 u:0 u:0 u:0 z:-7 u:0",
	 0, NULL},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:0 s:vm1 s:uid-1 u:1 u:0 u:2 u:2 u:1",
	 LG_ECORRUPT, "holder kind 0"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:5 s:vm1 s:uid-1 u:1 u:0 u:2 u:2 u:1",
	 LG_ECORRUPT, "holder kind 5"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm_1 s:uid-1 u:1 u:0 u:2 u:2 u:1",
	 LG_ECORRUPT, "holder name is not"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 a:129 u:1 u:0 u:2 u:2 u:1",
	 LG_ECORRUPT, "holder uid: length 129 above 128"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 a:128 u:1 u:0 u:2 u:2 u:1", 0,
	 NULL},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 s:uid-1 u:0 u:0 u:0 u:0 u:0",
	 LG_ECORRUPT, "holder tenant-root/vm1 holds nothing"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 s:uid-1 u:1 u:0 u:0 u:0 u:0",
	 LG_ECORRUPT, "no units of h100"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 s:uid-1 u:1 u:0 u:2 u:2 u:2",
	 LG_ECORRUPT, "node index 2 of 1"},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 s:uid-1 u:1 u:0 u:2 u:2 u:0",
	 0, NULL},
	{PRE "u:2 u:1 " DFLT ROOT "u:1 b:1 s:vm1 s:uid-1 u:1 u:0 u:0 u:2 u:1",
	 0, NULL},
	{PRE "u:2 u:2 " DFLT ROOT "u:1 " VM1 "u:0", LG_ECORRUPT,
	 "2 holders announced, 1 found"},
	{PRE "u:2 u:2 " DFLT ROOT "u:2 " VM1 VM1, LG_ECORRUPT,
	 "holder tenant-root/vm1: not after vm1"},
	{PRE "u:2 u:2 " DFLT ROOT "u:2 b:2 s:a s:u u:1 u:0 u:1 u:0 " VM1,
	 LG_ECORRUPT, "not after a"},
	{PRE "u:2 u:2 " DFLT ROOT "u:2 " VM1 "b:2 s:a s:u u:1 u:0 u:1 u:0", 0,
	 NULL},
	{PRE "u:1 u:2 s:default b:0 u:0 u:0 u:0 u:2 "
	     "b:4 s:a s:u u:1 u:0 u:9223372036854775807 u:0 "
	     "b:4 s:b s:u u:1 u:0 u:1 u:0",
	 LG_ECORRUPT, "reserved units of default overflows"},
	{PRE "u:1 u:2 s:default b:0 u:0 u:0 u:0 u:2 "
	     "b:4 s:a s:u u:1 u:0 u:0 u:9223372036854775807 u:1 "
	     "b:4 s:b s:u u:1 u:0 u:0 u:1 u:1",
	 LG_ECORRUPT, "allocated units of default overflows"},
	{PRE "u:3 u:2 s:tenant-a b:1 u:0 u:0 u:0 u:1 "
	     "b:4 s:a s:u u:1 u:0 u:9223372036854775807 u:0 "
	     "s:tenant-b b:1 u:0 u:0 u:0 u:1 b:4 s:b s:u u:1 u:0 u:1 u:0 "
	     "s:tenant-root b:1 u:0 u:0 u:0 u:0",
	 LG_ECORRUPT, "subtree units of tenant-root overflows"},
};

START_TEST(statecodec_corrupt)
{
	const struct corrupt_row *row = &corrupt_rows[_i];
	struct spec_buf b;
	struct lg_error err = {0};
	state_t *st = NULL;
	int rc;

	spec_bytes(&b, row->spec);
	rc = state_decode(&st, b.p, b.n, &err);
	ck_assert_msg(rc == row->rc, "%s: rc %d, want %d (%s)", row->spec, rc,
		      row->rc, err.msg);
	if (row->rc != 0) {
		ck_assert_ptr_null(st);
		ck_assert_msg(strstr(err.msg, row->msg) != NULL,
			      "%s: \"%s\" lacks \"%s\"", row->spec, err.msg,
			      row->msg);
		ck_assert_ptr_nonnull(strstr(err.msg, "at byte"));
		return;
	}
	try_decode(b.p, b.n, "row", (size_t)_i);
	state_free(st);
}
END_TEST

/* The valid spec decodes to what it says. */
START_TEST(statecodec_spec_content)
{
	struct spec_buf b;
	struct lg_error err = {0};
	state_t *st = NULL;
	const struct nsrec *root;
	const struct noderec *nd;

	spec_bytes(&b, GOOD);
	ck_assert_int_eq(state_decode(&st, b.p, b.n, &err), 0);
	ck_assert_uint_eq(state_seq(st), 3);
	ck_assert_int_eq(state_time_ns(st), 5);
	ck_assert_int_eq(state_horizon_ns(st), 4);
	ck_assert_uint_eq(state_classes(st)->n, 1);
	root = model__state_ns(st, "tenant-root");
	ck_assert_ptr_nonnull(root);
	ck_assert_ptr_eq(st->root, root);
	ck_assert_int_eq(root->reserved[0], 2);
	ck_assert_int_eq(root->sub_reserved[0], 2);
	ck_assert_int_eq(root->sub_allocated[0], 2);
	ck_assert_int_eq(root->sub_reserved_total, 2);
	ck_assert_uint_eq(root->n_holders, 1);
	ck_assert(!model__state_ns(st, "default")->node);
	nd = model__state_node(st, "gpu-1");
	ck_assert_ptr_nonnull(nd);
	ck_assert_int_eq(nd->capacity[0], 8);
	ck_assert_int_eq(nd->allocated[0], 2);
	ck_assert(nd->serves[0]);
	ck_assert_int_eq(model__state_check(st, &err), 0);
	state_free(st);
}
END_TEST

MODEL_PART(statecodec)
{
	TCase *tc;

	tc = tcase_create("statecodec_roundtrip");
	tcase_add_loop_test(tc, statecodec_roundtrip, 0, N_SCENARIOS);
	suite_add_tcase(s, tc);
	tc = tcase_create("statecodec_clone");
	tcase_add_loop_test(tc, statecodec_clone, 0, N_SCENARIOS);
	suite_add_tcase(s, tc);
	tc = tcase_create("statecodec_order");
	tcase_add_test(tc, statecodec_order);
	suite_add_tcase(s, tc);
	tc = tcase_create("statecodec_damage");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, statecodec_flip, 0, N_SCENARIOS);
	tcase_add_loop_test(tc, statecodec_truncate, 0, N_SCENARIOS);
	suite_add_tcase(s, tc);
	tc = tcase_create("statecodec_corrupt");
	tcase_add_loop_test(tc, statecodec_corrupt, 0,
			    sizeof(corrupt_rows) / sizeof(corrupt_rows[0]));
	tcase_add_test(tc, statecodec_spec_content);
	suite_add_tcase(s, tc);
}
