/**
 * The channel store on a real SQLite file: a channel state saved together with what depends on
 * it (the outcome of a TLC its round removed) is on disk with it or not at all.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Channel, serializeChannelLean, serializeTlcLean, type Tlc } from '../../src/channel/state.ts';
import { ChannelStore, channelSchema } from '../../src/channel/store.ts';
import { hexToBytes } from '../../src/codec/index.ts';
import { paymentLinkSchema, TlcLinks } from '../../src/payment/links.ts';
import { type Db, openDatabase } from '../../src/store/db.ts';

let dir: string;
let db: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-store-'));
  db = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

// Only what the store reads to index a row; the rest is opaque JSON to it.
const channel = (state: Channel['state'], tlcs: bigint[]) =>
  ({
    tempId: '0x01',
    id: '0x02',
    peer: 'peer',
    state,
    createdAt: 1,
    tlcs: tlcs.map((id) => ({ id })),
  }) as unknown as Channel;

describe('channel store', () => {
  it('saves a state and the outcome of the TLC it removed together, or neither', () => {
    const store = new ChannelStore(db);
    const links = new TlcLinks(db);
    store.save(channel('CHANNEL_READY', [0n]));
    const preimage = { preimage: new Uint8Array(32).fill(9) };
    // The second write fails: the state that removed the TLC is not saved either.
    expect(() =>
      store.saveWith(channel('CHANNEL_READY', []), () => {
        links.recordOutcome('0x02', 0n, preimage);
        throw new Error('disk full');
      }),
    ).toThrow('disk full');
    expect(store.get('0x02')?.tlcs).toHaveLength(1);
    expect(links.hasOutcome('0x02', 0n)).toBe(false);
    // Both succeed: both are there, as a reopened database shows.
    store.saveWith(channel('CHANNEL_READY', []), () => links.recordOutcome('0x02', 0n, preimage));
    db.close();
    db = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
    expect(new ChannelStore(db).get('0x02')?.tlcs).toHaveLength(0);
    const [o] = new TlcLinks(db).outcomes();
    if (!o) throw new Error('no outcome recorded');
    expect([o.channelId, o.tlcId]).toEqual(['0x02', 0n]);
    expect(Buffer.from((o.outcome as { preimage: Uint8Array }).preimage).toString('hex')).toBe(
      '09'.repeat(32),
    );
  });

  it('reads come from memory after a commit, shared by every store on the connection; a rolled-back save is not seen', () => {
    const a = new ChannelStore(db);
    const b = new ChannelStore(db);
    a.save(channel('CHANNEL_READY', [0n]));
    expect(b.get('0x01')?.tlcs).toHaveLength(1);
    expect(b.get('0x01')).toBe(a.get('0x01'));
    b.save(channel('CHANNEL_READY', [0n, 1n]));
    expect(a.list().map((c) => c.tlcs.length)).toEqual([2]);
    // A save inside a transaction that rolls back: neither the database nor the cache keeps it.
    expect(() =>
      db.transaction(() => {
        a.save(channel('SHUTTING_DOWN', []));
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(b.get('0x02')?.state).toBe('CHANNEL_READY');
    expect(a.list().map((c) => c.state)).toEqual(['CHANNEL_READY']);
    // Newest first, then by temporary id, as the table orders them.
    a.save({ ...channel('CHANNEL_READY', []), tempId: '0x03', id: '0x04', createdAt: 5 });
    a.save({ ...channel('CHANNEL_READY', []), tempId: '0x00', id: '0x05', createdAt: 5 });
    expect(b.list().map((c) => c.tempId)).toEqual(['0x00', '0x03', '0x01']);
  });

  it('writes the row without its id while the id stays, and the new id once it changes', () => {
    const file = path.join(dir, 'strand.db');
    const a = new ChannelStore(db);
    // The id is the temporary one until funding names the channel.
    a.save({ ...channel('NEGOTIATING_FUNDING', []), id: '0x01' });
    a.save({ ...channel('CHANNEL_READY', []), id: '0x02' });
    a.save(channel('SHUTTING_DOWN', [0n]));
    // A fresh connection reads the file: the row has the new id, state and TLCs.
    const again = openDatabase(file, [channelSchema, paymentLinkSchema]);
    try {
      const row = again.prepare('SELECT id, state, data FROM channels WHERE temp_id = ?').get('0x01') as {
        data: string;
      };
      expect(row).toMatchObject({ id: '0x02', state: 'SHUTTING_DOWN' });
      // Padded with spaces to a whole KiB, so that the next state of about the same length is
      // written over this one in place.
      expect(row.data.length % 1024).toBe(0);
      expect(row.data.trimEnd()).toBe(
        serializeChannelLean({ ...channel('SHUTTING_DOWN', []), tlcs: ['r0'] }),
      );
      const fresh = new ChannelStore(again);
      expect(fresh.get('0x02')?.tlcs).toHaveLength(1);
      expect(fresh.list()).toHaveLength(1);
    } finally {
      again.close();
    }
  });

  it('keeps each onion once, apart from the state: written with its TLC, gone with it, back on every read', () => {
    const onion = (n: number) => new Uint8Array(6500).fill(n);
    const withOnionTlcs = (state: Channel['state'], ids: bigint[]) =>
      ({
        ...channel(state, []),
        tlcs: ids.map((id) => ({ id, offered: id % 2n === 0n, onion: onion(Number(id)) })),
      }) as unknown as Channel;
    const rows = () =>
      db
        .prepare('SELECT tlc FROM channel_onion_bytes ORDER BY tlc')
        .all()
        .map((r: any) => r.tlc as string);
    // The row's JSON without the spaces that pad it (`padded` in the store).
    const stateJson = () =>
      (db.prepare('SELECT data FROM channels').get() as { data: string }).data.trimEnd();
    const store = new ChannelStore(db);
    store.save(withOnionTlcs('CHANNEL_READY', [0n, 1n]));
    expect(rows()).toEqual(['o0', 'r1']);
    // Kept as bytes: 6,500 of them, not 13,000 characters of hex.
    expect(
      db.prepare('SELECT length(onion) AS n, typeof(onion) AS t FROM channel_onion_bytes').all(),
    ).toEqual([
      { n: 6500, t: 'blob' },
      { n: 6500, t: 'blob' },
    ]);
    expect(stateJson().length).toBeLessThan(1000);
    // A rolled-back save changes neither the rows nor the cached state.
    expect(() =>
      db.transaction(() => {
        store.save(withOnionTlcs('CHANNEL_READY', [1n, 2n]));
        throw new Error('rolled back');
      })(),
    ).toThrow('rolled back');
    expect(rows()).toEqual(['o0', 'r1']);
    // TLC 0 settled, TLC 2 added (after the rollback the store has no cached last state).
    store.save(withOnionTlcs('CHANNEL_READY', [1n, 2n]));
    expect(rows()).toEqual(['o2', 'r1']);
    store.save(withOnionTlcs('CHANNEL_READY', [2n]));
    expect(rows()).toEqual(['o2']);
    // A reopened database gives the channel back whole.
    db.close();
    db = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
    const back = new ChannelStore(db);
    expect(back.get('0x02')?.tlcs.map((t) => t.onion)).toEqual([onion(2)]);
    expect(back.list()[0]?.tlcs.map((t) => t.onion)).toEqual([onion(2)]);
  });

  it('moves the hex onions of an older store to bytes on migration, reading back the same', () => {
    db.close();
    const file = path.join(dir, 'old.db');
    const v3 = { ...channelSchema, migrations: channelSchema.migrations.slice(0, 3) };
    const old = openDatabase(file, [v3, paymentLinkSchema]);
    const hexOnion = `0x${'5a'.repeat(6500)}`;
    const ch = {
      ...channel('CHANNEL_READY', []),
      tlcs: [{ id: 0n, offered: true, onion: hexOnion }],
    } as unknown as Channel;
    // What version 3 wrote: the state row, its TLC row, the onion as hex text.
    const t = ch.tlcs[0] as Tlc;
    old
      .prepare('INSERT INTO channels (temp_id, id, peer, state, created_at, data) VALUES (?, ?, ?, ?, ?, ?)')
      .run(ch.tempId, ch.id, ch.peer, ch.state, ch.createdAt, serializeChannelLean({ ...ch, tlcs: ['o0'] }));
    old
      .prepare('INSERT INTO channel_tlcs (temp_id, tlc, data) VALUES (?, ?, ?)')
      .run(ch.tempId, 'o0', serializeTlcLean(t));
    old
      .prepare('INSERT INTO channel_onions (temp_id, tlc, onion) VALUES (?, ?, ?)')
      .run(ch.tempId, 'o0', hexOnion);
    old.close();
    db = openDatabase(file, [channelSchema, paymentLinkSchema]);
    expect(
      db.prepare('SELECT tlc, length(onion) AS n, typeof(onion) AS t FROM channel_onion_bytes').all(),
    ).toEqual([{ tlc: 'o0', n: 6500, t: 'blob' }]);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'channel_onions'").all()).toEqual([]);
    expect(new ChannelStore(db).get(ch.tempId)?.tlcs.map((x) => x.onion)).toEqual([hexToBytes(hexOnion)]);
  });

  it('writes a TLC only when it changed: a state with 50 pending TLCs and one new costs two rows', () => {
    const store = new ChannelStore(db);
    const tlc = (id: bigint, added = 'announced') =>
      ({
        id,
        offered: true,
        amount: 1000n,
        paymentHash: `0x${'ab'.repeat(32)}`,
        added,
        onion: new Uint8Array(0),
      }) as const;
    const first = {
      ...channel('CHANNEL_READY', []),
      tlcs: Array.from({ length: 50 }, (_, i) => tlc(BigInt(i))),
    };
    store.save(first as unknown as Channel);
    const changes = () => (db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
    const before = changes();
    // The same TLC objects (a channel is a value) plus one new: the row and the new TLC.
    const next = { ...first, tlcs: [...first.tlcs, tlc(50n)] };
    store.save(next as unknown as Channel);
    expect(changes() - before).toBe(2);
    // One TLC committed (a new object), one gone: the row, one update, one delete.
    const after = changes();
    store.save({ ...next, tlcs: [tlc(1n, 'committed'), ...next.tlcs.slice(2)] } as unknown as Channel);
    expect(changes() - after).toBe(3);
    const json = (db.prepare('SELECT data FROM channels').get() as { data: string }).data;
    expect(json).not.toContain('ab'.repeat(32));
    // Reopened: the TLCs come back whole and in order.
    db.close();
    db = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
    const back = new ChannelStore(db).get('0x01');
    expect(back?.tlcs.map((t) => [t.id, t.added])).toEqual([
      [1n, 'committed'],
      ...Array.from({ length: 49 }, (_, i) => [BigInt(i + 2), 'announced']),
    ]);
    expect(back?.tlcs[0]?.amount).toBe(1000n);
  });

  it('reads a state written before TLC rows, with its TLCs inline', () => {
    const legacy = JSON.stringify({
      ...channel('CHANNEL_READY', []),
      tlcs: [{ id: { $big: '7' }, offered: false, onion: '0x1234' }],
    });
    db.prepare(
      "INSERT INTO channels (temp_id, id, peer, state, created_at, data) VALUES ('0x01', '0x02', 'peer', 'CHANNEL_READY', 1, ?)",
    ).run(legacy);
    const store = new ChannelStore(db);
    expect(store.get('0x02')?.tlcs.map((t) => t.id)).toEqual([7n]);
    // Rewritten once, it moves to rows, its onion too (the first version kept onions inline).
    store.save(store.get('0x02') as Channel);
    expect(db.prepare('SELECT tlc FROM channel_tlcs').all()).toEqual([{ tlc: 'r7' }]);
    db.close();
    db = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
    expect(new ChannelStore(db).get('0x02')?.tlcs.map((t) => t.onion)).toEqual([
      new Uint8Array([0x12, 0x34]),
    ]);
  });

  it('lists every channel in the table order, read a page at a time, inside a transaction too', () => {
    const a = new ChannelStore(db);
    const chs = Array.from({ length: 1_203 }, (_, i) => ({
      ...channel('CHANNEL_READY', []),
      tempId: `0x${((i * 7919) % 1_203).toString(16).padStart(4, '0')}`,
      id: `0xid${i}`,
      createdAt: i % 5,
    }));
    a.saveAll(chs, () => {});
    const expected = [...chs]
      .sort((x, y) => y.createdAt - x.createdAt || (x.tempId < y.tempId ? -1 : x.tempId > y.tempId ? 1 : 0))
      .map((c) => c.tempId);
    // Another connection: nothing cached, every row read from the file.
    const other = openDatabase(path.join(dir, 'strand.db'), [channelSchema, paymentLinkSchema]);
    try {
      const fresh = new ChannelStore(other);
      expect(other.transaction(() => fresh.list().map((c) => c.tempId))()).toEqual(expected);
      expect(fresh.list().map((c) => c.tempId)).toEqual(expected);
    } finally {
      other.close();
    }
  });
});
