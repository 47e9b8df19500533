/*
 * A generator of random, valid event sequences: a small tenant tree, two
 * classes, nodes, budgets, raw keys, and holders reserving, releasing,
 * allocating and freeing units, with a shadow of every holder's units so
 * that each event's `before` is right. NOTE, VERDICT and TICK events are
 * mixed in. Deterministic for a seed.
 */
#include "tests/ledger_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SLOTS 64

static const char *const gen_ns[] = {"tenant-root", "tenant-a",	  "tenant-b",
				     "tenant-a-x",  "tenant-b-y", "default"};
static const char *const gen_parent[] = {
	NULL, "tenant-root", "tenant-root", "tenant-a", "tenant-b", NULL};
static const char *const gen_cls[] = {"a10", "h100"};
static const char *const gen_def[] = {
	"{\"deviceClassName\":\"a10\",\"name\":\"a10\",\"resourceNames\":"
	"[\"nvidia.com/GA102\"],\"tolerations\":[]}",
	"{\"deviceClassName\":\"h100\",\"name\":\"h100\",\"resourceNames\":"
	"[\"nvidia.com/GH100\"],\"tolerations\":[]}",
};
static const char *const gen_node[] = {"", "node-1", "node-2", "node-3"};
static const char *const gen_keys[] = {"gpuclass.cozystack.io/devices",
				       "h100.gpuclass.cozystack.io/devices",
				       "a10.gpuclass.cozystack.io/devices"};

struct slot {
	char name[16];
	const char *ns, *cls;
	int64_t reserved, allocated;
	const char *node;
};

struct gen {
	uint64_t s;
	int64_t t;
	unsigned setup; /* setup events emitted so far */
	struct slot slots[N_SLOTS];
	int64_t budget[6][3]; /* -1: none */
	int64_t cap[4][2];
	bool serves[4][2];
};

static uint64_t rnd(struct gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return g->s;
}

struct gen *gen_new(uint64_t seed, int64_t t0_ns)
{
	struct gen *g = calloc(1, sizeof(*g));

	g->s = seed * 0x9e3779b97f4a7c15ULL + 1;
	g->t = t0_ns;
	for (int i = 0; i < N_SLOTS; i++) {
		snprintf(g->slots[i].name, sizeof(g->slots[i].name), "h%d", i);
		g->slots[i].ns = gen_ns[i % 6];
		g->slots[i].cls = gen_cls[(i / 6) % 2];
		g->slots[i].node = "";
	}
	memset(g->budget, 0xff, sizeof(g->budget));
	return g;
}

void gen_free(struct gen *g)
{
	free(g);
}

static void setup_event(struct gen *g, struct event *ev)
{
	unsigned k = g->setup++;

	if (k < 2) {
		ev->type = EV_CLASS;
		ev->cls = gen_cls[k];
		ev->text = gen_def[k];
		return;
	}
	ev->type = EV_TENANT;
	ev->ns = gen_ns[k - 2];
	ev->parent = gen_parent[k - 2];
}

static void units_event(struct gen *g, struct event *ev)
{
	struct slot *s = &g->slots[rnd(g) % N_SLOTS];
	bool res = rnd(g) % 2;
	int64_t cur = res ? s->reserved : s->allocated;
	int64_t after = (int64_t)(rnd(g) % 5);

	if (after == cur)
		after = cur + 1;
	ev->ns = s->ns;
	ev->cls = s->cls;
	ev->kind = HK_POD;
	ev->name = s->name;
	ev->uid = "uid";
	ev->before = cur;
	ev->after = after;
	if (res) {
		ev->type = after > cur ? EV_RESERVE : EV_RELEASE;
		s->reserved = after;
		return;
	}
	ev->type = after > cur ? EV_ALLOC : EV_FREE;
	if (cur == 0)
		s->node = gen_node[rnd(g) % 4];
	ev->node = s->node;
	s->allocated = after;
}

static void other_event(struct gen *g, struct event *ev, unsigned k)
{
	if (k == 0) { /* budgets on tenants */
		unsigned t = rnd(g) % 5, key = rnd(g) % 3;
		int64_t v = (int64_t)(rnd(g) % 12);

		if (g->budget[t][key] == v)
			v = -1;
		if (v < 0 && g->budget[t][key] < 0)
			v = 3;
		ev->type = EV_BUDGET;
		ev->ns = gen_ns[t];
		ev->key = gen_keys[key];
		ev->present = v >= 0;
		ev->value = v;
		g->budget[t][key] = v;
	} else if (k == 1) {
		unsigned n = 1 + rnd(g) % 3, c = rnd(g) % 2;

		ev->type = EV_NODE;
		ev->node = gen_node[n];
		ev->cls = gen_cls[c];
		ev->value = g->cap[n][c] + 1 + (int64_t)(rnd(g) % 3);
		ev->present = rnd(g) % 2;
		g->cap[n][c] = ev->value;
		g->serves[n][c] = ev->present;
	} else if (k == 2) {
		ev->type = EV_NOTE;
		ev->key = "InvalidQuantity";
		ev->text = "a note";
	} else if (k == 3) {
		ev->type = EV_VERDICT;
		ev->text = "{\"allowed\":true}";
	} else {
		ev->type = EV_TICK;
	}
}

void gen_next(struct gen *g, struct event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct event *ev = &evs[i];
		unsigned k = rnd(g) % 16;

		memset(ev, 0, sizeof(*ev));
		g->t += (int64_t)(rnd(g) % 3) * 1000000;
		ev->time_ns = g->t;
		if (g->setup < 2 + 5)
			setup_event(g, ev);
		else if (k < 11)
			units_event(g, ev);
		else
			other_event(g, ev, k - 11);
	}
}
