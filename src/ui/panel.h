/* A live panel: the right-hand side of the window. Each panel is a table of operations in
 * its own file (src/ui/panel_NAME.c exporting `const struct panel_ops panel_NAME`), listed
 * once in ui_panels[] in src/ui/panels.c. A lesson step shows a panel by its name and passes
 * it settings: "@panel formats value=65504 format=fp16" in a .lesson file calls set() with
 * ("value", "65504") and ("format", "fp16") each time the step is shown.
 *
 * Adding a panel:
 *   1. write src/ui/panel_NAME.c (the template: panel_formats.c), add it to src/ui/local.mk;
 *   2. put `&panel_NAME` in ui_panels[] (src/ui/panels.c), replacing the placeholder of
 *      the same name if there is one; a tab's default panel is named in ui_tabs[] there.
 *
 * A tab keeps every panel it has shown open, with its state, until the window closes: a step
 * makes its own panel the live one (and applies its settings), and the app's key v swaps the
 * live panel among the panels the tab's lesson names (lesson 1: formats and training), each
 * as it was left. A panel that is not live gets no keys and no ticks (PANEL_PAUSE when it was
 * playing), and is neither drawn nor freed; its fini runs when the window closes.
 *
 * The rules (the app relies on them):
 *   - on_key and on_event change the state and return PANEL_* flags; they never draw.
 *   - draw draws the state into the canvas it is given (src/ui/draw.h) and nothing else;
 *     the app calls it whenever it redraws the frame, one doupdate() per frame.
 *   - A panel that follows a running engine reads the engine's snapshot in on_event
 *     (PANEL_TICK), and draws from its own copy; it never blocks.
 *   - The app keeps its own keys (help_app_key in ui/help.h: digits, L, Tab, [ ], J K, PgUp
 *     PgDn, space, n, + = -, r, a, v, ?, q, Esc, G, A) and gives every other key to the
 *     panel first, except while the help or a question is open; while the panel edits text
 *     in an input field it gets every key until Enter or Esc. A panel starts with no field
 *     open, returns 0 for keys it does not use (the app then says the key does nothing), and
 *     says in the event log why it refuses one it uses (a knob at its bound).
 *   - An input field shows the text cursor (canvas_cursor in draw); while it does, the hint
 *     line shows the editing keys (Enter, Esc) instead of the app's.
 *   - Panel code runs on the UI thread. Threads an engine starts should block SIGINT,
 *     SIGTERM, SIGHUP and SIGWINCH (pthread_sigmask): signals belong to the UI thread. (The
 *     window copes if one does not: its handlers wake the UI thread through a pipe.)
 *   - The app sleeps in its input wait unless something plays: it sends PANEL_TICK (about 20
 *     a second) only after a handler returned PANEL_ANIMATE (from on_key too, e.g. a key that
 *     starts a run), and until a tick returns without it.
 *   - Work that takes longer than a frame (a run of 64 thread-GPUs, a model's buffers set up)
 *     never runs in a handler: the handler starts it on other threads and returns, and the
 *     panel draws what it has meanwhile ("setting up", "running"). After the keys and ticks
 *     of each turn of its loop, and whenever a panel becomes the live one, the app sends the
 *     live panel PANEL_POLL; a poll that returns PANEL_BUSY is repeated every frame until one
 *     returns without it. So a key is answered within a frame whatever it started, and keys
 *     pressed meanwhile change what the work is for rather than queueing behind it. */
#ifndef SCALELAB_UI_PANEL_H
#define SCALELAB_UI_PANEL_H

#include <stdbool.h>

struct error;
struct eventlog;
struct ui_canvas;

/* What on_key and on_event return (or-ed together; 0: the key was not the panel's). */
enum {
    PANEL_HANDLED = 1 << 0, /* the key was the panel's: the app does nothing else with it
                             * (a key the panel refuses is its too: it says why in the log) */
    PANEL_REDRAW = 1 << 1,  /* the panel's picture changed */
    PANEL_QUIT = 1 << 2,    /* leave the window */
    PANEL_ANIMATE = 1 << 3, /* something moves: send ticks (until a tick returns without it) */
    PANEL_BUSY = 1 << 4,    /* PANEL_POLL: work goes on elsewhere; poll again next frame */
};

enum panel_event_kind {
    PANEL_PLAY,  /* space: start playing; return PANEL_ANIMATE if something can move, or
                  * PANEL_HANDLED when nothing can and the panel said why (else the app
                  * says "nothing plays here") */
    PANEL_PAUSE, /* space again, or leaving the tab */
    PANEL_TICK,  /* while playing, each frame (about 20 a second): dt simulated seconds */
    PANEL_STEP,  /* n: one step of whatever plays, while paused */
    PANEL_RESET, /* r: back to the panel's starting state (and the step's settings) */
    PANEL_POLL,  /* take what work started elsewhere has done: PANEL_REDRAW if the picture
                  * changed, PANEL_BUSY while some is still going on */
};

struct panel_event {
    enum panel_event_kind kind;
    double dt;    /* PANEL_TICK: wall seconds since the last tick times the speed */
    double speed; /* the speed the user chose with + and - (1 = real time) */
};

/* A key the panel uses, for the help overlay (and, when brief is set, the hint line). */
struct panel_key {
    const char *keys;  /* "Up/Down j/k" (ASCII) */
    const char *what;  /* "select a format" */
    const char *brief; /* "format", or NULL: not in the hint line */
};

/* What the app lends a panel. */
struct panel_env {
    const struct panel_ops *self; /* the panel's own table (its name, about text) */
    struct eventlog *log;         /* add a line to the latest events: eventlog_add(log, ...) */
    bool ascii;                   /* draw with ASCII only (theme_glyphs() knows it too) */
    bool check_only; /* settings are only checked (scalelab run): start no run, measure nothing */
};

struct panel_ops {
    const char *name;  /* the name lesson files use: "formats" */
    const char *title; /* the panel's box title: "Number formats" */
    const char *about; /* one or two sentences on what the panel shows (help overlay) */
    /* Allocates the panel's state in *state; 0, or a negative code with e filled. */
    int (*init)(void **state, const struct panel_env *env, struct error *e);
    void (*fini)(void *state);
    int (*on_key)(void *state, int key);                        /* a curses key code */
    int (*on_event)(void *state, const struct panel_event *ev); /* may be NULL */
    /* A setting from the lesson step being shown ("value", "65504"); called after init and
     * each time the step is shown. ERR_INVAL with a message for an unknown name or a bad
     * value. May be NULL (then every setting is an error). */
    int (*set)(void *state, const char *name, const char *value, struct error *e);
    void (*draw)(const void *state, struct ui_canvas *c);
    const struct panel_key *keys; /* ends with {NULL} */
    bool plays; /* space can play something (PANEL_PLAY may return PANEL_ANIMATE); without
                 * it the app offers neither space nor + and - */
};

#endif
