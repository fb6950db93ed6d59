"""ksw_extd2.cu's score stores (word_score, the teams' word_score_e, and reg_score under both) against a
scalar model of ksw_extd2_sse's score row (ksw2_extd2_sse.c:166-183; spec §1.8 item 3), without a GPU.

On anti-diagonal r ksw2 writes s[t] for t in [st0, send] (the non-generic 16-byte stores, which run up to
15 slots past en0: past tlen the target base is sf's zero padding, past r the query base is qr's) or
[st0, en0] (GENERIC_SC, mat[target * 5 + query]); every other slot keeps its stale score. The kernel
scores a word of four slots at once, with word loads and byte masks at the edges of the store and of
the matrix. The model is fed every word of the aligned range [st0 & ~15, max(en, send)] of random
bands of random jobs, with random stale scores, and sequences placed in a buffer of random bytes:
loads past a sequence's end (the word loads read up to 7 bytes on) see any value, as on the device."""
from __future__ import annotations

import platform
import shutil

import pytest

from gpuext.backends.cuda.loader import kernel_source
from tests.emu.build import run_harness

pytestmark = pytest.mark.skipif(shutil.which("g++") is None or platform.machine() != "x86_64",
                                reason="needs g++ on x86-64")

HARNESS = r"""
#include <cstdio>
#include <random>
int main()
{
	std::mt19937_64 rng(20261123);
	static unsigned char buf[1 << 14];
	long bad = 0, n = 0;
	for (int it = 0; it < 60000; ++it) {
		for (auto &b : buf) b = (unsigned char)rng();  // garbage around the sequences
		const int qlen = 1 + rng() % 600, tlen = 1 + rng() % 600;
		unsigned char *Q = buf + 256, *T = buf + 256 * (4 + (qlen + 255) / 256);  // 256-aligned, as staged
		const int pn = rng() % 4;  // no N, or N at 1/8, 1/2, all of the bases
		for (int i = 0; i < qlen; ++i) Q[i] = pn && (int)(rng() % 8) < (pn == 1 ? 1 : pn == 2 ? 4 : 8) ? 4 : rng() % 4;
		for (int i = 0; i < tlen; ++i) T[i] = pn && (int)(rng() % 8) < (pn == 1 ? 1 : pn == 2 ? 4 : 8) ? 4 : rng() % 4;
		signed char mat[25];
		for (auto &m : mat) m = (signed char)((int)(rng() % 31) - 15);
		if (it & 1) mat[24] = 0;
		const int e2 = 1 + rng() % 3;
		const int mch = mat[0], mis = mat[1], scn = mat[24] == 0 ? -e2 : mat[24];
		const ku32 MCH4 = rep4(mch), MIS4 = rep4(mis), SCN4 = rep4(scn);
		const bool generic = rng() & 1;
		const int w = rng() % 3 ? (int)(rng() % 200) : qlen + tlen;
		for (int k = 0; k < 4; ++k) {
			const int r = rng() % (qlen + tlen - 1);
			const int st0 = band_st0(r, qlen, w), en0 = band_en0(r, tlen, w);
			if (st0 > en0) continue;
			const int send = score_end(st0, en0, generic), lim = generic ? en0 : send;
			const int st = st0 & ~15, en = (en0 & ~15) + 15, top = en > send ? en : send;
			for (int t0 = st; t0 <= top; t0 += 4) {
				const ku32 S = (ku32)rng();
				ku32 want = S;
				for (int b = 0; b < 4; ++b) {
					const int t = t0 + b;
					if (t < st0 || t > lim) continue;
					const int tb = t < tlen ? T[t] : 0, qb = t <= r ? Q[r - t] : 0;
					const int sc = generic ? mat[tb * 5 + qb] : tb == 4 || qb == 4 ? scn : tb == qb ? mch : mis;
					want = set_byte(want, b, sc);
				}
				const ku32 got[2] = {word_score(S, t0, r, st0, en0, send, generic, T, Q, tlen, mat, MCH4, MIS4, SCN4),
				                     word_score_e(S, t0, r, st0, en0, send, generic, T, Q, tlen, mat, MCH4, MIS4, SCN4)};
				for (int f = 0; f < 2; ++f, ++n)
					if (got[f] != want && bad++ < 5)
						printf("%s: qlen %d tlen %d w %d r %d st0 %d en0 %d send %d generic %d t0 %d: %08x, ksw2 %08x\n",
						       f ? "word_score_e" : "word_score", qlen, tlen, w, r, st0, en0, send, generic, t0, got[f], want);
			}
		}
	}
	printf("%ld of %ld words differ\n", bad, n);
	return bad != 0 || n < 1000000;
}
"""


def test_word_scores_match_ksw2_score_row(tmp_path):
    r = run_harness(kernel_source("ksw_extd2.cu", {}), "// The exact maximum's part of a word t0 that meets [st0, en0]",
                    HARNESS, tmp_path)
    assert r.returncode == 0 and " 0 of " in " " + r.stdout, r.stdout[-2000:]
