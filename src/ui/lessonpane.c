/* The lesson pane: a step's title, paragraphs, lists and questions, wrapped to the pane and
 * scrolled (ui/lessonpane.h). */
#include "config.h"
#include "ui/lessonpane.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lesson/ascii.h"
#include "lesson/lesson.h"
#include "ui/draw.h"
#include "ui/layout.h"

#define TEXT_MAX 16384 /* a step's text; the parser caps steps well below this */

/* The lines of the pane are produced block by block; each block is wrapped and drawn (when in
 * view) or only counted. */
struct pen {
    struct ui_canvas *c;
    int scroll, line; /* the first line shown; the next line's number */
    bool ascii;
    int cursor_y, cursor_x; /* where the answer field's cursor goes, or -1 */
};

/* Emits the wrapped lines of one line of text (no '\n' in its first len bytes). */
static void emit(struct pen *p, enum ui_role role, int indent, const char *text, size_t len)
{
    int w = p->c->r.w - indent;
    if (w < 1)
        w = 1;
    char buf[LESSON_LINE_MAX + 64];
    if (len >= sizeof buf)
        len = sizeof buf - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    struct wrap_line lines[128];
    int n = layout_wrap(buf, w, lines, 128);
    if (n > 128)
        n = 128;
    if (n == 0) /* an empty line */
        n = 1, lines[0] = (struct wrap_line){0, 0};
    /* A line written with a leading space (a table row) that does not fit: its continuation
     * lines hang under its last column (after the last run of two spaces). */
    int hang = 0;
    if (buf[0] == ' ' && n > 1) {
        const char *col = NULL;
        for (const char *q = strstr(buf, "  "); q; q = strstr(q + 1, "  "))
            col = q;
        if (col) {
            while (*col == ' ')
                col++;
            for (const char *q = buf; q < col; q++)
                hang += ((unsigned char)*q & 0xC0) != 0x80;
        }
        if (hang > w / 2)
            hang = 0;
    }
    /* A list item's continuation lines hang under its text, after the "- " */
    if (!hang && (buf[0] == '-' || buf[0] == '*') && buf[1] == ' ' && n > 1 && w > 8)
        hang = 2;
    if (hang && n > 1) {
        size_t rest = lines[0].start + lines[0].len;
        while (buf[rest] == ' ')
            rest++;
        struct wrap_line more[127];
        int m = layout_wrap(buf + rest, w - hang, more, 127);
        n = 1 + (m > 127 ? 127 : m);
        for (int i = 1; i < n; i++)
            lines[i] = (struct wrap_line){rest + more[i - 1].start, more[i - 1].len};
    }
    char out[LESSON_LINE_MAX + 64];
    for (int i = 0; i < n; i++, p->line++) {
        int y = p->line - p->scroll;
        if (y < 0 || y >= p->c->r.h)
            continue;
        memcpy(out, buf + lines[i].start, lines[i].len);
        out[lines[i].len] = '\0';
        canvas_text(p->c, y, indent + (i ? hang : 0), role, out);
    }
}

/* A block of text: its lines ('\n'-separated) wrapped to the pane. */
static void block(struct pen *p, enum ui_role role, int indent, const char *text)
{
    static char conv[TEXT_MAX];
    if (p->ascii) {
        ascii_line(conv, sizeof conv, text);
        text = conv;
    }
    for (;;) {
        size_t len = strcspn(text, "\n");
        emit(p, role, indent, text, len);
        text += len;
        if (!*text || !*++text) /* the end, or a newline that ends the text */
            break;
    }
}

static void question(struct pen *p, const struct lessonpane_view *v, size_t qi)
{
    const struct lesson_question *q = &v->lesson->steps[v->step].questions[qi];
    const struct lessonpane_answer *a = &v->answers[qi];
    char buf[LESSON_LINE_MAX + 64];
    block(p, ROLE_TEXT, 0, "");
    snprintf(buf, sizeof buf, "Question %zu. %s", qi + 1, q->text);
    block(p, ROLE_TITLE, 0, buf);
    for (size_t o = 0; o < q->noptions; o++) {
        snprintf(buf, sizeof buf, "%c) %s", (int)('a' + o), q->options[o]);
        block(p, ROLE_TEXT, 2, buf);
    }
    if ((int)qi == v->asking) {
        snprintf(buf, sizeof buf, "> %s", v->input);
        int y = p->line - p->scroll;
        canvas_fill(p->c, y, 0, p->c->r.w, ROLE_INPUT);
        block(p, ROLE_INPUT, 0, buf);
        if (y >= 0 && y < p->c->r.h) {
            p->cursor_y = y;
            p->cursor_x = 2 + layout_text_width(v->input);
        }
        if (v->input_error && *v->input_error)
            block(p, ROLE_ERROR, 0, v->input_error);
        else
            block(p, ROLE_DIM, 0,
                  q->kind == LESSON_Q_CHOICE ? "a letter, then Enter (Esc cancels)"
                  : *q->unit                 ? "a number, in the unit asked or another, then Enter"
                                             : "a number, then Enter (Esc cancels)");
        return;
    }
    if (a->state == 0) {
        if (v->right_before && v->right_before[qi])
            block(p, ROLE_GOOD, 0, "answered right before");
        else if ((int)qi == v->next)
            block(p, ROLE_DIM, 0, "press a to answer");
        return;
    }
    char want[128];
    lesson_format_answer(q, want, sizeof want);
    if (a->state == 1)
        snprintf(buf, sizeof buf, "%s: right.", a->text);
    else if (a->state == LESSONPANE_SHOWN)
        snprintf(buf, sizeof buf, "%s: that is the answer shown before, %s; not scored.", a->text,
                 want);
    else
        snprintf(buf, sizeof buf, "%s: not quite; the answer is %s.", a->text, want);
    block(p,
          a->state == 1                  ? ROLE_GOOD
          : a->state == LESSONPANE_SHOWN ? ROLE_DIM
                                         : ROLE_ERROR,
          0, buf);
    if (*q->explain) {
        /* The @explain lines form one paragraph, unless a line starts with a space. */
        char *ex = strdup(q->explain);
        if (ex) {
            for (char *nl = strchr(ex, '\n'); nl; nl = strchr(nl + 1, '\n'))
                if (nl[1] != ' ')
                    *nl = ' ';
            block(p, ROLE_DIM, 0, ex);
            free(ex);
        }
    }
}

int lessonpane_draw(const struct lessonpane_view *v, struct ui_canvas *c, int scroll, int *focus)
{
    struct pen p = {c, scroll, 0, v->ascii, -1, -1};
    if (!v->lesson) {
        block(&p, ROLE_ERROR, 0, v->error ? v->error : "no lesson");
        return p.line;
    }
    const struct lesson *l = v->lesson;
    char buf[LESSON_LINE_MAX + 64];
    if (v->step == 0) { /* the lesson's head: what it is and what it gives */
        if (l->minutes)
            snprintf(buf, sizeof buf, "%s (%d min)", l->title, l->minutes);
        else
            snprintf(buf, sizeof buf, "%s", l->title);
        block(&p, ROLE_TITLE, 0, buf);
        block(&p, ROLE_DIM, 0, "You will be able to");
        for (size_t i = 0; i < l->noutcomes; i++) {
            int y = p.line - p.scroll;
            block(&p, ROLE_DIM, 2, l->outcomes[i]);
            canvas_text(c, y, 0, ROLE_DIM, "-");
        }
        block(&p, ROLE_TEXT, 0, "");
    }
    const struct lesson_step *s = &l->steps[v->step];
    block(&p, ROLE_TITLE, 0, s->title);
    block(&p, ROLE_TEXT, 0, "");
    char *text = malloc(TEXT_MAX);
    if (text) {
        layout_join(s->text, s->ntext, text, TEXT_MAX);
        block(&p, ROLE_TEXT, 0, text);
        free(text);
    }
    for (size_t r = 0; r < s->nruns; r++) {
        block(&p, ROLE_TEXT, 0, "");
        snprintf(buf, sizeof buf, "Headless: scalelab %s", s->runs[r].cmdline);
        block(&p, ROLE_DIM, 0, buf);
    }
    for (size_t q = 0; q < s->nquestions; q++) {
        if (focus && (int)q == v->focus)
            focus[0] = p.line + 1; /* after the blank line */
        question(&p, v, q);
        if (focus && (int)q == v->focus)
            focus[1] = p.line - 1;
    }
    block(&p, ROLE_TEXT, 0, "");
    if (v->step + 1 == l->nsteps && v->recap) { /* what the learner did */
        block(&p, ROLE_TITLE, 0, "Recap");
        block(&p, ROLE_TEXT, 0, v->recap);
        block(&p, ROLE_TEXT, 0, "");
    }
    block(&p, ROLE_DIM, 0,
          v->step + 1 < l->nsteps ? "] next step, [ back" : "The last step; [ goes back.");
    if (p.cursor_y >= 0)
        canvas_cursor(c, p.cursor_y, p.cursor_x);
    return p.line;
}

int lessonpane_score(int before, bool correct)
{
    if (!correct)
        return -1;
    return before < 0 || before == LESSONPANE_SHOWN ? LESSONPANE_SHOWN : 1;
}

char *lessonpane_recap(char *buf, size_t n, int right, int total, double seconds)
{
    long min = lround(seconds / 60.0);
    if (total > 0)
        snprintf(buf, n, "You answered %d of %d question%s right; ", right, total,
                 total == 1 ? "" : "s");
    else
        snprintf(buf, n, "This lesson asks no question; ");
    size_t used = strlen(buf);
    if (min < 1)
        snprintf(buf + used, n - used, "under a minute on this lesson in this session.");
    else
        snprintf(buf + used, n - used, "%ld min on this lesson in this session.", min);
    return buf;
}
