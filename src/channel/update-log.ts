/**
 * The update log of a pipelined channel (docs/pipelined-commitments.md), pure: which updates each
 * commitment holds when both sides may have a CommitmentSigned in flight at once. Not wired into
 * the channel yet: this is step 1 of that plan (the coverage rules and the commitment views) and the
 * log's part of step 2 (what a reconnection forgets and sends again).
 *
 * The rules (Lightning's, BOLT #2), from one side's point of view:
 * - Our CommitmentSigned signs the peer's next commitment. It covers every update we sent before
 *   it, and every update of the peer's that we have acknowledged: one that entered a commitment
 *   of ours before we sent this CommitmentSigned (we revoke the commitment before it at once, with
 *   the RevokeAndAck that answers the peer's CommitmentSigned).
 * - The peer's CommitmentSigned signs our next commitment. It covers every update the peer sent
 *   before it (one direction of a connection keeps its order), and every update of ours that the
 *   peer acknowledged before it: one in a commitment of the peer's whose RevokeAndAck reached us
 *   before this CommitmentSigned.
 * Both sides apply the same rules to the same order of messages, so they agree on every
 * commitment without naming its updates on the wire.
 */

export type Owner = 'local' | 'remote';

export type UpdateKind =
  | { type: 'add'; tlcId: bigint; amount: bigint }
  | { type: 'fulfil'; tlcId: bigint }
  | { type: 'fail'; tlcId: bigint };

/** One update, as both sides log it: the owner's `n`-th update. */
export interface LogEntry {
  owner: Owner;
  n: number;
  update: UpdateKind;
  /** The number of our first commitment that holds it (undefined: none yet). */
  inLocal?: bigint;
  /** The number of the peer's first commitment that holds it. */
  inRemote?: bigint;
}

export interface UpdateLog {
  entries: LogEntry[];
  /** How many updates each side has logged (the next one's `n`). */
  sent: number;
  received: number;
  /** Our latest commitment's number (signed by the peer), and the peer's (signed by us). */
  local: bigint;
  remote: bigint;
  /**
   * The peer's commitment numbers it has acknowledged with a RevokeAndAck: every number up to
   * this one (it revoked the one before each).
   */
  remoteAcked: bigint;
  /** Whether our last CommitmentSigned still waits for the peer's RevokeAndAck. */
  awaitingRevoke: boolean;
  /**
   * Whether, of our last CommitmentSigned and our last RevokeAndAck, the RevokeAndAck went out
   * last: after a reconnection both may be owed again, and only their first order gives the peer
   * the same commitments (a RevokeAndAck sent before a CommitmentSigned widens what it covers).
   */
  revokedLast: boolean;
  /**
   * The balance moves of TLCs added and removed for good, taken out of the log (`trimmed`): every
   * commitment either side may still sign or broadcast holds them.
   */
  settled: { toLocal: bigint; toRemote: bigint };
}

export function emptyLog(local = 0n, remote = 0n): UpdateLog {
  return {
    entries: [],
    sent: 0,
    received: 0,
    local,
    remote,
    remoteAcked: remote,
    awaitingRevoke: false,
    revokedLast: false,
    settled: { toLocal: 0n, toRemote: 0n },
  };
}

export class LogError extends Error {}

/** We send an update. */
export function logSent(log: UpdateLog, update: UpdateKind): UpdateLog {
  return {
    ...log,
    entries: [...log.entries, { owner: 'local', n: log.sent, update }],
    sent: log.sent + 1,
  };
}

/** The peer's update arrived. */
export function logReceived(log: UpdateLog, update: UpdateKind): UpdateLog {
  return {
    ...log,
    entries: [...log.entries, { owner: 'remote', n: log.received, update }],
    received: log.received + 1,
  };
}

/** The updates our next CommitmentSigned would newly cover (in log order). */
export function uncoveredByOurSignature(log: UpdateLog): LogEntry[] {
  return log.entries.filter(
    (e) => e.inRemote === undefined && (e.owner === 'local' || e.inLocal !== undefined),
  );
}

/**
 * We send a CommitmentSigned for the peer's commitment `remote + 1`. Refused while the last one
 * waits for its RevokeAndAck (one unacknowledged CommitmentSigned a direction).
 */
export function signRemote(log: UpdateLog): { log: UpdateLog; number: bigint; covered: LogEntry[] } {
  if (log.awaitingRevoke) throw new LogError('a CommitmentSigned already waits for its RevokeAndAck');
  const number = log.remote + 1n;
  const covered = uncoveredByOurSignature(log);
  const set = new Set(covered);
  return {
    log: {
      ...log,
      entries: log.entries.map((e) => (set.has(e) ? { ...e, inRemote: number } : e)),
      remote: number,
      awaitingRevoke: true,
      revokedLast: false,
    },
    number,
    covered,
  };
}

/**
 * The peer's CommitmentSigned for our commitment `local + 1`: what it covers. We answer it with a
 * RevokeAndAck of `local` at once (the caller sends it), which acknowledges the peer's updates in it.
 */
export function commitmentReceived(log: UpdateLog): { log: UpdateLog; number: bigint; covered: LogEntry[] } {
  const number = log.local + 1n;
  const covered = log.entries.filter(
    (e) =>
      e.inLocal === undefined &&
      (e.owner === 'remote' || (e.inRemote !== undefined && e.inRemote <= log.remoteAcked)),
  );
  const set = new Set(covered);
  return {
    log: {
      ...log,
      entries: log.entries.map((e) => (set.has(e) ? { ...e, inLocal: number } : e)),
      local: number,
      revokedLast: true,
    },
    number,
    covered,
  };
}

/** The peer's RevokeAndAck of its commitment `remote − 1`: our last CommitmentSigned is acknowledged. */
export function revokeReceived(log: UpdateLog): UpdateLog {
  if (!log.awaitingRevoke) throw new LogError('RevokeAndAck without a CommitmentSigned waiting for it');
  return { ...log, remoteAcked: log.remote, awaitingRevoke: false };
}

/**
 * An entry is irrevocably committed once both sides hold it in a commitment whose predecessor is
 * revoked: ours (we revoke at once on receipt) and the peer's (acknowledged by its RevokeAndAck).
 */
export function irrevocable(log: UpdateLog, e: LogEntry): boolean {
  return e.inLocal !== undefined && e.inRemote !== undefined && e.inRemote <= log.remoteAcked;
}

/** A commitment's contents: the TLCs it holds and how far each side's balance moved. */
export interface CommitmentView {
  /** TLC ids it holds, by the side that offered them. */
  offeredByLocal: bigint[];
  offeredByRemote: bigint[];
  /** Amount moved to each side by the removals it holds, and held in its pending TLCs. */
  toLocal: bigint;
  toRemote: bigint;
}

/**
 * The contents of one commitment: ours at number `n` (`side` 'local') or the peer's (`side`
 * 'remote'), from the updates it holds. Balances are the change from the opening balances:
 * an add takes its amount from its offerer, a fulfil gives it to the receiver, a fail back to the
 * offerer.
 */
export function viewOf(log: UpdateLog, side: Owner, n: bigint): CommitmentView {
  const holds = (e: LogEntry) => {
    const at = side === 'local' ? e.inLocal : e.inRemote;
    return at !== undefined && at <= n;
  };
  const adds = new Map<string, { offerer: Owner; amount: bigint }>();
  const removed = new Map<string, 'fulfil' | 'fail'>();
  for (const e of log.entries) {
    if (!holds(e)) continue;
    // An add is keyed by its offerer; a removal is sent by the TLC's receiver.
    if (e.update.type === 'add')
      adds.set(`${e.owner}:${e.update.tlcId}`, { offerer: e.owner, amount: e.update.amount });
    else removed.set(`${e.owner === 'local' ? 'remote' : 'local'}:${e.update.tlcId}`, e.update.type);
  }
  for (const key of removed.keys())
    if (!adds.has(key))
      throw new LogError(`commitment ${side} ${n} removes TLC ${key}, which it does not hold`);
  const v: CommitmentView = {
    offeredByLocal: [],
    offeredByRemote: [],
    toLocal: log.settled.toLocal,
    toRemote: log.settled.toRemote,
  };
  for (const [key, a] of adds) {
    const id = BigInt(key.slice(key.indexOf(':') + 1));
    const r = removed.get(key);
    const receiver: Owner = a.offerer === 'local' ? 'remote' : 'local';
    const move = (to: Owner, x: bigint) => {
      if (to === 'local') v.toLocal += x;
      else v.toRemote += x;
    };
    move(a.offerer, -a.amount);
    if (r === undefined) {
      (a.offerer === 'local' ? v.offeredByLocal : v.offeredByRemote).push(id);
      continue;
    }
    move(r === 'fulfil' ? receiver : a.offerer, a.amount);
  }
  return v;
}

/** What a side says of itself when the connection comes back (Strand's ReestablishChannel). */
export interface Reestablish {
  /** Its latest commitment's number. */
  local: bigint;
  /** The number of its peer's latest commitment it has seen acknowledged. */
  remoteAcked: bigint;
}

export function reestablishOf(log: UpdateLog): Reestablish {
  return { local: log.local, remoteAcked: log.remoteAcked };
}

/**
 * The connection dropped. Updates no CommitmentSigned covered are forgotten on both sides
 * (Lightning's rule): the peer's, which it will send again if it still wants them, and ours, which
 * are returned for the caller to offer again. Each side's covered updates are a prefix of its
 * updates, so the counters go back to the first one forgotten (entries `trimmed` before are not
 * in the log but still counted).
 */
export function disconnected(log: UpdateLog): { log: UpdateLog; forgotten: LogEntry[] } {
  const forgotten = log.entries.filter(
    (e) =>
      (e.owner === 'local' && e.inRemote === undefined) || (e.owner === 'remote' && e.inLocal === undefined),
  );
  const kept = log.entries.filter((e) => !forgotten.includes(e));
  const first = (owner: Owner, count: number) =>
    Math.min(count, ...forgotten.filter((e) => e.owner === owner).map((e) => e.n));
  return {
    log: {
      ...log,
      entries: kept,
      sent: first('local', log.sent),
      received: first('remote', log.received),
    },
    forgotten: forgotten.filter((e) => e.owner === 'local'),
  };
}

/** What we owe the peer again, in the order to send it. */
export type Retransmission =
  | { type: 'commit'; number: bigint; updates: LogEntry[] }
  | { type: 'revoke'; revokes: bigint };

/**
 * Given the peer's reestablish: our last CommitmentSigned again (with the updates it covers, in
 * their order) if the peer never had it, our last RevokeAndAck again if the peer never had it,
 * in the order they first went out. One unacknowledged CommitmentSigned a direction means the
 * peer is at most one behind on each.
 */
export function retransmissions(log: UpdateLog, peer: Reestablish): Retransmission[] {
  if (peer.local < log.remote - 1n || peer.remoteAcked < log.local - 1n || peer.local > log.remote)
    throw new LogError(`the peer's state (${peer.local}, ${peer.remoteAcked}) is not one ours can follow`);
  const out: Retransmission[] = [];
  if (peer.local < log.remote)
    out.push({
      type: 'commit',
      number: log.remote,
      updates: log.entries.filter((e) => e.owner === 'local' && e.inRemote === log.remote),
    });
  if (peer.remoteAcked < log.local) out.push({ type: 'revoke', revokes: log.local - 1n });
  return out.length === 2 && !log.revokedLast ? [out[1]!, out[0]!] : out;
}

/**
 * The log without the TLCs that are done: added and removed, both irrevocably. Their moves go
 * into `settled`, so no view of a commitment either side may still use changes; what is left is
 * what a reconnection or a later CommitmentSigned can still need.
 */
export function trimmed(log: UpdateLog): UpdateLog {
  const done = new Set<LogEntry>();
  let { toLocal, toRemote } = log.settled;
  // Removals by the TLC they remove (its offerer and id): one pass, not one search per add.
  const removals = new Map<string, LogEntry>();
  for (const e of log.entries)
    if (e.update.type !== 'add')
      removals.set(`${e.owner === 'local' ? 'remote' : 'local'}:${e.update.tlcId}`, e);
  for (const add of log.entries) {
    if (add.update.type !== 'add' || !irrevocable(log, add)) continue;
    const { tlcId, amount } = add.update;
    const removal = removals.get(`${add.owner}:${tlcId}`);
    if (!removal || !irrevocable(log, removal)) continue;
    const receiver: Owner = add.owner === 'local' ? 'remote' : 'local';
    const to = removal.update.type === 'fulfil' ? receiver : add.owner;
    // The offerer paid the amount in; the removal gives it to `to`.
    if (add.owner === 'local') toLocal -= amount;
    else toRemote -= amount;
    if (to === 'local') toLocal += amount;
    else toRemote += amount;
    done.add(add);
    done.add(removal);
  }
  if (done.size === 0) return log;
  return { ...log, entries: log.entries.filter((e) => !done.has(e)), settled: { toLocal, toRemote } };
}

// ---- stored form ---------------------------------------------------------------------------------

const KIND = { add: 'a', fulfil: 'f', fail: 'x' } as const;
const KIND_OF = { a: 'add', f: 'fulfil', x: 'fail' } as const;

/**
 * The log's entries as one short string for the stored channel: a pipelined channel at 64 in
 * flight holds a few hundred entries, written with every state, and as JSON objects with their
 * bigints they were ~150 bytes each. One entry is `owner.n.kind.tlcId.amount.inLocal.inRemote`
 * (`l`/`r`, `a`/`f`/`x`, an empty field for none), entries separated by spaces.
 */
export function packEntries(entries: LogEntry[]): string {
  return entries
    .map((e) =>
      [
        e.owner === 'local' ? 'l' : 'r',
        e.n,
        KIND[e.update.type],
        e.update.tlcId,
        e.update.type === 'add' ? e.update.amount : '',
        e.inLocal ?? '',
        e.inRemote ?? '',
      ].join('.'),
    )
    .join(' ');
}

export function unpackEntries(packed: string): LogEntry[] {
  if (packed === '') return [];
  return packed.split(' ').map((x) => {
    const [owner, n, kind, id, amount, inLocal, inRemote] = x.split('.');
    const type = KIND_OF[kind as keyof typeof KIND_OF];
    if (!type || (owner !== 'l' && owner !== 'r'))
      throw new LogError(`a stored log entry is malformed: ${x}`);
    const tlcId = BigInt(id as string);
    const e: LogEntry = {
      owner: owner === 'l' ? 'local' : 'remote',
      n: Number(n),
      update: type === 'add' ? { type, tlcId, amount: BigInt(amount as string) } : { type, tlcId },
    };
    if (inLocal) e.inLocal = BigInt(inLocal);
    if (inRemote) e.inRemote = BigInt(inRemote);
    return e;
  });
}
