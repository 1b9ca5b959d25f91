-- wrk script: 2026-07-28 `tasks/get` of one task, the request P2 measures.
--   TASK_ID=<id> wrk -t2 -c32 -d10s -s bench/wrk/tasks-get.lua http://127.0.0.1:3200/mcp
-- (bench/README.md shows how to create a task with curl and start the benchmark server.)
local task_id = os.getenv("TASK_ID") or error("set TASK_ID to the id of a task created on this server")
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tasks/get"
wrk.headers["mcp-name"] = task_id
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"' .. task_id .. '","_meta":{'
  .. '"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"0"}}}}'

-- Count answers that are not a task, so a misconfigured run is not mistaken for throughput. Each wrk thread has its
-- own Lua state: `bad` is a global per thread, summed in `done` through the thread handles kept by `setup`.
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end

bad = 0
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"status":"', 1, true) then bad = bad + 1 end
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("bad") end
  io.write(string.format("non-task answers: %d\n", total))
end
