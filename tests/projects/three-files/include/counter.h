/* The project's header (issue 23, Build 4): found only through the `-I include` flag of the
 * compilation database; `LIMIT` comes from its `-DLIMIT=8` flag. */
#ifndef COUNTER_H
#define COUNTER_H
#ifndef LIMIT
#error "LIMIT is defined by the compilation database"
#endif
int clamp(int x);
#endif
