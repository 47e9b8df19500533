/*
 * The server: the loop and its handles, the listening socket, following
 * the log, and the order of start and stop.
 *
 * Following. A timer calls ledger_refresh every poll_ms and indexes the
 * new events (verdict ids, the last change of content). LMDB readers see
 * a commit the moment it is made, so the lag is at most one interval plus
 * the time to apply what came; /metrics reports it as the time since the
 * last refresh that reached the end of the log. Verdicts do not wait for
 * the timer: the group commit refreshes first (query/verdict.c).
 */
#include "query/query_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static void opts_defaults(struct query_opts *o)
{
	if (o->listen == NULL)
		o->listen = QUERY_LISTEN_DEFAULT;
	if (o->max_body_bytes == 0)
		o->max_body_bytes = QUERY_MAX_BODY_DEFAULT;
	if (o->max_metrics_bytes == 0)
		o->max_metrics_bytes = QUERY_MAX_METRICS_DEFAULT;
	if (o->max_url_bytes == 0)
		o->max_url_bytes = QUERY_MAX_URL_DEFAULT;
	if (o->max_header_bytes == 0)
		o->max_header_bytes = QUERY_MAX_HEADER_DEFAULT;
	if (o->max_headers == 0)
		o->max_headers = QUERY_MAX_HEADERS_DEFAULT;
	if (o->idle_ms == 0)
		o->idle_ms = QUERY_IDLE_MS_DEFAULT;
	if (o->request_ms == 0)
		o->request_ms = QUERY_REQUEST_MS_DEFAULT;
	if (o->poll_ms == 0)
		o->poll_ms = QUERY_POLL_MS_DEFAULT;
	if (o->max_conns == 0)
		o->max_conns = QUERY_MAX_CONNS_DEFAULT;
	if (o->max_half_open == 0)
		o->max_half_open = o->max_conns >= 4 ? o->max_conns / 4 : 1;
	/* Half the half-open budget: one address alone never fills it, so a
	 * flood from one address sheds only its own connections. */
	if (o->max_conns_per_peer == 0)
		o->max_conns_per_peer =
			o->max_half_open >= 2 ? o->max_half_open / 2 : 1;
	if (o->handshake_ms == 0)
		o->handshake_ms = QUERY_HANDSHAKE_MS_DEFAULT;
	if (o->probe_max_conns == 0)
		o->probe_max_conns = QUERY_PROBE_CONNS_DEFAULT;
	if (o->max_heavy == 0)
		o->max_heavy = QUERY_MAX_HEAVY_DEFAULT;
	if (o->tls_reload_ms == 0)
		o->tls_reload_ms = TLS_RELOAD_MS_DEFAULT;
	/* The head of a first request is a request too. */
	if (o->handshake_ms > o->request_ms)
		o->handshake_ms = o->request_ms;
}

/* "HOST:PORT" or "[V6]:PORT" with a numeric host; *loopback tells whether
 * only this machine can reach it. */
static int parse_listen(const char *s, struct sockaddr_storage *ss,
			bool *loopback, struct lg_error *err)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	size_t hl;
	char *end;
	unsigned long port;

	memset(ss, 0, sizeof(*ss));
	if (colon == NULL || colon[1] == '\0')
		goto bad;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || port > 65535 || colon[1] < '0' ||
	    colon[1] > '9')
		goto bad;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	}
	if (hl == 0 || hl >= sizeof(host))
		goto bad;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)ss) == 0) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		*loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
		return 0;
	}
	if (uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)ss) == 0) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		*loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
			    (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) &&
			     a->sin6_addr.s6_addr[12] == 127);
		return 0;
	}
bad:
	return lg_error_set(err, LG_EINVAL,
			    "--listen \"%s\": want HOST:PORT with a numeric "
			    "host, e.g. 127.0.0.1:8420 or [::1]:8420",
			    s);
}

/* One server per ledger writes verdicts: ids are counted by the writer,
 * and two writers would hand out the same id. flock is released by the
 * kernel however the process ends. */
static int take_lock(struct query_server *qs, struct lg_error *err)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/serve.lock", qs->o.db);
	qs->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (qs->lock_fd < 0)
		return lg_error_set(err, LG_EIO, "%s: %s", path,
				    strerror(errno));
	if (flock(qs->lock_fd, LOCK_EX | LOCK_NB) != 0)
		return lg_error_set(err, LG_EEXIST,
				    "%s: another gpuledger serve is serving "
				    "this ledger",
				    qs->o.db);
	return 0;
}

/* Until the log holds a complete list, each refresh asks the ledger
 * whether it does now (one meta read); afterwards never again. */
static int check_synced(struct query_server *qs, struct lg_error *err)
{
	return qs->synced_seq != 0
		       ? 0
		       : ledger_synced_seq(qs->lg, &qs->synced_seq, err);
}

const char *query__unready_reason(const struct query_server *qs)
{
	uint64_t limit_ns = 20ull * qs->o.poll_ms * 1000000u;

	if (limit_ns < 1000000000u)
		limit_ns = 1000000000u;
	if (!qs->ready || query__now_ns() - qs->caught_up_ns > limit_ns)
		return "not caught up with the log";
	if (qs->o.member != NULL && qs->member_st.unready[0] != '\0')
		return qs->member_st.unready;
	if (qs->synced_seq == 0)
		return "the log holds no complete list of the cluster yet (no "
		       "NOTE Synced): the watcher is still listing, or cannot";
	return NULL;
}

/* A member's status, read on the loop's thread (DESIGN 11: GETs keep
 * answering from the state, saying how stale it may be). */
static void member_status(struct query_server *qs)
{
	const struct query_member *m = qs->o.member;

	if (m == NULL)
		return;
	memset(&qs->member_st, 0, sizeof(qs->member_st));
	m->status(m->ctx, &qs->member_st);
	qs->member_st_read = true;
	qs->member_st.unready[sizeof(qs->member_st.unready) - 1] = '\0';
	if (qs->member_st.reachable)
		qs->stale_hdr[0] = '\0';
	else
		snprintf(qs->stale_hdr, sizeof(qs->stale_hdr),
			 "X-Gpuledger-Stale: %llu\r\n",
			 (unsigned long long)qs->member_st.stale_s);
}

int query__server_follow(struct query_server *qs, struct lg_error *err)
{
	int rc = ledger_refresh(qs->lg, err);

	member_status(qs);

	qs->m.refreshes++;
	if (rc == 0)
		rc = query__vindex_catch_up(qs->lg, &qs->vix,
					    ledger_last_seq(qs->lg), err);
	if (rc == 0)
		rc = check_synced(qs, err);
	if (rc != 0) {
		qs->m.refresh_errors++;
		qs->ready = false;
		return rc;
	}
	qs->ready = true;
	qs->caught_up_ns = query__now_ns();
	return 0;
}

int query__server_head_at(struct query_server *qs, uint64_t seq, char *hex,
			  struct lg_error *err)
{
	uint8_t head[LEDGER_HEAD_BYTES];
	int rc = ledger_head_at(qs->lg, seq, head, err);

	query__hex(head, hex);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Loop callbacks. */

static void on_follow(uv_timer_t *t)
{
	struct query_server *qs = t->data;
	struct lg_error err = {0};

	if (query__server_follow(qs, &err) != 0)
		fprintf(stderr, "gpuledger serve: following the log: %s\n",
			err.msg[0] ? err.msg : lg_strerror(err.code));
	else
		query__sign_due(qs);
	query__billing_check(&qs->billing);
	query__verdict_member_tick(qs);
}

static void on_check(uv_check_t *h)
{
	struct query_server *qs = h->data;

	query__heavy_turns_note_loop(&qs->turns);
	if (qs->q.n > 0)
		query__verdict_batch_run(qs);
}

static void on_tls_timer(uv_timer_t *t)
{
	struct query_server *qs = t->data;

	query__tls_reload(qs->tls);
}

static void on_connection(uv_stream_t *l, int status)
{
	struct query_server *qs = l->data;

	if (status == 0)
		query__conn_accept(qs, l);
}

static void close_handles(struct query_server *qs)
{
	uv_handle_t *hs[] = {
		(uv_handle_t *)&qs->listener,
		(uv_handle_t *)&qs->follow,
		(uv_handle_t *)&qs->batch_check,
		(uv_handle_t *)&qs->batch_idle,
		(uv_handle_t *)&qs->vlinger,
		(uv_handle_t *)&qs->stop_async,
		(uv_handle_t *)&qs->sig_int,
		(uv_handle_t *)&qs->sig_term,
		(uv_handle_t *)&qs->tls_timer,
		(uv_handle_t *)&qs->probe_listener,
	};

	for (size_t i = 0; i < sizeof(hs) / sizeof(hs[0]); i++)
		if (hs[i]->loop == &qs->loop && !uv_is_closing(hs[i]))
			uv_close(hs[i], NULL);
}

/* Stops accepting, answers what is queued, closes every connection. */
static void begin_stop(struct query_server *qs)
{
	if (qs->stopping)
		return;
	qs->stopping = true;
	if (qs->q.n > 0)
		query__verdict_batch_run(qs);
	query__conn_close_all(qs);
	close_handles(qs);
}

static void on_stop(uv_async_t *a)
{
	begin_stop(a->data);
}

static void on_signal(uv_signal_t *s, int signum)
{
	begin_stop(s->data);
}

/* ---------------------------------------------------------------------- */

/* Binds and listens on addr; *port is the port bound. */
static int listen_on(struct query_server *qs, uv_tcp_t *l, const char *addr,
		     const struct sockaddr_storage *ss, int *port,
		     struct lg_error *err)
{
	struct sockaddr_storage got;
	int len = sizeof(got), rc;

	uv_tcp_init(&qs->loop, l);
	l->data = qs;
	rc = uv_tcp_bind(l, (const struct sockaddr *)ss, 0);
	if (rc == 0)
		rc = uv_listen((uv_stream_t *)l, 511, on_connection);
	if (rc == 0)
		rc = uv_tcp_getsockname(l, (struct sockaddr *)&got, &len);
	if (rc != 0)
		return lg_error_set(err, LG_EIO, "listen on %s: %s", addr,
				    uv_strerror(rc));
	*port = ntohs(got.ss_family == AF_INET6
			      ? ((struct sockaddr_in6 *)&got)->sin6_port
			      : ((struct sockaddr_in *)&got)->sin_port);
	return 0;
}

static int bind_listener(struct query_server *qs, struct lg_error *err)
{
	struct sockaddr_storage ss;
	bool loopback = false;
	int rc;

	if ((rc = parse_listen(qs->o.listen, &ss, &loopback, err)) != 0)
		return rc;
	if (!loopback && qs->o.token_file == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "refusing to listen on %s, which is not a "
				    "loopback address, without --token-file",
				    qs->o.listen);
	if ((rc = listen_on(qs, &qs->listener, qs->o.listen, &ss, &qs->port,
			    err)) != 0)
		return rc;
	/* The probe port answers only the public probes, so it needs no
	 * token file wherever it listens. */
	if (qs->o.probe_listen != NULL &&
	    ((rc = parse_listen(qs->o.probe_listen, &ss, &loopback, err)) !=
		     0 ||
	     (rc = listen_on(qs, &qs->probe_listener, qs->o.probe_listen, &ss,
			     &qs->probe_port, err)) != 0))
		return rc;
	return 0;
}

/* serve --holds (DESIGN 3.7): the mode is an event of the log, so that
 * audit, replay and every reader derive what admission saw. Appended like
 * any event, at the log's own time (the process's clock never moves it),
 * and only when the log's mode differs: a restart with the same flag
 * appends nothing. */
static int holds_mode(struct query_server *qs, struct lg_error *err)
{
	const state_t *st = ledger_state(qs->lg);
	struct state_holds_stats hs;
	struct event ev = {.type = EV_HOLDS};

	if (!qs->o.holds_set || qs->o.member != NULL || qs->o.read_only)
		return 0;
	state_holds_stats(st, &hs);
	if (hs.ttl_ms == qs->o.holds_ttl_ms)
		return 0;
	ev.time_ns = state_time_ns(st);
	ev.value = qs->o.holds_ttl_ms;
	return ledger_append(qs->lg, &ev, 1, NULL, 0, NULL, err);
}

static int open_ledger(struct query_server *qs, struct lg_error *err)
{
	/* The whole bound is mapped from the start (address space, not
	 * memory): a growth remaps, which waits for every heavy read's
	 * snapshot, and those wait for the loop to drain them while the loop
	 * is in the growth: the loop froze under exports and admissions. */
	struct ledger_opts lo = {.dir = qs->o.db,
				 .create = qs->o.create,
				 .map_size_bytes = SIZE_MAX,
				 .map_max_bytes = qs->o.map_max_bytes};
	int rc;

	if ((rc = take_lock(qs, err)) != 0)
		return rc;
	/* A member's server reads through the member's shared handle: one
	 * LMDB environment per process. */
	if (qs->o.member != NULL)
		qs->lg = qs->o.member->ledger;
	else if ((rc = ledger_open(&qs->lg, &lo, err)) != 0)
		return rc;
	member_status(qs);
	if ((rc = holds_mode(qs, err)) != 0)
		return rc;
	/* The verdicts already in the log (the next id) from the ledger's
	 * index: a start reads the latest checkpoint and the tail, never the
	 * history. */
	rc = query__vindex_open(qs->lg, &qs->vix, err);
	if (rc == 0)
		rc = check_synced(qs, err);
	if (rc == 0) {
		qs->ready = true;
		qs->caught_up_ns = query__now_ns();
	}
	return rc;
}

static void init_handles(struct query_server *qs)
{
	uv_timer_init(&qs->loop, &qs->follow);
	uv_check_init(&qs->loop, &qs->batch_check);
	uv_idle_init(&qs->loop, &qs->batch_idle);
	uv_timer_init(&qs->loop, &qs->vlinger);
	uv_async_init(&qs->loop, &qs->stop_async, on_stop);
	uv_signal_init(&qs->loop, &qs->sig_int);
	uv_signal_init(&qs->loop, &qs->sig_term);
	uv_timer_init(&qs->loop, &qs->tls_timer);
	qs->tls_timer.data = qs;
	qs->follow.data = qs->batch_check.data = qs->batch_idle.data = qs;
	qs->vlinger.data = qs;
	qs->stop_async.data = qs->sig_int.data = qs->sig_term.data = qs;
}

int query_server_open(query_server_t **out, const struct query_opts *o,
		      struct lg_error *err)
{
	struct query_server *qs;
	int rc;

	LG_ASSERT(out != NULL && o != NULL);
	qs = lg_xcalloc(1, sizeof(*qs));
	*out = NULL;
	qs->o = *o;
	qs->signed_size = UINT64_MAX; /* sign at the first follow */
	if (qs->o.sign_every_ms == 0)
		qs->o.sign_every_ms = 10000;
	qs->lock_fd = -1;
	qs->cache.content_seq = UINT64_MAX;
	opts_defaults(&qs->o);
	query__http_settings(&qs->settings);
	query__budget_init(&qs->api_budget, "api", qs->o.max_conns,
			   qs->o.max_half_open, qs->o.max_conns_per_peer,
			   false);
	/* A probe is answered at once: any probe connection may be shed,
	 * and one peer holds at most half of them, so a flood from one
	 * address sheds only its own and never the kubelet's. */
	query__budget_init(
		&qs->probe_budget, "probe", qs->o.probe_max_conns,
		qs->o.probe_max_conns,
		qs->o.probe_max_conns >= 2 ? qs->o.probe_max_conns / 2 : 1,
		true);
	if (qs->o.db == NULL) {
		query__budget_release(&qs->api_budget);
		query__budget_release(&qs->probe_budget);
		free(qs);
		return lg_error_set(err, LG_EINVAL, "--db DIR is required");
	}
	if ((rc = uv_loop_init(&qs->loop)) != 0) {
		query__budget_release(&qs->api_budget);
		query__budget_release(&qs->probe_budget);
		free(qs);
		return lg_error_set(err, LG_EIO, "event loop: %s",
				    uv_strerror(rc));
	}
	init_handles(qs);
	query__heavy_turns_init(&qs->turns, qs->o.heavy_turns);
	rc = qs->o.token_file
		     ? query__auth_load(&qs->auth, qs->o.token_file, err)
		     : 0;
	if (rc == 0 && (qs->o.tls_cert || qs->o.tls_key || qs->o.tls_client_ca))
		rc = qs->o.tls_client_ca && !qs->o.tls_cert
			     ? lg_error_set(err, LG_EINVAL,
					    "--tls-client-ca needs --tls-cert "
					    "and --tls-key")
			     : query__tls_open(&qs->tls, qs->o.tls_cert,
					       qs->o.tls_key,
					       qs->o.tls_client_ca, err);
	if (rc == 0)
		rc = query__billing_open(&qs->billing, qs->o.rates_file, err);
	if (rc == 0)
		rc = bind_listener(qs, err);
	if (rc == 0)
		rc = open_ledger(qs, err);
	if (rc != 0) {
		query_server_close(qs);
		return rc;
	}
	*out = qs;
	return 0;
}

int query_server_port(const query_server_t *qs)
{
	LG_ASSERT(qs != NULL);
	return qs->port;
}

int query_server_probe_port(const query_server_t *qs)
{
	LG_ASSERT(qs != NULL);
	return qs->probe_port;
}

int query_server_run(query_server_t *qs, struct lg_error *err)
{
	int rc;

	LG_ASSERT(qs != NULL);
	if (qs->stopping)
		return 0;
	uv_timer_start(&qs->follow, on_follow, qs->o.poll_ms, qs->o.poll_ms);
	uv_check_start(&qs->batch_check, on_check);
	if (qs->tls != NULL)
		uv_timer_start(&qs->tls_timer, on_tls_timer,
			       qs->o.tls_reload_ms, qs->o.tls_reload_ms);
	if (qs->o.handle_signals) {
		uv_signal_start(&qs->sig_int, on_signal, SIGINT);
		uv_signal_start(&qs->sig_term, on_signal, SIGTERM);
	}
	rc = uv_run(&qs->loop, UV_RUN_DEFAULT);
	(void)rc;
	return 0;
}

void query__server_stop(query_server_t *qs)
{
	LG_ASSERT(qs != NULL);
	uv_async_send(&qs->stop_async);
}

void query_server_close(query_server_t *qs)
{
	if (qs == NULL)
		return;
	if (!qs->stopping) {
		qs->stopping = true;
		query__conn_close_all(qs);
		close_handles(qs);
	}
	/* Let the close callbacks run, then the loop can be closed. */
	uv_run(&qs->loop, UV_RUN_DEFAULT);
	uv_loop_close(&qs->loop);
	query__heavy_turns_release(&qs->turns);
	query__pending_q_release(&qs->q);
	query__vindex_release(&qs->vix);
	query__tenant_cache_release(&qs->cache);
	query__rcache_release(&qs->rcache);
	query__auth_release(&qs->auth);
	query__billing_release(&qs->billing);
	query__tls_close(qs->tls);
	query__budget_release(&qs->api_budget);
	query__budget_release(&qs->probe_budget);
	if (qs->o.member == NULL)
		ledger_close(qs->lg);
	if (qs->lock_fd >= 0)
		close(qs->lock_fd);
	free(qs);
}
