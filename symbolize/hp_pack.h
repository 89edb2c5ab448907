/*
 * hp_pack.h - what the symbolizer needs to read a trace, stored beside it
 * (hookprof pack, record --keep-symbols), so that the trace still names its
 * functions after the program is rebuilt or on another machine.
 *
 * For each module that the trace's addresses fall in (its functions, a
 * crash backtrace, the threads' root stacks; or every module of the map),
 * the file with its symbol table and DWARF: the traced file itself when it
 * has them, else its separate debug file. A file with a build-id goes to
 * DIR/.build-id/xx/yyyy.debug, where libdwfl looks for it; one without goes
 * to DIR/by-path/ABSOLUTE-PATH, which hp_symbols_for_trace prefers to the
 * file now at that path. A PE module (a Windows path, hp_pe.h) is found as
 * the symbolizer finds it (hp_pe_local_path) and goes to
 * DIR/pe/IDENTITY/NAME, with the PDB of an MSVC-built one beside it, or,
 * without an identity, to DIR/pe/by-path/DRIVE/... (hp_symbols.h). DIR/MODULES lists what was stored, for people.
 */
#ifndef HP_PACK_H
#define HP_PACK_H

#include <stddef.h>
#include <stdint.h>

enum hp_pack_status {
	HP_PACK_STORED,   /* stored (or was in the pack already) */
	HP_PACK_UNUSED,   /* no address of the trace lies in it: not stored */
	HP_PACK_REBUILT,  /* the file at its path has another build-id, and none
			   * with the traced one was found: nothing stored */
	HP_PACK_MISSING,  /* no regular file at its path ([vdso], deleted), and
			   * none with its build-id found: nothing stored */
	HP_PACK_OUTSIDE,  /* no build-id, and a "." or ".." in its path: stored
			   * by it, the copy would land outside the pack */
};

enum hp_pack_kind {
	HP_PACK_MAIN,          /* the traced file, with its symbol table or DWARF */
	HP_PACK_DEBUG,         /* its separate debug file (the traced file is stripped) */
	HP_PACK_STRIPPED,      /* the traced file, stripped, no debug file found:
				* names only from its dynamic symbols */
	HP_PACK_BY_BUILD_ID,   /* found by build-id in the debug directories */
	HP_PACK_KEPT,          /* the file at its path is not the traced one, but
				* the pack has it from before */
	HP_PACK_WITH_PDB,      /* a PE module built by MSVC, and its PDB */
	HP_PACK_NO_PDB,        /* a PE module built by MSVC, its PDB not found:
				* no names */
};

struct hp_pack_module {
	char *path;            /* as the trace recorded it */
	char build_id[129];    /* hex, "" if none was recorded */
	enum hp_pack_status status;
	enum hp_pack_kind kind;
	char *source;          /* the file stored, or NULL */
	char *stored;          /* its name in the pack, or NULL */
	char *pdb;             /* HP_PACK_WITH_PDB: the PDB stored beside it */
	uint64_t bytes;        /* its size (with its PDB's) */
};

struct hp_pack {
	char *dir;
	struct hp_pack_module *mod;
	size_t n;
	uint64_t bytes; /* of the files stored */
};

enum { HP_PACK_ALL_MODULES = 1 };

/*
 * Packs the trace at path into dir (NULL: path.symbols), made if missing;
 * files already there with the right build-id are kept. The files are
 * looked for where a reader looks (HOOKPROF_DEBUG_PATH, or libdwfl's
 * default directories). 0 with what was done in *out (free with
 * hp_pack_free), or -1 with a one-line reason; a module that cannot be
 * stored is not a failure, its status says why.
 */
int hp_pack_trace(const char *path, const char *dir, int flags, struct hp_pack *out, char *err,
		  size_t errlen);
void hp_pack_free(struct hp_pack *p);
/* A few words for a status and kind, e.g. "separate debug file". */
const char *hp_pack_describe(const struct hp_pack_module *m);

#endif
