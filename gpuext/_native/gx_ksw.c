/* gx_ksw.c: the stock ksw2 code over a batch of jobs (the cpu backend), and helpers shared with
 * gx_engine.c. gx_batch_run runs ksw_extd2_sse / ksw_extz2_sse over the flat arrays of
 * gpuext/engine/jobs.py on n threads (kt_for), each thread with its own kalloc pool as minimap2's
 * worker threads have (so the direction matrices are reused memory, not fresh pages per call). */
#include <stdlib.h>
#include <string.h>
#include "mmpriv.h"
#include "mmhook.h"
#include "kthread.h"
#include "kalloc.h"
#include "gx_glue.h"

int64_t gx_band_cells(int qlen, int tlen, int w)
{ /* cells with |i - j| <= w in a tlen x qlen matrix; the same formula as jobs.band_cells */
	int64_t q = qlen, t = tlen, ww = w < 0? (q > t? q : t) : w, full = q * t;
	int64_t k1 = q - ww - 1, k2 = t - ww - 1, r1, r2, out = 0;
	if (k1 > 0) r1 = t < k1? t : k1, out += r1 * k1 - r1 * (r1 - 1) / 2;
	if (k2 > 0) r2 = q < k2? q : k2, out += r2 * k2 - r2 * (r2 - 1) / 2;
	return full - out;
}

int gx_kernel_of(const void *opt_)
{ /* the dispatch rule of mm_align_pair */
	const mm_mapopt_t *opt = (const mm_mapopt_t*)opt_;
	if (opt->flag & MM_F_SPLICE) return GX_KERNEL_EXTS2;
	return opt->q == opt->q2 && opt->e == opt->e2? GX_KERNEL_EXTZ2 : GX_KERNEL_EXTD2;
}

typedef struct {
	gx_batch_t *b;
	void **km;   /* one per thread, as minimap2's worker threads have (mm_tbuf_t.km) */
} gx_batch_ctx_t;

static void gx_batch_one(void *data, long i, int tid)
{
	gx_batch_ctx_t *c = (gx_batch_ctx_t*)data;
	gx_batch_t *b = c->b;
	void *km = c->km[tid];
	ksw_extz_t ez;
	km_stat_t st;
	int qlen = (int)(b->qoff[i+1] - b->qoff[i]), tlen = (int)(b->toff[i+1] - b->toff[i]);
	const uint8_t *qs = b->qseq + b->qoff[i], *ts = b->tseq + b->toff[i];
	memset(&ez, 0, sizeof(ez));
	if (b->kernel[i] == GX_KERNEL_EXTZ2)
		ksw_extz2_sse(km, qlen, qs, tlen, ts, 5, b->mat, b->q, b->e, b->w[i], b->zdrop[i], b->end_bonus[i], b->flag[i], &ez);
	else
		ksw_extd2_sse(km, qlen, qs, tlen, ts, 5, b->mat, b->q, b->e, b->q2, b->e2, b->w[i], b->zdrop[i], b->end_bonus[i], b->flag[i], &ez);
	b->max[i] = ez.max, b->max_q[i] = ez.max_q, b->max_t[i] = ez.max_t;
	b->mqe[i] = ez.mqe, b->mqe_t[i] = ez.mqe_t, b->mte[i] = ez.mte, b->mte_q[i] = ez.mte_q;
	b->score[i] = ez.score, b->zdropped[i] = ez.zdropped, b->reach_end[i] = ez.reach_end;
	b->n_cigar[i] = ez.n_cigar, b->cigar[i] = 0;
	if (ez.n_cigar > 0) {
		b->cigar[i] = (uint32_t*)malloc(ez.n_cigar * sizeof(uint32_t));
		memcpy(b->cigar[i], ez.cigar, ez.n_cigar * sizeof(uint32_t));
	}
	kfree(km, ez.cigar);
	km_stat(km, &st);   /* minimap2's rule for its thread-local memory (map.c, end of mm_map_frag_core) */
	if (st.largest > 1U<<28) {
		km_destroy(km);
		c->km[tid] = km_init();
	}
}

void gx_batch_run(gx_batch_t *b, int n_threads)
{
	gx_batch_ctx_t c;
	int i;
	n_threads = n_threads > 0? n_threads : 1;
	c.b = b, c.km = (void**)calloc(n_threads, sizeof(void*));
	for (i = 0; i < n_threads; ++i) c.km[i] = km_init();
	kt_for(n_threads, gx_batch_one, &c, (long)b->n);
	for (i = 0; i < n_threads; ++i) km_destroy(c.km[i]);
	free(c.km);
}

void gx_batch_take_cigars(gx_batch_t *b, const int64_t *coff, uint32_t *out)
{
	int64_t i;
	for (i = 0; i < b->n; ++i) {
		if (b->n_cigar[i] > 0) memcpy(out + coff[i], b->cigar[i], b->n_cigar[i] * sizeof(uint32_t));
		free(b->cigar[i]);
		b->cigar[i] = 0;
	}
}
