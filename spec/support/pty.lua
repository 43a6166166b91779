-- A program on a pseudo-terminal, for specs that type at the REPL
-- (spec/repl_spec.lua).  LuaJIT FFI only: posix_openpt for the terminal and
-- posix_spawn (new session, the terminal as stdin/stdout/stderr and as the
-- controlling terminal, so that a typed Ctrl-C is a SIGINT); no fork in Lua.
--   local p = pty.spawn({ exe, "-i" }, { "CUTE_HISTORY=/tmp/h" })
--   p:send("1+1\r"); assert(p:expect("2", 10)); p:close()
local ffi = require("ffi")

pcall(ffi.cdef, [[
int posix_openpt(int flags);
int grantpt(int fd);
int unlockpt(int fd);
char *ptsname(int fd);
int ioctl(int fd, unsigned long req, ...);
typedef union { double align; char b[1024]; } cute_spec_spawn_buf;
int posix_spawn_file_actions_init(cute_spec_spawn_buf *fa);
int posix_spawn_file_actions_destroy(cute_spec_spawn_buf *fa);
int posix_spawn_file_actions_addopen(cute_spec_spawn_buf *fa, int fd, const char *path, int oflag, unsigned mode);
int posix_spawn_file_actions_adddup2(cute_spec_spawn_buf *fa, int fd, int newfd);
int posix_spawnattr_init(cute_spec_spawn_buf *a);
int posix_spawnattr_destroy(cute_spec_spawn_buf *a);
int posix_spawnattr_setflags(cute_spec_spawn_buf *a, short flags);
int posix_spawn(int *pid, const char *path, const cute_spec_spawn_buf *fa, const cute_spec_spawn_buf *a,
                char *const argv[], char *const envp[]);
extern char **environ;
struct cute_spec_pollfd { int fd; short events; short revents; };
int poll(struct cute_spec_pollfd *fds, unsigned long n, int timeout);
long read(int fd, void *buf, unsigned long n);
long write(int fd, const void *buf, unsigned long n);
int close(int fd);
int kill(int pid, int sig);
int waitpid(int pid, int *status, int options);
struct cute_spec_winsize { unsigned short row, col, xpixel, ypixel; };
]])
local C = ffi.C

local O_RDWR, O_NOCTTY, O_CLOEXEC = 2, 256, 524288
local POSIX_SPAWN_SETSID = 128
local TIOCSWINSZ = 0x5414
local POLLIN = 1
local WNOHANG = 1

local M = {}
local P = {}
P.__index = P

-- argv[1] is the program (a path); env: extra "NAME=value" strings
function M.spawn(argv, env)
  local master = C.posix_openpt(O_RDWR + O_NOCTTY + O_CLOEXEC)
  assert(master >= 0, "posix_openpt failed")
  assert(C.grantpt(master) == 0 and C.unlockpt(master) == 0, "grantpt/unlockpt failed")
  local slave = ffi.string(C.ptsname(master))
  local ws = ffi.new("struct cute_spec_winsize", { 40, 120, 0, 0 })
  C.ioctl(master, TIOCSWINSZ, ws)
  -- through env(1): the extra variables, then the program
  local full = { "/usr/bin/env" }
  for _, e in ipairs(env or {}) do full[#full + 1] = e end
  for _, a in ipairs(argv) do full[#full + 1] = a end
  local cargv = ffi.new("char *[?]", #full + 1)
  local keep = {}
  for i, a in ipairs(full) do
    keep[i] = ffi.new("char[?]", #a + 1, a)
    cargv[i - 1] = keep[i]
  end
  local fa, at = ffi.new("cute_spec_spawn_buf"), ffi.new("cute_spec_spawn_buf")
  assert(C.posix_spawn_file_actions_init(fa) == 0)
  assert(C.posix_spawnattr_init(at) == 0)
  assert(C.posix_spawnattr_setflags(at, POSIX_SPAWN_SETSID) == 0)
  -- opened by a session leader: the terminal becomes the controlling one
  assert(C.posix_spawn_file_actions_addopen(fa, 0, slave, O_RDWR, 0) == 0)
  assert(C.posix_spawn_file_actions_adddup2(fa, 0, 1) == 0)
  assert(C.posix_spawn_file_actions_adddup2(fa, 0, 2) == 0)
  local pid = ffi.new("int[1]")
  local rc = C.posix_spawn(pid, full[1], fa, at, cargv, C.environ)
  C.posix_spawn_file_actions_destroy(fa)
  C.posix_spawnattr_destroy(at)
  assert(rc == 0, "posix_spawn failed: " .. rc)
  return setmetatable({ fd = master, pid = pid[0], out = "", mark = 1 }, P)
end

function P:send(s)
  local n = C.write(self.fd, s, #s)
  assert(n == #s, "write to the terminal failed")
end

-- read what is there within ms milliseconds; false once the program is gone
function P:pump(ms)
  local pfd = ffi.new("struct cute_spec_pollfd[1]")
  pfd[0].fd, pfd[0].events = self.fd, POLLIN
  if C.poll(pfd, 1, ms) <= 0 then return true end
  local buf = ffi.new("char[4096]")
  local n = C.read(self.fd, buf, 4096)
  if n <= 0 then return false end
  self.out = self.out .. ffi.string(buf, n)
  return true
end

-- wait until text appears after the last match (plain text); true, or false
-- after timeout seconds
function P:expect(text, timeout)
  local deadline = os.time() + (timeout or 10)
  while true do
    local i, j = self.out:find(text, self.mark, true)
    if i then
      self.mark = j + 1
      return true
    end
    if os.time() > deadline then return false end
    if not self:pump(100) then
      i, j = self.out:find(text, self.mark, true)
      if i then self.mark = j + 1 end
      return i ~= nil
    end
  end
end

-- the output since the last match
function P:rest() return self.out:sub(self.mark) end

-- is the program still running?
function P:alive()
  if self.reaped then return false end
  local st = ffi.new("int[1]")
  local r = C.waitpid(self.pid, st, WNOHANG)
  if r == self.pid then self.reaped = true end
  return r == 0
end

-- wait up to timeout seconds for the program to end; true when it did
function P:wait(timeout)
  local deadline = os.time() + (timeout or 10)
  local st = ffi.new("int[1]")
  while os.time() <= deadline do
    local r = C.waitpid(self.pid, st, WNOHANG)
    if r == self.pid then self.reaped = true; return true end
    if r < 0 then return true end
    self:pump(50)
  end
  return false
end

function P:close()
  if not self.reaped then
    C.kill(self.pid, 9)
    local st = ffi.new("int[1]")
    C.waitpid(self.pid, st, 0)
    self.reaped = true
  end
  if self.fd >= 0 then C.close(self.fd); self.fd = -1 end
end

return M
