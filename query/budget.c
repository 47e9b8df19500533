/*
 * Connection budgets: the counts a listener keeps and the table of how
 * many connections each peer address holds (query_int.h says what they
 * bound; query/http.c decides what to close).
 *
 * The peer table. Linear probing in a table of at least twice as many
 * slots as the budget holds connections, so at most half of it is ever in
 * use and a probe always ends at a free slot; a peer that leaves is removed
 * by shifting its followers back (no tombstones, which would fill the
 * table under a churn of addresses). The hash is keyed per table from the
 * table's own address: a client cannot choose addresses that collide
 * unless it knows where the server's heap is.
 */
#include "query/query_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const reason_names[SHED_MAX] = {
	[SHED_HALF_OPEN] = "max_half_open",
	[SHED_PEER] = "max_per_peer",
	[SHED_FULL] = "max_conns",
	[SHED_DEADLINE] = "handshake_ms",
};

const char *query__shed_reason_name(enum shed_reason r)
{
	LG_ASSERT(r < SHED_MAX);
	return reason_names[r];
}

void query__budget_init(struct conn_budget *b, const char *listener,
			unsigned max, unsigned max_half_open,
			unsigned max_per_peer, bool shed_any)
{
	size_t slots = 16;

	LG_ASSERT(max > 0 && max_half_open > 0 && max_per_peer > 0);
	memset(b, 0, sizeof(*b));
	b->listener = listener;
	b->max = max;
	b->max_half_open = max_half_open < max ? max_half_open : max;
	b->max_per_peer = max_per_peer < max ? max_per_peer : max;
	b->shed_any = shed_any;
	while (slots < 2 * (size_t)max)
		slots *= 2;
	b->peers = lg_xcalloc(slots, sizeof(*b->peers));
	b->mask = slots - 1;
}

void query__budget_release(struct conn_budget *b)
{
	if (b == NULL)
		return;
	free(b->peers);
	b->peers = NULL;
}

void query__peer_key(const struct sockaddr_storage *ss, struct peer_key *k)
{
	memset(k, 0, sizeof(*k));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		k->a[10] = k->a[11] = 0xff;
		memcpy(k->a + 12, &a->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		memcpy(k->a, &a->sin6_addr, 16);
	}
}

/* FNV-1a over the address, seeded with the table's address. */
static size_t home(const struct conn_budget *b, const struct peer_key *k)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uintptr_t)b->peers;

	for (size_t i = 0; i < sizeof(k->a); i++) {
		h ^= k->a[i];
		h *= 0x100000001b3ull;
	}
	return (size_t)(h ^ (h >> 29)) & b->mask;
}

/* The slot of k, or the free slot where it would go. */
static size_t find(const struct conn_budget *b, const struct peer_key *k)
{
	size_t i = home(b, k);

	while (b->peers[i].n != 0 && memcmp(&b->peers[i].k, k, sizeof(*k)) != 0)
		i = (i + 1) & b->mask;
	return i;
}

unsigned query__peer_count(const struct conn_budget *b,
			   const struct peer_key *k)
{
	return b->peers[find(b, k)].n;
}

void query__peer_add(struct conn_budget *b, const struct peer_key *k)
{
	size_t i = find(b, k);

	LG_ASSERT(b->peers[i].n < b->max);
	b->peers[i].k = *k;
	b->peers[i].n++;
}

void query__peer_del(struct conn_budget *b, const struct peer_key *k)
{
	size_t i = find(b, k), j = i;

	LG_ASSERT(b->peers[i].n > 0);
	if (--b->peers[i].n > 0)
		return;
	/* Backward shift: each follower whose home is not between the hole
	 * and itself moves into the hole. */
	for (;;) {
		size_t h;

		j = (j + 1) & b->mask;
		if (b->peers[j].n == 0)
			break;
		h = home(b, &b->peers[j].k);
		if (((j - h) & b->mask) >= ((j - i) & b->mask)) {
			b->peers[i] = b->peers[j];
			b->peers[j].n = 0;
			i = j;
		}
	}
}
