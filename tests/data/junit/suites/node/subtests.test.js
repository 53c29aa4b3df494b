// node's own test runner, tests with subtests: a parent that fails through a subtest, a
// cancelled subtest, a timeout, a todo that fails, a describe whose `before` fails, an empty
// and a skipped describe. Every failure is in the report, on a testcase or counted for its
// parent.
const { describe, test, before } = require('node:test');
const assert = require('node:assert');

test('parent', async (t) => {
  await t.test('sub passes', () => {});
  await t.test('sub fails', () => {
    assert.strictEqual(1 + 1, 3);
  });
});

test('leaves a subtest running', (t) => {
  t.test('late', async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
  });
});

test('times out', { timeout: 50 }, async () => {
  await new Promise((resolve) => setTimeout(resolve, 500));
});

describe('Setup', () => {
  before(() => {
    throw new Error('no database');
  });
  test('needs the database', () => {});
});

describe('Outer', () => {
  test('adds', () => {
    assert.strictEqual(1 + 1, 2);
  });
  test('todo that fails', { todo: true }, () => {
    assert.ok(false);
  });
});

// A describe with no test, and a skipped one: node writes each as a <testcase> and tallies
// it as a suite, not a test.
describe('Empty', () => {});
describe.skip('Skipped', () => {
  test('never runs', () => {});
});
