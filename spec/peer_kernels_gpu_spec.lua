-- Kernels that communicate on 2 or more GPUs (docs/PEER_KERNELS.md): the
-- one-shot and two-shot all-reduce of examples/allreduce_peer.lua against
-- cute.nccl and a host sum, back-to-back calls, flags seen across devices.
-- Pending without a GPU, with one GPU, without peer access or without NCCL.
local cute = require("cute")
local util = dofile("spec/support/util.lua")
local ex = dofile("examples/common.lua")

-- a #gpu test that needs 2+ GPUs with peer access between all and cute.nccl
local function multi_it(name, fn)
  util.gpu_it(name, function()
    local n = cute.device_count()
    if n < 2 then return pending(("needs 2 or more GPUs, %d here"):format(n)) end
    for a = 0, n - 1 do
      for b = 0, n - 1 do
        if a ~= b and not cute.can_access_peer(a, b) then
          return pending(("device %d cannot access device %d's memory"):format(a, b))
        end
      end
    end
    local ok, nccl = pcall(function() return cute.nccl end)
    if not ok or not nccl then return pending("needs NCCL: " .. tostring(nccl)) end
    local ok2, why = pcall(nccl.version)
    if not ok2 then return pending("needs NCCL: " .. tostring(why)) end
    fn(nccl)
  end)
end

describe("peer all-reduce on several GPUs", function()
  local AR, ar, devices, comms

  local function setup(nccl)
    if ar then return end
    AR = ex.load("allreduce_peer")
    devices = {}
    for d = 0, cute.device_count() - 1 do devices[#devices + 1] = d end
    ar = AR.new(devices)
    comms = nccl.init_all(devices)
  end

  local function reference(nccl, ins, n, dt)
    local ref = AR.empty_like(devices, n, dt)
    nccl.group(function()
      for k = 1, #devices do comms[k]:all_reduce(ins[k], ref[k], "sum", ar.streams[k]) end
    end)
    ar:synchronize()
    return ref
  end

  multi_it("one-shot and two-shot equal NCCL's sum (f32, bf16, odd sizes)", function(nccl)
    setup(nccl)
    for _, dt in ipairs({ cute.float32, cute.bfloat16 }) do
      local tol = dt == cute.float32 and 1e-6 or 1e-2
      for _, n in ipairs({ 1, 7, 1023, 65537, 1048577 }) do
        local ins = AR.random_inputs(devices, n, dt)
        local h = reference(nccl, ins, n, dt)[1]:to_host()
        for _, kind in ipairs({ "oneshot", "twoshot" }) do
          local outs = AR.empty_like(devices, n, dt)
          for _, o in ipairs(outs) do o:fill(0 / 0) end
          ar:run(kind, ins, outs)
          ar:synchronize()
          local err = AR.error_vs(outs, dt, n, function(i) return AR.host_value(h, dt, i) end)
          assert.is_true(err <= tol, ("%s %s n=%d: rel. error %g"):format(kind, dt.name, n, err))
        end
      end
    end
  end)

  multi_it("back to back: 50 calls, each reducing the last one's output", function(nccl)
    setup(nccl)
    local W = #devices
    if W ~= 2 and W ~= 4 then return pending("the exact scaling check needs 2 or 4 GPUs") end
    local n, dt = 262147, cute.float32
    local ins = AR.random_inputs(devices, n, dt)
    local h = reference(nccl, ins, n, dt)[1]:to_host()
    local a, b = AR.empty_like(devices, n, dt), AR.empty_like(devices, n, dt)
    for k = 1, W do a[k]:copy_from(ins[k]); b[k]:fill(0) end
    -- alternate: one-shot a -> b, two-shot in place on b, one-shot b -> a, ...
    -- each call multiplies by W (exactly) after the first
    local calls = 0
    for i = 1, 25 do
      if i % 2 == 1 then ar:run("oneshot", a, b); ar:run("twoshot", b, b)
      else ar:run("oneshot", b, a); ar:run("twoshot", a, a) end
      calls = calls + 2
    end
    ar:synchronize()
    local last = b -- the 25th (odd) iteration ends in b
    local scale = W ^ (calls - 1)
    local err = AR.error_vs(last, dt, n, function(i) return AR.host_value(h, dt, i) * scale end)
    assert.is_true(err <= 1e-6, "rel. error " .. err)
  end)

  multi_it("the example's own checks pass", function()
    local out, rc = util.sh(util.self_exe() .. " examples/allreduce_peer.lua")
    assert.are.equal(0, rc, out)
    assert.is_true(util.has(out, "allreduce_peer: all checks passed"), out)
  end)
end)
