/*
 * model/base.h — what every layer of gpuledger stands on: the error codes
 * and their detail (model/err.c), assertions, the allocation wrappers, the
 * one bounded byte buffer, hex and decimal numbers (model/base.c), and
 * RFC 3339 time (model/event.c). No domain here. Part of model's public API:
 * included by model/model.h, which the other layers include.
 */
#ifndef GPULEDGER_MODEL_BASE_H
#define GPULEDGER_MODEL_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* Errors (one table in model/err.c produces lg_strerror and model__errname). */

enum lg_err {
	LG_OK = 0,
	LG_EINVAL = -1, /* invalid input (syntax, type, value) */
	LG_ERANGE = -2, /* a number does not fit (int64 overflow) */
	LG_ENOMEM = -3, /* out of memory (libraries only; daemons abort) */
	LG_ENOENT = -4, /* no such thing */
	LG_EEXIST = -5, /* already exists */
	LG_EMISMATCH =
		-6,	  /* an event does not fit the state it is applied to */
	LG_ECORRUPT = -7, /* stored data failed validation */
	LG_EIO = -8,	  /* I/O failed */
	LG_EFULL = -9,	  /* disk or map full */
	LG_EVERSION = -10, /* unsupported format version */
	LG_ELIMIT = -11,   /* a configured bound was exceeded */
	LG_EUNKNOWN = -12, /* unknown function, kind or type */
	LG_ERR_MIN = -12
};

#define LG_ERRMSG_MAX 256

/* Parse and operating detail, filled by the callee; the caller owns it. */
struct lg_error {
	int code;
	char msg[LG_ERRMSG_MAX];
};

/* Static strings; never NULL (unknown codes give "unknown error"). */
const char *lg_strerror(int code);

/* Sets err (when not NULL) to code and a printf-formatted message; returns
 * code so that callers can write `return lg_error_set(err, LG_EINVAL, ...)`. */
int lg_error_set(struct lg_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#ifdef __clang_analyzer__
/* clang's analyzer does not look into other files: this tells it that the
 * result is the code, so that an error path never looks like success to
 * it. Compilers never see this definition. */
#define lg_error_set(err, code, ...) \
	(lg_error_set((err), (code), __VA_ARGS__), (code))
#endif

/* ---------------------------------------------------------------------- */
/* Assertions and memory, for every layer (model/base.c).
 *
 * LG_ASSERT(cond) states a programmer's precondition or an invariant. It is
 * always compiled in (NDEBUG does not remove it): when cond is false it
 * prints "file:line: function: assertion failed: cond" to stderr and aborts.
 * Bad input is never asserted; it is an operating error, an LG_* code.
 *
 * lg_xmalloc, lg_xcalloc, lg_xrealloc and lg_xstrdup never return NULL:
 * running out of memory prints a message and aborts (STYLE "Errors and
 * memory"), so call sites do not test for NULL. A size of 0 still gives a
 * unique pointer. The caller frees the result with free(). The daemons
 * install the same family into jansson, libuv and libcurl at start. */
_Noreturn void lg_assert_fail(const char *cond, const char *file, int line,
			      const char *func);
#define LG_ASSERT(cond)                \
	(__builtin_expect(!!(cond), 1) \
		 ? (void)0             \
		 : lg_assert_fail(#cond, __FILE__, __LINE__, __func__))

void *lg_xmalloc(size_t n);
void *lg_xcalloc(size_t n, size_t size);
void *lg_xrealloc(void *p, size_t n);
char *lg_xstrdup(const char *s);

/* A bounded dynamic buffer (model/base.c), after curl's dynbuf.
 *
 * Every byte buffer that grows (canonical JSON, answers and metrics pages,
 * request and response bodies, encoded records) is a struct lg_buf whose
 * maximum is fixed by lg_buf_init: an add that would take the content past
 * max bytes appends nothing and returns LG_ELIMIT, never growth (STYLE
 * "Bound everything"). The refusal sticks: every later add fails too until
 * lg_buf_reset, so a writer of many pieces may test once, at the end
 * (lg_buf_failed, or lg_buf_detach's NULL). Running out of memory aborts,
 * as lg_xmalloc does.
 *
 * Invariants: len <= max < SIZE_MAX and cap <= max + 1; p is NULL until
 * the first add (one of 0 bytes allocates), and from then on holds len
 * bytes and a NUL, so that p is a C string when the content has none.
 * Callers read p and len and change them only through these functions; p
 * is borrowed until the next add, reset or release.
 *
 * Arrays of elements (the state's tables, verdict checks, queues) are not
 * byte buffers and grow by their own doubling, bounded by what they count;
 * so do fixed arrays written in place (an HTTP answer's head). */
struct lg_buf {
	char *p;
	size_t len, cap, max;
	bool failed;
};
/* An empty buffer of at most max_bytes bytes (SIZE_MAX is taken as
 * SIZE_MAX - 1); allocates nothing. */
void lg_buf_init(struct lg_buf *b, size_t max_bytes);
/* Frees the bytes; b is empty and usable again, with the same max. b may
 * be NULL. */
void lg_buf_release(struct lg_buf *b);
/* lg_buf_add's slow path (growth, refusal); call lg_buf_add. */
int lg_buf_grow_add(struct lg_buf *b, const void *p, size_t n);
/* Appends printf's text of fmt: 0, or LG_ELIMIT as lg_buf_add (LG_EINVAL
 * when vsnprintf fails); on error nothing is appended. */
int lg_buf_addf(struct lg_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Hands the content (len bytes and a NUL, never NULL) to the caller, who
 * frees it with free(); b is empty afterwards. *len (len may be NULL) gets
 * the length. NULL, b released, when an add failed. */
char *lg_buf_detach(struct lg_buf *b, size_t *len);

/* Appends the n bytes at p: 0, or LG_ELIMIT (nothing appended) when len + n
 * would pass max or an earlier add failed. Inline: the canonical JSON
 * writer and the record encoders add a few bytes at a time on the append
 * and ingest paths. */
static inline int lg_buf_add(struct lg_buf *b, const void *p, size_t n)
{
	/* cap <= max + 1, so room within cap is room within max. */
	if (b->failed || n >= b->cap - b->len)
		return lg_buf_grow_add(b, p, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* Appends one byte, as lg_buf_add. */
static inline int lg_buf_addc(struct lg_buf *b, char c)
{
	return lg_buf_add(b, &c, 1);
}

/* Empties b, keeping its allocation and max, and clears a failure. */
static inline void lg_buf_reset(struct lg_buf *b)
{
	b->len = 0;
	b->failed = false;
	if (b->p != NULL)
		b->p[0] = '\0';
}

/* Whether an add was refused since the last init, reset or release. */
static inline bool lg_buf_failed(const struct lg_buf *b)
{
	return b->failed;
}

/* The n bytes at p as 2n lowercase hex digits and a NUL into out (2n + 1
 * bytes, the caller's). */
void lg_hex(const uint8_t *p, size_t n, char *out);
/* Reads one line of f into buf (without the newline). Returns its length,
 * -1 at end of input, or -2 when the line was longer than cap - 1 (it is
 * consumed, so that the caller can go on with the next line). */
long lg_read_line(FILE *f, char *buf, size_t cap);

/* A decimal number as an operator or a client writes a seq, an id or a
 * count (--limit, --at, ?from=, /v1/verdicts/{id}): 1 to
 * LG_U64_DIGITS_MAX ASCII digits and nothing else. No sign, space, exponent
 * or suffix: "1e3", "-1" and " 7" are mistakes worth naming, not numbers
 * to guess at. Every such number fits in 64 bits; a longer one is refused
 * even where its value would fit (no seq, id or count comes near 10^19).
 * True and *out set, or false and *out untouched. */
#define LG_U64_DIGITS_MAX 19
bool lg_parse_u64(const char *s, uint64_t *out);

/* ---------------------------------------------------------------------- */
/* Time.                                                                   */

/* RFC 3339 UTC with nanoseconds ("2026-11-30T10:00:00.000000000Z"). */
size_t time_format_ns(int64_t t_ns, char *buf, size_t cap);
/* Parses RFC 3339 (any offset, optional fraction up to ns). */
int time_parse_ns(const char *s, int64_t *out);
/* What an operator may type for a time (--at, --from, --to, at=, from=,
 * to=): RFC 3339, or a date alone ("2026-01-15"), which is its midnight
 * UTC. Recorded streams keep time_parse_ns: their times are RFC 3339.
 * LG_EINVAL for text that is not a time; LG_ERANGE for a time the ledger
 * cannot date: before 1970-01-01T00:00:00Z or after TIME_LAST_TEXT, the
 * last nanosecond of int64 (years 2262..9999 are written but not held). */
int time_parse_user_ns(const char *s, int64_t *out);
/* Why time_parse_user_ns refuses s, a phrase to follow the quoted text
 * ("is beyond what the ledger can date ..."); a static string. */
const char *time_user_why(const char *s);
#define TIME_LAST_TEXT "2262-04-11T23:47:16.854775807Z"

#endif
