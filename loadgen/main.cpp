// weft-load: an httperf-style open-loop load generator (see issue "weft-load").
#include <cstdio>

int main() {
  std::fputs("weft-load: not built yet\n", stderr);
  return 1;
}
