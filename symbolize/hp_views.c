/*
 * hp_views.c - the table of views: a new view is a file and a line here.
 */
#include <string.h>

#include "hp_view.h"

extern const struct hp_view_ops hp_view_chrome;
extern const struct hp_view_ops hp_view_folded;
extern const struct hp_view_ops hp_view_speedscope;

const struct hp_view_ops *const hp_views[] = {
	&hp_view_chrome,
	&hp_view_folded,
	&hp_view_speedscope,
	NULL,
};

const struct hp_view_ops *hp_view_find(const char *name)
{
	for (size_t i = 0; hp_views[i]; i++)
		if (!strcmp(hp_views[i]->name, name))
			return hp_views[i];
	return NULL;
}
