-- wrk script: requests paths from a weft-fileset MANIFEST with Zipf(s) popularity by rank.
-- Usage: wrk -s zipf.lua URL -- MANIFEST [S] [SEED]
local paths = {}
local cdf = {}

function init(args)
  local manifest = args[1]
  local s = tonumber(args[2] or "1.0")
  math.randomseed(tonumber(args[3] or "1998") + (wrk.thread and 0 or 0))
  for line in io.lines(manifest) do
    if line:sub(1, 1) ~= "#" then
      local path, size, rank = line:match("^(%S+)\t(%d+)\t(%d+)$")
      if path then paths[tonumber(rank)] = path end
    end
  end
  local total = 0
  for k = 1, #paths do
    total = total + 1 / (k ^ s)
    cdf[k] = total
  end
  for k = 1, #paths do cdf[k] = cdf[k] / total end
end

function request()
  local u = math.random()
  local lo, hi = 1, #cdf
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if cdf[mid] < u then lo = mid + 1 else hi = mid end
  end
  return wrk.format("GET", paths[lo])
end
