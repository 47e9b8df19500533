/*
 * Following a recorded stream exactly once across restarts (DESIGN 4.2, 9):
 * the byte offset of the next unread line is the stream's position and is
 * committed in the same transaction as the events of the lines before it.
 *
 * A restart does not re-read the lines before its committed offset: the
 * engine's cache is persisted in the ledger's object table in the same
 * transaction (ingest/objtab.c), so the engine loaded at start is the
 * engine that was killed. The position records a fingerprint of the
 * file's first bytes and of the --classes table; a resumed run checks
 * both, that a line ends at the offset, and goes on from there.
 *
 * A live source (a pipe, FIFO, terminal or socket) is asked with poll()
 * before each read whether the read would wait. When it would, every
 * complete line read so far has been fed (the pipeline hands over its
 * partial batch), and the run waits for input; once the input has been
 * idle for the idle bound, counted from the first pause after the last
 * commit, what was read is committed as at a batch boundary. A steady
 * trickle that pauses often but never for the whole bound is committed
 * too, and a writer that never pauses is batched like a file. A regular
 * file is never polled: it costs what it did. A live source has no offset
 * to go back to, so its position (the bytes read so far, like a file's)
 * is kept for the record, and a restart on it is refused like stdin's.
 *
 * Only the engine's public interface is used here.
 */
#include "ingest/ingest_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The file's first bytes are fingerprinted, so that a resumed run notices
 * a different file under the same name. */
#define FOLLOW_HEAD_BYTES 4096
#define FOLLOW_READ_BYTES (1u << 20)
#define POSITION_MAX	  (PATH_MAX + 256)
/* Events past the latest checkpoint that make a finishing run write one. */
#define FOLLOW_CHECKPOINT_TAIL 100000
/* A live source waits for input in slices of this much, so that a stop
 * signal that lands on another thread, or just before poll(), is seen
 * within it. */
#define FOLLOW_WAIT_SLICE_MS 250

struct reader {
	int fd;
	char *buf;
	size_t cap, start, end, max;
	bool eof;
	bool live; /* a read can wait: poll() first (see the top) */
	/* Inside a line longer than max: its bytes discarded so far. */
	bool skipping, skip_cr; /* skip_cr: its last byte was "\r" */
	uint64_t skip_len;
	uint64_t offset; /* of the next unread line */
	char head[FOLLOW_HEAD_BYTES];
	size_t head_len;
};

/* The pipeline's source codes (ingest_int.h), which source() returns as
 * they are. */
enum {
	LINE_EOF = INGEST_SRC_END,
	LINE_OK = INGEST_SRC_LINE,
	LINE_OVERSIZED = INGEST_SRC_OVERSIZED,
	LINE_IDLE = INGEST_SRC_IDLE
};

/* Whether a read of a live source would wait now. A signal counts as
 * "would wait": the caller then checks for a stop. Another poll() error is
 * left to the read to report. */
static bool would_wait(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int n = poll(&pfd, 1, 0);

	return n == 0 || (n < 0 && errno == EINTR);
}

/* Reads what is there: 0 (bytes, or the end), LINE_IDLE when a live
 * source has nothing yet, or an error. */
static int reader_fill(struct reader *r, struct lg_error *err)
{
	ssize_t n;

	if (r->live && would_wait(r->fd))
		return LINE_IDLE;
	do
		n = read(r->fd, r->buf + r->end, r->cap - r->end);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return lg_error_set(err, LG_EIO, "read: %s", strerror(errno));
	if (n == 0)
		r->eof = true;
	if (r->head_len < FOLLOW_HEAD_BYTES) {
		size_t k = FOLLOW_HEAD_BYTES - r->head_len;

		if (k > (size_t)n)
			k = (size_t)n;
		memcpy(r->head + r->head_len, r->buf + r->end, k);
		r->head_len += k;
	}
	r->end += (size_t)n;
	return 0;
}

/* Discards the rest of a line longer than the bound; *len is its length
 * as next_line counts it (without "\n" or "\r\n"). A live source may go
 * idle in the middle: the count is kept in the reader, and the next call
 * goes on discarding. */
static int skip_long(struct reader *r, uint64_t *len, struct lg_error *err)
{
	r->skipping = true;
	for (;;) {
		char *p = r->buf + r->start;
		char *nl = memchr(p, '\n', r->end - r->start);
		size_t n = nl ? (size_t)(nl - p) : r->end - r->start;
		int rc;

		if (n > 0)
			r->skip_cr = p[n - 1] == '\r';
		r->skip_len += n;
		if (nl != NULL || r->eof) {
			r->start += n + (nl != NULL);
			r->offset += r->skip_len + (nl != NULL);
			break;
		}
		r->start = r->end = 0;
		if ((rc = reader_fill(r, err)) != 0)
			return rc;
	}
	*len = r->skip_len - r->skip_cr;
	r->skipping = r->skip_cr = false;
	r->skip_len = 0;
	return LINE_OVERSIZED;
}

/* The next line (without "\n" or "\r\n"), borrowed until the next call;
 * LINE_IDLE when a live source has no complete line yet (a partial one
 * stays in the buffer until its newline, or the end, arrives). A line
 * longer than the bound is LINE_OVERSIZED however it arrived, whole in
 * the buffer or in pieces through a pipe, so that its NOTE does not
 * depend on how the reads fell. */
static int next_line(struct reader *r, const char **line, uint64_t *len,
		     struct lg_error *err)
{
	if (r->skipping)
		return skip_long(r, len, err);
	for (;;) {
		char *p = r->buf + r->start;
		char *nl = memchr(p, '\n', r->end - r->start);
		size_t n = nl ? (size_t)(nl - p) : r->end - r->start;
		int rc;

		if (nl != NULL || (r->eof && n > 0)) {
			r->start += n + (nl != NULL);
			r->offset += n + (nl != NULL);
			if (n > 0 && p[n - 1] == '\r')
				n--;
			*line = p;
			*len = n;
			return n > r->max ? LINE_OVERSIZED : LINE_OK;
		}
		if (r->eof)
			return LINE_EOF;
		/* Too long even if a "\r" ends it: discarded as it comes. */
		if (n > r->max + 1)
			return skip_long(r, len, err);
		memmove(r->buf, p, n);
		r->start = 0;
		r->end = n;
		if ((rc = reader_fill(r, err)) != 0)
			return rc;
	}
}

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* ---------------------------------------------------------------------- */
/* The position value. */

struct position {
	char source[PATH_MAX + 1];
	uint64_t offset, seed_seq, head, classes;
};

static int position_read(ledger_t *lg, struct position *p, bool *found,
			 struct lg_error *err)
{
	char buf[POSITION_MAX + 1];
	size_t len = 0;
	json_t *doc;
	const char *src;
	int rc = ledger_meta_get(lg, ingest__position_key(RES_MAX), buf,
				 POSITION_MAX, &len, err);

	*found = false;
	if (rc == LG_ENOENT)
		return 0;
	if (rc != 0)
		return rc;
	doc = json_loadb(buf, len, 0, NULL);
	src = json_string_value(json_object_get(doc, "source"));
	if (src == NULL || strlen(src) > PATH_MAX ||
	    !json_is_integer(json_object_get(doc, "offset")) ||
	    !json_is_integer(json_object_get(doc, "seedSeq")) ||
	    !json_is_string(json_object_get(doc, "head")) ||
	    !json_is_string(json_object_get(doc, "classes"))) {
		json_decref(doc);
		return lg_error_set(err, LG_ECORRUPT,
				    "the stored stream position is not one");
	}
	snprintf(p->source, sizeof(p->source), "%s", src);
	p->offset =
		(uint64_t)json_integer_value(json_object_get(doc, "offset"));
	p->seed_seq =
		(uint64_t)json_integer_value(json_object_get(doc, "seedSeq"));
	p->head = strtoull(json_string_value(json_object_get(doc, "head")),
			   NULL, 16);
	p->classes = strtoull(
		json_string_value(json_object_get(doc, "classes")), NULL, 16);
	json_decref(doc);
	*found = true;
	return 0;
}

struct follow {
	ledger_t *lg;
	const struct ingest_follow_opts *o;
	struct reader r;
	ingest_t *in;
	char *source_json; /* the source as a JSON string */
	char source[PATH_MAX + 1];
	uint64_t seed_seq;
	uint64_t classes; /* fingerprint of the --classes table (0: none) */
	uint64_t head;	  /* fingerprint once FOLLOW_HEAD_BYTES are read */
	bool head_fixed;
	uint64_t fed; /* the offset after the last line fed */
	/* A live source's idle rule (await_input): fed when it last
	 * committed, and when the first pause after that began. */
	unsigned idle_ms;
	uint64_t idle_fed;
	bool paused;
	int64_t pause_ms;
	/* The position value around its offset (set_position). */
	char prefix[128], suffix[POSITION_MAX];
	size_t prefix_len, suffix_len;
};

static uint64_t head_hash(struct follow *f, uint64_t offset)
{
	size_t n = offset < f->r.head_len ? (size_t)offset : f->r.head_len;

	if (f->head_fixed)
		return f->head;
	if (n == FOLLOW_HEAD_BYTES) {
		f->head = fnv(f->r.head, n);
		f->head_fixed = true;
		return f->head;
	}
	return fnv(f->r.head, n);
}

/* The position after the line just fed, which ends at off (the reader may
 * be ahead of it: ingest/pipeline.c reads ahead). Every line sets it, so
 * it is assembled from a prefix that changes only while the file's first
 * bytes are still being read, the offset, and a fixed suffix. */
static void set_position(struct follow *f, uint64_t off)
{
	char buf[POSITION_MAX + 128], num[24];
	size_t n = 0, k = sizeof(num);

	if (!f->head_fixed || f->prefix_len == 0)
		f->prefix_len = (size_t)snprintf(
			f->prefix, sizeof(f->prefix),
			"{\"classes\":\"%016llx\",\"head\":\"%016llx\","
			"\"offset\":",
			(unsigned long long)f->classes,
			(unsigned long long)head_hash(f, off));
	f->fed = off;
	do
		num[--k] = (char)('0' + off % 10);
	while ((off /= 10) != 0);
	memcpy(buf, f->prefix, f->prefix_len);
	n = f->prefix_len;
	memcpy(buf + n, num + k, sizeof(num) - k);
	n += sizeof(num) - k;
	memcpy(buf + n, f->suffix, f->suffix_len + 1);
	ingest__set_position(f->in, RES_MAX, buf);
}

/* The --classes table's fingerprint: a resumed run must start from the
 * table the first run started from, or its replay builds another cache. */
static uint64_t table_hash(const struct class_table *t)
{
	uint64_t h = 0;

	for (size_t i = 0; t != NULL && i < t->n; i++) {
		json_t *j = gpu_class_to_json(&t->classes[i]);
		char *s = j ? json_canonical(j) : NULL;

		if (s != NULL)
			h = h * 31 + fnv(s, strlen(s));
		free(s);
		json_decref(j);
	}
	return t != NULL ? h | 1 : 0;
}

/* ---------------------------------------------------------------------- */

/* Feeds one line (or an oversized one) to the engine. */
static int feed(struct follow *f, int kind, const char *line, uint64_t len,
		struct lg_error *err)
{
	if (kind == LINE_OVERSIZED)
		return ingest__oversized(f->in, len, err);
	return ingest__line(f->in, line, (size_t)len, err);
}

/* Reads exactly n bytes at off (fewer only at the end of the file). */
static int read_at(int fd, void *buf, size_t n, uint64_t off, size_t *got,
		   struct lg_error *err)
{
	*got = 0;
	while (*got < n) {
		ssize_t k = pread(fd, (char *)buf + *got, n - *got,
				  (off_t)(off + *got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return lg_error_set(err, LG_EIO, "read: %s",
					    strerror(errno));
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

/* Goes on at the committed offset without reading the lines before it
 * (the loaded object table is the engine that read them): the file must
 * still start with the bytes fingerprinted, and a line must end at the
 * offset (a newline just before it, or the end of the file). */
static int resume_at(struct follow *f, const struct position *p,
		     struct lg_error *err)
{
	size_t want = p->offset < FOLLOW_HEAD_BYTES ? (size_t)p->offset
						    : FOLLOW_HEAD_BYTES;
	size_t got = 0;
	char last, next;
	bool ok;
	int rc = read_at(f->r.fd, f->r.head, want, 0, &got, err);

	if (rc != 0)
		return rc;
	ok = got == want;
	if (ok && p->offset > 0) {
		if ((rc = read_at(f->r.fd, &last, 1, p->offset - 1, &got,
				  err)) != 0)
			return rc;
		ok = got == 1;
		/* A last line without a newline ends at the end. */
		if (ok && last != '\n') {
			if ((rc = read_at(f->r.fd, &next, 1, p->offset, &got,
					  err)) != 0)
				return rc;
			ok = got == 0;
		}
	}
	if (!ok)
		return lg_error_set(err, LG_ECORRUPT,
				    "%s: no line ends at the committed "
				    "position %llu (the file is shorter or was "
				    "rewritten)",
				    f->o->path, (unsigned long long)p->offset);
	f->r.head_len = want;
	if (head_hash(f, p->offset) != p->head)
		return lg_error_set(err, LG_ECORRUPT,
				    "%s: does not start with the bytes the "
				    "ledger read from %s",
				    f->o->path, p->source);
	if (lseek(f->r.fd, (off_t)p->offset, SEEK_SET) < 0)
		return lg_error_set(err, LG_EIO, "%s: seek: %s", f->o->path,
				    strerror(errno));
	f->r.offset = p->offset;
	return 0;
}

static bool tables_equal(const struct class_table *a,
			 const struct class_table *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!gpu_class_equal(&a->classes[i], &b->classes[i]))
			return false;
	return true;
}

/* The committed position, if any, and whether this run may go on from
 * it: the same source, and one that can be read again from an offset.
 * Checked before the source is opened. */
static int check_position(struct follow *f, struct position *p, bool *found,
			  struct lg_error *err)
{
	int rc = position_read(f->lg, p, found, err);

	if (rc != 0)
		return rc;
	if (*found && strcmp(p->source, "-") == 0)
		return lg_error_set(err, LG_EEXIST,
				    "the ledger already holds a stream read "
				    "from standard input, which cannot be "
				    "resumed; use a new --db");
	if (*found && strcmp(p->source, f->source) != 0)
		return lg_error_set(err, LG_EEXIST,
				    "the ledger follows %s, not %s; use a new "
				    "--db",
				    p->source, f->source);
	/* The bytes a pipe gave are gone, and those read after the last
	 * commit with them: going on would lose them without a word. */
	if (*found && f->r.live)
		return lg_error_set(err, LG_EEXIST,
				    "the ledger already holds the stream read "
				    "from %s, which is not a regular file (a "
				    "FIFO, socket or terminal cannot be read "
				    "again from the committed offset %llu), so "
				    "it cannot be resumed; use a new --db",
				    f->source, (unsigned long long)p->offset);
	return 0;
}

/* Where to start: the engine loads its cache from the ledger (the object
 * table and the state) either way; a fresh run applies --classes, a
 * resumed one goes on at its offset. */
static int start(struct follow *f, const struct position *p, bool found,
		 struct ingest_follow_result *res, struct lg_error *err)
{
	struct ingest_opts io = {.max_object_bytes = f->o->max_object_bytes,
				 .batch_events = f->o->batch_events};
	int rc;

	f->classes = table_hash(f->o->classes);
	if (found && p->classes != f->classes)
		return lg_error_set(err, LG_ECORRUPT,
				    "--classes differs from the table the "
				    "first run on %s started with",
				    p->source);
	/* seedSeq (where the first run found the ledger) is kept for the
	 * record; nothing reads the log up to it any more. */
	f->seed_seq = found ? p->seed_seq : ledger_last_seq(f->lg);
	f->suffix_len = (size_t)snprintf(f->suffix, sizeof(f->suffix),
					 ",\"seedSeq\":%llu,\"source\":%s}",
					 (unsigned long long)f->seed_seq,
					 f->source_json);
	if ((rc = ingest_new(&f->in, f->lg, &io, err)) != 0)
		return rc;
	res->resumed = found;
	if (!found)
		return f->o->classes
			       ? ingest__set_classes(f->in, f->o->classes, err)
			       : 0;
	if ((rc = resume_at(f, p, err)) != 0)
		return rc;
	if (!tables_equal(ingest__classes(f->in),
			  state_classes(ledger_state(f->lg))))
		return lg_error_set(err, LG_ECORRUPT,
				    "the class table differs from the "
				    "ledger's: was --classes changed since "
				    "the last run?");
	return 0;
}

static bool stopped(const struct follow *f)
{
	return f->o->stop != NULL && *f->o->stop != 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A live source would make the next read wait, and every complete line
 * read so far has been fed. Waits until there is input (or a stop is
 * asked), committing what was fed once the input has been idle for the
 * bound since the first pause after the last commit: what a batch
 * boundary commits (the position after the last line fed goes with its
 * events), so a crash after it repeats and loses nothing. */
static int await_input(struct follow *f, struct lg_error *err)
{
	for (;;) {
		struct pollfd pfd = {.fd = f->r.fd, .events = POLLIN};
		int timeout = FOLLOW_WAIT_SLICE_MS, n, rc;

		if (stopped(f))
			return 0;
		if (f->fed != f->idle_fed) {
			int64_t now = mono_ms(), left;

			if (!f->paused) {
				f->paused = true;
				f->pause_ms = now;
			}
			left = f->pause_ms + (int64_t)f->idle_ms - now;
			if (left <= 0) {
				if ((rc = ingest__flush(f->in, err)) != 0)
					return rc;
				f->idle_fed = f->fed;
				f->paused = false;
				continue;
			}
			if (left < timeout)
				timeout = (int)left;
		}
		n = poll(&pfd, 1, timeout);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return lg_error_set(err, LG_EIO, "%s: poll: %s",
					    f->o->path, strerror(errno));
	}
}

static int run_inline(struct follow *f, struct lg_error *err)
{
	const char *line = NULL;
	uint64_t len = 0;
	int rc = 0;

	while (rc == 0 && !stopped(f)) {
		int k = next_line(&f->r, &line, &len, err);

		if (k < 0)
			return k;
		if (k == LINE_EOF)
			break;
		if (k == LINE_IDLE) {
			rc = await_input(f, err);
			continue;
		}
		rc = feed(f, k, line, len, err);
		if (rc == 0)
			set_position(f, f->r.offset);
	}
	return rc;
}

/* The reader as the pipeline's source: a line's tag is the offset after
 * it. */
static int source(void *ctx, const char **line, uint64_t *len, uint64_t *tag,
		  struct lg_error *err)
{
	struct reader *r = ctx;
	int k = next_line(r, line, len, err);

	*tag = r->offset;
	return k;
}

/* Lines parsed ahead on worker threads (ingest/pipeline.c), fed in order:
 * each position is still set right after its line, so it commits with
 * the events of the lines before it. */
static int run_pipelined(struct follow *f, struct lg_error *err)
{
	struct ingest_pipe_opts po = {.threads = f->o->parse_threads,
				      .max_line_bytes = f->r.cap};
	ingest_pipe_t *p = NULL;
	uint64_t off;
	int rc = ingest__pipe_new(&p, &po, source, &f->r, err);

	while (rc == 0 && !stopped(f)) {
		int k = ingest__pipe_feed(p, f->in, &off, err);

		if (k == INGEST_PIPE_IDLE) {
			rc = await_input(f, err);
			continue;
		}
		if (k <= 0) {
			rc = k;
			break;
		}
		set_position(f, off);
	}
	ingest__pipe_free(p);
	return rc;
}

/* The end of a recorded stream is its complete list (DESIGN 7, "Ready
 * means ready to judge"): NOTE Synced, once per ledger, so that following
 * the same stream again still appends nothing. */
static int synced_once(struct follow *f, struct lg_error *err)
{
	uint64_t seq;
	int rc = ledger_synced_seq(f->lg, &seq, err);

	if (rc != 0 || seq != 0)
		return rc;
	ingest__emit_synced(f->in, "the end of the recorded stream");
	return ingest__flush(f->in, err);
}

static int run(struct follow *f, struct lg_error *err)
{
	int rc =
		f->o->parse_inline ? run_inline(f, err) : run_pipelined(f, err);

	if (rc == 0)
		rc = ingest__flush(f->in, err);
	if (rc == 0 && !stopped(f))
		rc = synced_once(f, err);
	if (rc == 0 && !stopped(f))
		rc = ingest__tick(f->in, ingest__time_ns(f->in), err);
	return rc;
}

/* Whether reads of what st describes can wait: anything but a regular
 * file or a block device. */
static bool is_live(const struct stat *st)
{
	return !S_ISREG(st->st_mode) && !S_ISBLK(st->st_mode);
}

/* Names the source (its real path, or "-") and finds whether it is live,
 * without opening it: opening a FIFO waits for a writer, and a ledger
 * that cannot go on with it is refused first. */
static int name_source(struct follow *f, struct lg_error *err)
{
	struct stat st;
	json_t *s;

	if (strcmp(f->o->path, "-") == 0) {
		snprintf(f->source, sizeof(f->source), "-");
		if (fstat(STDIN_FILENO, &st) != 0)
			return lg_error_set(err, LG_EIO, "standard input: %s",
					    strerror(errno));
	} else {
		if (realpath(f->o->path, f->source) == NULL)
			return lg_error_set(
				err, errno == ENOENT ? LG_ENOENT : LG_EIO,
				"%s: %s", f->o->path, strerror(errno));
		if (stat(f->source, &st) != 0)
			return lg_error_set(err, LG_EIO, "%s: %s", f->o->path,
					    strerror(errno));
	}
	f->r.live = is_live(&st);
	s = json_string(f->source);
	f->source_json = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
	json_decref(s);
	if (f->source_json == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "%s: the path is not valid UTF-8",
				    f->o->path);
	return 0;
}

/* Opens the source named; a FIFO's open waits for a writer, and a stop
 * asked meanwhile leaves fd at -1 and returns 0 (nothing was read). */
static int open_source(struct follow *f, struct lg_error *err)
{
	struct stat st;

	if (strcmp(f->source, "-") == 0) {
		f->r.fd = STDIN_FILENO;
		return 0;
	}
	do
		f->r.fd = open(f->source, O_RDONLY);
	while (f->r.fd < 0 && errno == EINTR && !stopped(f));
	if (f->r.fd < 0 && errno == EINTR)
		return 0;
	if (f->r.fd < 0)
		return lg_error_set(err, LG_EIO, "%s: %s", f->o->path,
				    strerror(errno));
	/* What was opened decides how it is read (the path may have been
	 * replaced since it was named). */
	if (fstat(f->r.fd, &st) != 0)
		return lg_error_set(err, LG_EIO, "%s: %s", f->o->path,
				    strerror(errno));
	f->r.live = is_live(&st);
	return 0;
}

int ingest_follow(ledger_t *lg, const struct ingest_follow_opts *o,
		  struct ingest_follow_result *res, struct lg_error *err)
{
	struct ingest_follow_result dummy;
	struct follow f = {.lg = lg, .o = o};
	struct position pos;
	bool found = false;
	int rc;

	LG_ASSERT(lg != NULL && o != NULL && o->path != NULL);
	if (res == NULL)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (o->idle_ms > INGEST_IDLE_MS_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "the idle bound is at most %d ms",
				    INGEST_IDLE_MS_MAX);
	f.idle_ms = o->idle_ms ? o->idle_ms : INGEST_IDLE_MS_DEFAULT;
	f.r.fd = -1;
	f.r.max = o->max_object_bytes ? o->max_object_bytes
				      : INGEST_MAX_OBJECT_DEFAULT;
	f.r.cap = f.r.max + 1 + FOLLOW_READ_BYTES;
	f.r.buf = malloc(f.r.cap);
	if (f.r.buf == NULL)
		return lg_error_set(err, LG_ENOMEM, "out of memory");
	rc = name_source(&f, err);
	if (rc == 0)
		rc = check_position(&f, &pos, &found, err);
	if (rc == 0)
		rc = open_source(&f, err);
	if (rc == 0 && f.r.fd < 0)
		goto out; /* stopped while a FIFO waited for its writer */
	if (rc == 0)
		rc = start(&f, &pos, found, res, err);
	if (rc == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		res->ready_mono_ns =
			(int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	}
	f.fed = f.idle_fed = f.r.offset;
	if (rc == 0)
		rc = run(&f, err);
	/* A run that ends cleanly leaves a checkpoint near the end, so that
	 * the next start reads the table and the checkpoint, not a tail of
	 * up to the ledger's checkpoint interval. */
	if (rc == 0 && ledger_last_seq(lg) - ledger_checkpoint_seq(lg) >
			       FOLLOW_CHECKPOINT_TAIL)
		rc = ledger_checkpoint(lg, err);
out:
	res->offset = f.fed;
	if (f.in != NULL)
		ingest__counters(f.in, &res->c);
	ingest_free(f.in);
	if (f.r.fd > STDIN_FILENO)
		close(f.r.fd);
	free(f.source_json);
	free(f.r.buf);
	return rc;
}
