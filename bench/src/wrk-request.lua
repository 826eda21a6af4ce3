-- wrk script for the benchmark's closed-loop runs: a fresh random parameter on every request, and the
-- summary as one JSON line.
--   wrk ... -s wrk-request.lua http://127.0.0.1:PORT -- METHOD PATH BODY ['Name: value']...
-- PATH, BODY and header values may hold {LO:HI}, replaced on every request by a random integer in
-- [LO, HI]; BODY "" sends no body.
local nthreads = 0
function setup(thread)
  nthreads = nthreads + 1
  thread:set("tid", nthreads)
end

local function compile(t)
  local out, pos = {}, 1
  while pos <= #t do
    local s, e, lo, hi = string.find(t, "{(%d+):(%d+)}", pos)
    if not s then table.insert(out, string.sub(t, pos)); break end
    if s > pos then table.insert(out, string.sub(t, pos, s - 1)) end
    table.insert(out, { tonumber(lo), tonumber(hi) })
    pos = e + 1
  end
  return out
end

local function fill(c)
  local parts = {}
  for i, p in ipairs(c) do
    if type(p) == "table" then parts[i] = tostring(math.random(p[1], p[2])) else parts[i] = p end
  end
  return table.concat(parts)
end

local method, path_t, body_t
local header_t = {} -- headers whose values vary: name -> compiled value
function init(args)
  method = args[1]
  path_t = compile(args[2])
  if args[3] ~= nil and args[3] ~= "" then body_t = compile(args[3]) end
  for i = 4, #args do
    local k, v = string.match(args[i], "^([^:]+):%s*(.*)$")
    if string.find(v, "{%d+:%d+}") then header_t[k] = compile(v) else wrk.headers[k] = v end
  end
  math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
end

function request()
  local body = nil
  if body_t then body = fill(body_t) end
  local headers = nil
  if next(header_t) ~= nil then
    headers = {}
    for k, v in pairs(wrk.headers) do headers[k] = v end
    for k, c in pairs(header_t) do headers[k] = fill(c) end
  end
  return wrk.format(method, fill(path_t), headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"tool":"wrk","requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"mean":%.1f,"min":%d,"p50":%d,"p90":%d,"p99":%d,"p99.9":%d,"p99.99":%d,"max":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.min, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency:percentile(99.99), latency.max))
end
