/* gx_glue.h: gpuext's C side of the native module, over the patched minimap2 (mmhook.h).
 *
 * gx_cli.c  runs minimap2's own command line (mm_cli_main) with atomic -o output.
 * gx_ksw.c  the extension providers installed in mm_ksw_hook, and the batch runner of the
 *           stock ksw2 code over flat job arrays (the cpu backend; see gpuext/engine/jobs.py). */
#ifndef GX_GLUE_H
#define GX_GLUE_H

#include <stdint.h>

/* gx_cli.c */
int gx_cli_run(int argc, char *argv[], const char *sam_hdr_extra);

/* gx_ksw.c: providers for mm_ksw_hook */
#define GX_PROVIDER_NONE 0   /* no hook: minimap2 calls ksw2 itself (stock) */
#define GX_PROVIDER_CPU  1   /* the hook runs the stock ksw2 code and counts jobs and cells */
void gx_set_provider(int provider);

#define GX_KERNEL_EXTD2 0
#define GX_KERNEL_EXTZ2 1
#define GX_KERNEL_EXTS2 2
#define GX_N_KERNELS    3
typedef struct {
	int64_t jobs[GX_N_KERNELS];
	int64_t cells[GX_N_KERNELS];
} gx_counters_t;
void gx_get_counters(gx_counters_t *c);
void gx_reset_counters(void);
int64_t gx_band_cells(int qlen, int tlen, int w);

/* A batch of jobs in the layout of gpuext/engine/jobs.py: inputs, then outputs (cigar[i] is
 * malloc'ed by ksw2 and handed to the caller, who copies it out with gx_batch_take_cigars). */
typedef struct {
	int64_t n;
	const uint8_t *qseq, *tseq;
	const int64_t *qoff, *toff;
	const int8_t *kernel;
	const int32_t *w, *zdrop, *end_bonus, *flag;
	const int8_t *mat;
	int q, e, q2, e2;
	int32_t *max, *max_q, *max_t, *mqe, *mqe_t, *mte, *mte_q, *score, *n_cigar;
	int8_t *zdropped, *reach_end;
	uint32_t **cigar;
} gx_batch_t;
void gx_batch_run(gx_batch_t *b, int n_threads);
void gx_batch_take_cigars(gx_batch_t *b, const int64_t *coff, uint32_t *out);

#endif
