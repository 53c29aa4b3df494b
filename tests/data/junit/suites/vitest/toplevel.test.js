import { test, afterAll } from 'vitest';
afterAll(() => { throw new Error('file teardown broke'); });
test('top one', () => {});
