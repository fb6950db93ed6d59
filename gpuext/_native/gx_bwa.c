/* See gx_bwa.h. Threads take chunks of 16 jobs from a shared counter; each job is one call of
 * BWA's ksw_extend2 with exactly the dumped arguments (or, for gx_bwa_cells, of a counting copy). */
#include <pthread.h>
#include <stdlib.h>
#include "ksw.h"
#include "gx_bwa.h"

typedef struct {
	const gx_bwa_batch_t *b;
	int64_t next;
	int count_only;
} gx_bwa_shared_t;

/* The number of DP cells ksw_extend2 computes for one job (the sum of end - beg over the rows it
 * runs): ksw.c:416-515 with the same band and termination logic, for statistics only. */
static int64_t gx_ksw_extend2_cells(int qlen, const uint8_t *query, int tlen, const uint8_t *target, int m, const int8_t *mat, int o_del, int e_del, int o_ins, int e_ins, int w, int end_bonus, int zdrop, int h0)
{
	typedef struct { int32_t h, e; } eh_t;
	eh_t *eh;
	int i, j, k, oe_del = o_del + e_del, oe_ins = o_ins + e_ins, beg, end, max, max_i, max_j, max_ins, max_del;
	int64_t cells = 0;
	eh = calloc(qlen + 1, 8);
	eh[0].h = h0; eh[1].h = h0 > oe_ins? h0 - oe_ins : 0;
	for (j = 2; j <= qlen && eh[j-1].h > e_ins; ++j) eh[j].h = eh[j-1].h - e_ins;
	for (i = 0, max = 0, k = m * m; i < k; ++i) max = max > mat[i]? max : mat[i];
	max_ins = (int)((double)(qlen * max + end_bonus - o_ins) / e_ins + 1.);
	max_ins = max_ins > 1? max_ins : 1;
	w = w < max_ins? w : max_ins;
	max_del = (int)((double)(qlen * max + end_bonus - o_del) / e_del + 1.);
	max_del = max_del > 1? max_del : 1;
	w = w < max_del? w : max_del;
	max = h0, max_i = max_j = -1;
	beg = 0, end = qlen;
	for (i = 0; i < tlen; ++i) {
		int t, f = 0, h1, mm = 0, mj = -1;
		const int8_t *q = &mat[target[i] * m];
		if (beg < i - w) beg = i - w;
		if (end > i + w + 1) end = i + w + 1;
		if (end > qlen) end = qlen;
		h1 = beg == 0? h0 - (o_del + e_del * (i + 1)) : 0;
		if (h1 < 0) h1 = 0;
		cells += end - beg;
		for (j = beg; j < end; ++j) {
			eh_t *p = &eh[j];
			int h, M = p->h, e = p->e;
			p->h = h1;
			M = M? M + q[query[j]] : 0;
			h = M > e? M : e;
			h = h > f? h : f;
			h1 = h;
			mj = mm > h? mj : j;
			mm = mm > h? mm : h;
			t = M - oe_del; t = t > 0? t : 0;
			e -= e_del; e = e > t? e : t;
			p->e = e;
			t = M - oe_ins; t = t > 0? t : 0;
			f -= e_ins; f = f > t? f : t;
		}
		eh[end].h = h1; eh[end].e = 0;
		if (mm == 0) break;
		if (mm > max) {
			max = mm, max_i = i, max_j = mj;
		} else if (zdrop > 0) {
			if (i - max_i > mj - max_j) {
				if (max - mm - ((i - max_i) - (mj - max_j)) * e_del > zdrop) break;
			} else {
				if (max - mm - ((mj - max_j) - (i - max_i)) * e_ins > zdrop) break;
			}
		}
		for (j = beg; j < end && eh[j].h == 0 && eh[j].e == 0; ++j);
		beg = j;
		for (j = end; j >= beg && eh[j].h == 0 && eh[j].e == 0; --j);
		end = j + 2 < qlen? j + 2 : qlen;
	}
	free(eh);
	return cells;
}

#define GX_BWA_CHUNK 16

static void *gx_bwa_worker(void *data)
{
	gx_bwa_shared_t *sh = (gx_bwa_shared_t*)data;
	const gx_bwa_batch_t *b = sh->b;
	for (;;) {
		int64_t r0 = __atomic_fetch_add(&sh->next, GX_BWA_CHUNK, __ATOMIC_RELAXED), r;
		if (r0 >= b->n) break;
		for (r = r0; r < b->n && r < r0 + GX_BWA_CHUNK; ++r) {
			int64_t k = b->idx[r];
			int mid = b->mat_id[k];
			if (sh->count_only) {
				b->cells[r] = gx_ksw_extend2_cells((int)(b->qoff[k + 1] - b->qoff[k]), b->qseq + b->qoff[k],
					(int)(b->toff[k + 1] - b->toff[k]), b->tseq + b->toff[k], b->mat_m[mid], b->mats + b->mat_off[mid],
					b->o_del[k], b->e_del[k], b->o_ins[k], b->e_ins[k], b->w[k], b->end_bonus[k], b->zdrop[k], b->h0[k]);
				continue;
			}
			b->score[r] = ksw_extend2((int)(b->qoff[k + 1] - b->qoff[k]), b->qseq + b->qoff[k],
				(int)(b->toff[k + 1] - b->toff[k]), b->tseq + b->toff[k], b->mat_m[mid], b->mats + b->mat_off[mid],
				b->o_del[k], b->e_del[k], b->o_ins[k], b->e_ins[k], b->w[k], b->end_bonus[k], b->zdrop[k], b->h0[k],
				&b->qle[r], &b->tle[r], &b->gtle[r], &b->gscore[r], &b->max_off[r]);
		}
	}
	return 0;
}

static void gx_bwa_run(const gx_bwa_batch_t *b, int n_threads, int count_only)
{
	gx_bwa_shared_t sh;
	pthread_t tid[256];
	int i, nt = n_threads < 1? 1 : n_threads > 256? 256 : n_threads;
	sh.b = b, sh.next = 0, sh.count_only = count_only;
	if (nt == 1 || b->n <= GX_BWA_CHUNK) {
		gx_bwa_worker(&sh);
		return;
	}
	for (i = 0; i < nt; ++i) pthread_create(&tid[i], 0, gx_bwa_worker, &sh);
	for (i = 0; i < nt; ++i) pthread_join(tid[i], 0);
}

void gx_bwa_extend2(const gx_bwa_batch_t *b, int n_threads) { gx_bwa_run(b, n_threads, 0); }
void gx_bwa_cells(const gx_bwa_batch_t *b, int n_threads) { gx_bwa_run(b, n_threads, 1); }
