/* A three-file project (issue 23, Build 4): this file needs the compilation database's `-I`
 * and `-D` flags; `clamp` is defined in `clamp.c`, another file of the database. */
#include <assert.h>
#include "counter.h"

extern int __VERIFIER_nondet_int(void);

int main(void) {
  int n = __VERIFIER_nondet_int();
  int i = 0;
  while (i < LIMIT)
    i++;
  assert(i == LIMIT);
  assert(i == 8);
  int c = clamp(n);
  assert(c <= LIMIT);
  return 0;
}
