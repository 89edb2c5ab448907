/*
 * tracewalk.c - a test helper, not a traced program: walks a trace's
 * records by their sizes alone, trusting nothing else, and prints
 *   header OK|BAD records N clocks C end E tail T
 * where T is the number of bytes after the last whole record (0: the file
 * ends at a record boundary).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int main(int argc, char **argv)
{
	unsigned char head[32], rec[8];
	if (argc != 2) {
		fprintf(stderr, "usage: tracewalk TRACE\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	int ok = fread(head, 1, 32, f) == 32 && !memcmp(head, "HOOKPROF", 8) && rd32(head + 16) == 32;
	long records = 0, clocks = 0, ends = 0, tail = 0;
	size_t n;
	while (ok && (n = fread(rec, 1, 8, f)) > 0) {
		if (n < 8) {
			tail = (long)n;
			break;
		}
		uint32_t type = rd32(rec), size = rd32(rec + 4);
		long here = ftell(f);
		if (fseek(f, 0, SEEK_END) || ftell(f) - here < (long)size) {
			tail = 8 + (ftell(f) - here);
			break;
		}
		fseek(f, here + (long)size, SEEK_SET);
		records++;
		clocks += type == 2;
		ends += type == 7;
	}
	printf("header %s records %ld clocks %ld end %ld tail %ld\n", ok ? "OK" : "BAD", records, clocks,
	       ends, tail);
	fclose(f);
	return 0;
}
