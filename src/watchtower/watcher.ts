/**
 * The watcher (`fiber-internals.md` §7, `fiber-channel-protocol.md` §5.7): every interval it looks
 * at each watched funding cell; when the cell was spent by a commitment of the peer whose version
 * is covered by the revocation we hold, it sends the revocation transaction that hands the whole
 * commitment cell to our side, paying the fee from the node's wallet. It learns the preimages that
 * settlement transactions of a commitment reveal on chain.
 *
 * Outcomes are persisted (`watch_outcomes`), so a restart neither repeats a finished sweep nor
 * forgets one in flight.
 */
import { ccc } from '@ckb-ccc/core';
import { cccA } from '@ckb-ccc/core/advanced';
import type { ChainClient, Wallet } from '../chain/index.ts';
import { scriptToJson } from '../chain/index.ts';
import {
  CKB,
  fundingLockScript,
  pubOf,
  revocationWitness,
  type ScriptInfo,
  scriptAfterWitness,
  txMessage,
} from '../channel/index.ts';
import { bytesToHex } from '../codec/index.ts';
import { blake160, signRecoverable } from '../crypto/index.ts';
import { isPeersCommitment, parseCommitmentArgs, preimagesInWitness } from './chain-data.ts';
import { nextSettlement, type Role, type SettleAction, settlementWitness } from './settle.ts';
import type { WatchtowerStore } from './store.ts';
import type { CommitmentCell, SettlementKeys, WatchTarget } from './targets.ts';
import { udtCellOf, udtSettlementOutputs } from './udt-settlement.ts';

export interface WatchLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export interface WatchtowerOptions {
  store: WatchtowerStore;
  chain: ChainClient;
  /** Pays the fees of the transactions the watchtower sends. */
  wallet: Wallet;
  scripts: { fundingLock: ScriptInfo; commitmentLock: ScriptInfo };
  /** The targets to check, asked afresh at each check. */
  targets(): WatchTarget[];
  intervalMs: number;
  /**
   * Told of each preimage learned on chain (e.g. to fulfil the upstream TLC); what must survive a
   * stop is persisted before it returns (the watchtower stores the preimage only after).
   */
  onPreimage?(paymentHash: string, preimage: string): void;
  logger?: WatchLogger;
}

export interface Watchtower {
  start(): void;
  /** One full pass over the targets (also what the timer runs). */
  checkNow(): Promise<void>;
  stop(): Promise<void>;
}

interface TxRow {
  tx_hash: string;
  io_type: 'input' | 'output';
  io_index: string;
}

const NOOP: WatchLogger = { info() {}, warn() {} };

export function createWatchtower(o: WatchtowerOptions): Watchtower {
  const log = o.logger ?? NOOP;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  /** Settlement txs already read for preimages. */
  const scanned = new Set<string>();

  async function lastTx(script: ccc.Script, mode: 'exact' | 'prefix'): Promise<TxRow[]> {
    const key = { script: scriptToJson(script), script_type: 'lock', script_search_mode: mode };
    const r = await o.chain.call<{ objects: TxRow[] }>('get_transactions', [key, 'desc', '0x64']);
    return r?.objects ?? [];
  }

  /**
   * The transaction that spent the funding cell: the newest input row under the funding lock.
   * Only a 2-of-2 signature spends that lock, so any input row is the funding spend; outputs
   * anyone may add (dust sent to the same lock to hide the spend) are paged past.
   */
  async function fundingSpend(funding: ccc.Script): Promise<TxRow | undefined> {
    const key = { script: scriptToJson(funding), script_type: 'lock', script_search_mode: 'exact' };
    let cursor: string | undefined;
    for (let page = 0; page < 50; page++) {
      const params: unknown[] = [key, 'desc', '0x64'];
      if (cursor) params.push(cursor);
      const r = await o.chain.call<{ objects: TxRow[]; last_cursor: string }>('get_transactions', params);
      const input = r?.objects.find((x) => x.io_type === 'input');
      if (input) return input;
      if (!r || r.objects.length < 100) return undefined;
      cursor = r.last_cursor;
    }
    return undefined;
  }

  async function fetchTx(hash: string): Promise<ccc.Transaction | null> {
    const r = await o.chain.getTransaction(hash);
    if (r?.tx_status.status !== 'committed') return null;
    return cccA.JsonRpcTransformers.transactionTo(r.transaction as cccA.JsonRpcTransaction);
  }

  async function isLive(outPoint: ccc.OutPointLike): Promise<boolean> {
    return (await o.chain.getLiveCell(outPoint, false)).status === 'live';
  }

  /** Reads the preimages revealed by the settlements of a commitment (cells under `args[0..36]`). */
  async function learnPreimages(t: WatchTarget, args: Uint8Array): Promise<void> {
    const prefix = ccc.Script.from({
      codeHash: o.scripts.commitmentLock.codeHash,
      hashType: o.scripts.commitmentLock.hashType,
      args: args.slice(0, 36),
    });
    for (const row of await lastTx(prefix, 'prefix')) {
      if (row.io_type !== 'input' || scanned.has(row.tx_hash)) continue;
      const tx = await fetchTx(row.tx_hash);
      if (!tx) continue;
      scanned.add(row.tx_hash);
      for (const w of tx.witnesses) {
        for (const p of preimagesInWitness(ccc.bytesFrom(w))) {
          const hash = bytesToHex(p.paymentHash);
          const preimage = bytesToHex(p.preimage);
          if (o.store.getPreimage(hash) === preimage) continue;
          log.info({ channel_id: t.channelId, payment_hash: hash }, 'watchtower learned a preimage on chain');
          // Handed over before it is stored: a stop in between learns it again on the next start.
          o.onPreimage?.(hash, preimage);
          o.store.insertPreimage(t.nodeId, hash, preimage);
        }
      }
    }
  }

  /** Signs the wallet's inputs and sends; a refused tx gives its inputs back to the wallet. */
  async function signAndSend(tx: ccc.Transaction): Promise<string> {
    o.wallet.sign(tx);
    try {
      return await o.chain.sendTransaction(tx);
    } catch (e) {
      o.wallet.release(tx);
      throw e;
    }
  }

  /** The revocation tx: the whole commitment cell to us, the fee from the wallet (§5.7). */
  async function sendRevocation(
    t: WatchTarget,
    commitment: { hash: string; cell: CommitmentCell },
  ): Promise<string> {
    const rev = t.revocation as NonNullable<WatchTarget['revocation']>;
    const out = rev.output(commitment.cell);
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: [...o.scripts.commitmentLock.cellDeps, ...t.udtCellDeps],
      inputs: [{ previousOutput: { txHash: commitment.hash, index: 0 }, since: 0n }],
      outputs: [out.output],
      outputsData: [out.data],
      witnesses: [
        revocationWitness([t.localFundingPubkey, t.remoteFundingPubkey], rev.version, rev.signature),
      ],
    });
    // The wallet covers only what it sees as outputs: show it a zero-capacity output of the same
    // size, then put the signed capacity back (the commitment input pays for it).
    const capacity = out.output.capacity;
    (tx.outputs[0] as ccc.CellOutput).capacity = 0n;
    await o.wallet.fund(tx);
    (tx.outputs[0] as ccc.CellOutput).capacity = capacity;
    return signAndSend(tx);
  }

  /** Settlement txs sent and not yet seen committed, by the cell they spend. */
  const inflight = new Map<string, string>();
  const eq = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

  async function medianTimeSec(): Promise<bigint> {
    const tip = await o.chain.call<{ hash: string }>('get_tip_header');
    const ms = await o.chain.call<string | null>('get_block_median_time', [tip.hash]);
    return ms ? BigInt(ms) / 1000n : 0n;
  }

  /** The settlement script of a commitment-lock cell: fresh (from the data), or after a settlement. */
  async function scriptOf(
    s: SettlementKeys,
    cell: { txHash: string; args: Uint8Array },
    peers: boolean,
  ): Promise<Uint8Array | null> {
    if (cell.args[56] === 0) return s.script(cell.args, peers);
    const tx = await fetchTx(cell.txHash);
    for (const w of tx?.witnesses ?? []) {
      const next = scriptAfterWitness(ccc.bytesFrom(w));
      if (next && eq(blake160(next), cell.args.subarray(36, 56))) return next;
    }
    return null;
  }

  /** One settlement tx: the unlock entry signed over M(tx), the fee from the wallet (§5.7). */
  async function sendSettlement(
    cell: { outPoint: ccc.OutPointLike; output: ccc.CellOutput },
    script: Uint8Array,
    a: SettleAction,
    payTo: ccc.Script | null,
  ): Promise<string> {
    const witness = (sig: Uint8Array) => settlementWitness(script, a, sig);
    const cont = a.continuation;
    // What we take: a cell of its own at the owner's script when that is not our wallet and the
    // amount can stand as a cell; otherwise it joins the wallet's change.
    const own =
      payTo &&
      !payTo.eq(o.wallet.lockScript) &&
      a.amount >= BigInt(ccc.CellOutput.from({ capacity: 0n, lock: payTo }).occupiedSize) * CKB
        ? payTo
        : null;
    const outputs: ccc.CellOutputLike[] = [];
    if (cont)
      outputs.push({ capacity: 0n, lock: { ...cell.output.lock, args: cont.args }, type: cell.output.type });
    if (own) outputs.push({ capacity: 0n, lock: own });
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: o.scripts.commitmentLock.cellDeps,
      inputs: [{ previousOutput: cell.outPoint, since: a.since }],
      outputs,
      outputsData: outputs.map(() => '0x'),
      witnesses: [witness(new Uint8Array(65))],
    });
    // The wallet sees zero-capacity outputs of the right size (it pays only the fee); the real
    // capacities come from the commitment cell.
    for (const out of tx.outputs) out.capacity = 0n;
    const n = tx.outputs.length;
    await o.wallet.fund(tx);
    if (cont) (tx.outputs[0] as ccc.CellOutput).capacity = cont.capacity;
    if (own) (tx.outputs[n - 1] as ccc.CellOutput).capacity = a.amount;
    else {
      const last = tx.outputs[tx.outputs.length - 1];
      if (last && tx.outputs.length > n && last.lock.eq(o.wallet.lockScript)) last.capacity += a.amount;
      else tx.addOutput({ capacity: a.amount, lock: o.wallet.lockScript }, '0x');
    }
    // The expiry path proves the time with an absolute-timestamp since on a fee input.
    if (a.feeSince && tx.inputs[1]) (tx.inputs[1] as ccc.CellInput).since = a.feeSince;
    tx.witnesses[0] = witness(signRecoverable(txMessage(tx), a.key));
    return signAndSend(tx);
  }

  /** A settlement of a UDT commitment cell (`udt-settlement.ts`), the wallet paying what it must. */
  async function sendUdtSettlement(
    t: WatchTarget,
    cell: { outPoint: ccc.OutPointLike; output: ccc.CellOutput },
    script: Uint8Array,
    a: SettleAction,
    payTo: ccc.Script | null,
  ): Promise<string> {
    const plan = udtSettlementOutputs({
      cell: cell.output,
      action: a,
      to: payTo ?? o.wallet.lockScript,
    });
    const tx = ccc.Transaction.from({
      version: 0,
      cellDeps: [...o.scripts.commitmentLock.cellDeps, ...t.udtCellDeps],
      inputs: [{ previousOutput: cell.outPoint, since: a.since }],
      outputs: plan.outputs.map((x) => ({ ...x, capacity: x.fromWallet })),
      outputsData: plan.data,
      witnesses: [settlementWitness(script, a, new Uint8Array(65))],
    });
    // The wallet covers only its part of each output (and the fee); the cell pays the rest.
    await o.wallet.fund(tx);
    plan.outputs.forEach((x, i) => {
      (tx.outputs[i] as ccc.CellOutput).capacity = x.capacity;
    });
    if (a.feeSince && tx.inputs[1]) (tx.inputs[1] as ccc.CellInput).since = a.feeSince;
    tx.witnesses[0] = settlementWitness(script, a, signRecoverable(txMessage(tx), a.key));
    return signAndSend(tx);
  }

  /**
   * After a commitment (not revocable) is on chain: the next settlement we can make on each live
   * cell under its lock — TLCs by preimage or expiry, then our share. Returns false when no cell
   * is left (all settled).
   */
  async function settle(
    t: WatchTarget,
    s: SettlementKeys,
    args: Uint8Array,
    peers: boolean,
  ): Promise<boolean> {
    const prefix = ccc.Script.from({
      codeHash: o.scripts.commitmentLock.codeHash,
      hashType: o.scripts.commitmentLock.hashType,
      args: args.slice(0, 36),
    });
    const key = {
      script: scriptToJson(prefix),
      script_type: 'lock' as const,
      script_search_mode: 'prefix' as const,
    };
    // All live cells under the prefix (anyone may add cells there; they are skipped below).
    const cells: Awaited<ReturnType<ChainClient['getCells']>>['objects'] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const r = await o.chain.getCells(key, 'asc', 50, cursor);
      cells.push(...r.objects);
      if (r.objects.length < 50) break;
      cursor = r.last_cursor;
    }
    if (cells.length === 0) return false;
    const role: Role = peers ? 'other' : 'holder';
    const slot: [number, number] = role === 'holder' ? [37, 57] : [57, 77];
    const known = s.preimages();
    let now: bigint | undefined;
    for (const c of cells) {
      const op = `${c.out_point.tx_hash}:${c.out_point.index}`;
      const sent = inflight.get(op);
      if (sent) {
        const st = await o.chain.getTransaction(sent);
        if (st && st.tx_status.status !== 'rejected') continue;
        inflight.delete(op);
      }
      const cellArgs = ccc.bytesFrom(c.output.lock.args);
      const script = await scriptOf(s, { txHash: c.out_point.tx_hash, args: cellArgs }, peers);
      if (!script) continue;
      now ??= await medianTimeSec();
      const output = ccc.CellOutput.from({
        capacity: BigInt(c.output.capacity),
        lock: prefix.clone(),
        type: c.output.type
          ? { codeHash: c.output.type.code_hash, hashType: c.output.type.hash_type, args: c.output.type.args }
          : undefined,
      });
      output.lock.args = ccc.hexFrom(cellArgs);
      // A UDT cell settles tokens (the amount in its data); its capacity stays with the cells.
      const udt = output.type ? udtCellOf(output, ccc.bytesFrom(c.output_data ?? '0x')) : null;
      if (output.type && !udt) continue;
      const action = nextSettlement({
        script,
        args: cellArgs,
        capacity: udt ? udt.amount : output.capacity,
        role,
        // Our own fresh CKB commitment without TLCs is the channel layer's to settle; anything
        // else (TLCs pending, a cell already partly settled, tokens) is ours.
        partyKey:
          peers || s.settleOwnParty || cellArgs[56] !== 0 || script[0] !== 0 || udt ? s.partyKey : null,
        tlcKey: (e) => s.tlcKeys.find((k) => eq(blake160(pubOf(k)), e.subarray(slot[0], slot[1]))) ?? null,
        preimage: (h20) => {
          const hx = bytesToHex(h20);
          const p = known.get(hx) ?? o.store.searchPreimage(hx);
          return p ? (typeof p === 'string' ? ccc.bytesFrom(p) : p) : null;
        },
        nowSec: now,
        // A UDT continuation keeps capacity from the cell (udt-settlement.ts), not from the tokens.
        continuationOccupied: udt ? 0n : BigInt(output.occupiedSize) * CKB,
      });
      if (!action) continue;
      try {
        const cell = { outPoint: { txHash: c.out_point.tx_hash, index: c.out_point.index }, output };
        const hash = udt
          ? await sendUdtSettlement(t, cell, script, action, s.payTo)
          : await sendSettlement(cell, script, action, s.payTo);
        inflight.set(op, hash);
        log.info(
          { channel_id: t.channelId, tx_hash: hash, unlock: action.t, amount: String(action.amount) },
          'settlement transaction sent',
        );
      } catch (e) {
        // Typically the delay has not passed yet: the next pass tries again.
        log.info({ channel_id: t.channelId, err: (e as Error).message }, 'settlement not possible yet');
      }
    }
    return true;
  }

  /** Funding lock and its hash per key pair (key aggregation is EC work: done once). */
  const fundingLocks = new Map<string, { funding: ccc.Script; key: string }>();
  function fundingOf(t: WatchTarget): { funding: ccc.Script; key: string } {
    const id = `${bytesToHex(t.localFundingPubkey)}${bytesToHex(t.remoteFundingPubkey)}`;
    let f = fundingLocks.get(id);
    if (!f) {
      const funding = fundingLockScript(o.scripts.fundingLock, t.localFundingPubkey, t.remoteFundingPubkey);
      f = { funding, key: funding.hash() };
      fundingLocks.set(id, f);
    }
    return f;
  }

  async function checkTarget(t: WatchTarget): Promise<void> {
    const { funding, key } = fundingOf(t);
    const done = o.store.outcome(key);
    if (done && done.kind !== 'revoking') return;
    const last = await fundingSpend(funding);
    if (!last) return; // not funded yet, or still unspent
    const spend = await fetchTx(last.tx_hash);
    if (!spend) return;
    const out0 = spend.outputs[0];
    const args = out0 ? parseCommitmentArgs(ccc.bytesFrom(out0.lock.args)) : null;
    const isCommitment =
      spend.outputs.length === 1 &&
      !!args &&
      out0?.lock.codeHash === ccc.hexFrom(o.scripts.commitmentLock.codeHash);
    if (!isCommitment || !args || !out0) {
      o.store.setOutcome(key, 'closed', last.tx_hash);
      return;
    }
    await learnPreimages(t, ccc.bytesFrom(out0.lock.args));
    const peers = isPeersCommitment(args, t.localFundingPubkey, t.remoteFundingPubkey);
    if (!peers || !t.revocation || t.revocation.version < args.version) {
      if (t.settlement && !(await settle(t, t.settlement, ccc.bytesFrom(out0.lock.args), peers)))
        o.store.setOutcome(key, 'closed', last.tx_hash);
      return;
    }
    const commitmentOut = { txHash: last.tx_hash, index: 0 };
    if (done?.kind === 'revoking' && done.txHash) {
      const sent = await o.chain.getTransaction(done.txHash);
      if (sent?.tx_status.status === 'committed') {
        o.store.setOutcome(key, 'revoked', done.txHash);
        log.info({ channel_id: t.channelId, tx_hash: done.txHash }, 'revoked commitment swept');
        return;
      }
      if (sent && sent.tx_status.status !== 'rejected') return; // still in the pool
    }
    if (!(await isLive(commitmentOut))) {
      // Too late to revoke (the cheater settled part of it after the delay): claim what we can
      // of what is left, as after any commitment.
      if (t.settlement) await settle(t, t.settlement, ccc.bytesFrom(out0.lock.args), peers);
      return;
    }
    log.warn(
      { channel_id: t.channelId, commitment: last.tx_hash, version: String(args.version) },
      'the peer published a revoked commitment: sweeping it',
    );
    const hash = await sendRevocation(t, {
      hash: last.tx_hash,
      cell: { output: out0, data: ccc.bytesFrom(spend.outputsData[0] ?? '0x') },
    });
    o.store.setOutcome(key, 'revoking', hash);
    log.info({ channel_id: t.channelId, tx_hash: hash }, 'revocation transaction sent');
  }

  async function checkAll(): Promise<void> {
    const seen = new Set<string>();
    for (const t of o.targets()) {
      if (stopped) return;
      const k = `${bytesToHex(t.localFundingPubkey)}:${bytesToHex(t.remoteFundingPubkey)}`;
      if (seen.has(k)) continue;
      seen.add(k);
      try {
        await checkTarget(t);
      } catch (e) {
        log.warn({ channel_id: t.channelId, err: (e as Error).message }, 'watchtower check failed');
      }
    }
  }

  /** Passes run one at a time (timer and checkNow alike). */
  let queue: Promise<void> = Promise.resolve();
  function pass(): Promise<void> {
    const run = () =>
      checkAll().catch((e) => log.warn({ err: (e as Error).message }, 'watchtower pass failed'));
    queue = queue.then(run, run);
    return queue;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void pass().finally(schedule);
    }, o.intervalMs);
    timer.unref?.();
  }

  return {
    start() {
      if (timer || stopped) return;
      schedule();
    },
    checkNow: pass,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await queue;
    },
  };
}
