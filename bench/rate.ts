/** Calls of `fn` per second: a 300 ms warm-up, then batches of 20 for `seconds`, timed with performance.now(). */
export function rate(fn: () => void, seconds = Number(process.env.BENCH_SECONDS ?? 2)): number {
  const warmUntil = performance.now() + 300;
  while (performance.now() < warmUntil) fn();
  let n = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 20; i++) fn();
    n += 20;
    now = performance.now();
  }
  return n / ((now - start) / 1000);
}
