/*
 * check_config.c - HOOKPROF_* settings: sizes, and hp_config_read with a
 * fake environment.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hp_config.h"
#include "testkit.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *const *fake_env;

static char *fake_getenv(const char *name)
{
	for (const char *const *e = fake_env; e && e[0]; e += 2)
		if (!strcmp(e[0], name))
			return (char *)e[1];
	return NULL;
}

static struct hp_config cfg;
static char err[256];

static int read_env(const char *const *env)
{
	fake_env = env;
	strcpy(err, "untouched");
	memset(&cfg, 0x5a, sizeof(cfg));
	return hp_config_read(&cfg, fake_getenv, 0, err, sizeof(err));
}

/* ---------------------------------------------------------------- core */

START_TEST(test_parse_size_units)
{
	ck_assert_uint_eq(hp_config_parse_size("8M"), 8u << 20);
	ck_assert_uint_eq(hp_config_parse_size("512K"), 512u << 10);
	ck_assert_uint_eq(hp_config_parse_size("1G"), 1u << 30);
	ck_assert_uint_eq(hp_config_parse_size("65536"), 65536);
	ck_assert_uint_eq(hp_config_parse_size("8MiB"), 8u << 20);
	ck_assert_uint_eq(hp_config_parse_size("8m"), 8u << 20);
	ck_assert_uint_eq(hp_config_parse_size("512k"), 512u << 10);
	ck_assert_uint_eq(hp_config_parse_size("2g"), 2ul << 30);
	ck_assert_uint_eq(hp_config_parse_size("4KB"), 4096);
	ck_assert_uint_eq(hp_config_parse_size("1KiB"), 1024);
}
END_TEST

START_TEST(test_parse_size_rejects)
{
	ck_assert_uint_eq(hp_config_parse_size("x"), 0);
	ck_assert_uint_eq(hp_config_parse_size(""), 0);
	ck_assert_uint_eq(hp_config_parse_size("-1"), 0);
	ck_assert_uint_eq(hp_config_parse_size(NULL), 0);
	ck_assert_uint_eq(hp_config_parse_size("8X"), 0);
	ck_assert_uint_eq(hp_config_parse_size("8 M"), 0);
	ck_assert_uint_eq(hp_config_parse_size(" 8M"), 0);
	ck_assert_uint_eq(hp_config_parse_size("+8M"), 0);
	ck_assert_uint_eq(hp_config_parse_size("8MM"), 0);
	ck_assert_uint_eq(hp_config_parse_size("8Mx"), 0);
	ck_assert_uint_eq(hp_config_parse_size("8iB"), 0);
	ck_assert_uint_eq(hp_config_parse_size("1.5M"), 0);
}
END_TEST

START_TEST(test_parse_size_overflow)
{
	/* larger than strtoull can hold */
	ck_assert_uint_eq(hp_config_parse_size("99999999999999999999999"), 0);
	ck_assert_uint_eq(hp_config_parse_size("18446744073709551615"), 0);
	/* fits in 64 bits only before the shift */
	ck_assert_uint_eq(hp_config_parse_size("17592186044416G"), 0);
	ck_assert_uint_eq(hp_config_parse_size("18446744073709551615K"), 0);
	/* the largest size read is 64G (HP_SIZE_MAX_PARSED) */
	ck_assert_uint_eq(hp_config_parse_size("64G"), HP_SIZE_MAX_PARSED);
	ck_assert_uint_eq(hp_config_parse_size("65536M"), HP_SIZE_MAX_PARSED);
	ck_assert_uint_eq(hp_config_parse_size("65G"), 0);
	ck_assert_uint_eq(hp_config_parse_size("68719476737"), 0);
}
END_TEST

START_TEST(test_read_defaults)
{
	static const char *const env[] = { NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
	ck_assert_uint_eq(cfg.buffer_bytes, 8u << 20);
	ck_assert_ptr_null(cfg.output);
	ck_assert_int_eq(cfg.force_monotonic, 0);
	ck_assert_int_eq(cfg.off, 0);
	ck_assert_str_eq(err, "untouched");
}
END_TEST

START_TEST(test_read_all_set)
{
	static const char *const env[] = { "HOOKPROF_MODE", "ring",
					   "HOOKPROF_BUFFER", "512K",
					   "HOOKPROF_OUTPUT", "/tmp/x-%p.hookprof",
					   "HOOKPROF_CLOCK", "monotonic",
					   NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.mode, HP_MODE_RING);
	ck_assert_uint_eq(cfg.buffer_bytes, 512u << 10);
	ck_assert_str_eq(cfg.output, "/tmp/x-%p.hookprof");
	ck_assert_int_eq(cfg.force_monotonic, 1);
}
END_TEST

START_TEST(test_read_mode_ring)
{
	static const char *const env[] = { "HOOKPROF_MODE", "ring", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.mode, HP_MODE_RING);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
}
END_TEST

START_TEST(test_read_mode_stream)
{
	static const char *const env[] = { "HOOKPROF_MODE", "stream", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
}
END_TEST

START_TEST(test_read_bad_mode)
{
	static const char *const env[] = { "HOOKPROF_MODE", "fast", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
	ck_assert_str_eq(err, "HOOKPROF_MODE='fast' is not 'stream' or 'ring'; using stream");
	ck_assert_ptr_null(strchr(err, '\n'));
	/* the other settings are still read */
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
}
END_TEST

START_TEST(test_read_buffer_too_small)
{
	static const char *const env[] = { "HOOKPROF_BUFFER", "64K", "HOOKPROF_MODE", "ring", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
	ck_assert_str_eq(err, "HOOKPROF_BUFFER='64K' is not a size of at least 128K; using 8M");
	ck_assert_int_eq(cfg.mode, HP_MODE_RING);
}
END_TEST

START_TEST(test_read_buffer_minimum)
{
	static const char *const env[] = { "HOOKPROF_BUFFER", "128K", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_MIN);
}
END_TEST

START_TEST(test_read_clock_monotonic)
{
	static const char *const env[] = { "HOOKPROF_CLOCK", "monotonic", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.force_monotonic, 1);
	static const char *const tsc[] = { "HOOKPROF_CLOCK", "tsc", NULL };
	ck_assert_int_eq(read_env(tsc), 0);
	ck_assert_int_eq(cfg.force_monotonic, 0);
}
END_TEST

START_TEST(test_parse_duration_units)
{
	ck_assert_uint_eq(hp_config_parse_duration("500ns"), 500);
	ck_assert_uint_eq(hp_config_parse_duration("10us"), 10000);
	ck_assert_uint_eq(hp_config_parse_duration("1ms"), 1000000);
	ck_assert_uint_eq(hp_config_parse_duration("2s"), 2000000000ull);
	ck_assert_uint_eq(hp_config_parse_duration("750"), 750);
	ck_assert_uint_eq(hp_config_parse_duration("0"), 0);
}
END_TEST

START_TEST(test_read_filters_set)
{
	static const char *const env[] = { "HOOKPROF_EXCLUDE", "^leaf$,ns::Cls", "HOOKPROF_INCLUDE", "work",
					   "HOOKPROF_DEPTH", "3", "HOOKPROF_MIN", "10us", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_str_eq(cfg.exclude, "^leaf$,ns::Cls");
	ck_assert_str_eq(cfg.include, "work");
	ck_assert_uint_eq(cfg.depth, 3);
	ck_assert_uint_eq(cfg.min_ns, 10000);
}
END_TEST

START_TEST(test_read_filters_unset)
{
	static const char *const env[] = { "HOOKPROF_EXCLUDE", "", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_ptr_null(cfg.exclude);
	ck_assert_ptr_null(cfg.include);
	ck_assert_uint_eq(cfg.depth, 0);
	ck_assert_uint_eq(cfg.min_ns, 0);
}
END_TEST

START_TEST(test_filter_names_known)
{
	char *env[] = { "HOOKPROF_EXCLUDE=a", "HOOKPROF_INCLUDE=b", "HOOKPROF_DEPTH=2", "HOOKPROF_MIN=1us", NULL };
	ck_assert_int_eq(hp_config_check_names(env, err, sizeof(err)), 0);
}
END_TEST

/* ---------------------------------------------------------------- limits */

START_TEST(test_parse_duration_rejects)
{
	ck_assert_uint_eq(hp_config_parse_duration(""), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("ms"), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("-1ms"), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("1 ms"), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("1min"), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("99999999999999999999s"), UINT64_MAX);
	ck_assert_uint_eq(hp_config_parse_duration("9999999999999s"), UINT64_MAX);
}
END_TEST

START_TEST(test_read_bad_depth_ignored)
{
	static const char *const bad[] = { "0", "-2", "3x", "129", "deep" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *const env[] = { "HOOKPROF_DEPTH", bad[i], NULL };
		ck_assert_int_eq(read_env(env), -1);
		ck_assert_uint_eq(cfg.depth, 0);
		ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_DEPTH"));
	}
}
END_TEST

START_TEST(test_read_bad_min_ignored)
{
	static const char *const env[] = { "HOOKPROF_MIN", "10 us", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_uint_eq(cfg.min_ns, 0);
	ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_MIN='10 us'"));
}
END_TEST


START_TEST(test_read_empty_values)
{
	static const char *const env[] = { "HOOKPROF_MODE", "", "HOOKPROF_BUFFER", "",
					   "HOOKPROF_OUTPUT", "", "HOOKPROF_CLOCK", "", NULL };
	ck_assert_int_eq(read_env(env), 0);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
	ck_assert_ptr_null(cfg.output);
	ck_assert_int_eq(cfg.force_monotonic, 0);
}
END_TEST

START_TEST(test_read_bad_clock)
{
	static const char *const env[] = { "HOOKPROF_CLOCK", "hpet", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_int_eq(cfg.force_monotonic, 0);
	ck_assert_str_eq(err, "HOOKPROF_CLOCK='hpet' is not 'tsc' or 'monotonic'; using tsc");
}
END_TEST

START_TEST(test_read_buffer_not_a_size)
{
	static const char *const bad[][3] = { { "HOOKPROF_BUFFER", "lots", NULL },
					      { "HOOKPROF_BUFFER", "-8M", NULL },
					      { "HOOKPROF_BUFFER", "0", NULL } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(read_env(bad[i]), -1);
		ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
		ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_BUFFER='"));
	}
}
END_TEST

START_TEST(test_read_buffer_capped)
{
	/* every thread maps its buffer: 64G each is refused, 1G taken instead */
	static const char *const big[] = { "HOOKPROF_BUFFER", "64G", "HOOKPROF_MODE", "ring", NULL };
	ck_assert_int_eq(read_env(big), -1);
	ck_assert_uint_eq(cfg.buffer_bytes, 1ul << 30);
	ck_assert_str_eq(err, "HOOKPROF_BUFFER='64G' is more than 1G per thread; using 1G");
	ck_assert_int_eq(cfg.mode, HP_MODE_RING);
	static const char *const max[] = { "HOOKPROF_BUFFER", "1G", NULL };
	ck_assert_int_eq(read_env(max), 0);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_MAX);
	static const char *const over[] = { "HOOKPROF_BUFFER", "1025M", NULL };
	ck_assert_int_eq(read_env(over), -1);
	ck_assert_uint_eq(cfg.buffer_bytes, 1ul << 30);
}
END_TEST

START_TEST(test_read_buffer_too_large_said_so)
{
	/* 1T is a size, only too large: said so, not "not a size" */
	static const char *const huge[][3] = { { "HOOKPROF_BUFFER", "1T", NULL },
					       { "HOOKPROF_BUFFER", "65G", NULL },
					       { "HOOKPROF_BUFFER", "99999999999999999999999", NULL } };
	for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
		ck_assert_int_eq(read_env(huge[i]), -1);
		ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_MAX);
		ck_assert_ptr_nonnull(strstr(err, "' is more than 1G per thread; using 1G"));
	}
	ck_assert_str_eq(err, "HOOKPROF_BUFFER='99999999999999999999999' is more than 1G per thread; using 1G");
}
END_TEST

START_TEST(test_read_buffer_binary_units)
{
	/* 8MB and 8MiB mean 8 << 20, deliberately */
	static const char *const units[][3] = { { "HOOKPROF_BUFFER", "8MB", NULL },
						{ "HOOKPROF_BUFFER", "8MiB", NULL },
						{ "HOOKPROF_BUFFER", "8192KiB", NULL } };
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		ck_assert_int_eq(read_env(units[i]), 0);
		ck_assert_uint_eq(cfg.buffer_bytes, 8u << 20);
	}
}
END_TEST

START_TEST(test_check_names_unknown)
{
	char *env[] = { "PATH=/bin", "HOOKPROF_OUTPUT=x", "HOOKPROF_BUFER=8M", "HOOKPROF_MODE=ring", NULL };
	ck_assert_int_eq(hp_config_check_names(env, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "unknown variable HOOKPROF_BUFER in the environment (did you mean HOOKPROF_BUFFER?); ignored");
	char *env2[] = { "HOOKPROF_OUTPT=", NULL };
	ck_assert_int_eq(hp_config_check_names(env2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_OUTPT in the environment (did you mean HOOKPROF_OUTPUT?)"));
}
END_TEST

START_TEST(test_check_names_known)
{
	char *env[] = { "HOOKPROF_OUTPUT=x", "HOOKPROF_BUFFER=8M", "HOOKPROF_CLOCK=tsc", "HOOKPROF_MODE=",
			"HOOKPROF_LIB=/x", "HOOKPROF_DEBUG_PATH=/y", "HOOKPROFX=1", "XHOOKPROF_Y=1", NULL };
	strcpy(err, "untouched");
	ck_assert_int_eq(hp_config_check_names(env, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "untouched");
	ck_assert_int_eq(hp_config_check_names(NULL, err, sizeof(err)), 0);
}
END_TEST

START_TEST(test_check_names_long)
{
	static char name[600];
	memset(name, 'A', sizeof(name) - 1);
	memcpy(name, "HOOKPROF_", 9);
	char *env[] = { name, NULL };
	ck_assert_int_eq(hp_config_check_names(env, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "unknown variable HOOKPROF_AAA"));
}
END_TEST

/* Counts the variables asked for: a secure run must read none. */
static int asked;

static char *counting_getenv(const char *name)
{
	asked++;
	return fake_getenv(name);
}

START_TEST(test_read_secure_execution_not_traced)
{
	static const char *const env[] = { "HOOKPROF_OUTPUT", "/etc/cron.d/x", "HOOKPROF_MODE", "ring", NULL };
	fake_env = env;
	asked = 0;
	memset(&cfg, 0x5a, sizeof(cfg));
	ck_assert_int_eq(hp_config_read(&cfg, counting_getenv, 1, err, sizeof(err)), -1);
	ck_assert_int_eq(cfg.off, 1);
	ck_assert_ptr_null(cfg.output);
	ck_assert_int_eq(asked, 0);
	ck_assert_str_eq(err, "set-user-ID or set-group-ID program run by another user: this run is not traced");
	/* not secure: traced, and the variables are read */
	ck_assert_int_eq(hp_config_read(&cfg, counting_getenv, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(cfg.off, 0);
	ck_assert_str_eq(cfg.output, "/etc/cron.d/x");
	ck_assert_int_gt(asked, 0);
}
END_TEST

START_TEST(test_read_case_sensitive_mode)
{
	static const char *const env[] = { "HOOKPROF_MODE", "RING", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
}
END_TEST

START_TEST(test_read_several_errors)
{
	/* each bad variable falls back alone; the good one still applies */
	static const char *const env[] = { "HOOKPROF_MODE", "x", "HOOKPROF_BUFFER", "1",
					   "HOOKPROF_CLOCK", "monotonic", NULL };
	ck_assert_int_eq(read_env(env), -1);
	ck_assert_int_eq(cfg.mode, HP_MODE_STREAM);
	ck_assert_uint_eq(cfg.buffer_bytes, HP_BUFFER_DEFAULT);
	ck_assert_int_eq(cfg.force_monotonic, 1);
	ck_assert_ptr_nonnull(strstr(err, "HOOKPROF_"));
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(test_read_small_err_buffer)
{
	static const char *const env[] = { "HOOKPROF_MODE", "a-very-long-and-wrong-mode-name", NULL };
	char small[8];
	memset(small, 'z', sizeof(small));
	fake_env = env;
	ck_assert_int_eq(hp_config_read(&cfg, fake_getenv, 0, small, sizeof(small)), -1);
	ck_assert_str_eq(small, "HOOKPRO");
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *core = tcase_create("core");
	tcase_add_test(core, test_parse_size_units);
	tcase_add_test(core, test_parse_size_rejects);
	tcase_add_test(core, test_parse_size_overflow);
	tcase_add_test(core, test_read_defaults);
	tcase_add_test(core, test_read_all_set);
	tcase_add_test(core, test_read_mode_ring);
	tcase_add_test(core, test_read_mode_stream);
	tcase_add_test(core, test_read_bad_mode);
	tcase_add_test(core, test_read_buffer_too_small);
	tcase_add_test(core, test_read_buffer_minimum);
	tcase_add_test(core, test_read_clock_monotonic);
	tcase_add_test(core, test_read_buffer_binary_units);
	tcase_add_test(core, test_check_names_unknown);
	tcase_add_test(core, test_check_names_known);
	tcase_add_test(core, test_parse_duration_units);
	tcase_add_test(core, test_read_filters_set);
	tcase_add_test(core, test_read_filters_unset);
	tcase_add_test(core, test_filter_names_known);
	suite_add_tcase(s, core);
	TCase *limits = tcase_create("limits");
	tcase_add_test(limits, test_read_empty_values);
	tcase_add_test(limits, test_read_bad_clock);
	tcase_add_test(limits, test_read_buffer_not_a_size);
	tcase_add_test(limits, test_read_buffer_capped);
	tcase_add_test(limits, test_read_buffer_too_large_said_so);
	tcase_add_test(limits, test_check_names_long);
	tcase_add_test(limits, test_read_secure_execution_not_traced);
	tcase_add_test(limits, test_read_case_sensitive_mode);
	tcase_add_test(limits, test_read_several_errors);
	tcase_add_test(limits, test_read_small_err_buffer);
	tcase_add_test(limits, test_parse_duration_rejects);
	tcase_add_test(limits, test_read_bad_depth_ignored);
	tcase_add_test(limits, test_read_bad_min_ignored);
	suite_add_tcase(s, limits);
	return s;
}

int main(void)
{
	return tk_run_suite(config_suite());
}
