-- cute: the public Lua API of cuteluajit.   local cute = require("cute")
--
-- Submodules (each also usable alone):
--   cute.layout   CuTe layout algebra (make_layout, composition, divides, ...)
--   cute.repl     REPL helpers (value formatting)
local ffi = require("ffi")
local cf = require("cute.ffi")

local cute = {}

local function merge(mod)
  for k, v in pairs(mod) do
    if cute[k] ~= nil and cute[k] ~= v then
      error("cute: name clash on cute." .. k .. " while loading the API", 0)
    end
    cute[k] = v
  end
end

merge(require("cute.layout"))

cute.version = ffi.string(cf.C.cute_version())

return cute
