-- SPDX-License-Identifier: BSD-2-Clause
-- bench/load.lua - wrk's mix for bench/load: 70% resolve, 20% conditional
-- catalog_snapshot, 10% append.  Environment (set by bench/load):
--   LOAD_TOKEN   bearer token (a query-service principal)
--   LOAD_STAGE   the registry's stage URL, for the appended segments
--   LOAD_RUN     a tag that keeps segment locations unique across runs
-- Each thread keeps the generation its last snapshot saw (known_generation,
-- so most snapshots answer not_modified) and the version of load.events
-- its last append or conflict reported (expected_version: concurrent
-- appenders make it stale, which is the designed 409).  The answers are
-- counted by HTTP status; done() prints machine-readable LOAD lines.

local token = os.getenv("LOAD_TOKEN")
local stage = os.getenv("LOAD_STAGE")
local run = os.getenv("LOAD_RUN") or "0"
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("tid", #threads)
end

function init(args)
  codes = {}
  generation = -1
  version = 0
  seq = 0
  math.randomseed(tid * 7919 + os.time())
  headers = { ["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. token }
  sha = string.rep("5a", 32)
  resolve = wrk.format("POST", "/v1/actions/resolve", headers, '{"namespace":"docs","name":"papers"}')
end

function request()
  local r = math.random(100)
  if r <= 70 then
    return resolve
  elseif r <= 90 then
    return wrk.format("POST", "/v1/actions/catalog_snapshot", headers,
      string.format('{"known_generation":%d}', generation))
  end
  seq = seq + 1
  return wrk.format("POST", "/v1/actions/append", headers, string.format(
    '{"namespace":"load","name":"events","expected_version":%d,"segments":[{"location":'
      .. '"%s/tables/load/r%s-t%d-%d","size":4096,"sha256":"%s","rows":100}],"files":[]}',
    version, stage, run, tid, seq, sha))
end

function response(status, hdrs, body)
  codes[status] = (codes[status] or 0) + 1
  local g = body:match('^{"status":"[a-z_]+","generation":(%d+)')
  if g then generation = tonumber(g) end
  local v = body:match('^{"version":(%d+)}$') or body:match('is at version (%d+), not')
  if v then version = tonumber(v) end
end

function done(summary, latency, requests)
  local total = {}
  for _, t in ipairs(threads) do
    for code, n in pairs(t:get("codes")) do total[code] = (total[code] or 0) + n end
  end
  local secs = summary.duration / 1e6
  io.write(string.format("LOAD\trps\t%.1f\n", summary.requests / secs))
  io.write(string.format("LOAD\tp50_ms\t%.3f\n", latency:percentile(50) / 1000))
  io.write(string.format("LOAD\tp99_ms\t%.3f\n", latency:percentile(99) / 1000))
  for code, n in pairs(total) do io.write(string.format("LOAD\tstatus\t%d\t%d\n", code, n)) end
  local e = summary.errors
  io.write(string.format("LOAD\tsocket\tconnect=%d read=%d write=%d timeout=%d\n",
    e.connect, e.read, e.write, e.timeout))
end
