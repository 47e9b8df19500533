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
	"  checks storage before meaning: every record as stored (gap-free\n"
	"  seqs, each decodes, the chain, checkpoint frames and heads) first,\n"
	"  then the replay, so that the first bad seq is named whatever the\n"
	"  damage; then every Merkle leaf and stored subtree.\n"
	"  prints \"ok: N events, M checkpoints, head HEX\" and exits 0, or\n"
	"  \"corrupt at seq S: DETAIL\" (a record is not what was written) or\n"
	"  \"damaged storage[ at seq S]: DETAIL\" (LMDB's pages are damaged;\n"
	"  the page is named) and exits 1; exits 2 when the ledger cannot be\n"
	"  read at all (no such directory, not a ledger).\n";

static const char verify_after[] =
	"  --checkpoint FILE --key KEY together also prove that the ledger\n"
	"  holds the tree of that signed checkpoint (kept outside the\n"
	"  ledger): a cut or rewritten log fails naming the size where it\n"
	"  departs.\n";

static bool is_damage(int rc)
{
	return rc == LG_ECORRUPT || rc == LG_EMISMATCH;
}

static int report_damage(uint64_t seq, const struct lg_error *err)
{
	char line[LG_ERRMSG_MAX + 64];

	tool_damage_line(seq, err, line, sizeof(line));
	return tool_flush("verify", tool_puts(line)) ? EXIT_USAGE
						     : EXIT_NEGATIVE;
}

/* Opens for forensic reading: nothing is replayed at open, so damage is
 * named by the verification, not by the open failing first. Damage found
 * already here (the meta pages, the databases) is reported as such. */
static int verify_open(const char *db, ledger_t **lg)
{
	struct ledger_opts o = {.dir = db, .read_only = true, .forensic = true};
	struct lg_error err = {0};
	int rc;

	if (tool_check_db("verify", db, false) != 0)
		return EXIT_USAGE;
	rc = ledger_open(lg, &o, &err);
	if (rc == 0)
		return EXIT_OK;
	*lg = NULL;
	if (is_damage(rc))
		return report_damage(0, &err);
	tool_error("verify: %s: %s", db,
		   err.msg[0] ? err.msg : lg_strerror(rc));
	return EXIT_USAGE;
}

int cmd_verify(int argc, char **argv)
{
	const char *db = NULL, *cpfile = NULL, *key = NULL;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--checkpoint", OPT_STR, &cpfile, "FILE",
		 "a signed checkpoint (C2SP note) to check the ledger against"},
		{"--key", OPT_STR, &key, "KEY",
		 "the verifier key file of that checkpoint's signer"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("verify", verify_usage, opts, verify_after);
	struct lg_error err = {0};
	struct ledger_verify_result res;
	char hex[TOOL_HEX_LEN], line[256];
	ledger_t *lg = NULL;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = verify_open(db, &lg)) != 0)
		return status;
	rc = ledger_verify_run(lg, &res, &err);
	if (rc == 0) /* and the Merkle tree (DESIGN 4.4) */
		rc = ledger_verify_tree(lg, &res.bad_seq, &err);
	if (is_damage(rc)) {
		status = report_damage(res.bad_seq, &err);
	} else if (rc != 0) {
		tool_error("verify: %s: %s", db,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		status = EXIT_USAGE;
	} else if (cpfile != NULL &&
		   (status = tlog_verify_checkpoint(lg, res.events, cpfile,
						 key)) != 0) {
		/* the ledger does not hold the tree of the signed note */
	} else {
		tool_hex(res.head, hex);
		snprintf(line, sizeof(line),
			 "ok: %llu events, %llu checkpoints, head %s",
			 (unsigned long long)res.events,
			 (unsigned long long)res.checkpoints, hex);
		status = tool_flush("verify", tool_puts(line));
	}
	ledger_close(lg);
	return status;
}
