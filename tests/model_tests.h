/* Parts of the model suite; each tests/model_<part>.c adds its TCases. */
#ifndef GPULEDGER_MODEL_TESTS_H
#define GPULEDGER_MODEL_TESTS_H

#include <check.h>

#include "model/model_int.h"

#include <stdlib.h>
#include <string.h>

#define MODEL_PART(name) void model_tests_##name(Suite *s)

MODEL_PART(quantity);
MODEL_PART(podreq);
MODEL_PART(taint);
MODEL_PART(names);
MODEL_PART(classes);
MODEL_PART(keys);
MODEL_PART(mapping);
MODEL_PART(event);
MODEL_PART(state);
MODEL_PART(verdict);
MODEL_PART(eval);
MODEL_PART(statecodec);
MODEL_PART(billing);
MODEL_PART(jcs);
MODEL_PART(merkle);
MODEL_PART(note);
MODEL_PART(base);
MODEL_PART(reconcile);
MODEL_PART(vfilter);
MODEL_PART(buf);
MODEL_PART(holds);

static void (*const model_parts[])(Suite *) = {
	model_tests_quantity, model_tests_podreq,  model_tests_taint,
	model_tests_names,    model_tests_classes, model_tests_keys,
	model_tests_mapping,  model_tests_event,   model_tests_state,
	model_tests_verdict,  model_tests_eval,	   model_tests_statecodec,
	model_tests_billing,  model_tests_jcs,
	model_tests_merkle, model_tests_note, model_tests_base,
	model_tests_reconcile, model_tests_vfilter, model_tests_buf,
	model_tests_holds,
};

/* Parses a JSON literal for a test; aborts the test on a syntax error. */
static inline json_t *tj(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

	ck_assert_msg(v != NULL, "bad test JSON: %s: %s", e.text, text);
	return v;
}

/* Parses JSON written with single quotes for readability in C literals. */
static inline json_t *tq(const char *text)
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

/* Applies one event in its JSON form (seq and time optional: a missing
 * time keeps the state's) to st. v is borrowed. */
static inline int apply_event_json(state_t *st, const json_t *v,
				   struct lg_error *err)
{
	struct event ev;
	char *scratch = NULL;
	int rc = event_from_json(&ev, v, &scratch, err);

	if (rc == 0) {
		if (json_object_get(v, "time") == NULL)
			ev.time_ns = state_time_ns(st);
		rc = state_apply(st, &ev, err);
	}
	free(scratch);
	return rc;
}

/* One row of an eval function table: input JSON and the canonical output,
 * or NULL when the input must be refused with LG_EINVAL and a message. */
struct eval_row {
	eval_fn *fn;
	const char *input;
	const char *want;
};

static inline void check_eval_row(const struct eval_row *r)
{
	struct eval_ctx ctx = {0};
	struct lg_error err = {0};
	json_t *in = tj(r->input), *out = NULL;
	int rc = r->fn(&ctx, in, &out, &err);

	if (r->want == NULL) {
		ck_assert_msg(rc == LG_EINVAL, "%s: rc %d", r->input, rc);
		ck_assert_int_eq(err.code, LG_EINVAL);
		ck_assert_str_ne(err.msg, "");
		ck_assert_ptr_null(out);
	} else {
		char *s;

		ck_assert_msg(rc == 0, "%s: rc %d: %s", r->input, rc, err.msg);
		s = json_canonical(out);
		ck_assert_str_eq(s, r->want);
		free(s);
	}
	json_decref(out);
	json_decref(in);
}

#endif
