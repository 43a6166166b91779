/* layout_errors_c.c -- adversarial inputs for the layout algebra: garbage
 * cute_value structs, random text, extreme integers, deep nesting.  Run under
 * ASan/UBSan; the only requirement besides the explicit checks is "no crash".
 *   usage: layout_errors_c [iterations]
 */
#include "cute.h"
#include "../src/core.h" /* cute_err_setf: internal, linked from src/core.c */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static int64_t rnd_int(void) {
  switch (rnd() % 8) {
  case 0: return INT64_MIN;
  case 1: return INT64_MAX;
  case 2: return -(int64_t)(rnd() % 5);
  case 3: return (int64_t)(rnd() % 3);
  case 4: return (int64_t)1 << (rnd() % 63);
  default: return (int64_t)(rnd() % 17);
  }
}

static int failures = 0, checks = 0;
#define CHECK(cond, ...) do { checks++; if (!(cond)) { failures++; printf("FAIL: " __VA_ARGS__); printf("\n"); } } while (0)

static void garbage(cute_value *v) {
  memset(v, 0, sizeof *v);
  v->type = (int32_t)(rnd() % 10) - 1;
  v->n = (int32_t)(rnd() % 140) - 5;
  v->sw_b = (int32_t)(rnd() % 80) - 10;
  v->sw_m = (int32_t)(rnd() % 80) - 10;
  v->sw_s = (int32_t)(rnd() % 80) - 40;
  v->offset = rnd_int();
  for (int k = 0; k < 128; k++) {
    v->node[k].kind = (int32_t)(rnd() % 6) - 1;
    v->node[k].span = (int32_t)(rnd() % 10) - 2;
    v->node[k].a = rnd_int();
    v->node[k].b = rnd_int();
  }
}

/* a valid value, then optionally one mutated field */
static const char *samples[] = {
  "(4,2):(1,4)", "((2,2),(3,4)):((1,6),(2,12))", "8:1", "1:0", "(8):(1)", "():()",
  "(2,3)", "(2,_)", "(4:2,_,(2,2):(1,4))", "7", "-3", "_", "()", "Sw<3,3,3> o 0 o (8,8):(8,1)",
  "Sw<2,0,2>", "(9223372036854775807,2):(1,2)", "(3,5):(-1,-3)", "((1,1),1):((0,0),0)",
  "(4611686018427387904,4):(2,1)", "(2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2):(1,2,4,8,16,32,64,128,256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144,524288,1048576,2097152,4194304,8388608,16777216,33554432,67108864,134217728,268435456,536870912,1073741824,2147483648,4294967296,8589934592,17179869184,34359738368,68719476736,137438953472,274877906944,549755813888,1099511627776,2199023255552,4398046511104,8796093022208,17592186044416,35184372088832,70368744177664,140737488355328,281474976710656,562949953421312,1125899906842624,2251799813685248,4503599627370496,9007199254740992,18014398509481984,36028797018963968,72057594037927936,144115188075855872,288230376151711744,576460752303423488,1152921504606846976,2305843009213693952,4611686018427387904,1,1,1)",
  "(((2,2),(2,2)),((2,2),(2,2))):(((1,2),(4,8)),((16,32),(64,128)))", "0", "1", "2",
  "(1,0,-1)", "((7,7),_)", "(3:0,1:1)", "(4,6):(6,1)",
  "Sw<2,2,-3> o 5 o ((2,4),8):((16,1),2)", "Sw<1,0,1> o -7 o 4:1", "Sw<3,4,3> o 9223372036854775807 o (8,2):(1,8)",
};
enum { NS = sizeof samples / sizeof samples[0] };

static void sample(cute_value *v) {
  cute_err e;
  if (cute_parse(samples[rnd() % NS], v, &e)) memset(v, 0, sizeof *v);
  if (rnd() % 4 == 0 && v->n > 0) {
    int k = (int)(rnd() % (uint64_t)v->n);
    switch (rnd() % 5) {
    case 0: v->node[k].a = rnd_int(); break;
    case 1: v->node[k].b = rnd_int(); break;
    case 2: v->node[k].span = (int32_t)(rnd() % 6) - 1; break;
    case 3: v->node[k].kind = (int32_t)(rnd() % 5); break;
    default: v->type = (int32_t)(rnd() % 8); break;
    }
  }
}

static void run_all(cute_value *args, int nargs) {
  cute_value out, out2;
  cute_err e;
  char buf[256];
  for (int op = -2; op < CUTE_OP_COUNT_ + 2; op++) {
    for (int na = 0; na <= nargs; na++) {
      e.code = 0;
      e.msg[0] = 0;
      int rc = cute_op(op, args, na, &out, &out2, &e);
      if (rc) CHECK(e.code == rc && e.msg[0], "op %d: error %d without message", op, rc);
      cute_format(&out, buf, sizeof buf);
      cute_format(&out2, buf, 3);
    }
  }
  for (int k = 0; k < nargs; k++) {
    int64_t crd[4] = {rnd_int(), rnd_int(), 1, 2}, r, sh[8], st[8];
    cute_layout_crd2idx(&args[k], crd, (int)(rnd() % 4) + 1, &r, &e);
    cute_layout_leaves(&args[k], sh, st, 8);
    cute_format(&args[k], buf, sizeof buf);
    cute_format(&args[k], NULL, 0);
  }
}

static void expect(const char *op, const char *a0, const char *a1, int code, const char *frag) {
  cute_value a[2], o, o2;
  cute_err e;
  int rc = cute_parse(a0, &a[0], &e);
  if (!rc && a1) rc = cute_parse(a1, &a[1], &e);
  if (!rc) rc = cute_op(cute_op_lookup(op), a, a1 ? 2 : 1, &o, &o2, &e);
  CHECK(rc == code, "%s(%s, %s): got %d want %d (%s)", op, a0, a1 ? a1 : "", rc, code,
        rc ? e.msg : "");
  if (rc && frag) CHECK(strstr(e.msg, frag) != NULL, "%s: message \"%s\" lacks \"%s\"", op, e.msg, frag);
}

/* ---- functional properties on random layouts ------------------------------ */

static int64_t ev(const cute_value *L, int64_t i) {
  int64_t r = -999999;
  cute_err e;
  if (cute_layout_crd2idx(L, &i, 1, &r, &e)) return -999999;
  return r;
}

static int64_t sz(const cute_value *L) {
  cute_value o;
  cute_err e;
  if (cute_op(CUTE_OP_SIZE, L, 1, &o, NULL, &e)) return -1;
  return o.node[0].a;
}

/* random layout text: rank 1..3, depth <= 2, power-of-two shapes (CuTe's
   admissibility test is exact there, so the functional checks must hold) */
static void rand_layout(char *buf, size_t cap, int compact) {
  static const int shp[] = {1, 2, 2, 4, 4, 4, 8};
  int64_t cur = 1;
  int rank = 1 + (int)(rnd() % 3), n = 0;
  char sh[256] = "", st[256] = "";
  size_t ls = 0, lt = 0;
  if (rank > 1) { sh[ls++] = '('; st[lt++] = '('; }
  for (int k = 0; k < rank; k++) {
    int sub = rnd() % 4 == 0 ? 2 : 1;
    if (k) { sh[ls++] = ','; st[lt++] = ','; }
    if (sub > 1) { sh[ls++] = '('; st[lt++] = '('; }
    for (int q = 0; q < sub; q++) {
      int s = shp[rnd() % 7];
      int64_t d = compact ? cur : (int64_t)(rnd() % 4 == 0 ? 0 : (rnd() % 5 == 0 ? cur * 2 : cur));
      if (q) { sh[ls++] = ','; st[lt++] = ','; }
      ls += (size_t)snprintf(sh + ls, sizeof sh - ls, "%d", s);
      lt += (size_t)snprintf(st + lt, sizeof st - lt, "%lld", (long long)d);
      cur *= s;
      n++;
    }
    if (sub > 1) { sh[ls++] = ')'; st[lt++] = ')'; }
  }
  if (rank > 1) { sh[ls++] = ')'; st[lt++] = ')'; }
  sh[ls] = st[lt] = 0;
  snprintf(buf, cap, "%s:%s", sh, st);
}

static void properties(long iters) {
  char ta[300], tb[300], fr[600];
  for (long it = 0; it < iters; it++) {
    cute_value A, B, R, R2, args[2];
    cute_err e;
    rand_layout(ta, sizeof ta, rnd() % 2);
    rand_layout(tb, sizeof tb, rnd() % 2);
    if (cute_parse(ta, &A, &e) || cute_parse(tb, &B, &e)) { CHECK(0, "gen %s %s", ta, tb); continue; }
    int64_t na = sz(&A), nb = sz(&B);
    args[0] = A;
    args[1] = B;
    /* coalesce and filter keep the function / the image */
    if (!cute_op(CUTE_OP_COALESCE, args, 1, &R, NULL, &e))
      for (int64_t i = 0; i < na; i++)
        if (ev(&R, i) != ev(&A, i)) { cute_format(&R, fr, sizeof fr); CHECK(0, "coalesce %s -> %s at %lld", ta, fr, (long long)i); break; }
    /* composition: R(i) == A(B(i)) when admissible, B's image lies in A and
       A and B are injective (with aliasing, CuTe's by-mode result differs) */
    int64_t cb = 0;
    int injA = 1;
    for (int64_t i = 0; i < nb; i++) if (ev(&B, i) > cb) cb = ev(&B, i);
    for (int64_t i = 0; i < na && injA; i++)
      for (int64_t j = 0; j < i; j++) if (ev(&A, i) == ev(&A, j)) { injA = 0; break; }
    for (int64_t i = 0; i < nb && injA; i++) /* and B injective: modes combine disjointly */
      for (int64_t j = 0; j < i; j++) if (ev(&B, i) == ev(&B, j)) { injA = 0; break; }
    if (injA && cb < na && !cute_op(CUTE_OP_COMPOSITION, args, 2, &R, NULL, &e)) {
      CHECK(sz(&R) == nb, "composition size %s o %s", ta, tb);
      for (int64_t i = 0; i < nb; i++)
        if (ev(&R, i) != ev(&A, ev(&B, i))) {
          cute_format(&R, fr, sizeof fr);
          CHECK(0, "composition %s o %s = %s wrong at %lld", ta, tb, fr, (long long)i);
          break;
        }
    }
    /* right_inverse: A(R(i)) == i */
    if (!cute_op(CUTE_OP_RIGHT_INVERSE, args, 1, &R, NULL, &e)) {
      for (int64_t i = 0; i < sz(&R); i++)
        if (ev(&A, ev(&R, i)) != i) { cute_format(&R, fr, sizeof fr); CHECK(0, "right_inverse %s -> %s at %lld", ta, fr, (long long)i); break; }
    }
    /* left_inverse of an injective layout: R(A(i)) == i */
    if (!cute_op(CUTE_OP_COMPLEMENT, args, 1, &R2, NULL, &e) &&
        !cute_op(CUTE_OP_LEFT_INVERSE, args, 1, &R, NULL, &e)) {
      int inj = 1;
      for (int64_t i = 0; i < na && inj; i++)
        for (int64_t j = 0; j < i; j++) if (ev(&A, i) == ev(&A, j)) { inj = 0; break; }
      if (inj)
        for (int64_t i = 0; i < na; i++)
          if (ev(&R, ev(&A, i)) != i) { cute_format(&R, fr, sizeof fr); CHECK(0, "left_inverse %s -> %s at %lld", ta, fr, (long long)i); break; }
      /* complement: images of A and of its complement meet only at 0 */
      if (inj)
        for (int64_t j = 1; j < sz(&R2) && j < 64; j++)
          for (int64_t i = 0; i < na; i++)
            if (ev(&R2, j) == ev(&A, i)) { cute_format(&R2, fr, sizeof fr); CHECK(0, "complement %s -> %s overlaps", ta, fr); j = 99; break; }
    }
    /* logical_divide(A, B) == A o (B, complement(B, size(A))) as functions */
    if (!cute_op(CUTE_OP_LOGICAL_DIVIDE, args, 2, &R, NULL, &e)) {
      cute_value T[2], C;
      char tt[1300];
      T[0] = B;
      cute_parse("1", &T[1], &e);
      T[1].node[0].a = na;
      if (!cute_op(CUTE_OP_COMPLEMENT, T, 2, &C, NULL, &e)) {
        char tc[300];
        cute_format(&C, tc, sizeof tc);
        /* build (B, C) by text */
        char sb[300], db[300], sc[300], dc[300];
        cute_value P;
        cute_op(CUTE_OP_SHAPE, &B, 1, &P, NULL, &e); cute_format(&P, sb, sizeof sb);
        cute_op(CUTE_OP_STRIDE, &B, 1, &P, NULL, &e); cute_format(&P, db, sizeof db);
        cute_op(CUTE_OP_SHAPE, &C, 1, &P, NULL, &e); cute_format(&P, sc, sizeof sc);
        cute_op(CUTE_OP_STRIDE, &C, 1, &P, NULL, &e); cute_format(&P, dc, sizeof dc);
        snprintf(tt, sizeof tt, "(%s,%s):(%s,%s)", sb, sc, db, dc);
        cute_value BC;
        if (!cute_parse(tt, &BC, &e)) {
          int64_t n = sz(&R);
          for (int64_t i = 0; i < n && i < 512; i++)
            if (ev(&BC, i) < na && ev(&R, i) != ev(&A, ev(&BC, i))) {
              cute_format(&R, fr, sizeof fr);
              CHECK(0, "logical_divide %s / %s = %s wrong at %lld", ta, tb, fr, (long long)i);
              break;
            }
        }
      }
    }
    /* crd2idx fast path agrees with cute_op crd2idx for 1-D coordinates */
    for (int64_t i = 0; i < na && i < 16; i++) {
      cute_value ca[2], o;
      cute_parse("0", &ca[0], &e);
      ca[0].node[0].a = i;
      ca[1] = A;
      if (!cute_op(CUTE_OP_CRD2IDX, ca, 2, &o, NULL, &e)) CHECK(o.node[0].a == ev(&A, i), "crd2idx %s", ta);
    }
  }
}

/* extreme headers and trees: node counts outside node[], spans and child
 * counts at the integer limits, the deepest nesting node[] can hold */
/* v alone in its own heap block (ASan redzones right after node[127]), then
 * v with a valid second argument */
static void run_alone(const cute_value *v, const cute_value *second) {
  cute_value *one = malloc(sizeof *one), *two = malloc(2 * sizeof *two);
  if (!one || !two) { free(one); free(two); return; }
  *one = *v;
  run_all(one, 1);
  two[0] = *v;
  two[1] = *second;
  run_all(two, 2);
  free(one);
  free(two);
}

static void extremes(void) {
  static const int32_t counts[] = {INT32_MIN, -1, 0, 1, 4, 5, 6, 127, 128, 129, INT32_MAX};
  static const int32_t spans[] = {INT32_MIN, -1, 0, 1, 128, 129, INT32_MAX};
  static const int64_t childs[] = {INT64_MIN, -1, 0, 1, 127, 128, INT64_MAX};
  static cute_value a[2];
  cute_err e;
  cute_parse("((2,3),4):((1,2),6)", &a[1], &e);
  for (int t = -1; t <= 8; t++)
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
      cute_parse("((2,3),4):((1,2),6)", &a[0], &e);
      a[0].type = t;
      a[0].n = counts[c];
      int rc = cute_value_check(&a[0], "check", &e);
      if (counts[c] < 0 || counts[c] > 128)
        CHECK(rc == CUTE_E_ARG && strstr(e.msg, "check: malformed value"),
              "type %d, node count %d accepted (%s)", t, (int)counts[c], e.msg);
      run_alone(&a[0], &a[1]);
      int64_t sh[4], crd[2] = {1, 1}, r;
      CHECK(cute_layout_leaves(&a[0], sh, sh, -1) == -1, "leaves with a negative cap");
      int nl = cute_layout_leaves(&a[0], sh, sh, 4);
      CHECK(nl == ((t == CUTE_V_LAYOUT || t == CUTE_V_COMPOSED) && counts[c] == 5 ? 3 : -1),
            "leaves of type %d with node count %d: %d", t, (int)counts[c], nl);
      cute_layout_leaves(&a[0], NULL, NULL, 0);
      cute_layout_crd2idx(&a[0], crd, 0, &r, &e);
      cute_layout_crd2idx(&a[0], crd, -1, &r, &e);
      cute_layout_crd2idx(&a[0], crd, INT32_MAX, &r, &e);
    }
  for (int k = 0; k < 6; k++)
    for (size_t s = 0; s < sizeof spans / sizeof *spans; s++)
      for (size_t c = 0; c < sizeof childs / sizeof *childs; c++) {
        cute_parse("((2,3),4):((1,2),6)", &a[0], &e);
        cute_node *nd = &a[0].node[k % 5], orig = *nd;
        nd->span = spans[s];
        if (nd->kind == CUTE_N_TUPLE) nd->a = childs[c];
        if (k == 5) { a[0].n = 128; a[0].node[0].span = 128; }
        int same = k < 5 && nd->span == orig.span && nd->a == orig.a;
        CHECK((cute_value_check(&a[0], "check", &e) == 0) == same,
              "node %d span %d children %lld: check %s", k, (int)spans[s], (long long)childs[c],
              same ? "rejected a valid tree" : "accepted a broken tree");
        run_alone(&a[0], &a[1]);
      }
  /* 127 nested one-child tuples around a leaf: valid, and as deep as it gets */
  memset(&a[0], 0, sizeof a[0]);
  a[0].type = CUTE_V_LAYOUT;
  a[0].n = 128;
  for (int k = 0; k < 127; k++) {
    a[0].node[k].kind = CUTE_N_TUPLE;
    a[0].node[k].span = 128 - k;
    a[0].node[k].a = 1;
  }
  a[0].node[127].kind = CUTE_N_INT;
  a[0].node[127].span = 1;
  a[0].node[127].a = 3;
  a[0].node[127].b = 5;
  CHECK(cute_value_check(&a[0], "deep", &e) == 0, "deepest layout rejected: %s", e.msg);
  run_alone(&a[0], &a[1]);
  /* the same with N_LAYOUT tiler elements nested in each other (invalid) */
  a[0].type = CUTE_V_TILER;
  for (int k = 1; k < 127; k++) a[0].node[k].kind = CUTE_N_LAYOUT;
  CHECK(cute_value_check(&a[0], "tiler", &e) == CUTE_E_ARG, "nested layout elements accepted");
  run_alone(&a[0], &a[1]);
  CHECK(cute_value_check(NULL, NULL, &e) == CUTE_E_ARG, "NULL value accepted");
  CHECK(cute_value_check(&a[1], "ok", NULL) == 0, "valid value rejected");
}

/* the one error formatter (src/core.c), the op table's reflection, the version */
static void formatter_table_version(void) {
  cute_err e;
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = 0;
  CHECK(cute_err_setf(&e, CUTE_E_DOMAIN, "op: %s", big) == CUTE_E_DOMAIN, "setf returns the code");
  CHECK(e.code == CUTE_E_DOMAIN, "setf sets the code");
  CHECK(strlen(e.msg) == sizeof e.msg - 1, "a long message fills msg: %zu", strlen(e.msg));
  CHECK(strncmp(e.msg, "op: xxx", 7) == 0, "a long message keeps its start: %.20s", e.msg);
  CHECK(strcmp(e.msg + sizeof e.msg - 4, "...") == 0, "a cut message ends in ...");
  CHECK(cute_err_setf(NULL, CUTE_E_ARG, "%s", big) == CUTE_E_ARG, "NULL err: only the code");
  cute_err_setf(&e, CUTE_E_RANK, "inner %d", 7);
  cute_err_setf(&e, e.code, "outer: %s", e.msg); /* arguments inside e.msg */
  CHECK(strcmp(e.msg, "outer: inner 7") == 0 && e.code == CUTE_E_RANK, "prefixing: %s", e.msg);
  memset(e.msg, 'y', sizeof e.msg - 1);
  e.msg[sizeof e.msg - 1] = 0;
  cute_err_setf(&e, CUTE_E_ARG, "pre %s", e.msg);
  CHECK(strncmp(e.msg, "pre yyy", 7) == 0 && strlen(e.msg) == sizeof e.msg - 1 &&
            strcmp(e.msg + sizeof e.msg - 4, "...") == 0,
        "prefixing a full message: %.12s", e.msg);
  CHECK(cute_err_setf(&e, CUTE_E_ARG, "%s", "") == CUTE_E_ARG && e.msg[0] == 0, "empty message");

  for (int op = 0; op < CUTE_OP_COUNT_; op++) {
    int mn = -1, mx = -1;
    const char *name = cute_op_name(op);
    CHECK(name != NULL, "op %d has a name", op);
    CHECK(cute_op_arity(op, &mn, &mx) == 0 && mn >= 1 && mn <= mx && mx <= 4,
          "op %d arity %d..%d", op, mn, mx);
    CHECK(cute_op_arity(op, NULL, NULL) == 0, "op %d arity with NULL outputs", op);
    if (!name) continue;
    CHECK(cute_op_lookup(name) == op, "lookup %s", name);
    static cute_value a[5], out;
    for (int k = 0; k < 5; k++) cute_parse("(4,2):(1,4)", &a[k], &e);
    int too_many = mx + 1, too_few = mn - 1;
    CHECK(cute_op(op, a, too_many, &out, NULL, &e) == CUTE_E_ARG && strstr(e.msg, "takes") &&
              strncmp(e.msg, name, strlen(name)) == 0,
          "%s with %d arguments: %s", name, too_many, e.msg);
    if (too_few >= 0)
      CHECK(cute_op(op, a, too_few, &out, NULL, &e) == CUTE_E_ARG && strstr(e.msg, "takes"),
            "%s with %d arguments: %s", name, too_few, e.msg);
  }
  int bad[] = {-1, CUTE_OP_COUNT_, CUTE_OP_COUNT_ + 1, 1 << 30};
  for (int k = 0; k < 4; k++) {
    CHECK(cute_op_arity(bad[k], NULL, NULL) == CUTE_E_ARG, "arity of unknown op %d", bad[k]);
    CHECK(cute_op_name(bad[k]) == NULL, "name of unknown op %d", bad[k]);
  }
  CHECK(cute_op_lookup(NULL) == -1 && cute_op_lookup("nope") == -1, "lookup of unknown names");

  char v[64];
  snprintf(v, sizeof v, "cuteluajit %d.%d.%d", CUTE_VERSION_MAJOR, CUTE_VERSION_MINOR,
           CUTE_VERSION_PATCH);
  CHECK(strcmp(cute_version(), v) == 0, "version %s, want %s", cute_version(), v);
  CHECK(cute_abi_version() == CUTE_ABI, "ABI %d, want %d", cute_abi_version(), (int)CUTE_ABI);
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 3000;

  /* explicit error codes and messages */
  expect("composition", "(6,2):(1,7)", "2:8", CUTE_E_ADMISSIBLE, "(6,2):(1,7)");
  expect("composition", "(4,2):(3,1)", "3:2", CUTE_E_ADMISSIBLE, "inadmissible");
  expect("complement", "(4,2):(1,1)", NULL, CUTE_E_ADMISSIBLE, "not injective");
  expect("crd2idx", "(1,2,3)", "(4,2):(1,4)", CUTE_E_RANK, "rank 3");
  expect("size", "(4,0):(1,4)", NULL, CUTE_E_DOMAIN, "positive");
  expect("size", "(4,2))", NULL, CUTE_E_PARSE, "column 6");
  expect("size", "(4,2):(1,(2,3))", NULL, CUTE_E_RANK, "not congruent");
  expect("size", "(4294967296,4294967296):(1,1)", NULL, CUTE_E_OVERFLOW, "overflow");
  expect("size", "99999999999999999999", NULL, CUTE_E_OVERFLOW, "overflow");
  expect("ceil_div", "3", "0", CUTE_E_DOMAIN, "zero");
  expect("shape_div", "3", "0", CUTE_E_DOMAIN, NULL);
  expect("shape_div", "3", "2", CUTE_E_DOMAIN, "divide");
  expect("idx2crd", "5", "(2,3):(0,1)", CUTE_E_DOMAIN, NULL);
  expect("logical_divide", "(4,2):(1,4)", "(2,2,2)", CUTE_E_RANK, "rank");
  expect("get", "(4,2):(1,4)", "2", CUTE_E_RANK, "out of range");
  expect("composition", "8:1", "(4,2)", CUTE_E_RANK, "rank");
  expect("left_inverse", "(2,2):(1,1)", NULL, CUTE_OK, NULL);
  expect("logical_product", "(4611686018427387904,4):(2,1)", "4:1", CUTE_E_OVERFLOW, NULL);
  expect("stride", "Sw<3,3,3> o 0 o (8,8):(8,1)", NULL, CUTE_E_ARG, "composed layout");
  expect("logical_divide", "(8,8):(8,1)", "Sw<3,3,3> o 0 o (8,8):(8,1)", CUTE_E_ARG, "argument 2");
  expect("slice_and_offset", "(2,_)", "Sw<3,3,3> o 9223372036854775807 o (8,8):(8,1)", CUTE_E_OVERFLOW, NULL);

  /* very deep nesting and long inputs */
  {
    static char deep[20000];
    cute_value v;
    cute_err e;
    size_t n = 0;
    for (int k = 0; k < 5000; k++) deep[n++] = '(';
    deep[n++] = '1';
    for (int k = 0; k < 5000; k++) deep[n++] = ')';
    deep[n] = 0;
    CHECK(cute_parse(deep, &v, &e) == CUTE_E_CAPACITY, "deep nesting");
    n = 0;
    deep[n++] = '(';
    for (int k = 0; k < 200; k++) { deep[n++] = '1'; deep[n++] = ','; }
    deep[n++] = '1';
    deep[n++] = ')';
    deep[n] = 0;
    CHECK(cute_parse(deep, &v, &e) == CUTE_E_CAPACITY, "too many nodes");
  }

  /* random text */
  const char alpha[] = "()_:,-0123456789 Sw<>o9";
  for (long it = 0; it < iters * 10; it++) {
    char t[64];
    int len = (int)(rnd() % 40);
    for (int k = 0; k < len; k++) t[k] = alpha[rnd() % (sizeof alpha - 1)];
    t[len] = 0;
    cute_value v;
    cute_err e;
    if (cute_parse(t, &v, &e) == 0) {
      char b[512], b2[512];
      cute_format(&v, b, sizeof b);
      cute_value w;
      int rc = cute_parse(b, &w, &e);
      CHECK(rc == 0, "reparse of %s (from %s) failed: %s", b, t, e.msg);
      if (!rc) {
        cute_format(&w, b2, sizeof b2);
        CHECK(strcmp(b, b2) == 0, "round trip %s -> %s", b, b2);
      }
    }
  }

  /* garbage structs and mutated valid values through every op */
  static cute_value args[4];
  for (long it = 0; it < iters; it++) {
    for (int k = 0; k < 4; k++) {
      if (rnd() % 3 == 0) garbage(&args[k]);
      else sample(&args[k]);
    }
    run_all(args, 4);
  }
  properties(iters / 8 + 1);
  extremes();
  formatter_table_version();
  cute_err e;
  CHECK(cute_parse(NULL, &args[0], &e) == CUTE_E_ARG, "NULL text");
  CHECK(cute_parse("1", NULL, &e) == CUTE_E_ARG, "NULL out");
  CHECK(cute_op(CUTE_OP_SIZE, NULL, 1, &args[0], NULL, &e) == CUTE_E_ARG, "NULL args");
  CHECK(cute_format(NULL, NULL, 0) >= 1, "format NULL");
  printf("%d passed, %d failed\n", checks - failures, failures);
  return failures != 0;
}
