/*
 * The line framer of watch streams. The API server writes one JSON object
 * per line, but TCP, TLS records and HTTP chunks cut the stream anywhere,
 * so a line may arrive in many pieces or many lines in one piece. The
 * framer keeps at most one partial line in the caller's buffer; a line
 * that outgrows it is dropped as it arrives and reported once at its end,
 * so that a hostile or broken server cannot make us buffer without bound.
 */
#include "ingest/kube_int.h"

#include <string.h>

void ingest__kube_frame_init(struct kube_frame *f, char *buf, size_t cap)
{
	memset(f, 0, sizeof(*f));
	f->buf = buf;
	f->cap = cap;
}

void ingest__kube_frame_reset(struct kube_frame *f)
{
	f->len = 0;
	f->skipping = false;
	f->skipped = 0;
}

/* The end of a line that was too long: report its size and start over. */
static enum kube_frame_result end_skip(struct kube_frame *f, uint64_t more,
				       struct kube_frame_out *out)
{
	uint64_t total = f->skipped + more;

	ingest__kube_frame_reset(f);
	out->line = NULL;
	out->len = total > SIZE_MAX ? SIZE_MAX : (size_t)total;
	return KUBE_FRAME_OVERSIZED;
}

/* A line of n more bytes (data[0..n), before the '\n') completes the
 * partial one. Returns false for an empty line, which is skipped. */
static bool complete(struct kube_frame *f, const char *data, size_t n,
		     struct kube_frame_out *out)
{
	const char *line = data;
	size_t len = n;

	if (f->len > 0) {
		/* The caller checked that it fits. */
		memcpy(f->buf + f->len, data, n);
		line = f->buf;
		len = f->len + n;
		f->len = 0;
	}
	if (len > 0 && line[len - 1] == '\r')
		len--;
	out->line = line;
	out->len = len;
	return len > 0;
}

enum kube_frame_result ingest__kube_frame_push(struct kube_frame *f,
					       const char *data, size_t len,
					       size_t *used,
					       struct kube_frame_out *out)
{
	size_t off = 0;

	out->line = NULL;
	out->len = 0;
	/* Each turn consumes one line, so the loop ends within len turns;
	 * it turns more than once only over empty lines. */
	while (off < len) {
		const char *p = data + off;
		size_t rest = len - off;
		const char *nl = memchr(p, '\n', rest);
		size_t n = nl ? (size_t)(nl - p) : rest;

		if (nl == NULL) {
			*used = len;
			if (f->skipping) {
				f->skipped += n;
			} else if (f->len + n > f->cap) {
				f->skipping = true;
				f->skipped = f->len + n;
				f->len = 0;
			} else {
				memcpy(f->buf + f->len, p, n);
				f->len += n;
			}
			return KUBE_FRAME_MORE;
		}
		off += n + 1;
		*used = off;
		if (f->skipping)
			return end_skip(f, n, out);
		if (f->len + n > f->cap) {
			f->skipped = f->len;
			return end_skip(f, n, out);
		}
		if (complete(f, p, n, out))
			return KUBE_FRAME_LINE;
	}
	*used = len;
	return KUBE_FRAME_MORE;
}

enum kube_frame_result ingest__kube_frame_finish(struct kube_frame *f,
						 struct kube_frame_out *out)
{
	out->line = NULL;
	out->len = 0;
	if (f->skipping)
		return end_skip(f, 0, out);
	if (f->len > 0 && complete(f, f->buf, 0, out))
		return KUBE_FRAME_LINE;
	ingest__kube_frame_reset(f);
	return KUBE_FRAME_MORE;
}
