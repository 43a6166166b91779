-- cute.svg(x [, file] [, opts]): a picture of a layout, a swizzled
-- shared-memory layout (bank of each element), a TiledMMA (A, B, C) or a
-- TiledCopy (S, D) as SVG text, written to file when one is given; and
-- cute.show(x [, opts]): the same picture as a coloured grid for a terminal
-- (the REPL's :show).  What the cells hold: lua/cute/picture.lua.
local picture = require("cute.picture")
local cf = require("cute.ffi")

local M = {}

-- fill colours, indexed by a cell's colour + 1 (SVG) ...
local fills = { "#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99", "#8dd3c7", "#d9d9d9" }
-- ... and 256-colour terminal backgrounds
local ansi = { 153, 157, 217, 223, 183, 229, 122, 252 }

local function esc(s)
  return (tostring(s):gsub("[&<>\"]", { ["&"] = "&amp;", ["<"] = "&lt;", [">"] = "&gt;", ['"'] = "&quot;" }))
end

local CHAR_W, LINE_H, GAP, MARGIN = 7, 13, 24, 10

local function cell_size(p)
  local len, nl = 1, 1
  for _, cell in pairs(p.cells) do
    for _, l in ipairs(cell.lines) do if #l > len then len = #l end end
    if #cell.lines > nl then nl = #cell.lines end
  end
  return math.max(24, len * CHAR_W + 8), nl * LINE_H + 6
end

-- the SVG text of a picture (picture.of)
function M.render(pic)
  local out = {}
  local function add(fmt, ...) out[#out + 1] = fmt:format(...) end
  local top = MARGIN + 2 * LINE_H + 8
  local parts, width, height = {}, 0, 0
  for i, p in ipairs(pic.panels) do
    local cw, ch = cell_size(p)
    parts[i] = { p = p, cw = cw, ch = ch, lw = (#tostring(p.rows - 1)) * CHAR_W + 8 } -- (lw: row indices)
  end
  if pic.grid then -- one cell size, so that C lines up with A's rows and B's columns
    local cw, ch, lw = 0, 0, 0
    for _, q in ipairs(parts) do cw, ch, lw = math.max(cw, q.cw), math.max(ch, q.ch), math.max(lw, q.lw) end
    for _, q in ipairs(parts) do q.cw, q.ch, q.lw = cw, ch, lw end
  end
  for i, q in ipairs(parts) do
    q.w, q.h = q.lw + q.p.cols * q.cw, LINE_H * 2 + 4 + q.p.rows * q.ch
    local g = pic.grid and pic.grid[q.p.name]
    q.gc, q.gr = g and g[1] or i - 1, g and g[2] or 0
  end
  -- columns and rows of the arrangement: the widest / tallest panel in each
  local colw, rowh, ncol, nrow = {}, {}, 0, 0
  for _, q in ipairs(parts) do
    colw[q.gc] = math.max(colw[q.gc] or 0, q.w)
    rowh[q.gr] = math.max(rowh[q.gr] or 0, q.h)
    ncol, nrow = math.max(ncol, q.gc + 1), math.max(nrow, q.gr + 1)
  end
  local colx, rowy = {}, {}
  local x, y = MARGIN, top
  for c = 0, ncol - 1 do colx[c] = x; x = x + (colw[c] or 0) + GAP end
  for r = 0, nrow - 1 do rowy[r] = y; y = y + (rowh[r] or 0) + GAP end
  for _, q in ipairs(parts) do -- right-aligned in their column, bottom-aligned in their row
    q.x = colx[q.gc] + colw[q.gc] - q.w
    q.y = rowy[q.gr] + rowh[q.gr] - q.h
  end
  width, height = x - GAP + MARGIN, y - GAP + MARGIN
  local tw = math.max(#pic.title, #(pic.note or "")) * CHAR_W + 2 * MARGIN
  if tw > width then width = tw end
  add('<?xml version="1.0" encoding="UTF-8"?>')
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" ' ..
    'font-family="monospace" font-size="11">', width, height, width, height)
  add("<title>%s</title>", esc(pic.title))
  add('<rect x="0" y="0" width="%d" height="%d" fill="white"/>', width, height)
  add('<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>', MARGIN, MARGIN + LINE_H, esc(pic.title))
  if pic.note then add('<text x="%d" y="%d" fill="#444">%s</text>', MARGIN, MARGIN + 2 * LINE_H + 2, esc(pic.note)) end
  for _, q in ipairs(parts) do
    local p, cw, ch, lw = q.p, q.cw, q.ch, q.lw
    add('<g class="panel" data-name="%s" transform="translate(%d,%d)">', esc(p.name), q.x, q.y)
    add('<text x="0" y="%d" font-weight="bold">%s (%d x %d: %s down, %s across)</text>', LINE_H, esc(p.name),
      p.rows, p.cols, esc(p.row_label), esc(p.col_label))
    local gy = LINE_H * 2 + 4
    for c = 0, p.cols - 1 do
      add('<text class="col" x="%d" y="%d" text-anchor="middle" fill="#666">%d</text>', lw + c * cw + cw / 2, gy - 3, c)
    end
    for r = 0, p.rows - 1 do
      add('<text class="row" x="%d" y="%d" text-anchor="end" fill="#666">%d</text>', lw - 4,
        gy + r * ch + ch / 2 + 4, r)
      for c = 0, p.cols - 1 do
        local cell = p.cells[r * p.cols + c + 1]
        local x, y = lw + c * cw, gy + r * ch
        add('<g class="cell" data-r="%d" data-c="%d">', r, c)
        add('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="black" stroke-width="0.5"/>', x, y, cw, ch,
          cell and fills[cell.color + 1] or "white")
        if cell then
          for i, l in ipairs(cell.lines) do
            add('<text x="%d" y="%d" text-anchor="middle">%s</text>', x + cw / 2, y + 3 + i * LINE_H - 2, esc(l))
          end
        end
        add("</g>")
      end
    end
    add("</g>")
  end
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end

-- cute.svg(x [, file] [, opts]) -> the SVG text (also written to file)
function M.svg(x, file, opts)
  if type(file) == "table" and opts == nil then file, opts = nil, file end
  if file ~= nil and type(file) ~= "string" then
    cf.fail("cute.svg: file must be a path string, got " .. type(file))
  end
  local text = M.render(picture.of(x, opts, "cute.svg"))
  if file then
    local f, err = io.open(file, "wb")
    if not f then cf.fail(("cute.svg: cannot write %s: %s"):format(file, tostring(err))) end
    f:write(text)
    f:close()
  end
  return text
end

-- is standard output a terminal?
local function stdout_tty()
  local ffi = require("ffi")
  pcall(ffi.cdef, "int isatty(int fd);")
  local ok, r = pcall(function() return ffi.C.isatty(1) end)
  return ok and r == 1
end

-- the picture as terminal text; opts.color (default: on when standard output
-- is a terminal and NO_COLOR is not set)
function M.text(pic, opts)
  local color = os.getenv("NO_COLOR") == nil and stdout_tty()
  if opts and opts.color ~= nil then color = opts.color and true or false end
  local out = { pic.title, pic.note }
  for _, p in ipairs(pic.panels) do
    local w = 1
    for _, cell in pairs(p.cells) do
      local s = table.concat(cell.lines, " ")
      if #s > w then w = #s end
    end
    w = math.max(w, #tostring(p.cols - 1))
    local lw = #tostring(p.rows - 1)
    out[#out + 1] = ("%s (%d x %d: %s down, %s across)"):format(p.name, p.rows, p.cols, p.row_label, p.col_label)
    local hdr = { (" "):rep(lw + 1) }
    for c = 0, p.cols - 1 do hdr[#hdr + 1] = ("%" .. w .. "d "):format(c) end
    out[#out + 1] = table.concat(hdr)
    for r = 0, p.rows - 1 do
      local row = { ("%" .. lw .. "d "):format(r) }
      for c = 0, p.cols - 1 do
        local cell = p.cells[r * p.cols + c + 1]
        local s = ("%" .. w .. "s"):format(cell and table.concat(cell.lines, " ") or ".")
        if color and cell then s = ("\27[30;48;5;%dm%s\27[0m"):format(ansi[cell.color + 1], s) end
        row[#row + 1] = s .. " "
      end
      out[#out + 1] = table.concat(row)
    end
  end
  return table.concat(out, "\n")
end

-- cute.show(x [, opts]): print the picture in the terminal
function M.show(x, opts)
  io.write(M.text(picture.of(x, opts, "cute.show"), opts), "\n")
end

return M
