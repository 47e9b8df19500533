/*
 * Metrics in the Prometheus text format 0.0.4. Counters are plain integers
 * in fixed tables (route x status code, verdict type x reason) bumped by the
 * loop thread; rendering walks the tables, so the exposition's size is
 * bounded by the routes, codes and reasons, plus two lines per tenant and
 * class for the gauges of the current state.
 */
#include "query/query_int.h"

#include <stddef.h>
#include <string.h>

static const int codes[] = {200, 400, 401, 403, 404, 405, 408,
			    413, 414, 431, 500, 501, 503};
#define N_CODES (sizeof(codes) / sizeof(codes[0]))

static const char *const reasons[] = {
	"WithinBudget",
	"NoGrowth",
	"NotATenant",
	"Unconstrained",
	"Invalid",
	"UnknownClass",
	"RawKeyBlocksClass",
	"ClassBudgetExceeded",
	"TotalBudgetExceeded",
	"InvalidBudgetKey",
	"InvalidQuantity",
	"ExceedsParentBudget",
};
#define N_REASONS (sizeof(reasons) / sizeof(reasons[0]))

static const char *const vtypes[VERDICT_KIND_MAX] = {"admission", "declaration"};

/* Upper bounds of the latency buckets, in seconds and in ns. */
static const char *const lat_le[METRIC_LAT_BUCKETS] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005",
	"0.01",	  "0.025",   "0.05",   "0.1",	"0.25",	  "1",
};
static const uint64_t lat_ns[METRIC_LAT_BUCKETS] = {
	100000,	  250000,   500000,   1000000,	 2500000,   5000000,
	10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};

_Static_assert(N_CODES < 16, "codes fit the request table");
_Static_assert(N_REASONS < 16, "reasons fit the verdict table");

static size_t code_slot(int status)
{
	for (size_t i = 0; i < N_CODES; i++)
		if (codes[i] == status)
			return i;
	return N_CODES; /* "other" */
}

void query__metrics_request(struct metrics *m, enum route_id r, int status,
			    uint64_t ns)
{
	size_t b = 0;

	m->requests[r][code_slot(status)]++;
	while (b < METRIC_LAT_BUCKETS && ns > lat_ns[b])
		b++;
	m->lat[r][b]++;
	m->lat_sum[r] += (double)ns / 1e9;
	m->lat_count[r]++;
}

void query__metrics_verdict(struct metrics *m, enum verdict_kind type, const char *reason)
{
	size_t i = 0;

	while (i < N_REASONS && (reason == NULL || strcmp(reasons[i], reason)))
		i++;
	m->verdicts[type][i]++;
}

static const char *route_label(size_t r)
{
	return r < R_MAX ? query__routes[r].name : "none";
}

static void head(struct lg_buf *b, const char *name, const char *type,
		 const char *help)
{
	lg_buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_requests(struct lg_buf *b, const struct metrics *m)
{
	head(b, "gpuledger_http_requests_total", "counter",
	     "HTTP requests answered, by route and status code.");
	for (size_t r = 0; r <= R_MAX; r++)
		for (size_t c = 0; c <= N_CODES; c++)
			if (m->requests[r][c] > 0)
				lg_buf_addf(
					b,
					"gpuledger_http_requests_total{"
					"route=\"%s\",code=\"%s%d\"} %llu\n",
					route_label(r),
					c == N_CODES ? "other" : "",
					c == N_CODES ? 0 : codes[c],
					(unsigned long long)m->requests[r][c]);
}

static void render_latency(struct lg_buf *b, const struct metrics *m)
{
	const char *n = "gpuledger_http_request_duration_seconds";

	head(b, n, "histogram",
	     "Time from a request's first byte to its answer being queued.");
	for (size_t r = 0; r <= R_MAX; r++) {
		uint64_t cum = 0;

		if (m->lat_count[r] == 0)
			continue;
		for (size_t i = 0; i < METRIC_LAT_BUCKETS; i++) {
			cum += m->lat[r][i];
			lg_buf_addf(b,
				    "%s_bucket{route=\"%s\",le=\"%s\"} %llu\n",
				    n, route_label(r), lat_le[i],
				    (unsigned long long)cum);
		}
		lg_buf_addf(b, "%s_bucket{route=\"%s\",le=\"+Inf\"} %llu\n", n,
			    route_label(r),
			    (unsigned long long)m->lat_count[r]);
		lg_buf_addf(b, "%s_sum{route=\"%s\"} %.9f\n", n, route_label(r),
			    m->lat_sum[r]);
		lg_buf_addf(b, "%s_count{route=\"%s\"} %llu\n", n,
			    route_label(r),
			    (unsigned long long)m->lat_count[r]);
	}
}

static void render_verdicts(struct lg_buf *b, const struct metrics *m)
{
	head(b, "gpuledger_verdicts_total", "counter",
	     "Verdicts recorded and answered, by type and reason.");
	for (size_t t = 0; t < VERDICT_KIND_MAX; t++)
		for (size_t i = 0; i <= N_REASONS; i++)
			if (m->verdicts[t][i] > 0)
				lg_buf_addf(
					b,
					"gpuledger_verdicts_total{type=\"%s\""
					",reason=\"%s\"} %llu\n",
					vtypes[t],
					i == N_REASONS ? "other" : reasons[i],
					(unsigned long long)m->verdicts[t][i]);
}

static void scalar(struct lg_buf *b, const char *name, const char *type,
		   const char *help, double v)
{
	head(b, name, type, help);
	lg_buf_addf(b, "%s %.17g\n", name, v);
}

static void render_server(struct lg_buf *b, struct query_server *qs)
{
	const struct metrics *m = &qs->m;

	scalar(b, "gpuledger_log_lag_seconds", "gauge",
	       "Time since the last refresh that reached the end of the log.",
	       (double)(query__now_ns() - qs->caught_up_ns) / 1e9);
	scalar(b, "gpuledger_last_seq", "gauge",
	       "The last seq of the log this server has applied.",
	       (double)ledger_last_seq(qs->lg));
	scalar(b, "gpuledger_ready", "gauge",
	       "1 while /readyz answers 200: caught up with a log that holds "
	       "a complete list.",
	       query__unready_reason(qs) == NULL);
	scalar(b, "gpuledger_log_synced", "gauge",
	       "1 once the log holds a complete list (NOTE Synced).",
	       qs->synced_seq != 0);
	/* promtool: a gauge must not end in _count (a summary's suffix). */
	scalar(b, "gpuledger_verdicts_logged", "gauge",
	       "VERDICT events in the log (the last verdict id).",
	       (double)qs->vix.n);
	scalar(b, "gpuledger_verdict_batches_total", "counter",
	       "Group commits of verdicts.", (double)m->batches);
	scalar(b, "gpuledger_verdict_batch_events_total", "counter",
	       "VERDICT events appended by group commits.",
	       (double)m->batch_events);
	scalar(b, "gpuledger_verdict_repeats_total", "counter",
	       "AdmissionReviews whose uid was already judged, answered from "
	       "the recorded verdict (no second record).",
	       (double)m->verdict_repeats);
	scalar(b, "gpuledger_verdict_append_errors_total", "counter",
	       "Group commits that failed (their verdicts got 503).",
	       (double)m->append_errors);
	/* A member's verdict path (DESIGN 11): only a member has these. */
	if (qs->o.member != NULL) {
		scalar(b, "gpuledger_cluster_verdict_txns_total", "counter",
		       "Verdict txns committed in etcd's log.",
		       (double)qs->vstats.txns);
		scalar(b, "gpuledger_cluster_verdict_renumbered_total",
		       "counter",
		       "Verdict txns that met only VERDICTs and were "
		       "re-numbered, keeping their judgement.",
		       (double)qs->vstats.renumbered);
		scalar(b, "gpuledger_cluster_verdict_rejudged_total",
		       "counter",
		       "Verdict txns that met an observation and were judged "
		       "again.",
		       (double)qs->vstats.rejudged);
		scalar(b, "gpuledger_cluster_verdict_exhausted_total",
		       "counter",
		       "Verdict batches answered 503 after too many "
		       "conflicts.",
		       (double)qs->vstats.exhausted);
		scalar(b, "gpuledger_cluster_verdict_unknown_total", "counter",
		       "Verdict batches answered 503 because their outcome "
		       "was unknown at the deadline (rule 2).",
		       (double)qs->vstats.unknown);
		scalar(b, "gpuledger_cluster_verdict_unanswered_total",
		       "counter",
		       "NOTEs VerdictUnanswered appended (rule 2).",
		       (double)qs->vstats.unanswered);
		scalar(b, "gpuledger_cluster_verdict_forwarded_total",
		       "counter",
		       "Verdicts a door forwarded and the sequencer answered "
		       "(DESIGN 11).",
		       (double)qs->vstats.forwarded);
		scalar(b, "gpuledger_cluster_verdict_fallbacks_total",
		       "counter",
		       "Forwards that failed: the door judged the group itself "
		       "(DESIGN 11).",
		       (double)qs->vstats.fallbacks);
		scalar(b, "gpuledger_cluster_verdict_pipelined_total",
		       "counter",
		       "Verdict txns committed that were sent while an earlier "
		       "txn of this member was in flight (the sequencer's "
		       "pipeline, compared on its P/head value; DESIGN 11).",
		       (double)qs->vstats.pipelined);
		scalar(b, "gpuledger_cluster_verdict_early_total", "counter",
		       "Pipelined verdict txns that reached etcd before their "
		       "predecessor and were sent again, identical.",
		       (double)qs->vstats.early);
		scalar(b, "gpuledger_cluster_verdict_chain_failed_total",
		       "counter",
		       "Pipelined verdict txns chained on a txn that failed, "
		       "built again from the failure branch's head.",
		       (double)qs->vstats.chain_failed);
		scalar(b, "gpuledger_cluster_verdict_groups_in_flight",
		       "gauge", "Verdict groups in flight now.",
		       (double)qs->n_vjobs);
		scalar(b, "gpuledger_cluster_verdict_groups_in_flight_max",
		       "gauge",
		       "The most verdict groups in flight at once so far.",
		       (double)qs->vjobs_peak);
	}
	scalar(b, "gpuledger_log_refreshes_total", "counter",
	       "Refreshes of the state from the log.", (double)m->refreshes);
	scalar(b, "gpuledger_log_refresh_errors_total", "counter",
	       "Refreshes that failed.", (double)m->refresh_errors);
	scalar(b, "gpuledger_connections_open", "gauge", "Open connections.",
	       (double)qs->conns.n);
	scalar(b, "gpuledger_connections_accepted_total", "counter",
	       "Connections accepted.", (double)m->conns_accepted);
	scalar(b, "gpuledger_connections_refused_total", "counter",
	       "New connections closed at once (a budget reached, or "
	       "stopping).",
	       (double)m->conns_refused);
	scalar(b, "gpuledger_requests_timed_out_total", "counter",
	       "Requests cut off for arriving too slowly.",
	       (double)m->conns_timed_out);
	scalar(b, "gpuledger_bad_requests_total", "counter",
	       "Malformed or oversized requests.", (double)m->bad_requests);
	scalar(b, "gpuledger_heavy_reads_in_flight", "gauge",
	       "Exports, past states and event pages being computed or "
	       "streamed.",
	       (double)qs->heavy_n);
	scalar(b, "gpuledger_heavy_reads_waiting", "gauge",
	       "Heavy reads in flight waiting for a turn to compute.",
	       (double)query__heavy_waiting(qs));
	scalar(b, "gpuledger_heavy_reads_buffered_bytes", "gauge",
	       "Bytes of heavy answers waiting for their clients (queued and "
	       "on the sockets).",
	       (double)query__heavy_buffered_bytes(qs));
	scalar(b, "gpuledger_heavy_reads_total", "counter",
	       "Heavy reads started.", (double)m->heavy_started);
	scalar(b, "gpuledger_heavy_reads_refused_total", "counter",
	       "Heavy reads answered 503 (over --max-heavy).",
	       (double)m->heavy_refused);
}

/* Holds (DESIGN 3.7), derived from the log by replay like every figure of
 * the state: written once the log has turned them on, so that a ledger
 * without holds shows what it always did. */
static void render_holds(struct lg_buf *b, struct query_server *qs)
{
	struct state_holds_stats s;
	bool any = false;

	state_holds_stats(ledger_state(qs->lg), &s);
	for (int i = 0; i < HOLD_END_MAX; i++)
		any = any || s.ended[i] != 0;
	if (!s.on && s.made == 0 && !any)
		return;
	scalar(b, "gpuledger_holds_enabled", "gauge",
	       "1 while holds are on (the log's last HOLDS event).", s.on);
	scalar(b, "gpuledger_holds_ttl_seconds", "gauge",
	       "The TTL of new holds.", (double)s.ttl_ms / 1e3);
	scalar(b, "gpuledger_holds_alive", "gauge",
	       "Holds alive: admissions whose objects the watcher has not "
	       "observed yet, within their TTL.",
	       (double)s.alive);
	scalar(b, "gpuledger_holds_made_total", "counter",
	       "Holds made by allowed admissions (a replacement makes one).",
	       (double)s.made);
	head(b, "gpuledger_holds_ended_total", "counter",
	     "Holds ended, by how: observation (the watcher saw the object), "
	     "replacement, delete, expiry (the TTL passed: an admission "
	     "whose object never came), off.");
	for (int i = 0; i < HOLD_END_MAX; i++)
		lg_buf_addf(b, "gpuledger_holds_ended_total{how=\"%s\"} %llu\n",
			    hold_end_name(i), (unsigned long long)s.ended[i]);
}

/* The connection budgets of the two listeners (DESIGN 7), every reason
 * of both counters written, 0 included, so that an alert on a rate sees
 * the series before its first increase. */
static void render_budgets(struct lg_buf *b, struct query_server *qs)
{
	const struct conn_budget *bs[] = {&qs->api_budget, &qs->probe_budget};
	static const struct {
		const char *name, *help;
		size_t off;
	} fams[] = {
		{"gpuledger_connections_shed_total",
		 "Connections a budget closed: the oldest half-open one, to "
		 "make room for a new one under the bound named, or one past "
		 "--handshake-ms.",
		 offsetof(struct conn_budget, shed)},
		{"gpuledger_connections_budget_refused_total",
		 "New connections closed at once: the bound named was reached "
		 "and no connection could be shed.",
		 offsetof(struct conn_budget, refused)},
	};

	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		head(b, fams[f].name, "counter", fams[f].help);
		for (size_t i = 0; i < sizeof(bs) / sizeof(bs[0]); i++) {
			const uint64_t *v =
				(const uint64_t *)((const char *)bs[i] +
						   fams[f].off);

			for (int r = 0; r < SHED_MAX; r++)
				lg_buf_addf(b,
					    "%s{listener=\"%s\",reason=\"%s\"} "
					    "%llu\n",
					    fams[f].name, bs[i]->listener,
					    query__shed_reason_name(r),
					    (unsigned long long)v[r]);
		}
	}
	head(b, "gpuledger_connections_half_open", "gauge",
	     "Connections without a TLS handshake and first request head "
	     "yet.");
	for (size_t i = 0; i < sizeof(bs) / sizeof(bs[0]); i++)
		lg_buf_addf(b,
			    "gpuledger_connections_half_open{listener="
			    "\"%s\"} %u\n",
			    bs[i]->listener, bs[i]->n_half_open);
}

/* TLS, when serve speaks it: handshakes, reloads, and when the
 * certificate in use expires (cert-manager renews well before; an old
 * date here means renewals are not arriving or are refused). */
static void render_tls(struct lg_buf *b, struct query_server *qs)
{
	struct tls_stats st;

	if (qs->tls == NULL)
		return;
	query__tls_stats_get(qs->tls, &st);
	scalar(b, "gpuledger_tls_handshakes_total", "counter",
	       "TLS handshakes completed.", (double)st.handshakes);
	scalar(b, "gpuledger_tls_handshake_errors_total", "counter",
	       "TLS handshakes that failed (bad or missing client "
	       "certificate, protocol).",
	       (double)st.handshake_errors);
	scalar(b, "gpuledger_tls_reloads_total", "counter",
	       "Certificate and key pairs reloaded after they changed.",
	       (double)st.reloads);
	scalar(b, "gpuledger_tls_reload_errors_total", "counter",
	       "Changed TLS files that did not load (the old pair stayed).",
	       (double)st.reload_errors);
	scalar(b, "gpuledger_tls_certificate_expiry_timestamp_seconds", "gauge",
	       "When the serving certificate in use expires (Unix time).",
	       (double)st.not_after_s);
}

/* Per tenant and class: own and subtree reserved units, remaining. */
static void render_tenants(struct lg_buf *b, const json_t *tenants)
{
	static const struct {
		const char *name, *member, *help;
	} g[] = {
		{"gpuledger_tenant_reserved", "reserved",
		 "Units reserved in the tenant's own namespace."},
		{"gpuledger_tenant_subtree_reserved", "subtreeReserved",
		 "Units reserved in the tenant's subtree (what budgets cap)."},
		{"gpuledger_tenant_subtree_allocated", "subtreeAllocated",
		 "Units allocated to devices in the tenant's subtree."},
		/* Holds on only (the member is absent otherwise). */
		{"gpuledger_tenant_subtree_held", "subtreeHeld",
		 "Units held in the tenant's subtree by admissions not yet "
		 "observed (DESIGN 3.7)."},
	};
	const json_t *t, *v;
	const char *k;
	size_t i;

	for (size_t j = 0; j < sizeof(g) / sizeof(g[0]); j++) {
		if (json_object_get(json_array_get(tenants, 0), g[j].member) ==
			    NULL &&
		    strcmp(g[j].member, "subtreeHeld") == 0)
			continue;
		head(b, g[j].name, "gauge", g[j].help);
		json_array_foreach (tenants, i, t)
			json_object_foreach (json_object_get(t, g[j].member), k,
					     v)
				lg_buf_addf(b,
					    "%s{tenant=\"%s\",class=\"%s\"} "
					    "%lld\n",
					    g[j].name,
					    qjstr_or(t, "namespace", ""), k,
					    (long long)json_integer_value(v));
	}
	head(b, "gpuledger_tenant_remaining", "gauge",
	     "Remaining budget per class (absent when unbounded; negative "
	     "when over).");
	json_array_foreach (tenants, i, t)
		json_object_foreach (json_object_get(t, "remaining"), k, v)
			if (json_is_integer(json_object_get(v, "remaining")))
				lg_buf_addf(
					b,
					"gpuledger_tenant_remaining{tenant=\"%s"
					"\",class=\"%s\"} %lld\n",
					qjstr_or(t, "namespace", ""), k,
					(long long)json_integer_value(
						json_object_get(v,
								"remaining")));
	/* promtool: a gauge must not end in _total (a counter's suffix). */
	head(b, "gpuledger_tenant_remaining_all_classes", "gauge",
	     "Remaining budget over all classes (absent when unbounded).");
	json_array_foreach (tenants, i, t) {
		v = json_object_get(json_object_get(t, "remainingTotal"),
				    "remaining");
		if (json_is_integer(v))
			lg_buf_addf(b,
				    "gpuledger_tenant_remaining_all_classes{"
				    "tenant="
				    "\"%s\"} %lld\n",
				    qjstr_or(t, "namespace", ""),
				    (long long)json_integer_value(v));
	}
}

char *query__metrics_render(struct query_server *qs, const json_t *tenants,
			    size_t *len)
{
	char common[LG_METRICS_COMMON_MAX];
	struct lg_buf b;

	/* Unchecked adds: a refusal sticks, and detach says so. */
	lg_buf_init(&b, qs->o.max_metrics_bytes);
	lg_metrics_common(common, sizeof(common));
	lg_buf_addf(&b, "%s", common);
	render_requests(&b, &qs->m);
	render_latency(&b, &qs->m);
	render_verdicts(&b, &qs->m);
	render_server(&b, qs);
	render_holds(&b, qs);
	render_budgets(&b, qs);
	render_tls(&b, qs);
	render_tenants(&b, tenants);
	return lg_buf_detach(&b, len);
}
