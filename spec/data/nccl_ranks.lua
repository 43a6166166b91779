-- One rank of a communicator across processes (docs/NCCL.md, "Across
-- processes"), run from the bundle directory by a launcher that sets RANK,
-- WORLD_SIZE and LOCAL_RANK (or Open MPI's / PMI's variables):
--   torchrun --standalone --nproc-per-node 2 --no-python ./bin/cuteluajit spec/data/nccl_ranks.lua
-- (tools/gpu_nccl.sh runs it so, and with the variables set by hand).
-- Each rank checks all_reduce (sum, max), all_gather, reduce_scatter,
-- broadcast and send/recv around the ring against the CPU reference of
-- spec/support/nccl_ref.lua, for several dtypes and sizes, and prints one line
--   NCCL_RANKS PASS rank=R size=N device=D checks=K library=... version=...
-- or NCCL_RANKS FAIL rank=R: <the first error>; the exit status is 0 or 1.
local cute = require("cute")
local ref = dofile("spec/support/nccl_ref.lua")
local nccl = cute.nccl

local rank_label = os.getenv("RANK") or os.getenv("OMPI_COMM_WORLD_RANK") or os.getenv("PMI_RANK") or "?"
local checks = 0
local comm

local function expect_ok(msg)
  if msg then error(msg, 0) end
  checks = checks + 1
end

local function run()
  comm = nccl.init_from_env()
  local r, n = comm:rank(), comm:size()
  local stream = cute.stream()
  local names = { "float32", "bfloat16", "int32", "uint8", "float64" }
  for _, name in ipairs(names) do
    local dt = cute[name]
    for _, size in ipairs({ 1, 7, 4099, 1048579 }) do
      local v = function(q, i) return ref.value(dt, q, i) end
      local mine = ref.upload(dt, size, function(i) return v(r, i) end)
      local out = ref.upload(dt, size, function() return 0 end)
      for _, op in ipairs({ "sum", "max" }) do
        comm:all_reduce(mine, out, op, stream)
        stream:synchronize()
        expect_ok(ref.check(out, size, function(i) return ref.reduce(op, n, function(q) return v(q, i) end) end,
          ("all_reduce %s %s n=%d"):format(op, name, size)))
      end
      local all = ref.upload(dt, n * size, function() return 0 end)
      comm:all_gather(mine, all, stream)
      stream:synchronize()
      expect_ok(ref.check(all, n * size, function(i) return v(math.floor(i / size), i % size) end,
        ("all_gather %s n=%d"):format(name, size)))
      -- reduce_scatter of the gathered data: rank r's block is n x rank r's own data
      local part = ref.upload(dt, size, function() return 0 end)
      comm:reduce_scatter(all, part, "sum", stream)
      stream:synchronize()
      expect_ok(ref.check(part, size, function(i) return n * v(math.floor((r * size + i) / size), (r * size + i) % size) end,
        ("reduce_scatter %s n=%d"):format(name, size)))
      comm:broadcast(mine, out, n - 1, stream)
      stream:synchronize()
      expect_ok(ref.check(out, size, function(i) return v(n - 1, i) end, ("broadcast %s n=%d"):format(name, size)))
      -- around the ring: to rank r + 1, from rank r - 1
      nccl.group(function()
        comm:send(mine, (r + 1) % n, stream)
        comm:recv(out, (r - 1) % n, stream)
      end)
      stream:synchronize()
      expect_ok(ref.check(out, size, function(i) return v((r - 1) % n, i) end, ("send/recv %s n=%d"):format(name, size)))
    end
  end
  return r, n
end

local ok, r, n = pcall(run)
if ok then
  print(("NCCL_RANKS PASS rank=%d size=%d device=%d checks=%d library=%s version=%s"):format(r, n, comm:device(),
    checks, nccl.library(), nccl.version()))
  comm:destroy()
  os.exit(0)
else
  print(("NCCL_RANKS FAIL rank=%s: %s"):format(rank_label, tostring(r)))
  if comm then pcall(comm.abort, comm) end
  os.exit(1)
end
