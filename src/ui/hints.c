/* The key hints: which, and where (ui/hints.h). */
#include "config.h"
#include "ui/hints.h"

#include <stdio.h>
#include <string.h>

#include "ui/layout.h"
#include "ui/panel.h"

int hints_list(const struct hint_state *st, struct hint *h, char (*buf)[24])
{
    int n = 0, nb = 0;
    if (st->jump) {
        snprintf(buf[nb], sizeof buf[nb], "step %.16s_", st->jump);
        h[n++] = (struct hint){"G", buf[nb++]};
        h[n++] = (struct hint){"Enter", "go"};
        h[n++] = (struct hint){"Esc", "cancel"};
        return n;
    }
    if (st->autoplay) {
        h[n++] = (struct hint){"autoplay", "any key pauses"};
        h[n++] = (struct hint){"q", "quit"};
        return n;
    }
    if (st->answering || st->editing) {
        h[n++] = (struct hint){"Enter", st->answering ? "check the answer" : "apply"};
        h[n++] = (struct hint){"Esc", "cancel"};
        h[n++] = (struct hint){"Backspace", "delete"};
        h[n++] = (struct hint){"Ctrl-U", "clear"};
        return n;
    }
    h[n++] = (struct hint){"?", "help"};
    h[n++] = (struct hint){"q", "quit"};
    if (!st->brief)
        h[n++] = (struct hint){"] [", "step"};
    if (st->question && !st->brief)
        h[n++] = (struct hint){"a", "answer"};
    if (st->next_view)
        h[n++] = (struct hint){"v", st->next_view};
    for (const struct panel_key *k = st->panel->keys; k->keys && n < HINTS_MAX - 2; k++)
        if (k->brief) {
            snprintf(buf[nb], sizeof buf[nb], "%.*s", (int)strcspn(k->keys, " "), k->keys);
            h[n++] = (struct hint){buf[nb++], k->brief};
        }
    if (!st->brief)
        h[n++] = (struct hint){st->tab_keys ? st->tab_keys : "", "lessons"};
    if (st->panel->plays) /* a panel with nothing to play offers no space */
        h[n++] = (struct hint){"space", st->playing ? "pause" : "play"};
    return n;
}

int hints_place(const struct hint *h, int n, int width, int rows, int reserve,
                struct hint_place *out)
{
    int row = 0, x = 1;
    for (int i = 0; i < n; i++) {
        int need = layout_text_width(h[i].k) + 1 + layout_text_width(h[i].w);
        int right = row == rows - 1 ? width - reserve : width;
        if (x + need > right && row + 1 < rows) /* the next row */
            row++, x = 1, right = row == rows - 1 ? width - reserve : width;
        if (x + need > right)
            return i;
        out[i] = (struct hint_place){row, x};
        x += need + 2;
    }
    return n;
}
