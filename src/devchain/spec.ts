/**
 * A CKB chain spec (the TOML `ckb init` writes, e.g. `specs/dev.toml`), parsed with exact 64-bit
 * integers: capacities exceed 2^53. Only what the genesis and the epoch schedule need is kept.
 */
import { ccc } from '@ckb-ccc/core';
import { parse } from 'smol-toml';

export class SpecError extends Error {}

export type SpecFile = { bundled: string } | { file: string };

export interface SystemCellSpec {
  file: SpecFile;
  createTypeId: boolean;
  /** Absent: exactly the occupied capacity. */
  capacity?: bigint;
}

export interface IssuedCellSpec {
  capacity: bigint;
  lock: ccc.Script;
  type?: ccc.Script;
  data: ccc.Hex;
}

export interface ChainSpec {
  name: string;
  genesis: {
    version: number;
    parentHash: ccc.Hex;
    timestamp: bigint;
    compactTarget: number;
    nonce: bigint;
    message: string;
    genesisCellLock: ccc.Script;
    systemCells: SystemCellSpec[];
    systemCellsLock: ccc.Script;
    depGroups: { name: string; files: SpecFile[] }[];
    bootstrapLock: ccc.Script;
    issuedCells: IssuedCellSpec[];
    satoshiPubkeyHash: ccc.Hex;
    /** Numerator/denominator of the satoshi cells' counted share in the DAO field. */
    satoshiRatio: [bigint, bigint];
  };
  params: {
    initialPrimaryEpochReward: bigint;
    secondaryEpochReward: bigint;
    genesisEpochLength: bigint;
    epochDurationTarget: bigint;
    cellbaseMaturity: bigint;
  };
}

type T = Record<string, unknown>;

export function parseChainSpec(toml: string): ChainSpec {
  let doc: T;
  try {
    doc = parse(toml, { integersAsBigInt: true }) as T;
  } catch (e) {
    throw new SpecError(`chain spec is not valid TOML: ${(e as Error).message}`);
  }
  const g = table(doc, 'genesis');
  const params = (doc.params ?? {}) as T;
  const gc = table(g, 'genesis_cell');
  const satoshi = (g.satoshi_gift ?? {}) as T;
  return {
    name: str(doc, 'name'),
    genesis: {
      version: Number(int(g, 'version', 0n)),
      parentHash: hex(g.parent_hash ?? `0x${'00'.repeat(32)}`, 'genesis.parent_hash'),
      timestamp: int(g, 'timestamp', 0n),
      compactTarget: Number(int(g, 'compact_target')),
      nonce: BigInt(hex(g.nonce ?? '0x0', 'genesis.nonce')),
      message: str(gc, 'message'),
      genesisCellLock: script(gc.lock, 'genesis.genesis_cell.lock'),
      systemCells: list(g, 'system_cells').map((c, i) => ({
        file: file(c.file, `genesis.system_cells[${i}].file`),
        createTypeId: Boolean(c.create_type_id),
        capacity: c.capacity === undefined ? undefined : int(c, 'capacity'),
      })),
      systemCellsLock: script(g.system_cells_lock, 'genesis.system_cells_lock'),
      depGroups: list(g, 'dep_groups').map((d, i) => ({
        name: str(d, 'name'),
        files: ((d.files ?? []) as unknown[]).map((f, j) => file(f, `genesis.dep_groups[${i}].files[${j}]`)),
      })),
      bootstrapLock: script(g.bootstrap_lock, 'genesis.bootstrap_lock'),
      issuedCells: list(g, 'issued_cells').map((c, i) => ({
        capacity: int(c, 'capacity'),
        lock: script(c.lock, `genesis.issued_cells[${i}].lock`),
        type: c.type === undefined ? undefined : script(c.type, `genesis.issued_cells[${i}].type`),
        data: c.data === undefined ? '0x' : hex(c.data, `genesis.issued_cells[${i}].data`),
      })),
      satoshiPubkeyHash: hex(
        satoshi.satoshi_pubkey_hash ?? '0x62e907b15cbf27d5425399ebf6f0fb50ebb88f18',
        'satoshi',
      ),
      satoshiRatio: ratio(satoshi.satoshi_cell_occupied_ratio),
    },
    params: {
      initialPrimaryEpochReward: int(params, 'initial_primary_epoch_reward', 1_917_808_21917808n),
      secondaryEpochReward: int(params, 'secondary_epoch_reward', 613_698_63013698n),
      genesisEpochLength: int(params, 'genesis_epoch_length', 1000n),
      epochDurationTarget: int(params, 'epoch_duration_target', 14400n),
      cellbaseMaturity: int(params, 'cellbase_maturity', 0n),
    },
  };
}

function table(o: T, key: string): T {
  const v = o[key];
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new SpecError(`chain spec: missing table [${key}]`);
  return v as T;
}

function list(o: T, key: string): T[] {
  const v = o[key] ?? [];
  if (!Array.isArray(v)) throw new SpecError(`chain spec: ${key} must be an array of tables`);
  return v as T[];
}

function str(o: T, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new SpecError(`chain spec: ${key} must be a string`);
  return v;
}

function int(o: T, key: string, dflt?: bigint): bigint {
  const v = o[key];
  if (v === undefined && dflt !== undefined) return dflt;
  if (typeof v !== 'bigint' || v < 0n)
    throw new SpecError(`chain spec: ${key} must be a non-negative integer`);
  return v;
}

function hex(v: unknown, what: string): ccc.Hex {
  if (typeof v !== 'string' || !/^0x([0-9a-fA-F]*)$/.test(v))
    throw new SpecError(`chain spec: ${what} must be 0x-hex`);
  return v.toLowerCase() as ccc.Hex;
}

function script(v: unknown, what: string): ccc.Script {
  if (typeof v !== 'object' || v === null) throw new SpecError(`chain spec: ${what} must be a script table`);
  const s = v as T;
  const hashType = s.hash_type;
  if (hashType !== 'data' && hashType !== 'type' && hashType !== 'data1' && hashType !== 'data2') {
    throw new SpecError(`chain spec: ${what}.hash_type must be data, type, data1 or data2`);
  }
  const codeHash = hex(s.code_hash, `${what}.code_hash`);
  if (codeHash.length !== 66) throw new SpecError(`chain spec: ${what}.code_hash must be 32 bytes`);
  const args = hex(s.args ?? '0x', `${what}.args`);
  if (args.length % 2) throw new SpecError(`chain spec: ${what}.args must be whole bytes`);
  return ccc.Script.from({ codeHash, hashType, args });
}

function file(v: unknown, what: string): SpecFile {
  const f = v as T | undefined;
  if (f && typeof f.bundled === 'string') return { bundled: f.bundled };
  if (f && typeof f.file === 'string') return { file: f.file };
  throw new SpecError(`chain spec: ${what} must be { bundled = "…" } or { file = "…" }`);
}

function ratio(v: unknown): [bigint, bigint] {
  if (v === undefined) return [6n, 10n];
  const r = v as T;
  const numer = r.numer;
  const denom = r.denom;
  if (typeof numer !== 'bigint' || typeof denom !== 'bigint' || denom === 0n) {
    throw new SpecError('chain spec: satoshi_cell_occupied_ratio must be { numer, denom }');
  }
  return [numer, denom];
}
