/* gx_engine.c: the job table of the batch engine, and the hook that records or serves jobs.
 *
 * Each batch of reads has its own table (gx_table_t). minimap2 maps a batch in rounds
 * (gx_engine_round -> mm_map_batch_round), one round at a time across batches. In a recording
 * round, every ksw2 call that is not in the table is answered with a neutral result (see
 * gx_neutral), so that minimap2 goes on to the next job it can predict, kept in the calling thread's
 * buffer of misses (merged into the table, as pending jobs, after the round), and its fragment is
 * marked to be mapped again (mm_map_batch_redo); the table itself is read-only during a round. The engine's driver (gpuext/engine/rounds.py) then has the pending
 * jobs computed by a backend and stores the results here. A serving round answers from the table; in
 * the final round a job that is still unknown is computed inline with the stock ksw2 code. A round
 * in which nothing was missing gives the batch's hits.
 *
 * Jobs are keyed by a hash of all their inputs and checked byte for byte against the actual call on
 * every hit: a planning mistake can only show up as a miss, never as a wrong result. Whatever the
 * engine does not serve (splice jobs, collisions, the last round's misses) it leaves to minimap2's
 * own ksw2 code by returning 0 from the hook. */
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "mmpriv.h"
#include "mmhook.h"
#include "khash.h"
#include "kthread.h"
#include "gx_glue.h"

KHASH_MAP_INIT_INT64(gx64, int64_t)

struct gx_table_s {             /* the jobs of one batch of reads */
	khash_t(gx64) *map;          /* job hash -> index in a[] */
	gx_job_t *a;
	int64_t n, m;
	uint8_t *seq;                /* query then target of every job */
	int64_t n_seq, m_seq;
	uint32_t *cigar;
	int64_t n_cigar, m_cigar;
	int has_scoring;
	int8_t mat[25];
	int q, e, q2, e2;
	const mm_mapopt_t *opt;      /* minimap2's options, for mm_test_zdrop */
	int64_t n_predicted;         /* jobs a[0..n_predicted) have been looked at by gx_table_predict */
};

/* The table the hook works on, set for the length of one round. Rounds of different batches are
 * mutually exclusive (round_lock): they would compete for the same CPU threads anyway, while the
 * backend of one batch runs at the same time as a round of another. */
static pthread_mutex_t round_lock = PTHREAD_MUTEX_INITIALIZER;
static gx_table_t *T;
static int mode;
static gx_round_stats_t st;

/* In a recording round the table is read-only: each thread keeps the jobs it misses in a buffer of
 * its own, and gx_engine_round merges the buffers into the table after the round (no lock per job). */
typedef struct {
	uint64_t h;
	int8_t kernel;
	int32_t qlen, tlen, w, zdrop, end_bonus, flag;
	int64_t off, cells;          /* query then target at seq[off] */
} gx_miss_t;

typedef struct gx_misses_s {
	struct gx_misses_s *next;
	gx_miss_t *a;
	int64_t n, m;
	uint8_t *seq;
	int64_t n_seq, m_seq;
} gx_misses_t;

static pthread_mutex_t misses_lock = PTHREAD_MUTEX_INITIALIZER;
static gx_misses_t *misses;          /* every thread's buffer of this round */
static int round_no;                 /* tells a thread its buffer belongs to an earlier round */
static __thread gx_misses_t *my_misses;
static __thread int my_round = -1;

static inline uint64_t gx_mix(uint64_t h, uint64_t x)
{
	h ^= x * 0x9E3779B97F4A7C15ULL;
	h = (h << 27 | h >> 37) * 0xC2B2AE3D27D4EB4FULL;
	return h;
}

static uint64_t gx_hash_bytes(uint64_t h, const uint8_t *s, int n)
{
	int i;
	uint64_t x;
	for (i = 0; i + 8 <= n; i += 8) memcpy(&x, s + i, 8), h = gx_mix(h, x);
	for (x = 0; i < n; ++i) x = x << 8 | s[i];
	return gx_mix(h, x ^ (uint64_t)n << 56);
}

static uint64_t gx_job_hash(int kernel, int qlen, const uint8_t *qseq, int tlen, const uint8_t *tseq, int w, int zdrop, int end_bonus, int flag)
{
	uint64_t h = 0x243F6A8885A308D3ULL;
	h = gx_mix(h, (uint64_t)(uint32_t)kernel << 32 | (uint32_t)flag);
	h = gx_mix(h, (uint64_t)(uint32_t)w << 32 | (uint32_t)zdrop);
	h = gx_mix(h, (uint64_t)(uint32_t)end_bonus << 32 | (uint32_t)qlen);
	h = gx_mix(h, (uint32_t)tlen);
	h = gx_hash_bytes(h, qseq, qlen);
	return gx_hash_bytes(h, tseq, tlen);
}

static int gx_same_job(const gx_job_t *j, int kernel, int qlen, const uint8_t *qseq, int tlen, const uint8_t *tseq, int w, int zdrop, int end_bonus, int flag)
{
	return j->kernel == kernel && j->qlen == qlen && j->tlen == tlen && j->w == w && j->zdrop == zdrop
		&& j->end_bonus == end_bonus && j->flag == flag
		&& memcmp(T->seq + j->qoff, qseq, qlen) == 0 && memcmp(T->seq + j->qoff + qlen, tseq, tlen) == 0;
}

static void gx_neutral(void *km, int qlen, int tlen, int flag, ksw_extz_t *ez)
{ /* What a recording round answers, so that minimap2 goes on to its next job: no Z-drop, and for a gap
   * fill the CIGAR qlen I + tlen D (minimap2 needs a CIGAR there, and mm_test_zdrop sees a drop of
   * only q along it, so no second pass is asked for). Extensions get no CIGAR (nothing extended). */
	ksw_reset_extz(ez);
	ez->score = 0;
	if (!(flag & KSW_EZ_EXTZ_ONLY)) {
		if (qlen > 0) ez->cigar = ksw_push_cigar(km, &ez->n_cigar, &ez->m_cigar, ez->cigar, KSW_CIGAR_INS, qlen);
		if (tlen > 0) ez->cigar = ksw_push_cigar(km, &ez->n_cigar, &ez->m_cigar, ez->cigar, KSW_CIGAR_DEL, tlen);
	}
}

static void gx_serve(void *km, const gx_job_t *j, ksw_extz_t *ez)
{
	ez->max = j->max, ez->max_q = j->max_q, ez->max_t = j->max_t;
	ez->mqe = j->mqe, ez->mqe_t = j->mqe_t, ez->mte = j->mte, ez->mte_q = j->mte_q;
	ez->score = j->score, ez->zdropped = j->zdropped, ez->reach_end = j->reach_end;
	if (j->n_cigar > ez->m_cigar) {
		ez->m_cigar = j->n_cigar;
		ez->cigar = (uint32_t*)krealloc(km, ez->cigar, (size_t)ez->m_cigar * 4);
	}
	if (j->n_cigar > 0) memcpy(ez->cigar, T->cigar + j->coff, (size_t)j->n_cigar * 4);
	ez->n_cigar = j->n_cigar;
}

#define GROW(type, p, n, m, need) do { if ((n) + (need) > (m)) { (m) = ((n) + (need)) * 2; (p) = (type*)realloc((p), (size_t)(m) * sizeof(type)); } } while (0)

static int64_t gx_table_add(gx_table_t *t, uint64_t h, int kernel, int qlen, const uint8_t *qseq, int tlen, const uint8_t *tseq,
							int w, int zdrop, int end_bonus, int flag)
{ /* append a pending job (the caller knows it is absent) */
	gx_job_t *j;
	int absent;
	khint_t k;
	GROW(gx_job_t, t->a, t->n, t->m, 1);
	GROW(uint8_t, t->seq, t->n_seq, t->m_seq, (int64_t)qlen + tlen);
	j = &t->a[t->n];
	memset(j, 0, sizeof(*j));
	j->kernel = kernel, j->qlen = qlen, j->tlen = tlen, j->w = w, j->zdrop = zdrop, j->end_bonus = end_bonus, j->flag = flag;
	j->qoff = t->n_seq;
	memcpy(t->seq + t->n_seq, qseq, qlen), memcpy(t->seq + t->n_seq + qlen, tseq, tlen);
	t->n_seq += qlen + tlen;
	k = kh_put(gx64, t->map, h, &absent);
	kh_val(t->map, k) = t->n;
	return t->n++;
}

static int gx_hook_engine(void *km, const mm_mapopt_t *opt, int qlen, const uint8_t *qseq, int tlen, const uint8_t *tseq,
						  const uint8_t *junc, const int8_t *mat, int w, int end_bonus, int zdrop, int flag, ksw_extz_t *ez)
{
	int kernel;
	int64_t idx = -1;
	uint64_t h;
	khint_t k;
	if (T == 0) return 0; /* not inside a round of the engine: minimap2's own ksw2 call */
	kernel = gx_kernel_of(opt);
	if (kernel == GX_KERNEL_EXTS2) { /* splice: minimap2 runs its own ksw_exts2 (returning 0 says so) */
		__atomic_fetch_add(&st.inline_splice_jobs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&st.inline_splice_cells, gx_band_cells(qlen, tlen, -1), __ATOMIC_RELAXED);
		return 0;
	}
	h = gx_job_hash(kernel, qlen, qseq, tlen, tseq, w, zdrop, end_bonus, flag);
	k = kh_get(gx64, T->map, h); /* the table does not change during a round: no lock */
	if (k != kh_end(T->map)) idx = kh_val(T->map, k);
	if (idx >= 0 && !gx_same_job(&T->a[idx], kernel, qlen, qseq, tlen, tseq, w, zdrop, end_bonus, flag)) {
		__atomic_fetch_add(&st.collisions, 1, __ATOMIC_RELAXED); /* a 64-bit hash collision: never served */
		return 0; /* minimap2's own ksw2 */
	}
	if (idx >= 0 && T->a[idx].has_result) {
		__atomic_fetch_add(&st.hits, 1, __ATOMIC_RELAXED);
		gx_serve(km, &T->a[idx], ez);
		return 1;
	}
	if (mode != GX_MODE_RECORD) { /* final round: minimap2's own ksw2, inline */
		__atomic_fetch_add(&st.inline_final_jobs, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&st.inline_final_cells, gx_band_cells(qlen, tlen, w), __ATOMIC_RELAXED);
		return 0;
	}
	__atomic_fetch_add(&st.misses, 1, __ATOMIC_RELAXED);
	mm_map_batch_redo(); /* this fragment's hits rest on a provisional answer: map it again next round */
	if (idx < 0) { /* unknown: into this thread's buffer of misses */
		gx_misses_t *b;
		gx_miss_t *x;
		if (my_round != round_no) { /* this thread's first miss of the round */
			my_misses = (gx_misses_t*)calloc(1, sizeof(gx_misses_t));
			my_round = round_no;
			pthread_mutex_lock(&misses_lock);
			my_misses->next = misses, misses = my_misses;
			if (!T->has_scoring) {
				memcpy(T->mat, mat, 25);
				T->q = opt->q, T->e = opt->e, T->q2 = opt->q2, T->e2 = opt->e2, T->opt = opt, T->has_scoring = 1;
			}
			pthread_mutex_unlock(&misses_lock);
		}
		b = my_misses;
		GROW(gx_miss_t, b->a, b->n, b->m, 1);
		GROW(uint8_t, b->seq, b->n_seq, b->m_seq, (int64_t)qlen + tlen);
		x = &b->a[b->n++];
		x->h = h, x->kernel = kernel, x->qlen = qlen, x->tlen = tlen, x->w = w, x->zdrop = zdrop;
		x->end_bonus = end_bonus, x->flag = flag, x->off = b->n_seq, x->cells = gx_band_cells(qlen, tlen, w);
		memcpy(b->seq + b->n_seq, qseq, qlen), memcpy(b->seq + b->n_seq + qlen, tseq, tlen);
		b->n_seq += qlen + tlen;
	}
	gx_neutral(km, qlen, tlen, flag, ez);
	return 1;
}

static void gx_merge_misses(gx_table_t *t)
{ /* after a recording round: every thread's misses into the table, once each */
	gx_misses_t *b, *next;
	int64_t i;
	for (b = misses; b; b = next) {
		next = b->next;
		for (i = 0; i < b->n; ++i) {
			const gx_miss_t *x = &b->a[i];
			if (kh_get(gx64, t->map, x->h) != kh_end(t->map)) continue; /* asked for by several reads (or a collision) */
			gx_table_add(t, x->h, x->kernel, x->qlen, b->seq + x->off, x->tlen, b->seq + x->off + x->qlen, x->w, x->zdrop, x->end_bonus, x->flag);
			++st.new_jobs, st.new_cells += x->cells;
		}
		free(b->a), free(b->seq), free(b);
	}
	misses = 0;
}

void gx_engine_install(int on)
{
	mm_ksw_hook = on? gx_hook_engine : 0;
}

gx_table_t *gx_table_new(void)
{
	gx_table_t *t = (gx_table_t*)calloc(1, sizeof(gx_table_t));
	t->map = kh_init(gx64);
	return t;
}

void gx_table_free(gx_table_t *t)
{
	if (t == 0) return;
	kh_destroy(gx64, t->map);
	free(t->a), free(t->seq), free(t->cigar);
	free(t);
}

void gx_engine_round(gx_table_t *t, int n_threads, void *batch, int round_mode, gx_round_stats_t *out)
{
	pthread_mutex_lock(&round_lock);
	T = t, mode = round_mode, ++round_no;
	memset(&st, 0, sizeof(st));
	mm_map_batch_round(n_threads, batch);
	gx_merge_misses(t);
	*out = st;
	T = 0;
	pthread_mutex_unlock(&round_lock);
}

int64_t gx_table_n_jobs(const gx_table_t *t) { return t->n; }

int gx_table_scoring(const gx_table_t *t, int8_t mat[25], int *q, int *e, int *q2, int *e2)
{
	memcpy(mat, t->mat, 25);
	*q = t->q, *e = t->e, *q2 = t->q2, *e2 = t->e2;
	return t->has_scoring;
}

int64_t gx_table_pending(const gx_table_t *t, int64_t *ids, int64_t max_ids, int64_t *seq_len)
{ /* ids of the jobs without a result (if ids != 0), and their total sequence length */
	int64_t i, n = 0, len = 0;
	for (i = 0; i < t->n; ++i)
		if (!t->a[i].has_result) {
			if (ids && n < max_ids) ids[n] = i;
			++n, len += t->a[i].qlen + t->a[i].tlen;
		}
	if (seq_len) *seq_len = len;
	return n;
}

void gx_table_export(const gx_table_t *t, int64_t n, const int64_t *ids, uint8_t *qseq, int64_t *qoff, uint8_t *tseq,
					 int64_t *toff, int8_t *kernel, int32_t *w, int32_t *zdrop, int32_t *end_bonus, int32_t *flag)
{
	int64_t i, qo = 0, to = 0;
	for (i = 0; i < n; ++i) {
		const gx_job_t *j = &t->a[ids[i]];
		qoff[i] = qo, toff[i] = to;
		memcpy(qseq + qo, t->seq + j->qoff, j->qlen), qo += j->qlen;
		memcpy(tseq + to, t->seq + j->qoff + j->qlen, j->tlen), to += j->tlen;
		kernel[i] = j->kernel, w[i] = j->w, zdrop[i] = j->zdrop, end_bonus[i] = j->end_bonus, flag[i] = j->flag;
	}
	qoff[n] = qo, toff[n] = to;
}

void gx_table_import(gx_table_t *t, int64_t n, const int64_t *ids, const int32_t *const fields[8], const int8_t *zdropped,
					 const int8_t *reach_end, const int64_t *coff, const uint32_t *cigar)
{ /* fields: max, max_q, max_t, mqe, mqe_t, mte, mte_q, score */
	int64_t i;
	GROW(uint32_t, t->cigar, t->n_cigar, t->m_cigar, coff[n] + 1);
	memcpy(t->cigar + t->n_cigar, cigar, (size_t)coff[n] * 4);
	for (i = 0; i < n; ++i) {
		gx_job_t *j = &t->a[ids[i]];
		j->max = fields[0][i], j->max_q = fields[1][i], j->max_t = fields[2][i], j->mqe = fields[3][i];
		j->mqe_t = fields[4][i], j->mte = fields[5][i], j->mte_q = fields[6][i], j->score = fields[7][i];
		j->zdropped = zdropped[i], j->reach_end = reach_end[i];
		j->coff = t->n_cigar + coff[i], j->n_cigar = (int32_t)(coff[i+1] - coff[i]);
		j->has_result = 1;
	}
	t->n_cigar += coff[n];
}

typedef struct {
	gx_table_t *t;
	int64_t i0;
	int8_t *code;
} gx_predict_t;

static void gx_predict_one(void *data, long k, int tid)
{ /* minimap2's own test on the first-pass gap fill i0 + k (0: no second pass) */
	gx_predict_t *p = (gx_predict_t*)data;
	const gx_job_t *j = &p->t->a[p->i0 + k];
	(void)tid;
	p->code[k] = 0;
	if (!j->has_result || !(j->flag & KSW_EZ_APPROX_MAX) || (j->flag & KSW_EZ_EXTZ_ONLY)) return;
	p->code[k] = mm_test_zdrop(0, p->t->opt, p->t->seq + j->qoff, p->t->seq + j->qoff + j->qlen, j->n_cigar,
							   p->t->cigar + j->coff, p->t->mat);
}

int64_t gx_table_predict(gx_table_t *t, int n_threads, int64_t *cells)
{ /* For every computed first-pass gap fill, the second pass minimap2 will ask for (mm_test_zdrop,
   * align.c, run on n threads), added as a pending job. Returns the number of jobs added and their DP cells. */
	int64_t i, n0 = t->n, n_new = 0;
	gx_predict_t p = { t, t->n_predicted, 0 };
	*cells = 0;
	if (t->opt == 0 || n0 <= t->n_predicted) return 0;
	p.code = (int8_t*)malloc(n0 - p.i0);
	kt_for(n_threads > 0? n_threads : 1, gx_predict_one, &p, (long)(n0 - p.i0));
	for (i = p.i0; i < n0; ++i) {
		gx_job_t j = t->a[i]; /* a copy: gx_table_add may move t->a */
		int code = p.code[i - p.i0], zdrop, flag;
		uint64_t h;
		if (code == 0) continue;
		flag = j.flag & ~KSW_EZ_APPROX_MAX;
		zdrop = code == 2? t->opt->zdrop_inv : t->opt->zdrop;
		h = gx_job_hash(j.kernel, j.qlen, t->seq + j.qoff, j.tlen, t->seq + j.qoff + j.qlen, j.w, zdrop, j.end_bonus, flag);
		if (kh_get(gx64, t->map, h) != kh_end(t->map)) continue; /* already known (or a collision, which a round will sort out) */
		GROW(uint8_t, t->seq, t->n_seq, t->m_seq, (int64_t)j.qlen + j.tlen); /* the copy below reads t->seq */
		gx_table_add(t, h, j.kernel, j.qlen, t->seq + j.qoff, j.tlen, t->seq + j.qoff + j.qlen, j.w, zdrop, j.end_bonus, flag);
		++n_new, *cells += gx_band_cells(j.qlen, j.tlen, j.w);
	}
	free(p.code);
	t->n_predicted = n0;
	return n_new;
}

