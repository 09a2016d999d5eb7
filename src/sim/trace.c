/* A run's events written as Chrome trace-event JSON (Perfetto) or JSON lines, through a
 * temporary file and a rename (sim/trace.h). */
#include "config.h"
#include "sim/trace.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "sim/ledger.h"

/* A number as JSON (base/json.h: NaN and infinities are strings), read back exactly. */
static void num(FILE *f, double v)
{
    json_put_num(f, v, JSON_EXACT);
}

/* A string value, escaped (base/json.h). */
static void str(FILE *f, const char *s)
{
    json_put_str(f, s);
}

static double us(double t)
{
    return t * 1e6;
}

static void chrome_event(FILE *f, const struct event *ev)
{
    int d = ev->device;
    char name[96];
    switch (ev->type) {
    case EV_COMPUTE_BEGIN:
        fputs(",\n{\"name\":", f);
        str(f, ev->name);
        fprintf(f,
                ",\"cat\":\"compute\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
                "\"args\":{\"layer\":%d,\"micro\":%d,\"flops\":",
                d, ev->stream ? 2 + ev->stream : 0, us(ev->t), us(ev->t_end - ev->t), ev->layer,
                ev->micro);
        num(f, ev->flops);
        fputs("}}", f);
        break;
    case EV_SEND:
    case EV_RECV: {
        /* a receive is a mark at the arrival: receives from two peers may wait at once, and
         * slices on one track must nest */
        bool send = ev->type == EV_SEND;
        double t = send ? ev->t : ev->t_end, dur = send ? ev->t_end - ev->t : 1e-9;
        snprintf(name, sizeof name, "%s chunk %d %s GPU %d", ev->phase ? ev->phase : "", ev->chunk,
                 send ? "to" : "from", ev->peer);
        fputs(",\n{\"name\":", f);
        str(f, name);
        fprintf(f,
                ",\"cat\":\"comm\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.6f,\"dur\":%.6f,"
                "\"args\":{\"peer\":%d,\"bytes\":%llu,\"chunk\":%d,\"step\":%d,\"phase\":",
                d, send ? 1 : 2, us(t), us(dur), ev->peer, (unsigned long long)ev->bytes, ev->chunk,
                ev->step);
        str(f, ev->phase);
        fputs("}}", f);
        fprintf(f,
                ",\n{\"name\":\"hop\",\"cat\":\"comm\",\"ph\":\"%s\",%s\"id\":%llu,\"pid\":%d,"
                "\"tid\":%d,\"ts\":%.6f}",
                send ? "s" : "f", send ? "" : "\"bp\":\"e\",", (unsigned long long)ev->msg, d,
                send ? 1 : 2, us(t));
        break;
    }
    case EV_MEMORY:
        fprintf(f,
                ",\n{\"name\":\"memory\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.6f,"
                "\"args\":{\"bytes\":%llu}}",
                d, us(ev->t), (unsigned long long)ev->current);
        if (ev->category == MEM_ACTIVATIONS) /* the live activations' sawtooth */
            fprintf(f,
                    ",\n{\"name\":\"activations\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.6f,"
                    "\"args\":{\"bytes\":%llu}}",
                    d, us(ev->t), (unsigned long long)ev->cat_current);
        break;
    case EV_OOM:
    case EV_FAIL:
    case EV_NONFINITE:
        snprintf(name, sizeof name, "%s%s%s",
                 ev->type == EV_OOM    ? "out of memory: "
                 : ev->type == EV_FAIL ? "failed"
                                       : "non-finite ",
                 ev->type == EV_OOM ? ledger_cat_name((enum ledger_cat)ev->category) : "",
                 ev->type == EV_NONFINITE && ev->name ? ev->name : "");
        fputs(",\n{\"name\":", f);
        str(f, name);
        fprintf(f, ",\"ph\":\"i\",\"s\":\"p\",\"pid\":%d,\"tid\":0,\"ts\":%.6f}", d, us(ev->t));
        break;
    case EV_PIPE_OP:
        snprintf(name, sizeof name, "%s micro-batch %d", ev->name ? ev->name : "", ev->micro);
        fputs(",\n{\"name\":", f);
        str(f, name);
        fprintf(f,
                ",\"cat\":\"pipeline\",\"ph\":\"X\",\"pid\":%d,\"tid\":6,\"ts\":%.6f,\"dur\":%.6f,"
                "\"args\":{\"micro\":%d,\"chunk\":%d,\"step\":%d}}",
                d, us(ev->t), us(ev->t_end - ev->t), ev->micro, ev->chunk, ev->step);
        break;
    case EV_TRAIN_STEP:
        fprintf(f,
                ",\n{\"name\":\"loss\",\"ph\":\"C\",\"pid\":%d,\"ts\":%.6f,\"args\":{\"loss\":", d,
                us(ev->t));
        num(f, ev->loss);
        fputs("}}", f);
        break;
    default: break;
    }
}

/* Opens a temporary file beside path (so that the rename stays on one file system). A path
 * that exists and is not a regular file (/dev/null, a pipe, a terminal) is opened as it is, *tmp
 * NULL: renaming over it would replace the device with a plain file. */
static int open_tmp(const char *path, FILE **out, char **tmp, struct error *e)
{
    size_t len = strlen(path);
    struct stat st;
    *out = NULL;
    *tmp = NULL;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (!(*out = fopen(path, "w")))
            return error_set(e, ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        return 0;
    }
    *tmp = malloc(len + 16);
    if (!*tmp)
        return error_set(e, ERR_NOMEM, "%s: no memory", path);
    snprintf(*tmp, len + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(*tmp);
    if (fd < 0) {
        int err = errno;
        free(*tmp);
        *tmp = NULL;
        return error_set(e, ERR_IO, "%s: cannot write: %s", path, strerror(err));
    }
    /* mkstemp makes the file 0600; the result gets the mode a plain fopen would give it */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(*tmp);
        free(*tmp);
        *tmp = NULL;
        return error_set(e, ERR_IO, "%s: cannot write", path);
    }
    *out = f;
    return 0;
}

/* Closes f and renames tmp to path (tmp NULL: f is path itself); on any error removes tmp.
 * Frees tmp. */
static int commit_tmp(FILE *f, char *tmp, const char *path, struct error *e)
{
    /* a write that failed earlier failed again at this flush: its errno is the real reason
     * (ENOSPC on a full disk), not a generic EIO */
    errno = 0;
    bool bad = fflush(f) != 0 || ferror(f) != 0;
    int err = bad ? (errno ? errno : EIO) : 0;
    if (fclose(f) != 0 && !bad)
        bad = true, err = errno;
    if (!bad && tmp && rename(tmp, path) != 0)
        bad = true, err = errno;
    if (bad && tmp)
        unlink(tmp);
    free(tmp);
    if (bad)
        return error_set(e, ERR_IO, "%s: cannot write: %s", path, strerror(err));
    return 0;
}

int trace_check_path(const char *path, struct error *e)
{
    if (!path || !*path)
        return error_set(e, ERR_INVAL, "an empty file name; give a file to write");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return error_set(e, ERR_INVAL, "'%s' is a folder; give a file to write", path);
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) /* a device or a pipe: written in place */
        return access(path, W_OK) == 0 ? 0 : error_set(e, ERR_INVAL, "'%s' is not writable", path);
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return error_set(e, ERR_NOMEM, "%s: no memory", path);
    int rc = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = error_set(e, ERR_INVAL, "'%s': the folder '%s' does not exist", path, dir);
    else if (access(dir, W_OK | X_OK) != 0)
        rc = error_set(e, ERR_INVAL, "'%s': the folder '%s' is not writable", path, dir);
    free(dir);
    if (rc < 0)
        return rc;
    /* A folder may look writable and still refuse a new file (/proc, a read-only mount seen
     * by root): create the temporary file the writer will create, and remove it. */
    FILE *f;
    char *tmp;
    if (open_tmp(path, &f, &tmp, e) < 0) {
        if (e)
            e->code = ERR_INVAL;
        return ERR_INVAL;
    }
    fclose(f);
    if (tmp)
        unlink(tmp);
    free(tmp);
    return 0;
}

int trace_write_chrome(const char *path, const struct event *ev, size_t n, int gpus,
                       struct error *e)
{
    char *tmp;
    FILE *f;
    int rc = open_tmp(path, &f, &tmp, e);
    if (rc < 0)
        return rc;
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"simulated\"},"
          "\"traceEvents\":[\n",
          f);
    fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"GPU 0\"}}", f);
    for (int d = 0; d < gpus; d++) {
        if (d > 0)
            fprintf(f,
                    ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                    "\"args\":{\"name\":\"GPU %d\"}}",
                    d, d);
        fprintf(f,
                ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,"
                "\"args\":{\"sort_index\":%d}}",
                d, d);
        /* compute on stream 0 (or joined) first, then the links, then compute on streams
         * 1-3 (sim/cluster.h's DEV_STREAMS = 4): tid 2 + stream; a pipeline's operations */
        static const char *const tracks[7] = {
            "compute",           "send",    "receive", "compute, stream 1", "compute, stream 2",
            "compute, stream 3", "pipeline"};
        for (int t = 0; t < 7; t++)
            fprintf(f,
                    ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                    "\"args\":{\"name\":\"%s\"}}",
                    d, t, tracks[t]);
    }
    for (size_t i = 0; i < n; i++)
        chrome_event(f, &ev[i]);
    fputs("\n]}\n", f);
    return commit_tmp(f, tmp, path, e);
}

void trace_write_jsonl(FILE *f, const struct event *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct event *v = &ev[i];
        fprintf(f, "{\"type\":\"%s\",\"device\":%d,\"seq\":%llu,\"t\":", event_type_name(v->type),
                v->device, (unsigned long long)v->seq);
        num(f, v->t);
        switch (v->type) {
        case EV_SEND:
        case EV_RECV:
            fputs(",\"arrival\":", f);
            num(f, v->t_end);
            fprintf(f, ",\"peer\":%d,\"bytes\":%llu,\"chunk\":%d,\"step\":%d,\"phase\":", v->peer,
                    (unsigned long long)v->bytes, v->chunk, v->step);
            str(f, v->phase);
            fprintf(f, ",\"msg\":%llu", (unsigned long long)v->msg);
            break;
        case EV_COMPUTE_BEGIN:
        case EV_COMPUTE_END:
            fputs(",\"name\":", f);
            str(f, v->name);
            fprintf(f, ",\"layer\":%d,\"micro\":%d,\"flops\":", v->layer, v->micro);
            num(f, v->flops);
            break;
        case EV_MEMORY:
        case EV_OOM:
            fprintf(f,
                    ",\"category\":\"%s\",\"delta\":%lld,\"current\":%llu,\"peak\":%llu,"
                    "\"capacity\":%llu",
                    ledger_cat_name((enum ledger_cat)v->category), (long long)v->delta,
                    (unsigned long long)v->current, (unsigned long long)v->peak,
                    (unsigned long long)v->capacity);
            break;
        case EV_TRAIN_STEP:
            fprintf(f, ",\"step\":%d,\"loss\":", v->step);
            num(f, v->loss);
            fputs(",\"grad_norm\":", f);
            num(f, v->grad_norm);
            fputs(",\"clip_coef\":", f);
            num(f, v->clip_coef);
            fputs(",\"loss_scale\":", f);
            num(f, v->loss_scale);
            fprintf(f, ",\"skipped\":%s", v->skipped ? "true" : "false");
            break;
        case EV_NONFINITE:
        case EV_FAIL:
            fputs(",\"name\":", f);
            str(f, v->name);
            fprintf(f, ",\"layer\":%d,\"step\":%d", v->layer, v->step);
            break;
        case EV_PIPE_OP:
            fputs(",\"name\":", f);
            str(f, v->name);
            fprintf(f, ",\"micro\":%d,\"chunk\":%d,\"step\":%d,\"t_end\":", v->micro, v->chunk,
                    v->step);
            num(f, v->t_end);
            break;
        default: break;
        }
        fputs("}\n", f);
    }
}

int trace_write_jsonl_file(const char *path, const struct event *ev, size_t n, struct error *e)
{
    char *tmp;
    FILE *f;
    int rc = open_tmp(path, &f, &tmp, e);
    if (rc < 0)
        return rc;
    trace_write_jsonl(f, ev, n);
    return commit_tmp(f, tmp, path, e);
}
