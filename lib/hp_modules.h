/*
 * hp_modules.h - the module map: every loaded module (hp_modules_each: ELF
 * objects with their PT_LOAD segments and GNU build-id, PE images with
 * their sections and CodeView identity) with its load address, so that
 * addresses can be symbolized after the process is gone.
 */
#ifndef HP_MODULES_H
#define HP_MODULES_H

#include "hp_platform.h"

/* Appends a MODULES record if the set of loaded objects changed since the
 * last one (or always, when force). Returns 0, or -1 if output failed. */
int hp_modules_write(int force) HP_HIDDEN;

#endif
