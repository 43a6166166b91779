-- cute.svg / cute.show (lua/cute/svg.lua, lua/cute/picture.lua): the SVG is
-- well-formed XML, and what each cell shows is the layout's offset, the
-- swizzled element's bank, or the thread and value that hold the element
-- (checked against facts stated independently: row-major offsets, the
-- swizzle's bit formula, the PTX ISA's m16n8k16 fragment layouts).
local util = dofile("spec/support/util.lua")
local cute = require("cute")

local function idiv(a, b) return math.floor(a / b) end

-- A small XML checker: one root, tags nest and close, attributes quoted,
-- no raw '<' or stray '&' in text or attribute values.  Returns the root's name.
local function check_xml(s)
  local pos, stack, root = 1, {}, nil
  s = s:gsub("^<%?xml[^>]*%?>%s*", "")
  local function bad(why) error(("not well-formed XML (%s) near: %s"):format(why, s:sub(pos, pos + 60)), 2) end
  local function check_text(t)
    if t:find("<") then bad("raw <") end
    for amp in t:gmatch("&[^;]*;?") do
      if not amp:match("^&[%w#]+;$") then bad("stray &") end
    end
  end
  while pos <= #s do
    local lt = s:find("<", pos, true)
    if not lt then
      check_text(s:sub(pos))
      if s:sub(pos):find("%S") then bad("text after the root") end
      break
    end
    check_text(s:sub(pos, lt - 1))
    local gt = s:find(">", lt, true)
    if not gt then bad("unclosed tag") end
    local tag = s:sub(lt + 1, gt - 1)
    pos = gt + 1
    if tag:sub(1, 1) == "/" then
      local name = tag:sub(2):match("^%s*([%w:_%-]+)%s*$")
      if not name or stack[#stack] ~= name then bad("mismatched </" .. tostring(name) .. ">") end
      stack[#stack] = nil
    else
      local selfclose = tag:sub(-1) == "/"
      if selfclose then tag = tag:sub(1, -2) end
      local name, attrs = tag:match("^([%w:_%-]+)(.*)$")
      if not name then bad("bad tag name") end
      if #stack == 0 then
        if root then bad("two roots") end
        root = name
      end
      local rest = attrs:gsub('%s+[%w:_%-]+="([^"]*)"', function(v) check_text(v); return "" end)
      if rest:find("%S") then bad("bad attributes: " .. rest) end
      if not selfclose then stack[#stack + 1] = name end
    end
  end
  if #stack > 0 then bad("unclosed <" .. stack[#stack] .. ">") end
  return root
end

-- { [panel name] = { rows =, cols =, cells = { ["r,c"] = {text...} } } }
local function cells_of(svg)
  local panels = {}
  local starts = {}
  for i in svg:gmatch('()<g class="panel"') do starts[#starts + 1] = i end
  starts[#starts + 1] = #svg + 1
  for k = 1, #starts - 1 do
    local body = svg:sub(starts[k], starts[k + 1] - 1)
    local name, px, py = body:match('^<g class="panel" data%-name="([^"]+)" transform="translate%((%d+),(%d+)%)"')
    local p = { cells = {}, x = tonumber(px), y = tonumber(py) }
    p.rows, p.cols = body:match("%((%d+) x (%d+):")
    p.rows, p.cols = tonumber(p.rows), tonumber(p.cols)
    for r, c, inner in body:gmatch('<g class="cell" data%-r="(%d+)" data%-c="(%d+)">(.-)</g>') do
      local texts = {}
      for t in inner:gmatch("<text[^>]*>([^<]*)</text>") do texts[#texts + 1] = t end
      p.cells[r .. "," .. c] = texts
    end
    panels[name] = p
  end
  return panels
end

local function tmp()
  local p = os.tmpname()
  os.remove(p)
  return p .. ".svg"
end

describe("cute.svg", function()
  it("draws a layout: well-formed SVG, each cell the offset of its coordinate", function()
    local L = cute.make_layout({ 4, 8 }, { 8, 1 })
    local file = tmp()
    local s = cute.svg(L, file)
    assert.equal(s, util.read_file(file))
    os.remove(file)
    assert.equal("svg", check_xml(s))
    assert.truthy(s:find('xmlns="http://www.w3.org/2000/svg"', 1, true))
    local p = cells_of(s).offsets
    assert.equal(4, p.rows)
    assert.equal(8, p.cols)
    for r = 0, 3 do
      for c = 0, 7 do assert.same({ tostring(8 * r + c) }, p.cells[r .. "," .. c]) end
    end
  end)

  it("draws a hierarchical layout with mode 1 flattened across", function()
    local L = cute.make_layout({ 4, { 2, 3 } }, { 2, { 1, 8 } })
    local p = cells_of(cute.svg(L)).offsets
    assert.equal(4, p.rows)
    assert.equal(6, p.cols)
    for r = 0, 3 do
      for c = 0, 5 do
        assert.same({ tostring(2 * r + (c % 2) + 8 * idiv(c, 2)) }, p.cells[r .. "," .. c])
      end
    end
  end)

  it("draws a swizzled shared-memory layout: offset and bank of each element", function()
    local sw = cute.make_composed_layout(cute.make_swizzle(3, 3, 3), 0, cute.make_layout({ 8, 64 }, { 64, 1 }))
    local s = cute.svg(sw, { dtype = cute.float16 })
    assert.equal("svg", check_xml(s))
    local p = cells_of(s).banks
    assert.equal(8, p.rows)
    assert.equal(64, p.cols)
    local chunks = {}
    for r = 0, 7 do
      for c = 0, 63 do
        local x = 64 * r + c
        local off = bit.bxor(x, bit.rshift(bit.band(x, 448), 3)) -- Swizzle<3,3,3>: bits 6..8 into 3..5
        local bank = idiv(off * 2, 4) % 32
        assert.same({ tostring(off), "b" .. bank }, p.cells[r .. "," .. c])
      end
      -- the point of the swizzle: column 0 of the 8 rows lands in 8 different 16-byte bank groups
      chunks[idiv(tonumber(p.cells[r .. ",0"][2]:sub(2)), 4)] = true
    end
    local n = 0
    for _ in pairs(chunks) do n = n + 1 end
    assert.equal(8, n)
    -- 4-byte elements: the banks follow the element size
    local p4 = cells_of(cute.svg(sw, { bytes = 4 })).banks
    assert.same({ "9", "b9" }, p4.cells["0,9"])
  end)

  it("draws a TiledMMA's thread-value assignment of A, B and C (m16n8k16, PTX ISA fragments)", function()
    local op = cute.nvgpu.warp.MmaF16BF16Op{ ab_dtype = cute.float16, acc_dtype = cute.float32, shape_mnk = { 16, 8, 16 } }
    local s = cute.svg(cute.make_tiled_mma(op))
    assert.equal("svg", check_xml(s))
    local ps = cells_of(s)
    local A, B, C = ps.A, ps.B, ps.C
    assert.same({ 16, 16, 16, 8, 16, 8 }, { A.rows, A.cols, B.rows, B.cols, C.rows, C.cols }) -- B drawn K x N
    -- placed as print_latex: B above C (same x), A left of C (same y)
    assert.equal(B.x, C.x)
    assert.equal(A.y, C.y)
    assert.is_true(B.y < C.y and A.x < C.x)
    local function tv(t, v) return { "T" .. t, "V" .. v } end
    for r = 0, 15 do
      for k = 0, 15 do -- a0..a7: (g, 2t+i), (g+8, 2t+i), (g, 2t+8+i), (g+8, 2t+8+i)
        assert.same(tv(4 * (r % 8) + idiv(k % 8, 2), k % 2 + 2 * idiv(r, 8) + 4 * idiv(k, 8)), A.cells[r .. "," .. k])
      end
    end
    for n = 0, 7 do
      for k = 0, 15 do -- b0..b3: (k = 2t+i, n = g), (k = 2t+8+i, n = g)
        assert.same(tv(4 * n + idiv(k % 8, 2), k % 2 + 2 * idiv(k, 8)), B.cells[k .. "," .. n])
      end
    end
    for r = 0, 15 do
      for n = 0, 7 do -- c0..c3: (g, 2t+i), (g+8, 2t+i)
        assert.same(tv(4 * (r % 8) + idiv(n, 2), n % 2 + 2 * idiv(r, 8)), C.cells[r .. "," .. n])
      end
    end
  end)

  it("draws a TiledCopy's source and destination thread-value assignment", function()
    local atom = cute.make_copy_atom(cute.nvgpu.CopyUniversalOp(), cute.float16, { num_bits_per_copy = 64 })
    local tc = cute.make_tiled_copy_tv(atom, cute.make_layout({ 4, 2 }, { 2, 1 }), cute.make_layout({ 1, 4 }))
    local s = cute.svg(tc)
    assert.equal("svg", check_xml(s))
    local ps = cells_of(s)
    for _, name in ipairs({ "S", "D" }) do
      local p = ps[name]
      assert.equal(4, p.rows)
      assert.equal(8, p.cols)
      -- thread t sits at (t / 2, t % 2) of the thread layout: its value v at row t / 2, column 4 (t % 2) + v
      for t = 0, 7 do
        for v = 0, 3 do
          assert.same({ "T" .. t, "V" .. v }, p.cells[idiv(t, 2) .. "," .. (4 * (t % 2) + v)])
        end
      end
    end
  end)

  it("escapes text and rejects what it cannot draw, naming the value", function()
    util.expect_error(function() cute.svg(42) end, "cute.svg", "cannot draw 42")
    util.expect_error(function() cute.svg("x") end, "cute.svg", 'cannot draw "x"')
    util.expect_error(function() cute.svg(cute.make_layout(4), 5) end, "cute.svg: file must be a path string")
    util.expect_error(function() cute.svg(cute.make_layout(4), "/nonexistent-dir/x.svg") end,
      "cute.svg: cannot write /nonexistent-dir/x.svg")
    local sw = cute.make_composed_layout(cute.make_swizzle(1, 0, 1), 0, cute.make_layout(4))
    util.expect_error(function() cute.svg(sw, { bytes = 0 }) end, "cute.svg: bytes must be a positive integer, got 0")
    util.expect_error(function() cute.svg(sw, { dtype = "nope" }) end, "cute.svg: dtype must be a cute dtype")
  end)
end)

describe("cute.show", function()
  it("prints the same cells as a terminal grid, coloured only when asked", function()
    local svgmod = require("cute.svg")
    local pic = require("cute.picture").of(cute.make_layout({ 2, 3 }, { 3, 1 }))
    local plain = svgmod.text(pic, { color = false })
    assert.falsy(plain:find("\27", 1, true))
    assert.truthy(plain:find("\n0 0 1 2 \n1 3 4 5 ", 1, true), plain)
    local coloured = svgmod.text(pic, { color = true })
    assert.truthy(coloured:find("\27[30;48;5;", 1, true))
    assert.equal(plain, (coloured:gsub("\27%[[%d;]*m", "")))
  end)
end)
