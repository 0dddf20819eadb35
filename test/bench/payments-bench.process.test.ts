/**
 * `bench:payments` itself, at a tiny size (a few payments, no warm-up, a lead-in of 4 at 3 in
 * flight): the script runs to the end on a real devnet and its last line is the JSON summary the
 * README's figures come from, with a run per path and in-flight level, each measuring its
 * payments after its lead-in, no failed payment, and the cost counters read from
 * the nodes' metrics (one at a time, every payment flushes each node's store at least once), and
 * the machine's CPU with the part other guests took (steal).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Run {
  in_flight: number;
  per_s: number;
  payments: number;
  lead_in: number;
  p50_ms: number;
  failed: number;
  machine_cpu_ms: number;
  machine_steal_ms: number;
  machine_mul_g_per_s: number;
  per_payment: Record<
    string,
    {
      cpu_ms: number;
      event_loop_cpu_ms: number;
      gc_pause_ms: number;
      full_gc_per_1000: number;
      fsync: number;
      fsync_ms: number;
      disk_kb: number;
    }
  >;
}

function runBench(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', 'bench/payments.bench.ts'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    p.on('exit', (code) => resolve({ code, out }));
  });
}

describe('bench:payments', () => {
  it('runs both paths and ends with its JSON summary', async () => {
    const { code, out } = await runBench({
      BENCH_PAYMENTS: '6',
      BENCH_CONCURRENCY: '3',
      BENCH_WARMUP: '0',
      BENCH_LEAD_IN: '4',
    });
    expect(code, out).toBe(0);
    const summary = JSON.parse(out.trim().split('\n').at(-1) as string) as {
      store: string;
      payments: number;
      warmup: number;
      one_channel: Run[];
      two_hops: Run[];
      curve: { backend: string; schnorr_verify_per_s: number };
    };
    expect([summary.store, summary.payments, summary.warmup]).toEqual(['sqlite', 6, 0]);
    for (const [runs, nodes] of [
      [summary.one_channel, ['alice', 'bob']],
      [summary.two_hops, ['alice', 'bob', 'carol']],
    ] as const) {
      expect(runs.map((r) => r.in_flight)).toEqual([1, 3]);
      // Each run measures its 6 payments; with 3 in flight only after 4 more at that level.
      expect(runs.map((r) => [r.payments, r.lead_in])).toEqual([
        [6, 0],
        [6, 4],
      ]);
      for (const r of runs) {
        expect(r.failed).toBe(0);
        expect(r.per_s).toBeGreaterThan(0);
        expect(r.p50_ms).toBeGreaterThan(0);
        // Steal is part of the machine's CPU time, never more (both from /proc/stat here).
        expect(r.machine_steal_ms).toBeGreaterThanOrEqual(0);
        expect(r.machine_steal_ms).toBeLessThanOrEqual(r.machine_cpu_ms);
        // The machine's speed just before the run, in the units of the curve ceiling below.
        expect(r.machine_mul_g_per_s).toBeGreaterThan(0);
        expect(Object.keys(r.per_payment)).toEqual(nodes);
        for (const c of Object.values(r.per_payment)) {
          expect(c.cpu_ms).toBeGreaterThan(0);
          // The event loop's thread is part of the process (two reads a few µs apart: a margin).
          expect(c.event_loop_cpu_ms).toBeGreaterThan(0);
          expect(c.event_loop_cpu_ms).toBeLessThanOrEqual(c.cpu_ms + 0.05);
          // The collector's pauses are the node thread's time, part of its CPU; counts never fall.
          expect(c.gc_pause_ms).toBeGreaterThanOrEqual(0);
          expect(c.gc_pause_ms).toBeLessThan(c.cpu_ms);
          expect(c.full_gc_per_1000).toBeGreaterThanOrEqual(0);
        }
      }
      for (const c of Object.values(runs[0]!.per_payment)) {
        expect(c.fsync).toBeGreaterThanOrEqual(1);
        // The flushes' own time, from the nodes' histogram: some, and at most the run's length.
        expect(c.fsync_ms).toBeGreaterThan(0);
        expect(c.fsync_ms).toBeLessThan(1000 / runs[0]!.per_s);
      }
    }
    expect(summary.curve.backend).toBe('libsecp256k1');
    expect(summary.curve.schnorr_verify_per_s).toBeGreaterThan(0);
  }, 240_000);
});
