/* Loss scaling: PyTorch GradScaler's dynamic scale, a constant one, hysteresis
 * (num/scaler.h). */
#include "config.h"
#include "num/scaler.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "num/clip.h"

void scaler_init(struct scaler *s, float init_scale, int growth_interval, int hysteresis)
{
    *s = (struct scaler){true, init_scale, 2.0f, 0.5f, growth_interval, 0, hysteresis, hysteresis};
}

void scaler_init_static(struct scaler *s, float scale)
{
    *s = (struct scaler){false, scale, 1.0f, 1.0f, 1, 0, 1, 1};
}

float scaler_inv_scale(const struct scaler *s)
{
    return (float)(1.0 / (double)s->scale);
}

bool scaler_unscale(const struct scaler *s, float *g, size_t n)
{
    return clip_unscale(g, n, scaler_inv_scale(s), NULL);
}

void scaler_update(struct scaler *s, bool found_inf)
{
    if (!s->enabled)
        return;
    if (found_inf) {
        s->growth_tracker = 0;
        if (s->hysteresis_left > 0)
            s->hysteresis_left--;
        if (s->hysteresis_left <= 0)
            s->scale *= s->backoff;
        return;
    }
    int successful = s->growth_tracker + 1;
    if (successful == s->growth_interval) {
        float grown = s->scale * s->growth;
        if (isfinite(grown))
            s->scale = grown;
        s->growth_tracker = 0;
        s->hysteresis_left = s->hysteresis;
    } else
        s->growth_tracker = successful;
}
