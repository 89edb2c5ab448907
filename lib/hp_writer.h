/*
 * hp_writer.h - the consumer: takes published chunks, encodes them into
 * EVENTS records and appends them to the trace. In stream mode a writer
 * thread does this as chunks fill; otherwise (ring mode, no thread) it runs
 * on the thread that flushes. One lock serialises all encoding, so the
 * function dictionary and each stream's state see one order.
 */
#ifndef HP_WRITER_H
#define HP_WRITER_H

#include "hp_buffer.h"
#include "hp_platform.h"

/* The writer's state of one thread's stream (hp_thread.consumer), under
 * its lock. */
struct hp_writer_stream {
	struct hp_enc_stream enc;
	uint32_t next_seq;  /* chunk expected next; another means a gap */
	uint32_t announced; /* THREAD record written */
	uint64_t unfilled;  /* slots left out, never filled (HP_LOST_UNFILLED) */
	uint32_t resume_at; /* events of chunk next_seq written already (hp_writer.c) */
	struct hp_writer_stream *next_free;
};
/* t's, or NULL if the writer has not needed one yet (tests). */
const struct hp_writer_stream *hp_writer_stream_of(const struct hp_thread *t) HP_HIDDEN;

/* Allocates the encoder; until hp_writer_start the traced threads encode. */
int hp_writer_init(void) HP_HIDDEN;
/* Starts the writer thread. From then on it owns the output buffer, so
 * everything written outside writer_lock must be written before. */
void hp_writer_start(void) HP_HIDDEN;
int hp_writer_threaded(void) HP_HIDDEN;
/* An owner published a chunk: wake the writer thread if it sleeps. */
void hp_writer_notify(void) HP_HIDDEN;
/* Without a writer thread, at thread exit: retires the calling thread and
 * writes its chunks, under the lock that keeps a concurrent flush from
 * freeing it in between. */
void hp_writer_retire_and_drain(void) HP_HIDDEN;
/* Encodes t's published chunks on the calling thread. */
void hp_writer_drain(struct hp_thread *t) HP_HIDDEN;
/* The owner of a full ring (stream mode) encodes its own published
 * chunks, unless the writer thread is at work (it frees them soon),
 * waiting for the lock if another thread holds it: 1 if it freed any, 0
 * if it must wait for the writer. Called with asynchronous signals held,
 * as wherever a program thread takes writer_lock. */
int hp_writer_help(struct hp_thread *t) HP_HIDDEN;
/* The writer thread's pass over every ring holds the writer's lock: set
 * and cleared under it, read by owners without it (hp_writer_help). A
 * test that holds the lock as the writer at work sets it too. */
extern uint32_t hp_writer_at_work HP_HIDDEN;
/* Encodes every thread's published chunks and writes them out now. */
int hp_writer_flush_all(void) HP_HIDDEN; /* 0, or -1 if not written */
/* Every other thread, the writer's too, was ended from outside
 * (hp_runtime_on_exit_alone). What they share they changed under
 * writer_lock, so unless one died holding it what they left is whole, and
 * the calling thread takes the writer's place: 0. -1 if the lock stays
 * taken. */
int hp_writer_orphaned(void) HP_HIDDEN;
/* Stops the writer thread; -1 if it did not stop in time (in_signal only). */
int hp_writer_stop(int in_signal) HP_HIDDEN;
/* After hp_writer_stop: writes everything, then the END record. In a signal
 * handler (in_signal) it waits a bounded time for the lock. Frees nothing. */
int hp_writer_finish(int in_signal) HP_HIDDEN;
/* After fork: the child has no writer thread and must not write the parent's trace. */
void hp_writer_forget(void) HP_HIDDEN;

/*
 * Fork. Before it, the forking thread holds the lock (so that the encoder's
 * state it reads, and the child inherits, is whole): 0, or -1 if it could
 * not be had in time. hp_writer_open_frames: the addresses of t's open
 * frames as of the chunks encoded so far, outermost first, and how many
 * events of its oldest chunk not released are in them (one left at a
 * slot filled late, hp_writer.c). In the child,
 * hp_writer_reset_in_child forgets everything (a new trace, a new writer).
 */
int hp_writer_lock_for_fork(void) HP_HIDDEN;
void hp_writer_unlock_after_fork(void) HP_HIDDEN;
size_t hp_writer_open_frames(const struct hp_thread *t, uint64_t *frames, size_t max,
			     uint32_t *encoded_of_tail) HP_HIDDEN;
void hp_writer_reset_in_child(int whole) HP_HIDDEN;

/* Appends a MODULES record if objects were loaded or unloaded since the last. */
void hp_writer_modules_changed(void) HP_HIDDEN;

/* Appends a CLOCK record: one (tick, CLOCK_MONOTONIC_RAW) pair. */
void hp_writer_clock_record(void) HP_HIDDEN;
/* What a hook pair costs, measured now (hp_calibrate.h): a CALIBRATION
 * record, when = HP_CALIBRATION_START or _END. Nothing if it cannot be
 * measured (no TSC). */
void hp_writer_calibration_record(uint32_t when) HP_HIDDEN;
/* The filters of the run (hp_filter.h, HOOKPROF_MIN): a FILTER record now,
 * at the end, and when MIN's drops change; MIN is calibrated by the clock
 * records. cfg lives as long as the process. */
void hp_writer_filters(const struct hp_config *cfg) HP_HIDDEN;

#endif
