/* Wall-clock time of the host, for benchmarks and progress lines (never for simulated time). */
#ifndef SCALELAB_BASE_CLOCK_H
#define SCALELAB_BASE_CLOCK_H

/* Seconds from an arbitrary fixed point, monotonic. */
double clock_now(void);
/* Seconds of CPU the calling thread has used: what single-threaded work costs, whatever else
 * the machine runs meanwhile. */
double clock_thread_cpu(void);

#endif
