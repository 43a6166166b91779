/* ir_check_gpu.c -- per-op checks: special registers, barriers, fences, shuffles, votes,
 * atomics, printf/assert/trap and inline PTX.
 * One chk_* function per line of the table in ir_check.c (see ir_check.h). */
#include "ir_check.h"

#include <stdlib.h>
#include <string.h>

/* Does a value of type t fit the NVPTX inline-asm constraint letter k?
   (LLVM aborts on some mismatches, so they are verifier errors.) */
static int asm_fits(const cute_ir *ir, char k, int32_t t) {
  int size = ir_tsize(ir, t), ptr = is_kind(ir, t, CUTE_T_PTR);
  switch (k) {
  case 'h': return t == CUTE_T_I16 || t == CUTE_T_U16 || t == CUTE_T_F16 || t == CUTE_T_BF16;
  case 'r': return size == 4 && !ptr && t != CUTE_T_I1;
  case 'l': return t == CUTE_T_I64 || t == CUTE_T_U64 || ptr;
  case 'f': return t == CUTE_T_F32;
  case 'd': return t == CUTE_T_F64;
  case 'b': return t == CUTE_T_I1;
  case 'n': return is_scalar_num(t) && ir_scalar_class(t) != 3;
  default: return 0;
  }
}

/* asm: constraints "=r,=r,r,l,n,0,~{memory}" (outputs first, one letter each:
   h r l f d b n; an input may be a digit N: tied to output N, same register),
   outputs matching the result (one per element of a fragment or lane of a
   multi-output vector), inputs matching the operands (a fragment operand stands
   for one input per element), at most CUTE_ASM_MAX_OPERANDS in all, and
   $N / ${N} / ${N:mod} / $$ in the template referring to existing operands. */
int chk_asm(chk *c) {
  cute_ir *ir = c->ir;
  ir_inst *in = c->in;
  const char *tmpl = ir_strget(ir, (int32_t)in->imm), *cons = ir_strget(ir, (int32_t)in->imm2);
  int32_t t = in->type;
  if (!*tmpl) return bad(c, "empty PTX text");
  char letters[CUTE_ASM_MAX_OPERANDS];
  int16_t tie[CUTE_ASM_MAX_OPERANDS];
  int nout = 0, nin = 0, n = 0;
  const char *p = cons;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len >= 3 && p[0] == '~' && p[1] == '{' && p[len - 1] == '}') {
      /* clobber */
    } else {
      int out = len == 2 && p[0] == '=';
      int digits = len > 0 && len <= 3 && strspn(p, "0123456789") >= len;
      char k = out ? p[1] : p[0];
      if (!digits && ((len != 1 && !out) || !strchr("hrlfdbn", k) || (out && k == 'n')))
        return bad(c, "bad constraint '%.*s' in \"%.200s\" (use =h =r =l =f =d =b outputs, h r l f d b n or a tied output number inputs, ~{memory})",
                   (int)len, p, cons);
      if (out && nin) return bad(c, "outputs must come before inputs in \"%.200s\"", cons);
      if (n >= CUTE_ASM_MAX_OPERANDS) return bad(c, "too many operands: more than %d in \"%.80s...\"", CUTE_ASM_MAX_OPERANDS, cons);
      tie[n] = -1;
      if (digits) {
        int k2 = atoi(p);
        if (k2 >= nout) return bad(c, "tied input '%.*s' does not name an output (there are %d)", (int)len, p, nout);
        tie[n] = (int16_t)k2;
        k = 'T';
      }
      letters[n++] = k;
      if (out) nout++;
      else nin++;
    }
    if (!e) break;
    p = e + 1;
    if (!*p) return bad(c, "empty constraint in \"%.200s\"", cons);
  }
  int arr = is_kind(ir, t, CUTE_T_ARR), vec = is_kind(ir, t, CUTE_T_VEC) && nout > 1;
  int want = t == CUTE_T_VOID ? 0 : arr || vec ? ir->types[t].n : 1;
  int32_t ot = arr || vec ? ir->types[t].elem : t;
  if (nout != want) return bad(c, "\"%.200s\" has %d outputs for a %s result (%d)", cons, nout, TS(t), want);
  for (int i = 0; i < nout; i++)
    if (!asm_fits(ir, letters[i], ot)) return bad(c, "output %d: '%c' does not hold %s", i, letters[i], TS(ot));
  int j = nout;
  for (int i = 0; i < in->nargs; i++) {
    int32_t at = T(i);
    int w = is_kind(ir, at, CUTE_T_ARR) ? ir->types[at].n : 1;
    int32_t et = w > 1 || is_kind(ir, at, CUTE_T_ARR) ? ir->types[at].elem : at;
    if (j + w > n) return bad(c, "\"%.200s\" has %d inputs, too few for the operands", cons, nin);
    for (int e = 0; e < w; e++, j++) {
      if (letters[j] == 'T') {
        if (et != ot) return bad(c, "operand %d: %s is tied to output %d of type %s", i + 1, TS(et), tie[j], TS(ot));
      } else if (!asm_fits(ir, letters[j], et)) {
        return bad(c, "operand %d%s: '%c' does not hold %s", i + 1, w > 1 ? " (an element)" : "", letters[j], TS(et));
      }
      if (letters[j] == 'n' && c->a[i] >= 0) return bad(c, "operand %d: 'n' needs a constant", i + 1);
    }
  }
  if (j != n) return bad(c, "\"%.200s\" has %d inputs for %d operand values", cons, nin, j - nout);
  for (const char *q = tmpl; *q; q++) {
    if (*q != '$') continue;
    q++;
    if (*q == '$') continue;
    int braces = *q == '{';
    if (braces) q++;
    if (*q < '0' || *q > '9') return bad(c, "bad $ in the PTX text (write $$ for a literal $)");
    long k = 0;
    while (*q >= '0' && *q <= '9' && k < 100000) k = k * 10 + (*q++ - '0');
    if (braces) {
      if (*q == ':') { q++; while ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')) q++; }
      if (*q != '}') return bad(c, "bad ${...} in the PTX text");
    } else {
      q--;
    }
    if (k >= n) return bad(c, "$%ld in the PTX text, but there are %d operands", k, n);
  }
  return 0;
}

int chk_sreg(chk *c) {
  CHK_LOCALS;
  if (in->imm < 0 || in->imm >= CUTE_SREG_COUNT_) return bad(c, "bad special register %lld", (long long)in->imm);
  if (t != ((in->imm == CUTE_SREG_CLOCK64 || in->imm == CUTE_SREG_GLOBALTIMER) ? CUTE_T_U64 : CUTE_T_U32))
    return bad(c, "wrong result type %s", TS(t));
  return 0;
}

int chk_bar(chk *c) {
  CHK_LOCALS;
  if (in->imm < 0 || in->imm > 15) return bad(c, "barrier id %lld out of range 0..15", (long long)in->imm);
  if (in->imm2 < 0 || in->imm2 > 1024 || in->imm2 % 32) return bad(c, "thread count %lld must be a multiple of 32", (long long)in->imm2);
  return 0;
}

int chk_fence(chk *c) {
  CHK_LOCALS;
  if (in->imm < 0 || in->imm > 2) return bad(c, "bad scope %lld", (long long)in->imm);
  return 0;
}

int chk_shfl(chk *c) {
  CHK_LOCALS;
  int32_t v = T(0);
  int sz = ir_tsize(ir, v);
  if ((sz != 4 && sz != 8) || is_kind(ir, v, CUTE_T_PTR) || is_kind(ir, v, CUTE_T_ARR)) return bad(c, "value must be 32 or 64 bits");
  if (T(1) != CUTE_T_U32 && T(1) != CUTE_T_I32) return bad(c, "lane must be i32/u32");
  if (T(2) != CUTE_T_U32 && T(2) != CUTE_T_I32) return bad(c, "mask must be i32/u32");
  if (in->imm < 0 || in->imm > 3) return bad(c, "bad mode %lld", (long long)in->imm);
  if (in->imm2 < 1 || in->imm2 > 32 || (in->imm2 & (in->imm2 - 1))) return bad(c, "width %lld must be a power of two <= 32", (long long)in->imm2);
  return same_result(c);
}

int chk_vote(chk *c) {
  CHK_LOCALS;
  if (T(0) != CUTE_T_U32 && T(0) != CUTE_T_I32) return bad(c, "mask must be i32/u32");
  if (T(1) != CUTE_T_I1) return bad(c, "predicate must be i1");
  if (in->imm < 0 || in->imm > 3) return bad(c, "bad mode %lld", (long long)in->imm);
  if (t != (in->imm == CUTE_VOTE_BALLOT ? CUTE_T_U32 : CUTE_T_I1)) return bad(c, "wrong result type");
  return 0;
}

int chk_atom(chk *c) {
  CHK_LOCALS;
  int32_t e = ptr_elem(ir, T(0), &sp);
  if (!e) return bad(c, "first operand must be a pointer");
  if (sp != CUTE_AS_GLOBAL && sp != CUTE_AS_SHARED && sp != CUTE_AS_GENERIC)
    return bad(c, "wrong address space: atomics need a global, shared or generic pointer");
  for (int i = 1; i < n; i++)
    if (T(i) != e) return bad(c, "type mismatch: operand %d is %s, memory is %s", i + 1, TS(T(i)), TS(e));
  if (t != e) return bad(c, "result type must be %s", TS(e));
  int64_t scope = in->op == IR_ATOM ? in->imm2 : in->imm;
  if (scope < 0 || scope > 2) return bad(c, "bad scope %lld", (long long)scope);
  int isint = ir_is_int(ir, e) && !is_kind(ir, e, CUTE_T_VEC), bits = ir_tsize(ir, e) * 8;
  if (in->op == IR_CAS) {
    if (!isint || (bits != 32 && bits != 64)) return bad(c, "needs a 32- or 64-bit integer");
    return 0;
  }
  int ok = 0;
  switch (in->imm) {
  case CUTE_ATOM_ADD:
    ok = (isint && (bits == 32 || bits == 64)) || e == CUTE_T_F32 || e == CUTE_T_F64 ||
         (is_kind(ir, e, CUTE_T_VEC) && ir->types[e].n == 2 &&
          (ir->types[e].elem == CUTE_T_F16 || ir->types[e].elem == CUTE_T_BF16));
    break;
  case CUTE_ATOM_MIN: case CUTE_ATOM_MAX: case CUTE_ATOM_AND: case CUTE_ATOM_OR: case CUTE_ATOM_XOR:
    ok = isint && (bits == 32 || bits == 64);
    break;
  case CUTE_ATOM_EXCH: ok = (bits == 32 || bits == 64) && !is_kind(ir, e, CUTE_T_VEC); break;
  case CUTE_ATOM_INC: case CUTE_ATOM_DEC: ok = e == CUTE_T_U32; break;
  default: return bad(c, "bad atomic op %lld", (long long)in->imm);
  }
  if (!ok) return bad(c, "%s is not supported on %s", ir_immk[IK_ATOM].names[in->imm], TS(e));
  return 0;
}

int chk_printf(chk *c) {
  CHK_LOCALS;
  for (int i = 0; i < n; i++)
    if (!is_scalar_num(T(i)) && !is_kind(ir, T(i), CUTE_T_PTR) && T(i) != CUTE_T_I1)
      return bad(c, "argument %d must be a scalar or a pointer", i + 1);
  return 0;
}

int chk_assert(chk *c) {
  CHK_LOCALS;
  if (T(0) != CUTE_T_I1) return bad(c, "condition must be i1");
  return 0;
}

int chk_none(chk *c) {
  CHK_LOCALS;
  return 0;
}
