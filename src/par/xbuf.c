/* A GPU's two point-to-point exchange buffers in the training format (par/xbuf.h). */
#include "config.h"
#include "par/xbuf.h"

#include "sim/cluster.h"

static int init(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
                enum gpt_mem kind, size_t elems, const char *send_name, const char *recv_name,
                const char *what, struct error *e)
{
    *x = (struct xbuf){.d = d, .mem = *mem, .fmt = fmt, .kind = kind};
    x->bytes = elems * (size_t)fp_bytes(fmt);
    x->send = mem->alloc(mem->ctx, kind, x->bytes, send_name);
    x->recv = kind == GPT_MEM_ARENA ? x->send : mem->alloc(mem->ctx, kind, x->bytes, recv_name);
    if (!x->send || !x->recv) {
        xbuf_fini(x);
        return error_set(e, ERR_NOMEM, "out of memory for %s's buffers", what);
    }
    return 0;
}

int xbuf_init(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
              size_t elems, const char *send_name, const char *recv_name, const char *what,
              struct error *e)
{
    return init(x, d, mem, fmt, GPT_MEM_COMM, elems, send_name, recv_name, what, e);
}

int xbuf_reserve(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
                 size_t elems, const char *send_name, const char *recv_name, const char *what,
                 struct error *e)
{
    return init(x, d, mem, fmt, GPT_MEM_ARENA, elems, send_name, recv_name, what, e);
}

void xbuf_fini(struct xbuf *x)
{
    if (x->send)
        x->mem.free(x->mem.ctx, x->kind, x->send, x->bytes);
    if (x->recv && x->kind != GPT_MEM_ARENA)
        x->mem.free(x->mem.ctx, x->kind, x->recv, x->bytes);
    x->send = x->recv = NULL;
}

size_t xbuf_size(const struct xbuf *x, size_t n)
{
    return n * (size_t)fp_bytes(x->fmt);
}

bool xbuf_pack(struct xbuf *x, const float *src, size_t n, const char *what)
{
    if (!x->d || x->err.code)
        return false;
    if (xbuf_size(x, n) > x->bytes) {
        error_set(&x->err, ERR_RUN, "%s: %zu elements to send, room for %zu", what, n,
                  x->bytes / (size_t)fp_bytes(x->fmt));
        return false;
    }
    fp_pack_n(x->fmt, x->send, src, n); /* the values are in the format already: exact */
    return true;
}

static void charge(struct xbuf *x, long long delta)
{
    if (x->mem.charge)
        x->mem.charge(x->mem.ctx, GPT_MEM_COMM, delta);
}

bool xbuf_pack_v(struct xbuf *x, const float *src, size_t n, size_t m, const char *what)
{
    if (!x->d || x->err.code)
        return false;
    if (xbuf_size(x, n + m) > x->bytes) {
        error_set(&x->err, ERR_RUN, "%s: %zu elements out and %zu in, room for %zu", what, n, m,
                  x->bytes / (size_t)fp_bytes(x->fmt));
        return false;
    }
    fp_pack_n(x->fmt, x->send, src, n); /* the values are in the format already: exact */
    x->recv = (char *)x->send + xbuf_size(x, n);
    charge(x, (long long)xbuf_size(x, n + m));
    return true;
}

void xbuf_unpack_v(struct xbuf *x, int rc, uint64_t before, float *dst, size_t n, size_t m)
{
    xbuf_unpack(x, rc, before, dst, m);
    charge(x, -(long long)xbuf_size(x, n + m));
}

uint64_t xbuf_device_sent(const struct xbuf *x)
{
    return dev_stats(x->d).bytes_sent;
}

void xbuf_unpack(struct xbuf *x, int rc, uint64_t before, float *dst, size_t n)
{
    if (rc == 0)
        fp_unpack_n(x->fmt, dst, x->recv, n);
    x->sent += xbuf_device_sent(x) - before;
}

void xbuf_step_begin(struct xbuf *x)
{
    x->sent = 0;
}

int xbuf_failed(const struct xbuf *x, struct error *e)
{
    if (x->err.code)
        *e = x->err;
    return x->err.code;
}
