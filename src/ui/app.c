/* The window's frame: tabs, the lesson pane, the live panel, the latest events and the key
 * hints; the input loop; the terminal's set-up and restoration on every way out.
 *
 * The loop waits in poll() on standard input, with no timeout unless a panel is playing, so
 * an idle window costs no CPU. Signals (SIGINT, SIGTERM, SIGHUP) only set a flag; poll()
 * returns EINTR and the loop ends, restoring the terminal. SIGWINCH is ncurses' own: the next
 * wgetch() returns KEY_RESIZE. Keys never draw: they change state and mark the frame dirty;
 * the frame is drawn once per loop with one doupdate(). */
#include "config.h"
#include "ui/app.h"

#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/error.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/layout.h"
#include "ui/panel.h"
#include "ui/panels.h"
#include "ui/termcheck.h"
#include "ui/theme.h"

#define KEY_ESC   27
#define KEY_TAB   9
#define FRAME_MS  50 /* 20 frames a second while something plays */
#define SPEED_MIN (-3)
#define SPEED_MAX 4

struct tab {
    const struct ui_tab *def;
    const struct panel_ops *ops;
    void *panel;
    int scroll; /* lines of the lesson text scrolled away */
};

struct app {
    struct tab tabs[UI_TABS];
    int cur;
    struct ui_layout lay;
    struct eventlog log;
    bool ascii;
    bool quit;
    bool dirty;
    bool help;
    int help_scroll;
    bool playing;
    int speed; /* the speed is 2^speed */
    double last_tick;
};

/* ---- the terminal's life ---- */

static volatile sig_atomic_t got_signal;
static SCREEN *screen;

static void on_signal(int sig)
{
    got_signal = sig;
}

/* Every way out goes through here: quit, a signal, an error, exit() from anywhere (atexit). */
static void restore_terminal(void)
{
    if (!screen)
        return;
    curs_set(1);
    endwin();
    delscreen(screen);
    screen = NULL;
}

static int start_curses(bool ascii_wanted, bool *ascii, struct error *e)
{
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C"); /* numbers are read and written with a '.' */
    const char *cs = nl_langinfo(CODESET);
    *ascii = ascii_wanted || !cs || strcmp(cs, "UTF-8") != 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns at once */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    static bool registered;
    if (!registered) {
        atexit(restore_terminal);
        registered = true;
    }
    screen = newterm(NULL, stdout, stdin);
    if (!screen)
        return error_set(e, ERR_RUN, "the terminal could not be set up (TERM '%s')",
                         getenv("TERM"));
    set_term(screen);
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    const char *nc = getenv("NO_COLOR");
    theme_init(has_colors() && !(nc && *nc), *ascii);
    return 0;
}

/* ---- tabs and panels ---- */

static int open_panel(struct app *a, struct tab *t, const struct panel_ops *ops, struct error *e)
{
    if (t->panel)
        t->ops->fini(t->panel);
    t->panel = NULL;
    t->ops = ops;
    struct panel_env env = {ops, &a->log, a->ascii};
    return ops->init(&t->panel, &env, e);
}

static void pause_playing(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    if (a->playing && t->ops->on_event) {
        struct panel_event ev = {.kind = PANEL_PAUSE};
        t->ops->on_event(t->panel, &ev);
    }
    a->playing = false;
}

static void switch_tab(struct app *a, int i)
{
    if (i == a->cur)
        return;
    pause_playing(a);
    a->cur = (i + UI_TABS) % UI_TABS;
    a->dirty = true;
}

static double speed_factor(int s)
{
    return s >= 0 ? (double)(1 << s) : 1.0 / (double)(1 << -s);
}

static void panel_event(struct app *a, enum panel_event_kind kind, double dt)
{
    struct tab *t = &a->tabs[a->cur];
    int r = 0;
    if (t->ops->on_event) {
        struct panel_event ev = {kind, dt, speed_factor(a->speed)};
        r = t->ops->on_event(t->panel, &ev);
    }
    if (r & PANEL_REDRAW)
        a->dirty = true;
    if (r & PANEL_QUIT)
        a->quit = true;
    switch (kind) {
    case PANEL_PLAY:
        a->playing = r & PANEL_ANIMATE;
        a->last_tick = clock_now();
        if (!a->playing)
            eventlog_add(&a->log, "%s: nothing plays here", t->ops->title);
        a->dirty = true;
        break;
    case PANEL_TICK:
        if (!(r & PANEL_ANIMATE)) {
            a->playing = false;
            a->dirty = true;
        }
        break;
    case PANEL_STEP:
        if (!r)
            eventlog_add(&a->log, "%s: nothing to step here", t->ops->title);
        a->dirty = true;
        break;
    default: break;
    }
}

/* ---- keys ---- */

static void help_key(struct app *a, int ch)
{
    switch (ch) {
    case KEY_ESC:
    case '?':
    case 'q': a->help = false; break;
    case KEY_DOWN:
    case 'j': a->help_scroll++; break;
    case KEY_UP:
    case 'k':
        if (a->help_scroll > 0)
            a->help_scroll--;
        break;
    default: return;
    }
    a->dirty = true;
}

static void app_key(struct app *a, int ch)
{
    struct tab *t = &a->tabs[a->cur];
    if (a->help) {
        help_key(a, ch);
        return;
    }
    int r = t->ops->on_key(t->panel, ch);
    if (r & PANEL_REDRAW)
        a->dirty = true;
    if (r & PANEL_QUIT)
        a->quit = true;
    if (r & PANEL_HANDLED)
        return;
    switch (ch) {
    case 'q': a->quit = true; break;
    case '?':
        a->help = true;
        a->help_scroll = 0;
        a->dirty = true;
        break;
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6': switch_tab(a, ch - '1'); break;
    case 'L': switch_tab(a, UI_TABS - 1); break;
    case KEY_TAB: switch_tab(a, a->cur + 1); break;
    case KEY_BTAB: switch_tab(a, a->cur - 1); break;
    case KEY_NPAGE:
    case 'J':
        t->scroll++;
        a->dirty = true;
        break;
    case KEY_PPAGE:
    case 'K':
        if (t->scroll > 0)
            t->scroll--;
        a->dirty = true;
        break;
    case ' ':
        if (a->playing) {
            pause_playing(a);
            a->dirty = true;
        } else {
            panel_event(a, PANEL_PLAY, 0);
        }
        break;
    case 'n':
        pause_playing(a);
        panel_event(a, PANEL_STEP, 0);
        break;
    case '+':
    case '=':
    case '-':
        if (ch == '-' ? a->speed > SPEED_MIN : a->speed < SPEED_MAX)
            a->speed += ch == '-' ? -1 : 1;
        eventlog_add(&a->log, "speed %gx", speed_factor(a->speed));
        a->dirty = true;
        break;
    case 'r':
        panel_event(a, PANEL_RESET, 0);
        eventlog_add(&a->log, "%s: reset", t->ops->title);
        a->dirty = true;
        break;
    default: break;
    }
}

/* ---- drawing ---- */

static void draw_too_small(const struct app *a)
{
    char l[2][96];
    snprintf(l[0], sizeof l[0], "scalelab needs a terminal of at least %dx%d.", LAYOUT_MIN_COLS,
             LAYOUT_MIN_ROWS);
    snprintf(l[1], sizeof l[1], "This one is %dx%d: make it larger, or press q to quit.",
             a->lay.cols, a->lay.rows);
    struct ui_rect all = {0, 0, a->lay.rows, a->lay.cols};
    struct ui_rect r = layout_center(all, 4, a->lay.cols);
    for (int i = 0; i < 2; i++) {
        int w = layout_text_width(l[i]);
        struct ui_rect lr =
            layout_center((struct ui_rect){r.y + 2 * i, 0, 3, all.w}, 3, w < all.w ? w : all.w);
        struct ui_canvas c = canvas_make(stdscr, lr);
        canvas_wrap(&c, 0, i ? ROLE_TEXT : ROLE_TITLE, l[i], 0);
    }
}

static void draw_tabs(const struct app *a)
{
    struct tab_label labels[UI_TABS];
    int x[UI_TABS], w[UI_TABS];
    for (int i = 0; i < UI_TABS; i++)
        labels[i] = (struct tab_label){a->tabs[i].def->full, a->tabs[i].def->brief};
    struct ui_rect r = a->lay.tabs;
    struct ui_canvas c = canvas_make(stdscr, r);
    layout_tabs(labels, UI_TABS, r.w, x, w);
    int end = x[UI_TABS - 1] + w[UI_TABS - 1];
    for (int i = 0; i < UI_TABS; i++) {
        bool on = i == a->cur;
        enum ui_role role = on ? ROLE_TAB_ACTIVE : ROLE_TAB;
        canvas_fill(&c, 0, x[i], w[i], role);
        char buf[64];
        const char *s =
            w[i] - 2 >= layout_text_width(labels[i].full) ? labels[i].full : labels[i].brief;
        size_t n = layout_fit(s, strlen(s), w[i] - 2);
        snprintf(buf, sizeof buf, "%.*s", (int)n, s);
        canvas_text(&c, 0, x[i] + 1, role, buf);
    }
    const char *brand = "scalelab";
    if (end + layout_text_width(brand) + 3 <= r.w)
        canvas_text(&c, 0, r.w - layout_text_width(brand) - 1, ROLE_DIM, brand);
}

static void draw_lesson(const struct app *a)
{
    const struct tab *t = &a->tabs[a->cur];
    char title[96];
    snprintf(title, sizeof title, "Lesson %s", t->def->key);
    if (a->cur == UI_TABS - 1)
        snprintf(title, sizeof title, "The Lab");
    draw_box(stdscr, a->lay.lesson, title, false);
    struct ui_canvas c = canvas_make(stdscr, layout_inner(a->lay.lesson));
    c.r.x += 1;
    c.r.w -= 2;
    int y = canvas_wrap(&c, 0, ROLE_TITLE, t->def->title, 0);
    canvas_wrap(&c, y + 1, ROLE_TEXT, t->ops->about, t->scroll);
}

static void draw_panel(const struct app *a, struct ui_canvas *out)
{
    const struct tab *t = &a->tabs[a->cur];
    draw_box(stdscr, a->lay.panel, t->ops->title, true);
    struct ui_rect in = layout_inner(a->lay.panel);
    in.x += 1;
    in.w -= 2;
    *out = canvas_make(stdscr, in);
    t->ops->draw(t->panel, out);
}

static void draw_events(const struct app *a)
{
    struct ui_rect r = a->lay.events;
    struct ui_canvas c = canvas_make(stdscr, r);
    for (int i = 0; i < r.h; i++) {
        const char *s = eventlog_get(&a->log, (unsigned long)(r.h - 1 - i));
        if (s)
            canvas_text(&c, i, 1, i == r.h - 1 ? ROLE_TEXT : ROLE_DIM, s);
    }
}

/* The hint line: the app's keys, then the panel's, as many as fit. */
static void draw_hints(const struct app *a)
{
    const struct tab *t = &a->tabs[a->cur];
    struct ui_canvas c = canvas_make(stdscr, a->lay.hints);
    struct hint {
        const char *k, *w;
    } h[32];
    int n = 0;
    h[n++] = (struct hint){"?", "help"};
    h[n++] = (struct hint){"q", "quit"};
    h[n++] = (struct hint){"1-5 L", "lesson"};
    h[n++] = (struct hint){"[ ]", "step"};
    for (const struct panel_key *k = t->ops->keys; k->keys && n < 28; k++)
        if (k->brief)
            h[n++] = (struct hint){k->keys, k->brief};
    h[n++] = (struct hint){"space", a->playing ? "pause" : "play"};
    int x = 1;
    for (int i = 0; i < n; i++) {
        int need = layout_text_width(h[i].k) + 1 + layout_text_width(h[i].w) + 2;
        if (x + need > c.r.w)
            break;
        x = canvas_text(&c, 0, x, ROLE_KEY, h[i].k);
        x = canvas_text(&c, 0, x + 1, ROLE_DIM, h[i].w) + 2;
    }
    if (a->playing || a->speed)
        canvas_printf(&c, 0, c.r.w - 14, a->playing ? ROLE_GOOD : ROLE_DIM, "%s %gx",
                      a->playing ? "playing" : "paused", speed_factor(a->speed));
}

struct help_line {
    const char *k, *w; /* k NULL: w is a heading; k "": w is a paragraph */
};

static const struct help_line app_keys[] = {
    {NULL, "The window"},
    {"1-5 L 6", "lesson 1-5, the Lab"},
    {"Tab S-Tab", "next, previous tab"},
    {"] [", "next, previous step"},
    {"PgDn PgUp J K", "scroll the text"},
    {"space", "play, pause"},
    {"n", "one step, paused"},
    {"+ -", "faster, slower"},
    {"r", "reset the panel"},
    {"?", "this help"},
    {"Esc", "close, cancel"},
    {"q", "quit"},
};

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

static void draw_help(const struct app *a)
{
    const struct tab *t = &a->tabs[a->cur];
    struct help_line lines[64];
    int n = 0;
    for (size_t i = 0; i < sizeof app_keys / sizeof app_keys[0]; i++)
        lines[n++] = app_keys[i];
    int split = n;
    lines[n++] = (struct help_line){NULL, t->ops->title};
    for (const struct panel_key *k = t->ops->keys; k->keys && n < 63; k++)
        lines[n++] = (struct help_line){k->keys, k->what};
    lines[n++] = (struct help_line){"", t->ops->about};

    /* Two columns (the window's keys, the panel's) when there is room, else one. */
    struct ui_rect screen_r = {1, 0, a->lay.rows - 2, a->lay.cols};
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
    int scroll = a->help_scroll < max_scroll ? a->help_scroll : max_scroll;
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

static void draw_frame(struct app *a)
{
    erase();
    struct ui_canvas pc = {0};
    pc.cursor_y = -1;
    if (a->lay.too_small) {
        draw_too_small(a);
    } else {
        draw_tabs(a);
        draw_lesson(a);
        draw_panel(a, &pc);
        draw_events(a);
        draw_hints(a);
        if (a->help)
            draw_help(a);
    }
    if (pc.cursor_y >= 0 && !a->help) {
        curs_set(1);
        wmove(stdscr, pc.r.y + pc.cursor_y, pc.r.x + pc.cursor_x);
    } else {
        curs_set(0);
    }
    wnoutrefresh(stdscr);
    doupdate();
}

static void relayout(struct app *a)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    layout_compute(rows, cols, &a->lay);
    a->dirty = true;
}

/* ---- the loop ---- */

static int run_loop(struct app *a, struct error *e)
{
    relayout(a);
    while (!a->quit && !got_signal) {
        if (a->dirty) {
            draw_frame(a);
            a->dirty = false;
        }
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        int r = poll(&p, 1, a->playing ? FRAME_MS : -1);
        if (got_signal)
            break;
        if (r < 0 && errno != EINTR)
            return error_set(e, ERR_RUN, "waiting for keys: %s", strerror(errno));
        if (r > 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL)) && !(p.revents & POLLIN)) {
            got_signal = SIGHUP; /* the terminal went away */
            break;
        }
        int ch;
        while (!a->quit && (ch = wgetch(stdscr)) != ERR) {
            if (ch == KEY_RESIZE)
                relayout(a);
            else
                app_key(a, ch);
        }
        if (a->playing) {
            double now = clock_now();
            double dt = now - a->last_tick;
            if (dt * 1000.0 >= FRAME_MS * 0.9) {
                a->last_tick = now;
                panel_event(a, PANEL_TICK, dt * speed_factor(a->speed));
                a->dirty = true;
            }
        }
    }
    return 0;
}

static void close_panels(struct app *a)
{
    for (int i = 0; i < UI_TABS; i++)
        if (a->tabs[i].panel)
            a->tabs[i].ops->fini(a->tabs[i].panel);
}

int ui_run(const struct ui_options *o, struct error *e)
{
    int rc = termcheck(e);
    if (rc < 0)
        return rc;
    struct app *a = calloc(1, sizeof *a);
    if (!a)
        return error_set(e, ERR_NOMEM, "out of memory");
    if ((rc = start_curses(o->ascii, &a->ascii, e)) < 0)
        goto out;
    for (int i = 0; i < UI_TABS; i++) {
        struct tab *t = &a->tabs[i];
        t->def = &ui_tabs[i];
        const struct panel_ops *ops = panel_find(t->def->panel);
        if (!ops) {
            rc = error_set(e, ERR_RUN, "no panel named '%s'", t->def->panel);
            goto out;
        }
        if ((rc = open_panel(a, t, ops, e)) < 0)
            goto out;
    }
    eventlog_add(&a->log, "welcome: ? lists the keys, q quits");
    rc = run_loop(a, e);
out:
    restore_terminal();
    close_panels(a);
    free(a);
    if (rc < 0)
        return rc;
    return got_signal ? 128 + got_signal : 0;
}
