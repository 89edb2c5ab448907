/* names_liba.c - a plugin whose functions have the same sizes and places as
 * names_libb.c's, so that libb loaded where liba was puts beta_N at alpha_N's
 * address. */
volatile int names_sink;

__attribute__((noinline)) void alpha_one(int x) { names_sink += x; }
__attribute__((noinline)) void alpha_two(int x) { names_sink += x * 2; }
__attribute__((noinline)) void alpha_three(int x) { names_sink += x * 3; }
