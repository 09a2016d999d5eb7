/* Model shapes and cluster presets: the INI files of assets/ (or a user's), read through
 * inih and checked (calc/preset.h). */
#include "config.h"
#include "calc/preset.h"

#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/datadir.h"
#include "base/error.h"
#include "base/experts.h"
#include "base/readfile.h"
#include "base/units.h"
#include "comm/cost.h"
#include "sim/spec.h"

#define FILE_MAX (1 << 20) /* a preset is a few hundred bytes; refuse anything huge */

/* ------------------------------------------------------------------ keys */

enum key_type { KEY_NAME, KEY_INT, KEY_BOOL, KEY_FFN_KIND, KEY_BYTES, KEY_DOUBLE };

struct key {
    const char *name;
    enum key_type type;
    bool optional;
    long long min, max; /* KEY_INT */
    double dmin, dmax;  /* KEY_BYTES, KEY_DOUBLE: dmin excluded when dmin_open */
    bool dmin_open;
    size_t offset; /* into the struct being filled */
};

#define MODEL_INT(k, lo, hi)                                                                       \
    {                                                                                              \
#k, KEY_INT, false, lo, hi, 0, 0, false, offsetof(struct model_shape, k)                   \
    }

static const struct key model_keys[] = {
    {"name", KEY_NAME, false, 0, 0, 0, 0, false, offsetof(struct model_shape, name)},
    MODEL_INT(layers, 1, PRESET_MAX_LAYERS),
    MODEL_INT(d_model, 1, PRESET_MAX_D_MODEL),
    MODEL_INT(heads, 1, PRESET_MAX_D_MODEL),
    MODEL_INT(kv_heads, 1, PRESET_MAX_D_MODEL),
    MODEL_INT(ffn, 1, PRESET_MAX_FFN),
    {"ffn_kind", KEY_FFN_KIND, false, 0, 0, 0, 0, false, offsetof(struct model_shape, ffn_kind)},
    MODEL_INT(vocab, 1, PRESET_MAX_VOCAB),
    {"tied", KEY_BOOL, false, 0, 0, 0, 0, false, offsetof(struct model_shape, tied)},
    MODEL_INT(seq, 1, PRESET_MAX_SEQ),
    /* a mixture of experts: optional (check_model says what goes together) */
    {"experts", KEY_INT, true, 2, PRESET_MAX_EXPERTS, 0, 0, false,
     offsetof(struct model_shape, experts)},
    {"top_k", KEY_INT, true, 1, 2, 0, 0, false, offsetof(struct model_shape, top_k)},
    {"moe_every", KEY_INT, true, 1, PRESET_MAX_LAYERS, 0, 0, false,
     offsetof(struct model_shape, moe_every)},
    {"capacity_factor", KEY_DOUBLE, true, 0, 0, 0, EXPERTS_MAX_CAPACITY, false,
     offsetof(struct model_shape, capacity_factor)},
    {NULL, KEY_NAME, false, 0, 0, 0, 0, false, 0},
};

#define CL_D(k, t, lo, hi, open)                                                                   \
    {                                                                                              \
#k, t, false, 0, 0, lo, hi, open, offsetof(struct cluster_spec, k)                         \
    }

static const struct key cluster_keys[] = {
    {"name", KEY_NAME, false, 0, 0, 0, 0, false, offsetof(struct cluster_spec, name)},
    {"gpus_per_node", KEY_INT, false, 1, 4096, 0, 0, false,
     offsetof(struct cluster_spec, gpus_per_node)},
    {"nodes", KEY_INT, false, 1, 1 << 18, 0, 0, false, offsetof(struct cluster_spec, nodes)},
    /* The lower bounds keep every figure finite: a bandwidth of 1e-300 B/s made the α-β
     * times infinite (and dropped them from JSON); no real link is below 1 kB/s, no GPU below
     * 1 MFLOP/s, none with less than 1 MiB of memory. */
    {"hbm", KEY_BYTES, false, 0, 0, 1048576, 1e15, false, offsetof(struct cluster_spec, hbm_bytes)},
    CL_D(peak_flops, KEY_DOUBLE, 1e6, 1e18, false),
    {"intra_latency", KEY_DOUBLE, false, 0, 0, 0, 1, false,
     offsetof(struct cluster_spec, alpha_intra)},
    {"intra_bandwidth", KEY_DOUBLE, false, 0, 0, 1e3, 1e15, false,
     offsetof(struct cluster_spec, beta_intra)},
    {"inter_latency", KEY_DOUBLE, false, 0, 0, 0, 1, false,
     offsetof(struct cluster_spec, alpha_inter)},
    {"inter_bandwidth", KEY_DOUBLE, false, 0, 0, 1e3, 1e15, false,
     offsetof(struct cluster_spec, beta_inter)},
    {NULL, KEY_NAME, false, 0, 0, 0, 0, false, 0},
};

/* ------------------------------------------------------------------ parsing */

#define MAX_KEYS 16

struct parse {
    const char *text, *file, *section; /* section: the one expected */
    const struct key *keys;
    void *out;
    int seen_line[MAX_KEYS]; /* 0: not seen */
    int section_line;        /* where [section] is, 0 if absent */
    const char *cursor;      /* the text after the last line the handler was called for */
    int cursor_line;
    struct error *e;
    bool failed;
    int fail_line;
};

/* The line of the next "name = value" entry after the cursor: inih calls the handler once per
 * entry, in order, so the next line that is not blank, a comment or a section header is the
 * entry being handled. inih does not tell the line itself (INI_HANDLER_LINENO is off in the
 * distribution's build). */
static int next_entry_line(struct parse *p)
{
    const char *s = p->cursor;
    int line = p->cursor_line;
    while (*s) {
        const char *end = strchr(s, '\n');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        line++;
        size_t i = 0;
        while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
            i++;
        bool entry = i < len && s[i] != ';' && s[i] != '#' && s[i] != '[';
        s = end ? end + 1 : s + len;
        if (entry) {
            p->cursor = s, p->cursor_line = line;
            return line;
        }
    }
    p->cursor = s, p->cursor_line = line;
    return line;
}

/* The line of "[name]", or 0. */
static int section_line(const char *text, const char *name)
{
    int line = 0;
    for (const char *s = text; *s;) {
        const char *end = strchr(s, '\n');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        line++;
        while (len && (*s == ' ' || *s == '\t'))
            s++, len--;
        if (len && *s == '[') {
            const char *close = memchr(s, ']', len);
            size_t n = close ? (size_t)(close - s - 1) : 0;
            if (close && n == strlen(name) && strncmp(s + 1, name, n) == 0)
                return line;
        }
        if (!end)
            break;
        s = end + 1;
    }
    return 0;
}

static void key_names(char *buf, size_t n, const struct key *keys)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const struct key *k = keys; k->name && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", k == keys ? "" : ", ", k->name);
}

static int fail(struct parse *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, int line, const char *fmt, ...)
{
    if (!p->failed) {
        char what[ERROR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        error_set(p->e, ERR_INVAL, "%s:%d: %s", p->file, line, what);
        p->failed = true;
        p->fail_line = line;
    }
    return 0;
}

static int set_value(struct parse *p, const struct key *k, const char *value, int line)
{
    char *field = (char *)p->out + k->offset;
    struct error sub = {0};
    switch (k->type) {
    case KEY_NAME: {
        size_t len = strlen(value);
        if (len == 0 || len >= PRESET_NAME_MAX)
            return fail(p, line, "'%s' must be a text of 1 to 63 characters", k->name);
        memcpy(field, value, len + 1);
        return 1;
    }
    case KEY_INT: {
        long long v;
        if (units_parse_int(value, k->min, k->max, &v, &sub) < 0)
            return fail(p, line, "'%s' must be a whole number from %lld to %lld, not '%s'", k->name,
                        k->min, k->max, value);
        *(int *)(void *)field = (int)v;
        return 1;
    }
    case KEY_BOOL:
        if (strcasecmp(value, "true") == 0)
            *(bool *)(void *)field = true;
        else if (strcasecmp(value, "false") == 0)
            *(bool *)(void *)field = false;
        else
            return fail(p, line, "'%s' must be true or false, not '%s'", k->name, value);
        return 1;
    case KEY_FFN_KIND:
        if (strcasecmp(value, "swiglu") == 0)
            *(enum ffn_kind *)(void *)field = FFN_SWIGLU;
        else if (strcasecmp(value, "gelu") == 0)
            *(enum ffn_kind *)(void *)field = FFN_GELU;
        else
            return fail(p, line, "'%s' must be swiglu or gelu, not '%s'", k->name, value);
        return 1;
    case KEY_BYTES:
    case KEY_DOUBLE: {
        double v;
        int rc = k->type == KEY_BYTES ? units_parse_bytes(value, INFINITY, &v, &sub)
                                      : units_parse_double(value, false, &v, &sub);
        if (rc < 0 || v < k->dmin || (k->dmin_open && v <= k->dmin) || v > k->dmax)
            return fail(p, line, "'%s' must be %s %s %.15g and at most %.15g%s, not '%s'", k->name,
                        k->type == KEY_BYTES ? "a size (e.g. 80GiB)" : "a number",
                        k->dmin_open ? "above" : "at least", k->dmin, k->dmax,
                        k->type == KEY_BYTES ? " bytes" : "", value);
        *(double *)(void *)field = v;
        return 1;
    }
    }
    return 1;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
    struct parse *p = user;
    int line = next_entry_line(p);
    if (p->failed)
        return 1; /* keep the first error; let inih finish quietly */
    if (strcmp(section, p->section) != 0)
        return fail(p, line, "'%s' is %s%s%s; expected it in [%s]", name,
                    *section ? "in section [" : "before any section", section, *section ? "]" : "",
                    p->section);
    const struct key *k = p->keys;
    while (k->name && strcmp(k->name, name) != 0)
        k++;
    if (!k->name) {
        char names[256];
        key_names(names, sizeof names, p->keys);
        return fail(p, line, "unknown key '%s' (expected one of: %s)", name, names);
    }
    int idx = (int)(k - p->keys);
    if (p->seen_line[idx]) {
        char first[16];
        snprintf(first, sizeof first, "%d", p->seen_line[idx]);
        return fail(p, line, "'%s' is given twice (first on line %s)", name, first);
    }
    p->seen_line[idx] = line;
    return set_value(p, k, value, line);
}

/* inih reads a line into a buffer of INI_MAX_LINE bytes (200 in Debian's build) and takes
 * the rest of a longer line as another line, so a long comment would end up as a syntax error
 * on the wrong line, and a long value would be cut silently: such a line is refused here, with
 * its own number. Returns the first line with more than LINE_MAX_CHARS bytes, or 0. */
#define LINE_MAX_CHARS 198

static int long_line(const char *text)
{
    int line = 0;
    for (const char *s = text; *s;) {
        const char *end = strchr(s, '\n');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        line++;
        if (len > LINE_MAX_CHARS)
            return line;
        if (!end)
            break;
        s = end + 1;
    }
    return 0;
}

/* Fills out from the [section] of text; lines[i] is the line of keys[i] (0 if absent).
 * Returns the line of [section], or a negative error code. */
static int parse(const char *text, const char *file, const char *section, const struct key *keys,
                 void *out, int lines[MAX_KEYS], struct error *e)
{
    /* inih skips a UTF-8 byte-order mark; so do the line counts here */
    if (strncmp(text, "\xef\xbb\xbf", 3) == 0)
        text += 3;
    int too_long = long_line(text);
    if (too_long)
        return error_set(e, ERR_INVAL, "%s:%d: a line longer than %d characters", file, too_long,
                         LINE_MAX_CHARS);
    struct parse p = {.text = text,
                      .file = file,
                      .section = section,
                      .keys = keys,
                      .out = out,
                      .cursor = text,
                      .e = e};
    p.section_line = section_line(text, section);
    int rc = ini_parse_string(text, handler, &p);
    if (rc < 0)
        return error_set(e, ERR_NOMEM, "%s: out of memory while reading", file);
    /* inih reports the first line it could not parse, or where a handler failed; a syntax
     * error before the handler's first complaint is the one to report. */
    if (rc > 0 && (!p.failed || rc < p.fail_line))
        return error_set(e, ERR_INVAL, "%s:%d: expected 'key = value', a [section] or a comment",
                         file, rc);
    if (p.failed)
        return ERR_INVAL;
    if (!p.section_line)
        return error_set(e, ERR_INVAL, "%s:1: expected a [%s] section", file, section);
    for (const struct key *k = keys; k->name; k++)
        if (!k->optional && !p.seen_line[k - keys])
            return error_set(e, ERR_INVAL,
                             "%s:%d: [%s] has no '%s' (it needs every one of its keys)", file,
                             p.section_line, section, k->name);
    memcpy(lines, p.seen_line, sizeof p.seen_line);
    return p.section_line;
}

/* ------------------------------------------------------------------ checks after parsing */

/* lines[]: where each of model_keys was given */
static int check_model(struct model_shape *m, const char *file, int line, const int lines[MAX_KEYS],
                       struct error *e)
{
    enum { K_LAYERS = 1, K_D_MODEL, K_HEADS, K_KV_HEADS }; /* indices in model_keys */
    enum { K_FFN_KIND = 6, K_EXPERTS = 10, K_TOP_K, K_MOE_EVERY, K_CAPACITY };
    if (!m->experts) {
        for (int k = K_TOP_K; k <= K_CAPACITY; k++)
            if (lines[k])
                return error_set(e, ERR_INVAL, "%s:%d: '%s' goes with 'experts'", file, lines[k],
                                 model_keys[k].name);
    } else {
        if (m->ffn_kind != FFN_SWIGLU)
            return error_set(e, ERR_INVAL,
                             "%s:%d: experts are SwiGLU feed-forwards: ffn_kind "
                             "swiglu (line %d), not gelu",
                             file, lines[K_EXPERTS], lines[K_FFN_KIND]);
        if (!lines[K_TOP_K])
            return error_set(e, ERR_INVAL,
                             "%s:%d: experts need 'top_k' (1 or 2: the experts "
                             "each token goes to)",
                             file, lines[K_EXPERTS]);
        if (!lines[K_MOE_EVERY])
            m->moe_every = 1;
        if (m->moe_every > m->layers)
            return error_set(e, ERR_INVAL, "%s:%d: moe_every %d is more than the %d layers", file,
                             lines[K_MOE_EVERY], m->moe_every, m->layers);
    }
    if (m->d_model % m->heads != 0)
        return error_set(e, ERR_INVAL, "%s:%d: heads (%d) must divide d_model (%d, line %d)", file,
                         lines[K_HEADS], m->heads, m->d_model, lines[K_D_MODEL]);
    if (m->heads % m->kv_heads != 0)
        return error_set(e, ERR_INVAL, "%s:%d: kv_heads (%d) must divide heads (%d, line %d)", file,
                         lines[K_KV_HEADS], m->kv_heads, m->heads, lines[K_HEADS]);
    /* A shape whose parameters would not fit any machine (a petabyte of weights) is a typo. */
    double d = m->d_model, f = m->ffn,
           per_layer = 4 * d * d + 3 * d * f * (m->experts ? m->experts : 1);
    if (per_layer * m->layers + 2.0 * m->vocab * d > 1e15)
        return error_set(e, ERR_INVAL,
                         "%s:%d: the shape gives more than 10^15 parameters; check layers, "
                         "d_model, ffn and vocab",
                         file, line);
    return 0;
}

int preset_parse_model(const char *text, const char *file, struct model_shape *m, struct error *e)
{
    struct model_shape tmp;
    memset(&tmp, 0, sizeof tmp);
    int lines[MAX_KEYS];
    int line = parse(text, file, "model", model_keys, &tmp, lines, e);
    if (line < 0)
        return line;
    int rc = check_model(&tmp, file, line, lines, e);
    if (rc < 0)
        return rc;
    *m = tmp;
    return 0;
}

int preset_parse_cluster(const char *text, const char *file, struct cluster_spec *c,
                         struct error *e)
{
    struct cluster_spec tmp;
    memset(&tmp, 0, sizeof tmp);
    int lines[MAX_KEYS];
    int line = parse(text, file, "cluster", cluster_keys, &tmp, lines, e);
    if (line < 0)
        return line;
    if ((long long)tmp.gpus_per_node * tmp.nodes > PRESET_MAX_GPUS)
        return error_set(e, ERR_INVAL, "%s:%d: gpus_per_node x nodes is above %d GPUs", file, line,
                         PRESET_MAX_GPUS);
    int rc = spec_check(&tmp, e);
    if (rc < 0) {
        error_prefix(e, "%s:%d", file, line);
        return rc;
    }
    *c = tmp;
    return 0;
}

void preset_cost_net(const struct cluster_spec *c, int gpus, struct cost_net *out)
{
    *out = (struct cost_net){gpus,          c->gpus_per_node, c->alpha_intra,
                             c->beta_intra, c->alpha_inter,   c->beta_inter};
}

/* ------------------------------------------------------------------ files and presets */

static bool access_ok(const char *path)
{
    return access(path, R_OK) == 0;
}

static bool is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n > 4 && strcmp(s + n - 4, ".ini") == 0);
}

static bool is_preset_name(const char *s)
{
    if (!*s || strlen(s) >= PRESET_NAME_MAX)
        return false;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '-' || *c == '_' || *c == '.'))
            return false;
    return true;
}

static int read_file(const char *path, char **text, struct error *e)
{
    struct stat st;
    const char *kind;
    FILE *f = readfile_open(path, &st, &kind);
    if (!f && kind)
        return error_set(e, ERR_INVAL, "'%s' is %s, not a preset file", path, kind);
    if (!f)
        return error_set(e, ERR_INVAL, "cannot open '%s': %s", path, strerror(errno));
    /* the size is checked before reading; the read is bounded too (a file that grows) */
    if (st.st_size > FILE_MAX) {
        fclose(f);
        return error_set(e, ERR_INVAL, "'%s' is not a preset file (larger than 1 MiB)", path);
    }
    char *buf = malloc(FILE_MAX + 1);
    if (!buf) {
        fclose(f);
        return error_set(e, ERR_NOMEM, "out of memory reading '%s'", path);
    }
    size_t n = fread(buf, 1, FILE_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > FILE_MAX || memchr(buf, '\0', n)) {
        free(buf);
        return error_set(e, ERR_INVAL, "'%s' is not a preset file (%s)", path,
                         bad ? "cannot be read" : "binary or larger than 1 MiB");
    }
    buf[n] = '\0';
    *text = buf;
    return 0;
}

char *preset_list(char *buf, size_t n, const char *kind)
{
    char dirpath[4096], rel[64];
    char names[64][PRESET_NAME_MAX];
    int count = 0;
    buf[0] = '\0';
    snprintf(rel, sizeof rel, "assets/%s", kind);
    if (!datadir_path(dirpath, sizeof dirpath, rel))
        return buf;
    DIR *d = opendir(dirpath);
    if (!d)
        return buf;
    struct dirent *ent;
    while ((ent = readdir(d)) && count < 64) {
        size_t len = strlen(ent->d_name);
        if (len > 4 && len - 4 < PRESET_NAME_MAX && strcmp(ent->d_name + len - 4, ".ini") == 0)
            snprintf(names[count++], PRESET_NAME_MAX, "%.*s", (int)(len - 4), ent->d_name);
    }
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    size_t used = 0;
    for (int i = 0; i < count && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "", names[i]);
    return buf;
}

static int load(const char *name_or_path, const char *kind, char **text, char *path, size_t path_n,
                struct error *e)
{
    if (!name_or_path || !*name_or_path)
        return error_set(e, ERR_INVAL, "an empty %s name", kind);
    if (is_path(name_or_path)) {
        snprintf(path, path_n, "%s", name_or_path);
        return read_file(path, text, e);
    }
    char rel[128], known[1024];
    if (is_preset_name(name_or_path)) {
        snprintf(rel, sizeof rel, "assets/%ss/%s.ini", kind, name_or_path);
        if (datadir_path(path, path_n, rel) && access_ok(path))
            return read_file(path, text, e);
    }
    snprintf(rel, sizeof rel, "%ss", kind);
    preset_list(known, sizeof known, rel);
    if (known[0])
        return error_set(e, ERR_INVAL, "unknown %s preset '%s' (presets: %s; or give a FILE.ini)",
                         kind, name_or_path, known);
    /* none at all: the data folder is wrong (SCALELAB_DATA), so say which folder was looked in */
    char folder[4096];
    snprintf(rel, sizeof rel, "assets/%ss", kind);
    if (!datadir_path(folder, sizeof folder, rel))
        snprintf(folder, sizeof folder, "%s", datadir());
    return error_set(e, ERR_INVAL,
                     "unknown %s preset '%s' (no presets found in %s: check SCALELAB_DATA, or "
                     "give a FILE.ini)",
                     kind, name_or_path, folder);
}

int preset_load_model(const char *name_or_path, struct model_shape *m, struct error *e)
{
    char *text = NULL, path[4096];
    int rc = load(name_or_path, "model", &text, path, sizeof path, e);
    if (rc == 0)
        rc = preset_parse_model(text, path, m, e);
    free(text);
    return rc;
}

int preset_load_cluster(const char *name_or_path, struct cluster_spec *c, struct error *e)
{
    char *text = NULL, path[4096];
    int rc = load(name_or_path, "cluster", &text, path, sizeof path, e);
    if (rc == 0)
        rc = preset_parse_cluster(text, path, c, e);
    free(text);
    return rc;
}

const char *preset_ffn_kind_name(enum ffn_kind k)
{
    return k == FFN_GELU ? "gelu" : "swiglu";
}
