/**
 * The update log of a pipelined channel (`update-log.ts`): two logs exchanging updates,
 * CommitmentSigneds and RevokeAndAcks over two independent ordered queues, with every
 * interleaving fast-check picks. At each CommitmentSigned the receiver must find the same updates
 * and the same balances in that commitment as its signer did, and a quiet pair must hold every
 * update in both commitments.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  commitmentReceived,
  disconnected,
  emptyLog,
  irrevocable,
  type LogEntry,
  LogError,
  logReceived,
  logSent,
  reestablishOf,
  retransmissions,
  revokeReceived,
  signRemote,
  trimmed,
  type UpdateKind,
  type UpdateLog,
  uncoveredByOurSignature,
  viewOf,
} from '../../src/channel/update-log.ts';
import { fuzzRuns } from '../helpers/fuzz-runs.ts';

type Who = 'A' | 'B';
const other = (w: Who): Who => (w === 'A' ? 'B' : 'A');

type Msg =
  | { t: 'update'; u: UpdateKind }
  | { t: 'commit'; number: bigint; covered: string[]; view: ReturnType<typeof viewOf> }
  | { t: 'revoke' };

/** An entry named the same on both sides: who sent it and its place in that side's updates. */
const key = (me: Who, e: LogEntry) => `${e.owner === 'local' ? me : other(me)}${e.n}`;

/** The same commitment seen from the other side: local and remote swapped. */
const mirrored = (v: ReturnType<typeof viewOf>) => ({
  offeredByLocal: v.offeredByRemote,
  offeredByRemote: v.offeredByLocal,
  toLocal: v.toRemote,
  toRemote: v.toLocal,
});

class Pair {
  logs: Record<Who, UpdateLog> = { A: emptyLog(), B: emptyLog() };
  /** Messages on their way to each side. */
  queues: Record<Who, Msg[]> = { A: [], B: [] };
  nextTlc: Record<Who, bigint> = { A: 0n, B: 0n };
  /** Where a receiver found a commitment other than its signer signed. */
  mismatches: string[] = [];
  /** Each side's last CommitmentSigned as sent, for a retransmission. */
  lastCommit: Partial<Record<Who, Msg>> = {};

  private send(from: Who, m: Msg): void {
    this.queues[other(from)].push(m);
  }

  add(from: Who, amount: bigint): void {
    const u: UpdateKind = { type: 'add', tlcId: this.nextTlc[from]++, amount };
    this.logs[from] = logSent(this.logs[from], u);
    this.send(from, { t: 'update', u });
  }

  /** The side removes a TLC the peer offered, once it is irrevocably committed and not removed. */
  remove(by: Who, pick: number, fulfil: boolean): void {
    const log = this.logs[by];
    const removedIds = new Set(
      log.entries.filter((e) => e.owner === 'local' && e.update.type !== 'add').map((e) => e.update.tlcId),
    );
    const removable = log.entries.filter(
      (e) =>
        e.owner === 'remote' &&
        e.update.type === 'add' &&
        irrevocable(log, e) &&
        !removedIds.has(e.update.tlcId),
    );
    if (!removable.length) return;
    const e = removable[pick % removable.length]!;
    const u: UpdateKind = { type: fulfil ? 'fulfil' : 'fail', tlcId: e.update.tlcId };
    this.logs[by] = logSent(log, u);
    this.send(by, { t: 'update', u });
  }

  sign(by: Who): boolean {
    const log = this.logs[by];
    if (log.awaitingRevoke || uncoveredByOurSignature(log).length === 0) return false;
    const s = signRemote(log);
    this.logs[by] = s.log;
    const m: Msg = {
      t: 'commit',
      number: s.number,
      covered: s.covered.map((e) => key(by, e)).sort(),
      view: viewOf(s.log, 'remote', s.number),
    };
    this.lastCommit[by] = m;
    this.send(by, m);
    return true;
  }

  /**
   * The connection drops with whatever was on its way, and comes back: each side forgets the
   * updates no CommitmentSigned covered, sends again what the peer's reestablish shows it lacks,
   * then offers again its own forgotten updates.
   */
  reconnect(): void {
    this.queues = { A: [], B: [] };
    const forgotten: Record<Who, LogEntry[]> = { A: [], B: [] };
    for (const w of ['A', 'B'] as const) {
      const d = disconnected(this.logs[w]);
      this.logs[w] = d.log;
      forgotten[w] = d.forgotten;
    }
    const said = { A: reestablishOf(this.logs.A), B: reestablishOf(this.logs.B) };
    for (const w of ['A', 'B'] as const) {
      for (const r of retransmissions(this.logs[w], said[other(w)])) {
        if (r.type === 'revoke') this.send(w, { t: 'revoke' });
        else {
          for (const e of r.updates) this.send(w, { t: 'update', u: e.update });
          this.send(w, this.lastCommit[w]!);
        }
      }
      for (const e of forgotten[w]) {
        this.logs[w] = logSent(this.logs[w], e.update);
        this.send(w, { t: 'update', u: e.update });
      }
    }
  }

  deliver(to: Who): boolean {
    const m = this.queues[to].shift();
    if (!m) return false;
    if (m.t === 'update') this.logs[to] = logReceived(this.logs[to], m.u);
    else if (m.t === 'revoke') this.logs[to] = revokeReceived(this.logs[to]);
    else {
      const r = commitmentReceived(this.logs[to]);
      this.logs[to] = r.log;
      const covered = r.covered.map((e) => key(to, e)).sort();
      if (r.number !== m.number) this.mismatches.push(`${to}: commitment ${r.number}, signed ${m.number}`);
      if (JSON.stringify(covered) !== JSON.stringify(m.covered))
        this.mismatches.push(`${to} ${r.number}: covers ${covered}, signer ${m.covered}`);
      const mine = viewOf(r.log, 'local', r.number);
      if (stringify(mine) !== stringify(mirrored(m.view)))
        this.mismatches.push(
          `${to} ${r.number}: view ${stringify(mine)}, signer ${stringify(mirrored(m.view))}`,
        );
      // The RevokeAndAck of the commitment before answers at once.
      this.send(to, { t: 'revoke' });
    }
    return true;
  }

  /** Delivers and signs until nothing moves. */
  settle(): void {
    for (let i = 0; i < 10_000; i++) {
      const moved = this.deliver('A') || this.deliver('B') || this.sign('A') || this.sign('B');
      if (!moved) return;
    }
    throw new Error('the pair never went quiet');
  }
}

const stringify = (x: unknown) => JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? v.toString() : v));

type Op =
  | { op: 'add'; from: Who; amount: number }
  | { op: 'remove'; by: Who; pick: number; fulfil: boolean }
  | { op: 'sign'; by: Who }
  | { op: 'deliver'; to: Who }
  | { op: 'reconnect' }
  | { op: 'trim'; by: Who };

const who = fc.constantFrom<Who>('A', 'B');
const ops = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('add' as const), from: who, amount: fc.integer({ min: 1, max: 1000 }) }),
    fc.record({ op: fc.constant('remove' as const), by: who, pick: fc.nat(), fulfil: fc.boolean() }),
    fc.record({ op: fc.constant('sign' as const), by: who }),
    fc.record({ op: fc.constant('deliver' as const), to: who }),
    fc.record({ op: fc.constant('deliver' as const), to: who }),
    fc.record({ op: fc.constant('reconnect' as const) }),
    fc.record({ op: fc.constant('trim' as const), by: who }),
  ),
  { maxLength: 200, size: 'large' },
);

function play(list: Op[]): Pair {
  const p = new Pair();
  for (const o of list) {
    if (o.op === 'add') p.add(o.from, BigInt(o.amount));
    else if (o.op === 'remove') p.remove(o.by, o.pick, o.fulfil);
    else if (o.op === 'sign') p.sign(o.by);
    else if (o.op === 'reconnect') p.reconnect();
    else if (o.op === 'trim') p.logs[o.by] = trimmed(p.logs[o.by]);
    else p.deliver(o.to);
  }
  return p;
}

describe('the update log of a pipelined channel', () => {
  it('both sides find the same updates and balances in every commitment, whatever crosses or is lost to a reconnection', () => {
    fc.assert(
      fc.property(ops, (list) => {
        const p = play(list);
        p.settle();
        expect(p.mismatches).toEqual([]);
        // Quiet: every update in both commitments, and the two latest commitments mirror.
        for (const w of ['A', 'B'] as const) {
          const log = p.logs[w];
          expect(log.entries.every((e) => irrevocable(log, e))).toBe(true);
        }
        expect(stringify(viewOf(p.logs.A, 'local', p.logs.A.local))).toBe(
          stringify(mirrored(viewOf(p.logs.B, 'local', p.logs.B.local))),
        );
        // Nothing created: what one side lost the other gained.
        const v = viewOf(p.logs.A, 'local', p.logs.A.local);
        const pending = [...v.offeredByLocal, ...v.offeredByRemote].length;
        if (pending === 0) expect(v.toLocal + v.toRemote).toBe(0n);
        // Trimming what is done changes no view of the latest commitments, and leaves only TLCs
        // still pending in them.
        for (const w of ['A', 'B'] as const) {
          const log = p.logs[w];
          const t = trimmed(log);
          for (const side of ['local', 'remote'] as const) {
            const n = side === 'local' ? log.local : log.remote;
            expect(stringify(viewOf(t, side, n))).toBe(stringify(viewOf(log, side, n)));
          }
          const pendingIds = viewOf(t, 'local', t.local);
          expect(t.entries.filter((e) => e.update.type === 'add').length).toBe(
            pendingIds.offeredByLocal.length + pendingIds.offeredByRemote.length,
          );
        }
      }),
      { numRuns: fuzzRuns(300) },
    );
  });

  it('a CommitmentSigned that crosses the peer’s covers only what its signer had acknowledged', () => {
    const p = new Pair();
    p.add('A', 100n);
    p.sign('A'); // B's commitment 1: A's add
    p.add('B', 40n);
    p.sign('B'); // A's commitment 1: B's add, not A's (B has not acknowledged it yet)
    p.deliver('B'); // A's add
    p.deliver('B'); // A's CommitmentSigned: B's commitment 1 holds A's add; B revokes 0
    p.deliver('A'); // B's add
    p.deliver('A'); // B's CommitmentSigned (sent before B saw A's): A's commitment 1
    expect(p.mismatches).toEqual([]);
    expect(viewOf(p.logs.A, 'local', 1n)).toEqual({
      offeredByLocal: [],
      offeredByRemote: [0n],
      toLocal: 0n,
      toRemote: -40n,
    });
    expect(viewOf(p.logs.B, 'local', 1n)).toEqual({
      offeredByLocal: [],
      offeredByRemote: [0n],
      toLocal: 0n,
      toRemote: -100n,
    });
    // Each side's own add is in the peer's commitment only: not irrevocable yet.
    expect(p.logs.A.entries.map((e) => irrevocable(p.logs.A, e))).toEqual([false, false]);
    p.settle();
    expect(p.mismatches).toEqual([]);
    expect(viewOf(p.logs.A, 'local', p.logs.A.local)).toEqual({
      offeredByLocal: [0n],
      offeredByRemote: [0n],
      toLocal: -100n,
      toRemote: -40n,
    });
  });

  it('after a reconnection, sends again what the peer lacks, in the order it first went out', () => {
    const p = new Pair();
    p.add('A', 100n);
    p.sign('A');
    p.deliver('B'); // A's add
    p.deliver('B'); // A's CommitmentSigned: B answers with its RevokeAndAck (not delivered)
    p.add('B', 30n);
    p.sign('B'); // B's CommitmentSigned after its RevokeAndAck (not delivered either)
    p.add('B', 7n); // covered by nothing: forgotten on both sides, offered again
    const b = disconnected(p.logs.B);
    const a = disconnected(p.logs.A);
    expect(b.forgotten.map((e) => e.update)).toEqual([{ type: 'add', tlcId: 1n, amount: 7n }]);
    const owed = retransmissions(b.log, reestablishOf(a.log)).map((r) =>
      r.type === 'commit'
        ? ['commit', r.number, r.updates.map((e) => e.update.tlcId)]
        : ['revoke', r.revokes],
    );
    expect(owed).toEqual([
      ['revoke', 0n],
      ['commit', 1n, [0n]],
    ]);
    // A lacks nothing: B had its CommitmentSigned.
    expect(retransmissions(a.log, reestablishOf(b.log))).toEqual([]);
    p.reconnect();
    p.settle();
    expect(p.mismatches).toEqual([]);
    expect(viewOf(p.logs.A, 'local', p.logs.A.local).offeredByRemote).toEqual([0n, 1n]);
  });

  it('refuses a second CommitmentSigned before the RevokeAndAck, and a RevokeAndAck nobody waits for', () => {
    let log = logSent(emptyLog(), { type: 'add', tlcId: 0n, amount: 5n });
    log = signRemote(log).log;
    expect(() => signRemote(log)).toThrow(LogError);
    expect(() => revokeReceived(revokeReceived(log))).toThrow(LogError);
  });
});
