/**
 * The genesis block exactly as CKB's `ChainSpec::build_genesis` builds it (see
 * `docs/reference/ckb-genesis.md`): a cellbase with the genesis cell, the system cells (optionally
 * type-id), the special issued cell and the spec's issued cells; a dep-group transaction signed by
 * a fixed, well-known key; the DAO field of the genesis header. Any node given the same spec —
 * the reference node included — computes the same hash.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ccc, mol } from '@ckb-ccc/core';
import { bytesToHex, hexToBytes, SHANNONS_PER_CKB as SHANNONS } from '../codec/index.ts';
import { blake160, ckbHash, compressedPubkey, signRecoverable } from '../crypto/index.ts';
import { type Block, makeBlock, ZERO_HASH } from './block.ts';
import type { ChainSpec, SpecFile } from './spec.ts';
import { bundledCell } from './system-cells.ts';
import { txHashOf } from './txcache.ts';

export const TYPE_ID_CODE_HASH =
  '0x00000000000000000000000000000000000000000000000000545950455f4944' as ccc.Hex;
export const SIGHASH_ALL_DATA_HASH =
  '0x709f3fda12f561cfacf92273c57a98fede188a3f1a59b1f888d113f9cce08649' as ccc.Hex;
/** The fixed key that owns the special issued cell and signs the dep-group transaction. */
const SPECIAL_CELL_KEY = hexToBytes('0xd0c5c1e2d5af8b6ced3c0800937f996c1fa38c29186cade0cd8b5a73c97aaca3');

const CellbaseWitness = mol.table({ lock: ccc.Script, message: mol.Bytes });
const OutPointVec = mol.vector(ccc.OutPoint);

export function occupiedCapacity(output: ccc.CellOutput, data: ccc.HexLike): bigint {
  return BigInt(output.occupiedSize + ccc.bytesFrom(data).length) * SHANNONS;
}

export function cellbaseInput(blockNumber: bigint): ccc.CellInput {
  return ccc.CellInput.from({
    previousOutput: { txHash: ZERO_HASH, index: 0xffffffff },
    since: blockNumber,
  });
}

export function cellbaseWitness(lock: ccc.Script): ccc.Hex {
  return ccc.hexFrom(CellbaseWitness.encode({ lock, message: '0x' }));
}

export interface GenesisResult {
  block: Block;
  /** Data of each bundled/system cell by its data hash, for script resolution. */
  systemCellData: Map<string, Uint8Array>;
}

export function buildGenesis(spec: ChainSpec, specDir?: string): GenesisResult {
  const loadFile = (f: SpecFile): Uint8Array =>
    'bundled' in f
      ? bundledCell(f.bundled)
      : new Uint8Array(fs.readFileSync(path.resolve(specDir ?? '.', f.file)));
  const systemData = spec.genesis.systemCells.map((c) => loadFile(c.file));

  const dataHashes = systemData.map((d) => bytesToHex(ckbHash(d)));
  const build = (specialCapacity: bigint, firstPass: boolean) => {
    const tx0 = cellbaseTx(spec, systemData, specialCapacity);
    // The first pass only needs tx1's capacities, which do not depend on tx0's hash; hashing
    // the 1 MB cellbase is the slow part, so it is done once.
    const tx0Hash = firstPass ? ZERO_HASH : txHashOf(tx0);
    const tx1 = depGroupTx(spec, tx0Hash, dataHashes, loadFile);
    return { tx0, tx1 };
  };
  const first = build(500n * SHANNONS, true);
  const special = first.tx1.outputs.reduce((s, o) => s + o.capacity, 0n);
  const { tx0, tx1 } = build(special, false);

  const L = spec.params.genesisEpochLength;
  const primary = ceilDiv(spec.params.initialPrimaryEpochReward, L);
  const secondary = ceilDiv(spec.params.secondaryEpochReward, L);
  const specialIndex = 1 + spec.genesis.systemCells.length;
  let c = primary + secondary;
  let u = 0n;
  const live: [ccc.CellOutput, ccc.Hex, boolean][] = [
    ...tx0.outputs.map(
      (o, i) => [o, tx0.outputsData[i] as ccc.Hex, i === specialIndex] as [ccc.CellOutput, ccc.Hex, boolean],
    ),
    ...tx1.outputs.map(
      (o, i) => [o, tx1.outputsData[i] as ccc.Hex, false] as [ccc.CellOutput, ccc.Hex, boolean],
    ),
  ];
  for (const [o, data, spent] of live) {
    if (spent) continue;
    c += o.capacity;
    const [numer, denom] = spec.genesis.satoshiRatio;
    u +=
      o.lock.args === spec.genesis.satoshiPubkeyHash
        ? (o.capacity * numer) / denom
        : occupiedCapacity(o, data);
  }
  const dao = Buffer.alloc(32);
  dao.writeBigUInt64LE(c, 0);
  dao.writeBigUInt64LE(10n ** 16n, 8);
  dao.writeBigUInt64LE(secondary, 16);
  dao.writeBigUInt64LE(u, 24);

  const block = makeBlock(
    {
      version: spec.genesis.version,
      compactTarget: spec.genesis.compactTarget,
      timestamp: spec.genesis.timestamp,
      number: 0n,
      epoch: 0n,
      parentHash: spec.genesis.parentHash,
      proposalsHash: ZERO_HASH,
      extraHash: ZERO_HASH,
      dao: bytesToHex(dao) as ccc.Hex,
      nonce: spec.genesis.nonce,
    },
    [tx0, tx1],
  );
  const systemCellData = new Map<string, Uint8Array>();
  for (const d of systemData) systemCellData.set(bytesToHex(ckbHash(d)), d);
  return { block, systemCellData };
}

function cellbaseTx(spec: ChainSpec, systemData: Uint8Array[], specialCapacity: bigint): ccc.Transaction {
  const g = spec.genesis;
  const input = cellbaseInput(0n);
  const outputs: ccc.CellOutputLike[] = [];
  const outputsData: ccc.Hex[] = [];
  const push = (o: ccc.CellOutputLike, data: ccc.Hex, capacity?: bigint) => {
    const out = ccc.CellOutput.from({ ...o, capacity: 0n });
    out.capacity = capacity ?? occupiedCapacity(out, data);
    outputs.push(out);
    outputsData.push(data);
  };
  push({ lock: g.genesisCellLock }, ccc.hexFrom(ccc.bytesFrom(g.message, 'utf8')));
  g.systemCells.forEach((cell, i) => {
    const index = outputs.length;
    const type = cell.createTypeId
      ? ccc.Script.from({ codeHash: TYPE_ID_CODE_HASH, hashType: 'type', args: typeIdArgs(input, index) })
      : undefined;
    push({ lock: g.systemCellsLock, type }, ccc.hexFrom(systemData[i] as Uint8Array), cell.capacity);
  });
  push(
    {
      lock: {
        codeHash: SIGHASH_ALL_DATA_HASH,
        hashType: 'data',
        args: bytesToHex(blake160(compressedPubkey(SPECIAL_CELL_KEY))),
      },
    },
    '0x',
    specialCapacity,
  );
  for (const c of g.issuedCells) push({ lock: c.lock, type: c.type }, c.data, c.capacity);
  return ccc.Transaction.from({
    version: 0,
    inputs: [input],
    outputs,
    outputsData,
    witnesses: [cellbaseWitness(g.bootstrapLock)],
  });
}

function depGroupTx(
  spec: ChainSpec,
  tx0Hash: ccc.Hex,
  systemDataHashes: string[],
  loadFile: (f: SpecFile) => Uint8Array,
): ccc.Transaction {
  const outPointOf = (f: SpecFile) => {
    const h = bytesToHex(ckbHash(loadFile(f)));
    // System cells are tx0 outputs 1..n (output 0 is the genesis message cell).
    const found = systemDataHashes.indexOf(h);
    const index = found < 0 ? -1 : found + 1;
    if (index < 0) throw new Error(`dep group file ${JSON.stringify(f)} is not a genesis cell`);
    return { txHash: tx0Hash, index };
  };
  const outputs: ccc.CellOutput[] = [];
  const outputsData: ccc.Hex[] = [];
  for (const group of spec.genesis.depGroups) {
    const data = ccc.hexFrom(OutPointVec.encode(group.files.map(outPointOf)));
    const out = ccc.CellOutput.from({ capacity: 0n, lock: spec.genesis.systemCellsLock });
    out.capacity = occupiedCapacity(out, data);
    outputs.push(out);
    outputsData.push(data);
  }
  const specialIndex = 1 + spec.genesis.systemCells.length;
  const tx = ccc.Transaction.from({
    version: 0,
    cellDeps: [
      { outPoint: outPointOf({ bundled: 'specs/cells/secp256k1_data' }), depType: 'code' },
      { outPoint: outPointOf({ bundled: 'specs/cells/secp256k1_blake160_sighash_all' }), depType: 'code' },
    ],
    inputs: [{ previousOutput: { txHash: tx0Hash, index: specialIndex }, since: 0n }],
    outputs,
    outputsData,
    witnesses: [],
  });
  const sig = signRecoverable(ckbHash(ccc.bytesFrom(tx.hash())), SPECIAL_CELL_KEY);
  tx.witnesses = [bytesToHex(sig) as ccc.Hex];
  return tx;
}

function typeIdArgs(input: ccc.CellInput, index: number): ccc.Hex {
  const idx = Buffer.alloc(8);
  idx.writeBigUInt64LE(BigInt(index));
  return bytesToHex(ckbHash(input.toBytes(), idx)) as ccc.Hex;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
