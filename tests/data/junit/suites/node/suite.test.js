// node's own test runner: a pass, a fail, a skip and a todo in nested describes, and a
// top-level test whose title holds `::`.
const { describe, test } = require('node:test');
const assert = require('node:assert');

describe('Outer', () => {
  describe('Inner', () => {
    test('adds', () => {
      assert.strictEqual(1 + 1, 2);
    });
    test('fails', () => {
      assert.strictEqual(1 + 1, 3);
    });
    test('is skipped', { skip: 'not on this machine' }, () => {});
    test.todo('is todo');
  });
});

test('a::b holds colons', () => {});
