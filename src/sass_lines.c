/*
 * sass_lines.c -- SASS interleaved with the source lines it came from.  nvdisasm
 * --print-line-info marks each run of instructions with the line the cubin's line
 * table gives (compile option lineinfo: the Lua file and line of each traced op):
 *
 *         //## File "/home/me/k.lua", line 12 inlined at "/home/me/k.lua", line 30
 *
 * After each such marker this adds the text of that line, read from the file:
 *
 *         //## File "/home/me/k.lua", line 12 inlined at "/home/me/k.lua", line 30
 *         //   k.lua:12:     return x * scale
 *
 * Files that cannot be read, and lines past their end, get no text.  The
 * markers stay as nvdisasm wrote them, so tools that parse them still can.
 */
#include "ptxas.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILES 32

typedef struct {
  char *path;  /* as the marker names it */
  char *text;  /* the whole file (NULL: unreadable) */
  char **line; /* line[i]: start of line i+1 inside text, NUL-terminated */
  int n;
} src_file;

static void load(src_file *s) {
  FILE *f = fopen(s->path, "rb");
  if (!f) return;
  ir_buf b = {0};
  char chunk[8192];
  size_t k;
  while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n < (64u << 20)) ir_buf_put(&b, chunk, k);
  fclose(f);
  if (b.oom || !b.p) { free(b.p); return; }
  int lines = 1;
  for (size_t i = 0; i < b.n; i++) lines += b.p[i] == '\n';
  s->line = malloc(sizeof *s->line * (size_t)lines);
  if (!s->line) { free(b.p); return; }
  s->text = b.p;
  char *p = b.p, *end = b.p + b.n;
  while (p < end) {
    s->line[s->n++] = p;
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    *nl = 0;
    if (nl > p && nl[-1] == '\r') nl[-1] = 0;
    p = nl + 1;
  }
}

static src_file *file_of(src_file *fs, int *nfs, const char *path, size_t len) {
  for (int i = 0; i < *nfs; i++)
    if (strlen(fs[i].path) == len && !memcmp(fs[i].path, path, len)) return &fs[i];
  if (*nfs == MAX_FILES) return NULL;
  src_file *s = &fs[(*nfs)++];
  memset(s, 0, sizeof *s);
  s->path = strndup(path, len);
  if (!s->path) { (*nfs)--; return NULL; }
  load(s);
  return s;
}

/* the marker's file and line: 1 when `line` is one ("//## File "...", line N") */
static int marker(const char *line, const char **path, size_t *plen, int *num) {
  const char *p = line;
  while (*p == ' ' || *p == '\t') p++;
  if (strncmp(p, "//## File \"", 11)) return 0;
  p += 11;
  const char *q = strchr(p, '"');
  if (!q || strncmp(q, "\", line ", 8)) return 0;
  *path = p;
  *plen = (size_t)(q - p);
  *num = atoi(q + 8);
  return *num > 0;
}

char *sass_with_source(const char *sass) {
  src_file fs[MAX_FILES];
  int nfs = 0;
  ir_buf b = {0};
  const char *p = sass;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    ir_buf_put(&b, p, n);
    ir_buf_put(&b, "\n", 1);
    const char *path;
    size_t plen;
    int num;
    if (marker(p, &path, &plen, &num)) {
      src_file *s = file_of(fs, &nfs, path, plen);
      if (s && s->text && num <= s->n) {
        const char *src = s->line[num - 1];
        while (*src == ' ' || *src == '\t') src++;
        const char *base = strrchr(s->path, '/');
        base = base ? base + 1 : s->path;
        ir_buf_put(&b, p, (size_t)(strstr(p, "//##") - p)); /* the marker's indentation */
        ir_buf_printf(&b, "//   %s:%d:  %s\n", base, num, src);
      }
    }
    p = e ? e + 1 : p + n;
  }
  for (int i = 0; i < nfs; i++) {
    free(fs[i].path);
    free(fs[i].text);
    free(fs[i].line);
  }
  if (b.oom) { free(b.p); return NULL; }
  if (!b.p) return strdup("");
  return b.p;
}
