/* The line of key hints at the bottom of the window: which keys it offers in the app's state
 * (a step being typed, autoplay, a field being edited, or the window's keys and the live
 * panel's), and where each goes: one row when they fit; else one row without the hints the
 * screen shows elsewhere (brief); else two rows (the latest events give up their last), the
 * play status keeping its place at the right of the last. Pure functions: the snapshot test
 * checks that every panel's hints fit at 80 columns. */
#ifndef SCALELAB_UI_HINTS_H
#define SCALELAB_UI_HINTS_H

#include <stdbool.h>

struct panel_ops;

struct hint {
    const char *k, *w; /* "space", "play" */
};

/* What the hints depend on. */
struct hint_state {
    const char *jump;      /* G: the step number typed so far, or NULL when not jumping */
    bool autoplay;         /* autoplay walks the steps */
    bool answering;        /* a question's answer field has the keys */
    bool editing;          /* the panel's input field has the keys */
    bool question;         /* the step asks something (a answers it) */
    const char *next_view; /* v's panel, or NULL: the lesson has one */
    const struct panel_ops *panel;
    bool playing;
    const char *tab_keys; /* the tabs' keys, "1-5 L" (ui/tabs.h) */
    bool brief; /* leave out what the screen shows elsewhere: ] [ and a (the lesson pane says
                 * them under the step) and the tabs' keys (the tab bar) */
};

#define HINTS_MAX 32

/* The hints for st, in order, into out[HINTS_MAX]; their text lives in st, the panel's table
 * and buf (a panel key's first spelling, "p" of "p P"; the jump's "step 1_"). Returns how many. */
int hints_list(const struct hint_state *st, struct hint *out, char (*buf)[24]);

/* Where hints go in rows rows of width columns, "KEY WHAT" two columns apart from column 1,
 * the last row ending reserve columns early (the play status): out[i] is hint i's row and
 * column. Returns how many fit, in order. */
struct hint_place {
    int row, x;
};
int hints_place(const struct hint *h, int n, int width, int rows, int reserve,
                struct hint_place *out);

#endif
