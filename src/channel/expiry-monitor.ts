/**
 * The shell of `expiry.ts`: every check interval, each open channel's TLCs are checked against the
 * clock and the pure decisions carried out through the channel service — force close, fulfil with
 * a known preimage, or hand a received TLC to the payments layer to fail with ExpiryTooSoon.
 */

import { ChannelError } from './errors.ts';
import { checkTlcExpiry, type ExpiryPolicy, type TlcKnowledge } from './expiry.ts';
import type { Channel, Tlc } from './state.ts';
import type { RemoveReason } from './tlc.ts';

export interface ExpiryHooks extends TlcKnowledge {
  /** Fails a received TLC near its expiry (the payments layer builds the ExpiryTooSoon packet). */
  failExpiring?: (channelId: string, t: Tlc) => Promise<void>;
}

/** What the monitor needs of the channel service. */
export interface MonitoredChannels {
  list(): Channel[];
  forceClose(channelId: string): Promise<void>;
  removeTlc(channelId: string, tlcId: bigint, reason: RemoveReason, opts: { waitMs: number }): Promise<void>;
}

interface Log {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export class ExpiryMonitor {
  private timer?: NodeJS.Timeout;
  private busy = false;
  hooks: ExpiryHooks = {};

  constructor(
    private readonly channels: MonitoredChannels,
    private readonly policy: ExpiryPolicy,
    private readonly log: Log,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.checkAll(), this.policy.checkIntervalMs);
    this.timer.unref?.();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One pass over every channel (the reference's CheckChannels). */
  async checkAll(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const ch of this.channels.list()) {
        for (const a of checkTlcExpiry(ch, this.now(), this.policy, this.hooks)) await this.act(ch, a);
      }
    } finally {
      this.busy = false;
    }
  }

  private async act(ch: Channel, a: ReturnType<typeof checkTlcExpiry>[number]): Promise<void> {
    const what = { channel: ch.id, action: a.type };
    try {
      switch (a.type) {
        case 'forceClose':
          this.log.info({ ...what, reason: a.reason }, 'force closing channel: TLC expiry');
          await this.channels.forceClose(ch.id);
          return;
        case 'fulfil':
          // Busy channel: the next pass tries again.
          await this.channels.removeTlc(
            ch.id,
            a.tlc.id,
            { preimage: Buffer.from(a.preimage.replace(/^0x/, ''), 'hex') },
            { waitMs: 0 },
          );
          this.log.info({ ...what, tlc_id: String(a.tlc.id) }, 'received TLC fulfilled on retry');
          return;
        case 'failReceived':
          if (!this.hooks.failExpiring) return;
          this.log.info({ ...what, tlc_id: String(a.tlc.id) }, 'failing received TLC near its expiry');
          await this.hooks.failExpiring(ch.id, a.tlc);
          return;
      }
    } catch (e) {
      // A round in progress: the next pass tries again, no need to say so every time.
      if (ChannelError.is(e, 'WaitingTlcAck')) return;
      this.log.warn({ ...what, err: (e as Error).message }, 'TLC expiry action not taken');
    }
  }
}
