/*
 * hp_diff.h - `hookprof diff OLD NEW`: the flat profiles of two sets of
 * runs side by side, per function, sorted by the change of self time.
 */
#ifndef HP_DIFF_H
#define HP_DIFF_H

/* argv[0] is "diff". Returns the exit status. */
int hp_diff_run(int argc, char **argv);

#endif
