/**
 * Which received TLCs a restarted node may still have to handle, read from the channel state:
 * committed, with an onion, no removal in the state nor stepped back to be re-sent, on a
 * channel that can still remove them.
 */
import { describe, expect, it } from 'vitest';
import { enc } from '../../src/channel/round.ts';
import type { Channel, Tlc } from '../../src/channel/state.ts';
import { unresolvedReceivedOf } from '../../src/payment/channel-port.ts';

const ID = `0x${'11'.repeat(32)}`;

function tlc(id: bigint, o: Partial<Tlc> = {}): Tlc {
  return {
    id,
    offered: false,
    amount: 1000n,
    paymentHash: `0x${'22'.repeat(32)}`,
    expiry: 1n,
    hashAlgorithm: 0,
    onion: new Uint8Array([1, 2]),
    added: 'committed',
    ...o,
  };
}

const channel = (tlcs: Tlc[], o: Partial<Channel> = {}) =>
  ({ id: ID, state: 'CHANNEL_READY', flags: [], tlcs, ...o }) as unknown as Channel;

describe('the received TLCs left to handle', () => {
  it('takes committed received TLCs with an onion whose removal has not started', () => {
    const stepBack = enc({
      type: 'RemoveTlc',
      value: {
        channelId: Buffer.from(ID.slice(2), 'hex'),
        tlcId: 5n,
        reason: { fulfill: new Uint8Array(32) },
      },
    });
    const ch = channel(
      [
        tlc(0n),
        tlc(1n, { offered: true }),
        tlc(2n, { added: 'announced' }),
        tlc(3n, { removal: { preimage: '0x00', state: 'announced' } }),
        tlc(4n, { onion: new Uint8Array(0) }),
        tlc(5n),
      ],
      { retry: [stepBack] },
    );
    const found = unresolvedReceivedOf(ch);
    expect(found.map((t) => t.tlcId)).toEqual([0n]);
    expect(found[0]).toMatchObject({ channelId: ID, amount: 1000n, onion: new Uint8Array([1, 2]) });
  });

  it('takes none on a channel that can no longer remove them', () => {
    expect(unresolvedReceivedOf(channel([tlc(0n)], { state: 'CLOSED' }))).toEqual([]);
    const forced = channel([tlc(0n)], { state: 'SHUTTING_DOWN', shutdown: { force: true } } as never);
    expect(unresolvedReceivedOf(forced)).toEqual([]);
    const pending = channel([tlc(0n)], { state: 'SHUTTING_DOWN', shutdown: {} } as never);
    expect(unresolvedReceivedOf(pending)).toHaveLength(1);
  });
});
