/**
 * Channel rows in the node's store: one row per channel, keyed by the temporary id (stable for the
 * channel's life), with the current id, peer, state name and the JSON of the state.
 * That JSON is written on every event, so what is large and changes seldom lives apart, written
 * only when it changes:
 * - each TLC is a row of `channel_tlcs` (its JSON without the onion), written when the TLC object
 *   differs from the one in the last committed state and deleted with the first state without
 *   it; the state's `tlcs` holds only the TLCs' keys, in order. At a hundred pending TLCs this is
 *   the difference between a few hundred bytes and ~60 KB per event;
 * - each onion (6.5 KB, fixed for a TLC's life) is written once to `channel_onion_bytes`, as
 *   bytes (the state keeps it as hex).
 * Rows of states written by earlier versions keep their TLCs inline until rewritten.
 *
 * Committed channels are also kept in memory, one cache per database connection (every
 * ChannelStore on the same `Db` shares it), so reads do not parse a channel's JSON — tens of KB
 * with its TLCs' onions — again on every event. A channel is a value: nobody mutates the object
 * a read returns. The cache follows commits only: a save inside a transaction that is not its own
 * drops the entry (the transaction may still roll back), and reads inside a transaction go to
 * the database and are not cached.
 */
import { hexToBytes, StoreError } from '../codec/index.ts';
import { type Db, type DomainSchema, sqliteOf } from '../store/index.ts';
import {
  type Channel,
  deserializeChannel,
  deserializeTlc,
  serializeChannelLean,
  serializeTlcLean,
  type Tlc,
  tlcKey,
  withOnions,
} from './state.ts';

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
    {
      // Onions move out of the state JSON; rows written before keep theirs inline until rewritten.
      version: 2,
      up: `CREATE TABLE channel_onions (
        temp_id TEXT NOT NULL,
        tlc TEXT NOT NULL,
        onion TEXT NOT NULL,
        PRIMARY KEY (temp_id, tlc)
      );`,
    },
    {
      version: 3,
      up: `CREATE TABLE channel_tlcs (
        temp_id TEXT NOT NULL,
        tlc TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (temp_id, tlc)
      );`,
    },
    {
      // Onions as bytes: 6.5 KB a TLC instead of 13 KB of hex, written to the WAL and again by
      // its checkpoint (a third of what a payment wrote to disk).
      version: 4,
      up: (db) => {
        db.exec(`CREATE TABLE channel_onion_bytes (
          temp_id TEXT NOT NULL,
          tlc TEXT NOT NULL,
          onion BLOB NOT NULL,
          PRIMARY KEY (temp_id, tlc)
        )`);
        const put = db.prepare('INSERT INTO channel_onion_bytes (temp_id, tlc, onion) VALUES (?, ?, ?)');
        for (const r of db.prepare('SELECT temp_id, tlc, onion FROM channel_onions').all() as OnionRow[])
          put.run(r.temp_id, r.tlc, onionOf(r.onion));
        db.exec('DROP TABLE channel_onions');
      },
    },
  ],
};

interface OnionRow {
  temp_id: string;
  tlc: string;
  onion: Uint8Array | string;
}

/** An onion as the state keeps it, from its stored bytes (or hex, as version 2 stored it). */
function onionOf(v: Uint8Array | string): Uint8Array {
  return typeof v === 'string'
    ? hexToBytes(v, 'onion')
    : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

interface Cache {
  byTempId: Map<string, Channel>;
  /** Every committed channel is in `byTempId`. */
  complete: boolean;
}

const caches = new WeakMap<Db, Cache>();

export class ChannelStore {
  private readonly cache: Cache;
  private readonly upsert;
  private readonly update;
  /** SQLite: rows padded to `ROW_BUCKET` (see `padded`). */
  private readonly padRows: boolean;
  private readonly byAnyId;
  private readonly all;
  private readonly getMeta;
  private readonly setMeta;
  private readonly putOnion;
  private readonly dropOnion;
  private readonly onionsOf;
  private readonly allOnions;
  private readonly putTlc;
  private readonly dropTlc;
  private readonly dropTlcs;
  private readonly tlcsOf;
  private readonly allTlcs;

  constructor(private readonly db: Db) {
    let cache = caches.get(db);
    if (!cache) {
      cache = { byTempId: new Map(), complete: false };
      caches.set(db, cache);
    }
    this.cache = cache;
    this.padRows = sqliteOf(db) !== undefined;
    this.upsert = db.prepare(
      `INSERT INTO channels (temp_id, id, peer, state, created_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(temp_id) DO UPDATE SET id = excluded.id, state = excluded.state, data = excluded.data`,
    );
    // The same row without `id` in its SET: SQLite rewrites a unique index's page for a column
    // that is SET even to its own value, one more WAL page at every state written.
    this.update = db.prepare('UPDATE channels SET state = ?, data = ? WHERE temp_id = ?');
    this.byAnyId = db.prepare('SELECT data FROM channels WHERE id = ? OR temp_id = ?');
    // By rowid, a page at a time: no sort of whole rows in SQLite, and each page's text is garbage
    // before the next is read (10,000 channels of ~12 KB: ~40 % faster than one sorted read).
    this.all = db.prepare('SELECT rowid, data FROM channels WHERE rowid > ? ORDER BY rowid LIMIT ?');
    this.getMeta = db.prepare('SELECT value FROM channel_meta WHERE key = ?');
    this.setMeta = db.prepare(
      'INSERT INTO channel_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value',
    );
    this.putOnion = db.prepare(
      'INSERT INTO channel_onion_bytes (temp_id, tlc, onion) VALUES (?, ?, ?) ON CONFLICT(temp_id, tlc) DO UPDATE SET onion = excluded.onion',
    );
    this.dropOnion = db.prepare('DELETE FROM channel_onion_bytes WHERE temp_id = ? AND tlc = ?');
    this.onionsOf = db.prepare('SELECT tlc, onion FROM channel_onion_bytes WHERE temp_id = ?');
    this.allOnions = db.prepare('SELECT temp_id, tlc, onion FROM channel_onion_bytes');
    this.putTlc = db.prepare(
      'INSERT INTO channel_tlcs (temp_id, tlc, data) VALUES (?, ?, ?) ON CONFLICT(temp_id, tlc) DO UPDATE SET data = excluded.data',
    );
    this.dropTlc = db.prepare('DELETE FROM channel_tlcs WHERE temp_id = ? AND tlc = ?');
    this.dropTlcs = db.prepare('DELETE FROM channel_tlcs WHERE temp_id = ?');
    this.tlcsOf = db.prepare('SELECT tlc, data FROM channel_tlcs WHERE temp_id = ?');
    this.allTlcs = db.prepare('SELECT temp_id, tlc, data FROM channel_tlcs');
  }

  /** Writes the channel in one transaction (committed, fsynced) before anything depends on it. */
  save(ch: Channel): void {
    this.write(ch);
    if (this.db.inTransaction) this.forget(ch.tempId);
    else this.cache.byTempId.set(ch.tempId, ch);
  }

  /** Saves the channel and whatever `alsoWrite` writes in one transaction: both or neither. */
  saveWith(ch: Channel, alsoWrite: () => void): void {
    const outer = this.db.inTransaction;
    this.db.transaction(() => {
      this.write(ch);
      alsoWrite();
    })();
    if (outer) this.forget(ch.tempId);
    else this.cache.byTempId.set(ch.tempId, ch);
  }

  /**
   * Saves every channel of `chs` and whatever `alsoWrite` writes in one transaction (one commit
   * for a group of states: `staged-store.ts`): all or none.
   */
  saveAll(chs: Channel[], alsoWrite: () => void): void {
    const outer = this.db.inTransaction;
    this.db.transaction(() => {
      for (const ch of chs) this.write(ch);
      alsoWrite();
    })();
    for (const ch of chs) {
      if (outer) this.forget(ch.tempId);
      else this.cache.byTempId.set(ch.tempId, ch);
    }
  }

  get(id: string): Channel | undefined {
    const hit = this.cache.byTempId.get(id) ?? this.cachedById(id);
    if (hit) return hit;
    const row = this.byAnyId.get(id, id) as { data: string } | undefined;
    if (!row) return undefined;
    const stored = deserializeChannel(row.data);
    const fromRows = withTlcRows(stored, rowsOf(this.tlcsOf.all(stored.tempId)));
    const ch = this.withStoredOnions(fromRows);
    if (fromRows === stored && ch.tlcs.length) inlineRows.add(ch);
    if (!this.db.inTransaction) this.cache.byTempId.set(ch.tempId, ch);
    return ch;
  }

  list(): Channel[] {
    if (!this.cache.complete || this.db.inTransaction) {
      const onions = byChannel(
        (this.allOnions.all() as OnionRow[]).map((r) => ({ ...r, onion: onionOf(r.onion) })),
        'onion',
      );
      const tlcs = byChannel(this.allTlcs.all() as { temp_id: string; tlc: string; data: string }[], 'data');
      const all: Channel[] = [];
      for (let after = 0; ; ) {
        const rows = this.all.all(after, LIST_PAGE) as { rowid: number; data: string }[];
        for (const r of rows) {
          const stored = deserializeChannel(r.data);
          const ch = withTlcRows(stored, tlcs.get(stored.tempId) ?? new Map());
          const whole = withOnions(ch, onions.get(stored.tempId) ?? new Map());
          if (ch === stored && ch.tlcs.length) inlineRows.add(whole);
          all.push(whole);
        }
        if (rows.length < LIST_PAGE) break;
        after = Number(rows.at(-1)?.rowid);
      }
      if (this.db.inTransaction) return inTableOrder(all);
      this.cache.byTempId = new Map(all.map((ch) => [ch.tempId, ch]));
      this.cache.complete = true;
    }
    return inTableOrder([...this.cache.byTempId.values()]);
  }

  /**
   * The row and the TLC and onion changes since the last committed state, in one transaction.
   * Without a cached last state (first write, or after a foreign transaction) every TLC and onion
   * is written again. A TLC is a value: the same object as in the last state means unchanged.
   */
  private write(ch: Channel): void {
    const cached = this.cache.byTempId.get(ch.tempId);
    // A state read from an inline row has no TLC rows (nor, from the first version, onion rows).
    const last = cached && !inlineRows.has(cached) ? cached : undefined;
    const before = new Map<string, Tlc>(last?.tlcs.map((t) => [tlcKey(t), t]) ?? []);
    const keys = ch.tlcs.map(tlcKey);
    this.db.transaction(() => {
      const json = serializeChannelLean({ ...ch, tlcs: keys });
      const data = this.padRows ? padded(json) : json;
      // Its id unchanged since the last committed state (the row is there): the row's state only.
      if (cached && cached.id === ch.id) this.update.run(ch.state, data, ch.tempId);
      else this.upsert.run(ch.tempId, ch.id, ch.peer, ch.state, ch.createdAt, data);
      if (!last) this.dropTlcs.run(ch.tempId);
      ch.tlcs.forEach((t, i) => {
        const key = keys[i] as string;
        const had = before.get(key);
        before.delete(key);
        if (had !== t) this.putTlc.run(ch.tempId, key, serializeTlcLean(t));
        if (!t.onion?.length || (had && had.onion === t.onion)) return;
        this.putOnion.run(ch.tempId, key, t.onion);
      });
      // Gone since the last state; with no last state, whatever the table holds beyond the TLCs.
      for (const key of before.keys()) this.dropTlc.run(ch.tempId, key);
      const gone = last ? [...before.keys()] : this.staleOnions(ch);
      for (const key of gone) this.dropOnion.run(ch.tempId, key);
    })();
  }

  private staleOnions(ch: Channel): string[] {
    const live = new Set(ch.tlcs.map(tlcKey));
    return (this.onionsOf.all(ch.tempId) as { tlc: string }[]).map((r) => r.tlc).filter((k) => !live.has(k));
  }

  private withStoredOnions(ch: Channel): Channel {
    const rows = this.onionsOf.all(ch.tempId) as Omit<OnionRow, 'temp_id'>[];
    return withOnions(ch, new Map(rows.map((r) => [r.tlc, onionOf(r.onion)])));
  }

  private forget(tempId: string): void {
    this.cache.byTempId.delete(tempId);
    this.cache.complete = false;
  }

  /** A channel cached under its temporary id, looked up by its final id. */
  private cachedById(id: string): Channel | undefined {
    if (!this.cache.complete) return undefined;
    for (const ch of this.cache.byTempId.values()) if (ch.id === id) return ch;
    return undefined;
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

/**
 * A state's JSON padded with spaces (which JSON.parse skips) to a multiple of this many bytes.
 * A row of ~10 KB spills over two overflow pages. Rewritten at another length, SQLite frees that
 * chain and allocates a new one, which writes the freelist's page and the database header's page
 * too: five pages to the WAL for every state written. At the length it had, SQLite overwrites
 * the row in place, writing only the pages whose bytes changed: three. The length moves by a few
 * bytes a step, so a row stays in its bucket for many steps.
 */
const ROW_BUCKET = 1024;

function padded(json: string): string {
  return json.padEnd(Math.ceil(json.length / ROW_BUCKET) * ROW_BUCKET);
}

/** Channel rows read per statement by `list`. */
const LIST_PAGE = 500;

/** The table's order: newest first, then by temporary id. */
function inTableOrder(chs: Channel[]): Channel[] {
  return chs.sort(
    (a, b) => b.createdAt - a.createdAt || (a.tempId < b.tempId ? -1 : a.tempId > b.tempId ? 1 : 0),
  );
}

/** Channels read from a row with its TLCs inline (written by an earlier version). */
const inlineRows = new WeakSet<Channel>();

/** Rows of one table by channel, then by TLC key. */
function byChannel<K extends string, V>(
  rows: ({ temp_id: string; tlc: string } & Record<K, V>)[],
  field: K,
): Map<string, Map<string, V>> {
  const out = new Map<string, Map<string, V>>();
  for (const r of rows) {
    const m = out.get(r.temp_id) ?? new Map<string, V>();
    out.set(r.temp_id, m);
    m.set(r.tlc, r[field]);
  }
  return out;
}

function rowsOf(rows: unknown[]): Map<string, string> {
  return new Map((rows as { tlc: string; data: string }[]).map((r) => [r.tlc, r.data]));
}

/**
 * The channel with its TLCs read back: a stored state lists its TLCs' keys (`write`), each TLC
 * being a row of `channel_tlcs`; states written before keep them inline.
 */
function withTlcRows(ch: Channel, rows: ReadonlyMap<string, string>): Channel {
  const listed = ch.tlcs as unknown as (Tlc | string)[];
  if (!listed.some((t) => typeof t === 'string')) return ch;
  const tlcs = listed.map((t) => {
    if (typeof t !== 'string') return t;
    const row = rows.get(t);
    if (row === undefined) throw new StoreError(`channel ${ch.tempId}: TLC ${t} has no row`);
    return deserializeTlc(row);
  });
  return { ...ch, tlcs };
}
