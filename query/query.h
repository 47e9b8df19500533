/*
 * query — the query process `gpuledger serve` (DESIGN 7): an HTTP/1.1 server
 * on a libuv loop that follows the ledger and answers reads, admission and
 * declaration verdicts, and audits of past verdicts.
 *
 * Invariants:
 *  - One thread runs the loop; the ledger handle, the state and every
 *    connection belong to it. Only query__server_stop (query_int.h) may be
 *    called from another thread. SIGINT and SIGTERM are handled by the
 *    loop when asked (handle_signals); the process must ignore SIGPIPE
 *    (tools/main.c does), so that a client that goes away is an error on
 *    its connection only.
 *  - A verdict is answered only after its VERDICT event is durable. The
 *    verdicts computed in one loop iteration are appended in one
 *    ledger_append (group commit) and answered together.
 *  - The VERDICT event's record is the canonical JSON of the verdict object
 *    {"allowed", "basisSeq", "chainHead", "checks", "id", "message",
 *    "reason", "request", "type", "warnings"}, plus "requester" when it
 *    was asked through an AdmissionReview. The event's own seq is not in
 *    the record (it cannot be known before the append); answers add it as
 *    "seq". id is the verdict counter: the n-th VERDICT event of the log has
 *    id n. One server per ledger writes verdicts (a lock file in the ledger
 *    directory enforces it), so ids never collide.
 *  - Every error answer is JSON {"error": "..."}; no input a client sends
 *    crashes the process, and every request, header list, body and idle
 *    period is bounded.
 *  - uv_* and http_parser types never leave query/ (and tools/serve.c).
 *
 * Answers (JSON, canonical: sorted keys, no insignificant space):
 *   GET /v1/tenants            {"seq", "time", "tenants": [replay tenant]}
 *                              (tenant:<ns> sees its subtree only)
 *   GET /v1/tenants/{ns}       the replay tenant object plus "children"
 *                              (sorted namespaces whose parent is ns); 404
 *   GET /v1/tenants/{ns}/remaining  the `eval Remaining` output
 *   POST /v1/admission, /v1/declarations  the verdict with id, seq,
 *                              basisSeq, chainHead; an AdmissionReview in
 *                              gets an AdmissionReview out (response.uid,
 *                              allowed, status {code 200|403, message
 *                              "<reason>: <message>", reason}, warnings,
 *                              and auditAnnotations with the verdict
 *                              id/seq); a Tenant review goes to
 *                              declarations; request.dryRun is judged,
 *                              not recorded; a recorded review keeps
 *                              "requester" {username, groups, uid,
 *                              operation}
 *   GET /v1/verdicts?tenant&requester&reason&from&to&after&limit
 *                              {"verdicts": [verdict + "seq", "time"],
 *                              "next": id|null}
 *   GET /v1/verdicts/{id}      the verdict as answered; ?verify=1 adds
 *                              "verified" and, when false, "recomputed"
 *   GET /v1/state?at=SEQ|TIME  `replay --json` (with chainHead)
 *   GET /v1/events?from&limit  {"events": [log form + "head", the chain
 *                              head after the event], "next", "lastSeq"}
 *                              (limit 1..10000, default 100; at most about
 *                              8 MiB per answer: continue from "next")
 *   GET /v1/export             billing rows (DESIGN 8) as focus-csv or NDJSON
 *   GET /v1/classes            {"classes": [replay classes]}
 *   GET /v1/classes/{c}/capacity  {"class", "capacity", "free", "nodes":
 *                              [{"name", "capacity", "allocated", "serves"}]}
 *   GET /healthz               {"status": "ok"}
 *   GET /readyz                {"ready": true, "seq"} or 503
 *   GET /metrics               Prometheus text (query/metrics.c)
 */
#ifndef GPULEDGER_QUERY_H
#define GPULEDGER_QUERY_H

#include "ledger/ledger.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUERY_LISTEN_DEFAULT "127.0.0.1:8420"

/* Bounds and intervals; 0 takes the default in brackets. */
struct query_opts {
	const char *db;		 /* the ledger directory (must exist) */
	bool create;		 /* ... unless this: then it may be made */
	const char *listen;	 /* "HOST:PORT" or "[V6]:PORT"; port 0 picks
				    one [QUERY_LISTEN_DEFAULT] */
	const char *token_file;	 /* NULL: no authentication, and then only
				    a loopback address may be used */
	const char *rates_file;	 /* the billing file of GET /v1/export,
				    reloaded when it changes; NULL: none */
	size_t max_body_bytes;	 /* request body [1 MiB] */
	size_t max_metrics_bytes; /* the /metrics page [64 MiB]; beyond,
				     500 (no flag: tests set it) */
	size_t max_url_bytes;	 /* request line target [8 KiB] */
	size_t max_header_bytes; /* all header names and values [16 KiB] */
	unsigned max_headers;	 /* header lines [64] */
	unsigned idle_ms;	 /* keep-alive wait for the next request
				    [30000] */
	unsigned request_ms;	 /* a request must arrive whole within this
				    [10000]; slow clients are cut off */
	unsigned poll_ms;	 /* follow the log every [50] ms */
	unsigned max_conns;	 /* open connections of the API listener
				    [4096] */
	unsigned max_heavy;	 /* heavy reads (exports, past states, event
				    pages) in flight [16]; beyond: 503 */
	unsigned heavy_turns;	 /* of those, how many compute at once
				    [cores - 1, at least 1]; the rest wait
				    their turn in arrival order */
	size_t map_max_bytes;	 /* bound of the ledger's map (0: the
				    ledger's default); a small one gives a
				    full map that verdict appends run into */
	bool handle_signals;	 /* SIGINT and SIGTERM stop the loop */
	/* Connection budgets (DESIGN 7). Half-open: a connection that has
	 * not finished its TLS handshake and its first request head; such
	 * a connection is cut after handshake_ms [2000, at most request_ms].
	 * At most max_half_open of the API listener's connections are
	 * half-open [max_conns / 4], and one peer address holds at most
	 * max_conns_per_peer connections [max_half_open / 2] (each at least 1,
	 * at most max_conns). A new connection over a bound closes the oldest
	 * half-open connection in its way (of its peer, for the peer
	 * bound); when there is none it is closed at once. The probe
	 * listener has a budget of its own, probe_max_conns [64], of which
	 * one peer holds at most half; any probe connection may be shed. */
	unsigned max_half_open;
	unsigned handshake_ms;
	unsigned max_conns_per_peer;
	unsigned probe_max_conns;
	/* TLS (all NULL: plain HTTP). cert and key go together; with
	 * client_ca every client must present a certificate it signed. The
	 * files are checked for changes every tls_reload_ms [1000]. */
	const char *tls_cert, *tls_key, *tls_client_ca;
	unsigned tls_reload_ms;
	/* A second, plain HTTP listener that answers only /healthz and
	 * /readyz (NULL: none): the kubelet's probes present no client
	 * certificate. */
	const char *probe_listen;
	/* A read replica: POSTs answer 503 naming primary (may be NULL). */
	bool read_only;
	const char *primary;
	/* --sign-key: sign a checkpoint of the Merkle tree at least every
	 * sign_every_ms [10000] while it grows (DESIGN 4.4); borrowed, NULL:
	 * no signing. */
	const struct note_signer *signer;
	unsigned sign_every_ms;
	/* --holds (DESIGN 3.7): with holds_set, the holds mode the log must
	 * have; at open, when the log's mode differs, the server appends the
	 * HOLDS event that sets it (TTL holds_ttl_ms, 0 off) through the
	 * ledger, before it answers anything. Not for a member (its mode
	 * goes through etcd) nor a read replica. */
	bool holds_set;
	int64_t holds_ttl_ms;
	/* A member of a cluster on etcd (gpuledger member, DESIGN 11), or
	 * NULL: see struct query_member. */
	const struct query_member *member;
};

/* What a member (cluster/member.c) tells its server: its POSTs are the
 * verdict routes (and a door's forward), judged by the member's verdict
 * path; GETs carry X-Gpuledger-Stale: <seconds> while etcd cannot be
 * reached, and /readyz is 503 with the member's reason. */
struct query_member_status {
	bool reachable;	   /* etcd answered the member's last request */
	uint64_t stale_s;  /* seconds since it last knew itself caught up */
	char unready[512]; /* why it is not ready ("" when it is) */
	/* DESIGN 11 rule 10: the size of the cluster's newest signed
	 * checkpoint (the newest multiple of the signing interval at or
	 * below P/head; 0: the member signs none). A member whose own newest
	 * note is older answers /v1/checkpoint and proofs 503. */
	uint64_t checkpoint_due;
};
/* One queued verdict request as a member's verdict path sees it. */
struct query_vitem {
	const struct verdict_request *vr; /* borrowed for the call */
	/* When the request arrived (CLOCK_MONOTONIC ms; 0: now): DESIGN 11
	 * rule 2's bound counts from here, not from when it is judged. */
	int64_t t0_ms;
	/* A forwarded request's bound (CLOCK_MONOTONIC ms): what its door
	 * had left of it; 0 for one asked here. */
	int64_t bound_ms;
	/* The body as its client sent it (borrowed; NULL when not kept): what
	 * a door forwards to the sequencer. */
	const char *body;
	size_t body_len;
	/* In: it came from a door (never forwarded again). Out: answered by
	 * the sequencer (again or error), nothing recorded here. */
	bool forwarded;
	/* Out: 200 with v (recorded: v has its id and seq; a dry run is
	 * not), or with again (a repeat's answer from its record; caller
	 * frees), or another status with error. */
	int status;
	struct verdict v;
	bool recorded;
	char *again;
	char error[LG_ERRMSG_MAX];
};
/* What one call of the verdict path counts (added to /metrics). */
struct query_vstats {
	uint64_t txns;	     /* verdict txns committed */
	uint64_t renumbered; /* conflicts over VERDICTs only: re-numbered */
	uint64_t rejudged;   /* conflicts over an observation: judged again */
	uint64_t exhausted;  /* batches answered 503 after too many rounds */
	uint64_t unknown;    /* batches answered 503, outcome unknown */
	uint64_t unanswered; /* NOTEs VerdictUnanswered appended */
	uint64_t repeats;    /* answered from the uid index (rule 3) */
	uint64_t forwarded;  /* answered by the sequencer (a door's) */
	uint64_t fallbacks;  /* forwards that failed: judged here */
	/* The sequencer's pipeline (DESIGN 11, --pipeline): txns committed
	 * that were sent while an earlier txn of this member was in flight
	 * (compared on its P/head value); txns that reached etcd before
	 * their predecessor and were sent again, identical, once it
	 * committed; txns chained on one that failed, built again. */
	uint64_t pipelined;
	uint64_t early;
	uint64_t chain_failed;
};

/* The verdict path (DESIGN 3.5, 3.7, 11; query/vpath.c): judging,
 * numbering, rule 3 and recording of one group of requests, the same for
 * the single pod's group commit and a member's etcd txn; only the append
 * differs. A back end calls, for one group:
 *   query_vgroup_init; query_vgroup_repeats (rule 3) on its ledger;
 *   query_vgroup_judge on the state at (s, h); then, until no item is
 *   judged: query_vgroup_build at (s, h) with the verdicts before s,
 *   append the value, and on success query_vgroup_recorded (the log is
 *   then at the value's last seq and head: build the rest there); when the
 *   log moved, judge again on the new state (query_vgroup_unjudge, then
 *   query_vgroup_judge), or, when only VERDICTs intervened, build at the
 *   new (s, h) keeping the judgement;
 *   query_vgroup_release.
 * Items answered (a repeat, a 400, a dry run, a failure) are never judged
 * or recorded again. One thread at a time. */
enum query_vstate {
	QUERY_V_TODO = 0, /* to judge (again) */
	QUERY_V_JUDGED,	  /* judged: to record */
	QUERY_V_DONE	  /* answered (status, v or again, or error) */
};
struct query_vgroup {
	struct query_vitem *it;	 /* borrowed: the requests */
	size_t n;
	struct query_vstats *st; /* borrowed: counts repeats (may be NULL) */
	enum query_vstate *state; /* per item */
	char answered_at[40];	  /* the clock at init: answeredAt */
	/* The value last built: of[k] is the item of its event k. */
	size_t *of, m;
	struct event *evs;
	char **text;
	uint64_t base_id; /* the verdicts before its first seq */
	struct lg_buf scratch;
};
void query_vgroup_init(struct query_vgroup *g, struct query_vitem *it,
		       size_t n, struct query_vstats *st);
void query_vgroup_release(struct query_vgroup *g);
/* Item i (not 200) is answered status with msg. */
void query_vgroup_fail(struct query_vgroup *g, size_t i, int status,
		       const char *msg);
/* Every item not answered yet. */
void query_vgroup_fail_rest(struct query_vgroup *g, int status,
			    const char *msg);
size_t query_vgroup_count(const struct query_vgroup *g, enum query_vstate s);
/* Rule 3 on lg's uid index: every item not answered whose key was judged
 * is answered from its record (or 409, 503). */
void query_vgroup_repeats(struct query_vgroup *g, ledger_t *lg);
/* Rule 3 over a record lg does not hold yet (read from etcd, or recorded
 * by this process a moment ago): item i, whose key the record at seq
 * has, is answered from it. */
void query_vgroup_repeat_of(struct query_vgroup *g, size_t i,
			    const char *record, uint64_t seq);
/* Judges every item to judge on st, the state at seq with chain head head
 * (LEDGER_HEAD_BYTES): a dry run is answered at once, a record that could
 * not fit an event is a 413, a request the model refuses a 400. */
void query_vgroup_judge(struct query_vgroup *g, const state_t *st,
			uint64_t seq, const uint8_t *head);
/* Every judged item goes back to be judged again (an observation
 * intervened). */
void query_vgroup_unjudge(struct query_vgroup *g);
/* The value of the judged items on st at chain head head, with verdicts
 * verdicts before: ledger_logval_build_each, each record numbered where it
 * lands (id, basisSeq = seq - 1, chainHead, the basis's time). As many as
 * fit max_bytes (*taken: g->of[0..*taken) are the items); *after (may be
 * NULL; caller frees) the state after them. On error err names the item
 * g->of[*taken], and nothing is built. */
int query_vgroup_build(struct query_vgroup *g, const state_t *st,
		       const uint8_t *head, uint64_t verdicts,
		       size_t max_bytes, state_t **after,
		       struct ledger_logval *v, size_t *taken,
		       struct lg_error *err);
/* The first taken items of the value built are recorded from first_seq
 * on: answered 200 with their seq. */
void query_vgroup_recorded(struct query_vgroup *g, uint64_t first_seq,
			   size_t taken);


/* Verdict calls a member may run at once (query_member.inflight). */
#define QUERY_VJOBS_MAX 16

struct query_member {
	/* The handle the server reads through instead of opening db: a
	 * ledger_share of the applier's, so that the process holds one LMDB
	 * environment. Borrowed: closed by the member after the server. */
	ledger_t *ledger;
	/* Called on the loop's thread at every follow. */
	void (*status)(void *ctx, struct query_member_status *st);
	void *ctx;
	/* The member's verdict path (DESIGN 11 "Verdicts in a cluster"), or
	 * NULL (every POST answers 503). Called on a worker thread, never
	 * the loop's, one call at a time unless inflight says more (DESIGN
	 * 11 rule 1: one verdict txn outstanding per member, per txn of the
	 * sequencer's pipeline; the queue keeps filling meanwhile): judges
	 * the n items of one group commit, records them in etcd's log and
	 * fills in each item's answer. No two items of one call repeat a
	 * review uid, nor an item of another call in flight. n may be 0: a
	 * call that only resolves what an earlier call left unknown (pending
	 * says when one is due; made only when no other call runs). */
	void (*verdicts)(void *ctx, struct query_vitem *it, size_t n,
			 struct query_vstats *st);
	/* Whether an n = 0 call is due (on the loop's thread); may be NULL. */
	bool (*pending)(void *ctx);
	/* How many calls of verdicts may run at once now (on the loop's
	 * thread; NULL, or 0: one). More than one only on the sequencer,
	 * whose verdict path keeps up to that many txns in flight (DESIGN 11
	 * "One sequencer, every member a door"); the server never gives two
	 * calls at once items with the same review uid or idempotency key
	 * (rule 3): such an item waits for a later group. At most
	 * QUERY_VJOBS_MAX. */
	size_t (*inflight)(void *ctx);
	/* A door (DESIGN 11 "One sequencer, every member a door"): each
	 * request's body is kept for the forward, and one without a key (no
	 * review uid, no Idempotency-Key) gets door_id-N, so that the door's
	 * own fallback and the sequencer's verdict are one review (rule 3).
	 * door_id NULL: neither. */
	const char *door_id;
};

typedef struct query_server query_server_t;

/* Opens the ledger (state from the latest checkpoint plus the tail), builds
 * the verdict index, loads the token file and binds the listening socket.
 * Refuses a non-loopback address without a token file, a token file that
 * others may read, and a ledger another server is serving. Caller closes
 * with query_server_close. */
int query_server_open(query_server_t **qs, const struct query_opts *o,
		      struct lg_error *err);
/* The bound port (useful after asking for port 0). */
int query_server_port(const query_server_t *qs);
/* The probe listener's port (0 without one). */
int query_server_probe_port(const query_server_t *qs);
/* Runs the loop until a signal (with handle_signals) or query__server_stop.
 * Returns 0 or an LG_* code when the loop could not run. */
int query_server_run(query_server_t *qs, struct lg_error *err);
/* Closes connections, the listener and the ledger; accepts NULL. */
void query_server_close(query_server_t *qs);

/* Proofs (DESIGN 4.4) as JSON: {"type", "seq"|"from", "treeSize",
 * "hashes", "event" (inclusion), "checkpoint", "oldCheckpoint" (the signed
 * notes of those sizes when the ledger has them)}. New reference, NULL
 * with err set. */
json_t *query_proof_inclusion(ledger_t *lg, uint64_t seq, uint64_t size,
			      struct lg_error *err);
json_t *query_proof_consistency(ledger_t *lg, uint64_t from, uint64_t to,
				struct lg_error *err);
/* The tree size a proof of seq is given in by default: the latest signed
 * checkpoint's when it covers seq, else the last seq. */
uint64_t query_proof_size(ledger_t *lg, uint64_t seq);

/* ---------------------------------------------------------------------- */
/* Verdict records are parsed and re-derived by model/vrequest.c
 * (verdict_record_parse, verdict_record_recompute), shared by GET
 * /v1/verdicts/{id}?verify=1 and `gpuledger audit`. */

#endif
