/**
 * `update_channel`'s step alone (`channel/policy-update.ts`): only the fields given change, and a
 * ready channel tells its peer with an `UpdateTlcInfo` of the new policy. End to end (the peer's
 * graph, a disabled direction no longer routed): `lifecycle.process.test.ts`.
 */
import { describe, expect, it } from 'vitest';
import { policyUpdate } from '../../src/channel/policy-update.ts';
import type { Channel } from '../../src/channel/state.ts';
import { bytesToHex } from '../../src/codec/index.ts';

const ID = `0x${'ab'.repeat(32)}`;
const channel = (state: Channel['state']) =>
  ({
    id: ID,
    state,
    enabled: true,
    tlcExpiryDelta: 86_400_000n,
    tlcMinValue: 0n,
    tlcFeeProportionalMillionths: 1000n,
  }) as unknown as Channel;

describe('policyUpdate', () => {
  it('changes only what is given and sends the whole new policy on a ready channel', () => {
    const s = policyUpdate(
      channel('CHANNEL_READY'),
      { enabled: false, tlcMinimumValue: 500n },
      1_795_000_000_000,
    );
    expect(s.ch).toMatchObject({
      enabled: false,
      tlcExpiryDelta: 86_400_000n,
      tlcMinValue: 500n,
      tlcFeeProportionalMillionths: 1000n,
    });
    expect(s.effects).toHaveLength(1);
    const e = s.effects[0] as { type: string; msg: { type: string; value: Record<string, unknown> } };
    expect(e.type).toBe('send');
    expect(e.msg.type).toBe('UpdateTlcInfo');
    const { channelId, ...rest } = e.msg.value;
    expect(bytesToHex(channelId as Uint8Array)).toBe(ID);
    expect(rest).toEqual({
      timestamp: 1_795_000_000_000n,
      channelFlags: 1,
      tlcExpiryDelta: 86_400_000n,
      tlcMinimumValue: 500n,
      tlcFeeProportionalMillionths: 1000n,
    });
  });

  it('keeps a channel not yet ready quiet, and leaves it unchanged when nothing is given', () => {
    const pending = channel('AWAITING_CHANNEL_READY');
    const s = policyUpdate(pending, { tlcFeeProportionalMillionths: 7n }, 1);
    expect(s.effects).toEqual([]);
    expect(s.ch.tlcFeeProportionalMillionths).toBe(7n);
    expect(policyUpdate(pending, {}, 1).ch).toEqual(pending);
  });
});
