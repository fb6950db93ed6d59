// ksw_extd2.cu: minimap2's two-piece affine extension DP (ksw_extd2_sse) on the GPU, bit-exact.
//
// Provenance: reproduces ksw_extd2_sse of minimap2 2.31 (mappy 2.31 sdist, ksw2_extd2_sse.c:34-401)
// and the helpers it uses from ksw2.h (ksw_reset_extz :164-169, ksw_apply_zdrop :171-187,
// ksw_backtrack :130-162, ksw_push_cigar :114-124). It is a re-implementation, not a copy: the
// SSE code works on 16 int8 lanes per __m128i; here every CUDA lane holds 4 int8 slots in one
// 32-bit word and uses the byte-SIMD intrinsics (__vadd4, __vmaxs4, __vcmpgts4, ...), which have
// exactly the wraparound and signed-compare semantics of _mm_add_epi8 / _mm_max_epi8 /
// _mm_cmpgt_epi8. Spec: docs minimap2-extension-spec.md §1.4-1.14 (set-up, band and 16-lane
// blocks with stale padding lanes §1.8, tie rules §1.10, exact max and Z-drop §1.11, APPROX_MAX
// §1.12, backtrack §1.14) and the checklist §7. docs/kernels/ksw_extd2.md explains the mapping.
//
// Kernels (all launched by gpuext/backends/cuda/ksw_extd2.py):
//   ksw_extd2_dp_w*_*   1, 4, 8 or 16 warps per job; state ring in shared (smem) or global (gmem) memory
//   ksw_extd2_dp_reg*   8, 16 or 32 lanes per job; state ring (up to 1024 slots) in registers
//   ksw_extd2_dp_fb*    full-band APPROX_MAX jobs: a clean DP (no ring)
//                       each DP kernel ends with its jobs' backtrack (tb_job: start cell choice and
//                       ksw_backtrack), a warp per job, on the SM that wrote the direction bytes
//   ksw_extd2_pack      one warp per job: CIGAR copy, reversed unless KSW_EZ_REV_CIGAR
//   ksw_extd2_plan, ksw_extd2_class, ksw_extd2_offsets
//                       one thread per job: sizes, launch class, sort key and arena offsets
//
// Every job of a launch uses the same scoring (the batch's), already gap-piece swapped by the
// launcher exactly like ksw2_extd2_sse.c:78. Jobs with qlen <= 0 or tlen <= 0, and batches whose
// matrix triggers the early return of line 100, never reach these kernels.

#include "ksw2.cuh"  // KSW_NEG_INF, the KSW_EZ_* flags

// result fields, res[F * n_res + job] (the order of ResultBatch.fields)
#define RF_MAX 0
#define RF_MAX_Q 1
#define RF_MAX_T 2
#define RF_MQE 3
#define RF_MQE_T 4
#define RF_MTE 5
#define RF_MTE_Q 6
#define RF_SCORE 7
#define RF_ZDROPPED 8
#define RF_REACH_END 9

#define KSW_FULL_MASK 0xffffffffu
#ifndef KSW_TEAM_NOREL
#define KSW_TEAM_NOREL 0  // (timing only, KSW_BOOKS_SFX 2: the cells leave no word sums)
#endif
#ifndef KSW_BOOKS_SFX
#define KSW_BOOKS_SFX 2  // dp_team's BW: 2, the cells leave each word's sums for the books warp's suffix scan;
// 0, a per-slot H in the books warp (for A/B timing)
#endif

typedef unsigned char ku8;
typedef unsigned int ku32;
typedef long long ki64;

// ---- small helpers -------------------------------------------------------------------------

// ksw_apply_zdrop (ksw2.h): H at (target t, query q) either raises the max or is tested for Z-drop
// (with the e2 term, as ksw_extd2_sse calls it). Returns true when the extension stops.
__device__ __forceinline__ bool apply_zdrop(int H, int t, int q, int zdrop, int e2, int &ez_max, int &max_t, int &max_q)
{
	if (H > ez_max) {
		ez_max = H, max_t = t, max_q = q;
		return false;
	}
	if (t >= max_t && q >= max_q) {
		const int tl = t - max_t, ql = q - max_q, l = tl > ql ? tl - ql : ql - tl;
		return zdrop >= 0 && ez_max - H > zdrop + l * e2;
	}
	return false;
}

// the sum of a warp's values, in lane 0
__device__ __forceinline__ ki64 warp_sum64(ki64 v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(KSW_FULL_MASK, v, o);
	return v;
}

__device__ __forceinline__ ku32 rep4(int b) { return (ku32)(ku8)b * 0x01010101u; }

// m ? a : b, per byte (m bytes are 0x00 or 0xff)
__device__ __forceinline__ ku32 sel4(ku32 m, ku32 a, ku32 b) { return (a & m) | (b & ~m); }

__device__ __forceinline__ int sbyte(ku32 w, int k) { return (int)(signed char)(ku8)(w >> (8 * k)); }

__device__ __forceinline__ ku32 set_byte(ku32 w, int k, int v)
{
	return (w & ~(0xffu << (8 * k))) | ((ku32)(ku8)v << (8 * k));
}

// The exact maximum's order on an anti-diagonal (lines 327-357): en0 first, then the slots below
// en1 = st0 + 4 * ((en0 - st0) / 4) by (t - st0) mod 4 groups in slot order, then the tail [en1, en0).
// As a key: slot t of [st0, en0] offers 8 H + ord, the largest key wins and, among equal keys, the
// first slot. ord is 7 for en0, 6 - (t - st0) mod 4 below en1 (within one group the first slot
// wins) and 2 - (t - en1) in the tail, which comes after every group. With |H| < 2^27 (qlen + tlen
// < 2^20, the launcher's limit) 8 H + ord fits an int.
__device__ __forceinline__ int max_ord(int t, int st0, int en0, int en1)
{
	return t == en0 ? 7 : t >= en1 ? 2 - (t - en1) : 6 - ((t - st0) & 3);
}
// max_ord of the slots t0 + b of a word of four grouped slots (t0 a multiple of 4), once per
// anti-diagonal and kept in registers (not recomputed in every step)
__device__ __forceinline__ void grouped_ords(int st0, int (&o)[4])
{
#pragma unroll
	for (int b = 0; b < 4; ++b) {
		o[b] = 6 - ((b - st0) & 3);
		asm("" : "+r"(o[b]));
	}
}
// the largest key of a word of four grouped slots with H values h
__device__ __forceinline__ int word_key(const int (&h)[4], const int (&o)[4])
{
	return max(max(h[0] * 8 + o[0], h[1] * 8 + o[1]), max(h[2] * 8 + o[2], h[3] * 8 + o[3]));
}
// H of in-band slot t on anti-diagonal r (lines 326-358) from its old H h and this anti-diagonal's
// v and u bytes: H[t] += v, but H[en0] = H[en0-1] + u (Hprev: H[en0-1] before the update) when
// en0 > 0, and v - (q+e) on r == 0
__device__ __forceinline__ int slot_h(int h, int vb, int ub, int t, int en0, int r, int Hprev, int qe)
{
	return r == 0 ? vb - qe : t == en0 && en0 > 0 ? Hprev + ub : h + vb;
}
// the slot of the winning key's ord, given the first word t0 (a multiple of 4) that offered it
__device__ __forceinline__ int key_slot(int ord, int t0, int st0, int en0, int en1)
{
	return ord == 7 ? en0 : ord <= 2 ? en1 + 2 - ord : t0 + ((6 - ord + st0) & 3);
}

// exact band of anti-diagonal r (ksw2_extd2_sse.c:138-141); >> is an arithmetic shift
__device__ __forceinline__ int band_st0(int r, int qlen, int w)
{
	int st = 0;
	if (st < r - qlen + 1) st = r - qlen + 1;
	if (st < (r - w + 1) >> 1) st = (r - w + 1) >> 1;
	return st;
}

__device__ __forceinline__ int band_en0(int r, int tlen, int w)
{
	int en = tlen - 1;
	if (en > r) en = r;
	if (en > (r + w) >> 1) en = (r + w) >> 1;
	return en;
}

// ksw_extd2_sse.c:90: a negative band means the whole matrix
__device__ __forceinline__ int full_w(int w, int qlen, int tlen) { return w < 0 ? (tlen > qlen ? tlen : qlen) : w; }

// last slot the score store of anti-diagonal [st0, en0] writes: 16-byte stores from st0 while the
// start is <= en0 (lines 166-180); the generic path writes [st0, en0] (182-183)
__device__ __forceinline__ int score_end(int st0, int en0, bool generic)
{
	return generic ? en0 : st0 + (((en0 - st0) >> 4) << 4) + 15;
}
// en1 of the exact maximum's order (max_ord): the end of the (t - st0) mod 4 groups
__device__ __forceinline__ int group_end(int st0, int en0) { return st0 + ((en0 - st0) >> 2 << 2); }

// the boundary difference of line 158/162: H(r,-1) - H(r-1,-1) in the two-piece gap cost
__device__ __forceinline__ int boundary_diff(int r, int qe, int e, int e2, int long_thres, int long_diff)
{
	return r == 0 ? -qe : r < long_thres ? -e : r == long_thres ? long_diff : -e2;
}

// (a & ~m) | (b & m) in one LOP3 (the compiler made two of it)
__device__ __forceinline__ ku32 lop3_sel(ku32 a, ku32 b, ku32 m)
{
#ifdef GX_EMU
	return (a & ~m) | (b & m);
#else
	ku32 d;
	asm("lop3.b32 %0, %1, %2, %3, 0xD8;" : "=r"(d) : "r"(a), "r"(b), "r"(m));
	return d;
#endif
}

// prmt.b32 with sign replication: a selector nibble with bit 3 set gives the sign of the byte it
// selects in all 8 bits (CUDA's __byte_perm ignores that bit)
__device__ __forceinline__ ku32 prmt_s(ku32 a, ku32 b, ku32 s)
{
#ifdef GX_EMU
	const unsigned long long v = (unsigned long long)b << 32 | a;
	ku32 r = 0;
	for (int n = 0; n < 4; ++n) {
		const ku32 sn = s >> 4 * n, by = (ku32)(v >> 8 * (sn & 7)) & 0xffu;
		r |= (sn & 8 ? (by & 0x80u ? 0xffu : 0u) : by) << 8 * n;
	}
	return r;
#else
	ku32 d;
	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
	return d;
#endif
}

// Slots 0, 2 (e) and 1, 3 (o) of a word of int8 slots as the high bytes of two halfwords, a tag in
// the low bytes: ksw2's byte arithmetic then runs on sm_90's native 16x2 instructions (VIADD.16x2,
// VIMNMX3.S16x2, ...), one instruction for two slots, and still wraps exactly as int8 does, since
// only the high byte carries the value (256 v + tag: sums wrap modulo 2^16, compares order by v,
// then by tag)
__device__ __forceinline__ ku32 half_e(ku32 w, ku32 tag) { return __byte_perm(w, tag, 0x2404u); }
__device__ __forceinline__ ku32 half_o(ku32 w, ku32 tag) { return __byte_perm(w, tag, 0x3414u); }
__device__ __forceinline__ ku32 join_eo(ku32 e, ku32 o) { return __byte_perm(e, o, 0x7351u); }

// two slots (halfwords) of the core loop, cell4's steps on tagged halves (constants: 256 x value)
struct Cell2 {
	ku32 u, v, x, y, x2, y2, m, ca, cb, ca2, cb2;  // m: the tagged maximum; c*: continuation signs
};
__device__ __forceinline__ void cell2(ku32 s, ku32 xs, ku32 vs, ku32 x2s, ku32 u, ku32 y, ku32 y2, bool right,
									  ku32 Q, ku32 Q2, ku32 QE, ku32 QE2, ku32 MCH, Cell2& o)
{
	ku32 a = __vadd2(xs, vs), b = __vadd2(y, u), a2 = __vadd2(x2s, vs), b2 = __vadd2(y2, u);
	o.m = __vimax3_s16x2(__vimax3_s16x2(s, a, b), a2, b2);  // the tags give ksw2's tie order
	const ku32 z = __vmins2(o.m & 0xff00ff00u, MCH);
	o.u = __vsub2(z, vs), o.v = __vsub2(z, u);
	ku32 t = __vsub2(z, Q);
	a = __vsub2(a, t), b = __vsub2(b, t);
	t = __vsub2(z, Q2);
	a2 = __vsub2(a2, t), b2 = __vsub2(b2, t);
	const ku32 ar = __vimax_s16x2_relu(a, 0u), br = __vimax_s16x2_relu(b, 0u);
	const ku32 a2r = __vimax_s16x2_relu(a2, 0u), b2r = __vimax_s16x2_relu(b2, 0u);
	o.x = __vsub2(ar, QE), o.y = __vsub2(br, QE), o.x2 = __vsub2(a2r, QE2), o.y2 = __vsub2(b2r, QE2);
	if (!right) {  // a' > 0: the relu'd half at least 256 (its tag is below 8), negative after + 0x7f00
		o.ca = __vadd2(ar, 0x7f007f00u), o.cb = __vadd2(br, 0x7f007f00u);
		o.ca2 = __vadd2(a2r, 0x7f007f00u), o.cb2 = __vadd2(b2r, 0x7f007f00u);
	} else {  // a' >= 0: the sign clear
		o.ca = a, o.cb = b, o.ca2 = a2, o.cb2 = b2;
	}
}

// One word (4 slots) of the core loop (lines 228-322): from the slot t-1 values Xs, Vs, X2s and the
// slot t values U, Y, Y2 of the previous anti-diagonal and the score S, the new u, v, x, y, x2, y2
// and the direction bytes (returned). Left alignment: strict compares; RIGHT: non-strict. The
// maximum is tagged: z (S) > E > F > E2 > F2 on ties (4..0, the direction code 4 - tag) for the
// left, the reverse for RIGHT (0..4, the code itself). Constants come as int8 in all four bytes.
__device__ __forceinline__ ku32 cell4(ku32 Xs, ku32 Vs, ku32 X2s, ku32 U, ku32 Y, ku32 Y2, ku32 S, bool right,
									  ku32 Q4, ku32 Q24, ku32 QE4, ku32 QE24, ku32 MCH4, ku32& Un, ku32& Vn,
									  ku32& Xn, ku32& Yn, ku32& X2n, ku32& Y2n)
{
	const ku32 hb = 0xff00ff00u, Q = Q4 & hb, Q2 = Q24 & hb, QE = QE4 & hb, QE2 = QE24 & hb, MCH = MCH4 & hb;
	const ku32 tS = right ? 0 : 4, tX = right ? 1 : 3, tY = 2, tX2 = right ? 3 : 1, tY2 = right ? 4 : 0;
	Cell2 e, o;
	cell2(half_e(S, tS), half_e(Xs, tX), half_e(Vs, 0), half_e(X2s, tX2), half_e(U, 0), half_e(Y, tY), half_e(Y2, tY2),
		  right, Q, Q2, QE, QE2, MCH, e);
	cell2(half_o(S, tS), half_o(Xs, tX), half_o(Vs, 0), half_o(X2s, tX2), half_o(U, 0), half_o(Y, tY), half_o(Y2, tY2),
		  right, Q, Q2, QE, QE2, MCH, o);
	Un = join_eo(e.u, o.u), Vn = join_eo(e.v, o.v), Xn = join_eo(e.x, o.x), Yn = join_eo(e.y, o.y);
	X2n = join_eo(e.x2, o.x2), Y2n = join_eo(e.y2, o.y2);
	// the continuation signs (bits 15, 31 of each half) as 0 or 0xff per slot, in slot order
	const ku32 sa = prmt_s(e.ca, o.ca, 0xFBD9u), sb = prmt_s(e.cb, o.cb, 0xFBD9u);
	const ku32 sa2 = prmt_s(e.ca2, o.ca2, 0xFBD9u), sb2 = prmt_s(e.cb2, o.cb2, 0xFBD9u);
	const ku32 tg = __byte_perm(e.m, o.m, 0x6240u);  // the tags, a byte per slot
	const ku32 bits = lop3_sel(lop3_sel(sa2, sb2, 0xdfdfdfdfu), lop3_sel(sb, sa, 0x08080808u), 0x18181818u);
	return right ? (tg | (~bits & 0x78787878u)) : ((0x04040404u - tg) | (bits & 0x78787878u));
}

// the backtrack of one job by one warp (defined with the backtrack below)
__device__ __forceinline__ void tb_job(int jid, int lane, const int* __restrict__ qlenv, const int* __restrict__ tlenv,
									   const int* __restrict__ wv, const int* __restrict__ ebv,
									   const int* __restrict__ flv, const ki64* __restrict__ dir_off, const ku8* dir,
									   const ki64* __restrict__ doff_off, const ku32* doff,
									   const ki64* __restrict__ cig_off, ku32* __restrict__ cig,
									   int* __restrict__ ncig, int* __restrict__ res, int n_res, int fbk);

// ---- the DP ----------------------------------------------------------------------------------
// State ring of one job (R slots, a power of two larger than the widest aligned band + 31),
// indexed by target slot t & (R-1): the int8 arrays of ksw2 (lines 107-116) and the int32 H of
// the exact mode (lines 117-120). x, v and x2 are read at slot t-1 by the next anti-diagonal, so
// they are double-buffered (buffer r & 1 is written on anti-diagonal r): then no thread ever
// overwrites a value another thread still has to read, whatever the number of threads per job.
// u, y, y2, s and H are read and written at slot t by the thread that owns slot t. A block of 16
// slots is initialised (u,v,x,y = -(q+e), x2,y2 = -(q2+e2), s = 0, H = NEG_INF, as kcalloc,
// memset and line 119 leave them; both buffers) when the band or a score store first reaches
// it; slots below the band are dead by then (st never decreases), so the ring holds exactly what
// ksw2's full-length arrays hold at every slot ksw2 reads.
struct Ring {
	ku8 *u, *y, *y2, *s, *pp;  // pp: x, v, x2 of buffer 0, then of buffer 1
	int* H;
	ku32 mask;
	__device__ __forceinline__ ku8* x(int b) const { return pp + (size_t)b * 3 * (mask + 1); }
	__device__ __forceinline__ ku8* v(int b) const { return pp + (size_t)(3 * b + 1) * (mask + 1); }
	__device__ __forceinline__ ku8* x2(int b) const { return pp + (size_t)(3 * b + 2) * (mask + 1); }
	// line 329's H[en0 - 1] (H[en0] when en0 == 0) before anti-diagonal r updates it; 0 on r == 0
	__device__ __forceinline__ int h_prev(int r, int en0) const
	{
		return r > 0 ? H[(ku32)(en0 > 0 ? en0 - 1 : en0) & mask] : 0;
	}
};

#define RING_BYTES_PER_SLOT 14

// KSW_PROF (GPUEXT_KSW_DEFINES=KSW_PROF=1, timing only): printf probes on the critical chains, with the
// global timer (ns) and the SM clock: "FBP k0 jid pass start end cycles wait_cycles fence_cycles" for
// every pass of the pass pipeline's two largest jobs, "TEAM jid rounds start end cycles ... sm slot" for the books
// warp's jobs of 4,000+ rounds, "TB jid qlen+tlen start end" for backtracks of jobs with qlen + tlen over
// KSW_PROF_TB (default 12,000). KSW_PROF_WHAT picks the probes (bits: 1 FBP, 2 TEAM, 4 TB; default 7):
// printf's stack frame slows every kernel that has one, so a probe of one chain can leave the others out.
// TEAM also prints the global timer at rounds 1000, 2000, 3000 and 4000, and last the books warp's clocks in its
// books (books_round), summed over the job.
#ifdef KSW_PROF
#ifndef KSW_PROF_WHAT
#define KSW_PROF_WHAT 7
#endif
// PROF_F, PROF_T: a probe's statements (FBP, TEAM), compiled only with KSW_PROF and the probe's bit
#if KSW_PROF_WHAT & 1
#define PROF_F(...) __VA_ARGS__
#else
#define PROF_F(...)
#endif
#if KSW_PROF_WHAT & 2
#define PROF_T(...) __VA_ARGS__
#else
#define PROF_T(...)
#endif
#ifndef KSW_PROF_TB
#define KSW_PROF_TB 12000
#endif
#define PROF_CLK(v) asm volatile("mov.u64 %0, %%clock64;" : "=l"(v)::"memory")
#define PROF_GT(v) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(v)::"memory")
#else
#define PROF_F(...)
#define PROF_T(...)
#endif

__device__ __forceinline__ Ring make_ring(ku8* base, int lg)
{
	Ring g;
	ku32 R = 1u << lg;
	g.u = base, g.y = base + R, g.y2 = base + 2 * R, g.s = base + 3 * R;
	g.pp = base + 4 * R;
	g.H = (int*)(base + 10 * R);
	g.mask = R - 1;
	return g;
}

__device__ __forceinline__ ku32 ld4(const ku8* p) { return *(const ku32*)p; }

// p[0..3] from any alignment (byte b = p[b]) with aligned word loads: reads up to 3 bytes before p
// (never before the 256-aligned sequence buffer) and up to 3 after p+3 (the launcher pads the
// buffer's arrays by at least 4 bytes)
__device__ __forceinline__ ku32 ldu4(const ku8* p)
{
	const size_t a = (size_t)p;
	const ku32* w = (const ku32*)(a & ~(size_t)3);
	const ku32 k = (ku32)(a & 3), lo = w[0], hi = k ? w[1] : 0u;
	return __byte_perm(lo, hi, 0x3210u + 0x1111u * k);
}
__device__ __forceinline__ void st4(ku8* p, ku32 v) { *(ku32*)p = v; }

// bytes b of a word with lo <= b <= hi set to 0xff
__device__ __forceinline__ ku32 byte_range(int lo, int hi)
{
	lo = lo < 0 ? 0 : lo, hi = hi > 3 ? 3 : hi;
	return __funnelshift_lc(0u, 0xffffffffu, 8 * lo) & __funnelshift_rc(0xffffffffu, 0u, 8 * (hi < 0 ? 4 : 3 - hi));
}

// this anti-diagonal's scores on [st0, lim] (spec §1.8 item 3; lim: send, or en0 when generic), stale
// s elsewhere, for a word of slots t .. t+3. The bases are ksw2's zero-padded buffers' (lines 166-180: sf
// is zero past tlen, qr past qlen): the target word TW holds 0 past tlen, the query bytes of slots past r
// are shifted out (no load before the query's start). Slots below st0 may read query bytes past qlen:
// the mask drops them
__device__ __forceinline__ ku32 reg_score(ku32 S, ku32 TW, const ku8* __restrict__ Q, int t, int r, int st0, int lim,
										  bool generic, const signed char* __restrict__ mat, ku32 SCN4, ku32 MCH4,
										  ku32 MIS4)
{
	if (t + 3 < st0 || t > lim) return S;
	const int qo = r - t - 3;  // Q[r-t-3 .. r-t], reversed below; qo <= qlen - 1 (t >= st0 - 3)
	const ku32 raw = ldu4(Q + (qo > 0 ? qo : 0));
	const ku32 qw = __byte_perm(__funnelshift_lc(0u, raw, qo < 0 ? -8 * qo : 0), 0u, 0x0123);
	const ku32 m = byte_range(st0 - t, lim - t);
	ku32 sn;
	if (!generic) {
		const ku32 nn = __vcmpeq4(TW, 0x04040404u) | __vcmpeq4(qw, 0x04040404u);
		sn = sel4(nn, SCN4, sel4(__vcmpeq4(TW, qw), MCH4, MIS4));
	} else {  // mat[target * 5 + query], per byte; the query bytes outside the store are zeroed first (one
		// read past qlen below st0 may hold anything, and its sum must not carry into the next byte)
		const ku32 ix = TW * 5u + (qw & m);
		sn = (ku32)(ku8)mat[ix & 0xff] | (ku32)(ku8)mat[ix >> 8 & 0xff] << 8 | (ku32)(ku8)mat[ix >> 16 & 0xff] << 16 |
			 (ku32)(ku8)mat[ix >> 24] << 24;
	}
	return sel4(m, sn, S);
}
// This anti-diagonal's scores in the word of slots t0..t0+3 (lines 166-183): the non-generic path
// stores [st0, send], the generic one [st0, en0]; every other slot keeps its stale s[] (spec §1.8 item 3).
// A word of four in-matrix slots inside the store takes two word loads; a word at an edge of the store
// or of the matrix (st0, send, r, tlen) takes reg_score's masked word, without a branch per slot
__device__ __forceinline__ ku32 word_score(ku32 S, int t0, int r, int st0, int en0, int send, bool generic,
										   const ku8* __restrict__ T, const ku8* __restrict__ Q, int tlen,
										   const signed char* __restrict__ mat, ku32 MCH4, ku32 MIS4, ku32 SCN4)
{
	if (!generic && t0 >= st0 && t0 + 3 <= send && t0 + 3 <= r && t0 + 3 < tlen) {
		// four in-matrix slots: T[t0..t0+3] and Q[r-t0..r-t0-3] as words, compared per byte
		const ku32 tw = ldu4(T + t0), qw = __byte_perm(ldu4(Q + (r - t0 - 3)), 0u, 0x0123);
		const ku32 nn = __vcmpeq4(tw, 0x04040404u) | __vcmpeq4(qw, 0x04040404u);
		return sel4(nn, SCN4, sel4(__vcmpeq4(tw, qw), MCH4, MIS4));
	}
	const int n = tlen - t0;  // target bases 0 past tlen (ksw2's zeroed sf)
	const ku32 tw = n > 0 ? ldu4(T + t0) & (n >= 4 ? 0xffffffffu : (1u << 8 * n) - 1) : 0u;
	return reg_score(S, tw, Q, t0, r, st0, generic ? en0 : send, generic, mat, SCN4, MCH4, MIS4);
}
// word_score for the teams of several warps, whose barriers wait for the warps that hold the band's
// edges: a word of four in-matrix slots at an edge of the store (st0, send) takes the two word loads
// too, and a byte mask keeps the other slots' stale scores (the one-warp kernel keeps word_score, which
// stays within its register cap). A word below st0 (at most 3 in [st, st0)) reads up to 19 bytes past the
// query: the next job's bases, or the staged buffer's padding and next array (qseq comes before tseq)
__device__ __forceinline__ ku32 word_score_e(ku32 S, int t0, int r, int st0, int en0, int send, bool generic,
											 const ku8* __restrict__ T, const ku8* __restrict__ Q, int tlen,
											 const signed char* __restrict__ mat, ku32 MCH4, ku32 MIS4, ku32 SCN4)
{
	if (!generic && t0 + 3 <= r && t0 + 3 < tlen) {
		const ku32 tw = ldu4(T + t0), qw = __byte_perm(ldu4(Q + (r - t0 - 3)), 0u, 0x0123);
		const ku32 nn = __vcmpeq4(tw, 0x04040404u) | __vcmpeq4(qw, 0x04040404u);
		const ku32 sn = sel4(nn, SCN4, sel4(__vcmpeq4(tw, qw), MCH4, MIS4));
		if (t0 >= st0 && t0 + 3 <= send) return sn;
		return sel4(byte_range(st0 - t0, send - t0), sn, S);
	}
	return word_score(S, t0, r, st0, en0, send, generic, T, Q, tlen, mat, MCH4, MIS4, SCN4);
}

// The exact maximum's part of a word t0 that meets [st0, en0] (lines 326-358): its H values hv updated
// in place from this anti-diagonal's v (Vn) and u (Un) bytes, and its largest key 8 H + ord (max_ord)
__device__ __forceinline__ int word_hkey(int (&hv)[4], ku32 Vn, ku32 Un, int t0, int st0, int en0, int en1, int r,
										 int Hprev, int qe, const int (&ordg)[4])
{
	if (t0 >= st0 && t0 + 3 < en1) {  // four grouped in-band slots, none of them en0
#pragma unroll
		for (int b = 0; b < 4; ++b) hv[b] += sbyte(Vn, b);
		return word_key(hv, ordg);
	}
	if (t0 + 3 < en1 && r > 0) {  // the word of st0: grouped slots, those below st0 keep their H and offer no key
		int kk = (int)0x80000000;
#pragma unroll
		for (int b = 0; b < 4; ++b) {
			const bool in = t0 + b >= st0;
			hv[b] += in ? sbyte(Vn, b) : 0;
			kk = in ? max(kk, hv[b] * 8 + ordg[b]) : kk;
		}
		return kk;
	}
	int kk = (int)0x80000000;  // a word at a band edge: en0, the tail, slots outside the band, r == 0
#pragma unroll
	for (int b = 0; b < 4; ++b) {
		const int t = t0 + b, h = slot_h(hv[b], sbyte(Vn, b), sbyte(Un, b), t, en0, r, Hprev, qe);
		const bool in = t >= st0 && t <= en0;
		if (in) kk = max(kk, h * 8 + max_ord(t, st0, en0, en1));
		hv[b] = in ? h : hv[b];
	}
	return kk;
}

// KSW_BOOKS_SFX 2: a word's part of the books of an anti-diagonal without H. With ksw2's H of the anti-diagonal
// H[t] = H[en0] - (sum of u[s] over t < s <= en0) + (sum of v[s] over t <= s < en0) (scripts/check_h_identity.py;
// u, v its int8 bytes), the word t0 leaves a: its u bytes in (st0, en0] less its v bytes in [st0, en0), and L: its
// largest 8 rel + ord (max_ord) over its slots in [st0, en0], rel = H less H of the word above's first slot.
// One path for every word, band edges included: a warp that took two would hold up the round's barrier.
__device__ __forceinline__ void word_rel(ku32 Vn, ku32 Un, int t0, int st0, int en0, int en1, int& a, int& L)
{
	const int lo = st0 - t0, hi = en0 - t0, g1 = en1 - t0;
	const ku32 f0 = byte_range(lo, 3), fh = byte_range(hi, 3), fh1 = byte_range(hi + 1, 3), inm = f0 & ~fh1;
	const ku32 Um = Un & byte_range(lo + 1, 3) & ~fh1, Vm = Vn & f0 & ~fh;
	a = __dp4a((int)Um, 0x01010101, 0) - __dp4a((int)Vm, 0x01010101, 0);
	// max_ord of the four slots as bytes: the groups' 6 - (t - st0) mod 4 (a rotation of 6, 5, 4, 3), the tail's
	// 2 - (t - en1) from en1 on, 7 at en0 (a byte past the tail, or out of the band, may hold anything)
	const ku32 og = __funnelshift_r(0x03040506u, 0x03040506u, 8 * ((t0 - st0) & 3));
	const ku32 tm = byte_range(g1, 3), em = fh & ~fh1, tw = (ku32)(2 + g1) * 0x01010101u - 0x03020100u;
	const ku32 ow = (((og & ~tm) | (tw & tm)) & ~em) | (0x07070707u & em);
	// in halfwords, slots (0, 1) and (2, 3): d = v less u of the slot above (r[3] = v[3]: the word above's u is
	// in its a), r its suffix sums, the keys 8 r + ord, and -32768 for a slot out of the band: |r| <= 4 * 255, so
	// every key fits a signed halfword, and a called word has a slot in the band
	const ku32 D0 = __vsub2(prmt_s(Vm, 0u, 0x9180u), prmt_s(Um, 0u, 0xA291u));  // d0, d1
	const ku32 D1 = __vsub2(prmt_s(Vm, 0u, 0xB3A2u), prmt_s(Um, 0u, 0x44B3u));  // d2, d3
	const ku32 R1 = __vadd2(D1, D1 >> 16);                                        // r2, r3
	const ku32 R0 = __vadd2(__vadd2(D0, D0 >> 16), __byte_perm(R1, 0u, 0x1010u));  // r0, r1
	const ku32 K0 = lop3_sel(0x80008000u, ((R0 << 3) & 0xfff8fff8u) | __byte_perm(ow, 0u, 0x4140u),
							 __byte_perm(inm, 0u, 0x1100u));
	const ku32 K1 = lop3_sel(0x80008000u, ((R1 << 3) & 0xfff8fff8u) | __byte_perm(ow, 0u, 0x4342u),
							 __byte_perm(inm, 0u, 0x3322u));
	const ku32 Km = __vmaxs2(K0, K1);
	L = max((int)(short)(Km & 0xffffu), (int)Km >> 16);
}

// The DP kernels' scalar set-up of ksw_extd2_sse, lines 78-105 (q_,e_,q2_,e2_ arrive swapped; they
// are int8_t in ksw2), and the state of ksw_reset_extz plus the walk's bookkeeping; a macro, so that
// both kernels declare the same locals (a struct changed the register allocation of w1_smem_b4).
#define KSW_SETUP                                                                                              \
	const int q = (signed char)q_, e = (signed char)e_, q2 = (signed char)q2_, e2 = (signed char)e2_;         \
	const int qe = q + e, qe2 = q2 + e2;                                                                        \
	const int sc_mch = mat[0], sc_mis = mat[1];                                                                 \
	const int sc_N = mat[24] == 0 ? -e2 : mat[24]; /* line 87, m = 5 */                                         \
	int long_thres = e != e2 ? (q2 - q) / (e - e2) - 1 : 0;                                                     \
	if (q2 + e2 + long_thres * e2 > q + e + long_thres * e) ++long_thres;                                       \
	const int long_diff = long_thres * (e - e2) - (q2 - q) - e2
#define KSW_SETUP_AND_RESET                                                                                    \
	KSW_SETUP;                                                                                                  \
	const ku32 Q4 = rep4(q), Q24 = rep4(q2), QE4 = rep4(qe), QE24 = rep4(qe2), MCH4 = rep4(sc_mch);             \
	const ku32 FILL1 = rep4(-qe), FILL2 = rep4(-qe2), MIS4 = rep4(sc_mis), SCN4 = rep4(sc_N);                   \
	int ez_max = 0, max_t = -1, max_q = -1, mqe = KSW_NEG_INF, mqe_t = -1, mte = KSW_NEG_INF, mte_q = -1;       \
	int score = KSW_NEG_INF, zdropped = 0;                                                                      \
	int H0 = 0, last_H0_t = 0;                                                                                  \
	int last_st = -1, last_en = -1, hw = 0;                                                                     \
	ki64 dcur = 0
// job jid's inputs and flags, and where its direction bytes and per-anti-diagonal offsets go (the ring
// kernels' per-job set-up: dp_team, dp_reg, dp_rp)
#define KSW_JOB                                                                                                \
	const int qlen = qlenv[jid], tlen = tlenv[jid];                                                             \
	const ku8* __restrict__ Q = qseq + qst[jid];                                                                \
	const ku8* __restrict__ T = tseq + tst[jid];                                                                \
	const int w = full_w(wv[jid], qlen, tlen), zdrop = zdv[jid], flag = flv[jid];                               \
	const bool right = (flag & KSW_EZ_RIGHT) != 0;                                                              \
	const bool generic = (flag & KSW_EZ_GENERIC_SC) != 0, with_cigar = !(flag & KSW_EZ_SCORE_ONLY);             \
	ku8* __restrict__ P = dir + (with_cigar ? dir_off[jid] : 0);                                                \
	ku32* __restrict__ DO = doff + doff_off[jid]

// the DP's ksw_extz_t fields of job jid (reach_end is the backtrack's to set)
__device__ __forceinline__ void store_extz(int* __restrict__ res, int n_res, int jid, int ez_max, int max_q, int max_t,
										   int mqe, int mqe_t, int mte, int mte_q, int score, int zdropped)
{
	res[RF_MAX * n_res + jid] = ez_max, res[RF_MAX_Q * n_res + jid] = max_q, res[RF_MAX_T * n_res + jid] = max_t;
	res[RF_MQE * n_res + jid] = mqe, res[RF_MQE_T * n_res + jid] = mqe_t;
	res[RF_MTE * n_res + jid] = mte, res[RF_MTE_Q * n_res + jid] = mte_q;
	res[RF_SCORE * n_res + jid] = score, res[RF_ZDROPPED * n_res + jid] = zdropped;
	res[RF_REACH_END * n_res + jid] = 0;
}

// An exact anti-diagonal's bookkeeping (lines 359-366) from its maximum mH at slot mt and the H of slots
// en0 and st0: mte, mqe, then the maximum or the Z-drop (true: the extension stops), then the score of
// the last anti-diagonal
__device__ __forceinline__ bool slot_books(int mH, int mt, int r, int st0, int en0, int Hen0, int Hst0, int qlen,
										   int tlen, int zdrop, int e2, int& ez_max, int& max_t, int& max_q, int& mqe,
										   int& mqe_t, int& mte, int& mte_q, int& score)
{
	if (en0 == tlen - 1 && Hen0 > mte) mte = Hen0, mte_q = r - en0;  // lines 360-363
	if (r - st0 == qlen - 1 && Hst0 > mqe) mqe = Hst0, mqe_t = st0;
	if (apply_zdrop(mH, mt, r - mt, zdrop, e2, ez_max, max_t, max_q)) return true;
	if (r == qlen + tlen - 2 && en0 == tlen - 1) score = Hen0;
	return false;
}
// slot_books from the team's largest key mK and the first word mT that offered it
__device__ __forceinline__ bool exact_books(int mK, ku32 mT, int r, int st0, int en0, int en1, int Hen0, int Hst0,
											int qlen, int tlen, int zdrop, int e2, int& ez_max, int& max_t,
											int& max_q, int& mqe, int& mqe_t, int& mte, int& mte_q, int& score)
{
	return slot_books(mK >> 3, key_slot(mK & 7, (int)mT, st0, en0, en1), r, st0, en0, Hen0, Hst0, qlen, tlen, zdrop,
					  e2, ez_max, max_t, max_q, mqe, mqe_t, mte, mte_q, score);
}

// the team's (largest key, first word) from its NW >= 8 warps' (in rv, rr), by two warp reductions
template <int NW>
__device__ __forceinline__ int team_key(const int* rv, const ku32* rr, int lane, ku32& mT)
{
	const int v = rv[lane % NW];
	const int mK = __reduce_max_sync(KSW_FULL_MASK, v);
	mT = __reduce_min_sync(KSW_FULL_MASK, v == mK ? rr[lane % NW] : 0xffffffffu);
	return mK;
}

// first touch of ring blocks [hw, nb) by threads tid of NT: ksw2's initial array contents (u, v, x, y =
// -(q+e), x2, y2 = -(q2+e2), s = 0, both buffers; H = NEG_INF in the exact mode)
__device__ __forceinline__ void ring_fill(const Ring& g, int hw, int nb, int tid, int NT, ku32 FILL1, ku32 FILL2, bool exact)
{
	for (int i = tid; i < (nb - hw) * 4; i += NT) {
		ku32 ix = (ku32)(hw * 16 + 4 * i) & g.mask;
		st4(g.u + ix, FILL1), st4(g.y + ix, FILL1), st4(g.y2 + ix, FILL2), st4(g.s + ix, 0u);
		st4(g.x(0) + ix, FILL1), st4(g.v(0) + ix, FILL1), st4(g.x2(0) + ix, FILL2);
		st4(g.x(1) + ix, FILL1), st4(g.v(1) + ix, FILL1), st4(g.x2(1) + ix, FILL2);
		if (exact) *(int4*)(g.H + ix) = make_int4(KSW_NEG_INF, KSW_NEG_INF, KSW_NEG_INF, KSW_NEG_INF);
	}
}

// the top boundary cell (r,-1) (lines 160-163) into the u, y, y2 bytes of the word t0 (a multiple of 4)
// when it holds slot r, in registers (ksw2 writes it between anti-diagonals r - 1 and r): dp_team's PAIRS,
// dp_reg, dp_rp
__device__ __forceinline__ void boundary_cell(ku32& U, ku32& Y, ku32& Y2, int t0, int r, int qe, int qe2, int e, int e2,
											  int long_thres, int long_diff)
{
	if ((unsigned)(r - t0) >= 4u) return;
	const int b = r - t0;
	U = set_byte(U, b, boundary_diff(r, qe, e, e2, long_thres, long_diff));
	Y = set_byte(Y, b, -qe), Y2 = set_byte(Y2, b, -qe2);
}
// h[b] for a b in [0, 4) known only at run time, by selects (an indexed register array would go to local memory)
__device__ __forceinline__ int pick4(const int (&h)[4], int b)
{
	return b == 0 ? h[0] : b == 1 ? h[1] : b == 2 ? h[2] : h[3];
}

extern __shared__ __align__(16) unsigned char ksw_smem[];

// A team of NW warps computes one job. NW == 1: several teams (jobs) per block, synchronised
// with __syncwarp; NW > 1: one team per block, __syncthreads. Each anti-diagonal: set-up (band,
// ring blocks, boundary cell), barrier, the cells (4 slots per thread and step), barrier, the
// maximum / Z-drop bookkeeping, done redundantly by every thread so that all stay uniform.
template <bool SMEM, int NW, bool PAIRS = false, bool BW = false>
__device__ __forceinline__ void dp_team(const int* __restrict__ jlist, int n_list, int smem_lg,
										const ku8* __restrict__ qseq, const ki64* __restrict__ qst,
										const int* __restrict__ qlenv, const ku8* __restrict__ tseq,
										const ki64* __restrict__ tst, const int* __restrict__ tlenv,
										const int* __restrict__ wv, const int* __restrict__ zdv,
										const int* __restrict__ flv, const ki64* __restrict__ dir_off, ku8* dir,
										const ki64* __restrict__ doff_off, ku32* doff,
										const ki64* __restrict__ ring_off, const int* __restrict__ ring_lgv,
										ku8* ring_arena, const signed char* __restrict__ mat, int q_, int e_,
										int q2_, int e2_, int* __restrict__ res, int n_res,
										const int* __restrict__ ebv, const ki64* __restrict__ cig_off, ku32* cig,
										int* __restrict__ ncig)
{
	constexpr int NT = 32 * NW;
	__shared__ int red_v[2 * NW];   // the warps' largest keys and first words (two anti-diagonals with PAIRS)
	__shared__ ku32 red_r[2 * NW];
	// BW: one job per block of NW cell warps and a books warp (wid NW; see the pairs below)
	const int tid = BW ? (int)threadIdx.x : (int)threadIdx.x % NT, lane = threadIdx.x & 31, wid = tid >> 5;
	const int team = BW ? 0 : threadIdx.x / NT;
	const int k = blockIdx.x * (BW ? 1 : blockDim.x / NT) + team;
	if (k >= n_list) return;  // team-uniform
	const int jid = jlist[k];
	Ring g = SMEM ? make_ring(ksw_smem + (size_t)team * (RING_BYTES_PER_SLOT << smem_lg), smem_lg)
				  : make_ring(ring_arena + ring_off[jid], ring_lgv[jid]);
	KSW_JOB;
	const bool approx = (flag & KSW_EZ_APPROX_MAX) != 0;

	KSW_SETUP_AND_RESET;

	// PAIRS: an exact job whose aligned band and score stores span at most 31 words per warp takes two
	// anti-diagonals per pair of barriers (dp_pairs); the others one
	const int wmin = min(min(w + 1, qlen), tlen);
	if (PAIRS && !approx && wmin + 32 <= min(124 * NW, (int)g.mask - 1) && (!BW || wmin + 55 <= (int)g.mask + 1)) {
		static_assert(!PAIRS || (SMEM && NW >= 7), "pairs: a middle team or larger, ring in shared memory");
		// Two anti-diagonals r and r1 = r + 1 per round: set-up, barrier, the cells of r, then those of
		// r1, the keys of both, barrier, both anti-diagonals' books, the state back to the ring. Slot t
		// of r1 reads r's x, v, x2 at t - 1 and u, y, y2 at t, so a thread that computes the word t0 of
		// r keeps its new bytes in registers and computes the same word of r1 with the lane below's
		// (a shuffle). A warp's first word of r1 needs the last word of the warp below: lane 0 of each
		// warp computes that word of r too (its halo, from the ring: nothing of r is in the ring), and
		// the other 31 lanes own 31 words of slots st + 4 kw (kw = 31 wid + lane - 1), so 124 NW
		// slots hold both anti-diagonals' aligned bands and score stores (st0 grows by at most 1 and
		// en0 by 1 per anti-diagonal: at most wmin + 31 slots from st). Lane 0 of warp 0 holds the
		// first-slot rule's constants (lines 149-159) as its bytes. The ring is read only between the
		// first barrier and the second and written only after the second (the owners' state of the
		// round's last anti-diagonal, x, v, x2 in buffer 1), so no thread reads what another writes.
		// BW (a books warp, warp NW): the NW cell warps compute no H, keys or books. After the second
		// barrier the owners also store r's v and u bytes (in buffers 0 of v and x, unused here), and
		// the books warp runs a round's H, keys and books (lines 326-366) during the next round's cells,
		// from those and the state of r1 (v in buffer 1, u); H lives in the ring and only the books warp
		// touches it. On a Z-drop it raises stopf, read by every warp after the second barrier: the
		// round computed meanwhile is lost (its direction bytes are never read). The last round's books
		// run after the loop. A fill of new ring blocks aliases slots up to 15 past top2 less the ring
		// size; the books read slots from st0 - 5 of the round before: wmin + 55 <= R keeps them apart.
		__shared__ int hx[4];   // H of en0 and st0 of r, then of r1 (from their owners, for mte and mqe)
		__shared__ int stopf;   // BW: set by the books warp on a Z-drop (or the band's exit)
		const int kw = 31 * wid + lane - 1;
		const bool bwarp = BW && wid == NW, own = lane > 0 && !bwarp;
		if (BW && tid == 0) stopf = 0;
#if KSW_BOOKS_SFX == 2
		// BW, KSW_BOOKS_SFX 2: no per-slot H, and the cell warps leave each word's sums (word_rel: a, L in H[t0],
		// H[t0 + 1] for r, H[t0 + 2], H[t0 + 3] for r1). H[e0] follows line 329 from the H of e0 and e0 - 1 after the
		// anti-diagonal before (carried here); a lane takes a run of words from the bottom up (an odd number, so
		// the lanes' loads meet distinct banks), and a warp suffix scan of the runs' sums places them. The round's
		// two anti-diagonals go side by side, so that their loads, shuffles and reductions overlap: only their
		// anchors and books are in order.
		int sfx_e0 = -1, sfx_h = 0, sfx_h1 = 0;
		auto byt = [&](const ku8* b, int t) { return (int)(signed char)b[(ku32)t & g.mask]; };
		// H[e0] of anti-diagonal rr from its bytes (vb, ub), and the carried values moved on to rr
		auto anchor_ad = [&](int rr, int s0, int e0, const ku8* vb, const ku8* ub) -> int {
			const int hp = e0 > 0 && e0 == sfx_e0 + 1 ? sfx_h : e0 > 0 ? sfx_h1 : sfx_h;  // old H[e0 - 1] (e0 = 0: H[0])
			const int anchor = rr == 0 ? byt(vb, 0) - qe : e0 > 0 ? hp + byt(ub, e0) : hp + byt(vb, 0);
			sfx_h1 = e0 - 1 >= s0 ? anchor - (byt(ub, e0) - byt(vb, e0 - 1)) : hp;  // (out of the band: kept)
			sfx_h = anchor, sfx_e0 = e0;
			return anchor;
		};
		// BW: the books of the round from rb: true when the job ends there (a Z-drop, or the band leaves
		// the matrix on rb + 1)
		auto books_round = [&](int rb) -> bool {
			const int rb1 = rb + 1;
			const bool more = rb1 < qlen + tlen - 1;
			int s0[2] = {band_st0(rb, qlen, w), more ? band_st0(rb1, qlen, w) : 0};
			int e0[2] = {band_en0(rb, tlen, w), more ? band_en0(rb1, tlen, w) : -1};
			const bool two = more && s0[1] <= e0[1];
			if (!two) s0[1] = 0, e0[1] = -1;  // (no words)
			__syncwarp();
			// at most 7 words a lane (a pairs band of wmin <= 124 NW - 32 slots meets at most 31 NW - 6 words):
			// all loads first, then the sums
			static_assert(!BW || ((31 * NW - 6 + 31) / 32 | 1) <= 7, "books warp: at most 7 words a lane");
			int w_lo[2], il[2], ih[2], P[2] = {0, 0}, bk[2] = {(int)0x80000000, (int)0x80000000};
			ku32 bw[2] = {0xffffffffu, 0xffffffffu};
			int2 al[2][7];
#pragma unroll
			for (int j = 0; j < 2; ++j) {
				w_lo[j] = s0[j] & ~3;
				const int nw = ((e0[j] & ~3) - w_lo[j]) / 4 + 1, cw = ((max(nw, 0) + 31) >> 5) | 1;
				il[j] = cw * lane, ih[j] = min(il[j] + cw, nw);
#pragma unroll
				for (int i = 0; i < 7; ++i)
					if (il[j] + i < ih[j]) al[j][i] = *(const int2*)(g.H + ((ku32)(w_lo[j] + 4 * (il[j] + i)) & g.mask) + 2 * j);
			}
#pragma unroll
			for (int j = 0; j < 2; ++j)
#pragma unroll
				for (int i = 0; i < 7; ++i) {  // every word of [s0, e0] has a slot in the band
					if (il[j] + i >= ih[j]) break;
					P[j] += al[j][i].x;
					const int kk = al[j][i].y + 8 * P[j];
					if (kk > bk[j]) bk[j] = kk, bw[j] = (ku32)(w_lo[j] + 4 * (il[j] + i));  // (the first word on equal keys)
				}
			int inc[2] = {P[0], P[1]};  // the lane's sums and those of the lanes above
#pragma unroll
			for (int o = 1; o < 32; o <<= 1) {
				const int y0 = __shfl_down_sync(KSW_FULL_MASK, inc[0], o), y1 = __shfl_down_sync(KSW_FULL_MASK, inc[1], o);
				if (lane + o < 32) inc[0] += y0, inc[1] += y1;
			}
			const int tot0 = __shfl_sync(KSW_FULL_MASK, inc[0], 0), tot1 = __shfl_sync(KSW_FULL_MASK, inc[1], 0);
			const int a0 = anchor_ad(rb, s0[0], e0[0], g.v(0), g.x(0));
			const int a1 = two ? anchor_ad(rb1, s0[1], e0[1], g.v(1), g.u) : 0;  // (after a Z-drop on rb: unused)
			const int k0 = il[0] < ih[0] ? bk[0] + 8 * (a0 - inc[0]) : (int)0x80000000;
			const int k1 = il[1] < ih[1] ? bk[1] + 8 * (a1 - inc[1]) : (int)0x80000000;
			const int m0 = __reduce_max_sync(KSW_FULL_MASK, k0), m1 = __reduce_max_sync(KSW_FULL_MASK, k1);
			const ku32 t0 = __reduce_min_sync(KSW_FULL_MASK, k0 == m0 ? bw[0] : 0xffffffffu);
			const ku32 t1 = __reduce_min_sync(KSW_FULL_MASK, k1 == m1 ? bw[1] : 0xffffffffu);
			if (exact_books(m0, t0, rb, s0[0], e0[0], group_end(s0[0], e0[0]), a0, a0 - tot0, qlen, tlen, zdrop, e2,
							ez_max, max_t, max_q, mqe, mqe_t, mte, mte_q, score))
				return true;
			if (!more) return false;
			if (!two) return true;  // the band leaves the matrix on rb1
			return exact_books(m1, t1, rb1, s0[1], e0[1], group_end(s0[1], e0[1]), a1, a1 - tot1, qlen, tlen, zdrop, e2,
							   ez_max, max_t, max_q, mqe, mqe_t, mte, mte_q, score);
		};
#else
		// BW: the books of anti-diagonal rr from its v and u bytes (vb, ub): true on a Z-drop
		auto books_ad = [&](int rr, const ku8* vb, const ku8* ub) -> bool {
			const int s0 = band_st0(rr, qlen, w), e0 = band_en0(rr, tlen, w), e1 = group_end(s0, e0);
			int og[4];
			grouped_ords(s0, og);
			const int Hp = g.h_prev(rr, e0);
			__syncwarp();
			int bk = (int)0x80000000;
			ku32 bt = 0xffffffffu;
			for (int t0 = (s0 & ~3) + 4 * lane; t0 <= e0; t0 += 128) {  // the words that meet [s0, e0]
				const ku32 ix = (ku32)t0 & g.mask;
				const int4 h4 = *(const int4*)(g.H + ix);
				int hv[4] = {h4.x, h4.y, h4.z, h4.w};
				const int kk = word_hkey(hv, ld4(vb + ix), ld4(ub + ix), t0, s0, e0, e1, rr, Hp, qe, og);
				*(int4*)(g.H + ix) = make_int4(hv[0], hv[1], hv[2], hv[3]);
				if (kk > bk) bk = kk, bt = (ku32)t0;
			}
			const int mK = __reduce_max_sync(KSW_FULL_MASK, bk);
			const ku32 mT = __reduce_min_sync(KSW_FULL_MASK, bk == mK ? bt : 0xffffffffu);
			__syncwarp();  // H of e0 and s0 after the update
			return exact_books(mK, mT, rr, s0, e0, e1, g.H[(ku32)e0 & g.mask], g.H[(ku32)s0 & g.mask], qlen, tlen,
							   zdrop, e2, ez_max, max_t, max_q, mqe, mqe_t, mte, mte_q, score);
		};
		// BW: the books of the round from rb: true when the job ends there (a Z-drop, or the band leaves
		// the matrix on rb + 1)
		auto books_round = [&](int rb) -> bool {
			if (books_ad(rb, g.v(0), g.x(0))) return true;
			const int rb1 = rb + 1;
			if (rb1 >= qlen + tlen - 1) return false;
			if (band_st0(rb1, qlen, w) > band_en0(rb1, tlen, w)) return true;
			return books_ad(rb1, g.v(1), g.u);
		};
#endif
		int pend = -1;  // BW: the round whose books are still to run
		PROF_T(unsigned long long tg0, tc0, tbk = 0, tgk[4] = {0, 0, 0, 0}; int nrd = 0; PROF_GT(tg0); PROF_CLK(tc0));
		for (int r = 0; r < qlen + tlen - 1; r += 2) {
			const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
			if (st0 > en0) { zdropped = 1; break; }
			const int st = st0 & ~15, en = (en0 & ~15) + 15;
			const int send = score_end(st0, en0, generic), top = max(en, send);
			const int r1 = r + 1, st0b = band_st0(r1, qlen, w), en0b = band_en0(r1, tlen, w);
			const bool more = r1 < qlen + tlen - 1, exitb = more && st0b > en0b, two = more && !exitb;
			const int stb = st0b & ~15, enb = (en0b & ~15) + 15;
			const int sendb = score_end(st0b, en0b, generic), topb = max(enb, sendb);
			const int en1 = group_end(st0, en0), en1b = group_end(st0b, en0b);
			const int top2 = two ? max(top, topb) : top;
			const int nb = (top2 >> 4) + 1;
			if (nb > hw) {
				if (tid < NT) ring_fill(g, hw, nb, tid, NT, FILL1, FILL2, true);
				hw = nb;
			}
			if (tid == 0 && with_cigar) {
				DO[r] = (ku32)(dcur >> 4);
				if (two) DO[r1] = (ku32)((dcur + en - st + 1) >> 4);
			}
			__syncthreads();

			// the word's state after r - 1 (buffer 1 holds x, v, x2)
			const int t0 = st + 4 * kw;
			const bool live = !bwarp && kw >= 0 && t0 <= top2;
			const ku32 ix = (ku32)t0 & g.mask;
			ku32 X = 0, V = 0, X2 = 0, U = 0, Y = 0, Y2 = 0, S = 0, Vr = 0, Ur = 0;
			int hv[4] = {0, 0, 0, 0};
			int k0 = (int)0x80000000, k1 = (int)0x80000000;
#if KSW_BOOKS_SFX == 2
			int sa0 = 0, sL0 = (int)0x80000000, sa1 = 0, sL1 = (int)0x80000000;  // BW: word_rel of r and r1
#endif
			if (bwarp) {  // the books of the round before, while the cell warps compute this one
#ifndef KSW_TEAM_NOBOOKS  // (timing only: the books warp idle)
				PROF_T(unsigned long long tb0; PROF_CLK(tb0));
				if (pend >= 0 && books_round(pend)) {
					pend = -1, zdropped = 1;
					if (lane == 0) stopf = 1;
				}
				PROF_T(unsigned long long tb1; PROF_CLK(tb1); tbk += tb1 - tb0);
#endif
			} else {
			if (live) {
				X = ld4(g.x(1) + ix), V = ld4(g.v(1) + ix), X2 = ld4(g.x2(1) + ix);
				U = ld4(g.u + ix), Y = ld4(g.y + ix), Y2 = ld4(g.y2 + ix), S = ld4(g.s + ix);
				if (!BW) {
					const int4 h4 = *(const int4*)(g.H + ix);
					hv[0] = h4.x, hv[1] = h4.y, hv[2] = h4.z, hv[3] = h4.w;
				}
			} else if (kw < 0) {  // left neighbour of slot st on r (lines 149-159), and H[st - 1]
				int x1 = -qe, x21 = -qe2, v1 = -qe;
				if (st == 0) v1 = boundary_diff(r, qe, e, e2, long_thres, long_diff);
				else if (st - 1 >= last_st && st - 1 <= last_en) {
					const ku32 i1 = (ku32)(st - 1) & g.mask;
					x1 = g.x(1)[i1], x21 = g.x2(1)[i1], v1 = g.v(1)[i1];
				}
				X = (ku32)(ku8)x1 << 24, V = (ku32)(ku8)v1 << 24, X2 = (ku32)(ku8)x21 << 24;
				if (!BW && st > 0) hv[3] = g.H[(ku32)(st - 1) & g.mask];
			}
			ku32 Xp = __shfl_up_sync(KSW_FULL_MASK, X, 1), Vp = __shfl_up_sync(KSW_FULL_MASK, V, 1);
			ku32 X2p = __shfl_up_sync(KSW_FULL_MASK, X2, 1);
			if (lane == 0 && live) {  // a halo word: slot t0 - 1 from the ring
				const ku32 i1 = (ku32)(t0 - 1) & g.mask;
				Xp = (ku32)g.x(1)[i1] << 24, Vp = (ku32)g.v(1)[i1] << 24, X2p = (ku32)g.x2(1)[i1] << 24;
			}
			if (live && en >= r) boundary_cell(U, Y, Y2, t0, r, qe, qe2, e, e2, long_thres, long_diff);
			const int Hprev = BW ? 0 : g.h_prev(r, en0);
			int ordg[4];
			if (!BW) grouped_ords(st0, ordg);
			if (live && t0 <= top) {  // anti-diagonal r: the cells of [st, en], the score stores up to send
				S = word_score_e(S, t0, r, st0, en0, send, generic, T, Q, tlen, mat, MCH4, MIS4, SCN4);
				if (t0 <= en) {
					ku32 Un, Vn, Xn, Yn, X2n, Y2n;
					const ku32 d = cell4((X << 8) | (Xp >> 24), (V << 8) | (Vp >> 24), (X2 << 8) | (X2p >> 24), U, Y, Y2,
										 S, right, Q4, Q24, QE4, QE24, MCH4, Un, Vn, Xn, Yn, X2n, Y2n);
#ifndef KSW_TEAM_NOST  // (timing only: without the direction bytes' stores)
					if (own && with_cigar) st4(P + dcur + (t0 - st), d);
#endif
					if (!BW && t0 <= en0 && t0 + 3 >= st0) {
						const int kk = word_hkey(hv, Vn, Un, t0, st0, en0, en1, r, Hprev, qe, ordg);
						if (own) {  // the owners of en0 and st0 publish their H, for mte and mqe
							k0 = kk;
							if ((unsigned)(en0 - t0) < 4u) hx[0] = pick4(hv, en0 - t0);
							if ((unsigned)(st0 - t0) < 4u) hx[1] = pick4(hv, st0 - t0);
						}
					}
#if KSW_BOOKS_SFX == 2
					if (!KSW_TEAM_NOREL && BW && t0 <= en0 && t0 + 3 >= st0) word_rel(Vn, Un, t0, st0, en0, en1, sa0, sL0);
#endif
					Vr = Vn, Ur = Un;
					X = Xn, V = Vn, X2 = X2n, U = Un, Y = Yn, Y2 = Y2n;
				}
			}
			if (two) {  // anti-diagonal r1 from r's bytes in registers
				if (kw < 0) {  // slot st - 1 is below r's aligned range: the constants (st1 > st: unused)
					X = (ku32)(ku8)(-qe) << 24, X2 = (ku32)(ku8)(-qe2) << 24;
					V = (ku32)(ku8)(stb > 0 ? -qe : boundary_diff(r1, qe, e, e2, long_thres, long_diff)) << 24;
				}
				Xp = __shfl_up_sync(KSW_FULL_MASK, X, 1), Vp = __shfl_up_sync(KSW_FULL_MASK, V, 1);
				X2p = __shfl_up_sync(KSW_FULL_MASK, X2, 1);
				const int Hl = BW ? 0 : __shfl_up_sync(KSW_FULL_MASK, hv[3], 1);  // H of slot t0 - 1 after r
				if (live && enb >= r1) boundary_cell(U, Y, Y2, t0, r1, qe, qe2, e, e2, long_thres, long_diff);
				if (!BW) grouped_ords(st0b, ordg);
				if (own && live && t0 >= stb && t0 <= topb) {
					S = word_score_e(S, t0, r1, st0b, en0b, sendb, generic, T, Q, tlen, mat, MCH4, MIS4, SCN4);
					if (t0 <= enb) {
						ku32 Un, Vn, Xn, Yn, X2n, Y2n;
						const ku32 d = cell4((X << 8) | (Xp >> 24), (V << 8) | (Vp >> 24), (X2 << 8) | (X2p >> 24), U, Y,
											 Y2, S, right, Q4, Q24, QE4, QE24, MCH4, Un, Vn, Xn, Yn, X2n, Y2n);
#ifndef KSW_TEAM_NOST
						if (with_cigar) st4(P + dcur + (en - st + 1) + (t0 - stb), d);
#endif
						if (!BW && t0 <= en0b && t0 + 3 >= st0b) {
							// H[en0 - 1] after r: this word's, or the lane below's last slot
							const int hp = (unsigned)(en0b - 1 - t0) < 4u ? pick4(hv, en0b - 1 - t0) : Hl;
							k1 = word_hkey(hv, Vn, Un, t0, st0b, en0b, en1b, r1, en0b > 0 ? hp : 0, qe, ordg);
							if ((unsigned)(en0b - t0) < 4u) hx[2] = pick4(hv, en0b - t0);
							if ((unsigned)(st0b - t0) < 4u) hx[3] = pick4(hv, st0b - t0);
						}
#if KSW_BOOKS_SFX == 2
						if (!KSW_TEAM_NOREL && BW && t0 <= en0b && t0 + 3 >= st0b) word_rel(Vn, Un, t0, st0b, en0b, en1b, sa1, sL1);
#endif
						X = Xn, V = Vn, X2 = X2n, U = Un, Y = Yn, Y2 = Y2n;
					}
				}
			}
			// the largest keys and their first words, per warp, then per team after the barrier
			if (!BW) {
				const int m0 = __reduce_max_sync(KSW_FULL_MASK, k0);
				const ku32 w0 = __reduce_min_sync(KSW_FULL_MASK, k0 == m0 ? (ku32)t0 : 0xffffffffu);
				const int m1 = __reduce_max_sync(KSW_FULL_MASK, k1);
				const ku32 w1 = __reduce_min_sync(KSW_FULL_MASK, k1 == m1 ? (ku32)t0 : 0xffffffffu);
				if (lane == 0) red_v[wid] = m0, red_r[wid] = w0, red_v[NW + wid] = m1, red_r[NW + wid] = w1;
			}
			}  // cell warps
			__syncthreads();
			if (BW) {
				if (stopf) break;  // the books warp has run the round before's books: a Z-drop there
				pend = r;
			} else {
				ku32 mT;
				int mK = team_key<NW>(red_v, red_r, lane, mT);
				if (exact_books(mK, mT, r, st0, en0, en1, hx[0], hx[1], qlen, tlen, zdrop, e2, ez_max, max_t, max_q, mqe,
								mqe_t, mte, mte_q, score)) {
					zdropped = 1;
					break;
				}
				if (exitb) { zdropped = 1; break; }  // the band leaves the matrix on r1 (st0 > en0)
				if (two) {
					mK = team_key<NW>(red_v + NW, red_r + NW, lane, mT);
					if (exact_books(mK, mT, r1, st0b, en0b, en1b, hx[2], hx[3], qlen, tlen, zdrop, e2, ez_max, max_t,
									max_q, mqe, mqe_t, mte, mte_q, score)) {
						zdropped = 1;
						break;
					}
				}
			}
			dcur += en - st + 1 + (two ? enb - stb + 1 : 0);
			last_st = two ? stb : st, last_en = two ? enb : en;
			if (own && live) {  // the state after the round's last anti-diagonal, read after the next barrier
				st4(g.u + ix, U), st4(g.y + ix, Y), st4(g.y2 + ix, Y2), st4(g.s + ix, S);
				st4(g.x(1) + ix, X), st4(g.v(1) + ix, V), st4(g.x2(1) + ix, X2);
#if KSW_BOOKS_SFX == 2
				// r's v and u, for the books warp: only its anchor's bytes (slots 0, en0 - 1 and en0)
				if (BW && (t0 == 0 || (unsigned)(en0 - t0) < 5u)) st4(g.v(0) + ix, Vr), st4(g.x(0) + ix, Ur);
				if (BW) *(int4*)(g.H + ix) = make_int4(sa0, sL0, sa1, sL1);
				else
#else
				if (BW) st4(g.v(0) + ix, Vr), st4(g.x(0) + ix, Ur);  // r's v and u, for the books warp
				else
#endif
				*(int4*)(g.H + ix) = make_int4(hv[0], hv[1], hv[2], hv[3]);
			}
			if (BW && exitb) break;  // the band leaves the matrix on r1: the books after the loop end the job
			PROF_T(if (++nrd % 1000 == 0 && nrd <= 4000) PROF_GT(tgk[nrd / 1000 - 1]));
		}
#if defined(KSW_PROF) && (KSW_PROF_WHAT & 2)
		if (bwarp && lane == 0 && nrd >= 4000) {
			unsigned long long tg1, tc1;
			PROF_GT(tg1); PROF_CLK(tc1);
			unsigned sm, slot;  // the books warp's SM and hardware warp slot
			asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
			asm volatile("mov.u32 %0, %%warpid;" : "=r"(slot));
			printf("TEAM %d %d %llu %llu %llu %llu %llu %llu %llu %u %u %llu\n", jid, nrd, tg0, tg1, tc1 - tc0, tgk[0],
				   tgk[1], tgk[2], tgk[3], sm, slot, tbk);
		}
#endif
		if (BW) {  // the last round's books (its state is stored): after the loop's end, the band's exit on r1 or
			// at the start of a round (zdropped is 1 then, whatever the books find)
			__syncthreads();
			if (bwarp && pend >= 0 && books_round(pend)) zdropped = 1;
		}
	} else
	for (int r = 0; r < qlen + tlen - 1; ++r) {
		const int nb_ = r & 1, ob = nb_ ^ 1;  // buffers written on this / the previous anti-diagonal
		// band (lines 138-147)
		const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
		if (st0 > en0) { zdropped = 1; break; }
		const int st = st0 & ~15, en = (en0 & ~15) + 15;
		// last slot the score store of this anti-diagonal writes: 16-byte stores from st0 while
		// the start is <= en0 (lines 166-180); the generic path writes [st0, en0] (182-183)
		const int send = score_end(st0, en0, generic);
		const int top = en > send ? en : send;
		const int nb = (top >> 4) + 1;
		if (nb > hw) {  // first touch of blocks [hw, nb): ksw2's initial array contents
			if (tid < NT) ring_fill(g, hw, nb, tid, NT, FILL1, FILL2, !approx);
			hw = nb;
			// the fill may cover slot r, whose boundary values thread 0 writes below
			if (NW == 1) __syncwarp(); else __syncthreads();
		}
		// left neighbour of the first slot (lines 149-159)
		int x1, x21, v1;
		if (st > 0) {
			if (st - 1 >= last_st && st - 1 <= last_en) {
				ku32 i1 = (ku32)(st - 1) & g.mask;
				x1 = g.x(ob)[i1], x21 = g.x2(ob)[i1], v1 = g.v(ob)[i1];
			} else {
				x1 = -qe, x21 = -qe2, v1 = -qe;
			}
		} else {
			x1 = -qe, x21 = -qe2;
			v1 = boundary_diff(r, qe, e, e2, long_thres, long_diff);
		}
		// H[en0-1] (or H[en0]) before this anti-diagonal overwrites it (line 329)
		int Hprev = 0;
		if (!approx && r > 0) Hprev = g.H[(ku32)(en0 > 0 ? en0 - 1 : en0) & g.mask];
		// top boundary cell (r,-1) in slot r (lines 160-163)
		if (tid == 0 && en >= r) {
			ku32 ir = (ku32)r & g.mask;
			g.y[ir] = (ku8)(-qe), g.y2[ir] = (ku8)(-qe2);
			g.u[ir] = (ku8)boundary_diff(r, qe, e, e2, long_thres, long_diff);
		}
		if (tid == 0 && with_cigar) DO[r] = (ku32)(dcur >> 4);
		if (NW == 1) __syncwarp(); else __syncthreads();

		// argmax order of lines 327-357 (en0, then the (t - st0) mod 4 groups below en1, then the tail
		// [en1, en0)) as keys (max_ord): the thread's largest key and the first word that offered it
		const int en1 = group_end(st0, en0);
		int bestK = (int)0x80000000, bestT = 0x7fffffff;
		int ordg[4];
		grouped_ords(st0, ordg);
		ku8* __restrict__ Pr = P + dcur;
		const ku8 *__restrict__ xo = g.x(ob), *__restrict__ vo = g.v(ob), *__restrict__ x2o = g.x2(ob);
		ku8 *__restrict__ xn = g.x(nb_), *__restrict__ vn = g.v(nb_), *__restrict__ x2n = g.x2(nb_);

		// core loop (lines 228-322): slots [st, en], 4 per thread and word. Teams of 4 and 16 warps
		// take WPS = 2 words per thread and step, slots t0 and t0 + 4*NT: both words read only the
		// previous anti-diagonal (and their own slots), so they are loaded together and computed side
		// by side, and a band of up to 8*NT slots takes one step of the loop instead of two (a long
		// band-limited extension's anti-diagonal is a chain of latencies, not of throughput). Teams of
		// 8 (the launcher's middle team) take one word: the same 1024 slots per step as 4 warps of
		// two, with half the chain per thread (real E. coli extensions 25.0 -> 19.6 ms)
		constexpr int WPS = NW == 4 || NW == 16 ? 2 : 1;
		// (BW: the books warp takes no cells here, and runs the books with the others)
		for (int base = st + 128 * wid; base <= en && (!BW || wid < NW); base += 4 * NT * WPS) {  // warp-uniform
			ku32 X[WPS], V[WPS], X2[WPS], U[WPS], Y[WPS], Y2[WPS], S[WPS], Xp[WPS], Vp[WPS], X2p[WPS];
#pragma unroll
			for (int k = 0; k < WPS; ++k) {
				const int t0 = base + 4 * NT * k + 4 * lane;
				X[k] = V[k] = X2[k] = U[k] = Y[k] = Y2[k] = S[k] = Xp[k] = Vp[k] = X2p[k] = 0;
				if (k > 0 && base + 4 * NT * k > en) continue;  // warp-uniform
				if (t0 <= en) {
					const ku32 ix = (ku32)t0 & g.mask;
					X[k] = ld4(xo + ix), V[k] = ld4(vo + ix), X2[k] = ld4(x2o + ix);
					U[k] = ld4(g.u + ix), Y[k] = ld4(g.y + ix), Y2[k] = ld4(g.y2 + ix), S[k] = ld4(g.s + ix);
				}
				Xp[k] = __shfl_up_sync(KSW_FULL_MASK, X[k], 1), Vp[k] = __shfl_up_sync(KSW_FULL_MASK, V[k], 1);
				X2p[k] = __shfl_up_sync(KSW_FULL_MASK, X2[k], 1);
			}
#pragma unroll
			for (int k = 0; k < WPS; ++k) {
				const int t0 = base + 4 * NT * k + 4 * lane;
				if (t0 > en) continue;
				const ku32 ix = (ku32)t0 & g.mask;
				if (lane == 0) {  // slot t0-1: the first-slot rule, or the previous anti-diagonal's value
					if (t0 == st) Xp[k] = (ku32)(ku8)x1 << 24, Vp[k] = (ku32)(ku8)v1 << 24, X2p[k] = (ku32)(ku8)x21 << 24;
					else {
						const ku32 i1 = (ku32)(t0 - 1) & g.mask;
						Xp[k] = (ku32)xo[i1] << 24, Vp[k] = (ku32)vo[i1] << 24, X2p[k] = (ku32)x2o[i1] << 24;
					}
				}
				// slot t-1 values (the _mm_slli_si128 / carry of lines 40-55)
				const ku32 Xs = (X[k] << 8) | (Xp[k] >> 24), Vs = (V[k] << 8) | (Vp[k] >> 24);
				const ku32 X2s = (X2[k] << 8) | (X2p[k] >> 24);
				const ku32 Sk = (NW > 1 ? word_score_e : word_score)(S[k], t0, r, st0, en0, send, generic, T, Q, tlen,
																	 mat, MCH4, MIS4, SCN4);
				ku32 Un, Vn, Xn, Yn, X2n, Y2n;
				const ku32 d = cell4(Xs, Vs, X2s, U[k], Y[k], Y2[k], Sk, right, Q4, Q24, QE4, QE24, MCH4, Un, Vn, Xn, Yn,
									 X2n, Y2n);
				st4(g.u + ix, Un), st4(vn + ix, Vn), st4(xn + ix, Xn), st4(g.y + ix, Yn);
				st4(x2n + ix, X2n), st4(g.y2 + ix, Y2n), st4(g.s + ix, Sk);
				if (with_cigar) st4(Pr + (t0 - st), d);
				// exact maximum: H[t] += v (t < en0), H[en0] from H[en0-1] + u (lines 326-358). Each in-band
				// slot offers the key 8 H + ord (max_ord), the thread keeps its largest key and, among equal
				// ones, its first word; the slots outside [st0, en0] keep their H and take no part
				if (!approx && t0 <= en0 && t0 + 3 >= st0) {
					int4 h4 = *(int4*)(g.H + ix);
					int hv[4] = {h4.x, h4.y, h4.z, h4.w};
					const int kk = word_hkey(hv, Vn, Un, t0, st0, en0, en1, r, Hprev, qe, ordg);
					*(int4*)(g.H + ix) = make_int4(hv[0], hv[1], hv[2], hv[3]);
					if (kk > bestK) bestK = kk, bestT = t0;
				}
			}
		}
		// score stores past en (only when st0 is not 16-aligned): slots (en, send]
		if (send > en && tid < 4) {
			const int t0 = en + 1 + 4 * tid;
			if (t0 <= send) {
				const ku32 ix = (ku32)t0 & g.mask;
				st4(g.s + ix, (NW > 1 ? word_score_e : word_score)(ld4(g.s + ix), t0, r, st0, en0, send, generic, T, Q,
																   tlen, mat, MCH4, MIS4, SCN4));
			}
		}
		dcur += en - st + 1;
		int mK = 0;
		ku32 mT = 0;
		if (!approx) {  // the largest key, and the first word that holds it
			mK = __reduce_max_sync(KSW_FULL_MASK, bestK);
			mT = __reduce_min_sync(KSW_FULL_MASK, bestK == mK ? (ku32)bestT : 0xffffffffu);
			if (NW > 1 && lane == 0 && (!BW || wid < NW)) red_v[wid] = mK, red_r[wid] = mT;
		}
		if (NW == 1) __syncwarp(); else __syncthreads();

		if (!approx) {
			if (NW >= 7) {  // the warps' (max key, first word) by two warp reductions, not a chain of NW - 1
				mK = team_key<NW>(red_v, red_r, lane, mT);
			} else if (NW > 1) {
				mK = red_v[0], mT = red_r[0];
#pragma unroll
				for (int i = 1; i < NW; ++i)
					if (red_v[i] > mK || (red_v[i] == mK && red_r[i] < mT)) mK = red_v[i], mT = red_r[i];
			}
			const int Hen0 = g.H[(ku32)en0 & g.mask], Hst0 = g.H[(ku32)st0 & g.mask];
			if (exact_books(mK, mT, r, st0, en0, en1, Hen0, Hst0, qlen, tlen, zdrop, e2, ez_max, max_t, max_q, mqe, mqe_t,
							mte, mte_q, score)) {
				zdropped = 1;
				break;
			}
		} else {  // greedy path (lines 367-383)
			if (r > 0) {
				if (last_H0_t >= st0 && last_H0_t <= en0 && last_H0_t + 1 >= st0 && last_H0_t + 1 <= en0) {
					const int d0 = (signed char)vn[(ku32)last_H0_t & g.mask];
					const int d1 = (signed char)g.u[(ku32)(last_H0_t + 1) & g.mask];
					if (d0 > d1) H0 += d0;
					else H0 += d1, ++last_H0_t;
				} else if (last_H0_t >= st0 && last_H0_t <= en0) {
					H0 += (signed char)vn[(ku32)last_H0_t & g.mask];
				} else {
					++last_H0_t, H0 += (signed char)g.u[(ku32)last_H0_t & g.mask];
				}
			} else H0 = (signed char)vn[0] - qe, last_H0_t = 0;
			if ((flag & KSW_EZ_APPROX_DROP) && apply_zdrop(H0, last_H0_t, r - last_H0_t, zdrop, e2, ez_max, max_t, max_q)) {
				zdropped = 1;
				break;
			}
			if (r == qlen + tlen - 2 && en0 == tlen - 1) score = H0;
		}
		last_st = st, last_en = en;
	}
	// (BW: the books warp's, which holds the pairs' books)
	if (tid == (BW ? NT : 0)) store_extz(res, n_res, jid, ez_max, max_q, max_t, mqe, mqe_t, mte, mte_q, score, zdropped);
	// the backtrack by the first warp, once every warp's direction bytes and the result are written
	if (NW == 1) __syncwarp(); else __syncthreads();
	if (wid == 0)
		tb_job(jid, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, doff_off, doff, cig_off, cig, ncig, res, n_res, 0);
}

#define KSW_DP_PARAMS                                                                                   \
	const int *__restrict__ jlist, int n_list, int smem_lg, const ku8 *__restrict__ qseq,                \
		const ki64 *__restrict__ qst, const int *__restrict__ qlenv, const ku8 *__restrict__ tseq,        \
		const ki64 *__restrict__ tst, const int *__restrict__ tlenv, const int *__restrict__ wv,          \
		const int *__restrict__ zdv, const int *__restrict__ flv, const ki64 *__restrict__ dir_off,       \
		ku8 *dir, const ki64 *__restrict__ doff_off, ku32 *doff, const ki64 *__restrict__ ring_off,       \
		const int *__restrict__ ring_lgv, ku8 *ring_arena, const signed char *__restrict__ mat, int q, int e, \
		int q2, int e2, int *__restrict__ res, int n_res
#define KSW_DP_ARGS                                                                                     \
	jlist, n_list, smem_lg, qseq, qst, qlenv, tseq, tst, tlenv, wv, zdv, flv, dir_off, dir, doff_off, doff, \
		ring_off, ring_lgv, ring_arena, mat, q, e, q2, e2, res, n_res
// then the backtrack's: end_bonus, CIGAR offsets, CIGAR arena and lengths (every DP kernel takes both)
#define KSW_TB_PARAMS                                                                                   \
	const int *__restrict__ ebv, const ki64 *__restrict__ cig_off, ku32 *cig, int *__restrict__ ncig
#define KSW_TB_ARGS ebv, cig_off, cig, ncig

// ksw_extd2_dp_w<NW>_<ring>: NW warps per job; the ring in shared (smem) or global (gmem) memory
// w1_smem: several jobs per block; __launch_bounds__(256, B) caps the registers so that B blocks of
// 8 warps fit on an SM (B = 3: 80 registers, no spills); the launcher sizes the blocks' shared
// memory for the same B. _b2 / _b4 are the alternatives (GPUEXT_KSW_W1_BLOCKS=2|4) for tuning.
extern "C" __global__ void __launch_bounds__(256, 3) ksw_extd2_dp_w1_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 1>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(256, 2) ksw_extd2_dp_w1_smem_b2(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 1>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(256, 4) ksw_extd2_dp_w1_smem_b4(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 1>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_dp_w1_gmem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<false, 1>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(128, 1) ksw_extd2_dp_w4_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 4>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(128, 1) ksw_extd2_dp_w4_gmem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<false, 4>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(256, 1) ksw_extd2_dp_w8_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 8>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(256, 1) ksw_extd2_dp_w8_gmem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<false, 8>(KSW_DP_ARGS, KSW_TB_ARGS); }
// the middle team with exact jobs two anti-diagonals per round (dp_team's PAIRS)
extern "C" __global__ void __launch_bounds__(256, 1) ksw_extd2_dp_w8p_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 8, true>(KSW_DP_ARGS, KSW_TB_ARGS); }
// ... on 7 warps (rings of up to 2^10 slots: the launcher's _mid7): a w-751 band's 196 words take one
// step, and two blocks leave room for one-warp blocks beside them
extern "C" __global__ void __launch_bounds__(224, 1) ksw_extd2_dp_w7p_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 7, true>(KSW_DP_ARGS, KSW_TB_ARGS); }
// the same with a books warp (dp_team's BW: 7 cell warps and the H, keys and books a round behind on an 8th)
extern "C" __global__ void __launch_bounds__(256, 2) ksw_extd2_dp_w7b_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 7, true, true>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(512, 1) ksw_extd2_dp_w16_smem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<true, 16>(KSW_DP_ARGS, KSW_TB_ARGS); }
extern "C" __global__ void __launch_bounds__(512, 1) ksw_extd2_dp_w16_gmem(KSW_DP_PARAMS, KSW_TB_PARAMS) { dp_team<false, 16>(KSW_DP_ARGS, KSW_TB_ARGS); }

// ---- the DP with the state ring in registers (jobs with small rings) ---------------------------
// A group of G lanes (G = 8, 16 or 32; 32/G jobs per warp) computes one job whose ring needs at
// most R = 4*G*K slots (the launcher's 2^ring_lg <= R). Word i = t >> 2 of the ring (the 4 slots
// t & ~3 .. t | 3) lives in lane i % G, register group k = (i / G) % K, byte t & 3, of the arrays
// U, Y, Y2, S, X, V, X2 (and H, 4 int32 per word, in the exact mode). On anti-diagonal r the
// window of slots [st-4, st-4+R) holds each storage position once, and it contains every slot ksw2
// reads or writes there: [st-1, max(en, send)] spans less than the shared-memory ring (the same
// aliasing argument), and a block is filled on first touch only when it lies above the previous
// top (so in [st, top]). Each (k, lane) word therefore stands for the unique window slot t0 with
// its position, and holds exactly ksw2's array values for t0 (single-buffered: the x, v, x2 of
// slot t0-1 are read from the lane that owns it by one shuffle per group before any update).
// No barriers; the control flow is uniform per group (job), every intrinsic uses the group mask.

// a[k] for a group-uniform k (registers cannot be indexed dynamically)
template <int K>
__device__ __forceinline__ ku32 pick_k(const ku32 (&a)[K], int k)
{
	ku32 v = a[0];
#pragma unroll
	for (int i = 1; i < K; ++i) v = k == i ? a[i] : v;
	return v;
}

// the signed byte of slot t (a group-uniform slot) of one of the arrays, from its owner lane
template <int G, int K>
__device__ __forceinline__ int slot_byte(const ku32 (&a)[K], int t, ku32 gmask)
{
	const int i = t >> 2;
	const ku32 v = __shfl_sync(gmask, pick_k<K>(a, (i / G) & (K - 1)), i & (G - 1), G);
	return sbyte(v, t & 3);
}

// The per-word steps of the kernels that keep ksw2's arrays in registers (dp_reg, dp_rp), for the
// word of slots t .. t+3:
// first touch of its block: ksw2's initial contents, its target bases (0 past tlen) and H
__device__ __forceinline__ void reg_fill(ku32& U, ku32& Y, ku32& Y2, ku32& S, ku32& X, ku32& V, ku32& X2, ku32& TW,
										 int (&H)[4], int t, const ku8* __restrict__ T, int tlen, ku32 FILL1,
										 ku32 FILL2, bool exact)
{
	U = Y = X = V = FILL1, Y2 = X2 = FILL2, S = 0;
	const int n = tlen - t;
	TW = n > 0 ? ldu4(T + t) & (n >= 4 ? 0xffffffffu : (1u << 8 * n) - 1) : 0u;
	if (exact) H[0] = H[1] = H[2] = H[3] = KSW_NEG_INF;
}
// word_hkey for a word that meets [st0, en0], and the H of en0 and st0 into hen and hst when the word
// holds them
__device__ __forceinline__ int reg_hkey(int (&H)[4], ku32 Vn, ku32 Un, int t, int st0, int en0, int en1, int r,
										int Hprev, int qe, const int (&ordg)[4], int& hen, int& hst)
{
	const int kk = word_hkey(H, Vn, Un, t, st0, en0, en1, r, Hprev, qe, ordg);
#pragma unroll
	for (int b = 0; b < 4; ++b) {
		if (t + b == en0) hen = H[b];
		if (t + b == st0) hst = H[b];
	}
	return kk;
}
// byte 3 of X, V and X2 in bytes 0-2: a word's last slot's x, v, x2, for the word above
__device__ __forceinline__ ku32 top_bytes(ku32 X, ku32 V, ku32 X2) { return __byte_perm(__byte_perm(X, V, 0x0073), X2, 0x0710); }
// the cell of a word kept in registers (dp_reg, dp_rp): slot t-1's x, v, x2 shifted in from bytes 0-2 of p
// (the word below's top_bytes, or the first-slot rule's constants; the _mm_slli_si128 / carry of lines
// 40-55), the word's bytes updated in place; the direction word
__device__ __forceinline__ ku32 reg_cell(ku32& X, ku32& V, ku32& X2, ku32& U, ku32& Y, ku32& Y2, ku32 S, ku32 p,
										 bool right, ku32 Q4, ku32 Q24, ku32 QE4, ku32 QE24, ku32 MCH4)
{
	const ku32 Xs = __byte_perm(X, p, 0x2104), Vs = __byte_perm(V, p, 0x2105), X2s = __byte_perm(X2, p, 0x2106);
	ku32 Un, Vn;
	const ku32 d = cell4(Xs, Vs, X2s, U, Y, Y2, S, right, Q4, Q24, QE4, QE24, MCH4, Un, Vn, X, Y, X2, Y2);
	U = Un, V = Vn;
	return d;
}
// H[k][b] for a group-uniform k (registers cannot be indexed dynamically)
template <int K>
__device__ __forceinline__ int pick_h(const int (&H)[K][4], int k, int b)
{
	int h = H[0][0];
#pragma unroll
	for (int i = 0; i < K; ++i)
#pragma unroll
		for (int j = 0; j < 4; ++j) h = i == k && j == b ? H[i][j] : h;
	return h;
}

template <int G, int K, bool EXACT>
__device__ __forceinline__ void dp_reg(const int* __restrict__ jlist, int n_list, const ku8* __restrict__ qseq,
									   const ki64* __restrict__ qst, const int* __restrict__ qlenv,
									   const ku8* __restrict__ tseq, const ki64* __restrict__ tst,
									   const int* __restrict__ tlenv, const int* __restrict__ wv,
									   const int* __restrict__ zdv, const int* __restrict__ flv,
									   const ki64* __restrict__ dir_off, ku8* dir, const ki64* __restrict__ doff_off,
									   ku32* doff, const signed char* __restrict__ mat, int q_, int e_, int q2_,
									   int e2_, int* __restrict__ res, int n_res)
{
	constexpr int GK = G * K;  // words of the ring
	const int lane = threadIdx.x & 31, gl = lane & (G - 1);
	const ku32 gmask = G == 32 ? KSW_FULL_MASK : ((1u << G) - 1) << (lane & ~(G - 1));
	const int kj = (int)((blockIdx.x * blockDim.x + threadIdx.x) / G);
	if (kj >= n_list) return;  // the whole group
	const int jid = jlist[kj];
	KSW_JOB;

	KSW_SETUP_AND_RESET;
	// the ring: TW caches the target bases of the word's slot (0 past tlen), loaded on first touch
	ku32 U[K], Y[K], Y2[K], S[K], X[K], V[K], X2[K], TW[K];
	int H[EXACT ? K : 1][4];
#pragma unroll
	for (int k = 0; k < K; ++k) {
		U[k] = Y[k] = Y2[k] = S[k] = X[k] = V[k] = X2[k] = TW[k] = 0;
		if constexpr (EXACT) H[k][0] = H[k][1] = H[k][2] = H[k][3] = KSW_NEG_INF;
	}

	for (int r = 0; r < qlen + tlen - 1; ++r) {
		// band (lines 138-147) and the score store's last slot (166-183), as in dp_team
		const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
		if (st0 > en0) { zdropped = 1; break; }
		const int st = st0 & ~15, en = (en0 & ~15) + 15;
		const int send = score_end(st0, en0, generic);
		const int top = en > send ? en : send;
		const int nb = (top >> 4) + 1;
		// the window slot of each group's word in this lane
		const int b0 = (st >> 2) - 1;
		int t0[K];
#pragma unroll
		for (int k = 0; k < K; ++k) t0[k] = 4 * (b0 + ((k * G + gl - b0) & (GK - 1)));
		if (nb > hw) {  // first touch of blocks [hw, nb): ksw2's initial array contents
#pragma unroll
			for (int k = 0; k < K; ++k) {
				const int t = t0[k];
				if (t >= hw * 16 && t < nb * 16)
					reg_fill(U[k], Y[k], Y2[k], S[k], X[k], V[k], X2[k], TW[k], H[EXACT ? k : 0], t, T, tlen, FILL1, FILL2, EXACT);
			}
			hw = nb;
		}
		// left neighbour of slot st (lines 149-159): the word below st holds slot st-1's x, v, x2
		// of anti-diagonal r-1 when st-1 was in [last_st, last_en]; else these constants
		const bool ovr = st == 0 || st - 1 < last_st || st - 1 > last_en;
		const int v1 = st > 0 ? -qe : boundary_diff(r, qe, e, e2, long_thres, long_diff);
		const ku32 pk1 = (ku32)(ku8)(-qe) | (ku32)(ku8)v1 << 8 | (ku32)(ku8)(-qe2) << 16;
		// top boundary cell (r,-1) in slot r (lines 160-163)
		const bool bnd = en >= r;
		// H[en0-1] (or H[en0]) before this anti-diagonal overwrites it (line 329)
		int Hprev = 0;
		if constexpr (EXACT) {
			if (r > 0) {
				const int tp = en0 > 0 ? en0 - 1 : en0, i = tp >> 2;
				Hprev = __shfl_sync(gmask, pick_h<K>(H, (i / G) & (K - 1), tp & 3), i & (G - 1), G);
			}
		}
		if (gl == 0 && with_cigar) DO[r] = (ku32)(dcur >> 4);

		const int en1 = group_end(st0, en0);
		int bestK = (int)0x80000000, bestT = 0x7fffffff, hen = 0, hst = 0;
		int ordg[4];
		grouped_ords(st0, ordg);
		ku8* __restrict__ Pr = P + dcur;
		const int lim = generic ? en0 : send;  // the slots [st0, lim] get this anti-diagonal's score
		// groups with a slot in [st, top]
		bool ga[K];
#pragma unroll
		for (int k = 0; k < K; ++k) ga[k] = __any_sync(gmask, t0[k] >= st && t0[k] <= top) != 0;
		// pk[k]: byte 3 of X, V, X2 of group k's word in lane gl-1, before this anti-diagonal;
		// lane 0 takes group k-1's (the word below it in the ring)
		ku32 pk[K];
#pragma unroll
		for (int k = 0; k < K; ++k) pk[k] = 0;
		if (ga[K - 1] || ga[0])
			pk[K - 1] = __shfl_sync(gmask, top_bytes(X[K - 1], V[K - 1], X2[K - 1]),
									(gl - 1) & (G - 1), G);
#pragma unroll
		for (int k = 0; k < K; ++k) {
			if (k < K - 1 && (ga[k] || ga[k + 1]))
				pk[k] = __shfl_sync(gmask, top_bytes(X[k], V[k], X2[k]), (gl - 1) & (G - 1), G);
			if (!ga[k]) continue;
			const int t = t0[k];
			if (bnd) boundary_cell(U[k], Y[k], Y2[k], t, r, qe, qe2, e, e2, long_thres, long_diff);
			S[k] = reg_score(S[k], TW[k], Q, t, r, st0, lim, generic, mat, SCN4, MCH4, MIS4);
			if (t < st || t > en) continue;
			ku32 p = gl == 0 ? pk[(k + K - 1) % K] : pk[k];
			if (t == st && ovr) p = pk1;
			const ku32 d = reg_cell(X[k], V[k], X2[k], U[k], Y[k], Y2[k], S[k], p, right, Q4, Q24, QE4, QE24, MCH4);
			if (with_cigar) st4(Pr + (t - st), d);
			if constexpr (EXACT) {  // H[t] += v (t < en0), H[en0] from H[en0-1] + u (lines 326-358); keys as dp_team
				if (t <= en0 && t + 3 >= st0) {
					const int kk = reg_hkey(H[k], V[k], U[k], t, st0, en0, en1, r, Hprev, qe, ordg, hen, hst);
					// a lane's groups are not in slot order: equal keys go to the first slot
					if (kk > bestK || (kk == bestK && t < bestT)) bestK = kk, bestT = t;
				}
			}
		}
		dcur += en - st + 1;
		if constexpr (EXACT) {  // lines 323-366, as in dp_team, reduced over the group
			const int mK = __reduce_max_sync(gmask, bestK);
			const int mT = (int)__reduce_min_sync(gmask, bestK == mK ? (ku32)bestT : 0xffffffffu);
			const int mH = mK >> 3, mt = key_slot(mK & 7, mT, st0, en0, en1);
			int Hen0 = 0, Hst0 = 0;
			if (en0 == tlen - 1) Hen0 = __shfl_sync(gmask, hen, (en0 >> 2) & (G - 1), G);
			if (r - st0 == qlen - 1) Hst0 = __shfl_sync(gmask, hst, (st0 >> 2) & (G - 1), G);
			if (en0 == tlen - 1 && Hen0 > mte) mte = Hen0, mte_q = r - en0;  // lines 360-363
			if (r - st0 == qlen - 1 && Hst0 > mqe) mqe = Hst0, mqe_t = st0;
			if (apply_zdrop(mH, mt, r - mt, zdrop, e2, ez_max, max_t, max_q)) { zdropped = 1; break; }
			if (r == qlen + tlen - 2 && en0 == tlen - 1) score = Hen0;
		} else {  // greedy path (lines 367-383): v and u of this anti-diagonal from their owner lanes
			if (r > 0) {
				const bool in0 = last_H0_t >= st0 && last_H0_t <= en0;
				const bool in1 = last_H0_t + 1 >= st0 && last_H0_t + 1 <= en0;
				const int d0 = in0 ? slot_byte<G, K>(V, last_H0_t, gmask) : 0;
				const int d1 = !in0 || in1 ? slot_byte<G, K>(U, last_H0_t + 1, gmask) : 0;
				if (in0 && in1) {
					if (d0 > d1) H0 += d0;
					else H0 += d1, ++last_H0_t;
				} else if (in0) H0 += d0;
				else ++last_H0_t, H0 += d1;
			} else H0 = slot_byte<G, K>(V, 0, gmask) - qe, last_H0_t = 0;
			if ((flag & KSW_EZ_APPROX_DROP) && apply_zdrop(H0, last_H0_t, r - last_H0_t, zdrop, e2, ez_max, max_t, max_q)) {
				zdropped = 1;
				break;
			}
			if (r == qlen + tlen - 2 && en0 == tlen - 1) score = H0;
		}
		last_st = st, last_en = en;
	}
	if (gl == 0) store_extz(res, n_res, jid, ez_max, max_q, max_t, mqe, mqe_t, mte, mte_q, score, zdropped);
}

// The backtracks of a warp's 32 / G jobs (G lanes each in the DP), one after another by the whole warp
template <int G>
__device__ __forceinline__ void tb_warp(const int* __restrict__ jlist, int n_list, const int* __restrict__ qlenv,
										const int* __restrict__ tlenv, const int* __restrict__ wv,
										const int* __restrict__ flv, const ki64* __restrict__ dir_off, const ku8* dir,
										const ki64* __restrict__ doff_off, const ku32* doff, int* __restrict__ res,
										int n_res, KSW_TB_PARAMS)
{
	__syncwarp();
	const int lane = threadIdx.x & 31, k0 = (int)((blockIdx.x * blockDim.x + (threadIdx.x & ~31u)) / G);
#pragma unroll 1
	for (int h = 0; h < 32 / G; ++h)
		if (k0 + h < n_list)
			tb_job(jlist[k0 + h], lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, doff_off, doff, cig_off, cig, ncig,
				   res, n_res, 0);
}

// ksw_extd2_dp_reg<G>x<K>_<a|e>: groups of G lanes, rings of up to 4*G*K slots in registers, for
// APPROX_MAX (a) or exact (e) jobs; blocks of 128 threads, no shared memory. Same parameters as
// the dp_team kernels (smem_lg, ring_off, ring_lgv and ring_arena are not used).
#define KSW_DP_REG(G, K)                                                                                  \
	extern "C" __global__ void __launch_bounds__(128)                                                     \
		ksw_extd2_dp_reg##G##x##K##_a(KSW_DP_PARAMS, KSW_TB_PARAMS)                                       \
	{                                                                                                     \
		dp_reg<G, K, false>(jlist, n_list, qseq, qst, qlenv, tseq, tst, tlenv, wv, zdv, flv, dir_off, dir,  \
							doff_off, doff, mat, q, e, q2, e2, res, n_res);                                   \
		tb_warp<G>(jlist, n_list, qlenv, tlenv, wv, flv, dir_off, dir, doff_off, doff, res, n_res, KSW_TB_ARGS); \
	}                                                                                                     \
	extern "C" __global__ void __launch_bounds__(128)                                                     \
		ksw_extd2_dp_reg##G##x##K##_e(KSW_DP_PARAMS, KSW_TB_PARAMS)                                       \
	{                                                                                                     \
		dp_reg<G, K, true>(jlist, n_list, qseq, qst, qlenv, tseq, tst, tlenv, wv, zdv, flv, dir_off, dir,   \
						   doff_off, doff, mat, q, e, q2, e2, res, n_res);                                    \
		tb_warp<G>(jlist, n_list, qlenv, tlenv, wv, flv, dir_off, dir, doff_off, doff, res, n_res, KSW_TB_ARGS); \
	}
// The launcher builds only the shapes it uses (KSW_REG_LIST from its defines: NVRTC time grows
// with every instantiation); without it, every shape (compile checks).
#ifndef KSW_REG_LIST
#define KSW_REG_LIST \
	KSW_DP_REG(8, 2) KSW_DP_REG(8, 4) KSW_DP_REG(8, 8) KSW_DP_REG(16, 4) KSW_DP_REG(16, 8) KSW_DP_REG(32, 4) KSW_DP_REG(32, 8)
#endif
KSW_REG_LIST

// ---- the ring pipeline: big exact ring jobs in chunks of target slots, a warp each ------------
// A job's slots t are cut into chunks of C = 128 KC (KC words of 4 slots per lane); chunk c (one
// block of one warp) owns the slots [cC, cC + C) for good: word k of lane L is t0 = cC + 128 k + 4 L,
// its ksw2 array bytes (u, y, y2, s, x, v, x2, the target bases) and H in registers, as in dp_reg
// but without a window. The recurrence moves values only from slot t - 1 to t, and the band, the
// score stores, the first-touch fills and the boundary cells depend on r alone, so a chunk walks its
// anti-diagonals [rs(c), re(c)] (those whose aligned band or score store can reach it) on its own and
// needs of chunk c - 1 only, per anti-diagonal r, one record: byte 3 of x, v, x2 and the H of slot
// cC - 1 after r, and the exact maximum's (largest key, first word) over chunks <= c - 1 on r with
// the H of st0 when chunk c - 1 or one below holds it. Chunk c runs r once chunk c - 1 has published
// r: each chunk runs a few anti-diagonals behind the one below, on another SM, with no barrier (a
// middle team of 8 warps paid two barriers and the books in every warp per anti-diagonal). The chunk
// that holds en0 (the top) combines the keys and runs the books (mte, mqe, max, Z-drop, score); the
// books move to chunk c + 1 with en0 through a per-chunk handover slot. On a Z-drop (or the band's
// end) the top stores the result, raises the job's stop flag, which the others poll, and backtracks.
// Chunks below the top may run past a Z-drop: what they compute there is never read (as ksw2's
// arrays past the stop). Records: per chunk rp_len anti-diagonals (a bound of re - rs + 1) of
// RP_REC ints in the job's ring arena, after nch handover slots of 8 ints; published RP_BATCH
// anti-diagonals at a time (a fence, then the count of anti-diagonals done in prog).
#ifndef RP_BATCH
#define RP_BATCH 16  // a power of two, at most 16 (a batch's records are prefetched by lanes 0..RP_BATCH)
#endif
#define RP_REC 8

// the first r in [0, n) with pred(r) true, for a pred false then true; n when none
template <class F>
__device__ __forceinline__ int rp_first(int n, F pred)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		const int mid = (lo + hi) >> 1;
		if (pred(mid)) hi = mid;
		else lo = mid + 1;
	}
	return lo;
}
// the last anti-diagonal ksw2 computes, its band not yet past the matrix (st0 > en0 is monotone in r)
__device__ __forceinline__ int rp_rlast(int qlen, int tlen, int w)
{
	return rp_first(qlen + tlen - 1, [&](int r) { return band_st0(r, qlen, w) > band_en0(r, tlen, w); }) - 1;
}
// chunk c's first anti-diagonal: the first whose en0 + 15 (a bound of the aligned band's end and of
// the score store's) reaches cC; its last: the last whose aligned band starts in or below the chunk
__device__ __forceinline__ int rp_rs(int c, int C, int tlen, int w, int rlast)
{
	return rp_first(rlast + 1, [&](int r) { return band_en0(r, tlen, w) + 15 >= c * C; });
}
__device__ __forceinline__ int rp_re(int c, int C, int qlen, int w, int rlast)
{
	return rp_first(rlast + 1, [&](int r) { return (band_st0(r, qlen, w) & ~15) > c * C + C - 1; }) - 1;
}
// chunks of a job: those that en0(rlast) + 15 reaches
__device__ __forceinline__ int rp_nch(int C, int tlen, int w, int rlast) { return (band_en0(rlast, tlen, w) + 15) / C + 1; }
// a bound of re - rs + 1 for every chunk: rs >= max(cC - 15, 2cC - w - 30) (en0 <= r, (r + w) / 2),
// re <= min(cC + C + 13 + qlen, 2(cC + C + 14) + w) (st0 >= r - qlen + 1, (r - w) / 2)
__device__ __forceinline__ int rp_len(int C, int qlen, int tlen, int w)
{
	return min(qlen + tlen - 1, min(C + qlen + 32, 2 * C + 2 * w + 64));
}

// ksw_extd2_dp_rp<KC>'s body. cend: running total of the chunks of the jobs jlist[0..n_list) (the
// job-major chunk ids); bmap: block -> chunk id, ordered by rs (a chunk's producer, chunk c - 1,
// starts earlier, so it comes first: blocks start in index order); prog: per chunk id the
// anti-diagonals published, then per job its stop flag (zeroed)
template <int KC>
__device__ __forceinline__ void dp_rp(const int* __restrict__ jlist, int n_list, const ku8* __restrict__ qseq,
									  const ki64* __restrict__ qst, const int* __restrict__ qlenv,
									  const ku8* __restrict__ tseq, const ki64* __restrict__ tst,
									  const int* __restrict__ tlenv, const int* __restrict__ wv,
									  const int* __restrict__ zdv, const int* __restrict__ flv,
									  const ki64* __restrict__ dir_off, ku8* dir, const ki64* __restrict__ doff_off,
									  ku32* doff, const ki64* __restrict__ ring_off, ku8* ring_arena,
									  const signed char* __restrict__ mat, int q_, int e_, int q2_, int e2_,
									  int* __restrict__ res, int n_res, const int* __restrict__ ebv,
									  const ki64* __restrict__ cig_off, ku32* __restrict__ cig,
									  int* __restrict__ ncig, const ki64* __restrict__ cend,
									  const int* __restrict__ bmap, int* prog)
{
	constexpr int C = 128 * KC;
	const int lane = threadIdx.x & 31;
	const int id = bmap[blockIdx.x];
	const int kj = rp_first(n_list, [&](int i) { return cend[i] > (ki64)id; });
	if (kj >= n_list) return;  // (a chunk id past the jobs of this chunk of the call)
	const int c = id - (kj ? (int)cend[kj - 1] : 0);
	const int jid = jlist[kj];
	KSW_JOB;
	const int rlast = rp_rlast(qlen, tlen, w), nch = rp_nch(C, tlen, w, rlast), L = rp_len(C, qlen, tlen, w);
	const int rs = rp_rs(c, C, tlen, w, rlast), re = rp_re(c, C, qlen, w, rlast);
	const int rsp = c ? rp_rs(c - 1, C, tlen, w, rlast) : 0, rep = c ? rp_re(c - 1, C, qlen, w, rlast) : -1;
	int* const books = (int*)(ring_arena + ring_off[jid]);  // handover slots: books[8 c] for chunk c
	int* const myrec = books + 8 * nch + (ki64)c * L * RP_REC - (ki64)rs * RP_REC;  // indexed by r
	const int* const prec = books + 8 * nch + (ki64)(c - 1) * L * RP_REC - (ki64)rsp * RP_REC;
	int* const stopf = prog + (int)cend[n_list - 1] + kj;
	const bool has_next = c < nch - 1;
	const int c0 = c * C;

	KSW_SETUP_AND_RESET;
	(void)H0, (void)last_H0_t;
	ku32 U[KC], Y[KC], Y2[KC], S[KC], X[KC], V[KC], X2[KC], TW[KC];
	int H[KC][4];
#pragma unroll
	for (int k = 0; k < KC; ++k) {
		U[k] = Y[k] = Y2[k] = S[k] = X[k] = V[k] = X2[k] = TW[k] = 0;
		H[k][0] = H[k][1] = H[k][2] = H[k][3] = KSW_NEG_INF;
	}
	hw = c0 >> 4;  // no block of this chunk was touched before rs (en0 + 15 < cC)
	if (rs > 0) {
		last_st = band_st0(rs - 1, qlen, w) & ~15, last_en = (band_en0(rs - 1, tlen, w) & ~15) + 15;
		ki64 d = 0;  // the direction bytes of anti-diagonals [0, rs): each en - st + 1
		for (int r2 = lane; r2 < rs; r2 += 32)
			d += (ki64)((band_en0(r2, tlen, w) & ~15) + 16 - (band_st0(r2, qlen, w) & ~15));
		dcur = __shfl_sync(KSW_FULL_MASK, warp_sum64(d), 0);
	}
	// chunk c - 1's records of anti-diagonals rb - 1 .. rb + RP_BATCH - 1 (lane i: rb - 1 + i)
	int rpk = 0, rh = 0, rk = 0, rt = 0, rhs = 0, rb = rs;
	bool was_top = false;
	int r = rs;
	bool done = false;
	for (; r <= re; ++r) {
		if (c > 0 && (r == rs || (r & (RP_BATCH - 1)) == 0)) {
			// wait until chunk c - 1 has published this batch's anti-diagonals (up to its last), or the job stopped
			const int need = min(min(r | (RP_BATCH - 1), re), rep) + 1;
			int got = 0;
			if (lane == 0) {
				while ((got = *(volatile int*)&prog[id - 1]) < need && !*(volatile int*)stopf) __nanosleep(100);
			}
			got = __shfl_sync(KSW_FULL_MASK, got, 0);
			if (got < need) return;  // the top stopped the job below this chunk
			__threadfence();
			rb = r;
			const int ri = max(min(r - 1 + lane, rep), rsp);
			if (lane <= RP_BATCH) {
				const int4 a = __ldcg((const int4*)(prec + (ki64)ri * RP_REC));
				const int b = __ldcg(prec + (ki64)ri * RP_REC + 4);
				rpk = a.x, rh = a.y, rk = a.z, rt = a.w, rhs = b;
			}
		}
		const int j = r - rb;  // lane j: chunk c - 1 after r - 1; lane j + 1: on r
		const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
		const int st = st0 & ~15, en = (en0 & ~15) + 15;
		const int send = score_end(st0, en0, generic);
		const int top = en > send ? en : send;
		const int nb = (top >> 4) + 1;
		ku32 ga = 0;  // groups with a slot in [st, top]
		int t0[KC];
#pragma unroll
		for (int k = 0; k < KC; ++k) {
			t0[k] = c0 + 128 * k + 4 * lane;
			if (c0 + 128 * k + 127 >= st && c0 + 128 * k <= top) ga |= 1u << k;
		}
		if (nb > hw) {  // first touch of blocks [hw, nb)
#pragma unroll
			for (int k = 0; k < KC; ++k) {
				const int t = t0[k];
				if (t >= hw * 16 && t < nb * 16)
					reg_fill(U[k], Y[k], Y2[k], S[k], X[k], V[k], X2[k], TW[k], H[k], t, T, tlen, FILL1, FILL2, true);
			}
			hw = nb;
		}
		const bool ovr = st == 0 || st - 1 < last_st || st - 1 > last_en;
		const int v1 = st > 0 ? -qe : boundary_diff(r, qe, e, e2, long_thres, long_diff);
		const ku32 pk1 = (ku32)(ku8)(-qe) | (ku32)(ku8)v1 << 8 | (ku32)(ku8)(-qe2) << 16;
		const bool bnd = en >= r;
		const bool is_top = en0 >= c0 && en0 < c0 + C;
		// H[en0-1] (or H[en0]) before this anti-diagonal (line 329): from its owner lane, or chunk c - 1's
		int Hprev = 0;
		if (is_top && r > 0) {
			const int tp = en0 > 0 ? en0 - 1 : en0;
			if (tp >= c0) {
				const int i = (tp - c0) >> 2;
				Hprev = __shfl_sync(KSW_FULL_MASK, pick_h<KC>(H, i >> 5, tp & 3), i & 31);
			} else Hprev = __shfl_sync(KSW_FULL_MASK, rh, j);
		}
		const ku32 ppk = c > 0 ? __shfl_sync(KSW_FULL_MASK, rpk, j) : 0u;  // slot cC - 1 after r - 1
		if (lane == 0 && with_cigar && st >= c0 && st < c0 + C) DO[r] = (ku32)(dcur >> 4);

		const int en1 = group_end(st0, en0);
		int bestK = (int)0x80000000, bestT = 0x7fffffff, hen = 0, hst = 0;
		int ordg[4];
		grouped_ords(st0, ordg);
		ku8* __restrict__ Pr = P + dcur;
		const int lim = generic ? en0 : send;
		// pk[k]: byte 3 of X, V, X2 of group k's word in lane L - 1 (lane 0: group k - 1's lane 31)
		ku32 pk[KC];
#pragma unroll
		for (int k = 0; k < KC; ++k)
			pk[k] = ga & (3u << k) ? __shfl_sync(KSW_FULL_MASK, top_bytes(X[k], V[k], X2[k]), (lane - 1) & 31) : 0u;
#pragma unroll
		for (int k = 0; k < KC; ++k) {
			if (!(ga >> k & 1)) continue;
			const int t = t0[k];
			if (bnd) boundary_cell(U[k], Y[k], Y2[k], t, r, qe, qe2, e, e2, long_thres, long_diff);
			S[k] = reg_score(S[k], TW[k], Q, t, r, st0, lim, generic, mat, SCN4, MCH4, MIS4);
			if (t < st || t > en) continue;
			ku32 p = lane > 0 ? pk[k] : k > 0 ? pk[k - 1] : ppk;
			if (t == st && ovr) p = pk1;
			const ku32 d = reg_cell(X[k], V[k], X2[k], U[k], Y[k], Y2[k], S[k], p, right, Q4, Q24, QE4, QE24, MCH4);
			if (with_cigar) st4(Pr + (t - st), d);
			if (t <= en0 && t + 3 >= st0) {  // H and the keys
				const int kk = reg_hkey(H[k], V[k], U[k], t, st0, en0, en1, r, Hprev, qe, ordg, hen, hst);
				if (kk > bestK) bestK = kk, bestT = t;  // a lane's words in slot order: the first wins ties
			}
		}
		dcur += en - st + 1;
		// the keys over chunks <= c: this chunk's, then chunk c - 1's running ones on r (lower slots: they
		// win ties); the H of st0 from its owner lane or from below
		int mK = __reduce_max_sync(KSW_FULL_MASK, bestK);
		int mT = (int)__reduce_min_sync(KSW_FULL_MASK, bestK == mK ? (ku32)bestT : 0xffffffffu);
		int Hst0 = 0;
		if (st0 < c0) {
			const int pK = __shfl_sync(KSW_FULL_MASK, rk, j + 1), pT = __shfl_sync(KSW_FULL_MASK, rt, j + 1);
			Hst0 = __shfl_sync(KSW_FULL_MASK, rhs, j + 1);
			if (pK >= mK) mK = pK, mT = pT;
		} else if (st0 < c0 + C) Hst0 = __shfl_sync(KSW_FULL_MASK, hst, ((st0 - c0) >> 2) & 31);
		if (is_top) {  // the books (lines 359-366), moved here from chunk c - 1 when en0 came in
			if (!was_top && c > 0) {
				const int4 a = __ldcg((const int4*)(books + 8 * c)), b = __ldcg((const int4*)(books + 8 * c + 4));
				ez_max = a.x, max_t = a.y, max_q = a.z, mqe = a.w, mqe_t = b.x, mte = b.y, mte_q = b.z, score = b.w;
			}
			was_top = true;
			const int Hen0 = __shfl_sync(KSW_FULL_MASK, hen, ((en0 - c0) >> 2) & 31);
			if (exact_books(mK, (ku32)mT, r, st0, en0, en1, Hen0, Hst0, qlen, tlen, zdrop, e2, ez_max, max_t, max_q, mqe,
							mqe_t, mte, mte_q, score))
				zdropped = 1, done = true;
			else if (r == rlast) zdropped = rlast < qlen + tlen - 2, done = true;  // the end, or the band left the matrix
			else if (band_en0(r + 1, tlen, w) >= c0 + C && lane == 0) {  // the books go to chunk c + 1
				*(int4*)(books + 8 * (c + 1)) = make_int4(ez_max, max_t, max_q, mqe);
				*(int4*)(books + 8 * (c + 1) + 4) = make_int4(mqe_t, mte, mte_q, score);
			}
		}
		if (done) break;
		if (has_next && lane == 31) {  // this chunk's record of r for chunk c + 1
			*(int4*)(myrec + (ki64)r * RP_REC) = make_int4((int)top_bytes(X[KC - 1], V[KC - 1], X2[KC - 1]), H[KC - 1][3], mK, mT);
			myrec[(ki64)r * RP_REC + 4] = Hst0;
		}
		if (has_next && ((r & (RP_BATCH - 1)) == RP_BATCH - 1 || r == re)) {
			__syncwarp();
			if (lane == 31) {
				__threadfence();
				*(volatile int*)&prog[id] = r + 1;
			}
		}
		last_st = st, last_en = en;
	}
	if (!done) return;  // a chunk below the top: the job goes on (or stopped) above it
	if (lane == 0) {
		store_extz(res, n_res, jid, ez_max, max_q, max_t, mqe, mqe_t, mte, mte_q, score, zdropped);
		*(volatile int*)stopf = 1;
	}
	__syncwarp();
	__threadfence();
	tb_job(jid, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, doff_off, doff, cig_off, cig, ncig, res, n_res, 0);
}

// ksw_extd2_dp_rp<KC>: the dp_team parameters, then the chunks' running total, the block order and
// the progress counts with the stop flags (dp_rp); blocks of one warp
#define KSW_DP_RP(KC)                                                                                     \
	extern "C" __global__ void __launch_bounds__(32) ksw_extd2_dp_rp##KC(KSW_DP_PARAMS, KSW_TB_PARAMS,   \
																		 const ki64* __restrict__ cend,   \
																		 const int* __restrict__ bmap, int* prog) \
	{                                                                                                     \
		dp_rp<KC>(jlist, n_list, qseq, qst, qlenv, tseq, tst, tlenv, wv, zdv, flv, dir_off, dir, doff_off, doff, \
				  ring_off, ring_arena, mat, q, e, q2, e2, res, n_res, ebv, cig_off, cig, ncig, cend, bmap, prog); \
	}
KSW_DP_RP(1)
KSW_DP_RP(2)

// ksw_extd2_rp_chunks: the chunks of each job of a ring-pipeline class (C = 128 kc slots each);
// ksw_extd2_rp_order: the sort key of each chunk id (its first anti-diagonal, then the id; ids past
// the jobs' chunks last)
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_rp_chunks(int n, const int* __restrict__ jlist,
																	  const int* __restrict__ qlenv,
																	  const int* __restrict__ tlenv,
																	  const int* __restrict__ wv, int kc,
																	  ki64* __restrict__ nch)
{
	const int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n) return;
	const int jid = jlist[i], qlen = qlenv[jid], tlen = tlenv[jid], w = full_w(wv[jid], qlen, tlen);
	nch[i] = rp_nch(128 * kc, tlen, w, rp_rlast(qlen, tlen, w));
}
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_rp_order(int nid, int n, const int* __restrict__ jlist,
																	 const int* __restrict__ qlenv,
																	 const int* __restrict__ tlenv,
																	 const int* __restrict__ wv, int kc,
																	 const ki64* __restrict__ cend, ki64* __restrict__ key)
{
	const int id = blockIdx.x * blockDim.x + threadIdx.x;
	if (id >= nid) return;
	const int kj = rp_first(n, [&](int i) { return cend[i] > (ki64)id; });
	ki64 rs = 1LL << 30;
	if (kj < n) {
		const int jid = jlist[kj], qlen = qlenv[jid], tlen = tlenv[jid], w = full_w(wv[jid], qlen, tlen);
		const int c = id - (kj ? (int)cend[kj - 1] : 0);
		rs = rp_rs(c, 128 * kc, tlen, w, rp_rlast(qlen, tlen, w));
	}
	key[id] = rs << 32 | id;
}

// ---- full-band APPROX_MAX jobs: a clean DP ---------------------------------------------------
// When the band covers the matrix (w >= max(qlen, tlen) - 1) no in-band cell reads a padding slot
// (spec §1.8, consequences; §1.16: a clean DP with ksw2's tie rules is then bit-exact), and with
// APPROX_MAX alone the DP's only output is score = H(tlen-1, qlen-1) (§1.12): max, max_t/q, mqe,
// mte and zdropped keep ksw_reset_extz's values, which ksw_extd2_plan wrote. These jobs, the
// first-pass gap fills (about 80% of a long-read run's cells), therefore take a plain Gotoh DP in
// absolute int32 scores, i = target index, j = query index:
//   E(i,j) = max(H(i-1,j) - q, E(i-1,j)) - e,   E(0,j) = H(-1,j) - (q+e)      (E2: q2, e2)
//   F(i,j) = max(H(i,j-1) - q, F(i,j-1)) - e,   F(i,0) = H(i,-1) - (q+e)      (F2: q2, e2)
//   H(i,j) = min(max(H(i-1,j-1) + s, E, F, E2, F2), H(i-1,j-1) + mat[0])
// with H(-1,-1) = 0 and the boundary H(-1,n) = H(n,-1) = boundary_diff(0..n) summed (§1.7). The
// direction byte holds ksw2's information (§1.10, left ties) in a layout of its own: bits 0-2 the
// winner of strict compares in the order diagonal, E, F, E2, F2 before the clamp as 4 - its state
// code, bits 4-7 the continuation bits E > H-q, F > H-q, E2 > H-q2, F2 > H-q2 (ksw2's 0x08..0x40
// shifted up by one), bit 3 undefined; the backtrack (tb_job with fbk) turns it into ksw2's byte.
//
// Mapping: a warp per job walks the query in passes of 32*K columns. Lane L owns the K columns
// from j0 = 32*K*p + K*L and at step s computes row i = s - L (a wavefront skewed by a row per
// lane) from its own previous row (registers) and lane L-1's last column of the previous step,
// moved by three shuffles: H(i, j0-1), F(i, j0), F2(i, j0). Lane 0 takes them from the boundary on
// pass 0, else from the previous pass's lane 31 through a buffer of 16 bytes per row (the job's
// ring arena). Direction bytes: per pass and step the la active lanes' K bytes side by side (one
// coalesced store), at fb_addr below; the backtrack reads them there.

// H(-1, n) = H(n, -1): boundary_diff(0..n) summed, in closed form (0 for n < 0)
__device__ __forceinline__ int boundary_h(int n, int qe, int e, int e2, int long_thres, int long_diff)
{
	if (n < 0) return 0;
	int n1 = long_thres - 1 < n ? long_thres - 1 : n;  // r in [1, n] with r < long_thres: -e each
	if (n1 < 0) n1 = 0;
	const int neq = long_thres >= 1 && long_thres <= n;  // r == long_thres: long_diff
	return -qe - e * n1 + (neq ? long_diff : 0) - e2 * (n - n1 - neq);
}

// bytes a lane's K direction bytes take in a step: K rounded up to a word, so that every lane
// stores whole aligned words
__host__ __device__ constexpr int fb_kp(int K) { return (K + 3) & ~3; }
// the passes of a full-band job of qlen columns, W = NL K a pass (dp_fb, fb_addr, ksw_extd2_fb_passes)
__host__ __device__ constexpr int fb_npass(int qlen, int W) { return (qlen + W - 1) / W; }
// A pass-pipeline job with more target than query bases runs transposed (KSW_FBP_TR, an experiment): its passes
// split the target, its rows are the query's, so that its chain is the shorter side's rows plus the passes' lag.
// The DP is ksw2's clean full-band DP either way; the tags keep ksw2's order of the original states (E, a
// deletion, before F), and the backtrack reads the bytes transposed.
#ifndef KSW_FBP_TR
#define KSW_FBP_TR 1
#endif
__device__ __forceinline__ bool fb_tr(int qlen, int tlen) { return KSW_FBP_TR && tlen > qlen; }

// byte offset of cell (i, j)'s direction in a full-band job's layout (NL lanes of K columns; fbk =
// NL << 8 | K): per pass and step, the la active lanes' fb_kp(K) bytes side by side
__device__ __forceinline__ ki64 fb_addr(int i, int j, int qlen, int tlen, int fbk)
{
	const int K = fbk & 255, NL = fbk >> 8;
	const int W = NL * K, p = j / W, npass = fb_npass(qlen, W), jj = j - p * W, L = jj / K;
	const int la = p < npass - 1 ? NL : (qlen - p * W + K - 1) / K;
	const int c = jj - L * K, n = K - (c & ~3) < 4 ? K - (c & ~3) : 4;  // column c: byte n-1-(c&3) of its word
	return ((ki64)p * (tlen + NL - 1) * NL + (ki64)(i + L) * la + L) * fb_kp(K) + (c & ~3) + n - 1 - (c & 3);
}

// the scores of target base tb against query bases 0-3, a byte each (§1.9's non-generic rule): the
// match byte at tb, the mismatch byte elsewhere, all N bytes for tb == 4 (mis4, mch4, n4: the
// kernel's encoding of each score in all four bytes)
__device__ __forceinline__ ku32 fb_score_row(ku32 tb, ku32 mis4, ku32 mch4, ku32 n4)
{
	return tb == 4 ? n4 : mis4 ^ ((mis4 ^ mch4) & (0xffu << 8 * tb));
}

// a lane's K direction bytes of one step (packed 4 per word) at a multiple of fb_kp(K): one 8- or
// 16-byte store for fb_kp(K) = 8, 16, word stores otherwise (12: only 4-byte aligned)
template <int K>
__device__ __forceinline__ void fb_store(ku8* p, const ku32 (&dw)[(K + 3) / 4])
{
	constexpr int KP = fb_kp(K);
#ifdef GX_EMU  // the CPU emulator does not fault on a misaligned store: check what the GPU needs
	if ((size_t)p & (KP == 16 ? 15 : KP == 8 ? 7 : 3)) __builtin_trap();
#endif
	if (KP == 4) *(ku32*)p = dw[0];
	else if (KP == 8) *(uint2*)p = make_uint2(dw[0], dw[K > 4 ? 1 : 0]);
	else if (KP == 12) {
		*(ku32*)p = dw[0], *(ku32*)(p + 4) = dw[K > 4 ? 1 : 0];
		*(ku32*)(p + 8) = dw[K > 8 ? 2 : 0];
	} else *(uint4*)p = make_uint4(dw[0], dw[K > 4 ? 1 : 0], dw[K > 8 ? 2 : 0], dw[K > 12 ? 3 : 0]);
	static_assert(KP <= 16, "fb_store: at most 16 columns per lane");
}

// ---- exact full-band jobs in the pass pipeline (ksw_extd2_dp_fbx) ----------------------------------
// A job whose band covers the matrix is a clean DP in exact mode too (§1.8, consequences); only its
// books differ from a first-pass gap fill's. dp_fb<EX> runs its passes as dp_fbp does and each pass
// keeps, per anti-diagonal, the largest key 8 H + ord (max_ord, ksw2's order) of its cells with that
// cell's row t: a lane's cell of column j on row i lies on anti-diagonal i + j, so lane L of a pass of
// K columns per lane meets anti-diagonal R = s + p W + (K - 1) L in steps s - K + 1 .. s (columns K - 1
// .. 0) and has its cells of R after step s (a running key per column, shifted by one each step). The
// lanes above met R K - 1 steps earlier: lane L + 1 hands its (key, t) down by a shuffle into a delay
// line of K - 1 steps, so that lane 0 holds the pass's (key, t) of anti-diagonal s + p W after step s
// and stores it (part[s]); the pass runs K - 1 steps per lane past its last row for the last ones.
// Ties: the first slot (least t) wins, and a lane's earlier cells and the lanes above have the lesser t.
// Lane 0 publishes its step count every 16 steps (progx, after a fence). The books block, the job's
// last, combines the passes' keys of 32 anti-diagonals at a time (a lane each), with H of the last
// column (colH, mqe) and of the last row (rowH, mte), and runs lines 359-366 in order; on a Z-drop it
// raises the job's stop flag, which the passes poll every 16 steps and while they wait for rows (they
// may compute past the Z-drop: nothing reads it), and it backtracks the job. Blocks start in index
// order and wait only for earlier blocks, so none waits forever.
#define KEY_EMPTY ((int)0x80000000)
// One step of a pass's exact-maximum keys (dp_fb<EX>, dp_bx), after lane sl of NL (lane: of the warp) has
// its cells' keys kc of row i: the lane's running keys ak/at move one anti-diagonal down and column c's
// cell joins key c (a tie keeps the earlier row); the anti-diagonal the lane has finished joins the
// lanes above through the delay line dk/dt (K - 1 steps; on a tie the lanes above win, their t is
// lower), and lane 0 stores the pass's (key, t) at pp[s]. Every 16 steps and at the last one (nsx
// steps) lane 0 publishes the step count at *progs after a fence. Returns whether the job's stop flag is up.
template <int K>
__device__ __forceinline__ bool pass_keys(const int (&kc)[K], int i, int sl, int NL, int lane, int s, int nsx,
										  int (&ak)[K], int (&at)[K], int (&dk)[K - 1], int (&dt)[K - 1],
										  int2* __restrict__ pp, int* progs, const volatile int* stopf)
{
#pragma unroll
	for (int c = 0; c < K; ++c) {
		const int ok = c + 1 < K ? ak[c + 1] : KEY_EMPTY, ot = c + 1 < K ? at[c + 1] : 0;
		const bool gt = kc[c] > ok;
		ak[c] = gt ? kc[c] : ok, at[c] = gt ? i : ot;
	}
	const bool up = dk[0] >= ak[0];
	const int ok = up ? dk[0] : ak[0], ot = up ? dt[0] : at[0];
	if (sl == 0) pp[s] = make_int2(ok, ot);
	const int rk = __shfl_down_sync(KSW_FULL_MASK, ok, 1), rt = __shfl_down_sync(KSW_FULL_MASK, ot, 1);
#pragma unroll
	for (int c = 0; c + 1 < K - 1; ++c) dk[c] = dk[c + 1], dt[c] = dt[c + 1];
	dk[K - 2] = sl == NL - 1 ? KEY_EMPTY : rk, dt[K - 2] = rt;
	if ((s & 15) == 15 || s == nsx - 1) {  // the keys published 16 steps at a time
		__syncwarp();
		if (lane == 0) {
			__threadfence();
			*(volatile int*)progs = s + 1;
		}
		return __shfl_sync(KSW_FULL_MASK, *stopf, 0) != 0;
	}
	return false;
}

// The books of a job in a pass pipeline (fbx, fbb): pass p holds anti-diagonal d at step d - d0p(p) of
// its steps(p) (fbx: step s of pass p is anti-diagonal s + p W; fbb: dp_bx); the band's st0 and en0 come
// from w (a covering band for fbx, whose formulas then never clip) and a band exit stops the job
template <class D0, class ST>
__device__ __forceinline__ void pass_books(int jid, int lane, int qlen, int tlen, int w, int npass, int zdrop, int e2,
										   const int2* part, ki64 NSX, const int* colH, const int* rowH,
										   const int* progp, int* stopf, int* __restrict__ res, int n_res, D0 d0p,
										   ST steps)
{
	int ez_max = 0, max_t = -1, max_q = -1, mqe = KSW_NEG_INF, mqe_t = -1, mte = KSW_NEG_INF, mte_q = -1;
	int score = KSW_NEG_INF, zdropped = 0;
	const int nd = qlen + tlen - 1;
	for (int d0 = 0; d0 < nd && !zdropped; d0 += 32) {
		const int dm = min(d0 + 31, nd - 1);
		for (;;) {  // every pass with cells on [d0, dm] has published its keys up to dm
			bool ok = true;
			for (int p = lane; p < npass; p += 32) {
				const int a = d0p(p), n = steps(p);
				if (n > 0 && a <= dm && a + n > d0) ok = ok && *(const volatile int*)&progp[p] >= min(dm - a + 1, n);
			}
			if (!__any_sync(KSW_FULL_MASK, !ok)) break;
			__nanosleep(256);
		}
		__threadfence();
		const int d = d0 + lane;
		int bk = KEY_EMPTY, bt = 0, he = 0, hs = 0;
		if (d < nd) {
			for (int p = 0; p < npass; ++p) {
				const int s = d - d0p(p);
				if (s >= 0 && s < steps(p)) {
					const int2 v = __ldcg(part + p * NSX + s);
					if (v.x > bk || (v.x == bk && v.y < bt)) bk = v.x, bt = v.y;
				}
			}
			if (d >= tlen - 1) he = __ldcg(rowH + d - (tlen - 1));  // H[en0] when en0 == tlen - 1
			if (d >= qlen - 1) hs = __ldcg(colH + d - (qlen - 1));  // H[st0] when r - st0 == qlen - 1
		}
		for (int l = 0; l <= dm - d0; ++l) {  // the books of anti-diagonal d0 + l (lines 142-145, 359-366)
			const int r = d0 + l, k = __shfl_sync(KSW_FULL_MASK, bk, l), t = __shfl_sync(KSW_FULL_MASK, bt, l);
			const int h_e = __shfl_sync(KSW_FULL_MASK, he, l), h_s = __shfl_sync(KSW_FULL_MASK, hs, l);
			const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
			if (st0 > en0 || slot_books(k >> 3, t, r, st0, en0, h_e, h_s, qlen, tlen, zdrop, e2, ez_max, max_t, max_q,
										 mqe, mqe_t, mte, mte_q, score)) {
				zdropped = 1;
				break;
			}
		}
	}
	if (lane == 0) {
		if (zdropped) *(volatile int*)stopf = 1;
		store_extz(res, n_res, jid, ez_max, max_q, max_t, mqe, mqe_t, mte, mte_q, score, zdropped);
	}
	__syncwarp();
}
template <int K>
__device__ __forceinline__ void fbx_books(int jid, int lane, int qlen, int tlen, int w, int npass, int zdrop, int e2,
										  const int2* part, ki64 NSX, const int* colH, const int* rowH,
										  const int* progp, int* stopf, int* __restrict__ res, int n_res)
{
	constexpr int W = 32 * K;
	const int lal = (qlen - (npass - 1) * W + K - 1) / K;  // lanes of the last pass
	pass_books(jid, lane, qlen, tlen, w, npass, zdrop, e2, part, NSX, colH, rowH, progp, stopf, res, n_res,
			   [&](int p) { return p * W; }, [&](int p) { return tlen - 1 + (p < npass - 1 ? 32 : lal) * K; });
}

// the parameters of the full-band DP functions dp_fb and dp_fbr (their kernels' KSW_FB_PARAMS, then the pass
// pipeline's row counts and running total of passes)
#define KSW_FB_DEV_PARAMS                                                                                       \
	const int *__restrict__ jlist, int n_list, const ku8 *__restrict__ qseq, const ki64 *__restrict__ qst,     \
		const int *__restrict__ qlenv, const ku8 *__restrict__ tseq, const ki64 *__restrict__ tst,            \
		const int *__restrict__ tlenv, const int *__restrict__ wv, const int *__restrict__ flv,               \
		const ki64 *__restrict__ dir_off, ku8 *dir, const ki64 *__restrict__ ring_off, ku8 *ring_arena,      \
		const signed char *__restrict__ mat, int q_, int e_, int q2_, int e2_, int *__restrict__ res, int n_res, \
		const int *__restrict__ ebv, const ki64 *__restrict__ cig_off, ku32 *__restrict__ cig,               \
		int *__restrict__ ncig, int *prog, const ki64 *__restrict__ pend

// the pass pipeline's job of this block: its blocks are the jobs' passes in list order, job k's end at pend[k]
// (exclusive), so block b holds a pass of the first job k with pend[k] > b (n_list: none)
__device__ __forceinline__ int fb_pass_job(const ki64* __restrict__ pend, int n_list)
{
	int k = 0, hi = n_list;
	while (k < hi) {
		const int mid = (k + hi) >> 1;
		if (pend[mid] > (ki64)blockIdx.x) hi = mid;
		else k = mid + 1;
	}
	return k;
}

// The DP of a full-band job, then its backtrack (tb_job) by the same warp while the direction bytes
// are still in L2. PIPE: one pass per block of one warp, a job's passes in consecutive blocks (pend);
// the pass buffers and row counts (prog[b], zeroed) are in global memory, so the passes of a big job
// run on many SMs at once, each a few rows behind the one before; the last pass backtracks. Blocks
// start in index order, so a pass's producer (block b - 1) is running or done before it.
template <int K, bool PIPE, int NL, bool EX = false>
__device__ __forceinline__ void dp_fb(KSW_FB_DEV_PARAMS, const int* __restrict__ zdv = nullptr)
{
	const int lane = threadIdx.x & 31, sl = lane & (NL - 1);  // sl: the lane within the job's NL
	// the pass pipeline: a job's passes are consecutive blocks, the largest jobs first; block b is a
	// pass of the first job k with pend[k] > b (pend: the running total of the jobs' passes; none past
	// the last pass)
	const int pk = PIPE ? fb_pass_job(pend, n_list) : 0;
	// the warp's first job (NL < 32: 32 / NL jobs of one pass each, side by side; a slot past the
	// list is a job of no rows that still takes part in the warp's shuffles)
	const int k0 = PIPE ? pk : ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * (32 / NL);
	if (k0 >= n_list) return;  // warp-uniform
	const int k = k0 + lane / NL;
	const bool dead = k >= n_list;
	const int jid = jlist[dead ? k0 : k];
	const int qlen0 = dead ? 0 : qlenv[jid], tlen0 = dead ? 0 : tlenv[jid];
	const bool tr = PIPE && !EX && fb_tr(qlen0, tlen0);  // (warp-uniform: one job) transposed: query and target swap
	const int qlen = tr ? tlen0 : qlen0, tlen = tr ? qlen0 : tlen0;
	const ku8* __restrict__ Q = tr ? tseq + tst[jid] : qseq + qst[jid];
	const ku8* __restrict__ T = tr ? qseq + qst[jid] : tseq + tst[jid];
	// the gap states' tags: ksw2's first-wins order of the original states (E 3, F 2, E2 1, F2 0), so that
	// transposed the DP's E (down its rows: the original F) takes 2 and its F 3
	const int gE = tr ? 2 : 3, gF = tr ? 3 : 2, gE2 = tr ? 0 : 1, gF2 = tr ? 1 : 0;
	ku8* __restrict__ P = dir + dir_off[jid];
	int* __restrict__ bufs = (int*)(ring_arena + ring_off[jid]);  // pass buffers of tlen rows x 4 ints
	KSW_SETUP;
	constexpr int W = NL * K;
	const int npass = NL < 32 ? 1 : fb_npass(qlen, W);  // NL < 32: one pass (ksw_extd2_class)
	const ki64 S = tlen + NL - 1;
	// scores x 8 (+ the diagonal's tag 4, + 128) as bytes; the DP keeps H x 8 and the gap states x 8
	// plus a tag (E 3, F 2, E2 1, F2 0)
	const ku32 SC_MIS4 = rep4(8 * sc_mis + 132), SC_MCH4 = rep4(8 * sc_mch + 132), SC_N4 = rep4(8 * sc_N + 132);
	const ku32 SC_HI = (ku32)(8 * sc_N + 132);
	// X > H-q for a state X = 8x + g (tag g): x > H-q, i.e. X > 8(H-q) + t for any t in [g, 7]: the
	// thresholds tE .. tF2 added to 8H (four different ones: each continuation bit is then one 3-input
	// add; F2 takes 7, as with 0 the compiler folded 8 q2 into a multiply-add and needed two);
	// the next state max(X, 8(H-q) + g) - 8e = max(8H + (g - 8q - 8e), X - 8e): ce1 .. cf2
	int tE = gE - 8 * q, tF = gF - 8 * q, tE2 = 1 - 8 * q2, tF2 = 7 - 8 * q2, e8 = 8 * e, e28 = 8 * e2, mc7 = 8 * sc_mch + 7;
	int ce1 = gE - 8 * q - e8, ce2 = gE2 - 8 * q2 - e28, cf1 = gF - 8 * q - e8, cf2 = gF2 - 8 * q2 - e28;
	// kept in registers: without this empty asm the compiler recomputes them from the int8 gap
	// costs in every step (14 uniform-datapath instructions of ~330 per step of dp_fb8)
	asm("" : "+r"(ce1), "+r"(ce2), "+r"(cf1), "+r"(cf2), "+r"(tE), "+r"(tF), "+r"(tE2), "+r"(tF2), "+r"(e8), "+r"(e28),
		"+r"(mc7));
	const int p1 = PIPE ? (int)(blockIdx.x - (k0 ? pend[k0 - 1] : 0)) : 0;
	// EX: the job's blocks are its passes and then its books (fbx_books); its arena holds the pass
	// buffers, then the passes' per-anti-diagonal maxima, the last column's and the last row's H
	const ki64 NSX = tlen + W - 1;  // (EX) steps a pass may take: tlen - 1 + la K
	int2* __restrict__ part = (int2*)(bufs + (ki64)npass * tlen * 4);
	int* __restrict__ colH = (int*)(part + (ki64)npass * NSX);
	int* __restrict__ rowH = colH + tlen;
	int* __restrict__ progx = EX ? prog + gridDim.x : nullptr;  // steps whose keys a pass has published
	if (EX && p1 == npass) {
		fbx_books<K>(jid, lane, qlen, tlen, full_w(wv[jid], qlen, tlen), npass, zdv[jid], e2, part, NSX, colH, rowH,
					 progx + blockIdx.x - npass, progx + blockIdx.x, res, n_res);
		__threadfence();
		tb_job(jid, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, nullptr, nullptr, cig_off, cig, ncig, res, n_res,
			   NL << 8 | K);
		return;
	}
	if (p1 >= npass) return;
	PROF_F(unsigned long long pg0, pc0, pw = 0, pfn = 0, pa, pb; PROF_GT(pg0); PROF_CLK(pc0));
	const volatile int* stopf = EX ? progx + pend[k0] - 1 : nullptr;  // the job's books block's: 1 on a Z-drop
	for (int p = p1; p < (PIPE ? p1 + 1 : npass); ++p) {
		const int j0 = p * W + K * sl;
		const int la = p < npass - 1 ? NL : (qlen - p * W + K - 1) / K;
		const bool live = sl < la, last = p == npass - 1;
		// EX: the keys (see fbx_books). A cell (i, j) of anti-diagonal r = i + j has st0 = max(0, r - qlen
		// + 1), so (t - st0) mod 4 is i mod 4 below row thr = qlen - j and (qlen - 1 - j) mod 4 from there
		// (ordA); the cells near en0 (columns 0-3, the last 4 rows) take max_ord itself; a column past the
		// query offers no key (lim)
		int ordA[EX ? K : 1], thr[EX ? K : 1], lim[EX ? K : 1], ak[EX ? K : 1], at[EX ? K : 1];
		int dk[EX ? K - 1 : 1], dt[EX ? K - 1 : 1];
		if (EX) {
#pragma unroll
			for (int c = 0; c < K; ++c) {
				const int j = j0 + c;
				ordA[c] = 6 - ((qlen - 1 - j) & 3), thr[c] = qlen - j, lim[c] = j < qlen ? 0x7fffffff : KEY_EMPTY;
				ak[c] = KEY_EMPTY, at[c] = 0;
			}
#pragma unroll
			for (int c = 0; c < K - 1; ++c) dk[c] = KEY_EMPTY, dt[c] = 0;
		}
		// steps of the warp: of its longest job when it holds several (EX: until lane 0 has every key)
		const int nstep = NL < 32 ? __reduce_max_sync(KSW_FULL_MASK, tlen + la - 1) : tlen + la - 1;
		const int nsx = EX ? tlen - 1 + la * K : nstep, cq = qlen - 1 - j0;
		int2* __restrict__ pp = part + (ki64)p * NSX;
		// the previous pass's buffer and this pass's (one buffer reused pass after pass by one warp)
		volatile int* __restrict__ bin = (volatile int*)bufs + (PIPE ? (ki64)(p - 1) * tlen * 4 : 0);
		int* __restrict__ bout = bufs + (PIPE ? (ki64)p * tlen * 4 : 0);
		int avail = PIPE && p > 0 ? 0 : tlen;  // rows of the previous pass known to be written
		// H(i-1, j), E(i, j), E2(i, j) and the score selector of column j: its query base picks a
		// byte of the row's scores (sc_row below), the other three bytes are zeros (SC_HI bytes 5-7)
		int Hup[K], Ee[K], Ee2[K];
		ku32 qsel[K];
#pragma unroll
		for (int c = 0; c < K; ++c) {
			const int j = j0 + c, h = boundary_h(j, qe, e, e2, long_thres, long_diff);
			Hup[c] = 8 * h, Ee[c] = 8 * (h - qe) + gE, Ee2[c] = 8 * (h - qe2) + gE2;
			qsel[c] = (j < qlen ? Q[j] : 0u) | 0x7650u;
		}
		int hdiag = 8 * boundary_h(j0 - 1, qe, e, e2, long_thres, long_diff);  // H(i-1, j0-1), row i = 0
		int oh = 0, of = 0, of2 = 0;  // this lane's outputs of the previous step
		int hb = 0;  // lane 0 of pass 0: H(i, -1), summed row by row
		// the pass pipeline loads a step ahead (a step is a chain of latencies for a lone warp): the
		// target base of the lane's next row, and lane 0's previous-pass values of its next row once
		// they are there
		ku32 tnext = T[0];
		int ph = 0, pf = 0, pf2 = 0;
		bool pre = false;
		ku8* __restrict__ Pp = P + (ki64)p * S * NL * fb_kp(K) + (ki64)sl * fb_kp(K);  // this lane's bytes of step s
		// lane 0 reads the previous pass's row i at bin + 4 i and lane NL - 1 writes its row i at bout + 4 i
		// through one running pointer (i = s - sl), a row a step (indexed, the compiler had recomputed both
		// 64-bit addresses, pass times tlen, in every step)
		int* bq = (sl == 0 ? (int*)bin : bout) - 4 * sl;
		for (int s = 0; s < nsx; ++s, Pp += la * fb_kp(K), bq += 4) {
			const int i = s - sl;
			if (PIPE && s < tlen && s >= avail) {  // warp-uniform: lane 0 needs row s of the previous pass
				PROF_F(PROF_CLK(pa));
				int got;
				bool stop = false;
				do {
					got = __shfl_sync(KSW_FULL_MASK, *(volatile int*)&prog[blockIdx.x - 1], 0);
					if (EX) stop = __shfl_sync(KSW_FULL_MASK, *stopf, 0) != 0;
				} while (got <= s && !stop);
				if (EX && stop) break;
				avail = got;
				__threadfence();
				PROF_F(PROF_CLK(pb); pw += pb - pa);
			}
			int hl = __shfl_up_sync(KSW_FULL_MASK, oh, 1, NL);
			int fl = __shfl_up_sync(KSW_FULL_MASK, of, 1, NL), f2l = __shfl_up_sync(KSW_FULL_MASK, of2, 1, NL);
			const bool act = live && i >= 0 && i < tlen;
			if (!EX && !act) continue;
			int kc[EX ? K : 1];
			if (EX) {
#pragma unroll
				for (int c = 0; c < K; ++c) kc[c] = KEY_EMPTY;
			}
			if (act) {
			if (sl == 0) {
				if (p == 0) {
					hb += boundary_diff(i, qe, e, e2, long_thres, long_diff);
					hl = 8 * hb, fl = 8 * (hb - qe) + gF, f2l = 8 * (hb - qe2) + gF2;
				} else {
					const volatile int* bi = (const volatile int*)bq;
					if (pre) hl = ph, fl = pf, f2l = pf2;
					else hl = bi[0], fl = bi[1], f2l = bi[2];
					pre = PIPE && i + 1 < avail && i + 1 < tlen;  // row i+1 written (and fenced) already
					if (pre) ph = bi[4], pf = bi[5], pf2 = bi[6];
				}
			}
			// the scores of target base tb against query bases 0-3 (bytes 0-3) and N (byte 4 = SC_HI's
			// byte 0), each as 8 * score + 132: the non-generic rule of §1.9, one byte_perm per cell
			const ku32 tb = PIPE ? tnext : T[i];  // (the warp-per-job kernels have no register to spare)
			if (PIPE && i + 1 < tlen) tnext = T[i + 1];
			const ku32 sc_row = fb_score_row(tb, SC_MIS4, SC_MCH4, SC_N4);
			int hd = hdiag, F = fl, F2 = f2l;
			ku32 dw[(K + 3) / 4], tg = 0;
#pragma unroll
			for (int c = 0; c < K; ++c) {
				const int E = Ee[c], E2 = Ee2[c];
				// tagged maximum: the five candidates x 8 plus 4 - (ksw2's state code), so that the
				// max of the words is the max with ksw2's first-wins order (strict compares in the
				// order diagonal, E, F, E2, F2) in its low 3 bits
				// (F and F2, which chain the row's cells, enter last: the chain from F to the next F is
				// then max3, add-min, mask, add-max)
				const int m = __vimax3_s32(__vimax3_s32(hd + (int)__byte_perm(sc_row, SC_HI, qsel[c]) - 128, E, E2), F, F2);
				// 8 H(i,j), clamped (§1.6): min(m & ~7, X) = min(m, X + 7) & ~7 for X = hd + 8 mch, a
				// multiple of 8 (one add-min instead of a mask, an add and a min)
				const int z = __viaddmin_s32(hd, mc7, m) & ~7;
				if (EX) kc[c] = __viaddmin_s32(z, i >= thr[c] ? ordA[c] : 6 - (i & 3), lim[c]);
				// the continuation bits X > H-q: the sign bits of 8H + tX - X, shifted into the word by
				// funnel shifts, 8 bits per cell: F2 E2 F E at bits 7-4, bits 3-0 of 8H + tE - E (then
				// bits 0-2 take the tag); the word's first cell lands in its highest byte (fb_addr)
				const int cw = c & 3, n = K - (c & ~3) < 4 ? K - (c & ~3) : 4;
				ku32 a = cw == 0 ? 0u : dw[c >> 2];
				a = __funnelshift_lc((ku32)(z + tF2 - F2), a, 1);
				a = __funnelshift_lc((ku32)(z + tE2 - E2), a, 1);
				a = __funnelshift_lc((ku32)(z + tF - F), a, 1);
				dw[c >> 2] = __funnelshift_lc((ku32)(z + tE - E), a, 5);
				// the maximum's tag into bits 0-2 of the cell's byte (byte n-1-cw of the word)
				const int pos = n - 1 - cw;
				tg = cw == 0 ? __byte_perm((ku32)m, 0u, 0x4444u ^ (4u << 4 * pos)) : __byte_perm(tg, (ku32)m, 0x3210u ^ ((pos ^ 4u) << 4 * pos));
				if (cw == n - 1) dw[c >> 2] = lop3_sel(dw[c >> 2], tg, 0x07070707u);
				// next gap states, max(X, H-q) - e, tags kept: max(8H + ce1 .. cf2, X - 8e), with X - 8e
				// off the chain
				Ee[c] = __viaddmax_s32(z, ce1, E - e8), Ee2[c] = __viaddmax_s32(z, ce2, E2 - e28);
				F = __viaddmax_s32(z, cf1, F - e8), F2 = __viaddmax_s32(z, cf2, F2 - e28);
				hd = Hup[c], Hup[c] = z;
			}
			fb_store<K>(Pp, dw);
			hdiag = hl, oh = Hup[K - 1], of = F, of2 = F2;
			if (!last && sl == NL - 1) {
				*(int4*)bq = make_int4(oh, of, of2, 0);
				if (PIPE && ((i & 15) == 15 || i == tlen - 1)) {  // rows published 16 at a time
					PROF_F(PROF_CLK(pa));
					__threadfence();
					PROF_F(PROF_CLK(pb); pfn += pb - pa);
					*(volatile int*)&prog[blockIdx.x] = i + 1;
				}
			}
			if (EX) {
				if (j0 < 4 || i >= tlen - 4) {  // the cells at en0 or in the tail [en1, en0) (max_ord)
#pragma unroll
					for (int c = 0; c < K; ++c) {
						const int r = i + j0 + c, st0 = max(0, r - qlen + 1), en0 = min(r, tlen - 1);
						if (j0 + c < qlen) kc[c] = Hup[c] + max_ord(i, st0, en0, group_end(st0, en0));
					}
				}
#pragma unroll
				for (int c = 0; c < K; ++c) {
					if (i == tlen - 1 && j0 + c < qlen) rowH[j0 + c] = Hup[c] >> 3;  // mte's H[en0]
					if (c == cq) colH[i] = Hup[c] >> 3;  // mqe's H[st0]
				}
			}
			}  // act
			if constexpr (EX) {  // anti-diagonal s + p W + (K - 1) sl is done here and in the lanes above
				if (pass_keys<K>(kc, i, sl, NL, lane, s, nsx, ak, at, dk, dt, pp, &progx[blockIdx.x], stopf)) break;
			}
		}
		if (!EX && last && qlen - 1 >= j0 && qlen - 1 < j0 + K) {  // Hup holds row tlen-1: the score
#pragma unroll
			for (int c = 0; c < K; ++c)
				if (j0 + c == qlen - 1) res[RF_SCORE * n_res + jid] = Hup[c] >> 3;
		}
		__syncwarp();  // the buffer rows of this pass, for the next pass's lane 0 (one warp)
	}
#if defined(KSW_PROF) && (KSW_PROF_WHAT & 1)
	if (PIPE && !EX && k0 < 2 && lane == 31) {
		unsigned long long pg1, pc1;
		PROF_GT(pg1); PROF_CLK(pc1);
		printf("FBP %d %d %d %llu %llu %llu %llu %llu\n", k0, jid, p1, pg0, pg1, pc1 - pc0, pw, pfn);
	}
#endif
	if (EX || (PIPE && p1 < npass - 1)) return;  // the last pass backtracks: it ends after every other pass
	// (EX: the books block does)
	if (PIPE) __threadfence();
#pragma unroll 1
	for (int h = 0; h < 32 / NL; ++h) {  // the warp's jobs one after another
		const int jh = __shfl_sync(KSW_FULL_MASK, jid, h * NL);
		if (k0 + h < n_list)
			tb_job(jh, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, nullptr, nullptr, cig_off, cig, ncig, res,
				   n_res, NL << 8 | K | (tr ? 1 << 16 : 0));
	}
}

// ksw_extd2_dp_fb<K>: full-band APPROX_MAX jobs, a warp per job, K columns per lane;
// ksw_extd2_dp_fbp (K = KSW_FBP_K = 6): big ones of more than 512 columns, a block (one warp) per
// pass, a job's passes in consecutive blocks: the pipeline's time is its rows
// times the latency of one step, which grows with K (E. coli's 10k-row jobs: 21 ms with K = 16).
// Both end with the job's backtrack (no ksw_extd2_tb launch). Parameters: the other DP kernels'
// (smem_lg, doff, ring_lgv are not used; the ring arena holds the pass buffers, one or one per
// pass, of 16 bytes per row), then the backtrack's end_bonus, CIGAR offsets, CIGAR arena and
// lengths; dp_fbp also the row counts (an int32 per block, zeroed) and the running total of the
// jobs' passes (int64 per job).
#define KSW_FB_PARAMS KSW_DP_PARAMS, KSW_TB_PARAMS
#define KSW_FB_ARGS                                                                                     \
	jlist, n_list, qseq, qst, qlenv, tseq, tst, tlenv, wv, flv, dir_off, dir, ring_off, ring_arena, mat, q, e, q2, \
		e2, res, n_res, ebv, cig_off, cig, ncig
#define KSW_DP_FB(K)                                                                                    \
	extern "C" __global__ void __launch_bounds__(128, FB_MIN_BLOCKS_##K) ksw_extd2_dp_fb##K(KSW_FB_PARAMS) \
	{                                                                                                   \
		dp_fb<K, false, 32>(KSW_FB_ARGS, nullptr, nullptr);                                                          \
	}
// K = 4, 5, 6, 8, 10, 12, 16 query columns per lane (FB_KS, ksw_extd2_class), picked by qlen so
// that most lanes have columns; blocks per SM the register caps allow (e.g. 16 warps of K = 16, 20 of K = 8: 128 and 102
// registers)
#define FB_MIN_BLOCKS_4 6
#define FB_MIN_BLOCKS_5 6
#define FB_MIN_BLOCKS_6 6
#define FB_MIN_BLOCKS_8 5
#define FB_MIN_BLOCKS_10 5
#define FB_MIN_BLOCKS_12 4
#define FB_MIN_BLOCKS_16 4
KSW_DP_FB(4)
KSW_DP_FB(5)
KSW_DP_FB(6)
KSW_DP_FB(8)
KSW_DP_FB(10)
KSW_DP_FB(12)
KSW_DP_FB(16)
#ifndef KSW_FBP_K
#define KSW_FBP_K 6  // columns per lane of ksw_extd2_dp_fbp (as FBP_K of the launcher; its knob redefines it)
#endif
extern "C" __global__ void __launch_bounds__(32) ksw_extd2_dp_fbp(KSW_FB_PARAMS, int* prog, const ki64* __restrict__ pend)
{
	dp_fb<KSW_FBP_K, true, 32>(KSW_FB_ARGS, prog, pend);
}
// ksw_extd2_dp_fbx: big exact full-band jobs (flags 0, EXTZ_ONLY, REV_CIGAR) in the same pipeline, a
// job's passes and then its books block (fbx_books) in consecutive blocks (pend counts npass + 1);
// prog holds the row counts (one int per block) and then the key step counts and stop flags (one
// more), zeroed
extern "C" __global__ void __launch_bounds__(32) ksw_extd2_dp_fbx(KSW_FB_PARAMS, int* prog, const ki64* __restrict__ pend)
{
	dp_fb<KSW_FBP_K, true, 32, true>(KSW_FB_ARGS, prog, pend, zdv);
}
// part[t] of the NT threads of a block (thread t its own entry) becomes the inclusive sum of part[0 .. t]
// (Hillis-Steele in shared memory); every thread must call it, and part[] is read only after it returns
template <int NT, class T> __device__ __forceinline__ void block_inclusive_sum(T* part, int t)
{
	__syncthreads();
	for (int d = 1; d < NT; d <<= 1) {
		const T y = t >= d ? part[t - d] : T(0);
		__syncthreads();
		part[t] += y;
		__syncthreads();
	}
}
// ksw_extd2_fb_passes: one block of 256 threads sets up a pass-pipeline launch: pend, the running
// total (inclusive) of its jobs' blocks, each job's passes of dp_fb (W = 32 KSW_FBP_K columns each)
// and `extra` more (fbx: its books block); and prog[0 .. nprog) zeroed (the pipeline's progress counts
// and stop flags). One launch where a CuPy cumsum and zeros took several, before the pipeline's own.
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_fb_passes(int n, const int* __restrict__ jlist,
																	  const int* __restrict__ qlenv,
																	  const int* __restrict__ tlenv, int extra,
																	  ki64* __restrict__ pend, int* __restrict__ prog,
																	  long long nprog)
{
	__shared__ ki64 part[256];
	const int t = threadIdx.x;
	ki64 base = 0;
	for (int i0 = 0; i0 < n; i0 += 256) {
		const int i = i0 + t;
		const int ql = i < n ? qlenv[jlist[i]] : 0, tl = i < n ? tlenv[jlist[i]] : 0;
		part[t] = i < n ? fb_npass(!extra && fb_tr(ql, tl) ? tl : ql, 32 * KSW_FBP_K) + extra : 0;
		block_inclusive_sum<256>(part, t);
		if (i < n) pend[i] = base + part[t];
		base += part[255];
		__syncthreads();
	}
	for (ki64 b = t; b < nprog; b += 256) prog[b] = 0;
}
// ---- band-limited exact jobs in the pass pipeline (ksw_extd2_dp_fbb) --------------------------------
// ksw2 computes cell (i, j) (slot t = i, anti-diagonal r = i + j) exactly when st_a(r) <= i <= en_a(r),
// its 16-aligned range (§1.8): a staircase region around the band, whose cells outside the band read
// stale values and feed the band-edge cells. dp_bx walks rows, as dp_fb does, over the region
// instead of anti-diagonals: a cell needs (x, v, x2) of the cell above and (u, y, y2) of the cell to
// its left, which are the region's cells when they lie in it, else ksw2's initial contents
// (-(q+e), -(q+e), -(q2+e2): the first-slot constants of lines 149-159 when the cell above is
// outside, a block never computed before otherwise), except the boundaries: row 0 reads the top
// row's v of lines 156-159, column 0 the left column's u of lines 160-163 (which overrides the
// computed padding cell (r, -1) whenever (r, 0) is in the region). So a cell outside the region
// outputs those constants, and the region's cells read them. Columns past qlen, rows past tlen and
// columns below 0 never reach a cell of the matrix (§1.8) and are not kept. In row i the region is the
// columns [r_lo - i, r_hi - i] of r_lo = max(i0, 2 i0 - w), r_hi = min(i1 + qlen - 2, 2 i1 + w - 2)
// (i0 = i & ~15, i1 = i0 + 16). The score of a cell is this anti-diagonal's when its slot is in the
// score store [st0, send] (score_end), else the last one stored at that slot (0 if none): a byte
// running along the row, from column -15 (a store reaches at most 15 slots past en0 <= r), so the
// passes start at column -BX_J0. H follows the row in the band (-w <= i - j <= w), entering from the
// cell above at en0 (H[en0-1] + u), and carries its last value across the cells outside the band
// (ksw2's H[t] keeps it). Keys, passes, books and stop flag as in dp_fb<EX> (fbx), with the band's
// st0, en0 and en1 in the ords; the books stop at a band exit (st0 > en0) too.
// The values are ksw2's int8 in the top byte of a 32-bit word (sums wrap as int8's, signed compares
// order by the top byte), the maximum's tag (ksw2's order) in the low bits, as cell4 does in halves.
#define BX_J0 16  // the passes start at column -BX_J0
__device__ __forceinline__ int bx_npass(int qlen) { return (qlen + BX_J0 + 127) >> 7; }
// rows of pass p: from the first whose region can reach its columns (r_hi - i <= i + w + 30) to the
// last whose score stores can reach them (a store covers slot i only from column i - 30 - w)
__device__ __forceinline__ int bx_ia(int p, int w) { return max(0, p * 128 - BX_J0 - w - 30); }
__device__ __forceinline__ int bx_ib(int p, int w, int tlen) { return min(tlen - 1, p * 128 - BX_J0 + 127 + 30 + w); }
__device__ __forceinline__ int bx_la(int p, int npass, int qlen) { return p < npass - 1 ? 32 : (qlen + BX_J0 - p * 128 + 3) >> 2; }
// steps of a pass at most (rows + 32 lanes x 4 - 1) and bytes of a pass's direction bytes
__host__ __device__ __forceinline__ int bx_rows(int w, int tlen) { return min(tlen, 2 * w + 188); }
__device__ __forceinline__ ki64 bx_nsx(int w, int tlen) { return bx_rows(w, tlen) + 128; }  // key slots per pass
__device__ __forceinline__ ki64 bx_stride(int w, int tlen) { return (ki64)(bx_rows(w, tlen) + 31) * 128; }
// byte offset of cell (i, j)'s direction (j >= 0, (i, j) in the region): per pass and step, the la
// lanes' 4 bytes side by side (the first column in the highest byte)
__device__ __forceinline__ ki64 bx_addr(int i, int j, int qlen, int tlen, int w)
{
	const int jj = j + BX_J0, p = jj >> 7, L = (jj & 127) >> 2, c = jj & 3;
	const int la = bx_la(p, bx_npass(qlen), qlen), s = i - bx_ia(p, w) + L;
	return (ki64)p * bx_stride(w, tlen) + ((ki64)s * la + L) * 4 + 3 - c;
}
// the region's columns in row i: [lo, hi] within the matrix
__device__ __forceinline__ void bx_region(int i, int qlen, int w, int nd, int& lo, int& hi)
{
	const int i0 = i & ~15, i1 = i0 + 16;
	lo = max(max(i0, 2 * i0 - w) - i, 0);
	hi = min(min(min(i1 + qlen - 2, 2 * i1 + w - 2), nd - 1) - i, qlen - 1);
}
// top-byte words: a byte b as b << 24
__device__ __forceinline__ int tb8(int b) { return (int)((ku32)b << 24); }
// u, y, y2 (top bytes of U, Y, Y2) and the stale score (top byte of S) packed into one word, and back
__device__ __forceinline__ ku32 bx_pack(ku32 U, ku32 Y, ku32 Y2, ku32 S)
{
	return __byte_perm(__byte_perm(U, Y, 0x0073u), __byte_perm(Y2, S, 0x0073u), 0x5410u);
}

template <bool RIGHT>
__device__ __forceinline__ void bx_pass(int p, int npass, int lane, int qlen, int tlen, int w,
										const ku8* __restrict__ Q, const ku8* __restrict__ T, ku8* __restrict__ P,
										int2* __restrict__ bufs, int2* __restrict__ part, ki64 NSX,
										int* __restrict__ colH, int* __restrict__ rowH, int* progr, int* progk,
										const volatile int* stopf, const signed char* __restrict__ mat, int q_,
										int e_, int q2_, int e2_)
{
	KSW_SETUP;
	const int nd = qlen + tlen - 1, cp0 = p * 128 - BX_J0, j0 = cp0 + 4 * lane;
	const int la = bx_la(p, npass, qlen), ia = bx_ia(p, w), ib = bx_ib(p, w, tlen);
	const int ibp = p > 0 ? bx_ib(p - 1, w, tlen) : -1;  // the previous pass's last row
	const bool live = lane < la, last = p == npass - 1;
	const int nrows = ib - ia + 1;
	const int nsx = nrows > 0 ? nrows - 1 + 4 * la : 0;
	const int C1 = tb8(-qe), C2 = tb8(-qe2), Qs = tb8(q), Q2s = tb8(q2), QEs = tb8(qe), QE2s = tb8(qe2);
	const int MCHs = tb8(sc_mch);
	constexpr int tS = RIGHT ? 0 : 4, tX = RIGHT ? 1 : 3, tY = 2, tX2 = RIGHT ? 3 : 1, tY2 = RIGHT ? 4 : 0;
	const ku32 MIS4 = rep4(sc_mis), MCH4 = rep4(sc_mch), N4 = rep4(sc_N), SC_HI = (ku32)(ku8)sc_N;
	// the column state of the row above: x, v, x2 (top bytes), the H carried along that row
	int Xu[4], Vu[4], X2u[4], Hu[4], ak[4], at[4], dk[3], dt[3];
	ku32 qsel[4];
#pragma unroll
	for (int c = 0; c < 4; ++c) {
		const int j = j0 + c;
		Xu[c] = C1, X2u[c] = C2, Hu[c] = KSW_NEG_INF;
		Vu[c] = ia == 0 && j >= 0 ? tb8(boundary_diff(j, qe, e, e2, long_thres, long_diff)) : C1;  // row -1
		qsel[c] = (ku32)(j >= 0 && j < qlen ? Q[j] : 0) << 12 | 0x555u;  // byte 3: the score, bytes 0-2: 0
		ak[c] = KEY_EMPTY, at[c] = 0;
	}
#pragma unroll
	for (int c = 0; c < 3; ++c) dk[c] = KEY_EMPTY, dt[c] = 0;
	const int2* __restrict__ bin = bufs + (ki64)(p - 1) * tlen;
	int2* __restrict__ bout = bufs + (ki64)p * tlen;
	int2* __restrict__ pp = part + (ki64)p * NSX;
	int avail = p > 0 ? 0 : tlen;
	ku32 ow = 0;  // this lane's last column after the previous step: packed u, y, y2, stale score
	int oH = KSW_NEG_INF;
	ku8* __restrict__ Pp = P + (ki64)p * bx_stride(w, tlen) + 4 * lane;
	for (int s = 0; s < nsx; ++s, Pp += 4 * la) {
		const int i = ia + s - lane;
		if (p > 0 && s < nrows && ia + s <= ibp && ia + s >= avail) {  // lane 0 needs row ia + s of pass p - 1
			int got;
			bool stop = false;
			do {
				got = __shfl_sync(KSW_FULL_MASK, *(volatile int*)&progr[p - 1], 0);
				stop = __shfl_sync(KSW_FULL_MASK, *stopf, 0) != 0;
			} while (got <= ia + s && !stop);
			if (stop) break;
			avail = got;
			__threadfence();
		}
		ku32 lw = __shfl_up_sync(KSW_FULL_MASK, ow, 1);
		int Hl = __shfl_up_sync(KSW_FULL_MASK, oH, 1);
		const bool act = live && i >= ia && i <= ib;
		int kc[4] = {KEY_EMPTY, KEY_EMPTY, KEY_EMPTY, KEY_EMPTY};
		if (act) {
			if (lane == 0) {
				if (p > 0 && i <= ibp) {
					const int2 v = __ldcg((const int2*)&bin[i]);  // (from L2: written by another SM)
					lw = (ku32)v.x, Hl = v.y;
				} else lw = bx_pack(C1, C1, C2, 0), Hl = KSW_NEG_INF;
			}
			int U = (int)(lw << 24), Y = (int)(lw << 16 & 0xff000000u), Y2 = (int)(lw << 8 & 0xff000000u);
			int Sst = (int)(lw & 0xff000000u);
			const ku32 tb = T[i];
			const ku32 sc_row = tb == 4 ? N4 : MIS4 ^ ((MIS4 ^ MCH4) & (0xffu << 8 * tb));
			int lo, hi;
			bx_region(i, qlen, w, nd, lo, hi);
			const bool lastrow = i == tlen - 1;
			// the band's columns in row i
			const int blo = max(0, i - w), bhi = min(qlen - 1, i + w);
			ku32 dw = 0;
#pragma unroll
			for (int c = 0; c < 4; ++c) {
				const int j = j0 + c, r = i + j;
				if (j == 0) {  // the left column (lines 160-163); H(0, -1) + v gives H(0, 0) = v - (q+e)
					U = tb8(boundary_diff(i, qe, e, e2, long_thres, long_diff)), Y = C1, Y2 = C2;
					Hl = i == 0 ? -qe : KSW_NEG_INF;
				}
				// this anti-diagonal's band, score store and exact-maximum groups
				const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
				if (i >= st0 && i <= score_end(st0, en0, false)) Sst = (int)__byte_perm(sc_row, SC_HI, qsel[c]);
				const int a = Xu[c] + Vu[c], b = Y + U, a2 = X2u[c] + Vu[c], b2 = Y2 + U;
				const int m = __vimax3_s32(__vimax3_s32(Sst + tS, a + tX, b + tY), a2 + tX2, b2 + tY2);
				const int z = min(m & (int)0xff000000u, MCHs);
				int un = z - Vu[c], vn = z - U;
				const int t1 = z - Qs, t2 = z - Q2s;
				const int ap = a - t1, bp = b - t1, a2p = a2 - t2, b2p = b2 - t2;
				const int ar = max(ap, 0), br = max(bp, 0), a2r = max(a2p, 0), b2r = max(b2p, 0);
				int xn = ar - QEs, yn = br - QEs, x2n = a2r - QE2s, y2n = b2r - QE2s;
				// the continuation bits as signs: a' > 0 (left: relu(a') + 0x7fffffff < 0), a' >= 0 (RIGHT)
				ku32 cb = __funnelshift_lc(RIGHT ? ~(ku32)b2p : (ku32)b2r + 0x7fffffffu, 0u, 1);
				cb = __funnelshift_lc(RIGHT ? ~(ku32)a2p : (ku32)a2r + 0x7fffffffu, cb, 1);
				cb = __funnelshift_lc(RIGHT ? ~(ku32)bp : (ku32)br + 0x7fffffffu, cb, 1);
				cb = __funnelshift_lc(RIGHT ? ~(ku32)ap : (ku32)ar + 0x7fffffffu, cb, 1);
				const ku32 code = RIGHT ? (ku32)m & 7u : 4u - ((ku32)m & 7u);
				dw = dw << 8 | cb << 3 | code;
				// H in the band (from the cell above at en0), else carried; the exact maximum's key
				const bool inb = j >= blo && j <= bhi;
				const int H = !inb ? Hl : i == en0 && i > 0 ? Hu[c] + (un >> 24) : Hl + (vn >> 24);
				if (inb) {
					kc[c] = 8 * H + max_ord(i, st0, en0, group_end(st0, en0));
					if (lastrow) rowH[j] = H;  // mte's H[en0]
					if (j == qlen - 1) colH[i] = H;  // mqe's H[st0]
				}
				if (j < lo || j > hi) un = vn = xn = yn = C1, x2n = y2n = C2;  // outside the region
				Xu[c] = xn, Vu[c] = vn, X2u[c] = x2n, Hu[c] = H;
				U = un, Y = yn, Y2 = y2n, Hl = H;
			}
			*(ku32*)Pp = dw;
			ow = bx_pack(U, Y, Y2, Sst), oH = Hl;
			if (!last && lane == 31) {
				*(int2*)&bout[i] = make_int2((int)ow, oH);
				if ((i & 15) == 15 || i == ib) {  // rows published 16 at a time
					__threadfence();
					*(volatile int*)&progr[p] = i == ib ? tlen : i + 1;
				}
			}
		}
		// the keys: lane 0 stores the pass's key of anti-diagonal cp0 + ia + s
		if (pass_keys<4>(kc, i, lane, 32, lane, s, nsx, ak, at, dk, dt, pp, &progk[p], stopf)) break;
	}
	if (!last && lane == 31 && nrows <= 0) *(volatile int*)&progr[p] = tlen;  // (no rows)
}

// the books of a band-limited job: pass p holds anti-diagonal d at step d - cp0 - ia (dp_bx)
__device__ __forceinline__ void bx_books(int jid, int lane, int qlen, int tlen, int w, int npass, int zdrop, int e2,
										 const int2* part, ki64 NSX, const int* colH, const int* rowH,
										 const int* progp, int* stopf, int* __restrict__ res, int n_res)
{
	pass_books(jid, lane, qlen, tlen, w, npass, zdrop, e2, part, NSX, colH, rowH, progp, stopf, res, n_res,
			   [&](int p) { return p * 128 - BX_J0 + bx_ia(p, w); },
			   [&](int p) {
				   const int nr = bx_ib(p, w, tlen) - bx_ia(p, w) + 1;
				   return nr > 0 ? nr - 1 + 4 * bx_la(p, npass, qlen) : 0;
			   });
}

// ksw_extd2_dp_fbb: big band-limited exact jobs (not GENERIC_SC) of the list, n = n_list: first a
// books block per job (bx_books), then pass 0 of every job, pass 1 of every job, ... (a block of one
// warp each, MP = (gridDim.x - n) / n passes at most per job). A pass of a band-limited job starts about
// 170 steps after the one before it and runs about 2 w of them, so ordering the blocks by pass keeps
// about the passes that run at the time resident (ordered by job, the first jobs' late passes held SM
// slots, spinning, while the later jobs waited). Each block waits only for an earlier one of its job,
// except the books blocks, which wait for the passes: fewer books blocks than SM slots (the launcher's
// FBB_MAX_JOBS per launch) cannot fill the GPU. prog (zeroed): the row counts of job k's passes at
// k MP + p, their key step counts at n MP + k MP + p, the job's stop flag at 2 n MP + k. The books block
// writes the result and backtracks (tb_job, fbk -1: bx_addr's layout). pend is not used. (On the CPU
// emulator, whose blocks run one after another, the books blocks come last.)
#ifndef FBB_MIN_BLOCKS
#define FBB_MIN_BLOCKS 16  // blocks of one warp per SM that its register cap allows (20: 96 registers, no spills)
#endif
extern "C" __global__ void __launch_bounds__(32, FBB_MIN_BLOCKS) ksw_extd2_dp_fbb(KSW_FB_PARAMS, int* prog, const ki64* __restrict__ pend)
{
	const int lane = threadIdx.x & 31, n = n_list, MP = (gridDim.x - n) / n;
#ifdef GX_EMU  // the CPU emulator runs blocks one after another: the books blocks last
	const int b = blockIdx.x < gridDim.x - n ? blockIdx.x + n : blockIdx.x - (gridDim.x - n);
#else
	const int b = blockIdx.x;
#endif
	const bool books = b < n;
	const int k = books ? b : (b - n) % n, p = books ? -1 : (b - n) / n;
	const int jid = jlist[k];
	const int qlen = qlenv[jid], tlen = tlenv[jid], w = wv[jid], npass = bx_npass(qlen);
	if (p >= npass) return;
	int2* bufs = (int2*)(ring_arena + ring_off[jid]);
	const ki64 NSX = bx_nsx(w, tlen);
	int2* part = bufs + (ki64)npass * tlen;
	int* colH = (int*)(part + (ki64)npass * NSX);
	int* rowH = colH + tlen;
	int* progr = prog + (ki64)k * MP;
	int* progk = prog + (ki64)n * MP + (ki64)k * MP;
	int* stopf = prog + 2 * (ki64)n * MP + k;
	if (books) {
		bx_books(jid, lane, qlen, tlen, w, npass, zdv[jid], (signed char)e2, part, NSX, colH, rowH, progk, stopf, res,
				 n_res);
		__threadfence();
		tb_job(jid, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, nullptr, nullptr, cig_off, cig, ncig, res, n_res, -1);
		return;
	}
	const ku8* Q = qseq + qst[jid];
	const ku8* T = tseq + tst[jid];
	ku8* P = dir + dir_off[jid];
	if (flv[jid] & KSW_EZ_RIGHT)
		bx_pass<true>(p, npass, lane, qlen, tlen, w, Q, T, P, bufs, part, NSX, colH, rowH, progr, progk, stopf, mat,
					  q, e, q2, e2);
	else
		bx_pass<false>(p, npass, lane, qlen, tlen, w, Q, T, P, bufs, part, NSX, colH, rowH, progr, progk, stopf,
					   mat, q, e, q2, e2);
}

// ksw_extd2_dp_fbh16: full-band jobs of one pass of 16 x 16 columns, two per warp (16 lanes of 16
// columns each): half the skew of a warp per job (15 steps, not up to 31) and the step's fixed part
// over 16 cells
extern "C" __global__ void __launch_bounds__(128, FB_MIN_BLOCKS_16) ksw_extd2_dp_fbh16(KSW_FB_PARAMS)
{
	dp_fb<16, false, 16>(KSW_FB_ARGS, nullptr, nullptr);
}

// ---- two full-band jobs per lane, in 16-bit halves ------------------------------------------------
// Most first-pass gap fills are short (a few hundred bases each way), and then dp_fb's tagged values
// fit 16 bits: the launcher sends a job here only when qlen + tlen is at most its bound (fb >> 8),
// under which 8 |H| plus the gap costs, and every difference below, stay inside a halfword
// (|H| <= mat[0] min(qlen, tlen) + 2q + e (qlen + tlen + 2), spec §1.16's clean DP). dp_fb2 runs
// dp_fb's recurrence for two jobs at once, job A in the low halfword of each register and job B in
// the high one, with sm_90's native 16x2 instructions (VIADD.16x2, VIMNMX3.S16x2, VIADDMNMX.S16x2):
// one instruction per pair of cells where dp_fb spends one per cell. The two jobs of a lane are
// neighbours in the class's order (similar sizes) and share its columns and rows; each has its own
// direction bytes (fb_addr's layout, NL lanes of K columns, one pass), score and backtrack. A lane
// steps until the longer of its jobs is done; the halfword of a job past its last row or column holds
// garbage that reaches neither the other halfword nor memory.
//   E, F, E2, F2 as in dp_fb (8 x + tag); the next state and its continuation bit from one add-max
//   and a subtraction: Xn = max(X - 8e, zX) with zX = 8H + (g - 8q - 8e), and X > H-q (ksw2's bit)
//   exactly when Xn > zX, the sign of zX - Xn.

// a compile-time bool as a type (a generic lambda's two instances)
template <bool B>
struct kbool {
	static constexpr bool value = B;
};

// x >> 16, computed where it is used: the compiler otherwise keeps the K shifted selectors of a
// lane in registers across the row loop, K registers more than dp_fb2 has
__device__ __forceinline__ ku32 hi16(ku32 x)
{
#ifdef GX_EMU
	return x >> 16;
#else
	ku32 d;
	asm volatile("shr.b32 %0, %1, 16;" : "=r"(d) : "r"(x));
	return d;
#endif
}

// a value of both jobs (two signed halfwords)
__device__ __forceinline__ ku32 pair16(int x) { return ((ku32)x & 0xffffu) * 0x10001u; }

// the direction bytes of a pair of cells from the continuation words (sign bits 15: A, 31: B) and the
// tagged maximum m (tags in bits 0-2 and 16-18): A's byte (dp_fb's layout) in byte 1, B's in byte 3
__device__ __forceinline__ ku32 fb2_dirs(ku32 dE, ku32 dF, ku32 dE2, ku32 dF2, ku32 m)
{
	const ku32 u = prmt_s(dE, dF, 0xBF9Du), v = prmt_s(dE2, dF2, 0xBF9Du);  // [A's F|F2, A's E|E2, B's .., B's ..] as 0/0xff
	const ku32 t = lop3_sel(v, u, 0x10201020u);  // F at bit 5, F2 at 7 of bytes 0, 2; E at 4, E2 at 6 of bytes 1, 3
	return lop3_sel(lop3_sel(t << 8, t, 0x50005000u), m << 8, 0x07000700u);
}

// n cells' pair words p[0..n) into A's and B's direction word (the first cell in the highest byte of
// the n, as dp_fb packs them)
template <int N>
__device__ __forceinline__ void fb2_gather(const ku32* p, ku32& wa, ku32& wb)
{
	if (N == 4) {
		const ku32 g01 = __byte_perm(p[0], p[N > 1 ? 1 : 0], 0x3715u), g23 = __byte_perm(p[N > 2 ? 2 : 0], p[N > 3 ? 3 : 0], 0x3715u);
		wa = __byte_perm(g23, g01, 0x5410u), wb = __byte_perm(g23, g01, 0x7632u);
	} else if (N == 3) {
		const ku32 g01 = __byte_perm(p[0], p[1], 0x3715u);
		wa = __byte_perm(p[N > 2 ? 2 : 0], g01, 0x0541u), wb = __byte_perm(p[N > 2 ? 2 : 0], g01, 0x0763u);
	} else if (N == 2) {
		wa = __byte_perm(p[0], p[N > 1 ? 1 : 0], 0x3715u), wb = wa >> 16;
	} else {
		wa = p[0] >> 8, wb = p[0] >> 24;
	}
}

// the score selector of a column's pair of query bases a (the low halfword's) and b (the high one's): A's
// (bits 0-15) puts its sign-extended score into the low halfword, B's (bits 16-31) into the high one
__device__ __forceinline__ ku32 fb2_qsel(ku32 a, ku32 b)
{
	return (0x5500u | (a | 8u) << 4 | a) | (0x0055u | b << 8 | (b | 8u) << 12) << 16;
}

// no N in the warp's queries (nq: this lane's has one; the usual case): one selector per column takes both
// halves' scores from the two target rows at once, A's from row A (bytes 0-3) into the low halfword and B's from
// row B (bytes 4-7) into the high one, each sign-extended; an N needs SC_HI, so a warp with one keeps a selector
// per half (the rows are ksw2's for any target base, N included). Returns whether the warp has an N.
template <int K>
__device__ __forceinline__ bool fb2_qsel_warp(ku32 (&qs)[K], bool nq)
{
	const bool qn = __any_sync(KSW_FULL_MASK, nq);
	if (!qn) {
#pragma unroll
		for (int c = 0; c < K; ++c) qs[c] = (qs[c] & 0xffu) | ((qs[c] >> 16 & 0xff00u) + 0x4400u);
	}
	return qn;
}

// One step of K cell pairs in 16-bit halves (dp_fb2's two jobs, dp_fbr's two virtual lanes): from the diagonal
// hd and the left F, F2 along the row, the columns' H (Hup), E and E2 updated in place, F and F2 left for the
// next column, and the direction words of the low halves (wa) and the high ones (wb) in dp_fb's byte layout
template <int K, bool QN>
__device__ __forceinline__ void fb2_cells(ku32 (&Hup)[K], ku32 (&Ee)[K], ku32 (&Ee2)[K], const ku32 (&qs)[K], ku32 hd,
										  ku32& F, ku32& F2, ku32 rowa, ku32 rowb, ku32 SC_HI, ku32 ce1, ku32 ce2, ku32 cf1,
										  ku32 cf2, ku32 ne8, ku32 ne28, ku32 mc7, ku32 (&dwa)[(K + 3) / 4],
										  ku32 (&dwb)[(K + 3) / 4])
{
	ku32 pw[K];
#pragma unroll
	for (int c = 0; c < K; ++c) {
		const ku32 E = Ee[c], E2 = Ee2[c];
		const ku32 sc = QN ? prmt_s(rowa, SC_HI, qs[c]) | prmt_s(rowb, SC_HI, hi16(qs[c])) : prmt_s(rowa, rowb, qs[c]);
		const ku32 m = __vimax3_s16x2(__vimax3_s16x2(__vadd2(hd, sc), E, E2), F, F2);
		const ku32 z = __viaddmin_s16x2(hd, mc7, m) & 0xfff8fff8u;  // 8 H, clamped (§1.6)
		const ku32 zE = __vadd2(z, ce1), zE2 = __vadd2(z, ce2), zF = __vadd2(z, cf1), zF2 = __vadd2(z, cf2);
		const ku32 En = __viaddmax_s16x2(E, ne8, zE), E2n = __viaddmax_s16x2(E2, ne28, zE2);
		const ku32 Fn = __viaddmax_s16x2(F, ne8, zF), F2n = __viaddmax_s16x2(F2, ne28, zF2);
		pw[c] = fb2_dirs(__vsub2(zE, En), __vsub2(zF, Fn), __vsub2(zE2, E2n), __vsub2(zF2, F2n), m);
		Ee[c] = En, Ee2[c] = E2n, F = Fn, F2 = F2n;
		hd = Hup[c], Hup[c] = z;
		const int n = K - (c & ~3) < 4 ? K - (c & ~3) : 4;
		if ((c & 3) == n - 1) {
			if (n == 4) fb2_gather<4>(pw + (c & ~3), dwa[c >> 2], dwb[c >> 2]);
			else if (n == 3) fb2_gather<3>(pw + (c & ~3), dwa[c >> 2], dwb[c >> 2]);
			else if (n == 2) fb2_gather<2>(pw + (c & ~3), dwa[c >> 2], dwb[c >> 2]);
			else fb2_gather<1>(pw + (c & ~3), dwa[c >> 2], dwb[c >> 2]);
		}
	}
}

template <int K, int NL>
__device__ __forceinline__ void dp_fb2(const int* __restrict__ jlist, int n_list, const ku8* __restrict__ qseq,
									   const ki64* __restrict__ qst, const int* __restrict__ qlenv,
									   const ku8* __restrict__ tseq, const ki64* __restrict__ tst,
									   const int* __restrict__ tlenv, const int* __restrict__ wv,
									   const int* __restrict__ flv, const ki64* __restrict__ dir_off, ku8* dir,
									   const signed char* __restrict__ mat, int q_, int e_, int q2_, int e2_,
									   int* __restrict__ res, int n_res, const int* __restrict__ ebv,
									   const ki64* __restrict__ cig_off, ku32* __restrict__ cig, int* __restrict__ ncig)
{
	const int lane = threadIdx.x & 31, sl = lane & (NL - 1);
	// the warp's first job: 32 / NL groups of NL lanes, two jobs (A, B) each; a slot past the list is a
	// job of no rows and no columns
	const int k0 = ((blockIdx.x * blockDim.x + threadIdx.x) >> 5) * (64 / NL);
	if (k0 >= n_list) return;  // warp-uniform
	const int ka = k0 + 2 * (lane / NL), kb = ka + 1;
	const int ja = jlist[ka < n_list ? ka : k0], jb = jlist[kb < n_list ? kb : k0];
	const int qla = ka < n_list ? qlenv[ja] : 0, tla = ka < n_list ? tlenv[ja] : 0;
	const int qlb = kb < n_list ? qlenv[jb] : 0, tlb = kb < n_list ? tlenv[jb] : 0;
	const ku8 *__restrict__ Qa = qseq + qst[ja], *__restrict__ Qb = qseq + qst[jb];
	const ku8 *__restrict__ Ta = tseq + tst[ja], *__restrict__ Tb = tseq + tst[jb];
	KSW_SETUP;
	const int laa = (qla + K - 1) / K, lab = (qlb + K - 1) / K;  // one pass (ksw_extd2_class)
	const int la = laa > lab ? laa : lab, tl = tla > tlb ? tla : tlb;
	const bool live = sl < la;
	const int nstep = __reduce_max_sync(KSW_FULL_MASK, tl + la - 1);
	// scores x 8 + 4 (the diagonal's tag) as signed bytes: a target base's row (query bases 0-3) and
	// the N score (SC_HI byte 0; bytes 5-7 of the pair are zeros)
	const ku32 SC_MIS4 = rep4(8 * sc_mis + 4), SC_MCH4 = rep4(8 * sc_mch + 4), SC_N4 = rep4(8 * sc_N + 4);
	const ku32 SC_HI = (ku32)(ku8)(8 * sc_N + 4);
	ku32 ce1 = pair16(3 - 8 * q - 8 * e), ce2 = pair16(1 - 8 * q2 - 8 * e2), cf1 = pair16(2 - 8 * q - 8 * e),
		 cf2 = pair16(-8 * q2 - 8 * e2), ne8 = pair16(-8 * e), ne28 = pair16(-8 * e2), mc7 = pair16(8 * sc_mch + 7);
	asm("" : "+r"(ce1), "+r"(ce2), "+r"(cf1), "+r"(cf2), "+r"(ne8), "+r"(ne28), "+r"(mc7));
	const int j0 = K * sl;
	// H(i-1, j), E(i, j), E2(i, j) of both jobs (the boundary is the same for both), and the score
	// selectors of column j: A's (bits 0-15) puts its sign-extended score into the low halfword, B's
	// (bits 16-31) into the high one (prmt reads bits 0-15 of its selector)
	ku32 Hup[K], Ee[K], Ee2[K], qs[K];
	bool nq = false;
#pragma unroll
	for (int c = 0; c < K; ++c) {
		const int j = j0 + c, h = boundary_h(j, qe, e, e2, long_thres, long_diff);
		Hup[c] = pair16(8 * h), Ee[c] = pair16(8 * (h - qe) + 3), Ee2[c] = pair16(8 * (h - qe2) + 1);
		const ku32 a = j < qla ? Qa[j] : 0u, b = j < qlb ? Qb[j] : 0u;
		qs[c] = fb2_qsel(a, b);
		nq |= (a | b) > 3u;
	}
	const bool qn = fb2_qsel_warp<K>(qs, nq);
	ku32 hdiag = pair16(8 * boundary_h(j0 - 1, qe, e, e2, long_thres, long_diff));
	ku32 oh = 0, of = 0, of2 = 0;
	const int cqa = qla - 1 - j0, cqb = qlb - 1 - j0;  // the column of the last query base, if this lane's
	int hb = 0;
	ku8 *__restrict__ Pa = dir + dir_off[ja] + (ki64)sl * fb_kp(K), *__restrict__ Pb = dir + dir_off[jb] + (ki64)sl * fb_kp(K);
	auto rows = [&](auto qn_t) {
		constexpr bool QN = decltype(qn_t)::value;
		for (int s = 0; s < nstep; ++s, Pa += laa * fb_kp(K), Pb += lab * fb_kp(K)) {
			const int i = s - sl;
			ku32 hl = __shfl_up_sync(KSW_FULL_MASK, oh, 1, NL);
			ku32 fl = __shfl_up_sync(KSW_FULL_MASK, of, 1, NL), f2l = __shfl_up_sync(KSW_FULL_MASK, of2, 1, NL);
			if (!live || i < 0 || i >= tl) continue;
			if (sl == 0) {
				hb += boundary_diff(i, qe, e, e2, long_thres, long_diff);
				hl = pair16(8 * hb), fl = pair16(8 * (hb - qe) + 2), f2l = pair16(8 * (hb - qe2));
			}
			const ku32 ta = i < tla ? Ta[i] : 0u, tb = i < tlb ? Tb[i] : 0u;
			const ku32 rowa = fb_score_row(ta, SC_MIS4, SC_MCH4, SC_N4), rowb = fb_score_row(tb, SC_MIS4, SC_MCH4, SC_N4);
			ku32 hd = hdiag, F = fl, F2 = f2l;
			ku32 dwa[(K + 3) / 4], dwb[(K + 3) / 4];
			fb2_cells<K, QN>(Hup, Ee, Ee2, qs, hd, F, F2, rowa, rowb, SC_HI, ce1, ce2, cf1, cf2, ne8, ne28, mc7, dwa, dwb);
			if (sl < laa && i < tla) fb_store<K>(Pa, dwa);
			if (sl < lab && i < tlb) fb_store<K>(Pb, dwb);
			hdiag = hl, oh = Hup[K - 1], of = F, of2 = F2;
			// the score, H(tlen-1, qlen-1), from the lane of the last column on the last row
			if (i == tla - 1 && (unsigned)cqa < (unsigned)K) {
#pragma unroll
				for (int c = 0; c < K; ++c)
					if (c == cqa) res[RF_SCORE * n_res + ja] = (int)(short)(Hup[c] & 0xffffu) >> 3;
			}
			if (i == tlb - 1 && (unsigned)cqb < (unsigned)K) {
#pragma unroll
				for (int c = 0; c < K; ++c)
					if (c == cqb) res[RF_SCORE * n_res + jb] = (int)Hup[c] >> 19;
			}
		}
	};
	if (qn) rows(kbool<true>{});
	else rows(kbool<false>{});
#pragma unroll 1
	for (int h = 0; h < 64 / NL; ++h) {  // the warp's jobs one after another
		const int jh = __shfl_sync(KSW_FULL_MASK, h & 1 ? jb : ja, (h >> 1) * NL);
		if (k0 + h < n_list)
			tb_job(jh, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, nullptr, nullptr, cig_off, cig, ncig, res,
				   n_res, NL << 8 | K);
	}
}

// ksw_extd2_dp_fb<K>x2: dp_fb<K>'s jobs of one pass, two per warp (a lane's halfwords);
// ksw_extd2_dp_fbh<K>x2, K = 13..16: dp_fbh16's, four per warp (two per 16 lanes), K the fewest
// columns per lane that cover the query (most such gap fills have 200-250 columns)
#define KSW_FB2_ARGS jlist, n_list, qseq, qst, qlenv, tseq, tst, tlenv, wv, flv, dir_off, dir, mat, q, e, q2, e2, res, n_res, ebv, cig_off, cig, ncig
#define KSW_DP_FB2(K)                                                                                       \
	extern "C" __global__ void __launch_bounds__(128, FB_MIN_BLOCKS_##K) ksw_extd2_dp_fb##K##x2(KSW_FB_PARAMS) \
	{                                                                                                       \
		dp_fb2<K, 32>(KSW_FB2_ARGS);                                                                        \
	}
KSW_DP_FB2(4)
KSW_DP_FB2(5)
KSW_DP_FB2(6)
KSW_DP_FB2(8)
KSW_DP_FB2(10)
KSW_DP_FB2(12)
KSW_DP_FB2(16)
#ifndef FBH2_MIN_BLOCKS
#define FBH2_MIN_BLOCKS FB_MIN_BLOCKS_16
#endif
#define KSW_DP_FBH2(K)                                                                               \
	extern "C" __global__ void __launch_bounds__(128, FBH2_MIN_BLOCKS) ksw_extd2_dp_fbh##K##x2(KSW_FB_PARAMS) \
	{                                                                                                   \
		dp_fb2<K, 16>(KSW_FB2_ARGS);                                                                    \
	}
KSW_DP_FBH2(13)
KSW_DP_FBH2(14)
KSW_DP_FBH2(15)
KSW_DP_FBH2(16)

// ---- the pass pipeline in 16-bit halves (the launcher's fb bit 4, _fbr_ok) ---------------------------------
// ksw_extd2_dp_fbr: dp_fbp's jobs with two virtual lanes of KR = KSW_FBP_K / 2 columns in each lane's halfwords,
// the high one a row behind the low one: 64 virtual lanes a pass of W = 32 KSW_FBP_K columns (dp_fbp's passes,
// pass buffers and pass counts), the direction bytes at fb_addr with NL = 64 (virtual lane v holds row s - v at
// step s; a lane's two halves store side by side). Every value of row i is held as 8 (x - B(i)) + tag, with B(i)
// = H(i - 1, j0 - 1) and j0 the pass's first column: one base per pass and row, so the left inputs (the virtual
// lane below's outputs of the step before, the same row) need no conversion, and a half moving to the next row
// subtracts 8 (B(i + 1) - B(i)) from its Hup, E, E2 and diagonal. Each half carries 8 B of its row as an int32,
// passed up the virtual lanes with the skew (lane 0's from the previous pass's absolute H or ksw2's boundary);
// the last virtual lane writes absolute values to the pass buffer, and the score is taken absolute. The launcher
// sends only scorings whose values within a pass fit a halfword (_fbr_ok; scripts/check_fbr_bound.py).
// The core is dp_fb2's, shared as fb2_cells (two cells per 16x2 instruction, fb2_dirs, fb2_gather).
__device__ __forceinline__ ku32 pk16(int lo, int hi) { return ((ku32)lo & 0xffffu) | (ku32)hi << 16; }
__device__ __forceinline__ int lo16s(ku32 x) { return (int)(short)(x & 0xffffu); }
__device__ __forceinline__ int hi16s(ku32 x) { return (int)x >> 16; }

#ifndef KSW_FBR_FRAME
#define KSW_FBR_FRAME 32  // steps between dp_fbr's frames (a power of 2; FBR_FRAME of the launcher's _fbr_ok)
#endif
template <int KR>
__device__ __forceinline__ void dp_fbr(KSW_FB_DEV_PARAMS)
{
	const int lane = threadIdx.x & 31;
	const int k0 = fb_pass_job(pend, n_list);
	if (k0 >= n_list) return;
	const int jid = jlist[k0];
	const int qlen0 = qlenv[jid], tlen0 = tlenv[jid];
	const bool tr = fb_tr(qlen0, tlen0);
	const int qlen = tr ? tlen0 : qlen0, tlen = tr ? qlen0 : tlen0;
	const ku8* __restrict__ Q = tr ? tseq + tst[jid] : qseq + qst[jid];
	const ku8* __restrict__ T = tr ? qseq + qst[jid] : tseq + tst[jid];
	const int gE = tr ? 2 : 3, gF = tr ? 3 : 2, gE2 = tr ? 0 : 1, gF2 = tr ? 1 : 0;  // (dp_fb)
	ku8* __restrict__ P = dir + dir_off[jid];
	int* __restrict__ bufs = (int*)(ring_arena + ring_off[jid]);
	KSW_SETUP;
	constexpr int NV = 64, W = NV * KR, KP = fb_kp(KR);
	const int npass = fb_npass(qlen, W);
	const int p = (int)(blockIdx.x - (k0 ? pend[k0 - 1] : 0));
	if (p >= npass) return;
	const ku32 SC_MIS4 = rep4(8 * sc_mis + 4), SC_MCH4 = rep4(8 * sc_mch + 4), SC_N4 = rep4(8 * sc_N + 4);
	const ku32 SC_HI = (ku32)(ku8)(8 * sc_N + 4);
	ku32 ce1 = pair16(gE - 8 * q - 8 * e), ce2 = pair16(gE2 - 8 * q2 - 8 * e2), cf1 = pair16(gF - 8 * q - 8 * e),
		 cf2 = pair16(gF2 - 8 * q2 - 8 * e2), ne8 = pair16(-8 * e), ne28 = pair16(-8 * e2), mc7 = pair16(8 * sc_mch + 7);
	asm("" : "+r"(ce1), "+r"(ce2), "+r"(cf1), "+r"(cf2), "+r"(ne8), "+r"(ne28), "+r"(mc7));
	const int j0p = p * W, vlo = 2 * lane, jlo = j0p + KR * vlo, jhi = jlo + KR;
	const int la = p < npass - 1 ? NV : (qlen - j0p + KR - 1) / KR;  // virtual lanes of this pass
	const bool last = p == npass - 1, live_lo = vlo < la, live_hi = vlo + 1 < la;
	const int B0 = 8 * boundary_h(j0p - 1, qe, e, e2, long_thres, long_diff);  // 8 B(0) = 8 H(-1, j0 - 1)
	ku32 Hup[KR], Ee[KR], Ee2[KR], qs[KR];
	bool nq = false;
#pragma unroll
	for (int c = 0; c < KR; ++c) {
		const int ja = jlo + c, jb = jhi + c;
		const int ha = 8 * boundary_h(ja, qe, e, e2, long_thres, long_diff) - B0;
		const int hb = 8 * boundary_h(jb, qe, e, e2, long_thres, long_diff) - B0;
		Hup[c] = pk16(ha, hb), Ee[c] = pk16(ha - 8 * qe + gE, hb - 8 * qe + gE);
		Ee2[c] = pk16(ha - 8 * qe2 + gE2, hb - 8 * qe2 + gE2);
		const ku32 a = ja < qlen ? Q[ja] : 0u, b = jb < qlen ? Q[jb] : 0u;
		qs[c] = fb2_qsel(a, b);
		nq |= (a | b) > 3u;
	}
	const bool qn = fb2_qsel_warp<KR>(qs, nq);
	ku32 hdiag = pk16(8 * boundary_h(jlo - 1, qe, e, e2, long_thres, long_diff) - B0,
					  8 * boundary_h(jhi - 1, qe, e, e2, long_thres, long_diff) - B0);
	ku32 iH[KR], iE[KR], iE2[KR];  // the initial state, for the high half's first row
#pragma unroll
	for (int c = 0; c < KR; ++c) iH[c] = Hup[c], iE[c] = Ee[c], iE2[c] = Ee2[c];
	const ku32 id = hdiag;
	ku32 oh = 0, of = 0, of2 = 0;  // this lane's outputs of the step before (both halves)
	int fr = B0;                    // the warp's frame (8x): every value is held less it
	int prevh = B0, hb = 0;         // lane 0: 8 H(i - 1, j0 - 1) absolute; pass 0: H(i, -1) summed
	ku32 rprev = 0;                 // the low half's score row of the step before (the high half's now)
	volatile int* __restrict__ bin = (volatile int*)bufs + (ki64)(p > 0 ? p - 1 : 0) * tlen * 4;
	int* __restrict__ bout = bufs + (ki64)p * tlen * 4;
	int* bq = lane == 0 ? (int*)bin : bout - 4 * (NV - 1);  // lane 0: row s of bin; lane 31: row s - 63 of bout
	int avail = p > 0 ? 0 : tlen;
	const int nsx = tlen + la - 1;
	ku8* __restrict__ Pp = P + (ki64)p * (tlen + NV - 1) * NV * KP + (ki64)vlo * KP;
	auto rows = [&](auto qn_t, auto p0_t) {  // (instances: N in the queries; the first pass, whose left is ksw2's boundary)
		constexpr bool QN = decltype(qn_t)::value, P0 = decltype(p0_t)::value;
		for (int s = 0; s < nsx; ++s, Pp += la * KP, bq += 4) {
			const int ilo = s - vlo, ihi = ilo - 1;
			if (s < tlen && s >= avail) {  // warp-uniform: lane 0 needs row s of the previous pass
				int got;
				do got = __shfl_sync(KSW_FULL_MASK, *(volatile int*)&prog[blockIdx.x - 1], 0);
				while (got <= s);
				avail = got;
				__threadfence();
			}
			if (s > 0 && (s & (KSW_FBR_FRAME - 1)) == 0) {  // warp-uniform: a new frame, lane 0's H(s - 1, j0 - 1),
				// for every lane's state and outputs (the rows in flight stay within (W + 2 + 64 + KSW_FBR_FRAME) steps
				// of H of it: _fbr_ok)
				const int nf = __shfl_sync(KSW_FULL_MASK, prevh, 0);
				const ku32 dd = pair16(nf - fr);
				fr = nf;
				hdiag = __vsub2(hdiag, dd), oh = __vsub2(oh, dd), of = __vsub2(of, dd), of2 = __vsub2(of2, dd);
#pragma unroll
				for (int c = 0; c < KR; ++c) Hup[c] = __vsub2(Hup[c], dd), Ee[c] = __vsub2(Ee[c], dd), Ee2[c] = __vsub2(Ee2[c], dd);
			}
			// the virtual lane below's outputs of the step before: lane - 1's high half for the low half, this
			// lane's low half for the high half
			const ku32 sh = __shfl_up_sync(KSW_FULL_MASK, oh, 1), sf = __shfl_up_sync(KSW_FULL_MASK, of, 1);
			const ku32 sf2 = __shfl_up_sync(KSW_FULL_MASK, of2, 1);
			const bool act_lo = live_lo && ilo >= 0 && ilo < tlen, act_hi = live_hi && ihi >= 0 && ihi < tlen;
			if (!act_lo && !act_hi) continue;
			ku32 hl = __byte_perm(sh, oh, 0x5432u), fl = __byte_perm(sf, of, 0x5432u), f2l = __byte_perm(sf2, of2, 0x5432u);
			if (lane == 0 && act_lo) {  // virtual lane 0: the pass's left column, absolute, less the frame
				int ha, fa, f2a;
				if (P0) {
					hb += boundary_diff(ilo, qe, e, e2, long_thres, long_diff);
					ha = 8 * hb, fa = 8 * (hb - qe) + gF, f2a = 8 * (hb - qe2) + gF2;
				} else {
					const volatile int* bi = (const volatile int*)bq;
					ha = bi[0], fa = bi[1], f2a = bi[2];
				}
				prevh = ha;
				hl = (hl & 0xffff0000u) | ((ku32)(ha - fr) & 0xffffu);
				fl = (fl & 0xffff0000u) | ((ku32)(fa - fr) & 0xffffu);
				f2l = (f2l & 0xffff0000u) | ((ku32)(f2a - fr) & 0xffffu);
			}
			const ku32 rowa = fb_score_row(act_lo ? T[ilo] : 0u, SC_MIS4, SC_MCH4, SC_N4), rowb = rprev;
			rprev = rowa;
			if (ihi == 0) {  // the high half's first row (once a pass per lane): the step before, its halfwords
				// computed nothing of use; its initial state (row -1, less B(0)) in the frame
				const ku32 d0 = pair16(fr - B0);
#pragma unroll
				for (int c = 0; c < KR; ++c)
					Hup[c] = __byte_perm(Hup[c], __vsub2(iH[c], d0), 0x7610u),
					Ee[c] = __byte_perm(Ee[c], __vsub2(iE[c], d0), 0x7610u),
					Ee2[c] = __byte_perm(Ee2[c], __vsub2(iE2[c], d0), 0x7610u);
				hdiag = __byte_perm(hdiag, __vsub2(id, d0), 0x7610u);
			}
			ku32 hd = hdiag, F = fl, F2 = f2l;
			ku32 dwa[(KR + 3) / 4], dwb[(KR + 3) / 4];
			fb2_cells<KR, QN>(Hup, Ee, Ee2, qs, hd, F, F2, rowa, rowb, SC_HI, ce1, ce2, cf1, cf2, ne8, ne28, mc7, dwa, dwb);
			if (act_lo) fb_store<KR>(Pp, dwa);
			if (act_hi) fb_store<KR>(Pp + KP, dwb);
			hdiag = hl, oh = Hup[KR - 1], of = F, of2 = F2;
			// the score, H(tlen - 1, qlen - 1), absolute, from the half that holds it on the last row
			if (s >= tlen - 1) {  // (warp-uniform: the last rows come in the pass's last 64 steps)
				const int cql = qlen - 1 - jlo, cqh = qlen - 1 - jhi;
				if (act_lo && ilo == tlen - 1 && (unsigned)cql < (unsigned)KR) {
#pragma unroll
					for (int c = 0; c < KR; ++c)
						if (c == cql) res[RF_SCORE * n_res + jid] = (lo16s(Hup[c]) + fr) >> 3;
				}
				if (act_hi && ihi == tlen - 1 && (unsigned)cqh < (unsigned)KR) {
#pragma unroll
					for (int c = 0; c < KR; ++c)
						if (c == cqh) res[RF_SCORE * n_res + jid] = (hi16s(Hup[c]) + fr) >> 3;
				}
			}
			if (!last && lane == 31 && act_hi) {  // the last virtual lane's row ihi, absolute, for the next pass
				*(int4*)bq = make_int4(hi16s(oh) + fr, hi16s(of) + fr, hi16s(of2) + fr, 0);
				if ((ihi & 15) == 15 || ihi == tlen - 1) {  // rows published 16 at a time
					__threadfence();
					*(volatile int*)&prog[blockIdx.x] = ihi + 1;
				}
			}
		}
	};
	if (p == 0) {
		if (qn) rows(kbool<true>{}, kbool<true>{});
		else rows(kbool<false>{}, kbool<true>{});
	} else {
		if (qn) rows(kbool<true>{}, kbool<false>{});
		else rows(kbool<false>{}, kbool<false>{});
	}
	__syncwarp();
	if (!last) return;  // the last pass backtracks: it ends after every other pass
	__threadfence();
	tb_job(jid, lane, qlenv, tlenv, wv, ebv, flv, dir_off, dir, nullptr, nullptr, cig_off, cig, ncig, res, n_res,
		   NV << 8 | KR | (tr ? 1 << 16 : 0));
}
extern "C" __global__ void __launch_bounds__(32) ksw_extd2_dp_fbr(KSW_FB_PARAMS, int* prog, const ki64* __restrict__ pend)
{
	dp_fbr<KSW_FBP_K / 2>(KSW_FB_ARGS, prog, pend);
}

// ---- backtrack -------------------------------------------------------------------------------
// Start cell (lines 389-398) and ksw_backtrack (ksw2.h:130-162, is_rot = 1, min_intron_len = 0),
// one warp per job (tb_job: fbk > 0 for the jobs of ksw_extd2_dp_fb*, directions at fb_addr).
// The walk is a chain of dependent loads (the anti-diagonal offset, then the
// direction byte), so the warp loads a window of up to 32 cells ahead of the current one in
// parallel (the diagonal band |di - dj| <= 1 after a match, a straight line after a gap) and every
// lane walks it redundantly through __shfl_sync until the path leaves it; then the next window.
// The CIGAR is written in backtrack order (end cell first), run-length merged like
// ksw_push_cigar; ksw_extd2_pack reverses it unless KSW_EZ_REV_CIGAR.

// A walk step is a chain: the cell's byte and the current state give the next state, the state the
// move, the move the next cell. So each lane turns its window cell into two tables when the window
// is loaded, indexed by 6 x state (states 0-4: H, E, F, E2, F2 as ksw_backtrack numbers them):
//   tb_next: 6 x the state after this cell for each state entering it (ksw_backtrack's rule: a gap
//            state continues while its bit of the byte is set, else the byte's own state; a forced
//            cell outside the aligned band sets state 1 or 2);
//   tb_hop:  the lane of the window cell that the move of each state leads to (32: outside the
//            window). Window shapes (tb_job): mode 0, lane 3k + c is (k, k), (k + 1, k), (k, k + 1)
//            for c = 0, 1, 2 cells behind (i, j); mode 1, lane l is (l, 0); mode 2, (0, l).
// A step is then two shuffles and two shift-and-masks: sh = tb_next[l] >> sh & 63, l = tb_hop[l] >> sh & 63.
__device__ __forceinline__ ku32 tb_next(ku32 v)
{
	const int force = (int)(v >> 8), code = (int)(v & 7);
	ku32 t = 0;
#pragma unroll
	for (int s = 0; s < 5; ++s) {
		const int ns = force ? force : s > 0 && (v >> (s + 2) & 1) ? s : code;
		t |= (ku32)(6 * ns) << (6 * s);
	}
	return t;
}
__device__ __forceinline__ ku32 tb_hop(int mode, int lane)
{
	int diag = 32, down = 32, right = 32;  // the moves of H (0), of E/E2 (1, 3: i - 1), of F/F2 (2, 4: j - 1)
	if (mode == 0) {
		const int c = lane % 3;
		diag = lane + 3, down = c == 1 ? 32 : lane + 1, right = c == 2 ? 32 : lane + 2;
	} else if (mode == 1) down = lane + 1;
	else right = lane + 1;
	diag = min(diag, 32), down = min(down, 32), right = min(right, 32);
	return (ku32)diag | (ku32)down << 6 | (ku32)right << 12 | (ku32)down << 18 | (ku32)right << 24;
}
// the CIGAR op of state 6 x s: M for H, D (2, target consumed) for E and E2, I (1) for F and F2
#define TB_OPS (0u | 2u << 6 | 1u << 12 | 2u << 18 | 1u << 24)

// the backtrack of job jid by the calling warp (lane: its lane)
__device__ __forceinline__ void tb_job(
	int jid, int lane, const int* __restrict__ qlenv, const int* __restrict__ tlenv,
	const int* __restrict__ wv, const int* __restrict__ ebv, const int* __restrict__ flv,
	const ki64* __restrict__ dir_off, const ku8* dir, const ki64* __restrict__ doff_off,
	const ku32* doff, const ki64* __restrict__ cig_off, ku32* __restrict__ cig, int* __restrict__ ncig,
	int* __restrict__ res, int n_res, int fbk)
{
#ifdef KSW_SKIP_TB  // timing only (the CIGARs are then wrong): what the backtracks cost
	if (lane == 0) ncig[jid] = 0;
	return;
#endif
	const int qlen = qlenv[jid], tlen = tlenv[jid], w = full_w(wv[jid], qlen, tlen), flag = flv[jid];
	int n = 0;
	if (flag & KSW_EZ_SCORE_ONLY) { if (lane == 0) ncig[jid] = 0; return; }
#if defined(KSW_PROF) && (KSW_PROF_WHAT & 4)
	unsigned long long tbg0;
	PROF_GT(tbg0);
	struct TbProf {  // prints when tb_job returns
		unsigned long long g0; int jid, len;
		__device__ ~TbProf() {
			unsigned long long g1;
			PROF_GT(g1);
			if ((threadIdx.x & 31) == 0 && len > KSW_PROF_TB) printf("TB %d %d %llu %llu\n", jid, len, g0, g1);
		}
	} tbp{tbg0, jid, qlen + tlen};
#endif
	const int zd = res[RF_ZDROPPED * n_res + jid], mx = res[RF_MAX * n_res + jid];
	const int max_t = res[RF_MAX_T * n_res + jid], max_q = res[RF_MAX_Q * n_res + jid];
	const int mqe = res[RF_MQE * n_res + jid], mqe_t = res[RF_MQE_T * n_res + jid];
	int i, j;
	bool go = true;
	if (!zd && !(flag & KSW_EZ_EXTZ_ONLY)) i = tlen - 1, j = qlen - 1;
	else if (!zd && (flag & KSW_EZ_EXTZ_ONLY) && mqe + ebv[jid] > mx) {
		if (lane == 0) res[RF_REACH_END * n_res + jid] = 1;
		i = mqe_t, j = qlen - 1;
	} else if (max_t >= 0 && max_q >= 0) i = max_t, j = max_q;
	else go = false, i = j = -1;
	if (go) {
		// the DP kernel that calls this wrote them: plain loads (not the read-only path)
		const ku8* P = dir + dir_off[jid];
		const ku32* DO = fbk ? doff : doff + doff_off[jid];
		ku32* __restrict__ C = cig + cig_off[jid];
		ku32 cur = 0;  // the last op, len << 4 | op, not yet written (0: none)
		int sh = 0;    // 6 x the state (ksw_backtrack's, 0 at the start cell)
		int last_op = 0;
		while (i >= 0 && j >= 0) {
			// a new window at (i, j), shaped by the last move
			const int mode = last_op == 0 ? 0 : last_op == 2 ? 1 : 2;
			int a, b;
			if (mode == 0) a = lane / 3 + (lane % 3 == 1), b = lane / 3 + (lane % 3 == 2);
			else if (mode == 1) a = lane, b = 0;
			else a = 0, b = lane;
			const int ci = i - a, cj = j - b;
			ku32 val = 0;  // this lane's window cell: direction byte, or (force << 8)
			if (ci >= 0 && cj >= 0 && fbk > 0) {  // a full-band job (dp_fb): no cell is forced; its
				// byte holds 4 - state in bits 0-2 and ksw2's bits 0x08..0x40 at 0x10..0x80 (fbk bit 16: a
				// transposed pass-pipeline job, its cell (cj, ci) and the E / F continuation bits swapped)
				const bool trb = fbk >> 16;
				val = P[trb ? fb_addr(cj, ci, tlen, qlen, fbk & 0xffff) : fb_addr(ci, cj, qlen, tlen, fbk)];
				ku32 cb = val >> 1 & 0x78u;
				if (trb) cb = (cb & 0x28u) << 1 | (cb & 0x50u) >> 1;
				val = cb | (4 - (val & 7u));
			} else if (ci >= 0 && cj >= 0) {  // a ring job, or (fbk < 0) dp_bx's layout, ksw2's byte
				const int rr = ci + cj;
				const int st = band_st0(rr, qlen, w) & ~15, en = (band_en0(rr, tlen, w) & ~15) + 15;
				int force = 0;
				if (ci < st) force = 2;
				if (ci > en) force = 1;
				val = force ? (ku32)force << 8
					  : (ku32)P[fbk < 0 ? bx_addr(ci, cj, qlen, tlen, w) : (ki64)DO[rr] * 16 + (ci - st)];
			}
			const ku32 nxt = tb_next(val), hop = tb_hop(mode, lane);
			int l = 0;
			do {  // the window's cells along the path, from lane 0
				const ku32 tn = __shfl_sync(KSW_FULL_MASK, nxt, l), th = __shfl_sync(KSW_FULL_MASK, hop, l);
				sh = (int)(tn >> sh & 63u);
				l = (int)(th >> sh & 63u);
				const ku32 op = TB_OPS >> sh & 3u;
				i -= op != 1u, j -= op != 2u;
				last_op = (int)op;
				if (cur != 0 && (cur & 0xf) == op) cur += 1u << 4;
				else {
					if (cur != 0) { if (lane == 0) C[n] = cur; ++n; }
					cur = 1u << 4 | op;
				}
			} while (l < 32 && i >= 0 && j >= 0);
		}
		if (i >= 0) {
			if (cur != 0 && (cur & 0xf) == 2) cur += (ku32)(i + 1) << 4;
			else { if (cur != 0) { if (lane == 0) C[n] = cur; ++n; } cur = (ku32)(i + 1) << 4 | 2; }
		}
		if (j >= 0) {
			if (cur != 0 && (cur & 0xf) == 1) cur += (ku32)(j + 1) << 4;
			else { if (cur != 0) { if (lane == 0) C[n] = cur; ++n; } cur = (ku32)(j + 1) << 4 | 1; }
		}
		if (cur != 0) { if (lane == 0) C[n] = cur; ++n; }
	}
	if (lane == 0) ncig[jid] = n;
}

// CIGARs into one array in job order: out[out_off[jid] ...] for each job jid of jlist
extern "C" __global__ void ksw_extd2_pack(const int* __restrict__ jlist, int n_list, const int* __restrict__ flv,
										  const ki64* __restrict__ cig_off, const ku32* __restrict__ cig,
										  const int* __restrict__ ncig, const ki64* __restrict__ out_off,
										  ku32* __restrict__ out)
{
	// a warp per job, its lanes striding over the words (a thread per job had the longest CIGARs, some
	// 10,000+ words, copied word by word: 0.15 ms of E. coli's tail)
	const int k = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
	if (k >= n_list) return;
	const int jid = jlist[k], n = ncig[jid];
	const ku32* __restrict__ src = cig + cig_off[jid];
	ku32* __restrict__ dst = out + out_off[jid];
	if (flv[jid] & KSW_EZ_REV_CIGAR)
		for (int i = lane; i < n; i += 32) dst[i] = src[i];
	else
		for (int i = lane; i < n; i += 32) dst[i] = src[n - 1 - i];
}

// ---- planning (no host pass over the jobs) -----------------------------------------------------
// ksw_extd2_plan: one thread per job k of the call (batch job jidx[k], or k when all). Gathers the per-job
// inputs, sizes the job (the compact direction bytes: the smaller of ksw2's own direction
// allocation, ksw2_extd2_sse.c:94, 122, (qlen+tlen-1)*n_col*16, and the band cells + 30 per
// anti-diagonal; n_col*16 bounds the widest aligned band, which sizes the ring: a power of two
// >= width + 32 and >= 64), counts its band cells
// (|i-j| <= w, closed form), writes ksw_reset_extz's values as its result (kept by jobs that never
// reach the DP: qlen or tlen <= 0, or dead_all, the matrix early return of line 100) and adds
// the live jobs' cells, count and device bytes to tot[0..2].
//   o32 rows: qlen tlen w zdrop end_bonus flag ring_lg width class   (class: ksw_extd2_class)
//   o64 rows: qst tst dir_off doff_off cig_off ring_off              (offsets: ksw_extd2_offsets)
//   sz rows:  need dir_bytes n_diag+1 n_diag+3 ring_bytes cells       (cells -1 for dead jobs;
//             the sizes are in bytes, uint32 words, uint32 words and bytes)
#define KSW_SMEM_MAX_LG 14
#define KSW_REG_CLS 30  // first class of the register kernels
#define KSW_FB_CLS 40   // first class of the full-band kernels (K = FB_KS, then a block per pass)
#define KSW_FB_NK 7     // entries of FB_KS
__constant__ int FB_KS[KSW_FB_NK] = {4, 5, 6, 8, 10, 12, 16};  // as FB_K of the launcher and KSW_DP_FB below
#define KSW_FBH_CLS (KSW_FB_CLS + KSW_FB_NK + 1)  // ksw_extd2_dp_fbh16 (after ksw_extd2_dp_fbp)
#define KSW_FB2_CLS (KSW_FBH_CLS + 1)  // ksw_extd2_dp_fb<K>x2 (K = FB_KS), then ksw_extd2_dp_fbh<K>x2
#define KSW_FBH2_K0 13                 // (K = 13 .. 16)
#define KSW_RP_CLS 60  // ksw_extd2_dp_rp<KC>: the ring pipeline
#define KSW_FBX_CLS 61  // ksw_extd2_dp_fbx: big exact full-band jobs in the pass pipeline
#define KSW_FBB_CLS 62  // ksw_extd2_dp_fbb: big band-limited exact jobs in the pass pipeline
#define KSW_NCLS 64  // (16, 4, 1 warps) x (rings 2^14 .. 2^6 in shared memory, global), register
                    // kernels (rings 2^6 .. 2^10, APPROX_MAX or exact), full-band kernels (int32, then
                    // two jobs per lane), the ring pipeline, the exact pass pipeline, + dead jobs
#define KSW_TOT_MID8 5  // tot[5 ..]: the middle team's long jobs per ring class (10 entries, ksw_extd2_class)
// Upload waves (the launcher's WAVES): the sequences go up in up to KSW_WAVES slices, wave w ending at byte
// qend[w] of the queries and tend[w] of the targets (the waves before it hold everything below), and the
// throughput classes (one-warp rings, register and full-band kernels, not the teams or pipelines) run each
// wave's jobs in a launch that waits only for that wave. A job's wave (o32 row 9) is the first whose ends
// lie KSW_WAVE_PAD bytes past both of its sequences (the kernels' word loads read a few bytes past a
// sequence's end), whatever the order of the offsets; in its sort key the wave sits above the size
// (KSW_WAVE_SHIFT), first wave first.
#define KSW_WAVES 4
#define KSW_WAVE_SHIFT 36
#define KSW_WAVE_PAD 64
static_assert(KSW_NCLS * KSW_WAVES == 256, "ksw_extd2_offsets: a thread per class and wave");
__device__ __forceinline__ bool ksw_wave_cls(int cls)
{
	return cls >= 20 && cls < KSW_RP_CLS && cls != KSW_FB_CLS + KSW_FB_NK;
}

__device__ __forceinline__ ki64 outside_band(ki64 a, ki64 b, ki64 w)
{  // cells with col - row > w in an a-row x b-column matrix
	ki64 k = b - w - 1;
	if (k < 0) k = 0;
	const ki64 rows = a < k ? a : k;
	return rows * k - rows * (rows - 1) / 2;
}

extern "C" __global__ void __launch_bounds__(256) ksw_extd2_plan(
	int m, const ki64* __restrict__ jidx, const ki64* __restrict__ qoff, const ki64* __restrict__ toff,
	const int* __restrict__ wv, const int* __restrict__ zdv, const int* __restrict__ ebv, const int* __restrict__ flv,
	int dead_all, int* __restrict__ o32, ki64* __restrict__ o64, ki64* __restrict__ sz, int* __restrict__ res,
	unsigned long long* __restrict__ tot, int all, const ki64* __restrict__ wend, int nwe)
{
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	ki64 cells = 0, need = 0, live = 0;
	if (k < m) {
		const ki64 b = all ? k : jidx[k];
		const ki64 qs = qoff[b], ts = toff[b], q = qoff[b + 1] - qs, t = toff[b + 1] - ts;
		const int w = wv[b], fl = flv[b];
		live = !dead_all && q > 0 && t > 0;
		ki64 db = 0, diag = 0, ring = 0, width = 0;
		int lg = 6;
		if (live) {
			const ki64 ww = w < 0 ? (q > t ? q : t) : (ki64)w;
			ki64 mn = q < t ? q : t;
			if (ww + 1 < mn) mn = ww + 1;
			const ki64 n_col = (mn + 15) / 16 + 1;
			width = n_col * 16;
			const ki64 rn = width + 32 > 64 ? width + 32 : 64;
			lg = 64 - __clzll(rn - 1);
			cells = q * t - outside_band(t, q, ww) - outside_band(q, t, ww);
			// direction bytes: anti-diagonal r stores en - st + 1 = (en0 & ~15) + 16 - (st0 & ~15)
			// <= (en0 - st0 + 1) + 30 bytes, and the en0 - st0 + 1 sum to the band cells; ksw2's own
			// allocation bound is the other bound (both are multiples of 16)
			ki64 tight = (cells + 30 * (q + t - 1) + 15) / 16 * 16;
			db = (q + t - 1) * n_col * 16;
			if (tight < db) db = tight;
			if (fl & KSW_EZ_SCORE_ONLY) db = 0;
			diag = q + t;
			ring = lg > KSW_SMEM_MAX_LG ? (ki64)RING_BYTES_PER_SLOT << lg : 0;
			need = db + 4 * diag + 4 * (diag + 2) + ring + 64;
		}
		o32[0 * m + k] = (int)q, o32[1 * m + k] = (int)t, o32[2 * m + k] = w, o32[3 * m + k] = zdv[b];
		o32[4 * m + k] = ebv[b], o32[5 * m + k] = fl, o32[6 * m + k] = lg, o32[7 * m + k] = (int)width;
		int wave = 0;  // upload wave: waves 0 .. nwe - 1 end at wend[w] (queries), wend[nwe + w] (targets)
		for (int i = 0; i < nwe; ++i) wave += qs + q + KSW_WAVE_PAD > wend[i] || ts + t + KSW_WAVE_PAD > wend[nwe + i];
		o32[9 * m + k] = wave;
		o64[0 * m + k] = qs, o64[1 * m + k] = ts;
		sz[0 * (ki64)m + k] = need, sz[1 * (ki64)m + k] = db, sz[2 * (ki64)m + k] = live ? diag : 0;
		sz[3 * (ki64)m + k] = live ? diag + 2 : 0, sz[4 * (ki64)m + k] = ring, sz[5 * (ki64)m + k] = live ? cells : -1;
		// ksw_reset_extz (ksw2.h:164-169); row 10 is the CIGAR length
		res[RF_MAX * m + k] = 0, res[RF_MAX_Q * m + k] = -1, res[RF_MAX_T * m + k] = -1;
		res[RF_MQE * m + k] = KSW_NEG_INF, res[RF_MQE_T * m + k] = -1, res[RF_MTE * m + k] = KSW_NEG_INF;
		res[RF_MTE_Q * m + k] = -1, res[RF_SCORE * m + k] = KSW_NEG_INF, res[RF_ZDROPPED * m + k] = 0;
		res[RF_REACH_END * m + k] = 0, res[10 * m + k] = 0;
	}
	cells = warp_sum64(cells), live = warp_sum64(live), need = warp_sum64(need);
	if ((threadIdx.x & 31) == 0 && live) {
		atomicAdd(tot + 0, (unsigned long long)cells);
		atomicAdd(tot + 1, (unsigned long long)live);
		atomicAdd(tot + 2, (unsigned long long)need);
	}
}

// the sizes of job k (of m) that leaves the rings for a pass-layout kernel: db direction bytes, no
// anti-diagonal offsets, its backtrack's CIGAR words as before (sz row 3), ring bytes of pass buffers
// and keys; tot[2] (the call's bytes) follows the change
__device__ __forceinline__ void pass_sizes(ki64* __restrict__ sz, int m, int k, ki64 db, ki64 ring,
										   unsigned long long* __restrict__ tot)
{
	const ki64 need = db + 4 * (sz[3 * (ki64)m + k]) + ring + 64;
	atomicAdd(tot + 2, (unsigned long long)(need - sz[0 * (ki64)m + k]));  // wraps when smaller
	sz[0 * (ki64)m + k] = need, sz[1 * (ki64)m + k] = db, sz[2 * (ki64)m + k] = 0;
	sz[4 * (ki64)m + k] = ring;
}

// ksw_extd2_class: launch class and sort key of each job. A job with more than big_share of the
// call's cells is on the critical path and gets a middle team (8 warps of one word per thread, or 4
// of two: the launcher's choice) or 16 warps when its band is wide enough, so does (the middle
// team) one with a ring of 2^wide_lg slots or more in shared memory; the rest get one warp. One-warp jobs with a ring below 2^lfloor slots run in rings of 2^lfloor
// (the ring size of a block of 8 such warps; a larger ring only moves the slots, not the values).
// class = 10 * (0, 1, 2 for 16, middle, 1 warps) + (14 - ring lg, or 9 for a ring in global memory);
// one-warp jobs with a ring of at most 2^reg_lg slots (reg_lg <= 10; 0: none) instead take the
// register kernels: class KSW_REG_CLS + 2 * (ring lg - 6) + (1 exact, 0 APPROX_MAX);
// With fb on, a job whose band covers the matrix and whose flags are APPROX_MAX (and REV_CIGAR)
// takes ksw_extd2_dp_fb<K> instead, K of FB_KS as qlen needs (class KSW_FB_CLS + its index), or
// ksw_extd2_dp_fbp (K = KSW_FBP_K, a block per pass; tot[3]: the most passes) when it is big and
// takes several passes of K = 16 (+ KSW_FB_NK), or when it has fbp_rows target rows or more (0:
// none) and cannot take the two-jobs-per-lane form (its latency is its rows times a step, and a lone
// warp of a throughput class gets a small share of its SM), or with fb & 2 ksw_extd2_dp_fbh16 (KSW_FBH_CLS)
// when it is not big and has at most 256 columns; its sizes become that
// kernel's (direction layout of fb_addr, no anti-diagonal offsets, pass buffers of 16 bytes per
// row in the ring arena when it takes several passes) and tot[2] follows. Such a job of one pass
// that is not big and has qlen + tlen <= fb >> 8 (the launcher's 16-bit bound; 0: none) takes the
// same kernel's two-jobs-per-lane form, ksw_extd2_dp_fb<K>x2 (KSW_FB2_CLS + its index) or
// ksw_extd2_dp_fbh<K>x2 (KSW_FB2_CLS + KSW_FB_NK + K - 13, K the fewest of 13..16 that cover the
// query), sized likewise. With fb & 8, a big (or team-sized) band-limited exact job that is not
// GENERIC_SC and has w >= 32 takes ksw_extd2_dp_fbb (KSW_FBB_CLS; its arenas: dp_bx). With rp = KC > 0, an exact job (no APPROX_MAX) that would get a team takes the
// ring pipeline instead (KSW_RP_CLS, ksw_extd2_dp_rp<KC>): its ring arena holds the chunks' handover
// slots and records (dp_rp). KSW_NCLS - 1 for jobs that do not run. key: the class, then the band
// cells, largest first (the middle team: its anti-diagonals, and bit 39 set for the long jobs that
// the launcher gives 8 warps, so that a coarse order, ksw_extd2_bins_*, keeps them first too).
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_class(int m, ki64* __restrict__ sz, int* __restrict__ o32,
																  unsigned long long* __restrict__ tot,
																  double big_share, int lfloor, int reg_lg, int fb,
																  int wide_lg, int fbp_rows, int rp, double mid8,
																  ki64* __restrict__ key)
{
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k >= m) return;
	const ki64 cells = sz[5 * (ki64)m + k];
	int cls = KSW_NCLS - 1;
	if (cells >= 0) {
		const int lg = o32[6 * m + k], width = o32[7 * m + k];
		const bool big = (double)cells > big_share * (double)tot[0];
		const int steps = (width + 127) / 128;
		// a job that is not big but whose ring (in shared memory) has 2^wide_lg slots or more, a
		// band-limited extension, also gets the middle team (from 3 steps of 128 slots per anti-diagonal)
		// unless the register kernels take it: a single warp's steps per anti-diagonal made such
		// jobs the critical path of a batch
		const bool wide = wide_lg > 0 && lg >= wide_lg && lg <= KSW_SMEM_MAX_LG && !(lg <= reg_lg && lg <= 10);
		const int team = big && steps >= 24 ? 16 : (big && steps >= 6) || (wide && steps >= 3) ? 4 : 1;
		const bool smem = lg <= KSW_SMEM_MAX_LG;
		const int L = team == 1 && smem && lg < lfloor ? lfloor : lg;
		const int ql = o32[0 * m + k], tl = o32[1 * m + k], w = o32[2 * m + k], fl = o32[5 * m + k];
		const bool fullb = w < 0 || w >= (ql > tl ? ql : tl) - 1;
		// (fb & 4) a big exact one (flags 0, EXTZ_ONLY, REV_CIGAR): the pass pipeline with the books (fbx)
		const bool fbx = (fb & 4) && big && fullb && (fl & ~(KSW_EZ_REV_CIGAR | KSW_EZ_EXTZ_ONLY)) == 0;
		if ((fb & 1) && fullb && ((fl & ~KSW_EZ_REV_CIGAR) == KSW_EZ_APPROX_MAX || fbx)) {
			// the fewest columns per lane (of FB_KS) that cover the query in one pass, or the most
			int ki = 0;
			while (ki < KSW_FB_NK - 1 && 32 * FB_KS[ki] < ql) ++ki;
			// a big job of several passes: a block per pass of KSW_FBP_K columns per lane (a short
			// step: the pipeline's time is its rows times the step's latency)
			// or a long one over the 16-bit bound (rows of a single warp otherwise)
			const bool fits16 = ql <= 32 * FB_KS[ki] && ql + tl <= (fb >> 8);
			const bool pipe = fbx || (big && 32 * FB_KS[ki] < ql) || (fbp_rows > 0 && tl >= fbp_rows && !fits16);
			// (fb & 2) a job of at most 16 x 16 columns that is not big: 16 lanes of 16 (two jobs per
			// warp; fewer steps per job but longer ones: a big job's latency would grow)
			const bool half = (fb & 2) && ql <= 16 * 16 && !big && !pipe;
			const bool x2 = !big && fits16;  // (not pipe: a job that is not big takes it only when it does not fit)
			int kh = 16;  // half: 16 columns per lane, or with x2 the fewest of 13..16 that cover the query
			while (x2 && kh > KSW_FBH2_K0 && 16 * (kh - 1) >= ql) --kh;
			// (fb & 16) the pass pipeline in 16-bit halves (ksw_extd2_dp_fbr): 64 virtual lanes of KSW_FBP_K / 2
			// columns, the same passes
			const bool fbr = pipe && !fbx && (fb & 16);
			const int NL = fbr ? 64 : half ? 16 : 32, K = fbr ? KSW_FBP_K / 2 : pipe ? KSW_FBP_K : half ? kh : FB_KS[ki];
			const int W = NL * K;
			const bool tr = pipe && !fbx && fb_tr(ql, tl);  // (columns and rows of the DP as it runs)
			const int cq = tr ? tl : ql, rt = tr ? ql : tl;
			const int npass = fb_npass(cq, W);
			const ki64 lanes = (ki64)(npass - 1) * NL + (cq - (npass - 1) * W + K - 1) / K;
			const ki64 db = (lanes * (rt + NL - 1) * fb_kp(K) + 15) / 16 * 16;
			// (fbx: the pass buffers, the passes' keys of tl + W - 1 steps, then H of the last column and row)
			const ki64 ring = fbx ? ((16 * (ki64)tl + 8 * (ki64)(tl + W - 1)) * npass + 4 * ((ki64)tl + ql) + 15) / 16 * 16
							: npass > 1 ? 16 * (ki64)rt * (pipe ? npass : 1) : 0;
			if (pipe) atomicMax(tot + 3, (unsigned long long)(npass + fbx));
			pass_sizes(sz, m, k, db, ring, tot);
			cls = fbx ? KSW_FBX_CLS : x2 ? KSW_FB2_CLS + (half ? KSW_FB_NK + kh - KSW_FBH2_K0 : ki)
					 : half ? KSW_FBH_CLS : KSW_FB_CLS + (pipe ? KSW_FB_NK : ki);
		} else if ((fb & 8) && !fullb && w >= 32 && (big || team > 1) && !(fl & (KSW_EZ_APPROX_MAX | KSW_EZ_GENERIC_SC))) {
			// (fb & 8) a band-limited exact one that is big or would get a team: rows in the pass pipeline (dp_bx),
			// its direction bytes per pass (bx_addr), the pass buffers (8 bytes per row and pass), the
			// passes' keys, then H of the last column and row
			const int npass = bx_npass(ql);
			const ki64 db = (ki64)npass * bx_stride(w, tl);
			const ki64 ring = ((8 * (ki64)tl + 8 * bx_nsx(w, tl)) * npass + 4 * ((ki64)tl + ql) + 15) / 16 * 16;
			atomicMax(tot + 3, (unsigned long long)(npass + 1));
			pass_sizes(sz, m, k, db, ring, tot);
			cls = KSW_FBB_CLS;
		} else if (rp > 0 && team > 1 && !(fl & KSW_EZ_APPROX_MAX)) {
			const int C = 128 * rp, wf = full_w(w, ql, tl), rlast = rp_rlast(ql, tl, wf);
			const int nch = rp_nch(C, tl, wf, rlast);
			const ki64 ring = (ki64)nch * (rp_len(C, ql, tl, wf) + 1) * RP_REC * 4;
			atomicAdd(tot + 4, (unsigned long long)nch);
			atomicAdd(tot + 2, (unsigned long long)(ring - sz[4 * (ki64)m + k]));  // wraps when smaller
			sz[0 * (ki64)m + k] += ring - sz[4 * (ki64)m + k], sz[4 * (ki64)m + k] = ring;
			cls = KSW_RP_CLS;
		} else if (team == 1 && lg <= reg_lg && lg <= 10)
			cls = KSW_REG_CLS + 2 * (lg - 6) + !(o32[5 * m + k] & KSW_EZ_APPROX_MAX);
		else cls = (team == 16 ? 0 : team == 4 ? 10 : 20) + (smem ? KSW_SMEM_MAX_LG - L : 9);
	}
	o32[8 * m + k] = cls;
	const ki64 CM = (1LL << 40) - 1, C39 = (1LL << 39) - 1;  // (bit 39: the middle team's long jobs)
	ki64 c = cells < 0 ? 0 : cells > C39 ? C39 : cells;
	if (cls >= 10 && cls < 20) {  // the middle team, longest first: a job of more than tot[0] / mid8
		// anti-diagonals is long enough to be the call's critical path (counted per class: the
		// launcher gives those 8 warps, the rest 4)
		c = o32[0 * m + k] + o32[1 * m + k] - 1;
		if (mid8 > 0 && (double)c * mid8 > (double)tot[0]) {
			atomicAdd(tot + KSW_TOT_MID8 + cls - 10, 1ULL);
			c |= 1LL << 39;
		}
	}
	if (ksw_wave_cls(cls)) {  // the upload wave above the size, the first wave first
		const ki64 SM = (1LL << KSW_WAVE_SHIFT) - 1;
		c = (ki64)(KSW_WAVES - 1 - o32[9 * m + k]) << KSW_WAVE_SHIFT | (c > SM ? SM : c);
	}
	key[k] = ((ki64)cls << 40) | (CM - c);
}

// ksw_extd2_bins_*: the launch order of a call's jobs without a sort (the launcher's, for a call
// in one chunk). A job's bin is its class, then (the middle team) whether it is long, then its size
// (key's low 39 bits) on a log scale of 8 steps an octave, largest first: count the bins, scan them
// (one block), place each job at its bin's next slot. Within a bin the order is the atomics': any
// order gives the same results (a job's results do not depend on where or when it runs); the order
// only decides which jobs start first. (A thrust argsort took 0.2-0.4 ms and synchronised the host.)
#define KSW_BIN_BITS 10
#define KSW_NBINS (KSW_NCLS << KSW_BIN_BITS)
#define KSW_BINS_THREADS 1024
__device__ __forceinline__ unsigned ksw_bin(ki64 key)
{
	const ki64 CM = (1LL << 40) - 1, c = CM - (key & CM);
	const int cls = (int)(key >> 40);
	const bool wv = ksw_wave_cls(cls);  // (then 256 bins per upload wave, sizes from 2^32 on in one)
	const unsigned long long s = (unsigned long long)(c & ((1LL << (wv ? KSW_WAVE_SHIFT : 39)) - 1)) + 1;
	const int lz = __clzll((long long)s);
	const unsigned lv = (unsigned)(63 - lz) << 3 | (unsigned)((s << lz) >> 60 & 7);  // < 320
	if (wv)
		return (unsigned)cls << KSW_BIN_BITS | (unsigned)(KSW_WAVES - 1 - (int)(c >> KSW_WAVE_SHIFT & 3)) << 8 |
			   (255u - min(lv, 255u));
	return (unsigned)cls << KSW_BIN_BITS | ((c >> 39) & 1 ? 0u : 512u) | (511u - lv);
}
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_bins_count(int m, const ki64* __restrict__ key,
																	   unsigned* __restrict__ cnt)
{
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < m) atomicAdd(cnt + ksw_bin(key[k]), 1u);
}
// one block of KSW_BINS_THREADS threads: the counts become each bin's first slot (exclusive sum);
// a thread's bins in 16-byte loads, all in flight at once (the scan is one block's latency), read again
// for the write-back (from L1: keeping them would spill under the 64 registers of 1024 threads)
extern "C" __global__ void __launch_bounds__(KSW_BINS_THREADS) ksw_extd2_bins_scan(unsigned* __restrict__ cnt)
{
	constexpr int PER = KSW_NBINS / KSW_BINS_THREADS / 4;  // uint4 per thread
	__shared__ unsigned part[KSW_BINS_THREADS];
	const int t = threadIdx.x;
	uint4* mine = reinterpret_cast<uint4*>(cnt) + t * PER;
	unsigned sum = 0;
#pragma unroll
	for (int i = 0; i < PER; ++i) {
		const uint4 v = __ldcg(mine + i);  // (an L2 load: the write-back's loads are not merged with these)
		sum += v.x + v.y + v.z + v.w;
	}
	part[t] = sum;
	block_inclusive_sum<KSW_BINS_THREADS>(part, t);
	unsigned run = part[t] - sum;
#pragma unroll
	for (int i = 0; i < PER; ++i) {
		const uint4 v = mine[i];
		uint4 o;
		o.x = run, run += v.x;
		o.y = run, run += v.y;
		o.z = run, run += v.z;
		o.w = run, run += v.w;
		mine[i] = o;
	}
}
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_bins_place(int m, const ki64* __restrict__ key,
																	   unsigned* __restrict__ cur, ki64* __restrict__ lst)
{
	const int k = blockIdx.x * blockDim.x + threadIdx.x;
	if (k < m) lst[atomicAdd(cur + ksw_bin(key[k]), 1u)] = k;
}

// ksw_extd2_offsets: the jobs lst[0..n) of a chunk, in launch order, get their arena offsets
// (sz rows 1..4: directions, anti-diagonal offsets, CIGAR words, ring bytes): a warp's jobs are
// consecutive, each warp takes its span of each arena from the running totals acc[KSW_NCLS + r]
// (so the arenas' sizes are those totals, and the spans of different warps come in any order);
// also lst as int32 and the per-class job counts acc[0 .. KSW_NCLS). acc[0 .. KSW_NCLS + 4) is
// zeroed by the caller; likewise the jobs per class and upload wave, wacc[KSW_WAVES * class + wave].
extern "C" __global__ void __launch_bounds__(256) ksw_extd2_offsets(int n, const ki64* __restrict__ lst,
																	const ki64* __restrict__ sz, ki64* __restrict__ o64,
																	const int* __restrict__ o32, int m, int* __restrict__ lst32,
																	unsigned long long* __restrict__ acc,
																	unsigned long long* __restrict__ wacc)
{
	__shared__ unsigned int h[KSW_NCLS], hw[KSW_NCLS * KSW_WAVES];
	if (threadIdx.x < KSW_NCLS) h[threadIdx.x] = 0;
	hw[threadIdx.x] = 0;  // (256 threads, KSW_NCLS * KSW_WAVES entries)
	__syncthreads();
	const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
	const bool in = i < n;
	const ki64 j = in ? lst[i] : 0;
	if (in) {
		lst32[i] = (int)j;
		const int c = o32[8 * m + j];
		atomicAdd(&h[c], 1u);
		atomicAdd(&hw[c * KSW_WAVES + o32[9 * m + j]], 1u);
	}
#pragma unroll
	for (int r = 0; r < 4; ++r) {
		const ki64 s = in ? sz[(1 + r) * (ki64)m + j] : 0;
		ki64 x = s;  // inclusive sum over the warp's lanes
#pragma unroll
		for (int d = 1; d < 32; d <<= 1) {
			const ki64 y = __shfl_up_sync(KSW_FULL_MASK, x, d);
			if (lane >= d) x += y;
		}
		unsigned long long base = 0;
		if (lane == 31) base = atomicAdd(acc + KSW_NCLS + r, (unsigned long long)x);
		base = __shfl_sync(KSW_FULL_MASK, base, 31);
		if (in) o64[(2 + r) * (ki64)m + j] = (ki64)base + x - s;
	}
	__syncthreads();
	if (threadIdx.x < KSW_NCLS && h[threadIdx.x]) atomicAdd(acc + threadIdx.x, (unsigned long long)h[threadIdx.x]);
	if (hw[threadIdx.x]) atomicAdd(wacc + threadIdx.x, (unsigned long long)hw[threadIdx.x]);
}
