-- cute.repl_cmd: the REPL's ":" commands (docs/REPL.md) and the record of
-- kernel calls they work on.
--
-- While the REPL runs, every kernel call (k(cfg, ...), k:launch{...}(...),
-- k:ir/compile/ptx/sass(...)) is remembered: the last one overall and the
-- last one of each kernel.  ":ptx EXPR" evaluates EXPR with launches turned
-- into records (nothing runs on the GPU), so ":ptx k(cfg, A, B)" shows the
-- PTX of that call (":ptx k(A, B)", without a launch configuration, works
-- too); ":ptx k" uses k's last call; ":ptx" the last call.
local repl = require("cute.repl")
local cf = require("cute.ffi")

local M = {}

local rec = { last = nil, by_kernel = setmetatable({}, { __mode = "k" }), capture = false }
M.record = rec

-- (a command's error has no user line to point at: the message alone)
local function fail(msg) cf.fail_at(nil, msg) end

local function remember(k, cfg, ...)
  local c = { k = k, cfg = cfg, n = select("#", ...), args = { ... } }
  rec.last = c
  rec.by_kernel[k] = c
  if rec.capture then rec.captured = c end
  return c
end

-- Wrap the kernel and launcher entry points once (REPL sessions only).
function M.install(state)
  M.state = state
  local K = require("cute.kernel").Kernel
  local Launcher = require("cute.launch").Launcher
  if rawget(K, "_repl_wrapped") then return end
  K._repl_wrapped = true
  local kcall, lcall = K.__call, Launcher.__call
  K.__call = function(self, cfg, ...)
    -- (in a command, k(A, B) without a launch configuration means those arguments)
    if rec.capture and not (type(cfg) == "table" and getmetatable(cfg) == nil and (cfg.grid or cfg.block)) then
      remember(self, nil, cfg, ...)
      return
    end
    remember(self, cfg, ...)
    if rec.capture then return end
    return kcall(self, cfg, ...)
  end
  Launcher.__call = function(l, ...)
    remember(l.k, l, ...)
    if rec.capture then return end
    return lcall(l, ...)
  end
  for _, name in ipairs({ "ir", "compile", "ptx", "sass" }) do
    local f = K[name]
    K[name] = function(self, ...)
      if getmetatable(self) == K then remember(self, nil, ...) end
      if rec.capture then return end
      return f(self, ...)
    end
  end
end

-- Evaluate EXPR (interruptible); returns ok, values...
local function eval(state, expr, what)
  local f, err = loadstring("return " .. expr, "=stdin")
  if not f then fail(what .. ": " .. err) end
  if not state.jit then jit.off(f, true) end
  return state.le.call(f, repl.handler)
end

-- The kernel call a command works on (see the top of this file).
local function target(state, expr, what)
  if expr == "" then
    if rec.last then return rec.last end
    fail(("%s: no kernel call yet: call a kernel first, or give one (:%s k(cfg, A, B))"):format(what, what:sub(2)))
  end
  rec.capture, rec.captured = true, nil
  local res = { eval(state, expr, what) }
  rec.capture = false
  local c = rec.captured
  rec.captured = nil
  if not res[1] then fail(res[2]) end
  if c then return c end
  local v = res[2]
  if require("cute.kernel").is_kernel(v) then
    c = rec.by_kernel[v]
    if c then return c end
    fail(("%s: kernel %s has not been called yet: give its arguments (:%s %s(cfg, A, B))"):format(what, v.name,
      what:sub(2), expr))
  end
  fail(("%s: %s is not a kernel call (it gave a %s): write :%s k(cfg, A, B), :%s k:launch{...}(A, B) or :%s k")
    :format(what, expr, type(v), what:sub(2), what:sub(2), what:sub(2)))
end

local function call_k(c, method) return c.k[method](c.k, unpack(c.args, 1, c.n)) end

local function out(s)
  io.write(s, s:sub(-1) == "\n" and "" or "\n")
  io.stdout:flush()
end

---------------------------------------------------------------------------
-- commands
---------------------------------------------------------------------------
local cmds, order = {}, {}
local function def(name, args, help, fn)
  cmds[name] = { args = args, help = help, fn = fn }
  order[#order + 1] = name
end

def("help", "", "this list", function()
  local lines = { "cuteluajit REPL: Lua (LuaJIT 2.1) with `cute` loaded. Expressions print their values;",
    "`=expr` too; unfinished statements continue on the next line (>>). Commands:" }
  for _, n in ipairs(order) do
    local c = cmds[n]
    lines[#lines + 1] = ("  %-22s %s"):format(":" .. n .. (c.args ~= "" and (" " .. c.args) or ""), c.help)
  end
  lines[#lines + 1] = "Keys: Tab completes (cute.make_l<Tab>, k:<Tab>), Up/Down history, Ctrl-C cancels the line"
  lines[#lines + 1] = "or stops running Lua code (a second Ctrl-C while the code does not stop ends cuteluajit),"
  lines[#lines + 1] = "Ctrl-D on an empty line quits.  KCALL: k(cfg, A, B), k:launch{...}(A, B), a kernel k"
  lines[#lines + 1] = "(its last call), or nothing (the last kernel call).  docs/REPL.md has the details."
  out(table.concat(lines, "\n"))
end)

def("ir", "[KCALL]", "the kernel's IR for that call (no GPU needed)", function(state, a)
  out(call_k(target(state, a, ":ir"), "ir"))
end)

def("llvm", "[KCALL]", "its LLVM IR", function(state, a)
  local r = call_k(target(state, a, ":llvm"), "compile")
  out(r.llvm or ":llvm: the LLVM IR was not kept (compile option keep)")
end)

def("ptx", "[KCALL]", "its PTX (no GPU needed)", function(state, a)
  local ptx, msg = call_k(target(state, a, ":ptx"), "ptx")
  out(ptx)
  if msg then repl.report(msg) end
end)

def("sass", "[KCALL]", "its SASS (needs nvdisasm or cuobjdump, and ptxas)", function(state, a)
  out(call_k(target(state, a, ":sass"), "sass"))
end)

-- the block size of a recorded launch, or nil
local function block_threads(c)
  local cfg = c.cfg
  if type(cfg) ~= "table" then return nil end
  if cfg.bx then return cfg.bx * cfg.by * cfg.bz end
  local ok, x, y, z = pcall(require("cute.runtime").launch_dims, cfg.block, "block", ":info", false)
  if ok then return x * y * z end
end

def("info", "[KCALL]", "registers, shared memory, spills, occupancy", function(state, a)
  local c = target(state, a, ":info")
  local r = call_k(c, "compile")
  local i = r.info or {}
  local lines = { ("kernel %s for %s"):format(c.k.name, tostring(r.arch)),
    ("  registers      %s per thread"):format(tostring(i.regs)),
    ("  shared memory  %s B static, %s B dynamic"):format(tostring(i.smem_static), tostring(i.smem_dynamic)),
    ("  spills         %s B stored, %s B loaded; stack %s B"):format(tostring(i.spill_stores),
      tostring(i.spill_loads), tostring(i.stack)) }
  if not r.cubin then lines[#lines + 1] = "  (no ptxas: register and spill figures need ptxas; see docs/COMPILE.md)" end
  local rt = require("cute.runtime")
  local gpu, why = rt.available()
  local threads = block_threads(c)
  if not gpu then
    lines[#lines + 1] = "  occupancy      needs a GPU (no GPU: " .. tostring(why) .. ")"
  elseif not threads then
    lines[#lines + 1] = "  occupancy      give a launch to know the block size (:info k(cfg, A, B))"
  else
    local e = c.k:entry(unpack(c.args, 1, c.n))
    local smem = (c.cfg.smem or e.dyn_smem or 0)
    local blocks = e.func:occupancy(threads, smem)
    local d = rt.device()
    lines[#lines + 1] = ("  occupancy      %d blocks of %d threads per SM = %d warps, %.0f%% of %d"):format(blocks,
      threads, blocks * math.ceil(threads / 32), 100 * blocks * threads / d.max_threads_per_sm,
      d.max_threads_per_sm / 32)
  end
  out(table.concat(lines, "\n"))
end)

local function median(t)
  local s = {}
  for i = 1, #t do s[i] = t[i] end
  table.sort(s)
  local n = #s
  if n % 2 == 1 then return s[(n + 1) / 2] end
  return (s[n / 2] + s[n / 2 + 1]) / 2
end
M.median = median

def("time", "[-n N] EXPR|KCALL", "GPU time (events, median of N=20) and host time", function(state, a)
  local reps = 20
  local n, rest = a:match("^%-n%s*(%d+)%s*(.*)$")
  if n then reps, a = tonumber(n), rest end
  if reps < 1 then fail(":time: -n needs at least 1") end
  local rt = require("cute.runtime")
  local gpu, why = rt.available()
  if not gpu then
    fail((":time: no GPU (%s): nothing to time; :ir, :llvm and :ptx work without one"):format(tostring(why)))
  end
  -- nothing or a kernel's name: its last launch; anything else: the
  -- expression itself, evaluated N times
  local run
  local c = (a == "" or a:match("^[%a_][%w_%.]*$")) and target(state, a, ":time") or nil
  if c then
    if type(c.cfg) ~= "table" then
      fail((":time: the last call of %s was not a launch: give one (:time k(cfg, A, B))"):format(c.k.name))
    end
    run = function()
      if getmetatable(c.cfg) == require("cute.launch").Launcher then return c.cfg(unpack(c.args, 1, c.n)) end
      return c.k(c.cfg, unpack(c.args, 1, c.n))
    end
  else
    local f, err = loadstring("return " .. a, "=stdin")
    if not f then f, err = loadstring(a, "=stdin") end
    if not f then fail(":time: " .. err) end
    if not state.jit then jit.off(f, true) end
    run = f
  end
  local e0, e1 = rt.event{ timing = true }, rt.event{ timing = true }
  local gpu_ms, host_us = {}, {}
  local bench = function()
    run() -- warm-up: trace, compile, load
    rt.synchronize()
    for i = 1, reps do
      e0:record()
      local t0 = rt.now_us()
      run()
      host_us[i] = tonumber(rt.now_us() - t0)
      e1:record()
      e1:synchronize()
      gpu_ms[i] = rt.elapsed_ms(e0, e1)
    end
  end
  local fine, err = state.le.call(bench, repl.handler)
  if not fine then fail(err) end
  local mn, mx = math.huge, 0
  for _, v in ipairs(gpu_ms) do mn, mx = math.min(mn, v), math.max(mx, v) end
  out(("GPU  %.4f ms median of %d (min %.4f, max %.4f)\nhost %.1f us median per call (enqueue)"):format(
    median(gpu_ms), reps, mn, mx, median(host_us)))
end)

local function device_text()
  local rt = require("cute.runtime")
  local compile = require("cute.compile")
  local gpu, why = rt.available()
  local lines = {}
  if not gpu then
    lines[1] = "no GPU: " .. tostring(why)
    lines[2] = ("compile target: %s (the default; k:ptx and :ptx work without a GPU)"):format(compile.default_arch())
  else
    local d = rt.device()
    local arch = compile.device_arch() or compile.default_arch()
    lines[1] = ("device %d: %s, compute capability %d.%d, %d SMs, %.1f GiB"):format(d.ordinal, d.name, d.cc[1],
      d.cc[2], d.sm_count, tonumber(d.total_mem) / 2 ^ 30)
    local kib = function(b) return math.floor(tonumber(b) / 1024) end
    lines[2] = ("  shared memory %d KiB per block (%d KiB opt-in), %d KiB per SM; %d registers per SM"):format(
      kib(d.smem_per_block), kib(d.smem_per_block_optin), kib(d.smem_per_sm), tonumber(d.regs_per_sm))
    lines[3] = ("  %d threads per SM, %d blocks per SM, clusters %s; driver %d"):format(d.max_threads_per_sm,
      d.max_blocks_per_sm, d.cluster_launch and "yes" or "no", rt.driver_version())
    lines[4] = "compile target: " .. tostring(arch)
  end
  return table.concat(lines, "\n")
end
def("device", "", "the GPU (or why there is none) and the compile target", function() out(device_text()) end)
def("arch", "", "the same as :device", function() out(device_text()) end)

def("reload", "[FILE]", "run a script again after editing it (kernels in it are re-read)", function(state, a)
  local path = a ~= "" and a or state.last_file
  if not path then fail(":reload: which file? (:reload path/to/script.lua)") end
  local f, err = io.open(path, "rb")
  if not f then fail((":reload: cannot open %s: %s"):format(path, tostring(err))) end
  local text = f:read("*a")
  f:close()
  state.last_file = path
  local chunk, lerr = loadstring(text, "@" .. path)
  if not chunk then fail(":reload: " .. lerr) end
  -- the kernel front end reads kernels' source: give it the new text
  require("cute.frontend").register_source("@" .. path, text)
  repl.print_results(state.le.call(chunk, repl.handler))
end)

def("show", "X", "draw a layout, swizzled layout, TiledMMA or TiledCopy in colour", function(state, a)
  if a == "" then fail(":show: what? (:show cute.make_layout({4, 8}, {8, 1}))") end
  local res = { eval(state, a, ":show") }
  if not res[1] then fail(res[2]) end
  require("cute.svg").show(res[2])
end)

def("jit", "on|off", "JIT-compile code typed at the prompt (off: Ctrl-C always stops it)", function(state, a)
  if a == "on" then state.jit = true elseif a == "off" then state.jit = false
  elseif a ~= "" then fail(":jit: expected on or off, got " .. a) end
  out("prompt code is " .. (state.jit and "JIT-compiled (a compiled loop may ignore Ctrl-C)" or
    "interpreted (Ctrl-C stops it)"))
end)

def("quit", "", "leave (also Ctrl-D)", function() return false end)

local alias = { q = "quit", h = "help", exit = "quit", load = "reload" }

function M.names()
  local t = {}
  for _, n in ipairs(order) do t[#t + 1] = n end
  return t
end

-- run one command line (":name args"); false ends the session
function M.run(state, line)
  local name, a = line:match("^:([%w_]*)%s*(.-)%s*$")
  name = alias[name] or name
  local c = cmds[name]
  if not c then
    repl.report(("unknown command :%s (:help lists them)"):format(tostring(name)))
    return true
  end
  -- (under the line editor's call: Ctrl-C stops a long compile or benchmark)
  local ok, r = state.le.call(function() return c.fn(state, a or "") end, repl.handler)
  if not ok then
    repl.report(r)
    return true
  end
  return r ~= false
end

return M
