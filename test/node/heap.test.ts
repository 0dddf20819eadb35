/**
 * The heap's growth between full collections (`heap_growth_percent`, `node/heap.ts`) and the
 * collections counted for the metrics (`node/gc-stats.ts`). What the setting does to a node under
 * load is measured by `bench:payments` (full collections a thousand payments, per node).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/node/config.ts';
import { gcTotals } from '../../src/node/gc-stats.ts';
import { applyHeapGrowth, DEFAULT_HEAP_GROWTH_PERCENT } from '../../src/node/heap.ts';
import { NodeMetrics } from '../../src/node/metrics.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-heap-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('heap_growth_percent', () => {
  it('is 200 unless set, from the file, STRAND_HEAP_GROWTH_PERCENT or --heap-growth-percent', () => {
    expect(DEFAULT_HEAP_GROWTH_PERCENT).toBe(200);
    expect(loadConfig({ dir, env: {} }).heap_growth_percent).toBe(200);
    expect(loadConfig({ dir, env: { STRAND_HEAP_GROWTH_PERCENT: '0' } }).heap_growth_percent).toBe(0);
    expect(loadConfig({ dir, env: {}, flags: { 'heap-growth-percent': '150' } }).heap_growth_percent).toBe(
      150,
    );
    const file = path.join(dir, 'c.yml');
    fs.writeFileSync(file, 'heap_growth_percent: 300\n');
    expect(loadConfig({ dir, configFile: file, env: {} }).heap_growth_percent).toBe(300);
  });

  it('refuses what is not a percentage up to 1000, naming the field', () => {
    for (const bad of ['-1', '1001', 'lots', '2.5'])
      expect(() => loadConfig({ dir, env: { STRAND_HEAP_GROWTH_PERCENT: bad } }), bad).toThrow(
        /heap_growth_percent/,
      );
    expect(() => loadConfig({ dir, env: { STRAND_HEAP_GROWTH_PERCENT: '1001' } })).toThrow(
      /invalid configuration: heap_growth_percent: at most 1000 \(percent\)/,
    );
  });

  it("sets V8's growing factor, or leaves V8's own at 0", () => {
    const set: string[] = [];
    applyHeapGrowth(200, (f) => set.push(f));
    applyHeapGrowth(0, (f) => set.push(f));
    expect(set).toEqual(['--heap-growing-percent=200']);
  });
});

describe('the event loop thread counted apart', () => {
  it("serves the main thread's CPU, which grows with its work and stays within the process's", async () => {
    const read = async () => {
      const text = await new NodeMetrics().text();
      const one = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
      return {
        loop: one('strand_event_loop_cpu_seconds_total'),
        process: one('strand_process_cpu_seconds_total'),
      };
    };
    const a = await read();
    // A helper thread's work would count in the process's CPU only: this test runs on Linux (CI).
    let x = 0;
    const until = performance.now() + 60;
    while (performance.now() < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const b = await read();
    expect(a.loop).toBeGreaterThan(0);
    expect(b.loop - a.loop).toBeGreaterThan(0.04);
    expect(b.loop).toBeLessThanOrEqual(b.process + 0.01);
  });
});

describe('garbage collections counted', () => {
  it('counts collections by kind with their pauses, and the metrics serve them', async () => {
    const before = gcTotals().get('minor')!.count;
    // Garbage enough for several young-generation collections (the young generation is ≤ 32 MB).
    let keep = 0;
    for (let i = 0; i < 200_000; i++) keep += new Array(64).fill(i).length;
    expect(keep).toBe(200_000 * 64);
    // Entries reach the observer in a later turn.
    for (let i = 0; i < 50 && gcTotals().get('minor')!.count === before; i++)
      await new Promise((r) => setTimeout(r, 10));
    const minor = gcTotals().get('minor')!;
    expect(minor.count).toBeGreaterThan(before);
    expect(minor.pauseMs).toBeGreaterThan(0);

    const text = await new NodeMetrics().text();
    const sample = (name: string) =>
      Number(new RegExp(`^${name}\\{kind="minor"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN);
    expect(sample('strand_gc_collections_total')).toBeGreaterThanOrEqual(minor.count);
    expect(sample('strand_gc_pause_seconds_total')).toBeGreaterThan(0);
    expect(text).toMatch(/^strand_gc_collections_total\{kind="major"\} \d+$/m);
  });
});
