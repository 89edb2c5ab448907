/*
 * hp_viewcmd.h - the commands that run a view (hp_view.h) over traces:
 * tree, graph, replay and export, with the options and filters they share.
 */
#ifndef HP_VIEWCMD_H
#define HP_VIEWCMD_H

/* command is a view's name, or "export" (the view is --format's); argv[0]
 * is the command. Returns the exit status. */
int hp_viewcmd_run(const char *command, int argc, char **argv);

#endif
