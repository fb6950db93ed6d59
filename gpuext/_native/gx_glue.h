/* gx_glue.h: gpuext's C side of the native module, over the patched minimap2 (mmhook.h).
 *
 * gx_cli.c  runs minimap2's own command line (mm_cli_main) with atomic -o output.
 * gx_ksw.c     the stock ksw2 code over flat job arrays (the cpu backend; gpuext/engine/jobs.py).
 * gx_engine.c  the batch engine's job table and the hook that records or serves jobs. */
#ifndef GX_GLUE_H
#define GX_GLUE_H

#include <stdint.h>

/* gx_cli.c */
int gx_cli_run(int argc, char *argv[], const char *sam_hdr_extra, const char *output_override,
               int (*index_loaded)(void));

/* gx_ksw.c */
#define GX_KERNEL_EXTD2 0
#define GX_KERNEL_EXTZ2 1
#define GX_KERNEL_EXTS2 2
#define GX_N_KERNELS    3
int64_t gx_band_cells(int qlen, int tlen, int w);

/* A batch of jobs in the layout of gpuext/engine/jobs.py: inputs, then outputs (cigar[i] is
 * a malloc'ed copy of ksw2's, handed to the caller, who copies it out with gx_batch_take_cigars). */
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
int gx_kernel_of(const void *opt); /* GX_KERNEL_* for minimap2's options, as mm_align_pair decides */
void gx_batch_take_cigars(gx_batch_t *b, const int64_t *coff, uint32_t *out);

/* gx_engine.c: the batch engine's job table and hook */
#define GX_MODE_RECORD 0   /* unknown jobs are recorded and answered with a neutral result */
#define GX_MODE_FINAL  1   /* unknown jobs are computed inline with the stock code */
typedef struct {
	int8_t kernel;
	int32_t qlen, tlen, w, zdrop, end_bonus, flag, n_cigar;
	int64_t qoff, coff;    /* query at seq[qoff], target right after it; CIGAR at cigar[coff] */
	int has_result;
	int32_t max, max_q, max_t, mqe, mqe_t, mte, mte_q, score;
	int8_t zdropped, reach_end;
} gx_job_t;
typedef struct {
	int64_t hits, misses, new_jobs, new_cells, collisions;
	int64_t inline_final_jobs, inline_final_cells, inline_splice_jobs, inline_splice_cells;
} gx_round_stats_t;
typedef struct gx_table_s gx_table_t;
void gx_engine_install(int on);
gx_table_t *gx_table_new(void);
void gx_table_free(gx_table_t *t);
void gx_engine_round(gx_table_t *t, int n_threads, void *batch, int mode, gx_round_stats_t *st);
int64_t gx_table_n_jobs(const gx_table_t *t);
int gx_table_scoring(const gx_table_t *t, int8_t mat[25], int *q, int *e, int *q2, int *e2);
int64_t gx_table_pending(const gx_table_t *t, int64_t *ids, int64_t max_ids, int64_t *seq_len);
void gx_table_export(const gx_table_t *t, int64_t n, const int64_t *ids, uint8_t *qseq, int64_t *qoff, uint8_t *tseq,
					 int64_t *toff, int8_t *kernel, int32_t *w, int32_t *zdrop, int32_t *end_bonus, int32_t *flag);
void gx_table_import(gx_table_t *t, int64_t n, const int64_t *ids, const int32_t *const fields[8], const int8_t *zdropped,
					 const int8_t *reach_end, const int64_t *coff, const uint32_t *cigar);
int64_t gx_table_predict(gx_table_t *t, int n_threads, int64_t *cells);
void gx_fatal(void);

#endif
