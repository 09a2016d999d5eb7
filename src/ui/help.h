/* The help overlay (?): the window's keys and the live panel's, with the panel's about text,
 * in two columns when the screen has room, scrolled when it has not. */
#ifndef SCALELAB_UI_HELP_H
#define SCALELAB_UI_HELP_H

#include <stdbool.h>

struct panel_ops;

/* Draws the help over a rows x cols screen (stdscr), the panel's keys beside the window's,
 * scrolled by scroll rows (at most as far as it goes); tab_keys and tab_what say the keys of
 * the tabs ("1-5 L", "lesson 1-5, the Lab": ui/tabs.h). */
void help_draw(const struct panel_ops *panel, const char *tab_keys, const char *tab_what, int rows,
               int cols, int scroll);

/* Whether ch is one of the window's own keys, as the help lists them (digits, L, Tab, ] [,
 * the scroll keys, a, v, space, n, + = -, r, ?, Esc, q, G, A): the app takes them before the
 * live panel, so that they always reach the lesson, unless the panel's input field has the
 * keys. (g jumps too, where the panel does not use it.) */
bool help_app_key(int ch);

/* A key while the help is open: Esc, ? and q close it (*open = false), Up/Down and k/j
 * scroll it. Whether the key changed anything. */
bool help_key(int ch, bool *open, int *scroll);

#endif
