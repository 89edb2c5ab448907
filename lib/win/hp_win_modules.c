/*
 * hp_win_modules.c - the PE modules of the process, kept in a list of our
 * own (hp_win_modules.h says why and what each entry holds).
 *
 * The loader tells us of each load and unload (LdrRegisterDllNotification,
 * under its lock); the list is filled from EnumProcessModules once, after
 * the notification is registered, so that no module falls between the two.
 * Readers (the writer's snapshots) take only our small lock, never the
 * loader's: a program thread that holds the loader lock (inside DllMain, or
 * FreeLibrary's notification) may wait for the writer, and the writer must
 * then not wait for the loader.
 *
 * Lock order: the loader's lock, then the runtime's writer lock (the unload
 * notification writes the map), then modules_lock. modules_lock is held
 * only to copy entries in or out, never across a call into the runtime.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <winternl.h>
#include <psapi.h>
#include <stdint.h>
#include <string.h>

#include "hp_win_modules.h"

#define MODULES_MAX 512

/* What the loader hands the notification (ntdll's LDR_DLL_NOTIFICATION_DATA:
 * the same layout for a load and an unload). */
struct ldr_notification {
	ULONG flags;
	const UNICODE_STRING *full_name;
	const UNICODE_STRING *base_name;
	void *base;
	ULONG size;
};
enum { LDR_LOADED = 1, LDR_UNLOADED = 2 };
typedef void(CALLBACK *ldr_callback)(ULONG reason, const struct ldr_notification *data, void *ctx);
typedef LONG(NTAPI *ldr_register_fn)(ULONG flags, ldr_callback cb, void *ctx, void **cookie);

static struct hp_win_module *modules; /* MODULES_MAX entries, hp_pages_alloc'd */
static uint32_t count;
static uint32_t changes; /* loads and unloads seen: a snapshot is due when it moved */
static SRWLOCK modules_lock = SRWLOCK_INIT;
static void (*write_map)(void);
static int notified; /* the loader tells us of changes */

/* ---- reading an image in memory ----------------------------------------- */

static const IMAGE_NT_HEADERS64 *nt_headers(const uint8_t *base)
{
	const IMAGE_DOS_HEADER *dos = (const IMAGE_DOS_HEADER *)base;
	if (dos->e_magic != IMAGE_DOS_SIGNATURE)
		return NULL;
	const IMAGE_NT_HEADERS64 *nt = (const IMAGE_NT_HEADERS64 *)(base + dos->e_lfanew);
	if (nt->Signature != IMAGE_NT_SIGNATURE || nt->OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC)
		return NULL;
	return nt;
}

/* The ImageBase the file states: the loader writes the real base into the
 * headers in memory when it moves an image (docs/format.md, PE modules). */
static uint64_t file_image_base(const wchar_t *path, uint64_t fallback)
{
	HANDLE h = CreateFileW(path, GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
			       NULL, OPEN_EXISTING, 0, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return fallback;
	uint8_t head[4096];
	DWORD got = 0;
	BOOL ok = ReadFile(h, head, sizeof(head), &got, NULL);
	CloseHandle(h);
	if (!ok || got < sizeof(IMAGE_DOS_HEADER))
		return fallback;
	LONG at = ((const IMAGE_DOS_HEADER *)head)->e_lfanew;
	if (at < 0 || (DWORD)at + sizeof(IMAGE_NT_HEADERS64) > got)
		return fallback;
	IMAGE_NT_HEADERS64 nt;
	memcpy(&nt, head + at, sizeof(nt));
	if (nt.Signature != IMAGE_NT_SIGNATURE || nt.OptionalHeader.Magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC)
		return fallback;
	return nt.OptionalHeader.ImageBase;
}

/* The CodeView (RSDS) record's GUID and age: 20 bytes, or none. */
static uint32_t codeview_identity(const uint8_t *base, const IMAGE_NT_HEADERS64 *nt, uint8_t *out)
{
	const IMAGE_DATA_DIRECTORY *dir = &nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_DEBUG];
	if (nt->OptionalHeader.NumberOfRvaAndSizes <= IMAGE_DIRECTORY_ENTRY_DEBUG || !dir->VirtualAddress)
		return 0;
	const IMAGE_DEBUG_DIRECTORY *d = (const IMAGE_DEBUG_DIRECTORY *)(base + dir->VirtualAddress);
	for (size_t i = 0; i < dir->Size / sizeof(*d); i++) {
		const uint8_t *cv = base + d[i].AddressOfRawData;
		if (d[i].Type != IMAGE_DEBUG_TYPE_CODEVIEW || !d[i].AddressOfRawData || d[i].SizeOfData < 24 ||
		    memcmp(cv, "RSDS", 4))
			continue;
		memcpy(out, cv + 4, 20);
		return 20;
	}
	return 0;
}

static uint32_t section_flags(DWORD c)
{
	return (c & IMAGE_SCN_MEM_EXECUTE ? 1 : 0) | (c & IMAGE_SCN_MEM_WRITE ? 2 : 0) |
	       (c & IMAGE_SCN_MEM_READ ? 4 : 0);
}

static void read_sections(struct hp_win_module *m, const uint8_t *base, const IMAGE_NT_HEADERS64 *nt)
{
	const IMAGE_SECTION_HEADER *sec = IMAGE_FIRST_SECTION(nt);
	unsigned n = nt->FileHeader.NumberOfSections;
	m->nsections = n < HP_WIN_SECTIONS_MAX ? n : HP_WIN_SECTIONS_MAX;
	for (unsigned i = 0; i < m->nsections; i++) {
		DWORD size = sec[i].Misc.VirtualSize ? sec[i].Misc.VirtualSize : sec[i].SizeOfRawData;
		m->sections[i] = (struct hp_win_section){ .start = (uint64_t)(uintptr_t)base + sec[i].VirtualAddress,
							  .size = size,
							  .offset = sec[i].PointerToRawData,
							  .flags = section_flags(sec[i].Characteristics) };
	}
}

/* Everything a snapshot needs, read while the image is surely mapped. */
static int describe(struct hp_win_module *m, const void *base, const wchar_t *path)
{
	const IMAGE_NT_HEADERS64 *nt = nt_headers(base);
	if (!nt)
		return -1;
	*m = (struct hp_win_module){ .base = (uint64_t)(uintptr_t)base };
	m->size = nt->OptionalHeader.SizeOfImage;
	m->bias = m->base - file_image_base(path, nt->OptionalHeader.ImageBase);
	int n = WideCharToMultiByte(CP_UTF8, 0, path, -1, m->path, sizeof(m->path), NULL, NULL);
	m->path[n > 0 ? n - 1 : 0] = 0;
	m->id_len = codeview_identity(base, nt, m->id);
	read_sections(m, base, nt);
	return 0;
}

/* ---- the list ---------------------------------------------------------- */

static int find(uint64_t base)
{
	for (uint32_t i = 0; i < count; i++)
		if (modules[i].base == base)
			return (int)i;
	return -1;
}

static void add(const struct hp_win_module *m)
{
	AcquireSRWLockExclusive(&modules_lock);
	if (find(m->base) < 0 && count < MODULES_MAX)
		modules[count++] = *m;
	__atomic_fetch_add(&changes, 1, __ATOMIC_RELAXED);
	ReleaseSRWLockExclusive(&modules_lock);
}

static void remove_base(uint64_t base)
{
	AcquireSRWLockExclusive(&modules_lock);
	int i = find(base);
	if (i >= 0)
		modules[i] = modules[--count];
	__atomic_fetch_add(&changes, 1, __ATOMIC_RELAXED);
	ReleaseSRWLockExclusive(&modules_lock);
}

/* A UNICODE_STRING is not terminated; our copy is. */
static void add_named(const void *base, const UNICODE_STRING *name)
{
	static struct hp_win_module m; /* under the loader's lock: one at a time */
	wchar_t path[HP_WIN_PATH_MAX];
	size_t n = name ? name->Length / sizeof(wchar_t) : 0;
	n = n < HP_WIN_PATH_MAX - 1 ? n : HP_WIN_PATH_MAX - 1;
	if (n)
		memcpy(path, name->Buffer, n * sizeof(wchar_t));
	path[n] = 0;
	if (describe(&m, base, path) == 0)
		add(&m);
}

/* The loader's lock is held: nothing here may wait for the writer but
 * write_map, which writes the map while the module is still there, and
 * again once it is gone: that snapshot bounds its lifetime before another
 * module can be loaded at its addresses (as dlclose does on Linux). */
static void CALLBACK on_loader_event(ULONG reason, const struct ldr_notification *data, void *ctx)
{
	(void)ctx;
	DWORD err = GetLastError();
	if (reason == LDR_LOADED) {
		add_named(data->base, data->full_name);
	} else if (reason == LDR_UNLOADED) {
		if (write_map)
			write_map();
		remove_base((uint64_t)(uintptr_t)data->base);
		if (write_map)
			write_map();
	}
	SetLastError(err);
}

static int register_notification(void)
{
	static void *cookie;
	HMODULE ntdll = GetModuleHandleW(L"ntdll.dll");
	ldr_register_fn reg = ntdll ? (ldr_register_fn)(void *)GetProcAddress(ntdll, "LdrRegisterDllNotification")
				    : NULL;
	return reg && reg(0, on_loader_event, NULL, &cookie) == 0 ? 0 : -1;
}

static void enumerate_loaded(void)
{
	static HMODULE mods[MODULES_MAX];
	static struct hp_win_module m;
	wchar_t path[HP_WIN_PATH_MAX];
	DWORD bytes = 0;
	if (!K32EnumProcessModules(GetCurrentProcess(), mods, sizeof(mods), &bytes))
		return;
	DWORD n = bytes / sizeof(mods[0]);
	for (DWORD i = 0; i < n && i < MODULES_MAX; i++) {
		DWORD len = GetModuleFileNameW(mods[i], path, HP_WIN_PATH_MAX);
		path[len < HP_WIN_PATH_MAX ? len : 0] = 0;
		if (describe(&m, mods[i], path) == 0)
			add(&m);
	}
}

int hp_win_modules_init(void *(*alloc)(size_t), void (*unloading)(void))
{
	if (modules)
		return 0;
	modules = alloc(MODULES_MAX * sizeof(*modules));
	if (!modules)
		return -1;
	write_map = unloading;
	notified = register_notification() == 0;
	enumerate_loaded();
	return 0;
}

/* Without the loader's word: the list as EnumProcessModules has it now
 * (which takes the loader's lock: see the head comment). */
static void enumerate_again(void)
{
	AcquireSRWLockExclusive(&modules_lock);
	count = 0;
	ReleaseSRWLockExclusive(&modules_lock);
	enumerate_loaded();
}

uint32_t hp_win_modules_changes(void)
{
	if (!notified) {
		enumerate_again();
		return __atomic_add_fetch(&changes, 1, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&changes, __ATOMIC_RELAXED);
}

/* Shared: the loader's notifications, which change the list, wait; they
 * hold the loader's lock, which nothing called here takes. */
int hp_win_modules_each(int (*fn)(const struct hp_win_module *m, void *arg), void *arg)
{
	int rc = 0;
	AcquireSRWLockShared(&modules_lock);
	for (uint32_t i = 0; i < count && !rc; i++)
		rc = fn(&modules[i], arg);
	ReleaseSRWLockShared(&modules_lock);
	return rc;
}
