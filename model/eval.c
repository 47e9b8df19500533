/*
 * eval (DESIGN 6.1): the model's functions by name, so that any caller can
 * check its own implementation against this one, line by line.
 */
#include "model/model_int.h"

#include <string.h>

static const struct {
	const char *name;
	eval_fn *fn;
} eval_tab[] = {
	{"ParseQuantity", model__eval_parse_quantity},
	{"PodRequests", model__eval_pod_requests},
	{"ToleratesTaint", model__eval_tolerates_taint},
	{"IsDNS1123Label", model__eval_dns1123_label},
	{"IsDNS1123Subdomain", model__eval_dns1123_subdomain},
	{"ClaimName", model__eval_claim_name},
	{"BudgetKey", model__eval_budget_key},
	{"NodeServes", model__eval_node_serves},
	{"Admission", model__eval_admission},
	{"Declaration", model__eval_declaration},
	{"Remaining", model__eval_remaining},
};

int model_eval(const struct eval_ctx *ctx, const char *function,
	       const json_t *input, json_t **out, struct lg_error *err)
{
	*out = NULL;
	if (function == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "\"function\" must be a string");
	for (size_t i = 0; i < sizeof(eval_tab) / sizeof(eval_tab[0]); i++) {
		if (strcmp(eval_tab[i].name, function) != 0)
			continue;
		if (input == NULL)
			return lg_error_set(err, LG_EINVAL, "no \"input\"");
		return eval_tab[i].fn(ctx, input, out, err);
	}
	return lg_error_set(err, LG_EUNKNOWN, "unknown function \"%s\"",
			    function);
}
