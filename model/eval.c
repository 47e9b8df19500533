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
	{"ParseQuantity", eval_parse_quantity},
	{"PodRequests", eval_pod_requests},
	{"ToleratesTaint", eval_tolerates_taint},
	{"IsDNS1123Label", eval_dns1123_label},
	{"IsDNS1123Subdomain", eval_dns1123_subdomain},
	{"ClaimName", eval_claim_name},
	{"BudgetKey", eval_budget_key},
	{"NodeServes", eval_node_serves},
	{"Admission", eval_admission},
	{"Declaration", eval_declaration},
	{"Remaining", eval_remaining},
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
