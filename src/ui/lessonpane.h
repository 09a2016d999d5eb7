/* The lesson pane: a lesson's step as text (the step's title, its paragraphs, its questions
 * with the learner's answers and their explanations), word-wrapped and scrolled. */
#ifndef SCALELAB_UI_LESSONPANE_H
#define SCALELAB_UI_LESSONPANE_H

#include <stdbool.h>
#include <stddef.h>

struct lesson;
struct ui_canvas;

#define LESSONPANE_ANSWER_MAX 48

/* A learner's answer to one question. */
struct lessonpane_answer {
    /* 0: not answered, 1: right, -1: wrong (the answer was shown), 2: right once the answer
     * had been shown, which is not scored */
    signed char state;
    char text[LESSONPANE_ANSWER_MAX];
};

/* The state an answer leaves, after `before`: a right answer typed once the right one was
 * shown (before < 0 or 2) is LESSONPANE_SHOWN, not 1. Pure. */
#define LESSONPANE_SHOWN 2
int lessonpane_score(int before, bool correct);

/* The last step's recap: "You answered 7 of 12 questions right; 23 min on this lesson in this
 * session." Pure. */
char *lessonpane_recap(char *buf, size_t n, int right, int total, double seconds);

struct lessonpane_view {
    const struct lesson *lesson; /* NULL: show error instead */
    const char *error;           /* why the lesson could not be read */
    size_t step;
    const struct lessonpane_answer *answers; /* the step's, one per question */
    const bool *right_before; /* per question: answered right in an earlier session */
    int asking;               /* the question being answered, or -1 */
    int next;                 /* the question a would open */
    const char *input;        /* what the learner has typed so far */
    const char *input_error;  /* why the last answer could not be read, or "" */
    bool ascii;               /* ASCII only */
    int focus;                /* a question whose lines to report (focus_from, focus_to), or -1 */
    const char *recap;        /* shown at the end of the last step (lessonpane_recap), or NULL */
};

/* Draws the view from wrapped line `scroll` on; returns the number of wrapped lines in all,
 * and in focus[0] and focus[1] (when not NULL) the first and the last line of question
 * v->focus. Sets the canvas cursor in the answer field while asking. */
int lessonpane_draw(const struct lessonpane_view *v, struct ui_canvas *c, int scroll, int *focus);

#endif
