/* oracle_c.c -- run the layout oracle (JSON lines) through cute_parse /
 * cute_op / cute_format and compare canonical text.
 *   usage: oracle_c FILE.jsonl [-v]
 */
#include "cute.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct jv { int kind; long long i; char s[2048]; } jv; /* kind 0 int, 1 str */

static const char *ws(const char *p) { while (*p == ' ' || *p == '\t') p++; return p; }

static const char *jstr(const char *p, char *out, size_t cap) {
  size_t n = 0;
  if (*p != '"') return NULL;
  p++;
  while (*p && *p != '"') {
    if (*p == '\\' && p[1]) p++;
    if (n + 1 < cap) out[n++] = *p;
    p++;
  }
  out[n] = 0;
  return *p == '"' ? p + 1 : NULL;
}

static const char *jscalar(const char *p, jv *v) {
  p = ws(p);
  if (*p == '"') { v->kind = 1; return jstr(p, v->s, sizeof v->s); }
  char *end;
  v->kind = 0;
  v->i = strtoll(p, &end, 10);
  return end == p ? NULL : end;
}

/* parse {"op":"..","args":[..],"result":X} ; result may be [str,int] */
static int parse_line(const char *p, char *op, jv *args, int *nargs, jv *res, int *nres) {
  *nargs = 0;
  *nres = 0;
  p = ws(p);
  if (*p++ != '{') return -1;
  for (;;) {
    char key[64];
    p = ws(p);
    if (*p == '}') return 0;
    if (!(p = jstr(p, key, sizeof key))) return -1;
    p = ws(p);
    if (*p++ != ':') return -1;
    p = ws(p);
    if (!strcmp(key, "op")) {
      if (!(p = jstr(p, op, 64))) return -1;
    } else if (*p == '[') {
      p++;
      int *cnt = !strcmp(key, "args") ? nargs : nres;
      jv *dst = !strcmp(key, "args") ? args : res;
      for (;;) {
        p = ws(p);
        if (*p == ']') { p++; break; }
        if (*cnt >= 8) return -1;
        if (!(p = jscalar(p, &dst[(*cnt)++]))) return -1;
        p = ws(p);
        if (*p == ',') p++;
      }
      if (!strcmp(key, "result")) *nres = -*nres; /* negative: list */
    } else {
      if (!(p = jscalar(p, &res[0]))) return -1;
      *nres = 1;
    }
    p = ws(p);
    if (*p == ',') p++;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s FILE.jsonl [-v]\n", argv[0]); return 2; }
  int verbose = argc > 2;
  FILE *f = fopen(argv[1], "r");
  if (!f) { perror(argv[1]); return 2; }
  static char line[1 << 16];
  int total = 0, pass = 0;
  while (fgets(line, sizeof line, f)) {
    char op[64] = "";
    static jv args[8], res[8];
    int na, nr;
    if (line[0] == '\n' || !line[0]) continue;
    total++;
    if (parse_line(line, op, args, &na, res, &nr)) {
      printf("BAD LINE %s", line);
      continue;
    }
    static cute_value av[8], out, out2;
    cute_err err;
    int bad = 0;
    for (int k = 0; k < na && !bad; k++) {
      if (args[k].kind == 0) {
        char t[32];
        snprintf(t, sizeof t, "%lld", args[k].i);
        if (cute_parse(t, &av[k], &err)) bad = 1;
      } else if (cute_parse(args[k].s, &av[k], &err)) {
        bad = 1;
      }
    }
    if (bad) { printf("FAIL parse %s  -> %s", err.msg, line); continue; }
    int code = cute_op_lookup(op);
    if (code < 0) { printf("FAIL unknown op %s\n", op); continue; }
    if (cute_op(code, av, na, &out, &out2, &err)) {
      printf("FAIL %s: %s\n   %s", op, err.msg, line);
      continue;
    }
    char got[4096], got2[64] = "";
    cute_format(&out, got, sizeof got);
    cute_format(&out2, got2, sizeof got2);
    char want[4096], want2[64] = "";
    jv *r0 = &res[0];
    if (r0->kind == 0) snprintf(want, sizeof want, "%lld", r0->i);
    else snprintf(want, sizeof want, "%s", r0->s);
    int ok = !strcmp(got, want);
    if (nr < 0) {
      snprintf(want2, sizeof want2, "%lld", res[1].i);
      ok = ok && !strcmp(got2, want2);
    } else if (r0->kind == 0) {
      ok = ok && out.type == CUTE_V_INT;
    }
    if (ok) { pass++; if (verbose) printf("ok %s", line); }
    else printf("FAIL %s: got %s %s want %s %s\n   %s", op, got, got2, want, want2, line);
  }
  fclose(f);
  printf("%d passed, %d failed\n", pass, total - pass);
  return pass == total ? 0 : 1;
}
