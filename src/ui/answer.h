/* The answer field of the lesson pane: which question a opens, and the line the learner types
 * an answer in (UTF-8 aware), checked against the question on Enter. */
#ifndef SCALELAB_UI_ANSWER_H
#define SCALELAB_UI_ANSWER_H

#include "base/error.h"
#include "lesson/lesson.h"
#include "ui/lessonpane.h"

struct answer_field {
    int asking;                       /* the question being answered, or -1: closed */
    char text[LESSONPANE_ANSWER_MAX]; /* what the learner has typed so far */
    char error[ERROR_MAX];            /* why the last answer could not be read, or "" */
};

/* The question a opens in step s, whose answers so far are ans: the first not yet answered,
 * else the first wrong one, else the first; -1 when the step asks none. */
int answer_next(const struct lesson_step *s, const struct lessonpane_answer *ans);

/* Opens the field, empty, for question q. */
void answer_open(struct answer_field *f, int q);

enum answer_outcome {
    ANSWER_EDITING, /* the text changed (or the answer could not be read: f->error says why) */
    ANSWER_CLOSED,  /* Esc: f->asking is -1 */
    ANSWER_CHECKED, /* Enter: *r holds the verdict; f->asking is still the question, for the
                     * caller to score it and close the field */
};

/* A key in the open field: a character, Backspace (one UTF-8 character), Ctrl-U (all), Esc,
 * Enter (checks f->text against q). */
enum answer_outcome answer_key(struct answer_field *f, int ch, const struct lesson_question *q,
                               struct lesson_result *r);

#endif
