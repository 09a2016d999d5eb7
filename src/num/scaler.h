/* Dynamic loss scaling with PyTorch's torch.amp.GradScaler semantics, and the hysteresis of
 * Megatron-LM's DynamicGradScaler / DeepSpeed's DynamicLossScaler.
 *
 * GradScaler (torch/amp/grad_scaler.py; the update is the kernel _amp_update_scale_ in
 * aten/src/ATen/native/cuda/AmpKernels.cu): the scale is an fp32 number starting at
 * init_scale (65536). unscale_ multiplies the gradients by inv_scale = 1 / scale computed in
 * double and rounded to fp32 (`self._scale.double().reciprocal().float()`), and notes whether
 * any gradient is inf or NaN. step() skips the optimizer when one was. update(): on inf/NaN,
 * scale *= backoff (0.5) and the growth tracker resets; otherwise the tracker counts the clean
 * step, and when it reaches growth_interval (2000) the scale doubles -- unless the doubled
 * scale is not finite, in which case it stays -- and the tracker resets.
 *
 * A constant scale (scaler_init_static) is Megatron-LM's ConstantGradScaler: update() does
 * nothing, whatever it is told; the caller still skips a step whose unscaled gradients hold
 * inf/NaN, as Megatron's MixedPrecisionOptimizer.step does with any grad scaler. No scaler at
 * all (scale 1, nothing checked or skipped) is the trainer's business (par/trainer.h).
 *
 * Hysteresis H (Megatron, DeepSpeed): the scale backs off only after H overflowing steps
 * (counting down, reset to H at each growth); every overflowing step is still skipped. H = 1 is
 * PyTorch's behaviour. */
#ifndef SCALELAB_NUM_SCALER_H
#define SCALELAB_NUM_SCALER_H

#include <stdbool.h>
#include <stddef.h>

struct scaler {
    bool enabled; /* false: a constant scale (1 when there is no scaler), never changes */
    float scale;
    float growth, backoff;
    int growth_interval, growth_tracker;
    int hysteresis, hysteresis_left;
};

/* enabled with init_scale; a fixed scale is a disabled scaler with scale != 1
 * (scaler_init_static). */
void scaler_init(struct scaler *s, float init_scale, int growth_interval, int hysteresis);
void scaler_init_static(struct scaler *s, float scale);

/* 1 / scale in double, rounded to fp32: what the gradients are multiplied by. */
float scaler_inv_scale(const struct scaler *s);

/* Multiplies n gradients by inv_scale; returns true if any was inf or NaN. */
bool scaler_unscale(const struct scaler *s, float *g, size_t n);

/* After a step: found_inf says whether the unscaled gradients had an inf or NaN. */
void scaler_update(struct scaler *s, bool found_inf);

#endif
