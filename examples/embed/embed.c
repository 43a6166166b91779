/* embed.c -- a C application that embeds cuteluajit through a lua_State.
 *
 * Builds a layout in Lua with the `cute` module, reads results back in C, and
 * shows that a Lua error from cute (bad input) comes back as a message, not a
 * crash.  Build: see the Makefile target build/embed (links libcute.so and
 * LuaJIT).  Prints "N passed, N failed" so `make test` can count it. */
#include <cute_lua.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what) {
  printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  if (ok) passed++; else failed++;
}

int main(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);

  /* open cute (protected: a missing module is an error message, not a crash) */
  lua_pushcfunction(L, luaopen_cute);
  if (lua_pcall(L, 0, 1, 0) != 0) {
    printf("FAIL loading cute: %s\n", lua_tostring(L, -1));
    printf("0 passed, 1 failed\n");
    return 1;
  }
  lua_setglobal(L, "cute");

  const char *snippet =
      "local L = cute.make_layout({4, {2, 3}})\n"
      "local T = cute.logical_divide(cute.make_layout(24), cute.make_layout(4, 2))\n"
      "return tostring(L), cute.size(L), L(5), tostring(T)\n";
  if (luaL_dostring(L, snippet) != 0) {
    printf("FAIL snippet: %s\n", lua_tostring(L, -1));
    failed++;
  } else {
    const char *text = lua_tostring(L, -4);
    long long size = (long long)lua_tointeger(L, -3);
    long long idx = (long long)lua_tointeger(L, -2);
    const char *div = lua_tostring(L, -1);
    printf("layout %s, size %lld, L(5) = %lld, logical_divide -> %s\n", text, size, idx, div);
    check(text && strcmp(text, "(4,(2,3)):(1,(4,8))") == 0, "layout text read back in C");
    check(size == 24, "size read back in C");
    check(idx == 5, "L(5) read back in C");
    check(div != NULL && strcmp(div, "(4,(2,3)):(2,(1,8))") == 0, "logical_divide result");
    lua_pop(L, 4);
  }

  /* bad input: an error message naming the op, and the state stays usable */
  int st = luaL_dostring(L, "return cute.make_layout({4, 2}, {1, {2, 3}})");
  const char *msg = st ? lua_tostring(L, -1) : "";
  printf("error from bad input: %s\n", msg);
  check(st != 0 && strstr(msg, "make_layout") && strstr(msg, "not congruent"), "error comes back as a message");
  lua_settop(L, 0);
  check(luaL_dostring(L, "return cute.size(cute.make_layout({2, 2}))") == 0 &&
            lua_tointeger(L, -1) == 4, "state usable after an error");

  /* a chunk named the usual way for a host ("=name"): errors carry its line */
  const char *kernel =
      "local k = cute.kernel(function(X, Y)\n"
      "  local i = cute.arch.thread_idx()\n"
      "  Y[i] = X[i] + nil\n"
      "end)\n"
      "local s = cute.tensor_spec({256}, cute.float32)\n"
      "return k:ir(s, s)\n";
  /* the kernel front end reads a kernel's source: give it the chunk's text */
  lua_getglobal(L, "cute");
  lua_getfield(L, -1, "register_source");
  lua_pushstring(L, "=myhost");
  lua_pushstring(L, kernel);
  check(lua_pcall(L, 2, 0, 0) == 0, "cute.register_source");
  lua_settop(L, 0);
  st = luaL_loadbuffer(L, kernel, strlen(kernel), "=myhost");
  if (st == 0) st = lua_pcall(L, 0, 1, 0);
  msg = st ? lua_tostring(L, -1) : "";
  printf("kernel error: %s\n", msg);
  check(st != 0 && strncmp(msg, "myhost:3: ", 10) == 0, "kernel error located at the host chunk's line");
  lua_settop(L, 0);

  /* tracing a kernel starts LLVM's warm-up in the background: lua_close waits
     for it, so the exit below is clean (no thread left inside LLVM) */
  check(luaL_dostring(L, "local k = cute.kernel(function(X) X[0] = X[1] end)\n"
                         "local s = cute.tensor_spec({8}, cute.float32)\n"
                         "return k:ir(s)\n") == 0,
        "a kernel traced");
  lua_close(L);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
