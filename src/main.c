/* main.c -- the cuteluajit program: a LuaJIT with `cute` built in.
 *
 *   cuteluajit script.lua [args]   run a script (`arg` as in luajit)
 *   cuteluajit -e 'code' [...]     run code (several -e allowed)
 *   cuteluajit -i [script]         REPL (after the script, if any)
 *   cuteluajit                     REPL when stdin is a terminal, else run stdin
 *   cuteluajit --cache list|stats|clear   the disk cache of compiled kernels (docs/CACHE.md)
 *
 * The REPL is lua/cute/repl.lua (commands, printing, completion) over the
 * terminal line editor of lineedit.c (history, Tab, Ctrl-C); docs/REPL.md.
 */
#include "cute_lua.h"
#include "cute_ir.h"
#include "cute_cuda.h"
#include "cute_cache.h"
#include "lineedit.h"

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static lua_State *gL;

/* ---- Ctrl-C while Lua runs: stop at the next hook, like lua.c ------------- */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_sigint(int sig) {
  signal(sig, SIG_DFL);
  lua_sethook(gL, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static int traceback(lua_State *L) {
  if (lua_isnil(L, 1)) return 1; /* error() with no value (e.g. busted's exit): silent */
  const char *msg = lua_tostring(L, 1);
  if (!msg) {
    if (luaL_callmeta(L, 1, "__tostring") && lua_isstring(L, -1)) return 1;
    msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
  }
  luaL_traceback(L, L, msg, 1);
  return 1;
}

static int docall(lua_State *L, int narg, int nres) {
  int base = lua_gettop(L) - narg;
  lua_pushcfunction(L, traceback);
  lua_insert(L, base);
  signal(SIGINT, on_sigint);
  int status = lua_pcall(L, narg, nres, base);
  signal(SIGINT, SIG_DFL);
  lua_remove(L, base);
  return status;
}

static int report(lua_State *L, int status) {
  if (status && !lua_isnil(L, -1)) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "cuteluajit: %s\n", msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
  }
  return status;
}

/* ---- setup ------------------------------------------------------------------- */
/* package.path gets <exe dir>/../lua first (build/ and dist/bin/ both work). */
static void set_paths(lua_State *L, const char *argv0) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return;
  *slash = 0;
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "path");
  lua_pushfstring(L, "%s/../lua/?.lua;%s/../lua/?/init.lua;%s/../share/lua/5.1/?.lua;"
                     "%s/../share/lua/5.1/?/init.lua;%s",
                  exe, exe, exe, exe, lua_tostring(L, -1));
  lua_setfield(L, -3, "path");
  lua_pop(L, 1);
  lua_getfield(L, -1, "cpath");
  lua_pushfstring(L, "%s/../lib/lua/5.1/?.so;%s", exe, lua_tostring(L, -1));
  lua_setfield(L, -3, "cpath");
  lua_pop(L, 2);
  lua_pushstring(L, exe);
  lua_setglobal(L, "_CUTE_BINDIR");
  (void)argv0;
}

static void make_arg(lua_State *L, char **argv, int argc, int script) {
  lua_createtable(L, argc - script, script + 1);
  for (int i = 0; i < argc; i++) {
    lua_pushstring(L, argv[i]);
    lua_rawseti(L, -2, i - script);
  }
  lua_setglobal(L, "arg");
}

static int load_cute(lua_State *L) {
  lua_pushcfunction(L, luaopen_cute);
  int st = docall(L, 0, 1);
  if (st) return report(L, st);
  lua_setglobal(L, "cute");
  return 0;
}

/* ---- REPL: lua/cute/repl.lua over the line editor of lineedit.c ------------ */
/* Give the kernel front end (cute.frontend) the text of a chunk compiled as
   "=stdin", so that kernels defined at the prompt are rewritten too.  Only when
   cute is loaded; errors are ignored (the front end then says it is off). */
static void register_chunk(lua_State *L, const char *text) {
  int top = lua_gettop(L);
  lua_getfield(L, LUA_REGISTRYINDEX, "_LOADED");
  lua_getfield(L, -1, "cute");
  if (lua_istable(L, -1)) {
    lua_getglobal(L, "require");
    lua_pushstring(L, "cute.frontend");
    if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
      lua_getfield(L, -1, "register_source");
      lua_pushstring(L, "=stdin");
      lua_pushstring(L, text);
      lua_pcall(L, 2, 0, 0);
    }
  }
  lua_settop(L, top);
}

static void repl(lua_State *L) {
  lua_getglobal(L, "package");
  lua_getfield(L, -1, "preload");
  lua_pushcfunction(L, cute_lineedit_open);
  lua_setfield(L, -2, "cute.lineedit");
  lua_pop(L, 2);
  lua_getglobal(L, "require");
  lua_pushstring(L, "cute.repl");
  int st = docall(L, 1, 1);
  if (st == 0) {
    lua_getfield(L, -1, "run");
    lua_remove(L, -2);
    /* (not docall: the REPL's Ctrl-C handling is lineedit.c's) */
    lua_pushcfunction(L, traceback);
    lua_insert(L, -2);
    st = lua_pcall(L, 0, 0, -2);
    if (st == 0) lua_pop(L, 1);
    else lua_remove(L, -2);
  }
  report(L, st);
}

static void usage(void) {
  fputs("usage: cuteluajit [options] [script [args]]\n"
        "  -e code   run code\n"
        "  -i        interactive REPL after the script/code\n"
        "  -v        print the version\n"
        "  -         run standard input\n"
        "  --cache list|stats|clear   the disk cache of compiled kernels\n"
        "With no script and a terminal on stdin, starts the REPL.\n", stderr);
}

/* Close the state (its finalisers wait for the LLVM warm-up too), then make
 * sure no warm-up thread outlives main: exit() runs LLVM's static destructors. */
static int finish(lua_State *L, int code) {
  lua_close(L);
  cute_compile_warmup_wait();
  cute_cuda_warmup_wait();
  return code;
}

/* cuteluajit --cache list|stats|clear: 0 or 1 (the message on stderr) */
static int cache_cmd(const char *what) {
  cute_err err = {0};
  int rc = 0;
  if (what && !strcmp(what, "list")) {
    char *text = NULL;
    if (!(rc = cute_cache_list(&text, &err))) fputs(text, stdout);
    cute_cache_text_free(text);
  } else if (what && !strcmp(what, "stats")) {
    cute_cache_stats st;
    if (!(rc = cute_cache_stats_get(&st, &err)))
      printf("directory %s\nentries %lld\nbytes %lld\ncap %lld%s\ntemp files %lld\n", st.dir, (long long)st.entries,
             (long long)st.bytes, (long long)st.cap, st.cap ? "" : " (none)", (long long)st.temps);
  } else if (what && !strcmp(what, "clear")) {
    int64_t n = 0;
    char dir[1024] = "";
    if (!(rc = cute_cache_clear(&n, &err))) {
      cute_cache_dir(dir, sizeof dir, NULL);
      printf("removed %lld entr%s from %s\n", (long long)n, n == 1 ? "y" : "ies", dir);
    }
  } else {
    fprintf(stderr, "cuteluajit --cache: expected list, stats or clear, got %s\n", what ? what : "nothing");
    return 1;
  }
  if (rc) fprintf(stderr, "cuteluajit --cache %s: %s\n", what, err.msg);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--cache")) {
    if (argc > 3) { fputs("usage: cuteluajit --cache list|stats|clear\n", stderr); return 1; }
    return cache_cmd(argc > 2 ? argv[2] : NULL);
  }
  lua_State *L = luaL_newstate();
  if (!L) { fputs("cuteluajit: cannot create Lua state\n", stderr); return 1; }
  gL = L;
  luaL_openlibs(L);
  set_paths(L, argv[0]);
  cute_lua_install_searcher(L);

  int interactive = 0, ran = 0, i = 1, status = 0;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || strcmp(a, "-") == 0) break;
    if (strcmp(a, "--") == 0) { i++; break; }
    if (strcmp(a, "-i") == 0) interactive = 1;
    else if (strcmp(a, "-v") == 0) { printf("%s\n", cute_version()); ran = 1; }
    else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) { usage(); return 0; }
    else if (strcmp(a, "-e") == 0) {
      if (++i >= argc) { usage(); return 1; }
      if (!ran && load_cute(L)) return 1;
      ran = 1;
      make_arg(L, argv, argc, 0);
      status = luaL_loadbuffer(L, argv[i], strlen(argv[i]), "=(command line)");
      if (status == 0) status = docall(L, 0, 0);
      if (report(L, status)) { return finish(L, 1); }
    } else { usage(); return 1; }
  }
  if (i < argc) {
    make_arg(L, argv, argc, i);
    if (!ran && load_cute(L)) return 1;
    ran = 1;
    const char *fname = strcmp(argv[i], "-") == 0 ? NULL : argv[i];
    status = luaL_loadfile(L, fname);
    if (status == 0) {
      int nargs = argc - i - 1;
      luaL_checkstack(L, nargs, "too many arguments");
      for (int k = i + 1; k < argc; k++) lua_pushstring(L, argv[k]);
      status = docall(L, nargs, 0);
    }
    if (report(L, status)) { return finish(L, 1); }
  }
  if (interactive || !ran) {
    if (!ran && load_cute(L)) return 1;
    if (interactive || isatty(0)) {
      make_arg(L, argv, argc, 0);
      repl(L);
    } else {
      make_arg(L, argv, argc, 0);
      /* a script on stdin: read it whole, so that its text can be given to the
         kernel front end (register_chunk), then compile it as "=stdin" */
      luaL_Buffer sb;
      luaL_buffinit(L, &sb);
      char chunk[4096];
      size_t got;
      while ((got = fread(chunk, 1, sizeof chunk, stdin)) > 0) luaL_addlstring(&sb, chunk, got);
      luaL_pushresult(&sb);
      register_chunk(L, lua_tostring(L, -1));
      status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_objlen(L, -1), "=stdin");
      lua_remove(L, -2);
      if (status == 0) status = docall(L, 0, 0);
      if (report(L, status)) { return finish(L, 1); }
    }
  }
  return finish(L, 0);
}
