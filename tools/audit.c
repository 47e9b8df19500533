/*
 * gpuledger audit: recompute stored verdicts (DESIGN 3.5, 6). Every VERDICT
 * event is re-derived from the state at its basisSeq and must equal the
 * stored record byte for byte; the n-th VERDICT event of the log must carry
 * id n, and its chainHead must be the log's head at basisSeq.
 *
 * The state is moved forward from one basis to the next by applying the
 * events between them (verdicts come in batches sharing one basis, and
 * bases only grow), so an audit of the whole log costs about one replay;
 * only a basis behind the current one (which one server never writes)
 * rebuilds from a checkpoint.
 */
#include "query/query.h"
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

static const char audit_usage[] =
	"usage: gpuledger audit --db DIR [--from ID] [--to ID]\n"
	"  recomputes every stored verdict (ids FROM..TO, default all) from\n"
	"  the state at its basisSeq and compares it with the record byte for\n"
	"  byte, with its id (the n-th verdict of the log is id n) and the\n"
	"  chain head at basisSeq.\n"
	"  prints \"ok: N verdicts match (ids A..B)\" and exits 0, or the\n"
	"  first mismatch (stored and recomputed record) and exits 1; exits\n"
	"  2 when the ledger cannot be read. Damage in the log (a record that\n"
	"  is not what was written, a broken chain, damaged storage): the\n"
	"  verdicts before it are audited, then it is named on stderr, exit "
	"1.\n";

/* Seqs of the VERDICT events, in log order: seqs[id - 1]. */
struct vlist {
	uint64_t *seq;
	size_t n, cap;
};

static int collect(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct vlist *v = ctx;

	if (ev->type != EV_VERDICT)
		return 0;
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 1024;
		v->seq = lg_xrealloc(v->seq, v->cap * sizeof(*v->seq));
	}
	v->seq[v->n++] = ev->seq;
	return 0;
}

/* The state walking forward from basis to basis, with its head. */
struct walker {
	ledger_t *lg;
	state_t *st;
	uint64_t seq;
	uint8_t head[LEDGER_HEAD_BYTES];
	struct lg_error err;
};

static int apply_one(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct walker *w = ctx;
	int rc = state_apply_validated(w->st, ev, &w->err);

	if (rc != 0) {
		char msg[LG_ERRMSG_MAX];

		/* An event that does not fit is damage at its seq. */
		snprintf(msg, sizeof(msg), "%s", w->err.msg);
		return lg_error_set(&w->err, LG_ECORRUPT,
				    "seq %llu: does not fit the state: %s",
				    (unsigned long long)ev->seq, msg);
	}
	w->seq = ev->seq;
	memcpy(w->head, head, LEDGER_HEAD_BYTES);
	return 0;
}

/* Brings the walker to exactly seq b. */
static int walk_to(struct walker *w, uint64_t b)
{
	int rc;

	if (w->st == NULL || b < w->seq) {
		state_free(w->st);
		w->st = NULL;
		memset(w->head, 0, sizeof(w->head));
		w->seq = b;
		if (b == 0) {
			w->st = state_new();
			return 0;
		}
		rc = ledger_state_at(w->lg, b, &w->st, NULL, &w->err);
		if (rc == 0)
			rc = ledger_head_at(w->lg, b, w->head, &w->err);
		return rc;
	}
	if (b == w->seq)
		return 0;
	rc = ledger_scan_checked(w->lg, w->seq + 1, b - w->seq, apply_one, w,
				 &w->err);
	if (rc == 0 && w->seq != b)
		rc = lg_error_set(&w->err, LG_ECORRUPT,
				  "the log ends before seq %llu",
				  (unsigned long long)b);
	return rc;
}

struct record {
	char *text;
	size_t len;
};

static int copy_record(void *ctx, const struct event *ev, const uint8_t *head)
{
	struct record *r = ctx;

	if (ev->text != NULL) {
		r->len = strlen(ev->text);
		r->text = lg_xstrdup(ev->text);
	}
	return 0;
}

static int report(uint64_t id, uint64_t seq, const char *why,
		  const char *stored, const char *recomputed)
{
	char line[512];
	int werr;

	snprintf(line, sizeof(line), "mismatch: verdict %llu (seq %llu): %s",
		 (unsigned long long)id, (unsigned long long)seq, why);
	werr = tool_puts(line);
	if (werr == 0 && stored != NULL) {
		fputs("stored:     ", stdout);
		werr = tool_puts(stored);
	}
	if (werr == 0 && recomputed != NULL) {
		fputs("recomputed: ", stdout);
		werr = tool_puts(recomputed);
	}
	return tool_flush("audit", werr) ? EXIT_USAGE : EXIT_NEGATIVE;
}

/* Checks the record of verdict id (at seq). Returns an LG_* code (an
 * operating error, or LG_ECORRUPT for damage, with w->err set); when the
 * record is read, *why is NULL for a match, else the mismatch, with *re the
 * recomputed verdict when there is one (caller frees). */
static int check_one(struct walker *w, uint64_t id, uint64_t seq,
		     const struct record *r, const char **why, char **re,
		     char *buf, size_t cap)
{
	struct verdict_ref ref;
	char hex[2 * LEDGER_HEAD_BYTES + 1];
	bool match = false;
	int rc;

	*why = NULL;
	if (verdict_record_parse(r->text, r->len, &ref, &w->err) != 0) {
		*why = w->err.msg;
		return 0;
	}
	if (ref.id != id) {
		*why = "the record carries another id";
		return 0;
	}
	if (ref.basis_seq >= seq) {
		*why = "basisSeq is not before the verdict";
		return 0;
	}
	if ((rc = walk_to(w, ref.basis_seq)) != 0)
		return rc;
	tool_hex(w->head, hex);
	rc = verdict_record_recompute(w->st, hex, r->text, r->len, re, &match,
				     &w->err);
	if (rc == LG_ECORRUPT) { /* the record itself does not recompute */
		*why = w->err.msg;
		return 0;
	}
	if (rc == 0 && !match) {
		snprintf(buf, cap,
			 "recomputed on the state at basisSeq %llu it differs",
			 (unsigned long long)ref.basis_seq);
		*why = buf;
	}
	return rc;
}

/* Audits verdict id (at seq); EXIT_OK when it matches. The LG_* codes of
 * the checks become an exit status here, once. */
static int audit_one(struct walker *w, uint64_t id, uint64_t seq)
{
	struct record r = {0};
	const char *why = NULL;
	char *re = NULL, buf[96];
	int status = EXIT_OK,
	    rc = ledger_scan(w->lg, seq, 1, copy_record, &r, &w->err);

	if (rc == 0 && r.text == NULL)
		rc = lg_error_set(&w->err, LG_ECORRUPT, "no record");
	if (rc == 0)
		rc = check_one(w, id, seq, &r, &why, &re, buf, sizeof(buf));
	if (rc == 0 && why != NULL)
		status = report(id, seq, why, r.text, re);
	else if (rc == LG_ECORRUPT)
		status = tool_damage("audit", &w->err);
	else if (rc < 0) {
		tool_error("audit: verdict %llu (seq %llu): %s",
			   (unsigned long long)id, (unsigned long long)seq,
			   w->err.msg[0] ? w->err.msg : lg_strerror(rc));
		status = EXIT_USAGE;
	}
	free(r.text);
	free(re);
	return status;
}

/* Audits ids from..to of the verdicts found. With damage in the log
 * (damage: its error), the verdicts before it are audited and said to
 * match, then the damage is named: exit 1. */
static int audit_range(ledger_t *lg, uint64_t from, uint64_t to)
{
	struct vlist v = {0};
	struct walker w = {.lg = lg};
	struct lg_error damage = {0};
	char line[160];
	uint64_t done = 0;
	int status = EXIT_OK,
	    rc = ledger_scan_checked(lg, 1, 0, collect, &v, &damage);

	if (rc != 0 && rc != LG_ECORRUPT) {
		tool_error("audit: %s", damage.msg);
		free(v.seq);
		return EXIT_USAGE;
	}
	if (to == 0 || to > v.n)
		to = v.n;
	for (uint64_t id = from; id <= to && status == EXIT_OK; id++, done++)
		status = audit_one(&w, id, v.seq[id - 1]);
	if (status == EXIT_OK) {
		/* Before damage, "ok" would claim the whole log. */
		const char *what =
			rc == LG_ECORRUPT ? "before the damage" : "ok";

		if (done > 0)
			snprintf(line, sizeof(line),
				 "%s: %llu verdicts match (ids %llu..%llu)",
				 what, (unsigned long long)done,
				 (unsigned long long)from,
				 (unsigned long long)to);
		else
			snprintf(line, sizeof(line),
				 "%s: 0 verdicts match (none in range; the "
				 "log has %zu)",
				 what, v.n);
		status = tool_flush("audit", tool_puts(line));
		if (status == EXIT_OK && rc == LG_ECORRUPT)
			status = tool_damage("audit", &damage);
	}
	state_free(w.st);
	free(v.seq);
	return status;
}

int cmd_audit(int argc, char **argv)
{
	const char *db = NULL;
	uint64_t from = 1, to = 0;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--from", OPT_U64, &from, "ID",
		 "the first verdict id to audit (default 1)"},
		{"--to", OPT_U64, &to, "ID",
		 "the last (default: the last verdict)"},
	};
	const struct cmd_spec spec = CMD_SPEC("audit", audit_usage, opts, NULL);
	/* Forensic: nothing is replayed at open, damage is named in order. */
	const struct ledger_opts lo = {.read_only = true, .forensic = true};
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (from == 0 || (to != 0 && to < from)) {
		tool_error("audit: want 1 <= --from <= --to");
		return EXIT_USAGE;
	}
	if ((status = tool_open_ledger("audit", db, &lo, &lg)) != 0)
		return status;
	status = audit_range(lg, from, to);
	ledger_close(lg);
	return status;
}
