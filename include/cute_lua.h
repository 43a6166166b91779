/*
 * cute_lua.h -- embedding cuteluajit in a C program that owns a lua_State
 * (LuaJIT 2.1).  Link with libcute.so (or the static objects) and LuaJIT:
 *
 *   cc app.c $(pkg-config --cflags --libs cuteluajit)
 *   (from the source tree: -Iinclude -I/usr/include/luajit-2.1 -Lbuild -lcute -lluajit-5.1)
 *
 *   lua_State *L = luaL_newstate();
 *   luaL_openlibs(L);
 *   luaopen_cute(L);             // pushes the `cute` module table
 *   lua_setglobal(L, "cute");
 *
 * The Lua modules are embedded in the library; a `lua/` directory on
 * package.path takes precedence (useful while developing).  Lua errors from
 * cute functions are ordinary Lua errors: run code under lua_pcall.
 */
#ifndef CUTE_LUA_H
#define CUTE_LUA_H

#include "cute.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lua_State;

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Installs the embedded-module searcher (idempotent), then require("cute");
   leaves the module table on the stack and returns 1 (a lua_CFunction).
   Raises a Lua error if loading fails: call through lua_pcall / lua_cpcall
   when the caller needs to survive that. */
int luaopen_cute(struct lua_State *L);

/* Only installs the searcher for the embedded modules (cute, cute.*). */
void cute_lua_install_searcher(struct lua_State *L);

/* lua_pcall with a traceback: calls the function below the nargs arguments
   on the stack.  0: the nresults results are on the stack.  Otherwise
   CUTE_E_LUA (CUTE_E_NOMEM when Lua ran out of memory) with the error
   message and its traceback in *err (err may be NULL; cut with "..." past
   its size), and the function, its arguments and the error popped.
   Threads: a lua_State is used by one thread at a time; one lua_State per
   thread compiles in parallel (docs/EMBED.md). */
int cute_lua_pcall(struct lua_State *L, int nargs, int nresults, cute_err *err);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
