/**
 * The payment history's writes (`graph/history-writer.ts`): a record changed many times within
 * the window is written once, in its latest value (a deletion too); a flush writes at once; a
 * failed write is reported and does not stop the others.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Direction, TimedResult } from '../../src/graph/history.ts';
import { HistoryWriter } from '../../src/graph/history-writer.ts';

const result = (n: number): TimedResult => ({
  failTime: 0,
  failAmount: 0n,
  successTime: n,
  successAmount: BigInt(n),
});

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('history writer', () => {
  it('writes each changed record once a window, in its latest value', () => {
    const saved: [string, Direction, TimedResult | null][] = [];
    const w = new HistoryWriter(
      (o, d, r) => saved.push([o, d, r]),
      () => {},
      1000,
    );
    for (let i = 1; i <= 50; i++) w.changed('a', 'forward', result(i));
    w.changed('b', 'backward', result(7));
    w.changed('c', 'forward', result(1));
    w.changed('c', 'forward', null);
    vi.advanceTimersByTime(999);
    expect(saved).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(saved).toEqual([
      ['a', 'forward', result(50)],
      ['b', 'backward', result(7)],
      ['c', 'forward', null],
    ]);
    // The next change starts a new window.
    w.changed('a', 'backward', result(2));
    vi.advanceTimersByTime(1000);
    expect(saved.at(-1)).toEqual(['a', 'backward', result(2)]);
    expect(saved).toHaveLength(4);
  });

  it('writes what is pending at once on flush (a stop), and nothing twice', () => {
    const saved: string[] = [];
    const w = new HistoryWriter(
      (o, d) => saved.push(`${o}/${d}`),
      () => {},
      1000,
    );
    w.changed('a', 'forward', result(1));
    w.flush();
    expect(saved).toEqual(['a/forward']);
    vi.advanceTimersByTime(5000);
    expect(saved).toEqual(['a/forward']);
  });

  it('reports a failed write and goes on with the others', () => {
    const saved: string[] = [];
    const errors: string[] = [];
    const w = new HistoryWriter(
      (o) => {
        if (o === 'bad') throw new Error('disk full');
        saved.push(o);
      },
      (e) => errors.push(e.message),
      1000,
    );
    w.changed('bad', 'forward', result(1));
    w.changed('good', 'forward', result(1));
    vi.advanceTimersByTime(1000);
    expect(errors).toEqual(['disk full']);
    expect(saved).toEqual(['good']);
  });
});
