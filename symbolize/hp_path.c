/*
 * hp_path.c - paths a trace records, from Linux or from Windows.
 */
#include "hp_path.h"

#include <string.h>
#include <sys/stat.h>

static const char *skip_device_prefix(const char *p)
{
	if (!strncmp(p, "\\\\?\\", 4) || !strncmp(p, "\\??\\", 4))
		return p + 4;
	return p;
}

int hp_path_drive(const char *path)
{
	const char *p = skip_device_prefix(path);
	int letter = (p[0] >= 'A' && p[0] <= 'Z') || (p[0] >= 'a' && p[0] <= 'z');
	return letter && p[1] == ':' && (p[2] == '\\' || p[2] == '/') ? p[0] | 0x20 : 0;
}

size_t hp_path_drive_rest(const char *path)
{
	return (size_t)(skip_device_prefix(path) - path) + 2;
}

int hp_path_is_windows(const char *path)
{
	/* A device prefix (\\?\UNC\... too) or \\server\share: no Linux path
	 * the runtime records starts with a backslash. */
	return hp_path_drive(path) || skip_device_prefix(path) != path ||
	       (path[0] == '\\' && path[1] == '\\');
}

const char *hp_path_base(const char *path)
{
	if (!path)
		return "?";
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (hp_path_is_windows(path)) {
		const char *back = strrchr(base, '\\');
		base = back ? back + 1 : base;
	}
	return base;
}

int hp_path_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int hp_path_is_regular(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int hp_path_has_dot_component(const char *path)
{
	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return 1;
		p += n + (p[n] != 0);
	}
	return 0;
}
