/* The window's tabs, made from the lessons folder: one per lesson file, in the files' order,
 * so a new lesson is a new file (numbered before the Lab's 90) and nothing here changes. A
 * tab's key is its lesson's number (1 to 9) or L for the Lab (lesson/lesson.h's LESSON_LAB);
 * its labels, widest first, are the key with the lesson's @short, then with its @tab forms;
 * the keys the hints and the help name ("1-5 L") come from the same list. Pure functions of
 * the lessons read, no curses. */
#ifndef SCALELAB_UI_TABS_H
#define SCALELAB_UI_TABS_H

#include <stdbool.h>
#include <stddef.h>

struct lesson;

#define UI_MAX_TABS 16

struct ui_tab {
    char key[4];   /* "1".."9", "L", or "" (a lesson past 9: Tab reaches it) */
    char name[32]; /* the lesson's name ("mixed-precision"), its progress's key */
    bool lab;
    char label[48], full[40], brief[16]; /* "1 Mixed precision", "1 Precision", "1 Prec" */
};

/* The tab of the lesson read from file path (l NULL: it could not be read; its labels are the
 * file's name). */
void tabs_make(const struct lesson *l, const char *path, struct ui_tab *out);

/* The keys of the tabs, as the hints and the help say them: "1-5 L" and "lesson 1-5, the Lab"
 * (a single lesson: "1", "lesson 1"). */
void tabs_keys(const struct ui_tab *t, int n, char *keys, size_t kn, char *what, size_t wn);

#endif
