/* The window's tabs from the lessons folder: keys, labels, the keys' summary (ui/tabs.h). */
#include "config.h"
#include "ui/tabs.h"

#include <stdio.h>
#include <string.h>

#include "lesson/lesson.h"

void tabs_make(const struct lesson *l, const char *path, struct ui_tab *out)
{
    memset(out, 0, sizeof *out);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *name = l ? l->name : base;
    int number = l ? l->number : -1;
    snprintf(out->name, sizeof out->name, "%s", name);
    out->lab = !strcmp(name, LESSON_LAB);
    if (out->lab)
        snprintf(out->key, sizeof out->key, "L");
    else if (number >= 1 && number <= 9)
        snprintf(out->key, sizeof out->key, "%d", number);
    const char *shrt = l ? l->short_title : name;
    /* @tab LABEL [BRIEF]: the label's word, then the brief one (the label's first letters) */
    char full[32], brief[8];
    const char *tab = l && l->tab ? l->tab : shrt;
    size_t n = strcspn(tab, " ");
    snprintf(full, sizeof full, "%.*s", (int)n, tab);
    const char *b = tab[n] ? tab + n + 1 : NULL;
    snprintf(brief, sizeof brief, "%.*s", b ? (int)strcspn(b, " ") : 4, b ? b : full);
    const char *sep = out->key[0] ? " " : "";
    snprintf(out->label, sizeof out->label, "%s%s%s", out->key, sep, shrt);
    snprintf(out->full, sizeof out->full, "%s%s%s", out->key, sep, full);
    snprintf(out->brief, sizeof out->brief, "%s%s%s", out->key, sep, brief);
}

void tabs_keys(const struct ui_tab *t, int n, char *keys, size_t kn, char *what, size_t wn)
{
    int lo = 0, hi = 0; /* the lessons' keys, 1 to 9 */
    bool lab = false;
    for (int i = 0; i < n; i++) {
        int k = t[i].key[0] >= '1' && t[i].key[0] <= '9' ? t[i].key[0] - '0' : 0;
        if (k && (!lo || k < lo))
            lo = k;
        if (k > hi)
            hi = k;
        lab |= t[i].lab;
    }
    char range[8] = "";
    if (lo)
        snprintf(range, sizeof range, lo == hi ? "%d" : "%d-%d", lo, hi);
    snprintf(keys, kn, "%s%s%s", range, lo && lab ? " " : "", lab ? "L" : "");
    snprintf(what, wn, "%s%s%s%s", lo ? "lesson " : "", range, lo && lab ? ", " : "",
             lab ? "the Lab" : "");
}
