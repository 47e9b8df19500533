/*
 * The process-wide start of libcurl. Its allocator can be chosen only by the
 * first curl_global_init of the process, so main calls this before anything
 * else touches curl: libcurl then runs out of memory the way the rest of the
 * daemon does, by aborting (STYLE "Errors and memory"). The watcher and the
 * replica still pair their own curl_global_init and cleanup, which only
 * count once this has run.
 */
#include "ingest/ingest_int.h"

#include <curl/curl.h>
#include <stdlib.h>

int ingest_global_init(struct lg_error *err)
{
	if (curl_global_init_mem(CURL_GLOBAL_DEFAULT, lg_xmalloc, free,
				 lg_xrealloc, lg_xstrdup,
				 lg_xcalloc) != CURLE_OK)
		return lg_error_set(err, LG_EIO, "libcurl failed to start");
	return 0;
}
