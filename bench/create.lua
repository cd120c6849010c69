-- wrk: POST /v1/projects with a JSON body (the Authorization header comes from -H).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local n = 0
request = function()
  n = n + 1
  return wrk.format(nil, nil, nil, '{"name":"bench ' .. n .. '","description":"created under load"}')
end
