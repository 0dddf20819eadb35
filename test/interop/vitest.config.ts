import { defineConfig } from 'vitest/config';

/** `npm run test:interop`: tests against the reference node (run by `npm test` after the main suite: it needs Chromium). */
export default defineConfig({
  test: {
    root: new URL('../..', import.meta.url).pathname,
    include: ['test/interop/**/*.interop.ts', 'test/invoice/**/*.interop.ts', 'test/graph/**/*.interop.ts'],
    pool: 'forks',
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});
