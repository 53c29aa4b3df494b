require('../lib/missing-module');
test('never collected', () => {});
