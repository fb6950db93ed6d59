"""ksw_extd2.cu's cell4 (one word, four anti-diagonal slots, of ksw2's core loop) against a scalar model of
ksw_extd2_sse's loop body (ksw2_extd2_sse.c:228-322; spec §1.10), without a GPU.

The kernel computes the cell on tagged 16-bit halves (two slots per instruction); ksw2 computes it on
int8 lanes that wrap. Padding slots at the band's edges hold stale bytes of any value (spec §1.8), so the
model is fed uniformly random bytes for every input, not only values an in-band cell can hold, and both
alignment directions (left: strict compares, first maximum wins; RIGHT: non-strict, last wins) with
random gap costs and clamps. Every output byte (u, v, x, y, x2, y2 and the direction byte) must match.
The kernel file is compiled with g++ and the emulator's CUDA shim (tests/emu/shim.h)."""
from __future__ import annotations

import platform
import shutil

import pytest

from gpuext.backends.cuda.loader import kernel_source
from tests.emu.build import run_harness

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or platform.machine() != "x86_64",
                                reason="needs g++ on x86-64")

# the scalar model: one slot, int8 arithmetic as _mm_add_epi8/_mm_sub_epi8 (wrapping) and the signed
# _mm_cmpgt_epi8/_mm_max_epi8/_mm_min_epi8, in ksw2's order
HARNESS = r"""
#include <cstdio>
#include <random>
typedef signed char i8;
static i8 w8(int x) { return (i8)(unsigned char)x; }
static void model(i8 xs, i8 vs, i8 x2s, i8 u, i8 y, i8 y2, i8 s, bool right, int q, int q2, int qe, int qe2,
                  int mch, i8 o[7])
{
	i8 a = w8(xs + vs), b = w8(y + u), a2 = w8(x2s + vs), b2 = w8(y2 + u), z = s;
	int d;
	if (!right) {  // lines 235-272
		d = a > z ? 1 : 0; z = a > z ? a : z;
		d = b > z ? 2 : d; z = b > z ? b : z;
		d = a2 > z ? 3 : d; z = a2 > z ? a2 : z;
		d = b2 > z ? 4 : d; z = b2 > z ? b2 : z;
	} else {  // lines 282-319
		d = z > a ? 0 : 1; z = z > a ? z : a;
		d = z > b ? d : 2; z = z > b ? z : b;
		d = z > a2 ? d : 3; z = z > a2 ? z : a2;
		d = z > b2 ? d : 4; z = z > b2 ? z : b2;
	}
	z = z < w8(mch) ? z : w8(mch);
	o[0] = w8(z - vs), o[1] = w8(z - u);
	i8 t = w8(z - q);
	a = w8(a - t), b = w8(b - t);
	t = w8(z - q2);
	a2 = w8(a2 - t), b2 = w8(b2 - t);
	const bool ca = right ? a >= 0 : a > 0, cb = right ? b >= 0 : b > 0;
	const bool ca2 = right ? a2 >= 0 : a2 > 0, cb2 = right ? b2 >= 0 : b2 > 0;
	o[2] = w8((ca ? a : 0) - qe), o[3] = w8((cb ? b : 0) - qe);
	o[4] = w8((ca2 ? a2 : 0) - qe2), o[5] = w8((cb2 ? b2 : 0) - qe2);
	o[6] = (i8)(d | ca << 3 | cb << 4 | ca2 << 5 | cb2 << 6);
}
int main()
{
	std::mt19937_64 rng(20261123);
	long bad = 0, n = 0;
	for (int it = 0; it < 400000; ++it) {
		ku32 in[7];
		for (auto &w : in) w = (ku32)rng();
		// map-ont's costs on odd draws, else any q, e, q2, e2 and clamp
		int q = 4, e = 2, q2 = 24, e2 = 1, mch = 2;
		if (it & 1) q = rng() % 64, e = 1 + rng() % 40, q2 = rng() % 64, e2 = 1 + rng() % 40, mch = rng() % 40;
		const bool right = rng() & 1;
		ku32 o[7];
		o[6] = cell4(in[0], in[1], in[2], in[3], in[4], in[5], in[6], right, rep4(q), rep4(q2), rep4(q + e),
		             rep4(q2 + e2), rep4(mch), o[0], o[1], o[2], o[3], o[4], o[5]);
		for (int k = 0; k < 4; ++k, ++n) {
			i8 m[7];
			model(sbyte(in[0], k), sbyte(in[1], k), sbyte(in[2], k), sbyte(in[3], k), sbyte(in[4], k), sbyte(in[5], k),
			      sbyte(in[6], k), right, q, q2, q + e, q2 + e2, mch, m);
			for (int f = 0; f < 7; ++f)
				if (sbyte(o[f], k) != m[f]) {
					if (bad++ < 5)
						printf("slot %ld right %d output %d: kernel %d, ksw2 %d\n", n, right, f, sbyte(o[f], k), m[f]);
					break;
				}
		}
	}
	printf("%ld of %ld slots differ\n", bad, n);
	return bad != 0;
}
"""


def test_cell4_matches_ksw2_bytes(tmp_path):
    r = run_harness(kernel_source("ksw_extd2.cu", {}), "// the backtrack of one job by one warp", HARNESS, tmp_path)
    assert r.returncode == 0 and " 0 of 1600000 slots differ" in " " + r.stdout, r.stdout[-2000:]
