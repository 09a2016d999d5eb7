/* Writers of a run's events: Chrome trace-event JSON for Perfetto (ui.perfetto.dev) and
 * JSON lines.
 *
 * The Chrome trace has one process per GPU ("GPU 3") with its tracks: compute, send, receive
 * (a mark at each arrival), and compute on streams 1-3; a flow arrow for each hop from the send
 * slice to the receive mark; a "memory" counter per GPU (its total) and an "activations" one
 * (the bytes of that category, drawn when it changes); instants for out of memory, failures,
 * non-finite values and training steps. Timestamps are simulated microseconds. It is written to a
 * temporary file in the same folder and renamed, so a reader never sees half a file. */
#ifndef SCALELAB_SIM_TRACE_H
#define SCALELAB_SIM_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "sim/event.h"

struct error;

int trace_write_chrome(const char *path, const struct event *ev, size_t n, int gpus,
                       struct error *e);

/* One JSON object per line: {"type":..,"device":..,"t":..,...} with the fields of its type. */
void trace_write_jsonl(FILE *f, const struct event *ev, size_t n);

#endif
