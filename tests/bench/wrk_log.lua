-- wrk script for run.sh's cluster figures (DESIGN 10's cluster bullet,
-- issue 40): POSTs one body, every request with its own id in it, and logs
-- every request's times and status, so that the latencies of several wrk
-- processes can be pooled (wrk 4.1 reports its percentiles only after
-- adding synthetic samples for coordinated omission, stats_correct, so its
-- histogram is not the requests') and refusals can be placed in time.
--
-- Run it with one connection per thread (wrk -tN -cN): requests and
-- answers of a thread then alternate, and each answer is paired with its
-- request.
--
-- Environment:
--   BENCH_BODY  a file holding the body on one line, with the text @ID@
--               where the request's id goes (an AdmissionReview's
--               request.uid, an etcd put's key);
--   BENCH_ID    the ids' prefix, unique per wrk process: an id is
--               PREFIX-THREAD-N;
--   BENCH_B64   when set, the id is put in base64 (etcd's JSON gateway
--               takes keys so);
--   BENCH_LOG   the log files' prefix: thread T writes BENCH_LOG.T, one
--               line per request, "sent received status id" (seconds of
--               CLOCK_REALTIME, comparable across processes; status 0: no
--               answer came, the connection failed and wrk sent another;
--               the id in clear).
-- done() prints "SUMMARY requests R duration_us D non2xx N connect C read R
-- write W timeout T" from wrk's own counters.
local ffi = require("ffi")
local bit = require("bit")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk_id, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now()
	ffi.C.clock_gettime(0, ts)
	return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

local b64chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
	local out = {}
	for i = 1, #s, 3 do
		local a, b, c = s:byte(i, i + 2)
		local v = bit.bor(bit.lshift(a, 16), bit.lshift(b or 0, 8), c or 0)
		local n = (b == nil) and 2 or ((c == nil) and 3 or 4)
		for k = 1, 4 do
			if k <= n then
				local x = bit.band(bit.rshift(v, 6 * (4 - k)), 63) + 1
				out[#out + 1] = b64chars:sub(x, x)
			else
				out[#out + 1] = "="
			end
		end
	end
	return table.concat(out)
end

local path = os.getenv("BENCH_BODY") or error("BENCH_BODY is not set")
local f = assert(io.open(path, "r"))
local body = f:read("*l")
f:close()
local cut = body:find("@ID@", 1, true) or error(path .. ": no @ID@")
local head, tail = body:sub(1, cut - 1), body:sub(cut + 4)
local idp = os.getenv("BENCH_ID") or "u"
local enc = os.getenv("BENCH_B64") and b64 or function(s) return s end
local logp = os.getenv("BENCH_LOG") or error("BENCH_LOG is not set")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"

local threads = {}
function setup(thread)
	table.insert(threads, thread)
	thread:set("tid", #threads)
end

local n = 0
local out, pending, pending_t
function init(args)
	out = assert(io.open(logp .. "." .. tid, "w"))
	out:setvbuf("line")
end

function request()
	n = n + 1
	local id = idp .. "-" .. tid .. "-" .. n
	-- wrk calls the first thread's request() once before it starts, to
	-- check the request; that one is never sent.
	if not (tid == 1 and n == 1) then
		local t = now()
		-- A request still pending when the next is made got no answer:
		-- its connection failed and wrk connected again.
		if pending then
			out:write(string.format("%.6f %.6f 0 %s\n", pending_t, t, pending))
		end
		pending, pending_t = id, t
	end
	return wrk.format(nil, nil, nil, head .. enc(id) .. tail)
end

function response(status, headers, body)
	if pending then
		out:write(string.format("%.6f %.6f %d %s\n", pending_t, now(),
			status, pending))
		pending = nil
	end
end

function done(summary, latency, requests)
	local e = summary.errors
	io.write(string.format("SUMMARY requests %d duration_us %d non2xx %d "
		.. "connect %d read %d write %d timeout %d\n", summary.requests,
		summary.duration, e.status, e.connect, e.read, e.write, e.timeout))
end
