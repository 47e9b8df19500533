/*
 * gpuledger cluster init|status (DESIGN 6, 11), and `cluster etcd`, a
 * debugging aid. One subcommand with actions, each parsed by its own
 * table; `cluster --help` (and the man page and completion made from it)
 * shows the union of their options, so that every option is listed once.
 */
#include "cluster/cluster.h"
#include "etcd/etcd.h"
#include "tools/tools.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Each action's synopsis and paragraph, shared by its own --help and by
 * `cluster --help` (as git's builtin/remote.c shares its usage strings):
 * written once, concatenated. */
#define INIT_SYNOPSIS \
	"gpuledger cluster init --etcd URL[,URL...] --prefix P [--db DIR]\n"
#define STATUS_SYNOPSIS                                             \
	"gpuledger cluster status --etcd URL[,URL...] --prefix P\n" \
	"           [--format text|json]\n"
#define COMPACT_SYNOPSIS                                                    \
	"gpuledger cluster compact --etcd URL[,URL...] --prefix P [--keep " \
	"N]\n"                                                              \
	"           [--keep-bytes B] [--defrag-free B]\n"
#define ETCD_SYNOPSIS "gpuledger cluster etcd --etcd URL[,URL...]\n"
#define CAMPAIGN_SYNOPSIS                                                   \
	"gpuledger cluster campaign --etcd URL[,URL...] --prefix P --name " \
	"NAME\n"                                                            \
	"           [--lease-ttl SECONDS] [--applied-from FILE]\n"
#define FEED_SYNOPSIS                                                    \
	"gpuledger cluster feed --etcd URL[,URL...] --prefix P [--from " \
	"FILE]\n"                                                        \
	"           [--db DIR] [--batch N] [--max-txn-bytes BYTES]\n"

#define INIT_ABOUT                                                           \
	"  a cluster of members on etcd (DESIGN 11). init writes P/epoch\n"  \
	"  (a fresh random id), P/head ({\"chainHead\", \"seq\", \"time\"} " \
	"of\n"                                                               \
	"  the ledger at --db, or of an empty log) and the watcher's\n"      \
	"  positions P/pos/<source> in one txn that writes only where no\n"  \
	"  head was ever written: a second init refuses (exit 1) and\n"      \
	"  names the head there. An answer that is lost (a timeout, a\n"     \
	"  reset) is not taken as a failure: the identical txn is sent\n"    \
	"  again until etcd's answer says what happened.\n"
#define STATUS_ABOUT                                                        \
	"  status prints the head, the leader, the members and their lag\n" \
	"  (head seq minus applied), read at one etcd revision.\n"
#define COMPACT_ABOUT                                                          \
	"  compact runs the leader's retention once (DESIGN 11 rule 11):\n"    \
	"  the P/log/ keys more than --keep events (default 100000) below\n"   \
	"  the lowest applied seq in P/members/ are deleted and etcd is\n"     \
	"  compacted at the oldest key left (nothing goes by --keep when no\n" \
	"  member is listed), and the oldest keys go while the values left\n"  \
	"  hold more than --keep-bytes (default 268435456), even past a\n"     \
	"  member; then each etcd member with --defrag-free bytes (default\n"  \
	"  67108864) of its file free is defragmented, one at a time.\n"       \
	"  It prints one JSON line of what it did.\n"
#define ETCD_ABOUT                                                          \
	"  `gpuledger cluster etcd --etcd URLS` is a debugging aid: etcd\n" \
	"  requests as NDJSON on stdin, each answer and its outcome "       \
	"(committed,\n"                                                     \
	"  compare-failed, indeterminate, not-applied) a line (see\n"       \
	"  cluster/README.md).\n"
#define FEED_ABOUT                                                          \
	"  `gpuledger cluster feed --etcd URLS --prefix P [--from FILE]\n"  \
	"  [--db DIR]` is a test aid: events appended through the append\n" \
	"  txn, one line per txn.\n"
#define CAMPAIGN_ABOUT                                                         \
	"  `gpuledger cluster campaign --etcd URLS --prefix P --name N` is "   \
	"a\n"                                                                  \
	"  debugging aid of leadership (DESIGN 11 rule 5): it campaigns for\n" \
	"  P/leader, holds it, and prints each transition as NDJSON "          \
	"(elected,\n"                                                          \
	"  follower, renewal-late, deposed, lost, resigned); SIGHUP "          \
	"resigns,\n"                                                           \
	"  SIGUSR1 acts as a failed leader compare, SIGTERM revokes the "      \
	"lease\n"                                                              \
	"  and exits 0.\n"
#define ETCD_LIST_NOTE                                                         \
	"  --etcd takes a comma-separated list: a request that cannot reach\n" \
	"  one endpoint goes on to the next.\n"
#define EXIT_STATUS_NOTE                                                     \
	"  Exit status: 0 done; 1 init found a head already there, or "      \
	"status\n"                                                           \
	"  found none; 2 usage or operating errors (etcd unreachable, the\n" \
	"  outcome unknown).\n"

static const char cluster_usage[] =
	"usage: " INIT_SYNOPSIS "       " STATUS_SYNOPSIS
	"       " COMPACT_SYNOPSIS INIT_ABOUT STATUS_ABOUT COMPACT_ABOUT
		ETCD_ABOUT FEED_ABOUT;
static const char cluster_after[] =
	ETCD_LIST_NOTE CAMPAIGN_ABOUT EXIT_STATUS_NOTE;
/* An action's --help: its own usage, its options, then this. */
static const char action_after[] = ETCD_LIST_NOTE EXIT_STATUS_NOTE;

struct cluster_args {
	struct etcd_opts eo;
	const char *prefix, *db, *format;
	bool json;
	/* campaign */
	const char *name, *applied_from;
	uint64_t lease_ttl;
	/* feed's */
	const char *from;
	uint64_t batch, max_txn_bytes;
	struct cluster_retention rt; /* compact's */
};

/* The option groups of the actions: an action's table is the groups its
 * row names, concatenated in this order (cluster_opts); `cluster --help`,
 * its man page and completion are all of them, each option once. */
enum {
	G_ETCD = 1 << 0,
	G_PREFIX = 1 << 1, /* and the action checks --prefix */
	G_DB = 1 << 2,
	G_FORMAT = 1 << 3,
	G_CAMPAIGN = 1 << 4,
	G_FEED = 1 << 5,
	G_RETENTION = 1 << 6,
	G_ALL = (1 << 7) - 1
};
#define CLUSTER_OPTS_MAX 32
#define ARRAY_LEN(a)	 (sizeof(a) / sizeof((a)[0]))

/* One option a line, as in the other tables. */
/* clang-format off */
#define OPT_PREFIX(a) \
	{"--prefix", OPT_STR, &(a)->prefix, "P", \
	 "the cluster's keys in etcd, e.g. /gpuledger/prod"}
#define OPT_CLUSTER_DB(a) \
	{"--db", OPT_STR, &(a)->db, "DIR", \
	 "init: the ledger whose head and positions to write (default: " \
	 "an empty log); feed: a ledger holding the log up to some seq " \
	 "(`cluster init --db`'s): the state there, then P/log/'s values"}
#define OPT_FORMAT(a) \
	{"--format", OPT_STR, &(a)->format, "text|json", \
	 "status: the output (default text)"}, \
	OPT_ALIAS("--json", OPT_FLAG, &(a)->json)
#define OPT_CAMPAIGN(a) \
	{"--name", OPT_STR, &(a)->name, "NAME", \
	 "campaign: the member's name (P/members/NAME; A-Z a-z 0-9 . _ -)"}, \
	{"--lease-ttl", OPT_U64, &(a)->lease_ttl, "SECONDS", \
	 "campaign: the lease's TTL (default 5): renewed every TTL/3, " \
	 "leadership given up when no renewal came within TTL/2"}, \
	{"--applied-from", OPT_STR, &(a)->applied_from, "FILE", \
	 "campaign: read the applied seq for P/members/NAME from FILE " \
	 "(a decimal number), again every 100 ms"}
#define OPT_FEED(a) \
	{"--from", OPT_STR, &(a)->from, "FILE", \
	 "feed: NDJSON events in the form `gpuledger log` prints " \
	 "(default -: stdin); seqs are the log's"}, \
	{"--batch", OPT_U64, &(a)->batch, "N", \
	 "feed: events per txn at most (default 1000)"}, \
	{"--max-txn-bytes", OPT_U64, &(a)->max_txn_bytes, "BYTES", \
	 "feed: a txn's bound (default 1400000, below etcd's 1.5 MiB): " \
	 "larger batches split"}
/* clang-format on */

/* The options of groups (G_*), concatenated into out (CLUSTER_OPTS_MAX
 * entries); returns how many. */
static size_t cluster_opts(struct cluster_args *a, unsigned groups,
			   struct opt *out)
{
	const struct opt etcd[] = {OPT_ETCD(a)}, prefix[] = {OPT_PREFIX(a)},
			 db[] = {OPT_CLUSTER_DB(a)}, format[] = {OPT_FORMAT(a)},
			 campaign[] = {OPT_CAMPAIGN(a)}, feed[] = {OPT_FEED(a)},
			 retention[] = {OPT_RETENTION(&a->rt)};
	const struct {
		unsigned group;
		const struct opt *opts;
		size_t n;
	} all[] = {
		{G_ETCD, etcd, ARRAY_LEN(etcd)},
		{G_PREFIX, prefix, ARRAY_LEN(prefix)},
		{G_DB, db, ARRAY_LEN(db)},
		{G_FORMAT, format, ARRAY_LEN(format)},
		{G_CAMPAIGN, campaign, ARRAY_LEN(campaign)},
		{G_FEED, feed, ARRAY_LEN(feed)},
		{G_RETENTION, retention, ARRAY_LEN(retention)},
	};
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_LEN(all); i++) {
		if ((groups & all[i].group) == 0)
			continue;
		LG_ASSERT(n + all[i].n <= CLUSTER_OPTS_MAX);
		memcpy(out + n, all[i].opts, all[i].n * sizeof(*out));
		n += all[i].n;
	}
	return n;
}

static int init_run(struct cluster_args *a)
{
	struct cluster_init_result res;
	struct lg_error err = {0};
	ledger_t *lg = NULL;
	int rc;

	if (a->db != NULL &&
	    tool_open_ledger("cluster init", a->db, NULL, &lg) != 0)
		return EXIT_USAGE;
	rc = cluster_init(&a->eo, a->prefix, lg, &res, &err);
	ledger_close(lg);
	if (rc == LG_EEXIST) {
		tool_error("cluster init: %s/head is already there (seq %llu, "
			   "chainHead %s, time %s, epoch %s): refusing to "
			   "write a second history; a new cluster takes "
			   "another --prefix",
			   a->prefix, (unsigned long long)res.head.seq,
			   res.head.chain_head, res.head.time,
			   res.epoch[0] ? res.epoch : "(none)");
		return EXIT_NEGATIVE;
	}
	if (rc != 0) {
		tool_error("cluster init: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	printf("initialised %s: head seq %llu chainHead %s time %s, epoch %s, "
	       "positions %zu (etcd cluster %016llx, revision %lld)",
	       a->prefix, (unsigned long long)res.head.seq, res.head.chain_head,
	       res.head.time, res.epoch, res.n_positions,
	       (unsigned long long)res.cluster_id, (long long)res.revision);
	if (res.attempts > 1)
		printf("; %u txns sent (an answer was lost, DESIGN 11 rule "
		       "1)",
		       res.attempts);
	putchar('\n');
	return tool_flush("cluster init", 0);
}

static void status_text(const struct cluster_status *st, const char *prefix)
{
	printf("etcd: cluster %016llx, revision %lld, leader %016llx, "
	       "version %s (answered by %s)\n",
	       (unsigned long long)st->cluster_id, (long long)st->revision,
	       (unsigned long long)st->etcd_leader,
	       st->etcd_version[0] ? st->etcd_version : "?", st->endpoint);
	printf("prefix: %s  epoch: %s\n", prefix,
	       st->epoch[0] ? st->epoch : "(none)");
	if (st->has_head)
		printf("head: seq %llu  chainHead %s  time %s\n",
		       (unsigned long long)st->head.seq, st->head.chain_head,
		       st->head.time);
	else
		printf("head: (none: run `gpuledger cluster init`)\n");
	printf("leader: %s\n", st->leader ? st->leader : "(none)");
	printf("members: %zu\n", st->n_members);
	if (st->n_members)
		printf("  %-32s %20s %12s\n", "NAME", "APPLIED", "LAG");
	for (size_t i = 0; i < st->n_members; i++) {
		const struct cluster_status_member *m = &st->members[i];
		char applied[24] = "-", lag[24] = "-";

		if (m->has_applied) {
			snprintf(applied, sizeof(applied), "%llu",
				 (unsigned long long)m->applied);
			if (st->has_head)
				snprintf(lag, sizeof(lag), "%lld",
					 (long long)st->head.seq -
						 (long long)m->applied);
		}
		printf("  %-32s %20s %12s\n", m->name, applied, lag);
	}
}

static int status_run(struct cluster_args *a)
{
	struct cluster_status st;
	struct lg_error err = {0};
	int rc;

	if (tool_format_json("cluster status", a->format, &a->json) != 0)
		return EXIT_USAGE;
	rc = cluster_status(&a->eo, a->prefix, &st, &err);
	if (rc != 0) {
		cluster_status_release(&st);
		tool_error("cluster status: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	if (a->json) {
		char *s = cluster_status_json(&st, a->prefix);

		rc = tool_puts(s);
		free(s);
	} else {
		status_text(&st, a->prefix);
		rc = 0;
	}
	rc = tool_flush("cluster status", rc);
	if (rc == EXIT_OK && !st.has_head) {
		tool_error("cluster status: %s has no head (run `gpuledger "
			   "cluster init`)",
			   a->prefix);
		rc = EXIT_NEGATIVE;
	}
	cluster_status_release(&st);
	return rc;
}

static int compact_run(struct cluster_args *a)
{
	struct cluster_compact c;
	struct lg_error err = {0};
	json_t *o;
	char *s;
	int rc = cluster_compact(&a->eo, a->prefix, &a->rt, &c, &err);
	json_t *defrag;

	if (rc != 0) {
		tool_error("cluster compact: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	defrag = json_array();
	for (size_t i = 0; i < c.n_defrag; i++)
		json_array_append_new(defrag,
				      json_pack("{s:s,s:I,s:I}", "endpoint",
						c.defrag[i].endpoint, "before",
						(json_int_t)c.defrag[i].before,
						"after",
						(json_int_t)c.defrag[i].after));
	o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:b,s:I,s:I,s:I,s:I,s:I,s:o}",
		      "head", (json_int_t)c.head, "low", (json_int_t)c.low,
		      "members", (json_int_t)c.members, "keep",
		      (json_int_t)a->rt.keep, "keepBytes",
		      (json_int_t)a->rt.keep_bytes, "byBytes", c.by_bytes,
		      "bytesKept", (json_int_t)c.bytes, "cut",
		      (json_int_t)c.cut, "oldest", (json_int_t)c.oldest,
		      "deleted", (json_int_t)c.deleted, "compactRevision",
		      (json_int_t)c.compact_rev, "defragmented", defrag);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	rc = tool_puts(s);
	free(s);
	return tool_flush("cluster compact", rc);
}

static int etcd_run(struct cluster_args *a)
{
	struct lg_error err = {0};

	if (etcd_shell(&a->eo, stdin, stdout, &err) != 0) {
		tool_error("cluster etcd: %s", err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* ---------------------------------------------------------------------- */
/* `cluster campaign`: a debugging aid of leadership (cluster/lease.c) that
 * tests/lease_cli.sh drives; the member calls the same module. */

static volatile sig_atomic_t campaign_stop, campaign_resign, campaign_depose;

static void on_campaign_stop(int sig)
{
	campaign_stop = 1;
}

static void on_campaign_signal(int sig)
{
	if (sig == SIGHUP)
		campaign_resign = 1;
	else
		campaign_depose = 1;
}

static json_t *lease_hex(int64_t id)
{
	char s[24];

	snprintf(s, sizeof(s), "%llx", (unsigned long long)id);
	return json_string(s);
}

/* One NDJSON line a transition, flushed at once (a test reads them as
 * they come). */
static void print_transition(void *ctx,
			     const struct cluster_lease_transition *t)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "event",
			    json_string(cluster_lease_event_name(t->event)));
	if (t->create_revision != 0)
		json_object_set_new(o, "createRevision",
				    json_integer(t->create_revision));
	if (t->lease != 0)
		json_object_set_new(o, "lease", lease_hex(t->lease));
	if (t->leader != NULL)
		json_object_set_new(o, "leader", json_string(t->leader));
	if (t->why != NULL)
		json_object_set_new(o, "why", json_string(t->why));
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s != NULL)
		tool_puts(s);
	fflush(stdout);
	free(s);
}

static void print_warning(void *ctx, const char *msg)
{
	tool_error("cluster campaign: %s", msg);
}

/* The applied seq in file (a decimal number, as a member's applier would
 * report it); false when it holds none. */
static bool read_applied(const char *file, uint64_t *seq)
{
	char buf[32], *end;
	FILE *f = fopen(file, "r");
	size_t n;

	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (n == 0 || buf[0] < '0' || buf[0] > '9')
		return false;
	errno = 0;
	*seq = strtoull(buf, &end, 10);
	return errno == 0 && (*end == '\0' || *end == '\n');
}

static int campaign_run(struct cluster_args *a)
{
	struct cluster_lease_opts o = {.etcd = a->eo,
				       .prefix = a->prefix,
				       .name = a->name,
				       .ttl_s = a->lease_ttl,
				       .on_transition = print_transition,
				       .warn = print_warning};
	const struct timespec tick = {0, 100 * 1000000L};
	struct lg_error err = {0};
	struct sigaction sa;
	cluster_lease_t *l;
	uint64_t seq;

	if (cluster_name_check(a->name, &err) != 0) {
		tool_error("cluster campaign: %s", err.msg);
		return EXIT_USAGE;
	}
	if (a->lease_ttl < 1 || a->lease_ttl > CLUSTER_LEASE_TTL_MAX) {
		tool_error("cluster campaign: --lease-ttl is 1 to %d seconds",
			   CLUSTER_LEASE_TTL_MAX);
		return EXIT_USAGE;
	}
	if (a->applied_from != NULL && read_applied(a->applied_from, &seq))
		o.applied = seq;
	tool_catch_stop(on_campaign_stop);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_campaign_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	if (cluster_lease_open(&l, &o, &err) != 0) {
		tool_error("cluster campaign: %s", err.msg);
		return EXIT_USAGE;
	}
	while (!campaign_stop) {
		int64_t fence;

		nanosleep(&tick, NULL);
		if (campaign_resign) {
			campaign_resign = 0;
			cluster_lease_resign(l);
		}
		if (campaign_depose) {
			campaign_depose = 0;
			/* As a member whose fenced txn failed would. */
			if (cluster_lease_holding(l, &fence))
				cluster_lease_deposed(l, fence);
		}
		if (a->applied_from != NULL &&
		    read_applied(a->applied_from, &seq))
			cluster_lease_applied(l, seq);
	}
	/* Revokes the lease, and says "resigned". */
	cluster_lease_close(l);
	return tool_flush("cluster campaign", 0);
}

/* `cluster feed` (hidden, for tests): events through the append txn. */
static int feed_run(struct cluster_args *a)
{
	struct cluster_feed_opts fo = {.eo = a->eo,
				       .prefix = a->prefix,
				       .db = a->db,
				       .batch = a->batch,
				       .max_txn_bytes = a->max_txn_bytes};
	struct lg_error err = {0};
	FILE *in = stdin;
	int rc;

	if (a->from != NULL && strcmp(a->from, "-") != 0 &&
	    (in = fopen(a->from, "r")) == NULL) {
		tool_error("cluster feed: %s: cannot open it", a->from);
		return EXIT_USAGE;
	}
	rc = cluster_feed(&fo, in, stdout, &err);
	if (in != stdin)
		fclose(in);
	if (rc != 0) {
		tool_error("cluster feed: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	return tool_flush("cluster feed", 0);
}

/* The actions, one row each (as git's builtin/remote.c): the name after
 * `cluster`, what runs it, its --help's usage and its option groups. */
static const struct cluster_action {
	const char *name;
	int (*run)(struct cluster_args *a);
	const char *usage;
	unsigned groups;
} actions[] = {
	{"init", init_run, "usage: " INIT_SYNOPSIS INIT_ABOUT,
	 G_ETCD | G_PREFIX | G_DB},
	{"status", status_run, "usage: " STATUS_SYNOPSIS STATUS_ABOUT,
	 G_ETCD | G_PREFIX | G_FORMAT},
	{"compact", compact_run, "usage: " COMPACT_SYNOPSIS COMPACT_ABOUT,
	 G_ETCD | G_PREFIX | G_RETENTION},
	{"etcd", etcd_run, "usage: " ETCD_SYNOPSIS ETCD_ABOUT, G_ETCD},
	{"campaign", campaign_run, "usage: " CAMPAIGN_SYNOPSIS CAMPAIGN_ABOUT,
	 G_ETCD | G_PREFIX | G_CAMPAIGN},
	{"feed", feed_run, "usage: " FEED_SYNOPSIS FEED_ABOUT,
	 G_ETCD | G_PREFIX | G_DB | G_FEED},
};

int cmd_cluster(int argc, char **argv)
{
	struct cluster_args a = {.lease_ttl = CLUSTER_LEASE_TTL_DEFAULT,
				 .rt = {CLUSTER_KEEP_DEFAULT,
					CLUSTER_KEEP_BYTES_DEFAULT,
					CLUSTER_DEFRAG_FREE_DEFAULT}};
	const struct cluster_action *act = NULL;
	struct opt opts[CLUSTER_OPTS_MAX];
	struct cmd_spec spec = {"cluster", cluster_usage, opts, 0,
				cluster_after};
	struct lg_error err = {0};
	char name[32];
	int status;

	for (size_t i = 0; argc >= 2 && i < ARRAY_LEN(actions); i++)
		if (strcmp(argv[1], actions[i].name) == 0)
			act = &actions[i];
	/* No action: --help, --version, the man page and completion come
	 * from every group. */
	spec.n_opts = cluster_opts(&a, act ? act->groups : G_ALL, opts);
	if (act != NULL) {
		snprintf(name, sizeof(name), "cluster %s", act->name);
		spec.name = name;
		spec.usage = act->usage;
		spec.after = action_after;
		argc--;
		argv++;
	}
	status = opts_parse(&spec, argc, argv);
	if (status != OPTS_RUN)
		return opts_exit(status);
	if (act == NULL) {
		tool_error("cluster: which action? init, status, compact (or "
			   "etcd)");
		fputs("Try 'gpuledger cluster --help' for its options.\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (a.eo.endpoints == NULL) {
		tool_error("%s: --etcd URL[,URL...] is required", name);
		return EXIT_USAGE;
	}
	if ((act->groups & G_PREFIX) &&
	    cluster_prefix_check(a.prefix, &err) != 0) {
		tool_error("%s: %s", name, err.msg);
		return EXIT_USAGE;
	}
	return act->run(&a);
}
