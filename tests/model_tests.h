/* Parts of the model suite; each tests/model_<part>.c adds its TCases. */
#ifndef GPULEDGER_MODEL_TESTS_H
#define GPULEDGER_MODEL_TESTS_H

#include <check.h>

#include "model/model.h"

#define MODEL_PART(name) void model_tests_##name(Suite *s) __attribute__((weak))

MODEL_PART(err);
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

static void (*const model_parts[])(Suite *) = {
	model_tests_err,     model_tests_quantity, model_tests_podreq,
	model_tests_taint,   model_tests_names,    model_tests_classes,
	model_tests_keys,    model_tests_mapping,  model_tests_event,
	model_tests_state,   model_tests_verdict,  model_tests_eval,
};

/* Parses a JSON literal for a test; aborts the test on a syntax error. */
static inline json_t *tj(const char *text)
{
	json_error_t e;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

	ck_assert_msg(v != NULL, "bad test JSON: %s: %s", e.text, text);
	return v;
}

#endif
