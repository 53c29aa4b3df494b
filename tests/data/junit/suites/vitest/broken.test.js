import '../lib/missing-module.js';
import { test } from 'vitest';
test('never collected', () => {});
