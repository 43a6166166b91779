/* host_api.c -- the C host API (include/cute_host.h): a cute_host is one
 * lua_State with `cute` loaded; every call runs the matching function of
 * lua/cute/host.lua under cute_lua_pcall, so a Lua error comes back as a
 * CUTE_E_LUA status with the message and the traceback.  Argument arrays
 * and launch configurations cross as light userdata read by the FFI. */
#include "cute_host.h"
#include "cute_lua.h"
#include "core.h"

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cute_host_kernel {
  cute_host *h;
  int ref;                     /* registry reference to the kernel object */
  char *name;
  cute_host_kernel *next;
};

struct cute_host {
  lua_State *L;
  int module_ref;              /* require("cute.host") */
  int kernels_ref;             /* name -> kernel, from the tables files returned */
  cute_host_kernel *kernels;   /* handles given out */
};

/* push host.<fn> (the module is in the registry) */
static void push_fn(cute_host *h, const char *fn) {
  lua_rawgeti(h->L, LUA_REGISTRYINDEX, h->module_ref);
  lua_getfield(h->L, -1, fn);
  lua_remove(h->L, -2);
}

cute_host *cute_host_new(cute_err *err) {
  cute_host *h = calloc(1, sizeof *h);
  if (!h) { cute_err_setf(err, CUTE_E_NOMEM, "cute_host_new: out of memory"); return NULL; }
  h->L = luaL_newstate();
  if (!h->L) {
    free(h);
    cute_err_setf(err, CUTE_E_NOMEM, "cute_host_new: cannot create a lua_State (out of memory)");
    return NULL;
  }
  lua_State *L = h->L;
  luaL_openlibs(L);
  lua_pushcfunction(L, luaopen_cute);
  if (cute_lua_pcall(L, 0, 1, err) != 0) goto fail;
  lua_setglobal(L, "cute");
  lua_getglobal(L, "require");
  lua_pushstring(L, "cute.host");
  if (cute_lua_pcall(L, 1, 1, err) != 0) goto fail;
  h->module_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  lua_newtable(L);
  h->kernels_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return h;
fail:
  if (err) cute_err_setf(err, err->code, "cute_host_new: loading cute: %s", err->msg);
  lua_close(L);
  free(h);
  return NULL;
}

void cute_host_free(cute_host *h) {
  if (!h) return;
  for (cute_host_kernel *k = h->kernels, *next; k; k = next) {
    next = k->next;
    free(k->name);
    free(k);
  }
  lua_close(h->L);
  free(h);
}

struct lua_State *cute_host_lua(cute_host *h) { return h ? h->L : NULL; }

/* the chunk is on the stack: run it, then collect the kernels it returned */
static int run_chunk(cute_host *h, const char *what, cute_err *err) {
  lua_State *L = h->L;
  int top = lua_gettop(L) - 1;
  if (cute_lua_pcall(L, 0, 1, err) != 0) goto fail;
  push_fn(h, "collect");
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->kernels_ref);
  lua_pushvalue(L, -3);
  if (cute_lua_pcall(L, 2, 0, err) != 0) goto fail;
  lua_settop(L, top);
  return CUTE_OK;
fail:
  lua_settop(L, top);
  return err ? cute_err_setf(err, err->code, "%s: %s", what, err->msg) : CUTE_E_LUA;
}

int cute_host_load_file(cute_host *h, const char *path, cute_err *err) {
  if (!h || !path) return cute_err_setf(err, CUTE_E_ARG, "cute_host_load_file: %s is NULL", h ? "path" : "host");
  if (luaL_loadfile(h->L, path) != 0) {
    const char *msg = lua_tostring(h->L, -1);
    cute_err_setf(err, CUTE_E_ARG, "cute_host_load_file: %s", msg ? msg : path);
    lua_pop(h->L, 1);
    return CUTE_E_ARG;
  }
  return run_chunk(h, "cute_host_load_file", err);
}

int cute_host_load_string(cute_host *h, const char *code, const char *chunkname, cute_err *err) {
  if (!h || !code) return cute_err_setf(err, CUTE_E_ARG, "cute_host_load_string: %s is NULL", h ? "code" : "host");
  lua_State *L = h->L;
  char name[256];
  /* "=name": errors read "name:LINE: ..." */
  snprintf(name, sizeof name, "=%s", chunkname && *chunkname ? chunkname : "cute_host_load_string");
  /* the kernel front end reads a kernel's source text: register it under the chunk's name */
  push_fn(h, "register_source");
  lua_pushstring(L, name);
  lua_pushstring(L, code);
  if (cute_lua_pcall(L, 2, 0, err) != 0) return cute_err_setf(err, err ? err->code : CUTE_E_LUA, "cute_host_load_string: %s", err ? err->msg : "");
  if (luaL_loadbuffer(L, code, strlen(code), name) != 0) {
    const char *msg = lua_tostring(L, -1);
    cute_err_setf(err, CUTE_E_ARG, "cute_host_load_string: %s", msg ? msg : "syntax error");
    lua_pop(L, 1);
    return CUTE_E_ARG;
  }
  return run_chunk(h, "cute_host_load_string", err);
}

int cute_host_get_kernel(cute_host *h, const char *name, cute_host_kernel **out, cute_err *err) {
  if (out) *out = NULL;
  if (!h || !name || !out)
    return cute_err_setf(err, CUTE_E_ARG, "cute_host_get_kernel: %s is NULL", !h ? "host" : !name ? "name" : "out");
  lua_State *L = h->L;
  cute_host_kernel *k = calloc(1, sizeof *k);
  char *copy = strdup(name);
  if (!k || !copy) {
    free(k);
    free(copy);
    return cute_err_setf(err, CUTE_E_NOMEM, "cute_host_get_kernel: out of memory");
  }
  push_fn(h, "find");
  lua_rawgeti(L, LUA_REGISTRYINDEX, h->kernels_ref);
  lua_pushstring(L, name);
  if (cute_lua_pcall(L, 2, 1, err) != 0) {
    free(k);
    free(copy);
    return err ? cute_err_setf(err, err->code, "cute_host_get_kernel: %s", err->msg) : CUTE_E_LUA;
  }
  /* the same name and the same kernel object: the handle given out before */
  for (cute_host_kernel *o = h->kernels; o; o = o->next) {
    if (strcmp(o->name, name) != 0) continue;
    lua_rawgeti(L, LUA_REGISTRYINDEX, o->ref);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 1);
    if (same) {
      lua_pop(L, 1);
      free(k);
      free(copy);
      *out = o;
      return CUTE_OK;
    }
  }
  k->name = copy;
  k->h = h;
  k->ref = luaL_ref(L, LUA_REGISTRYINDEX);
  k->next = h->kernels;
  h->kernels = k;
  *out = k;
  return CUTE_OK;
}

static int check_args(const char *fname, cute_host_kernel *k, const cute_host_arg *args, int nargs,
                      cute_err *err) {
  if (!k) return cute_err_setf(err, CUTE_E_ARG, "%s: kernel is NULL", fname);
  if (nargs < 0 || nargs > 256) return cute_err_setf(err, CUTE_E_ARG, "%s: nargs %d is not in 0..256", fname, nargs);
  if (nargs > 0 && !args) return cute_err_setf(err, CUTE_E_ARG, "%s: args is NULL with nargs %d", fname, nargs);
  return CUTE_OK;
}

int cute_host_launch(cute_host_kernel *k, const cute_host_launch_cfg *cfg, const cute_host_arg *args,
                     int nargs, cute_err *err) {
  int st = check_args("cute_host_launch", k, args, nargs, err);
  if (st) return st;
  if (!cfg) return cute_err_setf(err, CUTE_E_ARG, "cute_host_launch: cfg is NULL");
  lua_State *L = k->h->L;
  push_fn(k->h, "launch");
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_pushlightuserdata(L, (void *)cfg);
  lua_pushlightuserdata(L, (void *)args);
  lua_pushinteger(L, nargs);
  if (cute_lua_pcall(L, 4, 0, err) != 0)
    return err ? cute_err_setf(err, err->code, "cute_host_launch: %s", err->msg) : CUTE_E_LUA;
  return CUTE_OK;
}

int cute_host_compile(cute_host_kernel *k, const char *stage, const char *arch,
                      const cute_host_arg *args, int nargs, char **text, cute_err *err) {
  if (text) *text = NULL;
  int st = check_args("cute_host_compile", k, args, nargs, err);
  if (st) return st;
  if (!stage || !text) return cute_err_setf(err, CUTE_E_ARG, "cute_host_compile: %s is NULL", stage ? "text" : "stage");
  lua_State *L = k->h->L;
  push_fn(k->h, "compile");
  lua_rawgeti(L, LUA_REGISTRYINDEX, k->ref);
  lua_pushstring(L, stage);
  if (arch) lua_pushstring(L, arch); else lua_pushnil(L);
  lua_pushlightuserdata(L, (void *)args);
  lua_pushinteger(L, nargs);
  if (cute_lua_pcall(L, 5, 1, err) != 0)
    return err ? cute_err_setf(err, err->code, "cute_host_compile: %s", err->msg) : CUTE_E_LUA;
  size_t len = 0;
  const char *s = lua_tolstring(L, -1, &len);
  char *copy = s ? malloc(len + 1) : NULL;
  if (copy) memcpy(copy, s, len + 1);
  lua_pop(L, 1);
  if (!copy) return cute_err_setf(err, CUTE_E_NOMEM, "cute_host_compile: out of memory");
  *text = copy;
  return CUTE_OK;
}
