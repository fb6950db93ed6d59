// ksw_extend2.cu: BWA-MEM's seed extension DP (ksw_extend2) on the GPU, bit-exact.
//
// Provenance: reproduces ksw_extend2 of BWA 0.7.18 (pybwa 2.3.2 sdist, bwa/ksw.c:416-515; the same
// function in 0.7.17 at :380-479 and unchanged in 0.7.19). Spec: /work/shared/docs/
// bwa-extension-spec.md §1.2 (set-up: row -1 initialisation, band clamp in double arithmetic),
// §1.3 (row loop: band clip, first column h1, anchoring M = 0 when H(i-1,j-1) = 0, gaps opened
// from M, row close eh[end] = {h1, 0}, whole-query score, dead row, max or Z-drop, next band from
// the freshly written row) and §1.5 (one persistent (h, e) row buffer per job, never cleared, so
// stale cells at the band edges are read exactly as BWA reads them; ties: row max to the last
// column, global max to the first row, gscore to the last row; int32 everywhere).
//
// The persistent row buffer of each job lives in global memory (eh arena, qlen+1 int2 {h, e}),
// initialised by the kernel exactly as ksw.c:430-432. Per row, with eh[j] = {H(i-1,j-1), E(i,j)}:
//   M(i,j)   = H(i-1,j-1) ? H(i-1,j-1) + mat[t_i*m + q_j] : 0
//   H(i,j)   = max(M, E(i,j), F(i,j))
//   E(i+1,j) = max(E(i,j) - e_del, max(M - o_del - e_del, 0))
//   F(i,j+1) = max(F(i,j) - e_ins, max(M - o_ins - e_ins, 0)),  F(i,beg) = 0
// and eh[j] becomes {H(i,j-1), E(i+1,j)} (eh[beg].h = the first-column value h1).
//
// Kernels (launched by gpuext/backends/cuda/ksw_extend2.py):
//   ksw_extend2_thread      one thread per job, the loop of ksw.c as written; the row buffers of a
//                           warp's 32 jobs are interleaved (element j of lane l at base + 32*j + l)
//                           so lockstep lanes load one coalesced line.
//   ksw_extend2_warp{4,8,16} one warp per job. Lane l owns the contiguous columns
//                           [beg + l*C, beg + l*C + C), C = ceil((end-beg)/32) <= CMAX. F is a
//                           prefix max: F(i,j) = max_{beg<=k<j} (T_k + k*e_ins) - (j-1)*e_ins with
//                           T_k = max(M_k - o_ins - e_ins, 0) (exact for e_ins > 0), so one warp scan
//                           per row replaces the sequential F chain. Row max, arg-max (largest
//                           column among ties) and the next band's first and last non-zero entries
//                           are warp reductions over the values just written.
// Both take the same per-job arrays; the launcher only sends jobs that pass its supports().

#define KSW2_NEG (-0x40000000)

// per-job scalar parameters, prm[job * N_PRM + P_*]
#define P_H0 0
#define P_W 1
#define P_END_BONUS 2
#define P_ZDROP 3
#define P_O_DEL 4
#define P_E_DEL 5
#define P_O_INS 6
#define P_E_INS 7
#define P_MAT 8
#define N_PRM 9

// results, res[job * N_RES + R_*] (the order of gpuext.bwa.dump.RESULT_FIELDS)
#define R_SCORE 0
#define R_QLE 1
#define R_TLE 2
#define R_GTLE 3
#define R_GSCORE 4
#define R_MAX_OFF 5
#define N_RES 6

typedef struct {
	const unsigned char *query, *target;
	const signed char *mat;
	int qlen, tlen, m, h0, w, end_bonus, zdrop, o_del, e_del, o_ins, e_ins;
} job_t;

__device__ __forceinline__ job_t load_job(int k, const unsigned char *qseq, const long long *qoff,
                                          const unsigned char *tseq, const long long *toff, const int *prm,
                                          const signed char *mats, const int *mat_off, const int *mat_m)
{
	job_t J;
	const int *p = prm + (long long)k * N_PRM;
	J.query = qseq + qoff[k];
	J.target = tseq + toff[k];
	J.qlen = (int)(qoff[k + 1] - qoff[k]);
	J.tlen = (int)(toff[k + 1] - toff[k]);
	J.h0 = p[P_H0], J.w = p[P_W], J.end_bonus = p[P_END_BONUS], J.zdrop = p[P_ZDROP];
	J.o_del = p[P_O_DEL], J.e_del = p[P_E_DEL], J.o_ins = p[P_O_INS], J.e_ins = p[P_E_INS];
	J.mat = mats + mat_off[p[P_MAT]];
	J.m = mat_m[p[P_MAT]];
	return J;
}

// ksw.c:434-444: w = min(w, max_ins, max_del), in the same double arithmetic
__device__ __forceinline__ int clamp_band(const job_t &J)
{
	int k = J.m * J.m, mx = 0, w = J.w;
	for (int i = 0; i < k; ++i) mx = mx > J.mat[i] ? mx : J.mat[i];
	int max_ins = (int)((double)(J.qlen * mx + J.end_bonus - J.o_ins) / J.e_ins + 1.);
	max_ins = max_ins > 1 ? max_ins : 1;
	w = w < max_ins ? w : max_ins;
	int max_del = (int)((double)(J.qlen * mx + J.end_bonus - J.o_del) / J.e_del + 1.);
	max_del = max_del > 1 ? max_del : 1;
	return w < max_del ? w : max_del;
}

// ksw.c:430-432: eh[0].h = h0, eh[1].h = max(h0 - oe_ins, 0), then -e_ins while the previous > e_ins
__device__ __forceinline__ int row0_h(const job_t &J, int j)
{
	if (j == 0) return J.h0;
	long long v1 = J.h0 > J.o_ins + J.e_ins ? J.h0 - (J.o_ins + J.e_ins) : 0;
	long long v = v1 - (long long)(j - 1) * J.e_ins;
	return v > 0 ? (int)v : 0;
}

__device__ __forceinline__ void store_result(int *res, long long *cells, int k, int max, int max_i, int max_j,
                                             int max_ie, int gscore, int max_off, long long ncell)
{
	int *r = res + (long long)k * N_RES;
	r[R_SCORE] = max;
	r[R_QLE] = max_j + 1;
	r[R_TLE] = max_i + 1;
	r[R_GTLE] = max_ie + 1;
	r[R_GSCORE] = gscore;
	r[R_MAX_OFF] = max_off;
	cells[k] = ncell;
}

// ---------------------------------------------------------------------------------------------
// One thread per job: ksw.c:448-507 line by line, eh[j] at eh[j * 32] (interleaved by lane).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void ksw_extend2_thread(const int *order, int n, const unsigned char *qseq,
                                              const long long *qoff, const unsigned char *tseq,
                                              const long long *toff, const int *prm, const signed char *mats,
                                              const int *mat_off, const int *mat_m, const long long *eh_off,
                                              int2 *eh_arena, int *res, long long *cells)
{
	int pos = blockIdx.x * blockDim.x + threadIdx.x;
	if (pos >= n) return;
	int k = order[pos];
	job_t J = load_job(k, qseq, qoff, tseq, toff, prm, mats, mat_off, mat_m);
	int2 *eh = eh_arena + eh_off[pos];
	const int S = 32;
	int oe_del = J.o_del + J.e_del, oe_ins = J.o_ins + J.e_ins;
	for (int j = 0; j <= J.qlen; ++j) eh[j * S] = make_int2(row0_h(J, j), 0);
	int w = clamp_band(J);
	int max = J.h0, max_i = -1, max_j = -1, max_ie = -1, gscore = -1, max_off = 0;
	int beg = 0, end = J.qlen;
	long long ncell = 0;
	for (int i = 0; i < J.tlen; ++i) {
		int f = 0, h1, m = 0, mj = -1, j;
		const signed char *q = J.mat + J.target[i] * J.m;
		if (beg < i - w) beg = i - w;
		if (end > i + w + 1) end = i + w + 1;
		if (end > J.qlen) end = J.qlen;
		if (beg == 0) {
			h1 = J.h0 - (J.o_del + J.e_del * (i + 1));
			if (h1 < 0) h1 = 0;
		} else h1 = 0;
		ncell += end - beg;
		for (j = beg; j < end; ++j) {
			int2 p = eh[j * S];
			int h, t, M = p.x, e = p.y;
			p.x = h1;
			M = M ? M + q[J.query[j]] : 0;
			h = M > e ? M : e;
			h = h > f ? h : f;
			h1 = h;
			mj = m > h ? mj : j;
			m = m > h ? m : h;
			t = M - oe_del;
			t = t > 0 ? t : 0;
			e -= J.e_del;
			e = e > t ? e : t;
			p.y = e;
			eh[j * S] = p;
			t = M - oe_ins;
			t = t > 0 ? t : 0;
			f -= J.e_ins;
			f = f > t ? f : t;
		}
		eh[end * S] = make_int2(h1, 0);
		if (j == J.qlen) {
			max_ie = gscore > h1 ? max_ie : i;
			gscore = gscore > h1 ? gscore : h1;
		}
		if (m == 0) break;
		if (m > max) {
			max = m, max_i = i, max_j = mj;
			max_off = max_off > abs(mj - i) ? max_off : abs(mj - i);
		} else if (J.zdrop > 0) {
			if (i - max_i > mj - max_j) {
				if (max - m - ((i - max_i) - (mj - max_j)) * J.e_del > J.zdrop) break;
			} else {
				if (max - m - ((mj - max_j) - (i - max_i)) * J.e_ins > J.zdrop) break;
			}
		}
		for (j = beg; j < end && eh[j * S].x == 0 && eh[j * S].y == 0; ++j);
		beg = j;
		for (j = end; j >= beg && eh[j * S].x == 0 && eh[j * S].y == 0; --j);
		end = j + 2 < J.qlen ? j + 2 : J.qlen;
	}
	store_result(res, cells, k, max, max_i, max_j, max_ie, gscore, max_off, ncell);
}

// ---------------------------------------------------------------------------------------------
// One warp per job, lane l owning C <= CMAX contiguous columns of the row.
// ---------------------------------------------------------------------------------------------
template <int CMAX>
__device__ __forceinline__ void extend_warp(const int *order, int n, const unsigned char *qseq,
                                            const long long *qoff, const unsigned char *tseq,
                                            const long long *toff, const int *prm, const signed char *mats,
                                            const int *mat_off, const int *mat_m, const long long *eh_off,
                                            int2 *eh_arena, int *res, long long *cells)
{
	const unsigned FULL = 0xffffffffu;
	int lane = threadIdx.x & 31;
	int pos = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	if (pos >= n) return; // the whole warp
	int k = order[pos];
	job_t J = load_job(k, qseq, qoff, tseq, toff, prm, mats, mat_off, mat_m);
	int2 *eh = eh_arena + eh_off[pos];
	int oe_del = J.o_del + J.e_del, oe_ins = J.o_ins + J.e_ins;
	// set-up: row -1 (ksw.c:430-432) and the band clamp (:434-444)
	for (int j = lane; j <= J.qlen; j += 32) eh[j] = make_int2(row0_h(J, j), 0);
	__syncwarp();
	int w = clamp_band(J);
	int max = J.h0, max_i = -1, max_j = -1, max_ie = -1, gscore = -1, max_off = 0;
	int beg = 0, end = J.qlen;
	long long ncell = 0;
	for (int i = 0; i < J.tlen; ++i) {
		// [1] band clip and first column (ksw.c:452-459)
		if (beg < i - w) beg = i - w;
		if (end > i + w + 1) end = i + w + 1;
		if (end > J.qlen) end = J.qlen;
		int h1 = 0;
		if (beg == 0) {
			h1 = J.h0 - (J.o_del + J.e_del * (i + 1));
			if (h1 < 0) h1 = 0;
		}
		int width = end - beg, C = (width + 31) >> 5, j0 = beg + lane * C;
		ncell += width;
		const signed char *q = J.mat + __ldg(J.target + i) * J.m;
		// [2] M and E(i+1,.) from the previous row; V_j = T_j + j*e_ins and its in-lane prefix
		int hv[CMAX], lx[CMAX];
		unsigned enz = 0;
		int run = KSW2_NEG;
#pragma unroll
		for (int c = 0; c < CMAX; ++c) {
			int j = j0 + c;
			if (c < C && j < end) {
				int2 p = eh[j];
				int M = p.x ? p.x + q[__ldg(J.query + j)] : 0;
				int t = M - oe_del;
				t = t > 0 ? t : 0;
				int en = p.y - J.e_del;
				en = en > t ? en : t;
				eh[j].y = en;
				enz |= (en != 0) << c;
				hv[c] = M > p.y ? M : p.y;
				lx[c] = run;
				t = M - oe_ins;
				t = t > 0 ? t : 0;
				int v = t + j * J.e_ins;
				run = run > v ? run : v;
			}
		}
		// [3] exclusive warp scan of the lanes' prefix maxima
		int inc = run;
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			int o = __shfl_up_sync(FULL, inc, d);
			if (lane >= d) inc = inc > o ? inc : o;
		}
		int exc = __shfl_up_sync(FULL, inc, 1);
		if (lane == 0) exc = KSW2_NEG;
		// [4] H = max(M, E, F); row max with ties to the last column
		int rmax = 0, rmj = -1, hl = 0;
#pragma unroll
		for (int c = 0; c < CMAX; ++c) {
			int j = j0 + c;
			if (c < C && j < end) {
				int f = 0;
				if (j > beg) {
					int x = exc > lx[c] ? exc : lx[c];
					f = x - (j - 1) * J.e_ins;
				}
				int h = hv[c] > f ? hv[c] : f;
				hv[c] = h;
				hl = h;
				if (h >= rmax) rmax = h, rmj = j;
			}
		}
		// [5] eh[j].h = H(i,j-1); first and last non-zero written entries
		int left = __shfl_up_sync(FULL, hl, 1);
		if (lane == 0) left = h1;
		int first = 0x7fffffff, last = -1;
#pragma unroll
		for (int c = 0; c < CMAX; ++c) {
			int j = j0 + c;
			if (c < C && j < end) {
				int hw = c == 0 ? left : hv[c - 1];
				eh[j].x = hw;
				if (hw != 0 || (enz >> c & 1)) {
					first = first < j ? first : j;
					last = j;
				}
			}
		}
		if (width > 0) h1 = __shfl_sync(FULL, hl, (width - 1) / C);
		if (lane == 0) eh[end] = make_int2(h1, 0); // ksw.c:485
		int m = __reduce_max_sync(FULL, rmax);
		int mj = __reduce_max_sync(FULL, rmax == m ? rmj : -1);
		first = __reduce_min_sync(FULL, first);
		last = __reduce_max_sync(FULL, last);
		__syncwarp();
		// [6] whole-query score, dead row, max or Z-drop (ksw.c:486-500)
		if (end == J.qlen) {
			max_ie = gscore > h1 ? max_ie : i;
			gscore = gscore > h1 ? gscore : h1;
		}
		if (m == 0) break;
		if (m > max) {
			max = m, max_i = i, max_j = mj;
			max_off = max_off > abs(mj - i) ? max_off : abs(mj - i);
		} else if (J.zdrop > 0) {
			if (i - max_i > mj - max_j) {
				if (max - m - ((i - max_i) - (mj - max_j)) * J.e_del > J.zdrop) break;
			} else {
				if (max - m - ((mj - max_j) - (i - max_i)) * J.e_ins > J.zdrop) break;
			}
		}
		// [7] next band (ksw.c:502-505): first non-zero in [beg,end), last non-zero in [beg',end]
		if (h1 != 0) last = end;
		int nbeg = first < end ? first : end;
		int jl = last >= nbeg ? last : nbeg - 1;
		beg = nbeg;
		end = jl + 2 < J.qlen ? jl + 2 : J.qlen;
	}
	if (lane == 0) store_result(res, cells, k, max, max_i, max_j, max_ie, gscore, max_off, ncell);
}

#define GX_WARP_KERNEL(CM)                                                                                  \
	extern "C" __global__ void ksw_extend2_warp##CM(                                                        \
		const int *order, int n, const unsigned char *qseq, const long long *qoff, const unsigned char *tseq, \
		const long long *toff, const int *prm, const signed char *mats, const int *mat_off, const int *mat_m, \
		const long long *eh_off, int2 *eh_arena, int *res, long long *cells)                                  \
	{                                                                                                       \
		extend_warp<CM>(order, n, qseq, qoff, tseq, toff, prm, mats, mat_off, mat_m, eh_off, eh_arena, res,  \
		                cells);                                                                             \
	}
GX_WARP_KERNEL(4)
GX_WARP_KERNEL(8)
GX_WARP_KERNEL(16)
