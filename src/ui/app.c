/* The window's frame: tabs, the lesson pane, the live panel, the latest events and the key
 * hints; the input loop; the terminal's set-up and restoration on every way out.
 *
 * The loop waits in poll() on standard input, with no timeout unless a panel is playing or
 * busy (ui/panel.h: PANEL_POLL), so an idle window costs no CPU. Keys never draw: they change
 * state and mark the frame dirty; the frame is drawn into curses' screen after each key (the
 * next key must see whether a field has the keys now), and once the keys that have arrived
 * are all read and the live panel polled, sent to the terminal with one doupdate(): sixty
 * keys pressed at once make one frame. A signal ends the loop and the
 * terminal is restored (ui/term.h); the help overlay is ui/help.h, the answer field
 * ui/answer.h. */
#include "config.h"
#include "ui/app.h"

#include <curses.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/datadir.h"
#include "base/error.h"
#include "lesson/ascii.h"
#include "lesson/lesson.h"
#include "lesson/progress.h"
#include "ui/answer.h"
#include "ui/draw.h"
#include "ui/eventlog.h"
#include "ui/help.h"
#include "ui/hints.h"
#include "ui/layout.h"
#include "ui/lessonpane.h"
#include "ui/panel.h"
#include "ui/panels.h"
#include "ui/tabs.h"
#include "ui/steppanel.h"
#include "ui/term.h"
#include "ui/termcheck.h"
#include "ui/theme.h"

#define KEY_ESC    27
#define KEY_TAB    9
#define FRAME_MS   50 /* 20 frames a second while something plays */
#define SPEED_MIN  (-3)
#define SPEED_MAX  4
#define TAB_PANELS 8 /* panels a tab keeps open, one of each at most: more than ui_panels[] has */

/* A tab keeps open every panel it has shown, each with its state, for as long as the window
 * lives: a step shows its own panel, and v swaps the live one among the panels its lesson
 * names (lesson 1: the formats explorer and the training run), so going back and forth loses
 * nothing. */
struct kept_panel {
    const struct panel_ops *ops;
    void *state;
};

struct tab {
    struct ui_tab def;           /* its key, labels and lesson's name (ui/tabs.h) */
    const struct panel_ops *ops; /* the live panel: one of kept[] */
    void *panel;                 /* its state */
    struct kept_panel kept[TAB_PANELS];
    int nkept;
    const struct panel_ops *views[TAB_PANELS]; /* the panels the lesson names, in order: v */
    int nviews;
    struct lesson *lesson;      /* NULL when its file could not be read: */
    char error[ERROR_MAX + 64]; /* why */
    size_t step;
    int scroll, max_scroll; /* lines of the lesson text scrolled away; at most (last frame) */
    int show_q;             /* a question to scroll into view at the next frame, or -1 */
    struct lessonpane_answer *answers; /* [step * LESSON_MAX_QUESTIONS + question] */
    double spent;                      /* seconds this tab was the current one, this session */
};

struct app {
    struct tab tabs[UI_MAX_TABS]; /* a tab per lesson file (ui/tabs.h) */
    int ntabs, cur;
    char tab_keys[16], tab_what[48]; /* "1-5 L", "lesson 1-5, the Lab" */
    struct ui_layout lay;
    struct eventlog log;
    bool ascii;
    bool quit;
    bool dirty;
    bool help;
    int help_scroll;
    bool playing;
    bool busy; /* the live panel may have work going on elsewhere: poll it (PANEL_POLL) */
    int speed; /* the speed is 2^speed */
    double last_tick;
    struct answer_field ans; /* the answer being typed to a question of the current step */
    struct progress progress;
    char progress_file[4096]; /* "" when progress is not saved */
    struct error save_err;    /* the first save that failed: said again on quit (exit 1) */
    struct error fatal;       /* a panel could not start (out of memory): the window ends */
    double tab_since;         /* when the current tab became current (clock_now) */
    /* presenter mode: autoplay walks the steps; G jumps to one */
    double autoplay_s;  /* seconds a step is shown (0 until --autoplay or A sets it) */
    bool autoplay;      /* walking now */
    double next_at;     /* when the next step comes (clock_now) */
    bool jumping;       /* G: typing a step number */
    bool panel_editing; /* the live panel's input field had the keys at the last frame */
    char jump[8];
    /* $SCALELAB_FRAME_FD: a socket told of each frame (note_frame); keys read so far */
    int frame_fd;
    unsigned long keys;
};

/* ---- tabs and panels ---- */

static void save_progress(struct app *a)
{
    struct error e = {0};
    if (a->progress_file[0] && progress_save(&a->progress, a->progress_file, &e) < 0) {
        eventlog_add(&a->log, "progress not saved: %s", e.msg);
        a->progress_file[0] = '\0'; /* say it once */
        a->save_err = e;
        error_prefix(&a->save_err, "progress not saved");
    }
}

/* Makes ops tab t's live panel: the one kept open if there is one (true), else none (false). */
static bool use_kept(struct tab *t, const struct panel_ops *ops)
{
    for (int i = 0; i < t->nkept; i++)
        if (t->kept[i].ops == ops) {
            t->ops = ops;
            t->panel = t->kept[i].state;
            return true;
        }
    return false;
}

/* Makes ops tab t's live panel, opened afresh with the lesson's defaults and lp's settings
 * (src/ui/steppanel.h): the kept one is replaced, or a new one kept. */
static int open_panel(struct app *a, struct tab *t, const struct panel_ops *ops,
                      const struct lesson_panel *lp, struct error *e)
{
    int i = 0;
    while (i < t->nkept && t->kept[i].ops != ops)
        i++;
    if (i == TAB_PANELS)
        return error_set(e, ERR_RUN, "panel %s: a tab keeps %d panels at most", ops->name,
                         TAB_PANELS);
    struct panel_env env = {ops, &a->log, a->ascii, false};
    void *state = i < t->nkept ? t->kept[i].state : NULL;
    int rc = steppanel_open(ops, &env, t->lesson, lp, &state, e);
    if (rc < 0)
        return rc;
    t->kept[i] = (struct kept_panel){ops, state};
    if (i == t->nkept)
        t->nkept++;
    t->ops = ops;
    t->panel = state;
    return 0;
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
    a->ans.asking = -1;
    double now = clock_now();
    a->tabs[a->cur].spent += now - a->tab_since;
    a->tab_since = now;
    a->cur = (i + a->ntabs) % a->ntabs;
    struct tab *t = &a->tabs[a->cur];
    if (t->lesson) {
        progress_set_step(&a->progress, t->def.name, (int)t->step);
        save_progress(a);
    }
    a->dirty = true;
    a->busy = true; /* another live panel: what is it doing? */
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
        if (!a->playing && !(r & PANEL_HANDLED)) /* unless the panel said why itself */
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

/* ---- lessons and progress ---- */

/* The tab key ch opens (a lesson's number, L the Lab), or -1. */
static int tab_of_key(const struct app *a, int ch)
{
    for (int i = 0; i < a->ntabs; i++)
        if (a->tabs[i].def.key[0] == ch && !a->tabs[i].def.key[1])
            return i;
    return -1;
}

/* The panel a tab shows when its lesson names none (or could not be read). */
static const char *fallback_panel(void)
{
    return ui_panels[0]->name;
}

/* The panels tab t's lesson names (its head's, its steps'), each once, in order; the tab's
 * own panel when the lesson names none. */
static void find_views(struct tab *t)
{
    t->nviews = 0;
    const struct lesson *l = t->lesson;
    for (size_t i = 0; l && i <= l->nsteps; i++) {
        const struct lesson_panel *lp = i ? l->steps[i - 1].panel : l->panel;
        const struct panel_ops *ops = lp ? panel_find(lp->name) : NULL;
        bool seen = !ops;
        for (int k = 0; k < t->nviews && !seen; k++)
            seen = t->views[k] == ops;
        if (!seen && t->nviews < TAB_PANELS)
            t->views[t->nviews++] = ops;
    }
    if (!t->nviews)
        t->views[t->nviews++] = panel_find(fallback_panel());
}

/* The panel v shows next on tab t: the one after the live panel among the lesson's. */
static const struct panel_ops *next_view(const struct tab *t)
{
    int i = 0;
    while (i < t->nviews && t->views[i] != t->ops)
        i++;
    return t->views[i < t->nviews ? (i + 1) % t->nviews : 0];
}

/* v: the next of the lesson's panels, as it was left; a panel shown for the first time gets
 * the settings of the nearest step that names it (before the current step, else after). */
static void swap_panel(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    a->dirty = true;
    if (t->nviews < 2) {
        eventlog_add(&a->log, "%s is this lesson's only panel", t->ops->title);
        return;
    }
    const struct panel_ops *ops = next_view(t);
    pause_playing(a);
    a->busy = true;
    if (!use_kept(t, ops)) {
        const struct lesson *l = t->lesson;
        const struct lesson_panel *lp = NULL;
        for (size_t k = t->step + 1; l && k-- > 0 && !lp;)
            if (l->steps[k].panel && !strcmp(l->steps[k].panel->name, ops->name))
                lp = l->steps[k].panel;
        for (size_t k = t->step + 1; l && k < l->nsteps && !lp; k++)
            if (l->steps[k].panel && !strcmp(l->steps[k].panel->name, ops->name))
                lp = l->steps[k].panel;
        if (open_panel(a, t, ops, lp, &a->fatal) < 0) {
            a->quit = true;
            return;
        }
    }
    eventlog_add(&a->log, "%s (v: %s)", ops->title, next_view(t)->title);
}

/* Shows step i of tab t's lesson: its panel (opened if it changes) with the step's settings. */
static void show_step(struct app *a, struct tab *t, size_t i, bool save)
{
    const struct lesson *l = t->lesson;
    if (l && i >= l->nsteps)
        i = l->nsteps ? l->nsteps - 1 : 0;
    t->step = i;
    t->scroll = 0;
    t->show_q = -1;
    if (t == &a->tabs[a->cur])
        a->ans.asking = -1;
    const struct lesson_panel *lp = l ? lesson_step_panel(l, i) : NULL;
    const struct panel_ops *ops = lp ? panel_find(lp->name) : t->views[0];
    if (!ops) {
        eventlog_add(&a->log, "%s:%d: no panel named '%s'", l->file, lp->line, lp->name);
        ops = t->views[0];
        lp = NULL;
    }
    /* The step's panel opens afresh (its start, the lesson's defaults, the step's settings):
     * what the learner turned in another step never contradicts this step's text. */
    if (open_panel(a, t, ops, lp, &a->fatal) < 0) {
        a->quit = true; /* with no panel to draw, the window cannot go on */
        return;
    }
    if (l && save) {
        progress_set_step(&a->progress, t->def.name, (int)i);
        save_progress(a);
    }
    a->dirty = true;
    a->busy = true;
}

/* Tab t of the lesson file at path: the lesson (or why it could not be read), its key and
 * labels, its panels, the step saved progress reopens it at. */
static int make_tab(struct app *a, struct tab *t, const char *path, struct error *e)
{
    struct error le = {0};
    if (lesson_load(path, &t->lesson, &le) < 0) {
        t->lesson = NULL;
        snprintf(t->error, sizeof t->error, "The lesson could not be read: %s", le.msg);
        eventlog_add(&a->log, "%s", le.msg);
    }
    tabs_make(t->lesson, path, &t->def);
    if (a->ascii) {
        char buf[sizeof t->def.label];
        ascii_line(buf, sizeof buf, t->def.label);
        memcpy(t->def.label, buf, sizeof buf);
    }
    if (t->lesson && t->lesson->nsteps) {
        t->answers = calloc(t->lesson->nsteps * LESSON_MAX_QUESTIONS, sizeof *t->answers);
        if (!t->answers)
            return error_set(e, ERR_NOMEM, "out of memory");
    }
    find_views(t);
    int rc = open_panel(a, t, t->views[0], NULL, e);
    if (rc < 0)
        return rc;
    show_step(a, t, t->lesson ? (size_t)progress_step(&a->progress, t->def.name) : 0, false);
    return 0;
}

static int load_lessons(struct app *a, struct error *e)
{
    struct error pe = {0};
    progress_init(&a->progress);
    if (progress_path(a->progress_file, sizeof a->progress_file, &pe) < 0) {
        a->progress_file[0] = '\0';
        eventlog_add(&a->log, "progress is not saved: %s", pe.msg);
    } else if (progress_load(&a->progress, a->progress_file, &pe) != 0 && pe.code) {
        /* what was skipped, in full: in lines that fit the narrowest window, the file named
         * without its folder (README.md says where it is) so that two lines hold it */
        const char *m = pe.msg, *slash = strrchr(a->progress_file, '/');
        if (slash && !strncmp(m, a->progress_file, strlen(a->progress_file)))
            m += slash + 1 - a->progress_file;
        for (bool first = true; *m; first = false) {
            int n = (int)strlen(m);
            if (n > 68)
                for (n = 68; n > 34 && m[n] != ' '; n--)
                    ;
            eventlog_add(&a->log, "%s%.*s", first ? "" : "  ", n, m);
            m += n;
            while (*m == ' ')
                m++;
        }
    }
    char **paths;
    size_t n;
    if (lesson_paths(NULL, &paths, &n, e) < 0)
        return e->code;
    if (n > UI_MAX_TABS)
        eventlog_add(&a->log, "%zu lessons: the window shows the first %d", n, UI_MAX_TABS);
    int rc = 0;
    for (size_t i = 0; i < n && a->ntabs < UI_MAX_TABS && rc == 0; i++)
        rc = make_tab(a, &a->tabs[a->ntabs++], paths[i], e);
    lesson_free_strings(paths, n);
    if (rc < 0)
        return rc;
    struct ui_tab defs[UI_MAX_TABS];
    for (int i = 0; i < a->ntabs; i++)
        defs[i] = a->tabs[i].def;
    tabs_keys(defs, a->ntabs, a->tab_keys, sizeof a->tab_keys, a->tab_what, sizeof a->tab_what);
    for (int i = 0; i < a->ntabs; i++)
        if (a->progress.current[0] && !strcmp(a->tabs[i].def.name, a->progress.current))
            a->cur = i;
    return 0;
}

/* a: open the answer field on the step's next question. */
static void start_answer(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    const struct lesson_step *s = t->lesson ? &t->lesson->steps[t->step] : NULL;
    int q = answer_next(s, &t->answers[t->step * LESSON_MAX_QUESTIONS]);
    a->dirty = true;
    if (q < 0) {
        eventlog_add(&a->log, "this step asks no question");
        return;
    }
    answer_open(&a->ans, q);
    t->show_q = q;
}

/* A key while the answer field is open; a checked answer is scored, saved and logged. */
static void answer_key_app(struct app *a, int ch)
{
    struct tab *t = &a->tabs[a->cur];
    a->dirty = true;
    const struct lesson_question *q = &t->lesson->steps[t->step].questions[a->ans.asking];
    struct lesson_result r;
    if (answer_key(&a->ans, ch, q, &r) != ANSWER_CHECKED)
        return;
    struct lessonpane_answer *ans =
        &t->answers[t->step * LESSON_MAX_QUESTIONS + (size_t)a->ans.asking];
    ans->state = (signed char)lessonpane_score(ans->state, r.correct);
    snprintf(ans->text, sizeof ans->text, "%s", a->ans.text);
    bool scored = ans->state != LESSONPANE_SHOWN; /* retyping a shown answer scores nothing */
    if (scored) {
        progress_mark(&a->progress, t->def.name, (int)t->step, a->ans.asking, r.correct);
        save_progress(a);
    }
    size_t total = 0;
    for (size_t i = 0; i < t->lesson->nsteps; i++)
        total += t->lesson->steps[i].nquestions;
    char which[16];
    if (t->def.lab) /* the Lab is the Lab, not "lesson 90" */
        snprintf(which, sizeof which, "Lab");
    else
        snprintf(which, sizeof which, "lesson %d", t->lesson->number);
    eventlog_add(&a->log, "%s, step %zu, question %d: %s (%d of %zu right so far)", which,
                 t->step + 1, a->ans.asking + 1,
                 !scored     ? "the answer shown, not scored"
                 : r.correct ? "right"
                             : "not quite",
                 progress_count(&a->progress, t->def.name), total);
    t->show_q = a->ans.asking; /* its result and explanation */
    a->ans.asking = -1;
}

/* ---- presenter mode ---- */

#define AUTOPLAY_DEFAULT_S 10.0

/* Starts the live panel playing without a word if it has nothing to play. */
static void play_quietly(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    if (a->playing || !t->ops->on_event)
        return;
    struct panel_event ev = {PANEL_PLAY, 0, speed_factor(a->speed)};
    a->playing = t->ops->on_event(t->panel, &ev) & PANEL_ANIMATE;
    a->last_tick = clock_now();
    a->dirty = true;
}

static void autoplay_start(struct app *a)
{
    if (a->autoplay_s <= 0)
        a->autoplay_s = AUTOPLAY_DEFAULT_S;
    a->autoplay = true;
    a->next_at = clock_now() + a->autoplay_s;
    play_quietly(a);
    eventlog_add(&a->log, "autoplay: a step every %g s (any key pauses, A resumes)", a->autoplay_s);
    a->dirty = true;
}

static void autoplay_stop(struct app *a, const char *why)
{
    a->autoplay = false;
    eventlog_add(&a->log, "autoplay %s", why);
    a->dirty = true;
}

/* The next step once its time has come; the last step ends the walk. */
static void autoplay_tick(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    if (!a->autoplay || clock_now() < a->next_at)
        return;
    if (!t->lesson || t->step + 1 >= t->lesson->nsteps) {
        autoplay_stop(a, "ends: the last step");
        return;
    }
    pause_playing(a);
    show_step(a, t, t->step + 1, true);
    play_quietly(a);
    a->next_at = clock_now() + a->autoplay_s;
    eventlog_add(&a->log, "autoplay: step %zu of %zu", t->step + 1, t->lesson->nsteps);
}

/* G, then a step number and Enter: that step of the lesson. */
static void jump_key(struct app *a, int ch)
{
    struct tab *t = &a->tabs[a->cur];
    size_t len = strlen(a->jump);
    a->dirty = true;
    if (ch >= '0' && ch <= '9') {
        if (len + 1 < sizeof a->jump)
            a->jump[len] = (char)ch, a->jump[len + 1] = '\0';
        return;
    }
    if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        if (len)
            a->jump[len - 1] = '\0';
        return;
    }
    a->jumping = false;
    if (ch != '\r' && ch != '\n' && ch != KEY_ENTER)
        return; /* Esc, or any other key: no jump */
    long k = a->jump[0] ? strtol(a->jump, NULL, 10) : 0;
    size_t n = t->lesson ? t->lesson->nsteps : 0;
    if (!n) {
        eventlog_add(&a->log, "this tab has no lesson to go through");
        return;
    }
    if (k < 1 || (size_t)k > n) {
        eventlog_add(&a->log, "no step %s: this lesson has steps 1 to %zu", a->jump, n);
        return;
    }
    pause_playing(a);
    show_step(a, t, (size_t)k - 1, true);
}

/* ---- keys ---- */

/* A key as the help names keys: 'x', Enter, Esc, Backspace, Tab, Ctrl-X, or its code. */
static void key_text(int ch, char *buf, size_t n)
{
    if (ch > ' ' && ch < 127)
        snprintf(buf, n, "'%c'", ch);
    else if (ch == '\r' || ch == '\n')
        snprintf(buf, n, "Enter");
    else if (ch == 27)
        snprintf(buf, n, "Esc");
    else if (ch == 127 || ch == 8)
        snprintf(buf, n, "Backspace");
    else if (ch == '\t')
        snprintf(buf, n, "Tab");
    else if (ch == ' ')
        snprintf(buf, n, "space");
    else if (ch > 0 && ch < 27)
        snprintf(buf, n, "Ctrl-%c", 'A' + ch - 1);
    else
        snprintf(buf, n, "code %d", ch);
}

/* The window's keys for the lesson: quit, help, the tabs, the steps, answers, the panels, the
 * presenter's keys, scrolling. */
static void lesson_key(struct app *a, struct tab *t, int ch)
{
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
    case '6':
    case '7':
    case '8':
    case '9':
    case 'L':
        if (tab_of_key(a, ch) < 0) {
            eventlog_add(&a->log, "no lesson on key %c (%s: %s)", ch, a->tab_keys, a->tab_what);
            a->dirty = true;
        } else
            switch_tab(a, tab_of_key(a, ch));
        break;
    case KEY_TAB: switch_tab(a, a->cur + 1); break;
    case KEY_BTAB: switch_tab(a, a->cur - 1); break;
    case ']':
    case '[':
        if (t->lesson && (ch == ']' ? t->step + 1 < t->lesson->nsteps : t->step > 0)) {
            pause_playing(a);
            show_step(a, t, ch == ']' ? t->step + 1 : t->step - 1, true);
        } else if (t->lesson) {
            eventlog_add(&a->log, ch == ']' ? "the last step" : "the first step");
            a->dirty = true;
        }
        break;
    case 'a': start_answer(a); break;
    case 'v': swap_panel(a); break;
    case 'A': autoplay_start(a); break;
    case 'g': /* only when the panel does not use g (lesson 1's growth, the Lab's GPUs) */
    case 'G':
        a->jumping = true;
        a->jump[0] = '\0';
        a->dirty = true;
        break;
    case KEY_NPAGE:
    case KEY_PPAGE:
    case 'J':
    case 'K': {
        /* PgDn/PgUp a pane less two lines; J/K one line. */
        int page = layout_inner(a->lay.lesson).h - 2;
        int d = ch == 'J' ? 1 : ch == 'K' ? -1 : ch == KEY_NPAGE ? page : -page;
        t->scroll += d;
        if (t->scroll > t->max_scroll)
            t->scroll = t->max_scroll;
        if (t->scroll < 0)
            t->scroll = 0;
        a->dirty = true;
        break;
    }
    default: break;
    }
}

/* The window's keys for the live panel's time: play, one step, speed, reset. */
static void time_key(struct app *a, struct tab *t, int ch)
{
    switch (ch) {
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
        if (!t->ops->plays) {
            eventlog_add(&a->log, "%s: nothing plays here, so no speed", t->ops->title);
            a->dirty = true;
            break;
        }
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

/* A key of the window's own (help_app_key), after the panel passed on it. */
static void window_key(struct app *a, struct tab *t, int ch)
{
    if (ch > 0 && ch < 128 && strchr(" n+=-r", ch))
        time_key(a, t, ch);
    else
        lesson_key(a, t, ch);
}

static void app_key(struct app *a, int ch)
{
    struct tab *t = &a->tabs[a->cur];
    if (a->help) {
        if (help_key(ch, &a->help, &a->help_scroll))
            a->dirty = true;
        return;
    }
    if (a->ans.asking >= 0) {
        answer_key_app(a, ch);
        return;
    }
    if (a->jumping) {
        jump_key(a, ch);
        return;
    }
    if (a->autoplay) { /* the presenter takes over: any key pauses the walk, then does what it
                        * does without it (G N Enter jumps, space pauses the panel); A only
                        * pauses */
        autoplay_stop(a, ch == 'A' ? "paused" : "paused: A resumes");
        if (ch == 'A')
            return;
    }
    /* the window's own keys reach the lesson whatever the panel, unless its field has the
     * keys; the panel gets the others first */
    int r = a->panel_editing || !help_app_key(ch) ? t->ops->on_key(t->panel, ch) : 0;
    if (r & PANEL_REDRAW)
        a->dirty = true;
    if ((r & PANEL_ANIMATE) && !a->playing) { /* a key started something that moves */
        a->playing = true;
        a->last_tick = clock_now();
    }
    if (r & PANEL_QUIT)
        a->quit = true;
    if (r & PANEL_HANDLED)
        return;
    if (!help_app_key(ch) && ch != 'g') { /* nobody's key: say so, and where the keys are */
        if (ch >= 0 && ch < KEY_MIN) {
            char name[16];
            key_text(ch, name, sizeof name);
            eventlog_add(&a->log, "key %s does nothing in %s: ? lists the keys", name,
                         t->ops->title);
            a->dirty = true;
        }
        return;
    }
    window_key(a, t, ch);
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
    /* The lessons' own short titles if they fit, else ours ("1 Precision", then "1 Prec"). */
    struct tab_label labels[UI_MAX_TABS];
    int x[UI_MAX_TABS], w[UI_MAX_TABS], n = a->ntabs;
    struct ui_rect r = a->lay.tabs;
    for (int i = 0; i < n; i++)
        labels[i] = (struct tab_label){a->tabs[i].def.label, a->tabs[i].def.full};
    if (layout_tabs(labels, n, r.w, x, w) < 2)
        for (int i = 0; i < n; i++)
            labels[i] = (struct tab_label){a->tabs[i].def.full, a->tabs[i].def.brief};
    struct ui_canvas c = canvas_make(stdscr, r);
    layout_tabs(labels, n, r.w, x, w);
    int end = x[n - 1] + w[n - 1];
    for (int i = 0; i < n; i++) {
        bool on = i == a->cur;
        enum ui_role role = on ? ROLE_TAB_ACTIVE : ROLE_TAB;
        canvas_fill(&c, 0, x[i], w[i], role);
        char buf[64];
        const char *s =
            w[i] - 2 >= layout_text_width(labels[i].full) ? labels[i].full : labels[i].brief;
        size_t fit = layout_fit(s, strlen(s), w[i] - 2);
        snprintf(buf, sizeof buf, "%.*s", (int)fit, s);
        canvas_text(&c, 0, x[i] + 1, role, buf);
    }
    const char *brand = "scalelab";
    if (end + layout_text_width(brand) + 3 <= r.w)
        canvas_text(&c, 0, r.w - layout_text_width(brand) - 1, ROLE_DIM, brand);
}

static void draw_lesson(struct app *a, struct ui_canvas *out)
{
    struct tab *t = &a->tabs[a->cur];
    const struct ui_glyphs *g = theme_glyphs();
    char title[96];
    int n = snprintf(title, sizeof title, "%s", t->def.lab ? "The Lab" : "Lesson ");
    if (!t->def.lab)
        n += snprintf(title + n, sizeof title - (size_t)n, "%s", t->def.key);
    if (t->lesson && t->lesson->nsteps > 1)
        snprintf(title + n, sizeof title - (size_t)n, " %s step %zu of %zu", g->dot, t->step + 1,
                 t->lesson->nsteps);
    draw_box(stdscr, a->lay.lesson, title, a->ans.asking >= 0);
    struct ui_rect in = layout_inner(a->lay.lesson);
    in.x += 1;
    in.w -= 2;
    *out = canvas_make(stdscr, in);
    bool right[LESSON_MAX_QUESTIONS] = {false};
    const struct lessonpane_answer *ans = NULL;
    if (t->lesson) {
        ans = &t->answers[t->step * LESSON_MAX_QUESTIONS];
        for (int q = 0; q < LESSON_MAX_QUESTIONS; q++)
            right[q] = progress_correct(&a->progress, t->def.name, (int)t->step, q);
    }
    struct lessonpane_view v = {
        .lesson = t->lesson,
        .error = t->error,
        .step = t->step,
        .answers = ans,
        .right_before = right,
        .asking = a->ans.asking,
        .next = ans ? answer_next(&t->lesson->steps[t->step], ans) : -1,
        .input = a->ans.text,
        .input_error = a->ans.error,
        .ascii = a->ascii,
        .focus = t->show_q,
        .recap = NULL,
    };
    char recap[160];
    if (t->lesson && t->step + 1 == t->lesson->nsteps) {
        int total = 0;
        for (size_t i = 0; i < t->lesson->nsteps; i++)
            total += (int)t->lesson->steps[i].nquestions;
        v.recap = lessonpane_recap(recap, sizeof recap, progress_count(&a->progress, t->def.name),
                                   total, t->spent + clock_now() - a->tab_since);
    }
    /* Count the lines first, to keep the scroll in range and bring a question into view,
     * then draw. */
    struct ui_canvas none = canvas_make(stdscr, (struct ui_rect){in.y, in.x, 0, in.w});
    int focus[2] = {-1, -1};
    int total = lessonpane_draw(&v, &none, 0, focus);
    t->max_scroll = total > in.h ? total - in.h : 0;
    if (t->show_q >= 0 && focus[0] >= 0) {
        /* all of the question if it fits, else its start */
        if (t->scroll > focus[0] || focus[1] - focus[0] >= in.h)
            t->scroll = focus[0];
        else if (focus[1] >= t->scroll + in.h)
            t->scroll = focus[1] - in.h + 1;
        t->show_q = -1;
    }
    if (t->scroll > t->max_scroll)
        t->scroll = t->max_scroll;
    lessonpane_draw(&v, out, t->scroll, NULL);
    /* More below or above: say so on the bottom border. */
    if (t->max_scroll) {
        char more[48];
        snprintf(more, sizeof more, " %s ", t->scroll < t->max_scroll ? "PgDn more" : "PgUp back");
        struct ui_rect b = a->lay.lesson;
        struct ui_canvas bc = canvas_make(stdscr, (struct ui_rect){b.y + b.h - 1, b.x, 1, b.w});
        canvas_text(&bc, 0, b.w - 2 - layout_text_width(more), ROLE_KEY, more);
    }
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

static void draw_events(const struct app *a, int give)
{
    struct ui_rect r = a->lay.events;
    r.h -= give; /* its last rows given to the hints, which sit below it */
    struct ui_canvas c = canvas_make(stdscr, r);
    for (int i = 0; i < r.h; i++) {
        const char *s = eventlog_get(&a->log, (unsigned long)(r.h - 1 - i));
        if (s)
            canvas_text(&c, i, 1, i == r.h - 1 ? ROLE_TEXT : ROLE_DIM, s);
    }
}

/* The hints for the app's state now (ui/hints.h), brief or not; their text in buf. */
static int app_hints(const struct app *a, bool panel_editing, bool brief, struct hint *h,
                     char (*buf)[24])
{
    const struct tab *t = &a->tabs[a->cur];
    const struct lesson_step *st = t->lesson ? &t->lesson->steps[t->step] : NULL;
    struct hint_state hs = {.jump = a->jumping ? a->jump : NULL,
                            .autoplay = a->autoplay,
                            .answering = a->ans.asking >= 0,
                            .editing = panel_editing,
                            .question = st && st->nquestions,
                            .next_view = t->nviews > 1 ? next_view(t)->name : NULL,
                            .panel = t->ops,
                            .playing = a->playing,
                            .tab_keys = a->tab_keys,
                            .brief = brief};
    return hints_list(&hs, h, buf);
}

/* The hint line laid out in rows rows of width columns: the hints, where each goes, the play
 * status at the right of the last row ("playing 2x", or "" when nothing plays). */
struct hint_line {
    struct hint h[HINTS_MAX];
    struct hint_place at[HINTS_MAX];
    char buf[HINTS_MAX][24], status[32];
    int n, placed, reserve;
};

static void hint_line(const struct app *a, bool panel_editing, bool brief, int width, int rows,
                      struct hint_line *hl)
{
    const struct tab *t = &a->tabs[a->cur];
    hl->n = app_hints(a, panel_editing, brief, hl->h, hl->buf);
    hl->status[0] = '\0';
    if (t->ops->plays && (a->playing || a->speed))
        snprintf(hl->status, sizeof hl->status, "%s %gx", a->playing ? "playing" : "paused",
                 speed_factor(a->speed));
    hl->reserve = hl->status[0] ? layout_text_width(hl->status) + 2 : 0;
    hl->placed = hints_place(hl->h, hl->n, width, rows, hl->reserve, hl->at);
}

/* The hints' rows, and whether brief: all in one row; else brief in one; else brief in two
 * (the events give up a row). */
static int hint_rows(const struct app *a, bool panel_editing, bool *brief)
{
    struct hint_line hl;
    for (int b = 0; b < 2; b++) {
        hint_line(a, panel_editing, b, a->lay.hints.w, 1, &hl);
        *brief = b;
        if (hl.placed == hl.n)
            return 1;
    }
    return a->lay.events.h > 1 ? 2 : 1;
}

/* The hint line (rows rows, the last the window's): the app's keys, then the panel's. */
static void draw_hints(const struct app *a, bool panel_editing, bool brief, int rows)
{
    struct ui_rect r = a->lay.hints;
    r.y -= rows - 1, r.h = rows;
    struct ui_canvas c = canvas_make(stdscr, r);
    struct hint_line hl;
    hint_line(a, panel_editing, brief, r.w, rows, &hl);
    for (int i = 0; i < hl.placed; i++) {
        int x = canvas_text(&c, hl.at[i].row, hl.at[i].x, ROLE_KEY, hl.h[i].k);
        canvas_text(&c, hl.at[i].row, x + 1, ROLE_DIM, hl.h[i].w);
    }
    if (hl.status[0])
        canvas_text(&c, rows - 1, r.w - hl.reserve + 1, a->playing ? ROLE_GOOD : ROLE_DIM,
                    hl.status);
}

/* The window's account of itself for `scalelab bench --only window`, which times keys by it:
 * with $SCALELAB_FRAME_FD naming a socket, a line "KEYS BUSY" each time a frame goes to the
 * terminal and each time the live panel stops being busy without one (KEYS: the keys read so
 * far; BUSY: 1 while the panel's work goes on elsewhere, else 0). Never waits: a line the
 * socket cannot take now is dropped, and a socket gone ends the account. */
static void note_frame(struct app *a)
{
    if (a->frame_fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof line, "%lu %d\n", a->keys, a->busy);
    if (send(a->frame_fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN &&
        errno != EWOULDBLOCK)
        a->frame_fd = -1;
}

/* The frame into curses' screen; to the terminal too when flush is set. */
static void draw_frame(struct app *a, bool flush)
{
    erase();
    struct ui_canvas pc = {0};
    pc.cursor_y = -1;
    if (a->lay.too_small) {
        draw_too_small(a);
    } else {
        struct ui_canvas lc;
        draw_tabs(a);
        draw_lesson(a, &lc);
        draw_panel(a, &pc);
        if (lc.cursor_y >= 0)
            pc = lc; /* the answer field has the keys, so the cursor */
        a->panel_editing = pc.cursor_y >= 0 && lc.cursor_y < 0;
        /* the panel shows a cursor: it has an input field (the hints say its keys) */
        bool brief;
        int rows = hint_rows(a, pc.cursor_y >= 0, &brief);
        draw_events(a, rows - 1);
        draw_hints(a, pc.cursor_y >= 0, brief, rows);
        if (a->help)
            help_draw(a->tabs[a->cur].ops, a->tab_keys, a->tab_what, a->lay.rows, a->lay.cols,
                      a->help_scroll);
    }
    if (pc.cursor_y >= 0 && !a->help) {
        curs_set(1);
        wmove(stdscr, pc.r.y + pc.cursor_y, pc.r.x + pc.cursor_x);
    } else {
        curs_set(0);
    }
    wnoutrefresh(stdscr);
    if (flush) {
        doupdate();
        note_frame(a);
    }
}

static void relayout(struct app *a)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    layout_compute(rows, cols, &a->lay);
    a->dirty = true;
}

/* ---- the loop ---- */

/* What the live panel's work elsewhere has done (ui/panel.h): polled after every turn that
 * handled something, then each frame while it says it is busy. */
static void poll_panel(struct app *a)
{
    struct tab *t = &a->tabs[a->cur];
    int r = 0;
    if (t->ops->on_event) {
        struct panel_event ev = {PANEL_POLL, 0, speed_factor(a->speed)};
        r = t->ops->on_event(t->panel, &ev);
    }
    a->busy = r & PANEL_BUSY;
    if (r & PANEL_REDRAW)
        a->dirty = true;
    if (r & PANEL_QUIT)
        a->quit = true;
}

static int run_loop(struct app *a, struct error *e)
{
    relayout(a);
    a->busy = true; /* the panels opened may have started work */
    while (!a->quit && !term_signal()) {
        bool was_busy = a->busy;
        if (a->busy)
            poll_panel(a);
        if (a->dirty) {
            draw_frame(a, true);
            a->dirty = false;
        } else if (was_busy && !a->busy) {
            note_frame(a);
        }
        struct pollfd p[2] = {{STDIN_FILENO, POLLIN, 0}, {term_wake_fd(), POLLIN, 0}};
        int wait = a->playing || a->busy ? FRAME_MS : -1;
        if (a->autoplay) { /* wake for the next step */
            double left = (a->next_at - clock_now()) * 1000.0;
            int ms = left > 0 ? (int)left + 1 : 0;
            wait = wait < 0 || ms < wait ? ms : wait;
        }
        int r = poll(p, 2, wait);
        if (term_signal())
            break;
        if (r < 0 && errno != EINTR)
            return error_set(e, ERR_RUN, "waiting for keys: %s", strerror(errno));
        term_drain();
        if (r > 0 && (p[0].revents & (POLLHUP | POLLERR | POLLNVAL)) && !(p[0].revents & POLLIN)) {
            term_hangup(); /* the terminal went away */
            break;
        }
        int ch;
        while (!a->quit && (ch = wgetch(stdscr)) != ERR) {
            if (ch == KEY_RESIZE)
                relayout(a);
            else
                app_key(a, ch);
            a->keys++;
            a->busy = true; /* whatever the key did, the live panel is asked what it started */
            if (a->dirty && !a->quit) /* a frame per key, in curses' screen: the next key
                                       * sees whether a field has the keys now */
                draw_frame(a, false);
        }
        /* the keys read, once the panel has been polled, in one frame (the loop's top) */
        autoplay_tick(a);
        if (a->playing) {
            double now = clock_now();
            double dt = now - a->last_tick;
            if (dt * 1000.0 >= FRAME_MS * 0.9) {
                a->last_tick = now;
                panel_event(a, PANEL_TICK, dt * speed_factor(a->speed));
                a->dirty = true;
                a->busy = true;
            }
        }
    }
    return 0;
}

static void close_tabs(struct app *a)
{
    for (int i = 0; i < a->ntabs; i++) {
        struct tab *t = &a->tabs[i];
        for (int k = 0; k < t->nkept; k++)
            t->kept[k].ops->fini(t->kept[k].state);
        lesson_free(t->lesson);
        free(t->answers);
    }
}

int ui_run(const struct ui_options *o, struct error *e)
{
    int rc = termcheck(e);
    if (rc < 0 || (rc = datadir_check(e)) < 0) /* the folder, before a file of it is missing */
        return rc;
    struct app *a = calloc(1, sizeof *a);
    if (!a)
        return error_set(e, ERR_NOMEM, "out of memory");
    const char *fd = getenv("SCALELAB_FRAME_FD");
    a->frame_fd = fd && *fd ? (int)strtol(fd, NULL, 10) : -1;
    if ((rc = term_start(o->ascii, &a->ascii, e)) < 0)
        goto out;
    a->ans.asking = -1;
    a->tab_since = clock_now();
    /* welcome first: what loading finds wrong (a skipped progress line) is then the newest */
    eventlog_add(&a->log, "welcome: ? lists the keys, q quits");
    if ((rc = load_lessons(a, e)) < 0)
        goto out;
    if (o->autoplay_s > 0 && a->progress_file[0]) {
        /* a demo walks the steps for an audience: the presenter's own place is left alone */
        a->progress_file[0] = '\0';
        eventlog_add(&a->log, "autoplay: this session leaves your saved progress alone");
    }
    for (int i = 0; i < a->ntabs && o->lesson[0]; i++)
        if (!strcmp(a->tabs[i].def.name, o->lesson))
            a->cur = i;
    if (o->lesson[0]) {
        struct tab *t = &a->tabs[a->cur];
        if (o->step >= 0 && t->lesson)
            show_step(a, t, (size_t)o->step, true);
        else if (t->lesson && t->lesson->nsteps > 1) /* where --lesson opens it, and why */
            eventlog_add(&a->log, "%s%s opens at step %zu of %zu%s",
                         t->def.lab ? "the Lab" : "lesson ", t->def.lab ? "" : t->def.key,
                         t->step + 1, t->lesson->nsteps,
                         t->step ? ", where you left it (--step 1: the first)" : "");
    }
    if (o->autoplay_s > 0) {
        a->autoplay_s = o->autoplay_s;
        autoplay_start(a);
    }
    if (!a->fatal.code)
        rc = run_loop(a, e);
    if (rc >= 0 && a->fatal.code) {
        *e = a->fatal;
        rc = a->fatal.code;
    }
out:
    term_restore();
    if (a->ntabs && a->tabs[a->cur].lesson) {
        snprintf(a->progress.current, sizeof a->progress.current, "%s", a->tabs[a->cur].def.name);
        save_progress(a);
    }
    close_tabs(a);
    int sig = term_signal();
    if (rc >= 0 && !sig && a->save_err.code) { /* the learner leaves believing it saved */
        *e = a->save_err;
        rc = ERR_IO;
    }
    free(a);
    if (rc < 0)
        return rc;
    return sig ? 128 + sig : 0;
}
