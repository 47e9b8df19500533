-- wrk script: POST /v1/admission with one fixed admission request (a VM of
-- one h100 in tenant-acme-dev of tests/query/base.ndjson). Every answer is
-- a durable VERDICT event, so this measures the group commit.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"namespace":"tenant-acme-dev","kind":"VMInstance","name":"vm-bench",'
	.. '"old":null,"new":{"gpus":[{"class":"h100"}]}}'
