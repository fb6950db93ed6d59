"""gpuext's own options are split off minimap2's command line without disturbing it."""
import pytest

import re
from pathlib import Path

from gpuext.cli import map as cli_map
from gpuext.cli.map import UsageError, pg_line, positionals, split_argv

UPSTREAM_MAIN = Path(__file__).resolve().parents[2] / "build" / "upstream" / "minimap2-2.31" / "main.c"


def test_minimap2_arguments_keep_their_order():
    argv = ["-ax", "map-ont", "--backend", "cpu", "-t", "4", "ref.fa", "--backend=stock", "r.fq"]
    opts = split_argv(argv)
    assert opts.backend == "stock"
    assert opts.minimap2_argv == ["-ax", "map-ont", "-t", "4", "ref.fa", "r.fq"]


def test_bad_backend_is_a_usage_error():
    with pytest.raises(UsageError, match="backend"):
        split_argv(["--backend", "tpu", "ref.fa"])
    with pytest.raises(UsageError, match="needs a value"):
        split_argv(["ref.fa", "--backend"])


def test_everything_after_double_dash_is_minimap2s():
    assert split_argv(["-a", "--", "--backend", "x"]).minimap2_argv == ["-a", "--", "--backend", "x"]


def test_pg_line_is_samtools_style():
    line = pg_line(["-ax", "sr", "ref.fa", "r.fq"])
    fields = line.split("\t")
    assert fields[:3] == ["@PG", "ID:gpuext", "PN:gpuext"]
    assert "PP:minimap2" in fields
    assert fields[-1] == "CL:gpuext map -ax sr ref.fa r.fq"


def test_positionals_skip_option_arguments():
    argv = ["-ax", "map-ont", "-t8", "-R", "@RG\\tID:a", "--secondary", "no", "--cs", "-K", "5M", "ref.fa",
            "--seed=3", "r1.fq", "-o", "out.sam", "r2.fq"]
    assert positionals(argv) == ["ref.fa", "r1.fq", "r2.fq"]
    assert positionals(["-a", "ref.fa", "-"]) == ["ref.fa", "-"]


def test_option_tables_match_minimap2_main_c():
    import upstream

    upstream.unpack("minimap2")
    src = UPSTREAM_MAIN.read_text()
    opt_str = re.search(r'const char \*opt_str = "([^"]+)"', src).group(1)
    with_arg = {c for c, nxt in zip(opt_str, opt_str[1:] + " ") if nxt == ":" and c != ":"}
    assert with_arg == cli_map.SHORT_WITH_ARG
    assert set(re.findall(r'\{ "([\w:-]+)",\s*ko_required_argument', src)) == cli_map.LONG_WITH_ARG


def test_gpu_options():
    opts = split_argv(["--gpu", "1", "--gpu-mem=8G", "-a", "ref.fa"])
    assert (opts.gpu, opts.gpu_mem, opts.minimap2_argv) == (1, "8G", ["-a", "ref.fa"])
    assert cli_map._bytes("8G") == 8_000_000_000 and cli_map._bytes("1.5e9") == 1_500_000_000
    with pytest.raises(ValueError, match="--gpu-mem"):
        cli_map._bytes("lots")
