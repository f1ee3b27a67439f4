#!/usr/bin/env bash
# Runs the OCI distribution-spec conformance suite (a prebuilt `conformance.test` binary, built
# outside this repo: docs/registry.md, "Conformance") against a real `berth server` and prints
# passed/failed/skipped per category (pull, push, content discovery, content management).
#
#   OCI_CONFORMANCE_BIN=/path/to/conformance.test scripts/registry-conformance.sh [ginkgo flags]
#
# The server runs from this checkout's dist/ (build it first) on a fresh data dir with tokens on,
# as `berth server` runs by default, so the suite also goes through the registry's auth: its
# user is any name and its password the server's admin token (docs/registry.md, "Auth"). Every
# OCI_* variable the suite reads can be overridden from the environment (OCI_DEBUG=1 prints each
# request). The suite's report (report.html, junit.xml) and the server's log land in
# OCI_REPORT_DIR, .bench/registry-conformance by default. Exits with the suite's status: 0 only
# when no case failed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
suite=${OCI_CONFORMANCE_BIN:-}
if [ -z "$suite" ]; then
  echo "registry-conformance: no suite binary: set OCI_CONFORMANCE_BIN to a conformance.test built from" >&2
  echo "opencontainers/distribution-spec's conformance/ (docs/registry.md, \"Conformance\", says how)" >&2
  exit 2
fi
if [ ! -x "$suite" ]; then
  echo "registry-conformance: OCI_CONFORMANCE_BIN=$suite is not an executable file" >&2
  exit 2
fi
if [ ! -f "$root/dist/cli/main.js" ]; then
  echo "registry-conformance: $root/dist is not built: run npx tsc -p tsconfig.json first" >&2
  exit 2
fi

report=${OCI_REPORT_DIR:-$root/.bench/registry-conformance}
mkdir -p "$report"
report=$(cd "$report" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/berth-registry-conformance-XXXXXX")
server_pid=''
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# The server prints its URL as its first line once it listens, and writes admin.token before that.
"$root/bin/berth" server --listen 127.0.0.1:0 --dir "$work/data" >"$work/server.out" 2>"$report/berth-server.log" &
server_pid=$!
url=''
for _ in $(seq 1 600); do
  url=$(head -n 1 "$work/server.out" 2>/dev/null || true)
  case $url in http://*) break ;; esac
  url=''
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "registry-conformance: berth server exited before listening; its log:" >&2
    tail -n 20 "$report/berth-server.log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "registry-conformance: berth server printed no URL within 60 s" >&2
  exit 1
fi

export OCI_ROOT_URL=${OCI_ROOT_URL:-$url}
export OCI_NAMESPACE=${OCI_NAMESPACE:-conformance/repo}
export OCI_CROSSMOUNT_NAMESPACE=${OCI_CROSSMOUNT_NAMESPACE:-conformance/other}
export OCI_USERNAME=${OCI_USERNAME:-conformance}
OCI_PASSWORD=${OCI_PASSWORD:-$(cat "$work/data/admin.token")}
export OCI_PASSWORD
export OCI_TEST_PULL=${OCI_TEST_PULL:-1}
export OCI_TEST_PUSH=${OCI_TEST_PUSH:-1}
export OCI_TEST_CONTENT_DISCOVERY=${OCI_TEST_CONTENT_DISCOVERY:-1}
export OCI_TEST_CONTENT_MANAGEMENT=${OCI_TEST_CONTENT_MANAGEMENT:-1}
export OCI_HIDE_SKIPPED_WORKFLOWS=${OCI_HIDE_SKIPPED_WORKFLOWS:-0}
export OCI_DEBUG=${OCI_DEBUG:-0}
# berth mounts a blob only from the repository `from` names (a blob is readable only through a
# repository it was pushed to or mounted into), never automatically: the suite's "disabled" case.
export OCI_AUTOMATIC_CROSSMOUNT=${OCI_AUTOMATIC_CROSSMOUNT:-0}
export OCI_REPORT_DIR=$report

echo "registry-conformance: $suite against berth server $url (report in $report)"
rm -f "$report/junit.xml"
status=0
# The suite writes its report into the working directory too when OCI_REPORT_DIR is unset; run
# it from the report dir so nothing lands in the checkout.
(cd "$report" && "$suite" "$@") >"$report/suite.out" 2>&1 || status=$?

if [ ! -f "$report/junit.xml" ]; then
  echo "registry-conformance: the suite wrote no junit.xml (exit $status); its output:" >&2
  tail -n 40 "$report/suite.out" >&2
  [ "$status" -ne 0 ] || status=1
  exit "$status"
fi

# Counts per category: a test case's name is "OCI Distribution Conformance Tests <Category> …".
node - "$report/junit.xml" <<'EOF'
const { readFileSync } = require('node:fs');
const xml = readFileSync(process.argv[2], 'utf8');
const categories = ['Pull', 'Push', 'Content Discovery', 'Content Management'];
const counts = new Map(categories.map((c) => [c, { passed: 0, failed: 0, skipped: 0 }]));
const other = { passed: 0, failed: 0, skipped: 0 };
const failures = [];
for (const m of xml.matchAll(/<testcase name="([^"]*)"[^>]*status="([a-z]+)"/g)) {
  const name = m[1].replace(/&(#39|quot|lt|gt|amp);/g, (_, e) => ({ '#39': "'", quot: '"', lt: '<', gt: '>', amp: '&' })[e]);
  const rest = name.replace(/^OCI Distribution Conformance Tests /, '');
  const category = categories.find((c) => rest.startsWith(`${c} `));
  const row = category === undefined ? other : counts.get(category);
  // ginkgo's statuses: passed, skipped, pending, failed, panicked, interrupted, aborted, timedout.
  const kind = m[2] === 'passed' ? 'passed' : m[2] === 'skipped' || m[2] === 'pending' ? 'skipped' : 'failed';
  row[kind] += 1;
  if (kind === 'failed') failures.push(`  ${m[2]}: ${rest}`);
}
const line = (name, r) =>
  `${name.padEnd(20)} ${String(r.passed).padStart(6)} ${String(r.failed).padStart(6)} ${String(r.skipped).padStart(7)}`;
console.log(`${'category'.padEnd(20)} passed failed skipped`);
for (const [name, r] of counts) console.log(line(name, r));
if (other.passed + other.failed + other.skipped > 0) console.log(line('(suite)', other));
if (failures.length > 0) console.log(`failed (details in suite.out and report.html):\n${failures.join('\n')}`);
EOF
exit "$status"
