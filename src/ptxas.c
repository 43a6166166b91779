/* ptxas.c -- NVIDIA's tools as subprocesses (posix_spawn, stdout+stderr
 * captured through a pipe, temp files in $TMPDIR): PTX -> cubin with ptxas
 * and parsing of its -v report (registers, shared memory, spills, stack);
 * cubin -> SASS with nvdisasm or cuobjdump. */
#include "ptxas.h"

#include <pthread.h>

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

/* A tool by name: $env (if set, only there), $CUDA_HOME/bin, PATH,
   /usr/local/cuda/bin.  found/searched: caller's buffers. */
static void tool_find(const char *tool, const char *env_name, char *found, size_t fcap, char *searched, size_t scap) {
  found[0] = 0;
  snprintf(searched, scap, "%s, $CUDA_HOME/bin, PATH, /usr/local/cuda/bin", env_name);
  const char *env = getenv(env_name);
  if (env && *env) {
    if (is_exec(env)) snprintf(found, fcap, "%s", env);
    snprintf(searched, scap, "%s=%.400s", env_name, env);
    return;
  }
  char tmp[1024];
  const char *ch = getenv("CUDA_HOME");
  if (ch && *ch) {
    snprintf(tmp, sizeof tmp, "%.900s/bin/%s", ch, tool);
    if (is_exec(tmp)) { snprintf(found, fcap, "%s", tmp); return; }
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    const char *e = strchr(path, ':');
    size_t n = e ? (size_t)(e - path) : strlen(path);
    if (n && n < 900) {
      snprintf(tmp, sizeof tmp, "%.*s/%s", (int)n, path, tool);
      if (is_exec(tmp)) { snprintf(found, fcap, "%s", tmp); return; }
    }
    path = e ? e + 1 : NULL;
  }
  snprintf(tmp, sizeof tmp, "/usr/local/cuda/bin/%s", tool);
  if (is_exec(tmp)) snprintf(found, fcap, "%s", tmp);
}

static pthread_once_t find_once = PTHREAD_ONCE_INIT;
static char ptxas_at[1024], dis_at[1024], dis_searched[1200];
static void find_all(void) {
  char s[600];
  tool_find("ptxas", "CUTE_PTXAS", ptxas_at, sizeof ptxas_at, s, sizeof s);
  tool_find("nvdisasm", "CUTE_NVDISASM", dis_at, sizeof dis_at, dis_searched, sizeof dis_searched);
  if (!dis_at[0]) {
    size_t n = strlen(dis_searched);
    snprintf(dis_searched + n, sizeof dis_searched - n, " for nvdisasm; ");
    n = strlen(dis_searched);
    tool_find("cuobjdump", "CUTE_CUOBJDUMP", dis_at, sizeof dis_at, dis_searched + n, sizeof dis_searched - n);
    n = strlen(dis_searched);
    snprintf(dis_searched + n, sizeof dis_searched - n, " for cuobjdump");
  }
}

/* CUTE_PTXAS, $CUDA_HOME/bin/ptxas, PATH, /usr/local/cuda/bin/ptxas; cached. */
const char *ptxas_find(void) {
  pthread_once(&find_once, find_all);
  return ptxas_at[0] ? ptxas_at : NULL;
}
const char *cute_ptxas_path(void) { return ptxas_find(); }
const char *cute_disassembler_path(void) {
  pthread_once(&find_once, find_all);
  return dis_at[0] ? dis_at : NULL;
}
const char *cute_disassembler_searched(void) {
  pthread_once(&find_once, find_all);
  return dis_searched;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) { if (errno == EINTR) continue; return -1; }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* a temp file "<TMPDIR>/cute-XXXXXX<ext>" holding data; 0 or nonzero with msg */
static int temp_write(const char *ext, const void *data, size_t n, char *path, size_t pcap, char *msg, size_t cap) {
  const char *td = getenv("TMPDIR");
  if (!td || !*td) td = "/tmp";
  snprintf(path, pcap, "%.500s/cute-XXXXXX%s", td, ext);
  int fd = mkostemps(path, (int)strlen(ext), O_CLOEXEC);
  if (fd < 0) { snprintf(msg, cap, "cannot create a temp file in %s: %s", td, strerror(errno)); return 1; }
  int wr = write_all(fd, data, n);
  close(fd);
  if (wr) { unlink(path); snprintf(msg, cap, "cannot write %s", path); return 1; }
  return 0;
}

/* Run argv[0] with stdout+stderr captured into *log (malloc'ed).  Returns the
   exit status (0 ok), or -1 with msg when it could not run. */
static int run_tool(char *const *argv, char **log, char *msg, size_t cap) {
  *log = NULL;
  int pfd[2];
  /* close-on-exec: a tool spawned by another thread at the same moment (the
     compile pool runs ptxas in several) must not inherit this pipe's write
     end, or this read would wait for that tool's exit too (the dup2 below
     gives the child its own fds 1 and 2 without the flag) */
  if (pipe2(pfd, O_CLOEXEC)) { snprintf(msg, cap, "%s: pipe: %s", argv[0], strerror(errno)); return -1; }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
  posix_spawn_file_actions_addclose(&fa, pfd[1]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int se = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (se) {
    close(pfd[0]);
    snprintf(msg, cap, "cannot run %s: %s", argv[0], strerror(se));
    return -1;
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
  *log = b.p ? b.p : calloc(1, 1);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int read_file(const char *path, void **data, size_t *size) {
  FILE *f = fopen(path, "rbe");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = sz > 0 ? malloc((size_t)sz) : NULL;
  int ok = p && fread(p, 1, (size_t)sz, f) == (size_t)sz;
  fclose(f);
  if (!ok) { free(p); return 1; }
  *data = p;
  *size = (size_t)sz;
  return 0;
}

int ptxas_run(const char *ptxas, const char *ptx, const char *arch, const char *extra, int lineinfo, void **cubin,
              size_t *cubin_size, char **log, char *msg, size_t cap) {
  *cubin = NULL;
  *cubin_size = 0;
  *log = NULL;
  char in[600], outp[600], m[300];
  if (temp_write(".ptx", ptx, strlen(ptx), in, sizeof in, m, sizeof m)) {
    snprintf(msg, cap, "ptxas: %s", m);
    return 1;
  }
  snprintf(outp, sizeof outp, "%.*s.cubin", (int)(strlen(in) - 4), in);
  char a_arch[48];
  snprintf(a_arch, sizeof a_arch, "-arch=%s", arch);
  /* argv: ptxas -arch -O3 -v [-lineinfo] extra... -o out in */
  char ebuf[1024];
  snprintf(ebuf, sizeof ebuf, "%s", extra ? extra : "");
  char *argv[72];
  int n = 0, has_o = 0;
  argv[n++] = (char *)ptxas;
  argv[n++] = a_arch;
  int o_at = n++;
  argv[n++] = "-v";
  if (lineinfo) argv[n++] = "-lineinfo";
  for (char *save = NULL, *t = strtok_r(ebuf, " \t", &save); t && n < 64; t = strtok_r(NULL, " \t", &save)) {
    if (!strncmp(t, "-O", 2) || !strncmp(t, "--opt-level", 11)) has_o = 1;
    argv[n++] = t;
  }
  argv[o_at] = has_o ? "-v" : "-O3";
  argv[n++] = "-o";
  argv[n++] = outp;
  argv[n++] = in;
  argv[n] = NULL;
  int st = run_tool(argv, log, m, sizeof m);
  unlink(in);
  if (st) {
    unlink(outp);
    if (st < 0) snprintf(msg, cap, "ptxas: %s", m);
    else snprintf(msg, cap, "ptxas (%s) failed: %s", arch, *log && **log ? *log : "(no output)");
    return 1;
  }
  int rc = read_file(outp, cubin, cubin_size);
  unlink(outp);
  if (rc) { snprintf(msg, cap, "ptxas: cannot read its output %s", outp); return 1; }
  return 0;
}

int sass_run(const void *cubin, size_t size, int lineinfo, char **out, char *msg, size_t cap) {
  *out = NULL;
  const char *tool = cute_disassembler_path();
  if (!tool) {
    snprintf(msg, cap, "sass: no disassembler found (searched %s)", cute_disassembler_searched());
    return CUTE_E_UNSUPPORTED;
  }
  char in[600], m[300];
  if (temp_write(".cubin", cubin, size, in, sizeof in, m, sizeof m)) {
    snprintf(msg, cap, "sass: %s", m);
    return CUTE_E_STATE;
  }
  const char *base = strrchr(tool, '/');
  base = base ? base + 1 : tool;
  int nvdisasm = !strstr(base, "cuobjdump");
  char *argv[4] = {(char *)tool, nvdisasm ? in : "-sass", NULL, NULL};
  if (!nvdisasm) argv[2] = in;
  else if (lineinfo) argv[1] = "--print-line-info", argv[2] = in;
  int st = run_tool(argv, out, m, sizeof m);
  unlink(in);
  if (st) {
    if (st < 0) snprintf(msg, cap, "sass: %s", m);
    else snprintf(msg, cap, "sass: %s failed: %.800s", tool, *out ? *out : "");
    free(*out);
    *out = NULL;
    return CUTE_E_STATE;
  }
  if (nvdisasm && lineinfo && *out) {
    char *with = sass_with_source(*out);
    if (with) { free(*out); *out = with; }
  }
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
