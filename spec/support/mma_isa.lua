-- The PTX ISA's fragment layouts of mma.sync (9.7.14.5, "Matrix Fragments
-- for mma.m16n8k*"), written from the ISA's formulas, independent of CuTe's
-- layouts: the specs check the atoms' layouts against these.
-- per lane, groupID = lane >> 2, threadID_in_group = lane % 4; each function
-- returns (row, col) of element i of the lane's fragment.  A is M x K
-- (row m, col k), B is K x N (row k, col n), C/D is M x N.
local function g_t(lane) return math.floor(lane / 4), lane % 4 end
local isa = {
  -- mma.m16n8k16 .f16/.bf16
  m16n8k16 = {
    A = function(lane, i)
      local g, t = g_t(lane)
      local row = ((i < 2) or (i >= 4 and i < 6)) and g or g + 8
      local col = t * 2 + (i % 2) + (i >= 4 and 8 or 0)
      return row, col
    end,
    B = function(lane, i)
      local g, t = g_t(lane)
      return t * 2 + (i % 2) + (i >= 2 and 8 or 0), g
    end,
  },
  -- mma.m16n8k8 .f16/.bf16
  m16n8k8 = {
    A = function(lane, i)
      local g, t = g_t(lane)
      return (i < 2) and g or g + 8, t * 2 + (i % 2)
    end,
    B = function(lane, i)
      local g, t = g_t(lane)
      return t * 2 + i, g
    end,
  },
  -- mma.m16n8k8 .tf32
  m16n8k8_tf32 = {
    A = function(lane, i)
      local g, t = g_t(lane)
      return (i % 2 == 0) and g or g + 8, (i < 2) and t or t + 4
    end,
    B = function(lane, i)
      local g, t = g_t(lane)
      return (i == 0) and t or t + 4, g
    end,
  },
  -- mma.m16n8k32 .s8/.u8 (and .e4m3/.e5m2)
  m16n8k32_8bit = {
    A = function(lane, i)
      local g, t = g_t(lane)
      local row = ((i < 4) or (i >= 8 and i < 12)) and g or g + 8
      return row, t * 4 + (i % 4) + (i >= 8 and 16 or 0)
    end,
    B = function(lane, i)
      local g, t = g_t(lane)
      return t * 4 + (i % 4) + (i >= 4 and 16 or 0), g
    end,
  },
  -- mma.m8n8k4 .f64
  m8n8k4_f64 = {
    A = function(lane, _) local g, t = g_t(lane); return g, t end,
    B = function(lane, _) local g, t = g_t(lane); return t, g end,
    C = function(lane, i) local g, t = g_t(lane); return g, t * 2 + i end,
  },
  -- the 16x8 accumulator of every m16n8kK shape
  C16x8 = function(lane, i)
    local g, t = g_t(lane)
    return (i < 2) and g or g + 8, t * 2 + (i % 2)
  end,
}

return isa
