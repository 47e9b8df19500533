/*
 * Tests of model/verdict.c: admission (DESIGN 3.1), declaration (3.2),
 * remaining budget (3.3), overcommit (3.4) and the eval functions on them,
 * as worked examples of every verdict rule (Appendix A "Verdicts").
 *
 * A test world is a short script, one command per ';', applied as events:
 *   C <class> <res>[,<res>...]     CLASS with those resourceNames
 *   T <ns>                         TENANT (parent by name)
 *   B <ns> <class>|* <value>|-     BUDGET of the class key or the total key
 *                                  (*); '-' removes it
 *   R <ns> <resource>              RAWKEY declared
 *   X <ns> <resource>              RAWKEY withdrawn
 *   U <ns> <class> <holder> <n>    RESERVE n units by a new VMInstance
 * JSON is written with single quotes and turned into JSON by tq().
 */
#include "tests/model_tests.h"
#include "model/model_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KH100 "h100.gpuclass.cozystack.io/devices"
#define KA10 "a10.gpuclass.cozystack.io/devices"
#define KTOT "gpuclass.cozystack.io/devices"

/* An expected check, in the order of the verdict's fields. */
#define CK(t, k, b, u, g, r, ok)                                             \
	"{'tenant':'" t "','key':'" k "','budget':" #b ",'used':" #u         \
	",'growth':" #g ",'remaining':" #r ",'ok':" #ok "}"

/* Classes a10 (two raw names) and h100; tenants root > acme > {dev, prod}. */
#define CLASSES "C h100 nvidia.com/h100; C a10 nvidia.com/a10g,nvidia.com/a10; "
#define TREE                                                                 \
	"T tenant-root; T tenant-acme; T tenant-acme-dev; T tenant-acme-prod; "
/* The example of DESIGN 3.5: acme uses 7 of 8 h100, dev 2 of 4. */
#define ACME                                                                 \
	CLASSES TREE "B tenant-acme h100 8; B tenant-acme-dev h100 4; "      \
		     "U tenant-acme h100 vm-a 5; U tenant-acme-dev h100 vm-d 2"

static json_t *tq(const char *text)
{
	char *s = strdup(text);
	json_t *v;

	ck_assert_ptr_nonnull(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = tj(s);
	free(s);
	return v;
}

static char *canon(const json_t *v)
{
	char *s = json_canonical(v);

	ck_assert_ptr_nonnull(s);
	return s;
}

static void apply_ok(state_t *st, const struct event *ev, const char *cmd)
{
	struct lg_error err = { 0 };

	ck_assert_msg(state_apply(st, ev, &err) == 0, "world \"%s\": %s", cmd,
		      err.msg);
}

static void world_class(state_t *st, const char *name, const char *res,
			const char *cmd)
{
	json_t *def = json_pack("{s:s, s:[]}", "name", name, "resourceNames");
	char *copy = strdup(res), *save = NULL;
	struct event ev = { .type = EV_CLASS, .cls = name };

	for (char *r = strtok_r(copy, ",", &save); r != NULL;
	     r = strtok_r(NULL, ",", &save))
		json_array_append_new(json_object_get(def, "resourceNames"),
				      json_string(r));
	ev.text = json_canonical(def);
	apply_ok(st, &ev, cmd);
	free((char *)ev.text);
	free(copy);
	json_decref(def);
}

static void world_cmd(state_t *st, const char *cmd)
{
	char op[4] = "", a[128] = "", b[128] = "", c[128] = "", key[200];
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	long long n = 0;
	struct event ev = { .ns = a, .kind = HK_VMINSTANCE };

	ck_assert_int_ge(sscanf(cmd, " %3s %127s %127s %127s %lld", op, a, b,
				c, &n), 2);
	switch (op[0]) {
	case 'C':
		world_class(st, a, b, cmd);
		return;
	case 'T':
		ev.type = EV_TENANT;
		ev.parent = ns_parent(a, parent) ? parent : NULL;
		break;
	case 'B':
		snprintf(key, sizeof(key), "%s%s", strcmp(b, "*") ? b : "",
			 strcmp(b, "*") ? GPU_CLASS_KEY_SUFFIX : GPU_TOTAL_KEY);
		ev = (struct event){ .type = EV_BUDGET, .ns = a, .key = key,
				     .present = strcmp(c, "-") != 0,
				     .value = atoll(c) };
		break;
	case 'R':
	case 'X':
		ev = (struct event){ .type = EV_RAWKEY, .ns = a, .key = b,
				     .present = op[0] == 'R' };
		break;
	case 'U':
		ev = (struct event){ .type = EV_RESERVE, .ns = a, .cls = b,
				     .kind = HK_VMINSTANCE, .name = c,
				     .uid = c, .before = 0, .after = n };
		break;
	default:
		ck_abort_msg("bad world command \"%s\"", cmd);
	}
	apply_ok(st, &ev, cmd);
}

/* A state built from a world script; caller frees with state_free. */
static state_t *world(const char *script)
{
	state_t *st = state_new();
	char *copy = strdup(script), *save = NULL;

	for (char *cmd = strtok_r(copy, ";", &save); cmd != NULL;
	     cmd = strtok_r(NULL, ";", &save))
		if (strspn(cmd, " ") != strlen(cmd))
			world_cmd(st, cmd);
	free(copy);
	return st;
}

/* Compares v with want by canonical bytes. */
static void assert_same(const json_t *v, const json_t *want, const char *what)
{
	char *got = canon(v), *exp = canon(want);

	ck_assert_msg(strcmp(got, exp) == 0, "%s:\n got  %s\n want %s", what,
		      got, exp);
	free(got);
	free(exp);
}

/* Compares v with the single-quoted JSON want. */
static void assert_json(const json_t *v, const char *want, const char *what)
{
	json_t *w = tq(want);

	assert_same(v, w, what);
	json_decref(w);
}

typedef int verdict_fn(const state_t *st, const json_t *req, json_t **verdict,
		       struct lg_error *err);

/* Runs fn on req and compares the verdict, less "request" (which must echo
 * req exactly) and "type", with want; warnings default to []. */
static void assert_verdict(const state_t *st, verdict_fn *fn, const char *type,
			   const json_t *req, const char *want,
			   const char *name)
{
	struct lg_error err = { 0 };
	json_t *v = NULL, *w = tq(want);

	ck_assert_msg(fn(st, req, &v, &err) == 0, "%s: %s", name, err.msg);
	ck_assert_ptr_nonnull(v);
	ck_assert_msg(json_equal(json_object_get(v, "request"), (json_t *)req),
		      "%s: request not echoed", name);
	ck_assert_str_eq(json_string_value(json_object_get(v, "type")), type);
	json_object_del(v, "request");
	json_object_del(v, "type");
	if (json_object_get(w, "warnings") == NULL)
		json_object_set_new(w, "warnings", json_array());
	assert_same(v, w, name);
	json_decref(w);
	json_decref(v);
}
