/*
 * hp_linux.h - what the Linux-only files share beyond hp_platform.h: the
 * trace's descriptor, for the close() interposers (hp_interpose_fd.c).
 */
#ifndef HP_LINUX_H
#define HP_LINUX_H

#include "hp_platform.h"

/* The trace's descriptor, if it is open on the trace (not the program's to
 * close); else -1. */
int hp_file_kept_fd(void) HP_HIDDEN;
/* fd is that descriptor (a system call only when the number matches). */
int hp_file_keeps(int fd) HP_HIDDEN;

#endif
