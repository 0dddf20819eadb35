/**
 * The gate of unauthenticated inbound sockets: from accept until the secio handshake proves a
 * key. They are bounded in total and per remote IP, and each has one deadline. A newcomer past a
 * bound does not wait and is not refused: the oldest unauthenticated socket (of the same IP when
 * that IP is at its bound) gives way. A real peer proves its key within a round trip or two, so a
 * flood of silent sockets — even from the peer's own IP — keeps evicting itself, never the peer,
 * and can never hold the listener shut.
 */

export interface GateLimits {
  /** Unauthenticated sockets at once, all IPs together. */
  total: number;
  /** Unauthenticated sockets at once from one IP. */
  perIp: number;
  /** From accept to a proven key (tentacle's handshake timeout: 10 s). */
  timeoutMs: number;
}

export const DEFAULT_GATE_LIMITS: GateLimits = { total: 64, perIp: 16, timeoutMs: 10_000 };

/** One unauthenticated socket's place at the gate. */
export interface GateTicket {
  /** Its key is proven (or it closed): it stops counting. Idempotent. */
  leave(): void;
}

interface Entry {
  ip: string;
  evict: (reason: string) => void;
  timer: NodeJS.Timeout;
}

export class InboundGate {
  /** Insertion order is age: the first entry is the oldest. */
  private readonly entries = new Set<Entry>();
  private readonly perIp = new Map<string, number>();

  constructor(private readonly limits: GateLimits = DEFAULT_GATE_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  /** Admits a socket from `ip`, evicting the oldest one in its way; `evict` tears a socket down. */
  enter(ip: string, evict: (reason: string) => void): GateTicket {
    if ((this.perIp.get(ip) ?? 0) >= this.limits.perIp) this.evictOldest(ip);
    else if (this.entries.size >= this.limits.total) this.evictOldest();
    const entry: Entry = {
      ip,
      evict,
      timer: setTimeout(() => this.remove(entry, 'handshake timeout'), this.limits.timeoutMs),
    };
    entry.timer.unref();
    this.entries.add(entry);
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1);
    return { leave: () => this.remove(entry) };
  }

  private evictOldest(ip?: string): void {
    for (const e of this.entries) {
      if (ip !== undefined && e.ip !== ip) continue;
      this.remove(e, 'evicted by a newer unauthenticated connection');
      return;
    }
  }

  /** Takes `entry` off the gate; with a reason, also tears its socket down. */
  private remove(entry: Entry, evictReason?: string): void {
    if (!this.entries.delete(entry)) return;
    clearTimeout(entry.timer);
    const n = (this.perIp.get(entry.ip) ?? 1) - 1;
    if (n === 0) this.perIp.delete(entry.ip);
    else this.perIp.set(entry.ip, n);
    if (evictReason) entry.evict(evictReason);
  }
}
