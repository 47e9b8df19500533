/* The event codec (ledger/codec.c): round trips, canonical bytes, refusal of
 * every malformed record, bounded writes, and the SHA-256 chain step. */
#include "tests/ledger_tests.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TOTAL_KEY "gpuclass.cozystack.io/devices"

/* A record long enough that its length needs a two-byte varint. */
#define LONG_RECORD                                                      \
	"{\"allowed\":true,\"checks\":[{\"budget\":8,\"growth\":2,"      \
	"\"key\":\"h100.gpuclass.cozystack.io/devices\",\"ok\":true,"    \
	"\"remaining\":6,\"tenant\":\"tenant-a\",\"used\":0}],\"kind\":" \
	"\"VMInstance\",\"name\":\"vm1\",\"namespace\":\"tenant-a-b\","  \
	"\"reason\":\"WithinBudget\"}"

/* One valid event per row, every type, with edge values. Members a type does
 * not carry are left zero, so that a decoded event equals its row. */
static const struct event rows[] = {
	{.seq = 1, .time_ns = 0, .type = EV_TENANT, .ns = "tenant-root"},
	{.seq = 2,
	 .time_ns = -1,
	 .type = EV_TENANT,
	 .ns = "tenant-a",
	 .parent = "tenant-root"},
	{.seq = UINT64_MAX,
	 .time_ns = INT64_MIN,
	 .type = EV_TENANT_GONE,
	 .ns = "tenant-a-b",
	 .parent = "tenant-a"},
	{.seq = 3,
	 .time_ns = 1,
	 .type = EV_BUDGET,
	 .ns = "tenant-a",
	 .key = TOTAL_KEY,
	 .present = true,
	 .value = INT64_MAX},
	{.seq = 4,
	 .time_ns = 2,
	 .type = EV_BUDGET,
	 .ns = "default",
	 .key = "h100" GPU_CLASS_KEY_SUFFIX,
	 .present = true,
	 .value = 0},
	{.seq = 5,
	 .time_ns = 3,
	 .type = EV_BUDGET,
	 .ns = "tenant-a",
	 .key = TOTAL_KEY,
	 .present = false},
	{.seq = 6,
	 .time_ns = 4,
	 .type = EV_RAWKEY,
	 .ns = "tenant-a",
	 .key = "nvidia.com/GH100",
	 .present = true},
	{.seq = 7,
	 .time_ns = 5,
	 .type = EV_RAWKEY,
	 .ns = "tenant-a",
	 .key = "x",
	 .present = false},
	{.seq = 8,
	 .time_ns = INT64_MAX,
	 .type = EV_CLASS,
	 .cls = "h100",
	 .text = "{\"deviceClassName\":\"h100\",\"name\":\"h100\","
		 "\"resourceNames\":[\"nvidia.com/GH100\"],"
		 "\"tolerations\":[]}"},
	{.seq = 9, .time_ns = 6, .type = EV_CLASS, .cls = "h100"},
	{.seq = 10, .time_ns = 7, .type = EV_CLASS, .cls = "a", .text = ""},
	{.seq = 11,
	 .time_ns = 8,
	 .type = EV_NODE,
	 .node = "node-1.example",
	 .cls = "h100",
	 .value = INT64_MAX,
	 .present = true},
	{.seq = 12,
	 .time_ns = 9,
	 .type = EV_NODE,
	 .node = "n",
	 .cls = "h100",
	 .value = 0,
	 .present = false},
	{.seq = 13,
	 .time_ns = -1000000000,
	 .type = EV_RESERVE,
	 .ns = "tenant-a",
	 .cls = "h100",
	 .kind = HK_VMINSTANCE,
	 .name = "vm1",
	 .uid = "",
	 .before = 0,
	 .after = HOLDER_UNITS_MAX},
	{.seq = 14,
	 .time_ns = 10,
	 .type = EV_RELEASE,
	 .ns = "tenant-a",
	 .cls = "h100",
	 .kind = HK_KUBERNETESNODES,
	 .name = "pool.x",
	 .uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
	 .before = HOLDER_UNITS_MAX,
	 .after = 0},
	{.seq = 15,
	 .time_ns = 11,
	 .type = EV_ALLOC,
	 .ns = "default",
	 .cls = "h100",
	 .kind = HK_RESOURCECLAIM,
	 .name = "c",
	 .uid = "u",
	 .before = 63,
	 .after = 64,
	 .node = ""},
	{.seq = 16,
	 .time_ns = 12,
	 .type = EV_FREE,
	 .ns = "default",
	 .cls = "h100",
	 .kind = HK_POD,
	 .name = "p",
	 .uid = "u",
	 .before = 1,
	 .after = 0,
	 .node = "node-1"},
	{.seq = 17, .time_ns = 13, .type = EV_VERDICT, .text = LONG_RECORD},
	{.seq = 18, .time_ns = 14, .type = EV_VERDICT, .text = ""},
	{.seq = 19,
	 .time_ns = 15,
	 .type = EV_NOTE,
	 .key = "InvalidQuantity",
	 .ns = "default",
	 .kind = HK_POD,
	 .name = "p",
	 .text = "bad \"q\""},
	{.seq = 20,
	 .time_ns = 16,
	 .type = EV_NOTE,
	 .key = "",
	 .ns = NULL,
	 .kind = HK_NONE,
	 .name = NULL,
	 .text = ""},
	{.seq = 21,
	 .time_ns = 17,
	 .type = EV_NOTE,
	 .key = "Relist",
	 .ns = "",
	 .kind = HK_NONE,
	 .name = "",
	 .text = "410"},
	{.seq = 0, .time_ns = 0, .type = EV_TICK},
	{.seq = UINT64_MAX, .time_ns = INT64_MAX, .type = EV_TICK},
	{.seq = (uint64_t)1 << 63, .time_ns = INT64_MIN, .type = EV_TICK},
	{.seq = 127, .time_ns = -64, .type = EV_TICK},
	{.seq = 128, .time_ns = 64, .type = EV_TICK},
};

#define N_ROWS (sizeof(rows) / sizeof(rows[0]))

/* Encodes into a malloc'ed buffer of exactly the size needed. */
static uint8_t *encode(const struct event *ev, size_t *len)
{
	size_t n = ledger__event_encode(ev, NULL, 0);
	uint8_t *buf = malloc(n);

	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(ledger__event_encode(ev, buf, n), n);
	*len = n;
	return buf;
}

/* Decodes a copy of exactly len bytes, so that the sanitizer catches any
 * read past the end. The copy is returned for the event's strings. */
static int decode(struct event *ev, const uint8_t *bytes, size_t len,
		  struct lg_error *err, uint8_t **copy)
{
	*copy = malloc(len > 0 ? len : 1);
	ck_assert_ptr_nonnull(*copy);
	if (len > 0)
		memcpy(*copy, bytes, len);
	return ledger__event_decode(ev, *copy, len, err);
}

static void str_eq(const char *what, const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		ck_assert_msg(a == b, "%s: %s vs %s", what, a ? a : "NULL",
			      b ? b : "NULL");
	else
		ck_assert_msg(strcmp(a, b) == 0, "%s: %s vs %s", what, a, b);
}

static void event_eq(const struct event *a, const struct event *b)
{
	ck_assert_uint_eq(a->seq, b->seq);
	ck_assert_int_eq(a->time_ns, b->time_ns);
	ck_assert_int_eq(a->type, b->type);
	str_eq("ns", a->ns, b->ns);
	str_eq("parent", a->parent, b->parent);
	str_eq("key", a->key, b->key);
	ck_assert_int_eq(a->present, b->present);
	ck_assert_int_eq(a->value, b->value);
	str_eq("cls", a->cls, b->cls);
	str_eq("text", a->text, b->text);
	str_eq("node", a->node, b->node);
	ck_assert_int_eq(a->kind, b->kind);
	str_eq("name", a->name, b->name);
	str_eq("uid", a->uid, b->uid);
	ck_assert_int_eq(a->before, b->before);
	ck_assert_int_eq(a->after, b->after);
}

/* Every string of a decoded event points into its record (zero copy). */
static void points_into(const struct event *ev, const uint8_t *buf, size_t len)
{
	const char *s[] = {ev->ns,   ev->parent, ev->key,  ev->cls,
			   ev->text, ev->node,	 ev->name, ev->uid};

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (s[i] != NULL)
			ck_assert_msg((const uint8_t *)s[i] >= buf &&
					      (const uint8_t *)s[i] < buf + len,
				      "string %zu not in the record", i);
}

START_TEST(codec_round_trip)
{
	const struct event *row = &rows[_i];
	struct lg_error err = {0};
	struct event ev;
	uint8_t *buf, *copy, *again;
	size_t len, len2;

	ck_assert_int_eq(event_validate(row, &err), 0);
	buf = encode(row, &len);
	ck_assert_msg(decode(&ev, buf, len, &err, &copy) == 0, "row %d: %s", _i,
		      err.msg);
	event_eq(&ev, row);
	points_into(&ev, copy, len);
	again = encode(&ev, &len2);
	ck_assert_uint_eq(len2, len);
	ck_assert_mem_eq(again, buf, len);
	free(again);
	free(copy);
	free(buf);
}
END_TEST

/* The format byte for byte, so that a change of layout cannot slip in
 * unnoticed (old ledgers would no longer verify). */
static const struct {
	struct event ev;
	const char *bytes;
	size_t len;
} golden[] = {
	{{.seq = 1, .type = EV_TICK}, "\x01\x0d\x01\x00", 4},
	{{.seq = 1, .time_ns = -1, .type = EV_TENANT, .ns = "tenant-root"},
	 "\x01\x01\x01\x01\x0b"
	 "tenant-root\x00\x00",
	 18},
	{{.seq = 300,
	  .time_ns = 1,
	  .type = EV_BUDGET,
	  .ns = "default",
	  .key = TOTAL_KEY,
	  .present = true,
	  .value = 64},
	 "\x01\x03\xac\x02\x02\x07"
	 "default\x00\x1d" TOTAL_KEY "\x00\x01\x80\x01",
	 48},
	{{.seq = 2,
	  .time_ns = INT64_MIN,
	  .type = EV_NOTE,
	  .key = "X",
	  .text = "m"},
	 "\x01\x0c\x02\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
	 "\x01X\x00"
	 "\x00\x00\x00"
	 "\x01m\x00",
	 22},
	{{.seq = 3,
	  .time_ns = INT64_MAX,
	  .type = EV_ALLOC,
	  .ns = "a",
	  .cls = "c",
	  .kind = HK_POD,
	  .name = "p",
	  .uid = "",
	  .before = 0,
	  .after = 1,
	  .node = ""},
	 "\x01\x09\x03\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01\x01"
	 "a\x00\x01"
	 "c\x00\x03\x01p\x00\x00\x00\x00\x02\x00\x00",
	 29},
	{{.seq = 4, .time_ns = 0, .type = EV_CLASS, .cls = "h"},
	 "\x01\x05\x04\x00\x01h\x00\x00",
	 8},
};

START_TEST(codec_golden)
{
	struct lg_error err = {0};
	struct event ev;
	uint8_t *buf, *copy;
	size_t len;

	buf = encode(&golden[_i].ev, &len);
	ck_assert_uint_eq(len, golden[_i].len);
	ck_assert_mem_eq(buf, golden[_i].bytes, len);
	ck_assert_msg(decode(&ev, (const uint8_t *)golden[_i].bytes, len, &err,
			     &copy) == 0,
		      "%s", err.msg);
	event_eq(&ev, &golden[_i].ev);
	free(copy);
	free(buf);
}
END_TEST

/* Every substitution of every byte: refused as corrupt (or as another
 * version, only for byte 0), or accepted as an event that encodes back to
 * exactly the changed bytes. Never a crash or an over-read. */
START_TEST(codec_byte_flip)
{
	size_t len, refused = 0;
	uint8_t *buf = encode(&rows[_i], &len), *mut = malloc(len);

	ck_assert_ptr_nonnull(mut);
	for (size_t pos = 0; pos < len; pos++) {
		for (unsigned x = 1; x < 256; x++) {
			struct lg_error err = {0};
			struct event ev;
			int rc;

			memcpy(mut, buf, len);
			mut[pos] ^= (uint8_t)x;
			rc = ledger__event_decode(&ev, mut, len, &err);
			if (rc == 0) {
				size_t n;
				uint8_t *back = encode(&ev, &n);

				ck_assert_uint_eq(n, len);
				ck_assert_mem_eq(back, mut, len);
				free(back);
				continue;
			}
			refused++;
			ck_assert_msg(rc == LG_ECORRUPT ||
					      (rc == LG_EVERSION && pos == 0),
				      "byte %zu ^ %u: rc %d", pos, x, rc);
			ck_assert_int_eq(err.code, rc);
			ck_assert_ptr_nonnull(strstr(err.msg, "byte"));
		}
	}
	/* At least the version and type bytes must be refused. */
	ck_assert_uint_ge(refused, 255 + 255 - 12);
	free(mut);
	free(buf);
}
END_TEST

START_TEST(codec_truncated)
{
	size_t len;
	uint8_t *buf = encode(&rows[_i], &len);

	for (size_t cut = 0; cut < len; cut++) {
		struct lg_error err = {0};
		struct event ev;
		uint8_t *copy;

		ck_assert_msg(decode(&ev, buf, cut, &err, &copy) == LG_ECORRUPT,
			      "row %d cut at %zu accepted", _i, cut);
		ck_assert_int_eq(err.code, LG_ECORRUPT);
		ck_assert_ptr_nonnull(strstr(err.msg, "event record"));
		/* A refused record leaves a zeroed event, no dangling strings.
		 */
		ck_assert_int_eq(ev.type, EV_NONE);
		ck_assert_ptr_null(ev.ns);
		free(copy);
	}
	free(buf);
}
END_TEST

START_TEST(codec_trailing)
{
	static const uint8_t extra[] = {0x00, 0x01, 0x80, 0xff};
	size_t len;
	uint8_t *buf = encode(&rows[_i], &len), *longer = malloc(len + 1);

	ck_assert_ptr_nonnull(longer);
	memcpy(longer, buf, len);
	for (size_t i = 0; i < sizeof(extra); i++) {
		struct lg_error err = {0};
		struct event ev;

		longer[len] = extra[i];
		ck_assert_int_eq(
			ledger__event_decode(&ev, longer, len + 1, &err),
			LG_ECORRUPT);
		ck_assert_msg(strstr(err.msg, "trailing") != NULL, "%s",
			      err.msg);
	}
	free(longer);
	free(buf);
}
END_TEST

/* Hand-made records: what decode must accept or refuse, and a word its
 * message must contain. */
#define R(s) (const uint8_t *)(s), sizeof(s) - 1
static const struct {
	const uint8_t *bytes;
	size_t len;
	int rc;
	const char *word;
} crafted[] = {
	/* Header. */
	{R(""), LG_ECORRUPT, "header"},
	{R("\x01"), LG_ECORRUPT, "header"},
	{R("\x00\x0d\x01\x00"), LG_EVERSION, "version 0"},
	{R("\x02\x0d\x01\x00"), LG_EVERSION, "version 2"},
	{R("\xff\x0d\x01\x00"), LG_EVERSION, "version 255"},
	{R("\x01\x00\x01\x00"), LG_ECORRUPT, "type 0"},
	/* 14 is HOLDS (DESIGN 3.7): 15 is the first unknown type. */
	{R("\x01\x0f\x01\x00"), LG_ECORRUPT, "type 15"},
	{R("\x01\xff\x01\x00"), LG_ECORRUPT, "type 255"},
	/* Varints: minimal, at most 10 bytes, within 64 bits. */
	{R("\x01\x0d\x81\x00\x00"), LG_ECORRUPT, "overlong"},
	{R("\x01\x0d\x80\x00\x00"), LG_ECORRUPT, "overlong"},
	{R("\x01\x0d\x01\x80\x80\x00"), LG_ECORRUPT, "overlong"},
	{R("\x01\x0d\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00"), 0, NULL},
	{R("\x01\x0d\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02\x00"), LG_ECORRUPT,
	 "64 bits"},
	{R("\x01\x0d\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00"), LG_ECORRUPT,
	 "64 bits"},
	{R("\x01\x0d\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00\x00"), LG_ECORRUPT,
	 "overlong"},
	{R("\x01\x0d\x01\x80"), LG_ECORRUPT, "truncated"},
	{R("\x01\x0d\x01"), LG_ECORRUPT, "truncated"},
	/* Strings: length within the record, NUL-terminated, no NUL inside. */
	{R("\x01\x01\x01\x00\x08tenant-a\x00\x0ctenant-root\x00"), 0, NULL},
	{R("\x01\x01\x01\x00\x88\x00tenant-a\x00\x0ctenant-root\x00"),
	 LG_ECORRUPT, "overlong"},
	{R("\x01\x01\x01\x00\x08tenant-a\x01\x0ctenant-root\x00"), LG_ECORRUPT,
	 "not NUL-terminated"},
	{R("\x01\x01\x01\x00\x08tena\x00t-a\x00\x0ctenant-root\x00"),
	 LG_ECORRUPT, "NUL byte inside"},
	{R("\x01\x01\x01\x00\x09tenant-a\x00\x0ctenant-root\x00"), LG_ECORRUPT,
	 "ns"},
	{R("\x01\x01\x01\x00\x08tenant-a\x00\x0dtenant-root\x00"), LG_ECORRUPT,
	 "past the end"},
	{R("\x01\x01\x01\x00\x08tenant-a\x00\x0ctenant-root"), LG_ECORRUPT,
	 "past the end"},
	{R("\x01\x01\x01\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
	 LG_ECORRUPT, "past the end"},
	{R("\x01\x01\x01\x00\x08tenant-a\x00\xff\xff\xff\xff\xff\xff\xff\xff"
	   "\xff\x01"),
	 LG_ECORRUPT, "past the end"},
	/* Booleans are 0 or 1; kinds below HK_MAX. */
	{R("\x01\x04\x01\x00\x01\x61\x00\x01x\x00\x01"), 0, NULL},
	{R("\x01\x04\x01\x00\x01\x61\x00\x01x\x00\x02"), LG_ECORRUPT,
	 "present"},
	{R("\x01\x04\x01\x00\x01\x61\x00\x01x\x00\xff"), LG_ECORRUPT,
	 "present"},
	{R("\x01\x04\x01\x00\x01\x61\x00\x01x\x00"), LG_ECORRUPT, "present"},
	{R("\x01\x0c\x01\x00\x01X\x00\x00\x04\x00\x01m\x00"), 0, NULL},
	{R("\x01\x0c\x01\x00\x01X\x00\x00\x05\x00\x01m\x00"), LG_ECORRUPT,
	 "kind"},
	/* Structurally sound but not a valid event. */
	{R("\x01\x01\x01\x00\x07Tenant!\x00\x00"), LG_ECORRUPT, "invalid"},
	{R("\x01\x01\x01\x00\x08tenant-a\x00\x00"), LG_ECORRUPT, "parent"},
	{R("\x01\x07\x01\x00\x01\x61\x00\x01\x63\x00\x00\x01p\x00\x00\x00\x00"
	   "\x02"),
	 LG_ECORRUPT, "kind"},
	{R("\x01\x07\x01\x00\x01\x61\x00\x01\x63\x00\x01\x01p\x00\x00\x00\x02"
	   "\x00"),
	 LG_ECORRUPT, "grow"},
	{R("\x01\x07\x01\x00\x01\x61\x00\x01\x63\x00\x01\x01p\x00\x00\x00\x00"
	   "\x02"),
	 0, NULL},
	{R("\x01\x03\x01\x00\x01\x61\x00\x1d" TOTAL_KEY "\x00\x01\x01"),
	 LG_ECORRUPT, "negative"},
};

START_TEST(codec_crafted)
{
	struct lg_error err = {0};
	struct event ev;
	uint8_t *copy;
	int rc = decode(&ev, crafted[_i].bytes, crafted[_i].len, &err, &copy);

	ck_assert_msg(rc == crafted[_i].rc, "row %d: rc %d (%s)", _i, rc,
		      err.msg);
	if (rc == 0) {
		size_t n;
		uint8_t *back = encode(&ev, &n);

		ck_assert_uint_eq(n, crafted[_i].len);
		ck_assert_mem_eq(back, crafted[_i].bytes, n);
		free(back);
	} else {
		ck_assert_int_eq(err.code, rc);
		ck_assert_msg(strstr(err.msg, crafted[_i].word) != NULL,
			      "row %d: \"%s\" lacks \"%s\"", _i, err.msg,
			      crafted[_i].word);
		ck_assert_ptr_nonnull(strstr(err.msg, "at byte"));
	}
	free(copy);
}
END_TEST

/* A VERDICT of size bytes in all (seq 1, time 0, a 3-byte length). */
static uint8_t *verdict_of_size(size_t size)
{
	size_t tlen = size - 8;
	char *text = malloc(tlen + 1);
	struct event ev = {.seq = 1, .type = EV_VERDICT};
	uint8_t *buf;
	size_t n;

	ck_assert_ptr_nonnull(text);
	memset(text, 'v', tlen);
	text[tlen] = '\0';
	ev.text = text;
	buf = encode(&ev, &n);
	ck_assert_uint_eq(n, size);
	free(text);
	return buf;
}

START_TEST(codec_size_bound)
{
	struct lg_error err = {0};
	struct event ev;
	uint8_t *at = verdict_of_size(LEDGER_EVENT_MAX_BYTES);
	uint8_t *over = verdict_of_size(LEDGER_EVENT_MAX_BYTES + 1);

	ck_assert_int_eq(
		ledger__event_decode(&ev, at, LEDGER_EVENT_MAX_BYTES, &err), 0);
	ck_assert_uint_eq(strlen(ev.text), LEDGER_EVENT_MAX_BYTES - 8);
	ck_assert_int_eq(ledger__event_decode(&ev, over,
					      LEDGER_EVENT_MAX_BYTES + 1, &err),
			 LG_ECORRUPT);
	ck_assert_ptr_nonnull(strstr(err.msg, "bound"));
	free(over);
	free(at);
}
END_TEST

/* Too small a buffer: the size needed is returned, nothing is written past
 * cap (the canary bytes after it stay), and cap == size writes it all. */
START_TEST(codec_encode_cap)
{
	enum {
		CANARY = 32
	};
	size_t len;
	uint8_t *want = encode(&rows[_i], &len);
	uint8_t *buf = malloc(len + CANARY);

	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(ledger__event_encode(&rows[_i], NULL, 0), len);
	for (size_t cap = 0; cap <= len; cap++) {
		memset(buf, 0xa5, len + CANARY);
		ck_assert_uint_eq(ledger__event_encode(&rows[_i], buf, cap),
				  len);
		for (size_t i = cap; i < len + CANARY; i++)
			ck_assert_msg(buf[i] == 0xa5,
				      "cap %zu: byte %zu written", cap, i);
		if (cap == len)
			ck_assert_mem_eq(buf, want, len);
	}
	free(buf);
	free(want);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* The chain step, against SHA-256 computed independently (python3 hashlib,
 * cross-checked with sha256sum). */

static void unhex(const char *hex, uint8_t *out, size_t n)
{
	ck_assert_uint_eq(strlen(hex), 2 * n);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		ck_assert_int_eq(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

enum {
	DATA_ZERO,
	DATA_ABC,
	DATA_A,
	DATA_SEVENS
};

static const struct {
	int prev_iota; /* prev = 0, 1, ..., 31 instead of 32 zero bytes */
	int data;
	size_t len;
	const char *want;
} vectors[] = {
	{0, DATA_ZERO, 0,
	 "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"},
	{0, DATA_ABC, 3,
	 "365aa7d8f7f9402c4b9434502b4cc89ddb09fe50d7cd95b493b834c62d5a5370"},
	/* 55, 56 and 64 bytes in all: the padding boundaries of a block. */
	{0, DATA_A, 23,
	 "09b67118a54ada71bf8af7685499f1d4e9a0fb3f53fc8e696029fb8910efdc3e"},
	{0, DATA_A, 24,
	 "3d55b187cdaf79b51cc5ace9c968aa579131cbf8b749f160f285ece944a8b752"},
	{0, DATA_A, 32,
	 "02e1135630209abf08d0402d579a5282ed2b5b50bb51ee0ed1450792d5d979a0"},
	{1, DATA_SEVENS, 1000,
	 "d35eb02143fdab24cffec86ec924643bcc7fddc9b10a33c474c7d93c5161c4c8"},
};

static void vector_input(int i, uint8_t *prev, uint8_t *data)
{
	for (size_t k = 0; k < LEDGER_HEAD_BYTES; k++)
		prev[k] = vectors[i].prev_iota ? (uint8_t)k : 0;
	for (size_t k = 0; k < vectors[i].len; k++)
		data[k] = vectors[i].data == DATA_ABC	 ? (uint8_t)("abc"[k])
			  : vectors[i].data == DATA_A	 ? 'a'
			  : vectors[i].data == DATA_ZERO ? 0
							 : (uint8_t)(k * 7);
}

START_TEST(codec_chain_vectors)
{
	uint8_t prev[LEDGER_HEAD_BYTES], data[1000], want[32], out[32];

	vector_input(_i, prev, data);
	unhex(vectors[_i].want, want, sizeof(want));
	memset(out, 0, sizeof(out));
	ledger__chain_step(prev, data, vectors[_i].len, out);
	ck_assert_mem_eq(out, want, 32);
	/* In place: head_out == head_prev gives the same head. */
	ledger__chain_step(prev, data, vectors[_i].len, prev);
	ck_assert_mem_eq(prev, want, 32);
}
END_TEST

/* Two events chained from genesis, through the codec: pins both the bytes
 * and the chain rule head(n) = SHA-256(head(n-1) || bytes(n)). */
START_TEST(codec_chain_events)
{
	const struct event evs[] = {
		{.seq = 1, .time_ns = 0, .type = EV_TICK},
		{.seq = 2, .time_ns = 1, .type = EV_TICK},
	};
	static const char *const want[] = {
		"a0e3bbe6aec7ed00c2aa173af8bc8fcff70eb63cb794124e7e056ee5864385"
		"c0",
		"a8c2f90f0669717ad6fde65215d82e3bd4f82af21efc35da9ee65941522478"
		"da",
	};
	uint8_t head[LEDGER_HEAD_BYTES] = {0}, first[32], w[32], buf[16];

	for (size_t i = 0; i < 2; i++) {
		size_t n = ledger__event_encode(&evs[i], buf, sizeof(buf));

		ck_assert_uint_eq(n, 4);
		ledger__chain_step(head, buf, n, head);
		unhex(want[i], w, sizeof(w));
		ck_assert_mem_eq(head, w, 32);
		if (i == 0)
			memcpy(first, head, sizeof(first));
	}
	/* A changed byte of event 2 changes head 2. */
	buf[3] ^= 1;
	ledger__chain_step(first, buf, 4, head);
	ck_assert_mem_ne(head, w, 32);
}
END_TEST

/* ledger_event_head is the chain step over the codec's bytes, for every
 * row and for an event larger than its 1 KiB of stack room, also in place.
 * Row _i == N_ROWS is the large one. */
START_TEST(codec_event_head)
{
	static char big[5000];
	struct event ev;
	uint8_t prev[LEDGER_HEAD_BYTES], want[LEDGER_HEAD_BYTES],
		got[LEDGER_HEAD_BYTES], *buf;
	size_t n;

	if ((size_t)_i < N_ROWS) {
		ev = rows[_i];
	} else {
		memset(big, 'x', sizeof(big) - 1);
		ev = (struct event){.seq = 3, .time_ns = 9, .type = EV_NOTE,
				    .ns = "", .key = "Big", .text = big};
	}
	for (size_t k = 0; k < sizeof(prev); k++)
		prev[k] = (uint8_t)(k * 13 + (unsigned)_i);
	n = ledger__event_encode(&ev, NULL, 0);
	if ((size_t)_i == N_ROWS)
		ck_assert_uint_gt(n, 1024);
	buf = malloc(n);
	ck_assert_uint_eq(ledger__event_encode(&ev, buf, n), n);
	ledger__chain_step(prev, buf, n, want);
	free(buf);
	ledger_event_head(prev, &ev, got);
	ck_assert_mem_eq(got, want, sizeof(want));
	ledger_event_head(prev, &ev, prev);
	ck_assert_mem_eq(prev, want, sizeof(want));
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

void ledger_tests_codec(Suite *s)
{
	TCase *tc = tcase_create("codec_format");

	tcase_add_loop_test(tc, codec_round_trip, 0, (int)N_ROWS);
	tcase_add_loop_test(tc, codec_golden, 0, N(golden));
	tcase_add_loop_test(tc, codec_encode_cap, 0, (int)N_ROWS);
	suite_add_tcase(s, tc);

	tc = tcase_create("codec_refuse");
	/* Thousands of decodes per row; slow under the sanitizers. */
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, codec_byte_flip, 0, (int)N_ROWS);
	tcase_add_loop_test(tc, codec_truncated, 0, (int)N_ROWS);
	tcase_add_loop_test(tc, codec_trailing, 0, (int)N_ROWS);
	tcase_add_loop_test(tc, codec_crafted, 0, N(crafted));
	tcase_add_test(tc, codec_size_bound);
	suite_add_tcase(s, tc);

	tc = tcase_create("codec_chain");
	tcase_add_loop_test(tc, codec_chain_vectors, 0, N(vectors));
	tcase_add_test(tc, codec_chain_events);
	tcase_add_loop_test(tc, codec_event_head, 0, (int)N_ROWS + 1);
	suite_add_tcase(s, tc);
}
