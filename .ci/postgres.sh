# Sourced by .ci/run: a throw-away PostgreSQL server for the experience database's tests
# (tests/hwsim/studies/optimize/test_db.py), which skip only when HWSIM_TEST_POSTGRES_URL is unset.
# Installs PostgreSQL with apt-get when missing, runs initdb and pg_ctl as a non-root user on a
# temporary folder and a free local port, creates a database, exports HWSIM_TEST_POSTGRES_URL and
# stops the server when the calling script exits. A URL already in the environment is kept.

_pg_bin() {
    local dir
    dir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
    if [ -n "$dir" ]; then echo "$dir"; elif command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; fi
}

start_test_postgres() {
    if [ -n "${HWSIM_TEST_POSTGRES_URL:-}" ]; then return 0; fi
    if [ -z "$(_pg_bin)" ]; then
        if ! (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql); then
            echo "warning: could not install PostgreSQL; its tests of the experience database will be skipped" >&2
            return 0
        fi
    fi
    pg_bin="$(_pg_bin)"
    pg_as=()
    if [ "$(id -u)" = 0 ]; then  # the server refuses to run as root
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        pg_as=(runuser -u postgres --)
    fi
    pg_dir="$(mktemp -d)"
    [ "$(id -u)" = 0 ] && chown postgres "$pg_dir"
    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    "${pg_as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U hwsim --auth=trust >/dev/null
    "${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w \
        -o "-p $port -k $pg_dir -c listen_addresses=127.0.0.1" start >/dev/null
    trap '"${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast stop >/dev/null' EXIT
    "${pg_as[@]}" "$pg_bin/createdb" -h 127.0.0.1 -p "$port" -U hwsim hwsim_test
    export HWSIM_TEST_POSTGRES_URL="postgresql+psycopg://hwsim@127.0.0.1:$port/hwsim_test"
    echo "PostgreSQL for the tests: $HWSIM_TEST_POSTGRES_URL" >&2
}
