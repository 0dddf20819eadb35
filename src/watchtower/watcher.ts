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
import { fundingLockScript, revocationWitness, type ScriptInfo } from '../channel/tx.ts';
import { bytesToHex } from '../codec/hex.ts';
import { isPeersCommitment, parseCommitmentArgs, preimagesInWitness } from './chain-data.ts';
import type { WatchtowerStore } from './store.ts';
import type { CommitmentCell, WatchTarget } from './targets.ts';

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
  /** Told of each preimage learned on chain (e.g. to fulfil the upstream TLC). */
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
          o.store.insertPreimage(t.nodeId, hash, preimage);
          log.info({ channel_id: t.channelId, payment_hash: hash }, 'watchtower learned a preimage on chain');
          o.onPreimage?.(hash, preimage);
        }
      }
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
    o.wallet.sign(tx);
    try {
      return await o.chain.sendTransaction(tx);
    } catch (e) {
      o.wallet.release(tx);
      throw e;
    }
  }

  async function checkTarget(t: WatchTarget): Promise<void> {
    const funding = fundingLockScript(o.scripts.fundingLock, t.localFundingPubkey, t.remoteFundingPubkey);
    const key = funding.hash();
    const done = o.store.outcome(key);
    if (done && done.kind !== 'revoking') return;
    const last = (await lastTx(funding, 'exact'))[0];
    if (last?.io_type !== 'input') return; // not funded yet, or still unspent
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
    if (!peers || !t.revocation || t.revocation.version < args.version) return;
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
    if (!(await isLive(commitmentOut))) return;
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
