/*
 * hp_viewcmd.h - the commands that run a view (hp_view.h) over traces:
 * tree, graph, replay and export, with the options and filters they share.
 */
#ifndef HP_VIEWCMD_H
#define HP_VIEWCMD_H

#include <getopt.h>
#include <stddef.h>

/* getopt_long's val of the filters (--thread, --depth, --function,
 * --exclude, --min, --time): hp_filter_set takes the option's name. */
#define HP_FILTER_OPT 'F'
/* What the filters do, for --help. */
extern const char hp_viewcmd_filter_help[];
/* own (ended by a zeroed entry) then the filters, into out: what every
 * command that takes the filters gives getopt_long. 0, or -1 if cap is
 * too small. */
int hp_viewcmd_options(const struct option *own, struct option *out, size_t cap);

/* command is a view's name, or "export" (the view is --format's); argv[0]
 * is the command. Returns the exit status. */
int hp_viewcmd_run(const char *command, int argc, char **argv);

#endif
