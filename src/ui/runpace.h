/* A run panel's run (the Lab's data-parallel run, panel_dprun.c; lesson 4's pipeline,
 * panel_pprun.c), paced by the screen: the engine of par/run.h started on the models and GPUs
 * the panels offer, the bars given every buffer of its setup before step 1, its steps allowed
 * a few at a time beyond the one shown, each finished step replayed from its events
 * (ui/runfeed.h) over a share of the screen's time, and the app's play, n, ticks and polls.
 *
 * The window never waits for the run. A new run is set up by its GPUs' threads while the
 * panel draws "setting up" (the bars growing as the buffers come) and the app polls
 * (PANEL_POLL, ui/panel.h); steps start only once every GPU has set up. A run being replaced
 * is told to stop and left to end on its own threads; the next one starts once it has (so two
 * runs' buffers are never on the host at once), whatever keys came meanwhile: sixty presses
 * of a key that restarts the run start at most two runs. n asks for a step and shows it when
 * a poll finds it done.
 *
 * The panel keeps what is its own (its settings, the calculator's figures, the drawing) and
 * says in a table what it does at the replay's moments: a step's records taken, the replay's
 * clock, each record passed, the step done; and what its settings are: whether two run the
 * same, its restart on its current ones, the event log's line saying so. The run panels'
 * common part is here: a lesson step's settings and the reset back to them, a restart only
 * when they change, a key refused (its note on screen until a step is replayed, its line in
 * the event log), the line of events missed. A panel checks a layout as a run does
 * (train_opts_check, par/strategies.h), adding only its own room (runpace_within).
 * Everything runs on the UI thread; the run's threads only write the feed. */
#ifndef SCALELAB_UI_RUNPACE_H
#define SCALELAB_UI_RUNPACE_H

#include <stdbool.h>

#include "base/error.h"
#include "calc/memory.h"
#include "calc/preset.h"
#include "num/fp.h"
#include "par/run.h"
#include "sim/spec.h"
#include "ui/runfeed.h"
#include "ui/timeline.h"

struct eventlog;
struct panel_env;
struct panel_event;
struct ui_canvas;

/* What a panel does at the replay's moments (panel: the panel's state). */
struct runpace_ops {
    const char *name; /* the panel's, before a failure in the event log: "dprun" */
    const char *tag;  /* before its other lines there: "run", "ring", "experts" */
    double replay_s;  /* wall seconds one step's replay takes at 1x */
    /* A step is about to be replayed: its records are feed.rep, its span feed.t0 to t1. */
    void (*begin)(void *panel);
    /* The simulated time shown when a share frac (0 to 1) of the replay has gone by; NULL:
     * in proportion to simulated time. */
    double (*clock)(const void *panel, double frac);
    /* Each record the replay passes, in time order (a memory record is already in its GPU's
     * ledger); may be NULL. */
    void (*record)(void *panel, const struct runrec *r);
    /* The step is replayed: each ledger exact, the step in last, counted in shown. */
    void (*end)(void *panel);
    /* The panel's settings (a struct of `settings` bytes, its current ones at runpace_init's
     * cur, a lesson step's at start): whether two run the same; the run restarted on the
     * current ones; the event log's line saying so. */
    size_t settings;
    bool (*same)(const void *a, const void *b);
    void (*restart)(void *panel);
    void (*say_restart)(void *panel);
};

/* The models a run panel trains, by number: tiny, small. */
extern const char *const runpace_model_names[2];

struct runpace {
    const struct runpace_ops *ops;
    void *panel;
    void *cur, *start; /* the panel's settings: running, and a lesson step's */
    struct eventlog *log;
    char note[ERROR_MAX]; /* why a key did not do what it was asked (until a step is replayed) */
    /* the models (as presets, and as the tiny GPT trains them) and the GPUs (h100-80gb) */
    struct model_shape models[2];
    struct gpt_config shapes[2];
    struct cluster_spec spec;
    /* the run: NULL when stopped, err saying why when it failed or could not start; its
     * settings (those of the last runpace_start) */
    struct run *run;
    struct train_opts o;     /* its options */
    struct runfeed_tap *tap; /* its way into the feed */
    bool launched;           /* its threads started (once no run was stopping) */
    bool ready;              /* every GPU has set up (its buffers are in the ledgers) */
    int waiting;             /* GPUs set up so far (at the last poll) */
    double floor;            /* the data's loss floor (run_loss_floor), once ready */
    /* the run before, stopping on its own threads: the next one starts once it has ended */
    struct run *old;
    struct runfeed_tap *old_tap;
    struct runfeed feed; /* the GPUs' events, the step replayed, each GPU's ledger */
    char err[ERROR_MAX];
    long shown, allowed;  /* steps replayed; steps the run may start */
    int steps_wanted;     /* steps n asked for, not done yet */
    struct run_step last; /* the last step replayed */
    /* the step being replayed */
    bool replaying;
    struct run_step rs;
    double frac;      /* the share of its replay gone by */
    double tc, tprev; /* the simulated time shown, and at the frame before (INFINITY: none) */
    bool check_only;  /* the panel's settings are only checked: runpace_start starts nothing
                         (and returns -1, err left empty) */
    /* the time: the model the runs stand for (RUNPACE_TIME_AS, when its preset loads); the
     * run of runpace_time timed as it (the spec it runs on) or, untimed, why not */
    struct model_shape as;
    bool have_as, timed;
    struct cluster_spec timed_spec;
    size_t bucket; /* the run's gradient bucket (0: MEMORY_BUCKET), MODEL's when timed */
    char untimed[ERROR_MAX];
    /* the last step replayed as a timeline's spans (compute and sends), and its span */
    struct timeline_span *spans;
    size_t nspans, capspans;
    double span_t0, span_t1;
};

/* The model the run panels' runs are timed as: the lessons' running example. */
#define RUNPACE_TIME_AS "synthetic-7b"

/* Loads the models and the GPUs, and the feed; the panel's ops and state, its settings (cur,
 * start: ops->settings bytes each) and its environment (the event log, check only). */
int runpace_init(struct runpace *r, const struct runpace_ops *ops, void *panel, void *cur,
                 void *start, const struct panel_env *env, struct error *e);
void runpace_fini(struct runpace *r);

/* The run on the panel's current settings, which are also the lesson step's: the first. */
void runpace_first(struct runpace *r);
/* The run on settings s, which become the current ones: restarted unless it already runs on
 * them and has not moved on (a lesson step's settings come one by one); whether it was. */
bool runpace_run_on(struct runpace *r, const void *s);
/* A lesson step's setting, read into s (a copy of the step's settings): s becomes the step's,
 * and the run runs on it. 0. */
int runpace_set(struct runpace *r, const void *s);
/* A key changed the current settings: the note what the key had to change beside (NULL: none),
 * the run restarted and said. Its answer to the app. */
int runpace_rekeyed(struct runpace *r, const char *note);
/* A key refused: its note (printf's format) on screen until a step is replayed and in the
 * event log. Its answer to the app. */
int runpace_refuse(struct runpace *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The app's events to a run panel: a reset back to the lesson step's settings (restarting and
 * saying so when they differ), then runpace_on_event's. */
int runpace_panel_event(struct runpace *r, const struct panel_event *ev);

/* A window run's options: model m (0 tiny, 1 small), precision, global batch, GPUs; the
 * panel adds its layout. */
void runpace_options(const struct runpace *r, int m, enum fp_format prec, int batch, int gpus,
                     struct train_opts *o);
/* The run of o (its layout complete) timed as RUNPACE_TIME_AS where the engine times it
 * (timeas_scale, par/timeas.h, for the run of model `run`): r->timed, o's gradient bucket
 * MODEL's (the calculator's figures for the run, through runpace_options, then take it too),
 * and runpace_start runs on the timed spec; else r->untimed says why not (the engine's words)
 * and the run is timed as itself. After runpace_clear, before the panel's calculator. */
void runpace_time(struct runpace *r, struct train_opts *o, const struct model_shape *run);
/* The line saying how the run is timed, on row y: "timed as synthetic-7b on 8 h100-80gb", or
 * "timed as itself" and why not as the model, as much as the width holds. */
void runpace_draw_timing(const struct runpace *r, struct ui_canvas *c, int y);
/* The last step replayed as a timeline (ui/timeline.h) from row y in rows rows: a line of its
 * totals (the step, GPU 0's compute and exposed communication), then each GPU's two rows as
 * many as fit, the axis and legend; "the timeline: after a step" before one. The rows drawn. */
int runpace_draw_timeline(const struct runpace *r, struct ui_canvas *c, int y, int rows);

/* Tells the run to stop and forgets it (it ends on its own threads): nothing shown, no error,
 * every ledger 0. */
void runpace_clear(struct runpace *r);
/* Starts the run of o (after runpace_clear), paced: nothing runs until the screen allows a
 * step, and no step before every GPU has set up and waits at its first step's gate
 * (run_waiting); the polls take the memory events of that setup as they come, so the bars
 * show every buffer before step 1, the same every time. The run starts now, or once the run
 * before it has ended. 0, or -1 with err said (options the engine refuses). */
int runpace_start(struct runpace *r, const struct train_opts *o);
/* The run started (or is to start) and no step allowed yet: a restart on the same settings
 * changes nothing. */
bool runpace_fresh(const struct runpace *r);

/* A lesson's settings of a run panel: the model (tiny or small, as its number), a whole
 * number from lo to hi; 0, or ERR_INVAL with an error naming the setting. A run's setting is
 * read by its table (settings_set, par/settings.h), then held to the panel's room
 * (runpace_within: v from lo to hi). */
int runpace_set_model(const char *value, int *m, struct error *e);
int runpace_set_int(const char *name, const char *value, int lo, int hi, int *out, struct error *e);
int runpace_within(const char *name, int v, int lo, int hi, struct error *e);

/* The largest global batch a run panel takes. */
#define RUNPACE_MAX_BATCH 64

/* The app's play, pause, n, ticks and polls: the panel's on_event, after the panel has
 * restarted its run for r (PANEL_RESET) where its settings or runpace_fresh say so. */
int runpace_on_event(struct runpace *r, const struct panel_event *ev);

/* How long the training panel's n waits for the step it shows (the run panels never wait:
 * a poll shows the step when it is done): as long as a step takes, on a slow machine too (a
 * key acts on the next step shown, which must then be the one n asked for). */
#define RUNPACE_STEP_WAIT_S 120.0

/* The window's wait for a run's next step record (run_next): at most timeout_s, and never
 * past a signal that ends the window (term_signal), which it polls. */
int runpace_next(struct run *run, struct run_step *out, double timeout_s);

/* The note a refused key left, on row y, while no step is replayed; events the feed missed
 * (the bars may be off), on row y. Each: whether it drew its line. */
bool runpace_draw_note(const struct runpace *r, struct ui_canvas *c, int y);
bool runpace_draw_missed(const struct runpace *r, struct ui_canvas *c, int y);

/* The line saying the step shown at row y: the one being replayed and its simulated time, or
 * the last one's loss, or the setup going on, or (none yet) idle. */
void runpace_draw_step(const struct runpace *r, struct ui_canvas *c, int y, const char *idle);

/* The ledgers against the calculator's figures for each GPU's stage (per_stage, as
 * runfeed_verdict takes them), once a step is replayed. In the event log: "TAG: WHAT: every
 * ledger = the calculator, to the byte" (for its stage, with pipeline stages), or the first
 * part that differs and on which GPU, with both figures. On row y: "ledger = calc, all N
 * GPUs" or "GPU g: PART differs from calc"; false (nothing drawn) before a step. */
void runpace_say_verdict(const struct runpace *r, const struct memory_result *per_stage,
                         const char *tag, const char *what);
bool runpace_draw_verdict(const struct runpace *r, struct ui_canvas *c, int y,
                          const struct memory_result *per_stage);

/* GPU g's ledger from row y at column x, w wide, as it is replayed: memui's stacked bar (to
 * scale bytes across) in w - lw cells, then its total in lw (11 or more: in binary units; fewer:
 * runfeed_bytes's; 0: none). */
void runpace_draw_ledger(const struct runpace *r, struct ui_canvas *c, int y, int x, int w, int lw,
                         int g, double scale);
/* The bytes of one kind GPU 0 sent in the step shown (sent[g], each GPU's), or before a step the
 * calculator's, on row y after label ("ring B/step"); then whether every GPU's equals the
 * calculator's figure predicted ("each = calc", "!= calc"), or "(calc)" before a step. */
void runpace_draw_sent(const struct runpace *r, struct ui_canvas *c, int y, const char *label,
                       const uint64_t *sent, double predicted);

#endif
