/* The window's look in one table: colours or monochrome attributes per role, UTF-8 or ASCII
 * line drawing (ui/theme.h). */
#include "config.h"
#include "ui/theme.h"

/* One row per role: colours (foreground, background; -1 is the terminal's default), the
 * attributes added in colour, and the attributes used alone in monochrome. */
static const struct {
    short fg, bg;
    attr_t color, mono;
} roles[ROLE_COUNT] = {
    [ROLE_TEXT] = {-1, -1, A_NORMAL, A_NORMAL},
    [ROLE_DIM] = {-1, -1, A_DIM, A_NORMAL},
    [ROLE_TITLE] = {COLOR_CYAN, -1, A_BOLD, A_BOLD},
    [ROLE_BORDER] = {COLOR_BLUE, -1, A_NORMAL, A_NORMAL},
    [ROLE_TAB] = {-1, -1, A_NORMAL, A_NORMAL},
    [ROLE_TAB_ACTIVE] = {COLOR_BLACK, COLOR_CYAN, A_BOLD, A_REVERSE | A_BOLD},
    [ROLE_KEY] = {COLOR_YELLOW, -1, A_BOLD, A_BOLD},
    [ROLE_SELECTED] = {-1, -1, A_BOLD, A_BOLD},
    [ROLE_INPUT] = {COLOR_WHITE, COLOR_BLUE, A_BOLD, A_UNDERLINE},
    [ROLE_ERROR] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [ROLE_GOOD] = {COLOR_GREEN, -1, A_BOLD, A_BOLD},
    [ROLE_WARN] = {COLOR_YELLOW, -1, A_NORMAL, A_UNDERLINE},
    [ROLE_SIGN] = {COLOR_RED, -1, A_BOLD, A_BOLD},
    [ROLE_EXP] = {COLOR_GREEN, -1, A_BOLD, A_UNDERLINE},
    [ROLE_MAN] = {COLOR_YELLOW, -1, A_NORMAL, A_NORMAL},
    [ROLE_BAR] = {COLOR_CYAN, -1, A_NORMAL, A_REVERSE},
    [ROLE_MOVED] = {COLOR_BLACK, COLOR_YELLOW, A_BOLD, A_REVERSE | A_BOLD},
};

static const struct ui_glyphs utf8 = {
    .h = "\u2500", /* ─ ╭ ╮ ╰ ╯ (rounded corners) */
    .v = "\u2502",
    .tl = "\u256d",
    .tr = "\u256e",
    .bl = "\u2570",
    .br = "\u256f",
    .sel = "\u25b8", /* ▸ */
    .dot = "\u00b7", /* · */
    .eighths = {"", "\u258f", "\u258e", "\u258d", "\u258c", "\u258b", "\u258a", "\u2589"},
    .bar = "\u2588",       /* █ */
    .bar_empty = "\u2591", /* ░ */
    .ellipsis = "\u2026",
    .shade = "\u2592",  /* ▒ */
    .marker = "\u25bc", /* ▼ */
};

static const struct ui_glyphs ascii = {
    .h = "-",
    .v = "|",
    .tl = "+",
    .tr = "+",
    .bl = "+",
    .br = "+",
    .sel = ">",
    .dot = "|",
    .eighths = {"", "#", "#", "#", "#", "#", "#", "#"},
    .bar = "#",
    .bar_empty = ".",
    .ellipsis = "~",
    .shade = ":",
    .marker = "v",
};

static bool use_color, use_ascii;

void theme_init(bool color, bool ascii_only)
{
    use_color = color;
    use_ascii = ascii_only;
    if (!color)
        return;
    start_color();
    /* Without default colours (-1), fall back to white on black. */
    bool dflt = use_default_colors() == OK;
    for (int r = 0; r < ROLE_COUNT; r++) {
        short fg = roles[r].fg, bg = roles[r].bg;
        if (!dflt && fg < 0)
            fg = COLOR_WHITE;
        if (!dflt && bg < 0)
            bg = COLOR_BLACK;
        init_pair((short)(r + 1), fg, bg);
    }
}

bool theme_color(void)
{
    return use_color;
}

bool theme_ascii(void)
{
    return use_ascii;
}

attr_t theme_attr(enum ui_role r)
{
    if (use_color)
        return COLOR_PAIR(r + 1) | roles[r].color;
    return roles[r].mono;
}

const struct ui_glyphs *theme_glyphs(void)
{
    return use_ascii ? &ascii : &utf8;
}
