/*
 * gpuledger verify: recompute the hash chain from genesis and check every
 * checkpoint against a replay (DESIGN 4.3). The answer is a yes or a no
 * naming the first bad seq; a no exits 1, so that scripts can tell
 * tampering (1) from not being able to look (2).
 */
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

static const char verify_usage[] =
	"usage: gpuledger verify --db DIR [--checkpoint FILE --key KEY]\n"
	"  recomputes every chain head from genesis, replays the log and\n"
	"  checks every checkpoint against the replay, and the Merkle tree.\n"
	"  --checkpoint FILE --key KEY  also proves that the ledger holds the\n"
	"  tree of that signed checkpoint (kept outside the ledger): a cut or\n"
	"  rewritten log fails naming the size where it departs.\n"
	"  prints \"ok: N events, M checkpoints, head HEX\" and exits 0, or\n"
	"  \"corrupt at seq S: DETAIL\" and exits 1; exits 2 when the ledger\n"
	"  cannot be read at all (no such directory, not a ledger).\n";

/* The seq a ledger error message names ("... seq 12 ..."), or 0. The
 * ledger opens by replaying its tail, so damage there already stops
 * ledger_open, whose error says where but has no bad_seq out-parameter. */
static unsigned long long seq_in_message(const char *msg)
{
	const char *p = strstr(msg, "seq ");

	return p ? strtoull(p + 4, NULL, 10) : 0;
}

static bool is_damage(int rc)
{
	return rc == LG_ECORRUPT || rc == LG_EMISMATCH;
}

static int report_corrupt(unsigned long long seq, const struct lg_error *err,
			  int rc)
{
	char line[LG_ERRMSG_MAX + 64], prefix[32];
	const char *detail = err->msg[0] ? err->msg : lg_strerror(rc);
	int n = snprintf(prefix, sizeof(prefix), "seq %llu: ", seq);

	/* The ledger's detail may already start with the seq. */
	if (strncmp(detail, prefix, (size_t)n) == 0)
		detail += n;
	snprintf(line, sizeof(line), "corrupt at seq %llu: %s", seq, detail);
	return tool_flush("verify", tool_puts(line)) ? EXIT_USAGE
						     : EXIT_NEGATIVE;
}

static int verify_open(const char *db, ledger_t **lg)
{
	struct ledger_opts o = {.dir = db, .read_only = true};
	struct lg_error err = {0};
	int rc;

	if (tool_check_db("verify", db, false) != 0)
		return EXIT_USAGE;
	rc = ledger_open(lg, &o, &err);
	if (rc == 0)
		return EXIT_OK;
	*lg = NULL;
	if (is_damage(rc))
		return report_corrupt(seq_in_message(err.msg), &err, rc);
	tool_error("verify: %s: %s", db,
		   err.msg[0] ? err.msg : lg_strerror(rc));
	return EXIT_USAGE;
}

int cmd_verify(int argc, char **argv)
{
	const char *db = NULL, *cpfile = NULL, *key = NULL;
	const struct opt opts[] = {{"--db", OPT_STR, &db},
				   {"--checkpoint", OPT_STR, &cpfile},
				   {"--key", OPT_STR, &key}};
	const struct cmd_spec spec = {"verify", verify_usage, opts, 3};
	struct lg_error err = {0};
	struct ledger_stats stats = {0};
	char hex[TOOL_HEX_LEN], line[256];
	ledger_t *lg = NULL;
	uint64_t bad = 0;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = verify_open(db, &lg)) != 0)
		return status;
	rc = ledger_verify(lg, &bad, &err);
	if (rc == 0) /* and the Merkle tree (DESIGN 4.4) */
		rc = ledger_verify_tree(lg, &bad, &err);
	if (rc == 0)
		rc = ledger_stats(lg, &stats, &err);
	if (is_damage(rc)) {
		status = report_corrupt(bad ? bad : seq_in_message(err.msg),
					&err, rc);
	} else if (rc != 0) {
		tool_error("verify: %s: %s", db,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		status = EXIT_USAGE;
	} else if (cpfile != NULL &&
		   (status = tlog_verify_checkpoint(lg, cpfile, key)) != 0) {
		/* the ledger does not hold the tree of the signed note */
	} else {
		tool_hex(ledger_head(lg), hex);
		snprintf(line, sizeof(line),
			 "ok: %llu events, %llu checkpoints, head %s",
			 (unsigned long long)ledger_last_seq(lg),
			 (unsigned long long)stats.checkpoints, hex);
		status = tool_flush("verify", tool_puts(line));
	}
	ledger_close(lg);
	return status;
}
