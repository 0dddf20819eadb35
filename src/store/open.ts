/**
 * Opens the node's store where the configuration says: the SQLite file (default) or, with
 * `store.url: postgres://…`, a Postgres database. On Postgres the node first takes the leader
 * lease of its key (`takeLeaderLease`): a second node on the same database and key waits as a
 * standby until the lease is free, so two nodes never run on one store at once. Migrations run
 * only once the lease is held.
 */
import { StoreError } from '../codec/index.ts';
import { type Db, type DomainSchema, migrate, openDatabase } from './db.ts';
import { type LeaseLossCause, PgDb } from './postgres/pg-db.ts';

export interface LeaseOptions {
  /** What the lease is for: the node's public key. */
  key: string;
  /** Who asks: unique per process (host, pid, start time). */
  holder: string;
  /** How long a lease lasts unless renewed (renewed every third of it). */
  ttlMs: number;
  /** Told once when another holder has the lease and this node waits. */
  onStandby?: (holder: string | undefined) => void;
  /** The lease was lost after it was held: the node must stop writing (exit). */
  onLost: (reason: string, cause: LeaseLossCause) => void;
}

export interface StoreLocation {
  /**
   * `postgres://…` or `postgresql://…`; unset: the SQLite file. `?query_timeout=<ms>`: how long a
   * store call may take before the store is abandoned (default 120 s; `postgres/pg-db.ts`).
   */
  url?: string;
  /** Postgres: how long one store call may take (`store.timeout_ms`; or `query_timeout` in `url`). */
  timeoutMs?: number;
  file: string;
  /** SQLite only: `NORMAL` when the caller flushes through `WalDurability`. */
  synchronous?: 'FULL' | 'NORMAL';
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//.test(url);
}

export async function openStore(
  where: StoreLocation,
  schemas: DomainSchema[],
  lease?: LeaseOptions,
): Promise<Db> {
  if (!where.url) return openDatabase(where.file, schemas, { synchronous: where.synchronous });
  if (!isPostgresUrl(where.url)) throw new StoreError(`store.url: expected postgres://…, got ${where.url}`);
  const db = new PgDb(where.url, where.timeoutMs);
  try {
    if (lease) await takeLeaderLease(db, lease);
    migrate(db, schemas, false);
    db.schemas = schemas;
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** Waits (polling every third of the lease) until this holder has the lease. */
export async function takeLeaderLease(db: PgDb, lease: LeaseOptions): Promise<void> {
  let told = false;
  for (;;) {
    const r = db.takeLease(lease.key, lease.holder, lease.ttlMs);
    if (r.held) break;
    if (!told) lease.onStandby?.(r.holder);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, Math.max(100, lease.ttlMs / 3)));
  }
  db.onLeaseLost = lease.onLost;
}
