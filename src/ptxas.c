/* ptxas.c -- PTX -> cubin with NVIDIA's ptxas as a subprocess (posix_spawn,
 * stdout+stderr captured through a pipe, temp files in $TMPDIR), and parsing
 * of its -v report (registers, shared memory, spills, stack). */
#include "ir.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int is_exec(const char *p) {
  struct stat st;
  return p && *p && stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

/* CUTE_PTXAS, $CUDA_HOME/bin/ptxas, PATH, /usr/local/cuda/bin/ptxas; cached. */
const char *ptxas_find(void) {
  static char found[1024];
  static int done;
  if (done) return found[0] ? found : NULL;
  const char *env = getenv("CUTE_PTXAS");
  if (env && *env) {
    if (is_exec(env)) snprintf(found, sizeof found, "%s", env);
    done = 1;
    return found[0] ? found : NULL;
  }
  char tmp[1024];
  const char *ch = getenv("CUDA_HOME");
  if (ch && *ch) {
    snprintf(tmp, sizeof tmp, "%s/bin/ptxas", ch);
    if (is_exec(tmp)) { snprintf(found, sizeof found, "%s", tmp); done = 1; return found; }
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *e = strchr(path, ':');
    size_t n = e ? (size_t)(e - path) : strlen(path);
    if (n && n < 900) {
      snprintf(tmp, sizeof tmp, "%.*s/ptxas", (int)n, path);
      if (is_exec(tmp)) { snprintf(found, sizeof found, "%s", tmp); done = 1; return found; }
    }
    path = e ? e + 1 : NULL;
  }
  if (is_exec("/usr/local/cuda/bin/ptxas")) snprintf(found, sizeof found, "/usr/local/cuda/bin/ptxas");
  done = 1;
  return found[0] ? found : NULL;
}

const char *cute_ptxas_path(void) { return ptxas_find(); }

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int ptxas_run(const char *ptxas, const char *ptx, const char *arch, int opt, int lineinfo, void **cubin,
              size_t *cubin_size, char **log, char *msg, size_t cap) {
  *cubin = NULL;
  *cubin_size = 0;
  *log = NULL;
  const char *td = getenv("TMPDIR");
  if (!td || !*td) td = "/tmp";
  char in[600], outp[600];
  snprintf(in, sizeof in, "%s/cute-XXXXXX.ptx", td);
  int fd = mkstemps(in, 4);
  if (fd < 0) { snprintf(msg, cap, "ptxas: cannot create a temp file in %s: %s", td, strerror(errno)); return 1; }
  int wr = write_all(fd, ptx, strlen(ptx));
  close(fd);
  if (wr) { unlink(in); snprintf(msg, cap, "ptxas: cannot write %s", in); return 1; }
  snprintf(outp, sizeof outp, "%.*s.cubin", (int)(strlen(in) - 4), in);
  char a_arch[48], a_opt[8];
  snprintf(a_arch, sizeof a_arch, "-arch=%s", arch);
  snprintf(a_opt, sizeof a_opt, "-O%d", opt < 0 ? 3 : opt > 3 ? 3 : opt);
  char *argv[] = {(char *)ptxas, a_arch, a_opt, "-v", "-o", outp, in, NULL, NULL};
  if (lineinfo) { argv[7] = in; argv[6] = "-lineinfo"; }
  int pfd[2];
  if (pipe(pfd)) { unlink(in); snprintf(msg, cap, "ptxas: pipe: %s", strerror(errno)); return 1; }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pfd[1]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int se = posix_spawn(&pid, ptxas, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (se) {
    close(pfd[0]);
    unlink(in);
    snprintf(msg, cap, "ptxas: cannot run %s: %s", ptxas, strerror(se));
    return 1;
  }
  ir_buf b = {0};
  char tmp[4096];
  for (;;) {
    ssize_t n = read(pfd[0], tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    ir_buf_put(&b, tmp, (size_t)n);
  }
  close(pfd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  unlink(in);
  *log = b.p ? b.p : calloc(1, 1);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    unlink(outp);
    snprintf(msg, cap, "ptxas (%s) failed: %s", arch, b.p ? b.p : "(no output)");
    return 1;
  }
  FILE *f = fopen(outp, "rb");
  if (!f) { snprintf(msg, cap, "ptxas: no output file %s", outp); return 1; }
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *data = sz > 0 ? malloc((size_t)sz) : NULL;
  if (!data || fread(data, 1, (size_t)sz, f) != (size_t)sz) {
    fclose(f);
    free(data);
    unlink(outp);
    snprintf(msg, cap, "ptxas: cannot read %s", outp);
    return 1;
  }
  fclose(f);
  unlink(outp);
  *cubin = data;
  *cubin_size = (size_t)sz;
  return 0;
}

static int num_before(const char *line, const char *what) {
  const char *p = strstr(line, what);
  if (!p) return -1;
  const char *q = p;
  while (q > line && q[-1] == ' ') q--;
  const char *s = q;
  while (s > line && s[-1] >= '0' && s[-1] <= '9') s--;
  if (s == q) return -1;
  return atoi(s);
}

/* Parse "ptxas info : Compiling entry function 'k'", "Function properties for k",
   "N bytes stack frame, N bytes spill stores, N bytes spill loads",
   "Used N registers, ..., N bytes smem, N bytes cmem[0]". */
int ptxas_parse(const char *log, ptxas_kinfo *k, int cap) {
  int n = 0, cur = -1;
  if (!log) return 0;
  const char *p = log;
  while (*p) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(len < sizeof line ? len : sizeof line - 1), p);
    const char *q;
    char name[128] = "";
    if ((q = strstr(line, "Compiling entry function '")) || (q = strstr(line, "Function properties for "))) {
      if (q[0] == 'C') {
        q += strlen("Compiling entry function '");
        size_t l = strcspn(q, "'");
        snprintf(name, sizeof name, "%.*s", (int)(l < 127 ? l : 127), q);
      } else {
        q += strlen("Function properties for ");
        size_t l = strcspn(q, " \r");
        snprintf(name, sizeof name, "%.*s", (int)(l < 127 ? l : 127), q);
      }
      cur = -1;
      for (int i = 0; i < n; i++)
        if (!strcmp(k[i].name, name)) cur = i;
      if (cur < 0 && n < cap) {
        cur = n++;
        memset(&k[cur], 0, sizeof k[cur]);
        snprintf(k[cur].name, sizeof k[cur].name, "%s", name);
        k[cur].regs = k[cur].smem = k[cur].spill_st = k[cur].spill_ld = k[cur].stack = k[cur].cmem = -1;
      }
    } else if (cur >= 0) {
      int v;
      if ((v = num_before(line, "bytes stack frame")) >= 0) k[cur].stack = v;
      if ((v = num_before(line, "bytes spill stores")) >= 0) k[cur].spill_st = v;
      if ((v = num_before(line, "bytes spill loads")) >= 0) k[cur].spill_ld = v;
      if ((v = num_before(line, "registers")) >= 0 && strstr(line, "Used ")) {
        k[cur].regs = v;
        int s = num_before(line, "bytes smem");
        k[cur].smem = s >= 0 ? s : 0;
        if ((v = num_before(line, "bytes cmem[0]")) >= 0) k[cur].cmem = v;
      }
    }
    p = e ? e + 1 : p + len;
  }
  return n;
}
