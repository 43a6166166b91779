/* lineedit.h -- the REPL's terminal line editor (part of the cuteluajit
 * program only, not of libcute).  See lineedit.c and docs/REPL.md. */
#ifndef CUTE_LINEEDIT_H
#define CUTE_LINEEDIT_H

#include <lua.h>

/* The Lua module "cute.lineedit" (main.c puts it in package.preload):
 *   readline(prompt)       -> line | nil (end of input) | false (Ctrl-C)
 *   history_file(path)     load a history file; later lines are appended to it
 *   history_add(line)      remember a line (and append it to the file)
 *   set_completer(fn)      fn(text_before_cursor) -> start, {candidates...}
 *   call(f, handler)       xpcall(f, handler) that Ctrl-C interrupts
 *   interactive()          true when stdin and stdout are terminals
 *   columns()              the terminal's width (80 when unknown) */
int cute_lineedit_open(lua_State *L);

#endif
