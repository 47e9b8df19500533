/*
 * gpuledger stats, checkpoint, backup: the operator's housekeeping on a
 * ledger directory (DESIGN 6).
 */
#include "tools/tools.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------- */
/* stats */

static const char stats_usage[] =
	"usage: gpuledger stats --db DIR [--format text|json]\n"
	"  sizes and counts of the ledger: events, checkpoints, first and "
	"last\n"
	"  event time, the LMDB map and page sizes, bytes used by events and\n"
	"  checkpoints, reader slots in use and the chain head.\n";

enum stat_kind {
	ST_U64,
	ST_SIZE,
	ST_TIME,
	ST_UINT
};

/* One line of the output, read from struct ledger_stats by offset, so that
 * the text and the JSON forms list the same fields in the same order. */
static const struct {
	const char *key;
	enum stat_kind kind;
	size_t off;
} stat_fields[] = {
	{"events", ST_U64, offsetof(struct ledger_stats, events)},
	{"lastSeq", ST_U64, offsetof(struct ledger_stats, last_seq)},
	{"firstTime", ST_TIME, offsetof(struct ledger_stats, first_time_ns)},
	{"lastTime", ST_TIME, offsetof(struct ledger_stats, last_time_ns)},
	{"checkpoints", ST_U64, offsetof(struct ledger_stats, checkpoints)},
	{"lastCheckpointSeq", ST_U64,
	 offsetof(struct ledger_stats, last_checkpoint_seq)},
	{"eventBytes", ST_SIZE, offsetof(struct ledger_stats, event_bytes)},
	{"checkpointBytes", ST_SIZE,
	 offsetof(struct ledger_stats, checkpoint_bytes)},
	{"usedBytes", ST_SIZE, offsetof(struct ledger_stats, used_bytes)},
	{"mapSizeBytes", ST_SIZE,
	 offsetof(struct ledger_stats, map_size_bytes)},
	{"pageSizeBytes", ST_SIZE,
	 offsetof(struct ledger_stats, page_size_bytes)},
	{"readers", ST_UINT, offsetof(struct ledger_stats, readers)},
};

#define N_STAT_FIELDS (sizeof(stat_fields) / sizeof(stat_fields[0]))

static json_t *stat_value(const struct ledger_stats *st, size_t i)
{
	const char *p = (const char *)st + stat_fields[i].off;
	uint64_t u;
	size_t z;
	unsigned ui;
	int64_t t;
	char buf[48];

	switch (stat_fields[i].kind) {
	case ST_U64:
		memcpy(&u, p, sizeof(u));
		return json_integer((json_int_t)u);
	case ST_SIZE:
		memcpy(&z, p, sizeof(z));
		return json_integer((json_int_t)z);
	case ST_UINT:
		memcpy(&ui, p, sizeof(ui));
		return json_integer((json_int_t)ui);
	case ST_TIME:
		/* An empty ledger has no first or last time. */
		if (st->events == 0)
			return json_null();
		memcpy(&t, p, sizeof(t));
		time_format_ns(t, buf, sizeof(buf));
		return json_string(buf);
	}
	return json_null();
}

static json_t *stats_json(ledger_t *lg, const struct ledger_stats *st)
{
	json_t *o = json_object();
	char hex[TOOL_HEX_LEN];

	for (size_t i = 0; i < N_STAT_FIELDS; i++)
		json_object_set_new(o, stat_fields[i].key, stat_value(st, i));
	tool_hex(ledger_head(lg), hex);
	json_object_set_new(o, "chainHead", json_string(hex));
	return o;
}

/* "key: value" lines in table order; strings unquoted, null as "-". */
static int stats_lines(const json_t *o)
{
	char line[256];
	int werr = 0;

	for (size_t i = 0; i <= N_STAT_FIELDS && werr == 0; i++) {
		const char *k =
			i < N_STAT_FIELDS ? stat_fields[i].key : "chainHead";
		const json_t *v = json_object_get(o, k);

		if (json_is_integer(v))
			snprintf(line, sizeof(line), "%s: %lld", k,
				 (long long)json_integer_value(v));
		else
			snprintf(line, sizeof(line), "%s: %s", k,
				 json_is_string(v) ? json_string_value(v)
						   : "-");
		werr = tool_puts(line);
	}
	return werr;
}

int cmd_stats(int argc, char **argv)
{
	const char *db = NULL, *format = NULL;
	bool as_json = false;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--format", OPT_STR, &format, "text|json",
		 "text (default): \"key: value\" lines; json: one canonical "
		 "JSON object (--json is the old spelling of --format json)"},
		OPT_ALIAS("--json", OPT_FLAG, &as_json),
	};
	const struct cmd_spec spec = CMD_SPEC("stats", stats_usage, opts, NULL);
	struct ledger_stats st = {0};
	struct lg_error err = {0};
	ledger_t *lg;
	json_t *o;
	char *text;
	int status = opts_parse(&spec, argc, argv), rc, werr;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if ((status = tool_format_json("stats", format, &as_json)) != 0)
		return status;
	if ((status = tool_open_ledger("stats", db, NULL, &lg)) != 0)
		return status;
	rc = ledger_stats(lg, &st, &err);
	if (rc != 0) {
		tool_error("stats: %s", err.msg[0] ? err.msg : lg_strerror(rc));
		ledger_close(lg);
		return EXIT_USAGE;
	}
	o = stats_json(lg, &st);
	if (as_json) {
		text = json_canonical(o);
		werr = tool_puts(text);
		free(text);
	} else {
		werr = stats_lines(o);
	}
	json_decref(o);
	ledger_close(lg);
	return tool_flush("stats", werr);
}

/* ---------------------------------------------------------------------- */
/* checkpoint */

static const char checkpoint_usage[] =
	"usage: gpuledger checkpoint --db DIR [--sign-key FILE]\n"
	"  writes a checkpoint of the state at the last event now and prints\n"
	"  its seq. Replays and restarts then start from it.\n";

int cmd_checkpoint(int argc, char **argv)
{
	const char *db = NULL, *key = NULL;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--sign-key", OPT_STR, &key, "FILE",
		 "also sign a C2SP checkpoint of the Merkle tree with that key "
		 "(from `gpuledger keygen`) and keep it in the ledger "
		 "(`gpuledger head` prints it)"},
	};
	const struct cmd_spec spec =
		CMD_SPEC("checkpoint", checkpoint_usage, opts, NULL);
	struct note_signer signer;
	uint64_t signed_size;
	const struct ledger_opts lo = {.read_only = false};
	struct lg_error err = {0};
	char line[32];
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (key != NULL &&
	    (status = tlog_load_signer("checkpoint", key, &signer)) != 0)
		return status;
	if ((status = tool_open_ledger("checkpoint", db, &lo, &lg)) != 0)
		return status;
	rc = ledger_checkpoint(lg, &err);
	if (rc == 0 && key != NULL)
		rc = ledger_sign_checkpoint(lg, &signer, &signed_size, &err);
	if (rc != 0) {
		tool_error("checkpoint: %s",
			   err.msg[0] ? err.msg : lg_strerror(rc));
		status = EXIT_USAGE;
	} else {
		snprintf(line, sizeof(line), "%llu",
			 (unsigned long long)ledger_last_seq(lg));
		status = tool_flush("checkpoint", tool_puts(line));
	}
	ledger_close(lg);
	return status;
}

/* ---------------------------------------------------------------------- */
/* backup */

static const char backup_usage[] =
	"usage: gpuledger backup --db DIR --out DIR2\n"
	"  writes a compacted, consistent copy of the ledger into DIR2 (new "
	"or\n"
	"  empty) while writers may keep appending; `gpuledger verify --db\n"
	"  DIR2` checks the copy.\n";

int cmd_backup(int argc, char **argv)
{
	const char *db = NULL, *to = NULL;
	const struct opt opts[] = {
		OPT_DB(&db),
		{"--out", OPT_STR, &to, "DIR2",
		 "the copy: a new or empty directory"},
		OPT_ALIAS("--to", OPT_STR, &to),
	};
	const struct cmd_spec spec =
		CMD_SPEC("backup", backup_usage, opts, NULL);
	struct lg_error err = {0};
	ledger_t *lg;
	int status = opts_parse(&spec, argc, argv), rc;

	if (status != OPTS_RUN)
		return opts_exit(status);
	if (to == NULL || to[0] == '\0') {
		tool_error("backup: --out DIR2 is required");
		return EXIT_USAGE;
	}
	if ((status = tool_open_ledger("backup", db, NULL, &lg)) != 0)
		return status;
	rc = ledger_backup(lg, to, &err);
	if (rc != 0) {
		tool_error("backup: %s: %s", to,
			   err.msg[0] ? err.msg : lg_strerror(rc));
		status = EXIT_USAGE;
	}
	ledger_close(lg);
	return status;
}
