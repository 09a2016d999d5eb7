/* A GPU's two point-to-point exchange buffers in the training format (par/xbuf.h). */
#include "config.h"
#include "par/xbuf.h"

#include "sim/cluster.h"

int xbuf_init(struct xbuf *x, struct device *d, const struct dp_mem *mem, enum fp_format fmt,
              size_t elems, const char *send_name, const char *recv_name, const char *what,
              struct error *e)
{
    *x = (struct xbuf){.d = d, .mem = *mem, .fmt = fmt};
    x->bytes = elems * (size_t)fp_bytes(fmt);
    x->send = mem->alloc(mem->ctx, GPT_MEM_COMM, x->bytes, send_name);
    x->recv = mem->alloc(mem->ctx, GPT_MEM_COMM, x->bytes, recv_name);
    if (!x->send || !x->recv) {
        xbuf_fini(x);
        return error_set(e, ERR_NOMEM, "out of memory for %s's buffers", what);
    }
    return 0;
}

void xbuf_fini(struct xbuf *x)
{
    if (x->send)
        x->mem.free(x->mem.ctx, GPT_MEM_COMM, x->send, x->bytes);
    if (x->recv)
        x->mem.free(x->mem.ctx, GPT_MEM_COMM, x->recv, x->bytes);
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
