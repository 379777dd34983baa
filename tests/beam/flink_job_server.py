"""Beam's Flink job server, assembled from Maven artifacts, for the optional Flink test.

Beam publishes the job server as one shaded jar (``beam-runners-flink-<flink>-job-server``), but
a Maven mirror may not hold it. Its main class, ``FlinkJobServerDriver``, is in the runner
artifact ``beam-runners-flink-<flink>``; with ``beam-runners-java-job-service`` and their
dependencies (Maven resolves them) it runs the same. ``assemble`` copies those jars into a cache
directory and writes a manifest-only jar whose ``Class-Path`` names them, which the Python
``FlinkRunner`` starts like the shaded one (``--flink_job_server_jar``).
"""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from pathlib import Path

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


def assemble(cache: Path, flink: str, beam: str, timeout_s: float = 1800) -> Path:
    """The job server jar for Beam ``beam`` on Flink ``flink``, built under ``cache`` once and reused."""
    home = cache / f"beam-{beam}-flink-{flink}"
    jar = home / "job-server.jar"
    if jar.is_file():
        return jar
    mvn = shutil.which("mvn")
    if mvn is None:
        raise AssemblyError("Maven (mvn) is not on PATH")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "pom.xml").write_text(POM.format(flink=flink, beam=beam))
    done = subprocess.run(
        [mvn, "-B", "-q", "dependency:copy-dependencies", "-DoutputDirectory=libs"],
        cwd=home,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        errors = [line for line in done.stdout.splitlines() if "[ERROR]" in line]
        shutil.rmtree(home, ignore_errors=True)
        raise AssemblyError((errors or [done.stdout.strip() or done.stderr.strip()])[0][:400])
    libs = sorted(p.name for p in (home / "libs").glob("*.jar"))
    manifest = (
        _manifest_line("Manifest-Version: 1.0")
        + _manifest_line(f"Main-Class: {MAIN_CLASS}")
        + _manifest_line("Class-Path: " + " ".join(f"libs/{name}" for name in libs))
        + b"\r\n"
    )
    partial = jar.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w") as out:
        out.writestr("META-INF/MANIFEST.MF", manifest)
    partial.rename(jar)  # a jar that exists is complete
    return jar


def _manifest_line(line: str) -> bytes:
    """One manifest header: lines hold at most 72 bytes; a continuation starts with a space."""
    raw = line.encode()
    parts = [raw[:72]]
    raw = raw[72:]
    while raw:
        parts.append(b" " + raw[:71])
        raw = raw[71:]
    return b"\r\n".join(parts) + b"\r\n"
