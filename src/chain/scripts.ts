/**
 * The channel scripts (funding lock, commitment lock) a node builds its transactions with, and
 * their cell deps. They come from the network's preset (`networks.ts`), overridden name by name
 * by `fiber.scripts` (fnn's shape: `{name, script, cell_deps}`), and are resolved against the
 * chain: a `type_id` dep is the live cell that carries that type script, found through the
 * indexer (fnn resolves them the same way). On a dev chain the preset is the chain itself
 * (`get_dev_scripts`).
 */
import type { ccc } from '@ckb-ccc/core';
import type { ChainClient } from './client.ts';
import { chainErrorOf } from './errors.ts';
import { NETWORKS, type NetworkName } from './networks.ts';
import {
  type HashType,
  readDep,
  readScript,
  type UdtDepEntry,
  UdtWhitelist,
  UdtWhitelistError,
} from './udt-whitelist.ts';

export const CHANNEL_SCRIPT_NAMES = ['FundingLock', 'CommitmentLock'] as const;
export type ChannelScriptName = (typeof CHANNEL_SCRIPT_NAMES)[number];

/** A `fiber.scripts` entry that does not parse; the message names the field. */
export class ScriptsConfigError extends Error {}

/** The chain lacks a script or a cell dep the node needs (a type-id cell not found, …). */
export class ChannelScriptsUnavailable extends chainErrorOf('ScriptsUnavailable') {}

export interface ScriptEntry {
  name: ChannelScriptName;
  codeHash: string;
  hashType: HashType;
  deps: UdtDepEntry[];
}

export interface ChannelScriptInfo {
  codeHash: ccc.Hex;
  hashType: ccc.HashType;
  cellDeps: ccc.CellDepLike[];
}

export interface ChannelScripts {
  fundingLock: ChannelScriptInfo;
  commitmentLock: ChannelScriptInfo;
}

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads `fiber.scripts`; throws ScriptsConfigError naming the first bad field (`scripts[1].name: …`). */
export function readScriptsConfig(list: unknown): ScriptEntry[] {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list))
    throw new ScriptsConfigError('scripts: expected a list of {name, script, cell_deps}');
  const seen = new Set<string>();
  return list.map((e, i) => {
    const at = `scripts[${i}]`;
    if (!isObject(e)) throw new ScriptsConfigError(`${at}: expected {name, script, cell_deps}`);
    if (!CHANNEL_SCRIPT_NAMES.includes(e.name as ChannelScriptName))
      throw new ScriptsConfigError(
        `${at}.name: expected ${CHANNEL_SCRIPT_NAMES.join(' or ')}, got ${JSON.stringify(e.name) ?? 'nothing'}`,
      );
    if (seen.has(e.name as string)) throw new ScriptsConfigError(`${at}.name: ${e.name} is listed twice`);
    seen.add(e.name as string);
    if (!Array.isArray(e.cell_deps)) throw new ScriptsConfigError(`${at}.cell_deps: expected a list`);
    try {
      // The shared readers name fields under `udt_whitelist`; the path here is `scripts[i]…`.
      const script = readScript(e.script, '.script');
      const deps = e.cell_deps.map((d, j) => readDep(d, `.cell_deps[${j}]`));
      return {
        name: e.name as ChannelScriptName,
        codeHash: script.codeHash,
        hashType: script.hashType,
        deps,
      };
    } catch (err) {
      if (!(err instanceof UdtWhitelistError)) throw err;
      throw new ScriptsConfigError(`${at}${err.message.replace(/^udt_whitelist/, '')}`);
    }
  });
}

/** An out-point dep as is; a type-id dep as the live cell of that type (the script's current code). */
export async function resolveCellDep(client: ChainClient, dep: UdtDepEntry): Promise<ccc.CellDepLike> {
  if (dep.kind === 'cellDep')
    return { outPoint: { txHash: dep.txHash, index: BigInt(dep.index) }, depType: dep.depType };
  const s = dep.script;
  const page = await client.getCells(
    {
      script: { code_hash: s.codeHash, hash_type: s.hashType, args: s.args },
      script_type: 'type',
      script_search_mode: 'exact',
      with_data: false,
    },
    'asc',
    1,
  );
  const cell = page.objects[0];
  if (!cell)
    throw new ChannelScriptsUnavailable(
      `no live cell with type-id ${s.args} on the chain at ${client.rpcUrl}: cannot resolve a script's cell dep`,
    );
  return {
    outPoint: { txHash: cell.out_point.tx_hash, index: BigInt(cell.out_point.index) },
    depType: 'code',
  };
}

interface DevScriptJson {
  script: { code_hash: string; hash_type: string };
  cell_deps: { out_point: { tx_hash: string; index: string }; dep_type: string }[];
}

function devScriptInfo(j: DevScriptJson | undefined, name: string): ChannelScriptInfo {
  if (!j?.script?.code_hash || !Array.isArray(j.cell_deps))
    throw new ChannelScriptsUnavailable(`malformed get_dev_scripts entry ${name}`);
  return {
    codeHash: j.script.code_hash as ccc.Hex,
    hashType: j.script.hash_type as ccc.HashType,
    cellDeps: j.cell_deps.map((d) => ({
      outPoint: { txHash: d.out_point.tx_hash, index: BigInt(d.out_point.index) },
      depType: d.dep_type === 'dep_group' ? 'depGroup' : 'code',
    })),
  };
}

/** The funding and commitment locks Strand's dev chain names (`get_dev_scripts`, CKB JSON). */
export async function devChannelScripts(client: ChainClient): Promise<ChannelScripts> {
  const s = await client.call<{ funding_lock?: DevScriptJson; commitment_lock?: DevScriptJson }>(
    'get_dev_scripts',
  );
  return {
    fundingLock: devScriptInfo(s?.funding_lock, 'funding_lock'),
    commitmentLock: devScriptInfo(s?.commitment_lock, 'commitment_lock'),
  };
}

/**
 * How a node finds its channel scripts: the network's preset with `overrides` laid over it by
 * name, each cell dep resolved on the chain. A dev chain without overrides for both asks
 * `get_dev_scripts` for the rest.
 */
export function channelScriptsSource(
  network: NetworkName,
  overrides: ScriptEntry[] = [],
): (client: ChainClient) => Promise<ChannelScripts> {
  const byName = new Map<ChannelScriptName, ScriptEntry>();
  for (const e of readScriptsConfig(NETWORKS[network].scripts)) byName.set(e.name, e);
  for (const e of overrides) byName.set(e.name, e);
  return async (client) => {
    const resolve = async (name: ChannelScriptName, dev?: ChannelScriptInfo): Promise<ChannelScriptInfo> => {
      const e = byName.get(name);
      if (!e) {
        if (dev) return dev;
        throw new ChannelScriptsUnavailable(`no ${name} script for ${network}: set it in fiber.scripts`);
      }
      const cellDeps: ccc.CellDepLike[] = [];
      for (const d of e.deps) cellDeps.push(await resolveCellDep(client, d));
      return { codeHash: e.codeHash as ccc.Hex, hashType: e.hashType, cellDeps };
    };
    const needDev = network === 'dev' && CHANNEL_SCRIPT_NAMES.some((n) => !byName.has(n));
    const dev = needDev ? await devChannelScripts(client) : undefined;
    return {
      fundingLock: await resolve('FundingLock', dev?.fundingLock),
      commitmentLock: await resolve('CommitmentLock', dev?.commitmentLock),
    };
  };
}

/**
 * The whitelist with each entry's type-id deps resolved (`resolvedDeps`), for the transactions
 * that carry the token; the configured deps stay as they are for gossip and `node_info`. An entry
 * whose dep cannot be resolved is reported to `onError` and kept unresolved.
 */
export async function resolveUdtWhitelist(
  client: ChainClient,
  list: UdtWhitelist,
  onError: (name: string, err: Error) => void,
): Promise<UdtWhitelist> {
  const entries = [];
  for (const e of list.entries) {
    if (!e.deps.some((d) => d.kind === 'typeId')) {
      entries.push(e);
      continue;
    }
    try {
      const resolvedDeps: UdtDepEntry[] = [];
      for (const d of e.deps) {
        const dep = await resolveCellDep(client, d);
        const op = dep.outPoint as { txHash: string; index: bigint };
        resolvedDeps.push({ kind: 'cellDep', txHash: op.txHash, index: Number(op.index), depType: 'code' });
      }
      entries.push({
        ...e,
        resolvedDeps: e.deps.map((d, i) => (d.kind === 'typeId' ? resolvedDeps[i]! : d)),
      });
    } catch (err) {
      onError(e.name, err as Error);
      entries.push(e);
    }
  }
  return new UdtWhitelist(entries);
}
