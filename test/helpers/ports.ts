/**
 * Base ports for devnets in tests. A devnet listens on fixed ports (basePort + up to ~200), so
 * two devnets started at once by parallel test files must not overlap, and none may sit in the
 * kernel's ephemeral range, where the many port-0 listeners of other tests land. Each vitest
 * worker (VITEST_POOL_ID, 1…N, unique among the workers running at once) gets its own window of
 * 1000 ports below 32768; a random offset inside it spreads repeated runs.
 */
const FIRST = 20_000;
const WINDOW = 1_000;
const SPAN = 200;

export function devnetBasePort(): number {
  const pool = Number(process.env.VITEST_POOL_ID ?? 1);
  const window = Number.isFinite(pool) && pool > 0 ? (pool - 1) % 12 : 0;
  return FIRST + window * WINDOW + Math.floor(Math.random() * (WINDOW - SPAN));
}
