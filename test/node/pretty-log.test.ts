/** `formatLine` of `log_format: pretty`: pino's JSON line → one readable line. */
import { describe, expect, it } from 'vitest';
import { formatLine } from '../../src/node/pretty-log.ts';

describe('pretty log lines', () => {
  it('puts time, level and message first, then the fields, quoting what needs it', () => {
    const time = Date.UTC(2026, 10, 26, 12, 4, 5, 123);
    const line = JSON.stringify({
      level: 30,
      time,
      pid: 7,
      name: 'strand',
      msg: 'TLC failed',
      event: 'tlc_failed',
      reason: 'failed downstream (the reason is for the payer)',
      amount: '100',
      flags: ['COOPERATIVE'],
      ok: true,
    });
    expect(formatLine(line)).toBe(
      '12:04:05.123 INFO  TLC failed  event=tlc_failed reason="failed downstream (the reason is for the payer)" amount=100 flags=["COOPERATIVE"] ok=true',
    );
  });

  it('names every pino level, colours only when asked, keeps a line that is not JSON', () => {
    const at = (level: number) => formatLine(JSON.stringify({ level, time: 0, msg: 'm' }));
    expect([10, 20, 30, 40, 50, 60].map((l) => at(l).split(' ')[1])).toEqual([
      'TRACE',
      'DEBUG',
      'INFO',
      'WARN',
      'ERROR',
      'FATAL',
    ]);
    expect(at(50)).not.toContain('\u001b[');
    expect(formatLine(JSON.stringify({ level: 50, time: 0, msg: 'm' }), true)).toContain('\u001b[31mERROR');
    expect(formatLine('not json\n')).toBe('not json');
  });
});
