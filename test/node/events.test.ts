/**
 * The node's event log: a TLC added or settled at debug only (a busy node's info log would carry
 * two lines per TLC per hop), a failed TLC at info with its reason.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { Tlc } from '../../src/channel/state.ts';
import { NodeEventLog } from '../../src/node/events.ts';

const tlc: Tlc = {
  id: 3n,
  offered: false,
  amount: 1000n,
  paymentHash: `0x${'ab'.repeat(32)}`,
  expiry: 1_800_000_000_000n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
  added: 'committed',
};
const CHANNEL = `0x${'cd'.repeat(32)}`;

function logAt(level: string) {
  const lines: { level: number; event?: string; reason?: string }[] = [];
  const out = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  const events = new NodeEventLog(pino({ level }, out));
  return { events, lines };
}

describe('node event log', () => {
  it('logs TLCs added and settled at debug, not at info', async () => {
    for (const level of ['info', 'debug']) {
      const { events, lines } = logAt(level);
      events.tlc(CHANNEL, { type: 'received', tlc });
      events.tlc(CHANNEL, { type: 'fulfilled', tlc, preimage: `0x${'11'.repeat(32)}` });
      await new Promise((r) => setImmediate(r));
      expect(lines.map((l) => [l.level, l.event])).toEqual(
        level === 'info'
          ? []
          : [
              [20, 'tlc_added'],
              [20, 'tlc_settled'],
            ],
      );
    }
  });

  it('logs a failed TLC at info with the reason this node failed it', async () => {
    const { events, lines } = logAt('info');
    events.failing(CHANNEL, tlc.id, 'IncorrectOrUnknownPaymentDetails');
    events.tlc(CHANNEL, { type: 'failed', tlc, error: '0x00' });
    await new Promise((r) => setImmediate(r));
    expect(lines).toMatchObject([
      { level: 30, event: 'tlc_failed', reason: 'IncorrectOrUnknownPaymentDetails' },
    ]);
  });
});
