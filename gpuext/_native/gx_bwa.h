/* gpuext glue for the BWA side: BWA 0.7.18's own ksw_extend2 (ksw.c of build/patched/bwa-0.7.18,
 * unchanged) over a batch of jobs in flat arrays, on n threads. Used by gpuext/_native/bwa.pyx. */
#ifndef GX_BWA_H
#define GX_BWA_H

#include <stdint.h>

typedef struct {
	int64_t n;                 /* jobs to run: idx[0..n) */
	const int64_t *idx;        /* job numbers into the arrays below */
	const uint8_t *qseq, *tseq;
	const int64_t *qoff, *toff;
	const int32_t *h0, *w, *end_bonus, *zdrop, *o_del, *e_del, *o_ins, *e_ins, *mat_id;
	const int8_t *mats;        /* matrices concatenated; matrix k at mats + mat_off[k], side mat_m[k] */
	const int64_t *mat_off;
	const int32_t *mat_m;
	int32_t *score, *qle, *tle, *gtle, *gscore, *max_off; /* n entries each, row r = job idx[r] */
	int64_t *cells;            /* gx_bwa_cells only: DP cells (sum of end - beg over the rows run) */
} gx_bwa_batch_t;

void gx_bwa_extend2(const gx_bwa_batch_t *b, int n_threads); /* BWA's ksw_extend2 per job */
void gx_bwa_cells(const gx_bwa_batch_t *b, int n_threads);   /* cells per job (statistics) */

#endif
