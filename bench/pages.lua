-- wrk: GET /v1/projects?per_page=20&page=N with N drawn at random from 1..40 (of 50 pages for 1,000 projects).
-- The Authorization header comes from -H.
init = function()
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
request = function()
  return wrk.format("GET", "/v1/projects?per_page=20&page=" .. math.random(40))
end
