/**
 * Known peer addresses, persisted: what `connect_peer {save: true}` dialled successfully, so that
 * `connect_peer {pubkey}` can find an address and a restarted node reconnects.
 */
import type { Db, DomainSchema } from '../store/index.ts';

export const peerSchema: DomainSchema = {
  domain: 'p2p',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE p2p_peer_addresses (
        pubkey TEXT NOT NULL,
        peer_id TEXT NOT NULL,
        address TEXT NOT NULL,
        saved_at INTEGER NOT NULL,
        last_connected_at INTEGER,
        PRIMARY KEY (pubkey, address)
      )`,
    },
  ],
};

export interface KnownAddress {
  pubkey: string;
  peerId: string;
  address: string;
  lastConnectedAt: number | null;
}

export interface PeerStore {
  save(pubkey: string, peerId: string, address: string): void;
  touch(pubkey: string, address: string): void;
  addressesOf(pubkey: string): string[];
  all(): KnownAddress[];
}

/** A store over the node database, or an in-memory one when no database is given. */
export function createPeerStore(db?: Db): PeerStore {
  if (!db) return memoryStore();
  const insert = db.prepare(
    `INSERT INTO p2p_peer_addresses (pubkey, peer_id, address, saved_at, last_connected_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT(pubkey, address) DO UPDATE SET last_connected_at = excluded.last_connected_at`,
  );
  const touch = db.prepare(
    'UPDATE p2p_peer_addresses SET last_connected_at = ? WHERE pubkey = ? AND address = ?',
  );
  const byPubkey = db.prepare(
    'SELECT address FROM p2p_peer_addresses WHERE pubkey = ? ORDER BY last_connected_at DESC, saved_at DESC',
  );
  const all = db.prepare(
    'SELECT pubkey, peer_id AS peerId, address, last_connected_at AS lastConnectedAt FROM p2p_peer_addresses ORDER BY saved_at',
  );
  return {
    save: (pubkey, peerId, address) => {
      const now = Date.now();
      insert.run(pubkey, peerId, address, now, now);
    },
    touch: (pubkey, address) => {
      touch.run(Date.now(), pubkey, address);
    },
    addressesOf: (pubkey) => (byPubkey.all(pubkey) as { address: string }[]).map((r) => r.address),
    all: () => all.all() as KnownAddress[],
  };
}

function memoryStore(): PeerStore {
  const rows: KnownAddress[] = [];
  return {
    save(pubkey, peerId, address) {
      const r = rows.find((x) => x.pubkey === pubkey && x.address === address);
      if (r) r.lastConnectedAt = Date.now();
      else rows.push({ pubkey, peerId, address, lastConnectedAt: Date.now() });
    },
    touch(pubkey, address) {
      const r = rows.find((x) => x.pubkey === pubkey && x.address === address);
      if (r) r.lastConnectedAt = Date.now();
    },
    addressesOf: (pubkey) => rows.filter((r) => r.pubkey === pubkey).map((r) => r.address),
    all: () => [...rows],
  };
}
