-- wrk: GET /v1/projects/:id for an id drawn at random from a file of ids, one a line (wrk ... -- <file>).
-- The Authorization header comes from -H.
local ids = {}
init = function(args)
  for line in io.lines(args[1]) do
    if line ~= "" then ids[#ids + 1] = line end
  end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
request = function()
  return wrk.format("GET", "/v1/projects/" .. ids[math.random(#ids)])
end
