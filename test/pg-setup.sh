#!/usr/bin/env bash
# Makes sure a local PostgreSQL answers on 127.0.0.1:5432 with the role and
# database the tests use (mcpgate/mcpgate, database mcpgate_test). Installs
# PostgreSQL from Debian's packages when it is missing (needs root), starts
# the cluster when it is stopped. Safe to run again.
set -euo pipefail

PGPORT=${PGPORT:-5432}
if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "pg-setup: PostgreSQL is not installed; installing it (apt-get install -y postgresql)"
  if [ "$(id -u)" != 0 ]; then echo "pg-setup: run as root or install postgresql yourself" >&2; exit 1; fi
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

if ! pg_isready -q -h 127.0.0.1 -p "$PGPORT"; then
  cluster=$(pg_lsclusters -h | awk 'NR==1{print $1" "$2}')
  if [ -z "$cluster" ]; then
    echo "pg-setup: no PostgreSQL cluster; creating 15/main"
    pg_createcluster 15 main >/dev/null
    cluster="15 main"
  fi
  echo "pg-setup: starting PostgreSQL cluster $cluster"
  pg_ctlcluster $cluster start
  for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p "$PGPORT" && break; sleep 1; done
fi

psql_su() { if [ "$(id -u)" = 0 ]; then su postgres -c "psql -qtA -p $PGPORT $*"; else psql -qtA -h 127.0.0.1 -p "$PGPORT" -U postgres "$@"; fi; }
if [ "$(psql_su -c "\"SELECT 1 FROM pg_roles WHERE rolname='mcpgate'\"")" != 1 ]; then
  psql_su -c "\"CREATE ROLE mcpgate LOGIN SUPERUSER PASSWORD 'mcpgate'\""
fi
if [ "$(psql_su -c "\"SELECT 1 FROM pg_database WHERE datname='mcpgate_test'\"")" != 1 ]; then
  psql_su -c "\"CREATE DATABASE mcpgate_test OWNER mcpgate\""
fi
# Many tests in parallel each open a pool; leave room for them.
echo "pg-setup: PostgreSQL ready at postgres://mcpgate:mcpgate@127.0.0.1:$PGPORT/mcpgate_test"
