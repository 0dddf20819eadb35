/**
 * `update_channel`'s step: our forwarding policy of a channel changed (enabled, expiry delta, TLC
 * minimum, proportional fee). Pure: the next state, and on a ready channel the `UpdateTlcInfo`
 * that tells the peer; the service commits it and broadcasts the new channel update.
 */
import { hexToBytes } from '../codec/index.ts';
import type { Channel } from './state.ts';
import type { Effect, Step } from './step.ts';

export interface PolicyUpdate {
  enabled?: boolean;
  tlcExpiryDelta?: bigint;
  tlcMinimumValue?: bigint;
  tlcFeeProportionalMillionths?: bigint;
}

export function policyUpdate(ch: Channel, u: PolicyUpdate, nowMs: number): Step {
  const next: Channel = {
    ...ch,
    // Only what is given changes (the reference's handle_update_command).
    enabled: u.enabled ?? ch.enabled,
    tlcExpiryDelta: u.tlcExpiryDelta ?? ch.tlcExpiryDelta,
    tlcMinValue: u.tlcMinimumValue ?? ch.tlcMinValue,
    tlcFeeProportionalMillionths: u.tlcFeeProportionalMillionths ?? ch.tlcFeeProportionalMillionths,
  };
  const effects: Effect[] = [];
  if (next.state === 'CHANNEL_READY') {
    effects.push({
      type: 'send',
      msg: {
        type: 'UpdateTlcInfo',
        value: {
          channelId: hexToBytes(next.id),
          timestamp: BigInt(nowMs),
          channelFlags: next.enabled ? 0 : 1,
          tlcExpiryDelta: next.tlcExpiryDelta,
          tlcMinimumValue: next.tlcMinValue,
          tlcFeeProportionalMillionths: next.tlcFeeProportionalMillionths,
        },
      },
    });
  }
  return { ch: next, effects };
}
