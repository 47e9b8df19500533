/*
 * gpuledger eval: NDJSON requests on stdin, one canonical JSON line out per
 * line in (DESIGN 6.1). A bad line gets {"error": ...} and the next line is
 * still answered, so that a caller can stream a whole test table through.
 */
#include "model/model.h"
#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

/* Longest request line; longer lines are answered with an error. */
#define EVAL_LINE_MAX (4u << 20)

static const char eval_usage[] =
	"usage: gpuledger eval [--classes FILE]\n"
	"  reads {\"function\": F, \"input\": X} lines on stdin and prints\n"
	"  {\"output\": Y} or {\"error\": MESSAGE} for each.\n"
	"  functions: ParseQuantity PodRequests ToleratesTaint IsDNS1123Label\n"
	"    IsDNS1123Subdomain ClaimName BudgetKey NodeServes, and Admission\n"
	"    Declaration Remaining on an inline state: input members plus\n"
	"    \"state\": {\"events\": [...]} (--db DIR arrives with the "
	"ledger)\n"
	"  --classes FILE  the class table ({\"classes\": [...]}) for "
	"BudgetKey\n";

/* Reads one line into buf (without the newline). Returns its length, -1 at
 * end of input, or -2 when the line was longer than cap (it is consumed). */
static long read_line(FILE *f, char *buf, size_t cap)
{
	size_t n = 0;
	int c;
	bool over = false;

	while ((c = getc(f)) != EOF && c != '\n') {
		if (n + 1 < cap)
			buf[n++] = (char)c;
		else
			over = true;
	}
	if (c == EOF && n == 0 && !over)
		return -1;
	buf[n] = '\0';
	return over ? -2 : (long)n;
}

static json_t *answer(const struct eval_ctx *ctx, const char *line, size_t len)
{
	json_error_t jerr;
	struct lg_error err = {0};
	json_t *req = json_loadb(line, len, 0, &jerr), *out = NULL;
	json_t *res;
	int rc;

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

static int load_classes(const char *path, struct class_table *t)
{
	json_error_t jerr;
	struct lg_error err = {0};
	json_t *doc = json_load_file(path, 0, &jerr);
	int rc;

	if (doc == NULL) {
		tool_error("%s: %s (line %d)", path, jerr.text, jerr.line);
		return -1;
	}
	rc = class_table_parse(t, doc, &err);
	json_decref(doc);
	if (rc != 0) {
		tool_error("%s: %s", path, err.msg);
		return -1;
	}
	return 0;
}

int cmd_eval(int argc, char **argv)
{
	struct class_table classes;
	struct eval_ctx ctx = {0};
	char *line;
	long n;
	int status = 0;

	class_table_init(&classes);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			fputs(eval_usage, stdout);
			return 0;
		} else if (strcmp(argv[i], "--classes") == 0 && i + 1 < argc) {
			if (load_classes(argv[++i], &classes) != 0)
				return 2;
			ctx.classes = &classes;
		} else {
			tool_error("eval: unknown option \"%s\"", argv[i]);
			fputs(eval_usage, stderr);
			return 2;
		}
	}
	line = malloc(EVAL_LINE_MAX);
	if (line == NULL)
		abort();
	while ((n = read_line(stdin, line, EVAL_LINE_MAX)) != -1) {
		json_t *res =
			n == -2 ? json_pack("{s:s}", "error", "line too long")
				: answer(&ctx, line, (size_t)n);
		char *text = json_canonical(res);

		if (puts(text) == EOF)
			status = 2;
		free(text);
		json_decref(res);
		if (status != 0)
			break;
	}
	if (fflush(stdout) != 0) {
		tool_error("eval: write failed");
		status = 2;
	}
	free(line);
	class_table_release(&classes);
	return status;
}
