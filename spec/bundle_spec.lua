-- tools/bundle_test.sh (docs/BUNDLE.md) catches the regressions it exists for:
-- a bundle whose program carries LLVM again, and a file in it that loads a
-- library from outside the bundle.  (make test runs it on a good bundle.)
local util = dofile("spec/support/util.lua")

local sh = util.sh

local function ready()
  for _, f in ipairs({ "tools/bundle.sh", "tools/bundle_test.sh", "build/bin/cuteluajit", "build/cuteluajit",
      "build/libcute.so" }) do
    if not util.read_file(f) then
      pending(f .. " not found (run from the repository root after make; the bundle has no build/)")
      return false
    end
  end
  return true
end

describe("tools/bundle_test.sh #slow", function()
  it("fails a bundle whose program links LLVM itself and one with a library from the build tree, by name", function()
    if not ready() then return end
    local root = sh("pwd -P"):match("^(.-)\n")
    local dir = sh("mktemp -d"):match("^(.-)\n")
    local out, rc = sh(("sh tools/bundle.sh '%s/dist' > /dev/null && cp build/cuteluajit '%s/dist/bin/cuteluajit' && "
      .. "printf 'int cute_abi_version(void); int main(void) { return !cute_abi_version(); }' > '%s/outside.c' && "
      .. "cc -o '%s/dist/tests/outside' '%s/outside.c' -L'%s/build' -lcute -Wl,-rpath,'%s/build' -Wl,--allow-shlib-undefined && "
      .. "BUNDLE_TEST_C=0 sh tools/bundle_test.sh '%s/dist'")
      :format(dir, dir, dir, dir, dir, root, root, dir))
    os.execute("rm -rf '" .. dir .. "'")
    -- the program with LLVM and LuaJIT in it: over the budget, no libcute.so.0 to share
    assert.is_truthy(out:find("FAIL size %d+%.%d MiB, budget 60 MiB"), out)
    assert.is_truthy(util.has(out, "FAIL bin/cuteluajit needs libcute.so.0 and glibc only"), out)
    assert.is_truthy(util.has(out, "FAIL bin/cuteluajit finds it at $ORIGIN/../lib"), out)
    assert.is_truthy(util.has(out, "FAIL moved: one libcute mapped, the copy's"), out)
    -- the file that loads build/libcute.so: named with the library and where it came from
    assert.is_truthy(util.has(out, "tests/outside: libcute.so.0 => " .. root .. "/build/libcute.so.0"), out)
    assert.is_truthy(util.has(out, "FAIL ldd: every library of every ELF file inside the bundle or glibc's"), out)
    -- what is still right is still passed
    assert.is_truthy(util.has(out, "ok   moved: bin/cuteluajit runs from /"), out)
    assert.is_truthy(util.has(out, "ok   moved: the Lua modules of the copy"), out)
    assert.is_truthy(out:find("\n%d+ passed, 5 failed, 1 skipped\n"), out)
    assert.are.equal(1, rc, out)
  end)
end)
