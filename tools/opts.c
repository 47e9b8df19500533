/*
 * Shared plumbing of the subcommands: one option parser driven by a const
 * table, opening a ledger with an error that names the problem, --at
 * resolution, and output that survives a reader going away.
 */
#include "tools/tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct opt *opt_find(const struct cmd_spec *spec, const char *arg,
				  size_t len)
{
	for (size_t i = 0; i < spec->n_opts; i++)
		if (strlen(spec->opts[i].name) == len &&
		    strncmp(spec->opts[i].name, arg, len) == 0)
			return &spec->opts[i];
	return NULL;
}

/* --help's layout: help texts start at one column, that of the longest
 * "--name ARG" up to OPT_COL_MAX (a longer one has its help on the next
 * line), and are wrapped at OPT_WIDTH. */
#define OPT_COL_MAX 24
#define OPT_WIDTH   76

static size_t opt_width(const struct opt *o)
{
	return 2 + strlen(o->name) + (o->arg ? 1 + strlen(o->arg) : 0);
}

/* Writes text, the cursor being at column pos, every line from column at,
 * wrapped at OPT_WIDTH. A '\n' in text starts a new line, which the spaces
 * after it indent further (the lines of an example). */
static void wrap(FILE *f, const char *text, size_t at, size_t pos)
{
	const char *line = text;

	for (;;) {
		size_t len = strcspn(line, "\n");
		size_t start = at + strspn(line, " ");
		const char *p = line + (start - at), *end = line + len;
		bool first = true;

		fprintf(f, "%*s", (int)(start > pos ? start - pos : 0), "");
		pos = start > pos ? start : pos;
		while (p < end) {
			size_t n = strcspn(p, " \n");

			if (!first && pos + 1 + n > OPT_WIDTH) {
				fprintf(f, "\n%*s", (int)start, "");
				pos = start;
				first = true;
			}
			if (!first) {
				fputc(' ', f);
				pos++;
			}
			fwrite(p, 1, n, f);
			pos += n;
			first = false;
			p += n;
			p += strspn(p, " ");
		}
		if (line[len] == '\0')
			break;
		fputc('\n', f);
		pos = 0;
		line += len + 1;
	}
	fputc('\n', f);
}

void opts_usage(const struct cmd_spec *spec, FILE *f)
{
	size_t col = 0;

	fputs(spec->usage, f);
	for (size_t i = 0; i < spec->n_opts; i++) {
		size_t w = opt_width(&spec->opts[i]);

		if (spec->opts[i].help != NULL && w <= OPT_COL_MAX && w > col)
			col = w;
	}
	col += 2;
	for (size_t i = 0; i < spec->n_opts; i++) {
		const struct opt *o = &spec->opts[i];
		size_t w = opt_width(o);

		if (o->help == NULL) /* an alias */
			continue;

		fprintf(f, "  %s%s%s", o->name, o->arg ? " " : "",
			o->arg ? o->arg : "");
		if (w + 1 > col) {
			fputc('\n', f);
			w = 0;
		}
		wrap(f, o->help ? o->help : "", col, w);
	}
	if (spec->after != NULL)
		fputs(spec->after, f);
}

/* ---------------------------------------------------------------------- */
/* Completion and man pages, from the same table */

void opts_roff(FILE *f, const char *text)
{
	bool bol = true;

	for (const char *p = text; *p; p++) {
		if (bol && (*p == '.' || *p == '\''))
			fputs("\\&", f);
		bol = *p == '\n';
		if (*p == '\\')
			fputs("\\e", f);
		else if (*p == '-')
			fputs("\\-", f);
		else
			fputc(*p, f);
	}
}

/* The values an option takes ("hour day"), from an arg without a capital
 * letter ("hour|day"), into buf; "" for any value. */
static void opt_values(const struct opt *o, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	if (o->arg == NULL || strpbrk(o->arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
		return;
	for (const char *p = o->arg; *p && n + 1 < cap; p++)
		buf[n++] = *p == '|' ? ' ' : *p;
	buf[n] = '\0';
}

static void completion_helper(const struct cmd_spec *spec, FILE *f)
{
	char values[256];

	for (size_t i = 0; i < spec->n_opts; i++) {
		if (spec->opts[i].help == NULL) /* an alias */
			continue;
		opt_values(&spec->opts[i], values, sizeof(values));
		fprintf(f, "%s\t%s\n", spec->opts[i].name, values);
	}
	fputs("--help\t\n--version\t\n", f);
}

/* Text of --help's usage or after (lines indented by two, examples by
 * more) as roff paragraphs: an empty line starts one, an indented line a
 * new line of its own. */
static void man_text(FILE *f, const char *text)
{
	const char *line = text;

	while (*line) {
		size_t len = strcspn(line, "\n"), ind = strspn(line, " ");
		char buf[512];

		if (ind >= len) {
			fputs(".PP\n", f);
		} else {
			if (ind > 2)
				fputs(".br\n", f);
			snprintf(buf, sizeof(buf), "%.*s", (int)(len - ind),
				 line + ind);
			opts_roff(f, buf);
			fputc('\n', f);
		}
		line += len + (line[len] == '\n');
	}
}

/* One .TP item: the option, its value's name, its help, its aliases. */
static void man_opt(FILE *f, const struct cmd_spec *spec, const struct opt *o)
{
	const char *h = o->help ? o->help : "";
	bool first = true;

	fputs(".TP\n\\fB", f);
	opts_roff(f, o->name);
	fputs("\\fR", f);
	if (o->arg != NULL) {
		fputs(" \\fI", f);
		opts_roff(f, o->arg);
		fputs("\\fR", f);
	}
	fputc('\n', f);
	for (;;) {
		size_t len = strcspn(h, "\n");
		char buf[512];

		snprintf(buf, sizeof(buf), "%.*s", (int)len, h);
		opts_roff(f, buf + strspn(buf, " "));
		fputc('\n', f);
		if (h[len] == '\0')
			break;
		fputs(".br\n", f);
		h += len + 1;
	}
	for (size_t i = 0; i < spec->n_opts; i++) {
		const struct opt *a = &spec->opts[i];

		if (a->help != NULL || a->ptr != o->ptr)
			continue;
		fputs(first ? "(Also spelled \\fB" : ", \\fB", f);
		opts_roff(f, a->name);
		fputs("\\fR", f);
		first = false;
	}
	if (!first)
		fputs(", the old name.)\n", f);
}

static void man_page(const struct cmd_spec *spec, FILE *f)
{
	const char *u = spec->usage, *desc;

	/* The usage's first lines, up to the first indented by two only,
	 * are the synopsis. */
	if (strncmp(u, "usage: ", 7) == 0)
		u += 7;
	desc = u;
	while (*desc) {
		desc += strcspn(desc, "\n");
		desc += *desc == '\n';
		if (strncmp(desc, "   ", 3) != 0)
			break;
	}
	fputs(".SH SYNOPSIS\n.nf\n", f);
	for (const char *p = u; p < desc;) {
		size_t len = strcspn(p, "\n"), ind = strspn(p, " ");
		char buf[512];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len - ind), p + ind);
		if (p != u) /* a continuation, or a second form */
			fputs(strncmp(buf, "gpuledger ", 10) == 0
				      ? ""
				      : "\\ \\ \\ \\ ",
			      f);
		opts_roff(f, buf);
		fputc('\n', f);
		p += len + (p[len] == '\n');
	}
	fputs(".fi\n.SH DESCRIPTION\n", f);
	man_text(f, desc);
	if (spec->after != NULL) {
		fputs(".PP\n", f);
		man_text(f, spec->after);
	}
	fputs(".SH OPTIONS\n", f);
	for (size_t i = 0; i < spec->n_opts; i++)
		if (spec->opts[i].help != NULL)
			man_opt(f, spec, &spec->opts[i]);
	fputs(".TP\n\\fB\\-\\-help\\fR, \\fB\\-h\\fR\nprint the usage and the "
	      "options, and exit\n"
	      ".TP\n\\fB\\-\\-version\\fR\nprint the version and the commit, "
	      "and exit\n",
	      f);
	fputs(".SH EXIT STATUS\n"
	      "0 on success; 1 when the answer is no (a failed audit, verify "
	      "or proof check, a log that departs, damage); 2 on a usage or "
	      "operating error (an unknown option, a missing ledger). "
	      "DESCRIPTION says which apply.\n"
	      ".SH SEE ALSO\n\\fBgpuledger\\fR(1); docs/api.md and "
	      "docs/operations.md in the source.\n",
	      f);
}

/* After the error, one line pointing at --help rather than the whole help:
 * 70 lines of it would scroll the error away (git's "see 'git help'"). */
static int usage_error(const struct cmd_spec *spec)
{
	fprintf(stderr, "Try 'gpuledger %s --help' for its options.\n",
		spec->name);
	return OPTS_USAGE_ERROR;
}

/* Stores value (NULL for a flag) through o; false when it is malformed. */
static bool opt_store(const struct opt *o, const char *value)
{
	/* A table entry is the program's, not the user's: a kind the parser
	 * does not know, or no place to store, is a bug. */
	LG_ASSERT(o->ptr != NULL);
	LG_ASSERT(o->kind == OPT_FLAG || o->kind == OPT_STR ||
		  o->kind == OPT_U64);
	switch (o->kind) {
	case OPT_FLAG:
		*(bool *)o->ptr = true;
		return true;
	case OPT_STR:
		*(const char **)o->ptr = value;
		return true;
	case OPT_U64:
		return lg_parse_u64(value, (uint64_t *)o->ptr);
	}
	return false;
}

int opts_parse(const struct cmd_spec *spec, int argc, char **argv)
{
	LG_ASSERT(spec != NULL && spec->name != NULL && argv != NULL);
	LG_ASSERT(spec->opts != NULL || spec->n_opts == 0);
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *eq = strchr(arg, '=');
		size_t len =
			eq && arg[0] == '-' ? (size_t)(eq - arg) : strlen(arg);
		const struct opt *o;
		const char *value = eq && arg[0] == '-' ? eq + 1 : NULL;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			opts_usage(spec, stdout);
			return OPTS_HELP_SHOWN;
		}
		if (strcmp(arg, "--version") == 0) {
			tool_version(stdout);
			return OPTS_HELP_SHOWN;
		}
		if (strcmp(arg, OPTS_COMPLETION_HELPER) == 0) {
			completion_helper(spec, stdout);
			return OPTS_HELP_SHOWN;
		}
		if (strcmp(arg, OPTS_HELP_MAN) == 0) {
			man_page(spec, stdout);
			return OPTS_HELP_SHOWN;
		}
		o = arg[0] == '-' ? opt_find(spec, arg, len) : NULL;
		if (o == NULL) {
			tool_error("%s: %s \"%s\"", spec->name,
				   arg[0] == '-' ? "unknown option"
						 : "unexpected argument",
				   arg);
			return usage_error(spec);
		}
		if (o->kind == OPT_FLAG && value != NULL) {
			tool_error("%s: %s takes no value", spec->name,
				   o->name);
			return usage_error(spec);
		}
		if (o->kind != OPT_FLAG && value == NULL) {
			if (i + 1 >= argc) {
				tool_error("%s: %s needs a value", spec->name,
					   o->name);
				return usage_error(spec);
			}
			value = argv[++i];
		}
		if (!opt_store(o, value)) {
			/* All digits, and still refused: too long. */
			bool digits = value[0] != '\0' &&
				      strspn(value, "0123456789") ==
					      strlen(value);

			if (digits)
				tool_error("%s: %s: \"%s\" is too large (at "
					   "most %d digits)",
					   spec->name, o->name, value,
					   LG_U64_DIGITS_MAX);
			else
				tool_error("%s: %s: \"%s\" is not a "
					   "non-negative integer",
					   spec->name, o->name, value);
			return usage_error(spec);
		}
	}
	return OPTS_RUN;
}

int opts_exit(int parsed)
{
	return parsed == OPTS_HELP_SHOWN ? EXIT_OK : EXIT_USAGE;
}

static bool has_ledger(const char *dir)
{
	char path[4096];
	struct stat sb;
	int n = snprintf(path, sizeof(path), "%s/data.mdb", dir);

	return n > 0 && (size_t)n < sizeof(path) && stat(path, &sb) == 0 &&
	       S_ISREG(sb.st_mode);
}

int tool_holds_parse(const char *cmd, const char *s, int64_t *ttl_ms)
{
	int64_t ns = 0;

	if (strcmp(s, "0") != 0 &&
	    (reconcile_window_parse(s, &ns) != 0 || ns % 1000000 != 0 ||
	     ns == 0 || ns / 1000000 > HOLDS_TTL_MS_MAX)) {
		tool_error("%s: --holds %s: not 0 or a duration of whole "
			   "milliseconds up to 24h (\"2m\", \"90s\")",
			   cmd, s);
		return EXIT_USAGE;
	}
	*ttl_ms = ns / 1000000;
	return 0;
}

int tool_check_db(const char *cmd, const char *dir, bool create)
{
	struct stat sb;

	if (dir == NULL || dir[0] == '\0') {
		tool_error("%s: --db DIR is required", cmd);
		return EXIT_USAGE;
	}
	/* ledger_open would say the same less plainly; an operator who typed
	 * the wrong path should read exactly that. */
	if (create)
		return EXIT_OK;
	if (stat(dir, &sb) != 0) {
		tool_error("%s: %s: %s", cmd, dir, strerror(errno));
		return EXIT_USAGE;
	}
	if (!S_ISDIR(sb.st_mode)) {
		tool_error("%s: %s: not a directory", cmd, dir);
		return EXIT_USAGE;
	}
	/* An existing directory that holds no ledger is a mistyped path far
	 * more often than a wish for an empty one: LMDB's own answer would be
	 * a bare "No such file or directory" about a directory that exists. */
	if (!has_ledger(dir)) {
		tool_error("%s: %s: not a gpuledger ledger (no data.mdb in it)",
			   cmd, dir);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int tool_open_ledger(const char *cmd, const char *dir,
		     const struct ledger_opts *o, ledger_t **lg)
{
	struct ledger_opts lo = {.read_only = true};
	struct lg_error err = {0};
	int rc;

	LG_ASSERT(cmd != NULL && lg != NULL);
	*lg = NULL;
	if (o != NULL)
		lo = *o;
	lo.dir = dir;
	if (tool_check_db(cmd, dir, lo.create) != 0)
		return EXIT_USAGE;
	rc = ledger_open(lg, &lo, &err);
	if (rc == LG_ECORRUPT && lo.forensic) {
		*lg = NULL;
		return tool_damage(cmd, &err);
	}
	if (rc != 0) {
		/* The path once: most of the ledger's messages start with it.
		 */
		if (err.msg[0] && strncmp(err.msg, dir, strlen(dir)) == 0)
			tool_error("%s: %s", cmd, err.msg);
		else
			tool_error("%s: %s: %s", cmd, dir,
				   err.msg[0] ? err.msg : lg_strerror(rc));
		*lg = NULL;
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

void tool_damage_line(uint64_t seq, const struct lg_error *err, char *line,
		      size_t cap)
{
	static const char storage[] = "damaged storage: ";
	const char *d = err->msg[0] ? err->msg : lg_strerror(err->code);
	unsigned long long at = 0;
	int n = 0;
	bool damaged = false;

	/* The ledger's messages begin "seq N: " when they know the seq. */
	if (sscanf(d, "seq %llu: %n", &at, &n) == 1 && n > 0)
		d += n;
	else
		at = 0;
	if (seq == 0)
		seq = at;
	if (strncmp(d, storage, sizeof(storage) - 1) == 0) {
		d += sizeof(storage) - 1;
		damaged = true;
	}
	if (seq != 0)
		snprintf(line, cap, "%s at seq %llu: %s",
			 damaged ? "damaged storage" : "corrupt",
			 (unsigned long long)seq, d);
	else
		snprintf(line, cap, "%s: %s",
			 damaged ? "damaged storage" : "corrupt", d);
}

int tool_damage(const char *cmd, const struct lg_error *err)
{
	char line[LG_ERRMSG_MAX + 64];

	tool_damage_line(0, err, line, sizeof(line));
	tool_error("%s: %s", cmd, line);
	return EXIT_NEGATIVE;
}

void tool_hex(const uint8_t *head, char *out)
{
	lg_hex(head, LEDGER_HEAD_BYTES, out);
}

int tool_resolve_at(const char *cmd, ledger_t *lg, const char *at,
		    uint64_t *seq)
{
	struct lg_error err = {0};
	struct ledger_at a;
	int rc = ledger_at_resolve(lg, at, &a, &err);

	LG_ASSERT(cmd != NULL && seq != NULL);
	*seq = a.seq;
	if (rc != 0) {
		tool_error("%s: --at %s", cmd,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		return EXIT_USAGE;
	}
	if (a.by_seq && a.asked_seq > ledger_last_seq(lg)) {
		tool_error("%s: --at %s is past the last seq %llu", cmd, at,
			   (unsigned long long)ledger_last_seq(lg));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int tool_state_at(const char *cmd, ledger_t *lg, uint64_t seq, state_t **st)
{
	struct lg_error err = {0};
	int rc;

	LG_ASSERT(cmd != NULL && lg != NULL && st != NULL);
	if (seq == 0) {
		*st = state_new();
		return EXIT_OK;
	}
	if (seq == ledger_last_seq(lg)) {
		*st = state_clone(ledger_state(lg));
		return EXIT_OK;
	}
	rc = ledger_state_at(lg, seq, st, NULL, &err);
	if (rc != 0) {
		tool_error("%s: state at seq %llu: %s", cmd,
			   (unsigned long long)seq,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		*st = NULL;
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

int tool_puts(const char *line)
{
	errno = 0;
	if (fputs(line, stdout) == EOF || putchar('\n') == EOF)
		return errno ? errno : EIO;
	return 0;
}

int tool_flush(const char *cmd, int werr)
{
	if (werr == 0 && fflush(stdout) != 0)
		werr = errno ? errno : EIO;
	if (werr == 0 || werr == EPIPE)
		return EXIT_OK;
	tool_error("%s: writing the output failed: %s", cmd, strerror(werr));
	return EXIT_USAGE;
}

int tool_format_json(const char *cmd, const char *fmt, bool *json)
{
	if (fmt == NULL)
		return EXIT_OK;
	if (strcmp(fmt, "json") == 0 || strcmp(fmt, "text") == 0) {
		*json = fmt[0] == 'j';
		return EXIT_OK;
	}
	tool_error("%s: --format %s: not text or json", cmd, fmt);
	return EXIT_USAGE;
}

int tool_load_classes(const char *cmd, const char *path,
		      struct class_table *t)
{
	struct lg_error err = {0};
	json_error_t jerr;
	json_t *doc;
	int rc;

	class_table_init(t);
	if (path == NULL)
		return EXIT_OK;
	doc = json_load_file(path, 0, &jerr);
	if (doc == NULL) {
		tool_error("%s: --classes %s: %s (line %d)", cmd, path,
			   jerr.text, jerr.line);
		return EXIT_USAGE;
	}
	rc = class_table_parse(t, doc, &err);
	json_decref(doc);
	if (rc != 0) {
		tool_error("%s: --classes %s: %s", cmd, path, err.msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
