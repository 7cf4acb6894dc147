/* The other file of the three-file project: `clamp` keeps a value at most `LIMIT`. */
#include "counter.h"

int clamp(int x) {
  return x > LIMIT ? LIMIT : x;
}
