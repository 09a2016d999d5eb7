/* The lists of commands and benchmark groups: the one place a new one is added. */
#include "config.h"
#include "cli/bench.h"
#include "cli/command.h"
#include "cli/opts.h"

extern const struct command cmd_bench;
extern const struct command cmd_train;
extern const struct bench_case bench_collective;
extern const struct bench_case bench_mpi;
extern const struct bench_case bench_mpi_train;
extern const struct bench_case bench_train;
extern const struct bench_case bench_dp;
extern const struct bench_case bench_pp;
extern const struct bench_case bench_tp;
extern const struct bench_case bench_cp;
extern const struct bench_case bench_ep;
extern const struct bench_case bench_timeas;
extern const struct bench_case bench_window;
extern const struct command cmd_collective;
extern const struct command cmd_formats;
extern const struct bench_case bench_formats;
extern const struct command cmd_memory;
extern const struct command cmd_pipeline;
extern const struct command cmd_plan;
extern const struct command cmd_run;
extern const struct command cmd_progress;

const struct command *const commands[] = {
    &cmd_formats, &cmd_memory, &cmd_plan,     &cmd_pipeline, &cmd_collective,
    &cmd_train,   &cmd_run,    &cmd_progress, &cmd_bench,    NULL,
};

/* A command whose options are a table (cli/opts.h) puts it here too: its help ends with it. */
extern const struct opts_spec opts_formats, opts_pipeline, opts_run, opts_progress, opts_memory,
    opts_plan, opts_collective, opts_bench, opts_train;

const struct opts_spec *const command_opts[] = {
    &opts_formats, &opts_pipeline,   &opts_run,   &opts_progress, &opts_memory,
    &opts_plan,    &opts_collective, &opts_bench, &opts_train,    NULL,
};

const struct bench_case *const bench_cases[] = {
    &bench_formats,   &bench_collective, &bench_train, &bench_dp,     &bench_pp,
    &bench_tp,        &bench_cp,         &bench_ep,    &bench_timeas, &bench_mpi,
    &bench_mpi_train, &bench_window,     NULL,
};
