-- The soak figure (bench/soak.lua, SOAK_SVG=file.svg): host RSS and device
-- memory in use against the cycle, as an SVG line chart.  Returns a function
-- (samples, {title =, warmup = cycle}) -> the SVG text.
local W, H, L, R, T, B = 760, 360, 70, 70, 40, 50

local function esc(s) return (s:gsub("&", "&amp;"):gsub("<", "&lt;"):gsub(">", "&gt;")) end

local function nice_max(v)
  if v <= 0 then return 1 end
  local e = 10 ^ math.floor(math.log10(v))
  for _, m in ipairs({ 1, 2, 2.5, 5, 10 }) do if v <= m * e then return m * e end end
  return 10 * e
end

return function(samples, o)
  local last = samples[#samples].cycle
  local rmax, dmax = 0, 0
  for _, s in ipairs(samples) do
    rmax = math.max(rmax, s.rss / 2 ^ 20)
    dmax = math.max(dmax, s.dev / 2 ^ 20)
  end
  rmax, dmax = nice_max(rmax * 1.1), nice_max(dmax * 1.1)
  local pw, ph = W - L - R, H - T - B
  local function x(c) return L + pw * c / math.max(1, last) end
  local function yr(v) return T + ph * (1 - v / rmax) end
  local function yd(v) return T + ph * (1 - v / dmax) end
  local out = {}
  local function add(f, ...) out[#out + 1] = f:format(...) end
  add('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">', W, H)
  add('<rect width="%d" height="%d" fill="white"/>', W, H)
  add('<text x="%d" y="22" font-size="14">%s</text>', L, esc(o.title or "soak"))
  for i = 0, 4 do
    local yy = T + ph * i / 4
    add('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>', L, yy, L + pw, yy)
    add('<text x="%d" y="%.1f" text-anchor="end" fill="#1f77b4">%g</text>', L - 6, yy + 4, rmax * (1 - i / 4))
    add('<text x="%d" y="%.1f" fill="#d62728">%g</text>', L + pw + 6, yy + 4, dmax * (1 - i / 4))
  end
  for i = 0, 4 do
    local c = math.floor(last * i / 4 + 0.5)
    add('<text x="%.1f" y="%d" text-anchor="middle">%d</text>', x(c), T + ph + 18, c)
  end
  add('<text x="%.1f" y="%d" text-anchor="middle">cycle</text>', L + pw / 2, H - 8)
  add('<text x="14" y="%.1f" fill="#1f77b4" transform="rotate(-90 14 %.1f)" text-anchor="middle">host RSS (MiB)</text>',
    T + ph / 2, T + ph / 2)
  add('<text x="%d" y="%.1f" fill="#d62728" transform="rotate(90 %d %.1f)" text-anchor="middle">device memory in use (MiB)</text>',
    W - 12, T + ph / 2, W - 12, T + ph / 2)
  if o.warmup then
    add('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="4 3"/>', x(o.warmup), T, x(o.warmup), T + ph)
    add('<text x="%.1f" y="%d" fill="#666">end of warm-up</text>', x(o.warmup) + 4, T + 12)
  end
  local pr, pd = {}, {}
  for _, s in ipairs(samples) do
    pr[#pr + 1] = ("%.1f,%.1f"):format(x(s.cycle), yr(s.rss / 2 ^ 20))
    pd[#pd + 1] = ("%.1f,%.1f"):format(x(s.cycle), yd(s.dev / 2 ^ 20))
  end
  add('<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="%s"/>', table.concat(pr, " "))
  add('<polyline fill="none" stroke="#d62728" stroke-width="2" stroke-dasharray="6 3" points="%s"/>', table.concat(pd, " "))
  add('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>', L, T, pw, ph)
  add("</svg>")
  return table.concat(out, "\n") .. "\n"
end
