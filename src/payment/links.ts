/**
 * Which incoming TLC or payment attempt each outgoing TLC belongs to, and the final-hop TLCs held
 * for a hold invoice — persisted, so that a fulfil or a failure arriving after a restart still
 * finds its way back.
 */
import type { Db, DomainSchema } from '../store/index.ts';

export const paymentLinkSchema: DomainSchema = {
  domain: 'payment_links',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE tlc_links (
             out_channel_id TEXT NOT NULL,
             out_tlc_id TEXT NOT NULL,
             kind TEXT NOT NULL CHECK (kind IN ('origin', 'forward')),
             payment_hash TEXT NOT NULL,
             attempt_id TEXT,
             in_channel_id TEXT,
             in_tlc_id TEXT,
             shared_secret TEXT,
             PRIMARY KEY (out_channel_id, out_tlc_id)
           );
           CREATE TABLE held_tlcs (
             channel_id TEXT NOT NULL,
             tlc_id TEXT NOT NULL,
             payment_hash TEXT NOT NULL,
             amount TEXT NOT NULL,
             PRIMARY KEY (channel_id, tlc_id)
           );
           CREATE INDEX held_tlcs_hash ON held_tlcs (payment_hash);`,
    },
    {
      // MPP parts: the total their record names, when they are released, and the secret that
      // encrypts a failure for the sender; `seq` keeps arrival order.
      version: 2,
      up: `ALTER TABLE held_tlcs ADD COLUMN total_amount TEXT;
           ALTER TABLE held_tlcs ADD COLUMN hold_expire_at INTEGER;
           ALTER TABLE held_tlcs ADD COLUMN shared_secret TEXT;
           ALTER TABLE held_tlcs ADD COLUMN seq INTEGER;`,
    },
    {
      // The outcome of an outgoing TLC, written in the same turn as the channel state that
      // removed it and cleared once the payment session or the upstream TLC has taken it: an
      // outcome a crash interrupted is replayed on start instead of lost with the removed TLC.
      version: 3,
      up: `CREATE TABLE tlc_outcomes (
             channel_id TEXT NOT NULL,
             tlc_id TEXT NOT NULL,
             preimage TEXT,
             error TEXT,
             PRIMARY KEY (channel_id, tlc_id)
           );
           CREATE INDEX tlc_links_attempt ON tlc_links (attempt_id);`,
    },
  ],
};

export type TlcLink =
  | { kind: 'origin'; paymentHash: string; attemptId: string }
  | { kind: 'forward'; paymentHash: string; inChannelId: string; inTlcId: bigint; sharedSecret: string };

export interface HeldTlc {
  channelId: string;
  tlcId: bigint;
  paymentHash: string;
  amount: bigint;
  /** MPP: the total named by the part's record. */
  totalAmount?: bigint | null;
  /** ms since the epoch after which the part is failed (MPP parts awaiting the total). */
  holdExpireAt?: number | null;
  /** Hex; encrypts the failure packet for the sender. */
  sharedSecret?: string | null;
}

/** What became of an outgoing TLC: fulfilled with the preimage, or failed with an error packet. */
export type TlcOutcome = { preimage: Uint8Array } | { errorPacket: Uint8Array };

export interface RecordedOutcome {
  channelId: string;
  tlcId: bigint;
  outcome: TlcOutcome;
}

/**
 * Links read or written outside a domain transaction, by `linkKey` (null: no link), one map per
 * database connection (every `TlcLinks` on the same `Db` shares it). A payment looks its TLC's
 * link up ~5 times (each channel event of the TLC, its outcome, its removal): on Postgres each was
 * a round trip to the server. Only this class writes `tlc_links`; a write inside a domain
 * transaction drops the entry instead (the transaction may still roll back).
 */
const caches = new WeakMap<Db, Map<string, TlcLink | null>>();
/** Entries kept at most (the map starts over when full). */
const MAX_CACHED = 20_000;
const linkKey = (channelId: string, tlcId: bigint) => `${channelId}/${tlcId}`;

export class TlcLinks {
  private readonly cache: Map<string, TlcLink | null>;

  constructor(private readonly db: Db) {
    let cache = caches.get(db);
    if (!cache) {
      cache = new Map();
      caches.set(db, cache);
    }
    this.cache = cache;
  }

  /** What `get` will answer for the key, once what was just written or read is committed. */
  private remember(key: string, link: TlcLink | null): void {
    if (this.db.inTransaction) {
      this.cache.delete(key);
      return;
    }
    if (this.cache.size >= MAX_CACHED) this.cache.clear();
    this.cache.set(key, link);
  }

  put(outChannelId: string, outTlcId: bigint, link: TlcLink): void {
    this.db
      .prepare(
        `INSERT OR REPLACE INTO tlc_links (out_channel_id, out_tlc_id, kind, payment_hash, attempt_id, in_channel_id, in_tlc_id, shared_secret)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        outChannelId,
        outTlcId.toString(),
        link.kind,
        link.paymentHash,
        link.kind === 'origin' ? link.attemptId : null,
        link.kind === 'forward' ? link.inChannelId : null,
        link.kind === 'forward' ? link.inTlcId.toString() : null,
        link.kind === 'forward' ? link.sharedSecret : null,
      );
    this.remember(linkKey(outChannelId, outTlcId), link);
  }

  get(outChannelId: string, outTlcId: bigint): TlcLink | undefined {
    const key = linkKey(outChannelId, outTlcId);
    const hit = this.cache.get(key);
    if (hit !== undefined) return hit ?? undefined;
    const r = this.db
      .prepare('SELECT * FROM tlc_links WHERE out_channel_id = ? AND out_tlc_id = ?')
      .get(outChannelId, outTlcId.toString()) as Record<string, string | null> | undefined;
    const link: TlcLink | null = !r
      ? null
      : r.kind === 'origin'
        ? { kind: 'origin', paymentHash: r.payment_hash!, attemptId: r.attempt_id! }
        : {
            kind: 'forward',
            paymentHash: r.payment_hash!,
            inChannelId: r.in_channel_id!,
            inTlcId: BigInt(r.in_tlc_id!),
            sharedSecret: r.shared_secret!,
          };
    // Read inside a domain transaction it may be that transaction's own, not yet committed.
    if (!this.db.inTransaction) this.remember(key, link);
    return link ?? undefined;
  }

  /** Our outgoing TLCs still linked for a payment hash. */
  withHash(paymentHash: string): { channelId: string; tlcId: bigint; link: TlcLink }[] {
    const rows = this.db
      .prepare('SELECT out_channel_id, out_tlc_id FROM tlc_links WHERE lower(payment_hash) = lower(?)')
      .all(paymentHash) as { out_channel_id: string; out_tlc_id: string }[];
    return rows.map((r) => {
      const tlcId = BigInt(r.out_tlc_id);
      return { channelId: r.out_channel_id, tlcId, link: this.get(r.out_channel_id, tlcId) as TlcLink };
    });
  }

  /** Whether the incoming TLC was forwarded (an outgoing TLC still linked to it). */
  forwardedFrom(inChannelId: string, inTlcId: bigint): boolean {
    return !!this.db
      .prepare("SELECT 1 FROM tlc_links WHERE kind = 'forward' AND in_channel_id = ? AND in_tlc_id = ?")
      .get(inChannelId, inTlcId.toString());
  }

  /** Whether the TLC is held for a hold invoice. */
  isHeld(channelId: string, tlcId: bigint): boolean {
    return !!this.db
      .prepare('SELECT 1 FROM held_tlcs WHERE channel_id = ? AND tlc_id = ?')
      .get(channelId, tlcId.toString());
  }

  /** The outgoing TLC an attempt was sent as, once the channel took it. */
  ofAttempt(attemptId: string): { channelId: string; tlcId: bigint } | undefined {
    const r = this.db
      .prepare("SELECT out_channel_id, out_tlc_id FROM tlc_links WHERE kind = 'origin' AND attempt_id = ?")
      .get(attemptId) as { out_channel_id: string; out_tlc_id: string } | undefined;
    return r ? { channelId: r.out_channel_id, tlcId: BigInt(r.out_tlc_id) } : undefined;
  }

  recordOutcome(channelId: string, tlcId: bigint, outcome: TlcOutcome): void {
    const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
    this.db
      .prepare(
        'INSERT OR REPLACE INTO tlc_outcomes (channel_id, tlc_id, preimage, error) VALUES (?, ?, ?, ?)',
      )
      .run(
        channelId,
        tlcId.toString(),
        'preimage' in outcome ? hex(outcome.preimage) : null,
        'errorPacket' in outcome ? hex(outcome.errorPacket) : null,
      );
  }

  hasOutcome(channelId: string, tlcId: bigint): boolean {
    return !!this.db
      .prepare('SELECT 1 FROM tlc_outcomes WHERE channel_id = ? AND tlc_id = ?')
      .get(channelId, tlcId.toString());
  }

  /** Outcomes not yet taken by their session or upstream TLC. */
  outcomes(): RecordedOutcome[] {
    return (
      this.db.prepare('SELECT * FROM tlc_outcomes ORDER BY rowid').all() as {
        channel_id: string;
        tlc_id: string;
        preimage: string | null;
        error: string | null;
      }[]
    ).map((r) => ({
      channelId: r.channel_id,
      tlcId: BigInt(r.tlc_id),
      outcome:
        r.preimage !== null
          ? { preimage: Buffer.from(r.preimage, 'hex') }
          : { errorPacket: Buffer.from(r.error ?? '', 'hex') },
    }));
  }

  clearOutcome(channelId: string, tlcId: bigint): void {
    this.db
      .prepare('DELETE FROM tlc_outcomes WHERE channel_id = ? AND tlc_id = ?')
      .run(channelId, tlcId.toString());
  }

  remove(outChannelId: string, outTlcId: bigint): void {
    this.db
      .prepare('DELETE FROM tlc_links WHERE out_channel_id = ? AND out_tlc_id = ?')
      .run(outChannelId, outTlcId.toString());
    this.remember(linkKey(outChannelId, outTlcId), null);
  }

  hold(t: HeldTlc): void {
    this.db
      .prepare(
        `INSERT OR REPLACE INTO held_tlcs (channel_id, tlc_id, payment_hash, amount, total_amount, hold_expire_at, shared_secret, seq)
         VALUES (?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM held_tlcs))`,
      )
      .run(
        t.channelId,
        t.tlcId.toString(),
        t.paymentHash,
        t.amount.toString(),
        t.totalAmount?.toString() ?? null,
        t.holdExpireAt ?? null,
        t.sharedSecret ?? null,
      );
  }

  /** The TLCs held for a payment hash, in arrival order. */
  held(paymentHash: string): HeldTlc[] {
    return (
      this.db
        .prepare('SELECT * FROM held_tlcs WHERE payment_hash = ? ORDER BY seq, rowid')
        .all(paymentHash) as Record<string, string | number | null>[]
    ).map((r) => ({
      channelId: r.channel_id as string,
      tlcId: BigInt(r.tlc_id as string),
      paymentHash: r.payment_hash as string,
      amount: BigInt(r.amount as string),
      totalAmount: r.total_amount === null ? null : BigInt(r.total_amount as string),
      holdExpireAt: r.hold_expire_at === null ? null : Number(r.hold_expire_at),
      sharedSecret: (r.shared_secret as string | null) ?? null,
    }));
  }

  /** Every payment hash with a TLC held for it. */
  heldHashes(): string[] {
    return (
      this.db.prepare('SELECT DISTINCT payment_hash FROM held_tlcs').all() as { payment_hash: string }[]
    ).map((r) => r.payment_hash);
  }

  /** Payment hashes with a held TLC whose hold time ended by `now`. */
  expiredHolds(now: number): string[] {
    return (
      this.db
        .prepare(
          'SELECT DISTINCT payment_hash FROM held_tlcs WHERE hold_expire_at IS NOT NULL AND hold_expire_at <= ?',
        )
        .all(now) as { payment_hash: string }[]
    ).map((r) => r.payment_hash);
  }

  unhold(channelId: string, tlcId: bigint): void {
    this.db
      .prepare('DELETE FROM held_tlcs WHERE channel_id = ? AND tlc_id = ?')
      .run(channelId, tlcId.toString());
  }

  release(paymentHash: string): void {
    this.db.prepare('DELETE FROM held_tlcs WHERE payment_hash = ?').run(paymentHash);
  }
}
