/*
 * The web console at /ui (DESIGN 7): a single page and its script and
 * style, served from the bytes the build compiled in (query__ui_assets.c, made
 * by tools/embed-ui.sh from query/ui/), never from the file system at run
 * time, so the page works in an air-gapped cluster and is the page that
 * was tested.
 *
 * Every answer carries query__ui_headers. The policy allows scripts, styles,
 * images and fetches from this origin only ('self'; data: for the empty
 * favicon), no inline script or style, no plugins, no framing, no form
 * posts elsewhere, and no base-URI games. The page keeps its bearer token
 * in session storage; the policy is what keeps a script from elsewhere
 * from reading it.
 */
#include "query/query_int.h"

#include <string.h>

const char query__ui_headers[] =
	"Content-Security-Policy: default-src 'none'; script-src 'self'; "
	"style-src 'self'; img-src 'self' data:; connect-src 'self'; "
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'\r\n"
	"X-Content-Type-Options: nosniff\r\n"
	"X-Frame-Options: DENY\r\n"
	"Referrer-Policy: no-referrer\r\n"
	"Cross-Origin-Opener-Policy: same-origin\r\n"
	"Cross-Origin-Resource-Policy: same-origin\r\n"
	"Permissions-Policy: camera=(), microphone=(), geolocation=()\r\n"
	"Cache-Control: no-store\r\n";

static const struct {
	const char *ext, *type;
} ui_types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".svg", "image/svg+xml"},
	{".png", "image/png"},
};

const char *query__ui_content_type(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(ui_types) / sizeof(ui_types[0]); i++) {
		size_t e = strlen(ui_types[i].ext);

		if (n > e && strcmp(name + n - e, ui_types[i].ext) == 0)
			return ui_types[i].type;
	}
	return "text/plain; charset=utf-8";
}

const struct ui_asset *query__ui_asset_find(const char *name)
{
	for (size_t i = 0; i < query__ui_assets_n; i++)
		if (strcmp(query__ui_assets[i].name, name) == 0)
			return &query__ui_assets[i];
	return NULL;
}

static void send_asset(struct query_server *qs, struct request *rq,
		       const char *name)
{
	const struct ui_asset *a = query__ui_asset_find(name);

	if (a == NULL) {
		query__reply_error(qs, rq, 404, "no such file in the console");
		return;
	}
	query__reply_borrowed(qs, rq, 200, query__ui_content_type(a->name),
			      (const char *)a->data, a->len);
}

void query__handle_ui(struct query_server *qs, struct request *rq)
{
	send_asset(qs, rq, "index.html");
}

void query__handle_ui_asset(struct query_server *qs, struct request *rq)
{
	send_asset(qs, rq, rq->param[0]);
}
