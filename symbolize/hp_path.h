/*
 * hp_path.h - paths a trace records, from Linux or from Windows.
 *
 * A trace recorded on Windows names its program and modules by Windows
 * paths (C:\dir\prog.exe, \\?\C:\..., \\server\share\...); read on Linux
 * they must still show as their base names. A backslash in a Linux path is
 * part of a file name, so it separates only in a path that is Windows'.
 *
 * And what a command may do with a path it is given to write.
 */
#ifndef HP_PATH_H
#define HP_PATH_H

#include <stddef.h>

/* 1 if path is a Windows one: a drive (C:\ or C:/), possibly after a
 * \\?\ or \??\ prefix, or a UNC path (\\server\share). */
int hp_path_is_windows(const char *path);

/* The last component of path, after '/' or, in a Windows path, '\';
 * "?" for NULL. Points into path. */
const char *hp_path_base(const char *path);

/* The drive letter, lower case, of a path C:\... or C:/... (possibly
 * after a \\?\ or \??\ prefix); 0 if it has none. Its rest after the
 * colon: path + hp_path_drive_rest(path). */
int hp_path_drive(const char *path);
size_t hp_path_drive_rest(const char *path);

/* 1 if a and b name one file (the same device and inode, links followed). */
int hp_path_same_file(const char *a, const char *b);
/* 1 if path is a regular file (a symbolic link is not followed): the only
 * kind a command given path to write may remove, never a device or a FIFO
 * (`-o /dev/null` run as root). */
int hp_path_is_regular(const char *path);
/* 1 if a component of path is "." or "..": a name made of it could lead
 * out of the directory it is put under (a pack's by-path/). */
int hp_path_has_dot_component(const char *path);

#endif
