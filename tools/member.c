/*
 * gpuledger member (DESIGN 11): one member of a cluster on etcd. The
 * member itself is cluster/member.c; this file reads the options (etcd's
 * as `cluster` takes them, serve's where they apply) and runs it until
 * SIGINT or SIGTERM.
 */
#include "cluster/cluster.h"
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char member_usage[] =
	"usage: gpuledger member --db DIR --etcd URL[,URL...] --prefix "
	"P --name NAME\n"
	"         [--lease-ttl SECONDS] [--verdict-timeout-ms MS] "
	"[--pipeline K]\n"
	"         [--checkpoint-every N]\n"
	"         [--etcd-cacert F --etcd-cert F --etcd-key F] "
	"[--etcd-timeout-ms MS]\n"
	"         [--listen HOST:PORT] [--token-file FILE] [--rates "
	"FILE]\n"
	"         [--tls-cert F --tls-key F [--tls-client-ca F]]\n"
	"         [--probe-listen HOST:PORT] [--max-body BYTES] "
	"[--max-conns N] ...\n"
	"         [--sign-key F [--sign-every N]]\n"
	"         [--watch [--kubeconfig F] [--context NAME] "
	"[--classes F] [--tick S]\n"
	"          [--keep N] [--keep-bytes B] [--defrag-free B]]\n"
	"         [--peer URL] [--peer-token-file F] [--peer-cacert F]\n"
	"         [--peer-cert F --peer-key F]\n"
	"         [--advertise-url URL] [--forward-timeout-ms MS] "
	"[--no-forward]\n"
	"         [--holds DUR]\n"
	"  a member of a cluster on etcd (DESIGN 11): its applier "
	"follows\n"
	"  P/log/ in etcd and appends every committed value to the "
	"ledger at\n"
	"  --db (made when missing), checking each chain head against "
	"P/head;\n"
	"  serve's routes answer from that ledger, and every option of "
	"serve's\n"
	"  server (--listen to --poll-ms below) is serve's, with "
	"serve's\n"
	"  defaults. With --watch it campaigns for P/leader (a lease "
	"of\n"
	"  --lease-ttl) and, while it leads, runs the live watcher of\n"
	"  `gpuledger watch`, appending what it observes to etcd's log "
	"(a NOTE\n"
	"  LeaderChanged starts each term). A ledger of another "
	"history\n"
	"  (another P/epoch, etcd cluster or prefix, a seq past "
	"P/head, another\n"
	"  head at P/head's seq) is refused at the start (exit 2, "
	"naming why).\n"
	"  POST /v1/admission and /v1/declarations go to the sequencer, "
	"the\n"
	"  member holding P/leader, with the --peer-* credentials (a "
	"door);\n"
	"  what it does not answer within --forward-timeout-ms is "
	"judged on\n"
	"  this member's state. A verdict is answered once etcd's log "
	"holds it\n"
	"  (503 when that is not known within --verdict-timeout-ms);\n"
	"  while etcd cannot be reached GETs carry X-Gpuledger-Stale: "
	"<seconds>\n"
	"  and /readyz is 503 with the reason. Prints \"listening on "
	"HOST:PORT\"\n"
	"  when ready to accept; SIGINT or SIGTERM stop it.\n";

/* What the command line gives beyond struct cluster_member_opts: serve's
 * bounds as read, and files that are read into what the member takes. */
struct member_args {
	struct cluster_member_opts o;
	struct server_limits lim;
	const char *classes, *peer_token_file, *sign_key, *holds;
	uint64_t pipeline; /* --pipeline as read (UINT64_MAX: not given) */
};

/* What the member borrows while it runs, made from those files; released
 * by member_release. */
struct member_held {
	struct note_signer signer;
	char *peer_token;
	struct class_table t;
};

/* The member's own option groups, one option a line as in the other
 * tables; the etcd client's, retention's and serve's server's are shared
 * (tools.h). */
/* clang-format off */
#define OPT_MEMBER(a) \
	{"--prefix", OPT_STR, &(a)->o.prefix, "P", \
	 "the cluster's keys in etcd, e.g. /gpuledger/prod"}, \
	{"--name", OPT_STR, &(a)->o.name, "NAME", \
	 "this member's name (P/members/NAME)"}, \
	{"--lease-ttl", OPT_U64, &(a)->o.lease_ttl_s, "SECONDS", \
	 "the leader's lease (default 5)"}, \
	{"--verdict-timeout-ms", OPT_U64, &(a)->o.verdict_timeout_ms, "MS", \
	 "bound of judging and recording a verdict batch (default " \
	 "7000, 70% of the webhook's 10 s; DESIGN 11 rule 2): what is " \
	 "unknown there is answered 503"}, \
	{"--pipeline", OPT_U64, &(a)->pipeline, "K", \
	 "verdict txns the sequencer keeps in flight at once, each " \
	 "chained on the P/head value of the one before (1 to 16, " \
	 "default 3; 1: one at a time; DESIGN 11): a door or a member " \
	 "without --watch has one"}, \
	{"--checkpoint-every", OPT_U64, &(a)->o.checkpoint_every, "N", \
	 "a checkpoint every N seqs (default 1000000), never on a " \
	 "timer: every member writes the same ones (DESIGN 11 rule " \
	 "10)"}
#define OPT_MEMBER_SIGN(a) \
	{"--sign-key", OPT_STR, &(a)->sign_key, "FILE", \
	 "sign a C2SP checkpoint of the tree at every multiple of " \
	 "--sign-every seqs (DESIGN 11 rule 10; the key as serve " \
	 "takes it, the same on every member: each writes the same " \
	 "note); a member whose newest is older than the cluster's " \
	 "answers /v1/checkpoint and proofs 503"}, \
	{"--sign-every", OPT_U64, &(a)->o.sign_every, "N", \
	 "with --sign-key: seqs between signed checkpoints (default " \
	 "1000), never a timer"}
#define OPT_MEMBER_WATCH(a) \
	{"--watch", OPT_FLAG, &(a)->o.watch, NULL, \
	 "campaign for P/leader and run the watcher while leading " \
	 "(every member of a cluster should have it: the one that " \
	 "leads watches); while leading, it also runs retention " \
	 "(--keep, --keep-bytes, --defrag-free)"}, \
	{"--kubeconfig", OPT_STR, &(a)->o.kubeconfig, "FILE", \
	 "with --watch: the API server's kubeconfig (default " \
	 "$KUBECONFIG, ~/.kube/config, else the pod's service " \
	 "account)"}, \
	{"--context", OPT_STR, &(a)->o.context, "NAME", \
	 "with --watch: the kubeconfig context (default the current " \
	 "one)"}, \
	{"--classes", OPT_STR, &(a)->classes, "FILE", \
	 "with --watch: the class table at start, as watch takes it"}, \
	{"--tick", OPT_U64, &(a)->o.tick_s, "S", \
	 "with --watch: a TICK after S seconds of quiet (default 60)"}, \
	{"--max-txn-bytes", OPT_U64, &(a)->o.max_txn_bytes, "BYTES", \
	 "with --watch: the largest log value one txn writes (default " \
	 "1400000, under etcd's 1.5 MiB request limit); a larger " \
	 "flush is split, with P/open around its parts"}
#define OPT_MEMBER_PEER(a) \
	{"--peer", OPT_STR, &(a)->o.peer, "URL", \
	 "a ready member (its serve address) to copy the log from " \
	 "when etcd no longer holds it after this member's seq " \
	 "(joining, DESIGN 11): GET /v1/events, every head checked"}, \
	{"--peer-token-file", OPT_STR, &(a)->peer_token_file, "FILE", \
	 "the bearer token this member shows its peers: to --peer " \
	 "(an admin's or auditor's) and, forwarding verdicts, to the " \
	 "sequencer (a peer's or admin's); the file must not be " \
	 "group/other readable"}, \
	{"--peer-cacert", OPT_STR, &(a)->o.peer_cacert, "FILE", \
	 "the CA of the peers' certificates"}, \
	{"--peer-cert", OPT_STR, &(a)->o.peer_cert, "FILE", \
	 "a client certificate for peers (one with " \
	 "--tls-client-ca)"}, \
	{"--peer-key", OPT_STR, &(a)->o.peer_key, "FILE", "and its key"}, \
	{"--advertise-url", OPT_STR, &(a)->o.advertise_url, "URL", \
	 "this member's address for its peers, in P/leader's value " \
	 "while it is the sequencer (default: --listen's, when it " \
	 "names a host)"}, \
	{"--forward-timeout-ms", OPT_U64, &(a)->o.forward_timeout_ms, "MS", \
	 "how long a door waits for the sequencer's answer before it " \
	 "judges a verdict itself (default 2000)"}, \
	{"--no-forward", OPT_FLAG, &(a)->o.no_forward, NULL, \
	 "judge every verdict here, never forward to the sequencer"}
/* clang-format on */

/* The combinations and ranges the parser cannot see. Prints the error;
 * 0 or EXIT_USAGE. */
static int member_check(const struct member_args *a)
{
	const struct cluster_member_opts *o = &a->o;

	if (o->q.db == NULL || o->eo.endpoints == NULL || o->prefix == NULL ||
	    o->name == NULL) {
		tool_error("member: --db, --etcd, --prefix and --name are "
			   "required");
		return EXIT_USAGE;
	}
	if (o->verdict_timeout_ms != 0 &&
	    (o->verdict_timeout_ms < 100 || o->verdict_timeout_ms > 600000)) {
		tool_error("member: --verdict-timeout-ms is 100 to 600000");
		return EXIT_USAGE;
	}
	if (a->pipeline != UINT64_MAX &&
	    (a->pipeline == 0 || a->pipeline > CLUSTER_PIPELINE_MAX)) {
		tool_error("member: --pipeline is 1 to %d",
			   CLUSTER_PIPELINE_MAX);
		return EXIT_USAGE;
	}
	if (o->lease_ttl_s < 2 || o->lease_ttl_s > 3600) {
		tool_error("member: --lease-ttl is 2 to 3600 seconds");
		return EXIT_USAGE;
	}
	if (!o->watch && (o->kubeconfig || o->context || a->classes)) {
		tool_error("member: --kubeconfig, --context and --classes go "
			   "with --watch");
		return EXIT_USAGE;
	}
	if (o->max_txn_bytes != 0 &&
	    (o->max_txn_bytes < 8192 || o->max_txn_bytes > 1400000)) {
		tool_error("member: --max-txn-bytes is 8192 to 1400000");
		return EXIT_USAGE;
	}
	if (o->tick_s == 0 || o->tick_s > 86400) {
		tool_error("member: --tick is 1 to 86400 seconds");
		return EXIT_USAGE;
	}
	if (a->sign_key == NULL && o->sign_every != 0) {
		tool_error("member: --sign-every goes with --sign-key");
		return EXIT_USAGE;
	}
	if (o->sign_every > 100000000) {
		tool_error("member: --sign-every is 1 to 100000000");
		return EXIT_USAGE;
	}
	if ((o->peer_cert == NULL) != (o->peer_key == NULL)) {
		tool_error("member: --peer-cert and --peer-key go together");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static void member_release(struct member_held *h)
{
	class_table_release(&h->t);
	free(h->peer_token);
	h->peer_token = NULL;
}

/* Reads the files of a into h and points a->o at them, then makes the
 * ledger directory. Prints the error; 0 or EXIT_USAGE with h released. */
static int member_prepare(struct member_args *a, struct member_held *h)
{
	struct cluster_member_opts *o = &a->o;
	int rc;

	class_table_init(&h->t);
	h->peer_token = NULL;
	/* The leader appends the HOLDS event through etcd's log when the
	 * log's mode differs (cluster/leader.c). */
	if (a->holds != NULL) {
		if (tool_holds_parse("member", a->holds, &o->holds_ttl_ms) != 0)
			return EXIT_USAGE;
		o->holds_set = true;
	}
	if (a->sign_key != NULL) {
		if ((rc = tlog_load_signer("member", a->sign_key,
					   &h->signer)) != 0)
			return rc;
		o->signer = &h->signer;
	}
	if (a->peer_token_file != NULL &&
	    (h->peer_token = tool_read_token(a->peer_token_file)) == NULL) {
		tool_error("member: %s: unreadable, readable by group or "
			   "others (chmod 600), or no token in it",
			   a->peer_token_file);
		return EXIT_USAGE;
	}
	o->peer_token = h->peer_token;
	if ((rc = tool_load_classes("member", a->classes, &h->t)) != 0) {
		member_release(h);
		return rc;
	}
	o->classes = h->t.n ? &h->t : NULL;
	if (mkdir(o->q.db, 0775) != 0 && errno != EEXIST) {
		tool_error("member: %s: %s", o->q.db, strerror(errno));
		member_release(h);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* Opens the member, says where it listens and runs it until SIGINT or
 * SIGTERM. */
static int member_run(const struct cluster_member_opts *o)
{
	struct lg_error err = {0};
	cluster_member_t *m;
	int rc;

	if ((rc = cluster_member_open(&m, o, &err)) != 0) {
		tool_error("member: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	tool_server_listening(&o->q, cluster_member_port(m),
			      cluster_member_probe_port(m));
	rc = cluster_member_run(m, &err);
	cluster_member_close(m);
	if (rc != 0) {
		tool_error("member: %s", err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int cmd_member(int argc, char **argv)
{
	struct member_args a = {
		.pipeline = UINT64_MAX,
		.o = {.lease_ttl_s = 5,
		      .tick_s = 60,
		      .rt = {CLUSTER_KEEP_DEFAULT, CLUSTER_KEEP_BYTES_DEFAULT,
			     CLUSTER_DEFRAG_FREE_DEFAULT}}};
	const struct opt opts[] = {
		{"--db", OPT_STR, &a.o.q.db, "DIR",
		 "the member's own ledger (made when missing)"},
		OPT_ETCD(&a.o),
		OPT_MEMBER(&a),
		OPT_SERVER(&a.o.q, &a.lim),
		OPT_MEMBER_SIGN(&a),
		OPT_MEMBER_WATCH(&a),
		OPT_RETENTION(&a.o.rt),
		OPT_MEMBER_PEER(&a),
		OPT_HOLDS(&a.holds),
	};
	const struct cmd_spec spec =
		CMD_SPEC("member", member_usage, opts, NULL);
	struct member_held held;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	tool_no_dumps();
	if ((status = member_check(&a)) != 0 ||
	    (status = tool_server_opts("member", &a.lim, &a.o.q)) != 0 ||
	    (status = member_prepare(&a, &held)) != 0)
		return status;
	a.o.pipeline = a.pipeline == UINT64_MAX ? CLUSTER_PIPELINE_DEFAULT
						: (unsigned)a.pipeline;
	a.o.q.handle_signals = true;
	status = member_run(&a.o);
	member_release(&held);
	return status;
}
