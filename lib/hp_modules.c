/*
 * hp_modules.c - MODULES records from dl_iterate_phdr, each snapshot closed
 * by a MODULES_AT record with its tick and size.
 */
#define _GNU_SOURCE
#include "hp_modules.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "hp_format.h"
#include "hp_output.h"

#define MODULES_MAX_BYTES (1u << 20)
#define BUILD_ID_MAX 64

/* The MODULES record being filled; a map larger than one record goes on
 * in the next (a reader keeps the union of all). */
struct snapshot {
	uint8_t *count_at;
	uint8_t *p;
	uint8_t *end;
	uint32_t count;
	uint32_t total; /* modules in the whole snapshot, over its records */
	uint64_t tick;
	int failed;
};

static unsigned long long last_adds, last_subs;

static size_t note_align(size_t n) { return (n + 3) & ~(size_t)3; }

/* The NT_GNU_BUILD_ID note in a PT_NOTE segment, or 0 bytes. */
static size_t find_build_id(const ElfW(Phdr) *ph, ElfW(Addr) bias, const uint8_t **id)
{
	const uint8_t *p = (const uint8_t *)(bias + ph->p_vaddr);
	const uint8_t *end = p + ph->p_memsz;
	while (p + sizeof(ElfW(Nhdr)) <= end) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		const uint8_t *name = p + sizeof(*nh);
		const uint8_t *desc = name + note_align(nh->n_namesz);
		if (desc + nh->n_descsz > end)
			break;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
			*id = desc;
			return nh->n_descsz < BUILD_ID_MAX ? nh->n_descsz : BUILD_ID_MAX;
		}
		p = desc + note_align(nh->n_descsz);
	}
	return 0;
}

static uint8_t *put_bytes(uint8_t *p, const void *s, size_t n)
{
	hp_le32(p, (uint32_t)n);
	if (n) /* s may be NULL then (no build-id), which memcpy may not get */
		memcpy(p + 4, s, n);
	return p + 4 + n;
}

/* The main program's dlpi_name is empty: its path is /proc/self/exe. */
static const char *module_path(const char *name, char *buf, size_t len)
{
	if (name && *name)
		return name;
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static int snapshot_begin(struct snapshot *s)
{
	uint8_t *p = hp_output_begin(HP_REC_MODULES, MODULES_MAX_BYTES);
	if (!p) {
		s->failed = 1;
		return -1;
	}
	/* A continuation record keeps the snapshot's running total and tick. */
	*s = (struct snapshot){ .count_at = p, .p = p + 4, .end = p + MODULES_MAX_BYTES,
				.total = s->total, .tick = s->tick };
	return 0;
}

static void snapshot_end(struct snapshot *s)
{
	hp_le32(s->count_at, s->count);
	hp_output_end(s->p);
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct snapshot *s = arg;
	char exe[4096];
	const char *path = module_path(info->dlpi_name, exe, sizeof(exe));
	const uint8_t *id = NULL;
	size_t id_len = 0, nload = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD)
			nload++;
		else if (ph->p_type == PT_NOTE && !id_len)
			id_len = find_build_id(ph, info->dlpi_addr, &id);
	}
	size_t need = 8 + 4 + strlen(path) + 4 + id_len + 4 + nload * 32;
	if (s->p + need > s->end && s->count) {
		snapshot_end(s);
		if (snapshot_begin(s) < 0)
			return 1; /* output failed: stop iterating */
	}
	if (s->p + need > s->end)
		return 0; /* larger than a record on its own: cannot happen with PATH_MAX paths */
	uint8_t *p = s->p;
	hp_le64(p, info->dlpi_addr);
	p = put_bytes(p + 8, path, strlen(path));
	p = put_bytes(p, id, id_len);
	hp_le32(p, (uint32_t)nload);
	p += 4;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		hp_le64(p, info->dlpi_addr + ph->p_vaddr);
		hp_le64(p + 8, ph->p_memsz);
		hp_le64(p + 16, ph->p_offset);
		hp_le32(p + 24, ph->p_flags);
		hp_le32(p + 28, 0);
		p += 32;
	}
	s->p = p;
	s->count++;
	s->total++;
	/* Read while dl_iterate_phdr holds the loader's lock, which dlopen and
	 * dlclose take to add and remove objects: an object absent here was
	 * gone by this tick (its destructors had run), and one loaded later
	 * runs its constructors after it. */
	s->tick = hp_tick();
	last_adds = info->dlpi_adds;
	last_subs = info->dlpi_subs;
	return 0;
}

static int read_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
	unsigned long long *c = arg;
	(void)size;
	c[0] = info->dlpi_adds;
	c[1] = info->dlpi_subs;
	return 1; /* the counters are global: one object is enough */
}

/* The snapshot is complete: a reader may now tell which objects are gone. */
static void snapshot_moment(const struct snapshot *s)
{
	uint8_t *p = hp_output_begin(HP_REC_MODULES_AT, 16);
	if (!p)
		return;
	hp_le64(p, s->tick);
	hp_le32(p + 8, s->total);
	hp_le32(p + 12, 0);
	hp_output_end(p + 16);
}

int hp_modules_write(int force)
{
	unsigned long long c[2] = { 0, 0 };
	dl_iterate_phdr(read_counters, c);
	if (!force && c[0] == last_adds && c[1] == last_subs)
		return 0;
	struct snapshot s = { 0 };
	if (snapshot_begin(&s) < 0)
		return -1;
	dl_iterate_phdr(add_module, &s);
	if (s.failed)
		return -1;
	snapshot_end(&s);
	snapshot_moment(&s);
	return 0;
}
