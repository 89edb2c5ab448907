/* jsonnames.cpp - functions whose names need escaping in JSON: a user-defined
 * literal (operator"" _km) has quotes in its name. Counts: operator"" _km 3,
 * twice<int> 1, twice<unsigned long long> 1, main 1. */
#include <cstdio>

struct km {
	unsigned long long m;
};

__attribute__((noinline)) km operator""_km(unsigned long long v)
{
	return km{ v * 1000 };
}

template <typename T> __attribute__((noinline)) T twice(T x)
{
	return x + x;
}

int main()
{
	volatile unsigned long long sum = 0;
	sum += (5_km).m;
	sum += (7_km).m;
	sum += (9_km).m;
	sum += twice<unsigned long long>(sum) + twice<int>(1);
	std::printf("jsonnames %llu\n", (unsigned long long)sum);
	return 0;
}
