#!/bin/sh
# Re-creates the recorded JUnit reports beside this script from the suites in this folder.
# Needs node and npm (the npm registry) and, for go, the Debian packages golang and gotestsum.
# Every runner runs in /tmp/three-ledger-junit/<runner>, so absolute paths in the reports
# (mocha xunit's file attribute, stack traces) name that folder on every machine.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/..}
work=/tmp/three-ledger-junit
rm -rf "$work" && mkdir -p "$work"

project() {  # project NAME PACKAGE...: a fresh npm project with exact versions
  name=$1; shift
  mkdir -p "$work/$name" && cd "$work/$name" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --save-exact "$@" >/dev/null
}

project mocha mocha@11.8.0 mocha-junit-reporter@2.2.1
mkdir -p test && cp "$here/mocha/suite.spec.js" test/
mjr() { npx mocha --reporter mocha-junit-reporter --reporter-options "mochaFile=$1$2" test/suite.spec.js >/dev/null; echo "mocha-junit-reporter $2: exit $?"; }
mjr "$out/mocha-junit-reporter-default.xml" ""
mjr "$out/mocha-junit-reporter-jenkins.xml" ",jenkinsMode=true"
mjr "$out/mocha-junit-reporter-jenkins-pending.xml" ",jenkinsMode=true,includePending=true"
npx mocha --reporter xunit --reporter-options "output=$out/mocha-xunit.xml" test/suite.spec.js >/dev/null
echo "mocha xunit: exit $?"

project jest jest@30.5.2 jest-junit@17.0.0
mkdir -p __tests__ && cp "$here/jest/"*.test.js __tests__/
JEST_JUNIT_OUTPUT_FILE="$out/jest-junit-default.xml" npx jest __tests__ --ci --reporters=jest-junit >/dev/null 2>&1
echo "jest-junit default: exit $?"
JEST_JUNIT_OUTPUT_FILE="$out/jest-junit-recommended.xml" JEST_JUNIT_ADD_FILE_ATTRIBUTE=true \
  JEST_JUNIT_REPORT_TEST_SUITE_ERRORS=true JEST_JUNIT_ANCESTOR_SEPARATOR=" › " \
  npx jest __tests__ --ci --reporters=jest-junit >/dev/null 2>&1
echo "jest-junit recommended: exit $?"

project vitest vitest@4.1.12
mkdir -p test && cp "$here/vitest/"*.test.js test/
npx vitest run --reporter=junit --outputFile.junit="$out/vitest-junit.xml" >/dev/null 2>&1
echo "vitest junit: exit $?"

# node's own runner and its built-in junit reporter: nothing to install.
mkdir -p "$work/node/test" && cp "$here/node/"*.test.js "$work/node/test/" && cd "$work/node"
node --test --test-reporter=junit --test-reporter-destination="$out/node-test-junit.xml" \
  test/suite.test.js >/dev/null 2>&1
echo "node --test junit: exit $?"
node --test --test-reporter=junit --test-reporter-destination="$out/node-test-subtests-junit.xml" \
  test/subtests.test.js >/dev/null 2>&1
echo "node --test junit, subtests: exit $?"
node --test --test-reporter=junit --test-reporter-destination="$out/node-test-own-failure-junit.xml" \
  test/own-failure.test.js >/dev/null 2>&1
echo "node --test junit, own failure: exit $?"

if command -v gotestsum >/dev/null; then
  mkdir -p "$work/go" && cp -r "$here/go/." "$work/go/" && cd "$work/go"
  gotestsum --junitfile "$out/gotestsum.xml" -- ./... >/dev/null 2>&1
  echo "gotestsum: exit $?"
fi
