-- Small helpers shared by the specs (load with dofile("spec/support/util.lua")).
local M = {}

-- whole file as a string, or nil if it cannot be opened
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

-- plain-text search (no patterns); false for nil
function M.has(s, sub) return s ~= nil and s:find(sub, 1, true) ~= nil end

return M
