/* cache.c -- the on-disk cache of compiled kernels (docs/CACHE.md).
 *
 * An entry is one file <dir>/<64 hex of the key>.cute:
 *
 *   header   "CUTECACH", u32 format, u32 header size, key[32], u64 payload
 *            size, SHA-256 of the payload[32]
 *   payload  sections: u32 tag, u32 0, u64 size, bytes (META, PTX, CUBIN,
 *            PTXAS_LOG, INFO, one KERNEL per kernel)
 *
 * Reading checks every field (magic, format, key, sizes, checksum, sections);
 * any failure is a miss that the next store rewrites.  Writing goes to a
 * temp file in the same directory, fsync, rename: readers see the old entry
 * or the new one, never a part.  The directory is the user's own (0700) or
 * it is not used at all; entries are 0600 regular files opened without
 * following symlinks.  Least recently used entries (by mtime, refreshed on
 * every hit) are evicted when the total passes the cap; an entry another
 * process has open stays readable by it after the unlink. */
#include "cache.h"

#include "compile_opts.h"
#include "core.h"
#include "sha256.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <llvm/Config/llvm-config.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FORMAT = 1, HDR = 88 };
enum { T_META = 1, T_PTX = 2, T_CUBIN = 3, T_PTXAS_LOG = 4, T_INFO = 5, T_KERNEL = 6 };
static const char MAGIC[8] = {'C', 'U', 'T', 'E', 'C', 'A', 'C', 'H'};
#define TEMP_PREFIX ".tmp-"
#define STALE_TEMP_S 600 /* a temp file older than this is a crashed writer's */

/* ---- the directory ------------------------------------------------------------------------- */
/* mkdir -p, each new component 0700 */
static int mkdirs(const char *path) {
  char p[1024];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0700) && errno != EEXIST) return -1;
    *s = '/';
  }
  return mkdir(p, 0700) && errno != EEXIST ? -1 : 0;
}

static int resolve_dir(char *out, size_t cap, cute_err *err) {
  const char *d = getenv("CUTE_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (d && *d) snprintf(out, cap, "%s", d);
  else if (x && *x == '/') snprintf(out, cap, "%s/cuteluajit", x);
  else {
    if (!home || !*home) {
      struct passwd *pw = getpwuid(geteuid());
      home = pw ? pw->pw_dir : NULL;
    }
    if (!home || !*home)
      return cute_err_setf(err, CUTE_E_STATE, "disk cache: no directory (set CUTE_CACHE_DIR, XDG_CACHE_HOME or HOME)");
    snprintf(out, cap, "%s/.cache/cuteluajit", home);
  }
  if (strlen(out) > 900) return cute_err_setf(err, CUTE_E_STATE, "disk cache: directory path too long: %.200s...", out);
  return 0;
}

int cute_cache_dir(char *out, size_t cap, cute_err *err) {
  char dir[1024];
  int rc = resolve_dir(dir, sizeof dir, err);
  if (rc) return rc;
  if (mkdirs(dir))
    return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot create the directory %s: %s", dir, strerror(errno));
  struct stat st;
  if (stat(dir, &st)) return cute_err_setf(err, CUTE_E_STATE, "disk cache: %s: %s", dir, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return cute_err_setf(err, CUTE_E_STATE, "disk cache: %s is not a directory", dir);
  if (st.st_uid != geteuid())
    return cute_err_setf(err, CUTE_E_STATE,
                         "disk cache: %s is owned by uid %d, not by you (uid %d): not used, since whoever can write "
                         "it can put code into your kernels; set CUTE_CACHE_DIR to a directory of your own "
                         "(or CUTE_CACHE=0)", dir, (int)st.st_uid, (int)geteuid());
  if (st.st_mode & 022)
    return cute_err_setf(err, CUTE_E_STATE,
                         "disk cache: %s is writable by %s (mode %04o): not used, since whoever can write it can put "
                         "code into your kernels; chmod 700 it, or set CUTE_CACHE_DIR (or CUTE_CACHE=0)", dir,
                         (st.st_mode & 002) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
  if (strlen(dir) + 1 > cap) return cute_err_setf(err, CUTE_E_ARG, "disk cache: buffer too small for %s", dir);
  memcpy(out, dir, strlen(dir) + 1);
  return 0;
}

int cute_cache_max_bytes(int64_t *out, cute_err *err) {
  const char *s = getenv("CUTE_CACHE_MAX_BYTES");
  *out = (int64_t)1 << 30;
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  int64_t mul = 1;
  if (*end == 'K' || *end == 'k') mul = 1 << 10, end++;
  else if (*end == 'M' || *end == 'm') mul = 1 << 20, end++;
  else if (*end == 'G' || *end == 'g') mul = 1 << 30, end++;
  if (errno || end == s || *end || v < 0 || v > INT64_MAX / mul)
    return cute_err_setf(err, CUTE_E_ARG,
                         "disk cache: CUTE_CACHE_MAX_BYTES: expected a size in bytes (optionally with K, M or G), "
                         "got '%.100s'", s);
  *out = v * mul;
  return 0;
}

/* ---- the key ------------------------------------------------------------------------------- */
static void put_file_id(sha256_ctx *h, const char *label, const char *path) {
  struct stat st;
  char b[1400];
  if (path && *path && !stat(path, &st))
    snprintf(b, sizeof b, "%s %.1000s dev %llu ino %llu size %lld mtime %lld.%09ld\n", label, path,
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  else
    snprintf(b, sizeof b, "%s %.1000s absent\n", label, path ? path : "");
  sha256_update(h, b, strlen(b));
}

/* the library's build: the GNU build ID of the object that holds this code
   (libcute.so, or the executable it is linked into; a hash of its bytes that
   the linker writes), else that file's path, size and mtime: a rebuild changes
   the key even when the version number does not */
static char lib_id[1400];
static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static int build_id_of(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  uintptr_t addr = (uintptr_t)(void *)cache_key;
  int mine = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + p->p_vaddr;
    if (p->p_type == PT_LOAD && addr >= lo && addr < lo + p->p_memsz) mine = 1;
  }
  if (!mine) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_NOTE) continue;
    const unsigned char *n = (const unsigned char *)(info->dlpi_addr + p->p_vaddr), *end = n + p->p_memsz;
    while (n + sizeof(ElfW(Nhdr)) <= end) {
      const ElfW(Nhdr) *h = (const void *)n;
      const unsigned char *name = n + sizeof *h, *desc = name + ((h->n_namesz + 3) & ~3u);
      if (desc + h->n_descsz > end) break;
      if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 && !memcmp(name, "GNU", 4) && h->n_descsz <= 64) {
        char *o = (char *)data + sprintf(data, "library build-id ");
        for (unsigned j = 0; j < h->n_descsz; j++) o += sprintf(o, "%02x", desc[j]);
        strcpy(o, "\n");
        return 1;
      }
      n = desc + ((h->n_descsz + 3) & ~3u);
    }
  }
  return 1;
}

static void lib_id_init(void) {
  lib_id[0] = 0;
  dl_iterate_phdr(build_id_of, lib_id);
  if (lib_id[0]) return;
  Dl_info info;
  struct stat st;
  char path[PATH_MAX];
  const char *f = dladdr((void *)cache_key, &info) ? info.dli_fname : NULL;
  if (!f || !realpath(f, path)) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = 0;
  }
  if (path[0] && !stat(path, &st))
    snprintf(lib_id, sizeof lib_id, "library %.1000s size %lld mtime %lld.%09ld\n", path, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  else
    snprintf(lib_id, sizeof lib_id, "library unknown\n");
}

/* the content of a linked file (absent: its name) */
static void put_file_content(sha256_ctx *h, const char *path) {
  char b[1100];
  snprintf(b, sizeof b, "link %.1000s\n", path);
  sha256_update(h, b, strlen(b));
  FILE *f = fopen(path, "rbe");
  if (!f) { sha256_update(h, "absent\n", 7); return; }
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sha256_update(h, buf, n);
  fclose(f);
  sha256_update(h, "\n", 1);
}

void cache_key(const char *ir_text, cute_compile_opts *o, unsigned char key[32]) {
  pthread_once(&lib_once, lib_id_init);
  sha256_ctx h;
  sha256_init(&h);
  char b[600];
  snprintf(b, sizeof b, "cuteluajit disk cache %d\n%s abi %d\nllvm %s\n", FORMAT, cute_version(), CUTE_ABI,
           LLVM_VERSION_STRING);
  sha256_update(&h, b, strlen(b));
  sha256_update(&h, lib_id, strlen(lib_id));
  const char *ok = cute_compile_opts_key(o);
  sha256_update(&h, "options ", 8);
  sha256_update(&h, ok, strlen(ok));
  sha256_update(&h, "\n", 1);
  if (o->use_ptxas) put_file_id(&h, "ptxas", cute_ptxas_path());
  /* lineinfo: relative Lua file names become absolute in the PTX's .file (codegen_body.c) */
  char cwd[4096];
  if (o->lineinfo && getcwd(cwd, sizeof cwd)) {
    sha256_update(&h, "cwd ", 4);
    sha256_update(&h, cwd, strlen(cwd));
    sha256_update(&h, "\n", 1);
  }
  /* libdevice: the given path, else each place the code generator looks */
  if (o->libdevice && *o->libdevice) put_file_id(&h, "libdevice", o->libdevice);
  else {
    char p[1100];
    const char *envs[2] = {"CUDA_HOME", "CUDA_PATH"};
    for (int i = 0; i < 2; i++) {
      const char *e = getenv(envs[i]);
      snprintf(p, sizeof p, "%.1000s/nvvm/libdevice/libdevice.10.bc", e ? e : "");
      put_file_id(&h, envs[i], e && *e ? p : NULL);
    }
    put_file_id(&h, "libdevice", "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc");
  }
  if (o->link && *o->link) {
    char *list = strdup(o->link), *save = NULL;
    for (char *t = list ? strtok_r(list, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) put_file_content(&h, t);
    free(list);
  }
  sha256_update(&h, "ir\n", 3);
  sha256_update(&h, ir_text, strlen(ir_text));
  sha256_final(&h, key);
}

/* ---- entries: bytes ------------------------------------------------------------------------ */
typedef struct { unsigned char *p; size_t n, cap; int oom; } buf;
static void put(buf *b, const void *d, size_t n) {
  if (b->oom) return;
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 4096;
    while (c < b->n + n) c *= 2;
    unsigned char *q = realloc(b->p, c);
    if (!q) { b->oom = 1; return; }
    b->p = q, b->cap = c;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void put_u32(buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(buf *b, uint64_t v) { put(b, &v, 8); }
static void section(buf *b, uint32_t tag, const void *d, size_t n) {
  put_u32(b, tag);
  put_u32(b, 0);
  put_u64(b, n);
  put(b, d, n);
}

static void entry_path(char *out, size_t cap, const char *dir, const unsigned char key[32]) {
  char hex[65];
  sha256_hex(key, hex);
  snprintf(out, cap, "%s/%s.cute", dir, hex);
}

void cache_entry_clear(cache_entry *e) {
  free(e->ptx);
  free(e->cubin);
  free(e->ptxas_log);
  free(e->info_text);
  for (int i = 0; i < e->nk; i++) free(e->k[i].name);
  free(e->k);
  memset(e, 0, sizeof *e);
}

static char *strndup_or_null(const unsigned char *p, size_t n) {
  char *s = malloc(n + 1);
  if (s) memcpy(s, p, n), s[n] = 0;
  return s;
}

/* parse a payload (its checksum already verified); 0 or 1 with why */
static int parse_payload(const unsigned char *p, size_t n, cache_entry *e, char *why, size_t cap) {
  size_t at = 0;
  int nk = 0;
  /* count kernels first */
  while (at + 16 <= n) {
    uint32_t tag;
    uint64_t len;
    memcpy(&tag, p + at, 4);
    memcpy(&len, p + at + 8, 8);
    if (len > n - at - 16) { snprintf(why, cap, "section past the end"); return 1; }
    if (tag == T_KERNEL) nk++;
    at += 16 + len;
  }
  if (at != n) { snprintf(why, cap, "truncated section"); return 1; }
  e->k = calloc((size_t)nk + 1, sizeof *e->k);
  if (!e->k) { snprintf(why, cap, "out of memory"); return 1; }
  for (at = 0; at < n;) {
    uint32_t tag;
    uint64_t len;
    memcpy(&tag, p + at, 4);
    memcpy(&len, p + at + 8, 8);
    const unsigned char *d = p + at + 16;
    at += 16 + len;
    char **text = tag == T_PTX ? &e->ptx : tag == T_PTXAS_LOG ? &e->ptxas_log : tag == T_INFO ? &e->info_text : NULL;
    if (text) {
      if (*text || !(*text = strndup_or_null(d, len))) { snprintf(why, cap, "bad text section"); return 1; }
    } else if (tag == T_CUBIN) {
      if (e->cubin || !len || !(e->cubin = malloc(len))) { snprintf(why, cap, "bad cubin section"); return 1; }
      memcpy(e->cubin, d, len);
      e->cubin_size = len;
    } else if (tag == T_META) {
      size_t a = strnlen((const char *)d, len < sizeof e->arch ? len : sizeof e->arch);
      if (a == 0 || a >= sizeof e->arch) { snprintf(why, cap, "bad meta section"); return 1; }
      memcpy(e->arch, d, a);
      e->arch[a] = 0;
    } else if (tag == T_KERNEL) {
      uint32_t nl;
      if (len < 4 + sizeof(cute_kernel_info)) { snprintf(why, cap, "bad kernel section"); return 1; }
      memcpy(&nl, d, 4);
      if (nl == 0 || nl != len - 4 - sizeof(cute_kernel_info)) { snprintf(why, cap, "bad kernel section"); return 1; }
      cache_kernel *k = &e->k[e->nk++];
      if (!(k->name = strndup_or_null(d + 4, nl))) { snprintf(why, cap, "out of memory"); return 1; }
      memcpy(&k->info, d + 4 + nl, sizeof k->info);
    } else {
      snprintf(why, cap, "unknown section %u", (unsigned)tag);
      return 1;
    }
  }
  if (!e->ptx || !e->arch[0] || !e->nk) { snprintf(why, cap, "incomplete entry"); return 1; }
  return 0;
}

/* read and verify the file at fd (key: the expected key, NULL: any);
   0 or 1 with why */
static int read_fd(int fd, const unsigned char *key, cache_entry *e, unsigned char *key_out, char *why, size_t cap) {
  struct stat st;
  if (fstat(fd, &st)) { snprintf(why, cap, "stat: %s", strerror(errno)); return 1; }
  if (!S_ISREG(st.st_mode)) { snprintf(why, cap, "not a regular file"); return 1; }
  if (st.st_uid != geteuid() || (st.st_mode & 022)) { snprintf(why, cap, "unsafe entry (owner or mode)"); return 1; }
  if (st.st_size < HDR) { snprintf(why, cap, "truncated (%lld bytes)", (long long)st.st_size); return 1; }
  if (st.st_size > ((off_t)1 << 31)) { snprintf(why, cap, "too large"); return 1; }
  size_t n = (size_t)st.st_size;
  unsigned char *p = malloc(n);
  if (!p) { snprintf(why, cap, "out of memory"); return 1; }
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  int bad = 1;
  uint32_t fmt, hdr;
  uint64_t plen;
  unsigned char sum[32];
  memcpy(&fmt, p + 8, 4);
  memcpy(&hdr, p + 12, 4);
  memcpy(&plen, p + 48, 8);
  if (got != n) snprintf(why, cap, "short read");
  else if (memcmp(p, MAGIC, 8)) snprintf(why, cap, "not an entry (bad magic)");
  else if (fmt != FORMAT || hdr != HDR) snprintf(why, cap, "format version %u (this library writes %d)", (unsigned)fmt, FORMAT);
  else if (key && memcmp(p + 16, key, 32)) snprintf(why, cap, "key mismatch");
  else if (plen != n - HDR) snprintf(why, cap, "truncated (payload %llu of %llu bytes)", (unsigned long long)(n - HDR), (unsigned long long)plen);
  else if (sha256(p + HDR, n - HDR, sum), memcmp(sum, p + 56, 32)) snprintf(why, cap, "checksum mismatch");
  else bad = parse_payload(p + HDR, n - HDR, e, why, cap);
  if (!bad && key_out) memcpy(key_out, p + 16, 32);
  free(p);
  if (bad) cache_entry_clear(e);
  return bad;
}

int cache_read(const char *dir, const unsigned char key[32], cache_entry *e, char *why, size_t cap) {
  char path[1200];
  memset(e, 0, sizeof *e);
  entry_path(path, sizeof path, dir, key);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, cap, errno == ENOENT ? "absent" : errno == ELOOP ? "a symlink (not followed)" : "cannot open: %s",
             strerror(errno));
    return 1;
  }
  int bad = read_fd(fd, key, e, NULL, why, cap);
  if (!bad) futimens(fd, NULL); /* recently used: evicted last */
  close(fd);
  return bad;
}

/* ---- writing and eviction ------------------------------------------------------------------ */
static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int evict(const char *dir, int64_t cap, const char *keep_name, int64_t *removed);

int cache_write(const char *dir, const unsigned char key[32], const cache_entry *e, char *msg, size_t cap) {
  buf pl = {0};
  char meta[64];
  snprintf(meta, sizeof meta, "%s", e->arch);
  section(&pl, T_META, meta, strlen(meta) + 1);
  section(&pl, T_PTX, e->ptx, strlen(e->ptx));
  if (e->cubin) section(&pl, T_CUBIN, e->cubin, e->cubin_size);
  if (e->ptxas_log) section(&pl, T_PTXAS_LOG, e->ptxas_log, strlen(e->ptxas_log));
  if (e->info_text) section(&pl, T_INFO, e->info_text, strlen(e->info_text));
  for (int i = 0; i < e->nk; i++) {
    uint32_t nl = (uint32_t)strlen(e->k[i].name);
    put_u32(&pl, T_KERNEL);
    put_u32(&pl, 0);
    put_u64(&pl, 4 + nl + sizeof(cute_kernel_info));
    put_u32(&pl, nl);
    put(&pl, e->k[i].name, nl);
    put(&pl, &e->k[i].info, sizeof(cute_kernel_info));
  }
  buf all = {0};
  unsigned char sum[32];
  sha256(pl.p, pl.n, sum);
  put(&all, MAGIC, 8);
  put_u32(&all, FORMAT);
  put_u32(&all, HDR);
  put(&all, key, 32);
  put_u64(&all, pl.n);
  put(&all, sum, 32);
  put(&all, pl.p, pl.n);
  int oom = pl.oom || all.oom;
  free(pl.p);
  if (oom) { free(all.p); snprintf(msg, cap, "out of memory"); return 1; }
  char tmp[1200], path[1200];
  snprintf(tmp, sizeof tmp, "%s/" TEMP_PREFIX "XXXXXX", dir);
  int fd = mkostemp(tmp, O_CLOEXEC); /* 0600 */
  if (fd < 0) { free(all.p); snprintf(msg, cap, "cannot create a temp file in %s: %s", dir, strerror(errno)); return 1; }
  int bad = write_all(fd, all.p, all.n) || fsync(fd);
  int saved = errno;
  free(all.p);
  if (close(fd)) bad = 1, saved = errno;
  entry_path(path, sizeof path, dir, key);
  if (!bad && rename(tmp, path)) bad = 1, saved = errno;
  if (bad) {
    unlink(tmp);
    snprintf(msg, cap, "cannot write %s: %s", path, strerror(saved));
    return 1;
  }
  int64_t cap_bytes, removed;
  if (!cute_cache_max_bytes(&cap_bytes, NULL) && cap_bytes > 0)
    evict(dir, cap_bytes, strrchr(path, '/') + 1, &removed);
  return 0;
}

static int is_entry_name(const char *s) {
  if (strlen(s) != 69 || strcmp(s + 64, ".cute")) return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
  return 1;
}

typedef struct { char name[72]; int64_t size; struct timespec mtime; } dent;

static int by_mtime(const void *a, const void *b) {
  const dent *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* the entries of dir, least recently used first (*n of them; malloc'ed);
   temp files counted in *temps, stale ones removed */
static dent *scan(const char *dir, int *n, int64_t *temps) {
  *n = 0;
  if (temps) *temps = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  int cap = 64;
  dent *v = malloc(sizeof *v * (size_t)cap);
  struct dirent *de;
  time_t now = time(NULL);
  while (v && (de = readdir(d))) {
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW)) continue;
    if (!strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) && S_ISREG(st.st_mode)) {
      if (now - st.st_mtim.tv_sec > STALE_TEMP_S) unlinkat(dirfd(d), de->d_name, 0);
      else if (temps) (*temps)++;
      continue;
    }
    if (!is_entry_name(de->d_name)) continue;
    if (*n == cap) {
      dent *w = realloc(v, sizeof *v * (size_t)(cap *= 2));
      if (!w) { free(v); v = NULL; break; }
      v = w;
    }
    dent *x = &v[(*n)++];
    memcpy(x->name, de->d_name, 70); /* (is_entry_name: 69 characters) */
    x->size = st.st_size;
    x->mtime = st.st_mtim;
  }
  closedir(d);
  if (v) qsort(v, (size_t)*n, sizeof *v, by_mtime);
  return v;
}

static int evict(const char *dir, int64_t cap, const char *keep_name, int64_t *removed) {
  int n;
  *removed = 0;
  dent *v = scan(dir, &n, NULL);
  if (!v) return 1;
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += v[i].size;
  for (int i = 0; i < n && cap >= 0 && total > cap; i++) {
    if (keep_name && !strcmp(v[i].name, keep_name)) continue; /* the entry just written stays */
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
    if (!unlink(p) || errno == ENOENT) { total -= v[i].size; (*removed)++; }
  }
  free(v);
  return 0;
}

/* ---- inspecting ---------------------------------------------------------------------------- */
int cute_cache_evict(int64_t cap, int64_t *removed, cute_err *err) {
  char dir[1024];
  int64_t r = 0;
  int rc = cute_cache_dir(dir, sizeof dir, err);
  if (!rc && cap < 0) rc = cute_cache_max_bytes(&cap, err);
  if (!rc && cap > 0 && evict(dir, cap, NULL, &r)) rc = cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot read %s: %s", dir, strerror(errno));
  if (removed) *removed = r;
  return rc;
}

int cute_cache_stats_get(cute_cache_stats *out, cute_err *err) {
  memset(out, 0, sizeof *out);
  int rc = cute_cache_dir(out->dir, sizeof out->dir, err);
  if (!rc) rc = cute_cache_max_bytes(&out->cap, err);
  if (rc) return rc;
  int n;
  dent *v = scan(out->dir, &n, &out->temps);
  if (!v) return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot read %s: %s", out->dir, strerror(errno));
  out->entries = n;
  for (int i = 0; i < n; i++) out->bytes += v[i].size;
  free(v);
  return 0;
}

static void human(char *b, size_t cap, int64_t v) {
  if (v >= (1 << 20)) snprintf(b, cap, "%.1fM", v / 1048576.0);
  else if (v >= 1024) snprintf(b, cap, "%.1fK", v / 1024.0);
  else snprintf(b, cap, "%lldB", (long long)v);
}

int cute_cache_list(char **text, cute_err *err) {
  *text = NULL;
  char dir[1024];
  int rc = cute_cache_dir(dir, sizeof dir, err);
  if (rc) return rc;
  int n;
  dent *v = scan(dir, &n, NULL);
  if (!v) return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot read %s: %s", dir, strerror(errno));
  ir_buf b = {0};
  ir_buf_printf(&b, "%-12s %8s %8s %-7s %-5s %s\n", "key", "size", "age", "arch", "image", "kernels");
  time_t now = time(NULL);
  for (int i = 0; i < n; i++) {
    char p[1200], sz[32], age[32], why[160];
    snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
    human(sz, sizeof sz, v[i].size);
    long long a = (long long)(now - v[i].mtime.tv_sec);
    if (a < 120) snprintf(age, sizeof age, "%llds", a);
    else if (a < 7200) snprintf(age, sizeof age, "%lldm", a / 60);
    else if (a < 172800) snprintf(age, sizeof age, "%lldh", a / 3600);
    else snprintf(age, sizeof age, "%lldd", a / 86400);
    cache_entry e = {0};
    int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int bad = fd < 0 ? (snprintf(why, sizeof why, "cannot open"), 1) : read_fd(fd, NULL, &e, NULL, why, sizeof why);
    if (fd >= 0) close(fd);
    ir_buf_printf(&b, "%-12.12s %8s %8s ", v[i].name, sz, age);
    if (bad) ir_buf_printf(&b, "%-7s %-5s corrupt (%s)\n", "?", "?", why);
    else {
      ir_buf_printf(&b, "%-7s %-5s", e.arch, e.cubin ? "cubin" : "ptx");
      for (int k = 0; k < e.nk; k++) ir_buf_printf(&b, "%s%s", k ? "," : " ", e.k[k].name);
      ir_buf_puts(&b, "\n");
    }
    cache_entry_clear(&e);
  }
  free(v);
  if (!b.p) return cute_err_setf(err, CUTE_E_NOMEM, "out of memory");
  *text = b.p;
  return 0;
}

void cute_cache_text_free(char *text) { free(text); }

int cute_cache_clear(int64_t *removed, cute_err *err) {
  char dir[1024];
  *removed = 0;
  int rc = cute_cache_dir(dir, sizeof dir, err);
  if (rc) return rc;
  DIR *d = opendir(dir);
  if (!d) return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot read %s: %s", dir, strerror(errno));
  struct dirent *de;
  time_t now = time(NULL);
  while ((de = readdir(d))) {
    int entry = is_entry_name(de->d_name);
    struct stat st;
    if (!entry) {
      /* a temp file: only a crashed writer's (another process may be writing this one) */
      if (strncmp(de->d_name, TEMP_PREFIX, strlen(TEMP_PREFIX)) ||
          fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) || now - st.st_mtim.tv_sec <= STALE_TEMP_S)
        continue;
    }
    if (!unlinkat(dirfd(d), de->d_name, 0) && entry) (*removed)++;
  }
  closedir(d);
  return 0;
}

void cute_sha256_hex(const void *data, size_t n, char *out) {
  unsigned char d[32];
  sha256(data, n, d);
  sha256_hex(d, out);
}
