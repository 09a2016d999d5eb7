/* The window's look in one place: what each role of text looks like in colour and in
 * monochrome (NO_COLOR, or a terminal without colours), and the line-drawing characters in
 * UTF-8 and in ASCII. Call theme_init() once curses is started. */
#ifndef SCALELAB_UI_THEME_H
#define SCALELAB_UI_THEME_H

#include <curses.h>
#include <stdbool.h>

enum ui_role {
    ROLE_TEXT,       /* body text */
    ROLE_DIM,        /* secondary text: labels, units, separators */
    ROLE_TITLE,      /* box titles, headings */
    ROLE_BORDER,     /* box lines */
    ROLE_TAB,        /* an inactive tab */
    ROLE_TAB_ACTIVE, /* the current tab */
    ROLE_KEY,        /* a key in the hints and the help */
    ROLE_SELECTED,   /* the selected row of a list */
    ROLE_INPUT,      /* an input field */
    ROLE_ERROR,      /* an error message, a wrong answer */
    ROLE_GOOD,       /* a right answer, an exact value */
    ROLE_WARN,       /* overflow, underflow, a lost digit */
    ROLE_SIGN,       /* a sign bit */
    ROLE_EXP,        /* exponent bits */
    ROLE_MAN,        /* mantissa bits */
    ROLE_BAR,        /* the filled part of a bar */
    ROLE_MOVED,      /* data that moved in the step shown: a chunk on a link, where it landed */
    ROLE_COUNT
};

/* Line drawing and symbols; every string is one column wide. */
struct ui_glyphs {
    const char *h, *v, *tl, *tr, *bl, *br; /* box lines and corners */
    const char *sel;                       /* marks the selected row */
    const char *dot;                       /* separates items in a line */
    const char *eighths[8];                /* bar cells: [0] unused, [1..7] partial, full = bar */
    const char *bar, *bar_empty;
    const char *ellipsis;
    const char *shade;  /* a lighter fill: the subnormal part of a range */
    const char *marker; /* points down at a place on an axis */
};

/* color: use colours (the caller has checked NO_COLOR and has_colors()); ascii: ASCII only. */
void theme_init(bool color, bool ascii);
bool theme_color(void);
bool theme_ascii(void);
attr_t theme_attr(enum ui_role r);
const struct ui_glyphs *theme_glyphs(void);

#endif
