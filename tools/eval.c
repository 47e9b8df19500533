/*
 * gpuledger eval: NDJSON requests on stdin, one canonical JSON line out per
 * line in (DESIGN 6.1). A bad line gets {"error": ...} and the next line is
 * still answered, so that a caller can stream a whole test table through.
 */
#include "model/model.h"
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

static const char eval_usage[] =
	"usage: gpuledger eval [--classes FILE] [--db DIR [--at SEQ|RFC3339]]\n"
	"  reads {\"function\": F, \"input\": X} lines on stdin and prints\n"
	"  {\"output\": Y} or {\"error\": MESSAGE} for each.\n"
	"  functions: ParseQuantity PodRequests ToleratesTaint IsDNS1123Label\n"
	"    IsDNS1123Subdomain ClaimName BudgetKey NodeServes, and Admission\n"
	"    Declaration Remaining on the --db state or on an inline state:\n"
	"    input members plus \"state\": {\"events\": [...]}\n";

/* The answer to one line; *flags are the JCS flags to write it with (a
 * verdict as its record is written). */
static json_t *answer(const struct eval_ctx *ctx, const char *line, size_t len,
		      unsigned *flags)
{
	json_error_t jerr, derr;
	struct lg_error err = {0};
	json_t *req = json_loadb(line, len, 0, &jerr), *out = NULL;
	json_t *res;
	int rc;

	/* A verdict request is read as serve reads it (DESIGN 3.5): numbers
	 * as doubles, duplicate keys refused. The first reading tells the
	 * function; a line it refuses (an integer beyond int64) may still be
	 * one. */
	if (req == NULL || model_eval_is_verdict(json_string_value(
				   json_object_get(req, "function")))) {
		json_t *d = json_loadb_doubles(line, len, 0, &derr);
		bool verdict =
			d != NULL ? model_eval_is_verdict(json_string_value(
					    json_object_get(d, "function")))
				  : req != NULL;

		if (verdict) {
			json_decref(req);
			req = d;
			jerr = derr;
			*flags = JCS_INT_DOUBLES;
		} else {
			json_decref(d);
		}
	}
	if (req == NULL)
		return json_pack("{s:s+}", "error",
				 "malformed JSON: ", jerr.text);
	if (!json_is_object(req)) {
		json_decref(req);
		return json_pack("{s:s}", "error",
				 "a request must be a JSON object");
	}
	rc = model_eval(ctx,
			json_string_value(json_object_get(req, "function")),
			json_object_get(req, "input"), &out, &err);
	json_decref(req);
	if (rc != 0)
		return json_pack("{s:s}", "error",
				 err.msg[0] ? err.msg : lg_strerror(rc));
	res = json_object();
	json_object_set_new(res, "output", out);
	return res;
}

/* The --db state at --at, and its class table when --classes is absent. */
static int eval_db_state(const char *db, const char *at, struct eval_ctx *ctx,
			 state_t **st)
{
	ledger_t *lg;
	uint64_t seq;
	int status;

	*st = NULL;
	if (db == NULL) {
		if (at == NULL)
			return EXIT_OK;
		tool_error("eval: --at needs --db DIR");
		return EXIT_USAGE;
	}
	if ((status = tool_open_ledger("eval", db, NULL, &lg)) != 0)
		return status;
	status = tool_resolve_at("eval", lg, at, &seq);
	if (status == EXIT_OK)
		status = tool_state_at("eval", lg, seq, st);
	ledger_close(lg);
	if (status != EXIT_OK)
		return status;
	ctx->state = *st;
	if (ctx->classes == NULL)
		ctx->classes = state_classes(*st);
	return EXIT_OK;
}

static int eval_stream(const struct eval_ctx *ctx)
{
	char *line = lg_xmalloc(TOOL_LINE_MAX);
	long n;
	int werr = 0;

	while (werr == 0 &&
	       (n = lg_read_line(stdin, line, TOOL_LINE_MAX)) != -1) {
		unsigned flags = 0;
		json_t *res =
			n == -2 ? json_pack("{s:s}", "error", "line too long")
				: answer(ctx, line, (size_t)n, &flags);
		char *text = jcs_text(res, flags, SIZE_MAX, NULL);

		werr = tool_puts(text);
		free(text);
		json_decref(res);
	}
	free(line);
	return tool_flush("eval", werr);
}

int cmd_eval(int argc, char **argv)
{
	const char *classes_file = NULL, *db = NULL, *at = NULL;
	const struct opt opts[] = {
		{"--classes", OPT_STR, &classes_file, "FILE",
		 "the class table ({\"classes\": [...]}) for BudgetKey; "
		 "without it, the --db state's class table"},
		{"--db", OPT_STR, &db, "DIR",
		 "the ledger whose state Admission, Declaration and Remaining "
		 "answer on"},
		{"--at", OPT_STR, &at, "SEQ|TIME",
		 "that state after event SEQ, or at an RFC 3339 time (default: "
		 "the last event)"},
	};
	const struct cmd_spec spec = CMD_SPEC("eval", eval_usage, opts, NULL);
	struct class_table classes;
	struct eval_ctx ctx = {0};
	state_t *st = NULL;
	int status = opts_parse(&spec, argc, argv);

	if (status != OPTS_RUN)
		return opts_exit(status);
	class_table_init(&classes);
	if (classes_file != NULL) {
		if (tool_load_classes("eval", classes_file, &classes) != 0)
			return EXIT_USAGE;
		ctx.classes = &classes;
	}
	status = eval_db_state(db, at, &ctx, &st);
	if (status == EXIT_OK)
		status = eval_stream(&ctx);
	state_free(st);
	class_table_release(&classes);
	return status;
}
