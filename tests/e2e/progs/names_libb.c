/* names_libb.c - names_liba.c with other names: see there. */
volatile int names_sink;

__attribute__((noinline)) void beta_one(int x) { names_sink += x; }
__attribute__((noinline)) void beta_two(int x) { names_sink += x * 2; }
__attribute__((noinline)) void beta_three(int x) { names_sink += x * 3; }
