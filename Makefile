# cuteluajit -- GPU kernels written in Lua.
#
#   make          build/libcute.so, build/cuteluajit and build/bin/cuteluajit (installs missing
#                 Debian packages first)
#   make demo     the tour (examples/tour.lua)
#   make test     every test: busted specs, C API test, embed example, ASan/UBSan run, fuzz
#   make bundle   dist/: relocatable cuteluajit + Lua modules + examples + GPU specs
#   make bench    CPU benchmarks (bench/layout.lua, bench/compile.lua)
#   make install  PREFIX (default /usr/local), DESTDIR: libcute.so.VERSION, headers,
#                 Lua modules, cuteluajit, cuteluajit.pc; make uninstall (docs/EMBED.md)
#   make test-tsan  the multi-lua_State C tests (host_c, threads_c) under ThreadSanitizer
#   make fuzz     longer fuzz run (FUZZ_SECONDS a fuzzer, default 60): IR, layout, kernels
#
# Variables: CC, LLVM_CONFIG, PTXAS (optional), JOBS.

CC          ?= cc
CXX         ?= c++
LLVM_CONFIG ?= llvm-config-19
LUAJIT      ?= luajit
BUSTED      ?= /usr/bin/busted
LUAJIT_INC  ?= /usr/include/luajit-2.1
LUAJIT_A    ?= /usr/lib/x86_64-linux-gnu/libluajit-5.1.a

B := build
Q ?= @
PREFIX  ?= /usr/local
DESTDIR ?=
# the version is written once, in include/cute.h; the soname carries its major
VERSION := $(shell sed -n 's/.*CUTE_VERSION_MAJOR = \([0-9]*\), CUTE_VERSION_MINOR = \([0-9]*\), CUTE_VERSION_PATCH = \([0-9]*\).*/\1.\2.\3/p' include/cute.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))
A := build/asan

# Evaluated lazily (recipes only): llvm-config may be installed by `make deps`.
LLVM_CFLAGS   = $(shell $(LLVM_CONFIG) --cflags)
LLVM_LIBDIR   = $(shell $(LLVM_CONFIG) --libdir)
LLVM_COMPONENTS := core analysis passes target linker bitreader nvptxcodegen nvptxdesc nvptxinfo
LLVM_LIBS     = $(shell $(LLVM_CONFIG) --link-static --libs $(LLVM_COMPONENTS))
LLVM_LIBNAMES = $(shell $(LLVM_CONFIG) --link-static --libnames $(LLVM_COMPONENTS) | tr ' ' ':')
STATIC_SYS    := -static-libstdc++ -static-libgcc -Wl,-Bstatic -lz -lzstd -Wl,-Bdynamic -lrt -ldl -lm -pthread
# Hide LLVM, libstdc++, zlib and zstd: a host process may load another LLVM.
HIDE_LIBS     = -Wl,--exclude-libs,$(LLVM_LIBNAMES):libstdc++.a:libz.a:libzstd.a:libgcc.a
LINK_LLVM     = -L$(LLVM_LIBDIR) -Wl,--gc-sections $(HIDE_LIBS) $(LLVM_LIBS) $(STATIC_SYS)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS  ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(CFLAGS) $(WARN) -fPIC -fvisibility=hidden -Iinclude -I$(B) \
             -I$(LUAJIT_INC) $(LLVM_CFLAGS)
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# (the REPL's line editor, lineedit.c, belongs to the program, not to libcute)
CORE_SRCS := $(filter-out src/main.c src/lineedit.c,$(wildcard src/*.c))
CORE_OBJS := $(CORE_SRCS:src/%.c=$(B)/obj/%.o) $(B)/obj/lua_embed.o
ASAN_OBJS := $(CORE_SRCS:src/%.c=$(A)/obj/%.o) $(A)/obj/lua_embed.o
HEADERS   := $(wildcard include/*.h src/*.h)
LUA_SRCS  := $(shell find lua -name '*.lua' ! -name cdef.lua 2>/dev/null | sort)

.PHONY: all deps check-deps test test-asan test-tsan demo bundle bench fuzz clean install uninstall

all: check-deps $(B)/libcute.so $(B)/cuteluajit $(B)/bin/cuteluajit lua/cute/cdef.lua $(B)/libnccl_stub.so

deps:
	sh tools/deps.sh --install

check-deps:
	@sh tools/deps.sh

# ---- generated ------------------------------------------------------------
# ffi.cdef text: the CDEF blocks of the public headers.
lua/cute/cdef.lua: $(wildcard include/*.h) tools/gen_cdef.sh
	@echo "  GEN     $@"
	$(Q)sh tools/gen_cdef.sh include/cute.h $(filter-out include/cute.h,$(wildcard include/*.h)) > $@.tmp && mv $@.tmp $@

# Lua modules embedded into the library (package.preload-style searcher).
$(B)/lua_embed.c: $(LUA_SRCS) lua/cute/cdef.lua tools/embed_lua.lua | $(B)/obj check-deps
	@echo "  GEN     $@"
	$(Q)$(LUAJIT) tools/embed_lua.lua lua $(LUA_SRCS) lua/cute/cdef.lua > $@.tmp && mv $@.tmp $@

$(B)/obj $(A)/obj:
	mkdir -p $@

# ---- normal build -----------------------------------------------------------
$(B)/obj/%.o: src/%.c $(HEADERS) | $(B)/obj check-deps
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(B)/obj/lua_embed.o: $(B)/lua_embed.c
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -Wno-overlength-strings -c $< -o $@

$(B)/obj/main.o: src/main.c $(HEADERS) | $(B)/obj check-deps
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

# Shared library for C hosts and for plain `luajit` (ffi.load). lua_* symbols
# come from the host process.
$(B)/libcute.so: $(CORE_OBJS)
	@echo "  LINK    $@"
	$(Q)$(CXX) -shared -Wl,-soname,libcute.so.$(SOMAJOR) -o $@ $^ $(LINK_LLVM)
	$(Q)ln -sf libcute.so $(B)/libcute.so.$(SOMAJOR)

# The REPL / script runner: LuaJIT and LLVM linked statically; exports the
# cute_* API and LuaJIT's lua_* symbols (busted's C modules need them).
$(B)/cuteluajit: $(B)/obj/main.o $(B)/obj/lineedit.o $(CORE_OBJS)
	@echo "  LINK    $@"
	$(Q)$(CXX) -o $@ $^ -Wl,-E $(LUAJIT_A) $(LINK_LLVM)

# The same program over libcute.so, for make install and make bundle (LLVM
# shipped once): the library is found at $ORIGIN/../lib (DT_RPATH, so that
# LD_LIBRARY_PATH cannot pair it with another build's libcute.so.0); LuaJIT is
# linked statically and exported (-E) for libcute.so and busted's C modules:
# one LuaJIT in the process.  build/lib/ holds the link that lets it run here.
$(B)/bin/cuteluajit: $(B)/obj/main.o $(B)/obj/lineedit.o $(B)/libcute.so
	@echo "  LINK    $@"
	$(Q)mkdir -p $(B)/bin $(B)/lib && ln -sf ../libcute.so $(B)/lib/libcute.so.$(SOMAJOR)
	$(Q)$(CC) -o $@ $(B)/obj/main.o $(B)/obj/lineedit.o -Wl,-E $(LUAJIT_A) -static-libgcc \
	    -L$(B) -lcute -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib' -lm -ldl -pthread

# ---- ASan + UBSan build ---------------------------------------------------------
$(A)/obj/%.o: src/%.c $(HEADERS) | $(A)/obj check-deps
	@echo "  CC/SAN  $<"
	$(Q)$(CC) $(ALL_CFLAGS) -O1 $(SAN) -c $< -o $@

$(A)/obj/lua_embed.o: $(B)/lua_embed.c | $(A)/obj
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -O1 -Wno-overlength-strings -c $< -o $@

$(A)/obj/main.o: src/main.c $(HEADERS) | $(A)/obj check-deps
	@echo "  CC/SAN  $<"
	$(Q)$(CC) $(ALL_CFLAGS) -O1 $(SAN) -c $< -o $@

$(A)/cuteluajit: $(A)/obj/main.o $(A)/obj/lineedit.o $(ASAN_OBJS)
	@echo "  LINK    $@"
	$(Q)$(CXX) $(SAN) -o $@ $^ -Wl,-E $(LUAJIT_A) $(LINK_LLVM)

# ---- C tests and the embedding example --------------------------------------------
# The layout and driver tests need no LLVM: built straight from the sources,
# with ASan and UBSan.  The IR/codegen test links libcute.so.
LAYOUT_SRCS := src/core.c $(wildcard src/tuple*.c) $(wildcard src/layout*.c)
$(B)/test_oracle_c: tests/oracle_c.c $(LAYOUT_SRCS) $(HEADERS) | $(B)/obj
	@echo "  CC/SAN  $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) $(SAN) -Iinclude -o $@ tests/oracle_c.c $(LAYOUT_SRCS)

$(B)/test_layout_errors_c: tests/layout_errors_c.c $(LAYOUT_SRCS) $(HEADERS) | $(B)/obj
	@echo "  CC/SAN  $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) $(SAN) -Iinclude -o $@ tests/layout_errors_c.c $(LAYOUT_SRCS)

$(B)/test_cuda_c: tests/cuda_c.c src/core.c src/cuda.c src/cuda_peer.c $(HEADERS) | $(B)/obj
	@echo "  CC/SAN  $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) $(SAN) -Iinclude -o $@ tests/cuda_c.c src/core.c src/cuda.c src/cuda_peer.c -ldl -lpthread

$(B)/test_ir_c: tests/ir_c.c $(B)/libcute.so tests/check.h
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -o $@ $< -L$(B) -lcute -Wl,-rpath,'$$ORIGIN' -lluajit-5.1

# the host API, DLPack ownership and one lua_State per thread (tests/host_c.c)
$(B)/test_host_c: tests/host_c.c $(B)/libcute.so tests/check.h
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -I$(LUAJIT_INC) -o $@ $< -L$(B) -lcute \
	    -Wl,-rpath,'$$ORIGIN' -lluajit-5.1 -lpthread

# several lua_States in several threads compiling and launching at once (docs/SOAK.md)
$(B)/test_threads_c: tests/threads_c.c $(B)/libcute.so tests/check.h
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -I$(LUAJIT_INC) -o $@ $< -L$(B) -lcute \
	    -Wl,-rpath,'$$ORIGIN' -lluajit-5.1 -lpthread

$(B)/test_compile_pool_c: tests/compile_pool_c.c $(B)/libcute.so tests/check.h
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -Iinclude -o $@ $< -L$(B) -lcute -Wl,-rpath,'$$ORIGIN' -lluajit-5.1

# NCCL (docs/NCCL.md): the stand-in library the specs load without a GPU, and
# the declarations checked against nccl.h where it exists (NCCL_INC)
NCCL_INC ?= /usr/local/cuda/include
NCCL_ABI := $(if $(and $(wildcard $(NCCL_INC)/nccl.h),$(wildcard $(NCCL_INC)/cuda_runtime.h)),$(B)/test_nccl_abi)
$(B)/libnccl_stub.so: tests/nccl_stub.c | $(B)/obj
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 -g $(WARN) -shared -fPIC -fvisibility=hidden -Wl,-soname,libnccl_stub.so -o $@ $<

$(B)/test_nccl_abi: tests/nccl_abi.c src/nccldef.h include/cute_nccl.h | $(B)/obj
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 -O1 $(WARN) -Iinclude -I$(NCCL_INC) -o $@ $<

C_TESTS := $(B)/test_oracle_c $(B)/test_layout_errors_c $(B)/test_cuda_c $(B)/test_ir_c $(B)/test_host_c $(B)/test_compile_pool_c $(B)/test_threads_c $(NCCL_ABI)

$(B)/embed: examples/embed/embed.c $(B)/libcute.so
	@echo "  CC      $@"
	$(Q)$(CC) -std=gnu11 $(WARN) -Iinclude -I$(LUAJIT_INC) -o $@ $< -L$(B) -lcute \
	    -Wl,-rpath,'$$ORIGIN' -lluajit-5.1

# ---- tests -------------------------------------------------------------------
test: all $(C_TESTS) $(B)/embed $(A)/cuteluajit
	sh tools/run_tests.sh

test-asan: all $(A)/cuteluajit
	TEST_ONLY=asan sh tools/run_tests.sh

# ThreadSanitizer over the C core (LLVM and LuaJIT themselves are not
# instrumented): build/tsan/libcute.so and tests/host_c.c's threads
T := build/tsan
TSAN_OBJS := $(CORE_SRCS:src/%.c=$(T)/obj/%.o) $(T)/obj/lua_embed.o
$(T)/obj:
	mkdir -p $@
$(T)/obj/%.o: src/%.c $(HEADERS) | $(T)/obj check-deps
	@echo "  CC/TSAN $<"
	$(Q)$(CC) $(ALL_CFLAGS) -O1 -fsanitize=thread -c $< -o $@
$(T)/obj/lua_embed.o: $(B)/lua_embed.c | $(T)/obj
	$(Q)$(CC) $(ALL_CFLAGS) -O1 -Wno-overlength-strings -c $< -o $@
$(T)/libcute.so: $(TSAN_OBJS)
	@echo "  LINK    $@"
	$(Q)$(CXX) -shared -fsanitize=thread -Wl,-soname,libcute.so.$(SOMAJOR) -o $@ $^ $(LINK_LLVM)
	$(Q)ln -sf libcute.so $(T)/libcute.so.$(SOMAJOR)
$(T)/test_host_c: tests/host_c.c $(T)/libcute.so tests/check.h
	$(Q)$(CC) -std=gnu11 -O1 -g -fsanitize=thread $(WARN) -Iinclude -I$(LUAJIT_INC) -o $@ $< -L$(T) -lcute \
	    -Wl,-rpath,'$$ORIGIN' -lluajit-5.1 -lpthread
$(T)/test_threads_c: tests/threads_c.c $(T)/libcute.so tests/check.h
	$(Q)$(CC) -std=gnu11 -O1 -g -fsanitize=thread $(WARN) -Iinclude -I$(LUAJIT_INC) -o $@ $< -L$(T) -lcute \
	    -Wl,-rpath,'$$ORIGIN' -lluajit-5.1 -lpthread
# (each program's last line is its summary; a ThreadSanitizer warning is a failure.
# CUTE_TARGET=gpu as in tools/run_tests.sh: host_c tests the no-GPU launch error
# with made-up device pointers; threads_c takes the CPU target itself without a GPU)
test-tsan: all $(T)/test_host_c $(T)/test_threads_c
	CUTE_TARGET=gpu sh tools/tsan_run.sh $(T)/test_host_c $(T)/test_threads_c

install: all
	sh tools/install.sh install "$(DESTDIR)$(PREFIX)" "$(PREFIX)" $(VERSION)

uninstall:
	sh tools/install.sh uninstall "$(DESTDIR)$(PREFIX)" "$(PREFIX)" $(VERSION)

demo: all
	$(B)/cuteluajit examples/tour.lua
	$(B)/cuteluajit examples/vector_add.lua

bench: all
	$(B)/cuteluajit bench/layout.lua
	$(B)/cuteluajit bench/compile.lua

# (docs/FUZZ.md: the IR and layout fuzzers under ASan+UBSan, the kernel fuzzer
# against its IR interpreter and plain Lua, launched on the CPU target)
fuzz: all $(A)/cuteluajit
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} $(A)/cuteluajit tools/fuzz_ir.lua
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} $(A)/cuteluajit tools/fuzz_layout.lua
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} FUZZ_LAUNCH=1 CUTE_TARGET=cpu $(B)/cuteluajit tools/fuzz_kernels.lua

bundle: all
	sh tools/bundle.sh

clean:
	rm -rf $(B) dist lua/cute/cdef.lua
