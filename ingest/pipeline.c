/*
 * The parse pipeline (DESIGN 10: all-GPU ingest uses the second core).
 *
 * Parsing a GPU pod's projection with jansson costs about as much as
 * everything the engine then does with it, and depends on nothing but the
 * line's bytes. So the caller's thread reads lines into a ring of small
 * batches and queues each full batch for worker threads, which run the
 * first half of a line (ingest/stream.c: the scan, i.e. the blank test, the
 * pod projection and the skip's line conditions, then jansson's parse);
 * the caller takes the batches back in the order it filled them and runs
 * the second half (ingest__line_prepared: everything that reads or changes
 * the engine), line by line. Each line goes through the same two halves
 * as in ingest__line, in the same order, so the log is the one a single
 * thread writes: same events, seqs and heads.
 *
 * The work moves to whichever side has time. While a queued batch still
 * waits for a worker, the caller scans the batch it fills (the worker
 * then only parses); and a batch no worker has taken by the time the
 * caller needs it is parsed by the caller, so that a busy machine, whose
 * other core is not free, costs about what parsing inline costs instead
 * of a wait. Batches are small (32 KiB): a document is used soon after
 * it is parsed, while it is still in a cache (big batches cost a third
 * more CPU on one thread, from cache misses alone).
 *
 * A source that would have to wait for input (a pipe whose writer paused:
 * INGEST_SRC_IDLE) ends the batch being filled there: it is queued as it
 * is, every queued batch is fed, and only then does ingest__pipe_feed say
 * idle, so that no line that has arrived waits for the next one (or for a
 * full batch) to be fed and committed. A file never says idle, and its
 * batches are what they were.
 *
 * Nothing but the batches is shared, and a batch belongs to one side at a
 * time (free, being filled or consumed: the caller; queued and taken: a
 * worker), handed over under the mutex. A worker's documents go back to a
 * worker with the batch's next round, which releases each old one just
 * before parsing a new one; a document the caller parsed itself (a skip
 * the engine refused) it releases at once.
 *
 * Bounds, all set at ingest_pipe_new: batches + threads batches of at
 * most batch_lines lines, each with an area of 2 batch_bytes: a line takes
 * 2 len + 1 bytes of it (its bytes and room for its projection), and a
 * batch takes lines until batch_bytes are used. A line too long for that
 * gets a block of its own and is the last of its batch, so a batch holds
 * at most one such block, of at most 2 max_line_bytes + 1 bytes, freed
 * when the batch is filled again.
 */
#include "ingest/ingest_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIPE_THREADS_DEFAULT 1
#define PIPE_BATCH_BYTES     (32u << 10)
#define PIPE_BATCH_LINES     1024
#define PIPE_MAX_LINE	     (4u << 20)
#define PIPE_STEAL_AFTER_US  200

/* A line as the source gave it. */
struct pline {
	uint64_t tag, len;
	size_t off; /* of its bytes in the area, or in big */
	int kind;   /* INGEST_SRC_LINE or INGEST_SRC_OVERSIZED */
};

enum bstate {
	B_FREE,	  /* the caller's: empty, being filled or consumed */
	B_QUEUED, /* the workers' */
	B_READY	  /* prepared: the caller's again */
};

struct batch {
	enum bstate state;
	size_t n;	  /* lines */
	size_t n_garbage; /* the last round's documents, to release */
	size_t used;	  /* bytes of the area */
	bool scanned;	  /* by the caller (else the worker scans) */
	bool orphan;	  /* given up by the caller: the worker frees it */
	struct pline *lines;
	struct ingest_prep *prep;
	json_t **garbage;
	char *area;
	char *big; /* the block of the batch's last line, or NULL */
	bool last_big;
};

/* Where line l of b is; its projection goes right after it. */
static char *line_at(const struct batch *b, size_t i)
{
	return (i + 1 == b->n && b->last_big ? b->big : b->area) +
	       b->lines[i].off;
}

struct ingest_pipe {
	struct ingest_pipe_opts o;
	ingest_source_fn *src;
	void *ctx;
	size_t area_bytes;
	/* o.batches + o.threads batches: a ring of o.batches, and spares
	 * (every batch not in the ring is a spare or an orphan, and a worker
	 * holds at most one orphan). */
	struct batch *all;
	struct batch **ring, **spare;
	size_t n_spare;
	/* Batches ever filled, taken by a worker, and consumed; the ring
	 * index is the count modulo o.batches. */
	uint64_t filled, taken, consumed;
	struct batch *cur; /* being consumed, or NULL */
	size_t pos;	   /* its next line */
	/* The source's end: 0, or its error after the lines before it. */
	bool src_done;
	/* The source's last call said idle (INGEST_SRC_IDLE). */
	bool src_idle;
	int src_rc;
	struct lg_error src_err;
	pthread_mutex_t mu;
	pthread_cond_t work, ready;
	bool stop;
	unsigned n_threads; /* started */
	pthread_t *threads;
};

/* ---------------------------------------------------------------------- */
/* Workers */

/* Each old document is released just before a new one is parsed, so that
 * malloc can hand the same chunks back at once (releasing a whole batch
 * first showed more time in malloc's slow paths). */
static void parse_batch(struct batch *b)
{
	for (size_t i = 0; i < b->n || i < b->n_garbage; i++) {
		if (i < b->n_garbage)
			json_decref(b->garbage[i]);
		if (i < b->n && b->lines[i].kind == INGEST_SRC_LINE) {
			char *at = line_at(b, i);
			size_t len = (size_t)b->lines[i].len;

			if (!b->scanned)
				ingest__prep_scan(&b->prep[i], at, len,
						  at + len);
			ingest__prep_parse(&b->prep[i]);
		}
	}
	b->n_garbage = 0;
}

static void *worker(void *arg)
{
	struct ingest_pipe *p = arg;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct batch *b;

		while (!p->stop && p->taken == p->filled)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->stop)
			break;
		b = p->ring[p->taken++ % p->o.batches];
		pthread_mutex_unlock(&p->mu);
		parse_batch(b);
		pthread_mutex_lock(&p->mu);
		if (!b->orphan) {
			b->state = B_READY;
			pthread_cond_broadcast(&p->ready);
			continue;
		}
		pthread_mutex_unlock(&p->mu);
		for (size_t i = 0; i < b->n; i++)
			ingest__prep_release(&b->prep[i]);
		b->n = 0;
		free(b->big);
		b->big = NULL;
		b->last_big = false;
		b->orphan = false;
		b->state = B_FREE;
		pthread_mutex_lock(&p->mu);
		p->spare[p->n_spare++] = b;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---------------------------------------------------------------------- */
/* The caller's side */

/* Reads lines into a free batch until it is full, the source ends or it
 * is idle, and scans them (the projection reads the line while it is in
 * this core's cache, and the worker then reads only the projection). The
 * documents of the batch's last round go to the worker that parsed them;
 * a batch that got no line (the source was idle) keeps them for its next
 * round, so that they are released once, by that round's worker. */
static void batch_fill(struct ingest_pipe *p, struct batch *b, bool scan)
{
	b->scanned = scan;
	if (b->n > 0) {
		for (size_t i = 0; i < b->n; i++) {
			b->garbage[i] = b->prep[i].doc;
			b->prep[i].doc = NULL;
		}
		b->n_garbage = b->n;
	}
	b->n = 0;
	b->used = 0;
	free(b->big);
	b->big = NULL;
	b->last_big = false;
	while (!p->src_done && !b->last_big && b->n < p->o.batch_lines &&
	       b->used < p->o.batch_bytes) {
		struct pline *l = &b->lines[b->n];
		const char *line = NULL;
		int k = p->src(p->ctx, &line, &l->len, &l->tag, &p->src_err);

		if (k == INGEST_SRC_IDLE) {
			p->src_idle = true;
			break;
		}
		if (k != INGEST_SRC_LINE && k != INGEST_SRC_OVERSIZED) {
			p->src_done = true;
			p->src_rc = k < 0 ? k : 0;
			break;
		}
		l->kind = k;
		l->off = b->used;
		if (k == INGEST_SRC_LINE) {
			size_t need = 2 * (size_t)l->len + 1;
			char *at;

			/* The source promised this bound (a programmer
			 * error otherwise: the area would overflow). */
			if (l->len > p->o.max_line_bytes) {
				fprintf(stderr,
					"ingest pipeline: a line of %llu "
					"bytes exceeds max_line_bytes\n",
					(unsigned long long)l->len);
				abort();
			}
			if (need <= p->o.batch_bytes) {
				at = b->area + b->used;
				b->used += need;
			} else {
				at = b->big = lg_xmalloc(need);
				l->off = 0;
				b->last_big = true;
			}
			memcpy(at, line, (size_t)l->len);
			if (scan)
				ingest__prep_scan(&b->prep[b->n], at,
						  (size_t)l->len, at + l->len);
		} else {
			memset(&b->prep[b->n], 0, sizeof(b->prep[b->n]));
		}
		b->n++;
	}
}

/* Fills and queues every free batch, in ring order, until the source
 * ends or is idle (asked again at the next top-up: it may have input by
 * then). */
static void top_up(struct ingest_pipe *p)
{
	p->src_idle = false;
	while (!p->src_done && !p->src_idle &&
	       p->filled - p->consumed < p->o.batches) {
		struct batch *b = p->ring[p->filled % p->o.batches];
		bool behind;

		/* The scan goes to whichever side has time: to this thread
		 * while a queued batch waits for a worker. */
		pthread_mutex_lock(&p->mu);
		behind = p->taken < p->filled;
		pthread_mutex_unlock(&p->mu);
		batch_fill(p, b, behind);
		if (b->n == 0)
			break;
		pthread_mutex_lock(&p->mu);
		b->state = B_QUEUED;
		p->filled++;
		pthread_cond_signal(&p->work);
		pthread_mutex_unlock(&p->mu);
	}
}

/* A copy of the lines of b (which a worker is still preparing) in nb, a
 * spare; under the mutex, since the worker empties b once it sees that
 * it is an orphan. */
static void adopt(struct batch *nb, const struct batch *b)
{
	nb->n = b->n;
	nb->used = b->used;
	nb->scanned = false;
	nb->n_garbage = 0;
	nb->last_big = b->last_big;
	if (b->last_big)
		nb->big = lg_xmalloc(2 * b->lines[b->n - 1].len + 1);
	memcpy(nb->lines, b->lines, b->n * sizeof(*b->lines));
	/* Only the lines' bytes: the worker is writing projections between
	 * them. */
	for (size_t i = 0; i < nb->n; i++) {
		if (nb->lines[i].kind == INGEST_SRC_LINE)
			memcpy(line_at(nb, i), line_at(b, i),
			       (size_t)nb->lines[i].len);
		else
			memset(&nb->prep[i], 0, sizeof(nb->prep[i]));
	}
}

static void deadline_after(struct timespec *ts, unsigned us)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_nsec += (long)us * 1000;
	ts->tv_sec += ts->tv_nsec / 1000000000;
	ts->tv_nsec %= 1000000000;
}

/* The oldest queued batch once it is prepared; NULL when none is queued.
 * The caller never waits long for a worker, which may not be running when
 * the machine is busy: a batch no worker has taken yet it parses itself,
 * and one a worker has not finished after steal_after_us it gives up to
 * that worker (an orphan, which the worker frees) and prepares a copy. So
 * a busy machine costs about what parsing inline costs. */
static struct batch *next_ready(struct ingest_pipe *p)
{
	size_t slot = p->consumed % p->o.batches;
	struct batch *b = p->ring[slot], *nb;
	struct timespec ts;

	if (p->consumed == p->filled)
		return NULL;
	pthread_mutex_lock(&p->mu);
	if (b->state == B_QUEUED && p->taken == p->consumed) {
		p->taken++;
		pthread_mutex_unlock(&p->mu);
		parse_batch(b);
		b->state = B_READY;
		return b;
	}
	deadline_after(&ts, p->o.steal_after_us);
	while (b->state != B_READY)
		if (pthread_cond_timedwait(&p->ready, &p->mu, &ts) ==
			    ETIMEDOUT &&
		    b->state != B_READY && p->n_spare > 0) {
			b->orphan = true;
			nb = p->spare[--p->n_spare];
			p->ring[slot] = nb;
			adopt(nb, b);
			pthread_mutex_unlock(&p->mu);
			parse_batch(nb);
			nb->state = B_READY;
			return nb;
		} else if (p->n_spare == 0) {
			deadline_after(&ts, 1000000);
		}
	pthread_mutex_unlock(&p->mu);
	return b;
}

int ingest__pipe_feed(ingest_pipe_t *p, ingest_t *in, uint64_t *tag,
		      struct lg_error *err)
{
	for (;;) {
		struct batch *b = p->cur;

		if (b != NULL && p->pos < b->n) {
			size_t i = p->pos++;
			const struct pline *l = &b->lines[i];
			/* A document parsed here (the skip did not hold) is
			 * released here. */
			bool here = b->prep[i].may_skip;
			int rc = l->kind == INGEST_SRC_OVERSIZED
					 ? ingest__oversized(in, l->len, err)
					 : ingest__line_prepared(
						   in, &b->prep[i], err);

			if (here)
				ingest__prep_release(&b->prep[i]);
			*tag = l->tag;
			return rc < 0 ? rc : 1;
		}
		if (b != NULL) {
			/* Only the caller touches a batch in B_READY, so
			 * freeing it needs no lock. */
			b->state = B_FREE;
			p->cur = NULL;
			p->consumed++;
		}
		top_up(p);
		if ((p->cur = next_ready(p)) == NULL)
			break;
		p->pos = 0;
	}
	/* Nothing is queued: every line the source gave was fed, and it has
	 * no more for now unless it ended. */
	if (!p->src_done)
		return INGEST_PIPE_IDLE;
	if (p->src_rc < 0 && err != NULL)
		*err = p->src_err;
	return p->src_rc;
}

/* ---------------------------------------------------------------------- */
/* Life cycle */

static void stop_threads(struct ingest_pipe *p)
{
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n_threads; i++)
		pthread_join(p->threads[i], NULL);
	p->n_threads = 0;
}

void ingest__pipe_free(ingest_pipe_t *p)
{
	if (p == NULL)
		return;
	stop_threads(p);
	for (size_t i = 0; p->all != NULL && i < p->o.batches + p->o.threads;
	     i++) {
		struct batch *b = &p->all[i];

		for (size_t k = 0; k < b->n_garbage; k++)
			json_decref(b->garbage[k]);
		for (size_t k = 0; k < b->n; k++)
			ingest__prep_release(&b->prep[k]);
		free(b->lines);
		free(b->prep);
		free(b->garbage);
		free(b->area);
		free(b->big);
	}
	free(p->all);
	free(p->ring);
	free(p->spare);
	free(p->threads);
	pthread_cond_destroy(&p->ready);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

int ingest__pipe_new(ingest_pipe_t **out, const struct ingest_pipe_opts *o,
		     ingest_source_fn *src, void *ctx, struct lg_error *err)
{
	ingest_pipe_t *p = lg_xcalloc(1, sizeof(*p));
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (o != NULL)
		p->o = *o;
	if (p->o.threads == 0)
		p->o.threads = PIPE_THREADS_DEFAULT;
	if (p->o.batch_bytes == 0)
		p->o.batch_bytes = PIPE_BATCH_BYTES;
	if (p->o.batch_lines == 0)
		p->o.batch_lines = PIPE_BATCH_LINES;
	if (p->o.batches == 0)
		p->o.batches = p->o.threads + 3;
	if (p->o.max_line_bytes == 0)
		p->o.max_line_bytes = PIPE_MAX_LINE;
	if (p->o.steal_after_us == 0)
		p->o.steal_after_us = PIPE_STEAL_AFTER_US;
	p->src = src;
	p->ctx = ctx;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->ready, &ca);
	pthread_condattr_destroy(&ca);
	if (p->o.threads > INGEST_PIPE_THREADS_MAX || p->o.batches < 2 ||
	    p->o.batches > INGEST_PIPE_BATCHES_MAX ||
	    p->o.batch_lines > INGEST_PIPE_BATCH_LINES_MAX ||
	    p->o.max_line_bytes > ((size_t)1 << 32) ||
	    p->o.batch_bytes > ((size_t)1 << 32) ||
	    p->o.steal_after_us > 1000000) {
		ingest__pipe_free(p);
		return lg_error_set(err, LG_EINVAL,
				    "ingest pipeline: bounds out of range");
	}
	p->area_bytes = 2 * p->o.batch_bytes;
	p->all = lg_xcalloc(p->o.batches + p->o.threads, sizeof(*p->all));
	p->ring = lg_xcalloc(p->o.batches, sizeof(*p->ring));
	p->spare = lg_xcalloc(p->o.threads, sizeof(*p->spare));
	for (size_t i = 0; i < p->o.batches + p->o.threads; i++) {
		struct batch *b = &p->all[i];

		b->lines = lg_xcalloc(p->o.batch_lines, sizeof(*b->lines));
		b->prep = lg_xcalloc(p->o.batch_lines, sizeof(*b->prep));
		b->garbage = lg_xcalloc(p->o.batch_lines, sizeof(*b->garbage));
		b->area = lg_xmalloc(p->area_bytes);
		if (i < p->o.batches)
			p->ring[i] = b;
		else
			p->spare[p->n_spare++] = b;
	}
	/* jansson's only global state besides its allocator: its hash seed,
	 * set here once before another thread can create an object. */
	json_object_seed(0);
	p->threads = lg_xcalloc(p->o.threads, sizeof(*p->threads));
	for (unsigned i = 0; i < p->o.threads; i++) {
		if ((rc = pthread_create(&p->threads[i], NULL, worker, p)) !=
		    0) {
			ingest__pipe_free(p);
			return lg_error_set(err, LG_EIO,
					    "ingest pipeline: cannot start a "
					    "thread: %s",
					    strerror(rc));
		}
		p->n_threads++;
	}
	*out = p;
	return 0;
}
