// The CPU emulator's scheduler and the synchronisation of shim.h: every CUDA thread of a block is a
// fiber on a stack of its own, switched by hand (x86-64 SysV); build.py links this with the kernel
// file and its launch wrappers, and tests/emu/fakecupy calls those through ctypes.
#include "shim.h"
#include <cstdarg>
#include <cstdio>
#include <string>
#include <sys/mman.h>
#include <vector>

unsigned g_tid, g_block, g_bdim;

// saves the callee-saved registers and the stack pointer in *save_sp, resumes the fiber at new_sp
extern "C" void emu_switch(void **save_sp, void *new_sp);
asm(R"(
.text
.globl emu_switch
.type emu_switch,@function
emu_switch:
	pushq %rbp
	pushq %rbx
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	movq %rsp, (%rdi)
	movq %rsi, %rsp
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbx
	popq %rbp
	ret
)");

static const int MAXT = 1024;          // threads per block, as on the GPU
static const size_t STK = 256 << 10;   // stack per fiber, above a PROT_NONE guard page
static void *main_sp, *fsp[MAXT];
static char *stacks[MAXT];
static int done[MAXT], ndone, nthr, cur;
static const char *waits[MAXT];        // what each fiber waits on (for the deadlock report)
static std::function<void()> fn;
static const char *kname = "";
static long idle;                      // time slices that ended in the wait they began in
static int failed;
static std::string errmsg;

static inline void yield_() { emu_switch(&fsp[cur], main_sp); }

// records the first error of the launch and parks the fiber; the scheduler then ends the launch
static void fail(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (!failed) errmsg = std::string("emu: [") + kname + " block " + std::to_string(g_block) + " thread " +
	                      std::to_string(cur) + "] " + buf;
	failed = 1;
	for (;;) yield_();
}

template <class F> static inline void wait_until(const char *what, F ready)
{
	waits[cur] = what;
	if (!ready())
		for (;;) {
			yield_();
			if (ready()) break;
			++idle;
		}
	waits[cur] = nullptr;
}

// ---- warp collectives: the lanes of one mask meet, the last to arrive computes all results ----
struct Warp {
	unsigned mask[32];     // the mask a lane waits with (0: not waiting)
	int kind[32], arg[32], width[32];
	uint32_t val[32], res[32];
	unsigned rel[32];      // how often each lane was released
};
static Warp warps[MAXT / 32];

static void release(Warp &W, int w, unsigned mask)
{
	const int l0 = __builtin_ctz(mask), kind = W.kind[l0];
	for (int l = 0; l < 32; ++l)
		if ((mask >> l & 1) && (W.kind[l] != kind || W.width[l] != W.width[l0]))
			fail("lanes %d and %d of warp %d meet on mask %08x in different collectives", l0, l, w, mask);
	if (kind == EMU_SHFL) {
		// shfl.sync.idx (PTX ISA): the source lane within the caller's segment of `width` lanes
		const unsigned seg = (unsigned)(32 - W.width[l0]) & 31;
		for (int l = 0; l < 32; ++l) {
			if (!(mask >> l & 1)) continue;
			const int j = (int)(((unsigned)l & seg) | ((unsigned)W.arg[l] & 31 & ~seg));
			if (!(mask >> j & 1))
				fail("lane %d of warp %d (mask %08x, width %d) reads lane %d outside the mask", l, w, mask, W.width[l], j);
			W.res[l] = W.val[j];
		}
	} else {
		uint32_t a = W.val[l0];
		for (int l = l0 + 1; l < 32; ++l) {
			if (!(mask >> l & 1)) continue;
			const uint32_t x = W.val[l];
			switch (kind) {
			case EMU_MIN_I: a = (int32_t)x < (int32_t)a ? x : a; break;
			case EMU_MIN_U: a = x < a ? x : a; break;
			case EMU_MAX_I: a = (int32_t)x > (int32_t)a ? x : a; break;
			default: a = x > a ? x : a; break;
			}
		}
		for (int l = 0; l < 32; ++l)
			if (mask >> l & 1) W.res[l] = a;
	}
	for (int l = 0; l < 32; ++l)
		if (mask >> l & 1) W.mask[l] = 0, ++W.rel[l];
}

uint32_t emu_collective(unsigned mask, int kind, uint32_t v, int arg, int width)
{
	const int w = cur >> 5, l = cur & 31;
	Warp &W = warps[w];
	if (!(mask >> l & 1)) fail("lane %d calls a collective with mask %08x, which does not name it", l, mask);
	if (width < 1 || width > 32 || (width & (width - 1))) fail("shuffle width %d is not a power of 2 up to 32", width);
	W.val[l] = v, W.kind[l] = kind, W.arg[l] = arg, W.width[l] = width, W.mask[l] = mask;
	const unsigned r0 = W.rel[l];
	wait_until("a warp collective", [&] {
		if (W.rel[l] != r0) return true;
		for (int k = 0; k < 32; ++k) {
			if (!(mask >> k & 1)) continue;
			if (w * 32 + k >= nthr || done[w * 32 + k])
				fail("mask %08x of warp %d names lane %d, which has exited or is not in the block", mask, w, k);
			if (W.mask[k] != mask) return false;
		}
		release(W, w, mask);
		return true;
	});
	return W.res[l];
}

// ---- __syncthreads over the threads that have not exited ----
static int bar_count;
static unsigned bar_gen;

void __syncthreads()
{
	const unsigned g0 = bar_gen;
	++bar_count;
	wait_until("__syncthreads", [&] {
		if (bar_gen != g0) return true;
		if (bar_count < nthr - ndone) return false;
		bar_count = 0, ++bar_gen;
		return true;
	});
}

// ---- the buffers __ldg may read ----
struct Region { const char *lo, *hi; };
static std::vector<Region> regions;

void emu_check_ptr(const void *p, size_t n)
{
	const char *c = (const char *)p;
	for (const Region &r : regions)
		if (c >= r.lo && c + n <= r.hi) return;
	fail("__ldg of %zu bytes at %p outside every array argument", n, p);
}

extern "C" void emu_set_regions(const void *const *ptr, const size_t *size, int n)
{
	regions.clear();
	for (int i = 0; i < n; ++i) regions.push_back(Region{(const char *)ptr[i], (const char *)ptr[i] + size[i]});
}

extern "C" const char *emu_last_error() { return errmsg.c_str(); }

// ---- the scheduler: round-robin over the block's fibers until all have exited ----
static void entry()
{
	fn();
	done[cur] = 1;
	++ndone;
	for (;;) yield_();
}

int emu_launch(const char *name, unsigned grid, unsigned block, std::function<void()> f)
{
	failed = 0, errmsg.clear(), kname = name;
	if (block < 1 || block > (unsigned)MAXT) {
		errmsg = std::string("emu: ") + name + ": a block of " + std::to_string(block) + " threads";
		return 1;
	}
	fn = f, g_bdim = block, nthr = (int)block;
	for (unsigned t = 0; t < block; ++t)
		if (!stacks[t]) {
			char *m = (char *)mmap(nullptr, STK + 4096, PROT_READ | PROT_WRITE,
			                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (m == MAP_FAILED) { perror("emu: mmap"); abort(); }
			mprotect(m, 4096, PROT_NONE);
			stacks[t] = m + 4096;
		}
	for (unsigned b = 0; b < grid && !failed; ++b) {
		g_block = b;
		memset(warps, 0, sizeof(Warp) * ((block + 31) / 32));
		bar_count = 0, bar_gen = 0, ndone = 0;
		for (unsigned t = 0; t < block; ++t) {
			void **top = (void **)(stacks[t] + STK);
			top[-1] = nullptr;                              // entry's (never used) return address
			top[-2] = (void *)&entry;                       // where emu_switch's ret goes
			for (int i = 3; i <= 8; ++i) top[-i] = nullptr;  // rbp rbx r12 r13 r14 r15
			fsp[t] = (void *)(top - 8);
			done[t] = 0, waits[t] = nullptr;
		}
		while (!failed && ndone < nthr) {
			long slices = 0;
			idle = 0;
			for (int t = 0; t < nthr && !failed; ++t) {
				if (done[t]) continue;
				cur = t, g_tid = (unsigned)t, ++slices;
				emu_switch(&main_sp, fsp[t]);
			}
			if (!failed && idle == slices) {   // a whole round in which no fiber got past its wait
				errmsg = std::string("emu: [") + name + " block " + std::to_string(b) + "] deadlock:";
				for (int t = 0; t < nthr; ++t)
					if (!done[t]) errmsg += " thread " + std::to_string(t) + " waits on " + waits[t] + ";";
				failed = 1;
			}
		}
	}
	fn = nullptr;
	return failed;
}
