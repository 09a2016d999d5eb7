/* The terminal's life for the window (ui/term.h): curses set up and restored, and the
 * signals.
 *
 * SIGINT, SIGTERM and SIGHUP set a flag that ends the loop (the terminal is then restored);
 * SIGWINCH goes to ncurses' own handler, and the next wgetch() returns KEY_RESIZE. A signal
 * sent to the process may be taken by any thread that does not block it, and OpenBLAS starts
 * a thread of its own before main(), so a handler that only set a flag could leave the UI
 * thread asleep in poll(). Each handler therefore also writes a byte to a pipe that poll()
 * watches (the self-pipe trick; write() is async-signal-safe), which wakes the UI thread
 * whichever thread ran the handler, and leaves no gap between testing the flag and going to
 * sleep. */
#include "config.h"
#include "ui/term.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "ui/theme.h"

/* Written by signal handlers, which may run on another thread: lock-free atomics, which are
 * both async-signal-safe and free of data races (a volatile sig_atomic_t is only the first). */
typedef void (*signal_fn)(int);
static atomic_int got_signal;
static atomic_int wake_fd = -1;          /* the pipe's write end, for the handlers */
static _Atomic(signal_fn) ncurses_winch; /* ncurses' SIGWINCH handler, which ours calls */
static SCREEN *screen;
/* The pipe stays open until the process ends: a handler running on another thread may still
 * be about to write to it when the window closes. */
static int wake_pipe[2] = {-1, -1};

static void wake(void)
{
    int saved = errno;
    int fd = atomic_load(&wake_fd);
    if (fd >= 0) {
        ssize_t n = write(fd, "", 1); /* a full pipe already wakes the loop */
        (void)n;
    }
    errno = saved;
}

static void on_signal(int sig)
{
    atomic_store(&got_signal, sig);
    wake();
}

static void on_winch(int sig)
{
    signal_fn f = atomic_load(&ncurses_winch);
    if (f)
        f(sig);
    wake();
}

/* Every way out goes through here: quit, a signal, an error, exit() from anywhere (atexit).
 * endwin() gives the terminal back (normal screen, cursor, modes); delscreen() frees the
 * screen. What ncurses keeps after that (terminfo caches) stays reachable, so LeakSanitizer
 * reports nothing and needs no suppression; Debian's ncurses is built without the
 * --disable-leaks option that would let exit_curses() free it, so calling that gains nothing.
 * tests/tui/window.sh checks it: under ASan a leak would turn the exit status 0 into 23. */
void term_restore(void)
{
    if (!screen)
        return;
    curs_set(1);
    endwin();
    delscreen(screen);
    screen = NULL;
}

int term_start(bool ascii_wanted, bool *ascii, struct error *e)
{
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C"); /* numbers are read and written with a '.' */
    const char *cs = nl_langinfo(CODESET);
    *ascii = ascii_wanted || !cs || strcmp(cs, "UTF-8") != 0;

    if (wake_pipe[0] < 0) {
        if (pipe(wake_pipe) < 0)
            return error_set(e, ERR_RUN, "cannot make a pipe: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            fcntl(wake_pipe[i], F_SETFL, fcntl(wake_pipe[i], F_GETFL) | O_NONBLOCK);
            fcntl(wake_pipe[i], F_SETFD, FD_CLOEXEC);
        }
        atomic_store(&wake_fd, wake_pipe[1]);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    static bool registered;
    if (!registered) {
        atexit(term_restore);
        registered = true;
    }
    screen = newterm(NULL, stdout, stdin);
    if (!screen)
        return error_set(e, ERR_RUN, "the terminal could not be set up (TERM '%s')",
                         getenv("TERM"));
    set_term(screen);
    /* newterm installed ncurses' SIGWINCH handler; ours calls it, then wakes the loop. */
    struct sigaction cur;
    if (sigaction(SIGWINCH, NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
        cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN) {
        atomic_store(&ncurses_winch, cur.sa_handler);
        cur.sa_handler = on_winch;
        sigaction(SIGWINCH, &cur, NULL);
    }
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    const char *nc = getenv("NO_COLOR");
    theme_init(has_colors() && !(nc && *nc), *ascii);
    return 0;
}

int term_signal(void)
{
    return atomic_load(&got_signal);
}

void term_hangup(void)
{
    atomic_store(&got_signal, SIGHUP);
}

int term_wake_fd(void)
{
    return wake_pipe[0];
}

void term_drain(void)
{
    char drain[64];
    while (read(wake_pipe[0], drain, sizeof drain) > 0)
        continue;
}
