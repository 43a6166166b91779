/* cache_note.c -- small named records in the cache directory (docs/CACHE.md,
 * "Notes"): cute.autotune's best configuration per key (docs/AUTOTUNE.md).
 *
 * A note is <dir>/<name>.note, written as an entry is (a 0600 temp file in
 * the same directory, fsync, rename over the name: a reader sees the old note
 * or the new one) and read only from the user's own safe directory
 * (cute_cache_dir refuses any other), only when it is a regular file owned by
 * the user and not writable by group or others, never through a symlink.
 * Notes are not entries: --cache list, clear and eviction leave them alone
 * (cute.autotune.forget removes one; so does removing the directory). */
#include "cute_cache.h"
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOTE_MAX (16u << 20)

/* name: 1..100 of [A-Za-z0-9_.-], not starting with a dot */
static int check_name(const char *op, const char *name, cute_err *err) {
  size_t n = name ? strlen(name) : 0;
  int ok = n >= 1 && n <= 100 && name[0] != '.';
  for (size_t i = 0; ok && i < n; i++) {
    char c = name[i];
    ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  }
  if (!ok)
    return cute_err_setf(err, CUTE_E_ARG, "disk cache: %s: note name '%.120s': expected 1 to 100 of A-Z a-z 0-9 _ . - "
                                          "(not starting with '.')", op, name ? name : "(null)");
  return 0;
}

int cute_cache_note_write(const char *name, const char *data, size_t n, cute_err *err) {
  int rc = check_name("note_write", name, err);
  if (rc) return rc;
  if (!data && n) return cute_err_setf(err, CUTE_E_ARG, "disk cache: note_write %s: NULL data", name);
  if (n > NOTE_MAX) return cute_err_setf(err, CUTE_E_ARG, "disk cache: note_write %s: %zu bytes (at most %u)", name, n, NOTE_MAX);
  char dir[1024], tmp[1200], path[1200];
  if ((rc = cute_cache_dir(dir, sizeof dir, err))) return rc;
  snprintf(tmp, sizeof tmp, "%s/.tmp-XXXXXX", dir);
  snprintf(path, sizeof path, "%s/%s.note", dir, name);
  int fd = mkostemp(tmp, O_CLOEXEC); /* 0600 */
  if (fd < 0) return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot create a temp file in %s: %s", dir, strerror(errno));
  int bad = 0;
  for (const char *p = data; n && !bad;) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) bad = 1;
    else p += w, n -= (size_t)w;
  }
  bad = bad || fsync(fd);
  int saved = errno;
  if (close(fd) && !bad) bad = 1, saved = errno;
  if (!bad && rename(tmp, path)) bad = 1, saved = errno;
  if (bad) {
    unlink(tmp);
    return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot write %s: %s", path, strerror(saved));
  }
  return 0;
}

int cute_cache_note_read(const char *name, char *buf, size_t cap, size_t *len, int *found, cute_err *err) {
  if (len) *len = 0;
  if (found) *found = 0;
  int rc = check_name("note_read", name, err);
  if (rc) return rc;
  char dir[1024], path[1200];
  if ((rc = cute_cache_dir(dir, sizeof dir, err))) return rc;
  snprintf(path, sizeof path, "%s/%s.note", dir, name);
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return 0;
    return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot open %s: %s", path,
                         errno == ELOOP ? "a symlink (not followed)" : strerror(errno));
  }
  struct stat st;
  const char *why = NULL;
  if (fstat(fd, &st)) why = strerror(errno);
  else if (!S_ISREG(st.st_mode)) why = "not a regular file";
  else if (st.st_uid != geteuid()) why = "not owned by you";
  else if (st.st_mode & 022) why = "writable by group or others";
  else if ((uint64_t)st.st_size > NOTE_MAX) why = "too large";
  if (why) {
    close(fd);
    return cute_err_setf(err, CUTE_E_STATE, "disk cache: note %s: %s: not read", path, why);
  }
  size_t got = 0;
  while (got < cap) {
    ssize_t r = read(fd, buf + got, cap - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      close(fd);
      return cute_err_setf(err, CUTE_E_STATE, "disk cache: cannot read %s: %s", path, strerror(e));
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (len) *len = (size_t)st.st_size > got ? (size_t)st.st_size : got;
  if (found) *found = 1;
  return 0;
}
