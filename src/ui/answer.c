/* The lesson pane's answer field (ui/answer.h): the question to ask next, and the keys that
 * edit and submit an answer. Scoring it and saving progress are the app's. */
#include "config.h"
#include "ui/answer.h"

#include <curses.h>
#include <stdio.h>
#include <string.h>

#define KEY_ESC 27

int answer_next(const struct lesson_step *s, const struct lessonpane_answer *ans)
{
    if (!s || !s->nquestions)
        return -1;
    for (size_t q = 0; q < s->nquestions; q++)
        if (ans[q].state == 0)
            return (int)q;
    for (size_t q = 0; q < s->nquestions; q++)
        if (ans[q].state < 0)
            return (int)q;
    return 0;
}

void answer_open(struct answer_field *f, int q)
{
    f->asking = q;
    f->text[0] = f->error[0] = '\0';
}

enum answer_outcome answer_key(struct answer_field *f, int ch, const struct lesson_question *q,
                               struct lesson_result *r)
{
    size_t len = strlen(f->text);
    if (ch == KEY_ESC) {
        f->asking = -1;
        return ANSWER_CLOSED;
    }
    if (ch == '\r' || ch == '\n' || ch == KEY_ENTER) {
        struct error e = {0};
        if (lesson_check_answer(q, f->text, r, &e) < 0) {
            snprintf(f->error, sizeof f->error, "%s", e.msg);
            return ANSWER_EDITING;
        }
        return ANSWER_CHECKED;
    }
    if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        /* remove one UTF-8 character */
        while (len && ((unsigned char)f->text[len - 1] & 0xC0) == 0x80)
            len--;
        if (len)
            len--;
        f->text[len] = '\0';
    } else if (ch == 21) { /* Ctrl-U */
        f->text[0] = '\0';
    } else if (ch >= 32 && ch < 256 && ch != 127 && len + 1 < sizeof f->text) {
        f->text[len] = (char)ch;
        f->text[len + 1] = '\0';
        f->error[0] = '\0';
    }
    return ANSWER_EDITING;
}
