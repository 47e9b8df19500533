-- wrk script for run.sh: POST /v1/admission with one admission request, a
-- VMInstance of one device of class BENCH_CLASS in namespace BENCH_NS (a
-- tenant of the simulated ledger run.sh serves). Every answer is a durable
-- VERDICT event, so this measures the group commit. With BENCH_UID_PREFIX
-- set, every request carries its own Idempotency-Key (PREFIX-THREAD-N), so
-- that no answer is a recorded verdict returned again (DESIGN 11 rule 3).
local ns = os.getenv("BENCH_NS") or "tenant-root"
local cls = os.getenv("BENCH_CLASS") or "h100"
local uidp = os.getenv("BENCH_UID_PREFIX")
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"namespace":"' .. ns .. '","kind":"VMInstance","name":"vm-bench",'
	.. '"old":null,"new":{"gpus":[{"class":"' .. cls .. '"}]}}'

local threads = 0
function setup(thread)
	threads = threads + 1
	thread:set("tid", threads)
end

local n = 0
function request()
	if uidp == nil then
		return wrk.request()
	end
	n = n + 1
	return wrk.format(nil, nil, {["Content-Type"] = "application/json",
		["Idempotency-Key"] = uidp .. "-" .. tostring(tid) .. "-" .. n}, nil)
end
