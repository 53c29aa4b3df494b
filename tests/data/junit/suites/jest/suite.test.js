describe('Outer', () => {
  describe('Inner', () => {
    test('adds', () => { expect(1 + 1).toBe(2); });
    test('fails', () => { expect(1 + 1).toBe(3); });
    test.skip('is skipped', () => {});
    test.todo('is todo');
  });
  test('a::b holds colons', () => {});
  test('tab\there and\nnewline', () => {});
  test('', () => {});
});

describe('after hook', () => {
  afterEach(() => {
    if (expect.getState().currentTestName === 'after hook torn down') throw new Error('teardown broke');
  });
  test('torn down', () => {});
  test('second', () => {});
});

describe('before hook', () => {
  beforeEach(() => { throw new Error('setup broke'); });
  test('never runs', () => {});
  test('never runs either', () => {});
});

describe('after all', () => {
  afterAll(() => { throw new Error('suite teardown broke'); });
  test('ran one', () => {});
});

describe('before all', () => {
  beforeAll(() => { throw new Error('suite setup broke'); });
  test('blocked one', () => {});
});
