#!/usr/bin/env bash
# Runs every check CI runs ("make test", .ci/run):
#   1. installs redis-server and redis-sentinel with apt-get if missing
#      (the tests start real Redis servers, clusters and sentinels),
#      postgresql and mariadb-server if missing (extra/fencesql's tests
#      start real PostgreSQL and MariaDB servers), ip and nft when root
#      (the fault suite's netns topology), and a C compiler if missing
#      (go test -race needs cgo; the netns topology's clock shim);
#   2. checks that every tracked .go file is gofmt-formatted;
#   3. runs golangci-lint (.golangci.yml), go vet and go test -race in
#      every Go module of the repository (each directory holding a go.mod).
# It stops at the first failure, saying which step and module failed.
# Works unattended: as root or with sudo, with no stdin (CI=true).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
start=$SECONDS
# Each module is vetted and tested on its own, as its users build it: a
# go.work made with "make work" (for editors) must not change what a test
# runs against.
export GOWORK=off

log() { printf '==> %s\n' "$*"; }
die() {
	printf 'test.sh: FAIL: %s\n' "$*" >&2
	exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

# have_bin NAME: NAME is on PATH or in a directory the test harness
# (internal/redistest) also searches.
have_bin() {
	have "$1" && return 0
	local d
	for d in /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin; do
		[ -x "$d/$1" ] && return 0
	done
	return 1
}

bin_path() {
	if have "$1"; then
		command -v "$1"
		return
	fi
	local d
	for d in /usr/bin /usr/sbin /usr/local/bin /usr/local/sbin; do
		if [ -x "$d/$1" ]; then
			echo "$d/$1"
			return
		fi
	done
}

no_apt_help() {
	cat >&2 <<'MSG'
test.sh: redis-server (Redis 7 or later) is required: the tests start real
Redis servers. apt-get is not available here to install it; install Redis
yourself and run "make test" again, for example:
  macOS:         brew install redis
  Fedora/RHEL:   sudo dnf install -y redis
  Alpine:        apk add redis
  other:         https://redis.io/docs/latest/operate/oss_and_stack/install/
MSG
}

# apt_install PKG...: installs Debian packages, as root or through sudo.
apt_install() {
	local sudo=()
	if [ "$(id -u)" -ne 0 ]; then
		have sudo || die "installing $* needs root; run as root, install sudo, or install them yourself"
		sudo=(sudo)
		# Without a terminal sudo cannot ask for a password; fail instead
		# of hanging.
		[ -t 0 ] || sudo=(sudo -n)
	fi
	log "installing $* with apt-get"
	${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		die "apt-get update failed"
	${sudo[@]+"${sudo[@]}"} env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" ||
		die "apt-get install $* failed"
	# The Debian packages may start system services (Redis on 6379/26379,
	# PostgreSQL on 5432, MariaDB on 3306). The tests start their own
	# servers on free ports or in temporary directories, so these are
	# harmless; stop the ones we just installed anyway to keep the machine
	# quiet.
	local p
	for p in "$@"; do
		case $p in
		redis-server | redis-sentinel | postgresql | mariadb-server)
			if have service; then
				${sudo[@]+"${sudo[@]}"} service "${p/mariadb-server/mariadb}" stop >/dev/null 2>&1 || true
			fi
			;;
		esac
	done
}

# --- 1. tools ---------------------------------------------------------------

have go || die "the go command is not on PATH; install Go (see go.mod for the version) from https://go.dev/dl/"

pkgs=()
if ! have_bin redis-server; then
	have apt-get || {
		no_apt_help
		exit 1
	}
	pkgs+=(redis-server)
fi
if ! have_bin redis-sentinel; then
	pkgs+=(redis-sentinel)
fi
# extra/fencesql's tests start PostgreSQL (initdb and postgres, which
# Debian keeps in /usr/lib/postgresql/<version>/bin) and MariaDB (mariadbd,
# mariadb-install-db); with CI=true they fail without them.
have_postgres() {
	have_bin initdb && have_bin postgres && return 0
	local d
	for d in /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && [ -x "$d/postgres" ] && return 0
	done
	return 1
}
have_postgres || pkgs+=(postgresql)
if ! have_bin mariadbd || ! have_bin mariadb-install-db; then
	pkgs+=(mariadb-server)
fi
# The chaos module's netns topology (one seed in the bounded pass) needs
# ip and nft; as root it runs, and with CI=true it fails without them.
if [ "$(id -u)" -eq 0 ]; then
	have_bin ip || pkgs+=(iproute2)
	have_bin nft || pkgs+=(nftables)
fi
cc=$(go env CC)
if ! have "${cc%% *}"; then
	pkgs+=(gcc libc6-dev)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
	if have apt-get; then
		apt_install "${pkgs[@]}"
	else
		# Only redis-sentinel, PostgreSQL, MariaDB or gcc is missing here.
		# Sentinel tests fall back to "redis-server --sentinel"; the
		# fencesql tests and go test -race will say what they need.
		log "warning: cannot install ${pkgs[*]} without apt-get; continuing"
	fi
fi

redis_server=$(bin_path redis-server)
[ -n "$redis_server" ] || die "redis-server is still not installed"
redis_version=$("$redis_server" --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
[ "${redis_version%%.*}" -ge 7 ] 2>/dev/null ||
	die "$redis_server is Redis ${redis_version:-of unknown version}; the tests need Redis 7 or later (cluster-port, CLUSTER ADDSLOTSRANGE). Install a newer one, e.g. from https://packages.redis.io"
log "$(go version); Redis $redis_version at $redis_server"

# --- 2. gofmt ---------------------------------------------------------------

log "gofmt -l (tracked .go files)"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	unformatted=$(git ls-files -z -- '*.go' | xargs -0 -r gofmt -l) ||
		die "gofmt could not parse the files above"
else
	unformatted=$(find . -name '*.go' -not -path './.git/*' -print0 | xargs -0 -r gofmt -l) ||
		die "gofmt could not parse the files above"
fi
if [ -n "$unformatted" ]; then
	printf '%s\n' "$unformatted" >&2
	die "these files are not gofmt-formatted (run \"make fmt\")"
fi

# --- 3. golangci-lint, go vet and go test in every module -------------------

# golangci-lint's version is pinned here and in the Makefile ("make lint");
# "go run" builds it from the Go module proxy the first time (a few
# minutes), from the build cache after that.
golangci_lint=(go run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0)
lint_config="$PWD/.golangci.yml"

modules=()
while IFS= read -r gomod; do
	modules+=("$(dirname "$gomod")")
done < <(find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -not -path '*/vendor/*' | LC_ALL=C sort)
[ ${#modules[@]} -gt 0 ] || die "no go.mod found"

for m in "${modules[@]}"; do
	log "module $m: golangci-lint run"
	(cd "$m" && "${golangci_lint[@]}" run --allow-parallel-runners --config "$lint_config" ./...) || die "golangci-lint failed in module $m (see .golangci.yml; \"make lint\" runs it alone)"
	log "module $m: go vet ./..."
	(cd "$m" && go vet ./...) || die "go vet failed in module $m"
	log "module $m: go test -race -count=1 -timeout 20m ./..."
	(cd "$m" && go test -race -count=1 -timeout 20m ./...) || die "go test failed in module $m"
done

echo "test.sh: PASS: gofmt, golangci-lint, go vet and go test -race in ${#modules[@]} module(s) (${modules[*]}) in $((SECONDS - start))s"
