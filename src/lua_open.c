/* lua_open.c -- luaopen_cute: the entry point for C hosts.  The only C file
 * (with main.c) that includes lua.h.  Serves the Lua modules embedded by
 * tools/embed_lua.lua through a package.loaders searcher placed after the
 * file searchers, so a lua/ directory on package.path wins. */
#include "cute_lua.h"

#include "core.h"

#include <lua.h>
#include <lauxlib.h>
#include <string.h>

typedef struct { const char *name; const char *src; size_t len; } cute_embedded_lua;
extern const cute_embedded_lua cute_embedded_modules[];

static int embedded_searcher(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  for (const cute_embedded_lua *m = cute_embedded_modules; m->name; m++) {
    if (strcmp(m->name, name) == 0) {
      char chunk[256];
      size_t n = strlen(name);
      if (n > 200) n = 200;
      memcpy(chunk, "@[embedded]/", 12);
      memcpy(chunk + 12, name, n);
      memcpy(chunk + 12 + n, ".lua", 5);
      if (luaL_loadbuffer(L, m->src, m->len, chunk) != 0) lua_error(L);
      return 1;
    }
  }
  lua_pushfstring(L, "\n\tno embedded module '%s'", name);
  return 1;
}

void cute_lua_install_searcher(lua_State *L) {
  lua_getglobal(L, "package");
  if (!lua_istable(L, -1)) { lua_pop(L, 1); return; }
  lua_getfield(L, -1, "loaders");
  if (!lua_istable(L, -1)) { lua_pop(L, 2); return; }
  int n = (int)lua_objlen(L, -1);
  for (int i = 1; i <= n; i++) {            /* already installed? */
    lua_rawgeti(L, -1, i);
    int same = lua_tocfunction(L, -1) == embedded_searcher;
    lua_pop(L, 1);
    if (same) { lua_pop(L, 2); return; }
  }
  lua_pushcfunction(L, embedded_searcher);
  lua_rawseti(L, -2, n + 1);
  lua_pop(L, 2);
}

int luaopen_cute(lua_State *L) {
  cute_lua_install_searcher(L);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cute");
  lua_call(L, 1, 1);
  return 1;
}

/* message handler: the message (or a description of a non-string error
   value) followed by the traceback of the failing call */
static int traceback_handler(lua_State *L) {
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_isstring(L, -1)) msg = lua_tostring(L, -1);
    else msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

int cute_lua_pcall(lua_State *L, int nargs, int nresults, cute_err *err) {
  int base = lua_gettop(L) - nargs;          /* index of the function */
  lua_pushcfunction(L, traceback_handler);
  lua_insert(L, base);
  int st = lua_pcall(L, nargs, nresults, base);
  lua_remove(L, base);
  if (st == 0) return CUTE_OK;
  const char *msg = lua_tostring(L, -1);
  int code = st == LUA_ERRMEM ? CUTE_E_NOMEM : CUTE_E_LUA;
  cute_err_setf(err, code, "%s", msg ? msg : "(no error message)");
  lua_pop(L, 1);
  return code;
}
