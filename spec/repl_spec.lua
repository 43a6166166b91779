-- The cuteluajit REPL (docs/REPL.md), typed at through a pseudo-terminal
-- (spec/support/pty.lua): Ctrl-C at the prompt, at a continuation line and
-- while Lua runs keeps the session; Tab completion; history written line by
-- line; :ptx without a GPU; printing.  Plus the printing and completion
-- functions called directly.
local util = dofile("spec/support/util.lua")
local pty = dofile("spec/support/pty.lua")
local cute = require("cute")
local repl = require("cute.repl")
local complete = require("cute.repl_complete").complete

local exe = util.self_exe()
local T = 30 -- seconds to wait for an answer (ASan builds are slow)

local function tmpfile()
  local p = os.tmpname()
  os.remove(p)
  return p
end

-- a REPL on a terminal, its history in a file of its own
local function start(hist)
  local p = pty.spawn({ exe, "-i" }, { "CUTE_HISTORY=" .. hist, "TERM=xterm", "NO_COLOR=1" })
  assert(p:expect("cute> ", T), "no prompt: " .. p.out)
  return p
end

local function each_session(fn)
  local hist = tmpfile()
  local p = start(hist)
  local ok, err = pcall(fn, p, hist)
  p:close()
  os.remove(hist)
  if not ok then error(tostring(err) .. "\n--- terminal output ---\n" .. p.out, 0) end
end

local function must(p, text)
  assert(p:expect(text, T), ("expected %q; after the last match the terminal shows: %q"):format(text, p:rest()))
end

describe("the REPL on a terminal", function()
  it("Ctrl-C at the prompt cancels the line and keeps the session", function()
    each_session(function(p)
      p:send("1 + ")
      p:send("\3")
      must(p, "^C")
      must(p, "cute> ")
      p:send("6 * 7\r")
      must(p, "\r\n42\r\n")
      assert.is_true(p:alive())
    end)
  end)

  it("Ctrl-C at a continuation line drops the unfinished chunk", function()
    each_session(function(p)
      p:send("for i = 1, 3 do\r")
      must(p, ">> ")
      p:send("print('in the loop')")
      p:send("\3")
      must(p, "cute> ")
      p:send("print('after' .. 'wards')\r")
      must(p, "afterwards")
      assert.is_nil(p.out:find("in the loop\r\n", 1, true), "the dropped chunk ran")
    end)
  end)

  it("Ctrl-C stops `while true do end` and the session goes on", function()
    each_session(function(p)
      p:send("print('spin' .. 'ning') while true do end\r")
      must(p, "spinning")
      -- the loop is running now: give it a moment, then interrupt
      p:pump(300)
      p:send("\3")
      must(p, "interrupted!")
      must(p, "cute> ")
      p:send("2 + 3\r")
      must(p, "\r\n5\r\n")
      -- and inside a command
      p:send(":show (function() print('look' .. 'ing') while true do end end)()\r")
      must(p, "looking")
      p:pump(300)
      p:send("\3")
      must(p, "interrupted!")
      p:send("7 * 6\r")
      must(p, "\r\n42\r\n")
      assert.is_true(p:alive())
    end)
  end)

  it("Tab completes cute.make_l to cute.make_layout", function()
    each_session(function(p)
      p:send("cute.make_l\t")
      must(p, "cute.make_layout")
      p:send("({2, 3})\r") -- the completed line runs
      must(p, "(2,3):(1,2)")
    end)
  end)

  it("Tab after k: offers the kernel's methods", function()
    each_session(function(p)
      p:send("k = cute.kernel(function(A) A[0] = 1 end)\r")
      must(p, "cute> ")
      p:send("k:\t")
      must(p, "compile(")
      must(p, "ptx(")
      p:send("\3")
      must(p, "cute> ")
      p:send("k:pt\t")
      must(p, "k:ptx(")
      p:send("cute.tensor_spec({8}, cute.float32)):match('%.entry [%w_]+')\r")
      must(p, ".entry kernel_1")
    end)
  end)

  it(":ptx shows a kernel call's PTX without launching it (no GPU needed)", function()
    each_session(function(p)
      p:send("k = cute.kernel(function(A, B) local i = cute.arch.thread_idx() B[i] = A[i] + 1 end, {name = 'addone'})\r")
      must(p, "cute> ")
      p:send("A = cute.tensor_spec({32}, cute.float32)\r")
      must(p, "cute> ")
      p:send(":ptx k({grid = 1, block = 32}, A, A)\r")
      must(p, ".visible .entry addone(")
      must(p, "cute> ")
      -- the recorded call: :ir with no argument is the last kernel call
      p:send(":ir\r")
      must(p, "kernel @addone(")
      must(p, "cute> ")
      p:send(":ptx 1 + 1\r")
      must(p, "is not a kernel call")
      local gpu = cute.available()
      if not gpu then
        p:send(":time k({grid = 1, block = 32}, A, A)\r")
        must(p, ":time: no GPU")
        p:send(":device\r")
        must(p, "no GPU: ")
      end
    end)
  end)

  it("prints strings as text, =expr, and tables as fields", function()
    each_session(function(p)
      p:send("'one' .. '\\n' .. 'two'\r")
      must(p, "one\r\ntwo")
      p:send("=2^10\r")
      must(p, "\r\n1024\r\n")
      p:send("{ name = 'x', size = 3, inner = { ok = true } }\r")
      must(p, '{ inner = { ok = true }, name = "x", size = 3 }')
    end)
  end)

  it("appends each line to the history file as it is typed", function()
    each_session(function(p, hist)
      p:send("first_line = 1\r")
      must(p, "cute> ")
      p:send("for i = 1, 2 do\r")
      must(p, ">> ")
      p:send("end\r")
      must(p, "cute> ")
      p:send(":help\r")
      must(p, ":reload")
      must(p, "cute> ")
      -- the session is still running: the file already has every line
      local text = util.read_file(hist) or ""
      assert.equal("first_line = 1\nfor i = 1, 2 do\nend\n:help\n", text)
      -- a new session reads it: Up recalls the last line
      p:close()
      local q = start(hist)
      q:send("\27[A\27[A\27[A\27[A")
      must(q, "first_line = 1")
      q:send("\r")
      q:send("first_line + 1\r")
      must(q, "\r\n2\r\n")
      q:close()
    end)
  end)

  it("ends at Ctrl-D on an empty line", function()
    each_session(function(p)
      p:send("\4")
      assert.is_true(p:wait(T))
    end)
  end)
end)

describe("REPL printing", function()
  it("shows strings as text and layouts in CuTe notation", function()
    assert.equal("a\nb", repl.format("a\nb"))
    assert.equal("(4,8):(8,1)", repl.format(cute.make_layout({ 4, 8 }, { 8, 1 })))
    assert.equal("(2,(3,4))", repl.format({ 2, { 3, 4 } }))
    assert.equal("1\ttext", repl.format_all(1, "text"))
    assert.equal("Sw<3,3,3> o 0 o 8:1",
      repl.format(cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout(8))))
    assert.equal("5ULL", repl.format(require("ffi").new("uint64_t", 5))) -- other cdata as Lua shows it
  end)

  it("shows tables as sorted fields, long text as a summary", function()
    assert.equal('{ a = 1, b = "x", c = { true } }', repl.format({ b = "x", a = 1, c = { true } }))
    local s = repl.format({ ptx = ("line\n"):rep(40), regs = 32 })
    assert.equal("{ ptx = <text: 40 lines, 200 bytes>, regs = 32 }", s)
    local t = {}
    t.self = t
    assert.equal("{ self = <cycle> }", repl.format(t))
  end)

  it("shows a compile result as its summary and its fields", function()
    local k = cute.kernel(function(A) A[0] = 2 end, { name = "two" })
    local r = k:compile(cute.tensor_spec({ 4 }, cute.float32))
    local s = repl.format(r)
    assert.truthy(s:find("^compiled {two} for "), s)
    assert.truthy(s:find("ptx = <text: %d+ lines"), s)
    assert.truthy(s:find("info = {"), s)
    assert.truthy(s:find("regs = "), s)
  end)
end)

describe("REPL completion", function()
  local function has(list, x)
    for _, v in ipairs(list) do if v == x then return true end end
    return false
  end
  it("completes fields of cute and globals", function()
    local start, c = complete("x = cute.make_l")
    assert.equal(#"x = cute." + 1, start)
    assert.is_true(has(c, "make_layout("))
    assert.is_true(has(c, "make_layout_left("))
    for _, v in ipairs(c) do assert.equal("make_l", v:sub(1, 6)) end
    start, c = complete("pri")
    assert.equal(1, start)
    assert.is_true(has(c, "print("))
    start, c = complete("whi")
    assert.is_true(has(c, "while"))
  end)

  it("completes methods after ':' (kernels, layouts, strings) and commands", function()
    _G.__spec_k = cute.kernel(function(A) A[0] = 1 end)
    local _, c = complete("__spec_k:")
    assert.is_true(has(c, "ptx("))
    assert.is_true(has(c, "compile("))
    assert.is_false(has(c, "name")) -- a field, not a method
    _G.__spec_L = cute.make_layout({ 4, 8 })
    _, c = complete("__spec_L:s")
    assert.is_true(has(c, "shape("))
    assert.is_true(has(c, "size("))
    _G.__spec_s = "text"
    _, c = complete("__spec_s:up")
    assert.same({ "upper(" }, c)
    _G.__spec_k, _G.__spec_L, _G.__spec_s = nil, nil, nil
    _, c = complete(":pt")
    assert.same({ "ptx" }, c)
  end)

  it("offers nothing inside strings, after numbers or for unknown names", function()
    assert.same({}, select(2, complete("print('cute.make_l")))
    assert.same({}, select(2, complete("x = 1.5")))
    assert.same({}, select(2, complete("no_such_global_xyz.fi")))
  end)
end)

describe("the REPL with a GPU", function()
  util.device_it(":time (events, median of N), :info (occupancy) and :device on a launched kernel",
    ":info's registers and occupancy come from the cubin and the driver", function()
    each_session(function(p)
      p:send("k = cute.kernel(function(A) local i = cute.arch.block_idx() * 128 + cute.arch.thread_idx() " ..
        "A[i] = A[i] + 1 end, {name = 'inc'})\r")
      must(p, "cute> ")
      p:send("A = cute.zeros({1024}, cute.float32)\r")
      must(p, "cute> ")
      p:send("k({grid = 8, block = 128}, A)\r")
      must(p, "cute> ")
      p:send(":time -n 5\r") -- the last launch: a warm-up run, then 5 timed
      must(p, "GPU  ")
      must(p, "median of 5")
      must(p, "host ")
      must(p, "cute> ")
      p:send(":time -n 3 k({grid = 8, block = 128}, A)\r") -- an expression: 1 + 3 runs
      must(p, "median of 3")
      must(p, "cute> ")
      p:send(":info\r")
      must(p, "registers")
      must(p, "blocks of 128 threads per SM")
      must(p, "cute> ")
      p:send(":device\r")
      must(p, "compute capability")
      must(p, "cute> ")
      -- every run really launched: 1 + (1 + 5) + (1 + 3)
      p:send("A:to_table()[1]\r")
      must(p, "\r\n11\r\n")
    end)
  end)
end)

describe("REPL commands (stdin from a file)", function()
  local function session(lines)
    local input, outf = tmpfile(), tmpfile()
    local f = assert(io.open(input, "w"))
    f:write(table.concat(lines, "\n"), "\n")
    f:close()
    os.execute(("CUTE_HISTORY= %s -i < %s > %s 2>&1"):format(exe, input, outf))
    local out = util.read_file(outf) or ""
    os.remove(input)
    os.remove(outf)
    return out
  end

  it(":reload runs an edited script again and its kernels are re-read", function()
    local script = tmpfile() .. ".lua"
    local function write(v)
      local f = assert(io.open(script, "w"))
      f:write(("rk = cute.kernel(function(A) A[0] = %d end, {name = 'rk'})\nreturn 'version %d'\n"):format(v, v))
      f:close()
    end
    write(7)
    local out = session({ ":reload " .. script, ":ir rk(cute.tensor_spec({4}, cute.float32))",
      ("F = io.open(%q, 'w')"):format(script),
      "F:write(\"rk = cute.kernel(function(A) A[0] = 9 end, {name = 'rk'})\\nreturn 'version 9'\\n\")",
      "F:close()",
      ":reload", ":ir rk(cute.tensor_spec({4}, cute.float32))", ":reload /nonexistent/x.lua" })
    os.remove(script)
    assert.truthy(out:find("version 7", 1, true), out)
    assert.truthy(out:find("store %2, 7.0:f32", 1, true), out)
    assert.truthy(out:find("version 9", 1, true), out)
    assert.truthy(out:find("store %2, 9.0:f32", 1, true), out)
    assert.truthy(out:find(":reload: cannot open /nonexistent/x.lua", 1, true), out)
  end)

  it(":llvm, :show, :help and errors that name the command", function()
    local out = session({ "k = cute.kernel(function(A) A[0] = 1 end, {name = 'one'})",
      ":llvm k(cute.tensor_spec({4}, cute.float32))", ":show cute.make_layout({2, 3}, {3, 1})", ":help",
      ":ptx", ":nosuch", ":show", ":sass" })
    assert.truthy(out:find("define ptx_kernel void @one(", 1, true), out)
    assert.truthy(out:find("0 0 1 2 \n1 3 4 5 ", 1, true), out)
    for _, c in ipairs({ ":ir", ":llvm", ":ptx", ":sass", ":time", ":info", ":arch", ":device", ":reload", ":show",
      ":help" }) do
      assert.truthy(out:find("\n  " .. c .. " ", 1, true), c)
    end
    assert.truthy(out:find("unknown command :nosuch", 1, true), out)
    assert.truthy(out:find(":show: what?", 1, true), out)
    -- :sass: the SASS when a disassembler (and ptxas) is installed, else an error naming nvdisasm
    assert.truthy(out:find("EXIT", 1, true) or out:find("sass: no disassembler found (searched CUTE_NVDISASM", 1, true)
      or out:find("ptxas", 1, true), out)
  end)

  it(":ptx with no kernel call yet says so", function()
    local out = session({ ":ptx", ":ptx 42", "f = 1", ":ir f" })
    assert.truthy(out:find(":ptx: no kernel call yet", 1, true), out)
    assert.truthy(out:find(":ptx: 42 is not a kernel call (it gave a number)", 1, true), out)
    assert.truthy(out:find(":ir: f is not a kernel call", 1, true), out)
  end)
end)
