/*
 * What cluster/cluster.h declares that belongs to no one part of the
 * layer: the key layout of the log in etcd (cluster/README.md), where each
 * key of the prefix P lives, and what a prefix may be. Pure string work,
 * kept beside the layer that owns the layout rather than in etcd's client.
 */
#include "cluster/cluster_int.h"

#include <stdio.h>
#include <string.h>

size_t cluster__key(char *buf, size_t cap, const char *prefix, const char *tail)
{
	int n = snprintf(buf, cap, "%s/%s", prefix, tail);

	LG_ASSERT((buf != NULL || cap == 0) && prefix != NULL && tail != NULL);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

size_t cluster__log_key(char *buf, size_t cap, const char *prefix,
			uint64_t first_seq)
{
	int n = snprintf(buf, cap, "%s/log/%020llu", prefix,
			 (unsigned long long)first_seq);

	LG_ASSERT((buf != NULL || cap == 0) && prefix != NULL);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int cluster_prefix_check(const char *prefix, struct lg_error *err)
{
	size_t n = prefix ? strlen(prefix) : 0;

	if (n == 0)
		return lg_error_set(err, LG_EINVAL, "--prefix P is required");
	if (n > CLUSTER_PREFIX_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "--prefix: longer than %d bytes",
				    CLUSTER_PREFIX_MAX);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)prefix[i] < 0x20 || prefix[i] == 0x7f)
			return lg_error_set(err, LG_EINVAL,
					    "--prefix: a control character "
					    "at byte %zu",
					    i);
	if (prefix[n - 1] == '/')
		return lg_error_set(err, LG_EINVAL,
				    "--prefix \"%s\": ends with '/' (keys are "
				    "P/head, P/log/...)",
				    prefix);
	return 0;
}
