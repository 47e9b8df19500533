/*
 * sim: a realistic synthetic Cozystack cluster history, as a recorded
 * stream (DESIGN 6): NDJSON watch events {"type", "object", "time"} of the
 * watched resources of DESIGN 2, yielded one line at a time (sim/sim.h).
 *
 * It is the benchmark's load generator and the end-to-end test's input, so
 * it must be fast (well over 100k lines/s), deterministic (the same options
 * give the same bytes: one seeded PRNG, no clock, no addresses, no hash
 * tables whose order could vary) and bounded in memory (only the objects
 * that are still alive and will be modified or deleted later are kept, in
 * fixed pools sized from the tenant count and a cap).
 *
 * Lines are built by hand in one bounded buffer rather than with jansson:
 * most lines are ~3.4 KB pods, and a jansson tree per line would cost more
 * than everything else together. Every string that is not a constant of
 * this file goes through sb_str, which escapes it, so the output is JSON
 * whatever the names.
 *
 * The history:
 *  1. setup, one millisecond apart: system namespaces, the gpu-classes
 *     ConfigMap, the nodes, then for each tenant its Tenant object (in the
 *     parent namespace, with budgets) and its Namespace;
 *  2. a steady mix, spread evenly over [start, end) with jitter: pods going
 *     Pending -> scheduled -> Running -> Succeeded/Failed -> deleted (a
 *     --gpu-pod-share of them requesting raw GPU resources), VMInstances
 *     with class and raw entries, their covered ResourceClaims and
 *     virt-launcher pods, standalone claims allocated late, KubernetesNodes,
 *     budget changes, node Ready flaps and cordons, and bookmarks.
 * The simulator does not enforce budgets: like racing API servers it lets
 * tenants overcommit, which the ledger must report.
 *
 * --churn adds what makes the ledger's state depend on everything at once
 * (DESIGN 2.3 "Order independence", the metamorphic test of
 * tests/exactness_cli.sh): gpu-classes changes that add and remove raw
 * names (one that only some pods request, nvidia.com/A10-24Q, and one that
 * moves to a new class), device plugins leaving and returning under bound
 * pods, objects recreated under a new uid (with and without the DELETED
 * between), and VMInstance entries changing class under their claim, so
 * that the claim's coverage flips. Without it the bytes are as before.
 */
#include "sim/sim_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Memory is model's family (lg_xcalloc, model/model.h): running out aborts
 * (STYLE "Errors and memory"), call sites do not test for NULL. */

/* Bounds. A line is a few KB; SIM_LINE_MAX (64 KiB) leaves room for any
 * object built here, and overflowing it is a bug of this file, reported as
 * such. */
#define SIM_PENDING_MAX	  (1u << 20) /* the lines of one step */
#define SIM_PODS_MAX	  65536u
#define SIM_VMS_MAX	  16384u
#define SIM_KNS_MAX	  4096u
#define SIM_CLAIMS_MAX	  4096u /* standalone claims */
#define SIM_NODES_MAX	  1024u
#define SIM_MISSES_MAX	  16 /* steps that did nothing before a bookmark */
#define SIM_SCHED_TRIES	  8  /* random nodes tried when scheduling */
#define SIM_ENTRIES_MAX	  3  /* spec.gpus entries of a VMInstance */
#define SIM_UNSCHED_MAX	  3  /* unschedulable tries before a pod is deleted */
#define SIM_UID_LEN	  36
#define SIM_INVALID_EVERY 37 /* one tenant in this many has a bad quota */

#define NS_PER_MS  1000000ll
#define NS_PER_SEC 1000000000ll

/* ---------------------------------------------------------------------- */
/* The GPU classes of the simulated cluster. The gpu-classes ConfigMap is
 * rendered from this table, so nodes, pods and claims agree with it. */

#define N_CLASSES 3

static const struct sim_class {
	const char *name;
	const char *device_class; /* NULL: defaults to name */
	const char *raw[2];	  /* resourceNames */
	unsigned n_raw;
	const char *product;	       /* node label nvidia.com/gpu.product */
	unsigned per_node;	       /* devices on one node */
	const char *toleration_effect; /* NULL: any effect */
} classes[N_CLASSES] = {
	{"h100",
	 "h100.nvidia.com",
	 {"nvidia.com/GH100_H100_SXM5_80GB"},
	 1,
	 "NVIDIA-H100-80GB-HBM3",
	 8,
	 "NoSchedule"},
	{"a100",
	 "a100.nvidia.com",
	 {"nvidia.com/GA100_A100_SXM4_80GB", "nvidia.com/GA100_A100_PCIE_40GB"},
	 2,
	 "NVIDIA-A100-SXM4-80GB",
	 8,
	 "NoSchedule"},
	{"l40s", NULL, {"nvidia.com/AD102GL_L40S"}, 1, "NVIDIA-L40S", 4, NULL},
};

static const char *class_device(int c)
{
	return classes[c].device_class ? classes[c].device_class
				       : classes[c].name;
}

/* ---------------------------------------------------------------------- */
/* Deterministic randomness: xoshiro256** seeded through splitmix64. */

struct rng {
	uint64_t s[4];
};

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

/* A number in [0, n); 0 when n is 0. The modulo bias is irrelevant here. */
static uint32_t rng_below(struct rng *r, uint32_t n)
{
	return n ? (uint32_t)(rng_next(r) % n) : 0;
}

static bool rng_permille(struct rng *r, uint32_t p)
{
	return rng_below(r, 1000) < p;
}

/* ---------------------------------------------------------------------- */
/* A bounded string builder: appending past cap marks it overflowed and
 * appends nothing more. */

struct sb {
	char *buf;
	size_t len, cap;
	bool over;
};

static inline void sb_mem(struct sb *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		b->over = true;
		return;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

/* Only for string literals: the "" around s makes anything else a compile
 * error, where sizeof would silently measure a pointer. */
#define SB_LIT(b, s) sb_mem((b), "" s "", sizeof(s) - 1)

static inline void sb_chr(struct sb *b, char c)
{
	sb_mem(b, &c, 1);
}

/* s as a quoted JSON string. */
static void sb_str(struct sb *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	sb_chr(b, '"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		sb_mem(b, run, (size_t)(s - run));
		if (c == '"' || c == '\\')
			sb_mem(b, (char[]){'\\', (char)c}, 2);
		else
			sb_mem(b, esc, sizeof(esc));
		run = s + 1;
	}
	sb_mem(b, run, (size_t)(s - run));
	sb_chr(b, '"');
}

static void sb_u64(struct sb *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	sb_mem(b, tmp + i, sizeof(tmp) - i);
}

/* v as a quoted decimal string ("8"), the way quantities are stored. */
static void sb_qu64(struct sb *b, uint64_t v)
{
	sb_chr(b, '"');
	sb_u64(b, v);
	sb_chr(b, '"');
}

static void sb_hex(struct sb *b, uint64_t v, int digits)
{
	static const char hex[] = "0123456789abcdef";
	char tmp[16];

	for (int i = digits - 1; i >= 0; i--, v >>= 4)
		tmp[i] = hex[v & 15];
	sb_mem(b, tmp, (size_t)digits);
}

/* 64 hex digits drawn from seed (container IDs, image digests). */
static void sb_hex64(struct sb *b, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		sb_hex(b, splitmix(&seed), 16);
}

/* ---------------------------------------------------------------------- */
/* Time as RFC 3339 UTC: model's text (time_format_ns, which keeps the
 * text of the last second, so that this is cheap on every line). */

/* Quoted "YYYY-MM-DDTHH:MM:SSZ", or with nine fraction digits when nanos.
 * Times lie in years 1970..2199 (sim_new checks the span), where
 * time_format_ns writes exactly 30 characters. */
static void sb_time(struct sb *b, int64_t t_ns, bool nanos)
{
	char out[40];
	size_t n = 1 + time_format_ns(t_ns, out + 1, sizeof(out) - 1);

	out[0] = '"';
	if (!nanos) {
		n = 1 + 19;
		out[n++] = 'Z';
	}
	out[n++] = '"';
	sb_mem(b, out, n);
}

/* ---------------------------------------------------------------------- */
/* The simulated objects that stay alive. */

/* A namespace: the first few are system namespaces, the rest tenants in
 * creation order (parents before children). */
struct sim_ns {
	char name[DNS1123_LABEL_MAX + 1];
	char own[16]; /* the tenant's own name (Tenant metadata.name) */
	char uid[SIM_UID_LEN + 1], tenant_uid[SIM_UID_LEN + 1];
	uint32_t parent; /* index; tenant-root's is its own */
	uint8_t depth;	 /* 0: tenant-root */
	bool tenant;
	uint16_t quota_version; /* bumped by each budget change */
	int64_t created_ns;
};

struct sim_node {
	char name[32];
	char uid[SIM_UID_LEN + 1];
	int8_t cls; /* -1: a CPU worker */
	uint8_t raw;
	uint16_t gpus;
	int32_t alloc; /* devices allocated on it by this simulator */
	bool ready, cordoned, dedicated;
	bool plugin_gone; /* --churn: allocatable lost its GPU resource */
	uint32_t index;
	int64_t created_ns, changed_ns;
};

enum pod_phase {
	PH_NEW,
	PH_SCHEDULED,
	PH_RUNNING,
	PH_SUCCEEDED,
	PH_FAILED
};

enum pod_flag {
	PF_LIMITS_ONLY = 1, /* GPU in limits only: the API server defaults */
	PF_SIDECAR = 2,	    /* a restartPolicy: Always init container */
	PF_INIT = 4,	    /* an init container */
	PF_LAUNCHER = 8,    /* a virt-launcher pod of a VMInstance */
	PF_EXTRA = 16	    /* --churn: requests CHURN_RAW instead */
};

/* --churn: a raw name no class of the base table has, added to l40s by
 * table variant bit 0; bit 1 drops a100's second raw name; bit 2 moves
 * l40s's raw name to a class of its own. */
#define CHURN_RAW      "nvidia.com/A10-24Q"
#define CHURN_VARIANTS 8u
#define CHURN_PERMILLE 60 /* of the steady steps */

struct sim_pod {
	char name[DNS1123_LABEL_MAX + 1];
	char uid[SIM_UID_LEN + 1];
	uint8_t gen_len; /* length of generateName within name */
	uint8_t app, phase, tries, flags;
	int8_t cls; /* -1: no GPU */
	uint8_t raw, gpus, init_gpus;
	uint32_t ns;
	int32_t node; /* -1: not scheduled */
	int32_t vm;   /* launcher: the VM slot */
	uint64_t seed;
	int64_t created_ns, started_ns, finished_ns;
};

struct vm_entry {
	int8_t cls;  /* -1: a raw entry {"name": raw resource} */
	int8_t rcls; /* a raw entry's class */
	uint8_t raw, count;
	uint8_t form; /* count as 0: a number, 1: absent (count 1), 2: string */
	int32_t claim;
};

struct sim_vm {
	char name[DNS1123_LABEL_MAX + 1];
	char uid[SIM_UID_LEN + 1];
	uint32_t ns;
	uint8_t n;
	struct vm_entry e[SIM_ENTRIES_MAX];
	int32_t launcher;
	int64_t created_ns;
};

struct sim_claim {
	char name[DNS1123_LABEL_MAX + 1];
	char uid[SIM_UID_LEN + 1];
	uint32_t ns;
	int8_t cls;
	uint8_t count;
	int32_t node; /* -1: not allocated */
	int32_t vm;   /* -1: standalone */
	int64_t created_ns, alloc_ns;
};

struct sim_kn {
	char name[DNS1123_LABEL_MAX + 1];
	char uid[SIM_UID_LEN + 1];
	uint32_t ns;
	int8_t cls;
	uint8_t count;
	int16_t max_replicas; /* -1: absent (10) */
	int64_t created_ns;
};

/* Fixed slots with a free stack and a dense list of live slots, so that a
 * random live object is one draw and removal is O(1). */
struct pool {
	uint32_t cap, n_live, n_free;
	uint32_t *live, *pos, *free_slots;
};

struct claim_set {
	struct sim_claim *items;
	struct pool pool;
};

/* ---------------------------------------------------------------------- */

struct sim {
	struct rng rng;
	uint64_t seed;
	struct sb line, pend; /* the line being built; lines not yet yielded */
	size_t pend_off;      /* of the next line to yield in pend */
	uint32_t setup_at;    /* the next item of the setup */
	int misses;	      /* steady steps in a row that did nothing */
	uint64_t yielded;
	uint64_t lines, max_lines, rv, pod_counter, obj_counter;
	int64_t start_ns, end_ns, now_ns, setup_end_ns;
	uint64_t steady_from;
	bool steady, done;
	uint32_t gpu_share_ppm;
	bool all_gpu, invalid;
	bool churn;
	uint32_t table_variant; /* --churn: bits as CHURN_RAW says */

	struct sim_ns *ns;
	uint32_t n_ns, n_sys;
	struct sim_node *nodes;
	uint32_t n_nodes, n_workers;
	uint32_t by_class[N_CLASSES][SIM_NODES_MAX];
	uint32_t n_by_class[N_CLASSES];

	struct sim_pod *pods;
	struct pool pod_pool;
	uint32_t pod_target, n_launchers;
	struct sim_vm *vms;
	struct pool vm_pool;
	uint32_t vm_target;
	struct claim_set vm_claims, sa_claims; /* covered, standalone */
	uint32_t claim_target;
	struct sim_kn *kns;
	struct pool kn_pool;
	uint32_t kn_target;
};

/* ---------------------------------------------------------------------- */
/* Pools. */

static void pool_init(struct pool *p, uint32_t cap)
{
	p->cap = cap;
	p->n_live = 0;
	p->n_free = cap;
	p->live = lg_xcalloc(cap, sizeof(uint32_t));
	p->pos = lg_xcalloc(cap, sizeof(uint32_t));
	p->free_slots = lg_xcalloc(cap, sizeof(uint32_t));
	/* Slot 0 is taken first, so that the order of slots is the order of
	 * creation at the start: easier to read in a debugger. */
	for (uint32_t i = 0; i < cap; i++)
		p->free_slots[i] = cap - 1 - i;
}

static void pool_release(struct pool *p)
{
	free(p->live);
	free(p->pos);
	free(p->free_slots);
}

/* A free slot, now live; -1 when the pool is full. */
static int32_t pool_take(struct pool *p)
{
	uint32_t slot;

	if (p->n_free == 0)
		return -1;
	slot = p->free_slots[--p->n_free];
	p->pos[slot] = p->n_live;
	p->live[p->n_live++] = slot;
	return (int32_t)slot;
}

static void pool_put(struct pool *p, uint32_t slot)
{
	uint32_t at = p->pos[slot], last = p->live[--p->n_live];

	p->live[at] = last;
	p->pos[last] = at;
	p->free_slots[p->n_free++] = slot;
}

/* A random live slot; -1 when none. */
static int32_t pool_pick(struct pool *p, struct rng *r)
{
	if (p->n_live == 0)
		return -1;
	return (int32_t)p->live[rng_below(r, p->n_live)];
}

/* ---------------------------------------------------------------------- */
/* Lines. Each watch event is begun with its type, gets its object from a
 * builder, and is ended with its time, which appends it to the lines that
 * sim_next yields next; once opts.events lines are made, everything else
 * is dropped (s->done) and the caller unwinds. */

/* The time of the next line: during setup a millisecond after the previous
 * one; afterwards spread evenly over what is left of the span, jittered,
 * never earlier than the previous line and never past the end. */
static int64_t next_time(struct sim *s)
{
	int64_t t, span = s->end_ns - s->setup_end_ns;
	uint64_t k, n;

	if (!s->steady) {
		t = s->start_ns + (int64_t)s->lines * NS_PER_MS;
	} else {
		k = s->lines - s->steady_from;
		n = s->max_lines - s->steady_from;
		t = s->setup_end_ns + (span / (int64_t)n) * (int64_t)k +
		    (span % (int64_t)n) * (int64_t)k / (int64_t)n;
		t += (int64_t)(rng_next(&s->rng) %
			       (uint64_t)(span / (int64_t)n + 1));
	}
	if (t < s->now_ns)
		t = s->now_ns;
	return t > s->end_ns ? s->end_ns : t;
}

/* Starts a line of watch type type; false when the stream is complete. */
static bool line_begin(struct sim *s, const char *type)
{
	if (s->done)
		return false;
	s->now_ns = next_time(s);
	s->rv++;
	s->line.len = 0;
	SB_LIT(&s->line, "{\"type\":\"");
	sb_mem(&s->line, type, strlen(type));
	SB_LIT(&s->line, "\",\"object\":");
	return true;
}

static void line_end(struct sim *s)
{
	struct sb *b = &s->line;

	SB_LIT(b, ",\"time\":");
	sb_time(b, s->now_ns, true);
	SB_LIT(b, "}\n");
	if (b->over) {
		s->done = true;
		return;
	}
	sb_mem(&s->pend, b->buf, b->len);
	if (s->pend.over) {
		s->done = true;
		return;
	}
	if (++s->lines >= s->max_lines)
		s->done = true;
}

/* A version-4-looking UID that is a function of x (owners of pods are
 * not simulated objects, but their UIDs must stay the same). */
static void uid_from(uint64_t x, char *out)
{
	struct sb b = {out, 0, SIM_UID_LEN, false};
	uint64_t a = splitmix(&x), c = splitmix(&x);

	sb_hex(&b, a >> 32, 8);
	sb_chr(&b, '-');
	sb_hex(&b, (a >> 16) & 0xffff, 4);
	sb_chr(&b, '-');
	sb_hex(&b, 0x4000 | (a & 0x0fff), 4);
	sb_chr(&b, '-');
	sb_hex(&b, 0x8000 | (c >> 50), 4);
	sb_chr(&b, '-');
	sb_hex(&b, c & 0xffffffffffffull, 12);
	out[SIM_UID_LEN] = '\0';
}

static void make_uid(struct sim *s, char *out)
{
	uid_from(rng_next(&s->rng), out);
}

/* Lowercase base 36 of v into out (16 bytes; 2^64 has 13 digits). */
static void base36(uint64_t v, char *out)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	char tmp[16];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = digits[v % 36];
		v /= 36;
	} while (v != 0);
	memcpy(out, tmp + i, sizeof(tmp) - i);
	out[sizeof(tmp) - i] = '\0';
}

/* The common metadata fields after "metadata":{ — name, namespace (ns may
 * be NULL for cluster objects), uid, resourceVersion, creationTimestamp,
 * and deletionTimestamp when the object is being deleted. */
static void meta_common(struct sim *s, const char *name, const char *ns,
			const char *uid, int64_t created_ns, bool deleting)
{
	struct sb *b = &s->line;

	SB_LIT(b, "\"name\":");
	sb_str(b, name);
	if (ns != NULL) {
		SB_LIT(b, ",\"namespace\":");
		sb_str(b, ns);
	}
	SB_LIT(b, ",\"uid\":");
	sb_str(b, uid);
	SB_LIT(b, ",\"resourceVersion\":");
	sb_qu64(b, s->rv);
	SB_LIT(b, ",\"creationTimestamp\":");
	sb_time(b, created_ns, false);
	if (deleting) {
		SB_LIT(b, ",\"deletionTimestamp\":");
		sb_time(b, s->now_ns, false);
		SB_LIT(b, ",\"deletionGracePeriodSeconds\":0");
	}
}

/* A BOOKMARK: only a resourceVersion, as the API server sends it. */
static int emit_bookmark(struct sim *s)
{
	if (!line_begin(s, "BOOKMARK"))
		return 0;
	SB_LIT(&s->line, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
			 "\"metadata\":{\"resourceVersion\":");
	sb_qu64(&s->line, s->rv);
	SB_LIT(&s->line, "}}");
	line_end(s);
	return 1;
}

/* ---------------------------------------------------------------------- */
/* Namespaces and Tenants. */

static void emit_namespace(struct sim *s, uint32_t i)
{
	const struct sim_ns *n = &s->ns[i];
	struct sb *b = &s->line;

	if (!line_begin(s, "ADDED"))
		return;
	SB_LIT(b, "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\","
		  "\"metadata\":{");
	meta_common(s, n->name, NULL, n->uid, n->created_ns, false);
	SB_LIT(b, ",\"labels\":{\"kubernetes.io/metadata.name\":");
	sb_str(b, n->name);
	/* Cozystack labels a tenant namespace with every tenant it lies in,
	 * itself included; the ledger cross-checks them with the name rule.
	 * The walk is bounded by the depth (at most SIM_DEPTH_MAX + 1). */
	for (uint32_t a = i; n->tenant; a = s->ns[a].parent) {
		SB_LIT(b, ",\"tenant.cozystack.io/");
		sb_mem(b, s->ns[a].name, strlen(s->ns[a].name));
		SB_LIT(b, "\":\"\"");
		if (s->ns[a].depth == 0)
			break;
	}
	SB_LIT(b, "}");
	if (n->tenant) {
		SB_LIT(b, ",\"annotations\":{\"namespace.cozystack.io/host\":"
			  "\"");
		sb_mem(b, n->own, strlen(n->own));
		SB_LIT(b, ".example.org\",\"namespace.cozystack.io/etcd\":"
			  "\"tenant-root\",\"namespace.cozystack.io/ingress\":"
			  "\"tenant-root\",\"namespace.cozystack.io/"
			  "monitoring\":\"tenant-root\"}");
	}
	SB_LIT(b, "},\"spec\":{\"finalizers\":[\"kubernetes\"]},"
		  "\"status\":{\"phase\":\"Active\"}}");
	line_end(s);
}

/* One "key": "value" quota entry; keys are constants and class data of
 * this file, so they need no escaping. */
static void quota_kv(struct sb *b, const char *prefix, const char *key,
		     const char *suffix, uint64_t v)
{
	SB_LIT(b, ",\"");
	sb_mem(b, prefix, strlen(prefix));
	sb_mem(b, key, strlen(key));
	sb_mem(b, suffix, strlen(suffix));
	SB_LIT(b, "\":");
	sb_qu64(b, v);
}

static uint64_t gpu_capacity(const struct sim *s)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < s->n_nodes; i++)
		sum += s->nodes[i].gpus;
	return sum;
}

/* Budgets of a tenant below tenant-root: a mix of per-class keys (some
 * tight), total keys, raw keys that block a class, and nothing at all.
 * Classes in skip are left out (an invalid entry uses their key). */
static void quotas_gpu(struct sim *s, struct rng *r, uint32_t depth,
		       unsigned skip)
{
	static const uint64_t sizes[] = {4, 8, 8, 16, 16, 32};
	struct sb *b = &s->line;
	uint32_t pick = rng_below(r, 100), c = rng_below(r, N_CLASSES);
	bool per_class =
		depth == 1 ? pick < 30 || (pick >= 50 && pick < 60) : pick < 30;
	bool total =
		depth == 1 ? pick >= 30 && pick < 60 : pick >= 30 && pick < 40;

	for (uint32_t k = 0; per_class && k < 1u + (depth == 1 && pick < 10);
	     k++, c = (c + 1) % N_CLASSES) {
		uint64_t v = rng_permille(r, 250) ? 1 + rng_below(r, 2)
						  : sizes[rng_below(r, 6)];

		if ((skip & (1u << c)) == 0)
			quota_kv(b, "", classes[c].name, GPU_CLASS_KEY_SUFFIX,
				 depth == 1 ? v : 1 + v / 4);
	}
	if (total)
		quota_kv(b, "", GPU_TOTAL_KEY, "",
			 depth == 1 ? 4 + rng_below(r, 45)
				    : 2 + rng_below(r, 15));
	if (depth == 1 && pick >= 60 && pick < 68)
		quota_kv(b, rng_permille(r, 500) ? "requests." : "",
			 classes[c].raw[0], "", 2 + rng_below(r, 7));
}

/* The deliberately invalid entries (each a NOTE, binding nothing): two bad
 * keys and two bad values. Returns the class whose key it took, as a mask
 * for quotas_gpu. */
static unsigned quota_invalid_mask(uint32_t variant)
{
	return variant == 2 ? 1u << 0 : variant == 3 ? 1u << 1 : 0;
}

static void quota_invalid(struct sb *b, uint32_t variant)
{
	static const char *const bad[4] = {
		",\"requests.h100.gpuclass.cozystack.io/devices\":\"2\"",
		",\"gpuclass.cozystack.io/memory\":\"80Gi\"",
		",\"h100.gpuclass.cozystack.io/devices\":\"1500m\"",
		",\"a100.gpuclass.cozystack.io/devices\":\"-1\"",
	};

	sb_mem(b, bad[variant], strlen(bad[variant]));
}

/* spec.resourceQuotas of tenant i, a function of (seed, i, version) so
 * that a budget change rewrites it from scratch without state. */
static void tenant_quotas(struct sim *s, uint32_t i)
{
	const struct sim_ns *n = &s->ns[i];
	struct sb *b = &s->line;
	struct rng r;
	uint32_t t = i - s->n_sys;
	int bad = s->invalid && t % SIM_INVALID_EVERY == 5
			  ? (int)(t / SIM_INVALID_EVERY % 4)
			  : -1;

	rng_seed(&r, s->seed ^ ((uint64_t)i << 24) ^ n->quota_version);
	SB_LIT(b, "{\"cpu\":");
	sb_qu64(b, 4 + 4 * rng_below(&r, 16));
	SB_LIT(b, ",\"memory\":\"");
	sb_u64(b, 8 + 8 * rng_below(&r, 32));
	SB_LIT(b, "Gi\",\"storage\":\"");
	sb_u64(b, 100 + 50 * rng_below(&r, 20));
	SB_LIT(b, "Gi\"");
	/* The platform's total may promise more than the cluster has (KN
	 * pools reserve maxReplicas they rarely run), so it leaves room. */
	if (n->depth == 0)
		quota_kv(b, "", GPU_TOTAL_KEY, "",
			 gpu_capacity(s) * (200 + rng_below(&r, 200)) / 100);
	else
		quotas_gpu(s, &r, n->depth,
			   bad >= 0 ? quota_invalid_mask((uint32_t)bad) : 0);
	if (bad >= 0)
		quota_invalid(b, (uint32_t)bad);
	SB_LIT(b, "}");
}

static void emit_tenant(struct sim *s, uint32_t i, const char *type)
{
	const struct sim_ns *n = &s->ns[i];
	struct sb *b = &s->line;

	if (!line_begin(s, type))
		return;
	SB_LIT(b, "{\"apiVersion\":\"apps.cozystack.io/v1alpha1\","
		  "\"kind\":\"Tenant\",\"metadata\":{");
	meta_common(s, n->own, s->ns[n->parent].name, n->tenant_uid,
		    n->created_ns, false);
	SB_LIT(b, ",\"generation\":");
	sb_u64(b, 1u + n->quota_version);
	SB_LIT(b, ",\"labels\":{\"app.kubernetes.io/managed-by\":\"cozystack\","
		  "\"cozystack.io/ui\":\"true\"}},\"spec\":{\"host\":\"");
	sb_mem(b, n->own, strlen(n->own));
	SB_LIT(b, ".example.org\",\"etcd\":false,\"monitoring\":");
	if (n->depth <= 1)
		SB_LIT(b, "true,\"ingress\":true");
	else
		SB_LIT(b, "false,\"ingress\":false");
	SB_LIT(b, ",\"seaweedfs\":false,\"isolated\":true,"
		  "\"resourceQuotas\":");
	tenant_quotas(s, i);
	SB_LIT(b, "},\"status\":{\"ready\":true,\"version\":");
	sb_u64(b, 1u + n->quota_version);
	SB_LIT(b, "}}");
	line_end(s);
}

/* ---------------------------------------------------------------------- */
/* The class table and the nodes. */

/* The raw names class c lists under table variant v (--churn). */
static unsigned class_raw_names(int c, uint32_t v, const char **out)
{
	const struct sim_class *k = &classes[c];
	unsigned n = 0;

	for (unsigned j = 0; j < k->n_raw; j++) {
		if (strcmp(k->name, "a100") == 0 && j == 1 && (v & 2))
			continue;
		if (strcmp(k->name, "l40s") == 0 && (v & 4))
			continue;
		out[n++] = k->raw[j];
	}
	if (strcmp(k->name, "l40s") == 0 && (v & 1))
		out[n++] = CHURN_RAW;
	return n;
}

/* {"classes": [...]} as DESIGN 2 writes it, into b (not quoted); variant
 * 0 is the base table. */
static void class_table_text(struct sb *b, uint32_t v)
{
	SB_LIT(b, "{\"classes\":[");
	if (v & 4)
		SB_LIT(b, "{\"name\":\"l40g\",\"resourceNames\":[\""
			  "nvidia.com/AD102GL_L40S\"]},");
	for (int c = 0; c < N_CLASSES; c++) {
		const struct sim_class *k = &classes[c];
		const char *raw[4];
		unsigned n_raw = class_raw_names(c, v, raw);

		if (c)
			sb_chr(b, ',');
		SB_LIT(b, "{\"name\":");
		sb_str(b, k->name);
		if (k->device_class != NULL) {
			SB_LIT(b, ",\"deviceClassName\":");
			sb_str(b, k->device_class);
		}
		SB_LIT(b, ",\"resourceNames\":[");
		for (unsigned j = 0; j < n_raw; j++) {
			if (j)
				sb_chr(b, ',');
			sb_str(b, raw[j]);
		}
		SB_LIT(b, "],\"tolerations\":[{\"key\":\"nvidia.com/gpu\","
			  "\"operator\":\"Exists\"");
		if (k->toleration_effect != NULL) {
			SB_LIT(b, ",\"effect\":");
			sb_str(b, k->toleration_effect);
		}
		SB_LIT(b, "}]}");
	}
	SB_LIT(b, "]}");
}

static void emit_configmap(struct sim *s, const char *type)
{
	char text[2048];
	struct sb t = {text, 0, sizeof(text) - 1, false};
	struct sb *b = &s->line;
	char uid[SIM_UID_LEN + 1];

	class_table_text(&t, s->table_variant);
	text[t.len] = '\0';
	/* The ConfigMap keeps its uid: one derived from the seed alone. */
	uid_from(s->seed ^ 0x636d, uid);
	if (!s->churn)
		make_uid(s, uid);
	if (t.over || !line_begin(s, type)) {
		s->line.over |= t.over;
		return;
	}
	SB_LIT(b, "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
		  "\"metadata\":{");
	meta_common(s, "gpu-classes", "cozy-system", uid, s->now_ns, false);
	SB_LIT(b, ",\"labels\":{\"app.kubernetes.io/managed-by\":"
		  "\"cozystack\"}},\"data\":{\"classes.json\":");
	sb_str(b, text);
	SB_LIT(b, "}}");
	line_end(s);
}

static void node_labels(struct sim *s, const struct sim_node *n)
{
	struct sb *b = &s->line;

	SB_LIT(b, ",\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\","
		  "\"beta.kubernetes.io/os\":\"linux\",\"kubernetes.io/arch\":"
		  "\"amd64\",\"kubernetes.io/hostname\":");
	sb_str(b, n->name);
	SB_LIT(b, ",\"kubernetes.io/os\":\"linux\"");
	if (n->cls >= 0) {
		SB_LIT(b, ",\"nvidia.com/gpu.present\":\"true\","
			  "\"nvidia.com/gpu.product\":");
		sb_str(b, classes[n->cls].product);
		SB_LIT(b, ",\"nvidia.com/gpu.count\":");
		sb_qu64(b, n->gpus);
	}
	SB_LIT(b, "},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\","
		  "\"volumes.kubernetes.io/controller-managed-attach-detach\":"
		  "\"true\"}");
}

/* spec.taints: the GPU taint every class tolerates, a dedicated taint no
 * class tolerates (the node serves nothing), and the node controller's
 * taints for a cordon or a NotReady node (which never count). */
static void node_taints(struct sim *s, const struct sim_node *n)
{
	struct sb *b = &s->line;
	bool first = true;

	if (n->cls < 0 && !n->dedicated && !n->cordoned && n->ready)
		return;
	SB_LIT(b, ",\"taints\":[");
#define TAINT(text)                     \
	do {                            \
		if (!first)             \
			sb_chr(b, ','); \
		SB_LIT(b, text);        \
		first = false;          \
	} while (0)
	if (n->cls >= 0)
		TAINT("{\"key\":\"nvidia.com/gpu\",\"value\":\"present\","
		      "\"effect\":\"NoSchedule\"}");
	if (n->dedicated)
		TAINT("{\"key\":\"dedicated\",\"value\":\"ml-research\","
		      "\"effect\":\"NoSchedule\"}");
	if (n->cordoned)
		TAINT("{\"key\":\"node.kubernetes.io/unschedulable\","
		      "\"effect\":\"NoSchedule\"}");
	if (!n->ready)
		TAINT("{\"key\":\"node.kubernetes.io/not-ready\","
		      "\"effect\":\"NoExecute\"},{\"key\":\"node.kubernetes."
		      "io/not-ready\",\"effect\":\"NoSchedule\"}");
#undef TAINT
	sb_chr(b, ']');
}

/* status.capacity or allocatable of a node. */
static void node_resources(struct sim *s, const struct sim_node *n,
			   bool allocatable)
{
	struct sb *b = &s->line;

	SB_LIT(b, "{\"cpu\":");
	if (allocatable)
		SB_LIT(b, "\"127500m\",\"ephemeral-storage\":\"1724034913\","
			  "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\","
			  "\"memory\":\"1055748Mi\"");
	else
		SB_LIT(b, "\"128\",\"ephemeral-storage\":\"1870819Mi\","
			  "\"hugepages-1Gi\":\"0\",\"hugepages-2Mi\":\"0\","
			  "\"memory\":\"1056768Mi\"");
	if (n->cls >= 0 && !n->plugin_gone) {
		SB_LIT(b, ",\"");
		sb_mem(b, classes[n->cls].raw[n->raw],
		       strlen(classes[n->cls].raw[n->raw]));
		SB_LIT(b, "\":");
		sb_qu64(b, n->gpus);
	}
	SB_LIT(b, ",\"pods\":\"110\"}");
}

static void node_conditions(struct sim *s, const struct sim_node *n)
{
	static const char *const quiet[3] = {"MemoryPressure", "DiskPressure",
					     "PIDPressure"};
	struct sb *b = &s->line;

	SB_LIT(b, ",\"conditions\":[");
	for (int i = 0; i < 3; i++) {
		SB_LIT(b, "{\"type\":\"");
		sb_mem(b, quiet[i], strlen(quiet[i]));
		SB_LIT(b, "\",\"status\":\"False\",\"lastHeartbeatTime\":");
		sb_time(b, s->now_ns, false);
		SB_LIT(b, ",\"lastTransitionTime\":");
		sb_time(b, n->created_ns, false);
		SB_LIT(b, ",\"reason\":\"KubeletHasSufficientResources\"},");
	}
	SB_LIT(b, "{\"type\":\"Ready\",\"status\":");
	if (n->ready)
		SB_LIT(b, "\"True\",\"reason\":\"KubeletReady\",\"message\":"
			  "\"kubelet is posting ready status\"");
	else
		SB_LIT(b,
		       "\"Unknown\",\"reason\":\"NodeStatusUnknown\","
		       "\"message\":\"Kubelet stopped posting node status.\"");
	SB_LIT(b, ",\"lastHeartbeatTime\":");
	sb_time(b, s->now_ns, false);
	SB_LIT(b, ",\"lastTransitionTime\":");
	sb_time(b, n->changed_ns, false);
	SB_LIT(b, "}]");
}

static void emit_node(struct sim *s, const struct sim_node *n, const char *type)
{
	struct sb *b = &s->line;

	if (!line_begin(s, type))
		return;
	SB_LIT(b, "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{");
	meta_common(s, n->name, NULL, n->uid, n->created_ns, false);
	node_labels(s, n);
	SB_LIT(b, "},\"spec\":{\"podCIDR\":\"10.244.");
	sb_u64(b, n->index % 256);
	SB_LIT(b, ".0/24\",\"providerID\":\"metal://");
	sb_mem(b, n->name, strlen(n->name));
	sb_chr(b, '"');
	if (n->cordoned)
		SB_LIT(b, ",\"unschedulable\":true");
	node_taints(s, n);
	SB_LIT(b, "},\"status\":{\"capacity\":");
	node_resources(s, n, false);
	SB_LIT(b, ",\"allocatable\":");
	node_resources(s, n, true);
	node_conditions(s, n);
	SB_LIT(b, ",\"addresses\":[{\"type\":\"InternalIP\",\"address\":"
		  "\"10.0.");
	sb_u64(b, n->index / 250);
	sb_chr(b, '.');
	sb_u64(b, n->index % 250 + 2);
	SB_LIT(b, "\"},{\"type\":\"Hostname\",\"address\":");
	sb_str(b, n->name);
	SB_LIT(b, "}],\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":"
		  "10250}},\"nodeInfo\":{\"kernelVersion\":\"6.6.58-talos\","
		  "\"osImage\":\"Talos (v1.8.3)\",\"containerRuntimeVersion\":"
		  "\"containerd://2.0.0\",\"kubeletVersion\":\"v1.31.2\","
		  "\"kubeProxyVersion\":\"\",\"operatingSystem\":\"linux\","
		  "\"architecture\":\"amd64\"}}}");
	line_end(s);
}

/* Serving as DESIGN 2.4 decides it for the nodes built here. */
static bool node_serves_class(const struct sim_node *n, int cls)
{
	return n->cls == cls && n->ready && !n->cordoned && !n->dedicated;
}

/* ---------------------------------------------------------------------- */
/* Pods. Most are ordinary workloads without GPUs: their JSON is what a
 * real cluster sends (~3.4 KB), because finding out cheaply that a pod
 * holds no GPU is what the ingest benchmark measures. */

enum owner {
	OWN_RS,
	OWN_JOB,
	OWN_VMI
};

static const struct app {
	const char *name, *image;
	uint8_t owner;
	bool gpu;     /* a GPU workload (--gpu-pod-share picks these) */
	bool metrics; /* a second container exporting metrics */
	unsigned port;
	const char *cpu_req, *mem_req, *cpu_lim, *mem_lim;
	const char *extra_res; /* more resources, in limits and requests */
	const char *env;       /* JSON array elements (may be "") */
} apps[] = {
	{"web", "ghcr.io/example/web-frontend:1.14.2", OWN_RS, false, true,
	 8080, "250m", "256Mi", "1", "512Mi", "",
	 "{\"name\":\"NODE_ENV\",\"value\":\"production\"},{\"name\":"
	 "\"API_URL\",\"value\":\"http://api:8080\"},{\"name\":\"SESSION_"
	 "SECRET\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"web-session\","
	 "\"key\":\"secret\"}}},"},
	{"api", "ghcr.io/example/api-server:2.31.0", OWN_RS, false, false, 8080,
	 "500m", "512Mi", "2", "1Gi", "",
	 "{\"name\":\"DATABASE_URL\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
	 "\"api-db-app\",\"key\":\"uri\"}}},{\"name\":\"REDIS_ADDR\",\"value\":"
	 "\"redis-master:6379\"},{\"name\":\"LOG_FORMAT\",\"value\":\"json\"}"
	 ","},
	{"worker", "ghcr.io/example/queue-worker:2.31.0", OWN_RS, false, false,
	 9090, "1", "1Gi", "2", "2Gi", "",
	 "{\"name\":\"QUEUE_URL\",\"value\":\"amqp://rabbitmq:5672\"},"
	 "{\"name\":\"CONCURRENCY\",\"value\":\"8\"},"},
	{"nginx", "docker.io/library/nginx:1.27.2-alpine", OWN_RS, false, false,
	 80, "100m", "64Mi", "500m", "128Mi", "", ""},
	{"report", "ghcr.io/example/report-cron:0.9.4", OWN_JOB, false, false,
	 8080, "200m", "256Mi", "1", "1Gi", "",
	 "{\"name\":\"S3_BUCKET\",\"value\":\"reports\"},{\"name\":\"AWS_"
	 "ACCESS_KEY_ID\",\"valueFrom\":{\"secretKeyRef\":{\"name\":\"s3\","
	 "\"key\":\"accessKey\"}}},"},
	{"etl", "ghcr.io/example/etl-batch:5.2.0", OWN_JOB, false, false, 8080,
	 "2", "4Gi", "4", "8Gi", "",
	 "{\"name\":\"SPARK_MASTER\",\"value\":\"local[4]\"},"},
	{"inference", "docker.io/vllm/vllm-openai:v0.6.3", OWN_RS, true, true,
	 8000, "4", "32Gi", "8", "64Gi", "",
	 "{\"name\":\"MODEL\",\"value\":\"meta-llama/Llama-3.1-8B-Instruct\"},"
	 "{\"name\":\"HF_TOKEN\",\"valueFrom\":{\"secretKeyRef\":{\"name\":"
	 "\"hf\",\"key\":\"token\"}}},"},
	{"trainer", "nvcr.io/nvidia/pytorch:24.09-py3", OWN_JOB, true, false,
	 29500, "8", "64Gi", "16", "128Gi", "",
	 "{\"name\":\"NCCL_DEBUG\",\"value\":\"WARN\"},{\"name\":\"EPOCHS\","
	 "\"value\":\"3\"},"},
	{"compute", "quay.io/kubevirt/virt-launcher:v1.3.1", OWN_VMI, true,
	 false, 0, "200m", "8486Mi", "2", "8486Mi",
	 ",\"devices.kubevirt.io/kvm\":\"1\",\"devices.kubevirt.io/tun\":\"1\","
	 "\"devices.kubevirt.io/vhost-net\":\"1\"",
	 ""},
};

#define N_APPS	     (sizeof(apps) / sizeof(apps[0]))
#define APP_LAUNCHER (N_APPS - 1)
#define N_PLAIN_APPS 6 /* apps[0..6) hold no GPU */
#define N_GPU_APPS   2 /* apps[6..8) are GPU workloads */

/* The alphabet of Kubernetes' generated name suffixes. */
static const char suffix_chars[] = "bcdfghjklmnpqrstvwxz2456789";
#define SUFFIX_BASE 27u

/* A generated-name suffix unique for every pod counter value: c maps
 * bijectively onto [0, 27^k) (the multiplier is prime to 27), five
 * characters for the first 27^5 pods and seven after them. */
static void pod_suffix(uint64_t c, uint64_t salt, char *out)
{
	uint64_t space = 14348907ull; /* 27^5 */
	int k = 5;

	if (c >= space) {
		space *= SUFFIX_BASE * SUFFIX_BASE;
		k = 7;
	}
	c = (c * 7777777ull + salt % space) % space;
	for (int i = k - 1; i >= 0; i--, c /= SUFFIX_BASE)
		out[i] = suffix_chars[c % SUFFIX_BASE];
	out[k] = '\0';
}

/* The pod-template-hash of app in namespace ns: stable, ten characters. */
static void template_hash(const struct sim *s, uint32_t ns, unsigned app,
			  char *out)
{
	uint64_t x = s->seed ^ ((uint64_t)ns << 8) ^ app;

	x = splitmix(&x);
	for (int i = 0; i < 10; i++, x /= SUFFIX_BASE)
		out[i] = suffix_chars[x % SUFFIX_BASE];
	out[10] = '\0';
}

/* Names a new pod: "<app>-<hash>-<sfx>" (ReplicaSet), "<app>-<minute>-<sfx>"
 * (Job) or "virt-launcher-<vmi>-<sfx>", and records the generateName. */
static void pod_name(struct sim *s, struct sim_pod *p)
{
	const struct app *a = &apps[p->app];
	char gen[DNS1123_LABEL_MAX + 1], vmi[DNS1123_LABEL_MAX + 1], sfx[8],
		mid[16];
	size_t n;

	if (a->owner == OWN_VMI) {
		vmi_name(s->vms[p->vm].name, vmi);
		n = (size_t)snprintf(gen, sizeof(gen), "virt-launcher-%.*s", 40,
				     vmi);
	} else {
		if (a->owner == OWN_RS)
			template_hash(s, p->ns, p->app, mid);
		else
			snprintf(mid, sizeof(mid), "%08llu",
				 (unsigned long long)(s->now_ns /
						      (60 * NS_PER_SEC) %
						      100000000));
		n = (size_t)snprintf(gen, sizeof(gen), "%s-%s", a->name, mid);
	}
	while (n > 0 && gen[n - 1] == '-')
		gen[--n] = '\0';
	pod_suffix(s->pod_counter++, s->seed, sfx);
	snprintf(p->name, sizeof(p->name), "%.55s-%s", gen, sfx);
	p->gen_len = (uint8_t)(n + 1);
}

/* metadata.labels of a pod, as its controller sets them. */
static void pod_labels(struct sb *b, const struct sim_pod *p, const char *owner,
		       const char *owner_uid)
{
	const struct app *a = &apps[p->app];

	if (a->owner == OWN_RS) {
		SB_LIT(b, ",\"labels\":{\"app.kubernetes.io/name\":");
		sb_str(b, a->name);
		SB_LIT(b, ",\"app.kubernetes.io/instance\":");
		sb_str(b, a->name);
		SB_LIT(b, ",\"pod-template-hash\":\"");
		/* The hash is the part of the name after "<app>-". */
		sb_mem(b, p->name + strlen(a->name) + 1, 10);
		SB_LIT(b, "\"}");
	} else if (a->owner == OWN_JOB) {
		SB_LIT(b,
		       ",\"labels\":{\"batch.kubernetes.io/controller-uid\":");
		sb_str(b, owner_uid);
		SB_LIT(b, ",\"batch.kubernetes.io/job-name\":");
		sb_str(b, owner);
		sb_chr(b, '}');
	} else {
		SB_LIT(b, ",\"labels\":{\"kubevirt.io\":\"virt-launcher\","
			  "\"kubevirt.io/created-by\":");
		sb_str(b, owner_uid);
		SB_LIT(b, ",\"vm.kubevirt.io/name\":");
		sb_str(b, owner);
		sb_chr(b, '}');
	}
}

/* Labels and the controller's owner reference: a ReplicaSet or Job named
 * by the generateName, or the VirtualMachineInstance of a launcher. */
static void pod_labels_owner(struct sim *s, const struct sim_pod *p)
{
	static const char *const owner_api[] = {"apps/v1", "batch/v1",
						"kubevirt.io/v1"};
	static const char *const owner_kind[] = {"ReplicaSet", "Job",
						 "VirtualMachineInstance"};
	const struct app *a = &apps[p->app];
	struct sb *b = &s->line;
	char owner_uid[SIM_UID_LEN + 1], owner[DNS1123_LABEL_MAX + 1];

	uid_from(p->seed ^ 0x6f776e6572ull, owner_uid);
	if (a->owner == OWN_VMI) {
		vmi_name(s->vms[p->vm].name, owner);
	} else {
		memcpy(owner, p->name, p->gen_len - 1u);
		owner[p->gen_len - 1u] = '\0';
	}
	pod_labels(b, p, owner, owner_uid);
	SB_LIT(b, ",\"ownerReferences\":[{\"apiVersion\":\"");
	sb_mem(b, owner_api[a->owner], strlen(owner_api[a->owner]));
	SB_LIT(b, "\",\"kind\":\"");
	sb_mem(b, owner_kind[a->owner], strlen(owner_kind[a->owner]));
	SB_LIT(b, "\",\"name\":");
	sb_str(b, owner);
	SB_LIT(b, ",\"uid\":");
	sb_str(b, owner_uid);
	SB_LIT(b, ",\"controller\":true,\"blockOwnerDeletion\":true}]");
}

static void pod_metadata(struct sim *s, const struct sim_pod *p, bool deleting)
{
	struct sb *b = &s->line;

	SB_LIT(b, "\"metadata\":{");
	meta_common(s, p->name, s->ns[p->ns].name, p->uid, p->created_ns,
		    deleting);
	SB_LIT(b, ",\"generateName\":\"");
	sb_mem(b, p->name, p->gen_len);
	sb_chr(b, '"');
	pod_labels_owner(s, p);
	sb_chr(b, '}');
}

/* One resource list of a container: cpu and memory, the app's extra
 * resources, and n devices of GPU resource raw (none when raw is NULL). */
static void res_list(struct sb *b, const char *cpu, const char *mem,
		     const char *extra, const char *raw, unsigned n)
{
	SB_LIT(b, "{\"cpu\":");
	sb_str(b, cpu);
	sb_mem(b, extra, strlen(extra));
	SB_LIT(b, ",\"memory\":");
	sb_str(b, mem);
	if (raw != NULL) {
		SB_LIT(b, ",\"");
		sb_mem(b, raw, strlen(raw));
		SB_LIT(b, "\":");
		sb_qu64(b, n);
	}
	sb_chr(b, '}');
}

static const char *pod_raw(const struct sim_pod *p)
{
	if (p->cls < 0)
		return NULL;
	return p->flags & PF_EXTRA ? CHURN_RAW : classes[p->cls].raw[p->raw];
}

/* "resources" of the main container. A GPU in limits only is what the API
 * server's defaulting turns into a request; the ledger must do the same. */
static void main_resources(struct sim *s, const struct sim_pod *p)
{
	const struct app *a = &apps[p->app];
	struct sb *b = &s->line;

	SB_LIT(b, ",\"resources\":{\"limits\":");
	res_list(b, a->cpu_lim, a->mem_lim, a->extra_res, pod_raw(p), p->gpus);
	SB_LIT(b, ",\"requests\":");
	res_list(b, a->cpu_req, a->mem_req, a->extra_res,
		 p->flags & PF_LIMITS_ONLY ? NULL : pod_raw(p), p->gpus);
	sb_chr(b, '}');
}

static void api_access_mount(struct sb *b, const struct sim_pod *p)
{
	SB_LIT(b, "{\"name\":\"kube-api-access-");
	sb_mem(b, p->uid + 30, 5);
	SB_LIT(b, "\",\"readOnly\":true,\"mountPath\":\"/var/run/secrets/"
		  "kubernetes.io/serviceaccount\"}");
}

#define CONTAINER_TAIL                                               \
	"\"terminationMessagePath\":\"/dev/termination-log\","       \
	"\"terminationMessagePolicy\":\"File\",\"imagePullPolicy\":" \
	"\"IfNotPresent\""

static void main_container(struct sim *s, const struct sim_pod *p)
{
	const struct app *a = &apps[p->app];
	struct sb *b = &s->line;

	SB_LIT(b, "{\"name\":");
	sb_str(b, a->name);
	SB_LIT(b, ",\"image\":");
	sb_str(b, a->image);
	if (a->port != 0) {
		SB_LIT(b, ",\"ports\":[{\"name\":\"http\",\"containerPort\":");
		sb_u64(b, a->port);
		SB_LIT(b, ",\"protocol\":\"TCP\"}]");
	}
	SB_LIT(b, ",\"env\":[");
	sb_mem(b, a->env, strlen(a->env));
	SB_LIT(b, "{\"name\":\"POD_NAME\",\"valueFrom\":{\"fieldRef\":{"
		  "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.name\"}}},"
		  "{\"name\":\"POD_NAMESPACE\",\"valueFrom\":{\"fieldRef\":{"
		  "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}"
		  "}]");
	main_resources(s, p);
	SB_LIT(b, ",\"volumeMounts\":[{\"name\":\"config\",\"readOnly\":true,"
		  "\"mountPath\":\"/etc/app\"},");
	api_access_mount(b, p);
	sb_chr(b, ']');
	if (a->port != 0)
		SB_LIT(b, ",\"livenessProbe\":{\"httpGet\":{\"path\":"
			  "\"/healthz\",\"port\":\"http\",\"scheme\":\"HTTP\"},"
			  "\"initialDelaySeconds\":10,\"timeoutSeconds\":1,"
			  "\"periodSeconds\":10,\"successThreshold\":1,"
			  "\"failureThreshold\":3}");
	SB_LIT(b, "," CONTAINER_TAIL "}");
}

static void metrics_container(struct sim *s, const struct sim_pod *p)
{
	struct sb *b = &s->line;

	SB_LIT(b,
	       ",{\"name\":\"metrics\",\"image\":\"quay.io/prometheus/"
	       "statsd-exporter:v0.27.1\",\"args\":[\"--statsd.listen-udp=:"
	       "9125\",\"--web.listen-address=:9102\"],\"ports\":[{\"name\":"
	       "\"metrics\",\"containerPort\":9102,\"protocol\":\"TCP\"}],"
	       "\"resources\":{\"limits\":{\"cpu\":\"100m\",\"memory\":"
	       "\"64Mi\"},\"requests\":{\"cpu\":\"10m\",\"memory\":\"32Mi\"}},"
	       "\"volumeMounts\":[");
	api_access_mount(b, p);
	SB_LIT(b, "]," CONTAINER_TAIL "}");
}

/* GPU pods may have a sidecar (an init container with restartPolicy
 * Always) and an init container that may itself want GPUs: both change
 * the effective request by the scheduler's arithmetic (DESIGN 5.2). */
static void init_containers(struct sim *s, const struct sim_pod *p)
{
	struct sb *b = &s->line;
	bool first = true;

	if ((p->flags & (PF_SIDECAR | PF_INIT)) == 0)
		return;
	SB_LIT(b, ",\"initContainers\":[");
	if (p->flags & PF_INIT) {
		SB_LIT(b, "{\"name\":\"fetch-model\",\"image\":\"docker.io/"
			  "amazon/aws-cli:2.17.0\",\"args\":[\"s3\",\"sync\","
			  "\"s3://models/current\",\"/models\"],\"resources\":"
			  "{\"limits\":");
		res_list(b, "1", "2Gi", "", p->init_gpus ? pod_raw(p) : NULL,
			 p->init_gpus);
		SB_LIT(b, ",\"requests\":");
		res_list(b, "500m", "1Gi", "", p->init_gpus ? pod_raw(p) : NULL,
			 p->init_gpus);
		SB_LIT(b, "}," CONTAINER_TAIL "}");
		first = false;
	}
	if (p->flags & PF_SIDECAR) {
		if (!first)
			sb_chr(b, ',');
		SB_LIT(b,
		       "{\"name\":\"log-shipper\",\"image\":\"cr.fluentbit.io/"
		       "fluent/fluent-bit:3.1.9\",\"restartPolicy\":"
		       "\"Always\",\"resources\":{\"limits\":{\"cpu\":"
		       "\"200m\",\"memory\":\"128Mi\"},\"requests\":{\"cpu\":"
		       "\"50m\",\"memory\":\"64Mi\"}}," CONTAINER_TAIL "}");
	}
	sb_chr(b, ']');
}

static void pod_volumes(struct sim *s, const struct sim_pod *p)
{
	struct sb *b = &s->line;

	SB_LIT(b, "\"volumes\":[{\"name\":\"config\",\"configMap\":{\"name\":"
		  "\"");
	sb_mem(b, apps[p->app].name, strlen(apps[p->app].name));
	SB_LIT(b, "-config\",\"defaultMode\":420}},{\"name\":"
		  "\"kube-api-access-");
	sb_mem(b, p->uid + 30, 5);
	SB_LIT(b, "\",\"projected\":{\"sources\":[{\"serviceAccountToken\":{"
		  "\"expirationSeconds\":3607,\"path\":\"token\"}},{"
		  "\"configMap\":{\"name\":\"kube-root-ca.crt\",\"items\":[{"
		  "\"key\":\"ca.crt\",\"path\":\"ca.crt\"}]}},{\"downwardAPI\":"
		  "{\"items\":[{\"path\":\"namespace\",\"fieldRef\":{"
		  "\"apiVersion\":\"v1\",\"fieldPath\":\"metadata.namespace\"}}"
		  "]}}],\"defaultMode\":420}}]");
}

static void pod_spec(struct sim *s, const struct sim_pod *p)
{
	const struct app *a = &apps[p->app];
	struct sb *b = &s->line;

	SB_LIT(b, ",\"spec\":{");
	pod_volumes(s, p);
	init_containers(s, p);
	SB_LIT(b, ",\"containers\":[");
	main_container(s, p);
	if (a->metrics)
		metrics_container(s, p);
	SB_LIT(b, "],\"restartPolicy\":");
	if (a->owner == OWN_JOB)
		SB_LIT(b, "\"Never\"");
	else
		SB_LIT(b, "\"Always\"");
	SB_LIT(b, ",\"terminationGracePeriodSeconds\":30,\"dnsPolicy\":"
		  "\"ClusterFirst\",\"serviceAccountName\":\"default\","
		  "\"serviceAccount\":\"default\"");
	if (p->node >= 0) {
		SB_LIT(b, ",\"nodeName\":");
		sb_str(b, s->nodes[p->node].name);
	}
	SB_LIT(b, ",\"securityContext\":{},\"schedulerName\":"
		  "\"default-scheduler\",\"tolerations\":[");
	if (p->cls >= 0)
		SB_LIT(b, "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
			  "\"effect\":\"NoSchedule\"},");
	SB_LIT(b, "{\"key\":\"node.kubernetes.io/not-ready\",\"operator\":"
		  "\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":"
		  "300},{\"key\":\"node.kubernetes.io/unreachable\","
		  "\"operator\":\"Exists\",\"effect\":\"NoExecute\","
		  "\"tolerationSeconds\":300}],\"priority\":0,"
		  "\"enableServiceLinks\":true,\"preemptionPolicy\":"
		  "\"PreemptLowerPriority\"}");
}

/* One entry of status.conditions. */
static void pod_cond(struct sb *b, const char *type, bool ok, int64_t t_ns,
		     const char *reason)
{
	SB_LIT(b, "{\"type\":\"");
	sb_mem(b, type, strlen(type));
	if (ok)
		SB_LIT(b, "\",\"status\":\"True\"");
	else
		SB_LIT(b, "\",\"status\":\"False\"");
	SB_LIT(b, ",\"lastTransitionTime\":");
	sb_time(b, t_ns, false);
	if (reason != NULL) {
		SB_LIT(b, ",\"reason\":\"");
		sb_mem(b, reason, strlen(reason));
		sb_chr(b, '"');
	}
	sb_chr(b, '}');
}

static void pod_conditions(struct sim *s, const struct sim_pod *p)
{
	struct sb *b = &s->line;
	bool run = p->phase == PH_RUNNING, done = p->phase >= PH_SUCCEEDED;
	int64_t t = done ? p->finished_ns : run ? p->started_ns : s->now_ns;
	const char *why = done	? "PodCompleted"
			  : run ? NULL
				: "ContainersNotReady";

	SB_LIT(b, ",\"conditions\":[");
	pod_cond(b, "PodReadyToStartContainers", run, t, NULL);
	sb_chr(b, ',');
	pod_cond(b, "Initialized", true, p->created_ns, NULL);
	sb_chr(b, ',');
	pod_cond(b, "Ready", run, t, why);
	sb_chr(b, ',');
	pod_cond(b, "ContainersReady", run, t, why);
	sb_chr(b, ',');
	pod_cond(b, "PodScheduled", true, p->created_ns, NULL);
	sb_chr(b, ']');
}

/* "state" of a container, from the pod's phase; k numbers the container
 * within the pod (its container ID). */
static void container_state(struct sb *b, const struct sim_pod *p, unsigned k)
{
	SB_LIT(b, ",\"state\":{");
	if (p->phase == PH_SCHEDULED) {
		SB_LIT(b, "\"waiting\":{\"reason\":\"ContainerCreating\"}}");
		return;
	}
	if (p->phase == PH_RUNNING) {
		SB_LIT(b, "\"running\":{\"startedAt\":");
		sb_time(b, p->started_ns, false);
		SB_LIT(b, "}}");
		return;
	}
	SB_LIT(b, "\"terminated\":{\"exitCode\":");
	if (p->phase == PH_SUCCEEDED)
		SB_LIT(b, "0,\"reason\":\"Completed\"");
	else
		SB_LIT(b, "1,\"reason\":\"Error\"");
	SB_LIT(b, ",\"startedAt\":");
	sb_time(b, p->started_ns, false);
	SB_LIT(b, ",\"finishedAt\":");
	sb_time(b, p->finished_ns, false);
	SB_LIT(b, ",\"containerID\":\"containerd://");
	sb_hex64(b, p->seed + k);
	SB_LIT(b, "\"}}");
}

/* FNV-1a: a stable digest seed for an image name. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* One containerStatuses entry, in the state the pod's phase implies. */
static void container_status(struct sim *s, const struct sim_pod *p,
			     const char *name, const char *image, unsigned k)
{
	struct sb *b = &s->line;
	const char *colon = strrchr(image, ':');
	bool run = p->phase == PH_RUNNING, created = p->phase != PH_SCHEDULED;

	SB_LIT(b, "{\"name\":");
	sb_str(b, name);
	container_state(b, p, k);
	SB_LIT(b, ",\"lastState\":{},\"ready\":");
	if (run)
		SB_LIT(b, "true");
	else
		SB_LIT(b, "false");
	SB_LIT(b, ",\"restartCount\":0,\"image\":");
	sb_str(b, image);
	SB_LIT(b, ",\"imageID\":\"");
	if (created) {
		sb_mem(b, image,
		       colon ? (size_t)(colon - image) : strlen(image));
		SB_LIT(b, "@sha256:");
		sb_hex64(b, fnv1a(image));
	}
	SB_LIT(b, "\",\"started\":");
	if (run)
		SB_LIT(b, "true");
	else
		SB_LIT(b, "false");
	if (created) {
		SB_LIT(b, ",\"containerID\":\"containerd://");
		sb_hex64(b, p->seed + k);
		sb_chr(b, '"');
	}
	sb_chr(b, '}');
}

/* hostIP, podIP and startTime of a pod on a node. */
static void pod_addresses(struct sim *s, const struct sim_pod *p)
{
	const struct sim_node *n = &s->nodes[p->node];
	struct sb *b = &s->line;
	char ip[32];
	int len = snprintf(ip, sizeof(ip), "\"10.0.%u.%u\"", n->index / 250,
			   n->index % 250 + 2);

	SB_LIT(b, ",\"hostIP\":");
	sb_mem(b, ip, (size_t)len);
	if (p->phase != PH_SCHEDULED) {
		len = snprintf(ip, sizeof(ip), "\"10.244.%u.%u\"",
			       n->index % 256,
			       (unsigned)(p->seed >> 8) % 250 + 2);
		SB_LIT(b, ",\"podIP\":");
		sb_mem(b, ip, (size_t)len);
	}
	SB_LIT(b, ",\"startTime\":");
	sb_time(b, p->created_ns, false);
}

/* A Pending pod nobody could schedule yet says why. */
static void pod_unschedulable(struct sim *s, const struct sim_pod *p)
{
	struct sb *b = &s->line;

	SB_LIT(b, ",\"conditions\":[{\"type\":\"PodScheduled\",\"status\":"
		  "\"False\",\"lastProbeTime\":null,\"lastTransitionTime\":");
	sb_time(b, s->now_ns, false);
	SB_LIT(b, ",\"reason\":\"Unschedulable\",\"message\":\"0/");
	sb_u64(b, s->n_nodes);
	SB_LIT(b, " nodes are available: ");
	sb_u64(b, s->n_nodes);
	SB_LIT(b, " Insufficient ");
	sb_mem(b, pod_raw(p), strlen(pod_raw(p)));
	SB_LIT(b, ". preemption: not eligible due to preemptionPolicy=Never."
		  "\"}]");
}

static void pod_status(struct sim *s, const struct sim_pod *p)
{
	static const char *const phases[] = {"Pending", "Pending", "Running",
					     "Succeeded", "Failed"};
	const struct app *a = &apps[p->app];
	struct sb *b = &s->line;

	SB_LIT(b, ",\"status\":{\"phase\":\"");
	sb_mem(b, phases[p->phase], strlen(phases[p->phase]));
	sb_chr(b, '"');
	if (p->phase == PH_NEW && p->tries > 0)
		pod_unschedulable(s, p);
	if (p->phase != PH_NEW) {
		pod_conditions(s, p);
		pod_addresses(s, p);
		SB_LIT(b, ",\"containerStatuses\":[");
		container_status(s, p, a->name, a->image, 0);
		if (a->metrics) {
			sb_chr(b, ',');
			container_status(s, p, "metrics",
					 "quay.io/prometheus/statsd-exporter:"
					 "v0.27.1",
					 1);
		}
		sb_chr(b, ']');
	}
	SB_LIT(b, ",\"qosClass\":\"Burstable\"}");
}

static void emit_pod_object(struct sim *s, const struct sim_pod *p,
			    bool deleting)
{
	SB_LIT(&s->line, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",");
	pod_metadata(s, p, deleting);
	pod_spec(s, p);
	pod_status(s, p);
	sb_chr(&s->line, '}');
}

/* ---------------------------------------------------------------------- */
/* Pod lifecycles: ADDED Pending -> scheduled -> Running -> Succeeded or
 * Failed -> DELETED; ReplicaSet pods are often deleted while Running, GPU
 * pods that find no free device say Unschedulable a few times and are
 * deleted, and virt-launcher pods run until their VMInstance goes. */

/* A tenant namespace, skewed towards the first ones (older tenants, near
 * the root) so that some subtrees are busy and others quiet. */
static uint32_t pick_tenant(struct sim *s)
{
	uint32_t n = s->n_ns - s->n_sys, a = rng_below(&s->rng, n),
		 c = rng_below(&s->rng, n);

	return s->n_sys + (a < c ? a : c);
}

/* A node for need devices of class cls (-1: a CPU worker) that serves
 * the class and has them free; -1 when a few random tries find none. */
static int32_t find_node(struct sim *s, int cls, unsigned need)
{
	if (cls < 0)
		return (int32_t)rng_below(&s->rng, s->n_workers);
	for (int i = 0; i < SIM_SCHED_TRIES && s->n_by_class[cls] > 0; i++) {
		uint32_t k = s->by_class[cls][rng_below(&s->rng,
							s->n_by_class[cls])];
		const struct sim_node *n = &s->nodes[k];

		if (node_serves_class(n, cls) &&
		    n->alloc + (int32_t)need <= n->gpus)
			return (int32_t)k;
	}
	return -1;
}

/* Devices a pod holds on its node while it is scheduled and not done. */
static void pod_release_node(struct sim *s, const struct sim_pod *p)
{
	if (p->cls >= 0 && p->node >= 0 &&
	    (p->phase == PH_SCHEDULED || p->phase == PH_RUNNING))
		s->nodes[p->node].alloc -= p->gpus;
}

static void pod_delete(struct sim *s, uint32_t slot)
{
	struct sim_pod *p = &s->pods[slot];

	if (line_begin(s, "DELETED")) {
		emit_pod_object(s, p, true);
		line_end(s);
	}
	pod_release_node(s, p);
	if (p->flags & PF_LAUNCHER) {
		s->n_launchers--;
		s->vms[p->vm].launcher = -1;
	}
	pool_put(&s->pod_pool, slot);
}

/* A GPU workload: a few devices of one raw resource, sometimes in limits
 * only, sometimes with a sidecar or a GPU-using init container. */
static void gpu_pod_init(struct sim *s, struct sim_pod *p)
{
	static const uint8_t counts[] = {1, 1, 1, 2, 4, 8};
	struct rng *r = &s->rng;

	p->ns = pick_tenant(s);
	p->app = (uint8_t)(N_PLAIN_APPS + rng_below(r, N_GPU_APPS));
	p->cls = (int8_t)rng_below(r, N_CLASSES);
	p->raw = (uint8_t)rng_below(r, classes[p->cls].n_raw);
	p->gpus = counts[rng_below(r, sizeof(counts))];
	if (p->gpus > classes[p->cls].per_node)
		p->gpus = (uint8_t)classes[p->cls].per_node;
	p->flags |= rng_permille(r, 400) ? PF_LIMITS_ONLY : 0;
	p->flags |= rng_permille(r, 250) ? PF_SIDECAR : 0;
	p->flags |= rng_permille(r, 200) ? PF_INIT : 0;
	if ((p->flags & PF_INIT) && rng_permille(r, 500))
		p->init_gpus = (uint8_t)(1 + rng_below(r, p->gpus));
	if (s->churn && rng_permille(r, 250))
		p->flags |= PF_EXTRA;
}

/* Starts a pod in a free slot (ADDED, Pending). vm >= 0 makes it the
 * virt-launcher of that VMInstance, requesting one device of class cls,
 * resource raw. Returns the lines written. */
static int pod_create(struct sim *s, int32_t vm, int cls, unsigned raw)
{
	int32_t slot = pool_take(&s->pod_pool);
	struct sim_pod *p;

	if (slot < 0)
		return 0;
	p = &s->pods[slot];
	memset(p, 0, sizeof(*p));
	p->node = -1;
	p->vm = vm;
	p->cls = -1;
	p->seed = rng_next(&s->rng);
	make_uid(s, p->uid);
	if (vm >= 0) {
		p->ns = s->vms[vm].ns;
		p->app = APP_LAUNCHER;
		p->flags = PF_LAUNCHER;
		p->cls = (int8_t)cls;
		p->raw = (uint8_t)raw;
		p->gpus = 1;
		s->vms[vm].launcher = slot;
		s->n_launchers++;
	} else if (s->all_gpu ||
		   rng_below(&s->rng, 1000000) < s->gpu_share_ppm) {
		gpu_pod_init(s, p);
	} else {
		p->ns = rng_permille(&s->rng, 800)
				? pick_tenant(s)
				: rng_below(&s->rng, s->n_sys);
		p->app = (uint8_t)rng_below(&s->rng, N_PLAIN_APPS);
	}
	if (!line_begin(s, "ADDED"))
		return 0;
	p->created_ns = s->now_ns;
	pod_name(s, p);
	emit_pod_object(s, p, false);
	line_end(s);
	return 1;
}

static int pod_schedule(struct sim *s, uint32_t slot)
{
	struct sim_pod *p = &s->pods[slot];
	int32_t node = find_node(s, p->cls, p->gpus);

	if (node < 0 && p->tries + 1 >= SIM_UNSCHED_MAX) {
		pod_delete(s, slot);
		return 1;
	}
	if (!line_begin(s, "MODIFIED"))
		return 0;
	if (node >= 0) {
		p->node = node;
		p->phase = PH_SCHEDULED;
		if (p->cls >= 0)
			s->nodes[node].alloc += p->gpus;
	} else {
		p->tries++;
	}
	emit_pod_object(s, p, false);
	line_end(s);
	return 1;
}

static int pod_run(struct sim *s, struct sim_pod *p)
{
	if (!line_begin(s, "MODIFIED"))
		return 0;
	p->phase = PH_RUNNING;
	p->started_ns = s->now_ns;
	emit_pod_object(s, p, false);
	line_end(s);
	return 1;
}

static int pod_finish(struct sim *s, uint32_t slot)
{
	struct sim_pod *p = &s->pods[slot];

	if (p->flags & PF_LAUNCHER)
		return 0;
	if (apps[p->app].owner == OWN_RS && rng_permille(&s->rng, 400)) {
		pod_delete(s, slot);
		return 1;
	}
	if (!line_begin(s, "MODIFIED"))
		return 0;
	pod_release_node(s, p);
	p->phase = rng_permille(&s->rng, 850) ? PH_SUCCEEDED : PH_FAILED;
	p->finished_ns = s->now_ns;
	emit_pod_object(s, p, false);
	line_end(s);
	return 1;
}

static int pod_advance(struct sim *s, uint32_t slot)
{
	switch (s->pods[slot].phase) {
	case PH_NEW:
		return pod_schedule(s, slot);
	case PH_SCHEDULED:
		return pod_run(s, &s->pods[slot]);
	case PH_RUNNING:
		return pod_finish(s, slot);
	default:
		pod_delete(s, slot);
		return 1;
	}
}

static int step_pod(struct sim *s)
{
	uint32_t normal = s->pod_pool.n_live - s->n_launchers;
	int32_t slot;

	if (normal < s->pod_target &&
	    (normal < s->pod_target / 2 || rng_permille(&s->rng, 250)))
		return pod_create(s, -1, 0, 0);
	slot = pool_pick(&s->pod_pool, &s->rng);
	return slot < 0 ? 0 : pod_advance(s, (uint32_t)slot);
}

/* ---------------------------------------------------------------------- */
/* ResourceClaims: covered ones named after a VMInstance's class entry
 * (DESIGN 5.5), standalone ones that reserve on their own; both are
 * created unallocated and allocated later on a node with free devices. */

static void claim_allocation(struct sim *s, const struct sim_claim *c)
{
	struct sb *b = &s->line;
	const char *node = s->nodes[c->node].name;

	SB_LIT(b, "\"allocation\":{\"devices\":{\"results\":[");
	for (unsigned k = 0; k < c->count; k++) {
		if (k)
			sb_chr(b, ',');
		SB_LIT(b, "{\"request\":\"gpu\",\"driver\":\"gpu.nvidia.com\","
			  "\"pool\":");
		sb_str(b, node);
		SB_LIT(b, ",\"device\":\"gpu-");
		sb_u64(b, k);
		SB_LIT(b, "\"}");
	}
	SB_LIT(b, "]},\"nodeSelector\":{\"nodeSelectorTerms\":[{"
		  "\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":"
		  "\"In\",\"values\":[");
	sb_str(b, node);
	SB_LIT(b, "]}]}]},\"allocationTimestamp\":");
	sb_time(b, c->alloc_ns, false);
	sb_chr(b, '}');
}

static void emit_claim(struct sim *s, const struct sim_claim *c,
		       const char *type, bool deleting)
{
	struct sb *b = &s->line;

	if (!line_begin(s, type))
		return;
	SB_LIT(b, "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":"
		  "\"ResourceClaim\",\"metadata\":{");
	meta_common(s, c->name, s->ns[c->ns].name, c->uid, c->created_ns,
		    deleting);
	if (c->vm >= 0) {
		SB_LIT(b, ",\"ownerReferences\":[{\"apiVersion\":"
			  "\"apps.cozystack.io/v1alpha1\",\"kind\":"
			  "\"VMInstance\",\"name\":");
		sb_str(b, s->vms[c->vm].name);
		SB_LIT(b, ",\"uid\":");
		sb_str(b, s->vms[c->vm].uid);
		SB_LIT(b, ",\"controller\":true,\"blockOwnerDeletion\":true}]");
	}
	SB_LIT(b, "},\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\","
		  "\"exactly\":{\"deviceClassName\":");
	sb_str(b, class_device(c->cls));
	SB_LIT(b, ",\"allocationMode\":\"ExactCount\",\"count\":");
	sb_u64(b, c->count);
	SB_LIT(b, "}}]}},\"status\":{");
	if (c->node >= 0)
		claim_allocation(s, c);
	SB_LIT(b, "}}");
	line_end(s);
}

/* A new unallocated claim in set; its slot, or -1 when the set is full. */
static int32_t claim_create(struct sim *s, struct claim_set *set,
			    const char *name, uint32_t ns, int32_t vm, int cls,
			    unsigned count)
{
	int32_t slot = pool_take(&set->pool);
	struct sim_claim *c;

	if (slot < 0)
		return -1;
	c = &set->items[slot];
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", name);
	make_uid(s, c->uid);
	c->ns = ns;
	c->vm = vm;
	c->cls = (int8_t)cls;
	c->count = (uint8_t)count;
	c->node = -1;
	c->created_ns = s->now_ns;
	emit_claim(s, c, "ADDED", false);
	return slot;
}

/* Object times such as creationTimestamp are taken from the line before:
 * they have second precision and are never later than the event. */
static bool claim_allocate(struct sim *s, struct sim_claim *c)
{
	int32_t node = find_node(s, c->cls, c->count);

	if (node < 0 || s->done)
		return false;
	c->node = node;
	c->alloc_ns = s->now_ns;
	s->nodes[node].alloc += c->count;
	emit_claim(s, c, "MODIFIED", false);
	return true;
}

static void claim_delete(struct sim *s, struct claim_set *set, uint32_t slot)
{
	struct sim_claim *c = &set->items[slot];

	emit_claim(s, c, "DELETED", true);
	if (c->node >= 0)
		s->nodes[c->node].alloc -= c->count;
	pool_put(&set->pool, slot);
}

/* Standalone claims: created, allocated when a node has room, deleted. */
static int step_claim(struct sim *s)
{
	static const char *const words[] = {"train", "infer", "batch", "eval"};
	static const uint8_t counts[] = {1, 1, 2, 4};
	struct claim_set *set = &s->sa_claims;
	char name[DNS1123_LABEL_MAX + 1], id[16];
	int32_t slot;
	struct sim_claim *c;

	if (set->pool.n_live < s->claim_target &&
	    (set->pool.n_live < s->claim_target / 2 ||
	     rng_permille(&s->rng, 400))) {
		base36(s->obj_counter++, id);
		snprintf(name, sizeof(name), "%s-gpu-claim-%s",
			 words[rng_below(&s->rng, 4)], id);
		return claim_create(s, set, name, pick_tenant(s), -1,
				    (int)rng_below(&s->rng, N_CLASSES),
				    counts[rng_below(&s->rng, 4)]) >= 0;
	}
	if ((slot = pool_pick(&set->pool, &s->rng)) < 0)
		return 0;
	c = &set->items[slot];
	if (c->node < 0 && claim_allocate(s, c))
		return 1;
	if (rng_permille(&s->rng, c->node < 0 ? 300 : 500)) {
		claim_delete(s, set, (uint32_t)slot);
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* VMInstances: class entries (reservations, each with a covered claim)
 * and raw entries (a virt-launcher pod requesting the raw resource). */

static void vm_gpus(struct sb *b, const struct sim_vm *v)
{
	SB_LIT(b, "\"gpus\":[");
	for (unsigned i = 0; i < v->n; i++) {
		const struct vm_entry *e = &v->e[i];

		if (i)
			sb_chr(b, ',');
		if (e->cls < 0) {
			SB_LIT(b, "{\"name\":");
			sb_str(b, classes[e->rcls].raw[e->raw]);
			sb_chr(b, '}');
			continue;
		}
		SB_LIT(b, "{\"class\":");
		sb_str(b, classes[e->cls].name);
		if (e->form == 0) {
			SB_LIT(b, ",\"count\":");
			sb_u64(b, e->count);
		} else if (e->form == 2) {
			SB_LIT(b, ",\"count\":");
			sb_qu64(b, e->count);
		}
		sb_chr(b, '}');
	}
	sb_chr(b, ']');
}

static void emit_vm(struct sim *s, const struct sim_vm *v, const char *type,
		    bool deleting)
{
	struct sb *b = &s->line;

	if (!line_begin(s, type))
		return;
	SB_LIT(b, "{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":"
		  "\"VMInstance\",\"metadata\":{");
	meta_common(s, v->name, s->ns[v->ns].name, v->uid, v->created_ns,
		    deleting);
	SB_LIT(b, ",\"labels\":{\"apps.cozystack.io/application.kind\":"
		  "\"VMInstance\",\"apps.cozystack.io/application.name\":");
	sb_str(b, v->name);
	SB_LIT(b, "}},\"spec\":{\"runStrategy\":\"Always\",\"instanceType\":"
		  "\"u1.xlarge\",\"instanceProfile\":\"ubuntu\",\"disks\":[{"
		  "\"name\":\"system\"}],");
	vm_gpus(b, v);
	SB_LIT(b,
	       ",\"sshKeys\":[\"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0b3"
	       "VyZGVtb2tleWZvcmNvenlzdGFjaw user@example\"],\"external\":"
	       "false,\"externalMethod\":\"PortList\",\"externalPorts\":[22],"
	       "\"cloudInit\":\"#cloud-config\\n\",\"resources\":{}},"
	       "\"status\":{\"ready\":true,\"version\":\"0.13.1\"}}");
	line_end(s);
}

/* The covered claim of class entry i: claim_name(vmi_name(vm), gpu<i+1>),
 * created with the entry's class and count. -1 when no claim is made. */
static int32_t vm_claim(struct sim *s, int32_t slot, unsigned i)
{
	const struct sim_vm *v = &s->vms[slot];
	char vmi[DNS1123_LABEL_MAX + 1], dev[8], name[DNS1123_LABEL_MAX + 1];

	vmi_name(v->name, vmi);
	snprintf(dev, sizeof(dev), "gpu%u", i + 1);
	if (claim_name(vmi, dev, name) != 0)
		return -1;
	return claim_create(s, &s->vm_claims, name, v->ns, slot, v->e[i].cls,
			    v->e[i].count);
}

static const uint8_t vm_counts[] = {1, 1, 2, 2, 4};

static void vm_entries(struct sim *s, struct sim_vm *v)
{
	struct rng *r = &s->rng;
	bool have_raw = false;

	v->n = (uint8_t)(1 + rng_permille(r, 250));
	for (unsigned i = 0; i < v->n; i++) {
		struct vm_entry *e = &v->e[i];
		int c = (int)rng_below(r, N_CLASSES);

		memset(e, 0, sizeof(*e));
		e->claim = -1;
		if (!have_raw && rng_permille(r, 200)) {
			e->cls = -1;
			e->rcls = (int8_t)c;
			e->raw = (uint8_t)rng_below(r, classes[c].n_raw);
			have_raw = true;
			continue;
		}
		e->cls = (int8_t)c;
		e->count = vm_counts[rng_below(r, sizeof(vm_counts))];
		e->form = e->count == 1 && rng_permille(r, 300) ? 1
			  : rng_permille(r, 100)		? 2
								: 0;
	}
}

static void vm_name_new(struct sim *s, struct sim_vm *v)
{
	static const char *const words[] = {"dev",     "build",	  "jupyter",
					    "render",  "sandbox", "gpu",
					    "desktop", "llm"};
	char id[16];

	base36(s->obj_counter++, id);
	/* Some names are long enough that the claim name needs its hash
	 * form (DESIGN 5.5). */
	if (rng_permille(&s->rng, 100))
		snprintf(v->name, sizeof(v->name),
			 "research-workstation-for-the-data-analytics-team-%."
			 "12s",
			 id);
	else
		snprintf(v->name, sizeof(v->name), "%s-%s",
			 words[rng_below(&s->rng, 8)], id);
}

static int vm_create(struct sim *s)
{
	int32_t slot = pool_take(&s->vm_pool);
	struct sim_vm *v;

	if (slot < 0)
		return 0;
	v = &s->vms[slot];
	memset(v, 0, sizeof(*v));
	v->launcher = -1;
	v->ns = pick_tenant(s);
	make_uid(s, v->uid);
	vm_name_new(s, v);
	vm_entries(s, v);
	v->created_ns = s->now_ns;
	emit_vm(s, v, "ADDED", false);
	for (unsigned i = 0; i < v->n; i++) {
		if (v->e[i].cls >= 0)
			v->e[i].claim = vm_claim(s, slot, i);
		else if (v->launcher < 0)
			pod_create(s, slot, v->e[i].rcls, v->e[i].raw);
	}
	return 1;
}

/* A new count for one class entry; its claim is replaced. */
static int vm_resize(struct sim *s, int32_t slot)
{
	struct sim_vm *v = &s->vms[slot];
	unsigned i = rng_below(&s->rng, v->n);
	struct vm_entry *e = &v->e[i];
	uint8_t count;

	if (e->cls < 0)
		return 0;
	count = vm_counts[rng_below(&s->rng, sizeof(vm_counts))];
	e->count = count == e->count ? (uint8_t)(count + 1) : count;
	e->form = rng_permille(&s->rng, 100) ? 2 : 0;
	emit_vm(s, v, "MODIFIED", false);
	if (e->claim >= 0)
		claim_delete(s, &s->vm_claims, (uint32_t)e->claim);
	e->claim = vm_claim(s, slot, i);
	return 1;
}

static int vm_delete(struct sim *s, int32_t slot)
{
	struct sim_vm *v = &s->vms[slot];

	emit_vm(s, v, "DELETED", true);
	for (unsigned i = 0; i < v->n; i++)
		if (v->e[i].claim >= 0)
			claim_delete(s, &s->vm_claims, (uint32_t)v->e[i].claim);
	if (v->launcher >= 0)
		pod_delete(s, (uint32_t)v->launcher);
	pool_put(&s->vm_pool, (uint32_t)slot);
	return 1;
}

static int step_vm(struct sim *s)
{
	struct pool *vp = &s->vm_pool;
	int32_t slot;
	struct sim_vm *v;
	uint32_t r;

	if (vp->n_live < s->vm_target &&
	    (vp->n_live < s->vm_target / 2 || rng_permille(&s->rng, 300)))
		return vm_create(s);
	if ((slot = pool_pick(vp, &s->rng)) < 0)
		return 0;
	v = &s->vms[slot];
	for (unsigned i = 0; i < v->n; i++) {
		int32_t c = v->e[i].claim;

		if (c >= 0 && s->vm_claims.items[c].node < 0 &&
		    claim_allocate(s, &s->vm_claims.items[c]))
			return 1;
	}
	if (v->launcher >= 0 && s->pods[v->launcher].phase < PH_RUNNING)
		return pod_advance(s, (uint32_t)v->launcher);
	r = rng_below(&s->rng, 100);
	if (r < 40)
		return vm_resize(s, slot);
	if (r < 75)
		return vm_delete(s, slot);
	emit_vm(s, v, "MODIFIED", false);
	return 1;
}

/* ---------------------------------------------------------------------- */
/* KubernetesNodes, nodes, budget changes, bookmarks. */

static void emit_kn(struct sim *s, const struct sim_kn *k, const char *type,
		    bool deleting)
{
	struct sb *b = &s->line;

	if (!line_begin(s, type))
		return;
	SB_LIT(b, "{\"apiVersion\":\"apps.cozystack.io/v1alpha1\",\"kind\":"
		  "\"KubernetesNodes\",\"metadata\":{");
	meta_common(s, k->name, s->ns[k->ns].name, k->uid, k->created_ns,
		    deleting);
	SB_LIT(b, ",\"labels\":{\"apps.cozystack.io/application.kind\":"
		  "\"Kubernetes\"}},\"spec\":{\"minReplicas\":0,");
	if (k->max_replicas >= 0) {
		SB_LIT(b, "\"maxReplicas\":");
		sb_u64(b, (uint64_t)k->max_replicas);
		sb_chr(b, ',');
	}
	SB_LIT(b, "\"instanceType\":\"u1.2xlarge\",\"ephemeralStorage\":"
		  "\"50Gi\",\"roles\":[\"ingress-nginx\"],\"gpus\":[{"
		  "\"class\":");
	sb_str(b, classes[k->cls].name);
	SB_LIT(b, ",\"count\":");
	sb_u64(b, k->count);
	SB_LIT(b, "}],\"resources\":{}},\"status\":{\"ready\":true}}");
	line_end(s);
}

/* maxReplicas: usually 1..4, sometimes absent (the default, 10). */
static int16_t kn_replicas(struct sim *s)
{
	return rng_permille(&s->rng, 100)
		       ? -1
		       : (int16_t)(1 + rng_below(&s->rng, 4));
}

static int step_kn(struct sim *s)
{
	static const char *const words[] = {"prod", "staging", "ci", "ml"};
	struct pool *kp = &s->kn_pool;
	struct sim_kn *k;
	char id[16];
	int32_t slot;
	uint32_t r;

	if (kp->n_live < s->kn_target &&
	    (kp->n_live < s->kn_target / 2 || rng_permille(&s->rng, 300))) {
		if ((slot = pool_take(kp)) < 0)
			return 0;
		k = &s->kns[slot];
		base36(s->obj_counter++, id);
		snprintf(k->name, sizeof(k->name), "%s-md-%s",
			 words[rng_below(&s->rng, 4)], id);
		make_uid(s, k->uid);
		k->ns = pick_tenant(s);
		k->cls = (int8_t)rng_below(&s->rng, N_CLASSES);
		k->count = (uint8_t)(1 + rng_below(&s->rng, 2));
		k->max_replicas = kn_replicas(s);
		k->created_ns = s->now_ns;
		emit_kn(s, k, "ADDED", false);
		return 1;
	}
	if ((slot = pool_pick(kp, &s->rng)) < 0)
		return 0;
	k = &s->kns[slot];
	r = rng_below(&s->rng, 100);
	if (r < 55) {
		int16_t m = kn_replicas(s);

		k->max_replicas = m == k->max_replicas ? (int16_t)(m + 1) : m;
		emit_kn(s, k, "MODIFIED", false);
	} else {
		emit_kn(s, k, "DELETED", true);
		pool_put(kp, (uint32_t)slot);
	}
	return 1;
}

/* A node's Ready condition flaps, it is cordoned and uncordoned, or its
 * kubelet just reports in. */
static int step_node(struct sim *s)
{
	struct sim_node *n = &s->nodes[rng_below(&s->rng, s->n_nodes)];
	uint32_t r = rng_below(&s->rng, 100);

	if (!n->ready || (r < 50 && !n->cordoned)) {
		n->ready = !n->ready;
		n->changed_ns = s->now_ns;
	} else if (n->cordoned || r < 80) {
		n->cordoned = !n->cordoned;
	}
	emit_node(s, n, "MODIFIED");
	return 1;
}

/* A tenant's budgets change: its quotas are drawn again. */
static int step_tenant(struct sim *s)
{
	uint32_t i = pick_tenant(s);

	s->ns[i].quota_version++;
	emit_tenant(s, i, "MODIFIED");
	return 1;
}

/* The steady mix, in parts per 10000 of the steps. */
static const struct action {
	uint32_t weight;
	int (*step)(struct sim *s);
} actions[] = {
	{9300, step_pod},    {280, step_vm},  {150, step_claim},
	{100, step_kn},	     {60, step_node}, {40, step_tenant},
	{70, emit_bookmark},
};

#define N_ACTIONS (sizeof(actions) / sizeof(actions[0]))

/* --churn (see the top of the file). */
static int churn_table(struct sim *s)
{
	uint32_t v = s->table_variant;

	while (v == s->table_variant)
		v = rng_below(&s->rng, CHURN_VARIANTS);
	s->table_variant = v;
	emit_configmap(s, "MODIFIED");
	return 1;
}

static int churn_plugin(struct sim *s)
{
	struct sim_node *n = &s->nodes[rng_below(&s->rng, s->n_nodes)];

	if (n->cls < 0)
		return 0;
	n->plugin_gone = !n->plugin_gone;
	emit_node(s, n, "MODIFIED");
	return 1;
}

/* A VMInstance or KubernetesNodes recreated under a new uid: half the
 * time with its DELETED, half the time as a watch that missed it. */
static int churn_recreate(struct sim *s)
{
	bool vm = rng_permille(&s->rng, 500);
	int32_t slot = pool_pick(vm ? &s->vm_pool : &s->kn_pool, &s->rng);
	bool del = rng_permille(&s->rng, 500);

	if (slot < 0)
		return 0;
	if (vm) {
		struct sim_vm *v = &s->vms[slot];

		if (del)
			emit_vm(s, v, "DELETED", true);
		make_uid(s, v->uid);
		emit_vm(s, v, "ADDED", false);
	} else {
		struct sim_kn *k = &s->kns[slot];

		if (del)
			emit_kn(s, k, "DELETED", true);
		make_uid(s, k->uid);
		emit_kn(s, k, "ADDED", false);
	}
	return 1;
}

/* A class entry changes class under its claim, which then stops (or
 * starts again) being covered. */
static int churn_cover(struct sim *s)
{
	int32_t slot = pool_pick(&s->vm_pool, &s->rng);
	struct sim_vm *v;

	if (slot < 0)
		return 0;
	v = &s->vms[slot];
	for (unsigned i = 0; i < v->n; i++)
		if (v->e[i].cls >= 0 && v->e[i].claim >= 0) {
			v->e[i].cls = (int8_t)((v->e[i].cls + 1) % N_CLASSES);
			emit_vm(s, v, "MODIFIED", false);
			return 1;
		}
	return 0;
}

static int step_churn(struct sim *s)
{
	static int (*const steps[])(struct sim *) = {
		churn_table, churn_plugin, churn_recreate, churn_cover};

	return steps[rng_below(&s->rng, 4)](s);
}

static int step_any(struct sim *s)
{
	uint32_t total = 0, r;

	if (s->churn && rng_permille(&s->rng, CHURN_PERMILLE))
		return step_churn(s);

	for (size_t i = 0; i < N_ACTIONS; i++)
		total += actions[i].weight;
	r = rng_below(&s->rng, total);
	for (size_t i = 0; i < N_ACTIONS; i++) {
		if (r < actions[i].weight)
			return actions[i].step(s);
		r -= actions[i].weight;
	}
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Building the cluster. */

static const char *const sys_namespaces[] = {"kube-system", "cozy-system",
					     "default", "cozy-monitoring"};
#define N_SYS (sizeof(sys_namespaces) / sizeof(sys_namespaces[0]))

/* A tenant below tenant-root: a parent of depth < the maximum (tenant-root
 * four times in ten, so that the root has many children), an own name of
 * a word and the tenant's index in base 36 (unique, no dashes), and a
 * namespace name that fits a DNS-1123 label (else tenant-root's child). */
static void tree_add(struct sim *s, uint32_t i, uint32_t depth_max)
{
	static const char *const words[] = {
		"acme",	 "globex", "umbrella", "initech", "hooli", "stark",
		"wayne", "wonka",  "tyrell",   "dev",	  "prod",  "stage",
		"ml",	 "data",   "lab",      "team",	  "qa",	   "ops"};
	struct sim_ns *n = &s->ns[i];
	uint32_t root = s->n_sys, p = root;
	const char *pre;
	size_t len;
	char id[16];

	if (!rng_permille(&s->rng, 400)) {
		p = s->n_sys + rng_below(&s->rng, i - s->n_sys);
		if (s->ns[p].depth >= depth_max)
			p = s->ns[p].parent;
	}
	base36(i - s->n_sys, id);
	snprintf(n->own, sizeof(n->own), "%s%s",
		 words[rng_below(&s->rng, sizeof(words) / sizeof(words[0]))],
		 id);
	if (strlen(s->ns[p].name) + 1 + strlen(n->own) > DNS1123_LABEL_MAX)
		p = root;
	pre = p == root ? "tenant" : s->ns[p].name;
	len = strlen(pre);
	memcpy(n->name, pre, len);
	n->name[len] = '-';
	memcpy(n->name + len + 1, n->own, strlen(n->own) + 1);
	n->parent = p;
	n->depth = (uint8_t)(s->ns[p].depth + 1);
}

static void build_namespaces(struct sim *s, uint32_t tenants, uint32_t depth)
{
	s->n_sys = N_SYS;
	s->n_ns = N_SYS + tenants;
	s->ns = lg_xcalloc(s->n_ns, sizeof(*s->ns));
	for (uint32_t i = 0; i < s->n_ns; i++) {
		struct sim_ns *n = &s->ns[i];

		if (i < N_SYS) {
			snprintf(n->name, sizeof(n->name), "%s",
				 sys_namespaces[i]);
		} else if (i == N_SYS) {
			snprintf(n->name, sizeof(n->name), "tenant-root");
			snprintf(n->own, sizeof(n->own), "root");
			n->parent = i;
		} else {
			tree_add(s, i, depth);
		}
		n->tenant = i >= N_SYS;
		make_uid(s, n->uid);
		make_uid(s, n->tenant_uid);
		/* Namespaces predate the recording. */
		n->created_ns =
			s->start_ns -
			(int64_t)rng_below(&s->rng, 90 * 86400) * NS_PER_SEC;
		if (n->created_ns < 0)
			n->created_ns = 0;
	}
}

static uint32_t clamp_u32(uint64_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : (uint32_t)v;
}

/* CPU workers first, then GPU nodes of each class; one in ten GPU nodes
 * carries a taint no class tolerates, so it serves nothing. */
static void build_nodes(struct sim *s, uint32_t tenants)
{
	uint32_t per_class = s->all_gpu ? clamp_u32(tenants / 3, 8, 256)
					: clamp_u32(tenants / 12, 2, 256);
	uint32_t workers = clamp_u32(tenants / 8, 3, 256), k = 0;

	s->n_workers = workers;
	s->n_nodes = workers + N_CLASSES * per_class;
	s->nodes = lg_xcalloc(s->n_nodes, sizeof(*s->nodes));
	for (uint32_t i = 0; i < s->n_nodes; i++) {
		struct sim_node *n = &s->nodes[i];
		int c = i < workers ? -1 : (int)((i - workers) / per_class);

		n->index = i;
		n->cls = (int8_t)c;
		n->ready = true;
		make_uid(s, n->uid);
		n->created_ns = s->start_ns - 120 * 86400 * NS_PER_SEC;
		if (n->created_ns < 0)
			n->created_ns = 0;
		n->changed_ns = n->created_ns;
		if (c < 0) {
			snprintf(n->name, sizeof(n->name), "worker-%04u", i);
			continue;
		}
		k = (i - workers) % per_class;
		snprintf(n->name, sizeof(n->name), "gpu-%s-%04u",
			 classes[c].name, k);
		n->raw = (uint8_t)(k % classes[c].n_raw);
		n->gpus = (uint16_t)classes[c].per_node;
		n->dedicated = k % 10 == 7;
		s->by_class[c][s->n_by_class[c]++] = i;
	}
}

static void build_pools(struct sim *s, uint32_t tenants)
{
	s->pod_target = clamp_u32(32 + 6ull * tenants, 64, SIM_PODS_MAX);
	s->vm_target = clamp_u32(2 + tenants / 2, 4, SIM_VMS_MAX);
	s->kn_target = clamp_u32(1 + tenants / 8, 2, SIM_KNS_MAX);
	s->claim_target = clamp_u32(1 + tenants / 6, 2, SIM_CLAIMS_MAX);
	/* Launchers come on top of the pod target: one per VMInstance. */
	pool_init(&s->pod_pool, s->pod_target + s->vm_target);
	s->pods = lg_xcalloc(s->pod_pool.cap, sizeof(*s->pods));
	pool_init(&s->vm_pool, s->vm_target);
	s->vms = lg_xcalloc(s->vm_target, sizeof(*s->vms));
	pool_init(&s->kn_pool, s->kn_target);
	s->kns = lg_xcalloc(s->kn_target, sizeof(*s->kns));
	pool_init(&s->vm_claims.pool, s->vm_target * SIM_ENTRIES_MAX);
	s->vm_claims.items =
		lg_xcalloc(s->vm_claims.pool.cap, sizeof(*s->vm_claims.items));
	pool_init(&s->sa_claims.pool, s->claim_target);
	s->sa_claims.items =
		lg_xcalloc(s->claim_target, sizeof(*s->sa_claims.items));
}

static void sim_release(struct sim *s)
{
	free(s->ns);
	free(s->nodes);
	free(s->pods);
	free(s->vms);
	free(s->kns);
	free(s->vm_claims.items);
	free(s->sa_claims.items);
	pool_release(&s->pod_pool);
	pool_release(&s->vm_pool);
	pool_release(&s->kn_pool);
	pool_release(&s->vm_claims.pool);
	pool_release(&s->sa_claims.pool);
	free(s->line.buf);
	free(s->pend.buf);
}

/* The cluster as a watcher's first list shows it, one item a call: the
 * system namespaces, the gpu-classes ConfigMap, the nodes, then each
 * tenant's Tenant and Namespace. After the last item the steady mix
 * begins. */
static void setup_step(struct sim *s)
{
	uint32_t k = s->setup_at++;
	uint32_t n_tenants = s->n_ns - s->n_sys;

	if (k < s->n_sys) {
		emit_namespace(s, k);
	} else if (k == s->n_sys) {
		emit_configmap(s, "ADDED");
	} else if ((k -= s->n_sys + 1) < s->n_nodes) {
		emit_node(s, &s->nodes[k], "ADDED");
	} else if ((k -= s->n_nodes) < n_tenants) {
		emit_tenant(s, s->n_sys + k, "ADDED");
		emit_namespace(s, s->n_sys + k);
	} else {
		s->steady = true;
		s->steady_from = s->lines;
		s->setup_end_ns = s->now_ns;
	}
}

/* Runs the history on until a step has made a line or the stream is
 * complete. The steps are the same, in the same order, however the lines
 * are taken, so the bytes depend on the options only. */
static void produce(struct sim *s)
{
	while (s->pend.len == 0 && !s->done) {
		if (!s->steady) {
			setup_step(s);
		} else if (step_any(s) > 0) {
			s->misses = 0;
		} else if (++s->misses >= SIM_MISSES_MAX) {
			emit_bookmark(s);
			s->misses = 0;
		}
	}
}

int sim_next(sim_t *s, const char **line, size_t *len, struct lg_error *err)
{
	const char *p, *nl;

	LG_ASSERT(s != NULL && line != NULL && len != NULL);
	LG_ASSERT(s->pend_off <= s->pend.len);
	if (s->pend_off == s->pend.len) {
		s->pend.len = 0;
		s->pend_off = 0;
		produce(s);
		if (s->line.over || s->pend.over)
			return lg_error_set(err, LG_ELIMIT,
					    "simulate: internal error: a line "
					    "exceeded %u bytes",
					    SIM_LINE_MAX);
		if (s->pend.len == 0)
			return 0;
	}
	p = s->pend.buf + s->pend_off;
	nl = memchr(p, '\n', s->pend.len - s->pend_off);
	/* line_end ends every line with '\n', and sb_str escapes any other
	 * (sim.h: every line ends in "\n"). */
	LG_ASSERT(nl != NULL);
	*len = (size_t)(nl - p) + 1;
	*line = p;
	s->pend_off += *len;
	s->yielded++;
	return 1;
}

uint64_t sim__lines(const sim_t *s)
{
	return s->yielded;
}

/* ---------------------------------------------------------------------- */
/* Options. */

void sim_opts_default(struct sim_opts *o)
{
	LG_ASSERT(o != NULL);
	*o = (struct sim_opts){.seed = 1,
			       .events = 100000,
			       .tenants = 24,
			       .depth = 3,
			       .start_ns = 1767225600ll * NS_PER_SEC,
			       .end_ns =
				       (1767225600ll + 30 * 86400) * NS_PER_SEC,
			       .gpu_share_ppm = 20000,
			       .invalid = true};
}

static int sim_check(const struct sim_opts *o, struct lg_error *err)
{
	if (o->tenants < 1 || o->tenants > SIM_TENANTS_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "simulate: tenants must be 1..%u",
				    SIM_TENANTS_MAX);
	if (o->depth < 1 || o->depth > SIM_DEPTH_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "simulate: depth must be 1..%u",
				    SIM_DEPTH_MAX);
	if (o->events > SIM_EVENTS_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "simulate: events must be 0..%llu",
				    (unsigned long long)SIM_EVENTS_MAX);
	if (o->start_ns < 0 || o->end_ns > SIM_TIME_MAX_NS ||
	    o->end_ns < o->start_ns)
		return lg_error_set(err, LG_EINVAL,
				    "simulate: the span must lie in "
				    "1970..2199, its start before its end");
	if (o->gpu_share_ppm > 1000000)
		return lg_error_set(err, LG_EINVAL,
				    "simulate: the GPU pod share must be "
				    "0..1000000 ppm");
	return 0;
}

int sim_new(const struct sim_opts *o, sim_t **out, struct lg_error *err)
{
	struct sim *s;
	int rc;

	LG_ASSERT(o != NULL && out != NULL);
	*out = NULL;
	if ((rc = sim_check(o, err)) != 0)
		return rc;
	s = lg_xcalloc(1, sizeof(*s));
	s->start_ns = o->start_ns;
	s->end_ns = o->end_ns;
	s->gpu_share_ppm = o->gpu_share_ppm;
	s->seed = o->seed;
	s->max_lines = o->events;
	s->done = o->events == 0;
	s->all_gpu = o->all_gpu;
	s->invalid = o->invalid;
	s->churn = o->churn;
	s->now_ns = s->start_ns;
	s->line = (struct sb){lg_xcalloc(1, SIM_LINE_MAX), 0, SIM_LINE_MAX, false};
	s->pend = (struct sb){lg_xcalloc(1, SIM_PENDING_MAX), 0, SIM_PENDING_MAX,
			      false};
	rng_seed(&s->rng, o->seed);
	build_namespaces(s, o->tenants, o->depth);
	build_nodes(s, o->tenants);
	build_pools(s, o->tenants);
	*out = s;
	return 0;
}

void sim_free(sim_t *s)
{
	if (s == NULL)
		return;
	sim_release(s);
	free(s);
}
