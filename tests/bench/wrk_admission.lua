-- wrk script for run.sh: POST /v1/admission with one fixed admission request,
-- a VMInstance of one device of class BENCH_CLASS in namespace BENCH_NS (a
-- tenant of the simulated ledger run.sh serves). Every answer is a durable
-- VERDICT event, so this measures the group commit.
local ns = os.getenv("BENCH_NS") or "tenant-root"
local cls = os.getenv("BENCH_CLASS") or "h100"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"namespace":"' .. ns .. '","kind":"VMInstance","name":"vm-bench",'
	.. '"old":null,"new":{"gpus":[{"class":"' .. cls .. '"}]}}'
