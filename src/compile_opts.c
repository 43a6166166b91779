/* compile_opts.c -- compile options from the table in compile_opts.h: the
 * setters and their validation, the environment, the canonical key text and
 * the reflection API.  Nothing here knows an option by name except through
 * the table. */
#include "core.h"
#include "backend.h"
#include "compile_opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_ARCH, T_INT, T_PTXV, T_BOOL, T_STR, T_LIST, T_KEEP };

typedef struct optrow {
  const char *name;
  int type, lo, hi;
  const char *def, *env;
  int binary;
  const char *doc;
} optrow;

static const optrow rows[COPT_COUNT_] = {
#define X(n, T, lo, hi, def, env, bin, doc) {#n, T_##T, lo, hi, def, env, bin, doc},
    CUTE_COMPILE_OPTS(X)
#undef X
};

static const char *const type_names[] = {"arch", "integer", "integer", "boolean", "string", "list", "list"};


static int find(const char *name) {
  for (int i = 0; name && i < COPT_COUNT_; i++)
    if (!strcmp(rows[i].name, name)) return i;
  return -1;
}

/* ---- typed slots ------------------------------------------------------------------ */
static int *int_slot(cute_compile_opts *o, int i) {
  switch (i) {
#define X(n, T, ...) COPT_INTSLOT_##T(n)
#define COPT_INTSLOT_INT(n) case COPT_##n: return (int *)&o->n;
#define COPT_INTSLOT_PTXV(n) case COPT_##n: return (int *)&o->n;
#define COPT_INTSLOT_BOOL(n) case COPT_##n: return (int *)&o->n;
#define COPT_INTSLOT_ARCH(n)
#define COPT_INTSLOT_STR(n)
#define COPT_INTSLOT_LIST(n)
#define COPT_INTSLOT_KEEP(n)
    CUTE_COMPILE_OPTS(X)
#undef X
  default: return NULL;
  }
}

static char **str_slot(cute_compile_opts *o, int i) {
  switch (i) {
#define X(n, T, ...) COPT_STRSLOT_##T(n)
#define COPT_STRSLOT_ARCH(n) case COPT_##n: return (char **)&o->n;
#define COPT_STRSLOT_STR(n) case COPT_##n: return (char **)&o->n;
#define COPT_STRSLOT_LIST(n) case COPT_##n: return (char **)&o->n;
#define COPT_STRSLOT_KEEP(n) case COPT_##n: return (char **)&o->n;
#define COPT_STRSLOT_INT(n)
#define COPT_STRSLOT_PTXV(n)
#define COPT_STRSLOT_BOOL(n)
    CUTE_COMPILE_OPTS(X)
#undef X
  default: return NULL;
  }
}

static char *dup(const char *s) {
  size_t n = strlen(s);
  char *p = malloc(n + 1);
  if (p) memcpy(p, s, n + 1);
  return p;
}

/* ---- parsing one value ----------------------------------------------------------- */
static int parse_bool(const char *v, int *out) {
  static const char *const t[] = {"true", "1", "yes", "on"}, *const f[] = {"false", "0", "no", "off"};
  for (int i = 0; i < 4; i++) {
    if (!strcmp(v, t[i])) { *out = 1; return 0; }
    if (!strcmp(v, f[i])) { *out = 0; return 0; }
  }
  return 1;
}

static int parse_int(const char *v, int *out) {
  char *e;
  if (!*v) return 1;
  long x = strtol(v, &e, 10);
  if (*e || x < -2147483647L || x > 2147483647L) return 1;
  *out = (int)x;
  return 0;
}

static const char *const stage_words[] = {"ir", "llvm", "ptx", "cubin", "sass"};

/* normalised list text (items trimmed, empty items dropped) into buf */
static int norm_list(const char *v, char *buf, size_t cap, int keep, int *mask, char *bad, size_t badcap) {
  size_t n = 0;
  *mask = 0;
  buf[0] = 0;
  while (*v) {
    while (*v == ' ' || *v == ',') v++;
    const char *s = v;
    while (*v && *v != ',') v++;
    const char *e = v;
    while (e > s && e[-1] == ' ') e--;
    if (e == s) continue;
    size_t len = (size_t)(e - s);
    if (keep) {
      int k = -1;
      for (int i = 0; i < 5; i++)
        if (strlen(stage_words[i]) == len && !strncmp(s, stage_words[i], len)) k = i;
      if (k < 0) { snprintf(bad, badcap, "%.*s", (int)(len < 60 ? len : 60), s); return 1; }
      *mask |= 1 << k;
      continue;
    }
    if (n + len + 2 > cap) { snprintf(bad, badcap, "(list longer than %zu bytes)", cap); return 2; }
    if (n) buf[n++] = ',';
    memcpy(buf + n, s, len);
    n += len;
    buf[n] = 0;
  }
  if (keep) /* canonical order */
    for (int i = 0; i < 5; i++)
      if (*mask & (1 << i)) {
        if (n) buf[n++] = ',';
        n += (size_t)snprintf(buf + n, cap - n, "%s", stage_words[i]);
      }
  return 0;
}

static int set_from(cute_compile_opts *o, int i, const char *v, int from, cute_err *err) {
  const optrow *r = &rows[i];
  char via[64] = "";
  if (from == CUTE_OPT_FROM_ENV) snprintf(via, sizeof via, " (from %s)", r->env);
  int x;
  char buf[2048], bad[96];
  switch (r->type) {
  case T_BOOL:
    if (parse_bool(v, &x))
      return cute_err_setf(err, CUTE_E_ARG, "compile option '%s'%s: expected a boolean (true or false), got '%.200s'", r->name, via, v);
    *int_slot(o, i) = x;
    break;
  case T_INT:
    if (parse_int(v, &x) || x < r->lo || x > r->hi)
      return cute_err_setf(err, CUTE_E_ARG, "compile option '%s'%s: expected an integer %d..%d, got '%.200s'", r->name, via, r->lo,
                  r->hi, v);
    *int_slot(o, i) = x;
    break;
  case T_PTXV:
    if (parse_int(v, &x) || (x != 0 && !target_ptx_version_ok(x)))
      return cute_err_setf(err, CUTE_E_ARG, "compile option '%s'%s: expected 0 or a PTX ISA version LLVM 19 emits (%s), got '%.200s'",
                  r->name, via, target_ptx_versions(), v);
    *int_slot(o, i) = x;
    break;
  case T_ARCH:
    if (!cute_arch_supported(v))
      return cute_err_setf(err, CUTE_E_UNSUPPORTED,
                  "compile option '%s'%s: '%.60s' is not a target this toolchain can emit (LLVM 19 NVPTX: %s)", r->name,
                  via, v, cute_arch_list());
    /* fallthrough */
  case T_STR: {
    char *p = dup(v);
    if (!p) return cute_err_setf(err, CUTE_E_NOMEM, "compile option '%s': out of memory", r->name);
    char **s = str_slot(o, i);
    free(*s);
    *s = p;
    break;
  }
  case T_LIST: case T_KEEP: {
    int mask, rc = norm_list(v, buf, sizeof buf, r->type == T_KEEP, &mask, bad, sizeof bad);
    if (rc == 1)
      return cute_err_setf(err, CUTE_E_ARG, "compile option '%s'%s: '%s' is not a stage; expected a list of ir, llvm, ptx, cubin, sass",
                  r->name, via, bad);
    if (rc) return cute_err_setf(err, CUTE_E_ARG, "compile option '%s'%s: %s", r->name, via, bad);
    char *p = dup(buf);
    if (!p) return cute_err_setf(err, CUTE_E_NOMEM, "compile option '%s': out of memory", r->name);
    char **s = str_slot(o, i);
    free(*s);
    *s = p;
    if (r->type == T_KEEP) o->keep_mask = mask;
    break;
  }
  }
  o->src[i] = (unsigned char)from;
  free(o->keybuf);
  o->keybuf = NULL;
  return 0;
}

/* ---- public ----------------------------------------------------------------------- */
cute_compile_opts *cute_compile_opts_new(void) {
  cute_compile_opts *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  for (int i = 0; i < COPT_COUNT_; i++)
    if (set_from(o, i, rows[i].def, CUTE_OPT_FROM_DEFAULT, NULL)) { cute_compile_opts_free(o); return NULL; }
  return o;
}

void cute_compile_opts_free(cute_compile_opts *o) {
  if (!o) return;
  for (int i = 0; i < COPT_COUNT_; i++) {
    char **s = str_slot(o, i);
    if (s) free(*s);
  }
  free(o->getbuf);
  free(o->keybuf);
  free(o);
}

cute_compile_opts *cute_compile_opts_copy(const cute_compile_opts *o) {
  if (!o) return cute_compile_opts_new();
  cute_compile_opts *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *o;
  c->getbuf = c->keybuf = NULL;
  int ok = 1;
  for (int i = 0; i < COPT_COUNT_; i++) {
    char **s = str_slot(c, i);
    if (s && *s && !(*s = dup(*s))) ok = 0;
  }
  if (!ok) { cute_compile_opts_free(c); return NULL; }
  return c;
}

/* "arch, opt_level, ..." into buf */
static const char *valid_names(char *buf, size_t cap) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < COPT_COUNT_ && n < cap; i++)
    n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", rows[i].name);
  return buf;
}

int cute_compile_opts_set(cute_compile_opts *o, const char *name, const char *value, cute_err *err) {
  if (!o) return cute_err_setf(err, CUTE_E_STATE, "cute_compile_opts_set: NULL options");
  int i = find(name);
  char names[600];
  if (i < 0)
    return cute_err_setf(err, CUTE_E_ARG, "compile option '%.60s': unknown; valid options: %s", name ? name : "(null)",
                valid_names(names, sizeof names));
  if (!value) return set_from(o, i, rows[i].def, CUTE_OPT_FROM_DEFAULT, err);
  return set_from(o, i, value, CUTE_OPT_FROM_USER, err);
}

int cute_compile_opts_apply_env(cute_compile_opts *o, cute_err *err) {
  if (!o) return cute_err_setf(err, CUTE_E_STATE, "cute_compile_opts_apply_env: NULL options");
  for (int i = 0; i < COPT_COUNT_; i++) {
    if (o->src[i] == CUTE_OPT_FROM_USER) continue;
    const char *v = getenv(rows[i].env);
    if (!v || !*v) continue;
    int rc = set_from(o, i, v, CUTE_OPT_FROM_ENV, err);
    if (rc) return rc;
  }
  return 0;
}

static const char *text_of(cute_compile_opts *o, int i, char *buf, size_t cap) {
  int *ip = int_slot(o, i);
  if (!ip) {
    char *s = *str_slot(o, i);
    return s ? s : "";
  }
  if (rows[i].type == T_BOOL) return *ip ? "true" : "false";
  snprintf(buf, cap, "%d", *ip);
  return buf;
}

const char *cute_compile_opts_get(cute_compile_opts *o, const char *name) {
  int i = find(name);
  if (!o || i < 0) return NULL;
  char tmp[32];
  const char *t = text_of(o, i, tmp, sizeof tmp);
  char *p = dup(t);
  if (!p) return NULL;
  free(o->getbuf);
  o->getbuf = p;
  return p;
}

int cute_compile_opts_source(const cute_compile_opts *o, const char *name) {
  int i = find(name);
  return o && i >= 0 ? o->src[i] : -1;
}

const char *cute_compile_opts_key(cute_compile_opts *o) {
  if (!o) return NULL;
  if (o->keybuf) return o->keybuf;
  size_t cap = 256, n = 0;
  for (int i = 0; i < COPT_COUNT_; i++) {
    char **s = str_slot(o, i);
    cap += strlen(rows[i].name) + 24 + (s && *s ? strlen(*s) : 0);
  }
  char *k = malloc(cap);
  if (!k) return NULL;
  k[0] = 0;
  for (int i = 0; i < COPT_COUNT_; i++) {
    if (!rows[i].binary) continue;
    char tmp[32];
    n += (size_t)snprintf(k + n, cap - n, "%s%s=%s", n ? ";" : "", rows[i].name, text_of(o, i, tmp, sizeof tmp));
  }
  o->keybuf = k;
  return k;
}

int cute_compile_opt_count(void) { return COPT_COUNT_; }

const char *cute_compile_opt_info(int i, int field) {
  if (i < 0 || i >= COPT_COUNT_) return NULL;
  const optrow *r = &rows[i];
  switch (field) {
  case CUTE_OPT_NAME: return r->name;
  case CUTE_OPT_TYPE: return type_names[r->type];
  case CUTE_OPT_DEFAULT: return r->def;
  case CUTE_OPT_ENV: return r->env;
  case CUTE_OPT_DOC: return r->doc;
  case CUTE_OPT_BINARY: return r->binary ? "1" : "0";
  default: return NULL;
  }
}
