/**
 * Channel rows in the node's SQLite store: one row per channel, keyed by the temporary id (stable
 * for the channel's life), with the current id, peer, state name and the JSON of the state.
 */
import type { Db, DomainSchema } from '../store/db.ts';
import { type Channel, deserializeChannel, serializeChannel } from './state.ts';

export const channelSchema: DomainSchema = {
  domain: 'channel',
  migrations: [
    {
      version: 1,
      up: `CREATE TABLE channels (
        temp_id TEXT PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        peer TEXT NOT NULL,
        state TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX channels_peer ON channels (peer);
      CREATE TABLE channel_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);`,
    },
  ],
};

export class ChannelStore {
  private readonly upsert;
  private readonly byAnyId;
  private readonly all;
  private readonly getMeta;
  private readonly setMeta;

  constructor(private readonly db: Db) {
    this.upsert = db.prepare(
      `INSERT INTO channels (temp_id, id, peer, state, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(temp_id) DO UPDATE SET id = excluded.id, state = excluded.state, data = excluded.data`,
    );
    this.byAnyId = db.prepare('SELECT data FROM channels WHERE id = ? OR temp_id = ?');
    this.all = db.prepare('SELECT data FROM channels ORDER BY created_at DESC, temp_id');
    this.getMeta = db.prepare('SELECT value FROM channel_meta WHERE key = ?');
    this.setMeta = db.prepare(
      'INSERT INTO channel_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    );
  }

  /** Writes the channel in one transaction (committed, fsynced) before anything depends on it. */
  save(ch: Channel): void {
    this.upsert.run(ch.tempId, ch.id, ch.peer, ch.state, ch.createdAt, serializeChannel(ch));
  }

  /** Saves the channel and whatever `alsoWrite` writes in one transaction: both or neither. */
  saveWith(ch: Channel, alsoWrite: () => void): void {
    this.db.transaction(() => {
      this.save(ch);
      alsoWrite();
    })();
  }

  get(id: string): Channel | undefined {
    const row = this.byAnyId.get(id, id) as { data: string } | undefined;
    return row ? deserializeChannel(row.data) : undefined;
  }

  list(): Channel[] {
    return (this.all.all() as { data: string }[]).map((r) => deserializeChannel(r.data));
  }

  /** A counter that only grows (channel seeds must never repeat). */
  nextCount(): number {
    return this.db.transaction(() => {
      const v = Number((this.getMeta.get('count') as { value: string } | undefined)?.value ?? '0');
      this.setMeta.run('count', String(v + 1));
      return v;
    })();
  }
}
