/**
 * Which open channels the funding monitor checks on a tick (`FundingMonitor`: is
 * the funding cell still live, or did the peer force-close?). Each check is one or two CKB
 * requests; a node with thousands of channels checking all of them every tick floods the chain
 * client and its own event loop (10,000 channels: 10,000 concurrent requests every 2 s, and the
 * node stops answering RPC). A tick takes the next `perTick` channels in turn, so every channel
 * is still checked, once per ⌈channels / perTick⌉ ticks; a node with fewer channels checks every
 * one on every tick, as before.
 */

/** Checks per tick: at the default 2 s tick, 64 channels a tick is 32 requests a second. */
export const FUNDING_CHECKS_PER_TICK = 64;

export class FundingSweep {
  private next = 0;

  constructor(private readonly perTick = FUNDING_CHECKS_PER_TICK) {}

  /** The channels of `open` to check now: all of them, or the next `perTick` after the last tick's. */
  take<T>(open: T[]): T[] {
    if (open.length <= this.perTick) return open;
    const start = this.next % open.length;
    this.next = start + this.perTick;
    const out = open.slice(start, start + this.perTick);
    if (out.length < this.perTick) out.push(...open.slice(0, this.perTick - out.length));
    return out;
  }
}
