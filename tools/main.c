/*
 * gpuledger: dispatch to a subcommand (DESIGN 6) through one table, which
 * `gpuledger --help` lists (and from it the man pages and completion).
 */
#include "ingest/ingest.h"
#include "tools/tools.h"

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include <jansson.h>
#include <uv.h>

void tool_error(const char *fmt, ...)
{
	va_list ap;

	fputs("gpuledger: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void tool_catch_stop(void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void tool_no_dumps(void)
{
	/* A non-dumpable process's /proc entries belong to root: another
	 * process of the same user (a container of the same pod in a shared
	 * PID namespace) cannot read its memory, environment or mounts (the
	 * watcher's service-account token, serve's TLS key), nor can it be
	 * ptraced. */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

void tool_version(FILE *f)
{
	fprintf(f, "gpuledger %s (commit %s)\n", lg_version(), lg_commit());
}

static const char version_usage[] =
	"usage: gpuledger version\n"
	"  prints the version and the git commit it was built from (also\n"
	"  `gpuledger --version` and `gpuledger SUBCOMMAND --version`).\n";

static int cmd_version(int argc, char **argv)
{
	const struct cmd_spec spec = {"version", version_usage, NULL, 0, NULL};
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	tool_version(stdout);
	return tool_flush("version", 0);
}

static const struct subcommand subcommands[] = {
	{"eval", "the model on the command line: NDJSON requests on stdin",
	 cmd_eval},
	{"watch", "follow a cluster or a recorded stream into --db DIR",
	 cmd_watch},
	{"serve", "the query process (HTTP)", cmd_serve},
	{"replicate", "a read replica: follow a primary's log into --db DIR",
	 cmd_replicate},
	{"cluster", "a cluster on etcd: init from a ledger, status",
	 cmd_cluster},
	{"member", "a member of a cluster on etcd (follows its log)",
	 cmd_member},
	{"replay", "the state at --at SEQ|TIME", cmd_replay},
	{"audit", "recompute stored verdicts", cmd_audit},
	{"reconcile",
	 "did every reservation pass admission, did every budget hold",
	 cmd_reconcile},
	{"verdicts", "list recorded verdicts, filtered, with who asked",
	 cmd_verdicts},
	{"verify", "check the hash chain and every checkpoint", cmd_verify},
	{"export", "billing: GPU device-hours as FOCUS CSV or JSON",
	 cmd_export},
	{"log", "events as NDJSON", cmd_log},
	{"import", "append NDJSON events from stdin (tests, migrations)",
	 cmd_import},
	{"checkpoint", "write a checkpoint now", cmd_checkpoint},
	{"stats", "sizes and counts", cmd_stats},
	{"backup", "a compact consistent copy", cmd_backup},
	{"simulate", "a synthetic cluster history as a recorded stream",
	 cmd_simulate},
	{"keygen", "an Ed25519 key for signed checkpoints", cmd_keygen},
	{"head", "the latest signed checkpoint", cmd_head},
	{"prove", "an inclusion or consistency proof", cmd_prove},
	{"check-proof", "check a proof offline, with no ledger",
	 cmd_check_proof},
	{"witness", "follow a server's signed checkpoints", cmd_witness},
	{"version", "the version and the commit it was built from",
	 cmd_version},
};

#define N_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fputs("usage: gpuledger SUBCOMMAND [OPTIONS]   (SUBCOMMAND --help for "
	      "its options)\n\nsubcommands:\n",
	      f);
	for (size_t i = 0; i < N_SUBCOMMANDS; i++)
		fprintf(f, "  %-12s %s\n", subcommands[i].name,
			subcommands[i].summary);
}

/* The man page's head: .TH and NAME (page is "gpuledger" or
 * "gpuledger-SUB"). */
static void man_head(FILE *f, const char *page, const char *summary)
{
	fputs(".TH ", f);
	for (const char *p = page; *p; p++)
		fputs(*p == '-' ? "\\-"
				: (char[]){(char)(*p >= 'a' && *p <= 'z'
							  ? *p - 'a' + 'A'
							  : *p),
					   '\0'},
		      f);
	fprintf(f, " 1 \"\" \"gpuledger %s\" \"gpuledger manual\"\n.SH NAME\n",
		lg_version());
	opts_roff(f, page);
	fputs(" \\- ", f);
	opts_roff(f, summary);
	fputc('\n', f);
}

/* gpuledger(1): the subcommands, each with its page. */
static void man_main(FILE *f)
{
	man_head(f, "gpuledger",
		 "an event-sourced ledger of GPU budgets for Kubernetes "
		 "tenants");
	fputs(".SH SYNOPSIS\n\\fBgpuledger\\fR \\fISUBCOMMAND\\fR "
	      "[\\fIOPTIONS\\fR]\n"
	      ".SH DESCRIPTION\n"
	      "One binary, one subcommand per job; \\fBgpuledger\\fR "
	      "\\fISUBCOMMAND\\fR \\fB\\-\\-help\\fR lists its options, "
	      "and \\fBgpuledger\\-\\fR\\fISUBCOMMAND\\fR(1) is its page.\n"
	      ".SS Subcommands\n",
	      f);
	for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
		fputs(".TP\n\\fB", f);
		opts_roff(f, subcommands[i].name);
		fputs("\\fR\n", f);
		opts_roff(f, subcommands[i].summary);
		fputc('\n', f);
	}
	fputs(".SH OPTIONS\n"
	      ".TP\n\\fB\\-\\-help\\fR, \\fB\\-h\\fR\nlist the subcommands, "
	      "and exit\n"
	      ".TP\n\\fB\\-\\-version\\fR\nprint the version and the commit, "
	      "and exit\n"
	      ".SH EXIT STATUS\n"
	      "0 on success; 1 when the answer is no (a failed audit or "
	      "verify, say); 2 on a usage or operating error, and without a "
	      "subcommand.\n"
	      ".SH SEE ALSO\n",
	      f);
	for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
		fputs(i ? ",\n\\fBgpuledger\\-" : "\\fBgpuledger\\-", f);
		opts_roff(f, subcommands[i].name);
		fputs("\\fR(1)", f);
	}
	fputs("\n", f);
}

/* libuv's realloc to 0 bytes frees, as realloc's did (lg_xrealloc keeps a
 * block instead, for the arrays of the product). */
static void *uv_xrealloc(void *p, size_t n)
{
	if (n == 0) {
		free(p);
		return NULL;
	}
	return lg_xrealloc(p, n);
}

/* The daemons and tools abort on out-of-memory rather than test every call
 * (STYLE "Errors and memory"): jansson, libuv and libcurl allocate through
 * model's lg_xmalloc family, installed before any of them is used. */
static int install_allocators(void)
{
	struct lg_error err = {0};

	json_set_alloc_funcs(lg_xmalloc, free);
	uv_replace_allocator(lg_xmalloc, uv_xrealloc, lg_xcalloc, free);
	if (ingest_global_init(&err) != 0) {
		tool_error("%s", err.msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (install_allocators() != 0)
		return 1;
	/* A reader that goes away (`gpuledger log | head`) must show up as
	 * EPIPE on the next write, which the subcommands treat as a normal
	 * end, rather than kill the process in the middle of a line. */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(1, argv + 1);
	if (strcmp(argv[1], OPTS_HELP_MAN) == 0) {
		man_main(stdout);
		return tool_flush("--help-man", 0);
	}
	for (size_t i = 0; i < N_SUBCOMMANDS; i++) {
		char page[64];

		if (strcmp(argv[1], subcommands[i].name) != 0)
			continue;
		/* The page's head here, where the summary is; the rest from
		 * the subcommand's table (opts_parse). */
		if (argc == 3 && strcmp(argv[2], OPTS_HELP_MAN) == 0) {
			snprintf(page, sizeof(page), "gpuledger-%s",
				 subcommands[i].name);
			man_head(stdout, page, subcommands[i].summary);
		}
		return subcommands[i].run(argc - 1, argv + 1);
	}
	tool_error("unknown subcommand \"%s\"", argv[1]);
	fputs("Try 'gpuledger --help' for the subcommands.\n", stderr);
	return 2;
}
