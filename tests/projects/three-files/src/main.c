/* A three-file project (issue 23, Build 4): this file needs the compilation database's `-I`
 * and `-D` flags; `clamp` is defined in `clamp.c`, another file of the database, which cpals
 * links in: the assertion on line 17 is proved, the one on line 19 fails. */
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
  if (n > 100)
    assert(c == n); /* fails: `clamp` returned LIMIT */
  return 0;
}
