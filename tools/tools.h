/*
 * tools — the gpuledger command line: one binary, a table of subcommands.
 * Each subcommand is `int cmd_<name>(int argc, char **argv)` returning the
 * process exit status (0 ok, 1 a negative answer such as a failed audit,
 * 2 a usage or operating error).
 *
 * Every subcommand parses its options with opts_parse (tools/opts.c) from a
 * const table, so that --name=value, unknown options and missing values
 * behave the same everywhere, and its --help is made from that table.
 */
#ifndef GPULEDGER_TOOLS_H
#define GPULEDGER_TOOLS_H

#include "ledger/ledger.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of every subcommand. */
enum {
	EXIT_OK = 0,
	EXIT_NEGATIVE = 1, /* the answer is "no" (verify found tampering) */
	EXIT_USAGE = 2	   /* a usage or operating error */
};

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int cmd_eval(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_backup(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_verdicts(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_replicate(int argc, char **argv);
int cmd_reconcile(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_member(int argc, char **argv);

/* Prints "gpuledger VERSION (commit C)" and a newline: `gpuledger version`
 * and --version of every subcommand. */
void tool_version(FILE *f);

int cmd_keygen(int argc, char **argv);
int cmd_head(int argc, char **argv);
int cmd_prove(int argc, char **argv);
int cmd_check_proof(int argc, char **argv);
int cmd_witness(int argc, char **argv);

/* Transparency (tools/tlog.c, DESIGN 4.4). */
/* Reads a signer key file; prints the error; 0 or EXIT_USAGE. */
int tlog_load_signer(const char *cmd, const char *path, struct note_signer *s);
/* verify --checkpoint FILE --key KEY: the ledger, verified to hold last
 * events, holds the tree of that signed note. Prints "corrupt: ..." naming
 * the size and returns EXIT_NEGATIVE when not; EXIT_USAGE when it cannot
 * tell. */
int tlog_verify_checkpoint(ledger_t *lg, uint64_t last, const char *file,
			   const char *key);

/* Installs fn for SIGINT and SIGTERM (without SA_RESTART, so that a
 * blocking read or poll returns EINTR). Also for PID 1, whom the kernel
 * gives no default action: a container's stop then works. */
void tool_catch_stop(void (*fn)(int));

/* Makes the process non-dumpable (the daemons that hold credentials). */
void tool_no_dumps(void);

/* Prints "gpuledger: <message>" to stderr. */
void tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---------------------------------------------------------------------- */
/* Options (tools/opts.c). */

enum opt_kind {
	OPT_FLAG, /* no value; sets *(bool *)ptr */
	OPT_STR,  /* a value; sets *(const char **)ptr (borrowed from argv) */
	OPT_U64	  /* a value, a decimal integer; sets *(uint64_t *)ptr */
};

/* One option. --help is made from the table (as git's parse-options
 * does): "  --db DIR" and the help text, wrapped; a '\n' in help starts a
 * new line there, keeping the spaces after it. */
struct opt {
	const char *name; /* "--db" */
	enum opt_kind kind;
	void *ptr;
	const char *arg;  /* the value's name in --help ("DIR"); NULL: a flag */
	const char *help; /* what it does, defaults included */
};
/* Two conventions keep the table five plain fields:
 * - an arg without a capital letter is the list of the values the option
 *   takes, '|'-separated ("hour|day"): completion offers them;
 * - an entry without help is an alias, an old spelling kept for scripts
 *   and manifests: accepted, but neither listed in --help nor offered by
 *   completion; the man page names it with the option of the same ptr
 *   (docs/api.md lists them). */
#define OPT_ALIAS(name_, kind_, ptr_) {(name_), (kind_), (ptr_), NULL, NULL}

/* --format text|json of the subcommands that print a table or its JSON
 * (replay, stats; --json is the old spelling): sets *json; exit 2 with the
 * error printed for any other value. fmt NULL leaves *json as it is. */
int tool_format_json(const char *cmd, const char *fmt, bool *json);

/* Help texts that several subcommands share. */
#define OPT_NO_SYNC_HELP \
	"do not fsync commits (faster; a crash may lose the tail)"
/* The --db of most subcommands. */
#define OPT_DB(ptr) {"--db", OPT_STR, (ptr), "DIR", "the ledger directory"}

struct cmd_spec {
	const char *name;  /* "replay" */
	const char *usage; /* synopsis and description, before the options */
	const struct opt *opts;
	size_t n_opts;
	const char *after; /* text after the options, or NULL */
};

/* The options of etcd's client (struct etcd_opts at (a)->eo) and
 * of retention (struct cluster_retention at rt), shared by `member` and
 * `cluster`; one option a line, as in the other tables. */
/* clang-format off */
#define OPT_ETCD(a) \
	{"--etcd", OPT_STR, &(a)->eo.endpoints, "URLS", \
	 "etcd's client URLs, comma-separated (http:// or https://)"}, \
	{"--etcd-cacert", OPT_STR, &(a)->eo.cacert, "FILE", \
	 "the CA that verifies etcd's certificate"}, \
	{"--etcd-cert", OPT_STR, &(a)->eo.cert, "FILE", \
	 "a client certificate for etcd (with --etcd-key)"}, \
	{"--etcd-key", OPT_STR, &(a)->eo.key, "FILE", "and its key"}, \
	{"--etcd-timeout-ms", OPT_U64, &(a)->eo.timeout_ms, "MS", \
	 "each request's timeout, connecting included (default 5000)"}
#define OPT_RETENTION(rt) \
	{"--keep", OPT_U64, &(rt)->keep, "N", \
	 "retention (DESIGN 11 rule 11): delete the P/log/ keys more than " \
	 "N events below the lowest applied seq in P/members/ and compact " \
	 "etcd there (default 100000; 0: no bound by events); every " \
	 "member's ledger keeps the whole history"}, \
	{"--keep-bytes", OPT_U64, &(rt)->keep_bytes, "B", \
	 "and delete the oldest P/log/ keys while their values hold more " \
	 "than B bytes (default 268435456, 256 MiB; 0: no bound by bytes), " \
	 "even past a member's applied seq: etcd at its quota refuses every " \
	 "write, so a member that far behind joins from a peer instead"}, \
	{"--defrag-free", OPT_U64, &(rt)->defrag_free, "B", \
	 "then defragment each etcd member of --etcd, one at a time, " \
	 "whose file has B bytes free (default 67108864, 64 MiB; 0: " \
	 "never)"}
/* clang-format on */

/* The options of serve's HTTP server (tools/serve.c): one group that `serve`
 * and `member` both take, since a member is serve's routes on its own
 * ledger; so neither can gain an option the other lacks. Strings go to the
 * struct query_opts at (q); the bounds are read into the struct
 * server_limits at (l), which tool_server_opts checks and sets in q. What
 * serve has beyond the group, and why a member does without it, is said at
 * serve's table; tests/shared_opts_cli.sh fails when serve gains an option
 * that member does not take and that list does not name. */
struct query_opts;
struct server_limits {
	uint64_t body, conns, half_open, per_peer, handshake, heavy, idle,
		request, poll, tls_reload;
};
/* clang-format off */
/* --holds DUR (DESIGN 3.7), the same for serve and member: *s is the
 * string, read with tool_holds_parse. */
#define OPT_HOLDS(s) \
	{"--holds", OPT_STR, (s), "DUR", \
	 "holds (DESIGN 3.7): each allowed admission holds its units " \
	 "until its object is observed, for at most DUR (\"2m\"); 0 " \
	 "turns them off; without it the log's mode stays. Appended to " \
	 "the log as a HOLDS event when it differs"}
#define OPT_SERVER(q, l) \
	{"--listen", OPT_STR, &(q)->listen, "HOST:PORT", \
	 "numeric address (default 127.0.0.1:8420; port 0 picks a free " \
	 "one); without --token-file only a loopback address is " \
	 "accepted"}, \
	{"--token-file", OPT_STR, &(q)->token_file, "FILE", \
	 "`TOKEN ROLE` per line; roles admin, admission, auditor, " \
	 "tenant:<ns>; the file must not be readable by group or " \
	 "others"}, \
	{"--rates", OPT_STR, &(q)->rates_file, "FILE", \
	 "the billing file of GET /v1/export (prices, names, billing " \
	 "period offset; `gpuledger export --help`); read again when " \
	 "it changes, a bad change keeps the previous one"}, \
	{"--tls-cert", OPT_STR, &(q)->tls_cert, "FILE", \
	 "serve HTTPS (TLS >= 1.2) with this PEM chain;"}, \
	{"--tls-key", OPT_STR, &(q)->tls_key, "FILE", \
	 "and its key; both are reloaded when they change (open " \
	 "connections keep the old one; a pair that does not load is " \
	 "logged and ignored)"}, \
	{"--tls-client-ca", OPT_STR, &(q)->tls_client_ca, "FILE", \
	 "require client certificates signed by it; a token-file line " \
	 "`cert:<CN> ROLE` gives a certificate with that subject CN a " \
	 "role (a subject with two CNs gets none)"}, \
	{"--tls-reload-ms", OPT_U64, &(l)->tls_reload, "MS", \
	 "how often the TLS files are checked (1000)"}, \
	{"--probe-listen", OPT_STR, &(q)->probe_listen, "HOST:PORT", \
	 "plain HTTP for /healthz and /readyz only (the kubelet " \
	 "presents no client certificate); prints \"probes on " \
	 "HOST:PORT\""}, \
	{"--max-body", OPT_U64, &(l)->body, "BYTES", \
	 "request body bound (default 1048576)"}, \
	{"--max-conns", OPT_U64, &(l)->conns, "N", \
	 "open connections (default 4096; the probe listener has 64 " \
	 "of its own, at most 32 of one peer address, a new probe " \
	 "closing the oldest in its way)"}, \
	{"--max-half-open", OPT_U64, &(l)->half_open, "N", \
	 "of those, connections without a TLS handshake and first " \
	 "request head yet (default a quarter of --max-conns); a new " \
	 "connection over a bound closes the oldest half-open one in " \
	 "its way, or is closed at once when there is none"}, \
	{"--max-conns-per-peer", OPT_U64, &(l)->per_peer, "N", \
	 "connections of one peer address (default half of " \
	 "--max-half-open: one address alone never fills it)"}, \
	{"--handshake-ms", OPT_U64, &(l)->handshake, "MS", \
	 "a half-open connection is cut this long after its accept " \
	 "(default 2000, at most --request-ms)"}, \
	{"--max-heavy", OPT_U64, &(l)->heavy, "N", \
	 "exports, past states and event pages computed at once, each " \
	 "on a thread; beyond: 503 with Retry-After (default 16)"}, \
	{"--idle-ms", OPT_U64, &(l)->idle, "MS", \
	 "keep-alive idle time (default 30000)"}, \
	{"--request-ms", OPT_U64, &(l)->request, "MS", \
	 "a request must arrive whole within (default 10000); slower " \
	 "clients get 408 and are cut off"}, \
	{"--poll-ms", OPT_U64, &(l)->poll, "MS", \
	 "how often the log is followed (default 50)"}
/* clang-format on */
/* Sets l's bounds in q (0: query's default), each checked to fit, and
 * raises the descriptor limit to the hard one (every connection is a
 * descriptor: the usual soft limit, 1024, would refuse accepts long before
 * --max-conns). Prints "CMD: --OPTION N is too large" and returns
 * EXIT_USAGE, or 0. */
int tool_server_opts(const char *cmd, const struct server_limits *l,
		     struct query_opts *q);
/* Prints "listening on HOST:PORT" (q's --listen with the port bound, for
 * port 0) and, with a probe listener, "probes on HOST:PORT", and flushes:
 * what a script waits for before it connects. */
void tool_server_listening(const struct query_opts *q, int port,
			   int probe_port);

/* A command's spec over an array of options (its length counted here, never
 * by hand). */
#define CMD_SPEC(name, usage, opts, after)                                 \
	{                                                                  \
		(name), (usage), (opts), sizeof(opts) / sizeof((opts)[0]), \
			(after)                                            \
	}

/* Result of opts_parse. */
enum {
	OPTS_RUN = 0,
	OPTS_HELP_SHOWN = 1,
	OPTS_USAGE_ERROR = -1
};

/* Prints spec's --help: its usage, the option table, its after text. */
void opts_usage(const struct cmd_spec *spec, FILE *f);

/* Hidden arguments that tools/completion.sh and tools/manpages.sh use, so
 * that completion and the man pages are made from the tables the parser
 * reads (as git's --git-completion-helper): `SUB --completion-helper`
 * prints "NAME<TAB>VALUES" per option (aliases left out, then --help and
 * --version); `SUB --help-man` prints the page's sections from SYNOPSIS
 * on (main prints .TH and NAME first). Neither is offered or listed. */
#define OPTS_COMPLETION_HELPER "--completion-helper"
#define OPTS_HELP_MAN "--help-man"
/* roff for text: backslashes and dashes escaped, a leading '.' or '\''
 * guarded; '\n' ends a line (filled text goes on). */
void opts_roff(FILE *f, const char *text);

/* Parses argv[1..argc) against spec's table ("--name VALUE" or
 * "--name=VALUE"). --help / -h prints the usage to stdout, --version the
 * version (both OPTS_HELP_SHOWN);
 * an unknown option, a missing or malformed value, or a positional argument
 * prints one error line and one line pointing at --help to stderr
 * (OPTS_USAGE_ERROR). */
int opts_parse(const struct cmd_spec *spec, int argc, char **argv);
/* The exit status for a non-OPTS_RUN result. */
int opts_exit(int parsed);

/* Opens the ledger in dir for subcommand cmd, with a one-line error naming
 * the problem (no --db, no such directory, ledger_open's error). o may be
 * NULL (read-only defaults); o->dir is ignored. Returns 0 or EXIT_USAGE.
 * Caller closes with ledger_close. */
int tool_open_ledger(const char *cmd, const char *dir,
		     const struct ledger_opts *o, ledger_t **lg);

/* Damage a forensic read found (ledger_opts.forensic, LG_ECORRUPT), as one
 * line: "corrupt at seq N: DETAIL" for a record that is not what was
 * written, "damaged storage at seq N: DETAIL" (or without the seq, naming
 * the page) for LMDB's structure. seq 0: the one the message names. */
void tool_damage_line(uint64_t seq, const struct lg_error *err, char *line,
		      size_t cap);
/* Prints that line as cmd's error; returns EXIT_NEGATIVE (damage is a
 * "no", like a failed verify, not an operating error). */
int tool_damage(const char *cmd, const struct lg_error *err);

/* Writes the hex of a chain head (LEDGER_HEAD_BYTES) into out, which holds
 * 2 * LEDGER_HEAD_BYTES + 1 bytes. */
void tool_hex(const uint8_t *head, char *out);
#define TOOL_HEX_LEN (2 * LEDGER_HEAD_BYTES + 1)

/* Parses --at (ledger_at_resolve): all digits is a seq (must be <= the
 * last seq); otherwise a time, resolved to the last event at or before it.
 * NULL means the last seq. Returns 0 or EXIT_USAGE with the error printed.
 * (replay takes a seq past the last, and says where --at falls, itself.) */
int tool_resolve_at(const char *cmd, ledger_t *lg, const char *at,
		    uint64_t *seq);

/* The state at seq: a clone of the handle's state when seq is the last
 * one, else ledger_state_at. Caller frees with state_free. Returns 0 or
 * EXIT_USAGE with the error printed. */
int tool_state_at(const char *cmd, ledger_t *lg, uint64_t seq, state_t **st);

/* Aligned text tables (tools/grid.c): rows of cells, each column as wide
 * as its widest cell (at most TOOL_CELL_MAX bytes are shown of a cell). */
#define TOOL_GRID_COLS_MAX 10
#define TOOL_CELL_MAX	   512
struct tool_grid {
	size_t ncols, nrows, cap;
	const char *align; /* per column: 'l' or 'r'; borrowed */
	char **cells;	   /* nrows * ncols, owned */
};
void tool_grid_init(struct tool_grid *g, size_t ncols, const char *align);
/* Copies ncols cells (NULL: empty). */
void tool_grid_row(struct tool_grid *g, const char *const *row);
/* Prints the rows with tool_puts; returns its errno (0). */
int tool_grid_print(const struct tool_grid *g);
void tool_grid_release(struct tool_grid *g);

/* Writes line and a newline to stdout. Returns 0, or the errno of a failed
 * write (EPIPE when the reader has gone away). */
int tool_puts(const char *line);
/* A bearer token file's token (the first word of its first line; caller
 * frees), NULL when the file is unreadable, readable by group or others,
 * or holds none. */
char *tool_read_token(const char *path);
/* Flushes stdout after werr (0 or tool_puts's errno). A reader that went
 * away (EPIPE, e.g. `| head`) is not an error of ours: EXIT_OK. Another
 * failure prints an error: EXIT_USAGE. */
int tool_flush(const char *cmd, int werr);
/* Longest input line of eval and import (read with lg_read_line). */
#define TOOL_LINE_MAX (4u << 20)

/* Checks --db for subcommand cmd: given, and (unless create) an existing
 * directory. Prints the error; returns 0 or EXIT_USAGE. */
int tool_check_db(const char *cmd, const char *dir, bool create);
/* --holds DUR (DESIGN 3.7): "0" (off) or a Go-style duration ("2m",
 * "90s", "1500ms") of whole milliseconds, at most HOLDS_TTL_MS_MAX, into
 * *ttl_ms. EXIT_USAGE (said on stderr, naming cmd) otherwise, else 0. */
int tool_holds_parse(const char *cmd, const char *s, int64_t *ttl_ms);

/* Loads a class table ({"classes": [...]}) from path into t (initialised
 * here; empty when path is NULL). Prints the error as "cmd: --classes
 * PATH: ..."; returns 0 or EXIT_USAGE. */
int tool_load_classes(const char *cmd, const char *path,
		      struct class_table *t);

#endif
