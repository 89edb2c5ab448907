// control_cxx.cpp - the control API from C++: HOOKPROF_REGION in methods
// and around an exception, marks and values. Prints "done".
#include <hookprof.h>
#include <cstdio>
#include <stdexcept>

namespace shop {
struct Basket {
	int items = 0;
	void add(int n)
	{
		HOOKPROF_REGION("add");
		items += n;
		hookprof_value("items", items);
	}
	void fail()
	{
		HOOKPROF_REGION("fail");
		throw std::runtime_error("no");
	}
};
} // namespace shop

int main()
{
	shop::Basket b;
	for (int i = 1; i <= 4; i++)
		b.add(i);
	try {
		b.fail();
	} catch (const std::exception &) {
		hookprof_mark("caught %s", "it");
	}
	std::puts("done");
	return 0;
}
