/*
 * Heavy reads off the loop (DESIGN 7): exports, states at past seqs and
 * event pages are computed on a thread of their own against a ledger
 * snapshot, and their body is streamed with backpressure.
 *
 * The producer (the thread) writes into a local buffer of HEAVY_CHUNK_BYTES
 * and hands full chunks to a queue of at most HEAVY_QUEUE_BYTES; when the
 * queue is full it waits. The loop takes chunks from the queue only while
 * the socket's write queue is under HEAVY_WRITE_HIGH_BYTES and takes again
 * when a write completes. So a client that does not read holds at most
 * about the sum of those three bounds (plus the kernel's socket buffers),
 * whatever the size of the answer; and one that takes nothing for idle_ms
 * is cut. The number of heavy reads in flight is bounded (max_heavy); the
 * next one is answered 503 with Retry-After.
 *
 * Order of what the client sees: nothing is sent until the first chunk or
 * the end, so an error the producer finds before its first chunk (bad
 * options, a seq past the log) is an ordinary JSON error answer; an error
 * after it cuts the connection without the last chunk, so the body cannot
 * be taken for whole.
 *
 * CPU: with 2 cores and 8 exports, threads that merely run at a lower
 * priority still take the core the loop wakes on for a scheduler slice, and
 * admission waited 15-100 ms at its p99. So four things bound what heavy
 * reads take: (1) at most qs->turns' count compute at once (cores - 1 by
 * default), in the order they arrived, each giving its turn back at every
 * chunk it hands over (it then queues behind the others: round robin of
 * HEAVY_CHUNK_BYTES steps) and whenever it waits for its client; (2) the
 * threads run at nice HEAVY_NICE, so the loop wins a core they share;
 * (3) a thread with a turn computes on the other cores, not the one the
 * loop last ran on (keep_off_loop says why nice is not enough); (4) the
 * turns are a queue, so no read waits forever: each is served after the
 * reads that came before it, and a turn given back wakes only the next.
 *
 * Lifetime: a heavy read is freed on the loop once both its thread has
 * ended (joined) and its connection has let it go; its async handle is
 * closed first.
 */
#ifdef __linux__
#define _GNU_SOURCE /* sched_getcpu, sched_setaffinity */
#endif
#include "query/query_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* The producers' niceness: on a machine with fewer cores than heavy reads,
 * the loop (admission, probes) must win the CPU, not share it evenly. Not
 * SCHED_IDLE: on a node busy with other work, that starves the reads
 * outright (a turn held by a thread that never runs stops them all). */
#define HEAVY_NICE 19

struct chunk {
	struct chunk *next;
	size_t len;
	char data[];
};

struct heavy {
	struct query_server *qs;
	struct conn *c; /* loop only; NULL once the connection is gone */
	enum route_id route;
	uint64_t t0_ns;
	const char *ctype;
	bool load_state;
	heavy_fn *fn;
	void *arg;
	void (*arg_free)(void *);
	ledger_t *snap; /* used by the thread only */
	uv_thread_t thread;
	uv_async_t async;
	bool started, joined, head_sent, reaped;
	bool late_in_head; /* the late header went in the head */

	/* The producer's buffer (thread only). */
	char *buf;
	size_t len;
#ifdef __linux__
	/* The cores the thread may run on, and the loop's core it keeps off
	 * (thread only; see keep_off_loop). */
	cpu_set_t cpus;
	bool have_cpus;
	int off_cpu;
#endif

	/* Shared, under mu. */
	uv_mutex_t mu;
	uv_cond_t cv;
	struct chunk *head, *tail;
	size_t queued;
	bool flushed; /* a chunk was ever queued */
	bool done, cancel;
	int status;	  /* of a failure (0: none) */
	char *error_text; /* its JSON body; owned */
	char *late;	  /* query__heavy_late_header's line; owned */
	bool late_early;  /* late came before any chunk: it heads the answer */
	struct heavy *prev, *next; /* qs->heavies (loop only) */
};

/* ---------------------------------------------------------------------- */
/* Turns */

void query__heavy_turns_init(struct heavy_turns *t, unsigned n)
{
	if (n == 0) {
		unsigned cores = uv_available_parallelism();

		n = cores > 1 ? cores - 1 : 1;
	}
	uv_mutex_init(&t->mu);
	t->free = n;
	t->head = t->tail = NULL;
	t->waiting = 0;
	atomic_init(&t->loop_cpu, -1);
}

void query__heavy_turns_release(struct heavy_turns *t)
{
	LG_ASSERT(t->head == NULL);
	uv_mutex_destroy(&t->mu);
}

/* Waits for a turn, after every thread that asked before. Only the thread
 * a turn is handed to is woken: with one turn and eight reads, waking them
 * all at every hand-over made seven threads runnable for nothing, each
 * one more task on the loop's core (issue 28). */
static void turn_take(struct heavy_turns *t)
{
	struct heavy_turn_waiter w = {.granted = false, .next = NULL};

	uv_mutex_lock(&t->mu);
	if (t->free > 0 && t->head == NULL) {
		t->free--;
		uv_mutex_unlock(&t->mu);
		return;
	}
	uv_cond_init(&w.cv);
	if (t->tail != NULL)
		t->tail->next = &w;
	else
		t->head = &w;
	t->tail = &w;
	t->waiting++;
	while (!w.granted)
		uv_cond_wait(&w.cv, &t->mu);
	uv_mutex_unlock(&t->mu);
	uv_cond_destroy(&w.cv);
}

/* Gives a turn back: to the first waiter if there is one (it leaves the
 * FIFO here, so that the turn cannot be taken by a later arrival). */
static void turn_give(struct heavy_turns *t)
{
	struct heavy_turn_waiter *w;

	uv_mutex_lock(&t->mu);
	w = t->head;
	if (w == NULL) {
		t->free++;
	} else {
		t->head = w->next;
		if (t->head == NULL)
			t->tail = NULL;
		t->waiting--;
		w->granted = true;
		uv_cond_signal(&w->cv);
	}
	uv_mutex_unlock(&t->mu);
}

void query__heavy_turns_note_loop(struct heavy_turns *t)
{
#ifdef __linux__
	atomic_store_explicit(&t->loop_cpu, sched_getcpu(),
			      memory_order_relaxed);
#else
	(void)t;
#endif
}

/* Moves the thread off the core the loop last ran on, whenever that core
 * changed (checked at every turn taken, so at least every chunk). Nice
 * alone does not keep the loop's core: the scheduler charges a process's
 * CPU on a core as a whole (an autogroup, a pod's cgroup), so a read
 * computing on the loop's core spends the share the loop's wake-ups need,
 * and on a busy machine the loop then waits behind other processes' slices
 * (issue 28: admission p99 22x with 8 exports). On another core it takes
 * nothing from the loop. With one core allowed, it stays (nice decides). */
static void keep_off_loop(struct heavy *h)
{
#ifdef __linux__
	int cpu = atomic_load_explicit(&h->qs->turns.loop_cpu,
				       memory_order_relaxed);
	cpu_set_t set;

	if (!h->have_cpus || cpu == h->off_cpu)
		return;
	h->off_cpu = cpu;
	set = h->cpus;
	if (cpu >= 0 && cpu < CPU_SETSIZE)
		CPU_CLR(cpu, &set);
	if (CPU_COUNT(&set) == 0)
		set = h->cpus;
	(void)sched_setaffinity(0, sizeof(set), &set);
#else
	(void)h;
#endif
}

/* Takes a turn, then computes where it does not slow the loop. */
static void take_turn(struct heavy *h)
{
	turn_take(&h->qs->turns);
	keep_off_loop(h);
}

/* ---------------------------------------------------------------------- */
/* The producer's side. */

/* Hands the buffer to the queue, waiting while it is full; with last, the
 * production is done (in the same step, so that the loop sees the last
 * chunk and the end together). */
static void queue_chunk(struct heavy *h, bool last)
{
	struct chunk *k = NULL;

	if (h->len > 0) {
		k = lg_xmalloc(sizeof(*k) + h->len);
		k->next = NULL;
		k->len = h->len;
		memcpy(k->data, h->buf, h->len);
		h->len = 0;
	}
	/* The turn is given back while the client drains the queue, and
	 * taken again behind the reads waiting for one. */
	turn_give(&h->qs->turns);
	uv_mutex_lock(&h->mu);
	while (k != NULL && h->queued >= HEAVY_QUEUE_BYTES && !h->cancel)
		uv_cond_wait(&h->cv, &h->mu);
	if (k != NULL && h->cancel) {
		free(k);
	} else if (k != NULL) {
		if (h->tail != NULL)
			h->tail->next = k;
		else
			h->head = k;
		h->tail = k;
		h->queued += k->len;
		h->flushed = true;
	}
	h->done = h->done || last;
	uv_mutex_unlock(&h->mu);
	uv_async_send(&h->async);
	if (!last)
		take_turn(h);
}

int query__heavy_emit(struct heavy *h, const char *p, size_t n)
{
	bool cancel;

	while (n > 0) {
		size_t take = HEAVY_CHUNK_BYTES - h->len;

		if (take > n)
			take = n;
		memcpy(h->buf + h->len, p, take);
		h->len += take;
		p += take;
		n -= take;
		if (h->len == HEAVY_CHUNK_BYTES)
			queue_chunk(h, false);
	}
	uv_mutex_lock(&h->mu);
	cancel = h->cancel;
	uv_mutex_unlock(&h->mu);
	return cancel ? LG_EIO : 0;
}

void query__heavy_fail(struct heavy *h, int status, const char *fmt, ...)
{
	json_t *v;
	va_list ap;

	va_start(ap, fmt);
	v = query__error_doc(fmt, ap);
	va_end(ap);
	uv_mutex_lock(&h->mu);
	if (h->status == 0) {
		h->status = status;
		h->error_text = json_canonical(v);
	}
	uv_mutex_unlock(&h->mu);
	json_decref(v);
}

ledger_t *query__heavy_ledger(struct heavy *h)
{
	return h->snap;
}

void query__heavy_late_header(struct heavy *h, const char *line)
{
	uv_mutex_lock(&h->mu);
	if (h->late == NULL) {
		h->late = lg_xstrdup(line);
		/* Known before the first chunk, which sends the head. */
		h->late_early = !h->flushed;
	}
	uv_mutex_unlock(&h->mu);
}

static void heavy_thread(void *arg)
{
	struct heavy *h = arg;
	struct lg_error err = {0};
	bool failed;

#ifdef __linux__
	/* Linux applies a thread's own nice value to that thread only. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), HEAVY_NICE);
	h->have_cpus = sched_getaffinity(0, sizeof(h->cpus), &h->cpus) == 0;
	h->off_cpu = -2; /* none yet (-1 is "the loop's is unknown") */
#endif
	h->buf = lg_xmalloc(HEAVY_CHUNK_BYTES);
	take_turn(h);
	if (ledger_snapshot_enter(h->snap, h->load_state, &err) != 0)
		query__heavy_fail(h, 500, "snapshot: %s", err.msg);
	else
		h->fn(h, h->arg);
	ledger_close(h->snap);
	h->snap = NULL;
	uv_mutex_lock(&h->mu);
	failed = h->status != 0;
	uv_mutex_unlock(&h->mu);
	if (failed)
		h->len = 0; /* what is left of a failed body is not sent */
	queue_chunk(h, true); /* gives the turn back, for good */
	/* The loop frees h only after joining this thread. */
	free(h->buf);
	h->buf = NULL;
}

/* ---------------------------------------------------------------------- */
/* The loop's side. */

static void on_async_closed(uv_handle_t *a)
{
	struct heavy *h = a->data;
	struct chunk *k = h->head;

	while (k != NULL) {
		struct chunk *next = k->next;

		free(k);
		k = next;
	}
	if (h->arg_free != NULL)
		h->arg_free(h->arg);
	free(h->error_text);
	free(h->late);
	uv_cond_destroy(&h->cv);
	uv_mutex_destroy(&h->mu);
	free(h);
}

/* Frees h once the thread has ended and the connection let it go. */
static void heavy_reap(struct heavy *h)
{
	struct query_server *qs = h->qs;
	bool done;

	uv_mutex_lock(&h->mu);
	done = h->done;
	uv_mutex_unlock(&h->mu);
	if (h->c != NULL || !done || h->reaped)
		return;
	h->reaped = true;
	if (h->started && !h->joined) {
		uv_thread_join(&h->thread);
		h->joined = true;
	}
	if (h->prev != NULL)
		h->prev->next = h->next;
	else
		qs->heavies = h->next;
	if (h->next != NULL)
		h->next->prev = h->prev;
	qs->heavy_n--;
	uv_close((uv_handle_t *)&h->async, on_async_closed);
}

void query__heavy_pump(struct heavy *h)
{
	struct query_server *qs = h->qs;
	struct conn *c = h->c;
	bool finished, ok;

	uv_mutex_lock(&h->mu);
	if (c != NULL && !h->head_sent && h->done && h->status != 0 &&
	    !h->flushed) {
		int status = h->status;
		char *text = h->error_text;

		h->error_text = NULL;
		uv_mutex_unlock(&h->mu);
		h->c = NULL;
		/* Nothing was sent: the error is an ordinary answer. */
		query__conn_answer_deferred(qs, c, h->route, h->t0_ns, status,
					    text);
		heavy_reap(h);
		return;
	}
	while (c != NULL && query__conn_usable(c) && h->head != NULL &&
	       query__conn_write_queue(c) < HEAVY_WRITE_HIGH_BYTES) {
		struct chunk *k = h->head;

		h->head = k->next;
		if (h->head == NULL)
			h->tail = NULL;
		h->queued -= k->len;
		uv_cond_signal(&h->cv);
		if (!h->head_sent) {
			/* Once done, or given before any chunk, the late
			 * header is final: in the head. */
			bool in_head = h->done || h->late_early;

			uv_mutex_unlock(&h->mu);
			query__conn_stream_head(c, h->ctype, h->route,
						in_head ? h->late : NULL);
			h->late_in_head = in_head;
			h->head_sent = true;
		} else {
			uv_mutex_unlock(&h->mu);
		}
		query__conn_stream_data(c, k->data, k->len);
		free(k);
		uv_mutex_lock(&h->mu);
		c = h->c; /* a failed write closes the connection */
	}
	finished = c != NULL && h->done && h->head == NULL;
	ok = h->status == 0;
	uv_mutex_unlock(&h->mu);
	if (finished) {
		/* done: late is no longer written. */
		const char *trailer = h->late_in_head ? NULL : h->late;

		if (!h->head_sent && ok) {
			query__conn_stream_head(c, h->ctype, h->route, h->late);
			h->head_sent = true;
			trailer = NULL;
		}
		h->c = NULL;
		query__conn_stream_end(qs, c, h->route, h->t0_ns, ok, trailer);
	} else if (c != NULL) {
		query__conn_stream_watch(c);
	}
	heavy_reap(h);
}

void query__heavy_conn_gone(struct heavy *h)
{
	h->c = NULL;
	uv_mutex_lock(&h->mu);
	h->cancel = true;
	uv_cond_signal(&h->cv);
	uv_mutex_unlock(&h->mu);
	heavy_reap(h);
}

static void on_async(uv_async_t *a)
{
	query__heavy_pump(a->data);
}

void query__heavy_start(struct query_server *qs, struct request *rq,
			const char *ctype, bool load_state, heavy_fn *fn,
			void *arg, void (*arg_free)(void *))
{
	struct lg_error err = {0};
	struct heavy *h;

	if (qs->heavy_n >= qs->o.max_heavy) {
		qs->m.heavy_refused++;
		if (arg_free != NULL)
			arg_free(arg);
		query__reply_busy(
			qs, rq, 1,
			"too many heavy reads in flight: retry later");
		return;
	}
	h = lg_xcalloc(1, sizeof(*h));
	if (ledger_snapshot_new(qs->lg, &h->snap, &err) != 0) {
		free(h);
		if (arg_free != NULL)
			arg_free(arg);
		query__reply_error(qs, rq, 503, "%s", err.msg);
		return;
	}
	h->qs = qs;
	h->c = rq->c;
	h->route = rq->route;
	h->t0_ns = rq->t0_ns;
	h->ctype = ctype;
	h->load_state = load_state;
	h->fn = fn;
	h->arg = arg;
	h->arg_free = arg_free;
	uv_mutex_init(&h->mu);
	uv_cond_init(&h->cv);
	uv_async_init(&qs->loop, &h->async, on_async);
	h->async.data = h;
	h->next = qs->heavies;
	if (h->next != NULL)
		h->next->prev = h;
	qs->heavies = h;
	qs->heavy_n++;
	qs->m.heavy_started++;
	query__conn_stream_begin(qs, rq, h);
	if (uv_thread_create(&h->thread, heavy_thread, h) != 0) {
		query__heavy_fail(h, 503, "no thread for the read");
		ledger_close(h->snap);
		h->snap = NULL;
		uv_mutex_lock(&h->mu);
		h->done = true;
		uv_mutex_unlock(&h->mu);
		query__heavy_pump(h);
		return;
	}
	h->started = true;
}

unsigned query__heavy_waiting(struct query_server *qs)
{
	uint64_t n;

	uv_mutex_lock(&qs->turns.mu);
	n = qs->turns.waiting;
	uv_mutex_unlock(&qs->turns.mu);
	return (unsigned)n;
}

size_t query__heavy_buffered_bytes(struct query_server *qs)
{
	size_t n = 0;

	for (struct heavy *h = qs->heavies; h != NULL; h = h->next) {
		uv_mutex_lock(&h->mu);
		n += h->queued;
		uv_mutex_unlock(&h->mu);
		if (h->c != NULL)
			n += query__conn_write_queue(h->c);
	}
	return n;
}
