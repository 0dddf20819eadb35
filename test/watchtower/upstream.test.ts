/** A preimage learned on chain fulfils the matching TLCs peers offered us, and only those. */
import { describe, expect, it } from 'vitest';
import type { Channel, Tlc } from '../../src/channel/state.ts';
import { fulfilReceivedTlcs } from '../../src/watchtower/upstream.ts';

const H = `0x${'aa'.repeat(32)}`;
const P = `0x${'bb'.repeat(32)}`;
const tlc = (id: bigint, offered: boolean, paymentHash = H, removal?: Tlc['removal']): Tlc => ({
  id,
  offered,
  amount: 1n,
  paymentHash,
  expiry: 0n,
  hashAlgorithm: 0,
  onion: new Uint8Array(0),
  added: 'committed',
  removal,
});
const channel = (id: string, state: Channel['state'], tlcs: Tlc[]) =>
  ({ id, state, tlcs }) as unknown as Channel;

describe('fulfilling upstream', () => {
  it('removes each matching received TLC with the preimage', async () => {
    const calls: [string, bigint, string][] = [];
    const chans = [
      channel('0x01', 'CHANNEL_READY', [
        tlc(0n, false),
        tlc(1n, true),
        tlc(2n, false, `0x${'cc'.repeat(32)}`),
        tlc(3n, false, H, { preimage: P, state: 'announced' }),
      ]),
      channel('0x02', 'CLOSED', [tlc(0n, false)]),
      channel('0x03', 'CHANNEL_READY', [tlc(7n, false, H.toUpperCase().replace('0X', '0x'))]),
    ];
    const n = await fulfilReceivedTlcs(
      {
        list: () => chans,
        removeTlc: async (c, id, r) => {
          if (c === '0x03') throw new Error('peer offline');
          calls.push([c, id, Buffer.from((r as { preimage: Uint8Array }).preimage).toString('hex')]);
        },
      },
      H,
      P,
    );
    expect(calls).toEqual([['0x01', 0n, 'bb'.repeat(32)]]);
    expect(n).toBe(1);
  });
});
