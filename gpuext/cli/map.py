"""`gpuext map`: a drop-in for the minimap2 2.31 command line.

minimap2's own option parser and driver run (gpuext._native.minimap2.run_cli, the patched main()), so
every minimap2 flag, default and message is the stock one. gpuext's own options are long options
that minimap2 does not have; they are taken out of the command line before minimap2 sees it, and kept
out of minimap2's @PG line. gpuext adds its own samtools-style @PG line after minimap2's.

Neighbours: gpuext/cli/__init__.py dispatches here; gpuext/engine/rounds.py (the batch engine,
installed unless --backend stock) and gpuext/backends (cpu, cuda) serve the extension jobs;
gpuext/io/bam.py writes BAM; gpuext/progress.py reports progress.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass, field

from .. import __version__, log, timeline
from ..engine import pipeline_steps

BACKENDS = ("auto", "cpu", "cuda", "stock")
HW_QUEUES = "8"   # CUDA_DEVICE_MAX_CONNECTIONS for gpuext map, unless set (see main)
if os.environ.get("GPUEXT_TEST_BACKENDS") == "1":
    BACKENDS += ("corrupt",)  # gpuext/backends: a backend that corrupts one result, for --verify tests

HELP = """
gpuext options (minimap2's options are all accepted, with minimap2's defaults):
  --backend STR    who computes the extension jobs of each batch: auto (cuda when CuPy sees a GPU,
                   else cpu), cpu (the stock ksw2 code, batched), cuda, or stock (minimap2 alone,
                   no batching) [auto]
  --gpu INT        the GPU to use [0]
  --gpu-mem NUM    GPU memory the cuda backend may use, e.g. 8G [half of the GPU]
  --rounds INT     rounds of batched jobs per batch of reads; jobs still unknown after them run
                   inline on the CPU [3]
  --verify FLOAT   recompute this fraction of the backend's results with the stock code; stop
                   with an error naming the job on any difference [0]
  --stats FILE     write run statistics (jobs, DP cells per round, CPU fallbacks, times) as JSON
  --dump-jobs FILE write every batched extension job of the run to FILE (.npz), for benchmarks
  --sort           with -o FILE.bam: coordinate-sorted, indexed BAM (FILE.bam.bai)
  --sort-mem STR   memory per thread for --sort, as samtools sort -m [768M]
  --quiet          no progress and no gpuext summary on stderr
  --progress-interval FLOAT  seconds between progress lines (shown on a terminal only) [10]
  --version        print gpuext's version and the minimap2 version it carries
-o FILE.bam writes BAM (through pysam); any other -o name, or stdout, gets minimap2's SAM/PAF.
"""


@dataclass
class GpuextOptions:
    """Options of gpuext itself, split off the minimap2 command line."""

    backend: str = "auto"
    gpu: int = 0
    gpu_mem: str | None = None
    rounds: int = 3
    verify: float = 0.0
    stats: str | None = None
    dump_jobs: str | None = None
    sort: bool = False
    sort_mem: str = "768M"
    quiet: bool = False
    progress_interval: float = 10.0
    minimap2_argv: list[str] = field(default_factory=list)


class UsageError(ValueError):
    """A bad gpuext option."""


# long option taking a value -> (attribute, type, allowed values or None); flags are in _FLAGS
_OPTIONS = {
    "--backend": ("backend", str, BACKENDS),
    "--gpu": ("gpu", int, None),
    "--gpu-mem": ("gpu_mem", str, None),
    "--rounds": ("rounds", int, None),
    "--verify": ("verify", float, None),
    "--stats": ("stats", str, None),
    "--dump-jobs": ("dump_jobs", str, None),
    "--sort-mem": ("sort_mem", str, None),
    "--progress-interval": ("progress_interval", float, None),
}
_FLAGS = {"--sort": "sort", "--quiet": "quiet"}


def split_argv(argv: list[str]) -> GpuextOptions:
    """Separate gpuext's options from minimap2's; minimap2's keep their order."""
    opts = GpuextOptions()
    rest: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            rest.extend(argv[i:])
            break
        name, eq, value = a.partition("=")
        if a in _FLAGS:
            setattr(opts, _FLAGS[a], True)
        elif name in _OPTIONS:
            attr, kind, allowed = _OPTIONS[name]
            if not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"option '{name}' needs a value")
                i += 1
                value = argv[i]
            if allowed and value not in allowed:
                raise UsageError(f"option '{name}' takes one of {', '.join(allowed)}, not '{value}'")
            try:
                setattr(opts, attr, kind(value))
            except ValueError:
                raise UsageError(f"option '{name}' takes a number, not '{value}'") from None
        else:
            rest.append(a)
        i += 1
    opts.minimap2_argv = rest
    if opts.rounds < 0:
        raise UsageError("--rounds must be 0 or more")
    if not 0 <= opts.verify <= 1:
        raise UsageError("--verify takes a fraction between 0 and 1")
    if opts.progress_interval <= 0:
        raise UsageError("--progress-interval must be more than 0 seconds")
    return opts


# minimap2 2.31's options that take an argument (main.c: opt_str and long_options with
# ko_required_argument); tests/unit/test_split_argv.py checks these against the sdist.
SHORT_WITH_ARG = set("wkKtrfvgGIdTsxpMnzAbBOEmNuRFCoeUJj")
LONG_WITH_ARG = {
    "alt", "alt-drop", "bucket-bits", "cap-kalloc", "cap-sw-mem", "chain-gap-scale", "chain-skip-scale",
    "cost-non-gt-ag", "dual", "end-bonus", "end-seed-pen", "frag", "heap-sort", "jump-min-match", "junc-bed",
    "junc-bonus", "junc-pen", "lj-min-ratio", "mask-len", "mask-level", "max-chain-iter", "max-chain-skip",
    "max-clip-ratio", "max-intron-len", "max-qlen", "mb-size", "min-chain-score", "min-count", "min-dp-len",
    "min-dp-score", "min-occ-floor", "pairing", "pass1", "q-occ-frac", "rmq-inner", "score-N", "secondary",
    "seed", "splice-flank", "split-prefix", "spsc", "spsc-scale", "spsc0",
}


def positionals(argv: list[str]) -> list[str]:
    """minimap2's positional arguments (target, then queries), found the way ketopt finds them."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            out.extend(argv[i + 1:])
            break
        if a.startswith("--"):
            if a[2:] in LONG_WITH_ARG:
                i += 1
        elif a.startswith("-") and a != "-":
            for k, c in enumerate(a[1:], start=1):
                if c in SHORT_WITH_ARG:
                    if k == len(a) - 1:
                        i += 1
                    break
        else:
            out.append(a)
        i += 1
    return out


def short_option(argv: list[str], letter: str) -> str | bool | None:
    """The value of minimap2's short option `letter` (last one wins; True for a flag), or None."""
    found: str | bool | None = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a.startswith("--"):
            i += 2 if a[2:] in LONG_WITH_ARG else 1
            continue
        if a.startswith("-") and a != "-":
            for k, c in enumerate(a[1:], start=1):
                if c in SHORT_WITH_ARG:
                    value = a[k + 1:] if k < len(a) - 1 else (argv[i + 1] if i + 1 < len(argv) else "")
                    if c == letter:
                        found = value
                    if k == len(a) - 1:
                        i += 1
                    break
                if c == letter:
                    found = True
        i += 1
    return found


def unreadable_input(argv: list[str]) -> str | None:
    """The first input path that cannot be read, with the reason; None when all can."""
    for path in positionals(argv):
        if path == "-":
            continue
        if not os.path.exists(path):
            return f"cannot read '{path}': No such file or directory"
        if os.path.isdir(path):
            return f"cannot read '{path}': Is a directory"
        if not os.access(path, os.R_OK):
            return f"cannot read '{path}': Permission denied"
    return None


def pg_line(argv: list[str]) -> str:
    """gpuext's @PG line (samtools style: it follows minimap2's, PP points at it)."""
    cl = " ".join(["gpuext", "map", *argv])
    return f"@PG\tID:gpuext\tPN:gpuext\tPP:minimap2\tVN:{__version__}\tCL:{cl}"


def main(argv: list[str], command_line: bool = True) -> int:
    """`gpuext map ARGV`; command_line=False for gpuext.Aligner, whose process is not one run (the CUDA
    hardware queues are then left to the cuda package's default)."""
    try:
        opts = split_argv(argv)
    except UsageError as e:
        log.error("gpuext::map", str(e))
        return 1
    from .._native import minimap2 as native

    if "--version" in opts.minimap2_argv:
        print(f"gpuext {__version__} (minimap2 {native.minimap2_version})")
        return 0
    if short_option(opts.minimap2_argv, "V") is True:   # minimap2 prints its version and exits: no backend asked
        sys.stdout.flush()
        return native.run_cli(["gpuext map", *opts.minimap2_argv])
    bad = unreadable_input(opts.minimap2_argv)
    if bad:
        log.error("gpuext::map", bad)
        return 1
    if "-h" in opts.minimap2_argv or "--help" in opts.minimap2_argv:
        sys.stdout.flush()
        ret = native.run_cli(["gpuext map", *opts.minimap2_argv])
        print(HELP, end="")
        return ret
    out = short_option(opts.minimap2_argv, "o")
    bam = isinstance(out, str) and out.endswith(".bam")
    if opts.sort and not bam:
        log.error("gpuext::map", "--sort needs -o FILE.bam")
        return 1
    if bam:
        if not short_option(opts.minimap2_argv, "a"):
            log.error("gpuext::map", "-o FILE.bam needs SAM output (-a)")
            return 1
        from ..io.bam import require_pysam

        try:
            require_pysam()
        except RuntimeError as e:
            log.error("gpuext::map", str(e))
            return 1
    engine = choice = None
    if opts.backend != "stock":
        # One process per run: the driver's 8 hardware queues unless the user set a number. The 32 that the
        # cuda package asks for otherwise (long-lived processes, the kernel benchmarks: no launch class then
        # waits for another's blocks to be dispatched) cost about 0.35 s more to make the context and 0.2 s
        # more at the process's exit, against a few ms in some latency-bound batches (performance.md,
        # thirty-first session). Set before the cuda package is imported, so that its default does not apply.
        if command_line:
            os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", HW_QUEUES)
        try:
            gpu_mem = _bytes(opts.gpu_mem)
        except ValueError as e:
            log.error("gpuext::map", str(e))
            return 1
        engine = EngineInTheBackground(opts, gpu_mem)   # (its imports run while the driver is asked)
        # the choice of backend (cuda.pick asks the driver: 0.1-0.2 s): as a command, while minimap2 builds its
        # index (which must wait for it before writing anything: index_loaded), else (gpuext.Aligner, or -d,
        # where minimap2 writes the index file as it builds it) before minimap2 starts
        choice = BackendChoice(opts, engine, abort=native.abort_run if command_line else None)
        if not command_line or short_option(opts.minimap2_argv, "d") is not None:
            choice.wait()   # (the backend made too: nothing is left to fail once minimap2 starts)
            if not choice.say():
                return 1
            choice = None
    sam_tmp = f"{out}.gpuext-{os.getpid()}.sam" if bam else None
    built = None
    try:
        native.install_engine(engine, engine.n_steps if engine else 1)
        sys.stdout.flush()
        t0 = time.perf_counter()
        t_cli = timeline.now()
        try:
            ret = native.run_cli(["gpuext map", *opts.minimap2_argv], pg_line(argv), sam_tmp,
                                 index_loaded=choice.stops_the_run if choice else None)
            timeline.span("run_cli", t_cli)
        finally:
            native.install_engine(None)
            if choice is not None:
                choice.wait()   # (minimap2 may have ended before its index: no hook asked)
            if engine is not None:
                built = engine.finish()   # (the BatchEngine, or None if it could not be built)
        failed = choice is not None and not choice.say(quiet=True)   # (said once)
        if not failed and engine is not None and built is None:   # (no batch needed it, or minimap2 failed first)
            log.error("gpuext::map", f"the batch engine could not be built: {engine.error}")
            failed = True
        if failed:
            if ret == 0 and isinstance(out, str) and not bam and os.path.exists(out):
                os.unlink(out)   # (-o appears only when the run succeeded)
            return 1
        engine = built
        if engine is not None:
            engine.stats.time["total"] = time.perf_counter() - t0   # index, reading, mapping, output
        if ret == 0 and bam:
            from ..io.bam import write_bam

            write_bam(sam_tmp, out, sort=opts.sort, threads=_threads(opts.minimap2_argv), mem_per_thread=opts.sort_mem)
    finally:
        if sam_tmp and os.path.exists(sam_tmp):
            os.unlink(sam_tmp)
    timeline.mark("after run_cli")
    if ret == 0 and engine is not None:
        from ..engine.rounds import report

        if not opts.quiet:
            report(engine.stats)
        if opts.stats:
            from ..io.atomic import write_json

            write_json(opts.stats, engine.stats.as_dict())
        if opts.dump_jobs and engine.kept:
            from ..engine.jobs import JobBatch

            JobBatch.concat(engine.kept).save(opts.dump_jobs)
    return ret


class BackendChoice:
    """--backend NAME checked and chosen (cuda.pick, the driver only) in a thread of its own, started at once;
    when it is done, the engine is built (EngineInTheBackground.build), or, if the GPU cannot be used, the run
    ends with one error line: at once by `abort` when given (the command: minimap2 may be building its index,
    and has written nothing), else when `say` is asked."""

    def __init__(self, opts: GpuextOptions, engine: EngineInTheBackground, abort=None):
        self.opts, self.engine, self.abort = opts, engine, abort
        self.chosen: str | None = None
        self.error: BaseException | None = None
        self._said = False
        self._known = threading.Event()   # (set once chosen or failed: the backend is made after)
        self._thread = threading.Thread(target=self._pick, name="gpuext-pick")
        self._thread.start()

    def _pick(self) -> None:
        try:
            from ..backends import resolve
            from ..backends.cuda import pick

            timeline.mark("resolve")
            chosen = pick(self.opts.backend, self.opts.gpu)
            timeline.mark("resolved")
        except BaseException as e:   # before minimap2 may go on: the run ends with nothing written
            self._fail(e)
            if self.abort is not None:
                self._say_error()
                self.abort()
            self._known.set()
            return
        self.chosen = chosen
        self._known.set()
        try:   # the backend at once (the cuda set-up starts its thread; the launchers' imports wait for NumPy)
            backend = resolve(chosen, _threads(self.opts.minimap2_argv), self.opts.gpu, self.engine.gpu_mem,
                              auto=self.opts.backend == "auto")
        except BaseException as e:   # (after the choice: minimap2 may have written its header; the first batch
            self._fail(e)            # that needs the engine stops the run with this error, as does the end)
            return
        self.engine.build(backend)

    def _fail(self, e: BaseException) -> None:
        self.error = e
        self.engine.cancel(e)

    def wait(self) -> None:
        self._thread.join()

    def say(self, quiet: bool = False) -> bool:
        """Wait for the choice; say it once on stderr (unless --quiet, or quiet) and return True, or say once why
        the backend cannot be used and return False."""
        self._known.wait()
        if self.error is not None:
            self._say_error()
            return False
        if not self._said and not (quiet or self.opts.quiet):
            log.info("gpuext::map", f"extension backend: {self.chosen} (--backend {self.opts.backend})")
        self._said = True
        return True

    def _say_error(self) -> None:
        if not self._said:
            e = self.error
            log.error("gpuext::map", str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}")
        self._said = True

    def stops_the_run(self) -> bool:
        """minimap2's index_loaded hook (main thread, before anything is written): True when the backend cannot
        be used. Its timeline mark is when minimap2 goes on."""
        ok = self.say()
        timeline.mark("index loaded")
        return not ok


class EngineInTheBackground:
    """The batch engine, built in a thread of its own while minimap2 builds its index and reads the first
    batch: the imports behind it (NumPy, the backends) and the backend take 0.2-0.4 s that minimap2 need not
    wait for. minimap2's pipeline calls this object as it would the engine; each call waits until the engine is
    built. The backend is chosen, checked and made by BackendChoice, which hands it over by `build(backend)`
    (the cuda backend's set-up then runs beside these imports), or cancels the engine."""

    def __init__(self, opts: GpuextOptions, gpu_mem: int | None):
        self.n_steps = pipeline_steps(opts.rounds)
        self.gpu_mem = gpu_mem
        self.engine = None
        self.progress = None
        self._error: BaseException | None = None
        self._go = threading.Event()
        self._cancelled = False
        self._backend = None
        self._thread = threading.Thread(target=self._build, args=(opts,), name="gpuext-engine")
        self._thread.start()

    def build(self, backend) -> None:
        """Build the engine over this backend (once the imports are done)."""
        self._backend = backend
        self._go.set()

    def cancel(self, error: BaseException | None = None) -> None:
        """No engine: the backend could not be chosen or made (error says why)."""
        self._cancelled = True
        self._go.set()
        self._thread.join()
        if error is not None:
            self._error = error

    def _build(self, opts: GpuextOptions) -> None:
        try:
            t = timeline.now()
            from ..engine.rounds import BatchEngine
            from ..progress import Progress

            timeline.span("engine: imports", t)
            self._go.wait()
            if self._cancelled:
                return
            engine = BatchEngine(self._backend, opts.rounds, opts.verify, keep_jobs=opts.dump_jobs is not None)
            if Progress.wanted(opts.quiet):
                self.progress = Progress(engine.stats, opts.progress_interval, lock=engine.lock).start()
            self.engine = engine
            timeline.span("engine: built", t)
        except BaseException as e:
            self._error = e

    def get(self):
        self._thread.join()
        if self._error is not None:
            raise self._error
        if self.engine is None:
            raise RuntimeError("the batch engine was not built")
        return self.engine

    def __call__(self, *args) -> None:
        self.get()(*args)

    @property
    def error(self) -> BaseException | None:
        return self._error

    def finish(self):
        """After minimap2's run: the engine, or None if it could not be built (`error` says why), with its
        progress reporter stopped and the cuda backend's set-up thread told to stop."""
        self._thread.join()
        if self.progress is not None:
            self.progress.stop()
        if self.engine is None:
            return None
        if hasattr(self.engine.backend, "close"):
            self.engine.backend.close()   # (should no batch have needed it)
        return self.engine


def _bytes(text: str | None) -> int | None:
    """--gpu-mem in bytes (sizes as minimap2's -K: 8G = 8e9); None stays None."""
    from ..sizes import parse_size

    try:
        return None if text is None else parse_size(text)
    except ValueError:
        raise ValueError(f"--gpu-mem takes a size like 8G, not '{text}'") from None


def _threads(argv: list[str]) -> int:
    """minimap2's -t (default 3), for the cpu backend's batch threads and BAM compression."""
    t = short_option(argv, "t")
    return max(1, int(t)) if isinstance(t, str) and t.isdigit() else 3
