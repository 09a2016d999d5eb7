/* The help overlay (ui/help.h): the window's keys, as the app takes them, and the live
 * panel's from its table, laid out in one or two columns. */
#include "config.h"
#include "ui/help.h"

#include <curses.h>

#include "ui/draw.h"
#include "ui/layout.h"
#include "ui/panel.h"

#define KEY_ESC 27

struct help_line {
    const char *k, *w; /* k NULL: w is a heading; k "": w is a paragraph */
};

static const struct help_line app_keys[] = {
    {NULL, "The window"},
    {"", NULL}, /* the tabs' keys, from the lessons (ui/tabs.h) */
    {"Tab S-Tab", "next, previous tab"},
    {"] [", "next, previous step"},
    {"PgDn PgUp J K", "scroll the text"},
    {"a", "answer the step's question"},
    {"v", "the lesson's next panel (lesson 1: formats, training); each keeps its state"},
    {"space", "play, pause"},
    {"n", "one step, paused"},
    {"+ -", "faster, slower"},
    {"r", "reset the panel"},
    {"?", "this help"},
    {"Esc", "close, cancel"},
    {"q", "quit"},
    {"G N Enter", "go to step N (g too, unless the panel uses g)"},
    {"", "These keys are the window's in every panel; a key that does nothing says so below."},
    {"A", "autoplay the steps (any key pauses, then does what it does; A pauses)"},
};

bool help_app_key(int ch)
{
    switch (ch) {
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
    case 'L':
    case '\t':
    case KEY_BTAB:
    case ']':
    case '[':
    case KEY_NPAGE:
    case KEY_PPAGE:
    case 'J':
    case 'K':
    case 'a':
    case 'v':
    case ' ':
    case 'n':
    case '+':
    case '=':
    case '-':
    case 'r':
    case '?':
    case KEY_ESC:
    case 'q':
    case 'G':
    case 'A': return true;
    default: return false;
    }
}

#define HELP_KEYW 16 /* the keys' column */

/* Rows a help line takes when its description wraps in w columns. */
static int help_rows(const struct help_line *l, int w)
{
    if (!l->k)
        return 1;
    struct wrap_line tmp[1];
    int n = layout_wrap(l->w, *l->k ? w : w + HELP_KEYW, tmp, 1);
    return n > 0 ? n : 1;
}

void help_draw(const struct panel_ops *panel, const char *tab_keys, const char *tab_what,
               int screen_rows, int screen_cols, int help_scroll)
{
    struct help_line lines[64];
    int n = 0;
    for (size_t i = 0; i < sizeof app_keys / sizeof app_keys[0]; i++)
        lines[n++] = app_keys[i].w ? app_keys[i] : (struct help_line){tab_keys, tab_what};
    int split = n;
    lines[n++] = (struct help_line){NULL, panel->title};
    for (const struct panel_key *k = panel->keys; k->keys && n < 63; k++)
        lines[n++] = (struct help_line){k->keys, k->what};
    lines[n++] = (struct help_line){"", panel->about};

    /* Two columns (the window's keys, the panel's) when there is room, else one. */
    struct ui_rect screen_r = {1, 0, screen_rows - 2, screen_cols};
    int colw = (screen_r.w - 8) / 2 > 44 ? 44 : (screen_r.w - 8) / 2;
    bool two = colw >= 34;
    if (!two)
        colw = screen_r.w - 6 < 64 ? screen_r.w - 6 : 64;
    int dw = colw - HELP_KEYW;
    int need[2] = {0, 0};
    for (int i = 0; i < n; i++)
        need[two && i >= split] += help_rows(&lines[i], dw);
    int body_need = need[0] > need[1] ? need[0] : need[1];
    struct ui_rect box = layout_center(screen_r, body_need + 4, two ? 2 * colw + 6 : colw + 4);
    struct ui_canvas bg = canvas_make(stdscr, box);
    for (int y = 0; y < box.h; y++)
        canvas_fill(&bg, y, 0, box.w, ROLE_TEXT);
    draw_box(stdscr, box, "Keys", true);
    struct ui_rect in = layout_inner(box);
    in.x += 1;
    in.w -= 2;
    int body = in.h - 2; /* then a blank row and the footer */
    int max_scroll = body_need - body > 0 ? body_need - body : 0;
    int scroll = help_scroll < max_scroll ? help_scroll : max_scroll;
    for (int col = 0; col < (two ? 2 : 1); col++) {
        struct ui_rect cr = {in.y, in.x + col * (colw + 2), body, colw};
        int from = two && col ? split : 0, to = two && !col ? split : n;
        int y = -scroll;
        for (int i = from; i < to && y < body; i++) {
            int rows = help_rows(&lines[i], dw);
            if (y >= 0 && y + rows <= body) {
                struct ui_canvas c =
                    canvas_make(stdscr, (struct ui_rect){cr.y + y, cr.x, rows, colw});
                if (!lines[i].k) {
                    canvas_text(&c, 0, 0, ROLE_TITLE, lines[i].w);
                } else if (!*lines[i].k) {
                    canvas_wrap(&c, 0, ROLE_DIM, lines[i].w, 0);
                } else {
                    canvas_text(&c, 0, 1, ROLE_KEY, lines[i].k);
                    struct ui_canvas d =
                        canvas_make(stdscr, (struct ui_rect){cr.y + y, cr.x + HELP_KEYW, rows, dw});
                    canvas_wrap(&d, 0, ROLE_TEXT, lines[i].w, 0);
                }
            }
            y += rows;
        }
    }
    struct ui_canvas f = canvas_make(stdscr, in);
    canvas_text(&f, in.h - 1, 1, ROLE_DIM,
                max_scroll ? "Esc or ? closes; Up/Down scroll" : "Esc or ? closes");
}

bool help_key(int ch, bool *open, int *scroll)
{
    switch (ch) {
    case KEY_ESC:
    case '?':
    case 'q': *open = false; return true;
    case KEY_DOWN:
    case 'j': ++*scroll; return true;
    case KEY_UP:
    case 'k':
        if (*scroll > 0)
            --*scroll;
        return true;
    default: return false;
    }
}
