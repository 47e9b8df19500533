/*
 * eval (DESIGN 6.1): the model's functions by name, so that any caller can
 * check its own implementation against this one, line by line.
 */
#include "model/model_int.h"

#include <string.h>

static const struct {
	const char *name;
	eval_fn *fn;
	bool verdict; /* its input is a verdict request (DESIGN 3.5) */
} eval_tab[] = {
	{"ParseQuantity", model__eval_parse_quantity, false},
	{"PodRequests", model__eval_pod_requests, false},
	{"ToleratesTaint", model__eval_tolerates_taint, false},
	{"IsDNS1123Label", model__eval_dns1123_label, false},
	{"IsDNS1123Subdomain", model__eval_dns1123_subdomain, false},
	{"ClaimName", model__eval_claim_name, false},
	{"BudgetKey", model__eval_budget_key, false},
	{"NodeServes", model__eval_node_serves, false},
	{"Admission", model__eval_admission, true},
	{"Declaration", model__eval_declaration, true},
	{"Remaining", model__eval_remaining, false},
};

bool model_eval_is_verdict(const char *function)
{
	for (size_t i = 0;
	     function != NULL && i < sizeof(eval_tab) / sizeof(eval_tab[0]);
	     i++)
		if (strcmp(eval_tab[i].name, function) == 0)
			return eval_tab[i].verdict;
	return false;
}

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
