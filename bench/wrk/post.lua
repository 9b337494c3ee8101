-- POST a JSON body read from a file, as fast as wrk can.
--   wrk -t1 -c32 -d5s -s bench/wrk/post.lua URL -- BODY_FILE TOKEN RUN_TAG [HEADER...]
-- Each HEADER ("Name: value") is sent too (bench/a2a_send.py: A2A-Version).
-- Every "__SEQ__" in the body becomes a number unique to this run (RUN_TAG, wrk thread, counter), so
-- messages that must carry fresh ids (a request_decision's id) stay valid on every request.
-- At the end one line "WRK_JSON {...}" gives the figures bench/ingest.py reads.

local threads = {}
local counter = 0
local pieces = nil -- the body split around "__SEQ__"
local fixed = nil -- the whole request, when the body has no "__SEQ__"
local headers = { ["Content-Type"] = "application/json" }

function setup(thread)
  thread:set("tag", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  local file = assert(io.open(args[1], "rb"))
  local body = file:read("*a")
  file:close()
  if args[2] and args[2] ~= "" then
    headers["Authorization"] = "Bearer " .. args[2]
  end
  for i = 4, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    headers[name] = value
  end
  prefix = (args[3] or "run") .. "-" .. tostring(tag) .. "-"
  if body:find("__SEQ__", 1, true) then
    pieces = {}
    for piece in (body .. "__SEQ__"):gmatch("(.-)__SEQ__") do
      table.insert(pieces, piece)
    end
  else
    fixed = wrk.format("POST", nil, headers, body)
  end
end

function request()
  if fixed then
    return fixed
  end
  counter = counter + 1
  local seq = prefix .. counter
  return wrk.format("POST", nil, headers, table.concat(pieces, seq))
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "bytes": %d, '
      .. '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, '
      .. '"latency_us": {"p50": %d, "p90": %d, "p99": %d, "max": %d, "mean": %.1f}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, latency.mean
  ))
end
