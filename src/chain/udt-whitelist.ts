/**
 * The one reading of `ckb.udt_whitelist` (fiber-rpc.md §2.6), shared by the channel side (which
 * tokens may fund a channel, their cell deps, auto-accept) and the gossip side (the node
 * announcement's `udt_cfg_infos`), and the watchtower (cell deps). Each entry is checked once, at
 * start: a bad one is refused with a message naming it (`udt_whitelist[1].script.args: …`).
 *
 * `script.args` is either `0x`-prefixed hex bytes, matched exactly, or a pattern such as `0x.*`
 * (fnn matches args as a regular expression against the token's `0x…` args; Strand does the same
 * for anything that is not plain hex, so a plain hex entry never matches longer args).
 */
import { ccc } from '@ckb-ccc/core';

export class UdtWhitelistError extends Error {}

export type HashType = 'type' | 'data' | 'data1' | 'data2';
const HASH_TYPES: readonly string[] = ['type', 'data', 'data1', 'data2'];

export interface UdtScriptRef {
  codeHash: string;
  hashType: HashType;
  /** Hex bytes (`0x…`), lower case. */
  args: string;
}

export type UdtDepEntry =
  | { kind: 'cellDep'; txHash: string; index: number; depType: 'code' | 'depGroup' }
  | { kind: 'typeId'; script: UdtScriptRef };

export interface UdtWhitelistEntry {
  name: string;
  codeHash: string;
  hashType: HashType;
  /** As configured: hex bytes or a pattern. */
  args: string;
  /** Set when `args` is a pattern rather than exact bytes. */
  pattern: RegExp | null;
  deps: UdtDepEntry[];
  /** `deps` with each type-id dep resolved on the chain to the cell carrying it (set at start). */
  resolvedDeps?: UdtDepEntry[];
  autoAcceptAmount: bigint | null;
}

/** Longest `args` text (hex or pattern) accepted in an entry. */
const MAX_ARGS_CHARS = 1024;
const HEX_BYTES = /^0x([0-9a-fA-F]{2})*$/;
const HASH32 = /^0x[0-9a-fA-F]{64}$/;
const U128_MAX = (1n << 128n) - 1n;

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const shown = (v: unknown) => {
  const s = typeof v === 'string' ? `'${v}'` : (JSON.stringify(v) ?? String(v));
  return s.length > 120 ? `${s.slice(0, 120)}…` : s;
};

function fail(where: string, why: string): never {
  throw new UdtWhitelistError(`udt_whitelist${where}: ${why}`);
}

export function readScript(v: unknown, where: string): UdtScriptRef & { pattern: RegExp | null } {
  if (!isObject(v)) fail(where, 'expected a script {code_hash, hash_type, args}');
  if (typeof v.code_hash !== 'string' || !HASH32.test(v.code_hash))
    fail(`${where}.code_hash`, `expected 0x + 32 bytes hex, got ${shown(v.code_hash)}`);
  if (typeof v.hash_type !== 'string' || !HASH_TYPES.includes(v.hash_type))
    fail(`${where}.hash_type`, `expected one of ${HASH_TYPES.join(', ')}, got ${shown(v.hash_type)}`);
  const args = v.args;
  if (typeof args !== 'string') fail(`${where}.args`, `expected a string, got ${shown(args)}`);
  if (args.length > MAX_ARGS_CHARS) fail(`${where}.args`, `at most ${MAX_ARGS_CHARS} characters`);
  let pattern: RegExp | null = null;
  if (!HEX_BYTES.test(args)) {
    try {
      pattern = new RegExp(args);
    } catch (e) {
      fail(
        `${where}.args`,
        `${shown(args)} is neither 0x-prefixed hex bytes nor a valid pattern (${(e as Error).message})`,
      );
    }
  }
  return {
    codeHash: v.code_hash.toLowerCase(),
    hashType: v.hash_type as HashType,
    args: pattern ? args : args.toLowerCase(),
    pattern,
  };
}

function readIndex(v: unknown, where: string): number {
  const n =
    typeof v === 'number'
      ? v
      : typeof v === 'string' && /^0x[0-9a-fA-F]{1,8}$/.test(v)
        ? Number.parseInt(v.slice(2), 16)
        : Number.NaN;
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff)
    fail(where, `expected a u32 (a hex quantity or a number), got ${shown(v)}`);
  return n;
}

/** One cell dep: `{cell_dep: …}`, a bare `{out_point, dep_type}` or `{type_id: script}`. */
export function readDep(d: unknown, where: string): UdtDepEntry {
  if (isObject(d) && 'type_id' in d) {
    const s = readScript(d.type_id, `${where}.type_id`);
    if (s.pattern) fail(`${where}.type_id.args`, 'expected 0x-prefixed hex bytes');
    return { kind: 'typeId', script: { codeHash: s.codeHash, hashType: s.hashType, args: s.args } };
  }
  // `{cell_dep: {out_point, dep_type}}` as fnn writes it, or the bare `{out_point, dep_type}`.
  const inner = isObject(d) && 'cell_dep' in d ? d.cell_dep : d;
  const at = isObject(d) && 'cell_dep' in d ? `${where}.cell_dep` : where;
  if (!isObject(inner) || !isObject(inner.out_point))
    fail(at, 'expected {cell_dep: {out_point: {tx_hash, index}, dep_type}} or {type_id: script}');
  const op = inner.out_point;
  if (typeof op.tx_hash !== 'string' || !HASH32.test(op.tx_hash))
    fail(`${at}.out_point.tx_hash`, `expected 0x + 32 bytes hex, got ${shown(op.tx_hash)}`);
  const depType = inner.dep_type ?? 'code';
  if (depType !== 'code' && depType !== 'dep_group')
    fail(`${at}.dep_type`, `expected code or dep_group, got ${shown(depType)}`);
  return {
    kind: 'cellDep',
    txHash: op.tx_hash.toLowerCase(),
    index: readIndex(op.index, `${at}.out_point.index`),
    depType: depType === 'dep_group' ? 'depGroup' : 'code',
  };
}

function readAmount(v: unknown, where: string): bigint | null {
  if (v === undefined || v === null) return null;
  let n: bigint | null = null;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number' && Number.isSafeInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && /^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$/.test(v)) n = BigInt(v);
  if (n === null || n < 0n || n > U128_MAX) fail(where, `expected a u128 amount, got ${shown(v)}`);
  return n;
}

/** Reads and checks the configured list; throws UdtWhitelistError naming the first bad entry. */
export function readUdtWhitelist(list: unknown): UdtWhitelist {
  if (list === undefined || list === null) return new UdtWhitelist([]);
  if (!Array.isArray(list)) fail('', 'expected a list of entries');
  const entries = list.map((u, i): UdtWhitelistEntry => {
    const at = `[${i}]`;
    if (!isObject(u)) fail(at, 'expected {name, script, cell_deps, auto_accept_amount}');
    if (typeof u.name !== 'string' || u.name.length === 0)
      fail(`${at}.name`, `expected a non-empty string, got ${shown(u.name)}`);
    const script = readScript(u.script, `${at}.script`);
    const deps = u.cell_deps ?? [];
    if (!Array.isArray(deps)) fail(`${at}.cell_deps`, 'expected a list');
    return {
      name: u.name,
      ...script,
      deps: deps.map((d, j) => readDep(d, `${at}.cell_deps[${j}]`)),
      autoAcceptAmount: readAmount(u.auto_accept_amount, `${at}.auto_accept_amount`),
    };
  });
  return new UdtWhitelist(entries);
}

export class UdtWhitelist {
  constructor(readonly entries: readonly UdtWhitelistEntry[]) {}

  /** The entry a token's type script falls under: same code hash and hash type, args matching. */
  match(script: ccc.ScriptLike): UdtWhitelistEntry | undefined {
    const s = ccc.Script.from(script);
    const args = s.args.toLowerCase();
    return this.byCode(s).find((e) => (e.pattern ? e.pattern.test(args) : e.args === args));
  }

  /** Entries of a token's code (code hash and hash type; args not compared). */
  byCode(script: ccc.ScriptLike): UdtWhitelistEntry[] {
    const s = ccc.Script.from(script);
    return this.entries.filter((e) => e.codeHash === s.codeHash.toLowerCase() && e.hashType === s.hashType);
  }

  /**
   * The out-point cell deps of an entry, as transactions take them: type-id deps as resolved at
   * start (`resolveUdtWhitelist`), or left out when they were not.
   */
  static cellDeps(e: UdtWhitelistEntry | undefined): ccc.CellDepLike[] {
    return (e?.resolvedDeps ?? e?.deps ?? []).flatMap((d) =>
      d.kind === 'cellDep'
        ? [{ outPoint: { txHash: d.txHash, index: BigInt(d.index) }, depType: d.depType }]
        : [],
    );
  }
}
