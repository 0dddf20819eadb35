/** The numbers of a traffic run: percentiles, counts, success rate, fees, and their text. */
import { describe, expect, it } from 'vitest';
import { formatLive, formatSummary, percentile, TrafficStats } from '../../src/devnet/traffic-stats.ts';

describe('percentile (nearest rank)', () => {
  it('picks the value at rank ceil(p·n)', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([10, 20, 30], 50)).toBe(20);
    expect(percentile([10, 20, 30], 99)).toBe(30);
    expect(percentile([], 50)).toBeNull();
  });
});

describe('TrafficStats', () => {
  it('counts outcomes, fees and reasons; the rate is over finished payments', () => {
    const s = new TrafficStats(0);
    s.sent = 6;
    s.inFlight = 1;
    s.skipped = 2;
    s.record({ kind: 'success', latencyMs: 300, fee: 1000n });
    s.record({ kind: 'success', latencyMs: 100, fee: 500n });
    s.record({ kind: 'success', latencyMs: 200, fee: 0n });
    s.record({ kind: 'failed', reason: 'TemporaryChannelFailure' });
    s.record({ kind: 'rejected', reason: 'Failed to build route' });
    const sum = s.summary(2000);
    expect(sum).toMatchObject({
      sent: 6,
      succeeded: 3,
      failed: 1,
      rejected: 1,
      unfinished: 1,
      skipped: 2,
      elapsed_s: 2,
      tps: 1.5,
      success_rate: 0.6,
      latency_ms: { p50: 200, p99: 300, max: 300 },
      fees: '1500',
      reasons: { TemporaryChannelFailure: 1, 'Failed to build route': 1 },
    });
    expect(formatLive(sum)).toContain('ok 3  failed 2  in flight 1  tps 1.50  success 60.0%  p50 200 ms');
    expect(formatLive(sum)).toContain('fees 0.000015 CKB');
    expect(formatSummary(sum)).toContain('succeeded         3');
    expect(formatSummary(sum)).toContain('1 × TemporaryChannelFailure');
  });

  it('reports no latency and a zero rate before anything finished', () => {
    const sum = new TrafficStats(0).summary(500);
    expect(sum.latency_ms).toEqual({ p50: null, p99: null, max: null });
    expect(sum.success_rate).toBe(0);
    expect(formatLive(sum)).toContain('p50 -  p99 -');
  });
});
