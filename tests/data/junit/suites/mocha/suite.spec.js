const assert = require('assert');

describe('Outer', function () {
  describe('Inner', function () {
    it('adds', function () { assert.strictEqual(1 + 1, 2); });
    it('fails', function () { assert.strictEqual(1 + 1, 3); });
    it.skip('is skipped', function () {});
    it('is pending');
  });
  it('a::b holds colons', function () {});
  it('tab\there and\nnewline', function () {});
  it('', function () {});
});

describe('after hook', function () {
  afterEach(function () {
    if (this.currentTest.title === 'torn down') throw new Error('teardown broke');
  });
  it('torn down', function () {});
  it('second', function () {});
});

describe('before hook', function () {
  beforeEach(function () { throw new Error('setup broke'); });
  it('never runs', function () {});
  it('never runs either', function () {});
});

describe('after all', function () {
  after(function () { throw new Error('suite teardown broke'); });
  it('ran one', function () {});
  it('ran two', function () {});
});

describe('before all', function () {
  before(function () { throw new Error('suite setup broke'); });
  it('blocked one', function () {});
  it('blocked two', function () {});
});

describe('named hook', function () {
  beforeEach('opens the store', function () {
    if (this.currentTest.title === 'deep') throw new Error('store closed');
  });
  describe('Nested', function () {
    it('deep', function () {});
    it('shallow', function () {});
  });
});
