// minimap2's ksw_extz2_sse (ksw2_extz2_sse.c, single affine gap cost) on the GPU, bit-exact.
// Launched by ksw_extz2.py; line numbers below are ksw2_extz2_sse.c's and ksw2.h's of minimap2 2.31.
//
// One block per job (32, 128 or 512 threads by the band's width), threads over the target slots t of an
// anti-diagonal, ksw2's arrays in global memory (lines 90-96): u, y, s, x and v of tlen_ * 16 bytes
// (kcalloc: zero; x and v twice, see ksw_extz2_dp), then H (int32, KSW_NEG_INF, lines 97-100), then off
// and off_end. Every cell of ksw2's 16-byte blocks is
// computed, including the lanes just outside the band, whose stale values feed the band's edge on the
// next anti-diagonal as they do in ksw2. Each byte operation is the SSE4.1 instruction's (mappy and the
// stock CLI build ksw2 with -msse4.1): wrapping adds, signed and unsigned max/min. The score loop's
// unaligned 16-byte stores reach past en0 (lines 141-156): the same bytes are written here, and its reads
// past the target land in the reversed query that follows it in ksw2's buffer (Seqs). The exact maximum
// of an anti-diagonal takes ksw2's order for ties (lines 250-272: en0, then the four SSE lanes one after
// another, then the tail). The backtrack is ksw_backtrack (ksw2.h) by thread 0.

typedef unsigned char ku8;
typedef unsigned int ku32;
typedef long long ki64;

#include "ksw2.cuh"  // KSW_NEG_INF, the KSW_EZ_* flags
#define Z2_FIELDS 11  // max max_q max_t mqe mqe_t mte mte_q score zdropped reach_end, then the CIGAR length
#define Z2_WARPS 4    // jobs per block of ksw_extz2_pack

// int8 lanes of an __m128i, as ints
__device__ __forceinline__ int s8(int v) { return (int)(signed char)v; }
__device__ __forceinline__ int max_epu8(int a, int b) { return (ku8)a > (ku8)b ? a : b; }
__device__ __forceinline__ int min_epu8(int a, int b) { return (ku8)a < (ku8)b ? a : b; }

// The job's bytes where ksw2 keeps them: sf (the target, tlen_ * 16 bytes, zero past tlen) followed by qr
// (the reversed query, zero past qlen): the score loop's 16-byte reads run past either end
struct Seqs {
	const ku8* T;
	const ku8* Q;
	int tlen, qlen, t16;
	__device__ __forceinline__ int qr(int k) const { return k < qlen ? Q[qlen - 1 - k] : 0; }
	__device__ __forceinline__ int sf(int t) const { return t < tlen ? T[t] : t < t16 ? 0 : qr(t - t16); }
};

// The ksw_extz_t of a job as ksw2 keeps it (ksw_reset_extz, then the walk's updates)
struct Extz {
	int max, max_q, max_t, mqe, mqe_t, mte, mte_q, score, zdropped, reach_end;
	// ksw_apply_zdrop with is_rot = 1 (ksw2.h:172-190): true when the extension stops
	__device__ __forceinline__ bool zdrop_at(int H, int r, int t, int zdrop, int e)
	{
		if (H > max) {
			max = H, max_t = t, max_q = r - t;
		} else if (t >= max_t && r - t >= max_q) {
			const int tl = t - max_t, ql = (r - t) - max_q, l = tl > ql ? tl - ql : ql - tl;
			if (zdrop >= 0 && max - H > zdrop + l * e) {
				zdropped = 1;
				return true;
			}
		}
		return false;
	}
};

// ksw_push_cigar (ksw2.h:115-125) into a buffer of qlen + tlen words
__device__ __forceinline__ void push_cigar(ku32* cig, int& n, int op, int len)
{
	if (n == 0 || op != (int)(cig[n - 1] & 0xf)) cig[n++] = (ku32)len << 4 | op;
	else cig[n - 1] += (ku32)len << 4;
}

// ksw_backtrack (ksw2.h:131-162) with is_rot = 1 and min_intron_len = 0; returns the CIGAR's length
__device__ int backtrack(const ku8* p, const int* off, const int* off_end, ki64 n_col, int i0, int j0, bool rev,
						 ku32* cig)
{
	int n = 0, i = i0, j = j0, state = 0;
	while (i >= 0 && j >= 0) {
		const int r = i + j;
		int force = -1;
		if (i < off[r]) force = 2;
		if (i > off_end[r]) force = 1;
		const int tmp = force < 0 ? p[(ki64)r * n_col + i - off[r]] : 0;
		if (state == 0) state = tmp & 7;
		else if (!(tmp >> (state + 2) & 1)) state = 0;
		if (state == 0) state = tmp & 7;
		if (force >= 0) state = force;
		if (state == 0) push_cigar(cig, n, 0, 1), --i, --j;          // M
		else if (state == 1 || state == 3) push_cigar(cig, n, 2, 1), --i;  // D
		else push_cigar(cig, n, 1, 1), --j;                          // I
	}
	if (i >= 0) push_cigar(cig, n, 2, i + 1);
	if (j >= 0) push_cigar(cig, n, 1, j + 1);
	if (!rev)
		for (int k = 0; k < n >> 1; ++k) {
			const ku32 t = cig[k];
			cig[k] = cig[n - 1 - k], cig[n - 1 - k] = t;
		}
	return n;
}

// The exact maximum's order of an anti-diagonal's slot t (lines 250-272), smaller first among equal H:
// en0; then the SSE loop's lane i = (t - st0) & 3 over t < en1, lane by lane, in t order within a lane
// (each lane keeps its first strict maximum, the lanes are merged in order with strict >); then t in
// [en1, en0) in order
__device__ __forceinline__ int max_ord(int t, int st0, int en0, int en1)
{
	const int m = (en1 - st0) >> 2;
	if (t == en0) return 0;
	if (t < en1) return 1 + ((t - st0) & 3) * m + ((t - st0) >> 2);
	return 1 + 4 * m + (t - en1);
}

// the largest of the warp's values, in every lane
__device__ __forceinline__ ki64 warp_max64(ki64 v)
{
	for (int o = 16; o > 0; o >>= 1) {
		const ki64 w = __shfl_down_sync(0xffffffffu, v, o);
		v = w > v ? w : v;
	}
	return __shfl_sync(0xffffffffu, v, 0);
}

// The block's largest key, in every thread (keys: one per thread; red: a slot per warp)
__device__ __forceinline__ ki64 block_max64(ki64 v, ki64* red)
{
	v = warp_max64(v);
	const int nw = blockDim.x >> 5;
	if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
	__syncthreads();
	v = red[0];
	for (int i = 1; i < nw; ++i) v = red[i] > v ? red[i] : v;
	return v;
}

#define Z2_MAX_WARPS 16

// Jobs k0 + jl[b] of the call, a block each (any multiple of 32 threads up to 32 * Z2_MAX_WARPS): job
// k0 + k takes work_off[k] bytes of state in `work`, dir_off[k] of direction bytes in `dir`, cig_off[k]
// words of CIGAR in `cig`, and row k of res (Z2_FIELDS rows of n). ksw2 updates x and v in place, reading
// each at t-1 before its 16-lane block overwrites it; here each has two buffers, anti-diagonal r writing
// buffer r & 1 and reading r-1's, so that the cells of an anti-diagonal are independent. Slots above r-1's
// band were never written in either buffer (the band's end never moves down): zero, as in ksw2's array.
extern "C" __global__ void __launch_bounds__(32 * Z2_MAX_WARPS) ksw_extz2_dp(
	const int* __restrict__ jl, int k0, int n, const ku8* __restrict__ qseq, const ki64* __restrict__ qoff,
	const ku8* __restrict__ tseq, const ki64* __restrict__ toff, const int* __restrict__ wv,
	const int* __restrict__ zdv, const int* __restrict__ ebv, const int* __restrict__ flv,
	const signed char* __restrict__ mat, int q_, int e_, const ki64* __restrict__ work_off, ku8* work,
	const ki64* __restrict__ dir_off, ku8* dir, const ki64* __restrict__ cig_off, ku32* cig,
	int* __restrict__ res)
{
	__shared__ ki64 red[Z2_MAX_WARPS];
	__shared__ int sh_h[2];  // H of en0 and st0 after the anti-diagonal
	const int tid = threadIdx.x, NT = blockDim.x, k = jl[blockIdx.x], j = k0 + k;
	const int qlen = (int)(qoff[j + 1] - qoff[j]), tlen = (int)(toff[j + 1] - toff[j]);
	const int q = (signed char)q_, e = (signed char)e_, qe = q + e, flag = flv[j], zdrop = zdv[j];
	const bool with_cigar = !(flag & KSW_EZ_SCORE_ONLY), approx_max = (flag & KSW_EZ_APPROX_MAX) != 0;
	const bool right = (flag & KSW_EZ_RIGHT) != 0, generic = (flag & KSW_EZ_GENERIC_SC) != 0;
	Extz ez = {0, -1, -1, KSW_NEG_INF, -1, KSW_NEG_INF, -1, KSW_NEG_INF, 0, 0};  // ksw_reset_extz
	int ncig = 0;
	// lines 64-89: the SSE constants as int8, and the matrix's extremes (an early return, line 89)
	const int qe2 = s8(qe * 2), sc_mch = mat[0], sc_mis = mat[1];
	const int sc_N = mat[24] == 0 ? s8(-e) : mat[24], max_sc8 = s8(mat[0] + qe * 2);
	int min_sc = mat[1];
	for (int t = 1; t < 25; ++t) min_sc = min(min_sc, (int)mat[t]);
	if (qlen > 0 && tlen > 0 && -min_sc <= 2 * qe) {
		const Seqs sq = {tseq + toff[j], qseq + qoff[j], tlen, qlen, (tlen + 15) / 16 * 16};
		int w = wv[j];
		if (w < 0) w = tlen > qlen ? tlen : qlen;
		const int wl = w, wr = w;
		int n_col = qlen < tlen ? qlen : tlen;
		n_col = ((n_col < w + 1 ? n_col : w + 1) + 15) / 16 + 1;
		const ki64 ncol16 = (ki64)n_col * 16;
		const int t16 = sq.t16;
		signed char* u = (signed char*)(work + work_off[k]);
		signed char *y = u + t16, *s = y + t16, *x2 = s + t16, *v2 = x2 + 2 * t16;  // x, v: two buffers each
		int* H = (int*)(v2 + 2 * t16);
		int* off = H + t16;
		int* off_end = off + (qlen + tlen - 1);
		ku8* p = dir + (with_cigar ? dir_off[k] : 0);
		for (int t = tid; t < 7 * t16; t += NT) u[t] = 0;
		if (!approx_max)
			for (int t = tid; t < t16; t += NT) H[t] = KSW_NEG_INF;
		__syncthreads();
		int last_st = -1, last_en = -1, H0 = 0, last_H0_t = 0;
		for (int r = 0; r < qlen + tlen - 1; ++r) {
			const signed char *xo = x2 + ((r - 1) & 1) * t16, *vo = v2 + ((r - 1) & 1) * t16;  // r-1's
			signed char *xn = x2 + (r & 1) * t16, *vn = v2 + (r & 1) * t16;
			// lines 110-120: the band of anti-diagonal r, then its whole 16-slot blocks
			int st = 0, en = tlen - 1;
			if (st < r - qlen + 1) st = r - qlen + 1;
			if (en > r) en = r;
			if (st < (r - wr + 1) >> 1) st = (r - wr + 1) >> 1;
			if (en > (r + wl) >> 1) en = (r + wl) >> 1;
			if (st > en) {
				ez.zdropped = 1;
				break;
			}
			const int st0 = st, en0 = en;
			st = st / 16 * 16, en = (en + 16) / 16 * 16 - 1;
			// lines 122-127: the boundary values
			int x1, v1;
			if (st > 0) {
				if (st - 1 >= last_st && st - 1 <= last_en) x1 = xo[st - 1], v1 = vo[st - 1];
				else x1 = v1 = 0;
			} else x1 = 0, v1 = r ? q : 0;
			if (tid == 0 && en >= r) y[r] = 0, u[r] = (signed char)(r ? q : 0);
			// lines 129-148: the scores; the SSE loop's stores cover whole 16-byte steps from st0
			if (!generic) {
				const int nb = ((en0 - st0) / 16 + 1) * 16;
				for (int b = tid; b < nb; b += NT) {
					const int t = st0 + b;
					if (t >= t16) continue;  // (past s: bytes of sf below st0, never read again)
					const int a = sq.sf(t), c = sq.qr(qlen - 1 - r + t);
					s[t] = (signed char)(a == 4 || c == 4 ? sc_N : a == c ? sc_mch : sc_mis);
				}
			} else {
				for (int t = st0 + tid; t <= en0; t += NT) s[t] = mat[sq.T[t] * 5 + sq.Q[r - t]];
			}
			if (with_cigar && tid == 0) off[r] = st, off_end[r] = en;
			__syncthreads();
			// lines 150-223: every cell of blocks st .. en from anti-diagonal r-1's values (x and v at t-1)
			ku8* pr = p + (ki64)r * ncol16 - st;
			for (int t = st + tid; t <= en; t += NT) {
				// line 154-155: x1_ and v1_ are the int8 x1 and v1 sign-extended to 32 bits, ORed into the first
				// four lanes: a negative one turns lanes st+1..st+3 to -1 too (ksw_extd2 casts to uint8 there)
				const bool lo = t - st < 4;
				const int xt1 = t == st ? x1 : lo && x1 < 0 ? -1 : xo[t - 1];
				const int vt1 = t == st ? v1 : lo && v1 < 0 ? -1 : vo[t - 1], ut = u[t];
				int z = s8(s[t] + qe2), a = s8(xt1 + vt1), b = s8(y[t] + ut), d = 0;
				if (!with_cigar) {
					z = max(z, a);
				} else if (!right) {
					d = a > z ? 1 : 0;
					z = max(z, a);
					d = b > z ? 2 : d;
				} else {
					d = z > a ? 0 : 1;
					z = max(z, a);
					d = z > b ? d : 2;
				}
				z = min_epu8(max_epu8(z, b), max_sc8);  // __dp_code_block2
				const int un = s8(z - vt1), vnew = s8(z - ut);
				u[t] = (signed char)un, vn[t] = (signed char)vnew;
				z = s8(z - q);
				a = s8(a - z), b = s8(b - z);
				if (!with_cigar) {
					xn[t] = (signed char)max(a, 0), y[t] = (signed char)max(b, 0);
				} else if (!right) {
					xn[t] = (signed char)(a > 0 ? a : 0), y[t] = (signed char)(b > 0 ? b : 0);
					pr[t] = (ku8)(d | (a > 0 ? 0x08 : 0) | (b > 0 ? 0x10 : 0));
				} else {
					xn[t] = (signed char)(a < 0 ? 0 : a), y[t] = (signed char)(b < 0 ? 0 : b);
					pr[t] = (ku8)(d | (a < 0 ? 0 : 0x08) | (b < 0 ? 0 : 0x10));
				}
				if (t == en0 && !approx_max && r > 0)  // line 250: H[en0] from H[en0 - 1] before r updates it
					sh_h[0] = en0 > 0 ? H[en0 - 1] + (ku8)un - qe : H[en0] + (ku8)vnew - qe;
			}
			__syncthreads();
			const ku8 *u8 = (const ku8*)u, *v8 = (const ku8*)vn;
			if (!approx_max) {  // lines 224-285: H, the exact maximum and the books
				int max_H, max_t;
				if (r > 0) {
					const int en1 = st0 + (en0 - st0) / 4 * 4, h_en0 = sh_h[0];
					ki64 best = (ki64)h_en0 * 0x100000000LL + 0x7fffffff;  // (H, order): en0 first
					for (int t = st0 + tid; t < en0; t += NT) {
						const int h = H[t] + v8[t] - qe;
						H[t] = h;
						if (t == st0) sh_h[1] = h;
						const ki64 key = (ki64)h * 0x100000000LL + (0x7fffffff - max_ord(t, st0, en0, en1));
						best = key > best ? key : best;
					}
					if (tid == 0) {
						H[en0] = h_en0;
						if (st0 == en0) sh_h[1] = h_en0;
					}
					best = block_max64(best, red);
					max_H = (int)(best >> 32);
					const int ord = 0x7fffffff - (int)(best & 0xffffffff);
					if (ord == 0) max_t = en0;
					else if (ord <= en1 - st0) {
						const int m = (en1 - st0) >> 2, i = (ord - 1) / m;
						max_t = st0 + ((ord - 1) - i * m) * 4 + i;
					} else max_t = en1 + (ord - 1 - (en1 - st0));
				} else {
					if (tid == 0) H[0] = sh_h[0] = sh_h[1] = v8[0] - qe - qe;
					max_H = v8[0] - qe - qe, max_t = 0;
					__syncthreads();
				}
				const int h_en = sh_h[0], h_st = sh_h[1];
				if (en0 == tlen - 1 && h_en > ez.mte) ez.mte = h_en, ez.mte_q = r - en0;
				if (r - st0 == qlen - 1 && h_st > ez.mqe) ez.mqe = h_st, ez.mqe_t = st0;
				if (ez.zdrop_at(max_H, r, max_t, zdrop, e)) break;
				if (r == qlen + tlen - 2 && en0 == tlen - 1) ez.score = h_en;  // (en0 = tlen - 1)
			} else {  // lines 286-302: the approximate maximum
				if (r > 0) {
					if (last_H0_t >= st0 && last_H0_t <= en0 && last_H0_t + 1 >= st0 && last_H0_t + 1 <= en0) {
						const int d0 = v8[last_H0_t] - qe, d1 = u8[last_H0_t + 1] - qe;
						if (d0 > d1) H0 += d0;
						else H0 += d1, ++last_H0_t;
					} else if (last_H0_t >= st0 && last_H0_t <= en0) {
						H0 += v8[last_H0_t] - qe;
					} else {
						++last_H0_t, H0 += u8[last_H0_t] - qe;
					}
					if ((flag & KSW_EZ_APPROX_DROP) && ez.zdrop_at(H0, r, last_H0_t, zdrop, e)) break;
				} else H0 = v8[0] - qe - qe, last_H0_t = 0;
				if (r == qlen + tlen - 2 && en0 == tlen - 1) ez.score = H0;
			}
			last_st = st, last_en = en;
			__syncthreads();
		}
		if (with_cigar && tid == 0) {  // lines 306-316
			const bool rev = (flag & KSW_EZ_REV_CIGAR) != 0;
			ku32* c = cig + cig_off[k];
			if (!ez.zdropped && !(flag & KSW_EZ_EXTZ_ONLY)) {
				ncig = backtrack(p, off, off_end, ncol16, tlen - 1, qlen - 1, rev, c);
			} else if (!ez.zdropped && (flag & KSW_EZ_EXTZ_ONLY) && ez.mqe + ebv[j] > ez.max) {
				ez.reach_end = 1;
				ncig = backtrack(p, off, off_end, ncol16, ez.mqe_t, qlen - 1, rev, c);
			} else if (ez.max_t >= 0 && ez.max_q >= 0) {
				ncig = backtrack(p, off, off_end, ncol16, ez.max_t, ez.max_q, rev, c);
			}
		}
	}
	if (tid == 0) {
		const int f[Z2_FIELDS] = {ez.max, ez.max_q, ez.max_t, ez.mqe, ez.mqe_t, ez.mte, ez.mte_q, ez.score,
								  ez.zdropped, ez.reach_end, ncig};
		for (int i = 0; i < Z2_FIELDS; ++i) res[(ki64)i * n + k] = f[i];
	}
}

// The CIGARs of jobs 0 .. n-1 side by side: job k's res[10 * n + k] words from cig + cig_off[k] to out +
// coff[k] (a warp per job)
extern "C" __global__ void __launch_bounds__(32 * Z2_WARPS) ksw_extz2_pack(
	int n, const ki64* __restrict__ cig_off, const ku32* __restrict__ cig, const int* __restrict__ res,
	const ki64* __restrict__ coff, ku32* __restrict__ out)
{
	const int lane = threadIdx.x & 31, k = blockIdx.x * Z2_WARPS + (threadIdx.x >> 5);
	if (k >= n) return;
	const int len = res[(ki64)10 * n + k];
	for (int i = lane; i < len; i += 32) out[coff[k] + i] = cig[cig_off[k] + i];
}
