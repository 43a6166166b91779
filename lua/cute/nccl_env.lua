-- cute.nccl_env: communicators across processes started by torchrun or
-- mpirun (nccl.init_from_env), and the unique-id file that carries rank 0's
-- id to the other ranks (docs/NCCL.md, "Across processes").
--
-- The environment: RANK, WORLD_SIZE, LOCAL_RANK (torchrun), else
-- OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK (Open MPI's mpirun), else
-- PMI_RANK / PMI_SIZE (MPICH, Slurm's PMI).  The id: CUTE_NCCL_ID (hex) when
-- set, else the id file.  The file protocol:
--   rank 0 removes any file at the path, makes an id and writes
--     "cute-nccl-id 1\nkey=<run key>\ntime=<os.time()>\nid=<hex>\n"
--   to <path>.tmp.<pid>, renamed to <path> (atomic);
--   the other ranks poll until the file holds the same run key and a time
--   no older than max_age_s (default 60) before their call, up to timeout_s
--   (default CUTE_NCCL_ID_TIMEOUT or 120): a file of an earlier run that
--   crashed is never read (another key, or too old);
--   rank 0 removes the file once its ncclCommInitRank returned, which is
--   after every rank joined (so after every rank read it).
-- The run key: TORCHELASTIC_RUN_ID, MASTER_ADDR, MASTER_PORT,
-- OMPI_MCA_ess_base_jobid, SLURM_JOB_ID, SLURM_STEP_ID (those set) and the
-- world size.  The path: opts.id_file, else CUTE_NCCL_ID_FILE, else
-- $TMPDIR (or /tmp) /cute-nccl-<run key>.id.
local ffi = require("ffi")
local cf = require("cute.ffi")
local rt = require("cute.runtime")

local fail = cf.fail
local C = cf.C

local M = {}

pcall(ffi.cdef, "int usleep(unsigned int usec);")
pcall(ffi.cdef, "int getpid(void);")

-- the first of several variable names that is set, and its name
local function first(getenv, names)
  for _, n in ipairs(names) do
    local v = getenv(n)
    if v ~= nil and v ~= "" then return v, n end
  end
end

local RANK_VARS = { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK" }
local SIZE_VARS = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE" }
local LOCAL_VARS = { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID" }
local KEY_VARS = { "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "OMPI_MCA_ess_base_jobid",
  "SLURM_JOB_ID", "SLURM_STEP_ID" }

local function int_var(v, name, fname, lo)
  local x = tonumber(v)
  if not x or x % 1 ~= 0 or x < lo then fail(("%s: %s=%s is not an integer >= %d"):format(fname, name, v, lo)) end
  return x
end

-- rank, size, local rank (nil when unset) and run key from the environment
function M.world(getenv, fname)
  getenv = getenv or os.getenv
  fname = fname or "nccl.world"
  local r, rname = first(getenv, RANK_VARS)
  local s, sname = first(getenv, SIZE_VARS)
  if not r or not s then
    fail(("%s: the rank and world size are not in the environment (RANK and WORLD_SIZE as torchrun sets them, "
      .. "OMPI_COMM_WORLD_RANK and _SIZE as Open MPI's mpirun does, or PMI_RANK and PMI_SIZE); "
      .. "nccl.init_rank takes them explicitly"):format(fname))
  end
  local rank, size = int_var(r, rname, fname, 0), int_var(s, sname, fname, 1)
  if rank >= size then fail(("%s: %s=%d is not below %s=%d"):format(fname, rname, rank, sname, size)) end
  local l, lname = first(getenv, LOCAL_VARS)
  local key = {}
  for _, n in ipairs(KEY_VARS) do
    local v = getenv(n)
    if v and v ~= "" then key[#key + 1] = v end
  end
  key[#key + 1] = "ws" .. size
  return rank, size, l and int_var(l, lname, fname, 0) or nil, table.concat(key, "-")
end

-- the id file's path for run key `key`
function M.id_file(key, getenv, explicit)
  getenv = getenv or os.getenv
  if explicit then return explicit end
  local env = getenv("CUTE_NCCL_ID_FILE")
  if env and env ~= "" then return env end
  local dir = getenv("TMPDIR")
  if not dir or dir == "" then dir = "/tmp" end
  return dir .. "/cute-nccl-" .. key:gsub("[^%w%._-]", "_"):sub(1, 120) .. ".id"
end

local read_all = cf.read_file

-- rank 0's side: write id (hex) for `key` to path atomically
function M.write_id(path, key, hex, fname)
  os.remove(path)
  cf.write_atomic(path, ("cute-nccl-id 1\nkey=%s\ntime=%d\nid=%s\n"):format(key, os.time(), hex),
    fname .. ": the NCCL id file", ("%s.tmp.%d"):format(path, ffi.C.getpid()))
end

-- the hex id in file text s if it is for `key` and written at `not_before` or
-- later; else nil and why
function M.parse_id(s, key, not_before)
  if not s then return nil, "no file" end
  local k, t, hex = s:match("^cute%-nccl%-id 1\nkey=([^\n]*)\ntime=(%d+)\nid=(%x+)\n$")
  if not k then return nil, "not a complete id file" end
  if k ~= key then return nil, ("written for run key %q, not %q"):format(k, key) end
  if tonumber(t) < not_before then
    return nil, ("written at %d, before %d (an earlier run's)"):format(tonumber(t), not_before)
  end
  return hex
end

-- the other ranks' side: wait for the id of run `key` in path
function M.wait_id(path, key, rank, timeout_s, max_age_s, fname)
  local not_before = os.time() - max_age_s
  local t0 = C.cute_cuda_now_us()
  local why
  repeat
    local hex
    hex, why = M.parse_id(read_all(path), key, not_before)
    if hex then return hex end
    ffi.C.usleep(20000)
  until (C.cute_cuda_now_us() - t0) / 1e6 > timeout_s
  fail(("%s: rank %d waited %g s for rank 0's NCCL id in %s (last look: %s); is rank 0 running, "
    .. "and is the file on a file system every rank sees?  (CUTE_NCCL_ID_FILE or opts.id_file choose it, "
    .. "CUTE_NCCL_ID_TIMEOUT the wait)"):format(fname, rank, timeout_s, path, why))
end

function M.install(nccl)
  -- nccl.init_from_env{[id_file =], [device =], [timeout_s =], [max_age_s =], [env =]}
  -- device: default LOCAL_RANK (or rank) - becomes the current device; false: leave it.
  -- env: a table read instead of the process environment.
  function nccl.init_from_env(opts)
    local fname = "nccl.init_from_env"
    opts = opts or {}
    if type(opts) ~= "table" then fail(("%s: opts %s is not a table"):format(fname, tostring(opts))) end
    local getenv = os.getenv
    if opts.env ~= nil then
      if type(opts.env) ~= "table" then fail(("%s: env %s is not a table"):format(fname, tostring(opts.env))) end
      getenv = function(n) return opts.env[n] end
    end
    local rank, size, local_rank, key = M.world(getenv, fname)
    local device = opts.device
    if device == nil then device = local_rank or rank end
    if device ~= false then rt.set_device(device) end
    local hex_env = getenv("CUTE_NCCL_ID")
    local path
    local id
    if hex_env and hex_env ~= "" then
      id = nccl.id_from_hex(hex_env)
    else
      path = M.id_file(key, getenv, opts.id_file)
      local timeout = opts.timeout_s or tonumber(getenv("CUTE_NCCL_ID_TIMEOUT") or "") or 120
      if rank == 0 then
        id = nccl.unique_id()
        M.write_id(path, key, id:hex(), fname)
      else
        id = nccl.id_from_hex(M.wait_id(path, key, rank, timeout, opts.max_age_s or 60, fname))
      end
    end
    local ok, comm = pcall(nccl.init_rank, { nranks = size, rank = rank, id = id })
    if path and rank == 0 then os.remove(path) end
    if not ok then cf.rethrow(comm) end
    return comm
  end
  nccl.world = function(env)
    local getenv = env and function(n) return env[n] end or os.getenv
    return M.world(getenv, "nccl.world")
  end
end

return M
