/* Parts of the ingest suite; each tests/ingest_<part>.c adds its TCases.
 *
 * The harness feeds stream lines through ingest__line into a fresh ledger and
 * reads back what was appended in a compact text form, one event per item,
 * separated by "; ":
 *   TENANT ns | GONE ns | BUDGET ns key=V (or =null) | RAWKEY ns +res/-res
 *   CLASS cls (or -cls) | NODE node cls cap serves|- | TICK | NOTE code
 *   RESERVE|RELEASE Kind ns/name#uid cls before>after
 *   ALLOC|FREE Kind ns/name#uid cls before>after @node
 */
#ifndef GPULEDGER_INGEST_TESTS_H
#define GPULEDGER_INGEST_TESTS_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest/kube_int.h"
#include "tests/ledger_tests.h"

#define INGEST_PART(name) void ingest_tests_##name(Suite *s)

/* Declared weak, so that the suite links whichever parts exist (the live
 * client's parts are written alongside). */
#define INGEST_PART_DECL(name) INGEST_PART(name) __attribute__((weak))

INGEST_PART_DECL(tree);
INGEST_PART_DECL(holders);
INGEST_PART_DECL(classes);
INGEST_PART_DECL(bad);
INGEST_PART_DECL(restart);
INGEST_PART_DECL(kube);
INGEST_PART_DECL(kubeconfig);
INGEST_PART_DECL(exact);
INGEST_PART_DECL(objtab);
INGEST_PART_DECL(pipe);
INGEST_PART_DECL(contract);

static void (*const ingest_parts[])(Suite *) = {
	ingest_tests_tree,	 ingest_tests_holders, ingest_tests_classes,
	ingest_tests_bad,	 ingest_tests_restart, ingest_tests_kube,
	ingest_tests_kubeconfig, ingest_tests_exact,   ingest_tests_objtab,
	ingest_tests_pipe,	 ingest_tests_contract,
};

/* Two classes: h100 (device class h100.nvidia.com, tolerates "gpu") and
 * l40s with two raw names. */
#define CLASSES                                                            \
	"{'classes':[{'name':'h100','deviceClassName':'h100.nvidia.com',"  \
	"'resourceNames':['nvidia.com/H100'],'tolerations':[{'key':'gpu'," \
	"'operator':'Exists','effect':'NoSchedule'}]},{'name':'l40s',"     \
	"'resourceNames':['nvidia.com/L40S','nvidia.com/L40S_SHARED']}]}"

/* Stream lines, single-quoted for C (h_feed turns ' into "). */
#define ADD(obj) "{'type':'ADDED','object':" obj "}"
#define MOD(obj) "{'type':'MODIFIED','object':" obj "}"
#define DEL(obj) "{'type':'DELETED','object':" obj "}"
#define COZY	 "'apiVersion':'apps.cozystack.io/v1alpha1',"
#define META(ns, n, uid) \
	"'metadata':{'namespace':'" ns "','name':'" n "','uid':'" uid "'}"
#define NSOBJ(n) \
	"{'apiVersion':'v1','kind':'Namespace','metadata':{'name':'" n "'}}"
#define VMI(ns, n, uid, gpus) \
	"{" COZY              \
	"'kind':'VMInstance'," META(ns, n, uid) ",'spec':{'gpus':" gpus "}}"
#define KN(ns, n, uid, spec)                                                  \
	"{" COZY "'kind':'KubernetesNodes'," META(ns, n, uid) ",'spec':" spec \
							      "}"
#define TEN(ns, n, rq)                                                         \
	"{" COZY "'kind':'Tenant'," META(ns, n, "t-" n) ",'spec':{"            \
							"'resourceQuotas':" rq \
							"}}"
#define POD(ns, n, uid, spec) \
	"{'apiVersion':'v1','kind':'Pod'," META(ns, n, uid) ",'spec':" spec "}"
#define PODST(ns, n, uid, spec, phase)           \
	"{'apiVersion':'v1','kind':'Pod'," META( \
		ns, n, uid) ",'spec':" spec ",'status':{'phase':'" phase "'}}"
/* A pod with one container requesting res: q on node. */
#define GPOD(ns, n, uid, node, res, q)                                      \
	POD(ns, n, uid,                                                     \
	    "{'nodeName':'" node "','containers':[{'name':'c','resources':" \
	    "{'limits':{'" res "':'" q "'}}}]}")
#define CLAIM(ns, n, uid, reqs, status)                                    \
	"{'apiVersion':'resource.k8s.io/v1','kind':'ResourceClaim'," META( \
		ns, n, uid) ",'spec':{'devices':{'requests':" reqs         \
			    "}},'status':" status "}"
#define EXACT(dc, count)                                                      \
	"{'name':'r','exactly':{'deviceClassName':'" dc "','allocationMode':" \
	"'ExactCount','count':" count "}}"
#define ALLOCATED(node)                                                       \
	"{'allocation':{'nodeSelector':{'nodeSelectorTerms':[{'matchFields':" \
	"[{'key':'metadata.name','operator':'In','values':['" node "']}]}]}}}"
#define NODE(n, alloc, extra)                                                \
	"{'apiVersion':'v1','kind':'Node','metadata':{'name':'" n "'},"      \
	"'spec':{" extra "},'status':{'allocatable':" alloc ",'conditions':" \
	"[{'type':'Ready','status':'True'}]}}"

struct h {
	char *dir;
	ledger_t *lg;
	ingest_t *in;
	uint64_t mark; /* events up to here were already taken */
};

/* Single quotes to double quotes (test literals hold no apostrophes). */
static inline char *h_dq(const char *q)
{
	char *s = strdup(q);

	ck_assert_ptr_nonnull(s);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return s;
}

static inline ledger_t *h_ledger(const char *dir)
{
	struct ledger_opts o = {.dir = dir,
				.create = true,
				.no_sync = true,
				.checkpoint_secs = -1};
	struct lg_error err = {0};
	ledger_t *lg = NULL;

	ck_assert_msg(ledger_open(&lg, &o, &err) == 0, "open: %s", err.msg);
	return lg;
}

/* A table from single-quoted JSON; caller releases. */
static inline void h_table(struct class_table *t, const char *q)
{
	struct lg_error err = {0};
	char *s = h_dq(q);
	json_t *doc = json_loads(s, 0, NULL);

	ck_assert_ptr_nonnull(doc);
	ck_assert_msg(class_table_parse(t, doc, &err) == 0, "table: %s",
		      err.msg);
	json_decref(doc);
	free(s);
}

/* ingest_follow of fo (its classes: CLASSES) into the ledger in dir, opened
 * and closed around it. */
static inline int h_follow(const char *dir, struct ingest_follow_opts fo,
			   struct ingest_follow_result *res,
			   struct lg_error *err)
{
	struct class_table t;
	ledger_t *lg = h_ledger(dir);
	int rc;

	h_table(&t, CLASSES);
	fo.classes = &t;
	rc = ingest_follow(lg, &fo, res, err);
	class_table_release(&t);
	ledger_close(lg);
	return rc;
}

/* A fresh ledger and engine with the classes (NULL: none). The CLASS
 * events of the start are taken already. */
static inline void h_open(struct h *h, const char *classes)
{
	struct class_table t;
	struct ingest_opts o = {0};
	struct lg_error err = {0};

	memset(h, 0, sizeof(*h));
	h->dir = fresh_dir();
	h->lg = h_ledger(h->dir);
	class_table_init(&t);
	if (classes != NULL) {
		h_table(&t, classes);
		o.classes = &t;
	}
	ck_assert_msg(ingest_new(&h->in, h->lg, &o, &err) == 0, "new: %s",
		      err.msg);
	class_table_release(&t);
	ck_assert_int_eq(ingest__flush(h->in, &err), 0);
	h->mark = ledger_last_seq(h->lg);
}

static inline void h_close(struct h *h)
{
	ingest_free(h->in);
	ledger_close(h->lg);
	rm_tree(h->dir);
}

static inline void h_feed(struct h *h, const char *q)
{
	struct lg_error err = {0};
	char *s = h_dq(q);

	ck_assert_msg(ingest__line(h->in, s, strlen(s), &err) == 0,
		      "line %s: %s", s, err.msg);
	free(s);
}

/* Feeds a line as it is (no quote conversion). */
static inline void h_raw(struct h *h, const char *s, size_t len)
{
	struct lg_error err = {0};

	ck_assert_msg(ingest__line(h->in, s, len, &err) == 0, "raw line: %s",
		      err.msg);
}

struct h_buf {
	char *s;
	size_t len, cap;
};

static inline void h_put(struct h_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (b->len + n + 3 > b->cap) {
		b->cap = 2 * (b->len + n + 3);
		b->s = realloc(b->s, b->cap);
		ck_assert_ptr_nonnull(b->s);
	}
	if (b->len > 0) {
		memcpy(b->s + b->len, "; ", 2);
		b->len += 2;
	}
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
}

static inline void h_format(const struct event *ev, char *out, size_t cap)
{
	const char *t = event_type_name(ev->type);

	switch (ev->type) {
	case EV_TENANT:
		snprintf(out, cap, "TENANT %s", ev->ns);
		break;
	case EV_TENANT_GONE:
		snprintf(out, cap, "GONE %s", ev->ns);
		break;
	case EV_BUDGET:
		if (ev->present)
			snprintf(out, cap, "BUDGET %s %s=%lld", ev->ns, ev->key,
				 (long long)ev->value);
		else
			snprintf(out, cap, "BUDGET %s %s=null", ev->ns,
				 ev->key);
		break;
	case EV_RAWKEY:
		snprintf(out, cap, "RAWKEY %s %c%s", ev->ns,
			 ev->present ? '+' : '-', ev->key);
		break;
	case EV_CLASS:
		snprintf(out, cap, "CLASS %s%s", ev->text ? "" : "-", ev->cls);
		break;
	case EV_NODE:
		if (ev->cls[0] == '\0') {
			snprintf(out, cap, "NODE %s %s", ev->node,
				 ev->present ? "exists" : "gone");
			break;
		}
		snprintf(out, cap, "NODE %s %s %lld %s", ev->node, ev->cls,
			 (long long)ev->value, ev->present ? "serves" : "-");
		break;
	case EV_RESERVE:
	case EV_RELEASE:
		snprintf(out, cap, "%s %s %s/%s#%s %s %lld>%lld", t,
			 model__holder_kind_name(ev->kind), ev->ns, ev->name,
			 ev->uid, ev->cls, (long long)ev->before,
			 (long long)ev->after);
		break;
	case EV_ALLOC:
	case EV_FREE:
		snprintf(out, cap, "%s %s %s/%s#%s %s %lld>%lld @%s", t,
			 model__holder_kind_name(ev->kind), ev->ns, ev->name,
			 ev->uid, ev->cls, (long long)ev->before,
			 (long long)ev->after, ev->node);
		break;
	case EV_NOTE:
		snprintf(out, cap, "NOTE %s", ev->key);
		break;
	default:
		snprintf(out, cap, "%s", t);
		break;
	}
}

static inline int h_scan_fn(void *ctx, const struct event *ev,
			    const uint8_t *head)
{
	char line[512];

	(void)head;
	h_format(ev, line, sizeof(line));
	h_put(ctx, line);
	return 0;
}

/* The events of seqs [from, last] in the compact form; caller frees. */
static inline char *h_events(ledger_t *lg, uint64_t from)
{
	struct h_buf b = {0};
	struct lg_error err = {0};

	h_put(&b, "");
	b.len = 0;
	if (from <= ledger_last_seq(lg))
		ck_assert_msg(ledger_scan(lg, from, 0, h_scan_fn, &b, &err) ==
				      0,
			      "scan: %s", err.msg);
	return b.s;
}

/* Flushes and returns the events appended since the last take. */
static inline char *h_take(struct h *h)
{
	struct lg_error err = {0};
	char *s;

	ck_assert_msg(ingest__flush(h->in, &err) == 0, "flush: %s", err.msg);
	s = h_events(h->lg, h->mark + 1);
	h->mark = ledger_last_seq(h->lg);
	return s;
}

static inline void h_expect(struct h *h, const char *want, const char *what)
{
	char *got = h_take(h);

	ck_assert_msg(strcmp(got, want) == 0, "%s:\n got: %s\nwant: %s", what,
		      got, want);
	free(got);
}

/* The replay JSON of one tenant's member, canonical; caller frees. */
static inline char *h_state(struct h *h, const char *ns, const char *member)
{
	json_t *st = state_to_json(ledger_state(h->lg), NULL);
	json_t *ts = json_object_get(st, "tenants"), *v = NULL;
	char *s;

	for (size_t i = 0; i < json_array_size(ts); i++) {
		json_t *t = json_array_get(ts, i);

		if (strcmp(json_string_value(json_object_get(t, "namespace")),
			   ns) == 0)
			v = json_object_get(t, member);
	}
	s = v ? json_canonical(v) : strdup("absent");
	json_decref(st);
	return s;
}

/* One table row: lines fed in order, then the events they must produce.
 * Feeding the last line again must then produce again ("" when NULL):
 * re-observing an object is no change. */
struct h_case {
	const char *name;
	const char *lines[12];
	const char *want;
	const char *again;
};

static inline void h_run_case(const struct h_case *c)
{
	struct h h;
	struct lg_error err = {0};
	size_t n = 0;

	h_open(&h, CLASSES);
	while (n < 12 && c->lines[n] != NULL)
		h_feed(&h, c->lines[n++]);
	h_expect(&h, c->want, c->name);
	if (n > 0) {
		h_feed(&h, c->lines[n - 1]);
		h_expect(&h, c->again ? c->again : "", c->name);
	}
	ck_assert_msg(model__state_check(ledger_state(h.lg), &err) == 0,
		      "%s: state_check: %s", c->name, err.msg);
	h_close(&h);
}

#endif
