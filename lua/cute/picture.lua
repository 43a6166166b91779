-- cute.picture: what cute.svg and the REPL's :show draw, as data.
--
-- picture.of(x, opts, what) -> { title =, note =, panels = { panel... } [, grid = { [name] = {col, row} }] }
--   (grid: where a drawing puts each panel; without it, left to right)
--   panel = { name =, rows =, cols =, row_label =, col_label =,
--             cells = { [r * cols + c + 1] = cell } }   (r, c 0-based)
--   cell  = { lines = {text...}, color = k (0-based palette index), offset =,
--             bank =, tid =, vid = }
-- x is a layout (cells: coordinate -> offset), a composed (swizzled) layout
-- (cells: offset and shared-memory bank), a TiledMMA (panels A (M x K), B
-- (K x N) and C (M x N): the thread and value of each element, as CuTe's print_latex) or a TiledCopy
-- (panels S and D).  opts: dtype (a cute dtype or its name: the element size
-- for banks; default 16-bit), bytes (element size in bytes, instead of dtype).
local layout = require("cute.layout")
local cf = require("cute.ffi")

local M = {}

M.palette_size = 8
local MAX_CELLS = 65536

local function fail(what, fmt, ...) cf.fail(what .. ": " .. fmt:format(...)) end

-- rows and columns of a layout: mode 0 down, every other mode across
-- (colexicographic), so the cell (r, c) holds L(r + rows * c)
local function grid_of(L, what)
  local r = layout.rank(L)
  local size = layout.size(L)
  if r == 0 or size == 0 then fail(what, "layout %s has no elements to draw", tostring(L)) end
  local rows = r == 1 and 1 or layout.size(layout.get(L, 0))
  if size > MAX_CELLS then
    fail(what, "layout %s has %d elements; pictures stop at %d", tostring(L), size, MAX_CELLS)
  end
  return rows, math.floor(size / rows)
end

local function elem_bytes(opts, what)
  if opts.bytes ~= nil then
    local b = opts.bytes
    if type(b) ~= "number" or b <= 0 or b % 1 ~= 0 then fail(what, "bytes must be a positive integer, got %s", tostring(b)) end
    return b
  end
  if opts.dtype ~= nil then
    local ok, dt = pcall(require("cute.dtype").to_dtype, opts.dtype, what)
    if not ok or type(dt) ~= "table" or not dt.size then
      fail(what, "dtype must be a cute dtype such as cute.float16, got %s", tostring(opts.dtype))
    end
    return dt.size
  end
  return 2
end

local function layout_picture(L, opts, what)
  local composed = layout.is_composed(L)
  local rows, cols = grid_of(L, what)
  local p = { name = composed and "banks" or "offsets", rows = rows, cols = cols, row_label = "mode 0",
    col_label = layout.rank(L) > 2 and "modes 1.." or "mode 1", cells = {} }
  local bytes = composed and elem_bytes(opts, what)
  for c = 0, cols - 1 do
    for r = 0, rows - 1 do
      local off = L(r + rows * c)
      local cell = { offset = off }
      if composed then
        cell.bank = math.floor(off * bytes / 4) % 32
        cell.lines = { tostring(off), "b" .. cell.bank }
        cell.color = cell.bank % M.palette_size
      else
        cell.lines = { tostring(off) }
        cell.color = off % M.palette_size
      end
      p.cells[r * cols + c + 1] = cell
    end
  end
  local pic = { title = tostring(L), panels = { p } }
  if composed then
    pic.note = ("cell: offset and shared-memory bank, bank = (offset * %d B / 4) mod 32; colour: bank mod %d")
      :format(bytes, M.palette_size)
  else
    pic.note = ("cell (i, j): the offset L(i + %d * j); colour: offset mod %d"):format(rows, M.palette_size)
  end
  return pic
end

-- One panel of thread-value assignments: tv maps (thread, value) to the
-- column-major index of a rows x cols tile; each element shows the first
-- thread (then value) that holds it.  transpose: draw the tile's columns as
-- rows (B as K x N, above C, as CuTe's print_latex).
local function tv_panel(name, tv, rows, cols, row_label, col_label, transpose)
  local dr, dc = rows, cols
  if transpose then dr, dc, row_label, col_label = cols, rows, col_label, row_label end
  local p = { name = name, rows = dr, cols = dc, row_label = row_label, col_label = col_label, cells = {} }
  local nthr, nval = layout.size(layout.get(tv, 0)), layout.size(layout.get(tv, 1))
  if rows * cols > MAX_CELLS then fail("cute.svg", "tile %d x %d is too large to draw", rows, cols) end
  for t = 0, nthr - 1 do
    for v = 0, nval - 1 do
      local idx = tv(t + nthr * v)
      local r, c = idx % rows, math.floor(idx / rows)
      if transpose then r, c = c, r end
      local k = r * dc + c + 1
      if idx >= 0 and idx < rows * cols and not p.cells[k] then
        p.cells[k] = { tid = t, vid = v, lines = { "T" .. t, "V" .. v }, color = t % M.palette_size }
      end
    end
  end
  return p
end

local function mma_picture(t)
  local m, n, k = t.tile_size_mnk[1], t.tile_size_mnk[2], t.tile_size_mnk[3]
  m, n, k = layout.size(m), layout.size(n), layout.size(k)
  return {
    title = ("TiledMMA %s, tile %d x %d x %d"):format(t.atom.instruction or "?", m, n, k),
    note = "cell: the thread (T) and its value index (V) holding the element; colour: thread mod " .. M.palette_size,
    -- placed as CuTe's print_latex: B (K x N) above C, A (M x K) left of it
    panels = {
      tv_panel("A", t:get_layoutA_TV(), m, k, "m", "k"),
      tv_panel("B", t:get_layoutB_TV(), n, k, "n", "k", true),
      tv_panel("C", t:get_layoutC_TV(), m, n, "m", "n"),
    },
    grid = { A = { 0, 1 }, B = { 1, 0 }, C = { 1, 1 } },
  }
end

local function copy_picture(t)
  local tl = t.tiler_mn
  local m, n = layout.size(tl[1]), tl[2] ~= nil and layout.size(tl[2]) or 1
  local atom = t.atom
  local name = atom.instruction or (atom.op and atom.op.op_name) or "copy"
  return {
    title = ("TiledCopy %s, %d threads, tile %d x %d"):format(name, t.size, m, n),
    note = "cell: the thread (T) and value (V) reading (S) or writing (D) the element; colour: thread mod " ..
      M.palette_size,
    panels = {
      tv_panel("S", t:get_layoutS_TV(), m, n, "m", "n"),
      tv_panel("D", t:get_layoutD_TV(), m, n, "m", "n"),
    },
  }
end

function M.of(x, opts, what)
  what = what or "cute.picture"
  if opts ~= nil and type(opts) ~= "table" then fail(what, "options must be a table, got %s", type(opts)) end
  opts = opts or {}
  if layout.is_layout(x) or layout.is_composed(x) then return layout_picture(x, opts, what) end
  if require("cute.mma").is_tiled_mma(x) then return mma_picture(x) end
  if require("cute.copy_atom").is_tiled_copy(x) then return copy_picture(x) end
  local shown = type(x) == "string" and ("%q"):format(x) or tostring(x)
  fail(what, "cannot draw %s (a %s): expected a layout, a swizzled (composed) layout, a TiledMMA or a TiledCopy",
    shown, type(x))
end

return M
