/**
 * The watchtower's tables in the node's SQLite store: watched channels and preimages, both per
 * caller node id (`''` = the node itself), and the outcome of each funding cell already dealt with
 * (so a restart neither repeats a sweep nor forgets one in flight).
 */
import type { Db, DomainSchema } from '../store/index.ts';
import {
  fromJsonText,
  type RevocationData,
  type SettlementData,
  toJsonText,
  type WatchedChannel,
} from './types.ts';

export const watchtowerSchema: DomainSchema = {
  domain: 'watchtower',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE watch_channels (
        node_id TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (node_id, channel_id)
      );
      CREATE TABLE watch_preimages (
        node_id TEXT NOT NULL,
        payment_hash TEXT NOT NULL,
        preimage TEXT NOT NULL,
        PRIMARY KEY (node_id, payment_hash)
      );
      CREATE INDEX watch_preimages_hash ON watch_preimages (payment_hash);
      CREATE TABLE watch_outcomes (
        funding_lock TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        tx_hash TEXT,
        at INTEGER NOT NULL
      );`,
    },
  ],
};

export type OutcomeKind = 'revoking' | 'revoked' | 'closed';

export class WatchtowerStore {
  private readonly q;

  constructor(private readonly db: Db) {
    this.q = {
      get: db.prepare('SELECT data FROM watch_channels WHERE node_id = ? AND channel_id = ?'),
      put: db.prepare(
        `INSERT INTO watch_channels (node_id, channel_id, data) VALUES (?, ?, ?)
         ON CONFLICT(node_id, channel_id) DO UPDATE SET data = excluded.data`,
      ),
      del: db.prepare('DELETE FROM watch_channels WHERE node_id = ? AND channel_id = ?'),
      all: db.prepare('SELECT data FROM watch_channels ORDER BY node_id, channel_id'),
      putPreimage: db.prepare(
        `INSERT INTO watch_preimages (node_id, payment_hash, preimage) VALUES (?, ?, ?)
         ON CONFLICT(node_id, payment_hash) DO UPDATE SET preimage = excluded.preimage`,
      ),
      delPreimage: db.prepare('DELETE FROM watch_preimages WHERE node_id = ? AND payment_hash = ?'),
      getPreimage: db.prepare('SELECT preimage FROM watch_preimages WHERE payment_hash = ? LIMIT 1'),
      searchPreimage: db.prepare(
        'SELECT preimage FROM watch_preimages WHERE substr(payment_hash, 1, 42) = ? LIMIT 1',
      ),
      getOutcome: db.prepare('SELECT kind, tx_hash FROM watch_outcomes WHERE funding_lock = ?'),
      putOutcome: db.prepare(
        `INSERT INTO watch_outcomes (funding_lock, kind, tx_hash, at) VALUES (?, ?, ?, ?)
         ON CONFLICT(funding_lock) DO UPDATE SET kind = excluded.kind, tx_hash = excluded.tx_hash, at = excluded.at`,
      ),
    };
  }

  insertChannel(c: WatchedChannel): void {
    this.q.put.run(c.nodeId, c.channelId, toJsonText(c));
  }

  getChannel(nodeId: string, channelId: string): WatchedChannel | undefined {
    const row = this.q.get.get(nodeId, channelId) as { data: string } | undefined;
    return row ? fromJsonText<WatchedChannel>(row.data) : undefined;
  }

  listChannels(): WatchedChannel[] {
    return (this.q.all.all() as { data: string }[]).map((r) => fromJsonText<WatchedChannel>(r.data));
  }

  removeChannel(nodeId: string, channelId: string): void {
    this.q.del.run(nodeId, channelId);
  }

  /** Updates of a channel nobody registered are ignored, as the reference does. */
  private update(nodeId: string, channelId: string, f: (c: WatchedChannel) => WatchedChannel): void {
    this.db.transaction(() => {
      const c = this.getChannel(nodeId, channelId);
      if (c) this.insertChannel(f(c));
    })();
  }

  updateRevocation(nodeId: string, channelId: string, rev: RevocationData, remote: SettlementData): void {
    this.update(nodeId, channelId, (c) => ({ ...c, revocationData: rev, remoteSettlementData: remote }));
  }

  updatePendingRemoteSettlement(nodeId: string, channelId: string, s: SettlementData): void {
    this.update(nodeId, channelId, (c) => ({ ...c, pendingRemoteSettlementData: s }));
  }

  updateLocalSettlement(nodeId: string, channelId: string, s: SettlementData): void {
    this.update(nodeId, channelId, (c) => ({ ...c, localSettlementData: s }));
  }

  insertPreimage(nodeId: string, paymentHash: string, preimage: string): void {
    this.q.putPreimage.run(nodeId, paymentHash, preimage);
  }

  removePreimage(nodeId: string, paymentHash: string): void {
    this.q.delPreimage.run(nodeId, paymentHash);
  }

  getPreimage(paymentHash: string): string | undefined {
    return (this.q.getPreimage.get(paymentHash) as { preimage: string } | undefined)?.preimage;
  }

  /** A preimage whose payment hash starts with these 20 bytes (0x + 40 hex). */
  searchPreimage(hashPrefix20: string): string | undefined {
    return (this.q.searchPreimage.get(hashPrefix20) as { preimage: string } | undefined)?.preimage;
  }

  outcome(fundingLock: string): { kind: OutcomeKind; txHash: string | null } | undefined {
    const r = this.q.getOutcome.get(fundingLock) as { kind: OutcomeKind; tx_hash: string | null } | undefined;
    return r ? { kind: r.kind, txHash: r.tx_hash } : undefined;
  }

  setOutcome(fundingLock: string, kind: OutcomeKind, txHash: string | null): void {
    this.q.putOutcome.run(fundingLock, kind, txHash, Date.now());
  }
}
