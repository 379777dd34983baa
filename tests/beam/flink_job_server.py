"""Beam's Flink job server, assembled from Maven artifacts, for the optional Flink test.

Beam publishes the job server as one shaded jar (``beam-runners-flink-<flink>-job-server``), but
a Maven mirror may not hold it. Its main class, ``FlinkJobServerDriver``, is in the runner
artifact ``beam-runners-flink-<flink>``; with ``beam-runners-java-job-service`` and their
dependencies (Maven resolves them) it runs the same. ``assemble`` copies those jars into a cache
directory and writes a manifest-only jar whose ``Class-Path`` names them, which the Python
``FlinkRunner`` starts like the shaded one (``--flink_job_server_jar``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")  # Maven colours its output even with -B on some terminals
MAIN_CLASS = "org.apache.beam.runners.flink.FlinkJobServerDriver"
POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.vectordb</groupId>
  <artifactId>flink-job-server</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>beam-runners-flink-{flink}</artifactId>
      <version>{beam}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.beam</groupId>
      <artifactId>beam-runners-java-job-service</artifactId>
      <version>{beam}</version>
    </dependency>
  </dependencies>
</project>
"""


class AssemblyError(RuntimeError):
    """Maven could not resolve the artifacts (the message ends with Maven's own error)."""


def cached(cache: Path, flink: str, beam: str) -> Path | None:
    """The jar assembled earlier for these versions, if it and every jar it names are there."""
    jar = _home(cache, flink, beam) / "job-server.jar"
    if not jar.is_file():
        return None
    with zipfile.ZipFile(jar) as archive:
        manifest = archive.read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "")
    (class_path,) = [line for line in manifest.splitlines() if line.startswith("Class-Path: ")]
    names = class_path.removeprefix("Class-Path: ").split()
    return jar if all((jar.parent / name).is_file() for name in names) else None


def assemble(cache: Path, flink: str, beam: str, timeout_s: float = 1800) -> Path:
    """The job server jar for Beam ``beam`` on Flink ``flink``, built under ``cache`` once and reused.

    It is built in a directory of its own and renamed into place when complete, so runs that
    assemble at the same time do not disturb each other (the first to finish wins).
    """
    found = cached(cache, flink, beam)
    if found is not None:
        return found
    mvn = shutil.which("mvn")
    if mvn is None:
        raise AssemblyError("Maven (mvn) is not on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=cache, prefix=".assembling-"))
    try:
        (work / "pom.xml").write_text(POM.format(flink=flink, beam=beam))
        done = subprocess.run(
            [
                mvn,
                "-B",
                "-q",
                "-Dstyle.color=never",
                "dependency:copy-dependencies",
                "-DoutputDirectory=libs",
            ],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if done.returncode != 0:
            output = ANSI.sub("", done.stdout)
            errors = [line for line in output.splitlines() if "[ERROR]" in line]
            raise AssemblyError((errors or [output.strip() or done.stderr.strip()])[0][:400])
        libs = sorted(p.name for p in (work / "libs").glob("*.jar"))
        manifest = (
            _manifest_line("Manifest-Version: 1.0")
            + _manifest_line(f"Main-Class: {MAIN_CLASS}")
            + _manifest_line("Class-Path: " + " ".join(f"libs/{name}" for name in libs))
            + b"\r\n"
        )
        with zipfile.ZipFile(work / "job-server.jar", "w") as out:
            out.writestr("META-INF/MANIFEST.MF", manifest)
        home = _home(cache, flink, beam)
        try:
            work.rename(home)
        except OSError:  # one is there: another run's, renamed into place first, or a broken one
            if cached(cache, flink, beam) is None:
                shutil.rmtree(home, ignore_errors=True)
                work.rename(home)
        found = cached(cache, flink, beam)
        if found is None:
            raise AssemblyError(f"the assembled job server under {home} is incomplete")
        return found
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _home(cache: Path, flink: str, beam: str) -> Path:
    return cache / f"beam-{beam}-flink-{flink}"


def _manifest_line(line: str) -> bytes:
    """One manifest header: lines hold at most 72 bytes; a continuation starts with a space."""
    raw = line.encode()
    parts = [raw[:72]]
    raw = raw[72:]
    while raw:
        parts.append(b" " + raw[:71])
        raw = raw[71:]
    return b"\r\n".join(parts) + b"\r\n"
