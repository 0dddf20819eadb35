/**
 * Creating a dev chain (`DevChain.open` on an empty directory): the genesis from a CKB dev spec
 * (byte-identical to CKB's), then a setup block: one ordinary signed transaction from the spec's
 * well-known dev account that deploys Strand's script cells (funding lock, commitment lock, simple
 * UDT, xUDT) and funds the configured accounts with CKB and the test tokens (`funding.ts`).
 */
import fs from 'node:fs';
import { ccc } from '@ckb-ccc/core';
import type { SqliteDb as Db } from '../store/index.ts';
import { makeBlock, ZERO_HASH } from './block.ts';
import {
  buildFunding,
  type DevAccount,
  type FundingSource,
  faucetLockOf,
  SIGHASH_TYPE_HASH,
  type TokenScript,
  testTokens,
} from './funding.ts';
import { cellbaseInput, cellbaseWitness } from './genesis.ts';
import { cachedGenesis } from './genesis-cache.ts';
import { DEV_SCRIPTS, type DevScript, devScriptCodeHash } from './scripts/registry.ts';
import { epochOfBlock } from './since.ts';
import { type ChainSpec, parseChainSpec } from './spec.ts';
import { commitBlock } from './store.ts';
import { txHashOf } from './txcache.ts';
import { createdCells, dataHashOf, outPointKey, type ViewCell, verifyTransaction } from './validate.ts';

/** Private key of the dev spec's 20-billion-CKB issued cell (CKB's documented dev-chain account). */
export const DEV_FAUCET_KEY = '0xd00c06bfd800d27397002dca6fb0993d5ba6399b4238b2f29ee9deb97593d2bc';
/** CKB's dev spec as fiber-js ships it: genesis 0x677c33a4…7614 (the reference vector). */
export const DEFAULT_SPEC_TOML = fs.readFileSync(new URL('./dev-spec.toml', import.meta.url), 'utf8');
/**
 * The same with Strand's funding-lock, commitment-lock and simple-UDT code cells as genesis tx0
 * outputs 6–8: a reference node given this spec derives the same script code hashes as Strand.
 */
export const STRAND_SPEC_TOML = fs.readFileSync(new URL('./strand-dev-spec.toml', import.meta.url), 'utf8');

export interface ScriptInfo {
  codeHash: ccc.Hex;
  hashType: ccc.HashType;
  cellDeps: { outPoint: { txHash: ccc.Hex; index: number }; depType: 'code' | 'depGroup' }[];
}

export interface DevScripts {
  secp256k1_blake160_sighash_all: ScriptInfo;
  funding_lock: ScriptInfo;
  commitment_lock: ScriptInfo;
  simple_udt: ScriptInfo;
  xudt: ScriptInfo;
  /** The test UDT's type script (simple UDT owned by the faucet). */
  test_udt: TokenScript;
  /** The test xUDT's type script (xUDT owned by the faucet, no flags). */
  test_xudt: TokenScript;
}

/** What creating a chain reads of the chain's options (`DevChainOptions`). */
export interface SetupOptions {
  specToml?: string;
  /** Blocks per epoch after genesis (default: the spec's genesis_epoch_length). */
  epochLength?: bigint;
  faucetKey?: ccc.Hex;
  accounts?: DevAccount[];
}

/**
 * A chain created before the test xUDT existed has its code cell (deployed by every setup block)
 * but no `test_xudt` entry: it is the same token shape as the test UDT, on the xUDT code hash.
 */
export function withTestXudt(s: DevScripts): DevScripts {
  if (s.test_xudt) return s;
  return { ...s, test_xudt: { ...s.test_udt, codeHash: s.xudt.codeHash, hashType: s.xudt.hashType } };
}

/** Commits the genesis and the setup block to an empty chain database. */
export function initialise(db: Db, opts: SetupOptions, now: () => bigint): void {
  const specToml = opts.specToml ?? DEFAULT_SPEC_TOML;
  const spec: ChainSpec = parseChainSpec(specToml);
  const genesis = cachedGenesis(specToml, spec);
  const epochLength = opts.epochLength ?? spec.params.genesisEpochLength;
  if (epochLength <= 0n || epochLength > 0xffffn)
    throw new Error('epoch length must be between 1 and 65535 blocks');
  const faucetKey = (opts.faucetKey ?? DEV_FAUCET_KEY) as ccc.Hex;
  db.transaction(() => {
    const live = new Map<string, ViewCell>();
    commitBlock(db, genesis, () => undefined);
    const setMeta = db.prepare('INSERT INTO dc_meta (key, value) VALUES (?, ?)');
    setMeta.run('epoch_length', epochLength.toString());
    setMeta.run('faucet_key', faucetKey);
    setMeta.run('spec', specToml);
    const commit = { blockNumber: 0n, epoch: 0n, timestamp: genesis.header.timestamp };
    genesis.transactions.forEach((tx) => {
      for (const [key, cell] of createdCells(tx, txHashOf(tx), commit)) live.set(key, cell);
    });
    const tx1Hash = txHashOf(genesis.transactions[1] as ccc.Transaction);
    for (const input of (genesis.transactions[1] as ccc.Transaction).inputs)
      live.delete(outPointKey(input.previousOutput));

    // The setup block: deploy the script cells and fund the accounts in one signed transaction.
    const sighashDeps: ScriptInfo['cellDeps'] = [
      { outPoint: { txHash: tx1Hash, index: 0 }, depType: 'depGroup' },
    ];
    const tokens = testTokens(faucetLockOf(faucetKey), {
      simpleUdt: devScriptCodeHash('simple_udt') as ccc.Hex,
      xudt: devScriptCodeHash('xudt') as ccc.Hex,
    });
    const view: FundingSource = {
      liveCellsByLock: (lock: ccc.Script) =>
        [...live.values()].filter((c) => c.output.lock.eq(lock) && !c.output.type),
      scripts: { secp256k1_blake160_sighash_all: { cellDeps: sighashDeps }, ...tokens },
    };
    // Script cells already in the genesis (a spec whose issued cells carry them, so that the
    // reference node, which takes tx0 outputs 6–8 as its FundingLock, CommitmentLock and
    // SimpleUDT code cells on a dev chain, agrees on the code hashes) are used where they are;
    // the others are deployed by the setup transaction.
    const tx0 = genesis.transactions[0] as ccc.Transaction;
    const inGenesis = new Map<string, number>();
    tx0.outputsData.forEach((d, i) => {
      inGenesis.set(dataHashOf(ccc.bytesFrom(d)), i);
    });
    const toDeploy = DEV_SCRIPTS.filter((d) => !inGenesis.has(devScriptCodeHash(d.id)));
    const deploy = toDeploy.map((s: DevScript) => ({
      lock: { codeHash: ZERO_HASH, hashType: 'data' as const, args: '0x' },
      data: s.data,
    }));
    const deployTx = buildFunding(view, faucetKey, [], deploy, () => true);
    const setupHash = txHashOf(deployTx);
    const scriptInfo = (id: DevScript['id']): ScriptInfo => {
      const codeHash = devScriptCodeHash(id) as ccc.Hex;
      const g = inGenesis.get(codeHash);
      const outPoint =
        g === undefined
          ? { txHash: setupHash, index: toDeploy.findIndex((d) => d.id === id) }
          : { txHash: txHashOf(tx0), index: g };
      return { codeHash, hashType: 'data2', cellDeps: [{ outPoint, depType: 'code' }] };
    };
    const scripts: DevScripts = {
      secp256k1_blake160_sighash_all: {
        codeHash: SIGHASH_TYPE_HASH,
        hashType: 'type',
        cellDeps: sighashDeps,
      },
      funding_lock: scriptInfo('funding_lock'),
      commitment_lock: scriptInfo('commitment_lock'),
      simple_udt: scriptInfo('simple_udt'),
      xudt: scriptInfo('xudt'),
      ...tokens,
    };
    setMeta.run('scripts', JSON.stringify(scripts));
    const t = now();
    const header1 = {
      version: 0,
      compactTarget: genesis.header.compactTarget,
      timestamp: t > genesis.header.timestamp ? t : genesis.header.timestamp + 1n,
      number: 1n,
      epoch: epochOfBlock(1n, epochLength),
      parentHash: genesis.hash,
      proposalsHash: ZERO_HASH,
      extraHash: ZERO_HASH,
      dao: genesis.header.dao,
      nonce: 0n,
    };
    // Each setup transaction is verified like any other, so a bad account config fails loudly.
    const env = { blockNumber: 1n, epoch: header1.epoch, medianTime: genesis.header.timestamp };
    const apply = (tx: ccc.Transaction) => {
      verifyTransaction(
        tx,
        { cell: (op) => live.get(outPointKey(op)), hasHeader: (h) => h === genesis.hash },
        env,
      );
      for (const input of tx.inputs) live.delete(outPointKey(input.previousOutput));
      for (const [key, cell] of createdCells(tx, txHashOf(tx))) live.set(key, cell);
    };
    const spentBySetup = new Map(live);
    apply(deployTx);
    const setupTxs = [deployTx];
    if ((opts.accounts ?? []).length > 0) {
      const fundTx = buildFunding({ ...view, scripts }, faucetKey, opts.accounts ?? [], [], () => true);
      apply(fundTx);
      setupTxs.push(fundTx);
    }
    const cellbase = ccc.Transaction.from({
      version: 0,
      inputs: [cellbaseInput(1n)],
      outputs: [],
      outputsData: [],
      witnesses: [cellbaseWitness(ccc.Script.from({ codeHash: ZERO_HASH, hashType: 'data', args: '0x' }))],
    });
    const block1 = makeBlock(header1, [cellbase, ...setupTxs]);
    commitBlock(db, block1, (op) => spentBySetup.get(outPointKey(op)) ?? live.get(outPointKey(op)));
  })();
}
