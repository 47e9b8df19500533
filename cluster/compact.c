/*
 * Retention in etcd (DESIGN 11 "Compaction and members joining", rule 11):
 * the leader deletes the P/log/ keys below min(applied of the members in
 * P/members/) - keep, in a txn fenced by its leadership (rule 5), and then
 * compacts etcd's revisions at the mod_revision of the oldest key kept.
 * Every member's LMDB keeps the whole history; etcd keeps the window a
 * member that is alive may still need, and no more than --keep-bytes of
 * values: past that the oldest go even if a member still needs them (it
 * joins from a peer), because an etcd at its quota refuses every write of
 * every member. At each pass, each etcd member whose file has
 * --defrag-free bytes free is defragmented, one at a time, so a quorum
 * always answers.
 *
 * P/members/<name> keys are bound to each member's lease, so a dead member
 * stops pinning the log once its lease expires; a member that comes back
 * below the oldest key left cannot follow etcd and says so (its applier:
 * "compacted"), and is seeded again from a ready member's ledger.
 *
 * Why the fence: the members' applied seqs are read first and the delete
 * sent after; a deposed leader's delete, computed on what it read before,
 * must not land. Why the mod_revision of the oldest key kept: every
 * revision a member's watch may need to resume from at or after it stays
 * watchable, and below it etcd keeps nothing we read.
 */
#include "cluster/cluster_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX (CLUSTER_PREFIX_MAX + 64)

/* P/head, every P/members/ key and the oldest P/log/ key, at one
 * revision. */
static int read_window(struct cluster_writer *w, struct cluster_compact *c,
		       struct lg_error *err)
{
	char k_head[KEY_MAX], k_mem[KEY_MAX], k_log[KEY_MAX], k_end[KEY_MAX];
	size_t n_mem = cluster__key(k_mem, sizeof(k_mem), w->prefix,
				    "members/");
	struct etcd_op ops[3] = {
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = k_head,
			   .key_len = cluster__key(k_head, sizeof(k_head),
						   w->prefix, "head")}},
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = k_mem, .key_len = n_mem, .prefix = true}},
		{.kind = ETCD_OP_RANGE,
		 .range = {.key = k_log,
			   .key_len = cluster__log_key(k_log, sizeof(k_log),
						       w->prefix, 0),
			   .end = k_end,
			   .end_len = cluster__log_key(k_end, sizeof(k_end),
						       w->prefix, UINT64_MAX),
			   .limit = 1,
			   .keys_only = true}},
	};
	struct etcd_txn t = {.success = ops, .n_success = 3};
	struct etcd_txn_result r;
	struct cluster_head h;
	int rc = etcd_txn(w->etcd, &t, &r, err);

	if (rc == 0 && (r.ops[0].range.n_kvs != 1 ||
			!cluster__head_parse(r.ops[0].range.kvs[0].value,
					     r.ops[0].range.kvs[0].value_len,
					     &h)))
		rc = lg_error_set(err, LG_ECORRUPT, "%s/head is not a head",
				  w->prefix);
	if (rc == 0) {
		const struct etcd_range_result *m = &r.ops[1].range,
					       *l = &r.ops[2].range;

		c->head = h.seq;
		c->members = m->n_kvs;
		c->low = h.seq;
		for (size_t i = 0; i < m->n_kvs; i++) {
			struct cluster_status_member cm = {0};

			/* A member that says no applied seq pins all. */
			cluster__member_parse(&m->kvs[i], &cm);
			if (!cm.has_applied)
				cm.applied = 0;
			if (cm.applied < c->low)
				c->low = cm.applied;
		}
		c->oldest = l->n_kvs == 1
				    ? cluster__log_key_seq(l->kvs[0].key,
							   l->kvs[0].key_len,
							   w->prefix)
				    : 0;
	}
	etcd_txn_result_release(&r);
	return rc;
}

/* The mod_revision of the first P/log/ key at or after seq cut (0: none). */
static int oldest_kept_rev(struct cluster_writer *w, uint64_t cut,
			   int64_t *rev, uint64_t *seq, struct lg_error *err)
{
	char k_log[KEY_MAX], k_end[KEY_MAX];
	struct etcd_op op = {
		.kind = ETCD_OP_RANGE,
		.range = {.key = k_log,
			  .key_len = cluster__log_key(k_log, sizeof(k_log),
						      w->prefix, cut),
			  .end = k_end,
			  .end_len = cluster__log_key(k_end, sizeof(k_end),
						      w->prefix, UINT64_MAX),
			  .limit = 1,
			  .keys_only = true}};
	struct etcd_txn t = {.success = &op, .n_success = 1};
	struct etcd_txn_result r;
	int rc = etcd_txn(w->etcd, &t, &r, err);

	*rev = 0;
	*seq = 0;
	if (rc == 0 && r.ops[0].range.n_kvs == 1) {
		*rev = r.ops[0].range.kvs[0].mod_revision;
		*seq = cluster__log_key_seq(r.ops[0].range.kvs[0].key,
					    r.ops[0].range.kvs[0].key_len,
					    w->prefix);
	}
	etcd_txn_result_release(&r);
	return rc;
}

/* Rule 11 by bytes: reads the P/log/ values from seq from on, a page at a
 * time, and finds the first seq whose keys, to the newest, hold at most
 * keep_bytes (the newest key always stays): *cut (0: none due by bytes)
 * and *kept, their bytes. Reads what etcd keeps: at most about keep_bytes
 * more than the bound once it holds. */
#define BYTES_PAGE 16
static int bytes_cut(struct cluster_writer *w, uint64_t from,
		     uint64_t keep_bytes, uint64_t *cut, uint64_t *kept,
		     struct lg_error *err)
{
	char k_log[KEY_MAX], k_end[KEY_MAX];
	struct {
		uint64_t seq, len;
	} *keys = NULL;
	size_t n = 0, cap = 0, i = 0;
	uint64_t total = 0;
	int rc = 0;

	int64_t limit = BYTES_PAGE;

	*cut = 0;
	*kept = 0;
	for (bool more = true; more && rc == 0;) {
		struct etcd_range_result r = {0};
		struct etcd_range rg = {
			.key = k_log,
			.key_len = cluster__log_key(k_log, sizeof(k_log),
						    w->prefix, from),
			.end = k_end,
			.end_len = cluster__log_key(k_end, sizeof(k_end),
						    w->prefix, UINT64_MAX),
			.limit = limit};

		rc = etcd_range(w->etcd, &rg, &r, NULL, err);
		if (rc == LG_ELIMIT && limit > 1) {
			/* A page of large values (a remap's, up to 1.4 MB
			 * each) is more than our answer's bound: one by
			 * one, as cluster__log_read does. */
			etcd_range_result_release(&r);
			limit = 1;
			rc = 0;
			continue;
		}
		if (rc != 0) {
			etcd_range_result_release(&r);
			break;
		}
		more = r.more && r.n_kvs > 0;
		for (size_t k = 0; k < r.n_kvs; k++) {
			uint64_t seq = cluster__log_key_seq(
				r.kvs[k].key, r.kvs[k].key_len, w->prefix);

			if (n == cap) {
				cap = cap ? 2 * cap : 256;
				keys = lg_xrealloc(keys, cap * sizeof(*keys));
			}
			keys[n].seq = seq;
			keys[n].len = r.kvs[k].value_len;
			total += keys[n].len;
			n++;
			from = seq + 1;
		}
		etcd_range_result_release(&r);
	}
	if (rc == 0) {
		while (total > keep_bytes && i + 1 < n)
			total -= keys[i++].len;
		*cut = i > 0 ? keys[i].seq : 0;
		*kept = total;
	}
	free(keys);
	return rc;
}

/* Rule 11: defragments each etcd member of the handle, one at a time (the
 * next only once the last has answered), whose file has at least free_min
 * bytes not in use (3 status calls a pass when none has). A member that cannot
 * say (no dbSizeInUse before etcd 3.4) is left; a failure stops the pass (said
 * in err; what was done is in c). */
static int defragment(struct cluster_writer *w, uint64_t free_min,
		      struct cluster_compact *c, struct lg_error *err)
{
	size_t n = etcd_n_endpoints(w->etcd);

	for (size_t i = 0; i < n && c->n_defrag < CLUSTER_DEFRAG_MAX; i++) {
		struct etcd_status st;
		struct cluster_defrag *d;
		int64_t unused;
		int rc = etcd_status_at(w->etcd, i, &st, NULL, err);

		if (rc != 0)
			return rc;
		unused = st.db_size - st.db_size_in_use;
		if (st.db_size_in_use <= 0 || unused < (int64_t)free_min)
			continue;
		/* Blocks that member for as long as it takes: its own bound,
		 * not a request's. */
		if ((rc = etcd_defragment_at(w->etcd, i, 60000, NULL, err)) !=
		    0)
			return rc;
		d = &c->defrag[c->n_defrag++];
		snprintf(d->endpoint, sizeof(d->endpoint), "%s",
			 etcd_endpoint_at(w->etcd, i));
		d->before = st.db_size;
		if ((rc = etcd_status_at(w->etcd, i, &st, NULL, err)) != 0)
			return rc;
		d->after = st.db_size;
	}
	return 0;
}

int cluster__compact(struct cluster_writer *w,
		     const struct cluster_retention *rt,
		     struct cluster_compact *c, struct lg_error *err)
{
	char k_epoch[KEY_MAX], k_leader[KEY_MAX], k_log[KEY_MAX],
		k_cut[KEY_MAX];
	struct etcd_cmp cmp[2];
	struct etcd_op del;
	struct etcd_txn t;
	struct etcd_txn_result r;
	enum etcd_outcome out = ETCD_NOT_APPLIED;
	size_t n_cmp = 0;
	int rc;

	LG_ASSERT(w != NULL && w->etcd != NULL && rt != NULL && c != NULL);
	memset(c, 0, sizeof(*c));
	if (rt->keep == 0 && rt->keep_bytes == 0)
		return 0; /* retention off */
	if ((rc = read_window(w, c, err)) != 0)
		return rc;
	/* By events: pinned by the lowest applied seq listed. */
	if (rt->keep > 0 && c->members > 0 && c->low > rt->keep)
		c->cut = c->low - rt->keep;
	/* By bytes: over what is left above that cut. */
	if (rt->keep_bytes > 0 && c->oldest > 0) {
		uint64_t bcut;

		if ((rc = bytes_cut(w, c->oldest > c->cut ? c->oldest : c->cut,
				    rt->keep_bytes, &bcut, &c->bytes, err)) !=
		    0)
			return rc;
		if (bcut > c->cut) {
			c->cut = bcut;
			c->by_bytes = true;
		}
	}
	if (c->cut == 0 || c->oldest == 0 || c->oldest >= c->cut)
		goto defrag; /* nothing old enough, or deleted already */
	/* Rule 11 (and 5): only in this history, only while leading. */
	cmp[n_cmp++] = (struct etcd_cmp){
		.key = k_epoch,
		.key_len = cluster__key(k_epoch, sizeof(k_epoch), w->prefix,
					"epoch"),
		.target = ETCD_CMP_VALUE,
		.result = ETCD_EQUAL,
		.value = w->epoch,
		.value_len = strlen(w->epoch)};
	if (w->leader_rev != 0)
		cmp[n_cmp++] = (struct etcd_cmp){
			.key = k_leader,
			.key_len = cluster__key(k_leader, sizeof(k_leader),
						w->prefix, "leader"),
			.target = ETCD_CMP_CREATE,
			.result = ETCD_EQUAL,
			.number = w->leader_rev};
	del = (struct etcd_op){
		.kind = ETCD_OP_DELETE,
		.range = {.key = k_log,
			  .key_len = cluster__log_key(k_log, sizeof(k_log),
						      w->prefix, 0),
			  .end = k_cut,
			  .end_len = cluster__log_key(k_cut, sizeof(k_cut),
						      w->prefix, c->cut)}};
	t = (struct etcd_txn){.cmp = cmp, .n_cmp = n_cmp, .success = &del,
			      .n_success = 1};
	rc = etcd_txn(w->etcd, &t, &r, err);
	if (rc == 0 && r.outcome != ETCD_COMMITTED) {
		rc = lg_error_set(err, LG_EMISMATCH,
				  "%s/epoch or the leadership changed: "
				  "nothing deleted (DESIGN 11 rule 5)",
				  w->prefix);
	} else if (rc == 0) {
		c->deleted = (uint64_t)(r.n_ops ? r.ops[0].deleted : 0);
	}
	etcd_txn_result_release(&r);
	if (rc != 0)
		return rc;
	/* A delete whose answer was lost is harmless to repeat: the next
	 * call reads the window again. The compaction: at the oldest kept
	 * key's revision. */
	if ((rc = oldest_kept_rev(w, c->cut, &c->compact_rev, &c->oldest,
				  err)) != 0)
		return rc;
	if (c->compact_rev > 0) {
		rc = etcd_compact(w->etcd, c->compact_rev, false, &out, err);
		/* Compacted there already (by an earlier call): done. */
		if (rc != 0 && err != NULL &&
		    strstr(err->msg, "compacted") != NULL) {
			err->code = 0;
			err->msg[0] = '\0';
			rc = 0;
		}
	}
	if (rc != 0)
		return rc;
defrag:
	/* Every pass, not only one that compacted: etcd frees the pages of
	 * a compaction in the background, so a member's free bytes may show
	 * only at the next pass. */
	return rt->defrag_free > 0 ? defragment(w, rt->defrag_free, c, err) : 0;
}

int cluster__epoch_read(etcd_t *e, const char *prefix, char *epoch,
			size_t cap, struct lg_error *err)
{
	char key[KEY_MAX];
	struct etcd_range_result r = {0};
	struct etcd_range rg = {
		.key = key,
		.key_len = cluster__key(key, sizeof(key), prefix, "epoch")};
	int rc = etcd_range(e, &rg, &r, NULL, err);

	LG_ASSERT(e != NULL && prefix != NULL && epoch != NULL && cap > 0);
	if (rc == 0 && (r.n_kvs != 1 || r.kvs[0].value_len == 0 ||
			r.kvs[0].value_len >= cap))
		rc = lg_error_set(err, LG_ENOENT,
				  "%s/epoch is absent: run `gpuledger cluster "
				  "init` first",
				  prefix);
	if (rc == 0)
		memcpy(epoch, r.kvs[0].value, r.kvs[0].value_len + 1);
	etcd_range_result_release(&r);
	return rc;
}

int cluster_compact(const struct etcd_opts *eo, const char *prefix,
		    const struct cluster_retention *rt,
		    struct cluster_compact *out, struct lg_error *err)
{
	struct cluster_writer w = {.prefix = prefix};
	int rc;

	LG_ASSERT(eo != NULL && prefix != NULL && rt != NULL && out != NULL);
	memset(out, 0, sizeof(*out));
	if (rt->keep == 0 && rt->keep_bytes == 0)
		return lg_error_set(err, LG_EINVAL,
				    "--keep or --keep-bytes is 1 or more");
	if ((rc = etcd_open(&w.etcd, eo, err)) != 0)
		return rc;
	rc = cluster__epoch_read(w.etcd, prefix, w.epoch, sizeof(w.epoch), err);
	if (rc == 0)
		rc = cluster__compact(&w, rt, out, err);
	etcd_close(w.etcd);
	return rc;
}
