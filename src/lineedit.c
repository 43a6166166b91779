/* lineedit.c -- the REPL's terminal line editor, history and Ctrl-C.
 *
 * A small editor on termios (no readline: the same behaviour on every host,
 * the bundle's included, and a Ctrl-C we control): one line with horizontal
 * scrolling, the usual Emacs keys, arrows, history and Tab completion through
 * a Lua function.  While Lua code runs (call()), SIGINT sets a debug hook that
 * raises "interrupted!" at the next Lua instruction, as lua.c does; a second
 * SIGINT before that hook ran ends the program (code the JIT compiled into a
 * loop never reaches the hook).  At the prompt the terminal is in raw mode and
 * Ctrl-C is a key: it cancels the line.  Part of cuteluajit only.
 */
#include "lineedit.h"

#include <lauxlib.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

enum { HIST_MAX = 1000, SHOW_MAX = 300 };

static char *hist[HIST_MAX];
static int hist_n;
static char hist_path[4096];

static lua_State *hook_L;
static volatile sig_atomic_t running; /* 0 idle, 1 Lua runs, 2 interrupt pending */
static volatile sig_atomic_t got_sigint;

typedef struct { char *b; size_t len, pos, cap; } line_t;
typedef struct { char *b; size_t len, cap; } out_t;

/* ---- signals ----------------------------------------------------------------- */
static void stop_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luaL_error(L, "interrupted!");
}

static void on_sigint(int sig) {
  if (running == 1) {
    running = 2;
    lua_sethook(hook_L, stop_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
  } else if (running == 2) {
    static const char msg[] = "\ncuteluajit: interrupted again (the running code did not stop): exiting\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
  } else {
    got_sigint = 1;
  }
}

static void install_sigint(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; /* no SA_RESTART: a read at the prompt returns EINTR */
  sigaction(SIGINT, &sa, NULL);
}

/* ---- output ------------------------------------------------------------------ */
static void out_add(out_t *o, const char *s, size_t n) {
  if (o->len + n + 1 > o->cap) {
    size_t cap = o->cap ? o->cap : 256;
    while (o->len + n + 1 > cap) cap *= 2;
    char *nb = realloc(o->b, cap);
    if (!nb) return;
    o->b = nb;
    o->cap = cap;
  }
  memcpy(o->b + o->len, s, n);
  o->len += n;
}
static void out_str(out_t *o, const char *s) { out_add(o, s, strlen(s)); }

static void write_all(const char *s, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= (size_t)w;
  }
}
static void out_flush(out_t *o) {
  write_all(o->b, o->len);
  free(o->b);
  o->b = NULL;
  o->len = o->cap = 0;
}

static int columns(void) {
  struct winsize ws;
  if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

/* columns taken by n bytes of UTF-8 (one per code point) */
static size_t ucols(const char *s, size_t n) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
  return c;
}

/* ---- the line ----------------------------------------------------------------- */
static size_t next_char(const line_t *l, size_t i) {
  if (i < l->len) i++;
  while (i < l->len && ((unsigned char)l->b[i] & 0xC0) == 0x80) i++;
  return i;
}
static size_t prev_char(const line_t *l, size_t i) {
  if (i > 0) i--;
  while (i > 0 && ((unsigned char)l->b[i] & 0xC0) == 0x80) i--;
  return i;
}

static int line_reserve(line_t *l, size_t extra) {
  if (l->len + extra + 1 <= l->cap) return 0;
  size_t cap = l->cap ? l->cap : 128;
  while (l->len + extra + 1 > cap) cap *= 2;
  char *nb = realloc(l->b, cap);
  if (!nb) return -1;
  l->b = nb;
  l->cap = cap;
  return 0;
}
static void line_insert(line_t *l, const char *s, size_t n) {
  if (line_reserve(l, n)) return;
  memmove(l->b + l->pos + n, l->b + l->pos, l->len - l->pos);
  memcpy(l->b + l->pos, s, n);
  l->len += n;
  l->pos += n;
  l->b[l->len] = 0;
}
static void line_delete(line_t *l, size_t from, size_t to) { /* bytes [from, to) */
  if (to <= from) return;
  memmove(l->b + from, l->b + to, l->len - to);
  l->len -= to - from;
  if (l->pos >= to) l->pos -= to - from;
  else if (l->pos > from) l->pos = from;
  l->b[l->len] = 0;
}
static void line_set(line_t *l, const char *s) {
  l->len = l->pos = 0;
  line_insert(l, s, strlen(s));
}

static void refresh(const char *prompt, const line_t *l) {
  int cols = columns();
  size_t plen = ucols(prompt, strlen(prompt));
  size_t width = (size_t)cols > plen + 2 ? (size_t)cols - plen - 1 : 1;
  size_t start = 0;
  while (ucols(l->b + start, l->pos - start) >= width && start < l->pos) start = next_char(l, start);
  size_t end = start;
  while (end < l->len && ucols(l->b + start, next_char(l, end) - start) <= width) end = next_char(l, end);
  out_t o = {0};
  out_str(&o, "\r");
  out_str(&o, prompt);
  out_add(&o, l->b + start, end - start);
  out_str(&o, "\x1b[0K\r");
  size_t col = plen + ucols(l->b + start, l->pos - start);
  if (col > 0) {
    char mv[32];
    snprintf(mv, sizeof mv, "\x1b[%zuC", col);
    out_str(&o, mv);
  }
  out_flush(&o);
}

/* ---- history ------------------------------------------------------------------- */
static void hist_push(const char *s) {
  if (!*s || strchr(s, '\n')) return;
  if (hist_n > 0 && strcmp(hist[hist_n - 1], s) == 0) return;
  char *c = strdup(s);
  if (!c) return;
  if (hist_n == HIST_MAX) {
    free(hist[0]);
    memmove(hist, hist + 1, sizeof hist[0] * (HIST_MAX - 1));
    hist_n--;
  }
  hist[hist_n++] = c;
}

/* Load path (missing is fine); a file over twice the kept lines is rewritten. */
static int hist_load(const char *path) {
  snprintf(hist_path, sizeof hist_path, "%s", path);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char buf[8192];
  int lines = 0;
  while (fgets(buf, sizeof buf, f)) {
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) buf[--n] = 0;
    hist_push(buf);
    lines++;
  }
  fclose(f);
  if (lines > 2 * HIST_MAX && (f = fopen(path, "w"))) {
    for (int i = 0; i < hist_n; i++) fprintf(f, "%s\n", hist[i]);
    fclose(f);
  }
  return hist_n;
}

static void hist_add(const char *s) {
  if (!*s || strchr(s, '\n')) return;
  if (hist_n > 0 && strcmp(hist[hist_n - 1], s) == 0) return; /* a repeat */
  hist_push(s);
  if (!hist_path[0]) return;
  FILE *f = fopen(hist_path, "a");
  if (!f) return;
  fprintf(f, "%s\n", s);
  fclose(f);
}

/* ---- completion ------------------------------------------------------------------ */
static int completer_ref = LUA_NOREF;

static void show_candidates(lua_State *L, int tbl, int n) {
  size_t w = 1;
  for (int i = 1; i <= n && i <= SHOW_MAX; i++) {
    lua_rawgeti(L, tbl, i);
    size_t k = 0;
    if (lua_isstring(L, -1)) { lua_tolstring(L, -1, &k); }
    if (k + 2 > w) w = k + 2;
    lua_pop(L, 1);
  }
  int per = (int)((size_t)columns() / w);
  if (per < 1) per = 1;
  out_t o = {0};
  out_str(&o, "\r\n");
  for (int i = 1; i <= n && i <= SHOW_MAX; i++) {
    lua_rawgeti(L, tbl, i);
    const char *s = lua_isstring(L, -1) ? lua_tostring(L, -1) : "";
    out_str(&o, s);
    if (i % per == 0 || i == n) out_str(&o, "\r\n");
    else for (size_t k = strlen(s); k < w; k++) out_str(&o, " ");
    lua_pop(L, 1);
  }
  if (n > SHOW_MAX) {
    char more[64];
    snprintf(more, sizeof more, "\r\n... and %d more\r\n", n - SHOW_MAX);
    out_str(&o, more);
  }
  out_flush(&o);
}

/* Tab: the completer gives the start of the word and its candidates; insert
   their common prefix, or list them when that adds nothing. */
static void complete(lua_State *L, line_t *l) {
  if (completer_ref == LUA_NOREF || !L) return;
  int top = lua_gettop(L);
  lua_rawgeti(L, LUA_REGISTRYINDEX, completer_ref);
  lua_pushlstring(L, l->b ? l->b : "", l->pos);
  if (lua_pcall(L, 1, 2, 0) != 0 || !lua_isnumber(L, -2) || !lua_istable(L, -1)) {
    lua_settop(L, top);
    return;
  }
  size_t start = (size_t)lua_tointeger(L, -2);
  int tbl = lua_gettop(L), n = (int)lua_objlen(L, tbl);
  if (start < 1 || start - 1 > l->pos || n == 0) { lua_settop(L, top); return; }
  size_t wlen = l->pos - (start - 1);
  /* the common prefix of the candidates */
  lua_rawgeti(L, tbl, 1);
  size_t plen = 0;
  const char *first = lua_isstring(L, -1) ? lua_tolstring(L, -1, &plen) : "";
  for (int i = 2; i <= n; i++) {
    lua_rawgeti(L, tbl, i);
    size_t k = 0;
    const char *s = lua_isstring(L, -1) ? lua_tolstring(L, -1, &k) : "";
    size_t j = 0;
    while (j < plen && j < k && s[j] == first[j]) j++;
    plen = j;
    lua_pop(L, 1);
  }
  if (plen > wlen || (n == 1 && plen >= wlen)) {
    line_delete(l, start - 1, l->pos);
    line_insert(l, first, plen);
  } else if (n > 1) {
    show_candidates(L, tbl, n);
  }
  lua_settop(L, top);
}

/* ---- reading keys --------------------------------------------------------------- */
/* 1: a byte; 0: end of input; -2: SIGINT arrived; -1: error */
static int read_byte(unsigned char *c) {
  for (;;) {
    ssize_t r = read(0, c, 1);
    if (r == 1) return 1;
    if (r == 0) return 0;
    if (errno == EINTR) {
      if (got_sigint) { got_sigint = 0; return -2; }
      continue;
    }
    return -1;
  }
}

static struct termios saved_tio;
static int raw_on(void) {
  if (tcgetattr(0, &saved_tio) < 0) return -1;
  struct termios r = saved_tio;
  r.c_iflag &= ~(tcflag_t)(BRKINT | ICRNL | INPCK | ISTRIP | IXON);
  r.c_cflag |= CS8;
  r.c_lflag &= ~(tcflag_t)(ECHO | ICANON | IEXTEN | ISIG);
  r.c_cc[VMIN] = 1;
  r.c_cc[VTIME] = 0;
  return tcsetattr(0, TCSANOW, &r); /* (TCSANOW: keep what was typed ahead) */
}
static void raw_off(void) { tcsetattr(0, TCSANOW, &saved_tio); }

enum { R_LINE, R_EOF, R_CANCEL };

/* the plain reader: no terminal (a pipe or a file on stdin) */
static int read_plain(const char *prompt, line_t *l) {
  write_all(prompt, strlen(prompt));
  unsigned char c;
  int r, any = 0;
  while ((r = read_byte(&c)) == 1 && c != '\n') {
    if (!line_reserve(l, 1)) { l->b[l->len++] = (char)c; l->b[l->len] = 0; }
    any = 1;
  }
  if (r == -2) return R_CANCEL;
  if (r <= 0 && !any) return R_EOF;
  if (!l->b && !line_reserve(l, 1)) l->b[0] = 0;
  return R_LINE;
}

static int edit(lua_State *L, const char *prompt, line_t *l) {
  int hpos = hist_n;
  char *current = NULL; /* the line being typed while browsing history */
  int result = R_LINE;
  if (line_reserve(l, 1)) return R_EOF; /* (out of memory) */
  l->b[0] = 0;
  refresh(prompt, l);
  for (;;) {
    unsigned char c;
    int r = read_byte(&c);
    if (r == -2 || (r == 1 && c == 3)) { write_all("^C\r\n", 4); result = R_CANCEL; break; }
    if (r <= 0) { result = l->len ? R_LINE : R_EOF; write_all("\r\n", 2); break; }
    if (c == '\r' || c == '\n') {
      l->pos = l->len;
      refresh(prompt, l);
      write_all("\r\n", 2);
      break;
    }
    switch (c) {
    case 4: /* Ctrl-D */
      if (l->len == 0) { write_all("\r\n", 2); free(current); return R_EOF; }
      line_delete(l, l->pos, next_char(l, l->pos));
      break;
    case 127: case 8: line_delete(l, prev_char(l, l->pos), l->pos); break;
    case 1: l->pos = 0; break;                        /* Ctrl-A */
    case 5: l->pos = l->len; break;                   /* Ctrl-E */
    case 2: l->pos = prev_char(l, l->pos); break;     /* Ctrl-B */
    case 6: l->pos = next_char(l, l->pos); break;     /* Ctrl-F */
    case 11: line_delete(l, l->pos, l->len); break;   /* Ctrl-K */
    case 21: line_delete(l, 0, l->pos); break;        /* Ctrl-U */
    case 23: {                                        /* Ctrl-W */
      size_t p = l->pos;
      while (p > 0 && l->b[p - 1] == ' ') p--;
      while (p > 0 && l->b[p - 1] != ' ') p--;
      line_delete(l, p, l->pos);
      break;
    }
    case 12: write_all("\x1b[H\x1b[2J", 7); break;   /* Ctrl-L */
    case 9: complete(L, l); break;                    /* Tab */
    case 16: case 14: case 27: {                      /* Ctrl-P, Ctrl-N, escape sequences */
      int key = c == 16 ? 'A' : c == 14 ? 'B' : 0;
      if (c == 27) {
        unsigned char s0, s1, s2;
        if (read_byte(&s0) != 1) break;
        if (s0 == '[' || s0 == 'O') {
          if (read_byte(&s1) != 1) break;
          if (s1 >= '0' && s1 <= '9') {
            if (read_byte(&s2) != 1) break;
            key = s1 == '1' || s1 == '7' ? 'H' : s1 == '4' || s1 == '8' ? 'F' : s1 == '3' ? 'X' : 0;
            while (s2 != '~' && read_byte(&s2) == 1) {}
          } else {
            key = s1;
          }
        }
      }
      if (key == 'C') l->pos = next_char(l, l->pos);
      else if (key == 'D') l->pos = prev_char(l, l->pos);
      else if (key == 'H') l->pos = 0;
      else if (key == 'F') l->pos = l->len;
      else if (key == 'X') line_delete(l, l->pos, next_char(l, l->pos));
      else if ((key == 'A' && hpos > 0) || (key == 'B' && hpos < hist_n)) {
        if (hpos == hist_n) { free(current); current = strdup(l->b ? l->b : ""); }
        hpos += key == 'A' ? -1 : 1;
        line_set(l, hpos == hist_n ? (current ? current : "") : hist[hpos]);
      }
      break;
    }
    default:
      if (c >= 32) line_insert(l, (const char *)&c, 1);
      break;
    }
    refresh(prompt, l);
  }
  free(current);
  return result;
}

static int interactive(void) {
  const char *term = getenv("TERM");
  return isatty(0) && isatty(1) && !(term && strcmp(term, "dumb") == 0);
}

/* ---- Lua bindings ----------------------------------------------------------------- */
static int l_readline(lua_State *L) {
  const char *prompt = luaL_optstring(L, 1, "> ");
  line_t l = {0};
  int r;
  got_sigint = 0;
  if (interactive() && raw_on() == 0) {
    r = edit(L, prompt, &l);
    raw_off();
  } else {
    r = read_plain(prompt, &l);
  }
  if (r == R_LINE) lua_pushlstring(L, l.b ? l.b : "", l.len);
  else if (r == R_EOF) lua_pushnil(L);
  else lua_pushboolean(L, 0);
  free(l.b);
  return 1;
}

static int l_history_file(lua_State *L) {
  lua_pushinteger(L, hist_load(luaL_checkstring(L, 1)));
  return 1;
}

static int l_history_add(lua_State *L) {
  hist_add(luaL_checkstring(L, 1));
  return 0;
}

static int l_set_completer(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_unref(L, LUA_REGISTRYINDEX, completer_ref);
  lua_pushvalue(L, 1);
  completer_ref = luaL_ref(L, LUA_REGISTRYINDEX);
  return 0;
}

/* call(f, handler) -> true, results... | false, handler's value */
static int l_call(lua_State *L) {
  luaL_checktype(L, 1, LUA_TFUNCTION);
  luaL_checktype(L, 2, LUA_TFUNCTION);
  lua_settop(L, 2);
  lua_pushvalue(L, 2); /* 3: handler */
  lua_pushvalue(L, 1); /* 4: f */
  hook_L = L;
  got_sigint = 0;
  sig_atomic_t outer = running; /* (calls nest: a command evaluating an expression) */
  running = 1;
  int st = lua_pcall(L, 0, LUA_MULTRET, 3);
  if (running == 2) lua_sethook(L, NULL, 0, 0); /* (interrupted after its last hook point) */
  running = outer;
  lua_pushboolean(L, st == 0);
  lua_replace(L, 3);
  return lua_gettop(L) - 2;
}

static int l_interactive(lua_State *L) {
  lua_pushboolean(L, interactive());
  return 1;
}

static int l_columns(lua_State *L) {
  lua_pushinteger(L, columns());
  return 1;
}

int cute_lineedit_open(lua_State *L) {
  static const luaL_Reg fns[] = {
    {"readline", l_readline}, {"history_file", l_history_file}, {"history_add", l_history_add},
    {"set_completer", l_set_completer}, {"call", l_call}, {"interactive", l_interactive},
    {"columns", l_columns}, {NULL, NULL}};
  install_sigint();
  lua_newtable(L);
  luaL_register(L, NULL, fns);
  return 1;
}
