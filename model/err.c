/* The one table of error codes: lg_strerror and model__errname come from it. */
#include "model/model_int.h"

#include <stdarg.h>
#include <stdio.h>

static const struct {
	const char *name;
	const char *text;
} errtab[] = {
	[-LG_OK] = {"LG_OK", "success"},
	[-LG_EINVAL] = {"LG_EINVAL", "invalid input"},
	[-LG_ERANGE] = {"LG_ERANGE", "value out of range"},
	[-LG_ENOMEM] = {"LG_ENOMEM", "out of memory"},
	[-LG_ENOENT] = {"LG_ENOENT", "not found"},
	[-LG_EEXIST] = {"LG_EEXIST", "already exists"},
	[-LG_EMISMATCH] = {"LG_EMISMATCH", "event does not fit the state"},
	[-LG_ECORRUPT] = {"LG_ECORRUPT", "stored data is corrupt"},
	[-LG_EIO] = {"LG_EIO", "input/output error"},
	[-LG_EFULL] = {"LG_EFULL", "disk or map full"},
	[-LG_EVERSION] = {"LG_EVERSION", "unsupported format version"},
	[-LG_ELIMIT] = {"LG_ELIMIT", "limit exceeded"},
	[-LG_EUNKNOWN] = {"LG_EUNKNOWN", "unknown name or kind"},
};

const char *lg_strerror(int code)
{
	if (code > 0 || code < LG_ERR_MIN)
		return "unknown error";
	return errtab[-code].text;
}

const char *model__errname(int code)
{
	if (code > 0 || code < LG_ERR_MIN)
		return "LG_E?";
	return errtab[-code].name;
}

int(lg_error_set)(struct lg_error *err, int code, const char *fmt, ...)
{
	if (err != NULL) {
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}
