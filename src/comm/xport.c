/* The thread transport (comm/xport.h): the simulated cluster's device calls, unchanged. */
#include "config.h"
#include "comm/xport.h"

static int t_step(void *self, int step, struct error *e)
{
    return dev_step(self, step, e);
}

static int t_isend(void *self, int peer, const void *buf, size_t bytes, const struct dev_tag *tag,
                   struct dev_req *req, struct error *e)
{
    return dev_isend(self, peer, buf, bytes, tag, req, e);
}

static int t_wait(void *self, struct dev_req *req, struct error *e)
{
    return dev_wait(self, req, e);
}

static int t_recv(void *self, int peer, void *buf, size_t bytes, const struct dev_tag *tag,
                  dev_combine_fn combine, void *ctx, struct error *e)
{
    return dev_recv(self, peer, buf, bytes, tag, combine, ctx, e);
}

static int t_sendrecv(void *self, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                      size_t rbytes, const struct dev_tag *tag, dev_combine_fn combine, void *ctx,
                      struct error *e)
{
    return dev_sendrecv(self, to, sbuf, sbytes, from, rbuf, rbytes, tag, combine, ctx, e);
}

static void t_sync(void *self, int a, int b)
{
    dev_sync(self, a, b);
}

static const struct xport_ops thread_ops = {t_step, t_isend, t_wait, t_recv, t_sendrecv, t_sync};

void xport_thread(struct xport *x, struct device *d)
{
    *x = (struct xport){&thread_ops, d, dev_rank(d), dev_count(d), dev_spec(d)};
}
