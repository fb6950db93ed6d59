// The CPU emulator's scheduler and the synchronisation of shim.h: every CUDA thread of a block is a
// fiber on a stack of its own, switched by hand (x86-64 SysV); build.py links this with the kernel
// file and its launch wrappers, and tests/emu/fakecupy calls those through ctypes. A memory fault
// during a launch (fakecupy's device arrays and the dynamic shared memory end at inaccessible pages)
// is reported with the kernel, block and thread before the process dies of it.
#include "shim.h"
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

unsigned g_tid, g_block, g_bdim, g_grid;
char *emu_dyn_shared;

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
	unsigned waiting;      // the lanes whose mask[] is set, so that a lane tests for all of its mask at once
	unsigned gone;         // the lanes that have exited or are not in the block
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
	if (kind == EMU_SHFL || kind == EMU_SHFL_UP || kind == EMU_SHFL_DOWN) {
		// shfl.sync (PTX ISA): the source lane within the caller's segment of `width` lanes; up and
		// down read their own value where the source would leave the segment
		const int seg = (32 - W.width[l0]) & 31;
		for (int l = 0; l < 32; ++l) {
			if (!(mask >> l & 1)) continue;
			const int b = W.arg[l] & 31, lo = l & seg, hi = lo | (31 & ~seg);
			int j = kind == EMU_SHFL ? lo | (b & ~seg) : kind == EMU_SHFL_UP ? l - b : l + b;
			if (j < lo || j > hi) j = l;
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
			case EMU_MAX_U: a = x > a ? x : a; break;
			case EMU_ANY: a |= x; break;
			default: break;   // EMU_SYNC: no value
			}
		}
		for (int l = 0; l < 32; ++l)
			if (mask >> l & 1) W.res[l] = a;
	}
	for (int l = 0; l < 32; ++l)
		if (mask >> l & 1) W.mask[l] = 0, ++W.rel[l];
	W.waiting &= ~mask;
}

uint32_t emu_collective(unsigned mask, int kind, uint32_t v, int arg, int width)
{
	const int w = cur >> 5, l = cur & 31;
	Warp &W = warps[w];
	if (!(mask >> l & 1)) fail("lane %d calls a collective with mask %08x, which does not name it", l, mask);
	if (width < 1 || width > 32 || (width & (width - 1))) fail("shuffle width %d is not a power of 2 up to 32", width);
	W.val[l] = v, W.kind[l] = kind, W.arg[l] = arg, W.width[l] = width, W.mask[l] = mask;
	W.waiting |= 1u << l;
	const unsigned r0 = W.rel[l];
	wait_until("a warp collective", [&] {
		if (W.rel[l] != r0) return true;
		if (mask & W.gone)
			fail("mask %08x of warp %d names lane %d, which has exited or is not in the block", mask, w,
			     __builtin_ctz(mask & W.gone));
		if ((W.waiting & mask) != mask) return false;
		for (int k = 0; k < 32; ++k)
			if ((mask >> k & 1) && W.mask[k] != mask) return false;
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

// ---- memory faults during a launch: the kernel, block and thread, then the previous handler ----
static struct sigaction prev_segv;

static void on_fault(int sig, siginfo_t *si, void *)
{
	char buf[300];
	const int n = snprintf(buf, sizeof buf, "emu: [%s block %u thread %d] memory fault at %p: an access past a "
	                       "device array, past the dynamic shared memory or off a thread's stack\n", kname, g_block,
	                       cur, si->si_addr);
	if (write(2, buf, (size_t)n) < 0) {}   // no stderr: nothing to tell
	sigaction(sig, &prev_segv, nullptr);   // the access runs again, into Python's faulthandler (or death)
}

// ---- the scheduler: round-robin over the block's fibers until all have exited ----
static void entry()
{
	fn();
	done[cur] = 1;
	warps[cur >> 5].gone |= 1u << (cur & 31);
	++ndone;
	for (;;) yield_();
}

static const unsigned MAX_DYN_SHARED = 227 << 10;   // an sm_90 block's dynamic shared memory at most
static char *dyn_end;                               // an inaccessible page after the dynamic shared memory

int emu_launch(const char *name, unsigned grid, unsigned block, unsigned shared, std::function<void()> f)
{
	failed = 0, errmsg.clear(), kname = name;
	if (block < 1 || block > (unsigned)MAXT || shared > MAX_DYN_SHARED) {
		errmsg = std::string("emu: ") + name + ": a block of " + std::to_string(block) + " threads and " +
		         std::to_string(shared) + " bytes of dynamic shared memory";
		return 1;
	}
	fn = f, g_bdim = block, g_grid = grid, nthr = (int)block;
	// $GX_EMU_REVERSE=1: the fibers take turns from the last thread to the first, so that a value read
	// between two barriers before its writer has written it (a race the GPU may or may not show)
	// changes the result in one of the two orders
	const char *rev = getenv("GX_EMU_REVERSE");
	const bool reverse = rev && *rev == '1';
	for (unsigned t = 0; t < block; ++t)
		if (!stacks[t]) {
			char *m = (char *)mmap(nullptr, STK + 4096, PROT_READ | PROT_WRITE,
			                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (m == MAP_FAILED) { perror("emu: mmap"); abort(); }
			mprotect(m, 4096, PROT_NONE);
			stacks[t] = m + 4096;
		}
	if (!dyn_end) {
		const size_t span = (MAX_DYN_SHARED + 4095) & ~(size_t)4095;
		char *m = (char *)mmap(nullptr, span + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) { perror("emu: mmap"); abort(); }
		dyn_end = m + span;
		mprotect(dyn_end, 4096, PROT_NONE);
	}
	// the launch's bytes in 128-byte units (the GPU's allocation granularity) end at the guard page
	const unsigned dyn_size = (shared + 127) & ~127u;
	emu_dyn_shared = dyn_end - dyn_size;
	struct sigaction act = {};
	act.sa_sigaction = on_fault;
	act.sa_flags = SA_SIGINFO | SA_ONSTACK;   // on faulthandler's alternate stack, if a fiber's overflowed
	sigaction(SIGSEGV, &act, &prev_segv);
	for (unsigned b = 0; b < grid && !failed; ++b) {
		g_block = b;
		memset(warps, 0, sizeof(Warp) * ((block + 31) / 32));
		if (block % 32) warps[block / 32].gone = ~0u << (block % 32);
		memset(emu_dyn_shared, 0xA7, dyn_size);   // garbage, as a block finds its shared memory
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
			for (int i = 0; i < nthr && !failed; ++i) {
				const int t = reverse ? nthr - 1 - i : i;
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
	sigaction(SIGSEGV, &prev_segv, nullptr);
	fn = nullptr;
	return failed;
}
