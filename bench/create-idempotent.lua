-- wrk: POST /v1/projects as bench/create.lua, each with a new Idempotency-Key (the Authorization header comes from -H).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
local run = tostring(os.time()) .. "-" .. tostring(math.random(1, 1000000000))
request = function()
  n = n + 1
  wrk.headers["Idempotency-Key"] = "bench-" .. run .. "-" .. n
  return wrk.format(nil, nil, nil, '{"name":"bench ' .. n .. '","description":"created under load"}')
end
