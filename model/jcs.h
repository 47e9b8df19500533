/*
 * model/jcs.h — canonical JSON (model/jcs.c, RFC 8785): the one canonical
 * writer, and the reader of JSON as JCS reads it. Included by model/model.h.
 */
#ifndef GPULEDGER_MODEL_JCS_H
#define GPULEDGER_MODEL_JCS_H

#include "model/base.h"

#include <jansson.h>

/* Canonical JSON (model/jcs.c): RFC 8785 JCS, the one canonical writer.
 * Members sorted by UTF-16 code units, no insignificant space, strings and
 * numbers as ECMAScript writes them. Text that is not UTF-8, NaN and
 * Infinity and trees deeper than 512 fail (NULL / -1).
 * JCS_INT_STRINGS: an integer beyond +-(2^53-1), which a double cannot
 * hold, is written as a string of its decimal digits (the event JSON and
 * the Merkle leaves, DESIGN 4.4); without it, as its exact digits.
 * JCS_INT_DOUBLES: such an integer is written as the double JCS gives it
 * (a verdict record, DESIGN 3.5: what a reader of doubles reads back). */
#define JCS_INT_STRINGS 1u
#define JCS_INT_DOUBLES 2u

/* The bound of a canonical text whose caller names none (json_canonical,
 * the answers and outputs written from a tree in memory): far above the
 * largest written today (replay --json or /v1/tenants of a whole state),
 * low enough that a runaway tree fails instead of taking the memory. */
#define JCS_TEXT_MAX_BYTES ((size_t)1 << 30)
/* JCS of v as a malloc'ed string of its own size (caller frees), NULL on
 * failure or past max_bytes. Built in scratch (may be NULL: then in a
 * buffer of at most max_bytes, or JCS_TEXT_MAX_BYTES if less), which a
 * caller that writes many keeps, so that only the copy is allocated each
 * time; scratch's own max bounds the text too. */
char *jcs_text(const json_t *v, unsigned flags, size_t max_bytes,
	       struct lg_buf *scratch);
/* jcs_text(v, 0, JCS_TEXT_MAX_BYTES, NULL). Caller frees. */
char *json_canonical(const json_t *v);
/* JSON read as JCS reads it (DESIGN 3.5, 4.4): every number an IEEE
 * double, an integral one within +-(2^53-1) a JSON integer (so -0 is 0),
 * any other a real; a number no double holds (1e400) and a duplicate key
 * are errors. flags are jansson's decoding flags besides those. New
 * reference, or NULL with e set. */
json_t *json_loadb_doubles(const char *buf, size_t len, size_t flags,
			   json_error_t *e);

#endif
