/**
 * The runs knob of the property tests. Each test names its own default count; `FUZZ_RUNS`
 * overrides them all: `FUZZ_RUNS=1000000` runs every property a million times, `FUZZ_RUNS=50x`
 * runs each fifty times its default (`npm run fuzz`, `npm run fuzz:rpc`).
 */
export function fuzzRuns(defaultRuns: number, env = process.env.FUZZ_RUNS): number {
  if (env === undefined || env === '') return defaultRuns;
  const m = /^(\d+)(x?)$/.exec(env.trim());
  const n = m ? Number(m[1]) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 1)
    throw new Error(`FUZZ_RUNS must be a count (1000) or a factor (50x), got '${env}'`);
  return m![2] ? defaultRuns * n : n;
}
