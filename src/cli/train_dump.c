/* scalelab train --dump DIR: step 1 of the run written to check against PyTorch: the
 * model's shape, its initial weights, the global batch, the loss and the gradients of the mean
 * loss gathered from every GPU, little-endian, each file through a temporary name and a
 * rename (cli/train.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "cli/train.h"

/* Before the run: DIR is a writable folder, or can be made in a writable one. */
int train_dump_check(const char *dir, struct error *e)
{
    struct stat st;
    if (!*dir)
        return error_set(e, ERR_INVAL, "train: --dump: give a folder, not an empty name");
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return error_set(e, ERR_INVAL, "train: --dump %s: not a folder", dir);
        if (access(dir, W_OK) != 0)
            return error_set(e, ERR_INVAL, "train: --dump %s: cannot write in it: %s", dir,
                             strerror(errno));
        return 0;
    }
    char parent[4096];
    if (snprintf(parent, sizeof parent, "%s", dir) >= (int)sizeof parent)
        return error_set(e, ERR_INVAL, "train: --dump: the path is too long");
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    const char *where = slash ? (slash == parent ? "/" : (*slash = '\0', parent)) : ".";
    if (access(where, W_OK) != 0)
        return error_set(e, ERR_INVAL, "train: --dump %s: cannot create it in %s: %s", dir, where,
                         strerror(errno));
    return 0;
}

/* Writes n bytes to dir/name through a temporary name and a rename. */
static int write_file(const char *dir, const char *name, const void *data, size_t n,
                      struct error *e)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return error_set(e, ERR_IO, "--dump: cannot write %s: %s", tmp, strerror(errno));
    bool ok = fwrite(data, 1, n, f) == n;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno;
        remove(tmp);
        return error_set(e, ERR_IO, "--dump: cannot write %s: %s", path, strerror(err));
    }
    return 0;
}

/* Little-endian copies (the files' format, whatever the host). */
static void *le32(const void *src, size_t n)
{
    unsigned char *out = malloc(n > 0 ? n * 4 : 1);
    if (!out)
        return NULL;
    const uint32_t *in = src;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = in[i];
        out[4 * i] = (unsigned char)u, out[4 * i + 1] = (unsigned char)(u >> 8);
        out[4 * i + 2] = (unsigned char)(u >> 16), out[4 * i + 3] = (unsigned char)(u >> 24);
    }
    return out;
}

static int write_le32(const char *dir, const char *name, const void *data, size_t n,
                      struct error *e)
{
    void *buf = le32(data, n);
    if (!buf)
        return error_set(e, ERR_NOMEM, "out of memory");
    int rc = write_file(dir, name, buf, n * 4, e);
    free(buf);
    return rc;
}

/* Step 1 of the run: its weights (the initial ones), the global batch, loss and gradients. */
int train_dump_write(const struct train_args *r, const struct run *run, struct error *e)
{
    const struct train_opts *o = &r->o;
    const struct gpt_config *c = &o->shape;
    const int32_t *tokens, *targets;
    const float *grads;
    double loss;
    if (!run_first_step(run, &tokens, &targets, &loss, &grads))
        return 0;
    size_t bt = (size_t)o->batch * c->seq, n = gpt_param_count(c);
    char ini[1024], lossbuf[64];
    int len =
        snprintf(ini, sizeof ini,
                 "# written by scalelab train --dump: the shape of params.f32\n"
                 "[model]\nname = %s\nlayers = %d\nd_model = %d\nheads = %d\n"
                 "kv_heads = %d\nffn = %d\nffn_kind = swiglu\nvocab = %d\ntied = true\n"
                 "seq = %d\n",
                 r->shape.name, c->layers, c->d, c->heads, c->heads, c->ffn, c->vocab, c->seq);
    char aux[128];
    int al = 0;
    if (c->moe.experts) { /* the experts in the shape; the loss's coefficient beside it */
        len += snprintf(ini + len, sizeof ini - (size_t)len,
                        "experts = %d\ntop_k = %d\nmoe_every = %d\ncapacity_factor = %.17g\n",
                        c->moe.experts, c->moe.top_k, c->moe.every, c->moe.capacity_factor);
        al = snprintf(aux, sizeof aux,
                      "# written by scalelab train --dump: what the loss adds to the shape's\n"
                      "[train]\naux_coef = %.17g\n",
                      c->moe.aux_coef);
    }
    int ll = snprintf(lossbuf, sizeof lossbuf, "%.17g\n", loss);
    if (mkdir(r->dump, 0777) != 0 && errno != EEXIST)
        return error_set(e, ERR_IO, "--dump: cannot create %s: %s", r->dump, strerror(errno));
    /* params.f32: the weights step 1 used, the initial ones, drawn again from the seed */
    float *params = malloc(n * sizeof *params);
    if (!params)
        return error_set(e, ERR_NOMEM, "out of memory");
    gpt_init_params(c, o->seed, params);
    int rc = write_file(r->dump, "model.ini", ini, (size_t)len, e);
    if (!rc && al)
        rc = write_file(r->dump, "train.ini", aux, (size_t)al, e);
    if (!rc)
        rc = write_le32(r->dump, "params.f32", params, n, e);
    if (!rc)
        rc = write_le32(r->dump, "tokens.i32", tokens, bt, e);
    if (!rc)
        rc = write_le32(r->dump, "targets.i32", targets, bt, e);
    if (!rc)
        rc = write_file(r->dump, "loss.txt", lossbuf, (size_t)ll, e);
    if (!rc)
        rc = write_le32(r->dump, "grads.f32", grads, n, e);
    free(params);
    return rc;
}
