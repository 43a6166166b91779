/* threads_c.c -- several lua_States in several OS threads of one process,
 * compiling and launching kernels at once (issue 14; docs/SOAK.md, "Threads").
 *
 * THREADS threads (default 4) each open their own lua_State (luaL_newstate +
 * luaopen_cute), and, ROUNDS times (default 3), make new kernel objects and:
 *   - launch them: on the GPU when there is one, else on the CPU target
 *     (CUTE_TARGET=cpu is set for the process: the IR interpreter, one engine
 *     per kernel program); every result is checked against plain Lua;
 *   - compile them to PTX through LLVM (k:ptx), so that LLVM runs in every
 *     thread at once (on the CPU target a launch does not use LLVM);
 *   - the same kernel with the same specialisation in every thread (its PTX
 *     must be byte-identical to the one thread 0 got) and one specialisation
 *     of the thread's own (c = 100 + thread).
 * Run twice: disk cache off, then on (one cache directory shared by all
 * threads).  Built normally (make test) and with ThreadSanitizer over the C
 * core (make test-tsan: build/tsan/test_threads_c).
 * Prints "N passed, N failed, N skipped". */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "cute_cuda.h"
#include "cute_lua.h"

/* the work of one thread, as Lua (its chunk name is its text, so that the
   source front end finds the kernel's source): returns wrong results, launches, the PTX
   of the shared specialisation, the PTX of its own */
static const char *work_lua =
    "local id, rounds, cache = ...\n"
    "local cute = require('cute')\n"
    "local function body(X, Y, c)\n"
    "  local i = cute.arch.block_idx() * cute.arch.block_dim() + cute.arch.thread_idx()\n"
    "  cute.if_then(i < cute.size(X), function()\n"
    "    local s = X[i] * 0\n"
    "    for j in cute.range_constexpr(c % 4 + 1) do s = s + X[i] * c + j end\n"
    "    Y[i] = s\n"
    "  end)\n"
    "end\n"
    "local function ref(x, c) local s = 0; for j = 0, c % 4 do s = s + x * c + j end; return s end\n"
    "local bad, launches, ptx_same, ptx_own = 0, 0\n"
    "for r = 1, rounds do\n"
    "  for _, c in ipairs({ 3, 100 + id }) do\n"
    "    local k = cute.kernel(body, { cache = cache, name = 'work' })\n"
    "    local n = 200 + 17 * r + c % 7\n"
    "    local host = {}\n"
    "    for i = 1, n do host[i] = (i * 13 + id) % 97 end\n"
    "    local X = cute.from_host(host, cute.int32, { n })\n"
    "    local Y = cute.zeros({ n }, cute.int32)\n"
    "    k:launch{ grid = math.ceil(n / 64), block = 64 }(X, Y, c)\n"
    "    launches = launches + 1\n"
    "    local out = Y:to_host()\n"
    "    for i = 0, n - 1 do if out[i] ~= ref(host[i + 1], c) then bad = bad + 1; break end end\n"
    "    X:free(); Y:free()\n"
    "    local S = cute.tensor_spec({ 256 }, cute.int32)\n"
    "    local ptx = k:ptx(S, cute.tensor_spec({ 256 }, cute.int32), c)\n"
    "    if c == 3 then\n"
    "      if ptx_same and ptx ~= ptx_same then bad = bad + 1 end\n"
    "      ptx_same = ptx\n"
    "    else ptx_own = ptx end\n"
    "  end\n"
    "  collectgarbage()\n"
    "end\n"
    "return bad, launches, ptx_same, ptx_own, require('cute.target_cpu').active and 'cpu' or 'gpu'\n";

typedef struct {
  int id, rounds, cache;
  int bad, launches, ok;
  char *ptx_same, *ptx_own, target[8];
  char msg[1100];
} worker;

static void *work(void *arg) {
  worker *w = arg;
  lua_State *L = luaL_newstate();
  if (!L) { snprintf(w->msg, sizeof w->msg, "luaL_newstate failed"); return NULL; }
  luaL_openlibs(L);
  cute_err e;
  lua_pushcfunction(L, luaopen_cute);
  if (cute_lua_pcall(L, 0, 0, &e) != 0) {
    snprintf(w->msg, sizeof w->msg, "luaopen_cute: %s", e.msg);
    lua_close(L);
    return NULL;
  }
  if (luaL_loadbuffer(L, work_lua, strlen(work_lua), work_lua) != 0) {
    snprintf(w->msg, sizeof w->msg, "load: %s", lua_tostring(L, -1));
    lua_close(L);
    return NULL;
  }
  lua_pushinteger(L, w->id);
  lua_pushinteger(L, w->rounds);
  lua_pushboolean(L, w->cache);
  if (cute_lua_pcall(L, 3, 5, &e) != 0) {
    snprintf(w->msg, sizeof w->msg, "%s", e.msg);
    lua_close(L);
    return NULL;
  }
  w->bad = (int)lua_tointeger(L, -5);
  w->launches = (int)lua_tointeger(L, -4);
  w->ptx_same = strdup(lua_tostring(L, -3));
  w->ptx_own = strdup(lua_tostring(L, -2));
  snprintf(w->target, sizeof w->target, "%s", lua_tostring(L, -1));
  w->ok = 1;
  lua_close(L);
  return NULL;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void run(int nthreads, int rounds, int cache) {
  pthread_t th[64];
  worker w[64];
  memset(w, 0, sizeof w);
  double t0 = now_s();
  for (int i = 0; i < nthreads; i++) {
    w[i].id = i;
    w[i].rounds = rounds;
    w[i].cache = cache;
    if (pthread_create(&th[i], NULL, work, &w[i]) != 0) {
      CHECK(0, "pthread_create %d", i);
      nthreads = i;
      break;
    }
  }
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  double t = now_s() - t0;
  int launches = 0;
  for (int i = 0; i < nthreads; i++) {
    CHECK(w[i].ok, "thread %d (disk cache %s): %s", i, cache ? "on" : "off", w[i].msg);
    if (!w[i].ok) continue;
    launches += w[i].launches;
    CHECK(w[i].bad == 0 && w[i].launches == 2 * rounds,
          "thread %d: %d launches, %d wrong results or PTX that changed between rounds", i, w[i].launches, w[i].bad);
    CHECK(!w[0].ok || strcmp(w[i].ptx_same, w[0].ptx_same) == 0,
          "thread %d: the shared specialisation's PTX is thread 0's", i);
    char want[32];
    snprintf(want, sizeof want, "%d", 100 + i);
    CHECK(strstr(w[i].ptx_own, ".entry") != NULL && (i == 0 || strcmp(w[i].ptx_own, w[0].ptx_own) != 0),
          "thread %d: its own specialisation has PTX of its own", i);
  }
  printf("threads: %d lua_States, %d launches (%s) and %d PTX compiles in %.2f s, disk cache %s\n", nthreads,
         launches, w[0].target, launches, t, cache ? "on" : "off");
  for (int i = 0; i < nthreads; i++) {
    free(w[i].ptx_same);
    free(w[i].ptx_own);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  int nthreads = getenv("THREADS") ? atoi(getenv("THREADS")) : 4;
  int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 3;
  if (nthreads < 1 || nthreads > 64) nthreads = 4;
  if (rounds < 1) rounds = 3;
  /* no GPU: the CPU target for every lua_State (set before any is opened; also
     over CUTE_TARGET=gpu, which tools/run_tests.sh exports for the specs) */
  if (!cute_cuda_available(NULL)) setenv("CUTE_TARGET", "cpu", 1);
  char dir[] = "/tmp/cute_threads_c.XXXXXX";
  int own_dir = getenv("CUTE_CACHE_DIR") == NULL && mkdtemp(dir) != NULL;
  if (own_dir) setenv("CUTE_CACHE_DIR", dir, 1);
  run(nthreads, rounds, 0);
  run(nthreads, rounds, 1);
  if (own_dir) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
  }
  return check_done();
}
