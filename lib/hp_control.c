/*
 * hp_control.c - the control API of hookprof.h: pause and resume, named
 * regions, marks, values, stop and start, thread names. Each call becomes
 * a control word in the calling thread's event stream (hp_encode.h), in
 * order with its function events; names and texts are interned
 * (hp_strings.h), so an event carries an id and the trace holds the
 * string once. None of it touches the hooks' fast path.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define HOOKPROF_INTERNAL_
#include "../include/hookprof.h"

#include "hp_buffer.h"
#include "hp_format.h"
#include "hp_runtime.h"
#include "hp_strings.h"

/* Without the runtime running (not traced, a child not traced) every
 * call is a no-op; the first call may start it, as a first event would. */
static int tracing(void)
{
	return hp_runtime_ready() && !hp_tls.retired;
}

static uint32_t intern(const char *s)
{
	if (!s)
		s = "";
	return hp_strings_intern(s, strnlen(s, HP_STRING_BYTES - 1));
}

static void record_named(unsigned kind, const char *name)
{
	if (!tracing() || hp_tls.paused)
		return;
	uint32_t id = intern(name);
	if (id != HP_STRING_NONE)
		hp_buffer_control(hp_raw_control(kind, id));
}

HP_EXPORT void hookprof_pause(void)
{
	if (tracing())
		hp_buffer_pause_self();
}

HP_EXPORT void hookprof_resume(void)
{
	if (tracing())
		hp_buffer_unpause_self();
}

HP_EXPORT void hookprof_region_begin(const char *name)
{
	record_named(HP_RAW_REGION_BEGIN, name);
}

HP_EXPORT void hookprof_region_end(const char *name)
{
	record_named(HP_RAW_REGION_END, name);
}

/* A text longer than the bound keeps its start and ends in "...". */
static size_t format_mark(char *buf, size_t size, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, size, fmt ? fmt : "", ap);
	if (n < 0)
		return 0;
	if ((size_t)n < size)
		return (size_t)n;
	memcpy(buf + size - 4, "...", 4);
	return size - 1;
}

HP_EXPORT void hookprof_mark(const char *fmt, ...)
{
	if (!tracing() || hp_tls.paused)
		return;
	char text[HP_STRING_BYTES];
	va_list ap;
	va_start(ap, fmt);
	size_t len = format_mark(text, sizeof(text), fmt, ap);
	va_end(ap);
	uint32_t id = hp_strings_intern(text, len);
	if (id != HP_STRING_NONE)
		hp_buffer_control(hp_raw_control(HP_RAW_MARK, id));
}

HP_EXPORT void hookprof_value(const char *name, int64_t value)
{
	if (!tracing() || hp_tls.paused)
		return;
	uint32_t id = intern(name);
	if (id == HP_STRING_NONE)
		return;
	uint64_t v = (uint64_t)value, tag = (uint64_t)id << 32;
	hp_buffer_control(hp_raw_control(HP_RAW_VALUE_LO, tag | (v & 0xffffffffu)));
	hp_buffer_control(hp_raw_control(HP_RAW_VALUE_HI, tag | (v >> 32)));
}

HP_EXPORT int hookprof_stop(void)
{
	return tracing() ? hp_buffer_stop_all() : -1;
}

HP_EXPORT int hookprof_start(void)
{
	return tracing() ? hp_buffer_start_all() : -1;
}

HP_EXPORT void hookprof_thread_name(const char *name)
{
	if (!tracing())
		return;
	uint32_t id = intern(name);
	if (id == HP_STRING_NONE)
		return;
	hp_buffer_name_self(id);
}

/* Referenced by the hooks' object: a static link that takes the hooks
 * from libhookprof.a takes this API too (weak references alone, as
 * hookprof.h makes them, pull nothing out of an archive). */
HP_HIDDEN const char hp_control_linked = 1;
