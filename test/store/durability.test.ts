import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type SqliteDb } from '../../src/store/db.ts';
import { FLUSH_WINDOW, WalDurability } from '../../src/store/durability.ts';

const SCHEMA = [{ domain: 't', migrations: [{ version: 1, up: 'CREATE TABLE t (v INTEGER)' }] }];

type Flush = (fd: number, done: (err: Error | null) => void) => void;

/** A flush the test completes by hand, so the order of events is the test's. */
function manualFlush() {
  const pending: { fd: number; done: (err: Error | null) => void }[] = [];
  const flush: Flush = (fd, done) => pending.push({ fd, done });
  return {
    flush,
    pending,
    /** Completes the oldest flush for real (fdatasync) or with `err`. */
    finish(err?: Error) {
      const p = pending.shift();
      if (!p) throw new Error('no flush in flight');
      if (!err) fs.fdatasyncSync(p.fd);
      p.done(err ?? null);
    },
  };
}

/** The end of this turn of the event loop, when a flush asked for in it starts. */
const turn = () => new Promise((r) => setImmediate(r));

describe('WalDurability (group commit for SQLite)', () => {
  const dirs: string[] = [];
  const dbs: SqliteDb[] = [];
  afterEach(() => {
    for (const db of dbs.splice(0)) if (db.open) db.close();
    for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  });
  /** A store in a fresh directory, removed after the test. */
  function tempDb(): { file: string; db: SqliteDb } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'strand-durable-'));
    dirs.push(dir);
    const file = path.join(dir, 'node.db');
    const db = openDatabase(file, SCHEMA, { synchronous: 'NORMAL' });
    dbs.push(db);
    return { file, db };
  }
  function setup(fatal: Error[] = [], beforeFlush?: () => boolean | undefined) {
    const { file, db } = tempDb();
    const m = manualFlush();
    const d = new WalDurability(db, {
      walFile: `${file}-wal`,
      onFatal: (e) => fatal.push(e),
      fdatasync: m.flush,
      // On the thread pool always, so that each flush ends when the test says.
      syncFlushMaxMs: 0,
      beforeFlush: () => beforeFlush?.(),
    });
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    return { db, d, m, write: (v: number) => insert.run(v) };
  }

  it('passes output straight through when nothing was written since the last flush', () => {
    const { d, m } = setup();
    const out: string[] = [];
    d.whenDurable(() => out.push('a'));
    expect(out).toEqual(['a']);
    expect(m.pending).toHaveLength(0);
  });

  it('holds output that follows a commit until one flush covers it, then releases in order', async () => {
    const { d, m, write } = setup();
    const out: string[] = [];
    write(1);
    d.whenDurable(() => out.push('after 1'));
    write(2);
    d.whenDurable(() => out.push('after 2'));
    // Nothing new was written, but it was offered after held output: it must not overtake it.
    d.whenDurable(() => out.push('read'));
    expect(out).toEqual([]);
    // The flush starts once this turn's work is done: one, covering both writes.
    expect(m.pending).toHaveLength(0);
    await turn();
    expect(m.pending).toHaveLength(1);
    // A commit made while it runs needs the next one; so does output offered after it.
    write(3);
    d.whenDurable(() => out.push('after 3'));
    m.finish();
    expect(out).toEqual(['after 1', 'after 2', 'read']);
    await turn();
    expect(m.pending).toHaveLength(1);
    m.finish();
    expect(out).toEqual(['after 1', 'after 2', 'read', 'after 3']);
    expect(d.syncs).toBe(2);
    expect(m.pending).toHaveLength(0);
  });

  it('releases peer output (`first`) before the rest the same flush releases, each kind in its order', async () => {
    const { d, m, write } = setup();
    const out: string[] = [];
    write(1);
    d.whenDurable(() => out.push('rpc answer'));
    d.whenDurable(() => out.push('peer a: AddTlc'), true);
    d.whenDurable(() => out.push('push'));
    d.whenDurable(() => out.push('peer a: CommitmentSigned'), true);
    d.whenDurable(() => out.push('peer b: TxComplete'), true);
    await turn();
    // Output offered after this flush started waits for the next, `first` or not.
    write(2);
    d.whenDurable(() => out.push('peer a: RevokeAndAck'), true);
    m.finish();
    expect(out).toEqual([
      'peer a: AddTlc',
      'peer a: CommitmentSigned',
      'peer b: TxComplete',
      'rpc answer',
      'push',
    ]);
    await turn();
    m.finish();
    expect(out.at(-1)).toBe('peer a: RevokeAndAck');
    // Nothing held: `first` output passes straight through, as any other.
    d.whenDurable(() => out.push('peer a: Ping'), true);
    expect(out.at(-1)).toBe('peer a: Ping');
  });

  it('between the peer output and the rest of a flush, lets the peer transport write (afterFirst)', async () => {
    const { file, db } = tempDb();
    const m = manualFlush();
    const out: string[] = [];
    const d = new WalDurability(db, {
      walFile: `${file}-wal`,
      onFatal: () => {},
      fdatasync: m.flush,
      syncFlushMaxMs: 0,
      afterFirst: () => out.push('transport writes'),
    });
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    insert.run(1);
    d.whenDurable(() => out.push('push'));
    d.whenDurable(() => out.push('peer: CommitmentSigned'), true);
    await turn();
    m.finish();
    expect(out).toEqual(['peer: CommitmentSigned', 'transport writes', 'push']);
    // A flush that releases one kind only: the transport's own microtask is soon enough.
    out.length = 0;
    insert.run(2);
    d.whenDurable(() => out.push('peer: RevokeAndAck'), true);
    await turn();
    m.finish();
    insert.run(3);
    d.whenDurable(() => out.push('rpc answer'));
    await turn();
    m.finish();
    expect(out).toEqual(['peer: RevokeAndAck', 'rpc answer']);
  });

  it('shares one flush among every commit made in the turn it was asked for (group commit)', async () => {
    const { d, m, write } = setup();
    const out: number[] = [];
    for (let i = 0; i < 50; i++) {
      write(i);
      d.whenDurable(() => out.push(i));
    }
    await turn();
    expect(m.pending).toHaveLength(1);
    m.finish();
    expect(out).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(d.syncs).toBe(1);
    await turn();
    expect(m.pending).toHaveLength(0);
  });

  it('waits one turn when what runs before it had effects, so their promise jobs share the flush', async () => {
    // As the channel service's group commit: committed at the flush, its effects resolve promises
    // whose jobs write more (a payment recording its settled TLC) and offer output.
    let staged = true;
    const out: string[] = [];
    const env = setup([], () => {
      if (!staged) return false;
      staged = false;
      env.write(1);
      void Promise.resolve().then(() => {
        env.write(2);
        env.d.whenDurable(() => out.push('after the follow-up'));
      });
      env.d.whenDurable(() => out.push('after the staged'));
      return true;
    });
    env.write(0);
    env.d.whenDurable(() => out.push('first'));
    await turn();
    expect(env.m.pending).toHaveLength(0); // deferred once
    await turn();
    expect(env.m.pending).toHaveLength(1);
    env.m.finish();
    expect(out).toEqual(['first', 'after the staged', 'after the follow-up']);
    expect(env.d.syncs).toBe(1);
  });

  it('a flush asked for ahead runs right after the group commit, in the same turn', async () => {
    // As the channel service: the group commit is an immediate that commits and offers output.
    const groupCommit = (env: ReturnType<typeof setup>, out: number[]) =>
      setImmediate(() => {
        env.write(1);
        env.d.whenDurable(() => out.push(1));
      });
    const asked = setup();
    const askedOut: number[] = [];
    groupCommit(asked, askedOut);
    asked.d.requestFlush();
    const unasked = setup();
    const unaskedOut: number[] = [];
    groupCommit(unasked, unaskedOut);
    await turn();
    // Asked for: started in the turn of the group commit. Not asked for: the output it offered
    // from inside that turn waits for the next one (behind whatever input comes first).
    expect(asked.m.pending).toHaveLength(1);
    expect(unasked.m.pending).toHaveLength(0);
    asked.m.finish();
    expect(askedOut).toEqual([1]);
    await turn();
    expect(unasked.m.pending).toHaveLength(1);
  });

  it('a flush asked for ahead is not made when no output came', async () => {
    const { d, m, write } = setup();
    write(1);
    d.requestFlush();
    await turn();
    await turn();
    expect(m.pending).toHaveLength(0);
    expect(d.syncs).toBe(0);
    // Output offered later still gets its flush.
    const out: number[] = [];
    d.whenDurable(() => out.push(1));
    await turn();
    m.finish();
    expect(out).toEqual([1]);
  });

  it('a failed flush releases nothing and tells the node, which must stop', async () => {
    const fatal: Error[] = [];
    const { d, m, write } = setup(fatal);
    const out: string[] = [];
    write(1);
    d.whenDurable(() => out.push('x'));
    await turn();
    m.finish(new Error('EIO'));
    expect(out).toEqual([]);
    expect(fatal.map((e) => e.message)).toEqual(['EIO']);
    write(2);
    d.whenDurable(() => out.push('y'));
    await turn();
    expect(out).toEqual([]);
    expect(m.pending).toHaveLength(0);
  });

  it('close flushes and releases what was held; the data is in the file', async () => {
    const { db, d, write } = setup();
    const out: string[] = [];
    write(7);
    d.whenDurable(() => out.push('held'));
    d.close();
    expect(out).toEqual(['held']);
    expect((db.prepare('SELECT v FROM t').get() as { v: number }).v).toBe(7);
    // After close output is not held (the store is going away with the process).
    d.whenDurable(() => out.push('late'));
    expect(out).toEqual(['held', 'late']);
  });

  it('flushes on its own thread while flushes are fast, on the pool once they are slow, and back', async () => {
    const { file, db } = tempDb();
    // A disk whose flushes take what the test says (a clock moved by the flush itself).
    let clock = 0;
    let flushTakes = 0.1;
    const pool = manualFlush();
    const inline: number[] = [];
    const d = new WalDurability(db, {
      walFile: `${file}-wal`,
      onFatal: (e) => expect.fail(e.message),
      now: () => clock,
      fdatasyncSync: (fd) => {
        fs.fdatasyncSync(fd);
        inline.push(fd);
        clock += flushTakes;
      },
      fdatasync: (fd, done) => pool.flush(fd, done),
      onPlacement: (inline) => placements.push(inline),
      onFlushed: (ms) => timed.push(ms),
    });
    const placements: boolean[] = [];
    /** Every flush's time as told (`onFlushed`, the metrics' histogram). */
    const timed: number[] = [];
    const out: number[] = [];
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    /** One write and its output; the flush starts at the end of the turn. */
    const commitAndSpeak = async (v: number) => {
      insert.run(v);
      d.whenDurable(() => out.push(v));
      await turn();
    };
    // Fast: flushed inline, the output released in the same turn the flush started.
    await commitAndSpeak(1);
    expect([inline.length, pool.pending.length, out]).toEqual([1, 0, [1]]);
    for (let v = 2; v <= FLUSH_WINDOW; v++) await commitAndSpeak(v);
    // One stall of a shared disk does not move the flushes: the median of the window stays fast.
    flushTakes = 150;
    await commitAndSpeak(10);
    flushTakes = 0.1;
    await commitAndSpeak(11);
    expect(d.flushesInline).toBe(true);
    expect(inline.length).toBe(11);
    // Each flush is told with its own time, the stall too.
    expect(timed).toHaveLength(11);
    expect(timed.map((ms) => Math.round(ms * 10) / 10)).toEqual([...Array(9).fill(0.1), 150, 0.1]);
    // The disk slows down: once most of the window is slow (the stall and four more), the next
    // flush goes to the pool.
    flushTakes = 20;
    let slowInline = 0;
    while (d.flushesInline && slowInline < 20) await commitAndSpeak(100 + slowInline++);
    expect(slowInline).toBe(4);
    expect(out.length).toBe(15);
    await commitAndSpeak(200);
    expect([inline.length, pool.pending.length, out.length]).toEqual([15, 1, 15]);
    pool.finish(); // timed at 0 ms
    flushTakes = 0.1;
    expect(out.at(-1)).toBe(200);
    // Fast pool flushes bring the median back under 1 ms once they are most of the window.
    let poolFlushes = 1;
    while (!d.flushesInline && poolFlushes < 50) {
      await commitAndSpeak(300 + poolFlushes++);
      pool.finish();
    }
    // Four: the window then holds five fast flushes (four of them the pool's); the stall has aged out.
    expect(poolFlushes).toBe(4);
    const before = inline.length;
    await commitAndSpeak(400);
    expect(inline.length).toBe(before + 1);
    expect(out.at(-1)).toBe(400);
    expect(d.inlineSyncs).toBe(inline.length);
    // Told when the place changes, not at every flush.
    expect(placements).toEqual([false, true]);
    expect(d.syncs).toBe(inline.length + poolFlushes);
  });

  it('a failed inline flush releases nothing and tells the node', async () => {
    const { file, db } = tempDb();
    const fatal: string[] = [];
    const d = new WalDurability(db, {
      walFile: `${file}-wal`,
      onFatal: (e) => fatal.push(e.message),
      fdatasyncSync: () => {
        throw new Error('EIO');
      },
    });
    const out: string[] = [];
    db.prepare('INSERT INTO t (v) VALUES (1)').run();
    d.whenDurable(() => out.push('x'));
    await turn();
    expect([out, fatal]).toEqual([[], ['EIO']]);
  });

  it('durable() resolves after the real fdatasync of the WAL', async () => {
    const { file, db } = tempDb();
    const d = new WalDurability(db, { walFile: `${file}-wal`, onFatal: (e) => expect.fail(e.message) });
    db.prepare('INSERT INTO t (v) VALUES (1)').run();
    await d.durable();
    expect(d.syncs).toBe(1);
    await d.durable();
    expect(d.syncs).toBe(1);
    d.close();
  });
});
