/*
 * wordfreq.c - the example program `make demo` profiles: counts the words of
 * a generated text in a hash table and prints the most frequent ones.
 * Built with -finstrument-functions, every function below is traced.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096

struct entry {
	char word[16];
	int count;
	struct entry *next;
};

static struct entry *table[BUCKETS];
static unsigned seed = 12345;

static unsigned next_random(void)
{
	seed = seed * 1103515245u + 12345u;
	return seed >> 16;
}

static void make_word(char *out)
{
	static const char *syllables[] = { "ka", "to", "ri", "mu", "ne", "so", "la", "vi" };
	int n = 1 + next_random() % 3;
	out[0] = 0;
	for (int i = 0; i < n; i++)
		strcat(out, syllables[next_random() % 8]);
}

static unsigned hash_word(const char *w)
{
	unsigned h = 2166136261u;
	while (*w)
		h = (h ^ (unsigned char)*w++) * 16777619u;
	return h % BUCKETS;
}

static struct entry *find_or_add(const char *w)
{
	unsigned h = hash_word(w);
	for (struct entry *e = table[h]; e; e = e->next)
		if (!strcmp(e->word, w))
			return e;
	struct entry *e = calloc(1, sizeof(*e));
	strcpy(e->word, w);
	e->next = table[h];
	table[h] = e;
	return e;
}

static void count_words(int n)
{
	char w[16];
	for (int i = 0; i < n; i++) {
		make_word(w);
		find_or_add(w)->count++;
	}
}

static int by_count(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	return x->count != y->count ? y->count - x->count : strcmp(x->word, y->word);
}

static void print_top(int k)
{
	struct entry *all[BUCKETS * 4];
	int n = 0;
	for (int i = 0; i < BUCKETS; i++)
		for (struct entry *e = table[i]; e && n < BUCKETS * 4; e = e->next)
			all[n++] = e;
	qsort(all, n, sizeof(all[0]), by_count);
	printf("%d distinct words; the most frequent:\n", n);
	for (int i = 0; i < k && i < n; i++)
		printf("  %-8s %d\n", all[i]->word, all[i]->count);
}

int main(int argc, char **argv)
{
	count_words(argc > 1 ? atoi(argv[1]) : 200000);
	print_top(5);
	return 0;
}
