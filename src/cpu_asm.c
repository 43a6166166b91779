/* cpu_asm.c -- inline PTX on the CPU target (docs/CPU_TARGET.md, "Tensor
 * cores").  At preparation (cute_cpu_prog_new) each asm's text is parsed once:
 * its operands $N bound to the asm's results and arguments by the constraint
 * string, its opcode matched against a table of PTX instruction patterns, one
 * row per instruction family (its parser checks the modifiers and operand
 * groups and picks the runner).  Anything no row recognises is refused there,
 * naming the PTX instruction and the Lua line.  New families (wgmma, TMA,
 * mbarrier) are rows of `rows` below. */
#include "cpu_tc.h"
#include "cpu_sm90.h"
#include "core.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MAXTOK 16

/* ---- memory-ordering loads, stores and fences (cute.nvgpu_sys) --------------------------- */

/* Blocks run one after another on one host thread, so every scope's ordering
   holds: the ops are plain accesses (a flag another block of the same launch
   sets is never seen by a block that spins on it first: documented). */
static int run_ldst(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  int store = a->flags & CPU_F_STORE;
  const cpu_opnd *ad = cpu_asm_opnd(a, store ? 0 : 1, 0), *v = cpu_asm_opnd(a, store ? 1 : 0, 0);
  for (int t = 0; t < CPU_LANES; t++) {
    if (!(w->mask >> t & 1)) continue;
    int rc = cpu_tc_access(L, in, w, t, cpu_opnd_u64(w, ad, t), cpu_opnd_at(w, v, t), (size_t)a->n, store);
    if (rc) return rc;
  }
  return 0;
}

static int run_nop(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  (void)L; (void)in; (void)w; (void)a;
  return 0;
}

static int ptx_bytes(const char *ty) {
  static const char *const b32[] = { "b32", "u32", "s32", "f32" }, *const b64[] = { "b64", "u64", "s64", "f64" };
  for (int i = 0; i < 4; i++) {
    if (!strcmp(ty, b32[i])) return 4;
    if (!strcmp(ty, b64[i])) return 8;
  }
  return 0;
}

/* ld / st .{acquire,release,relaxed,volatile,weak}[.{cta,gpu,sys}][.global].type */
static int parse_ldst(cpu_asm_op *a, const char *const *tok, int ntok, int store) {
  int n = 0;
  for (int i = 1; i < ntok; i++) {
    static const char *const ok[] = { "acquire", "release", "relaxed", "volatile", "weak", "cta", "gpu", "sys", "global" };
    int known = 0;
    for (size_t j = 0; j < sizeof ok / sizeof *ok; j++) known |= !strcmp(tok[i], ok[j]);
    if (known) continue;
    if (i != ntok - 1 || !(n = ptx_bytes(tok[i]))) return 1;
  }
  int ga = store ? 0 : 1, gv = store ? 1 : 0;
  if (!n || a->ngroups != 2 || a->g[ga].kind != CPU_G_ADDR || a->g[gv].kind != CPU_G_REG) return 1;
  if (a->g[ga].count != 1 || a->g[gv].count != 1 || !cpu_asm_is(a, ga, 0, 0, 8) || !cpu_asm_is(a, gv, 0, !store, n)) return 1;
  a->n = n;
  a->flags = store ? CPU_F_STORE : 0;
  a->run = run_ldst;
  return 0;
}
static int parse_ld(cpu_asm_op *a, const char *const *tok, int ntok) { return parse_ldst(a, tok, ntok, 0); }
static int parse_st(cpu_asm_op *a, const char *const *tok, int ntok) { return parse_ldst(a, tok, ntok, 1); }

/* fence.{acq_rel,sc}.{cta,gpu,sys}, membar.{cta,gl,sys}: ordering holds already */
static int parse_fence(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok != 3 || a->ngroups) return 1;
  if (!strcmp(tok[0], "fence") && strcmp(tok[1], "acq_rel") && strcmp(tok[1], "sc")) return 1;
  if (strcmp(tok[ntok - 1], "cta") && strcmp(tok[ntok - 1], "gpu") && strcmp(tok[ntok - 1], "sys") &&
      strcmp(tok[ntok - 1], "gl"))
    return 1;
  a->run = run_nop;
  return 0;
}
static int parse_membar(cpu_asm_op *a, const char *const *tok, int ntok) {
  const char *t2[3] = { tok[0], "sc", ntok > 1 ? tok[1] : "" };
  return ntok == 2 ? parse_fence(a, t2, 3) : 1;
}

/* warp-level: bar.warp.sync (the lanes run in lock step: nothing to wait for) and
   elect.sync _|p, membermask (p true in the lowest active member lane) */
static int run_elect(cpu_launch *L, const cpu_ins *in, cpu_warp *w, const cpu_asm_op *a) {
  (void)L; (void)in;
  const cpu_item *mi = &a->it[a->g[1].first];
  uint32_t mm = mi->kind == CPU_IT_IMM ? (uint32_t)mi->v : (uint32_t)cpu_opnd_u64(w, &a->op[mi->v], __builtin_ctz(w->mask));
  uint32_t m = w->mask & mm;
  int leader = m ? __builtin_ctz(m) : -1;
  const cpu_opnd *p = cpu_asm_opnd(a, 0, 0);
  for (int t = 0; t < CPU_LANES; t++) *cpu_opnd_at(w, p, t) = t == leader;
  return 0;
}
static int parse_elect(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok != 2 || strcmp(tok[1], "sync") || a->ngroups != 2 || a->g[0].count != 1 || a->g[1].count != 1 ||
      !cpu_asm_is(a, 0, 0, 1, 1) || a->it[a->g[1].first].kind == CPU_IT_SINK)
    return 1;
  a->run = run_elect;
  return 0;
}
static int parse_bar(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok != 3 || strcmp(tok[1], "warp") || strcmp(tok[2], "sync") || a->ngroups != 1 || a->g[0].count != 1 ||
      a->it[a->g[0].first].kind == CPU_IT_SINK)
    return 1;
  a->run = run_nop;
  return 0;
}

static int parse_ldmatrix(cpu_asm_op *a, const char *const *tok, int ntok) { return cpu_tc_parse_matrix(a, tok, ntok, 0); }
static int parse_stmatrix(cpu_asm_op *a, const char *const *tok, int ntok) { return cpu_tc_parse_matrix(a, tok, ntok, 1); }
static int parse_cp(cpu_asm_op *a, const char *const *tok, int ntok) {
  if (ntok < 3 || strcmp(tok[1], "async")) return 1;
  if (!strcmp(tok[2], "commit_group") || !strcmp(tok[2], "wait_group") || !strcmp(tok[2], "wait_all"))
    return cpu_tc_parse_cpasync_group(a, tok, ntok);
  return cpu_tc_parse_cpasync(a, tok, ntok);
}

/* the table: the opcode's first dotted word(s) -> the family's parser */
static const struct { const char *head; int (*parse)(cpu_asm_op *, const char *const *, int); } rows[] = {
  { "mma", cpu_tc_parse_mma },
  { "ldmatrix", parse_ldmatrix },
  { "stmatrix", parse_stmatrix },
  { "movmatrix", cpu_tc_parse_movmatrix },
  { "cp.async", parse_cp },
  { "ld", parse_ld },
  { "st", parse_st },
  { "fence", parse_fence },
  { "membar", parse_membar },
  { "elect", parse_elect },
  { "bar", parse_bar },
  { "mbarrier", cpu_sm90_parse_mbarrier }, /* cpu_sm90.c: Hopper */
  { "wgmma", cpu_sm90_parse_wgmma },
  { "cp.async.bulk", cpu_sm90_parse_bulk },
  { "cp.reduce.async.bulk", cpu_sm90_parse_bulk },
  { "fence", cpu_sm90_parse_misc },
  { "elect", cpu_sm90_parse_misc },
  { "setmaxnreg", cpu_sm90_parse_misc },
  { "prefetch", cpu_sm90_parse_misc },
  { "mapa", cpu_sm90_parse_misc },
  { "mov", cpu_sm90_parse_misc },
  { "barrier", cpu_sm90_parse_misc },
  { "bar", cpu_sm90_parse_misc },
  { "cvt", cpu_sm90_parse_misc },
};

/* ---- parsing ----------------------------------------------------------------------------- */

static int push_item(cpu_asm_op *a, int kind, int64_t v, int *cap) {
  if (a->nit >= *cap) {
    int nc = *cap ? *cap * 2 : 16;
    cpu_item *q = realloc(a->it, sizeof *q * (size_t)nc);
    if (!q) return -1;
    a->it = q; *cap = nc;
  }
  a->it[a->nit].kind = kind; a->it[a->nit].v = v;
  a->nit++;
  return 0;
}

/* one item: $N, an integer, or _ ; 1 when it is anything else */
static int parse_item(cpu_asm_op *a, const char *s, size_t len, int *cap) {
  while (len && isspace((unsigned char)*s)) { s++; len--; }
  while (len && isspace((unsigned char)s[len - 1])) len--;
  char buf[64];
  if (!len || len >= sizeof buf) return 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  int sinkor = buf[0] == '_' && buf[1] == '|'; /* "_|$N" (elect.sync: the lane index dropped) */
  if ((buf[0] == '$' && isdigit((unsigned char)buf[1])) || (sinkor && buf[2] == '$' && isdigit((unsigned char)buf[3]))) {
    long k = strtol(buf + (sinkor ? 3 : 1), &end, 10);
    if (*end || k >= a->nop) return 1;
    return push_item(a, CPU_IT_OP, k, cap) ? -1 : 0;
  }
  if (!strcmp(buf, "_")) return push_item(a, CPU_IT_SINK, 0, cap) ? -1 : 0;
  if (isdigit((unsigned char)buf[0]) || buf[0] == '-') {
    long long v = strtoll(buf, &end, 0);
    if (*end) return 1;
    return push_item(a, CPU_IT_IMM, v, cap) ? -1 : 0;
  }
  return 1;
}

/* the operand groups after the opcode: x, {x, y}, [x] separated by commas */
static int parse_groups(cpu_asm_op *a, const char *s) {
  int cap = 0;
  for (;;) {
    while (isspace((unsigned char)*s)) s++;
    if (!*s) return 0;
    if (a->ngroups >= CPU_ASM_GROUPS) return 1;
    cpu_group *g = &a->g[a->ngroups++];
    g->first = a->nit;
    char open = *s, close = open == '{' ? '}' : open == '[' ? ']' : 0;
    g->kind = open == '{' ? CPU_G_VEC : open == '[' ? CPU_G_ADDR : CPU_G_REG;
    if (close) {
      const char *e = strchr(s + 1, close);
      if (!e || memchr(s + 1, '{', (size_t)(e - s - 1)) || memchr(s + 1, '[', (size_t)(e - s - 1))) return 1;
      const char *p = s + 1;
      while (p < e) {
        const char *c = memchr(p, ',', (size_t)(e - p));
        const char *q = c ? c : e;
        int rc = parse_item(a, p, (size_t)(q - p), &cap);
        if (rc) return rc;
        p = c ? c + 1 : e;
      }
      s = e + 1;
    } else {
      const char *c = strchr(s, ',');
      size_t len = c ? (size_t)(c - s) : strlen(s);
      int rc = parse_item(a, s, len, &cap);
      if (rc) return rc;
      s += len;
    }
    g->count = a->nit - g->first;
    while (isspace((unsigned char)*s)) s++;
    if (*s == ',') s++;
    else if (*s) return 1;
  }
}

/* the operands from the constraint string: outputs (the result's elements,
   or the whole result), then inputs (a fragment argument: one per element) */
static int bind_operands(cute_cpu_prog *p, const cpu_ins *in, cpu_asm_op *a) {
  const char *cons = ir_strget(p->ir, (int32_t)in->imm2);
  int nout = 0, n = 0;
  for (const char *c = cons; *c;) {
    const char *e = strchr(c, ',');
    size_t len = e ? (size_t)(e - c) : strlen(c);
    if (!(len >= 1 && c[0] == '~')) { n++; if (c[0] == '=') nout++; }
    if (!e) break;
    c = e + 1;
  }
  a->op = calloc((size_t)n + 1, sizeof *a->op);
  if (!a->op) return -1;
  a->nop = n;
  a->nout = nout;
  for (int i = 0; i < nout; i++) {
    cpu_opnd *o = &a->op[i];
    o->ref = in->ref; o->stride = in->size; o->size = in->size / nout; o->off = i * o->size;
  }
  const ir_inst *ii = &p->f->inst[in->ref];
  const int32_t *args = ir_args(p->f, ii);
  int j = nout;
  for (int i = 0; i < ii->nargs; i++) {
    int32_t at = ir_vtype(p->f, args[i]);
    const ir_type *ty = &p->ir->types[at];
    int cnt = ty->kind == CUTE_T_ARR ? ty->n : 1, es = ty->kind == CUTE_T_ARR ? ir_tsize(p->ir, ty->elem) : ir_tsize(p->ir, at);
    for (int e = 0; e < cnt && j < n; e++, j++) {
      cpu_opnd *o = &a->op[j];
      o->ref = args[i]; o->stride = ir_tsize(p->ir, at); o->size = es; o->off = e * es;
    }
  }
  return j == n ? 0 : 1;
}

/* the text with ${N}, ${N:mod} as $N and $$ as $, trimmed, one trailing ';' dropped */
static int normalise(const char *src, char *dst, size_t cap) {
  size_t k = 0;
  for (const char *q = src; *q; q++) {
    if (k + 2 >= cap) return 1;
    if (q[0] == '$' && q[1] == '$') { dst[k++] = '$'; q++; continue; }
    if (q[0] == '$' && q[1] == '{') {
      dst[k++] = '$';
      q += 2;
      while (isdigit((unsigned char)*q) && k + 2 < cap) dst[k++] = *q++;
      while (*q && *q != '}') q++;
      if (!*q) return 1;
      continue;
    }
    dst[k++] = *q;
  }
  while (k && (isspace((unsigned char)dst[k - 1]))) k--;
  if (k && dst[k - 1] == ';') k--;
  while (k && (isspace((unsigned char)dst[k - 1]))) k--;
  dst[k] = 0;
  return 0;
}

static int refuse(cute_cpu_prog *p, const cpu_ins *in, const char *opc, cute_err *err) {
  const ir_inst *ii = &p->f->inst[in->ref];
  const char *file = ii->file ? ir_strget(p->ir, ii->file) : "?";
  return cute_err_setf(err, CUTE_E_UNSUPPORTED,
                       "cute (cpu target): kernel %s: op asm at %s:%d is not supported on the CPU target yet "
                       "(PTX %.120s)", p->name, file, ii->line, opc);
}

static void op_free(cpu_asm_op *a) { free(a->it); free(a->op); free(a->lay); }

int cpu_asm_prepare(cute_cpu_prog *p, cpu_ins *in, cute_err *err) {
  char text[4096], opc[256], rw[4096];
  const char *tmpl = cpu_sm90_rewrite(ir_strget(p->ir, (int32_t)in->imm), rw, sizeof rw);
  size_t ol = 0;
  const char *s = tmpl;
  while (isspace((unsigned char)*s)) s++;
  while (s[ol] && !isspace((unsigned char)s[ol]) && s[ol] != ';' && ol + 1 < sizeof opc) { opc[ol] = s[ol]; ol++; }
  opc[ol] = 0;
  if (!ol) { opc[0] = '?'; opc[1] = 0; }
  if (normalise(s, text, sizeof text) || strchr(text, ';') || text[0] == '{' || text[0] == '@')
    return refuse(p, in, opc, err); /* several instructions, a scope, a predicate */
  cpu_asm_op a;
  memset(&a, 0, sizeof a);
  int rc = bind_operands(p, in, &a);
  if (rc < 0) { op_free(&a); return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory"); }
  if (!rc) rc = parse_groups(&a, text + ol);
  if (rc < 0) { op_free(&a); return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory"); }
  /* the opcode's dotted words */
  char words[256];
  memcpy(words, opc, ol + 1);
  const char *tok[MAXTOK];
  int ntok = 0;
  for (char *q = words; *q && ntok < MAXTOK;) {
    tok[ntok++] = q;
    char *d = strchr(q, '.');
    if (!d) break;
    *d = 0;
    q = d + 1;
  }
  int found = 0;
  for (size_t i = 0; !rc && !found && i < sizeof rows / sizeof *rows; i++) {
    const char *h = rows[i].head;
    size_t hl = strlen(h);
    if (strncmp(opc, h, hl) || (opc[hl] && opc[hl] != '.')) continue;
    found = rows[i].parse(&a, tok, ntok) == 0;
  }
  if (!found) { op_free(&a); return refuse(p, in, opc, err); }
  if (p->nasm >= p->capasm) {
    int nc = p->capasm ? p->capasm * 2 : 8;
    cpu_asm_op *q = realloc(p->asmv, sizeof *q * (size_t)nc);
    if (!q) { op_free(&a); return cute_err_setf(err, CUTE_E_NOMEM, "cute (cpu target): out of memory"); }
    p->asmv = q; p->capasm = nc;
  }
  p->asmv[p->nasm] = a;
  in->aux = p->nasm++;
  return 0;
}

void cpu_asm_free(cute_cpu_prog *p) {
  for (int i = 0; i < p->nasm; i++) op_free(&p->asmv[i]);
  free(p->asmv);
  p->asmv = NULL; p->nasm = p->capasm = 0;
}

int cpu_asm_exec(cpu_launch *L, const cpu_ins *in, cpu_warp *w) {
  if (in->op == IR_PARAMADDR) { /* the parameter's slot holds the address of its bytes */
    memcpy(w->vp[in->ref], w->vp[in->a[0]], 8 * CPU_LANES);
    return 0;
  }
  const cpu_asm_op *a = &L->p->asmv[in->aux];
  return a->run(L, in, w, a);
}

uint64_t cpu_opnd_u64(const cpu_warp *w, const cpu_opnd *o, int t) {
  uint64_t v = 0;
  memcpy(&v, cpu_opnd_at(w, o, t), (size_t)(o->size < 8 ? o->size : 8));
  return v;
}
