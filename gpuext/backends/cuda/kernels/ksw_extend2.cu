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
// Per row, with eh[j] = {H(i-1,j-1), E(i,j)} the persistent row buffer:
//   M(i,j)   = H(i-1,j-1) ? H(i-1,j-1) + mat[t_i*m + q_j] : 0
//   H(i,j)   = max(M, E(i,j), F(i,j))
//   E(i+1,j) = max(E(i,j) - e_del, max(M - o_del - e_del, 0))
//   F(i,j+1) = max(F(i,j) - e_ins, max(M - o_ins - e_ins, 0)),  F(i,beg) = 0
// and eh[j] becomes {H(i,j-1), E(i+1,j)} (eh[beg].h = the first-column value h1).
//
// Kernels (launched by gpuext/backends/cuda/ksw_extend2.py):
//   ksw_extend2_ring{G}x{C}  a group of G lanes per job (32/G jobs per warp), the row buffer in
//                           registers as a ring of G*C slots (see extend_ring below); F is a prefix
//                           max, F(i,j) = max_{beg<=k<j} (T_k + k*e_ins) - (j-1)*e_ins with
//                           T_k = max(M_k - o_ins - e_ins, 0) (exact for e_ins > 0), one group scan
//                           per row; the slots' query bytes in registers too (a lane reloads its
//                           C bytes when the band start leaves it behind), so a row reads one
//                           target byte and its matrix row from memory.
//   ksw_extend2_thread      one thread per job, the loop of ksw.c as written, the row buffer in
//                           global memory (eh arena, qlen+1 int2 {h, e}, initialised as
//                           ksw.c:430-432), the rows of a warp's 32 jobs interleaved (element j of
//                           lane l at base + 32*j + l); for the jobs no ring holds.
//   ksw_extend2_plan, ksw_extend2_order
//                           one thread per job: the clamped band, the kernel class, the launch segment
//                           and the ring kernels' per-job record; the launch order (a counting sort).
// The launcher only sends jobs that pass its supports().

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

// results, res[R_* * rs + job] (field-major, rs = the jobs of the call; the order of
// gpuext.bwa.dump.RESULT_FIELDS)
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

// ksw.c:434-444: w = min(w, max_ins, max_del), in the same double arithmetic; mx = max(0, matrix max)
__device__ __forceinline__ int clamp_w(int w, int qlen, int mx, int end_bonus, int o_ins, int e_ins, int o_del,
                                       int e_del)
{
	int max_ins = (int)((double)(qlen * mx + end_bonus - o_ins) / e_ins + 1.);
	max_ins = max_ins > 1 ? max_ins : 1;
	w = w < max_ins ? w : max_ins;
	int max_del = (int)((double)(qlen * mx + end_bonus - o_del) / e_del + 1.);
	max_del = max_del > 1 ? max_del : 1;
	return w < max_del ? w : max_del;
}

__device__ __forceinline__ int clamp_band(const job_t &J)
{
	int k = J.m * J.m, mx = 0;
	for (int i = 0; i < k; ++i) mx = mx > J.mat[i] ? mx : J.mat[i];
	return clamp_w(J.w, J.qlen, mx, J.end_bonus, J.o_ins, J.e_ins, J.o_del, J.e_del);
}

// ksw.c:430-432: eh[0].h = h0, eh[1].h = max(h0 - oe_ins, 0), then -e_ins while the previous > e_ins
__device__ __forceinline__ int row0_h(const job_t &J, int j)
{
	if (j == 0) return J.h0;
	long long v1 = J.h0 > J.o_ins + J.e_ins ? J.h0 - (J.o_ins + J.e_ins) : 0;
	long long v = v1 - (long long)(j - 1) * J.e_ins;
	return v > 0 ? (int)v : 0;
}

// The end of a row (ksw.c:489-500): a row whose best score m (at column mj) beats the max raises it;
// only a row that does not is tested for Z-drop. Returns true when the extension stops.
__device__ __forceinline__ bool row_max_or_zdrop(int i, int m, int mj, int zdrop, int e_del, int e_ins,
                                                 int &max, int &max_i, int &max_j, int &max_off)
{
	if (m > max) {
		max = m, max_i = i, max_j = mj;
		max_off = max_off > abs(mj - i) ? max_off : abs(mj - i);
		return false;
	}
	if (zdrop <= 0) return false;
	if (i - max_i > mj - max_j) return max - m - ((i - max_i) - (mj - max_j)) * e_del > zdrop;
	return max - m - ((mj - max_j) - (i - max_i)) * e_ins > zdrop;
}

__device__ __forceinline__ void store_result(int *res, int rs, long long *cells, int k, int max, int max_i, int max_j,
                                             int max_ie, int gscore, int max_off, long long ncell)
{
	int *r = res + k;
	r[R_SCORE * (long long)rs] = max;
	r[R_QLE * (long long)rs] = max_j + 1;
	r[R_TLE * (long long)rs] = max_i + 1;
	r[R_GTLE * (long long)rs] = max_ie + 1;
	r[R_GSCORE * (long long)rs] = gscore;
	r[R_MAX_OFF * (long long)rs] = max_off;
	cells[k] = ncell;
}

// ---------------------------------------------------------------------------------------------
// One thread per job: ksw.c:448-507 line by line, eh[j] at eh[j * 32] (interleaved by lane).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void ksw_extend2_thread(const int *order, int n, const unsigned char *qseq,
                                              const long long *qoff, const unsigned char *tseq,
                                              const long long *toff, const int *prm, const signed char *mats,
                                              const int *mat_off, const int *mat_m, const long long *eh_off,
                                              int2 *eh_arena, int *res, int rs, long long *cells)
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
		if (row_max_or_zdrop(i, m, mj, J.zdrop, J.e_del, J.e_ins, max, max_i, max_j, max_off)) break;
		for (j = beg; j < end && eh[j * S].x == 0 && eh[j * S].y == 0; ++j);
		beg = j;
		for (j = end; j >= beg && eh[j * S].x == 0 && eh[j * S].y == 0; --j);
		end = j + 2 < J.qlen ? j + 2 : J.qlen;
	}
	store_result(res, rs, cells, k, max, max_i, max_j, max_ie, gscore, max_off, ncell);
}


// ---------------------------------------------------------------------------------------------
// A group of G lanes per job (32/G jobs per warp), the row buffer in registers as a ring.
//
// Ring: R = G*C slots, slot p = lane*C + c; column j lives in slot j mod R. With the band [beg, end)
// the slot p holds the column beg + ((p - beg) mod R); the launcher sends a job here only when its
// band fits with a lane to spare (min(qlen, 2w'+1) <= R - C) or its whole row fits (qlen + 1 <= R),
// so the band's columns run contiguously through the lanes in rotated order (logical lane
// (lane - lane_of(beg)) mod G) and the row close column `end` has a slot of its own.
// Values: after a row, the slots of [beg, end] hold eh[beg..end]. The next band reaches at most
// column end + 1; that column's buffer entry is 0 if any earlier row wrote it (it was scanned as zero
// when the band last shrank below it: the end clip i+w+1 never cuts under the previous end) and
// otherwise its row -1 value (ksw.c:430-432), e = 0 both ways. So per row and slot, with end_prev
// the previous row close and hi_w the largest column written so far (written columns are always a
// prefix 0..hi_w):  in(j) = j <= end_prev ? slot : {j <= hi_w ? 0 : row0_h(j), 0}.
// The row itself is the warp recurrence: M and E(i+1,.) per slot, F as the prefix max of
// T_k + k*e_ins over a rotated group scan, H, then the row's max/arg-max (ties to the last column)
// and the first and last non-zero written entries as group reductions.
// Matrix: mrow[mat * 8 + t] holds mat[t*m + 0..m-1] as 8 bytes (m <= 8), picked with a byte permute.
// ---------------------------------------------------------------------------------------------
// prm2[job * N_PRM2 + Q_*]
#define Q_H0 0
#define Q_W 1        // the clamped band width w' (ksw.c:434-444, done by the launcher)
#define Q_ZDROP 2
#define Q_O_DEL 3
#define Q_E_DEL 4
#define Q_O_INS 5
#define Q_E_INS 6
#define Q_MAT 7      // matrix index; bit 30: H < 65536 and qlen < 65535 (row max packed in 32 bits)
#define N_PRM2 8
#define Q_PACK_BIT (1 << 30)

// sign-extended matrix entry: byte (sel & 7) of the 8-byte matrix row {x, y}; sel = b*0x1111 | 0x8880
// (prmt's sign-replicate mode in the three upper result bytes), one instruction
__device__ __forceinline__ unsigned qsel(unsigned b) { return b * 0x1111u | 0x8880u; }
__device__ __forceinline__ int score8(uint2 row, unsigned sel)
{
#ifndef GX_EMU
	unsigned r;
	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(row.x), "r"(row.y), "r"(sel));
	return (int)r;
#else
	return (int)(signed char)__byte_perm(row.x, row.y, sel & 7);
#endif
}

// H = max(max(M, E), F) with F = (the prefix max before the slot) - (j-1)*e_ins, jm = (j-1)*e_ins
__device__ __forceinline__ int cell_h(int hv, int exc, int lx, int jm)
{
	const int f = (exc > lx ? exc : lx) - jm;
	return hv > f ? hv : f;
}

template <int G, int C>
__device__ __forceinline__ void extend_ring(const int *__restrict__ order, int n, const unsigned char *__restrict__ qseq,
                                            const long long *__restrict__ qoff, const unsigned char *__restrict__ tseq,
                                            const long long *__restrict__ toff, const int *__restrict__ prm,
                                            const uint2 *__restrict__ mrow, int *__restrict__ res, int rs,
                                            long long *__restrict__ cells)
{
	constexpr int R = G * C;
	const int lane = threadIdx.x & 31, gl = lane & (G - 1);
	const unsigned gmask = G == 32 ? 0xffffffffu : (((1u << G) - 1) << (lane & ~(G - 1)));
	const int pos = (int)((blockIdx.x * (unsigned)blockDim.x + threadIdx.x) / G);
	if (pos >= n) return; // the whole group
	const int k = __ldg(order + pos);
	const long long q0 = __ldg(qoff + k), t0 = __ldg(toff + k);
	const unsigned char *query = qseq + q0, *target = tseq + t0;
	const int qlen = (int)(__ldg(qoff + k + 1) - q0), tlen = (int)(__ldg(toff + k + 1) - t0);
	const int *p = prm + (long long)k * N_PRM2;
	const int h0 = __ldg(p + Q_H0), w = __ldg(p + Q_W), zdrop = __ldg(p + Q_ZDROP);
	const int o_del = __ldg(p + Q_O_DEL), e_del = __ldg(p + Q_E_DEL), o_ins = __ldg(p + Q_O_INS),
	          e_ins = __ldg(p + Q_E_INS), matf = __ldg(p + Q_MAT);
	const bool pack = (matf & Q_PACK_BIT) != 0;
	const uint2 *mr = mrow + (long long)(matf & ~Q_PACK_BIT) * 8;
	const int oe_del = o_del + e_del, oe_ins = o_ins + e_ins;
	const int v1 = h0 > oe_ins ? h0 - oe_ins : 0; // eh[1].h of row -1
	// Row -1 (ksw.c:430-432) and the query bytes (as score8 selectors) in the slots of the first
	// band: slot p holds column p while beg = 0. A lane's query bytes are those of the columns its
	// slots hold, qcol + c: when beg leaves a lane behind, the lane loads the columns R further on
	// (they are past the band's end until beg has moved on). A row's band reaches at most one column
	// the buffer has not held, xcol = end_prev + 1 (the next end is at most the last non-zero
	// column + 2 <= end_prev + 2): its slot is set to the row -1 value if no row wrote it yet
	// (xcol > hi_w), else 0 (see above), e = 0, before the row.
	int H[C], E[C], ce[C];
	unsigned qs[C];
	int qcol = gl * C;
#pragma unroll
	for (int c = 0; c < C; ++c) {
		const int j = gl * C + c;
		H[c] = j == 0 ? h0 : (v1 - (j - 1) * e_ins > 0 ? v1 - (j - 1) * e_ins : 0), E[c] = 0;
		qs[c] = qsel(__ldg(query + (j < qlen ? j : qlen - 1)));
		ce[c] = c * e_ins;
	}
	int max = h0, max_i = -1, max_j = -1, max_ie = -1, gscore = -1, max_off = 0;
	int beg = 0, end = qlen, end_prev = -1, hi_w = -1, bmod = 0, lb = 0; // bmod = beg % R, lb = bmod / C
	long long ncell = 0;
	uint2 trow = make_uint2(0, 0);
	if (tlen > 0) trow = __ldg(mr + __ldg(target));
	for (int i = 0; i < tlen; ++i) {
		const uint2 tr = trow;
		if (i + 1 < tlen) trow = __ldg(mr + __ldg(target + i + 1)); // one row ahead
		// [1] band clip (beg's at the end of the previous row) and first column (ksw.c:452-459)
		if (end > i + w + 1) end = i + w + 1;
		if (end > qlen) end = qlen;
		int h1i = h0 - (o_del + e_del * (i + 1));
		h1i = beg == 0 && h1i > 0 ? h1i : 0;
		ncell += end - beg;
		const int width = end - beg; // >= 0 (the plan sends jobs with w' < 0 to the thread kernel)
		// slot c of this lane holds band offset d = base + c (column beg + d); d < 0 only for the
		// slots of logical lane 0 behind beg, which hold no column of the band
		const int L = (gl - lb) & (G - 1);
		const int base = L * C - (bmod - lb * C);
		{
			const int xcol = end_prev + 1; // i = 0: end_prev = -1, xcol = 0 is the first band's own
			if (i > 0 && xcol < end) {     // uniform and rare: xcol joins the band
				const int xh = xcol > hi_w ? (v1 - (xcol - 1) * e_ins > 0 ? v1 - (xcol - 1) * e_ins : 0) : 0;
				const int dx = xcol - beg;
#pragma unroll
				for (int c = 0; c < C; ++c) {
					H[c] = base + c == dx ? xh : H[c];
					E[c] = base + c == dx ? 0 : E[c];
				}
			}
		}
		// [2] M and E(i+1,.) from the previous row; V_j = T_j + j*e_ins and its in-lane prefix max
		// (slots behind the band excluded; slots past its end feed only columns past the end).
		const int B = (beg + base) * e_ins; // j*e_ins of slot 0
		int hv[C], lx[C];
		int run = KSW2_NEG;
#pragma unroll
		for (int c = 0; c < C; ++c) {
			const int d = base + c;
			const bool in = (unsigned)d < (unsigned)width;
			const int hin = H[c], ein = E[c];
			const int M = hin ? hin + score8(tr, qs[c]) : 0;
			int t = M - oe_del;
			t = t > 0 ? t : 0;
			const int en = ein - e_del;
			if (in) E[c] = en > t ? en : t;
			hv[c] = M > ein ? M : ein;
			t = M - oe_ins;
			t = t > 0 ? t : 0;
			const int v = d >= 0 ? t + B + ce[c] : KSW2_NEG;
			lx[c] = run;
			run = run > v ? run : v;
		}
		// [3] exclusive scan of the lanes' prefix maxima in logical lane order
		int inc = run;
#pragma unroll
		for (int s = 1; s < G; s <<= 1) {
			const int o = __shfl_sync(gmask, inc, (gl - s) & (G - 1), G);
			if (L >= s) inc = inc > o ? inc : o;
		}
		int exc = __shfl_sync(gmask, inc, (gl - 1) & (G - 1), G);
		if (L == 0) exc = KSW2_NEG;
		// [4] H = max(M, E, F) with F(j) = max(exc, lx) - (j-1)*e_ins; at j = beg that is below any
		// max(M, E) >= 0, as BWA's F(beg) = 0 is. The row max, ties to the last column (packed: one
		// max per slot).
		const int Bm = B - e_ins;
		int hl = 0;
		unsigned rkey = 0;
		int rmax = 0, rmj = -1;
		// (two loops, so that no slot branches on pack)
		if (pack) {
			const int jb = beg + base + 1;
#pragma unroll
			for (int c = 0; c < C; ++c) {
				const int h = hv[c] = cell_h(hv[c], exc, lx[c], Bm + ce[c]);
				if ((unsigned)(base + c) < (unsigned)width) {
					hl = h;
					const unsigned key = (unsigned)h << 16 | (unsigned)(jb + c);
					rkey = rkey > key ? rkey : key;
				}
			}
		} else {
#pragma unroll
			for (int c = 0; c < C; ++c) {
				const int h = hv[c] = cell_h(hv[c], exc, lx[c], Bm + ce[c]);
				if ((unsigned)(base + c) < (unsigned)width) {
					hl = h;
					if (h >= rmax) rmax = h, rmj = beg + base + c;
				}
			}
		}
		// [5] eh[j].h = H(i,j-1) for j in [beg, end] (the close column end gets H(i,end-1) = h1, or
		// h1i in an empty band); eh[end].e = 0; the non-zero written entries of [beg, end) as a mask
		const int left = __shfl_sync(gmask, hv[C - 1], (gl - 1) & (G - 1), G);
		int h1 = h1i;
		{
			const int src = width > 0 ? ((end - 1) % R) / C : 0;
			const int x = __shfl_sync(gmask, hl, src, G);
			if (width > 0) h1 = x;
		}
		unsigned nzm = 0;
#pragma unroll
		for (int c = 0; c < C; ++c) {
			const int d = base + c;
			const int hw = d == 0 ? h1i : c == 0 ? left : hv[c - 1];
			if ((unsigned)d < (unsigned)width && (hw | E[c]) != 0) nzm |= 1u << c;
			H[c] = (unsigned)d <= (unsigned)width ? hw : H[c];
			E[c] = d == width ? 0 : E[c];
		}
		int first = 0x7fffffff, last = -1;
		if (nzm) {
			first = beg + base + __ffs(nzm) - 1;
			last = beg + base + 31 - __clz(nzm);
		}
		int m, mj;
		if (pack) {
			const unsigned key = __reduce_max_sync(gmask, rkey);
			m = (int)(key >> 16), mj = (int)(key & 0xffff) - 1;
		} else {
			m = __reduce_max_sync(gmask, rmax);
			mj = __reduce_max_sync(gmask, rmax == m ? rmj : -1);
		}
		first = __reduce_min_sync(gmask, first);
		last = __reduce_max_sync(gmask, last);
		// [6] whole-query score, dead row, max or Z-drop (ksw.c:486-500)
		if ((beg < end ? end : beg) == qlen) {
			max_ie = gscore > h1 ? max_ie : i;
			gscore = gscore > h1 ? gscore : h1;
		}
		if (m == 0) break;
		if (row_max_or_zdrop(i, m, mj, zdrop, e_del, e_ins, max, max_i, max_j, max_off)) break;
		// [7] next band (ksw.c:502-505): first non-zero in [beg,end), last non-zero in [beg',end]
		end_prev = end;
		hi_w = hi_w > end ? hi_w : end;
		if (h1 != 0) last = end;
		const int nbeg = first < end ? first : end;
		const int jl = last >= nbeg ? last : nbeg - 1;
		end = jl + 2 < qlen ? jl + 2 : qlen;
		beg = nbeg > i + 1 - w ? nbeg : i + 1 - w; // the next row's clip
		bmod = beg % R, lb = bmod / C;
		const int tq = beg - bmod + gl * C + (gl < lb ? R : 0); // this lane's columns from now on
		if (tq != qcol) { // a lane beg left behind (its loads complete while the next row runs)
			qcol = tq;
#pragma unroll
			for (int c = 0; c < C; ++c) qs[c] = qsel(__ldg(query + (tq + c < qlen ? tq + c : qlen - 1)));
		}
	}
	if (gl == 0) store_result(res, rs, cells, k, max, max_i, max_j, max_ie, gscore, max_off, ncell);
}

// The jobs of launch segments [seg, seg + NSIZE) (a chunk's class): order[start[seg] ..
// start[seg + NSIZE]); the launcher sizes the grid for at most all the chunk's jobs, and the groups
// past the segment's end return at once (no host read-back before the launch).
#define NSIZE 8
// MINB: blocks per SM the register allocation must allow (1 for the widest rings: their long jobs'
// rows are latency-bound, and more registers keep the row loop free of spills)
#define GX_RING_KERNEL(G, C, MINB)                                                                           \
	extern "C" __global__ void __launch_bounds__(128, MINB) ksw_extend2_ring##G##x##C(                     \
		const int *order, const unsigned *start, int seg, const unsigned char *qseq, const long long *qoff,  \
		const unsigned char *tseq, const long long *toff, const int *prm, const uint2 *mrow, int *res,       \
		int rs, long long *cells)                                                                            \
	{                                                                                                        \
		const unsigned s0 = __ldg(start + seg);                                                              \
		extend_ring<G, C>(order + s0, (int)(__ldg(start + seg + NSIZE) - s0), qseq, qoff, tseq, toff, prm,  \
		                  mrow, res, rs, cells);                                                             \
	}
GX_RING_KERNEL(4, 4, 4)
GX_RING_KERNEL(4, 8, 4)
GX_RING_KERNEL(8, 8, 4)
GX_RING_KERNEL(8, 12, 4)
GX_RING_KERNEL(8, 16, 2)
GX_RING_KERNEL(32, 5, 4)
GX_RING_KERNEL(32, 7, 4)
GX_RING_KERNEL(32, 10, 1)
GX_RING_KERNEL(32, 13, 1)
GX_RING_KERNEL(32, 16, 1)


// ---------------------------------------------------------------------------------------------
// Planning on the device. ksw_extend2_plan, one thread per job k: the clamped band w' (clamp_w,
// ksw.c:434-444), band = min(qlen, 2w'+1), the kernel class (the
// first ring of RING that holds the whole row, qlen + 1 <= G*C, or the band with a lane to spare,
// band <= G*C - C; 0 = the thread kernel), the ring record prm2 and the launch segment: (upload rank
// of the job's chunk, class, size bucket of the cell bound band*tlen + qlen, largest first), with
// hist[seg] counting the jobs per segment (and hist[nseg] the jobs run() should not have been given:
// qlen < 1, h0 < 1, e_del or e_ins < 1, an unknown matrix, a row over max_row entries). mode: 0 auto,
// 1 warp (rings of 32 lanes only), 2 thread.
// ksw_extend2_scan makes the segments' starts (the exclusive prefix sum of hist) and
// ksw_extend2_order puts each job at the next free place of its segment: the launch order, segment
// by segment.
// ---------------------------------------------------------------------------------------------
#define N_RING 10
#define NCLS (N_RING + 1)
#define MAX_CHUNKS 6
__constant__ int ring_g[N_RING] = {4, 4, 8, 8, 8, 32, 32, 32, 32, 32};
__constant__ int ring_c[N_RING] = {4, 8, 8, 12, 16, 5, 7, 10, 13, 16};

extern "C" __global__ void __launch_bounds__(256) ksw_extend2_plan(
	int n, const long long *__restrict__ qoff, const long long *__restrict__ toff, const int *__restrict__ h0v,
	const int *__restrict__ wv, const int *__restrict__ ebv, const int *__restrict__ zdv, const int *__restrict__ odv,
	const int *__restrict__ edv, const int *__restrict__ oiv, const int *__restrict__ eiv, const int *__restrict__ midv,
	const int *__restrict__ mat_max, const int *__restrict__ mat_m, int uni, int nmat, long long max_row, int mode, int nch,
	const long long *__restrict__ bounds, const int *__restrict__ rank, int *__restrict__ prm2,
	int *__restrict__ segv, unsigned int *__restrict__ hist)
{
	__shared__ unsigned int h[MAX_CHUNKS * NCLS * NSIZE];
	const int nseg = nch * NCLS * NSIZE;
	for (int i = threadIdx.x; i < nseg; i += blockDim.x) h[i] = 0;
	__syncthreads();
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < n) {
		const int qlen = (int)(qoff[k + 1] - qoff[k]), tlen = (int)(toff[k + 1] - toff[k]);
		// a parameter the same for all jobs comes as one value: bit f of uni (w, end_bonus, zdrop, o_del,
		// e_del, o_ins, e_ins, matrix)
#define GX_PRM(v, f) v[uni >> f & 1 ? 0 : k]
		const int h0 = h0v[k], eb = GX_PRM(ebv, 1), od = GX_PRM(odv, 3), ed = GX_PRM(edv, 4), oi = GX_PRM(oiv, 5),
		          ei = GX_PRM(eiv, 6), mid = GX_PRM(midv, 7);
		// the launcher's cheap part of supports() (hist[nseg] counts the jobs that fail it)
		if (qlen < 1 || h0 < 1 || ed < 1 || ei < 1 || mid < 0 || mid >= nmat || qlen + 1LL > max_row) {
			atomicAdd(hist + nseg, 1u);
		} else {
			const int mx = mat_max[mid], msz = mat_m[mid];
			const int w = clamp_w(GX_PRM(wv, 0), qlen, mx, eb, oi, ei, od, ed);
			const long long band = qlen < 2LL * w + 1 ? (long long)qlen : 2LL * w + 1;
			int cls = 0;
			if (mode != 2 && msz <= 8 && w >= 0)
				for (int i = 0; i < N_RING; ++i) {
					const int g = ring_g[i], R = g * ring_c[i];
					if ((mode == 0 || g == 32) && (qlen + 1 <= R || band <= R - ring_c[i])) { cls = i + 1; break; }
				}
			const bool pack = qlen < 65535 && (long long)h0 + (long long)(qlen + 1) * mx < 65535 && od + ed >= 0 && oi + ei >= 0;
			int *p = prm2 + (long long)k * N_PRM2;
			p[Q_H0] = h0, p[Q_W] = w, p[Q_ZDROP] = GX_PRM(zdv, 2), p[Q_O_DEL] = od, p[Q_E_DEL] = ed;
			p[Q_O_INS] = oi, p[Q_E_INS] = ei, p[Q_MAT] = mid | (pack ? Q_PACK_BIT : 0);
			int ch = 0;
			while (ch + 1 < nch && k >= bounds[ch + 1]) ++ch;
			int b = (int)(log2((double)(band * tlen + qlen) + 1.) / 3.);
			b = b < NSIZE - 1 ? b : NSIZE - 1;
			const int seg = (rank[ch] * NCLS + cls) * NSIZE + (NSIZE - 1 - b);
			segv[k] = seg;
			atomicAdd(&h[seg], 1u);
		}
	}
	__syncthreads();
	for (int i = threadIdx.x; i < nseg; i += blockDim.x)
		if (h[i]) atomicAdd(hist + i, h[i]);
#undef GX_PRM
}

// start[s] = the jobs of segments before s (s = 0..nseg), cursor = a copy for ksw_extend2_order
extern "C" __global__ void ksw_extend2_scan(int nseg, const unsigned int *__restrict__ hist,
                                            unsigned int *__restrict__ start, unsigned int *__restrict__ cursor)
{
	if (threadIdx.x == 0) {
		unsigned int a = 0;
		for (int s = 0; s < nseg; ++s) start[s] = cursor[s] = a, a += hist[s];
		start[nseg] = a;
	}
}

extern "C" __global__ void __launch_bounds__(256) ksw_extend2_order(int n, const int *__restrict__ segv,
                                                                    unsigned int *__restrict__ cursor,
                                                                    int *__restrict__ order)
{
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < n) order[atomicAdd(cursor + segv[k], 1u)] = k;
}
