// throw.cpp - exceptions through instrumented frames: thr_catch calls
// thr_a -> plain_mid (built without hooks) -> thr_b, which throws; thr_catch
// catches. g++ runs the exit hooks of thr_b and thr_a while unwinding; clang
// does not, and the next exit (thr_catch's) closes them. Four times, then
// thr_after once.
#include <cstdio>
#include <stdexcept>

volatile int sink;

__attribute__((noinline)) void thr_b(int i)
{
	sink += i;
	if (i >= 0)
		throw std::runtime_error("thrown");
}

__attribute__((noinline, no_instrument_function)) void plain_mid(int i)
{
	thr_b(i);
	sink++;
}

__attribute__((noinline)) void thr_a(int i)
{
	plain_mid(i);
	sink++;
}

__attribute__((noinline)) int thr_catch(int i)
{
	try {
		thr_a(i);
	} catch (const std::exception &) {
		return 1;
	}
	return 0;
}

__attribute__((noinline)) void thr_after()
{
	sink++;
}

int main()
{
	int caught = 0;
	for (int i = 0; i < 4; i++)
		caught += thr_catch(i);
	thr_after();
	std::printf("throw %d\n", caught);
	return 0;
}
