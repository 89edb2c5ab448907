/*
 * hp_win_modules.h - every loaded PE module with what a MODULES record says
 * of it (docs/format.md, "PE modules"): load address, the bias from the
 * ImageBase its file states, its Windows path in UTF-8, its CodeView GUID
 * and age, and its sections. Windows only (lib/hp_platform_win.c).
 */
#ifndef HP_WIN_MODULES_H
#define HP_WIN_MODULES_H

#include <stddef.h>
#include <stdint.h>

#define HP_WIN_PATH_MAX 1024
#define HP_WIN_SECTIONS_MAX 64

struct hp_win_section {
	uint64_t start; /* load address + VirtualAddress */
	uint64_t size;
	uint64_t offset; /* PointerToRawData */
	uint32_t flags;  /* 1 execute, 2 write, 4 read */
};

struct hp_win_module {
	uint64_t base, size, bias;
	char path[HP_WIN_PATH_MAX];
	uint8_t id[20];
	uint32_t id_len; /* 20, or 0 without a CodeView record */
	uint32_t nsections;
	struct hp_win_section sections[HP_WIN_SECTIONS_MAX];
};

/* Once, at start-up: the list's memory from alloc (zeroed), and
 * `unloading`, called by the loader's unload notification while the module
 * is still in the list and again once it is out of it (the runtime writes
 * its map each time). 0, or -1. */
int hp_win_modules_init(void *(*alloc)(size_t), void (*unloading)(void));
/* A number that changes whenever a module was loaded or unloaded. */
uint32_t hp_win_modules_changes(void);
/* fn for each module until it returns non-zero (returned). */
int hp_win_modules_each(int (*fn)(const struct hp_win_module *m, void *arg), void *arg);

#endif
